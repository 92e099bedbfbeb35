"""The ``vecmode`` command line (also ``python -m vecmode``): the parser, built from
the table of commands (one module per command, each with its ``COMMAND`` row), and
:func:`main`. docs/cli.md documents the commands, exit codes and JSON documents."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import traceback
import warnings
from collections.abc import Sequence
from typing import Any, NoReturn

from vecmode import __version__
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
    arg,
    print_json,
)

__all__ = [
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_PIPE",
    "EXIT_USAGE",
    "JSON_SCHEMA_VERSION",
    "main",
]

#: The table of commands, in the order of ``vecmode --help``.
COMMANDS = {
    module.COMMAND.name: module.COMMAND
    for module in (timeline, table, check, conform, probe)
}
EPILOG = (
    "exit codes: 0 yes, 1 no (or the env's or wrapper's own code raised), 2 usage "
    "error, 130 interrupted, 141 stdout closed early; docs/cli.md says more."
)
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
        self.exit(EXIT_USAGE, f"vecmode: {message} (see: {self.prog} --help)\n")


def build_parser() -> tuple[Parser, dict[str, Parser]]:
    """The ``vecmode`` parser, and the parser of each command by name."""
    parser = Parser(
        prog="vecmode",
        description="Gymnasium's vector autoreset modes, made safe. With no "
        "command: the timeline of CartPole-v1 (vecmode timeline).",
        epilog=EPILOG,
    )
    parser.add_argument("--version", action="version", version=f"vecmode {__version__}")
    parser.add_argument("--traceback", action="store_true", help=argparse.SUPPRESS)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    parsers = {}
    for name, command in COMMANDS.items():
        example = f"example: vecmode {name} {command.example}"
        parsers[name] = subparsers.add_parser(
            name,
            help=command.summary,
            description=f"{command.summary}.\n\n{example}",
            epilog="exit codes: see vecmode --help.",
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        json = [JSON] if command.json else []
        for flags, options in [TRACEBACK, *command.arguments, *json]:
            parsers[name].add_argument(*flags, **options)
    return parser, parsers


def _parse(argv: list[str]) -> argparse.Namespace:
    """``argv`` parsed; ``vecmode`` alone is ``vecmode timeline``."""
    parser, parsers = build_parser()
    args, extra = parser.parse_known_args(argv)
    if args.command is None and not extra:
        args, extra = parser.parse_known_args([*argv, "timeline"])
    if extra:  # the command's parser says so, pointing at its own --help
        where = parsers.get(args.command, parser)
        where.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def _show_warning(
    message: Warning | str, category: type[Warning], *_: Any, **__: Any
) -> None:
    text = " ".join(str(message).split())
    print(f"vecmode: warning: {text} ({category.__name__})", file=sys.stderr)


def _run(argv: list[str]) -> int:
    try:
        args = _parse(argv)
    except SystemExit as exit_:  # --help, --version, usage errors
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    # module:... names a module in the current directory (a console script's
    # sys.path starts at its own directory)
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
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``) and return
    the exit code (docs/cli.md)."""
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
