"""The child process of the multi-node test: a Ray cluster of two nodes on this
machine (``ray.cluster_utils.Cluster``), sub-envs placed on both with a
scheduling strategy, one node killed while the env steps; what happened is
written as JSON to the file named on the command line.

    python -m tests.cores.ray_cluster_driver REPORT.json

(A file, not stdout: the raylet of a killed node writes its state dump there.)
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any

import numpy as np
import ray
from ray.cluster_utils import Cluster
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

import vecmode
from vecmode.testing import scheduled_env_fns

#: How soon Ray declares a node dead whose raylet stopped answering (its health
#: checks; the defaults take several seconds more).
HEALTH_CHECKS = {
    "health_check_initial_delay_ms": 0,
    "health_check_period_ms": 500,
    "health_check_failure_threshold": 3,
}
#: Seconds the env waits for the other actors on the node of a dead actor
#: (vecmode's 5 s): on a loaded machine (the suite on 2 cores beside the
#: Gymnasium suite) Ray declared the node dead later, and the error named one
#: actor of two.
vecmode.ray_vector_env.NEIGHBOUR_SECONDS = 12.0
NUM_ENVS, NUM_ACTORS = 8, 4
#: Seconds the env steps after the node is killed before the test gives up on
#: an error.
PATIENCE = 60.0


def describe(error: BaseException) -> dict[str, Any]:
    return {
        "type": type(error).__name__,
        "classes": [cls.__name__ for cls in type(error).__mro__],
        "lost": list(getattr(error, "lost", ())),
        "message": str(error),
    }


def actors_alive(actors: list[Any]) -> list[str]:
    """Those of ``actors`` that Ray has not marked dead (the GCS's table)."""
    from ray._private import state

    ids = {actor._actor_id.hex() for actor in actors}
    return [
        aid
        for aid, info in state.actors().items()
        if aid in ids and info["State"] != "DEAD"
    ]


def run(cluster: Cluster, doomed: Any, report: dict[str, Any]) -> None:
    head, other = cluster.head_node.node_id, doomed.node_id
    # actors 0 and 2 on the head node, 1 and 3 on the node that will die
    options = [
        {"scheduling_strategy": NodeAffinitySchedulingStrategy(node, soft=False)}
        for node in (head, other, head, other)
    ]
    core = vecmode.RayVectorEnv(
        scheduled_env_fns(NUM_ENVS, lengths=[(5,)] * NUM_ENVS),
        num_actors=NUM_ACTORS,
        actor_options=options,
    )
    envs = vecmode.with_autoreset(core, "SameStep")
    report["placed"] = [node == other for node in core.nodes]
    report["on_doomed_node"] = [
        i
        for a, (start, stop) in enumerate(core.slices)
        if core.nodes[a] == other
        for i in range(start, stop)
    ]
    actions = np.ones(NUM_ENVS, dtype=int)
    envs.reset(seed=0)
    for _ in range(5):
        envs.step(actions)
    killed = threading.Event()

    def kill() -> None:
        cluster.remove_node(doomed, allow_graceful=False)
        report["killed_at"] = time.monotonic()
        killed.set()

    timer = threading.Timer(0.2, kill)
    timer.start()
    started, steps = time.monotonic(), 0
    try:
        while time.monotonic() - started < PATIENCE:
            envs.step(actions)
            steps += 1
    except Exception as error:
        report["error"] = describe(error)
        killed.wait(10.0)
        report["seconds_after_kill"] = round(
            time.monotonic() - report.get("killed_at", started), 3
        )
    report["steps_while_killing"] = steps
    try:
        envs.step(actions)
        report["after"] = "stepped"
    except Exception as error:
        report["after"] = type(error).__name__
    actors = core.actors
    closing = time.monotonic()
    envs.close()
    report["close_seconds"] = round(time.monotonic() - closing, 3)
    report["alive_after_close"] = actors_alive(actors)


def main() -> None:
    report: dict[str, Any] = {}
    started = time.monotonic()
    cluster = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 2,
            "include_dashboard": False,
            "_system_config": HEALTH_CHECKS,
        },
    )
    try:
        doomed = cluster.add_node(num_cpus=2)
        ray.init(address=cluster.address)
        cluster.wait_for_nodes()
        report["cluster_seconds"] = round(time.monotonic() - started, 1)
        run(cluster, doomed, report)
    finally:
        ray.shutdown()
        cluster.shutdown()
        report["total_seconds"] = round(time.monotonic() - started, 1)
        with open(sys.argv[1], "w") as f:
            json.dump(report, f)


if __name__ == "__main__":
    main()
