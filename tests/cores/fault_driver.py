"""The child process of a fault-injection case: build an env, provoke the fault,
report what happened as one line of JSON on stdout.

    python -m tests.cores.fault_driver '{"backend": "async", "fault": "raise_step", ...}'

The report: the exception (type, index, method, lost), seconds from the call to
the error, whether the env is usable afterwards or closed, the pids of its worker
processes (the parent test checks they are gone), and the file descriptors left
open after ``close()`` beyond those open before the env was built.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from multiprocessing import forkserver, resource_tracker
from typing import Any

import numpy as np

import vecmode
from tests.cores.fault_envs import FaultyEnv, env_fns


def _fds() -> set[str]:
    """This process's open file descriptors, but multiprocessing's heap arenas
    (``/dev/shm/pym-*``: the memory that shared arrays come from, kept for the
    process's life and reused, not one per env)."""
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # the listing's own descriptor, gone already
            continue
        if not target.startswith("/dev/shm/pym-"):
            found.add(f"{fd} -> {target}")
    return found


def build(case: dict[str, Any]) -> Any:
    fns = env_fns(case["num_envs"], {int(k): v for k, v in case["faulty"].items()})
    backend = case["backend"]
    options = dict(case.get("options", {}))
    if backend == "sync":
        core = vecmode.SyncVectorEnv(fns)
    elif backend == "make_vec":  # every sub-env faulty: make_vec builds them alike
        return vecmode.make_vec(
            FaultyEnv,
            num_envs=case["num_envs"],
            vectorization_mode="async",
            autoreset_mode=case["mode"],
            vector_kwargs={"context": case["context"], **options},
            fault=next(iter(case["faulty"].values())),
        )
    else:
        if backend == "async-parent":
            options.setdefault("in_parent", case["num_envs"] // 2)
        core = vecmode.AsyncVectorEnv(fns, context=case["context"], **options)
    return vecmode.with_autoreset(core, case["mode"])


def describe_error(exc: BaseException) -> dict[str, Any]:
    return {
        "type": type(exc).__name__,
        "classes": [cls.__name__ for cls in type(exc).__mro__],
        "index": getattr(exc, "index", None),
        "method": getattr(exc, "method", None),
        "lost": list(getattr(exc, "lost", ()) or ()),
        "message": str(exc)[:400],
    }


def usable(envs: Any, n: int) -> str:
    """Reset what needs a reset and step once: "usable", or why not."""
    try:
        envs.reset(seed=1)
        envs.step(np.zeros(n, dtype=int))
        return "usable"
    except Exception as exc:
        return f"unusable: {type(exc).__name__}"


def main() -> None:
    case = json.loads(sys.argv[1])
    n = case["num_envs"]
    # the child plays a trainer in a terminal, where Ctrl-C raises
    # KeyboardInterrupt; a test run launched with SIGINT ignored (`nohup ... &`)
    # passes SIG_IGN down to it, and its Ctrl-C cases would hang: undo that
    signal.signal(signal.SIGINT, signal.default_int_handler)
    # multiprocessing's helpers live as long as the process (spawn's resource
    # tracker, the fork server): start them first, they are not the env's
    if case["context"] == "forkserver":
        forkserver.ensure_running()
    if case["context"] in ("spawn", "forkserver"):
        resource_tracker.ensure_running()
    before = _fds()
    report: dict[str, Any] = {"error": None}
    if case.get("build_in_thread"):  # a thread that ends before the env is used
        built: list[Any] = []
        thread = threading.Thread(target=lambda: built.append(build(case)))
        thread.start()
        thread.join()
        envs = built[0]
    else:
        envs = build(case)
    report["pids"] = [p.pid for p in getattr(envs.unwrapped, "processes", [])]
    envs.reset(seed=0)
    if case.get("kill_worker") is not None:  # SIGKILL from outside, mid-run
        os.kill(report["pids"][case["kill_worker"]], signal.SIGKILL)
        time.sleep(0.2)
    print("READY", flush=True)
    started = time.monotonic()
    try:
        if case.get("call") == "reset":
            envs.reset()
            envs.reset()
        for _ in range(4):
            envs.step(np.zeros(n, dtype=int))
    except KeyboardInterrupt as exc:
        report["error"] = describe_error(exc)
    except Exception as exc:
        report["error"] = describe_error(exc)
    # the system-wide monotonic clock: the test compares it with when it sent Ctrl-C
    report["error_at"] = time.monotonic()
    report["seconds"] = round(report["error_at"] - started, 3)
    report["after"] = usable(envs, n) if case.get("check_usable") else "not checked"
    print("CLOSING", flush=True)
    started = time.monotonic()
    try:
        envs.close()
        report["close"] = "ok"
    except KeyboardInterrupt as exc:  # Ctrl-C during close: close again
        report["close"] = describe_error(exc)
        envs.close()
    except Exception as exc:
        report["close"] = describe_error(exc)
    report["close_seconds"] = round(time.monotonic() - started, 3)
    report["closed"] = bool(envs.unwrapped.closed)
    try:
        envs.step(np.zeros(n, dtype=int))
        report["after_close"] = "stepped"
    except Exception as exc:
        report["after_close"] = type(exc).__name__
    report["fds_left"] = sorted(_fds() - before)
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
