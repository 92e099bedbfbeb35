"""What the registry's checks cost: construction, stepping, and ``check()``.

What is measured
----------------
* construction: building ``gymnasium.wrappers.vector.ClipReward`` (one of
  Gymnasium's wrappers) on a 4-sub-env CartPole-v1 env, unchecked and under
  ``vecmode.guard()``; the ratio is the cost of the check at construction.
* stepping: steps/s of the same ``ClipReward(RecordEpisodeStatistics(env))`` stack
  built unchecked and built under ``vecmode.guard()`` (the check wraps ``__init__``
  only, so the ratio should be 1.0 within noise).
* ``vecmode.check_stack(envs)`` on that 3-layer stack, in microseconds, and relative to
  one vector step of it.

Rounds are interleaved and the result is the median of per-round ratios, as in
``bench_sync.py``.

Run
---
::

    python benchmarks/bench_registry.py            # a few seconds
    python benchmarks/bench_registry.py --quick    # smoke test
    python benchmarks/bench_registry.py --results benchmarks/results/bench_registry.json
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import gymnasium as gym
import numpy as np

import vecmode
from harness import add_results_argument, save_results

NUM_ENVS = 4


def per_call(fn: Callable[[], object], number: int) -> float:
    """Seconds per call of ``fn``, over ``number`` calls."""
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number


def stack(envs: gym.vector.VectorEnv) -> gym.vector.VectorEnv:
    return gym.wrappers.vector.ClipReward(
        gym.wrappers.vector.RecordEpisodeStatistics(envs), 0.0, 1.0
    )


#: ratio: guarded / unguarded; for check_stack(), its time / one vector step's.
HEADERS = ("what", "ratio", "us (unguarded)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke test")
    parser.add_argument("--rounds", type=int, default=7)
    add_results_argument(parser)
    args = parser.parse_args()
    rounds = 2 if args.quick else args.rounds
    builds, steps = (200, 300) if args.quick else (5000, 5000)

    envs = vecmode.make_vec(
        "CartPole-v1",
        num_envs=NUM_ENVS,
        autoreset_mode="NextStep",
        vectorization_mode="sync",
    )
    envs.reset(seed=0)
    actions = np.random.default_rng(0).integers(0, 2, size=(steps, NUM_ENVS))

    def build() -> object:
        return gym.wrappers.vector.ClipReward(envs, 0.0, 1.0)

    def run(wrapped: gym.vector.VectorEnv) -> float:
        wrapped.reset(seed=0)
        start = time.perf_counter()
        for action in actions:
            wrapped.step(action)
        return steps / (time.perf_counter() - start)

    plain = stack(envs)
    with vecmode.guard():
        guarded = stack(envs)
    build_ratios, step_ratios, check_us, step_us = [], [], [], []
    for _ in range(rounds):
        unchecked = per_call(build, builds)
        with vecmode.guard():
            checked = per_call(build, builds)
        build_ratios.append(checked / unchecked)
        a, b = run(plain), run(guarded)
        step_ratios.append(b / a)
        step_us.append(1e6 / a)
        check_us.append(1e6 * per_call(lambda: vecmode.check_stack(plain), builds))
    unchecked_us = 1e6 * per_call(build, builds)
    build_ratio = statistics.median(build_ratios)
    step_ratio = statistics.median(step_ratios)
    check, step = statistics.median(check_us), statistics.median(step_us)
    notes = [f"CartPole-v1, {NUM_ENVS} sub-envs, NextStep, {rounds} rounds, medians"]
    print(notes[0])
    print(
        f"construction of ClipReward, guarded/unguarded: {build_ratio:.2f} "
        f"(unguarded {unchecked_us:.1f} us)"
    )
    print(f"steps/s of a stack built under guard()/unguarded: {step_ratio:.2f}")
    print(
        f"vecmode.check_stack() of the 3-layer stack: {check:.1f} us "
        f"= {check / step:.2f} vector steps ({step:.1f} us each)"
    )
    rows = [
        ["construction of ClipReward", f"{build_ratio:.2f}", f"{unchecked_us:.1f}"],
        ["steps of a stack built under guard()", f"{step_ratio:.2f}", "-"],
        [
            "vecmode.check_stack() of the 3-layer stack",
            f"{check / step:.2f}",
            f"{check:.1f}",
        ],
    ]
    tables = {"main": (HEADERS, rows)}
    save_results(args.results, __file__, notes, tables, rounds=rounds)
    envs.close()


if __name__ == "__main__":
    main()
