"""Benchmark vecmode.RayVectorEnv against vecmode.AsyncVectorEnv and Ray's floor.

What is measured
----------------
The wall time of one vector step of the same ``--num-envs`` sub-envs (4 by
default) in NextStep mode, which is ONE ``execute`` of the core below, for 1, 2
and 4 actors (``RayVectorEnv(fns, num_actors=k)``) against the async core with as
many worker processes (``AsyncVectorEnv(fns, num_workers=k)``), on two kinds of
sub-env: ``CartPole-v1`` (a few microseconds per step: the cost of crossing
processes dominates) and ``heavy`` (:class:`harness.HeavyEnv`: about 50 us of CPU
work and an 84x84x3 uint8 frame per step).

In the same rounds, the floor: Ray's own bare actor-call round trip, one call to
each of ``k`` actors whose method does nothing, gathered with one ``ray.get``
(what any vector env over ``k`` Ray actors pays per step, at the
least); the floor with data: the same calls carrying a message and an answer
of a step's size (what any vector env over Ray pays for moving a step's data);
the lean env (:class:`Lean`, the leanest vector env over Ray one could write for
these steps: what any vector env over Ray pays for them, its sub-envs' work in
actors included); and the sub-envs' own step cost, stepped in this process by
vecmode's sync core.

Derived, each the median of per-round values:

* ``ray/async``: the Ray core's step time over the async core's;
* ``overhead``: the Ray core's step time minus the work of its busiest actor's
  sub-envs (``ceil(num_envs / k)`` sub-env steps);
* ``overhead/floor``: the goal is at most 1.5; ``per busy actor``: overhead and
  floor divided by ``k``;
* ``overhead/floor+data``: the overhead over the floor with data, so what is
  vecmode's own beyond what Ray charges for the data;
* ``lean overhead/floor``: the lean env's step minus the same sub-env work, over
  the floor: the Ray core's overhead/floor less this is vecmode's own share.

Then, COMPUTED from those figures (not measured): a line fit of the overhead
against the number of actors (a fixed part plus a part per busy actor, the
driver's work of sending and reading each call), the sub-env step cost above
which N actors beat the async core on this machine, and the expected throughput
of 1, 10 and 100 nodes running the heavy env.

How
---
As ``bench_async.py``: actions from a fixed seed (not timed), every timed repeat
starts with ``reset(seed=SEED)`` (untimed), construction and a warm-up untimed,
contestants interleaved (rotated every round), medians over rounds. Each row's
contestants run with nothing else of the benchmark alive (an idle Ray actor
wakes up now and then: 45 of them took a fifth of a core here). Ray runs a
new local instance (``ray.init(address="local", num_cpus=<usable CPUs>)``) unless
``--address`` names a cluster (``--address auto`` after ``ray start --head``).
The load average is printed before and after: the machine may be shared.

Run
---
::

    python benchmarks/bench_ray.py              # full run (a few minutes)
    python benchmarks/bench_ray.py --quick      # smoke test
    python benchmarks/bench_ray.py --markdown   # tables for docs/scaling.md
    python benchmarks/bench_ray.py --address auto --actors 1 8 32
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import pickle
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

import vecmode
from harness import (
    HEAVY_WORK_SECONDS,
    HeavyEnv,
    add_run_arguments,
    calibrate,
    fill_run_defaults,
    interleaved,
    markdown_table,
    positive_int,
    round_done,
    run_defaults_help,
    save_results,
    text_table,
    time_steps,
    versions,
)
from vecmode.layout import slices, usable_cpus
from vecmode.ray_vector_env import LIVENESS

MODE = vecmode.AutoresetMode.NEXT_STEP
CARTPOLE, HEAVY = "CartPole-v1", "heavy"
DEFAULT_ACTORS, QUICK_ACTORS = (1, 2, 4), (1, 2)
DEFAULT_NUM_ENVS = 4
DEFAULT_STEPS, QUICK_STEPS = 400, 20
DEFAULT_ROUNDS, QUICK_ROUNDS = 5, 1
WARMUP_STEPS = 20
GOAL = 1.5
RAY, ASYNC, FLOOR, FLOOR_DATA, LEAN = "ray", "async", "floor", "floor+data", "lean"
#: What the computed throughput table assumes of a cluster node.
NODES = (1, 10, 100)
DEFAULT_CORES_PER_NODE = 32
#: Sub-envs per actor, for the assumed simulators of the computed table.
SIM_PER_ACTOR = 8


# --------------------------------------------------------------------- the floor
class Bare:
    """An actor that does nothing: its call's round trip is Ray's floor. With
    ``answer_bytes``, :meth:`echo` takes a message and returns that many bytes."""

    def __init__(self, answer_bytes: int = 0) -> None:
        self.answer = bytes(answer_bytes)

    def ping(self) -> None:
        return None

    def echo(self, message: bytes) -> bytes:
        return self.answer


class Floor:
    """One call to each of ``k`` bare actors per step, gathered as the Ray core
    gathers its calls (one ``ray.get``, with a timeout). With a ``message``,
    each call carries it and returns ``answer_bytes`` bytes (the floor with the
    data of a step)."""

    def __init__(
        self, ray: Any, k: int, message: bytes | None = None, answer_bytes: int = 0
    ) -> None:
        self.ray = ray
        self.message = message
        self.actors = [ray.remote(Bare).remote(answer_bytes) for _ in range(k)]
        ray.get([actor.ping.remote() for actor in self.actors])

    def reset(self, seed: int | None = None) -> None:
        return None

    def step(self, row: Any) -> Any:
        if self.message is None:
            refs = [actor.ping.remote() for actor in self.actors]
        else:
            refs = [actor.echo.remote(self.message) for actor in self.actors]
        return self.ray.get(refs, timeout=LIVENESS)

    def close(self) -> None:
        for actor in self.actors:
            self.ray.kill(actor)


# --------------------------------------------------------------- the lean env
class LeanSlice:
    """An actor of :class:`Lean`: steps its sub-envs (resetting one whose episode
    ended, in the same step) and answers their rewards and flags, pickled, then
    their observations as raw rows."""

    def __init__(self, env_fns: list[Callable[[], gym.Env]]) -> None:
        self.envs = [fn() for fn in env_fns]
        space = self.envs[0].observation_space
        self.rows = np.zeros((len(self.envs), *space.shape), dtype=space.dtype)

    def ping(self) -> None:
        return None

    def reset(self, seed: int) -> bytes:
        for k, env in enumerate(self.envs):
            self.rows[k] = env.reset(seed=seed + k)[0]
        return b"".join((pickle.dumps(None), self.rows.data))

    def step(self, message: bytes) -> bytes:
        actions = pickle.loads(message)
        n = len(self.envs)
        rewards, terminations, truncations = [0.0] * n, [False] * n, [False] * n
        for k, (env, action) in enumerate(zip(self.envs, actions, strict=True)):
            obs, rewards[k], terminations[k], truncations[k], _ = env.step(action)
            if terminations[k] or truncations[k]:
                obs, _ = env.reset()
            self.rows[k] = obs
        head = pickle.dumps((rewards, terminations, truncations))
        return b"".join((head, self.rows.data))


class Lean:
    """The leanest vector env over Ray one could write for these steps, as a
    reference: one call per actor with its slice of the actions (pickled: Ray
    carries bytes cheaper than arrays), gathered with one ``ray.get``; each
    answer's rows copied into the batch. No checks, no infos, no
    failure handling, no autoreset policy to choose (an actor resets a sub-env
    whose episode ended in the same step): what any vector env over Ray pays for
    the step, its data and its sub-envs' work."""

    def __init__(self, ray: Any, fns: list[Callable[[], gym.Env]], k: int) -> None:
        self.ray = ray
        self.slices = slices(len(fns), k)
        actor = ray.remote(LeanSlice)
        self.actors = [actor.remote(fns[start:stop]) for start, stop in self.slices]
        ray.get([a.ping.remote() for a in self.actors])
        env = fns[0]()
        space = env.observation_space
        env.close()
        self.batch = np.zeros((len(fns), *space.shape), dtype=space.dtype)

    def _gather(self, refs: list[Any]) -> Any:
        batch = self.batch
        for (start, stop), data in zip(
            self.slices, self.ray.get(refs, timeout=LIVENESS), strict=True
        ):
            rows = batch[start:stop]
            raw = np.frombuffer(data, batch.dtype, offset=len(data) - rows.nbytes)
            rows[...] = raw.reshape(rows.shape)
            head = pickle.loads(data)
        return batch.copy(), head

    def reset(self, seed: int | None = None) -> Any:
        start = 0 if seed is None else seed
        return self._gather([a.reset.remote(start + s) for a, (s, _) in self._each()])

    def step(self, row: Any) -> Any:
        return self._gather(
            [
                a.step.remote(pickle.dumps(row[start:stop]))
                for a, (start, stop) in self._each()
            ]
        )

    def _each(self) -> list[tuple[Any, tuple[int, int]]]:
        return list(zip(self.actors, self.slices, strict=True))

    def close(self) -> None:
        for actor in self.actors:
            self.ray.kill(actor)


# ------------------------------------------------------------------- contestants
def env_fns(kind: str, num_envs: int, work: int) -> list[Callable[[], gym.Env]]:
    if kind == CARTPOLE:
        return [lambda: gym.make(CARTPOLE)] * num_envs
    return [lambda: HeavyEnv(work)] * num_envs


@dataclass
class Contestant:
    name: str
    target: Any
    #: seconds per step, one per round; and this process's CPU seconds per step
    times: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)

    def run(self, actions: np.ndarray, seed: int) -> float:
        gc.collect()
        cpu = time.process_time()
        seconds = time_steps(self.target, actions, seed) / len(actions)
        self.cpu.append((time.process_time() - cpu) / len(actions))
        return seconds

    def close(self) -> None:
        self.target.close()


def step_data(kind: str, per_actor: int, work: int) -> tuple[bytes, int]:
    """About what one step sends an actor holding ``per_actor`` sub-envs (their
    commands and actions, pickled) and what it answers (their observations,
    rewards and flags, pickled), for the floor with data."""
    env = env_fns(kind, 1, work)[0]()
    obs_bytes = np.asarray(env.observation_space.sample()).nbytes
    env.close()
    actions = np.zeros(per_actor, dtype=np.int64)
    message = pickle.dumps(
        (0, [1] * per_actor, actions, None, None), pickle.HIGHEST_PROTOCOL
    )
    # each observation as an array (about 150 bytes of pickle besides its data),
    # then a reward and two flags per sub-env
    return message, per_actor * (obs_bytes + 150 + 10) + 300


def build(ray: Any, kind: str, k: int, num_envs: int, work: int) -> list[Contestant]:
    fns = env_fns(kind, num_envs, work)
    message, answer_bytes = step_data(kind, math.ceil(num_envs / k), work)
    return [
        Contestant(
            RAY,
            vecmode.with_autoreset(vecmode.RayVectorEnv(fns, num_actors=k), MODE),
        ),
        Contestant(
            ASYNC,
            vecmode.with_autoreset(vecmode.AsyncVectorEnv(fns, num_workers=k), MODE),
        ),
        Contestant(FLOOR, Floor(ray, k)),
        Contestant(FLOOR_DATA, Floor(ray, k, message, answer_bytes)),
        Contestant(LEAN, Lean(ray, fns, k)),
    ]


# ----------------------------------------------------------------------- running
@dataclass
class Row:
    kind: str
    actors: int
    num_envs: int
    ray_us: float
    async_us: float
    floor_us: float
    sub_env_us: float
    overhead_us: float
    ray_vs_async: float
    overhead_vs_floor: float
    overhead_vs_floor_range: tuple[float, float]
    #: the floor with a step's data (message and answer of a step's size)
    data_floor_us: float
    overhead_vs_data_floor: float
    #: the driver's CPU time per step (all its threads, Ray's included)
    driver_cpu_us: float
    #: the lean env's step and its overhead over the floor (as the Ray core's)
    lean_us: float
    lean_vs_floor: float


def median_of(values: Sequence[float]) -> float:
    return statistics.median(values)


def benchmark(args: argparse.Namespace, ray: Any) -> tuple[list[Row], int]:
    """Each (kind, k)'s contestants measured together, with nothing else alive:
    an idle Ray actor wakes up now and then (45 of them took a fifth of a core
    here), so keeping every group's actors for the whole run would load the
    machine as no user's run does."""
    work = calibrate(HEAVY_WORK_SECONDS)
    n, rows = args.num_envs, []
    for kind in args.envs:
        rng = np.random.default_rng(args.seed)
        high = 2 if kind == CARTPOLE else 4
        actions = rng.integers(0, high, size=(args.steps, n))
        for k in args.actors:
            print(f"{kind}, {k} actor(s):", file=sys.stderr, flush=True)
            rows.append(measure(args, ray, kind, k, work, actions))
    return rows, work


def measure(
    args: argparse.Namespace,
    ray: Any,
    kind: str,
    k: int,
    work: int,
    actions: np.ndarray,
) -> Row:
    """The row of ``kind`` on ``k`` actors: its contestants and the sub-envs in
    this process (vecmode's sync core), interleaved over the rounds."""
    n = args.num_envs
    sync = Contestant(
        "sync",
        vecmode.with_autoreset(vecmode.SyncVectorEnv(env_fns(kind, n, work)), MODE),
    )
    group = [sync]
    try:
        group += build(ray, kind, k, n, work)
        for contestant in group:
            contestant.run(actions[:WARMUP_STEPS], args.seed)
        for r in range(args.rounds):
            started = time.perf_counter()
            for contestant in interleaved([group], r):
                contestant.times.append(contestant.run(actions, args.seed))
            round_done(r, args.rounds, started, progress=True)
    finally:
        for contestant in group:
            contestant.close()
    return row(kind, k, n, group[1:], sync)


def row(kind: str, k: int, n: int, group: list[Contestant], sync: Contestant) -> Row:
    ray_t, async_t, floor_t, data_floor_t, lean_t = (c.times for c in group)
    sub_env = [t / n for t in sync.times]  # one sub-env step (sync core, in-process)
    busiest = math.ceil(n / k)
    overhead = [t - busiest * s for t, s in zip(ray_t, sub_env, strict=True)]
    vs_floor = [o / f for o, f in zip(overhead, floor_t, strict=True)]
    lean = [t - busiest * s for t, s in zip(lean_t, sub_env, strict=True)]
    return Row(
        kind=kind,
        actors=k,
        num_envs=n,
        ray_us=median_of(ray_t) * 1e6,
        async_us=median_of(async_t) * 1e6,
        floor_us=median_of(floor_t) * 1e6,
        sub_env_us=median_of(sub_env) * 1e6,
        overhead_us=median_of(overhead) * 1e6,
        ray_vs_async=median_of([a / b for a, b in zip(ray_t, async_t, strict=True)]),
        overhead_vs_floor=median_of(vs_floor),
        overhead_vs_floor_range=(min(vs_floor), max(vs_floor)),
        data_floor_us=median_of(data_floor_t) * 1e6,
        overhead_vs_data_floor=median_of(
            [o / f for o, f in zip(overhead, data_floor_t, strict=True)]
        ),
        driver_cpu_us=median_of(group[0].cpu) * 1e6,
        lean_us=median_of(lean_t) * 1e6,
        lean_vs_floor=median_of([o / f for o, f in zip(lean, floor_t, strict=True)]),
    )


# ------------------------------------------------------------------------ computed
@dataclass
class Model:
    """What the computed figures rest on, all measured in this run.

    On a cluster the actors run elsewhere, so a step of ``A`` busy actors with
    ``e`` sub-envs of ``c`` us each costs about ``one_actor + e * c +
    per_actor * (A - 1)``: one actor's round trip (its overhead, measured with 1
    actor), the sub-envs' work (in parallel), and the driver's own work of
    sending each further call and reading its answer (its CPU time per step per
    busy actor, the slope of a line fit over the actor counts measured).
    """

    one_actor_us: float
    per_actor_us: float
    async_overhead_us: float
    async_workers: int
    heavy_us: float | None


def fit(rows: Sequence[Row]) -> Model:
    """The model from the CartPole rows (its sub-envs' work is negligible)."""
    basis = [r for r in rows if r.kind == CARTPOLE] or list(rows)
    ks = np.array([r.actors for r in basis], dtype=float)
    cpu = np.array([r.driver_cpu_us for r in basis])
    if len(set(ks)) > 1:
        per_actor = float(np.polyfit(ks, cpu, 1)[0])
    else:
        per_actor = float(cpu[0] / ks[0])
    one = min(basis, key=lambda r: r.actors)
    local = [r for r in basis if r.actors <= usable_cpus()] or basis
    widest = max(local, key=lambda r: r.actors)
    busiest = math.ceil(widest.num_envs / widest.actors)
    heavy = [r.sub_env_us for r in rows if r.kind == HEAVY]
    return Model(
        one_actor_us=one.overhead_us,
        per_actor_us=max(per_actor, 0.0),
        async_overhead_us=widest.async_us - busiest * widest.sub_env_us,
        async_workers=widest.actors,
        heavy_us=statistics.median(heavy) if heavy else None,
    )


def ray_step_us(model: Model, actors: int, per_actor: int, step_us: float) -> float:
    return model.one_actor_us + per_actor * step_us + model.per_actor_us * (actors - 1)


def break_even_us(model: Model, num_envs: int, actors: int, cores: int) -> float | None:
    """The sub-env step cost above which ``actors`` Ray actors (each on a core of
    its own, on other machines) step ``num_envs`` sub-envs faster than the async
    core with ``model.async_workers`` workers here; None if they never do."""
    local = math.ceil(num_envs / cores)
    remote = math.ceil(num_envs / actors)
    if remote >= local:
        return None
    ray_overhead = ray_step_us(model, actors, 0, 0.0)
    return max(0.0, (ray_overhead - model.async_overhead_us) / (local - remote))


def throughput(
    model: Model, nodes: int, cores: int, per_actor: int, step_us: float
) -> tuple[float, float]:
    """Sub-env steps per second, and ms per vector step, of one actor per core
    on ``nodes`` nodes, ``per_actor`` sub-envs each, sub-envs of ``step_us``."""
    actors = nodes * cores
    step = ray_step_us(model, actors, per_actor, step_us)
    return actors * per_actor / (step * 1e-6), step / 1e3


# ------------------------------------------------------------------------- output
HEADERS = (
    "env",
    "actors",
    "sub-envs",
    "ray us/step",
    "async us/step",
    "ray/async",
    "floor us",
    "sub-env step us",
    "overhead us",
    "overhead/floor",
    "overhead/floor min-max",
    "overhead per actor us",
    "floor per actor us",
    "floor+data us",
    "overhead/floor+data",
    "driver CPU us",
    "lean us",
    "lean overhead/floor",
)


def cells(r: Row) -> list[str]:
    return [
        r.kind,
        str(r.actors),
        str(r.num_envs),
        f"{r.ray_us:,.0f}",
        f"{r.async_us:,.0f}",
        f"{r.ray_vs_async:.2f}",
        f"{r.floor_us:,.0f}",
        f"{r.sub_env_us:,.1f}",
        f"{r.overhead_us:,.0f}",
        f"{r.overhead_vs_floor:.2f}",
        f"{r.overhead_vs_floor_range[0]:.2f}-{r.overhead_vs_floor_range[1]:.2f}",
        f"{r.overhead_us / r.actors:,.0f}",
        f"{r.floor_us / r.actors:,.0f}",
        f"{r.data_floor_us:,.0f}",
        f"{r.overhead_vs_data_floor:.2f}",
        f"{r.driver_cpu_us:,.0f}",
        f"{r.lean_us:,.0f}",
        f"{r.lean_vs_floor:.2f}",
    ]


def computed_lines(
    model: Model, args: argparse.Namespace
) -> tuple[list[str], list[str], list[list[str]]]:
    """The model's lines, and the throughput table (headers, rows)."""
    lines = [
        f"COMPUTED (not measured) from: one actor's overhead {model.one_actor_us:,.0f} "
        f"us per step; the driver's CPU per further busy actor "
        f"{model.per_actor_us:,.0f} us (line fit over {', '.join(map(str, args.actors))} "
        f"actors, CartPole); the async core's overhead {model.async_overhead_us:,.0f} "
        f"us with {model.async_workers} workers",
    ]
    cores = usable_cpus()
    for actors in (8, 32, 128):
        n = actors * 4
        at = break_even_us(model, n, actors, cores)
        lines.append(
            f"break-even: {n} sub-envs on {actors} Ray actors beat the async core on "
            f"this machine's {cores} cores when a sub-env step costs more than "
            + ("(never)" if at is None else f"{at:,.0f} us")
        )
    step_us = model.heavy_us or HEAVY_WORK_SECONDS * 1e6
    columns = [(f"heavy, {e}/actor", step_us, e) for e in args.envs_per_actor]
    columns += [
        (f"{sim:,} us env, {SIM_PER_ACTOR}/actor", sim, SIM_PER_ACTOR)
        for sim in args.sim_us
    ]
    headers = [
        "nodes",
        "actors",
        *(f"{name}: steps/s (ms/step)" for name, _, _ in columns),
    ]
    table = []
    for nodes in NODES:
        row_cells = [str(nodes), str(nodes * args.cores_per_node)]
        for _, cost, e in columns:
            rate, ms = throughput(model, nodes, args.cores_per_node, e, cost)
            row_cells.append(f"{rate:,.0f} ({ms:,.1f})")
        table.append(row_cells)
    lines.append(
        f"expected throughput, COMPUTED: the heavy env ({step_us:,.0f} us per step, "
        f"measured) and simulators of {', '.join(f'{sim:,} us' for sim in args.sim_us)} "
        f"per step (assumed); one actor per core, {args.cores_per_node} cores per "
        f"node, one driver gathering every actor each step; sub-env steps per second"
    )
    return lines, headers, table


MODEL_HEADERS = ("what", "us")
BREAK_EVEN_HEADERS = ("sub-envs", "Ray actors", "break-even sub-env step us")


def model_tables(model: Model) -> dict[str, tuple[Sequence[str], list[list[str]]]]:
    """The model's figures and the break-even step costs, as results tables (the
    async core's workers are in the notes)."""
    figures = [
        ["one actor's overhead", f"{model.one_actor_us:,.0f}"],
        ["driver CPU per further busy actor", f"{model.per_actor_us:,.0f}"],
        ["async core's overhead", f"{model.async_overhead_us:,.0f}"],
    ]
    break_even = []
    for actors in (8, 32, 128):
        at = break_even_us(model, actors * 4, actors, usable_cpus())
        cost = "never" if at is None else f"{at:,.0f}"
        break_even.append([str(actors * 4), str(actors), cost])
    return {
        "model": (MODEL_HEADERS, figures),
        "break_even": (BREAK_EVEN_HEADERS, break_even),
    }


def header_lines(
    args: argparse.Namespace, ray: Any, work: int, load: tuple[float, float]
) -> list[str]:
    return [
        versions() + f", ray {ray.__version__}",
        f"Ray cluster: {int(ray.cluster_resources().get('CPU', 0))} CPUs, "
        f"{len([n for n in ray.nodes() if n['Alive']])} node(s); usable CPUs here "
        f"{usable_cpus()}; load average {load[0]:.2f} before, {load[1]:.2f} after",
        f"NextStep mode, {args.num_envs} sub-envs; {args.steps} vector steps per timed "
        f"repeat; {args.rounds} interleaved rounds (median); seed {args.seed}",
        f"heavy env: {work} busy-loop iterations (~{HEAVY_WORK_SECONDS * 1e6:.0f} us) "
        f"and an 84x84x3 uint8 frame per step",
        "floor = Ray's bare actor-call round trip: one call to each of k actors that "
        "do nothing, one ray.get; overhead = ray us/step minus the busiest "
        f"actor's sub-env work; goal: overhead/floor <= {GOAL}",
        "floor+data = the same calls carrying a step's data: a message of the "
        "size of the step's (commands and actions, pickled), an answer of the size "
        "of the actor's (observations, rewards and flags, pickled); what any "
        "vector env over Ray pays for the data alone",
        "lean = the leanest vector env over Ray for these steps (one call per "
        "actor, its sub-envs' rewards and flags pickled and observations sent raw, "
        "copied into a batch; no checks, infos, failure handling or autoreset "
        "policy): its overhead/floor is what any vector env over Ray pays here",
    ]


def report(
    rows: list[Row],
    args: argparse.Namespace,
    ray: Any,
    work: int,
    load: tuple[float, float],
) -> str:
    head = header_lines(args, ray, work, load)
    model = fit(rows)
    model_lines, t_headers, t_rows = computed_lines(model, args)
    met = all(r.overhead_vs_floor <= GOAL for r in rows)
    verdict = (
        f"goal overhead/floor <= {GOAL}: {'met' if met else 'NOT met'} in every row"
    )
    table = [cells(r) for r in rows]
    save_results(
        args.results,
        __file__,
        [*head, verdict, *model_lines],
        {
            "main": (HEADERS, table),
            "computed": (t_headers, t_rows),
            **model_tables(model),
        },
        rounds=args.rounds,
        steps=args.steps,
        num_envs=args.num_envs,
    )
    if args.markdown:
        return "\n".join(
            [
                *(f"- {line}" for line in head),
                "",
                *markdown_table(HEADERS, table),
                "",
                f"- {verdict}",
                *(f"- {line}" for line in model_lines),
                "",
                *markdown_table(t_headers, t_rows),
            ]
        )
    return "\n".join(
        [
            *head,
            "",
            *text_table(HEADERS, table),
            "",
            verdict,
            *model_lines,
            "",
            *text_table(t_headers, t_rows),
        ]
    )


# --------------------------------------------------------------------------- CLI
def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Per-step cost of vecmode.RayVectorEnv vs vecmode.AsyncVectorEnv "
        "and Ray's bare actor-call round trip, on CartPole-v1 and a heavy env."
    )
    parser.add_argument(
        "--envs", nargs="+", choices=(CARTPOLE, HEAVY), default=[CARTPOLE, HEAVY]
    )
    parser.add_argument(
        "--actors",
        type=positive_int,
        nargs="+",
        default=None,
        help=f"numbers of actors (default {' '.join(map(str, DEFAULT_ACTORS))}; "
        f"{' '.join(map(str, QUICK_ACTORS))} with --quick)",
    )
    parser.add_argument(
        "--num-envs",
        type=positive_int,
        default=DEFAULT_NUM_ENVS,
        help=f"sub-envs (default {DEFAULT_NUM_ENVS})",
    )
    parser.add_argument(
        "--address",
        default=None,
        help="a Ray cluster to connect to (e.g. auto); default: a new local instance",
    )
    parser.add_argument(
        "--cores-per-node",
        type=positive_int,
        default=DEFAULT_CORES_PER_NODE,
        help=f"for the computed throughput table (default {DEFAULT_CORES_PER_NODE})",
    )
    parser.add_argument(
        "--envs-per-actor",
        type=positive_int,
        nargs="+",
        default=[4, 32],
        help="for the computed throughput table (default 4 32)",
    )
    parser.add_argument(
        "--sim-us",
        type=positive_int,
        nargs="+",
        default=[1000, 10000],
        help="step costs (us) of assumed simulators, for the computed throughput "
        "table (default 1000 10000)",
    )
    add_run_arguments(
        parser,
        **run_defaults_help(DEFAULT_STEPS, QUICK_STEPS, DEFAULT_ROUNDS, QUICK_ROUNDS),
    )
    args = parser.parse_args(argv)
    fill_run_defaults(args, DEFAULT_STEPS, QUICK_STEPS, DEFAULT_ROUNDS, QUICK_ROUNDS)
    if args.actors is None:
        args.actors = list(QUICK_ACTORS if args.quick else DEFAULT_ACTORS)
    args.envs = list(dict.fromkeys(args.envs))
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    import ray

    if args.address is None:
        ray.init(address="local", num_cpus=usable_cpus(), include_dashboard=False)
    else:
        ray.init(address=args.address)
    print(
        f"benchmarking {', '.join(args.envs)} on {args.actors} actors: {args.rounds} rounds ...",
        file=sys.stderr,
        flush=True,
    )
    load_before = os.getloadavg()[0]
    try:
        rows, work = benchmark(args, ray)
        print(report(rows, args, ray, work, (load_before, os.getloadavg()[0])))
    finally:
        ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
