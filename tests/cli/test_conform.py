"""``vecmode conform``: check_wrapper from the command line."""

from __future__ import annotations

import json
import sys

import pytest

import vecmode
from tests.cli import targets
from tests.cli.helpers import TARGETS, flat, one_error_line, run
from vecmode.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from vecmode.cli.common import cannot_build_message
from vecmode.cli.conform import READ_AS_ENV, READ_AS_WRAPPER
from vecmode.testing.wrapper.driver import PARTIAL_RESET_HINT


def test_conform_a_conforming_wrapper_is_exit_code_0(capsys):
    from vecmode.testing import check_wrapper

    code, out, err = run(["conform", "ClipReward:min_reward=0,max_reward=1"], capsys)
    assert (code, err) == (EXIT_OK, "")
    assert ": right in NextStep, SameStep, Disabled " in out.splitlines()[0]
    report = check_wrapper(lambda env: vecmode.wrappers.ClipReward(env, 0, 1))
    assert out.splitlines()[1:] == str(report).splitlines()[1:]


def test_conform_over_torch_batches_proves_the_array_path(capsys):
    """--array-library: check_wrapper over that library's batches; a wrapper that
    reads NumPy is refused there, naming the conversion to use."""
    pytest.importorskip("torch")
    argv = ["conform", "ClipReward:min_reward=0,max_reward=1", "--array-library"]
    code, out, err = run([*argv, "torch"], capsys)
    assert (code, err) == (EXIT_OK, "")
    assert "over torch batches" in out.splitlines()[0]
    argv = ["conform", "FrameStackObservation:stack_size=2", "--array-library"]
    code, out, err = run([*argv, "torch"], capsys)
    assert (code, err) == (EXIT_OK, "")
    code, out, err = run(
        ["conform", "DictInfoToList", "--array-library", "torch"], capsys
    )
    said = one_error_line(err)
    assert code == EXIT_USAGE and "it is not array-native (it reads NumPy)" in said
    # a mode the wrapper refuses is a usage error too (it exited 1, as "raised")
    code, out, err = run(
        ["conform", "vecmode:NextStepAutoreset", "--modes", "SameStep"], capsys
    )
    assert (code, out) == (EXIT_USAGE, "")
    assert "modes asks to prove SameStep, which it does not declare" in err
    # so is one its class refuses by its own error (it was "breaks
    # builds_in_declared_modes", exit 1)
    code, out, err = run(
        ["conform", "gymnasium:NormalizeObservation", "--modes", "SameStep"], capsys
    )
    assert (code, out) == (EXIT_USAGE, "")
    assert "modes asks to prove SameStep, which it does not declare" in err


def test_conform_a_class_uses_its_declaration(capsys):
    code, out, _ = run(["conform", f"{TARGETS}:NextStepOnly"], capsys)
    assert code == EXIT_OK
    assert out.splitlines()[0].startswith("NextStepOnly: right in NextStep (")
    assert "refused at construction, as declared: SameStep, Disabled" in out
    # then one line per property (not one per run; episodic: only when asked),
    # and the limits
    from vecmode.testing import PROPERTIES

    checked = [prop for prop in PROPERTIES if prop != "episodic"]
    lines = out.splitlines()
    assert len(lines) == 1 + len(checked) + 2
    assert lines[-2].startswith("limits: proved in NextStep alone")
    assert lines[-1].startswith("limits: episodic not checked")
    for line, prop in zip(lines[1:], checked, strict=False):
        assert line.startswith(f"  ok  {prop}: ") and len(line) <= 100


def test_conform_a_wrapper_that_does_not_conform_is_exit_code_1(capsys):
    from tests.cli.targets import ShiftObservation
    from vecmode.testing import WrapperReport, check_wrapper

    code, out, err = run(["conform", f"{TARGETS}:ShiftObservation"], capsys)
    assert (code, err) == (EXIT_FAILED, "")
    with pytest.raises(AssertionError) as failure:
        check_wrapper(ShiftObservation)
    assert out == (
        f"NOT OK: {TARGETS}:ShiftObservation does not conform\n\n{failure.value}\n"
    )
    # the property broken first, then the diagnosis, in the user's terms
    assert out.splitlines()[2] == (
        "ShiftObservation breaks mode_equivalence_together (expected: the same "
        "transitions in every mode, ends together)."
    )
    assert "sub-env 0, a real transition (call 3 here" in out.splitlines()[3]
    assert "event" not in out
    # right in the modes where the final observation is the returned one
    code, out, _ = run(
        ["conform", f"{TARGETS}:ShiftObservation", "--modes", "next_step", "DISABLED",
         "NextStep"],
        capsys,
    )  # fmt: skip
    assert code == EXIT_OK  # (a mode given twice is proved once)
    report = check_wrapper(ShiftObservation, modes=["NextStep", "Disabled"])
    assert isinstance(report, WrapperReport)
    assert out == f"{report}\n"


def test_conform_gymnasium_wrapper_by_name(capsys):
    code, out, _ = run(["conform", "gymnasium:NormalizeReward"], capsys)
    assert code == EXIT_FAILED
    assert out.startswith("NOT OK: gymnasium:NormalizeReward does not conform")


@pytest.mark.parametrize("mode", ["SameStep", "Disabled"])
def test_conform_gives_a_mode_asked_for_its_own_verdict_first(mode, capsys):
    """Gymnasium's NormalizeReward is recorded wrong in SameStep and Disabled:
    asked about one, the verdict is that one's."""
    code, out, _ = run(
        ["conform", "gymnasium:NormalizeReward", "--modes", mode], capsys
    )
    assert code == EXIT_FAILED
    assert f"built over a {mode} env: accepted {mode}, in which vecmode's " in out


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
    line = one_error_line(err)
    assert line.startswith("argument --obs-type: invalid choice: 'pixels' (choose from")
    for choice in ("box", "dict", "tuple", "discrete", "image"):
        assert f"'{choice}'" in line


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
    assert "limits: run over vecmode.SyncVectorEnv only" in out
    _, out, _ = run(
        ["conform", "NextStepAutoreset", "--bases", "vecmode.SyncVectorEnv", "--json"],
        capsys,
    )
    assert not any("over gymnasium" in label for label in json.loads(out)["runs"])
    dense = "vecmode.testing.DenseFinalObsVectorEnv"
    code, out, _ = run(
        ["conform", "vecmode.autoreset:GymnasiumFinalObs", "--bases",
         "gymnasium.vector.SyncVectorEnv", dense, "--json"],
        capsys,
    )  # fmt: skip
    assert code == EXIT_OK, out
    assert f"[SameStep over {dense}, staggered episodes]" in json.loads(out)["runs"]
    code, _, err = run(["conform", "ClipReward", "--bases", "envpool"], capsys)
    assert code == EXIT_USAGE
    line = one_error_line(err)
    assert line.startswith("argument --bases: invalid choice: 'envpool' (choose from")
    assert f"'{dense}'" in line


@pytest.mark.parametrize(
    "spec",
    [
        f"{TARGETS}:cartpole:mode=SameStep",
        f"{TARGETS}:no_arguments",
        "gymnasium:make_vec:id=CartPole-v1,num_envs=3",
        f"{TARGETS}:ForeignVectorEnv:num_envs=3",
    ],
)
def test_conform_proves_a_vector_env_as_check_vector_env(capsys, spec):
    """A factory its key=values leave no argument, or a vector env class, builds
    a vector env: conform runs check_vector_env on it, in the mode it declares."""
    from vecmode.cli.spec import bind, resolve
    from vecmode.testing import check_vector_env

    code, out, err = run(["conform", spec], capsys)
    assert (code, err) == (EXIT_OK, "")
    assert (
        out.splitlines() == str(check_vector_env(bind(resolve(spec, "")))).splitlines()
    )
    assert " conforms to " in out.splitlines()[0]


def test_conform_fails_a_vector_env_that_the_probe_passes(capsys):
    """Its final observations are the next episode's first: one episode end looks
    right (the probe's yes), every call's check says no."""
    from vecmode.testing import check_vector_env

    spec = f"{TARGETS}:stale_final_obs"
    assert run(["probe", spec], capsys)[0] == EXIT_OK
    code, out, err = run(["conform", spec], capsys)
    assert (code, err) == (EXIT_FAILED, "")
    with pytest.raises(AssertionError) as failure:
        check_vector_env(targets.stale_final_obs)
    assert out == f"NOT OK: {spec} does not conform\n\n{failure.value}\n"
    assert "info['final_obs'] equals what step() returned" in out
    assert "the reset overwrote the final observation" in out
    code, out, _ = run(["conform", spec, "--json"], capsys)
    document = json.loads(out)
    assert (code, document["ok"], document["wrapper"]) == (EXIT_FAILED, False, None)
    assert (document["env"], document["failure"]) == (spec, str(failure.value))


def test_conform_syntax_errors_name_the_vector_env_forms_too(capsys):
    code, _, err = run(["conform", "x-y:make"], capsys)
    assert code == EXIT_USAGE
    assert one_error_line(err).endswith(
        "; a vector env's factory is module:function (or module:Class)."
    )


def test_conform_options_of_the_other_kind_are_usage_errors(capsys):
    spec = f"{TARGETS}:cartpole"
    code, out, err = run(
        ["conform", spec, "--modes", "NextStep", "--no-env-infos"], capsys
    )
    assert (code, out) == (EXIT_USAGE, "")
    assert one_error_line(err) == (
        f"'{spec}' builds a vector env: --modes and --no-env-infos are for a "
        "wrapper only; drop them."
    )
    code, out, err = run(["conform", "ClipReward:max_reward=1", "--steps", "5"], capsys)
    assert (code, out) == (EXIT_USAGE, "")
    assert one_error_line(err) == (
        "'ClipReward:max_reward=1' is a wrapper: --steps is for a vector env only; "
        "drop it."
    )
    code, out, _ = run(["conform", spec, "--steps", "3"], capsys)  # reaches the check
    assert code == EXIT_FAILED
    assert "0 episode end(s) in 3 steps, fewer than min_episode_ends=2" in out


def test_conform_episodic_checks_each_episode_as_a_fresh_wrapper_s(capsys):
    """--episodic: a frame stack passes, running statistics fail; without it the
    limits say it was not checked; a vector env refuses it."""
    argv = ["conform", "FrameStackObservation:stack_size=2", "--episodic"]
    code, out, _ = run(argv, capsys)
    assert code == EXIT_OK, out
    assert "  ok  episodic: each episode's outputs as from a fresh wrapper" in out
    assert "episodic not checked" not in out
    code, out, _ = run(
        ["conform", "NormalizeObservation", "--episodic", "--json"], capsys
    )
    assert code == EXIT_FAILED
    assert json.loads(out)["failed_property"] == "episodic"
    code, out, _ = run(["conform", "NormalizeObservation"], capsys)
    assert code == EXIT_OK and "limits: episodic not checked" in out
    code, _, err = run(["conform", f"{TARGETS}:cartpole", "--episodic"], capsys)
    assert code == EXIT_USAGE and "--episodic is for a wrapper only" in err


def test_conform_says_how_it_read_a_function_that_failed(capsys):
    """A function its key=values leave the env is a wrapper, else a vector env's
    factory: misread, it failed with an error from deep inside, unexplained. A
    misspelt key=value does not change how it is read."""
    spec = f"{TARGETS}:needs_num_envs"
    code, out, err = run(["conform", spec], capsys)
    assert (code, out) == (EXIT_USAGE, "")
    assert one_error_line(err).startswith(f"cannot build '{spec}' on a test env ")
    assert one_error_line(err).endswith(READ_AS_WRAPPER)
    code, out, err = run(["conform", f"{spec}:num_envs=2,bogus=1"], capsys)
    assert (code, out) == (EXIT_USAGE, "")
    assert one_error_line(err).endswith(
        "got an unexpected keyword argument 'bogus'. Give them as NAME:key=value,..."
    )
    assert run(["conform", f"{spec}:num_envs=2"], capsys)[0] == EXIT_OK
    code, out, err = run(["conform", f"{TARGETS}:wrap_with_defaults"], capsys)
    assert (code, out) == (EXIT_FAILED, "")
    assert one_error_line(err).startswith(
        f"check_vector_env({TARGETS}:wrap_with_defaults) raised TypeError: "
    )
    assert one_error_line(err).endswith(READ_AS_ENV)


def test_conform_of_a_factory_building_no_vector_env(capsys):
    """It takes no env, so it is a vector env's factory: what it returned, and
    what conform takes. Its own error is exit code 1, as for probe."""
    spec = f"{TARGETS}:NOT_CALLABLE"
    code, out, err = run(["conform", spec], capsys)
    assert (code, out) == (EXIT_USAGE, "")
    assert "which cannot be called" in one_error_line(err)
    code, out, err = run(["conform", f"{TARGETS}:returns_none"], capsys)
    assert (code, out) == (EXIT_USAGE, "")
    assert one_error_line(err) == (
        f"conform FACTORY, taking no env to wrap, must build a vector env, but "
        f"{TARGETS}:returns_none returned NoneType. Name a function returning one, "
        "with its arguments, e.g. gymnasium:make_vec:id=CartPole-v1,num_envs=2, or "
        "a wrapper taking the env."
    )
    code, out, err = run(["conform", f"{TARGETS}:raises"], capsys)
    assert (code, out) == (EXIT_FAILED, "")
    assert one_error_line(err) == (
        f"check_vector_env({TARGETS}:raises) raised RuntimeError: the factory's own "
        "bug (rerun with --traceback to see where)." + READ_AS_ENV
    )


def test_a_stack_vecmode_refuses_is_a_build_error_not_a_verdict(capsys):
    """InfoLayoutError is an AssertionError too: it was shown as 'does not
    conform', as if the check had found the stack wrong."""
    code, out, err = run(["conform", f"{TARGETS}:listed_below"], capsys)
    assert (code, out) == (EXIT_FAILED, "")
    assert f"check_vector_env({TARGETS}:listed_below) raised InfoLayoutError" in err


@pytest.mark.parametrize("target", ["Undeclared", "UndeclaredWithArgument:k=2"])
def test_conform_undeclared_class_needs_modes(capsys, target):
    """With key=values too: they skipped the check, and check_wrapper's error
    came out as the class's own (exit code 1), in Python's words."""
    spec = f"{TARGETS}:{target}"
    code, out, err = run(["conform", spec], capsys)
    assert (code, out) == (EXIT_USAGE, "")
    assert one_error_line(err) == (
        f"'{spec}' declares no autoreset modes, so there is nothing "
        "to prove: pass the modes to prove (--modes NextStep ...), or declare them "
        "(@vecmode.supports, or vecmode.register: --import the module that "
        "registers it)."
    )


def test_conform_factory_that_cannot_build_is_a_usage_error(capsys):
    spec = f"{TARGETS}:raises_on_wrap"
    code, out, err = run(["conform", spec], capsys)
    assert (code, out) == (EXIT_USAGE, "")
    assert (
        one_error_line(err)
        == cannot_build_message(spec, None, RuntimeError("the factory's own bug"))
        + READ_AS_WRAPPER
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


def test_conform_imports_the_module_that_registers_the_wrapper(
    capsys, tmp_path, monkeypatch
):
    """check's note says "run vecmode conform X", and conform, without the
    --import that check was given, found X undeclared."""
    spec = f"{TARGETS}:RegisteredElsewhere"
    (tmp_path / "registers_it.py").write_text(
        f"import vecmode\n\nvecmode.register({spec!r}, vecmode.MODES)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        code, _, err = run(["conform", spec], capsys)
        assert code == EXIT_USAGE and "--import the module that registers it" in err
        code, out, err = run(["conform", spec, "--import", "registers_it"], capsys)
        assert (code, err) == (EXIT_OK, "")
        assert out.startswith(
            "RegisteredElsewhere: right in NextStep, SameStep, Disabled"
        )
    finally:
        vecmode.unregister(spec)
        sys.modules.pop("registers_it", None)


def test_conform_tries_building_on_the_base_asked_for(capsys):
    """Whether the wrapper builds at all was tried on vecmode's sync core, whatever
    --bases asked: an adapter that builds over the dense layout's base only was
    "cannot build"."""
    spec = f"{TARGETS}:DenseOnly"
    code, out, err = run(
        ["conform", spec, "--bases", "vecmode.testing.DenseFinalObsVectorEnv"], capsys
    )
    assert (code, err) == (EXIT_OK, "")
    assert out.startswith("DenseOnly: right in SameStep (")
    code, out, err = run(["conform", spec], capsys)  # over vecmode's core first
    assert code == EXIT_USAGE and one_error_line(err).startswith(
        f"cannot build '{spec}' on a test env in any mode: its constructor raised "
        "TypeError: DenseOnly wraps DenseFinalObsVectorEnv only"
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
    assert flat(PARTIAL_RESET_HINT) in text


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
    assert one_error_line(err) == (
        f"module {TARGETS!r} has no attribute 'nop'. Write module:attribute with "
        "the attribute's exact (case-sensitive) name."
    )


def test_conform_compares_an_info_key_the_wrapper_adds(capsys):
    code, out, _ = run(["conform", f"{TARGETS}:CountsCalls"], capsys)
    assert code == EXIT_OK, out  # (not compared by default)
    code, out, _ = run(
        ["conform", f"{TARGETS}:CountsCalls", "--compare-info", "calls"], capsys
    )
    assert code == EXIT_FAILED
    assert "breaks mode_equivalence_together" in out
    assert "field info['calls']: np.int64(5) here, np.int64(4) there" in flat(out)
    assert "SameStep and Disabled agree: NextStep alone differs." in out
    code, _, err = run(
        ["conform", f"{TARGETS}:CountsCalls", "--compare-info", "calsl"], capsys
    )
    assert code == EXIT_USAGE
    assert "--compare-info calsl: no info of the wrapper's had that key" in err
