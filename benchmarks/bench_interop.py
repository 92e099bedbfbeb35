"""Benchmark the SB3 bridge: ``vecmode.sb3.to_sb3`` against SB3's own vector envs.

What is measured
----------------
Time per vector step (microseconds) of Stable-Baselines3's ``venv.step(actions)``
(``step_async`` then ``step_wait``, as SB3's algorithms call it) with uniformly
random actions over ``CartPole-v1`` sub-envs, for each ``num_envs`` (2, 8 and 32
by default). Contestants, over the same env functions:

* ``dummy``: SB3's ``DummyVecEnv(fns)``;
* ``bridge sync``: ``to_sb3(vecmode.make_vec(..., vectorization_mode="sync",
  autoreset_mode="SameStep"))``, the bridge over vecmode's sync core;
* ``subproc``: SB3's ``SubprocVecEnv(fns)`` (one process per sub-env, start
  method ``fork``);
* ``bridge async``: the bridge over vecmode's async core in its default layout
  (every sub-env in a worker, one worker per usable CPU), through its split API;
* ``bridge async+parent``: the same over the opt-in layout
  (``in_parent=num_envs // usable CPUs``: the parent steps that many sub-envs
  while the workers step theirs);
* ``vm sync``, ``vm async``: vecmode's SameStep envs stepped directly (Gymnasium's
  API), so that ``bridge - vm`` is what the bridge itself adds per step.

The main results are the RATIOS ``bridge sync / dummy`` (goal: <= 1, at least as
fast as DummyVecEnv; also in this process's CPU time, which other processes on a
busy machine disturb less: the sync contestants do all their work in it) and
``subproc / bridge async`` (goal: >= 3, at least three times SubprocVecEnv's
speed), each the median of the per-round ratios of repeats run back to back.
Absolute times (medians) depend on the machine.

How
---
The actions come from a fixed seed (sampling is not timed), the same for every
contestant; every timed repeat starts with ``seed(SEED)`` and ``reset()``
(untimed), so each contestant replays the same episodes in every round. Env
construction and a short warm-up are not timed. Shared machines are noisy, so the
contestants are interleaved: each round runs one timed repeat of every contestant
for every size (in an order rotated from round to round), and the result is the
median over the rounds. The contestants whose times are compared run back to back
(the sync ones, then the async ones, of each size), so that a shared machine's
load drifts between rounds rather than between them.

Run
---
::

    python benchmarks/bench_interop.py              # full run (a few minutes)
    python benchmarks/bench_interop.py --quick      # smoke test, a few seconds
    python benchmarks/bench_interop.py --markdown   # a table for docs/performance.md
    python benchmarks/bench_interop.py --num-envs 8 --rounds 9
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

import vecmode
from harness import (
    add_num_envs_argument,
    add_run_arguments,
    fill_num_envs,
    fill_run_defaults,
    format_report,
    interleaved,
    round_done,
    run_defaults_help,
    save_results,
    versions,
)
from vecmode.layout import default_num_workers
from vecmode.sb3 import to_sb3

ENV_ID = "CartPole-v1"
DEFAULT_NUM_ENVS = (2, 8, 32)
QUICK_NUM_ENVS = (2,)
DEFAULT_STEPS = 500
QUICK_STEPS = 50
DEFAULT_ROUNDS = 15
QUICK_ROUNDS = 2
WARMUP_STEPS = 50
START_METHOD = "fork"

DUMMY, BRIDGE_SYNC, VM_SYNC = "dummy", "bridge sync", "vm sync"
SUBPROC, BRIDGE_ASYNC, BRIDGE_PARENT, VM_ASYNC = (
    "subproc",
    "bridge async",
    "bridge async+parent",
    "vm async",
)


SYNC_GROUP = frozenset((DUMMY, BRIDGE_SYNC, VM_SYNC))


def make_env() -> gym.Env:
    """One sub-env, exactly as every contestant builds it."""
    return gym.make(ENV_ID)


def parent_share(num_envs: int) -> int:
    """The opt-in layout's share of sub-envs stepped by the parent."""
    return max(1, num_envs // default_num_workers(10**6)) if num_envs > 1 else 0


def vecmode_env(num_envs: int, core: str, in_parent: int | None = None) -> Any:
    fns = [make_env] * num_envs
    base = (
        vecmode.SyncVectorEnv(fns)
        if core == "sync"
        else vecmode.AsyncVectorEnv(fns, in_parent=in_parent, context=START_METHOD)
    )
    return vecmode.with_autoreset(base, "SameStep")


def _timed(step: Callable[[Any], Any], actions: np.ndarray) -> tuple[float, float]:
    """(wall-clock, this process's CPU) seconds to ``step`` through ``actions``."""
    start, cpu = time.perf_counter(), time.process_time()
    for row in actions:
        step(row)
    return time.perf_counter() - start, time.process_time() - cpu


def time_sb3(venv: Any, actions: np.ndarray, seed: int) -> tuple[float, float]:
    """Seconds to ``step`` an SB3 VecEnv through ``actions`` after an untimed
    ``seed(seed)`` and ``reset()``."""
    venv.seed(seed)
    venv.reset()
    return _timed(venv.step, actions)


def time_gym(envs: Any, actions: np.ndarray, seed: int) -> tuple[float, float]:
    """The same for a SAME_STEP Gymnasium vector env (``reset(seed=seed)``)."""
    envs.reset(seed=seed)
    return _timed(envs.step, actions)


@dataclass
class Contestant:
    """One thing to time, over its own persistent sub-envs."""

    name: str
    num_envs: int
    target: Any
    runner: Callable[[Any, np.ndarray, int], tuple[float, float]]
    times: list[float] = field(default_factory=list)  # us per vector step
    cpu_times: list[float] = field(default_factory=list)  # this process's CPU

    def run(self, actions: np.ndarray, seed: int) -> None:
        gc.collect()
        wall, cpu = self.runner(self.target, actions, seed)
        self.times.append(wall / len(actions) * 1e6)
        self.cpu_times.append(cpu / len(actions) * 1e6)

    def close(self) -> None:
        self.target.close()


def build(num_envs: int) -> list[Contestant]:
    fns = [make_env] * num_envs
    share = parent_share(num_envs)
    made: list[tuple[str, Any, Callable[[Any, np.ndarray, int], Any]]] = [
        (DUMMY, DummyVecEnv(fns), time_sb3),
        (BRIDGE_SYNC, to_sb3(vecmode_env(num_envs, "sync")), time_sb3),
        (VM_SYNC, vecmode_env(num_envs, "sync"), time_gym),
        (SUBPROC, SubprocVecEnv(fns, start_method=START_METHOD), time_sb3),
        (BRIDGE_ASYNC, to_sb3(vecmode_env(num_envs, "async")), time_sb3),
        (BRIDGE_PARENT, to_sb3(vecmode_env(num_envs, "async", share)), time_sb3),
        (VM_ASYNC, vecmode_env(num_envs, "async"), time_gym),
    ]
    return [Contestant(name, num_envs, target, run) for name, target, run in made]


@dataclass
class Row:
    num_envs: int
    median_us: dict[str, float]
    bridge_dummy: float
    bridge_dummy_cpu: float
    subproc_bridge: float
    subproc_parent: float
    sync_overhead: float
    async_overhead: float
    spread: str


def by_name(group: list[Contestant], name: str) -> Contestant:
    return next(c for c in group if c.name == name)


def _median_ratio(a: list[float], b: list[float]) -> float:
    return statistics.median(x / y for x, y in zip(a, b, strict=True))


def _median_difference(a: list[float], b: list[float]) -> float:
    return statistics.median(x - y for x, y in zip(a, b, strict=True))


def benchmark(
    num_envs_list: Sequence[int], steps: int, rounds: int, seed: int, progress: bool
) -> list[Row]:
    by_n: dict[int, list[Contestant]] = {}
    actions: dict[int, np.ndarray] = {}
    try:
        for n in num_envs_list:
            rng = np.random.default_rng(seed)
            actions[n] = rng.integers(0, 2, size=(steps, n), dtype=np.int64)
            by_n[n] = build(n)
            for contestant in by_n[n]:  # warm-up: first-call checks, caches
                contestant.run(actions[n][:WARMUP_STEPS], seed)
                contestant.times.clear()
                contestant.cpu_times.clear()
        # the contestants compared with each other run back to back: the sync
        # ones, then the async ones, of each size
        groups = [
            [(n, c) for c in by_n[n] if (c.name in SYNC_GROUP) == sync]
            for n in num_envs_list
            for sync in (True, False)
        ]
        for r in range(rounds):
            started = time.perf_counter()
            for n, contestant in interleaved(groups, r):
                contestant.run(actions[n], seed)
            round_done(r, rounds, started, progress)
    finally:
        for group in by_n.values():
            for contestant in group:
                contestant.close()
    rows = []
    for n in num_envs_list:
        t = {c.name: c.times for c in by_n[n]}
        bridge_dummy = [a / b for a, b in zip(t[BRIDGE_SYNC], t[DUMMY], strict=True)]
        subproc_bridge = [
            a / b for a, b in zip(t[SUBPROC], t[BRIDGE_ASYNC], strict=True)
        ]
        rows.append(
            Row(
                num_envs=n,
                median_us={name: statistics.median(v) for name, v in t.items()},
                bridge_dummy=statistics.median(bridge_dummy),
                bridge_dummy_cpu=_median_ratio(
                    by_name(by_n[n], BRIDGE_SYNC).cpu_times,
                    by_name(by_n[n], DUMMY).cpu_times,
                ),
                subproc_bridge=statistics.median(subproc_bridge),
                subproc_parent=_median_ratio(t[SUBPROC], t[BRIDGE_PARENT]),
                sync_overhead=_median_difference(t[BRIDGE_SYNC], t[VM_SYNC]),
                async_overhead=_median_difference(t[BRIDGE_ASYNC], t[VM_ASYNC]),
                spread=f"{min(bridge_dummy):.2f}-{max(bridge_dummy):.2f} / "
                f"{min(subproc_bridge):.1f}-{max(subproc_bridge):.1f}",
            )
        )
    return rows


# ------------------------------------------------------------------------- output
HEADERS = (
    "num_envs",
    "dummy us",
    "bridge sync us",
    "bridge sync/dummy",
    "bridge sync/dummy CPU time",
    "subproc us",
    "bridge async us",
    "subproc/bridge async",
    "bridge async+parent us",
    "subproc/bridge async+parent",
    "bridge - vm sync us",
    "bridge - vm async us",
    "min-max (sync/dummy / subproc/async)",
)


def cells(row: Row) -> list[str]:
    us = row.median_us
    return [
        str(row.num_envs),
        f"{us[DUMMY]:.1f}",
        f"{us[BRIDGE_SYNC]:.1f}",
        f"{row.bridge_dummy:.2f}",
        f"{row.bridge_dummy_cpu:.2f}",
        f"{us[SUBPROC]:.1f}",
        f"{us[BRIDGE_ASYNC]:.1f}",
        f"{row.subproc_bridge:.2f}",
        f"{us[BRIDGE_PARENT]:.1f}",
        f"{row.subproc_parent:.2f}",
        f"{row.sync_overhead:.1f}",
        f"{row.async_overhead:.1f}",
        row.spread,
    ]


def environment_lines(steps: int, rounds: int, seed: int) -> list[str]:
    import stable_baselines3

    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return [
        f"{versions()}, stable-baselines3 {stable_baselines3.__version__}",
        f"os.cpu_count() = {os.cpu_count()}, usable CPUs = {default_num_workers(10**6)}"
        f", {platform.system()} {platform.machine()}"
        + (f", load average {load[0]:.2f} at the end" if load else ""),
        f"{ENV_ID}, {steps} vector steps per timed repeat, {rounds} interleaved "
        f"rounds (median), action/reset seed {seed}, start method {START_METHOD}",
        "us = microseconds per vector step (median); ratios = median of per-round "
        "ratios; bridge - vm = median per-round difference; CPU time = this "
        "process's (the sync contestants do all their work in it: a measure a busy "
        "machine disturbs less)",
    ]


# ---------------------------------------------------------------------------- CLI
def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Time per step of vecmode.sb3.to_sb3 over vecmode's sync and "
        "async cores vs SB3's DummyVecEnv and SubprocVecEnv.",
    )
    add_num_envs_argument(parser, DEFAULT_NUM_ENVS, QUICK_NUM_ENVS)
    defaults = (DEFAULT_STEPS, QUICK_STEPS, DEFAULT_ROUNDS, QUICK_ROUNDS)
    add_run_arguments(parser, **run_defaults_help(*defaults))
    args = parser.parse_args(argv)
    fill_run_defaults(args, *defaults)
    fill_num_envs(args, DEFAULT_NUM_ENVS, QUICK_NUM_ENVS)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    print(
        f"benchmarking the SB3 bridge at num_envs {args.num_envs}: {args.rounds} "
        f"rounds of {args.steps} vector steps ...",
        file=sys.stderr,
        flush=True,
    )
    rows = benchmark(
        args.num_envs, args.steps, args.rounds, seed=args.seed, progress=True
    )
    header = environment_lines(args.steps, args.rounds, args.seed)
    table = [cells(r) for r in rows]
    print(format_report(HEADERS, table, header, args.markdown))
    save_results(
        args.results,
        __file__,
        header,
        {"main": (HEADERS, table)},
        rounds=args.rounds,
        steps=args.steps,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
