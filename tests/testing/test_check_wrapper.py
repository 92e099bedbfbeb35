"""check_wrapper: it passes every vecmode wrapper, reports what it proved, and
refuses bad arguments."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import re
import subprocess
import sys
import traceback
import unittest
import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, VectorWrapper

import vecmode
from tests.wrappers.cases import CASES, ToOffset, skip_unless_runnable, to_jax
from vecmode import wrappers as vw
from vecmode._evidence import CONFORMANCE_TESTED
from vecmode.modes import from_dense_finals
from vecmode.testing import (
    PROPERTIES,
    ConformanceError,
    WrapperConformance,
    WrapperReport,
    check_wrapper,
)
from vecmode.testing.wrapper.report import NOT_EPISODIC

ROOT = Path(__file__).resolve().parents[2]

#: the test-env options each catalogue case needs
KINDS = {
    "box": {},
    "rich": {"info_type": "rich"},
    "dict": {"obs_type": "dict"},
    "tuple": {"obs_type": "tuple"},
    "discrete": {"obs_type": "discrete"},
    "image": {"obs_type": "image"},
    "box_action": {"action_type": "box"},
    "render": {"render_mode": "rgb_array", "wrappers": [vw.FinalFrameInfo]},
    "jax": {"wrappers": [to_jax]},
    "offset": {"wrappers": [ToOffset]},
}


def _key(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


#: the autoreset policies test_autoreset_policies_conform_over_the_bases_they_accept
#: proves
POLICIES = (
    vecmode.NextStepAutoreset,
    vecmode.SameStepAutoreset,
    vecmode.DisableAutoreset,
)


#: classes whose check_wrapper run is in another test module (not a catalogue
#: case: no Gymnasium counterpart), which asserts it is in CONFORMANCE_TESTED
PROVEN_ELSEWHERE = (
    vw.PPOStack,  # tests/wrappers/test_ppo_stack.py::test_conforms_in_every_mode
    # test_the_dense_layout_adapter_conforms_over_the_dense_base (below)
    vecmode.autoreset.GymnasiumFinalObs,
    # test_the_batch_adapter_conforms_in_every_mode (below; over EnvPool, whose
    # conventions it changes: tests/registry/test_env_classes.py)
    vecmode.autoreset.GymnasiumBatch,
)


def _case_class(case) -> type:
    """The class a catalogue case builds (without building a class given as
    such: the jax ones import jax, which this process must not; nor a case whose
    optional library is missing: the vecmode wrapper of the case's name)."""
    if isinstance(case.wrap, type):
        return case.wrap
    if any(importlib.util.find_spec(m) is None for m in case.requires):
        return getattr(vw, case.name)
    from tests.wrappers.cases import vecmode_base

    wrapped = case.wrap(vecmode_base(case.env, AutoresetMode.NEXT_STEP))
    wrapped.close()
    return type(wrapped)


def test_the_verified_claim_is_what_the_conformance_tests_prove():
    """vecmode.check_stack reports vecmode's own wrappers as verified because the
    tests here prove them: the classes it names are exactly those the catalogue
    and the policy test run check_wrapper on, and every public wrapper of
    vecmode is one of them (the base classes, for subclassing, are not)."""
    proven = {_key(_case_class(case)) for case in CASES} | {
        _key(cls) for cls in (*POLICIES, *PROVEN_ELSEWHERE)
    }
    assert proven == CONFORMANCE_TESTED
    bases = {
        vw.ObservationWrapper,
        vw.ActionWrapper,
        vw.RewardWrapper,
        vw.StatefulWrapper,
    }
    public = {
        _key(obj)
        for module in (vecmode, vw)
        for obj in (getattr(module, name) for name in module.__all__)
        if isinstance(obj, type) and issubclass(obj, VectorWrapper) and obj not in bases
    }
    assert public <= CONFORMANCE_TESTED, sorted(public - CONFORMANCE_TESTED)
    for key in CONFORMANCE_TESTED:
        module, _, name = key.partition(":")
        cls = getattr(importlib.import_module(module), name)
        assert vecmode.registry.evidence(cls) is vecmode.registry.Evidence.VERIFIED, key
    for base in bases:
        assert vecmode.registry.evidence(base) is vecmode.registry.Evidence.DECLARED, (
            base
        )


@pytest.mark.parametrize("case", CASES, ids=str)
def test_every_vecmode_wrapper_conforms(case):
    """Each is episodic too (its outputs depend on the current episode alone), but
    the running statistics (checked to fail in test_wrapper_episodic.py)."""
    skip_unless_runnable(case)
    running = case.name in ("NormalizeObservation", "NormalizeReward")
    report = check_wrapper(case.wrap, episodic=not running, **KINDS[case.env])
    assert isinstance(report, WrapperReport)
    assert _key(report.wrapper_class) in CONFORMANCE_TESTED
    assert report.modes == tuple(AutoresetMode)
    assert report.refused == ()
    # 2 schedules x 3 modes x 2 base envs, and the staggered one truncated by
    # the env where the caller cuts it, x 3 modes; all but one compared; and
    # reset() after an end in NextStep and Disabled, the second compared; an
    # array-native wrapper's, then over torch batches over vecmode's env alone;
    # an episodic one's, a fresh wrapper from episode 2 per library, compared over
    # the 6 transitions after the first episode's 3
    cls = report.wrapper_class  # (a conversion: over what it converts from only)
    native = vecmode.registry.declaration(cls).array_native
    native = native and not getattr(cls, "converts_arrays", False)
    box = case.env in ("box", "rich", "image", "box_action", "render", "jax")
    arrays = native and box and importlib.util.find_spec("torch") is not None
    fresh = 0 if running else 1 + bool(arrays)
    assert len(report.runs) == (28 if arrays else 17) + fresh, report.runs
    assert report.transitions == ((22 if arrays else 14) * 9 + fresh * 6) * 3
    assert ("over NumPy and torch batches" in report.summary) == bool(arrays)
    assert report.batch_dependent == running
    assert ("episodic" in report.properties) != running


def test_a_stack_conforms_and_the_report_reads_well():
    report = check_wrapper(
        lambda env: vw.NormalizeReward(vw.FrameStackObservation(env, 2), gamma=0.9)
    )
    assert report.wrapper == "NormalizeReward(FrameStackObservation)"
    assert report.batch_dependent  # found on the outermost layer that says
    text = str(report)
    assert text.splitlines()[0] == report.summary
    assert "[NextStep over vecmode.SyncVectorEnv, episodes ending together]" in (
        report.runs
    )
    assert "[SameStep over gymnasium.vector.SyncVectorEnv, staggered episodes]" in (
        report.runs
    )
    # one line per property checked (episodic: only when asked), in their order,
    # each at most 100 characters
    assert report.properties == tuple(p for p in PROPERTIES if p != "episodic")
    lines = text.splitlines()[1 : 1 + len(report.properties)]
    assert [line.split(":")[0] for line in lines] == [
        f"  ok  {p}" for p in report.properties
    ]
    assert max(len(line) for line in lines) <= 100
    assert not any(run in text for run in report.runs)  # the runs: report.runs
    assert "batch-dependent" in text


def test_declared_modes_only_and_refusals_reported():
    @vecmode.supports("NextStep", "Disabled")
    class Scale(vw.RewardWrapper):
        def rewards(self, rewards):
            return rewards * 2

    report = check_wrapper(Scale)
    assert report.modes == (AutoresetMode.NEXT_STEP, AutoresetMode.DISABLED)
    assert report.refused == (AutoresetMode.SAME_STEP,)
    assert "refused at construction, as declared: SameStep" in str(report)
    one = check_wrapper(Scale, modes=["Disabled"])
    assert one.modes == (AutoresetMode.DISABLED,)


def test_the_report_claims_no_declaration_or_comparison_it_did_not_make():
    """An undeclared wrapper declares no mode (and accepts every one); proved in
    one mode, nothing is compared across modes."""

    class Plain(VectorWrapper):
        """Declares nothing."""

    text = str(check_wrapper(Plain, modes=["NextStep", "SameStep"]))
    assert (
        "  ok  refuses_undeclared_modes: declares no mode, so none to refuse (it "
        "accepts every mode)\n" in text
    ), text
    text = str(
        check_wrapper(vecmode.supports(*vecmode.MODES)(Plain), modes=["NextStep"])
    )
    for prop in ("mode_equivalence_together", "mode_equivalence_staggered"):
        assert f"  ok  {prop}: one mode: nothing to compare across modes\n" in text
    assert "refuses_undeclared_modes: declares every mode: none to refuse" in text


def test_check_wrapper_s_docstring_names_every_argument():
    doc = check_wrapper.__doc__.split("Args:")[1].split("Raises:")[0]
    named = re.findall(r"^        (\w+): ", doc, flags=re.MULTILINE)
    assert named == list(inspect.signature(check_wrapper).parameters)


# ------------------------------------------------ policies and adapters
def test_autoreset_policies_conform_over_the_bases_they_accept():
    """A policy produces its own mode (declared ``output``): events are read by it."""
    report = check_wrapper(vecmode.SameStepAutoreset)
    assert report.modes == (AutoresetMode.DISABLED,)
    assert report.wrapper_class is vecmode.SameStepAutoreset
    report = check_wrapper(vecmode.DisableAutoreset)
    assert report.modes == (AutoresetMode.NEXT_STEP, AutoresetMode.DISABLED)
    assert report.wrapper_class is vecmode.DisableAutoreset
    with pytest.raises(AssertionError) as caught:
        check_wrapper(vecmode.NextStepAutoreset)
    assert (
        "[Disabled over gymnasium.vector.SyncVectorEnv, episodes ending together]: "
        "was not built (it is in Disabled over vecmode.SyncVectorEnv): "
        "IncompatibleModeError: NextStepAutoreset cannot wrap this env, although it "
        "supports its mode "
        "Disabled: NEXT_STEP must reset a sub-env without stepping it"
    ) in str(caught.value)
    report = check_wrapper(vecmode.NextStepAutoreset, bases=["vecmode.SyncVectorEnv"])
    assert report.modes == (AutoresetMode.DISABLED,)
    assert report.wrapper_class is vecmode.NextStepAutoreset
    assert all("gymnasium" not in run for run in report.runs)


def test_the_batch_adapter_conforms_in_every_mode():
    """GymnasiumBatch over envs already in Gymnasium's conventions changes
    nothing, in every mode: the same transitions, masked resets included."""
    report = check_wrapper(vecmode.autoreset.GymnasiumBatch)
    assert report.modes == tuple(AutoresetMode)
    assert report.refused == ()


DENSE_BASES = [
    "gymnasium.vector.SyncVectorEnv",
    "vecmode.testing.DenseFinalObsVectorEnv",
]


@pytest.mark.parametrize("obs_type", ["box", "image"])
def test_the_dense_layout_adapter_conforms_over_the_dense_base(obs_type):
    """GymnasiumFinalObs over ALE's dense layout gives the same transitions (final
    observations included) as Gymnasium's env in its own layout; the infos of an
    ended step are not compared over the dense base (it drops them), the others
    are."""
    report = check_wrapper(
        vecmode.autoreset.GymnasiumFinalObs,
        bases=DENSE_BASES,
        obs_type=obs_type,
        info_type="rich",
    )
    assert report.modes == (AutoresetMode.SAME_STEP,)
    assert report.refused == (AutoresetMode.NEXT_STEP, AutoresetMode.DISABLED)
    assert sum("DenseFinalObsVectorEnv" in run for run in report.runs) == 2
    # a vecmode wrapper reads Gymnasium's layout: over the dense base, it refuses
    with pytest.raises(
        AssertionError, match="reports SameStep's final observations as one dense array"
    ):
        check_wrapper(vw.NormalizeObservation, bases=DENSE_BASES)


@vecmode.supports("SameStep", output="SameStep")
class ReadsDenseRowsOfEverySubEnv(vecmode.autoreset.GymnasiumFinalObs):
    """A wrong adapter: every row of the dense array as a final observation."""

    def _step_result(self, result):
        obs, rewards, terminations, truncations, infos = result
        everyone = np.ones_like(terminations)
        return (
            obs,
            rewards,
            terminations,
            truncations,
            from_dense_finals(infos, everyone),
        )


@vecmode.supports("SameStep", output="SameStep")
class ReadsResetObsAsFinal(vecmode.autoreset.GymnasiumFinalObs):
    """A wrong adapter: the returned (reset) observations as final ones."""

    def _step_result(self, result):
        obs, rewards, terminations, truncations, infos = result
        if "final_obs" in infos and "_final_obs" not in infos:  # the dense layout
            infos = {**infos, "final_obs": np.array(obs, copy=True)}
        return super()._step_result((obs, rewards, terminations, truncations, infos))


@pytest.mark.parametrize(
    ("adapter", "found"),
    [
        (
            ReadsDenseRowsOfEverySubEnv,
            (
                "field info['_final_obs'], sub-env 0: expected False, got True",
                "marking exactly the sub-envs whose episode ended",
            ),
        ),
        (
            ReadsResetObsAsFinal,
            (
                "field next_obs: [-100.5  101.5 -100.5] here, [-100.5  100.5 -103.5] there",
                "vecmode.modes.from_dense_finals does it",
            ),
        ),
    ],
)
def test_a_wrong_dense_layout_adapter_fails_over_the_dense_base(adapter, found):
    """Each wrong translation is caught over the dense base, naming the field and
    what to do; it passes over Gymnasium's layout alone, where the adapter is the
    identity."""
    check_wrapper(adapter, bases=["gymnasium.vector.SyncVectorEnv"])
    with pytest.raises(
        AssertionError, match=r"over vecmode\.testing\.DenseFinalObs"
    ) as caught:
        check_wrapper(adapter, bases=DENSE_BASES)
    for text in found:
        assert text in str(caught.value), str(caught.value)


# ------------------------------------------------ limits and record()
@vecmode.supports("Disabled")
class KeepsEpisodeCountsOverMaskedResets(VectorWrapper):
    """Wrong: reward + 0.001 x the steps of the episode, whose count only a full
    reset() clears."""

    def __init__(self, env):
        super().__init__(env)
        self.steps = np.zeros(env.num_envs)

    def reset(self, *, seed=None, options=None):
        if not (options and "reset_mask" in options):
            self.steps[:] = 0
        return self.env.reset(seed=seed, options=options)

    def step(self, actions):
        obs, rewards, *rest = self.env.step(actions)
        self.steps += 1
        return obs, rewards + 0.001 * self.steps, *rest


def test_a_proof_in_one_mode_says_what_it_cannot_see():
    """A wrapper declaring Disabled alone compares masked resets only with masked
    resets: its state kept over them is not seen, and the report says so (the same
    wrapper declaring every mode fails)."""
    report = check_wrapper(KeepsEpisodeCountsOverMaskedResets)
    assert report.modes == (AutoresetMode.DISABLED,)
    one_mode, masked = report.limits[:2]
    assert one_mode.startswith("proved in Disabled alone: its runs are compared with")
    assert masked.startswith("every mode proved has the caller reset ended sub-envs")
    assert "limits: every mode proved has the caller reset" in str(report)
    every_mode = vecmode.supports(*vecmode.MODES)(
        type("EveryMode", (KeepsEpisodeCountsOverMaskedResets,), {})
    )
    with pytest.raises(AssertionError, match="NEXT_STEP's reset step"):
        check_wrapper(every_mode)


@vecmode.supports("Disabled")
class ReadsTheMaskTooLate(VectorWrapper):
    """Wrong over Gymnasium's envs, which pop options['reset_mask']: reward + 0.001
    x the steps of the episode, the count cleared where the mask says, read after
    the env has seen the options."""

    def __init__(self, env):
        super().__init__(env)
        self.steps = np.zeros(env.num_envs)

    def reset(self, *, seed=None, options=None):
        result = self.env.reset(seed=seed, options=options)
        mask = (options or {}).get("reset_mask")
        self.steps[slice(None) if mask is None else mask] = 0
        return result

    def step(self, actions):
        obs, rewards, *rest = self.env.step(actions)
        self.steps += 1
        return obs, rewards + 0.001 * self.steps, *rest


def test_record_refuses_a_proof_that_left_out_a_base_the_wrapper_builds_over():
    with pytest.raises(AssertionError, match=r"over gymnasium\.vector\.SyncVec"):
        check_wrapper(ReadsTheMaskTooLate)
    report = check_wrapper(ReadsTheMaskTooLate, bases=["vecmode.SyncVectorEnv"])
    assert report.limits[-1] == (
        "run over vecmode.SyncVectorEnv only, not over gymnasium.vector.SyncVectorEnv; "
        "record() refuses this proof if the wrapper can be built over those."
    )
    with pytest.raises(ValueError, match="can also be built over gymnasium"):
        report.record()
    assert vecmode.registry.evidence(ReadsTheMaskTooLate).value == "declared"
    # a policy that cannot wrap Gymnasium's env is proved where it can
    report = check_wrapper(vecmode.NextStepAutoreset, bases=["vecmode.SyncVectorEnv"])
    assert report.record() is report


@vecmode.supports(*vecmode.MODES, array_native=True)
class Negates(vw.ObservationWrapper):
    def observations(self, observations):
        return -observations


def test_record_of_an_array_native_class_refuses_a_base_left_out_as_any():
    """Its report builds the test envs to see where it can be built: the
    array run's note in their options made that a TypeError."""
    report = check_wrapper(Negates, bases=["vecmode.SyncVectorEnv"])
    with pytest.raises(ValueError, match="can also be built over gymnasium"):
        report.record()
    said = check_wrapper(Negates, array_library="numpy").limits
    assert said == (
        NOT_EPISODIC,
        "declares array_native, but was run over NumPy batches only "
        "(array_library='numpy').",
    )


class AddsAnInfo(vw.StatefulWrapper):
    """info["disc_return"], which the default compare_info does not read."""

    def _step_result(self, result):
        obs, rewards, terms, truncs, infos = super()._step_result(result)
        real = np.asarray(self.boundary.real)
        added = {"disc_return": np.where(real, rewards, 0.0), "_disc_return": real}
        return obs, rewards, terms, truncs, {**infos, **added}


def test_the_limits_name_the_info_keys_it_adds_that_are_not_compared():
    """Not the env's own (rich infos), nor masks; record() still records it."""
    unread = (
        "info keys it adds that compare_info does not read, so not compared: "
        "disc_return (pass compare_info=... to compare them; vecmode conform "
        "--compare-info KEY)."
    )
    report = check_wrapper(AddsAnInfo, info_type="rich")
    assert report.limits == (NOT_EPISODIC, unread)
    assert report.record() is report
    row = vecmode.check_stack(AddsAnInfo(vecmode.make_vec("CartPole-v1", 2)))[-1]
    assert row.evidence_note.endswith("; info keys not compared: disc_return)")
    no_info = check_wrapper(AddsAnInfo, compare_info=None, env_infos=False)
    assert no_info.limits == (NOT_EPISODIC, unread)
    read = check_wrapper(AddsAnInfo, compare_info=lambda info: info.get("disc_return"))
    assert read.limits == (NOT_EPISODIC,)


class TestTheMixin(WrapperConformance):
    """Collected by pytest: the mixin's tests, one per property, run here."""

    check_options = {"obs_type": "image"}

    def make_wrapper(self, env):
        return vw.GrayscaleObservation(env)


class TestTheMixinUnderUnittest(WrapperConformance, unittest.TestCase):
    """Mixed into unittest's TestCase (or absltest's), as dm_env's mixin is."""

    def make_wrapper(self, env):
        return vw.ClipReward(env, 0.0, 1.0)


def test_the_mixin_runs_under_unittest():
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(TestTheMixinUnderUnittest)
    result = unittest.TestResult()
    suite.run(result)
    assert result.wasSuccessful(), result.errors + result.failures
    assert result.testsRun == len(PROPERTIES)
    assert [test._testMethodName for test, _ in result.skipped] == ["test_episodic"]


@vecmode.supports(*vecmode.MODES)
class RewardPlusOne(VectorWrapper):
    """Wrong in NextStep only at its reset step: r + 1 there invents a reward."""

    def step(self, actions):
        obs, rewards, *rest = self.env.step(actions)
        return obs, rewards + 1, *rest


def test_the_mixin_has_one_test_per_property_and_a_report():
    tests = {name for name in dir(WrapperConformance) if name.startswith("test_")}
    assert tests == {f"test_{prop}" for prop in PROPERTIES}
    report = TestTheMixin().conformance_report()
    assert report.wrapper == "GrayscaleObservation"
    assert report.modes == tuple(AutoresetMode)


def test_the_mixin_fails_the_test_of_the_broken_property_alone():
    """The failure is in the test named after the property; every other test
    checks its own property alone, and passes."""

    class Broken(WrapperConformance):
        def make_wrapper(self, env):
            return RewardPlusOne(env)

    with pytest.raises(ConformanceError, match="NEXT_STEP's reset step") as caught:
        Broken().test_reset_step_stays_empty()
    assert caught.value.property == "reset_step_stays_empty"
    for prop in PROPERTIES:
        if prop not in ("reset_step_stays_empty", "episodic"):  # (episodic: not asked)
            getattr(Broken(), f"test_{prop}")()
    with pytest.raises(ConformanceError, match="NEXT_STEP's reset step"):
        Broken().conformance_report()
    with pytest.raises(NotImplementedError, match="must define make_wrapper"):
        WrapperConformance().test_results_kept()


def test_a_factory_may_reset_and_step_the_env_it_wraps():
    """It advanced the test sub-envs' schedules, so its runs differed from
    each other: a correct wrapper broke cut_like_truncated."""

    def make(env):
        wrapped = vw.ClipReward(env, 0.0, 1.0)
        wrapped.reset(seed=5)  # to read a first observation, say
        wrapped.step(wrapped.action_space.sample())
        return wrapped

    report = check_wrapper(make)
    alone = check_wrapper(lambda env: vw.ClipReward(env, 0.0, 1.0))
    assert (report.modes, report.transitions) == (alone.modes, alone.transitions)


def test_the_mixins_options_are_read_once_and_its_errors_stay_short():
    """A generator in ``check_options`` served the first check only (the others
    proved "no mode"); properties left out were skipped as "episodic not
    checked"; the class's one error, raised by each test, grew a traceback."""

    class Generator(WrapperConformance):
        check_options = {"modes": (m for m in ("NextStep", "SameStep"))}

        def make_wrapper(self, env):
            return RewardPlusOne(env)

    with pytest.raises(ConformanceError, match="NEXT_STEP's reset step"):
        Generator().test_reset_step_stays_empty()
    Generator().test_results_kept()  # its own proof, over the same two modes

    class Some(WrapperConformance):
        check_options = {"properties": ["results_kept"]}

        def make_wrapper(self, env):
            return vw.ClipReward(env, 0.0, 1.0)

    Some().test_results_kept()
    with pytest.raises(
        unittest.SkipTest, match=r"not in check_options\['properties'\]"
    ):
        Some().test_no_writes_below()

    class All(Some):  # (properties=None: a TypeError once)
        check_options = {"properties": None}

    All().test_no_writes_below()
    with pytest.raises(unittest.SkipTest, match="episodic not checked"):
        All().test_episodic()

    class Misspelt(WrapperConformance):
        check_options = {"episodc": True}

        def make_wrapper(self, env):
            return vw.ClipReward(env, 0.0, 1.0)

    sizes = set()
    for prop in ("results_kept", "no_writes_below", "episodic"):
        with pytest.raises(TypeError, match="episodc") as caught:
            getattr(Misspelt(), f"test_{prop}")()
        sizes.add(len(traceback.extract_tb(caught.value.__traceback__)))
    assert len(sizes) == 1, sizes


def test_the_mixin_warns_of_the_info_keys_it_did_not_compare():
    """report.limits said so, but the mixin showed no limit: a wrong key the
    wrapper adds passed unseen."""

    class Unread(WrapperConformance):
        make_wrapper = staticmethod(AddsAnInfo)

    with pytest.warns(UserWarning, match=r"^Unread: AddsAnInfo adds info keys "):
        Unread().test_results_kept()

    class Read(Unread):
        check_options = {"compare_info": lambda info: info.get("disc_return")}

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Read().test_results_kept()


@vecmode.supports(*vecmode.MODES)
class RaisesInStep(VectorWrapper):
    """Wrong everywhere: its step raises."""

    def step(self, actions):
        raise RuntimeError("this step always fails")


def test_a_property_that_cannot_be_checked_is_skipped_naming_the_one_that_fails():
    """One cause, one failure: the other tests say which property failed first."""

    class Raising(WrapperConformance):
        def make_wrapper(self, env):
            return RaisesInStep(env)

    with pytest.raises(ConformanceError, match="this step always fails") as caught:
        Raising().test_handles_every_call()
    assert caught.value.property == "handles_every_call"
    cause = caught.value.__cause__  # the wrapper's own, with its traceback
    assert isinstance(cause, RuntimeError), cause
    last = traceback.extract_tb(cause.__traceback__)[-1]
    assert (last.filename, last.name) == (__file__, "step")
    for prop in ("results_kept", "mode_equivalence_together", "no_writes_below"):
        with pytest.raises(unittest.SkipTest, match="breaks handles_every_call first"):
            getattr(Raising(), f"test_{prop}")()


def test_a_mixin_failure_starts_with_the_diagnosis(tmp_path):
    """pytest shows the property broken, the call, sub-env and field right under
    the test's line, with none of the kit's frames."""
    (tmp_path / "test_broken.py").write_text(
        "from tests.testing.test_check_wrapper import RewardPlusOne\n"
        "from vecmode.testing import WrapperConformance\n\n\n"
        "class TestBroken(WrapperConformance):\n"
        "    def make_wrapper(self, env):\n"
        "        return RewardPlusOne(env)\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
         str(tmp_path), "-k", "reset_step_stays_empty or results_kept"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"},
    )  # fmt: skip
    lines = done.stdout.splitlines()
    assert "1 failed, 1 passed" in lines[-1], done.stdout
    header = next(i for i, line in enumerate(lines) if "TestBroken.test_" in line)
    first = next(i for i, line in enumerate(lines) if line.startswith("E   "))
    assert first - header <= 6, done.stdout
    assert lines[first].endswith(
        "ConformanceError: RewardPlusOne breaks reset_step_stays_empty (expected: "
        "NextStep's reset step: reward 0, flags False, no episode in its info)."
    ), done.stdout
    assert (
        "call 4 (step), sub-env 0: NEXT_STEP's reset step returned reward 1.0"
        in (lines[first + 1])
    )
    assert "testing/wrapper/driver.py" not in done.stdout  # no kit frames


def test_a_check_of_some_properties_checks_those_only():
    report = check_wrapper(RewardPlusOne, properties=["results_kept"])
    assert report.properties == ("results_kept",)
    assert report.limits == (
        "checked results_kept only (properties=None: all).",
        NOT_EPISODIC,
    )
    with pytest.raises(ValueError, match="checked results_kept only; record a check"):
        report.record()
    with pytest.raises(ConformanceError) as caught:
        check_wrapper(RewardPlusOne, properties=["reset_step_stays_empty"])
    assert caught.value.property == "reset_step_stays_empty"
    with pytest.raises(ValueError, match="properties must be a list naming some of"):
        check_wrapper(RewardPlusOne, properties=["fast"])


def test_generators_as_arguments_are_read_whole_by_every_pass():
    once = check_wrapper(RewardPlusOne, properties=(p for p in ["results_kept"]))
    assert once.properties == ("results_kept",)
    pytest.importorskip("torch")  # an array-native class: proved over torch too
    report = check_wrapper(
        lambda env: vecmode.wrappers.ClipReward(env, 0.0, 1.0),
        modes=(m for m in ["NextStep"]),
        bases=(b for b in ["vecmode.SyncVectorEnv"]),
    )
    assert report.modes == (AutoresetMode.NEXT_STEP,)
    assert report.bases == ("vecmode.SyncVectorEnv",)
    assert report.also_over == "torch"
    torch_only = check_wrapper(
        lambda env: vecmode.wrappers.ClipReward(env, 0.0, 1.0),
        array_library="torch",
        bases=(b for b in ["vecmode.SyncVectorEnv"]),
    )
    assert torch_only.bases == ("vecmode.SyncVectorEnv",)


# -------------------------------------------------------------------- errors
def test_bad_arguments_are_refused_clearly():
    class Undeclared(VectorWrapper):
        pass

    with pytest.raises(ValueError, match=r"declares no autoreset modes.*supports"):
        check_wrapper(Undeclared)
    assert check_wrapper(Undeclared, modes=vecmode.MODES).modes == tuple(AutoresetMode)
    with pytest.raises(TypeError, match="wrapper class or a callable"):
        check_wrapper(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="num_envs must be an int >= 2"):
        check_wrapper(vw.NormalizeReward, num_envs=1)
    with pytest.raises(ValueError, match="transitions must be an int >= 9"):
        check_wrapper(vw.NormalizeReward, transitions=0)
    with pytest.raises(ValueError, match="obs_type must be one of"):
        check_wrapper(vw.NormalizeReward, obs_type="video")
    with pytest.raises(TypeError, match=r"returned int, not a gymnasium\.vector"):
        check_wrapper(lambda env: 3, modes=["NextStep"])
    with pytest.raises(ValueError, match="bases must be a list naming one or more"):
        check_wrapper(vw.NormalizeReward, bases=["envpool"])
    with pytest.raises(ValueError, match="no mode to prove"):
        check_wrapper(vw.NormalizeReward, modes=[])
    NextStepOnly = vecmode.supports("NextStep")(type("NextStepOnly", (Undeclared,), {}))
    with pytest.raises(ValueError, match="asks to prove SameStep, which it does not"):
        check_wrapper(NextStepOnly, modes=["SameStep"])


def test_one_mode_base_or_property_is_taken_as_one():
    """``modes="SameStep"`` read "S", "a", ... as modes; ``modes=AutoresetMode.X``
    was not iterable; one base was refused showing it as a list; a key given for
    ``compare_info`` was called."""
    one = check_wrapper(
        vw.NormalizeReward, modes="SameStep", bases="vecmode.SyncVectorEnv"
    )
    listed = check_wrapper(
        vw.NormalizeReward, modes=["SameStep"], bases=["vecmode.SyncVectorEnv"]
    )
    assert one.modes == listed.modes == (AutoresetMode.SAME_STEP,)
    assert one.runs == listed.runs and one.transitions == listed.transitions
    assert check_wrapper(vw.NormalizeReward, modes=AutoresetMode.DISABLED).modes == (
        AutoresetMode.DISABLED,
    )
    report = check_wrapper(vw.NormalizeReward, properties="results_kept")
    assert report.properties == ("results_kept",)
    with pytest.raises(TypeError, match=r"such as lambda info: info.get\('ep'\)"):
        check_wrapper(vw.NormalizeReward, compare_info="ep")  # type: ignore[arg-type]


def test_sub_envs_that_render_and_wrappers_around_them():
    """render_mode gives frames that say which sub-env, episode and step they
    show; wrappers wrap every test sub-env."""
    from vecmode.testing import decode

    seen: list = []

    class Tag(gym.Wrapper):
        def step(self, action):
            *result, info = self.env.step(action)
            return *result, {**info, "tag": self.env.render()[0, 0, 2]}

    @vecmode.supports(*vecmode.MODES)
    class Frames(VectorWrapper):
        def step(self, actions):
            *result, infos = self.env.step(actions)
            seen.append((self.env.render(), infos))
            return *result, infos

    check_wrapper(Frames, render_mode="rgb_array", wrappers=[Tag])
    frames = [frame for frames, _ in seen for frame in frames]
    assert {decode(frame)[0] for frame in frames} == {0, 1, 2}
    tags = {
        int(tag)
        for _, infos in seen
        if "tag" in infos
        for tag, there in zip(infos["tag"], infos["_tag"], strict=True)
        if there
    }
    assert tags == {1, 2, 3, 4}  # each step's number, from the wrapped sub-envs
    with pytest.raises(ValueError, match="render_mode must be one of None, 'rgb_a"):
        check_wrapper(vw.NormalizeReward, render_mode="human")


@pytest.mark.parametrize("modes", [None, [AutoresetMode.DISABLED]])
def test_a_wrapper_with_text_observations_conforms(modes):
    """Text observations are batched as a tuple of strings, not as a Tuple
    space's batch: the kit reads sub-env i's whole string (it read character i of
    every string, and reported this correct wrapper as not conforming; in
    DISABLED alone, the masked resets' check of the sub-envs not reset did)."""

    def to_text(env):
        return vw.TransformObservation(
            env,
            lambda batch: tuple(f"{int(x):05d}" for x in np.asarray(batch)),
            single_observation_space=gym.spaces.Text(
                5, min_length=5, charset="0123456789"
            ),
        )

    report = check_wrapper(to_text, obs_type="discrete", modes=modes)
    assert report.modes == tuple(modes or vecmode.MODES)


@pytest.mark.parametrize(
    "wrapper",
    [vw.RecordEpisodeStatistics, lambda env: vw.ClipReward(env, 0.0, 0.5)],
    ids=["RecordEpisodeStatistics", "ClipReward"],
)
def test_wrappers_that_read_no_final_observation_conform_over_the_dense_base(wrapper):
    """They keep ALE's layout (one batch, no masks): the kit reads it as the
    adapter does, and the transitions match Gymnasium's env's."""
    report = check_wrapper(wrapper, bases=DENSE_BASES)
    assert any("SameStep over vecmode.testing.Dense" in run for run in report.runs)


@vecmode.supports(*vecmode.MODES)
class DropsDenseFinals(vw.RewardWrapper):
    """A wrong wrapper: ALE's batch of final observations left out."""

    def rewards(self, rewards):
        return rewards

    def _step_result(self, result):
        *rest, infos = super()._step_result(result)
        return (*rest, {k: v for k, v in infos.items() if k != "final_obs"})


def test_a_wrapper_that_drops_the_dense_final_observations_fails():
    with pytest.raises(AssertionError) as caught:
        check_wrapper(DropsDenseFinals, bases=DENSE_BASES[1:])
    assert (
        "field info['final_obs']: expected the batch of final observations, got nothing"
    ) in str(caught.value)


@vecmode.supports(*vecmode.MODES)
class MasksDenseFinalsWrongly(DropsDenseFinals):
    """A wrong wrapper: a `_final_obs` mask over ALE's batch, of the wrong rows."""

    def _step_result(self, result):
        *rest, infos = vw.RewardWrapper._step_result(self, result)
        if "final_obs" in infos:
            infos = {**infos, "_final_obs": ~np.logical_or(rest[2], rest[3])}
        return (*rest, infos)


@vecmode.supports(*vecmode.MODES)
class DenseFinalsOnEveryStep(DropsDenseFinals):
    """A wrong wrapper: ALE's batch of final observations where no episode ended."""

    def _step_result(self, result):
        *rest, infos = vw.RewardWrapper._step_result(self, result)
        return (*rest, {"final_obs": np.zeros_like(rest[0]), **infos})


@pytest.mark.parametrize(
    "wrapper, found",
    [
        (MasksDenseFinalsWrongly, "field info['_final_obs'], sub-env 0: expected True"),
        (DenseFinalsOnEveryStep, "field info['final_obs']: expected no such key, got"),
    ],
)
def test_a_wrong_dense_layout_over_the_dense_base_fails(wrapper, found):
    with pytest.raises(AssertionError) as caught:
        check_wrapper(wrapper, bases=DENSE_BASES[1:])
    assert found in str(caught.value)


def test_a_factory_that_adds_no_layer_is_refused_by_its_own_name():
    def unchanged(env):
        return env

    # (it broke refuses_undeclared_modes: "accepted NextStep, which it does not
    # declare")
    with pytest.raises(
        TypeError, match=r"^check_wrapper\(unchanged\): the factory returned the env "
    ):
        check_wrapper(unchanged)


class _StepCountAtResetToo(gym.Wrapper):
    """Reports info['t'] at reset too (as ALE's 'lives', 'episode_frame_number')."""

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        return obs, {**info, "t": 0}


def test_an_ended_step_s_info_is_its_final_info_where_a_key_is_in_both():
    """SAME_STEP's ended step was read with the reset's value over final_info's:
    every correct wrapper failed mode_equivalence."""
    report = check_wrapper(
        lambda env: vw.ClipReward(env, -1e9, 1e9), wrappers=[_StepCountAtResetToo]
    )
    assert report.summary.startswith("ClipReward: right in NextStep, SameStep")
