"""What the commands share: exit codes, the command table's rows, the errors
that end a command, the option types and the ``--json`` document."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

import gymnasium as gym

from vecmode.errors import SubEnvError
from vecmode.modes import AutoresetMode, as_mode

#: Done, and the answer is yes.
EXIT_OK = 0
#: The answer is no, or the user's code raised.
EXIT_FAILED = 1
#: A usage error (argparse's code).
EXIT_USAGE = 2
#: Ctrl-C.
EXIT_INTERRUPTED = 130
#: stdout was closed before everything was written (128 + SIGPIPE).
EXIT_PIPE = 141
#: The version of the ``--json`` documents' schema; it changes only when a field
#: is removed or changes meaning.
JSON_SCHEMA_VERSION = 1

#: The hint of a message about the user's code raising (left out under
#: ``--traceback``, which shows where).
RERUN = " (rerun with --traceback to see where)"
WRAP_HELP = (
    "a wrapper: NAME (vecmode.wrappers or an autoreset policy such as "
    "SameStepAutoreset), gymnasium:NAME (gymnasium.wrappers.vector) or "
    "module:Class, optionally followed by :key=value,... (Python literals; other "
    "text is a string)"
)


def arg(*flags: str, **options: Any) -> tuple[tuple[str, ...], dict[str, Any]]:
    """An argument of a command: ``add_argument``'s flags and options."""
    return flags, options


@dataclass(frozen=True)
class Command:
    """A row of the command table: the command's name, help and arguments (it
    takes ``--json`` if ``json``), and ``run``, which returns whether the answer
    is yes (exit code 0) or no (1)."""

    name: str
    summary: str
    description: str
    arguments: tuple[tuple[tuple[str, ...], dict[str, Any]], ...]
    run: Callable[[argparse.Namespace], bool]
    json: bool = True


class CommandError(Exception):
    """Ends the command: ``message`` on stderr (if any), exit ``code``."""

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.code = code


class RaisedError(CommandError):
    """The env's, wrapper's or factory's own code raised ``error`` (exit code 1)."""

    def __init__(self, what: str, error: BaseException) -> None:
        text = str(error)
        if isinstance(error, SubEnvError):  # its text has the sub-env's traceback
            text = (
                f"sub-env {error.index} raised {error.exc_type} in {error.method}(): "
            )
            text += error.message
        name = type(error).__name__
        super().__init__(
            f"{what} raised {name}: {text.rstrip('.')}{RERUN}.", EXIT_FAILED
        )


def _at_least(low: int) -> Callable[[str], int]:
    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = low - 1
        if value < low:
            raise argparse.ArgumentTypeError(f"expected an int >= {low}, got {text!r}")
        return value

    return convert


#: Option types: an int >= 1, an int >= 0.
positive, non_negative = _at_least(1), _at_least(0)


def mode_option(text: str) -> AutoresetMode:
    """The option type of a mode, in any spelling :func:`vecmode.as_mode` takes."""
    try:
        return as_mode(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def print_json(command: str, document: dict[str, Any]) -> None:
    """One ``--json`` document: the command, the schema version, then the rest
    (a mode as its name)."""
    head = {"command": command, "schema_version": JSON_SCHEMA_VERSION}
    enum = attrgetter("value")  # the modes: json knows no Enum
    print(json.dumps({**head, **document}, indent=2, default=enum))


def cannot_build_message(
    spec: str, mode: AutoresetMode | None, error: BaseException
) -> str:
    """``spec``'s constructor raised ``error`` on the stack in ``mode``, or (None)
    on the conformance kit's test env in every mode."""
    on = f"on the stack in {mode.value}" if mode else "on a test env in any mode"
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


def import_module(module: str, what: str) -> Any:
    """``importlib.import_module(module)``, or a usage error naming ``what``."""
    try:
        return importlib.import_module(module)
    except (Exception, SystemExit) as error:
        raise import_error(module, what, error) from error


def import_error(module: str, what: str, error: BaseException) -> CommandError:
    """The usage error for importing ``module`` (for ``what``) failing."""
    missing = getattr(error, "name", None) or module
    if isinstance(error, ModuleNotFoundError) and (
        module == missing or module.startswith(missing + ".")
    ):
        return CommandError(
            f"cannot import module {module!r} for {what}: no module named "
            f"{missing!r}. Check the spelling, that it is installed in this Python, "
            f"or run vecmode from the directory that holds it (or add that "
            f"directory to PYTHONPATH)."
        )
    return CommandError(
        f"importing module {module!r} for {what} raised {type(error).__name__}: "
        f"{str(error).rstrip('.')}. Fix the module (python -c 'import {module}' "
        f"shows where), or rerun with --traceback."
    )


@contextlib.contextmanager
def env_errors(env_id: str, doing: str) -> Iterator[None]:
    """Make what making or running ``env_id`` raises a :class:`CommandError`."""
    try:
        yield
    except CommandError:
        raise
    except gym.error.Error as error:
        unregistered = isinstance(error, gym.error.UnregisteredEnv) or str(
            error
        ).startswith("No registered env")
        hint = _unregistered_hint(env_id) if unregistered else ""
        raise CommandError(f"cannot make {env_id!r}: {error}{hint}") from error
    except ImportError as error:  # the module of "module:Name-v0"
        module = env_id.rpartition(":")[0] or env_id
        raise import_error(module, f"env id {env_id!r}", error) from error
    except Exception as error:
        raise RaisedError(f"{doing} {env_id!r}", error) from error


def _unregistered_hint(env_id: str) -> str:
    listing = (
        "List the registered ids with python -c 'import gymnasium; "
        "gymnasium.pprint_registry()'"
    )
    module, _, name = env_id.rpartition(":")
    if module:
        return (
            f" ENV_ID is an id a module registers, not a class: {module!r} was "
            f"imported but registered no {name!r}. Register it there "
            f"(gymnasium.register({name!r}, entry_point=...)), or write an id it "
            f"registers. {listing}."
        )
    if "/" in name:
        return (
            f" If an installed package registers the {name.partition('/')[0]!r} "
            f"namespace when imported, name it first: 'package:{name}' (e.g. "
            f"'ale_py:ALE/Pong-v5'). {listing}."
        )
    return f" {listing}; write an id another package registers as 'package.module:Name-v0'."
