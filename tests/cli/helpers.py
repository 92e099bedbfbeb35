"""What the command line's tests share: running ``main`` in-process, reading its
one-line errors, and the texts several tests expect."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import tests.cli.targets  # noqa: F401  (registers the test env ids)
from vecmode.cli import main

ROOT = Path(__file__).resolve().parents[2]
TARGETS = "tests.cli.targets"


def run(argv, capsys):
    """``main(argv)``: (exit code, stdout, stderr). JAX's warning at a fork (JAX
    imported by an earlier test of this process) is not the command's output."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", r"os\.fork\(\) was called", RuntimeWarning)
        code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(err: str) -> str:
    """The single ``vecmode:`` line an error prints (no traceback)."""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("vecmode: "), err
    return lines[0].removeprefix("vecmode: ")


def flat(text: str) -> str:
    """``text`` with its line wrapping undone."""
    return " ".join(text.split())


def subprocess_env():
    """The environment for a subprocess: this one, with UTF-8 output."""
    return {**os.environ, "PYTHONIOENCODING": "utf-8"}


def module_not_found(module: str, what: str, missing: str) -> str:
    """The error for a module that is not there."""
    return (
        f"cannot import module {module!r} for {what}: no module named {missing!r}. "
        f"Check the spelling and that it is installed, or run vecmode from the "
        f"directory that holds it."
    )
