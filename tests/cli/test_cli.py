"""The vecmode command line: every command, exit code and error message.

Most tests call ``main(argv)`` in-process; a few run ``python -m vecmode`` (and the
console script) in a subprocess, for what only a real process shows: a closed
stdout, the import path, identical behaviour of both entry points.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import types
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import vecmode
import vecmode.timeline
from vecmode import MODES
from vecmode.cli import EXIT_FAILED, EXIT_OK, EXIT_PIPE, EXIT_USAGE, main
from vecmode.modes import AutoresetMode, as_mode

NS, SS, DIS = MODES
ROOT = Path(__file__).resolve().parents[2]
TARGETS = "tests.cli.targets"


def run(argv, capsys):
    """``main(argv)``: (exit code, stdout, stderr)."""
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


# ------------------------------------------------------------------ timeline
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
        f"RuntimeError in step(): the env's own bug{vecmode.cli.RERUN}."
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
    assert one_error_line(err) == vecmode.cli.cli_svg_directory(
        str(path), str(path.parent)
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
    assert "gymnasium.pprint_registry()" in line


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
    assert (
        f"ENV_ID is an id a module registers, not a class: {TARGETS!r} was imported "
        "but registered no 'ShiftObservation'. Register it there "
        "(gymnasium.register('ShiftObservation', entry_point=...))"
    ) in line, line


def test_an_unknown_namespace_says_how_to_import_its_package(capsys):
    code, out, err = run(["timeline", "NoSuchSpace/Game-v5"], capsys)
    assert (code, out) == (EXIT_USAGE, "")
    line = one_error_line(err)
    assert (
        "If an installed package registers the 'NoSuchSpace' namespace when "
        "imported, name it first: 'package:NoSuchSpace/Game-v5'"
    ) in line, line


def test_timeline_action_outside_the_action_space_is_a_usage_error(capsys):
    code, out, err = run(["timeline", "--action", "5"], capsys)
    assert (code, out) == (EXIT_USAGE, "")
    assert one_error_line(err) == vecmode.timeline.timeline_action(
        5, gym.spaces.Discrete(2)
    )


class _SpacesEnv(gym.Env):
    """Observations of ``obs`` (Box or Graph), actions of ``act`` (a Discrete(2),
    or Text(4)); ``init_error``: its constructor raises ValueError."""

    def __init__(self, obs="Box", act="Discrete", init_error=False):
        if init_error:
            raise ValueError("the env's own bad value")
        node = gym.spaces.Box(0, 1, (2,), np.float32)
        self.observation_space = (
            gym.spaces.Graph(node, None) if obs == "Graph" else node
        )
        self.action_space = (
            gym.spaces.Text(4) if act == "Text" else gym.spaces.Discrete(2)
        )

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.observation_space.seed(seed)
        return self.observation_space.sample(), {}

    def step(self, action):
        if not self.action_space.contains(action):
            raise ValueError(f"{action!r} is not in {self.action_space}")
        return self.observation_space.sample(), 1.0, False, False, {}


for _id, _kwargs in (
    ("CliTextAction-v0", {"act": "Text"}),
    ("CliGraphObs-v0", {"obs": "Graph"}),
    ("CliInitError-v0", {"init_error": True}),
):
    if _id not in gym.registry:
        gym.register(_id, entry_point=_SpacesEnv, kwargs=_kwargs)


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
    assert one_error_line(err) == vecmode.timeline.timeline_action(
        "toolong", gym.spaces.Text(4)
    )


@pytest.mark.parametrize("action", ["1.5", "push", "[0, 1]"])
def test_timeline_action_of_the_wrong_kind_is_a_usage_error(action, capsys):
    """--action is a Python literal: one CartPole cannot take is refused."""
    code, out, err = run(["timeline", "--action", action], capsys)
    assert (code, out) == (EXIT_USAGE, "")
    assert one_error_line(err) == vecmode.timeline.timeline_action(
        vecmode.cli._literal(action), gym.spaces.Discrete(2)
    )


def test_timeline_env_raising_value_error_is_exit_code_1(capsys):
    """Only an --action that does not fit is a usage error: a ValueError of the
    env's own code is the env's (it was exit code 2, without saying who raised)."""
    code, out, err = run(["timeline", "CliInitError-v0"], capsys)
    assert (code, out) == (EXIT_FAILED, "")
    assert one_error_line(err) == (
        "running 'CliInitError-v0' raised ValueError: the env's own bad value"
        f"{vecmode.cli.RERUN}."
    )


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


# ------------------------------------------------------------------- version, help
def test_version(capsys):
    code, out, _ = run(["--version"], capsys)
    assert code == EXIT_OK
    assert out == f"vecmode {vecmode.__version__}\n"


def test_help_documents_the_exit_codes_once(capsys):
    code, out, _ = run(["--help"], capsys)
    assert code == EXIT_OK
    epilog = flat(out[out.index("exit codes:") :])
    for part in ("0 ok;", "1 the check or conformance failed", "2 usage error",
                 "a wrapper that cannot be built", "141 stdout closed early"):  # fmt: skip
        assert part in epilog


@pytest.mark.parametrize("command", ["timeline", "table", "check", "conform", "probe"])
def test_command_help_points_to_the_exit_codes(command, capsys):
    """Not the whole paragraph again in every command's help."""
    code, out, _ = run([command, "--help"], capsys)
    assert code == EXIT_OK
    assert out.count("exit codes") == 1
    assert flat(out).endswith("exit codes: see vecmode --help.")


def test_module_docstring_documents_the_exit_codes():
    import vecmode.cli

    doc = flat(vecmode.cli.__doc__ or "")
    for code in ("* 0:", "* 1:", "* 2:", "141 (128 + SIGPIPE)"):
        assert code in doc


def test_unknown_command_is_a_one_line_usage_error(capsys):
    code, out, err = run(["bogus"], capsys)
    assert (code, out) == (EXIT_USAGE, "")
    assert "invalid choice: 'bogus'" in one_error_line(err)


# ------------------------------------------------------------------- table
def test_table_prints_the_registry_as_a_matrix(capsys):
    from vecmode.registry import declarations

    code, out, _ = run(["table"], capsys)
    assert code == EXIT_OK
    lines = out.splitlines()
    assert lines[0].split() == [
        "wrapper",
        "NextStep",
        "SameStep",
        "Disabled",
        "produces",
        "evidence",
    ]
    rows = {line.split()[0]: line.split()[1:] for line in lines[2:] if line.strip()}
    assert rows["vecmode.SameStepAutoreset"] == [
        "refused",
        "refused",
        "ok",
        "SameStep",
        "verified",
    ]
    assert rows["vecmode.DisableAutoreset"] == [
        "ok",
        "refused",
        "ok",
        "Disabled",
        "verified",
    ]
    assert rows["vecmode.wrappers.StatefulWrapper"] == ["ok", "ok", "ok", "declared"]
    assert rows["gymnasium.wrappers.vector.NormalizeReward"][-1] == "verified"
    for name, found in declarations():
        cells = [found.behaviour(m).replace("wrong", "WRONG") for m in MODES]
        for i, mode in enumerate(MODES):  # ok with a caveat (a partial reset)
            if cells[i] == "ok" and mode in found.caveats:
                cells[i] = vecmode.registry.OK_WITH_CAVEAT
        assert rows[name][:3] == cells, name
    assert rows["gymnasium.wrappers.vector.RecordEpisodeStatistics"][:3] == [
        "ok\u2020",
        "ok\u2020",
        "WRONG",
    ]
    assert (
        "gymnasium.wrappers.vector.RecordEpisodeStatistics in NextStep (ok\u2020): "
        "after a partial reset"
    ) in run(["table", "--why"], capsys)[1]


def test_table_why_and_markdown(capsys):
    code, out, _ = run(["table", "--why"], capsys)
    assert code == EXIT_OK
    assert "vecmode.DisableAutoreset in SameStep (refused): A SAME_STEP env" in out
    code, out, _ = run(["table", "--markdown"], capsys)
    lines = out.splitlines()
    assert lines[0] == (
        "| wrapper | NextStep | SameStep | Disabled | produces | evidence |"
    )
    assert lines[2] == (
        "| `vecmode.NextStepAutoreset` | refused | refused | ok | NextStep | verified |"
    )


# ------------------------------------------------------------------- check
@pytest.mark.parametrize(
    ("spelling", "mode"),
    [("NextStep", NS), ("same_step", SS), ("SAME_STEP", SS), ("disabled", DIS)],
)
def test_check_accepts_every_spelling_of_a_mode(spelling, mode, capsys):
    code, out, err = run(["check", "CartPole-v1", "--mode", spelling], capsys)
    assert (code, err) == (EXIT_OK, "")
    assert out.splitlines()[0] == f"ok: the stack runs {mode.value}"


def test_check_default_mode_is_make_vecs(capsys):
    code, out, _ = run(["check", "CartPole-v1"], capsys)
    assert code == EXIT_OK
    assert out.splitlines()[0] == "ok: the stack runs NextStep"


def test_check_prints_the_report_of_the_stack_innermost_first(capsys):
    code, out, err = run(
        ["check", "CartPole-v1", "--mode", "SameStep", "--num-envs", "3",
         "--wrap", "ClipReward:min_reward=0,max_reward=1",
         "--wrap", "RecordEpisodeStatistics"],
        capsys,
    )  # fmt: skip
    assert (code, err) == (EXIT_OK, "")
    envs = vecmode.make_vec(
        "CartPole-v1", num_envs=3, autoreset_mode="SameStep", vectorization_mode="sync"
    )
    envs = vecmode.wrappers.ClipReward(envs, 0, 1)
    envs = vecmode.wrappers.RecordEpisodeStatistics(envs)
    assert out == f"{vecmode.check_stack(envs)}\n"
    envs.close()
    layers = [line.split()[1] for line in out.splitlines()[4:]]
    assert layers == [
        "SyncVectorEnv",
        "SameStepAutoreset",
        "ClipReward",
        "RecordEpisodeStatistics",
    ]


def test_check_passes_the_keyword_arguments(capsys):
    """A wrapper's own validation sees the values: bounds reversed -> it raises
    when built, a usage error with its constructor's message."""
    code, out, err = run(
        ["check", "CartPole-v1", "--wrap",
         "gymnasium:ClipReward:min_reward=1,max_reward=0"],
        capsys,
    )  # fmt: skip
    assert (code, out) == (EXIT_USAGE, "")
    assert one_error_line(err).startswith(
        "cannot build 'gymnasium:ClipReward:min_reward=1,max_reward=0' on the stack "
        "in NextStep: its constructor raised InvalidBound: "
    )
    code, _, _ = run(
        ["check", "CartPole-v1", "--wrap",
         "gymnasium:ClipReward:min_reward=0,max_reward=1"],
        capsys,
    )  # fmt: skip
    assert code == EXIT_OK


@pytest.mark.parametrize(
    ("wrap", "error"),
    [
        ("ClipAction", TypeError("ClipAction requires a Box action space, got "
                                 "<class 'gymnasium.spaces.discrete.Discrete'>")),
        ("gymnasium:NormalizeReward:gamma=abc",
         TypeError("'<=' not supported between instances of 'int' and 'str'")),
        ("ClipReward", gym.error.InvalidBound(
            "Both `min_reward` and `max_reward` cannot be None")),
    ],
)  # fmt: skip
def test_check_a_wrapper_that_cannot_be_built_is_a_usage_error(wrap, error, capsys):
    """Not "NOT OK" and exit 1, as if the mode were the problem: exit 2 with what
    its constructor said."""
    code, out, err = run(["check", "CartPole-v1", "--wrap", wrap], capsys)
    assert (code, out) == (EXIT_USAGE, "")
    assert one_error_line(err) == vecmode.cli.cli_cannot_build(wrap, "NextStep", error)
    code, out, err = run(["check", "CartPole-v1", "--wrap", wrap, "--json"], capsys)
    assert (code, out) == (EXIT_USAGE, "")  # nothing on stdout for a usage error


def test_check_gymnasiums_own_refusal_suggests_vecmodes_wrapper(capsys):
    """Gymnasium's NormalizeObservation raises ValueError in SameStep: the class
    refusing the mode (vecmode's entry says so), not a usage error."""
    argv = ["check", "CartPole-v1", "--mode", "SameStep",
            "--wrap", "gymnasium:NormalizeObservation"]  # fmt: skip
    code, out, err = run(argv, capsys)
    assert (code, err) == (EXIT_FAILED, "")
    refused = flat(out.partition("The stack built before it:")[0])
    assert refused.startswith(
        "NOT OK: 'gymnasium:NormalizeObservation' refuses SameStep: its constructor "
        "raised ValueError: Expected autoreset_mode to be NEXT_STEP or DISABLED"
    )
    assert "Use vecmode.wrappers.NormalizeObservation instead" in refused
    # the same wrapper in a mode it supports
    code, _, _ = run([*argv[:3], "NextStep", *argv[4:]], capsys)
    assert code == EXIT_OK


def test_check_known_wrong_gymnasium_wrapper_suggests_vecmodes(capsys):
    code, out, _ = run(
        ["check", "CartPole-v1", "--mode", "SameStep",
         "--wrap", "gymnasium:NormalizeReward"],
        capsys,
    )  # fmt: skip
    assert code == EXIT_FAILED
    assert "Use vecmode.wrappers.NormalizeReward instead" in flat(out)


def test_check_async_and_vector_entry_point(capsys):
    code, out, _ = run(
        ["check", "CartPole-v1", "--vectorization", "async", "--mode", "Disabled",
         "--wrap", "FrameStackObservation:stack_size=3"],
        capsys,
    )  # fmt: skip
    assert code == EXIT_OK
    assert "AsyncVectorEnv (vecmode)" in out
    code, out, _ = run(
        ["check", "CartPole-v1", "--vectorization", "vector_entry_point"], capsys
    )
    assert code == EXIT_OK
    assert "CartPoleVectorEnv (gymnasium)" in out


def test_check_async_over_observations_shared_memory_cannot_hold(capsys):
    """A Graph observation space cannot be held in shared memory: the async env
    is made with shared_memory=False, and stderr says so (the error said "pass
    shared_memory=False", which the command line had no way to)."""
    argv = ["check", "CliGraphObs-v0", "--vectorization", "async", "--mode", "SameStep"]
    code, out, err = run(argv, capsys)
    assert code == EXIT_OK, err
    assert "AsyncVectorEnv (vecmode)" in out
    space = gym.make("CliGraphObs-v0").observation_space
    assert one_error_line(err) == f"note: {vecmode.cli.cli_no_shared_memory(space)}"
    code, out, err = run([*argv, "--json"], capsys)
    assert code == EXIT_OK and '"ok": true' in out
    assert one_error_line(err).startswith("note: the observation space Graph(")


def test_check_a_mode_the_env_cannot_run_in_is_exit_code_1(capsys):
    code, out, err = run(
        ["check", "CartPole-v1", "--vectorization", "vector_entry_point",
         "--mode", "Disabled"],
        capsys,
    )  # fmt: skip
    assert (code, err) == (EXIT_FAILED, "")
    assert flat(out).startswith(
        "NOT OK: CartPole-v1 (vector_entry_point) cannot run in the mode asked: "
    )


def test_check_that_fails_is_exit_code_1_with_the_report(capsys):
    code, out, err = run(
        ["check", "CartPole-v1", "--mode", "SameStep",
         "--wrap", "gymnasium:NormalizeReward:gamma=0.9"],
        capsys,
    )  # fmt: skip
    assert (code, err) == (EXIT_FAILED, "")
    assert out.splitlines()[0] == (
        "NOT OK: layer 2 NormalizeReward is known-wrong in SameStep"
    )


def test_check_refusing_wrapper_reports_the_stack_built_before_it(capsys):
    code, out, err = run(
        ["check", "CartPole-v1", "--mode", "SameStep",
         "--wrap", "RecordEpisodeStatistics", "--wrap", "NextStepAutoreset",
         "--wrap", "NormalizeReward"],
        capsys,
    )  # fmt: skip
    assert (code, err) == (EXIT_FAILED, "")
    envs = vecmode.wrappers.RecordEpisodeStatistics(
        vecmode.make_vec(
            "CartPole-v1",
            num_envs=2,
            autoreset_mode="SameStep",
            vectorization_mode="sync",
        )
    )
    with pytest.raises(vecmode.IncompatibleModeError) as refusal:
        vecmode.NextStepAutoreset(envs)
    message = vecmode.cli.cli_wrapper_refused("NextStepAutoreset", SS, refusal.value)
    refused, _, built = out.partition("\n\nThe stack built before it:\n")
    assert flat(refused) == flat(message)
    assert "Wrap vecmode.SyncVectorEnv directly" in flat(refused)  # what to do
    assert built == f"{vecmode.check_stack(envs)}\n"  # no NormalizeReward: not built
    envs.close()


def test_check_undeclared_wrapper_raising_when_built_is_a_usage_error(capsys):
    """Nothing says the class refuses the mode: its error is a build error."""
    spec = f"{TARGETS}:RefusesByItself"
    code, out, err = run(["check", "CartPole-v1", "--wrap", spec], capsys)
    assert (code, out) == (EXIT_USAGE, "")
    assert one_error_line(err) == vecmode.cli.cli_cannot_build(
        spec, "NextStep", ValueError("RefusesByItself works on no env at all")
    )
    code, out, err = run(
        ["check", "CartPole-v1", "--wrap", spec, "--traceback"], capsys
    )
    assert (code, out) == (EXIT_USAGE, "")
    assert err.startswith("Traceback (most recent call last):")
    assert 'raise ValueError("RefusesByItself works on no env at all")' in err


def test_check_registry_refusal_of_a_users_wrapper(capsys):
    code, out, _ = run(
        ["check", "CartPole-v1", "--mode", "Disabled",
         "--wrap", f"{TARGETS}:NextStepOnly"],
        capsys,
    )  # fmt: skip
    assert code == EXIT_FAILED
    assert "NextStepOnly cannot wrap an env in mode Disabled" in flat(out)
    code, _, _ = run(
        ["check", "CartPole-v1", "--mode", "NextStep",
         "--wrap", f"{TARGETS}:NextStepOnly"],
        capsys,
    )  # fmt: skip
    assert code == EXIT_OK


def test_check_strict_fails_undeclared_layers(capsys):
    argv = ["check", "CartPole-v1", "--wrap", f"{TARGETS}:Undeclared"]
    code, out, _ = run(argv, capsys)
    assert code == EXIT_OK and "undeclared" in out
    code, out, _ = run([*argv, "--strict"], capsys)
    assert code == EXIT_FAILED
    assert out.startswith("NOT OK: layer 2 Undeclared is undeclared")


def test_check_wrapper_warnings_are_one_line(capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        code, _, err = run(
            ["check", "CartPole-v1", "--wrap", f"{TARGETS}:Warns"], capsys
        )
    assert code == EXIT_OK
    assert err == "vecmode: warning: careful, this is a test (UserWarning)\n"


def test_check_unknown_env_id(capsys):
    code, out, err = run(["check", "NoSuchEnv-v0", "--wrap", "ClipReward"], capsys)
    assert (code, out) == (EXIT_USAGE, "")
    assert one_error_line(err).startswith("cannot make 'NoSuchEnv-v0': ")


def test_check_env_id_of_a_module_that_cannot_be_imported(capsys):
    code, _, err = run(["check", "no_such_package_xyz:Thing-v0"], capsys)
    assert code == EXIT_USAGE
    assert one_error_line(err) == vecmode.cli.cli_module_not_found(
        "no_such_package_xyz",
        "env id 'no_such_package_xyz:Thing-v0'",
        "no_such_package_xyz",
    )


def test_check_unknown_wrapper_name_suggests_close_names(capsys):
    code, out, err = run(["check", "CartPole-v1", "--wrap", "NormaliseReward"], capsys)
    assert (code, out) == (EXIT_USAGE, "")
    line = one_error_line(err)
    assert line.startswith(
        "'NormaliseReward' is not a vecmode wrapper. Did you mean 'NormalizeReward'"
    )
    assert "vecmode table lists the wrappers" in line


def test_check_unknown_wrapper_name_matches_case_insensitively(capsys):
    code, _, err = run(["check", "CartPole-v1", "--wrap", "cliprewards"], capsys)
    assert code == EXIT_USAGE
    assert "Did you mean 'ClipReward'" in one_error_line(err)


def test_check_name_that_only_gymnasium_has_points_there(capsys, monkeypatch):
    """vecmode has every vector wrapper of Gymnasium 1.4; one that a later
    Gymnasium adds is pointed to."""
    import gymnasium.wrappers.vector as vector

    assert set(vector.__all__) <= set(vecmode.wrappers.__all__)
    monkeypatch.setattr(vector, "__all__", [*vector.__all__, "CollectFrames"])
    code, _, err = run(["check", "CartPole-v1", "--wrap", "CollectFrames"], capsys)
    assert code == EXIT_USAGE
    assert one_error_line(err) == vecmode.cli.cli_unknown_wrapper(
        "CollectFrames", [], True
    )


def test_check_unknown_gymnasium_wrapper(capsys):
    code, _, err = run(
        ["check", "CartPole-v1", "--wrap", "gymnasium:NormaliseReward"], capsys
    )
    assert code == EXIT_USAGE
    assert one_error_line(err).startswith(
        "gymnasium.wrappers.vector has no wrapper 'NormaliseReward'. Did you mean "
        "'gymnasium:NormalizeReward'"
    )


def test_check_policies_resolve_by_name(capsys):
    code, out, _ = run(
        ["check", "CartPole-v1", "--mode", "SameStep", "--wrap", "DisableAutoreset"],
        capsys,
    )
    assert code == EXIT_FAILED  # DisableAutoreset refuses SameStep
    assert "DisableAutoreset cannot wrap an env in mode SameStep" in flat(out)


def test_check_module_that_cannot_be_imported(capsys):
    code, _, err = run(["check", "CartPole-v1", "--wrap", "no_such_mod.sub:W"], capsys)
    assert code == EXIT_USAGE
    assert one_error_line(err) == vecmode.cli.cli_module_not_found(
        "no_such_mod.sub", "--wrap 'no_such_mod.sub:W'", "no_such_mod"
    )


def test_check_module_whose_import_raises(tmp_path, monkeypatch, capsys):
    (tmp_path / "broken_cli_module.py").write_text("raise RuntimeError('at import')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    argv = ["check", "CartPole-v1", "--wrap", "broken_cli_module:W"]
    code, _, err = run(argv, capsys)
    assert code == EXIT_USAGE
    line = one_error_line(err)
    assert line.startswith(
        "importing module 'broken_cli_module' for --wrap 'broken_cli_module:W' "
        "raised RuntimeError: at import. "
    )
    sys.modules.pop("broken_cli_module", None)
    code, _, err = run(["--traceback", *argv], capsys)
    assert code == EXIT_USAGE
    assert err.startswith("Traceback (most recent call last):")
    assert err.endswith(f"vecmode: {line}\n")


def test_check_missing_attribute_suggests_close_names(capsys):
    code, _, err = run(
        ["check", "CartPole-v1", "--wrap", "vecmode.wrappers:NormalizeRewards"], capsys
    )
    assert code == EXIT_USAGE
    assert one_error_line(err).startswith(
        "module 'vecmode.wrappers' has no attribute 'NormalizeRewards'. Did you mean "
        "'NormalizeReward'"
    )


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ("NormalizeReward:gamma", "'gamma' is not key=value"),
        ("ClipReward:min_reward=0,max_reward", "'max_reward' is not key=value"),
        ("ClipReward:1min=0", "'1min' is not an argument name"),
        ("NormalizeReward:gamma=0.9,gamma=0.5", "'gamma' given twice"),
        ("NormalizeReward:gamma=", "'gamma' has no value (write gamma='' for '')"),
        (
            "ClipReward:min_reward= ,max_reward=1",
            "'min_reward' has no value (write min_reward='' for '')",
        ),
        ("a.b:C:D:k=1", "more than module:Class before the arguments"),
        (":ClipReward", "a name is empty"),
        ("my-module:Wrapper", "'my-module' is not a module path"),
        ("gymnasium:Clip-Reward", "'Clip-Reward' is not a name"),
    ],
)
def test_check_bad_wrapper_syntax(spec, problem, capsys):
    code, out, err = run(["check", "CartPole-v1", "--wrap", spec], capsys)
    assert (code, out) == (EXIT_USAGE, "")
    assert one_error_line(err) == vecmode.cli.cli_spec_syntax("--wrap", spec, problem)


def test_check_wrapper_arguments_that_do_not_fit_its_signature(capsys):
    code, _, err = run(
        ["check", "CartPole-v1", "--wrap", "NormalizeReward:gama=0.9"], capsys
    )
    assert code == EXIT_USAGE
    line = one_error_line(err)
    assert line.startswith("'NormalizeReward:gama=0.9': its arguments do not fit ")
    assert "NormalizeReward(env" in line
    assert "unexpected keyword argument 'gama'" in line


def test_check_single_env_wrapper_is_a_usage_error(capsys):
    code, _, err = run(
        ["check", "CartPole-v1", "--wrap", "gymnasium.wrappers:ClipReward"], capsys
    )
    assert code == EXIT_USAGE
    assert one_error_line(err) == vecmode.cli.cli_single_env_wrapper(
        "gymnasium.wrappers:ClipReward", gym.wrappers.ClipReward
    )


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("NOT_CALLABLE", "names int 3, which cannot be called"),
        ("not_a_vector_env", "returned ndarray, not a gymnasium.vector.VectorEnv"),
    ],
)
def test_check_wrap_that_is_not_a_wrapper(name, message, capsys):
    code, _, err = run(["check", "CartPole-v1", "--wrap", f"{TARGETS}:{name}"], capsys)
    assert code == EXIT_USAGE
    assert message in one_error_line(err)


def test_check_wrap_with_a_factory_function(capsys):
    code, out, _ = run(
        ["check", "CartPole-v1", "--wrap", f"{TARGETS}:clipped:high=2.5"], capsys
    )
    assert code == EXIT_OK
    assert "ClipReward (vecmode)" in out


# --------------------------------------------------------------- literal values
def test_wrapper_argument_values_are_python_literals_or_strings():
    from vecmode.cli import _split

    names, kwargs = _split(
        "pkg.mod:Cls:a=0.9,b=(1, 2),c=CartPole-v1,d=None,e=-inf,f='x,y:z',g=[1,2],h=''",
        "--wrap",
    )
    assert names == ["pkg.mod", "Cls"]
    assert kwargs == {
        "a": 0.9,
        "b": (1, 2),
        "c": "CartPole-v1",
        "d": None,
        "e": float("-inf"),
        "f": "x,y:z",
        "g": [1, 2],
        "h": "",
    }


# ------------------------------------------------------------------ conform
def test_conform_a_conforming_wrapper_is_exit_code_0(capsys):
    from vecmode.testing import check_wrapper

    code, out, err = run(["conform", "ClipReward:min_reward=0,max_reward=1"], capsys)
    assert (code, err) == (EXIT_OK, "")
    assert ": right in NextStep, SameStep, Disabled (" in out.splitlines()[0]
    report = check_wrapper(lambda env: vecmode.wrappers.ClipReward(env, 0, 1))
    assert out.splitlines()[1:] == str(report).splitlines()[1:]


def test_conform_a_class_uses_its_declaration(capsys):
    code, out, _ = run(["conform", f"{TARGETS}:NextStepOnly"], capsys)
    assert code == EXIT_OK
    assert out.splitlines()[0].startswith("NextStepOnly: right in NextStep (")
    assert "refused at construction, as declared: SameStep, Disabled" in out


def test_conform_a_wrapper_that_does_not_conform_is_exit_code_1(capsys):
    from tests.cli.targets import ShiftObservation
    from vecmode.testing import check_wrapper
    from vecmode.testing.conformance import WrapperReport

    code, out, err = run(["conform", f"{TARGETS}:ShiftObservation"], capsys)
    assert (code, err) == (EXIT_FAILED, "")
    with pytest.raises(AssertionError) as failure:
        check_wrapper(ShiftObservation)
    assert out == (
        f"NOT OK: {TARGETS}:ShiftObservation does not conform\n\n{failure.value}\n"
    )
    # right in the modes where the final observation is the returned one
    code, out, _ = run(
        ["conform", f"{TARGETS}:ShiftObservation", "--modes", "next_step", "DISABLED"],
        capsys,
    )
    assert code == EXIT_OK
    report = check_wrapper(ShiftObservation, modes=["NextStep", "Disabled"])
    assert isinstance(report, WrapperReport)
    assert out == f"{report}\n"


def test_conform_gymnasium_wrapper_by_name(capsys):
    code, out, _ = run(["conform", "gymnasium:NormalizeReward"], capsys)
    assert code == EXIT_FAILED
    assert out.startswith("NOT OK: gymnasium:NormalizeReward does not conform")


def test_conform_options_reach_check_wrapper(capsys):
    code, out, _ = run(
        ["conform", "FlattenObservation", "--obs-type", "dict", "--info-type", "rich",
         "--action-type", "box"],
        capsys,
    )  # fmt: skip
    assert code == EXIT_OK, out
    code, _, err = run(
        ["conform", "FlattenObservation", "--obs-type", "pixels"], capsys
    )
    assert code == EXIT_USAGE
    assert one_error_line(err) == vecmode.cli.cli_choice(
        "--obs-type", "pixels", ("box", "dict", "tuple", "discrete", "image")
    )


def test_conform_compares_the_sub_envs_infos_unless_told_not_to(capsys):
    code, out, _ = run(
        ["conform", f"{TARGETS}:DropsInfos", "--compare-info", "none"], capsys
    )
    assert code == EXIT_FAILED
    assert "field info: the sub-env's info['t'] is missing" in flat(out)
    code, out, _ = run(
        ["conform", f"{TARGETS}:DropsInfos", "--compare-info", "none",
         "--no-env-infos"],
        capsys,
    )  # fmt: skip
    assert code == EXIT_OK, out


def test_conform_runs_over_the_bases_asked_for(capsys):
    """A wrapper that needs vecmode's core fails over the default bases with a
    hint naming --bases, and conforms over vecmode's alone; the dense-layout
    adapter is proven over ALE's layout."""
    code, out, _ = run(["conform", "NextStepAutoreset"], capsys)
    assert code == EXIT_FAILED
    assert "(vecmode conform --bases vecmode.SyncVectorEnv)" in flat(out)
    code, out, _ = run(
        ["conform", "NextStepAutoreset", "--bases", "vecmode.SyncVectorEnv"], capsys
    )
    assert code == EXIT_OK, out
    assert "[Disabled over gymnasium" not in out
    assert "limits: run over vecmode.SyncVectorEnv only" in out
    dense = "vecmode.testing.DenseFinalObsVectorEnv"
    code, out, _ = run(
        ["conform", "vecmode.autoreset:GymnasiumFinalObs", "--bases",
         "gymnasium.vector.SyncVectorEnv", dense],
        capsys,
    )  # fmt: skip
    assert code == EXIT_OK, out
    assert f"[SameStep over {dense}, staggered episodes]" in out
    code, _, err = run(["conform", "ClipReward", "--bases", "envpool"], capsys)
    assert code == EXIT_USAGE
    assert one_error_line(err).startswith("--bases 'envpool' is not one of")


def test_conform_of_a_zero_argument_factory_says_what_conform_takes(capsys):
    code, out, err = run(["conform", f"{TARGETS}:no_arguments"], capsys)
    assert (code, out) == (EXIT_USAGE, "")
    assert one_error_line(err) == vecmode.cli.cli_takes_no_env(
        f"{TARGETS}:no_arguments"
    )


def test_conform_undeclared_class_needs_modes(capsys):
    code, out, err = run(["conform", f"{TARGETS}:Undeclared"], capsys)
    assert (code, out) == (EXIT_USAGE, "")
    assert one_error_line(err) == vecmode.cli.cli_undeclared_wrapper(
        f"{TARGETS}:Undeclared"
    )


def test_conform_factory_that_cannot_build_is_a_usage_error(capsys):
    spec = f"{TARGETS}:raises"
    code, out, err = run(["conform", spec], capsys)
    assert (code, out) == (EXIT_USAGE, "")
    assert one_error_line(err) == vecmode.cli.cli_cannot_build(
        spec, None, RuntimeError("the factory's own bug")
    )
    code, _, err = run(["conform", spec, "--traceback"], capsys)
    assert code == EXIT_USAGE
    assert "Traceback (most recent call last):" in err
    assert 'raise RuntimeError("the factory\'s own bug")' in err
    code, _, err = run(["conform", "ClipReward"], capsys)  # no bounds
    assert code == EXIT_USAGE
    assert one_error_line(err).startswith(
        "cannot build 'ClipReward' on a test env in any mode: its constructor raised "
        "InvalidBound: Both `min_reward` and `max_reward` cannot be None."
    )


def test_conform_gymnasium_normalize_observation_says_what_and_why(capsys):
    """Its refusals of SameStep and Disabled are its own (reported with its
    error), and in NextStep it raises on the kit's partial resets: the failure
    names the call, the error and what partial resets require."""
    code, out, err = run(["conform", "gymnasium:NormalizeObservation"], capsys)
    assert (code, err) == (EXIT_FAILED, "")
    text = flat(out)
    assert text.startswith("NOT OK: gymnasium:NormalizeObservation does not conform")
    assert (
        "[NextStep over vecmode.SyncVectorEnv, staggered episodes], call 5 (reset "
        "with reset_mask=[True, False, False]): raised ValueError: "
        "NormalizeObservation does not support partial resets."
    ) in text
    assert flat(vecmode.testing.conformance.conformance_partial_reset_hint()) in text


def test_conform_gymnasium_record_episode_statistics_fails_for_partial_resets(capsys):
    """Its real flaw: it pops reset_mask from the caller's options (over
    Gymnasium's envs, which pop it too, a partial reset then clears every
    sub-env's sums), not: "it does not refuse Disabled"."""
    code, out, _ = run(["conform", "gymnasium:RecordEpisodeStatistics"], capsys)
    assert code == EXIT_FAILED
    text = flat(out)
    assert (
        "[NextStep over vecmode.SyncVectorEnv, staggered episodes], call 5 (reset "
        "with reset_mask=[True, False, False]), field options: reset() changed the "
        "caller's options: {'reset_mask': array([ True, False, False])} became {}"
    ) in text
    assert "Pass a copy down, options = dict(options)" in text
    assert "does not declare" not in text
    # vecmode's is right, episode statistics compared (the default)
    code, out, _ = run(["conform", "RecordEpisodeStatistics"], capsys)
    assert code == EXIT_OK
    code, _, _ = run(
        ["conform", "gymnasium:RecordEpisodeStatistics", "--compare-info", "none"],
        capsys,
    )
    assert code == EXIT_FAILED  # then: accepts Disabled, recorded as wrong


def test_conform_bad_arguments_and_names(capsys):
    code, _, err = run(["conform", f"{TARGETS}:clipped:low=0"], capsys)
    assert code == EXIT_USAGE
    assert "unexpected keyword argument 'low'" in one_error_line(err)
    code, _, err = run(["conform", "ClipRewad"], capsys)
    assert code == EXIT_USAGE
    assert "Did you mean 'ClipReward'" in one_error_line(err)
    code, _, err = run(["conform", f"{TARGETS}:Nope"], capsys)
    assert code == EXIT_USAGE
    assert one_error_line(err).startswith(f"module '{TARGETS}' has no attribute")
    # a module the target's module imports is no suggestion ('np' for 'nope')
    code, _, err = run(["probe", f"{TARGETS}:nop"], capsys)
    assert code == EXIT_USAGE
    assert one_error_line(err) == vecmode.cli.cli_missing_attribute(TARGETS, "nop", [])


# ------------------------------------------------------------------- probe
def test_probe_finds_the_declared_mode(capsys):
    pytest.importorskip("vecmode.probe")
    from tests.cli.targets import cartpole
    from vecmode.probe import probe_mode

    code, out, err = run(["probe", f"{TARGETS}:cartpole:mode=SameStep"], capsys)
    assert (code, err) == (EXIT_OK, "")
    expected = probe_mode(lambda: cartpole(mode="SameStep"))
    assert expected.mode is SS
    assert out == f"{expected}\n"


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
    assert (got, out) == (code, f"probed {mode} declared {declared}\n")
    [(envs, max_steps, seed)] = calls
    assert (envs.num_envs, max_steps, seed) == (3, 7, 4)
    envs.close()


def test_probe_needs_a_module_path(capsys):
    code, _, err = run(["probe", "CartPole-v1"], capsys)
    assert code == EXIT_USAGE
    assert one_error_line(err) == vecmode.cli.cli_not_a_path(
        "probe", "CartPole-v1", "a callable returning a vector env"
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
        "a function returning one, with its arguments, e.g. vecmode probe "
        "gymnasium:make_vec:id=CartPole-v1,num_envs=2 (for an env id a module "
        "registers: id=module:Name-v0)."
    )


def test_probe_module_that_cannot_be_imported(capsys):
    code, _, err = run(["probe", "no_such_mod_xyz:make"], capsys)
    assert code == EXIT_USAGE
    assert one_error_line(err) == vecmode.cli.cli_module_not_found(
        "no_such_mod_xyz", "probe FACTORY 'no_such_mod_xyz:make'", "no_such_mod_xyz"
    )


# ------------------------------------------------- closed stdout, Ctrl-C, entry points
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
    from vecmode import cli

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setitem(cli._COMMANDS, "table", interrupted)
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


def test_as_mode_spellings_match_the_check_option():
    """The option takes what as_mode takes (and gives its error otherwise)."""
    from vecmode.cli import _mode

    for spelling in ("NextStep", "next_step", "NEXT-STEP", "SameStep", "Disabled"):
        assert _mode(spelling) is as_mode(spelling)
    with pytest.raises(Exception, match="is not an autoreset mode"):
        _mode("sometimes")
    assert AutoresetMode.SAME_STEP is _mode("same step")


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
    for entry in _entry_points():
        for argv in commands:
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
