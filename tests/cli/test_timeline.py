"""``vecmode timeline``: the table, the SVG, the action, and the errors of
making and running the env."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET

import gymnasium as gym
import pytest

import vecmode
import vecmode.timeline
from tests.cli.helpers import TARGETS, one_error_line, run
from vecmode.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from vecmode.cli.common import RERUN
from vecmode.cli.spec import literal


@pytest.mark.slow
def test_python_m_vecmode_prints_the_modes_side_by_side():
    out = subprocess.run(
        [sys.executable, "-m", "vecmode"], capture_output=True, text=True, check=True
    ).stdout
    lines = out.splitlines()
    header = next(line for line in lines if line.startswith("call"))
    assert header.split() == ["call", "NextStep", "SameStep", "Disabled"]
    step3 = next(line for line in lines if line.startswith("step 3"))
    # the episode ends on step 3: NEXT_STEP returns s3, SAME_STEP the reset obs
    # with s3 in final_obs, DISABLED s3 and the caller's reset_mask
    assert step3.split()[2:6] == ["s3", "r=1", "trunc", "s0'"]
    assert "final_obs=s3" in step3 and "reset(mask) -> s0'" in step3
    step4 = next(line for line in lines if line.startswith("step 4"))
    assert "r=0" in step4 and "reset step" in step4


def test_no_command_is_the_timeline_of_cartpole(capsys):
    assert run([], capsys) == run(["timeline", "CartPole-v1"], capsys)
    code, out, _ = run([], capsys)
    assert code == EXIT_OK and out.startswith("CartPole-v1, one sub-env")


def test_timeline_of_an_env_that_raises_is_one_line_or_the_traceback(capsys):
    """The sub-env's error in one line (its traceback is in the SubEnvError's
    text, not for the command line); --traceback shows it, without the hint."""
    argv = ["timeline", f"{TARGETS}:CrashesOnStep-v0"]
    code, out, err = run(argv, capsys)
    assert (code, out) == (EXIT_FAILED, "")
    assert one_error_line(err) == (
        f"running '{TARGETS}:CrashesOnStep-v0' raised SubEnvError: sub-env 0 raised "
        f"RuntimeError in step(): the env's own bug{RERUN}."
    )
    code, _, err = run([*argv, "--traceback"], capsys)
    assert code == EXIT_FAILED
    assert err.startswith("Traceback (most recent call last):")
    assert err.endswith("raised RuntimeError in step(): the env's own bug.\n"), err[
        -300:
    ]


def test_timeline_options(capsys):
    code, out, _ = run(
        ["timeline", "CartPole-v1", "--steps", "4", "--max-episode-steps", "2"],
        capsys,
    )
    assert code == EXIT_OK
    assert "truncated after 2 steps" in out
    assert out.splitlines()[0].endswith(", action 1 at every step")  # the default
    step2 = next(line for line in out.splitlines() if line.startswith("step 2"))
    assert "final_obs=s2" in step2
    assert not any(line.startswith("step 5") for line in out.splitlines())
    # the legend follows the episode shown: 2 steps here
    assert "\n\ns2 = step 2 of the first episode, s0' = first observation" in out
    assert "s3 = " not in out


def test_timeline_legend_says_when_no_episode_ended(capsys):
    code, out, _ = run(["timeline", "--steps", "2", "--max-episode-steps", "5"], capsys)
    assert code == EXIT_OK
    assert (
        "\n\ns2 = step 2 of the first episode; no episode ended in the steps shown.\n"
        "Take more --steps, or end episodes sooner (--max-episode-steps).\n"
    ) in out


@pytest.mark.parametrize(
    "env_id", ["CartPole-v1", "FrozenLake-v1", "Blackjack-v1", "Pendulum-v1"]
)
def test_timeline_labels_are_confirmed_by_the_values(env_id, capsys):
    """Labels follow the modes' rules; ``!`` would flag a value that differs."""
    code, out, _ = run(["timeline", env_id, "--steps", "8", "--action", "0"], capsys)
    assert code == EXIT_OK
    assert "!" not in out
    assert out.count("final_obs=") >= 1


def test_timeline_svg_is_written_and_announced(tmp_path, capsys):
    from vecmode.timeline import timeline, timeline_svg

    path = tmp_path / "modes.svg"
    code, out, err = run(["timeline", "--steps", "5", "--svg", str(path)], capsys)
    assert (code, err) == (EXIT_OK, "")
    assert out.splitlines()[-1] == f"wrote the timeline as SVG to {path}"
    assert "call    NextStep" in out  # the text table is printed too
    expected = timeline_svg(
        timeline("CartPole-v1", steps=5),
        "CartPole-v1, one sub-env, episodes truncated after 3 steps, seed 0, "
        "action 1 at every step",
    )
    assert path.read_text(encoding="utf-8") == expected
    ET.fromstring(path.read_bytes())


def test_timeline_svg_dash_prints_only_the_svg(capsys):
    code, out, _ = run(["timeline", "--svg", "-"], capsys)
    assert code == EXIT_OK
    assert out.startswith("<svg ") and out.endswith("</svg>\n")
    root = ET.fromstring(out)
    assert root.tag == "{http://www.w3.org/2000/svg}svg"


def test_timeline_svg_into_a_missing_directory_is_a_usage_error(tmp_path, capsys):
    path = tmp_path / "no" / "such" / "dir" / "modes.svg"
    code, out, err = run(["timeline", "--svg", str(path)], capsys)
    assert (code, out) == (EXIT_USAGE, "")
    assert one_error_line(err) == (
        f"argument --svg: cannot write {str(path)!r}: the directory "
        f"{str(path.parent)!r} does not exist; create it first, or give another "
        "path (see: vecmode timeline --help)"
    )
    assert not path.parent.exists()


def test_timeline_svg_onto_a_directory_is_a_usage_error(tmp_path, capsys):
    code, out, err = run(["timeline", "--svg", str(tmp_path)], capsys)
    assert (code, out) == (EXIT_USAGE, "")  # nothing printed before the error
    assert one_error_line(err).startswith(f"cannot write {str(tmp_path)!r}: ")


def test_timeline_unknown_env_is_exit_code_2(capsys):
    code, out, err = run(["timeline", "NoSuchEnv-v0"], capsys)
    assert (code, out) == (EXIT_USAGE, "")
    line = one_error_line(err)
    assert line.startswith("cannot make 'NoSuchEnv-v0': Environment `NoSuchEnv`")
    assert line.endswith(
        " List the ids with python -c 'import gymnasium; gymnasium.pprint_registry()'"
        "; an id another package registers is written package:Name-v0."
    )


def test_timeline_env_id_typo_gets_gymnasiums_suggestion(capsys):
    code, _, err = run(["timeline", "CartPol-v1"], capsys)
    assert code == EXIT_USAGE
    assert "Did you mean: `CartPole`?" in one_error_line(err)


def test_an_env_id_naming_a_class_says_ids_are_registered(capsys):
    """module:Class (the --wrap form) as ENV_ID: the module is imported, but an
    ENV_ID is an id it registers; the hint used to describe what was typed."""
    code, out, err = run(["timeline", f"{TARGETS}:ShiftObservation"], capsys)
    assert (code, out) == (EXIT_USAGE, "")
    line = one_error_line(err)
    assert line.endswith(
        f" {TARGETS!r} registers no 'ShiftObservation': ENV_ID is an id a module "
        "registers (gymnasium.register('ShiftObservation', entry_point=...)), not a "
        "class."
    ), line


def test_an_unknown_namespace_says_how_to_import_its_package(capsys):
    code, out, err = run(["timeline", "NoSuchSpace/Game-v5"], capsys)
    assert (code, out) == (EXIT_USAGE, "")
    line = one_error_line(err)
    assert line.endswith(
        " If a package registers 'NoSuchSpace' when imported, name it first: "
        "'package:NoSuchSpace/Game-v5' (as 'ale_py:ALE/Pong-v5')."
    ), line


def test_timeline_action_outside_the_action_space_is_a_usage_error(capsys):
    code, out, err = run(["timeline", "--action", "5"], capsys)
    assert (code, out) == (EXIT_USAGE, "")
    assert one_error_line(err) == vecmode.timeline.action_message(
        5, gym.spaces.Discrete(2)
    )


def test_timeline_takes_any_action_space(capsys):
    """A Text action space has no shape: a sample of it is taken (vecmode's own
    np.full(space.shape, 1) raised TypeError, exit code 1, blaming the env)."""
    code, out, err = run(["timeline", "CliTextAction-v0"], capsys)
    assert (code, err) == (EXIT_OK, "")
    assert "final_obs=s3" in out
    sampled = vecmode.timeline.timeline("CliTextAction-v0")["NextStep"][1].action
    assert sampled.startswith("'") and sampled != "''", sampled  # a sample, seed 0
    assert out.splitlines()[0].endswith(f", action {sampled} at every step")
    code, out, err = run(["timeline", "CliTextAction-v0", "--action", "'ab'"], capsys)
    assert (code, err) == (EXIT_OK, "")
    assert out.splitlines()[0].endswith(", action 'ab' at every step")
    code, out, err = run(["timeline", "Pendulum-v1", "--action", "0.5"], capsys)
    assert out.splitlines()[0].endswith(", action [0.5] at every step")
    code, out, err = run(
        ["timeline", "CliTextAction-v0", "--action", "toolong"], capsys
    )
    assert (code, out) == (EXIT_USAGE, "")
    assert one_error_line(err) == vecmode.timeline.action_message(
        "toolong", gym.spaces.Text(4)
    )


@pytest.mark.parametrize("action", ["1.5", "push", "[0, 1]"])
def test_timeline_action_of_the_wrong_kind_is_a_usage_error(action, capsys):
    """--action is a Python literal: one CartPole cannot take is refused."""
    code, out, err = run(["timeline", "--action", action], capsys)
    assert (code, out) == (EXIT_USAGE, "")
    assert one_error_line(err) == vecmode.timeline.action_message(
        literal(action), gym.spaces.Discrete(2)
    )


def test_timeline_env_raising_value_error_is_exit_code_1(capsys):
    """Only an --action that does not fit is a usage error: a ValueError of the
    env's own code is the env's (it was exit code 2, without saying who raised)."""
    code, out, err = run(["timeline", "CliInitError-v0"], capsys)
    assert (code, out) == (EXIT_FAILED, "")
    assert one_error_line(err) == (
        f"running 'CliInitError-v0' raised SubEnvError: sub-env 0 raised ValueError "
        f"in env_fn(): the env's own bad value{RERUN}."
    )


@pytest.mark.parametrize("command", ["timeline", "check"])
def test_an_env_missing_a_dependency_says_what_to_install_in_one_line(command, capsys):
    """Gymnasium's DependencyNotInstalled (Box2D, MuJoCo...) is the user's
    install, not the env's code: a usage error, its message alone, no traceback."""
    code, out, err = run([command, "CliMissingDependency-v0"], capsys)
    assert (code, out) == (EXIT_USAGE, "")
    assert one_error_line(err) == (
        "cannot make 'CliMissingDependency-v0': Box9 is not installed: pip install box9"
    )
