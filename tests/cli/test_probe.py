"""``vecmode probe``: probe_mode from the command line."""

from __future__ import annotations

import sys
import types

import pytest

from tests.cli.helpers import TARGETS, module_not_found, one_error_line, run
from vecmode import MODES
from vecmode.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE

NS, SS, DIS = MODES


def test_probe_finds_the_declared_mode(capsys):
    pytest.importorskip("vecmode.probe")
    from tests.cli.targets import cartpole
    from vecmode.probe import probe_mode

    code, out, err = run(["probe", f"{TARGETS}:cartpole:mode=SameStep"], capsys)
    assert (code, err) == (EXIT_OK, "")
    expected = probe_mode(lambda: cartpole(mode="SameStep"))
    assert expected.mode is SS
    spec = f"{TARGETS}:cartpole:mode=SameStep"  # its yes is to one episode end
    hint = f"(one episode end checked: vecmode conform {spec} proves every call)"
    assert out == f"{expected}\n{hint}\n"
    assert max(len(line) for line in out.splitlines()[:-1]) <= 100
    assert out.count("\nnot ") == 2  # each mode rejected: a line, then its rest


def test_probe_gymnasium_make_vec(capsys):
    pytest.importorskip("vecmode.probe")
    code, out, _ = run(
        ["probe", "gymnasium:make_vec:id=CartPole-v1,num_envs=3", "--seed", "3"],
        capsys,
    )
    assert code == EXIT_OK
    assert "NextStep" in out


def test_probe_that_cannot_tell_is_exit_code_1(capsys):
    pytest.importorskip("vecmode.probe")
    from tests.cli.targets import never_ending
    from vecmode.probe import probe_mode

    code, out, _ = run(["probe", f"{TARGETS}:never_ending", "--max-steps", "5"], capsys)
    assert code == EXIT_FAILED
    expected = probe_mode(never_ending, max_steps=5)
    assert expected.mode is None
    assert out == f"{expected}\n"


@pytest.mark.parametrize(
    ("mode", "declared", "code"),
    [(SS, SS, EXIT_OK), (None, SS, EXIT_FAILED), (NS, SS, EXIT_FAILED),
     (NS, None, EXIT_OK)],
)  # fmt: skip
def test_probe_exit_codes(mode, declared, code, monkeypatch, capsys):
    """What the command makes of a probe's result (a stand-in probe_mode)."""
    calls = []

    class Result:
        def __init__(self):
            self.mode, self.declared = mode, declared

        def __str__(self):
            return f"probed {mode} declared {declared}"

    def probe_mode(factory, *, max_steps, seed):
        calls.append((factory(), max_steps, seed))
        return Result()

    fake = types.ModuleType("vecmode.probe")
    fake.probe_mode = probe_mode  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vecmode.probe", fake)
    got, out, _ = run(
        ["probe", f"{TARGETS}:cartpole:num_envs=3", "--max-steps", "7", "--seed", "4"],
        capsys,
    )
    spec = f"{TARGETS}:cartpole:num_envs=3"
    hint = f"(one episode end checked: vecmode conform {spec} proves every call)\n"
    hinted = hint if code == EXIT_OK and declared is not None else ""
    assert (got, out) == (code, f"probed {mode} declared {declared}\n{hinted}")
    [(envs, max_steps, seed)] = calls
    assert (envs.num_envs, max_steps, seed) == (3, 7, 4)
    envs.close()


def test_probe_needs_a_module_path(capsys):
    code, _, err = run(["probe", "CartPole-v1"], capsys)
    assert code == EXIT_USAGE
    assert one_error_line(err) == (
        "probe FACTORY is module:function, a callable returning a vector env, got "
        "'CartPole-v1'; for an env id: vecmode probe "
        "gymnasium:make_vec:id=CartPole-v1,num_envs=2."
    )


def test_probe_factory_that_raises_is_exit_code_1(capsys):
    pytest.importorskip("vecmode.probe")
    code, out, err = run(["probe", f"{TARGETS}:raises"], capsys)
    assert (code, out) == (EXIT_FAILED, "")
    line = one_error_line(err)
    assert line.startswith(f"probing {TARGETS}:raises raised ")
    assert "the factory's own bug" in line or "RuntimeError" in line


@pytest.mark.parametrize("json", [False, True])
def test_probe_factory_returning_no_vector_env_is_a_usage_error(json, capsys):
    """A FACTORY that is no vector env factory (an env class, a function
    returning something else) is the command's misuse: exit code 2 and a hint in
    the command's terms (it was exit code 1 and a Python lambda)."""
    pytest.importorskip("vecmode.probe")
    spec = f"{TARGETS}:not_a_vector_env:env=1"
    code, out, err = run(["probe", spec, *(["--json"] if json else [])], capsys)
    assert (code, out) == (EXIT_USAGE, "")
    assert one_error_line(err) == (
        f"probe FACTORY must build a vector env, but {spec} returned ndarray. Name "
        "a function returning one, with its arguments, e.g. "
        "gymnasium:make_vec:id=CartPole-v1,num_envs=2."
    )


def test_probe_of_a_wrapper_class_says_what_a_factory_is(capsys):
    """Not "missing a required argument: 'env'. Give them as NAME:key=value": a
    probe FACTORY is given no env."""
    code, out, err = run(["probe", f"{TARGETS}:Undeclared"], capsys)
    assert (code, out) == (EXIT_USAGE, "")
    assert one_error_line(err) == (
        f"'{TARGETS}:Undeclared' is a wrapper class, not a probe FACTORY: a "
        "function that returns a vector env, given its key=value arguments only."
    )


def test_probe_module_that_cannot_be_imported(capsys):
    code, _, err = run(["probe", "no_such_mod_xyz:make"], capsys)
    assert code == EXIT_USAGE
    assert one_error_line(err) == module_not_found(
        "no_such_mod_xyz", "probe FACTORY 'no_such_mod_xyz:make'", "no_such_mod_xyz"
    )
