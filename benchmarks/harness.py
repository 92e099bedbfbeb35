"""What the benchmark scripts share: arguments, interleaved rounds, tables.

The scripts run as ``python benchmarks/bench_*.py``, so this folder is on
``sys.path`` and they ``import harness``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import gymnasium as gym
import numpy as np

T = TypeVar("T")

#: The load average (1 minute) when the script started, for the results file.
LOAD_AT_START = os.getloadavg()[0] if hasattr(os, "getloadavg") else None


def positive_int(text: str) -> int:
    """An ``argparse`` type: an int >= 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def text_table(headers: Sequence[str], lines: Sequence[Sequence[str]]) -> list[str]:
    """Aligned columns (the first left-aligned, the others right), a rule under
    the headers."""
    table = [list(headers), *lines]
    widths = [max(len(line[i]) for line in table) for i in range(len(headers))]

    def fmt(line: Sequence[str]) -> str:
        first = line[0].ljust(widths[0])
        rest = (t.rjust(w) for t, w in zip(line[1:], widths[1:], strict=True))
        return "  ".join((first, *rest))

    return [fmt(table[0]), "-" * len(fmt(table[0])), *map(fmt, table[1:])]


def markdown_table(headers: Sequence[str], lines: Sequence[Sequence[str]]) -> list[str]:
    """A Markdown table, numbers (every column but the first) right-aligned."""
    align = ["---", *["---:"] * (len(headers) - 1)]
    return [
        "| " + " | ".join(headers) + " |",
        "| " + " | ".join(align) + " |",
        *("| " + " | ".join(line) + " |" for line in lines),
    ]


def format_report(
    headers: Sequence[str],
    lines: Sequence[Sequence[str]],
    header: Sequence[str],
    markdown: bool,
) -> str:
    """The header lines, then the table: aligned text, or Markdown (the header as
    a list) for docs/performance.md."""
    if markdown:
        return "\n".join(
            [*(f"- {line}" for line in header), "", *markdown_table(headers, lines)]
        )
    return "\n".join([*header, "", *text_table(headers, lines)])


def add_num_envs_argument(
    parser: argparse.ArgumentParser, default: Sequence[int], quick: Sequence[int]
) -> None:
    """``--num-envs N [N ...]``; :func:`fill_num_envs` fills in the default."""
    parser.add_argument(
        "--num-envs",
        type=positive_int,
        nargs="+",
        default=None,
        help=f"numbers of sub-envs (default {' '.join(map(str, default))}; "
        f"{' '.join(map(str, quick))} with --quick)",
    )


def fill_num_envs(
    args: argparse.Namespace, default: Sequence[int], quick: Sequence[int]
) -> None:
    """``--num-envs`` left out: the script's default (which depends on
    ``--quick``); repeated sizes once."""
    if args.num_envs is None:
        args.num_envs = list(quick if args.quick else default)
    args.num_envs = list(dict.fromkeys(args.num_envs))


def versions() -> str:
    """The versions every report starts with."""
    import vecmode

    return (
        f"Python {platform.python_version()} ({platform.python_implementation()}), "
        f"numpy {np.__version__}, gymnasium {gym.__version__}, "
        f"vecmode {vecmode.__version__}"
    )


def add_run_arguments(
    parser: argparse.ArgumentParser, steps_help: str, rounds_help: str
) -> None:
    """``--steps``, ``--rounds``, ``--seed``, ``--quick`` and ``--markdown``.

    ``--steps`` and ``--rounds`` default to None: the script fills in its defaults
    (which depend on ``--quick``).
    """
    parser.add_argument("--steps", type=positive_int, default=None, help=steps_help)
    parser.add_argument("--rounds", type=positive_int, default=None, help=rounds_help)
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of actions and resets (default 0)"
    )
    parser.add_argument(
        "--quick", action="store_true", help="a tiny run, for smoke tests"
    )
    parser.add_argument(
        "--markdown", action="store_true", help="print Markdown tables instead"
    )
    add_results_argument(parser)


def add_results_argument(parser: argparse.ArgumentParser) -> None:
    """``--results PATH``: also write the results as JSON (see :func:`save_results`)."""
    parser.add_argument(
        "--results",
        type=Path,
        default=None,
        metavar="PATH",
        help="also write the results as JSON to PATH; the docs render "
        "benchmarks/results/<script>.json",
    )


def save_results(
    path: Path | None,
    script: str,
    notes: Sequence[str],
    tables: Mapping[str, tuple[Sequence[str], Sequence[Sequence[str]]]],
    **run: Any,
) -> None:
    """Write a run's results to ``path`` as JSON (nothing when ``path`` is None).

    The file holds the environment (date, versions, CPUs, load average at the start
    and the end), the run's settings (``run``: rounds, steps...), the script's
    ``notes`` (what it prints above its tables) and its ``tables``: name ->
    (headers, rows of cells as printed).
    """
    if path is None:
        return
    import vecmode

    load_end = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    name = Path(script).name
    data = {
        "script": f"benchmarks/{name}",
        "command": shlex.join(["python", f"benchmarks/{name}", *sys.argv[1:]]),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime(
            "%Y-%m-%d %H:%M UTC"
        ),
        "versions": {
            "Python": platform.python_version(),
            "numpy": np.__version__,
            "gymnasium": gym.__version__,
            "vecmode": vecmode.__version__,
        },
        "cpus": os.cpu_count(),
        "load_average": [LOAD_AT_START, load_end],
        "run": run,
        "notes": list(notes),
        "tables": {
            key: {"headers": list(headers), "rows": [list(row) for row in rows]}
            for key, (headers, rows) in tables.items()
        },
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def run_defaults_help(
    steps: int, quick_steps: int, rounds: int, quick_rounds: int
) -> dict[str, str]:
    """``steps_help`` / ``rounds_help`` for :func:`add_run_arguments`."""
    return {
        "steps_help": f"vector steps per timed repeat (default {steps}; "
        f"{quick_steps} with --quick)",
        "rounds_help": f"interleaved rounds, median taken (default {rounds}; "
        f"{quick_rounds} with --quick)",
    }


def fill_run_defaults(
    args: argparse.Namespace,
    steps: int,
    quick_steps: int,
    rounds: int,
    quick_rounds: int,
) -> None:
    """Set ``--steps`` / ``--rounds`` left out to the script's defaults."""
    if args.steps is None:
        args.steps = quick_steps if args.quick else steps
    if args.rounds is None:
        args.rounds = quick_rounds if args.quick else rounds


def interleaved(groups: Iterable[Sequence[T]], round_index: int) -> Iterator[T]:
    """Every group's contestants in this round's order.

    Contestants compared with each other run back to back, and each goes first in
    turn (rotated by the round), so slow drifts of a shared machine hit all alike.
    """
    for group in groups:
        shift = round_index % len(group)
        yield from group[shift:]
        yield from group[:shift]


def round_done(round_index: int, rounds: int, started: float, progress: bool) -> None:
    """Print a round's time to stderr when ``progress`` is on."""
    if progress:
        print(
            f"  round {round_index + 1}/{rounds} done in "
            f"{time.perf_counter() - started:.1f} s",
            file=sys.stderr,
            flush=True,
        )


def time_steps(
    target: Any,
    actions: Sequence[Any],
    seed: int,
    clock: Callable[[], float] = time.perf_counter,
) -> float:
    """Seconds to ``step`` ``target`` through ``actions`` after an untimed
    ``reset(seed=seed)``: a vector env in NEXT_STEP or SAME_STEP (it resets ended
    sub-envs itself), or anything with the same ``reset`` / ``step``. ``clock``:
    wall time by default; ``time.process_time`` leaves out the time other
    programs take on a busy machine."""
    target.reset(seed=seed)
    step = target.step
    start = clock()
    for row in actions:
        step(row)
    return clock() - start


def mode_arg(text: str) -> Any:
    """An argparse type: an autoreset mode, as ``vecmode.as_mode`` reads it."""
    import vecmode

    try:
        return vecmode.as_mode(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


# --------------------------------------------------------------- the heavy env
#: Seconds of CPU work per step of :class:`HeavyEnv`, and its episode length.
HEAVY_WORK_SECONDS = 50e-6
HEAVY_EPISODE = 200


def calibrate(seconds: float) -> int:
    """Iterations of :func:`busy` that take about ``seconds`` on this machine."""
    n = 1000
    while True:
        times = []
        for _ in range(7):
            start = time.perf_counter()
            busy(n)
            times.append(time.perf_counter() - start)
        took = statistics.median(times)
        if took > 2e-4 or n > 10**7:
            return max(1, round(n * seconds / took))
        n *= 4


def busy(n: int) -> int:
    """Plain CPU work: no allocation, no system call."""
    x = 0
    for i in range(n):
        x += i & 7
    return x


class HeavyEnv(gym.Env):
    """About 50 us of CPU work per step and an 84x84x3 uint8 frame per observation.

    Episodes are truncated after 200 steps. ``work`` is the number of iterations of
    :func:`busy` per step, calibrated once in the parent process.
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, work: int) -> None:
        self.work = work
        self.observation_space = gym.spaces.Box(0, 255, (84, 84, 3), np.uint8)
        self.action_space = gym.spaces.Discrete(4)
        self.t = 0

    def _frame(self) -> np.ndarray:
        return np.full((84, 84, 3), self.t % 256, dtype=np.uint8)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self.t = int(self.np_random.integers(0, 50))
        return self._frame(), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        busy(self.work)
        self.t += 1
        return self._frame(), float(action), False, self.t >= HEAVY_EPISODE, {}
