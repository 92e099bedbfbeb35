"""The parser: version, help, exit codes, usage errors and the mode option."""

from __future__ import annotations

import re

import pytest

import vecmode
from tests.cli.helpers import ROOT, flat, one_error_line, run
from vecmode.cli import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_PIPE,
    EXIT_USAGE,
    mode_option,
)
from vecmode.modes import AutoresetMode, as_mode


def test_version(capsys):
    code, out, _ = run(["--version"], capsys)
    assert code == EXIT_OK
    assert out == f"vecmode {vecmode.__version__}\n"


def test_help_documents_the_exit_codes_once(capsys):
    code, out, _ = run(["--help"], capsys)
    assert code == EXIT_OK
    epilog = flat(out[out.index("exit codes:") :])
    assert epilog == (
        "exit codes: 0 yes, 1 no (or the env's or wrapper's own code raised), 2 "
        "usage error, 130 interrupted, 141 stdout closed early; docs/cli.md says "
        "more."
    )


@pytest.mark.parametrize("command", ["timeline", "table", "check", "conform", "probe"])
def test_command_help_points_to_the_exit_codes(command, capsys):
    """Not the whole paragraph again in every command's help."""
    code, out, _ = run([command, "--help"], capsys)
    assert code == EXIT_OK
    assert out.count("exit codes") == 1
    assert flat(out).endswith("exit codes: see vecmode --help.")


def test_the_docs_document_the_exit_codes():
    """docs/cli.md has every exit code, in order; the docstring points there."""
    import vecmode.cli

    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    section = page[page.index("## Exit codes") :].split("\n## ")[0]
    codes = [int(code) for code in re.findall(r"^\| (\d+) \|", section, re.M)]
    assert codes == [EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED, EXIT_PIPE]
    assert "docs/cli.md" in (vecmode.cli.__doc__ or "")


def test_unknown_command_is_a_one_line_usage_error(capsys):
    code, out, err = run(["bogus"], capsys)
    assert (code, out) == (EXIT_USAGE, "")
    assert "invalid choice: 'bogus'" in one_error_line(err)
    assert "did you mean" not in err  # nothing close


@pytest.mark.parametrize(
    ("argv", "meant"),
    [
        (["chek"], "check"),
        (["tabel"], "table"),
        (["conform", "X", "--obs-type", "dcit"], "dict"),
    ],
)
def test_a_misspelled_choice_gets_the_closest_one(argv, meant, capsys):
    code, out, err = run(argv, capsys)
    assert (code, out) == (EXIT_USAGE, "")
    assert f"; did you mean {meant}? (see: vecmode " in one_error_line(err)


@pytest.mark.parametrize(
    "argv", [["check", "CartPole-v1", "--bogus"], ["table", "--bogus"], ["--bogus"]]
)
def test_an_unknown_option_points_at_its_commands_help(argv, capsys):
    code, out, err = run(argv, capsys)
    assert (code, out) == (EXIT_USAGE, "")
    where = "vecmode" if argv[0] == "--bogus" else f"vecmode {argv[0]}"
    assert (
        one_error_line(err) == f"unrecognized arguments: --bogus (see: {where} --help)"
    )


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["timeline", "--steps", "0"], "--steps"),
        (["timeline", "--max-episode-steps", "-1"], "--max-episode-steps"),
        (["check", "CartPole-v1", "--num-envs", "zero"], "--num-envs"),
        (["probe", "x:y", "--max-steps", "0"], "--max-steps"),
    ],
)
def test_bad_numbers_are_one_line_usage_errors(argv, option, capsys):
    code, out, err = run(argv, capsys)
    assert (code, out) == (EXIT_USAGE, "")
    line = one_error_line(err)
    assert line.startswith(f"argument {option}: expected an int >= ")
    assert line.endswith(f"(see: vecmode {argv[0]} --help)")


def test_as_mode_spellings_match_the_check_option():
    """The option takes what as_mode takes (else it names the choices)."""
    for spelling in ("NextStep", "next_step", "NEXT-STEP", "SameStep", "Disabled"):
        assert mode_option(spelling) is as_mode(spelling)
    with pytest.raises(Exception, match="invalid choice: 'sometimes'"):
        mode_option("sometimes")
    assert AutoresetMode.SAME_STEP is mode_option("same step")


@pytest.mark.parametrize(
    "argv",
    [
        ["check", "CartPole-v1", "--mode", "SameStepp"],
        ["conform", "ClipReward", "--modes", "NextStep", "samestepp"],
    ],
)
def test_a_misspelled_mode_gets_the_closest_one(argv, capsys):
    """As any misspelled choice, in the command line's spellings (not Python's
    AutoresetMode.SAME_STEP)."""
    code, out, err = run(argv, capsys)
    assert (code, out) == (EXIT_USAGE, "")
    assert one_error_line(err) == (
        f"argument {argv[2]}: invalid choice: {argv[-1]!r} (choose from 'NextStep', "
        f"'SameStep', 'Disabled'); did you mean SameStep? (see: vecmode {argv[0]} "
        f"--help)"
    )
