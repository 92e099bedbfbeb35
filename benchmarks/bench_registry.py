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
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import gymnasium as gym
import numpy as np

import vecmode

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke test")
    parser.add_argument("--rounds", type=int, default=7)
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
    print(f"CartPole-v1, {NUM_ENVS} sub-envs, NextStep, {rounds} rounds, medians")
    print(
        f"construction of ClipReward, guarded/unguarded: "
        f"{statistics.median(build_ratios):.2f} (unguarded {unchecked_us:.1f} us)"
    )
    print(
        f"steps/s of a stack built under guard()/unguarded: "
        f"{statistics.median(step_ratios):.2f}"
    )
    check = statistics.median(check_us)
    step = statistics.median(step_us)
    print(
        f"vecmode.check_stack() of the 3-layer stack: {check:.1f} us "
        f"= {check / step:.2f} vector steps ({step:.1f} us each)"
    )
    envs.close()


if __name__ == "__main__":
    main()
