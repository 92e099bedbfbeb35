"""Benchmark vecmode's async vector env against Gymnasium's and both sync envs.

What is measured
----------------
Throughput, in sub-env steps per second (vector steps x ``num_envs`` / second), of
stepping sub-envs with uniformly random actions in NextStep mode (Gymnasium's
default), for two kinds of sub-env:

* ``CartPole-v1``: a cheap env (a few microseconds per step), where the cost of
  crossing processes dominates; ``num_envs`` in 2, 4, 8, 16 by default.
* ``heavy``: :class:`HeavyEnv` below, about 50 microseconds of CPU work per step
  and 84x84x3 uint8 observations (an Atari-sized frame); ``num_envs`` in 2, 4, 8.

Contestants, all in NextStep mode over the same env functions:

* ``gym async``: ``gymnasium.vector.AsyncVectorEnv(fns)`` (one process per sub-env);
* ``gym sync``: ``gymnasium.vector.SyncVectorEnv(fns)``;
* ``vm sync``: ``vecmode.with_autoreset(vecmode.SyncVectorEnv(fns), "NextStep")``;
* ``vm async``: ``vecmode.with_autoreset(vecmode.AsyncVectorEnv(fns), "NextStep")``
  with its default layout: every sub-env in a worker, one worker per usable CPU
  (``--num-workers N``: N workers);
* ``vm async+parent``: the opt-in layout, ``AsyncVectorEnv(fns, in_parent=k)``
  with ``k = num_envs // usable CPUs``: one worker per usable CPU but one, the
  parent stepping the last ``k`` sub-envs meanwhile (faster for cheap sub-envs; no
  crash isolation or timeout for those ``k``).

The main results are the RATIOS ``vm async / gym async`` and ``vm async / vm
sync`` (and the same for ``vm async+parent``), each the median of per-round ratios
of repeats run back to back, and the sync/async crossover: the smallest
``num_envs`` from which vecmode's async env beats its sync env. Absolute steps/s (medians) depend on the machine.

How
---
The actions come from a fixed seed (sampling is not timed), the same for every
contestant; every timed repeat starts with ``reset(seed=SEED)`` (untimed). Env
construction and a short warm-up are not timed. Shared machines are noisy, so the
contestants are interleaved: each round runs one timed repeat of every contestant
for every size (in an order rotated from round to round), and the result is the
median over the rounds. The multiprocessing start method is the platform's default.

Run
---
::

    python benchmarks/bench_async.py              # full run (a few minutes)
    python benchmarks/bench_async.py --quick      # smoke test, a few seconds
    python benchmarks/bench_async.py --markdown   # a table for docs/performance.md
    python benchmarks/bench_async.py --envs heavy --num-envs 2 8 --rounds 7
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

import vecmode
from harness import (
    HEAVY_EPISODE,
    HEAVY_WORK_SECONDS,
    HeavyEnv,
    add_run_arguments,
    calibrate,
    interleaved,
    markdown_table,
    positive_int,
    round_done,
    save_results,
    text_table,
    time_steps,
    versions,
)
from vecmode.layout import default_num_workers

MODE = vecmode.AutoresetMode.NEXT_STEP
CARTPOLE, HEAVY = "CartPole-v1", "heavy"
DEFAULT_NUM_ENVS = {CARTPOLE: (2, 4, 8, 16), HEAVY: (2, 4, 8)}
DEFAULT_STEPS = {CARTPOLE: 1500, HEAVY: 400}
DEFAULT_ROUNDS = 5
QUICK_STEPS = 40
QUICK_ROUNDS = 1
QUICK_NUM_ENVS = (2,)
WARMUP_STEPS = 20

GYM_ASYNC, GYM_SYNC, VM_SYNC = "gym async", "gym sync", "vm sync"
VM_ASYNC, VM_PARENT = "vm async", "vm async+parent"
CONTESTANTS = (GYM_ASYNC, GYM_SYNC, VM_SYNC, VM_ASYNC, VM_PARENT)


# ------------------------------------------------------------- the latency floor
def _echo(conn: Any, work: float) -> None:
    while True:
        message = conn.recv_bytes()
        if not message:
            return
        until = time.perf_counter() + work
        while time.perf_counter() < until:
            pass
        conn.send_bytes(message)


def pipe_round_trip_us(trips: int = 2000, work: float = 0.0) -> float:
    """Median microseconds of a round trip of a tiny message to a worker process
    that works ``work`` seconds before it answers, minus that work.

    What any multi-process vector env pays at least once per call on this machine
    (on virtual machines, waking a processor that went idle is most of it, which is
    why the cost grows when the worker takes a while).
    """
    import multiprocessing

    parent, child = multiprocessing.Pipe()
    process = multiprocessing.Process(target=_echo, args=(child, work), daemon=True)
    process.start()
    child.close()
    times = []
    try:
        for _ in range(trips):
            start = time.perf_counter()
            parent.send_bytes(b"x")
            parent.recv_bytes()
            times.append(time.perf_counter() - start)
    finally:
        parent.send_bytes(b"")
        process.join()
    return (statistics.median(times) - work) * 1e6


# --------------------------------------------------------------------- contestants
def env_fns(kind: str, num_envs: int, work: int) -> list[Callable[[], gym.Env]]:
    if kind == CARTPOLE:
        return [lambda: gym.make(CARTPOLE)] * num_envs
    return [lambda: HeavyEnv(work)] * num_envs


@dataclass
class Contestant:
    name: str
    envs: gym.vector.VectorEnv
    rates: list[float] = field(default_factory=list)

    def run(self, actions: np.ndarray, seed: int) -> float:
        gc.collect()
        return (
            actions.shape[0] * actions.shape[1] / time_steps(self.envs, actions, seed)
        )


def parent_share(num_envs: int) -> int:
    """The opt-in layout's share of sub-envs stepped in the parent."""
    return max(1, num_envs // default_num_workers(10**6)) if num_envs > 1 else 0


def build(
    kind: str, num_envs: int, work: int, num_workers: int | None
) -> list[Contestant]:
    fns = env_fns(kind, num_envs, work)
    made = {
        GYM_ASYNC: lambda: gym.vector.AsyncVectorEnv(fns, autoreset_mode=MODE),
        GYM_SYNC: lambda: gym.vector.SyncVectorEnv(fns, autoreset_mode=MODE),
        VM_SYNC: lambda: vecmode.with_autoreset(vecmode.SyncVectorEnv(fns), MODE),
        VM_ASYNC: lambda: vecmode.with_autoreset(
            vecmode.AsyncVectorEnv(fns, num_workers=num_workers), MODE
        ),
        VM_PARENT: lambda: vecmode.with_autoreset(
            vecmode.AsyncVectorEnv(fns, in_parent=parent_share(num_envs)), MODE
        ),
    }
    out = []
    for name in CONTESTANTS:
        envs = made[name]()
        if envs.metadata.get("autoreset_mode") is not MODE:
            raise RuntimeError(f"{name} does not run {MODE.value}")
        out.append(Contestant(name, envs))
    return out


# ------------------------------------------------------------------------- running
@dataclass
class Row:
    kind: str
    num_envs: int
    num_workers: int
    in_parent: int
    rates: dict[str, float]
    vs_gym_async: float
    vs_vm_sync: float
    vs_gym_async_range: tuple[float, float]
    vs_vm_sync_range: tuple[float, float]
    parent_vs_gym_async: float
    parent_vs_vm_sync: float
    parent_layout: str


def ratios(a: list[float], b: list[float]) -> list[float]:
    return [x / y for x, y in zip(a, b, strict=True)]


def benchmark(
    sizes: dict[str, Sequence[int]],
    steps: dict[str, int],
    rounds: int,
    seed: int,
    num_workers: int | None,
    progress: bool,
) -> tuple[list[Row], int, tuple[float, ...]]:
    work = calibrate(HEAVY_WORK_SECONDS)
    trips = 200 if rounds == 1 else 1000
    floor = [(pipe_round_trip_us(trips), pipe_round_trip_us(trips, 100e-6))]
    groups: dict[tuple[str, int], list[Contestant]] = {}
    actions: dict[tuple[str, int], np.ndarray] = {}
    try:
        for kind, ns in sizes.items():
            for n in ns:
                key = (kind, n)
                rng = np.random.default_rng(seed)
                high = 2 if kind == CARTPOLE else 4
                actions[key] = rng.integers(0, high, size=(steps[kind], n))
                groups[key] = build(kind, n, work, num_workers)
                for contestant in groups[key]:  # warm-up
                    contestant.run(actions[key][:WARMUP_STEPS], seed)
        for r in range(rounds):
            started = time.perf_counter()
            for key, contestant in interleaved(
                ([(key, c) for c in group] for key, group in groups.items()), r
            ):
                contestant.rates.append(contestant.run(actions[key], seed))
            floor.append((pipe_round_trip_us(trips), pipe_round_trip_us(trips, 100e-6)))
            round_done(r, rounds, started, progress)
    finally:
        for group in groups.values():
            for contestant in group:
                contestant.envs.close()

    rows = []
    for (kind, n), group in groups.items():
        rates = {c.name: c.rates for c in group}
        vs_gym = ratios(rates[VM_ASYNC], rates[GYM_ASYNC])
        vs_sync = ratios(rates[VM_ASYNC], rates[VM_SYNC])
        parent = group[-1].envs.unwrapped
        rows.append(
            Row(
                kind=kind,
                num_envs=n,
                num_workers=group[-2].envs.unwrapped.num_workers,
                in_parent=group[-2].envs.unwrapped.in_parent,
                rates={name: statistics.median(rs) for name, rs in rates.items()},
                vs_gym_async=statistics.median(vs_gym),
                vs_vm_sync=statistics.median(vs_sync),
                vs_gym_async_range=(min(vs_gym), max(vs_gym)),
                vs_vm_sync_range=(min(vs_sync), max(vs_sync)),
                parent_vs_gym_async=statistics.median(
                    ratios(rates[VM_PARENT], rates[GYM_ASYNC])
                ),
                parent_vs_vm_sync=statistics.median(
                    ratios(rates[VM_PARENT], rates[VM_SYNC])
                ),
                parent_layout=f"{parent.num_workers} + {parent.in_parent} in parent",
            )
        )
    return rows, work, tuple(statistics.median(f) for f in zip(*floor, strict=True))


def crossover(rows: Sequence[Row], kind: str) -> str:
    """The smallest num_envs from which vecmode's async env beats its sync env."""
    mine = sorted((r for r in rows if r.kind == kind), key=lambda r: r.num_envs)
    for n, row in enumerate(mine):
        if all(later.vs_vm_sync > 1.0 for later in mine[n:]):
            return (
                f"{kind}: vm async beats vm sync from num_envs = {row.num_envs} "
                f"(of {', '.join(str(r.num_envs) for r in mine)})"
            )
    return f"{kind}: vm async never beats vm sync at the sizes measured"


# ------------------------------------------------------------------------- output
HEADERS = (
    "env",
    "num_envs",
    "workers",
    *(f"{name} steps/s" for name in CONTESTANTS),
    "vm async/gym async",
    "vm async/vm sync",
    "vm async/gym async min-max",
    "vm async/vm sync min-max",
    "+parent layout",
    "+parent/gym async",
    "+parent/vm sync",
)


def cells(row: Row) -> list[str]:
    return [
        row.kind,
        str(row.num_envs),
        f"{row.num_workers} + {row.in_parent} in parent"
        if row.in_parent
        else str(row.num_workers),
        *(f"{row.rates[name]:,.0f}" for name in CONTESTANTS),
        f"{row.vs_gym_async:.2f}",
        f"{row.vs_vm_sync:.2f}",
        f"{row.vs_gym_async_range[0]:.2f}-{row.vs_gym_async_range[1]:.2f}",
        f"{row.vs_vm_sync_range[0]:.2f}-{row.vs_vm_sync_range[1]:.2f}",
        row.parent_layout,
        f"{row.parent_vs_gym_async:.2f}",
        f"{row.parent_vs_vm_sync:.2f}",
    ]


def environment_lines(
    steps: dict[str, int], rounds: int, seed: int, work: int, floor: tuple[float, ...]
) -> list[str]:
    import multiprocessing

    return [
        versions(),
        f"os.cpu_count() = {os.cpu_count()}, usable CPUs = {default_num_workers(10**6)}"
        f", {platform.system()} {platform.machine()}, start method "
        f"{multiprocessing.get_start_method()}",
        "NextStep mode; vector steps per timed repeat: "
        + ", ".join(f"{kind} {n}" for kind, n in steps.items())
        + f"; {rounds} interleaved rounds (median); seed {seed}",
        f"heavy env: {work} busy-loop iterations (~{HEAVY_WORK_SECONDS * 1e6:.0f} us) "
        f"and an 84x84x3 uint8 frame per step, episodes of {HEAVY_EPISODE} steps",
        "steps/s = sub-env steps per second (vector steps x num_envs / s); "
        "ratios = median of per-round ratios",
        f"latency floor: a tiny message to a worker process and back costs "
        f"{floor[0]:.0f} us, or {floor[1]:.0f} us beyond the work when the worker "
        f"works 100 us before answering (medians, measured between rounds)",
    ]


def format_text(rows: Sequence[Row], header: Sequence[str], tail: Sequence[str]) -> str:
    table = text_table(HEADERS, [cells(row) for row in rows])
    return "\n".join([*header, "", *table, "", *tail])


def format_markdown(
    rows: Sequence[Row], header: Sequence[str], tail: Sequence[str]
) -> str:
    lines = [f"- {line}" for line in header]
    lines += ["", *markdown_table(HEADERS, [cells(row) for row in rows])]
    lines += ["", *(f"- {line}" for line in tail)]
    return "\n".join(lines)


# ---------------------------------------------------------------------------- CLI
def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Steps/s of vecmode.AsyncVectorEnv vs gymnasium.vector."
        "AsyncVectorEnv and both sync envs (NextStep), on CartPole-v1 and a heavy env.",
    )
    parser.add_argument(
        "--envs",
        nargs="+",
        choices=(CARTPOLE, HEAVY),
        default=[CARTPOLE, HEAVY],
        help="which sub-envs (default both)",
    )
    parser.add_argument(
        "--num-envs",
        type=positive_int,
        nargs="+",
        default=None,
        help="numbers of sub-envs for every env (default 2 4 8 16 for CartPole, "
        "2 4 8 for heavy; 2 with --quick)",
    )
    parser.add_argument(
        "--num-workers",
        type=positive_int,
        default=None,
        help="vecmode async workers in the default layout (default: vecmode's, one "
        "worker per usable CPU)",
    )
    add_run_arguments(
        parser,
        steps_help=f"vector steps per timed repeat (default {DEFAULT_STEPS[CARTPOLE]} for "
        f"CartPole, {DEFAULT_STEPS[HEAVY]} for heavy; {QUICK_STEPS} with --quick)",
        rounds_help=f"interleaved rounds, median taken (default {DEFAULT_ROUNDS}; "
        f"{QUICK_ROUNDS} with --quick)",
    )
    args = parser.parse_args(argv)
    kinds = list(dict.fromkeys(args.envs))
    if args.num_envs is not None:
        args.sizes = {kind: list(dict.fromkeys(args.num_envs)) for kind in kinds}
    elif args.quick:
        args.sizes = {kind: list(QUICK_NUM_ENVS) for kind in kinds}
    else:
        args.sizes = {kind: list(DEFAULT_NUM_ENVS[kind]) for kind in kinds}
    if args.steps is not None:
        args.step_counts = {kind: args.steps for kind in kinds}
    elif args.quick:
        args.step_counts = {kind: QUICK_STEPS for kind in kinds}
    else:
        args.step_counts = {kind: DEFAULT_STEPS[kind] for kind in kinds}
    if args.rounds is None:
        args.rounds = QUICK_ROUNDS if args.quick else DEFAULT_ROUNDS
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    print(
        f"benchmarking {', '.join(args.sizes)}: {args.rounds} rounds ...",
        file=sys.stderr,
        flush=True,
    )
    rows, work, floor = benchmark(
        args.sizes,
        args.step_counts,
        rounds=args.rounds,
        seed=args.seed,
        num_workers=args.num_workers,
        progress=True,
    )
    header = environment_lines(args.step_counts, args.rounds, args.seed, work, floor)
    tail = [crossover(rows, kind) for kind in args.sizes]
    formatter = format_markdown if args.markdown else format_text
    print(formatter(rows, header, tail))
    save_results(
        args.results,
        __file__,
        [*header, *tail],
        {"main": (HEADERS, [cells(row) for row in rows])},
        rounds=args.rounds,
        steps=args.step_counts,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
