"""Benchmark vecmode's sync vector env against Gymnasium's, per autoreset mode.

What is measured
----------------
Throughput, in sub-env steps per second (vector steps x ``num_envs`` / second), of
stepping ``CartPole-v1`` sub-envs with uniformly random actions, for each autoreset
mode (NextStep, SameStep, Disabled) and each ``num_envs``. Contestants:

* ``vecmode``: ``vecmode.with_autoreset(vecmode.SyncVectorEnv(fns), mode)``;
  for Disabled that is the bare core.
* ``gymnasium``: ``gymnasium.vector.SyncVectorEnv(fns, autoreset_mode=mode)``.
* ``raw``: a plain Python loop over the same number of ``gym.make("CartPole-v1")``
  sub-envs that steps each one and resets it in place when its episode ends,
  keeping nothing else: the physical limit of any sync vector env over these
  sub-envs. It does not depend on the mode, so every mode's row shows the same
  raw measurement for a given ``num_envs``.

In NextStep and SameStep mode the loop only calls ``step``. In Disabled mode both
vector envs do the same work: after each step, when any sub-env ended, they are
given ``reset(options={"reset_mask": mask})`` with a fresh dict (Gymnasium pops
``reset_mask`` from the dict and refuses an all-False mask).

How
---
The actions are generated up front from a fixed seed (action sampling is not
timed) and are the same for every contestant; every timed repeat starts with
``reset(seed=SEED)`` (untimed), so each contestant replays the same episodes in
every round. Env construction and a short warm-up are not timed either.

Shared machines are noisy, so the contestants are interleaved: each round runs,
for every ``num_envs``, one timed repeat of every contestant (in an order rotated
from round to round), and the result is the median over the rounds. The main
result is the RATIOS (vecmode / gymnasium, vecmode / raw, gymnasium / raw), each
the median of the per-round ratios of repeats run back to back; absolute
steps/s (medians) are secondary and depend on the machine.

Run
---
::

    python benchmarks/bench_sync.py              # full run (a few minutes at most)
    python benchmarks/bench_sync.py --quick      # smoke test, a few seconds
    python benchmarks/bench_sync.py --markdown   # a table for docs/performance.md
    python benchmarks/bench_sync.py --modes Disabled --num-envs 4 16 --rounds 7
    python benchmarks/bench_sync.py --clock cpu  # CPU time: steadier when busy
    python benchmarks/bench_sync.py --infos      # sub-envs with four info keys
    python benchmarks/bench_sync.py --results benchmarks/results/bench_sync.json

``--clock cpu`` times each repeat with ``time.process_time`` instead of the wall
clock: the time other programs take on the machine is left out (their share of
the caches and cores is not).
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

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode

import vecmode
from harness import (
    add_num_envs_argument,
    add_run_arguments,
    fill_num_envs,
    fill_run_defaults,
    format_report,
    interleaved,
    mode_arg,
    round_done,
    run_defaults_help,
    save_results,
    time_steps,
    versions,
)

ENV_ID = "CartPole-v1"
DEFAULT_NUM_ENVS = (1, 4, 16, 64)
DEFAULT_STEPS = 3000
DEFAULT_ROUNDS = 7
QUICK_STEPS = 100
QUICK_ROUNDS = 2
QUICK_NUM_ENVS = (1, 4)
WARMUP_STEPS = 50

VECMODE, GYMNASIUM, RAW = "vecmode", "gymnasium", "raw"


# --------------------------------------------------------------------- contestants
class WithInfos(gym.Wrapper):
    """CartPole with four info keys a step (``--infos``): an int, a float that
    is sometimes an int (batched whole by vecmode), a bool and a NumPy int."""

    def step(self, action):
        obs, reward, terminated, truncated, _ = self.env.step(action)
        self.t = getattr(self, "t", 0) + 1
        cost = 0 if self.t % 3 else 0.5
        info = {"lives": 3, "cost": cost, "ok": True, "frame": np.int64(self.t)}
        return obs, reward, terminated, truncated, info


#: Whether each sub-env is CartPole WithInfos (``--infos``).
INFOS = False


def make_env() -> gym.Env:
    """One sub-env, exactly as every contestant builds it."""
    return WithInfos(gym.make(ENV_ID)) if INFOS else gym.make(ENV_ID)


#: What every repeat is timed with: ``--clock wall`` (the default) or ``cpu``.
CLOCKS: dict[str, Callable[[], float]] = {
    "wall": time.perf_counter,
    "cpu": time.process_time,
}


def run_raw(
    envs: list[gym.Env], actions: np.ndarray, seed: int, clock: Callable[[], float]
) -> float:
    """Step every sub-env in a plain loop; reset one in place when it ends."""
    for i, env in enumerate(envs):
        env.reset(seed=seed + i)
    start = clock()
    for row in actions:
        for env, action in zip(envs, row, strict=True):
            _, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                env.reset()
    return clock() - start


def run_disabled(
    envs: gym.vector.VectorEnv,
    actions: np.ndarray,
    seed: int,
    clock: Callable[[], float],
) -> float:
    """Disabled: step, then reset the ended sub-envs with a fresh reset_mask dict."""
    envs.reset(seed=seed)
    step, reset, logical_or = envs.step, envs.reset, np.logical_or
    start = clock()
    for row in actions:
        _, _, terminations, truncations, _ = step(row)
        ended = logical_or(terminations, truncations)
        if ended.any():
            reset(options={"reset_mask": ended})
    return clock() - start


@dataclass
class Contestant:
    """One thing to time: a runner over its own, persistent sub-envs."""

    name: str
    mode: AutoresetMode | None  # None for the mode-independent raw loop
    num_envs: int
    target: object
    runner: Callable[[object, np.ndarray, int, Callable[[], float]], float]
    rates: list[float] = field(default_factory=list)

    def run(
        self,
        actions: np.ndarray,
        seed: int,
        clock: Callable[[], float] = time.perf_counter,
    ) -> float:
        """One repeat; returns sub-env steps per second."""
        gc.collect()
        elapsed = self.runner(self.target, actions, seed, clock)
        return actions.shape[0] * self.num_envs / elapsed

    def close(self) -> None:
        if isinstance(self.target, list):
            for env in self.target:
                env.close()
        else:
            self.target.close()


def build_contestants(
    modes: Sequence[AutoresetMode], num_envs: int
) -> list[Contestant]:
    fns = [make_env] * num_envs
    out = [Contestant(RAW, None, num_envs, [make_env() for _ in fns], run_raw)]
    for mode in modes:
        runner = run_disabled if mode is AutoresetMode.DISABLED else time_steps
        ours = vecmode.with_autoreset(vecmode.SyncVectorEnv(fns), mode)
        theirs = gym.vector.SyncVectorEnv(fns, autoreset_mode=mode)
        for name, envs in ((VECMODE, ours), (GYMNASIUM, theirs)):
            declared = envs.metadata.get("autoreset_mode")
            if declared is not mode:
                raise RuntimeError(f"{name} env declares {declared!r}, not {mode!r}")
            out.append(Contestant(name, mode, num_envs, envs, runner))
    return out


# ------------------------------------------------------------------------- running
@dataclass
class Row:
    mode: AutoresetMode
    num_envs: int
    vecmode_rate: float
    gymnasium_rate: float
    raw_rate: float
    vm_gym: float
    vm_raw: float
    gym_raw: float
    vm_gym_min: float
    vm_gym_max: float


def benchmark(
    modes: Sequence[AutoresetMode],
    num_envs_list: Sequence[int],
    steps: int,
    rounds: int,
    seed: int,
    progress: bool,
    clock: Callable[[], float] = time.perf_counter,
) -> list[Row]:
    by_n: dict[int, list[Contestant]] = {}
    actions: dict[int, np.ndarray] = {}
    for n in num_envs_list:
        rng = np.random.default_rng(seed)
        actions[n] = rng.integers(0, 2, size=(steps, n), dtype=np.int64)
        by_n[n] = build_contestants(modes, n)
        for contestant in by_n[n]:  # warm-up: first-call checks, caches
            contestant.run(actions[n][:WARMUP_STEPS], seed, clock)

    try:
        for r in range(rounds):
            started = time.perf_counter()
            for n, contestant in interleaved(
                ([(n, c) for c in by_n[n]] for n in num_envs_list), r
            ):
                contestant.rates.append(contestant.run(actions[n], seed, clock))
            round_done(r, rounds, started, progress)
    finally:
        for group in by_n.values():
            for contestant in group:
                contestant.close()

    rows = []
    for mode in modes:
        for n in num_envs_list:
            group = by_n[n]
            raw = next(c for c in group if c.name == RAW).rates
            ours = next(c for c in group if c.name == VECMODE and c.mode is mode).rates
            theirs = next(
                c for c in group if c.name == GYMNASIUM and c.mode is mode
            ).rates
            vm_gym = [a / b for a, b in zip(ours, theirs, strict=True)]
            rows.append(
                Row(
                    mode=mode,
                    num_envs=n,
                    vecmode_rate=statistics.median(ours),
                    gymnasium_rate=statistics.median(theirs),
                    raw_rate=statistics.median(raw),
                    vm_gym=statistics.median(vm_gym),
                    vm_raw=statistics.median(
                        a / b for a, b in zip(ours, raw, strict=True)
                    ),
                    gym_raw=statistics.median(
                        a / b for a, b in zip(theirs, raw, strict=True)
                    ),
                    vm_gym_min=min(vm_gym),
                    vm_gym_max=max(vm_gym),
                )
            )
    return rows


# ------------------------------------------------------------------------- output
def environment_lines(steps: int, rounds: int, seed: int, clock: str) -> list[str]:
    return [
        versions(),
        f"os.cpu_count() = {os.cpu_count()}, {platform.system()} {platform.machine()}",
        f"{ENV_ID}, {steps} vector steps per timed repeat, {rounds} interleaved "
        f"rounds (median), action/reset seed {seed}, {clock} clock",
        "steps/s = sub-env steps per second (vector steps x num_envs / s); "
        "ratios = median of per-round ratios",
    ]


HEADERS = (
    "mode",
    "num_envs",
    "vecmode steps/s",
    "gymnasium steps/s",
    "raw steps/s",
    "vecmode/gym",
    "vecmode/raw",
    "gym/raw",
    "vecmode/gym min-max",
)


def cells(row: Row) -> list[str]:
    return [
        row.mode.value,
        str(row.num_envs),
        f"{row.vecmode_rate:,.0f}",
        f"{row.gymnasium_rate:,.0f}",
        f"{row.raw_rate:,.0f}",
        f"{row.vm_gym:.2f}",
        f"{row.vm_raw:.2f}",
        f"{row.gym_raw:.2f}",
        f"{row.vm_gym_min:.2f}-{row.vm_gym_max:.2f}",
    ]


# ---------------------------------------------------------------------------- CLI
def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Steps/s of vecmode.SyncVectorEnv vs gymnasium.vector."
        "SyncVectorEnv per autoreset mode, and vs a raw loop over the sub-envs.",
    )
    add_num_envs_argument(parser, DEFAULT_NUM_ENVS, QUICK_NUM_ENVS)
    parser.add_argument(
        "--modes",
        type=mode_arg,
        nargs="+",
        default=list(vecmode.MODES),
        help="autoreset modes (default NextStep SameStep Disabled)",
    )
    parser.add_argument(
        "--clock",
        choices=sorted(CLOCKS),
        default="wall",
        help="time each repeat by the wall clock (default) or by the CPU time "
        "of this process (steadier on a busy machine)",
    )
    parser.add_argument(
        "--infos",
        action="store_true",
        help="sub-envs that return four info keys a step (the info batching's cost)",
    )
    defaults = (DEFAULT_STEPS, QUICK_STEPS, DEFAULT_ROUNDS, QUICK_ROUNDS)
    add_run_arguments(parser, **run_defaults_help(*defaults))
    args = parser.parse_args(argv)
    fill_run_defaults(args, *defaults)
    fill_num_envs(args, DEFAULT_NUM_ENVS, QUICK_NUM_ENVS)
    args.modes = list(dict.fromkeys(args.modes))
    return args


def main(argv: Sequence[str] | None = None) -> int:
    global INFOS
    args = parse_args(argv)
    INFOS = args.infos
    print(
        f"benchmarking {', '.join(m.value for m in args.modes)} x num_envs "
        f"{args.num_envs}: {args.rounds} rounds of {args.steps} vector steps ...",
        file=sys.stderr,
        flush=True,
    )
    rows = benchmark(
        args.modes,
        args.num_envs,
        steps=args.steps,
        rounds=args.rounds,
        seed=args.seed,
        progress=True,
        clock=CLOCKS[args.clock],
    )
    header = environment_lines(args.steps, args.rounds, args.seed, args.clock)
    table = [cells(r) for r in rows]
    print(format_report(HEADERS, table, header, args.markdown))
    save_results(
        args.results,
        __file__,
        header,
        {"main": (HEADERS, table)},
        rounds=args.rounds,
        steps=args.steps,
        clock=args.clock,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
