"""``vecmode check``: building a stack from the names given, and its report."""

from __future__ import annotations

import sys
import warnings

import gymnasium as gym
import pytest

import vecmode
from tests.cli.helpers import ROOT, TARGETS, flat, module_not_found, one_error_line, run
from vecmode import MODES
from vecmode.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from vecmode.cli.common import cannot_build_message
from vecmode.errors import WRAP_FORMS

NS, SS, DIS = MODES


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
    assert one_error_line(err) == cannot_build_message(wrap, NS, error)
    code, out, err = run(["check", "CartPole-v1", "--wrap", wrap, "--json"], capsys)
    assert (code, out) == (EXIT_USAGE, "")  # nothing on stdout for a usage error


def test_check_a_bad_argument_is_no_refusal_of_the_mode(capsys):
    """Its error names no mode: a usage error, not "refuses SameStep" (whose
    advice, NextStep, then gave the usage error)."""
    argv = ["check", "CartPole-v1", "--mode", "SameStep",
            "--wrap", "gymnasium:NormalizeObservation:epsilon=-1"]  # fmt: skip
    code, out, err = run(argv, capsys)
    assert (code, out) == (EXIT_USAGE, "")
    assert "its constructor raised InvalidBound: `epsilon`" in one_error_line(err)
    # its own refusal, naming the mode as the enum member does, is a refusal
    argv[-1] = f"{TARGETS}:RefusesSameStepItself"
    code, out, _ = run(argv, capsys)
    assert code == EXIT_FAILED and "refuses SameStep: its constructor raised" in flat(
        out
    )


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


def test_check_defaults_to_the_entry_point_of_an_id_that_has_only_that(capsys):
    """It defaulted to vecmode's sync core, which cannot build such an env: the
    check failed unless --vectorization vector_entry_point was given."""
    code, out, err = run(["check", f"{TARGETS}:ForeignVecOnly-v0"], capsys)
    assert (code, err) == (EXIT_OK, "")
    assert out.splitlines()[0].startswith("ok: the stack runs NextStep; ")
    assert "0  ForeignVectorEnv (tests)  -  " in out
    argv = ["check", f"{TARGETS}:ForeignVecOnly-v0", "--vectorization", "sync"]
    code, out, err = run(argv, capsys)  # asked for: refused, with what to pass
    assert (code, out) == (EXIT_USAGE, "")
    assert "'vector_entry_point' (vecmode check's default for it)" in one_error_line(
        err
    )
    code, out, _ = run(["check", "CartPole-v1"], capsys)  # has both: the core
    assert code == EXIT_OK and "SyncVectorEnv (vecmode)" in out


def test_check_async_over_observations_shared_memory_cannot_hold(capsys):
    """A Graph observation space cannot be held in shared memory: the async env
    is made with shared_memory=False, and stderr says so (the error said "pass
    shared_memory=False", which the command line had no way to)."""
    argv = ["check", "CliGraphObs-v0", "--vectorization", "async", "--mode", "SameStep"]
    code, out, err = run(argv, capsys)
    assert code == EXIT_OK, err
    assert "AsyncVectorEnv (vecmode)" in out
    space = gym.make("CliGraphObs-v0").observation_space
    assert one_error_line(err) == (
        f"note: the observation space {space} cannot be held in shared memory, so "
        "the async env is made with shared_memory=False (observations travel by "
        "pipe)."
    )
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
    message = (
        f"NOT OK: 'NextStepAutoreset' refused to wrap the stack in SameStep: "
        f"{refusal.value}"
    )
    refused, _, built = out.partition("\n\nThe stack built before it:\n")
    assert flat(refused) == flat(message)
    assert "Wrap a vecmode core directly" in flat(refused)  # what to do
    assert built == f"{vecmode.check_stack(envs)}\n"  # no NormalizeReward: not built
    envs.close()


def test_check_undeclared_wrapper_raising_when_built_is_a_usage_error(capsys):
    """Nothing says the class refuses the mode: its error is a build error."""
    spec = f"{TARGETS}:RefusesByItself"
    code, out, err = run(["check", "CartPole-v1", "--wrap", spec], capsys)
    assert (code, out) == (EXIT_USAGE, "")
    assert one_error_line(err) == cannot_build_message(
        spec, NS, ValueError("RefusesByItself works on no env at all")
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


def test_the_docs_document_every_option_of_check():
    """--strict (what fails a CI job on an unregistered wrapper) and --num-envs
    were in --help only."""
    from vecmode.cli import CHECK

    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    row = next(
        line for line in page.splitlines() if line.startswith("| `vecmode check")
    )
    options = [flag for flags, _ in CHECK.arguments for flag in flags]
    assert [flag for flag in options if flag.startswith("--") and flag not in row] == []


def test_check_wrapper_warnings_are_one_line(capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        code, _, err = run(
            ["check", "CartPole-v1", "--wrap", f"{TARGETS}:Warns"], capsys
        )
    assert code == EXIT_OK
    assert err == (
        "vecmode: warning: careful, this is a test (UserWarning)\n"
        "vecmode: warning: in Gymnasium's colours (UserWarning)\n"
    )


def test_check_unknown_env_id(capsys):
    code, out, err = run(["check", "NoSuchEnv-v0", "--wrap", "ClipReward"], capsys)
    assert (code, out) == (EXIT_USAGE, "")
    assert one_error_line(err).startswith("cannot make 'NoSuchEnv-v0': ")
    # an id vecmode cannot parse is a usage error too, not the env's code raising
    code, out, err = run(["check", "gymnasium:CartPole-v1:x=1"], capsys)
    assert (code, out) == (EXIT_USAGE, "")
    assert "has 2 colons: write 'module:EnvName-v0'" in one_error_line(err)
    with pytest.raises(ValueError, match="has 2 colons"):
        vecmode.make_vec("gymnasium:CartPole-v1:x=1", 2)


def test_check_env_id_of_a_module_that_cannot_be_imported(capsys):
    code, _, err = run(["check", "no_such_package_xyz:Thing-v0"], capsys)
    assert code == EXIT_USAGE
    assert one_error_line(err) == module_not_found(
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
    assert one_error_line(err) == (
        "'CollectFrames' is not a vecmode wrapper. Gymnasium has one: write "
        "gymnasium:CollectFrames."
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
    assert one_error_line(err) == module_not_found(
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
    assert one_error_line(err) == (
        f"bad --wrap {spec!r}: {problem}; {WRAP_FORMS} (e.g. NormalizeReward:gamma=0.9)."
    )


def test_check_wrapper_arguments_that_do_not_fit_its_signature(capsys):
    code, _, err = run(
        ["check", "CartPole-v1", "--wrap", "NormalizeReward:gama=0.9"], capsys
    )
    assert code == EXIT_USAGE
    line = one_error_line(err)
    assert line.startswith("'NormalizeReward:gama=0.9': its arguments do not fit ")
    assert "NormalizeReward(env" in line
    assert "unexpected keyword argument 'gama'" in line
    # a missing argument comes first in Python's message: the unknown one is named
    code, _, err = run(
        ["check", "CartPole-v1", "--wrap", "TransformReward:fnuc=abs"], capsys
    )
    assert code == EXIT_USAGE
    line = one_error_line(err)
    assert "missing a required argument: 'func'; and it has no argument 'fnuc'" in line


def test_check_single_env_wrapper_is_a_usage_error(capsys):
    code, _, err = run(
        ["check", "CartPole-v1", "--wrap", "gymnasium.wrappers:ClipReward"], capsys
    )
    assert code == EXIT_USAGE
    cls = gym.wrappers.ClipReward
    assert one_error_line(err) == (
        f"'gymnasium.wrappers:ClipReward' is {cls.__module__}.{cls.__qualname__}, a "
        "wrapper of a single gymnasium.Env, not of a vector env; use a vector "
        "wrapper (a vecmode one, or gymnasium:NAME)."
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


def test_check_imports_the_modules_that_register_third_party_classes(
    tmp_path, monkeypatch, capsys
):
    """A class registered by the user's module was undeclared in a fresh
    process (exit 0): --import runs the registration first, as table's does."""
    (tmp_path / "their_logger_mod.py").write_text(
        "import gymnasium as gym\n"
        "class TheirLogger(gym.vector.VectorWrapper):\n"
        "    pass\n"
    )
    (tmp_path / "my_registrations_mod.py").write_text(
        "import vecmode\n"
        "vecmode.register('their_logger_mod:TheirLogger', ['NextStep'],\n"
        "    wrong={'SameStep': 'It logs the reset observation.'})\n"
    )
    monkeypatch.chdir(tmp_path)
    argv = ["check", "CartPole-v1", "--mode", "SameStep"]
    argv += ["--wrap", "their_logger_mod:TheirLogger"]
    code, out, _ = run(argv, capsys)
    assert code == EXIT_OK and "undeclared" in out, out
    try:
        code, out, _ = run([*argv, "--import", "my_registrations_mod"], capsys)
        assert code == EXIT_FAILED, out
        assert "TheirLogger' refused to wrap the stack in SameStep" in out, out
        assert "It logs the reset observation." in flat(out)
    finally:
        vecmode.unregister("their_logger_mod:TheirLogger")
    code, err = run([*argv, "--import", "no_such_mod_here"], capsys)[::2]
    assert code == EXIT_USAGE and "--import no_such_mod_here" in err, err
