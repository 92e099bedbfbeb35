"""Benchmark vecmode.TransitionCollector against stepping the env by hand.

What is measured
----------------
The time of one training-loop step, per autoreset mode (NextStep, SameStep,
Disabled), over ``CartPole-v1`` with 16 sub-envs and random actions. Four
contestants, each over its own, fresh vector env:

* ``raw``: ``envs.step(actions)`` and nothing else; in Disabled mode also the
  reset the caller owes, ``envs.reset(options={"reset_mask": ended})`` after
  every step where an episode ended. What the env alone costs; no transition is
  extracted (it is wrong in every mode but Disabled).
* ``by hand``: raw plus the reference's own per-mode extraction, written
  vectorised, building the same 8-tuple the collector returns: NextStep keeps the
  previous step's ``terminations | truncations`` as the invalid mask; SameStep
  copies the batch and writes ``info["final_obs"]`` into the ended rows; Disabled
  keeps the observations from before the reset. Mode-specific code, the least a
  correct loop must do.
* ``collector``: ``vecmode.TransitionCollector(envs).step(actions)``, one loop
  for every mode.
* ``collector, copy=False env``: the same over an env built with ``copy=False``,
  which reuses its observation buffer, so the collector copies what it returns
  (one copy a step, two in Disabled on steps that reset).

Every contestant runs over vecmode's env (``vecmode.make_vec(ENV, 16,
autoreset_mode=mode, vectorization_mode="sync")``) and, side by side, over Gymnasium's
(``gymnasium.vector.SyncVectorEnv([make ENV] * 16, autoreset_mode=mode)``).
``--bases replay`` runs them over a replay of a recorded run of vecmode's env
instead (stepping it costs about a microsecond), which measures the loops' own
cost free of the physics' noise: *collector - by hand us* is then what the
collector adds to the least a correct loop must do.

How
---
Actions are generated up front from a fixed seed and are the same for every
contestant; every timed repeat starts with an untimed ``reset(seed=SEED)``, so
every contestant replays the same episodes in every round. Building the envs and
a short warm-up are not timed. Contestants are interleaved: each round runs one
timed repeat of every contestant, in an order rotated from round to round.
Ratios are medians of the per-round ratios; steps/s (sub-env steps per second)
are medians over rounds.

Run
---
::

    python benchmarks/bench_transitions.py              # full run (about a minute)
    python benchmarks/bench_transitions.py --quick      # smoke test, a few seconds
    python benchmarks/bench_transitions.py --markdown   # table for docs/performance.md
    python benchmarks/bench_transitions.py --modes SameStep --rounds 15
    python benchmarks/bench_transitions.py --bases replay   # the loops' own cost
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
from gymnasium.vector import AutoresetMode, VectorEnv

import vecmode
from harness import (
    add_run_arguments,
    fill_run_defaults,
    interleaved,
    markdown_table,
    mode_arg,
    round_done,
    run_defaults_help,
    save_results,
    text_table,
    time_steps,
    versions,
)
from vecmode.transitions import TransitionCollector

ENV_ID = "CartPole-v1"
NUM_ENVS = 16
DEFAULT_STEPS = 2000
DEFAULT_ROUNDS = 9
QUICK_STEPS = 50
QUICK_ROUNDS = 2
WARMUP_STEPS = 50

VECMODE_BASE, GYMNASIUM_BASE, REPLAY_BASE = "vecmode", "gymnasium", "replay"
RAW, BY_HAND, COLLECTOR, NO_COPY = (
    "raw",
    "by hand",
    "collector",
    "collector, copy=False env",
)


def make_env() -> gym.Env:
    return gym.make(ENV_ID)


class ReplayVectorEnv(VectorEnv):
    """Replays a recorded run of vecmode's env in one mode, ignoring the actions.

    ``--bases replay``: stepping it costs about a microsecond, so the time over it
    is the loop's own (the extraction's, the collector's), without the physics'
    noise. ``reset(seed=...)`` restarts the recording; a masked reset returns the
    recorded one. With ``copy=False`` it returns one reused buffer, like a
    ``copy=False`` env.
    """

    def __init__(self, recording: tuple[Any, ...], copy: bool) -> None:
        spaces, metadata, self._first, self._steps, self._resets = recording
        self.num_envs = NUM_ENVS
        (
            self.single_observation_space,
            self.single_action_space,
            self.observation_space,
            self.action_space,
        ) = spaces
        self.metadata = dict(metadata)
        self.copy = copy
        self._buffer = self._first[0].copy()
        self._next_step = iter(self._steps)
        self._next_reset = iter(self._resets)

    def _out(self, obs: np.ndarray) -> np.ndarray:
        if self.copy:
            return obs.copy()
        self._buffer[...] = obs
        return self._buffer

    def reset(
        self, *, seed: Any = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        if options is not None and "reset_mask" in options:
            obs, infos = next(self._next_reset)
        else:
            self._next_step, self._next_reset = iter(self._steps), iter(self._resets)
            obs, infos = self._first
        return self._out(obs), dict(infos)

    def step(self, actions: Any) -> Any:
        obs, rewards, terminations, truncations, infos = next(self._next_step)
        return self._out(obs), rewards.copy(), terminations, truncations, dict(infos)


_RECORDINGS: dict[tuple[AutoresetMode, int, int], tuple[Any, ...]] = {}


def recording(mode: AutoresetMode, steps: int, seed: int) -> tuple[Any, ...]:
    """A run of vecmode's env in ``mode`` over the benchmark's actions."""
    key = (mode, steps, seed)
    if key not in _RECORDINGS:
        envs = make_base(VECMODE_BASE, mode)
        first = envs.reset(seed=seed)
        run, resets = [], []
        for row in make_actions(steps, seed):
            run.append(envs.step(row))
            ended = np.logical_or(run[-1][2], run[-1][3])
            if mode is AutoresetMode.DISABLED and ended.any():
                resets.append(envs.reset(options={"reset_mask": ended}))
        spaces = (
            envs.single_observation_space,
            envs.single_action_space,
            envs.observation_space,
            envs.action_space,
        )
        _RECORDINGS[key] = (spaces, envs.metadata, first, run, resets)
        envs.close()
    return _RECORDINGS[key]


def make_actions(steps: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(0, 2, size=(steps, NUM_ENVS), dtype=np.int64)


def make_base(
    base: str, mode: AutoresetMode, copy: bool = True, steps: int = 0, seed: int = 0
) -> VectorEnv:
    if base == REPLAY_BASE:
        return ReplayVectorEnv(recording(mode, steps, seed), copy)
    if base == VECMODE_BASE:
        return vecmode.make_vec(
            ENV_ID,
            NUM_ENVS,
            autoreset_mode=mode,
            vector_kwargs={"copy": copy},
            vectorization_mode="sync",
        )
    return gym.vector.SyncVectorEnv(
        [make_env] * NUM_ENVS, autoreset_mode=mode, copy=copy
    )


# --------------------------------------------------------------------- contestants
def run_raw(envs: VectorEnv, actions: np.ndarray, seed: int) -> float:
    """Step; in Disabled also reset the ended sub-envs (the caller's duty)."""
    envs.reset(seed=seed)
    step, reset, logical_or = envs.step, envs.reset, np.logical_or
    disabled = envs.metadata["autoreset_mode"] is AutoresetMode.DISABLED
    start = time.perf_counter()
    for row in actions:
        _, _, terminations, truncations, _ = step(row)
        if disabled:
            ended = logical_or(terminations, truncations)
            if ended.any():
                reset(options={"reset_mask": ended})
    return time.perf_counter() - start


def run_next_step_by_hand(envs: VectorEnv, actions: np.ndarray, seed: int) -> Any:
    obs, _ = envs.reset(seed=seed)
    step, logical_or = envs.step, np.logical_or
    autoreset = np.zeros(NUM_ENVS, dtype=bool)
    start = time.perf_counter()
    for row in actions:
        next_obs, rewards, terminations, truncations, infos = step(row)
        _ = (obs, row, rewards, terminations, truncations, next_obs, ~autoreset, infos)
        obs = next_obs
        autoreset = logical_or(terminations, truncations)
    return time.perf_counter() - start


def run_same_step_by_hand(envs: VectorEnv, actions: np.ndarray, seed: int) -> Any:
    obs, _ = envs.reset(seed=seed)
    step, flatnonzero = envs.step, np.flatnonzero
    valid = np.ones(NUM_ENVS, dtype=bool)
    start = time.perf_counter()
    for row in actions:
        next_obs, rewards, terminations, truncations, infos = step(row)
        final_next_obs = next_obs
        if "final_obs" in infos:
            final_next_obs = next_obs.copy()
            final = infos["final_obs"]
            for j in flatnonzero(infos["_final_obs"]):
                final_next_obs[j] = final[j]
        _ = (obs, row, rewards, terminations, truncations, final_next_obs, valid, infos)
        obs = next_obs
    return time.perf_counter() - start


def run_disabled_by_hand(envs: VectorEnv, actions: np.ndarray, seed: int) -> Any:
    obs, _ = envs.reset(seed=seed)
    step, reset, logical_or = envs.step, envs.reset, np.logical_or
    valid = np.ones(NUM_ENVS, dtype=bool)
    start = time.perf_counter()
    for row in actions:
        next_obs, rewards, terminations, truncations, infos = step(row)
        _ = (obs, row, rewards, terminations, truncations, next_obs, valid, infos)
        ended = logical_or(terminations, truncations)
        if ended.any():
            next_obs, _ = reset(options={"reset_mask": ended})
        obs = next_obs
    return time.perf_counter() - start


BY_HAND_RUNNERS: dict[AutoresetMode, Callable[[Any, np.ndarray, int], float]] = {
    AutoresetMode.NEXT_STEP: run_next_step_by_hand,
    AutoresetMode.SAME_STEP: run_same_step_by_hand,
    AutoresetMode.DISABLED: run_disabled_by_hand,
}


@dataclass
class Contestant:
    name: str
    target: Any
    runner: Callable[[Any, np.ndarray, int], float]
    times: list[float] = field(default_factory=list)

    def run(self, actions: np.ndarray, seed: int) -> float:
        """Seconds per vector step, one repeat."""
        gc.collect()
        return self.runner(self.target, actions, seed) / len(actions)


def build_group(
    base: str, mode: AutoresetMode, steps: int, seed: int
) -> list[Contestant]:
    def env(copy: bool = True) -> VectorEnv:
        return make_base(base, mode, copy, steps, seed)

    group = [
        Contestant(RAW, env(), run_raw),
        Contestant(BY_HAND, env(), BY_HAND_RUNNERS[mode]),
        Contestant(COLLECTOR, TransitionCollector(env()), time_steps),
        Contestant(NO_COPY, TransitionCollector(env(copy=False)), time_steps),
    ]
    if group[2].target.copy or not group[3].target.copy:
        raise RuntimeError("the collectors do not copy as expected")
    return group


# ------------------------------------------------------------------------- running
@dataclass
class Row:
    base: str
    mode: AutoresetMode
    rate: dict[str, float]  # sub-env steps per second, medians
    over_raw: dict[str, float]  # median per-round time / raw time
    over_hand: float  # median per-round collector time / by-hand time
    over_hand_min: float
    over_hand_max: float
    overhead_us: float  # median per-round collector - by-hand time, us
    over_raw_us: float  # median per-round collector - raw time, us
    copy_us: float  # median per-round copy=False collector - collector time, us


def benchmark(
    bases: Sequence[str],
    modes: Sequence[AutoresetMode],
    steps: int,
    rounds: int,
    seed: int,
    progress: bool,
) -> list[Row]:
    actions = make_actions(steps, seed)
    groups = {
        (base, mode): build_group(base, mode, steps, seed)
        for base in bases
        for mode in modes
    }
    try:
        for group in groups.values():  # warm-up: first-call checks, caches
            for contestant in group:
                contestant.run(actions[:WARMUP_STEPS], seed)
        for r in range(rounds):
            started = time.perf_counter()
            for contestant in interleaved(groups.values(), r):
                contestant.times.append(contestant.run(actions, seed))
            round_done(r, rounds, started, progress)
    finally:
        for group in groups.values():
            for contestant in group:
                contestant.target.close()

    rows = []
    for (base, mode), group in groups.items():
        t = {c.name: c.times for c in group}

        def ratios(a: list[float], b: list[float]) -> list[float]:
            return [x / y for x, y in zip(a, b, strict=True)]

        over_hand = ratios(t[COLLECTOR], t[BY_HAND])
        rows.append(
            Row(
                base=base,
                mode=mode,
                rate={k: NUM_ENVS / statistics.median(v) for k, v in t.items()},
                over_raw={
                    k: statistics.median(ratios(t[k], t[RAW]))
                    for k in (BY_HAND, COLLECTOR, NO_COPY)
                },
                over_hand=statistics.median(over_hand),
                over_hand_min=min(over_hand),
                over_hand_max=max(over_hand),
                overhead_us=statistics.median(
                    1e6 * (a - b) for a, b in zip(t[COLLECTOR], t[BY_HAND], strict=True)
                ),
                over_raw_us=statistics.median(
                    1e6 * (a - b) for a, b in zip(t[COLLECTOR], t[RAW], strict=True)
                ),
                copy_us=statistics.median(
                    1e6 * (a - b) for a, b in zip(t[NO_COPY], t[COLLECTOR], strict=True)
                ),
            )
        )
    return rows


# -------------------------------------------------------------------------- output
HEADERS = (
    "env",
    "mode",
    "raw steps/s",
    "collector steps/s",
    "by hand/raw",
    "collector/raw",
    "collector/by hand",
    "collector - raw us",
    "collector - by hand us",
    "copy=False env: collector/raw",
    "copy=False env - copy=True env us",
    "collector/by hand min-max",
)


def cells(row: Row) -> list[str]:
    return [
        row.base,
        row.mode.value,
        f"{row.rate[RAW]:,.0f}",
        f"{row.rate[COLLECTOR]:,.0f}",
        f"{row.over_raw[BY_HAND]:.3f}",
        f"{row.over_raw[COLLECTOR]:.3f}",
        f"{row.over_hand:.3f}",
        f"{row.over_raw_us:.1f}",
        f"{row.overhead_us:.1f}",
        f"{row.over_raw[NO_COPY]:.3f}",
        f"{row.copy_us:.1f}",
        f"{row.over_hand_min:.2f}-{row.over_hand_max:.2f}",
    ]


def environment_lines(steps: int, rounds: int, seed: int) -> list[str]:
    return [
        versions(),
        f"os.cpu_count() = {os.cpu_count()}, {platform.system()} {platform.machine()}",
        f"{ENV_ID}, {NUM_ENVS} sub-envs; env vecmode = vecmode.make_vec(...), "
        f"gymnasium = gymnasium.vector.SyncVectorEnv(...), replay = a replay of a "
        f"recorded run of vecmode's env; a fresh one per contestant",
        f"{steps} vector steps per timed repeat, {rounds} interleaved rounds, "
        f"action/reset seed {seed}",
        "ratios of times per vector step (medians of per-round ratios; lower is "
        "faster); raw = envs.step (+ the masked reset in Disabled); by hand = raw + "
        "the reference's per-mode extraction; steps/s = sub-env steps per second",
    ]


def report(rows: Sequence[Row], header: Sequence[str], markdown: bool) -> str:
    lines = [cells(row) for row in rows]
    if markdown:
        return "\n".join(
            [*(f"- {line}" for line in header), "", *markdown_table(HEADERS, lines)]
        )
    return "\n".join([*header, "", *text_table(HEADERS, lines)])


# ---------------------------------------------------------------------------- CLI
def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Time per training-loop step through vecmode.TransitionCollector "
        "vs the raw env step and the reference's by-hand extraction (CartPole-v1, "
        "16 sub-envs, every mode, over vecmode's and Gymnasium's sync envs).",
    )
    parser.add_argument(
        "--modes",
        nargs="+",
        type=mode_arg,
        default=list(vecmode.MODES),
        help="the modes to run (default: all three)",
    )
    parser.add_argument(
        "--bases",
        nargs="+",
        choices=(VECMODE_BASE, GYMNASIUM_BASE, REPLAY_BASE),
        default=[VECMODE_BASE, GYMNASIUM_BASE],
        help="the vector envs to run over (default: vecmode and gymnasium); "
        "replay: a replay of a recorded run of vecmode's env, so that the times "
        "are the loops' own",
    )
    defaults = (DEFAULT_STEPS, QUICK_STEPS, DEFAULT_ROUNDS, QUICK_ROUNDS)
    add_run_arguments(parser, **run_defaults_help(*defaults))
    args = parser.parse_args(argv)
    fill_run_defaults(args, *defaults)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    print(
        f"benchmarking {len(args.bases) * len(args.modes)} groups: {args.rounds} "
        f"rounds of {args.steps} vector steps ...",
        file=sys.stderr,
        flush=True,
    )
    rows = benchmark(
        args.bases, args.modes, args.steps, args.rounds, args.seed, progress=True
    )
    header = environment_lines(args.steps, args.rounds, args.seed)
    print(report(rows, header, args.markdown))
    save_results(
        args.results,
        __file__,
        header,
        {"main": (HEADERS, [cells(r) for r in rows])},
        rounds=args.rounds,
        steps=args.steps,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
