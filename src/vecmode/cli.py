"""The ``vecmode`` command line (also ``python -m vecmode``).

``vecmode`` alone shows what each autoreset mode returns around an episode's end
for CartPole-v1 (``vecmode timeline CartPole-v1``); ``vecmode table`` prints which
modes each wrapper supports.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import gymnasium as gym

from vecmode import __version__
from vecmode.registry import format_table
from vecmode.timeline import format_timeline, timeline

__all__ = ["main"]

_LEGEND = """\
s3 = step 3 of the first episode, s0' = first observation of the second episode.
NextStep: the episode's end returns its final obs; the NEXT step resets (reward 0).
SameStep: the reset happens in the same step; the final obs is in info["final_obs"].
Disabled: nothing resets by itself; the caller resets with reset_mask."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vecmode",
        description="Gymnasium's vector autoreset modes, made safe.",
    )
    parser.add_argument("--version", action="version", version=f"vecmode {__version__}")
    commands = parser.add_subparsers(dest="command")
    show = commands.add_parser(
        "timeline",
        help="show what each autoreset mode returns around an episode's end",
        description="For one sub-env, the observation, reward and flags returned "
        "by each call in each autoreset mode, side by side.",
    )
    show.add_argument("env_id", nargs="?", default="CartPole-v1")
    show.add_argument("--steps", type=int, default=7, help="steps to take (7)")
    show.add_argument("--seed", type=int, default=0, help="reset seed (0)")
    show.add_argument(
        "--max-episode-steps",
        type=int,
        default=3,
        help="truncate episodes after this many steps (3); 0 keeps the env's own",
    )
    show.add_argument("--action", type=int, default=1, help="the action taken (1)")
    table = commands.add_parser(
        "table",
        help="print the registry: which autoreset modes each wrapper supports",
        description="Every wrapper vecmode knows (its own, Gymnasium's, and any "
        "registered), and what it does in each autoreset mode.",
    )
    table.add_argument("--markdown", action="store_true", help="print a Markdown table")
    table.add_argument(
        "--why", action="store_true", help="add the reason for every mode not ok"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    args = _parser().parse_args(argv)
    if args.command == "table":
        print(format_table(markdown=args.markdown, why=args.why))
        return 0
    if args.command in (None, "timeline"):
        env_id = getattr(args, "env_id", "CartPole-v1")
        max_steps = getattr(args, "max_episode_steps", 3)
        try:
            table = timeline(
                env_id,
                steps=getattr(args, "steps", 7),
                seed=getattr(args, "seed", 0),
                max_episode_steps=max_steps or None,
                action=getattr(args, "action", 1),
            )
        except gym.error.Error as error:
            print(f"vecmode: cannot make {env_id!r}: {error}", file=sys.stderr)
            return 2
        ends = (
            f"truncated after {max_steps} steps"
            if max_steps
            else "as the env ends them"
        )
        header = (
            f"{env_id}, one sub-env, episodes {ends}, seed {getattr(args, 'seed', 0)}\n"
        )
        print(format_timeline(table, header))
        print()
        print(_LEGEND)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
