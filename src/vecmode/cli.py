"""The ``vecmode`` command line (also ``python -m vecmode``).

Commands::

    vecmode                      the timeline of CartPole-v1 (= vecmode timeline)
    vecmode timeline [ENV_ID]    what each autoreset mode returns, call by call,
                                 side by side (--svg FILE draws it)
    vecmode table                which autoreset modes each wrapper supports
    vecmode check ENV_ID --mode M --wrap W [--wrap W2 ...]
                                 build a stack (innermost wrapper first) and check it
    vecmode conform module:Factory
                                 prove a wrapper right in the modes it declares
    vecmode probe module:factory find out which mode a vector env really runs in

A wrapper ``W`` (``--wrap``, ``conform``) is written ``NAME`` (a vecmode wrapper
or autoreset policy: ``NormalizeReward``, ``SameStepAutoreset``),
``gymnasium:NAME`` (one of ``gymnasium.wrappers.vector``) or ``module:Class``
(anything importable), each optionally followed by ``:key=value,...``, its
keyword arguments as Python literals (other text is taken as a string)::

    vecmode check CartPole-v1 --mode SameStep --wrap RecordEpisodeStatistics \\
        --wrap gymnasium:NormalizeReward:gamma=0.9

Exit codes:

* 0: done, and the answer is yes (the stack is compatible, the wrapper conforms,
  the probe found the mode the env declares, or found one for an env that
  declares none);
* 1: the answer is no: the check found a problem or a wrapper refused the mode,
  the wrapper does not conform, the probe cannot tell or finds the env behaving
  unlike the mode it declares; or the env's, wrapper's or factory's own code
  raised while running (``--traceback`` shows where);
* 2: a usage error: a bad option, an unknown env id or wrapper name, a module
  that cannot be imported, a missing attribute, a bad ``key=value`` argument, a
  wrapper that cannot be built with the arguments given or on the env given (its
  constructor's message is shown), a ``timeline --action`` that is not in the
  env's action space, an ``--svg`` path that cannot be written;
* 130: interrupted (Ctrl-C); 141 (128 + SIGPIPE): stdout was closed early (as in
  ``vecmode table | head``), the rest of the output is dropped quietly.

Errors are one line on stderr starting ``vecmode:``; results (reports, tables,
failed checks) go to stdout. ``--json`` (``table``, ``check``, ``conform``,
``probe``) prints one JSON document instead, for CI (the schema is in the docs'
command line page); exit codes are the same, and on exit code 2 nothing is printed
on stdout.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import difflib
import functools
import importlib
import inspect
import json
import os
import sys
import textwrap
import traceback
import types
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, NoReturn

import gymnasium as gym
from gymnasium.vector import VectorEnv, VectorWrapper

from vecmode import __version__
from vecmode.errors import (
    WRAP_FORMS,
    IncompatibleModeError,
    NotAVectorEnvError,
    SharedMemorySpaceError,
    SubEnvError,
    did_you_mean,
)
from vecmode.modes import MODES, AutoresetMode, as_mode, mode_of
from vecmode.registry import declaration, supported_modes

__all__ = [
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_PIPE",
    "EXIT_USAGE",
    "JSON_SCHEMA_VERSION",
    "main",
]

#: Done, and the answer is yes.
EXIT_OK = 0
#: The answer is no (check not ok, refused, not conforming, probe cannot tell or
#: contradicts the declared mode), or the user's code raised.
EXIT_FAILED = 1
#: A usage error (argparse's code): bad option, unknown id / name / module.
EXIT_USAGE = 2
#: Ctrl-C.
EXIT_INTERRUPTED = 130
#: stdout was closed before everything was written (128 + SIGPIPE).
EXIT_PIPE = 141

#: The version of the ``--json`` documents' schema (docs/cli.md); it changes
#: only when a field is removed or changes meaning.
JSON_SCHEMA_VERSION = 1

_LEGEND = """\
s3 = step 3 of the first episode, s0' = first observation of the second episode.
NextStep: the episode's end returns its final obs; the NEXT step resets (reward 0).
SameStep: the reset happens in the same step; the final obs is in info["final_obs"].
Disabled: nothing resets by itself; the caller resets with reset_mask."""

_EPILOG = """\
exit codes: 0 ok; 1 the check or conformance failed, a wrapper refused the mode,
the probe cannot tell or the env behaves unlike its declared mode, or the env's /
wrapper's own code raised while running; 2 usage error (unknown env id, wrapper,
module or attribute, bad key=value argument, a wrapper that cannot be built with
those arguments or on that env, a timeline --action the env cannot take,
unwritable --svg path); 130 interrupted; 141
stdout closed early (e.g. piped into head).
"""

#: Each command's help points to the exit codes instead of repeating them.
_COMMAND_EPILOG = "exit codes: see vecmode --help."

_WRAP_HELP = """\
a wrapper: NAME (vecmode.wrappers or an autoreset policy such as
SameStepAutoreset), gymnasium:NAME (gymnasium.wrappers.vector) or module:Class,
optionally followed by :key=value,... (Python literals; other text is a string)"""


class _Fail(Exception):
    """Ends the command: ``message`` on stderr (if any), exit ``code``."""

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.code = code


class _Formatter(argparse.HelpFormatter):
    """Fills each paragraph of a description / epilog; keeps the examples'
    lines (paragraphs starting with ``example``) as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "\n\n".join(
            paragraph
            if paragraph.startswith("example")
            else textwrap.fill(
                " ".join(paragraph.split()),
                width,
                initial_indent=indent,
                subsequent_indent=indent,
            )
            for paragraph in text.split("\n\n")
        )


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors as one ``vecmode:`` line (exit code 2)."""

    #: The parsers of the commands, by name (the top-level parser's).
    commands: Mapping[str, argparse.ArgumentParser] = MappingProxyType({})

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"vecmode: {message} (see: {self.prog} --help)\n")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an int >= 1, got {text!r}")
    return value


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an int >= 0, got {text!r}")
    return value


def _mode(text: str) -> AutoresetMode:
    try:
        return as_mode(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _parser() -> _Parser:
    formatter = _Formatter
    parser = _Parser(
        prog="vecmode",
        description="Gymnasium's vector autoreset modes, made safe. With no "
        "command: the timeline of CartPole-v1 (vecmode timeline).",
        epilog=_EPILOG,
        formatter_class=formatter,
    )
    parser.add_argument("--version", action="version", version=f"vecmode {__version__}")
    # --traceback is accepted before or after the command
    common = _Parser(add_help=False)
    common.add_argument(
        "--traceback",
        action="store_true",
        default=argparse.SUPPRESS,
        help="on an error raised by the env's or wrapper's own code, show its "
        "traceback",
    )
    parser.add_argument(
        "--traceback", action="store_true", default=False, help=argparse.SUPPRESS
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    def command(name: str, summary: str, description: str) -> argparse.ArgumentParser:
        return commands.add_parser(
            name,
            help=summary,
            description=description,
            epilog=_COMMAND_EPILOG,
            formatter_class=formatter,
            parents=[common],
        )

    def json_option(command: argparse.ArgumentParser) -> None:
        command.add_argument(
            "--json",
            action="store_true",
            help="print one JSON document instead (for CI; schema version "
            f"{JSON_SCHEMA_VERSION}, see the docs' command line page)",
        )

    show = command(
        "timeline",
        "show what each autoreset mode returns around an episode's end",
        "For one sub-env, the observation, reward and flags returned by each "
        "call in each autoreset mode, side by side (s3 = step 3 of the first "
        "episode, s0' = first observation of the second).",
    )
    show.add_argument("env_id", nargs="?", default="CartPole-v1", metavar="ENV_ID")
    show.add_argument("--steps", type=_positive, default=7, help="steps to take (7)")
    show.add_argument("--seed", type=int, default=0, help="reset seed (0)")
    show.add_argument(
        "--max-episode-steps",
        type=_non_negative,
        default=3,
        help="truncate episodes after this many steps (3); 0 keeps the env's own",
    )
    show.add_argument(
        "--action",
        type=_literal,
        default=None,
        metavar="A",
        help="the action taken at every step, a Python literal: a sample of the "
        "action space ('abc' for Text, \"{'k': 1}\" for Dict) or, for a Box, "
        "Discrete, MultiDiscrete or MultiBinary space, a number filling every "
        "entry; default: 1 where the action space holds it, else a sample of the "
        "action space seeded with --seed",
    )
    show.add_argument(
        "--svg",
        metavar="FILE",
        help="also draw the timeline as an SVG picture in FILE ('-': print only "
        "the SVG)",
    )

    table = command(
        "table",
        "print the registry: which autoreset modes each wrapper supports",
        "Every wrapper vecmode knows (its own, Gymnasium's, and those the modules "
        "given with --import declare), and what it does in each autoreset mode.\n\n"
        "example: vecmode table --import my_package.wrappers",
    )
    table.add_argument(
        "--import",
        dest="imports",
        metavar="MODULE",
        action="append",
        default=[],
        help="import MODULE first, so that the wrappers it declares are listed "
        "(repeatable; from the current folder too)",
    )
    table.add_argument("--markdown", action="store_true", help="print a Markdown table")
    table.add_argument(
        "--why", action="store_true", help="add the reason for every mode not ok"
    )
    json_option(table)

    check = command(
        "check",
        "build a wrapper stack on an env and check it against its autoreset mode",
        "Make ENV_ID with vecmode.make_vec in --mode, apply the --wrap wrappers "
        "(innermost first) and print vecmode.check_stack's report, one row per layer. "
        "A wrapper that refuses the mode when built is reported with the stack "
        "built before it.\n\n"
        "example: vecmode check CartPole-v1 --mode SameStep "
        "--wrap gymnasium:NormalizeReward:gamma=0.9",
    )
    check.add_argument(
        "env_id", metavar="ENV_ID", help="a registered id, or module:Name-v0"
    )
    check.add_argument(
        "--mode",
        type=_mode,
        help="the autoreset mode (NextStep, SameStep, Disabled; also next_step, "
        "SAME_STEP...); default: make_vec's (NextStep, or the env's own for "
        "vector_entry_point)",
    )
    check.add_argument(
        "--wrap",
        action="append",
        default=[],
        metavar="W",
        help=_WRAP_HELP + "; repeat for more, innermost first",
    )
    check.add_argument(
        "--num-envs", type=_positive, default=2, help="number of sub-envs (2)"
    )
    check.add_argument(
        "--vectorization",
        choices=["sync", "async", "vector_entry_point"],
        default="sync",
        help="vecmode's sync or async core, or the env's own vector "
        "implementation (sync)",
    )
    check.add_argument(
        "--strict",
        action="store_true",
        help="count layers that declare no mode as failures",
    )
    json_option(check)

    conform = command(
        "conform",
        "prove a wrapper right in the modes it declares (check_wrapper)",
        "Run vecmode.testing.check_wrapper on a wrapper: mode equivalence over "
        "deterministic test envs in every mode it declares, and refusal of the "
        "others.\n\n"
        "examples: vecmode conform NormalizeReward:gamma=0.9\n"
        "          vecmode conform my_package.wrappers:MyWrapper",
    )
    conform.add_argument(
        "factory",
        metavar="FACTORY",
        help=_WRAP_HELP + "; or module:function, a callable env -> wrapped env",
    )
    conform.add_argument(
        "--modes",
        type=_mode,
        nargs="+",
        metavar="MODE",
        help="the modes to prove (default: the modes the wrapper declares)",
    )
    conform.add_argument(
        "--obs-type",
        help="the test envs' observations: box (default), dict, tuple, discrete, image",
    )
    conform.add_argument(
        "--action-type", help="the test envs' actions: discrete (default), box"
    )
    conform.add_argument(
        "--info-type", help="the test envs' infos: numeric (default), rich"
    )
    conform.add_argument(
        "--compare-info",
        choices=["episode", "none"],
        default="episode",
        help="what of the infos must agree across modes: episode, the episode "
        "statistics (info['episode'] return and length) where the wrapper writes "
        "them (default); none. The sub-envs' own infos are compared too, unless "
        "--no-env-infos",
    )
    conform.add_argument(
        "--bases",
        nargs="+",
        metavar="BASE",
        help="the base vector envs to run over (default: vecmode.SyncVectorEnv "
        "gymnasium.vector.SyncVectorEnv); vecmode.SyncVectorEnv alone for a "
        "wrapper that needs vecmode's core (NextStepAutoreset); "
        "vecmode.testing.DenseFinalObsVectorEnv, ALE's dense final observations, "
        "for an adapter of that layout",
    )
    conform.add_argument(
        "--no-env-infos",
        action="store_true",
        help="do not require the sub-envs' own infos to reach the caller (for a "
        "wrapper that removes or rewrites them on purpose)",
    )
    json_option(conform)

    probe = command(
        "probe",
        "find out which autoreset mode a vector env really runs in",
        "Call FACTORY (module:function[:key=value,...], returning a vector env), "
        "run it with vecmode.probe_mode and print what it found: the mode the env "
        "behaves in, and whether its metadata['autoreset_mode'] agrees.\n\n"
        "example: vecmode probe gymnasium:make_vec:id=CartPole-v1,num_envs=2",
    )
    probe.add_argument(
        "factory",
        metavar="FACTORY",
        help="module:function[:key=value,...], a callable returning a vector env",
    )
    probe.add_argument(
        "--max-steps", type=_positive, default=1000, help="steps at most (1000)"
    )
    probe.add_argument("--seed", type=int, default=0, help="reset seed (0)")
    json_option(probe)
    parser.commands = commands.choices
    return parser


# --- resolving what the user names -----------------------------------------------------


@dataclass(frozen=True)
class _Target:
    """What a ``NAME[:key=value,...]`` / ``module:attr[:...]`` names."""

    spec: str
    obj: Any
    kwargs: dict[str, Any]
    name: str


def _pieces(text: str) -> list[str]:
    """``text`` split at its commas outside brackets and quotes.

    >>> _pieces("a=1,b=(1, 2),c='x,y',d=[3]")
    ['a=1', 'b=(1, 2)', "c='x,y'", 'd=[3]']
    """
    pieces: list[str] = []
    depth, quote, escaped, start = 0, "", False, 0
    for i, char in enumerate(text):
        if quote:
            escaped, quote = (
                (False, quote)
                if escaped
                else (char == "\\", "" if char == quote else quote)
            )
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            pieces.append(text[start:i])
            start = i + 1
    pieces.append(text[start:])
    return pieces


def _literal(text: str) -> Any:
    """A Python literal, ``inf`` / ``nan`` as floats, else the text itself."""
    if text.lower() in ("inf", "+inf", "-inf", "nan"):
        return float(text)
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def _split(spec: str, option: str) -> tuple[list[str], dict[str, Any]]:
    """``"a.b:C:k=1,j=x"`` -> ``(["a.b", "C"], {"k": 1, "j": "x"})``."""
    parts = spec.split(":")
    first_arg = next((i for i, part in enumerate(parts) if "=" in part), len(parts))
    names, arguments = parts[:first_arg], ":".join(parts[first_arg:])
    if not names or not all(name.strip() for name in names):
        raise _Fail(cli_spec_syntax(option, spec, "a name is empty"))
    if len(names) > 2:
        raise _Fail(
            cli_spec_syntax(option, spec, "more than module:Class before the arguments")
        )
    dotted = names[0] if len(names) == 2 else ""
    if dotted and not all(part.isidentifier() for part in dotted.split(".")):
        raise _Fail(cli_spec_syntax(option, spec, f"{dotted!r} is not a module path"))
    if not all(part.isidentifier() for part in names[-1].split(".")):
        raise _Fail(cli_spec_syntax(option, spec, f"{names[-1]!r} is not a name"))
    kwargs: dict[str, Any] = {}
    for piece in _pieces(arguments) if arguments else []:
        key, equals, value = piece.partition("=")
        key = key.strip()
        if not equals:
            raise _Fail(cli_spec_syntax(option, spec, f"{piece!r} is not key=value"))
        if not key.isidentifier():
            raise _Fail(
                cli_spec_syntax(option, spec, f"{key!r} is not an argument name")
            )
        if key in kwargs:
            raise _Fail(cli_spec_syntax(option, spec, f"{key!r} given twice"))
        if not value.strip():  # '' would reach the class as a value
            raise _Fail(
                cli_spec_syntax(
                    option, spec, f"{key!r} has no value (write {key}='' for '')"
                )
            )
        kwargs[key] = _literal(value.strip())
    return names, kwargs


def _close(name: str, candidates: list[str]) -> list[str]:
    """Up to three of ``candidates`` close to ``name``, ignoring case."""
    by_lower = {candidate.lower(): candidate for candidate in candidates}
    found = difflib.get_close_matches(name.lower(), list(by_lower), n=3, cutoff=0.6)
    return [by_lower[match] for match in found]


def _on_path_here() -> None:
    """Let ``module:...`` find modules in the current directory, as ``python -m``
    does (a console script's ``sys.path`` starts at its own directory)."""
    here = os.getcwd()
    if "" not in sys.path and here not in sys.path:
        sys.path.insert(0, here)


def _import(module: str, what: str) -> Any:
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as error:
        missing = error.name or module
        if module == missing or module.startswith(missing + "."):
            raise _Fail(cli_module_not_found(module, what, missing)) from error
        raise _Fail(cli_import_failed(module, what, error)) from error
    except (Exception, SystemExit) as error:
        raise _Fail(cli_import_failed(module, what, error)) from error


def _attribute(owner: Any, owner_name: str, qualname: str) -> Any:
    target = owner
    for part in qualname.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            public = [  # what could be meant: not a module imported there
                n
                for n in dir(target)
                if not n.startswith("_")
                and not isinstance(getattr(target, n, None), types.ModuleType)
            ]
            raise _Fail(
                cli_missing_attribute(owner_name, qualname, _close(part, public))
            ) from None
    return target


def _vecmode_wrappers() -> dict[str, type]:
    """vecmode's wrapper classes by name: ``vecmode.wrappers``, then the policies."""
    import vecmode
    import vecmode.wrappers

    found: dict[str, type] = {}
    for module in (vecmode.wrappers, vecmode):
        for name in module.__all__:
            obj = getattr(module, name, None)
            if isinstance(obj, type) and issubclass(obj, VectorWrapper):
                found.setdefault(name, obj)
    return found


def _gymnasium_wrapper(name: str, spec: str) -> Any:
    import gymnasium.wrappers.vector as vector

    names = [n for n in vector.__all__ if n[:1].isupper()]
    if name not in names:
        raise _Fail(cli_unknown_gymnasium_wrapper(name, _close(name, names)))
    try:
        return getattr(vector, name)
    except (ImportError, gym.error.Error) as error:  # optional dependencies
        raise _Fail(cli_import_failed(vector.__name__, repr(spec), error)) from error


def _target(spec: str, option: str, *, names: bool = True) -> _Target:
    """Resolve a wrapper / factory spec; ``names``: allow the vecmode-name and
    ``gymnasium:NAME`` forms."""
    if not names and ":" not in spec:
        raise _Fail(cli_not_a_path("probe", spec, "a callable returning a vector env"))
    parts, kwargs = _split(spec, option)
    if len(parts) == 1:
        known = _vecmode_wrappers()
        if parts[0] not in known:
            import gymnasium.wrappers.vector as vector

            raise _Fail(
                cli_unknown_wrapper(
                    parts[0], _close(parts[0], list(known)), parts[0] in vector.__all__
                )
            )
        return _Target(spec, known[parts[0]], kwargs, parts[0])
    module, qualname = parts
    if names and module in _vecmode_wrappers():  # NAME:args without the "="
        raise _Fail(cli_spec_syntax(option, spec, f"{qualname!r} is not key=value"))
    if names and module == "gymnasium":
        return _Target(
            spec, _gymnasium_wrapper(qualname, spec), kwargs, f"gymnasium:{qualname}"
        )
    owner = _import(module, f"{option} {spec!r}")
    return _Target(
        spec, _attribute(owner, module, qualname), kwargs, f"{module}:{qualname}"
    )


def _bound(target: _Target, *args: Any) -> Callable[..., Any]:
    """``target.obj(*args, **kwargs)`` as a thunk, once the arguments fit."""
    _check_arguments(target, *args)
    return functools.partial(target.obj, *args, **target.kwargs)


def _check_arguments(target: _Target, *args: Any) -> None:
    """Raise a usage error unless ``target.obj(*args, **target.kwargs)`` can bind."""
    obj, spec = target.obj, target.spec
    if isinstance(obj, type) and issubclass(obj, gym.Wrapper):
        raise _Fail(cli_single_env_wrapper(spec, obj))
    if not callable(obj):
        raise _Fail(cli_not_callable(spec, obj))
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):  # builtins without one: let the call decide
        signature = None
    if signature is not None:
        try:
            signature.bind(*args, **target.kwargs)
        except TypeError as error:
            if args and _binds(signature, target.kwargs):  # no room for the env
                raise _Fail(cli_takes_no_env(spec)) from None
            raise _Fail(
                cli_wrapper_arguments(spec, f"{target.name}{signature}", error)
            ) from None


def _binds(signature: inspect.Signature, kwargs: dict[str, Any]) -> bool:
    try:
        signature.bind(**kwargs)
    except TypeError:
        return False
    return True


# --- the commands ------------------------------------------------------------------------


@contextlib.contextmanager
def _env_errors(env_id: str, doing: str) -> Iterator[None]:
    """Make what making / running ``env_id`` raises a :class:`_Fail`."""
    try:
        yield
    except _Fail:
        raise
    except gym.error.Error as error:
        unregistered = isinstance(error, gym.error.UnregisteredEnv) or str(
            error
        ).startswith("No registered env")
        raise _Fail(cli_cannot_make(env_id, error, unregistered)) from error
    except ImportError as error:  # the module of "module:Name-v0"
        module = env_id.rpartition(":")[0] or env_id
        missing = getattr(error, "name", None) or module
        what = f"env id {env_id!r}"
        if isinstance(error, ModuleNotFoundError) and (
            module == missing or module.startswith(missing + ".")
        ):
            raise _Fail(cli_module_not_found(module, what, missing)) from error
        raise _Fail(cli_import_failed(module, what, error)) from error
    except Exception as error:
        raise _Fail(cli_raised(f"{doing} {env_id!r}", error), EXIT_FAILED) from error


def _timeline(args: argparse.Namespace) -> int:
    from vecmode.timeline import (
        TimelineActionError,
        format_timeline,
        timeline,
        timeline_svg,
    )

    svg_path: str | None = args.svg
    if svg_path and svg_path != "-":
        directory = os.path.dirname(os.path.abspath(svg_path))
        if not os.path.isdir(directory):
            raise _Fail(cli_svg_directory(svg_path, os.path.dirname(svg_path)))
    max_steps = args.max_episode_steps
    with _env_errors(args.env_id, "running"):
        try:
            rows = timeline(
                args.env_id,
                steps=args.steps,
                seed=args.seed,
                max_episode_steps=max_steps or None,
                action=args.action,
            )
        except TimelineActionError as error:  # --action does not fit the env
            raise _Fail(str(error)) from error
    ends = f"truncated after {max_steps} steps" if max_steps else "as the env ends them"
    taken = next((row.action for row in next(iter(rows.values())) if row.action), "")
    title = f"{args.env_id}, one sub-env, episodes {ends}, seed {args.seed}"
    if taken:
        title += f", action {taken} at every step"
    if svg_path == "-":
        sys.stdout.write(timeline_svg(rows, title))
        return EXIT_OK
    if svg_path:  # before printing anything: a path that fails is a usage error
        try:
            with open(svg_path, "w", encoding="utf-8", newline="\n") as file:
                file.write(timeline_svg(rows, title))
        except OSError as error:
            raise _Fail(cli_svg_not_written(svg_path, error)) from error
    print(format_timeline(rows, title + "\n"))
    print()
    print(_LEGEND)
    if svg_path:
        print(f"\nwrote the timeline as SVG to {svg_path}")
    return EXIT_OK


def _print_json(command: str, document: dict[str, Any]) -> None:
    """One ``--json`` document: the command, the schema version, then the rest."""
    head = {"command": command, "schema_version": JSON_SCHEMA_VERSION}
    print(json.dumps({**head, **document}, indent=2))


def _mode_value(mode: AutoresetMode | None) -> str | None:
    return None if mode is None else mode.value


def _table(args: argparse.Namespace) -> int:
    from vecmode.registry import TABLE_LEGEND, format_table, table_entries

    for module in args.imports:
        _import(module, f"--import {module}")
    if not args.json:
        print(format_table(markdown=args.markdown, why=args.why))
        return EXIT_OK
    wrappers = [
        {
            "name": name,
            "modes": {
                mode.value: {
                    "verdict": found.behaviour(mode),
                    "why": found.note(mode) or None,
                }
                for mode in MODES
            },
            "produces": _mode_value(found.output),
            "evidence": proof.value,
        }
        for name, found, proof in table_entries()
    ]
    _print_json(
        "table",
        {
            "ok": True,
            "error": None,
            "modes": [mode.value for mode in MODES],
            "wrappers": wrappers,
            "legend": TABLE_LEGEND,
        },
    )
    return EXIT_OK


def _report_json(report: Any) -> dict[str, Any]:
    """A :class:`vecmode.registry.CompatibilityReport` as the ``check`` document's fields."""
    return {
        "ok": report.ok,
        "verified": report.verified,
        "mode": _mode_value(report.mode),
        "summary": str(report).splitlines()[0],
        "layers": [
            {
                "index": position,
                "name": row.name,
                "origin": row.origin,
                "mode_in": _mode_value(row.mode_in),
                "supports": None
                if row.accepts is None
                else [mode.value for mode in MODES if mode in row.accepts],
                "mode_out": _mode_value(row.mode_out),
                "verdict": row.verdict.value,
                "note": row.note or None,
                "evidence": row.evidence.value,
                "evidence_note": row.evidence_note or None,
            }
            for position, row in enumerate(report)
        ],
    }


def _check(args: argparse.Namespace) -> int:
    import vecmode

    targets = [_target(spec, "--wrap") for spec in args.wrap]  # all, before building
    with _env_errors(args.env_id, "making"):
        try:
            envs = _make_checked(args)
        except IncompatibleModeError as error:  # no exact conversion to --mode
            message = cli_make_refused(args.env_id, args.vectorization, error)
            if args.json:
                _print_json(
                    "check",
                    {
                        "ok": False,
                        "error": None,
                        "verified": False,
                        "mode": None,
                        "summary": message,
                        "layers": [],
                        "refused": {
                            "wrapper": None,
                            "mode": _mode_value(args.mode),
                            "message": str(error),
                        },
                    },
                )
            else:
                print(_filled(message))
            return EXIT_FAILED
    try:
        for target in targets:
            build = _bound(target, envs)
            try:
                wrapped = build()
            except IncompatibleModeError as error:  # the registry's refusal
                return _refused(args, target, envs, error, str(error))
            except Exception as error:
                why = _own_refusal(target, mode_of(envs), error)
                if why is None:  # not the mode: the arguments, or the env
                    raise _Fail(
                        cli_cannot_build(target.spec, _mode_value(mode_of(envs)), error)
                    ) from error
                if args.traceback:
                    traceback.print_exception(error)
                return _refused(args, target, envs, error, why)
            if not isinstance(wrapped, VectorEnv):
                raise _Fail(cli_not_a_vector_env(target.spec, wrapped))
            envs = wrapped
        report = vecmode.check_stack(envs, strict=args.strict)
        if args.json:
            _print_json(
                "check", {**_report_json(report), "error": None, "refused": None}
            )
        else:
            print(report)
        return EXIT_OK if report.ok else EXIT_FAILED
    finally:
        envs.close()


def _make_checked(args: argparse.Namespace) -> VectorEnv:
    """``check``'s env; ``--vectorization async`` over observations that cannot
    be held in shared memory (Graph, Text, Sequence, OneOf, custom spaces) is
    made with ``shared_memory=False``, saying so on stderr."""
    import vecmode

    def make(**vector_kwargs: Any) -> VectorEnv:
        return vecmode.make_vec(
            args.env_id,
            num_envs=args.num_envs,
            vectorization_mode=args.vectorization,
            vector_kwargs=vector_kwargs,
            autoreset_mode=args.mode,
        )

    try:
        return make()
    except SharedMemorySpaceError:
        if args.vectorization != "async":  # only vecmode's async env raises it
            raise
        envs = make(shared_memory=False)
        note = cli_no_shared_memory(envs.single_observation_space)
        print(f"vecmode: note: {note}", file=sys.stderr)
        return envs


def _own_refusal(
    target: _Target, mode: AutoresetMode | None, error: Exception
) -> str | None:
    """Why ``error``, raised by building ``target`` on an env in ``mode``, is the
    class refusing that mode (vecmode's registry says it does not support it),
    or None: then it is not about the mode."""
    found = declaration(target.obj) if isinstance(target.obj, type) else None
    if found is None or mode is None or mode in found.modes or mode in found.wrong:
        return None
    return cli_own_refusal(target.spec, mode, error, found.why(mode), found.instead)


def _refused(
    args: argparse.Namespace,
    target: _Target,
    envs: VectorEnv,
    error: Exception,
    why: str,
) -> int:
    """Report a wrapper that refused the stack's mode, and the stack before it."""
    import vecmode

    report = vecmode.check_stack(envs, strict=args.strict)
    message = (
        cli_wrapper_refused(target.spec, mode_of(envs), error)
        if isinstance(error, IncompatibleModeError)
        else f"NOT OK: {why}"
    )
    if args.json:
        fields = _report_json(report)
        _print_json(
            "check",
            {
                **fields,
                "ok": False,
                "error": None,
                "summary": message,
                "refused": {
                    "wrapper": target.spec,
                    "mode": _mode_value(mode_of(envs)),
                    "message": why,
                },
            },
        )
        return EXIT_FAILED
    print(_filled(message))
    print("\nThe stack built before it:")
    print(report)
    return EXIT_FAILED


def _filled(text: str) -> str:
    return textwrap.fill(text, 88, subsequent_indent="  ", break_on_hyphens=False)


def _cannot_build(factory: Any, options: dict[str, Any]) -> Exception | None:
    """What building ``factory`` raises over check_wrapper's test env in each
    mode, if it cannot be built in any (a bad argument, an env it cannot
    wrap); None if it builds in one, or only vecmode's registry refuses it."""
    from vecmode.autoreset import with_autoreset
    from vecmode.sync_vector_env import SyncVectorEnv
    from vecmode.testing.envs import scheduled_env_fns

    kinds = {
        k: options[k] for k in ("obs_type", "action_type", "info_type") if k in options
    }  # over vecmode's base: one a wrapper cannot be built over is its refusal
    first: Exception | None = None
    for mode in MODES:
        envs = with_autoreset(SyncVectorEnv(scheduled_env_fns(3, **kinds)), mode)
        try:
            factory(envs).close()
            return None
        except IncompatibleModeError:
            pass
        except Exception as error:
            first = first or error
        envs.close()
    return first


def _kit_options(args: argparse.Namespace) -> dict[str, Any]:
    """``check_wrapper``'s test envs and bases, as ``conform``'s options give them."""
    from vecmode.testing import envs as test_envs
    from vecmode.testing.conformance import BASES

    options: dict[str, Any] = {}
    for base in args.bases or ():
        if base not in BASES:
            raise _Fail(cli_choice("--bases", base, BASES))
    if args.bases:
        options["bases"] = args.bases
    for option, value, choices in (
        ("obs_type", args.obs_type, test_envs.OBS_TYPES),
        ("action_type", args.action_type, test_envs.ACTION_TYPES),
        ("info_type", args.info_type, test_envs.INFO_TYPES),
    ):
        if value is not None:
            if value not in choices:
                flag = "--" + option.replace("_", "-")
                raise _Fail(cli_choice(flag, value, choices))
            options[option] = value
    return options


def _conform(args: argparse.Namespace) -> int:
    target = _target(args.factory, "conform FACTORY")
    try:
        from vecmode.testing.conformance import check_wrapper, episode_statistics
    except ImportError as error:
        raise _Fail(cli_unavailable("conform", "vecmode.testing", error)) from error
    options = _kit_options(args)
    _check_arguments(target, None)  # an env comes first, then the key=values
    factory: Any = target.obj
    if target.kwargs:  # a callable env -> wrapped env, named after the spec
        factory = _named_factory(target)
    elif (
        not args.modes
        and isinstance(factory, type)
        and supported_modes(factory) is None
    ):
        raise _Fail(cli_undeclared_wrapper(target.spec))
    unbuildable = _cannot_build(factory, options)
    if unbuildable is not None:
        raise _Fail(cli_cannot_build(target.spec, None, unbuildable)) from (unbuildable)
    if args.modes:
        options["modes"] = args.modes
    if args.compare_info == "episode":
        options["compare_info"] = episode_statistics
    if args.no_env_infos:
        options["env_infos"] = False
    try:
        report = check_wrapper(factory, **options)
    except AssertionError as error:
        if args.json:
            _print_json("conform", _conform_json(target.spec, None, str(error)))
        else:
            print(f"NOT OK: {target.spec} does not conform\n\n{error}")
        return EXIT_FAILED
    except Exception as error:
        raise _Fail(
            cli_raised(f"check_wrapper({target.spec})", error), EXIT_FAILED
        ) from error
    if args.json:
        _print_json("conform", _conform_json(target.spec, report, None))
    else:
        print(report)
    return EXIT_OK


def _conform_json(spec: str, report: Any, failure: str | None) -> dict[str, Any]:
    """The ``conform`` document: the report's fields, or the failure."""
    if report is None:
        return {
            "ok": False,
            "error": None,
            "wrapper": spec,
            "summary": None,
            "failure": failure,
            "modes": None,
            "refused": None,
            "runs": None,
            "transitions": None,
            "batch_dependent": None,
            "limits": None,
        }
    return {
        "ok": True,
        "error": None,
        "wrapper": spec,
        "summary": report.summary,
        "failure": None,
        "modes": [mode.value for mode in report.modes],
        "refused": {
            mode.value: report.refusals.get(mode, "IncompatibleModeError")
            for mode in report.refused
        },
        "runs": list(report.runs),
        "transitions": report.transitions,
        "batch_dependent": report.batch_dependent,
        "limits": list(report.limits),
    }


def _named_factory(target: _Target) -> Callable[[VectorEnv], Any]:
    """``env -> target.obj(env, **target.kwargs)``, named ``Name(k=v, ...)``."""

    def factory(env: VectorEnv) -> Any:
        return target.obj(env, **target.kwargs)

    arguments = ", ".join(f"{key}={value!r}" for key, value in target.kwargs.items())
    name = f"{target.name.rpartition(':')[2]}({arguments})"
    factory.__name__ = factory.__qualname__ = name
    return factory


def _probe(args: argparse.Namespace) -> int:
    target = _target(args.factory, "probe FACTORY", names=False)
    try:
        from vecmode.probe import probe_mode
    except ImportError as error:
        raise _Fail(cli_unavailable("probe", "vecmode.probe", error)) from error
    factory = _bound(target)
    try:
        result = probe_mode(factory, max_steps=args.max_steps, seed=args.seed)
    except NotAVectorEnvError as error:  # the FACTORY given is not one
        raise _Fail(cli_not_a_vector_env_factory(target.spec, error)) from error
    except Exception as error:
        raise _Fail(cli_raised(f"probing {target.spec}", error), EXIT_FAILED) from error
    wrong = result.declared is not None and result.mode is not result.declared
    code = EXIT_FAILED if result.mode is None or wrong else EXIT_OK
    if args.json:
        _print_json(
            "probe",
            {
                "ok": code == EXIT_OK,
                "error": None,
                "factory": target.spec,
                "mode": _mode_value(result.mode),
                "declared": _mode_value(result.declared),
                "agrees": result.agrees,
                "reason": result.reason,
                "ended_at": result.ended_at,
                "ended": list(result.ended),
                "rejected": {
                    mode.value: str(diff) for mode, diff in result.rejected.items()
                },
                "read_through": result.read_through,
                "summary": str(result),
            },
        )
    else:
        print(result)
    return code


_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "timeline": _timeline,
    "table": _table,
    "check": _check,
    "conform": _conform,
    "probe": _probe,
}


# --- main ----------------------------------------------------------------------------------


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    text = " ".join(str(message).split())
    print(f"vecmode: warning: {text} ({category.__name__})", file=sys.stderr)


def _stdout_to_devnull() -> None:
    """After EPIPE: point stdout at devnull so the interpreter's final flush is
    quiet (the recipe of Python's ``signal`` docs)."""
    try:
        fileno = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (tests)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fileno)
    os.close(devnull)


def _run(argv: list[str]) -> int:
    parser = _parser()
    try:
        args, extra = parser.parse_known_args(argv)
        if args.command is None and not extra:  # vecmode alone: CartPole's timeline
            args, extra = parser.parse_known_args([*argv, "timeline"])
        if extra:  # the command's parser says so, pointing at its own --help
            helper = parser.commands.get(args.command or "", parser)
            helper.error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as exit_:  # --help, --version, usage errors
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    # every command finds `module:...` (a wrapper, a factory, an env id's
    # module) in the current directory, as `python -m vecmode` does
    _on_path_here()
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            return _COMMANDS[args.command](args)
    except _Fail as failure:
        text = str(failure)
        if args.traceback and failure.__cause__ is not None:
            traceback.print_exception(failure.__cause__)
            text = text.replace(RERUN, "")  # shown above
        if text:
            print(f"vecmode: {text}", file=sys.stderr)
        if getattr(args, "json", False) and failure.code == EXIT_FAILED:
            # the user's code raised: still one document on stdout
            _print_json(args.command, {"ok": False, "error": str(failure)})
        return failure.code


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``); returns the
    exit code (see the module docstring)."""
    try:
        code = _run(list(sys.argv[1:] if argv is None else argv))
        sys.stdout.flush()
    except BrokenPipeError:
        _stdout_to_devnull()
        return EXIT_PIPE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())


# ------------------------------------------------------------------ messages
def cli_cannot_make(env_id: str, error: BaseException, unregistered: bool) -> str:
    listing = (
        "List the registered ids with python -c 'import gymnasium; "
        "gymnasium.pprint_registry()'"
    )
    module, _, name = env_id.rpartition(":")
    if not unregistered:
        hint = ""
    elif module:
        hint = (
            f" ENV_ID is an id a module registers, not a class: {module!r} was "
            f"imported but registered no {name!r}. Register it there "
            f"(gymnasium.register({name!r}, entry_point=...)), or write an id it "
            f"registers. {listing}."
        )
    elif "/" in name:
        hint = (
            f" If an installed package registers the {name.partition('/')[0]!r} "
            f"namespace when imported, name it first: 'package:{name}' (e.g. "
            f"'ale_py:ALE/Pong-v5'). {listing}."
        )
    else:
        hint = (
            f" {listing}; write an id another package registers as "
            "'package.module:Name-v0'."
        )
    return f"cannot make {env_id!r}: {error}{hint}"


def cli_module_not_found(module: str, what: str, missing: str) -> str:
    return (
        f"cannot import module {module!r} for {what}: no module named {missing!r}. "
        f"Check the spelling, that it is installed in this Python, or run vecmode "
        f"from the directory that holds it (or add that directory to PYTHONPATH)."
    )


def cli_import_failed(module: str, what: str, error: BaseException) -> str:
    return (
        f"importing module {module!r} for {what} raised {type(error).__name__}: "
        f"{str(error).rstrip('.')}. Fix the module (python -c 'import {module}' shows where), or "
        f"rerun with --traceback."
    )


def cli_missing_attribute(module: str, name: str, close: list[str]) -> str:
    return (
        f"module {module!r} has no attribute {name!r}.{did_you_mean(close)} Write "
        f"module:attribute with the attribute's exact (case-sensitive) name."
    )


def cli_unknown_wrapper(name: str, close: list[str], gymnasium_has_it: bool) -> str:
    also = (
        f" Gymnasium has one: write gymnasium:{name}."
        if gymnasium_has_it
        else f" vecmode table lists the wrappers vecmode knows; {WRAP_FORMS}."
    )
    return f"{name!r} is not a vecmode wrapper.{did_you_mean(close)}{also}"


def cli_unknown_gymnasium_wrapper(name: str, close: list[str]) -> str:
    prefixed = [f"gymnasium:{n}" for n in close]
    return (
        f"gymnasium.wrappers.vector has no wrapper {name!r}.{did_you_mean(prefixed)}"
        f" vecmode table lists Gymnasium's vector wrappers."
    )


def cli_spec_syntax(option: str, spec: str, problem: str) -> str:
    return f"bad {option} {spec!r}: {problem}; {WRAP_FORMS} (e.g. NormalizeReward:gamma=0.9)."


def cli_not_a_path(command: str, got: str, what: str) -> str:
    return (
        f"vecmode {command} takes module:name, the import path of {what}, got "
        f"{got!r}; e.g. vecmode {command} my_package.my_module:make_envs (for a "
        f"registered env id: vecmode {command} gymnasium:make_vec:id=CartPole-v1)."
    )


def cli_takes_no_env(spec: str) -> str:
    return (
        f"{spec!r} takes no argument, but it is given the vector env to wrap: name "
        f"a wrapper class, or a function env -> wrapped env (a zero-argument "
        f"factory of a vector env is what vecmode probe takes)."
    )


def cli_wrapper_arguments(spec: str, signature: str, error: BaseException) -> str:
    return (
        f"{spec!r}: its arguments do not fit {signature}: {error}. Give them as "
        f"NAME:key=value,... (values are Python literals; other text is a string)."
    )


def cli_single_env_wrapper(spec: str, cls: type) -> str:
    return (
        f"{spec!r} is {cls.__module__}.{cls.__qualname__}, a wrapper of a single "
        f"gymnasium.Env, not of a vector env; use a vector wrapper (vecmode's "
        f"wrappers, or gymnasium:NAME for gymnasium.wrappers.vector)."
    )


def cli_not_a_vector_env(spec: str, got: Any) -> str:
    return (
        f"{spec!r} returned {type(got).__name__}, not a gymnasium.vector.VectorEnv; "
        f"a --wrap must name a vector wrapper class, or a callable that takes the "
        f"vector env and returns the wrapped one."
    )


def cli_wrapper_refused(spec: str, mode: AutoresetMode | None, error: Exception) -> str:
    got = (
        "an env that declares no mode" if mode is None else f"the stack in {mode.value}"
    )
    if isinstance(error, IncompatibleModeError):
        return f"NOT OK: {spec!r} refused to wrap {got}: {error}"
    return (
        f"NOT OK: {spec!r} raised {type(error).__name__} when built on {got}: {error}"
    )


#: The hint of a message about the user's code raising (left out under
#: --traceback, which shows where).
RERUN = " (rerun with --traceback to see where)"


def cli_not_a_vector_env_factory(spec: str, error: BaseException) -> str:
    got = str(error).partition(", got ")[2].partition(";")[0] or "something else"
    return (
        f"probe FACTORY must build a vector env, but {spec} returned {got}. Name a "
        "function returning one, with its arguments, e.g. vecmode probe "
        "gymnasium:make_vec:id=CartPole-v1,num_envs=2 (for an env id a module "
        "registers: id=module:Name-v0)."
    )


def cli_raised(what: str, error: BaseException) -> str:
    if isinstance(error, SubEnvError):  # its text carries the sub-env's traceback
        text = (
            f"sub-env {error.index} raised {error.exc_type} in {error.method}(): "
            f"{error.message}"
        )
    else:
        text = str(error)
    return f"{what} raised {type(error).__name__}: {text.rstrip('.')}{RERUN}."


def cli_not_callable(spec: str, got: Any) -> str:
    return (
        f"{spec!r} names {type(got).__name__} {got!r}, which cannot be called; name "
        f"a class or a function."
    )


def cli_make_refused(env_id: str, vectorization: str, error: Exception) -> str:
    return f"NOT OK: {env_id} ({vectorization}) cannot run in the mode asked: {error}"


def cli_undeclared_wrapper(spec: str) -> str:
    return (
        f"{spec!r} declares no autoreset modes, so there is nothing to prove: pass "
        f"the modes it should be right in (--modes NextStep SameStep ...), or "
        f"declare them (@vecmode.supports, or vecmode.register for a class you "
        f"don't own)."
    )


def cli_svg_directory(path: str, directory: str) -> str:
    return (
        f"cannot write {path!r}: the directory {directory!r} does not exist; create "
        f"it first, or give another --svg path."
    )


def cli_svg_not_written(path: str, error: OSError) -> str:
    return f"cannot write {path!r}: {error.strerror or error}; give another --svg path."


def cli_choice(option: str, got: str, choices: Iterable[str]) -> str:
    return f"{option} {got!r} is not one of {', '.join(choices)}; pick one of them."


def cli_unavailable(command: str, module: str, error: BaseException) -> str:
    return (
        f"vecmode {command} needs {module}, which cannot be imported here "
        f"({type(error).__name__}: {error}); reinstall vecmode."
    )


def cli_cannot_build(spec: str, mode: str | None, error: BaseException) -> str:
    on = f"on the stack in {mode}" if mode else "on a test env in any mode"
    fits = (
        "that it fits the env"
        if mode
        else "that it fits the test envs (pick them with --obs-type, --action-type, "
        "--info-type)"
    )
    return (
        f"cannot build {spec!r} {on}: its constructor raised "
        f"{type(error).__name__}: {str(error).rstrip('.')}. Check its arguments "
        f"(NAME:key=value,...; values are Python literals, other text is a string) "
        f"and {fits}{RERUN}."
    )


def cli_no_shared_memory(space: Any) -> str:
    return (
        f"the observation space {space} cannot be held in shared memory, so the "
        f"async env is made with shared_memory=False (observations travel by pipe)."
    )


def cli_own_refusal(
    spec: str, mode: AutoresetMode, error: BaseException, why: str, instead: str
) -> str:
    return " ".join(
        part
        for part in (
            f"{spec!r} refuses {mode.value}: its constructor raised "
            f"{type(error).__name__}: {str(error).rstrip('.')}.",
            why,
            instead,
        )
        if part
    )
