"""What only a real process shows: a closed stdout, Ctrl-C, both entry points
(``vecmode`` and ``python -m vecmode``) and the import path."""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from tests.cli.helpers import ROOT, TARGETS, run, subprocess_env
from vecmode.cli import COMMANDS, EXIT_FAILED, EXIT_OK, EXIT_PIPE, main


class _ClosedStdout:
    """A stdout whose reader has gone: every write raises EPIPE."""

    def write(self, text):
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self):
        raise BrokenPipeError(32, "Broken pipe")


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["timeline", "--svg", "-"],
        ["table"],
        ["--help"],
        ["check", "CartPole-v1"],
        ["check", "CartPole-v1", "--mode", "SameStep", "--wrap", "NextStepAutoreset"],
        ["conform", "ClipReward:min_reward=0,max_reward=1"],
        ["probe", f"{TARGETS}:cartpole"],
    ],
)
def test_closed_stdout_ends_every_command_quietly(argv, monkeypatch, capsys):
    if argv[:1] == ["probe"]:
        pytest.importorskip("vecmode.probe")
    monkeypatch.setattr(sys, "stdout", _ClosedStdout())
    code = main(argv)
    assert code == EXIT_PIPE
    assert capsys.readouterr().err == ""


@pytest.mark.slow
@pytest.mark.parametrize("argv", [["table"], ["timeline", "--steps", "400"]])
def test_closed_pipe_in_a_real_process_has_no_traceback(argv):
    """``vecmode table | head``: the reader is gone before vecmode writes."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "vecmode", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=subprocess_env(),
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # long before the interpreter has imported vecmode
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait(timeout=60) == EXIT_PIPE
    assert err == ""


def test_keyboard_interrupt_is_exit_code_130(monkeypatch, capsys):
    def interrupted(args):
        raise KeyboardInterrupt

    table = replace(COMMANDS["table"], run=interrupted)
    monkeypatch.setitem(COMMANDS, "table", table)
    assert run(["table"], capsys) == (130, "", "")


def _entry_points() -> list[list[str]]:
    points = [[sys.executable, "-m", "vecmode"]]
    script = shutil.which("vecmode", path=str(Path(sys.executable).parent))
    if script is not None:
        points.append([script])
    return points


@pytest.mark.slow
def test_console_script_and_python_m_behave_identically(capsys):
    """Both find modules in the current directory (``module:Class``), print the
    same and exit with the same code as ``main`` in-process."""
    argv = ["check", "CartPole-v1", "--mode", "Disabled",
            "--wrap", f"{TARGETS}:NextStepOnly"]  # fmt: skip
    expected = run(argv, capsys)
    assert expected[0] == EXIT_FAILED
    for command in _entry_points():
        done = subprocess.run(
            [*command, *argv],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=subprocess_env(),
        )
        assert (done.returncode, done.stdout, done.stderr) == expected, command


@pytest.mark.slow
def test_every_command_imports_module_names_from_the_current_directory(tmp_path):
    """`module:...` names a module in the folder the command runs in, for an env
    id (`timeline`, `check`), a wrapper (`check --wrap`, `conform`) and a factory
    (`probe`), from the console script as from `python -m vecmode`."""
    (tmp_path / "here_mod.py").write_text(
        "import gymnasium as gym\n"
        "import vecmode\n"
        "from vecmode.wrappers import ClipReward\n"
        "gym.register('HereCartPole-v0', entry_point='gymnasium.envs.classic_control"
        ".cartpole:CartPoleEnv', max_episode_steps=5)\n"
        "@vecmode.supports('NextStep')\n"
        "class HereOnlyNextStep(gym.vector.VectorWrapper):\n"
        "    pass\n"
        "class HereClip(ClipReward):\n"
        "    def __init__(self, env):\n"
        "        super().__init__(env, 0.0, 1.0)\n"
        "def factory():\n"
        "    return vecmode.make_vec('CartPole-v1', 2, vectorization_mode='sync',"
        " max_episode_steps=5)\n"
    )
    commands = [
        ["timeline", "here_mod:HereCartPole-v0", "--steps", "3"],
        ["check", "here_mod:HereCartPole-v0", "--mode", "SameStep"],
        ["check", "CartPole-v1", "--wrap", "here_mod:HereClip"],
        ["conform", "here_mod:HereClip"],
        ["probe", "here_mod:factory"],
        # a fresh process knew none of a user's declarations: --import them
        ["table", "--import", "here_mod"],
    ]
    # every command from the console script (python -m puts the folder on
    # sys.path itself), one from python -m
    *others, script = _entry_points()
    runs = [(script, argv) for argv in commands] + [(e, commands[0]) for e in others]
    for entry, argv in runs:
        done = subprocess.run(
            [*entry, *argv],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env={**subprocess_env(), "PYTHONPATH": ""},
            timeout=300,
        )
        assert done.returncode == EXIT_OK, (entry, argv, done.stderr)
        if argv[0] == "table":
            assert "here_mod.HereOnlyNextStep " in done.stdout, done.stdout
