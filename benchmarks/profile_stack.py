"""Where a step of the PPO stack goes: a cProfile of the stack over vecmode's env.

The five-wrapper training stack of ``bench_wrappers.py`` (CleanRL's PPO recipe),
built from vecmode's wrappers (``vecmode``), as ``vecmode.wrappers.ppo_stack``'s
fused layer (``ppo_stack``), from Gymnasium's wrappers (``gymnasium``), or no
stack at all (``bare``), over ``vecmode.make_vec("CartPole-v1", 16,
vectorization_mode="sync", autoreset_mode=MODE)``, stepped with the benchmark's
actions under :mod:`cProfile`. Reported: each area's share of the profiled time
(the time spent in the area's own Python code, NumPy's ufuncs included, as
cProfile counts it) and the functions that took the most.

cProfile adds a cost to every Python call, so the profiled step is slower than
the real one and Python-heavy code looks heavier than it is: read the shares,
not the microseconds, and time with ``bench_wrappers.py``.

Run::

    python benchmarks/profile_stack.py                      # vecmode's stack, NextStep
    python benchmarks/profile_stack.py --stack gymnasium --top 20
    python benchmarks/profile_stack.py --stack ppo_stack --mode SameStep
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
from collections.abc import Sequence
from typing import Any

from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.wrappers import vector as gv

from bench_wrappers import VECMODE_BASE, make_actions, make_stack, mode_base, run
from harness import markdown_table, mode_arg, positive_int, text_table, versions
from vecmode import wrappers as vw

STACKS = {
    "bare": lambda env: env,
    "vecmode": make_stack(vw),
    "ppo_stack": lambda env: vw.ppo_stack(env, gamma=0.99),
    "gymnasium": make_stack(gv),
}

#: Areas of the code, by the path of the file a function is in (first match).
AREAS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "running statistics (RunningMeanStd, np.mean / np.var)",
        (
            "vecmode/wrappers/running_stats.py",
            "gymnasium/wrappers/utils.py",
            "numpy/_core/_methods.py",
        ),
    ),
    ("boundaries (vecmode.modes)", ("vecmode/modes.py",)),
    (
        "the wrappers' own code",
        ("vecmode/wrappers/", "vecmode/forwarding.py", "gymnasium/wrappers/vector/"),
    ),
    (
        "vector env (vecmode's core and autoreset)",
        ("vecmode/core.py", "vecmode/sync_vector_env.py", "vecmode/autoreset/"),
    ),
    (
        "sub-envs and the rest of Gymnasium",
        ("gymnasium/envs/", "gymnasium/wrappers/", "gymnasium/core.py", "gymnasium/"),
    ),
    ("NumPy's Python-level functions", ("numpy/",)),
    ("the benchmark's loop", ("bench_wrappers.py", "profile_stack.py")),
)
BUILTINS = "C functions called from Python (np.dot, astype, ...)"
OTHER = "other"


def area_of(filename: str) -> str:
    if filename == "~":
        return BUILTINS
    path = filename.replace("\\", "/")
    for area, parts in AREAS:
        if any(part in path for part in parts):
            return area
    return OTHER


def profile(stack: str, mode: AutoresetMode, steps: int, seed: int) -> pstats.Stats:
    envs: VectorEnv = STACKS[stack](mode_base(VECMODE_BASE, mode))
    actions = make_actions("CartPole-v1", steps, seed)
    disabled = mode is AutoresetMode.DISABLED
    try:
        run(envs, actions[:50], seed, disabled)  # warm-up
        profiler = cProfile.Profile()
        profiler.enable()
        run(envs, actions, seed, disabled)
        profiler.disable()
    finally:
        envs.close()
    return pstats.Stats(profiler)


def summarise(
    stats: pstats.Stats, steps: int, top: int
) -> tuple[list[list[str]], list[list[str]]]:
    """(the areas' rows, the top functions' rows)."""
    table: Any = stats.stats  # type: ignore[attr-defined]
    by_area: dict[str, float] = {}
    functions = []
    for (filename, line, name), (_, calls, own, _, _) in table.items():
        area = area_of(filename)
        by_area[area] = by_area.get(area, 0.0) + own
        functions.append((own, calls, filename, line, name, area))
    total = sum(by_area.values())
    areas = [
        [area, f"{100 * own / total:.1f} %", f"{1e6 * own / steps:.1f}"]
        for area, own in sorted(by_area.items(), key=lambda item: -item[1])
    ]
    areas.append(["total", "100.0 %", f"{1e6 * total / steps:.1f}"])
    functions.sort(reverse=True)
    rows = []
    for own, calls, filename, line, name, area in functions[:top]:
        where = name if filename == "~" else f"{short(filename)}:{line}({name})"
        rows.append([where, f"{calls / steps:.2f}", f"{1e6 * own / steps:.2f}", area])
    return areas, rows


def short(filename: str) -> str:
    path = filename.replace("\\", "/")
    for root in ("site-packages/", "src/", "benchmarks/"):
        if root in path:
            return path.split(root, 1)[1]
    return path


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="cProfile of a PPO stack over vecmode's CartPole-v1 env (16 "
        "sub-envs): each area's share of the time, and the top functions."
    )
    parser.add_argument("--stack", choices=sorted(STACKS), default="vecmode")
    parser.add_argument(
        "--mode", type=mode_arg, default=AutoresetMode.NEXT_STEP, metavar="MODE"
    )
    parser.add_argument("--steps", type=positive_int, default=3000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--top", type=positive_int, default=15)
    parser.add_argument("--markdown", action="store_true")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    stats = profile(args.stack, args.mode, args.steps, args.seed)
    areas, functions = summarise(stats, args.steps, args.top)
    table = markdown_table if args.markdown else text_table
    print(versions())
    print(
        f"cProfile of {args.stack!r} over vecmode's CartPole-v1 sync env (16 "
        f"sub-envs, {args.mode.value}), {args.steps} steps; us per vector step "
        f"as profiled (cProfile's own cost included)"
    )
    print()
    print("\n".join(table(("area", "share of own time", "us per step"), areas)))
    print()
    print(
        "\n".join(
            table(("function", "calls per step", "own us per step", "area"), functions)
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
