"""The ``vecmode`` command line (also ``python -m vecmode``): the table of commands,
the parser built from it, and :func:`main`. Each command runs in a module of its
own; docs/cli.md documents the commands, exit codes and JSON documents."""

from __future__ import annotations

import argparse
import contextlib
import difflib
import functools
import os
import re
import sys
import traceback
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from vecmode import __version__, testing
from vecmode.cli import check, conform, probe, table, timeline
from vecmode.cli.common import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_PIPE,
    EXIT_USAGE,
    JSON_SCHEMA_VERSION,
    RERUN,
    CommandError,
    print_json,
)
from vecmode.cli.spec import literal
from vecmode.cli.timeline import svg_path
from vecmode.modes import AutoresetMode, as_mode
from vecmode.testing.envs import ACTION_TYPES, INFO_TYPES, OBS_TYPES

__all__ = [
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_PIPE",
    "EXIT_USAGE",
    "JSON_SCHEMA_VERSION",
    "main",
]


def arg(*flags: str, **options: Any) -> tuple[tuple[str, ...], dict[str, Any]]:
    """An argument of a command: ``add_argument``'s flags and options."""
    return flags, options


@dataclass(frozen=True)
class Command:
    """A row of the command table; ``run`` says whether the answer is yes (exit 0)."""

    name: str
    summary: str
    example: str
    arguments: tuple[tuple[tuple[str, ...], dict[str, Any]], ...]
    run: Callable[[argparse.Namespace], bool]
    json: bool = True


def _at_least(low: int, text: str) -> int:
    with contextlib.suppress(ValueError):
        if int(text) >= low:
            return int(text)
    raise argparse.ArgumentTypeError(f"expected an int >= {low}, got {text!r}")


positive = functools.partial(_at_least, 1)
non_negative = functools.partial(_at_least, 0)


def mode_option(text: str) -> AutoresetMode:
    """The option type of a mode, in any spelling :func:`vecmode.as_mode` takes."""
    with contextlib.suppress(ValueError):
        return as_mode(text)
    modes = ", ".join(repr(mode.value) for mode in AutoresetMode)  # for "did you mean"
    raise argparse.ArgumentTypeError(f"invalid choice: {text!r} (choose from {modes})")


WRAP = (
    "a wrapper: NAME, gymnasium:NAME, or module:attr (a class, or a function env "
    "-> wrapped env), then :key=value,..."
)

IMPORT = arg(
    "--import",
    dest="imports",
    metavar="MODULE",
    action="append",
    default=[],
    help="import MODULE first: the wrappers it declares or registers (repeatable)",
)

TIMELINE = Command(
    "timeline",
    "show what each autoreset mode returns around an episode's end",
    "FrozenLake-v1 --steps 8 --svg modes.svg",
    (
        arg("env_id", nargs="?", default="CartPole-v1", metavar="ENV_ID"),
        arg("--steps", type=positive, default=7, help="steps to take (7)"),
        arg("--seed", type=int, default=0, help="reset seed (0)"),
        arg(
            "--max-episode-steps",
            type=non_negative,
            default=3,
            help="truncate episodes after this many steps (3; 0: the env's own)",
        ),
        arg("--action", type=literal, metavar="A", help="the action, a Python literal"),
        arg("--svg", type=svg_path, metavar="FILE", help="also as SVG ('-': SVG only)"),
    ),
    timeline.run,
    json=False,
)

TABLE = Command(
    "table",
    "print the registry: which autoreset modes each wrapper supports",
    "--import my_package.wrappers",
    (
        IMPORT,
        arg("--markdown", action="store_true", help="print a Markdown table"),
        arg("--why", action="store_true", help="add the reason for every mode not ok"),
        arg(
            "--simulators",
            action="store_true",
            help="list the batched simulators instead: what each does at an "
            "episode's end, and the modes vecmode gives exactly",
        ),
    ),
    table.run,
)

CHECK = Command(
    "check",
    "build a wrapper stack on an env and check it against its autoreset mode",
    "CartPole-v1 --mode SameStep --wrap gymnasium:NormalizeReward:gamma=0.9",
    (
        arg("env_id", metavar="ENV_ID", help="a registered id, or module:Name-v0"),
        arg(
            "--mode",
            type=mode_option,
            help="the mode: NextStep, SameStep, Disabled (default: NextStep; the "
            "env's own with vector_entry_point)",
        ),
        arg("--wrap", action="append", default=[], metavar="W", help=WRAP),
        arg("--num-envs", type=positive, default=2, help="number of sub-envs (2)"),
        arg(
            "--vectorization",
            choices=["sync", "async", "vector_entry_point"],
            help="vecmode's sync or async core, or the env's own (default: sync; "
            "the env's own for an id that has only that)",
        ),
        arg("--strict", action="store_true", help="fail on undeclared layers"),
        IMPORT,
    ),
    check.run,
)

CONFORM = Command(
    "conform",
    "prove a wrapper (check_wrapper) or a vector env (check_vector_env) right in "
    "the modes it declares",
    "my_package.wrappers:MyWrapper:size=3",
    (
        arg(
            "factory",
            metavar="FACTORY",
            help=f"{WRAP}; or a vector env: a class, or a function its key=values "
            "leave no argument",
        ),
        IMPORT,
        arg(
            "--modes", type=mode_option, nargs="+", help="a wrapper: the modes to prove"
        ),
        arg(
            "--obs-type",
            choices=OBS_TYPES,
            help="a wrapper: the test envs' observations",
        ),
        arg(
            "--action-type",
            choices=ACTION_TYPES,
            help="a wrapper: the test envs' actions",
        ),
        arg("--info-type", choices=INFO_TYPES, help="a wrapper: the test envs' infos"),
        arg(
            "--compare-info",
            metavar="KEY",
            help="a wrapper: the infos compared: 'episode' (its statistics, the "
            "default), 'none', or an info key the wrapper adds",
        ),
        arg(
            "--bases",
            nargs="+",
            choices=list(testing.BASES),
            metavar="BASE",
            help="a wrapper: the base vector envs, of %(choices)s (default: the "
            "first two)",
        ),
        arg(
            "--no-env-infos",
            action="store_true",
            help="a wrapper: skip the sub-envs' own infos",
        ),
        arg(
            "--array-library",
            choices=["torch", "jax"],
            help="an array-native wrapper: prove it over that library's batches",
        ),
        arg(
            "--episodic",
            action="store_true",
            help="a wrapper whose outputs depend on the current episode alone: "
            "check each episode's as a fresh wrapper's",
        ),
        arg(
            "--steps",
            type=positive,
            help="a vector env: the run's steps (300; NextStep's runs on to an "
            "episode end)",
        ),
    ),
    conform.run,
)

PROBE = Command(
    "probe",
    "find out which autoreset mode a vector env really runs in",
    probe.EXAMPLE,
    (
        arg("factory", metavar="FACTORY", help="module:function[:key=value,...]"),
        arg("--max-steps", type=positive, default=1000, help="steps at most (1000)"),
        arg("--seed", type=int, default=0, help="reset seed (0)"),
    ),
    probe.run,
)

#: The table of commands, in the order of ``vecmode --help``.
COMMANDS = {row.name: row for row in (TIMELINE, TABLE, CHECK, CONFORM, PROBE)}
JSON = arg("--json", action="store_true", help="print one JSON document (docs/cli.md)")
TRACEBACK = arg(
    "--traceback",
    action="store_true",
    default=argparse.SUPPRESS,  # also taken before the command
    help="show the traceback of an error the env's or wrapper's code raised",
)


class Parser(argparse.ArgumentParser):
    """argparse, with its errors as one ``vecmode:`` line (exit code 2)."""

    def error(self, message: str) -> NoReturn:
        """Exit 2 with ``message``; for a misspelled choice, the closest one."""
        wrong = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)$", message)
        if wrong is not None and "meant" not in message:  # (3.14 suggests itself)
            choices = [choice.strip("' ") for choice in wrong[2].split(",")]
            close = difflib.get_close_matches(wrong[1], choices, n=1)
            message += f"; did you mean {close[0]}?" if close else ""
        self.exit(EXIT_USAGE, f"vecmode: {message} (see: {self.prog} --help)\n")


def _parse(argv: list[str]) -> argparse.Namespace:
    """``argv`` parsed by the table's parser (``vecmode`` alone: ``timeline``)."""
    parser = Parser(
        prog="vecmode",
        description="Gymnasium's vector autoreset modes, made safe. With no "
        "command: the timeline of CartPole-v1 (vecmode timeline).",
        epilog="exit codes: 0 yes, 1 no (or the env's or wrapper's own code raised), "
        "2 usage error, 130 interrupted, 141 stdout closed early; docs/cli.md says more.",
    )
    parser.add_argument("--version", action="version", version=f"vecmode {__version__}")
    parser.add_argument("--traceback", action="store_true", help=argparse.SUPPRESS)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, command in COMMANDS.items():
        example = f"example: vecmode {name} {command.example}"
        subparser = subparsers.add_parser(
            name,
            help=command.summary,
            description=f"{command.summary}.\n\n{example}",
            epilog="exit codes: see vecmode --help.",
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        json = [JSON] if command.json else []
        for flags, options in [TRACEBACK, *command.arguments, *json]:
            subparser.add_argument(*flags, **options)
    args, extra = parser.parse_known_args(argv)
    if args.command is None and not extra:
        args, extra = parser.parse_known_args([*argv, "timeline"])
    if extra:  # the command's parser says so, pointing at its own --help
        where = subparsers.choices.get(args.command, parser)
        where.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def _show_warning(message: Any, category: type[Warning], *_: Any, **__: Any) -> None:
    text = re.sub(r"\x1b\[[0-9;]*m", "", " ".join(str(message).split()))
    text = text.removeprefix("WARN: ")  # (Gymnasium's logger.warn, in colour)
    print(f"vecmode: warning: {text} ({category.__name__})", file=sys.stderr)


def _run(argv: list[str]) -> int:
    try:
        args = _parse(argv)
    except SystemExit as exit_:  # --help, --version, usage errors
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    # module:... names a module in the current directory (a script's path does not)
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            return EXIT_OK if COMMANDS[args.command].run(args) else EXIT_FAILED
    except CommandError as failure:
        text = str(failure)
        if args.traceback and failure.__cause__ is not None:
            traceback.print_exception(failure.__cause__)
            text = text.replace(RERUN, "")  # shown above
        print(f"vecmode: {text}", file=sys.stderr)
        if getattr(args, "json", False) and failure.code == EXIT_FAILED:
            # the user's code raised: still one document on stdout
            print_json(args.command, {"ok": False, "error": str(failure)})
        return failure.code


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line on ``argv`` (``sys.argv[1:]``); return its exit code."""
    try:
        code = _run(list(sys.argv[1:] if argv is None else argv))
        sys.stdout.flush()
    except BrokenPipeError:  # stdout to devnull: the interpreter's last flush is quiet
        with contextlib.suppress(AttributeError, OSError, ValueError):  # not a file
            fileno = sys.stdout.fileno()
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, fileno)
            os.close(devnull)
        return EXIT_PIPE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    return code
