"""What the commands share: exit codes, errors that end a command, ``--json``."""

from __future__ import annotations

import contextlib
import importlib
import json
from collections.abc import Iterator
from operator import attrgetter
from typing import Any

import gymnasium as gym

from vecmode.errors import SubEnvError
from vecmode.modes import AutoresetMode

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_PIPE = 141
#: The version of the ``--json`` documents' schema; it changes only when a field
#: is removed or changes meaning.
JSON_SCHEMA_VERSION = 3
#: Ends a message about the user's code raising (left out under ``--traceback``).
RERUN = " (rerun with --traceback to see where)"


class CommandError(Exception):
    """Ends the command: ``message`` on stderr (if any), exit ``code``."""

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.code = code


class RaisedError(CommandError):
    """The env's, wrapper's or factory's own code raised ``error`` (exit code 1);
    ``also``: what the message adds."""

    def __init__(self, what: str, error: BaseException, also: str = "") -> None:
        text = str(error)
        if isinstance(error, SubEnvError):  # its text holds the sub-env's traceback
            where = f"sub-env {error.index} raised {error.exc_type} in {error.method}()"
            text = f"{where}: {error.message}"
        text = f"{what} raised {type(error).__name__}: {text.rstrip('.')}{RERUN}."
        super().__init__(text + also, EXIT_FAILED)


def print_json(command: str, document: dict[str, Any]) -> None:
    """Print one ``--json`` document (a mode as its name)."""
    head = {"command": command, "schema_version": JSON_SCHEMA_VERSION}
    print(json.dumps({**head, **document}, indent=2, default=attrgetter("value")))


def cannot_build_message(
    spec: str, mode: AutoresetMode | None, error: Exception
) -> str:
    """``spec``'s constructor raised ``error`` on the stack in ``mode``, or (None)
    on the conformance kit's test env in every mode."""
    on = f"on the stack in {mode.value}" if mode else "on a test env in any mode"
    fits = "the env" if mode else "the test envs (--obs-type, --action-type, ...)"
    return (
        f"cannot build {spec!r} {on}: its constructor raised {type(error).__name__}: "
        f"{str(error).rstrip('.')}. Check its arguments and that it fits {fits}"
        f"{RERUN}."
    )


def import_module(module: str, what: str) -> Any:
    """``importlib.import_module(module)``, or a usage error naming ``what``."""
    try:
        return importlib.import_module(module)
    except (Exception, SystemExit) as error:
        raise import_error(module, what, error) from error


def import_all(modules: list[str]) -> None:
    """Import each module of ``--import`` (its declarations), or a usage error."""
    for module in modules:
        import_module(module, f"--import {module}")


def import_error(module: str, what: str, error: BaseException) -> CommandError:
    """The usage error for importing ``module`` (for ``what``) failing."""
    missing = getattr(error, "name", None) or module
    if isinstance(error, ModuleNotFoundError) and (
        module == missing or module.startswith(missing + ".")
    ):
        return CommandError(
            f"cannot import module {module!r} for {what}: no module named "
            f"{missing!r}. Check the spelling and that it is installed, or run "
            f"vecmode from the directory that holds it."
        )
    return CommandError(
        f"importing module {module!r} for {what} raised {type(error).__name__}: "
        f"{str(error).rstrip('.')}. Fix the module (python -c 'import {module}' "
        f"shows where)."
    )


@contextlib.contextmanager
def env_errors(env_id: str, doing: str) -> Iterator[None]:
    """Make what making or running ``env_id`` raises a :class:`CommandError`."""
    try:
        yield
    except CommandError:
        raise
    except gym.error.DependencyNotInstalled as error:  # says what to install
        text = getattr(error, "message", error)  # a sub-env's: its own text
        raise CommandError(f"cannot make {env_id!r}: {text}") from error
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
    module, _, name = env_id.rpartition(":")
    if module:
        return (
            f" {module!r} registers no {name!r}: ENV_ID is an id a module registers "
            f"(gymnasium.register({name!r}, entry_point=...)), not a class."
        )
    if "/" in name:
        return (
            f" If a package registers {name.partition('/')[0]!r} when imported, name "
            f"it first: 'package:{name}' (as 'ale_py:ALE/Pong-v5')."
        )
    return (
        " List the ids with python -c 'import gymnasium; gymnasium.pprint_registry()'"
        "; an id another package registers is written package:Name-v0."
    )
