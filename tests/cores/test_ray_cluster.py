"""Beyond one machine: vecmode.RayVectorEnv over a Ray cluster of two nodes, one
of which dies mid-run.

The cluster (``ray.cluster_utils.Cluster``: two raylets on this machine) runs in
a child process of its own session (``tests/cores/ray_cluster_driver.py``) under a hard
time limit, so a hang fails the test instead of the suite, and every process it
started can be accounted for afterwards.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.helpers import alive_in_session

pytest.importorskip("ray")

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
#: Seconds the whole child may take (a cluster starts in 15-30 s here).
HARD_LIMIT = 240.0


def test_a_dead_node_is_a_worker_error_naming_its_sub_envs_and_nothing_hangs():
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "report.json"
        child = subprocess.Popen(
            [sys.executable, "-m", "tests.cores.ray_cluster_driver", str(path)],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            child.wait(timeout=HARD_LIMIT)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            pytest.fail(f"HANG: no result within {HARD_LIMIT} s")
        deadline = time.monotonic() + 15.0  # Ray's processes exit after shutdown
        while alive_in_session(child.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = alive_in_session(child.pid)
        if left:
            os.killpg(child.pid, signal.SIGKILL)
            pytest.fail(f"LEAK: processes {left} of the cluster still run")
        assert child.returncode == 0 and path.exists(), child.returncode
        report = json.loads(path.read_text())
    # sub-envs on both nodes: actors 1 and 3 (sub-envs 2-3 and 6-7) on the dead one
    assert report["placed"] == [False, True, False, True], report
    assert report["on_doomed_node"] == [2, 3, 6, 7], report
    error = report.get("error")
    assert error is not None, f"no error after the node died: {report}"
    assert "WorkerError" in error["classes"], error
    assert error["lost"] == [2, 3, 6, 7], error
    for named in ("actor 1 (sub-envs 2-3", "actor 3 (sub-envs 6-7"):
        assert named in error["message"], error
    assert "actor 0" not in error["message"] and "actor 2" not in error["message"]
    assert report["seconds_after_kill"] < 15.0, report
    assert report["after"] == "WorkerError", report
    assert report["close_seconds"] < 10.0 and report["alive_after_close"] == [], report
