"""``vecmode timeline``: what each autoreset mode returns, call by call."""

from __future__ import annotations

import argparse
import os
import sys

from vecmode import timeline
from vecmode.cli.common import CommandError, env_errors

LEGEND = """\
NextStep: the episode's end returns its final obs; the next step resets (reward 0).
SameStep: the reset happens in the same step; the final obs is in info["final_obs"].
Disabled: nothing resets by itself; the caller resets with reset_mask."""


def svg_path(path: str) -> str:
    """The type of ``--svg``: ``-``, or a file in a directory that exists."""
    folder = os.path.dirname(path)
    if path != "-" and not os.path.isdir(folder or "."):
        raise argparse.ArgumentTypeError(
            f"cannot write {path!r}: the directory {folder!r} does not exist; create "
            f"it first, or give another path"
        )
    return path


def run(args: argparse.Namespace) -> bool:
    """Print (or draw) the timeline of ``args.env_id``."""
    limit = args.max_episode_steps
    with env_errors(args.env_id, "running"):
        try:
            rows = timeline.timeline(
                args.env_id,
                steps=args.steps,
                seed=args.seed,
                max_episode_steps=limit or None,
                action=args.action,
            )
        except timeline.TimelineActionError as error:  # --action does not fit the env
            raise CommandError(str(error)) from error
    ends = f"truncated after {limit} steps" if limit else "as the env ends them"
    title = f"{args.env_id}, one sub-env, episodes {ends}, seed {args.seed}"
    taken = next((row.action for row in next(iter(rows.values())) if row.action), "")
    title += f", action {taken} at every step" if taken else ""
    if args.svg == "-":
        sys.stdout.write(timeline.timeline_svg(rows, title))
        return True
    if args.svg:  # before printing anything: a path that fails is a usage error
        try:
            with open(args.svg, "w", encoding="utf-8", newline="\n") as file:
                file.write(timeline.timeline_svg(rows, title))
        except OSError as error:
            raise CommandError(
                f"cannot write {args.svg!r}: {error.strerror or error}; give another "
                f"--svg path."
            ) from error
    legend = timeline.episode_legend(rows)
    if "no episode ended" in legend:
        legend += "\nTake more --steps, or end episodes sooner (--max-episode-steps)."
    print(
        timeline.format_timeline(rows, f"{title}\n"), f"{legend}\n{LEGEND}", sep="\n\n"
    )
    if args.svg:
        print(f"\nwrote the timeline as SVG to {args.svg}")
    return True
