"""Benchmark wrappers over batched envs: the cost each wrapper adds to a step.

What is measured
----------------
**NumPy table.** Over Gymnasium's numpy ``CartPoleVectorEnv``
(``gymnasium.make_vec("CartPole-v1", n, vectorization_mode="vector_entry_point")``,
NEXT_STEP) at 16, 256, 1,024 and 4,096 sub-envs (``--num-envs``): the bare env's
microseconds per vector step, and per wrapper the microseconds it adds, with
Gymnasium's wrapper and with vecmode's, same arguments:

* ``RecordEpisodeStatistics``, ``NormalizeObservation``, ``NormalizeReward``;
* ``TransformReward`` (clip): ``func`` clips the rewards to [-10, 10];
* CleanRL's five-layer PPO stack (``ClipReward(NormalizeReward(
  TransformObservation(NormalizeObservation(RecordEpisodeStatistics(env)),
  clip10), gamma=0.99), -10, 10)``) built from each side's wrappers, and
  ``vecmode.wrappers.ppo_stack(env, gamma=0.99)``: reported as time / bare;
* the same five layers written by hand as one object (``by_hand.py``: the
  arithmetic alone, for one mode, no checks; compiled on JAX): time / bare, on
  the five layers' row.

**Array table.** Over ``vecmode.testing.BatchedCartPole`` in torch (CPU) and,
when installed, JAX (CPU, eager, float32 unless ``jax_enable_x64``) at 4,096 and
65,536 sub-envs (``--array-num-envs``): the bare env's time per step, the
five-layer stacks over it and the hand-written five. The env is DISABLED: every
step is followed by ``reset(options={"reset_mask": terminated | truncated})``
(timed, no host sync).
A stack that cannot take the library's arrays yet is reported with its error.

**Simulator table.** Each ``vecmode.simulators`` adapter's step against its
simulator's own (native API, jitted where it is JAX), over the fakes of
``tests/simulators/fakes`` and over gymnax's own CartPole where gymnax is
installed, at 4,096 sub-envs (``--simulator-num-envs``; ``simulators.py``).
torch runs on one thread (``--torch-threads``): on a shared machine its thread
pool waits for busy cores.

How
---
Actions are generated up front from a fixed seed (for the array envs, in the
library's own arrays) and are the same for every contestant; each contestant has
its own fresh env; every timed repeat starts with an untimed ``reset(seed=SEED)``,
then a garbage collection whose survivors are frozen (``gc.freeze``: the next
collections skip them; the contestants are unfrozen once timed).
Contestants of one size are interleaved: each round runs one timed repeat of
each, in an order rotated from round to round. Added times and ratios are medians
of the per-round values.

Run
---
::

    python benchmarks/bench_batched.py            # full run (a few minutes)
    python benchmarks/bench_batched.py --quick    # smoke test, a few seconds
    python benchmarks/bench_batched.py --markdown --results benchmarks/results/bench_batched.json
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import VectorEnv
from gymnasium.wrappers import vector as gv

from by_hand import ByHand
from harness import (
    add_num_envs_argument,
    add_run_arguments,
    fill_num_envs,
    fill_run_defaults,
    interleaved,
    markdown_table,
    positive_int,
    round_done,
    run_defaults_help,
    save_results,
    text_table,
    versions,
)
from simulators import SIMULATOR_HEADERS, simulator_rows
from vecmode import wrappers as vw
from vecmode.testing import BatchedCartPole

NUM_ENVS, QUICK_NUM_ENVS = (16, 256, 1024, 4096), (16,)
ARRAY_NUM_ENVS, QUICK_ARRAY_NUM_ENVS = (4096, 65536), (64,)
DEFAULT_STEPS, QUICK_STEPS, DEFAULT_ROUNDS, QUICK_ROUNDS = 500, 10, 9, 1
WARMUP_STEPS = 20
BARE = "bare env"
FIVE, PPO, BY_HAND = "five layers", "ppo_stack", "by hand"

Wrap = Callable[[VectorEnv], VectorEnv]


def clip10(x: Any) -> Any:
    return x.clip(-10.0, 10.0)  # NumPy, torch and JAX arrays alike


def five(w: Any) -> Wrap:
    """CleanRL's five-layer stack out of the wrapper module ``w``."""

    def build(env: VectorEnv) -> VectorEnv:
        env = w.NormalizeObservation(w.RecordEpisodeStatistics(env))
        env = w.NormalizeReward(w.TransformObservation(env, clip10), gamma=0.99)
        return w.ClipReward(env, -10.0, 10.0)

    return build


def ppo(env: VectorEnv) -> VectorEnv:
    return vw.ppo_stack(env, gamma=0.99)


#: per row: (Gymnasium's wrap, vecmode's wrap); None where a side has none
CASES: dict[str, tuple[Wrap | None, Wrap | None]] = {
    "RecordEpisodeStatistics": (gv.RecordEpisodeStatistics, vw.RecordEpisodeStatistics),
    "NormalizeObservation": (gv.NormalizeObservation, vw.NormalizeObservation),
    "NormalizeReward": (gv.NormalizeReward, vw.NormalizeReward),
    "TransformReward (clip)": (
        lambda e: gv.TransformReward(e, clip10),
        lambda e: vw.TransformReward(e, clip10),
    ),
    FIVE: (five(gv), five(vw)),
    PPO: (None, ppo),
}
RATIO_ROWS = (FIVE, PPO)  # reported as time / bare


# ---------------------------------------------------------------------- timing
def timed(env: VectorEnv, actions: Sequence[Any], seed: int, disabled: bool) -> float:
    """Seconds per vector step over ``actions`` after an untimed reset; with
    ``disabled``, each step is followed by a masked reset of the ended sub-envs."""
    env.reset(seed=seed)
    step, reset = env.step, env.reset
    gc.collect()
    gc.freeze()  # the survivors: later collections skip them
    start = time.perf_counter()
    obs = None
    for row in actions:
        obs, _, terminated, truncated, _ = step(row)
        if disabled:
            obs, _ = reset(options={"reset_mask": terminated | truncated})
    getattr(obs, "block_until_ready", lambda: None)()  # JAX dispatches async
    return (time.perf_counter() - start) / len(actions)


def time_group(
    envs: dict[str, VectorEnv],
    actions: Sequence[Any],
    args: argparse.Namespace,
    disabled: bool,
    label: str,
) -> dict[str, list[float]]:
    """Seconds per step of each contestant, per round (interleaved rounds)."""
    times: dict[str, list[float]] = {name: [] for name in envs}
    try:
        for env in envs.values():
            timed(env, actions[:WARMUP_STEPS], args.seed, disabled)
        for r in range(args.rounds):
            started = time.perf_counter()
            for name in interleaved([list(envs)], r):
                times[name].append(timed(envs[name], actions, args.seed, disabled))
            round_done(r, args.rounds, started, True)
    finally:
        for env in envs.values():
            env.close()
        gc.unfreeze()  # (timed froze the contestants: now they can go)
    print(f"  {label} done", file=sys.stderr, flush=True)
    return times


def added_us(times: dict[str, list[float]], name: str) -> float:
    return statistics.median(
        1e6 * (a - b) for a, b in zip(times[name], times[BARE], strict=True)
    )


def over_bare(times: dict[str, list[float]], name: str) -> float:
    return statistics.median(
        a / b for a, b in zip(times[name], times[BARE], strict=True)
    )


# ------------------------------------------------------------------ NumPy table
NUMPY_HEADERS = (
    "sub-envs",
    "wrapper",
    "gym added us",
    "vecmode added us",
    "gym time/bare",
    "vecmode time/bare",
    "by hand time/bare",
)


def numpy_rows(n: int, args: argparse.Namespace) -> list[list[str]]:
    """The rows of ``n`` sub-envs: the bare env, then each case."""

    def base() -> VectorEnv:
        return gym.make_vec("CartPole-v1", n, vectorization_mode="vector_entry_point")

    envs = {BARE: base()}
    for name, wraps in CASES.items():
        for side, wrap in zip(("gym", "vecmode"), wraps, strict=True):
            if wrap is not None:
                envs[f"{side} {name}"] = wrap(base())
    envs[BY_HAND] = ByHand(base())  # type: ignore[assignment]
    actions = np.random.default_rng(args.seed).integers(0, 2, (args.steps, n))
    times = time_group(envs, actions, args, False, f"numpy, {n} sub-envs")
    bare_us = 1e6 * statistics.median(times[BARE])
    rows = [[f"{n:,}", f"{BARE}: {bare_us:.1f} us per step", "", "", "", "", ""]]
    for name in CASES:
        cells = [f"{n:,}", name]
        added, ratio = [], []
        for side in ("gym", "vecmode"):
            key = f"{side} {name}"
            added.append(f"{added_us(times, key):+.1f}" if key in times else "-")
            ratio.append(f"{over_bare(times, key):.2f}x" if key in times else "-")
        by_hand = f"{over_bare(times, BY_HAND):.2f}x" if name == FIVE else ""
        rows.append(cells + added + ratio + [by_hand])
    return rows


# ------------------------------------------------------------------ array table
ARRAY_HEADERS = (
    "library",
    "sub-envs",
    "contestant",
    "us per step",
    "time/bare",
    "first ms",
)


def libraries(torch_threads: int) -> dict[str, Any]:
    """The array modules installed, by name (torch on ``torch_threads`` threads)."""
    found = {}
    for name in ("torch", "jax"):
        try:
            module = __import__(name)
        except ImportError:
            print(f"skipped (not installed): {name}", file=sys.stderr)
            continue
        found[name] = module.numpy if name == "jax" else module
        if name == "torch":
            module.set_num_threads(torch_threads)
    return found


def try_wrap(wrap: Wrap, env: VectorEnv, actions: Any) -> tuple[Any, str]:
    """The wrapped env and the milliseconds of its first reset and 3 steps (JAX
    compiles there), or None and why it cannot take these batches."""
    try:
        started = time.perf_counter()
        wrapped = wrap(env)
        timed(wrapped, actions[:3], 0, True)
        return wrapped, f"{1e3 * (time.perf_counter() - started):.0f}"
    except Exception as error:
        env.close()
        text = " ".join(f"{type(error).__name__}: {error}".split())
        text = re.sub(r"\[\[.*?\]\]|\[[-+\d.e, ]+\]", "[...]", text)  # no batches
        return None, text[:140]


def array_rows(name: str, xp: Any, n: int, args: argparse.Namespace) -> list[list[str]]:
    """Rows of the bare BatchedCartPole of ``n`` sub-envs and the stacks over it."""
    rng = np.random.default_rng(args.seed)
    actions = xp.asarray(rng.integers(0, 2, (args.steps, n)))
    actions = [actions[i] for i in range(args.steps)]
    envs: dict[str, VectorEnv] = {}
    refused: dict[str, str] = {}
    first: dict[str, str] = {}
    contestants = (BARE, lambda e: e), (f"vecmode {FIVE}", five(vw)), (PPO, ppo)
    for label, wrap in (*contestants, (BY_HAND, ByHand)):
        wrapped, said = try_wrap(wrap, BatchedCartPole(n, xp), actions)
        if wrapped is None:
            refused[label] = said
        else:
            envs[label], first[label] = wrapped, said
    times = time_group(envs, actions, args, True, f"{name}, {n} sub-envs")
    rows = []
    for label in envs:
        us = f"{1e6 * statistics.median(times[label]):.1f}"
        ratio = "" if label == BARE else f"{over_bare(times, label):.2f}x"
        rows.append([name, f"{n:,}", label, us, ratio, first[label]])
    for label, why in refused.items():
        rows.append([name, f"{n:,}", label, f"not yet: {why}", "-", "-"])
    return rows


# ------------------------------------------------------------------------- CLI
def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Time each wrapper adds to a batched CartPole step: Gymnasium's "
        "vs vecmode's over Gymnasium's numpy CartPoleVectorEnv, and over "
        "vecmode.testing.BatchedCartPole in torch and JAX.",
    )
    add_num_envs_argument(parser, NUM_ENVS, QUICK_NUM_ENVS)
    parser.add_argument(
        "--array-num-envs",
        type=positive_int,
        nargs="*",
        default=None,
        help=f"sub-envs of the torch/JAX BatchedCartPole (default "
        f"{' '.join(map(str, ARRAY_NUM_ENVS))}; "
        f"{' '.join(map(str, QUICK_ARRAY_NUM_ENVS))} with --quick; none: no "
        f"array table)",
    )
    parser.add_argument(
        "--torch-threads",
        type=positive_int,
        default=1,
        help="torch.set_num_threads (default 1: on a shared machine torch's thread "
        "pool waits for busy cores, and a step can take 30x longer)",
    )
    parser.add_argument(
        "--simulator-num-envs",
        type=positive_int,
        nargs="*",
        default=None,
        help="sub-envs of the simulator table (default 4096; 64 with --quick; "
        "none: no simulator table)",
    )
    defaults = (DEFAULT_STEPS, QUICK_STEPS, DEFAULT_ROUNDS, QUICK_ROUNDS)
    add_run_arguments(parser, **run_defaults_help(*defaults))
    args = parser.parse_args(argv)
    fill_run_defaults(args, *defaults)
    fill_num_envs(args, NUM_ENVS, QUICK_NUM_ENVS)
    if args.simulator_num_envs is None:
        args.simulator_num_envs = [64] if args.quick else [4096]
    if args.array_num_envs is None:
        args.array_num_envs = list(
            QUICK_ARRAY_NUM_ENVS if args.quick else ARRAY_NUM_ENVS
        )
    return args


def header_lines(args: argparse.Namespace, found: dict[str, Any]) -> list[str]:
    extra = []
    if "torch" in found:
        torch = found["torch"]
        extra.append(f"torch {torch.__version__} ({torch.get_num_threads()} threads)")
    if "jax" in found:
        extra.append(f"jax {__import__('jax').__version__}")
    return [
        ", ".join([versions(), *extra]),
        f"os.cpu_count() = {os.cpu_count()}; {args.steps} vector steps per timed "
        f"repeat, {args.rounds} interleaved rounds, seed {args.seed}",
        "numpy table: over gym.make_vec('CartPole-v1', n, "
        "vectorization_mode='vector_entry_point') (NextStep); added us = time per "
        "vector step minus the bare env's; time/bare = the stack's time / the bare "
        "env's (medians of per-round values); by hand = the five layers' "
        "arithmetic as one object (benchmarks/by_hand.py)",
        "array table: over vecmode.testing.BatchedCartPole(n, xp) (Disabled, a "
        "masked reset after every step, timed); first ms = building the env and "
        "its first reset and 3 steps (JAX compiles there); 'not yet': the stack "
        "cannot take the library's batches",
        "simulator table: each vecmode.simulators adapter's step vs its "
        "simulator's own (native API, jitted on JAX), over tests/simulators/fakes "
        "and gymnax's CartPole-v1; adapter/own = median of per-round ratios",
    ]


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    found = libraries(args.torch_threads) if args.array_num_envs else {}
    numpy = [row for n in args.num_envs for row in numpy_rows(n, args)]
    arrays = [
        row
        for name, xp in found.items()
        for n in args.array_num_envs
        for row in array_rows(name, xp, n, args)
    ]
    simulators = [
        row
        for n in args.simulator_num_envs
        for row in simulator_rows(n, args.steps, args.rounds)
    ]
    header = header_lines(args, found)
    table = markdown_table if args.markdown else text_table
    out = [f"- {line}" for line in header] if args.markdown else list(header)
    out += ["", *table(NUMPY_HEADERS, numpy)]
    if arrays:
        out += ["", *table(ARRAY_HEADERS, arrays)]
    if simulators:
        out += ["", *table(SIMULATOR_HEADERS, simulators)]
    print("\n".join(out))
    save_results(
        args.results,
        __file__,
        header,
        {
            "numpy": (NUMPY_HEADERS, numpy),
            "arrays": (ARRAY_HEADERS, arrays),
            "simulators": (SIMULATOR_HEADERS, simulators),
        },
        rounds=args.rounds,
        steps=args.steps,
        num_envs=args.num_envs,
        array_num_envs=args.array_num_envs,
        simulator_num_envs=args.simulator_num_envs,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
