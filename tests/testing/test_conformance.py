"""check_wrapper: it passes every vecmode wrapper and catches broken ones."""

from __future__ import annotations

import importlib
import importlib.util

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, VectorWrapper
from gymnasium.wrappers import vector as gym_vector

import vecmode
from tests.wrappers.cases import CASES, ToOffset, skip_unless_runnable, to_jax
from vecmode import wrappers as vw
from vecmode._evidence import CONFORMANCE_TESTED
from vecmode.modes import from_dense_finals
from vecmode.testing import (
    WrapperConformance,
    WrapperReport,
    check_wrapper,
    conformance,
)
from vecmode.testing.envs import STEP_INFO_KEYS

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
    skip_unless_runnable(case)
    report = check_wrapper(case.wrap, **KINDS[case.env])
    assert isinstance(report, WrapperReport)
    assert _key(report.wrapper_class) in CONFORMANCE_TESTED
    assert report.modes == tuple(AutoresetMode)
    assert report.refused == ()
    # 2 schedules x 3 modes x 2 base envs, and the staggered one truncated by
    # the env where the caller cuts it, x 3 modes; all but one compared
    assert len(report.runs) == 15
    assert report.transitions == 13 * 3 * 9
    assert report.batch_dependent == (
        case.name in ("NormalizeObservation", "NormalizeReward")
    )


def test_a_stack_conforms_and_the_report_reads_well():
    report = check_wrapper(
        lambda env: vw.NormalizeReward(vw.FrameStackObservation(env, 2), gamma=0.9)
    )
    assert report.wrapper == "NormalizeReward"
    assert report.batch_dependent  # found on the outermost layer that says
    text = str(report)
    assert text.splitlines()[0] == report.summary
    assert "[NextStep over vecmode.SyncVectorEnv, episodes ending together]" in text
    assert "[SameStep over gymnasium.vector.SyncVectorEnv, staggered episodes]" in text
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


# ------------------------------------------------------------ broken wrappers
@vecmode.supports(*vecmode.MODES)
class ForgetsFinalObs(VectorWrapper):
    """Doubles the observations, but not ``info["final_obs"]``."""

    def reset(self, *, seed=None, options=None):
        obs, infos = self.env.reset(seed=seed, options=options)
        return obs * 2, infos

    def step(self, actions):
        obs, rewards, terms, truncs, infos = self.env.step(actions)
        return obs * 2, rewards, terms, truncs, infos


@vecmode.supports(*vecmode.MODES)
class CountsResetSteps(VectorWrapper):
    """Scales rewards by the mean reward of every call's sub-envs: NEXT_STEP's
    reset steps (reward 0) are counted as if they were real steps."""

    batch_dependent = True

    def __init__(self, env):
        super().__init__(env)
        self.total, self.count = 0.0, 0

    def step(self, actions):
        obs, rewards, terms, truncs, infos = self.env.step(actions)
        self.total += float(np.sum(rewards))
        self.count += len(rewards)
        return obs, rewards / (self.total / self.count), terms, truncs, infos


@vecmode.supports("NextStep", "SameStep")
class StepCounter(VectorWrapper):
    """Appends each sub-env's step in its episode to the observation; written for
    NEXT_STEP (a new episode starts the call after one ended) and declared for
    SAME_STEP too, where it gets the first observations wrong."""

    def __init__(self, env):
        super().__init__(env)
        self.single_observation_space = gym.spaces.Box(-1e6, 1e6, (4,), np.float32)
        self.observation_space = gym.vector.utils.batch_space(
            self.single_observation_space, self.num_envs
        )

    def _with(self, obs):
        return np.concatenate([obs, self.t[:, None].astype(np.float32)], axis=1)

    def reset(self, *, seed=None, options=None):
        mask = (options or {}).get("reset_mask")  # Gymnasium's reset pops it
        obs, infos = self.env.reset(seed=seed, options=options)
        if mask is None:
            self.t = np.zeros(self.num_envs)
            self.ended = np.zeros(self.num_envs, dtype=bool)
        else:
            self.t[mask] = 0
            self.ended[mask] = False
        return self._with(obs), infos

    def step(self, actions):
        obs, rewards, terms, truncs, infos = self.env.step(actions)
        self.t = np.where(self.ended, 0, self.t + 1)
        self.ended = terms | truncs
        if "final_obs" in infos:
            infos = dict(infos)
            finals = np.empty(self.num_envs, dtype=object)
            for i, (o, t) in enumerate(zip(infos["final_obs"], self.t, strict=True)):
                finals[i] = None if o is None else np.append(o, np.float32(t))
            infos["final_obs"] = finals
        return self._with(obs), rewards, terms, truncs, infos


def test_catches_a_wrapper_that_forgets_final_obs():
    with pytest.raises(AssertionError) as caught:
        check_wrapper(ForgetsFinalObs)
    message = str(caught.value)
    assert message.startswith(
        "check_wrapper(ForgetsFinalObs): [SameStep over vecmode.SyncVectorEnv, "
        "episodes ending together] differs from [NextStep over "
        "vecmode.SyncVectorEnv, episodes ending together]: sub-env 0, event 3 (a "
        "real transition, call 3 here, "
        "call 3 there), field next_obs: [0. 0. 3.] here, [0. 0. 6.] there"
    ), message
    assert "final observations (info['final_obs'] in SAME_STEP)" in message


def test_catches_statistics_that_count_next_steps_reset_step():
    with pytest.raises(AssertionError) as caught:
        check_wrapper(CountsResetSteps)
    message = str(caught.value)
    assert (
        "[SameStep over vecmode.SyncVectorEnv, episodes ending together] differs from "
        in (message)
    )
    assert "field reward" in message
    assert "not NEXT_STEP's reset step" in message
    # the same wrapper is right where no reset step exists
    report = check_wrapper(CountsResetSteps, modes=["SameStep", "Disabled"])
    assert report.modes == (AutoresetMode.SAME_STEP, AutoresetMode.DISABLED)


def test_catches_a_wrapper_that_declares_a_mode_it_gets_wrong():
    check_wrapper(StepCounter, modes=["NextStep"])  # right where written for
    with pytest.raises(AssertionError) as caught:
        check_wrapper(StepCounter)
    message = str(caught.value)
    assert (
        "[SameStep over vecmode.SyncVectorEnv, episodes ending together] differs"
        in (message)
    )
    assert "an episode start" in message and "field obs" in message
    assert "[0. 1. 0. 3.] here, [0. 1. 0. 0.] there" in message


def test_catches_final_obs_outside_the_wrappers_space():
    @vecmode.supports(*vecmode.MODES)
    class Shrink(vw.ObservationWrapper):
        def __init__(self, env):
            super().__init__(env)
            self.single_observation_space = gym.spaces.Box(-1e6, 1e6, (2,), np.float32)
            self.observation_space = gym.vector.utils.batch_space(
                self.single_observation_space, self.num_envs
            )

        def observations(self, observations):
            return observations[:, :2]

    check_wrapper(Shrink)

    class ShrinkForgetting(ForgetsFinalObs):
        def __init__(self, env):
            super().__init__(env)
            self.single_observation_space = gym.spaces.Box(-1e6, 1e6, (2,), np.float32)
            self.observation_space = gym.vector.utils.batch_space(
                self.single_observation_space, self.num_envs
            )

        def reset(self, *, seed=None, options=None):
            obs, infos = self.env.reset(seed=seed, options=options)
            return obs[:, :2], infos

        def step(self, actions):
            obs, *rest = self.env.step(actions)
            return obs[:, :2], *rest

    with pytest.raises(AssertionError, match=r"field final_obs: .* is not in the"):
        check_wrapper(ShrinkForgetting)


def test_catches_a_broken_final_obs_mask():
    @vecmode.supports(*vecmode.MODES)
    class DropsMask(VectorWrapper):
        def step(self, actions):
            *result, infos = self.env.step(actions)
            return *result, {k: v for k, v in infos.items() if k != "_final_obs"}

    with pytest.raises(
        AssertionError,
        match=r"field info\['_final_obs'\], sub-env 0: expected True, got nothing",
    ):
        check_wrapper(DropsMask)

    @vecmode.supports(*vecmode.MODES)
    class WidensMask(VectorWrapper):
        def step(self, actions):
            *result, infos = self.env.step(actions)
            if "_final_obs" in infos:
                infos = {**infos, "_final_obs": np.ones(self.num_envs, dtype=bool)}
            return *result, infos

    with pytest.raises(
        AssertionError,
        match=r"field info\['_final_obs'\], sub-env \d: expected False, got True",
    ):
        check_wrapper(WidensMask, num_envs=3)


def test_catches_lost_partial_resets():
    @vecmode.supports("NextStep")
    class StackIgnoringCuts(vw.FrameStackObservation):
        """Clears a sub-env's stack when its episode ended or at a full reset,
        not when a masked reset cuts an episode short."""

        def transition(self, observations, rewards, terms, truncs, mask):
            super().transition(observations, rewards, terms, truncs, mask)
            over = getattr(self, "over", np.zeros_like(mask))
            self.over = np.where(mask, terms | truncs, over)

        def episode_start(self, observations, mask):
            over = getattr(self, "over", np.ones_like(mask))
            super().episode_start(observations, mask if mask.all() else mask & over)

    with pytest.raises(AssertionError) as caught:
        check_wrapper(lambda env: StackIgnoringCuts(env, 2))
    message = str(caught.value)
    assert (
        "[NextStep over vecmode.SyncVectorEnv, staggered episodes] differs from "
        "[NextStep over vecmode.SyncVectorEnv, staggered episodes truncated by the "
        "env where cut]: sub-env 0, event"
    ) in message, message
    assert "(an episode start" in message and "field obs" in message
    assert "clear the sub-env's state on a masked reset" in message


def test_catches_wrong_metadata():
    @vecmode.supports(*vecmode.MODES)
    class Relabels(VectorWrapper):
        def __init__(self, env):
            super().__init__(env)
            self.metadata = {**env.metadata, "autoreset_mode": AutoresetMode.NEXT_STEP}

    with pytest.raises(AssertionError, match=r"metadata\['autoreset_mode'\] is "):
        check_wrapper(Relabels)


def test_catches_an_undeclared_mode_accepted():
    @vecmode.supports("NextStep")
    class Declared(VectorWrapper):
        pass

    class Sneaky(VectorWrapper):
        pass

    def factory(env):  # builds the declared class without its construction check
        wrapped = Sneaky(env)
        wrapped.__class__ = Declared
        return wrapped

    with pytest.raises(AssertionError, match="accepted SameStep, which it does not"):
        check_wrapper(factory)


def test_gymnasium_wrappers_are_held_to_their_registry_entries():
    """Gymnasium's NormalizeReward is right in NEXT_STEP; in SAME_STEP the kit
    finds what the registry records, and Gymnasium's classes don't refuse modes
    unless vecmode.guard() is on."""
    kit = {"batch_dependent": True}  # its statistics pool the batch
    with pytest.raises(
        AssertionError, match=r"SameStep over .* differs from \[NextStep"
    ):
        check_wrapper(gym_vector.NormalizeReward, modes=["NextStep", "SameStep"], **kit)
    # accepting a mode it is known to get wrong fails, for the recorded reason
    with pytest.raises(AssertionError) as caught:
        check_wrapper(gym_vector.NormalizeReward, **kit)
    message = str(caught.value)
    assert (
        "built over a SameStep env: accepted SameStep, in which vecmode's registry "
        "records it as wrong: It restarts the discounted return"
    ) in message
    assert "Use vecmode.wrappers.NormalizeReward instead" in message
    with vecmode.guard():
        report = check_wrapper(gym_vector.NormalizeReward, **kit)
    assert report.modes == (AutoresetMode.NEXT_STEP,)
    assert report.refused == (AutoresetMode.SAME_STEP, AutoresetMode.DISABLED)


def test_a_classs_own_error_in_an_undeclared_mode_is_its_refusal():
    """Gymnasium's TransformObservation raises ValueError when built in SameStep,
    which vecmode's entry records as its refusal: the kit reports it, with the
    error, and proves the other modes."""
    report = check_wrapper(
        lambda env: gym_vector.TransformObservation(
            env, lambda o: o * 2, env.observation_space
        )
    )
    assert report.modes == (AutoresetMode.NEXT_STEP, AutoresetMode.DISABLED)
    assert report.refused == (AutoresetMode.SAME_STEP,)
    assert report.refusals[AutoresetMode.SAME_STEP].startswith(
        "ValueError: Expected autoreset_mode to be NEXT_STEP or DISABLED"
    )
    assert (
        "refused SameStep at construction, by its own constructor: ValueError: "
    ) in str(report)
    # asked to prove that mode, the same error is a failure
    with pytest.raises(AssertionError, match=r"raised ValueError there, in "):
        check_wrapper(
            lambda env: gym_vector.TransformObservation(
                env, lambda o: o * 2, env.observation_space
            ),
            modes=["SameStep"],
        )


def test_a_factory_that_cannot_be_built_raises_its_own_error():
    with pytest.raises(gym.error.InvalidBound):
        check_wrapper(vw.ClipReward)  # no bounds: the constructor's own error


def test_an_error_while_running_names_the_call():
    @vecmode.supports(*vecmode.MODES)
    class NoPartialResets(VectorWrapper):
        def reset(self, *, seed=None, options=None):
            if options and "reset_mask" in options:
                raise ValueError("no partial resets here")
            return self.env.reset(seed=seed, options=options)

    with pytest.raises(AssertionError) as caught:
        check_wrapper(NoPartialResets)
    message = str(caught.value)
    assert message.startswith(  # DISABLED resets ended sub-envs with a mask
        "check_wrapper(NoPartialResets): [Disabled over vecmode.SyncVectorEnv, "
        "episodes ending together], call 4 (reset with reset_mask="
    )
    assert "raised ValueError: no partial resets here" in message
    assert vecmode.testing.conformance.conformance_partial_reset_hint() in message


def episode_statistics(info):
    """What RecordEpisodeStatistics reports at an episode's end (not its time)."""
    episode = info.get("episode")
    return None if episode is None else (float(episode["r"]), int(episode["l"]))


def test_infos_are_compared_when_asked():
    report = check_wrapper(vw.RecordEpisodeStatistics, compare_info=episode_statistics)
    assert report.modes == tuple(AutoresetMode)
    # Gymnasium's: its statistics are right directly over vecmode's envs, in every
    # mode (its registry entry says so), but the step's info['_episode'] is its own
    # array, which the reset of the sub-envs that ended there clears in place (the
    # entry's caveat): the kit, which keeps what was returned, catches that where
    # such a reset comes (Disabled); and it pops reset_mask out of the caller's
    # options after its own reset, which the kit catches over vecmode's env (which
    # leaves them alone) at the first masked reset (NextStep's first cut). Over
    # Gymnasium's SyncVectorEnv, which pops reset_mask from the options before the
    # wrapper reads them, its statistics are wrong after a masked reset
    # (tests/registry/test_gymnasium_verdicts.py shows it)
    kit = {"compare_info": episode_statistics, "modes": vecmode.MODES}
    with pytest.raises(AssertionError) as caught:
        check_wrapper(
            gym_vector.RecordEpisodeStatistics, bases=["vecmode.SyncVectorEnv"], **kit
        )
    message = str(caught.value)
    assert (
        "[Disabled over vecmode.SyncVectorEnv, episodes ending together], call 3 "
        "(step), field infos['_episode']: what was returned here "
        "(infos['_episode']) was changed by a later call ([Disabled over "
        "vecmode.SyncVectorEnv, episodes ending together], call 4 (reset with "
        "reset_mask=[True, True, True]))"
    ) in message, message
    kit["modes"] = ["NextStep"]
    with pytest.raises(AssertionError) as caught:
        check_wrapper(gym_vector.RecordEpisodeStatistics, **kit)
    message = str(caught.value)
    assert (
        "[NextStep over vecmode.SyncVectorEnv, staggered episodes], call 5 (reset "
        "with reset_mask=[True, False, False]), field options: "
        + conformance.conformance_options_changed(
            "{'reset_mask': array([ True, False, False])}", "{}"
        )
    ) in message, message

    @vecmode.supports(*vecmode.MODES)
    class CountsResetStepsInLength(vw.RecordEpisodeStatistics):
        def step(self, actions):
            result = super().step(actions)
            self.episode_lengths[~self.boundary.real] += 1  # the reset step too
            return result

    with pytest.raises(
        AssertionError,
        match=r"field info: \['compare_info'\]: \[1\]: 1 here, 2 there",
    ):
        check_wrapper(CountsResetStepsInLength, compare_info=episode_statistics)
    check_wrapper(CountsResetStepsInLength)  # its own info key unread: not caught


@pytest.mark.parametrize("info_type", ["numeric", "rich"])
def test_a_wrapper_losing_the_env_s_infos_fails_without_compare_info(info_type):
    """The sub-envs' own infos are compared whatever compare_info says: a wrapper
    that drops SameStep's final_info (where the ended step's info is) loses the
    env's info at every episode end."""

    @vecmode.supports(*vecmode.MODES)
    class DropsFinalInfo(gym.vector.VectorWrapper):
        def step(self, actions):
            obs, rewards, terminations, truncations, infos = self.env.step(actions)
            kept = {k: v for k, v in infos.items() if "final_info" not in k}
            return obs, rewards, terminations, truncations, kept

    key = STEP_INFO_KEYS[info_type]
    with pytest.raises(AssertionError) as caught:
        check_wrapper(DropsFinalInfo, info_type=info_type)
    message = str(caught.value)
    assert "[SameStep over" in message, message
    assert (
        f"field info: the sub-env's info[{key!r}] is missing: the sub-env's info did "
        "not reach the caller"
    ) in message
    assert "env_infos=False" in message
    check_wrapper(DropsFinalInfo, modes=["NextStep", "Disabled"], info_type=info_type)
    check_wrapper(DropsFinalInfo, info_type=info_type, env_infos=False)  # on purpose


def test_batch_dependent_values_differ_when_episodes_are_staggered():
    """Why the option exists: pooled statistics see different batches."""
    with pytest.raises(AssertionError, match=r"staggered episodes\]") as caught:
        check_wrapper(vw.NormalizeObservation, batch_dependent=False)
    assert "batch_dependent = True" in str(caught.value)


@vecmode.supports(*vecmode.MODES)
class ZeroesTheOthersOnAMaskedReset(VectorWrapper):
    """Wrong: a masked reset returns zeros for the sub-envs it did not reset."""

    def reset(self, *, seed=None, options=None):
        obs, infos = self.env.reset(seed=seed, options=options)
        mask = (options or {}).get("reset_mask")
        if mask is not None:
            obs = np.where(np.asarray(mask)[:, None], obs, 0).astype(obs.dtype)
        return obs, infos


def test_a_masked_reset_keeps_the_other_sub_envs_observations():
    """A Disabled loop feeds a masked reset's whole batch to its policy: the rows
    of the sub-envs not reset must be their last observations, as returned."""
    with pytest.raises(AssertionError) as caught:
        check_wrapper(ZeroesTheOthersOnAMaskedReset)
    message = str(caught.value)
    assert "(reset with reset_mask=" in message
    assert "(not reset), field obs: [0. 0. 0.] here" in message
    assert "there the call before's" in message


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
        "refused "
        "to be built although it accepts Disabled over vecmode.SyncVectorEnv: "
        "NextStepAutoreset cannot wrap this env, although it supports its mode "
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
    with pytest.raises(AssertionError, match="reports final observations its own"):
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
                "field next_obs: [0. 1. 0.] here, [0. 0. 3.] there",
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


@vecmode.supports(*vecmode.MODES)
class ReusesItsBuffer(VectorWrapper):
    """Right: returns the same array at every call, written over (as copy=False
    vector envs do)."""

    def __init__(self, env):
        super().__init__(env)
        self.buffer = np.zeros(env.observation_space.shape, np.float32)

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        self.buffer[...] = obs
        return self.buffer, info

    def step(self, actions):
        obs, *rest = self.env.step(actions)
        self.buffer[...] = obs
        return self.buffer, *rest


@vecmode.supports(*vecmode.MODES)
class RewardPlusOne(VectorWrapper):
    """Wrong in NextStep only at its reset step: r + 1 there invents a reward."""

    def step(self, actions):
        obs, rewards, *rest = self.env.step(actions)
        return obs, rewards + 1, *rest


def test_next_step_s_reset_step_must_stay_empty():
    """Its reward and flags are compared with nothing (it is no transition), so
    the kit checks them on their own: reward 0, both flags False."""
    with pytest.raises(AssertionError) as caught:
        check_wrapper(RewardPlusOne)
    message = str(caught.value)
    assert "[NextStep over vecmode.SyncVectorEnv, episodes ending together]" in message
    assert conformance.conformance_reset_step(1.0, False, False) in message
    assert "vecmode.wrappers.RewardWrapper leaves those rows alone" in message
    report = check_wrapper(RewardPlusOne, modes=["SameStep", "Disabled"])
    assert report.modes == (AutoresetMode.SAME_STEP, AutoresetMode.DISABLED)


@vecmode.supports(*vecmode.MODES)
class FlipsActionsInPlace(VectorWrapper):
    """Wrong: maps action a to 2 - a in the caller's own array."""

    def step(self, actions):
        actions[...] = 2 - actions
        return self.env.step(actions)


def test_a_wrapper_writing_into_the_caller_s_actions_fails():
    """The same in every mode, so no comparison sees it; the caller's buffer
    (a rollout's stored actions) is corrupted all the same."""
    with pytest.raises(AssertionError) as caught:
        check_wrapper(FlipsActionsInPlace)
    message = str(caught.value)
    assert "call 1 (step), field actions: step() wrote into the caller's" in message
    assert "never write into them" in message


def test_a_wrapper_returning_one_buffer_again_fails_unless_it_says_copy_false():
    """The kit keeps what the wrapper returns (the base envs return new arrays):
    observations that a later call writes over fail, since a caller keeps them;
    a wrapper that says it reuses its buffer (copy = False, as copy=False vector
    envs do) conforms, its observations copied by the kit."""
    with pytest.raises(AssertionError) as caught:
        check_wrapper(ReusesItsBuffer)
    message = str(caught.value)
    assert (
        "[NextStep over vecmode.SyncVectorEnv, episodes ending together], call 0 "
        "(reset), field observations: "
        + conformance.conformance_changed_later(
            "observations",
            "[NextStep over vecmode.SyncVectorEnv, episodes ending together], "
            "call 1 (step)",
        )
    ) in message, message
    assert conformance.conformance_changed_later_hint() in message
    says_so = type("SaysCopyFalse", (ReusesItsBuffer,), {"copy": False})
    report = check_wrapper(says_so)
    assert report.modes == tuple(AutoresetMode)
    assert report.limits == ()


class DoublesIntoOneBuffer(vw.ObservationWrapper):
    """Wrong: obs * 2 into one preallocated buffer, returned at every call (the
    final observations, transformed as a batch, too)."""

    def __init__(self, env):
        super().__init__(env)
        self.buffer = None

    def observations(self, observations):
        if self.buffer is None:
            self.buffer = np.empty_like(observations)
        np.multiply(observations, 2, out=self.buffer)
        return self.buffer


@vecmode.supports(*vecmode.MODES)
class ReturnsItsFlagsArray(VectorWrapper):
    """Wrong: returns its own array as the terminations, written into by the
    next step."""

    def __init__(self, env):
        super().__init__(env)
        self.flags = np.zeros(env.num_envs, dtype=np.bool_)

    def step(self, actions):
        obs, rewards, terminations, *rest = self.env.step(actions)
        self.flags[...] = terminations
        return obs, rewards, self.flags, *rest


@vecmode.supports(*vecmode.MODES)
class ClearsItsInfoMaskOnReset(VectorWrapper):
    """Wrong (as Gymnasium's RecordEpisodeStatistics is): puts its own mask of
    the ended sub-envs in the step's info, and clears it in place when they are
    reset."""

    def __init__(self, env):
        super().__init__(env)
        self.ended = np.zeros(env.num_envs, dtype=np.bool_)

    def reset(self, *, seed=None, options=None):
        mask = (options or {}).get("reset_mask")
        self.ended[slice(None) if mask is None else mask] = False
        return self.env.reset(seed=seed, options=options)

    def step(self, actions):
        obs, rewards, terminations, truncations, infos = self.env.step(actions)
        self.ended = terminations | truncations
        return obs, rewards, terminations, truncations, {**infos, "ended": self.ended}


@pytest.mark.parametrize(
    ("wrapper", "found"),
    [
        (DoublesIntoOneBuffer, "call 0 (reset), field observations: "),
        (ReturnsItsFlagsArray, "call 2 (step), field terminations"),
        (ClearsItsInfoMaskOnReset, "(step), field infos['ended']"),
    ],
)
def test_a_result_that_a_later_call_changes_fails(wrapper, found):
    """What step() and reset() return is kept by the caller (a rollout buffer,
    a collector's transitions): an array the wrapper writes into again fails,
    naming the call, the part, and the call that changed it."""
    with pytest.raises(AssertionError) as caught:
        check_wrapper(wrapper)
    message = str(caught.value)
    assert found in message, message
    assert "was changed by a later call" in message
    assert conformance.conformance_changed_later_hint() in message


@vecmode.supports(*vecmode.MODES)
class DoublesRewardsInPlace(VectorWrapper):
    """Wrong: doubles the rewards in the array the env below returned (the
    caller sees the right values; a layer below that keeps its array does not)."""

    def step(self, actions):
        obs, rewards, *rest = self.env.step(actions)
        rewards *= 2
        return obs, rewards, *rest


@vecmode.supports(*vecmode.MODES)
class ShiftsObservationsInPlace(VectorWrapper):
    """Wrong: shifts the observations (and the final ones) in the env's arrays."""

    def reset(self, *, seed=None, options=None):
        obs, infos = self.env.reset(seed=seed, options=options)
        np.add(obs, 1, out=obs)
        return obs, infos

    def step(self, actions):
        obs, rewards, terms, truncs, infos = self.env.step(actions)
        np.add(obs, 1, out=obs)
        for final in infos.get("final_obs", ()):
            if final is not None:
                final += 1
        return obs, rewards, terms, truncs, infos


@vecmode.supports(*vecmode.MODES)
class ReplacesFinalObsEntries(VectorWrapper):
    """Wrong: doubles the final observations by replacing the entries of the
    env's own info['final_obs'] array (right values, in the env's array)."""

    def step(self, actions):
        obs, rewards, terms, truncs, infos = self.env.step(actions)
        finals = infos.get("final_obs")
        if finals is not None:
            for i in np.flatnonzero(infos["_final_obs"]):
                finals[i] = finals[i] * 2
        return obs * 2, rewards, terms, truncs, infos


@vecmode.supports(*vecmode.MODES)
class ZeroesLastRewardsLater(VectorWrapper):
    """Wrong: keeps the rewards array the env returned, and zeroes it at the
    next call."""

    def __init__(self, env):
        super().__init__(env)
        self.last = None

    def step(self, actions):
        if self.last is not None:
            self.last[...] = 0
        obs, rewards, *rest = self.env.step(actions)
        self.last = rewards
        return obs, rewards.copy(), *rest


@vecmode.supports(*vecmode.MODES)
class AddsAndDropsInfoKeys(VectorWrapper):
    """Right: a new key in the env's info dict, and one taken out, are no write
    into its arrays."""

    def step(self, actions):
        obs, rewards, terms, truncs, infos = self.env.step(actions)
        infos["mine"] = rewards * 0
        infos["_mine"] = np.ones(self.num_envs, dtype=np.bool_)
        infos.pop("unused", None)
        return obs, rewards, terms, truncs, infos


@pytest.mark.parametrize(
    ("wrapper", "found"),
    [
        (
            DoublesRewardsInPlace,
            "call 1 (step), field rewards: the wrapper wrote into what the env "
            "below returned to it (rewards): ",
        ),
        (ShiftsObservationsInPlace, "call 0 (reset), field observations: "),
        (
            ReplacesFinalObsEntries,
            "(step), field infos['final_obs']: the wrapper wrote into what the env "
            "below returned to it (infos['final_obs']): ",
        ),
        (ZeroesLastRewardsLater, "call 1 (step), field rewards: "),
    ],
)
def test_a_wrapper_writing_into_what_the_env_below_returned_fails(wrapper, found):
    """The env below (or a layer under the wrapper) may keep what it returned
    (a copy=False core reuses its observation buffer; a logger keeps its
    arrays): a wrapper writing into any of its arrays fails, naming the call
    the array came from, the part, and the values before and after; a write at
    a later call is found too."""
    with pytest.raises(AssertionError) as caught:
        check_wrapper(wrapper)
    message = str(caught.value)
    assert found in message, message
    when = "in a later call" if wrapper is ZeroesLastRewardsLater else "in this call"
    assert " became " in message and f" {when}\n" in message, message
    assert conformance.conformance_wrote_below_hint() in message


def test_new_or_dropped_info_keys_are_no_write_into_the_env_below():
    report = check_wrapper(AddsAndDropsInfoKeys)
    assert report.modes == tuple(AutoresetMode)


@vecmode.supports(*vecmode.MODES)
class PopsTheResetMask(VectorWrapper):
    """Wrong: pops reset_mask out of the caller's options (a layer above that
    reads it after its own reset, as Gymnasium's RecordEpisodeStatistics does,
    then sees a full reset)."""

    def reset(self, *, seed=None, options=None):
        if options and "reset_mask" in options:
            mask = options.pop("reset_mask")
            return self.env.reset(seed=seed, options={"reset_mask": mask})
        return self.env.reset(seed=seed, options=options)


@vecmode.supports(*vecmode.MODES)
class WritesIntoTheResetMask(VectorWrapper):
    """Wrong: resets sub-env 0 too, by writing into the caller's mask array."""

    def reset(self, *, seed=None, options=None):
        if options and "reset_mask" in options:
            options["reset_mask"][0] = True
        return self.env.reset(seed=seed, options=options)


@vecmode.supports(*vecmode.MODES)
class PassesTheOptionsDown(VectorWrapper):
    """Right: passes the caller's options down as they are (Gymnasium's base
    then pops reset_mask from them, which the kit does not blame on it)."""


def test_a_wrapper_changing_the_caller_s_options_fails():
    """reset() leaves the caller's options dict, and the reset_mask array in it,
    as they were: checked after every masked reset (the kit already checks the
    caller's actions after every step)."""
    with pytest.raises(AssertionError) as caught:
        check_wrapper(PopsTheResetMask)
    message = str(caught.value)
    assert (
        "[Disabled over vecmode.SyncVectorEnv, episodes ending together], call 4 "
        "(reset with reset_mask=[True, True, True]), field options: "
        + conformance.conformance_options_changed(
            "{'reset_mask': array([ True,  True,  True])}", "{}"
        )
    ) in message, message
    assert conformance.conformance_options_hint() in message
    assert "Pass a copy down, options = dict(options)" in message
    with pytest.raises(AssertionError) as caught:
        check_wrapper(WritesIntoTheResetMask)
    message = str(caught.value)
    assert "field options['reset_mask']: " in message, message
    assert (
        conformance.conformance_mask_written(
            "[False  True False]", "[ True  True False]"
        )
        in message
    ), message
    # over Gymnasium's base, which pops reset_mask itself, the key may go
    assert check_wrapper(PassesTheOptionsDown).modes == tuple(AutoresetMode)


@pytest.mark.parametrize("dtype", [float, int, np.uint8])
def test_a_final_info_mask_that_is_not_bool_fails(dtype):
    """Like a non-bool _final_obs mask: SAME_STEP's masks are bool arrays."""

    @vecmode.supports(*vecmode.MODES)
    class NotBoolFinalInfoMask(VectorWrapper):
        def step(self, actions):
            obs, rewards, terminations, truncations, infos = self.env.step(actions)
            if "_final_info" in infos:
                infos = {**infos, "_final_info": infos["_final_info"].astype(dtype)}
            return obs, rewards, terminations, truncations, infos

    with pytest.raises(AssertionError) as caught:
        check_wrapper(NotBoolFinalInfoMask)
    message = str(caught.value)
    assert (
        "[SameStep over vecmode.SyncVectorEnv, episodes ending together], call 3 "
        "(step), field info['_final_info']: expected a bool array of shape (3,), "
        "got "
    ) in message, message


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
    assert report.limits == (
        conformance.limit_one_mode(AutoresetMode.DISABLED),
        conformance.limit_masked_resets(),
    )
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
    assert report.limits[-1] == conformance.limit_bases(
        ("vecmode.SyncVectorEnv",), ["gymnasium.vector.SyncVectorEnv"]
    )
    with pytest.raises(ValueError, match="can also be built over gymnasium"):
        report.record()
    assert vecmode.registry.evidence(ReadsTheMaskTooLate).value == "declared"
    # a policy that cannot wrap Gymnasium's env is proved where it can
    report = check_wrapper(vecmode.NextStepAutoreset, bases=["vecmode.SyncVectorEnv"])
    assert report.record() is report


class TestTheMixin(WrapperConformance):
    """Collected by pytest: the mixin's test runs on this class."""

    check_options = {"obs_type": "image"}

    def make_wrapper(self, env):
        return vw.GrayscaleObservation(env)


def test_the_mixin_reports_and_fails():
    case = TestTheMixin()
    case.test_wrapper_conforms()
    assert case.conformance_report.wrapper == "GrayscaleObservation"
    assert case.conformance_report.modes == tuple(AutoresetMode)

    class Broken(WrapperConformance):
        def make_wrapper(self, env):
            return ForgetsFinalObs(env)

    with pytest.raises(AssertionError, match=r"check_wrapper\(ForgetsFinalObs\)"):
        Broken().test_wrapper_conforms()
    with pytest.raises(NotImplementedError, match="must define make_wrapper"):
        WrapperConformance().test_wrapper_conforms()


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
    with pytest.raises(ValueError, match="transitions must be an int >= 1"):
        check_wrapper(vw.NormalizeReward, transitions=0)
    with pytest.raises(ValueError, match="obs_type must be one of"):
        check_wrapper(vw.NormalizeReward, obs_type="video")
    with pytest.raises(TypeError, match=r"returned int, not a gymnasium\.vector"):
        check_wrapper(lambda env: 3, modes=["NextStep"])
    with pytest.raises(ValueError, match="bases must be a list naming one or more"):
        check_wrapper(vw.NormalizeReward, bases=["envpool"])
    with pytest.raises(ValueError, match=r"got \['vecmode.SyncVectorEnv'\]"):
        check_wrapper(vw.NormalizeReward, bases="vecmode.SyncVectorEnv")
    with pytest.raises(ValueError, match="no mode to prove"):
        check_wrapper(vw.NormalizeReward, modes=[])
    NextStepOnly = vecmode.supports("NextStep")(type("NextStepOnly", (Undeclared,), {}))
    with pytest.raises(AssertionError, match="refused a mode to prove: NextStepOnly"):
        check_wrapper(NextStepOnly, modes=["SameStep"])


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
