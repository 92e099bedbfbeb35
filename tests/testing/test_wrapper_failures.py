"""check_wrapper catches wrappers that give other events in another mode, or
break a call's own checks (SAME_STEP's layout, the spaces, the env's infos)."""

from __future__ import annotations

import re

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, VectorWrapper
from gymnasium.wrappers import vector as gym_vector

import vecmode
from vecmode import wrappers as vw
from vecmode.testing import ConformanceError, ScheduledEnv, check_wrapper, decode
from vecmode.testing.envs import RESET_INFO_KEYS, STEP_INFO_KEYS
from vecmode.testing.wrapper.driver import PARTIAL_RESET_HINT
from vecmode.testing.wrapper.events import ProofArgumentError
from vecmode.testing.wrapper.schedules import base_env
from vecmode.wrappers.base import forward_reset, set_spaces


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
    assert message.startswith(  # the property broken first, then where and what
        "ForgetsFinalObs breaks mode_equivalence_together (expected: the same "
        "transitions in every mode, ends together).\n"
        "[SameStep over vecmode.SyncVectorEnv, episodes ending together] (here) "
        "differs from [NextStep over vecmode.SyncVectorEnv, episodes ending "
        "together] (there): sub-env 0, a real transition (call 3 here, call 3 "
        "there), field next_obs: [-100.5  100.5 -103.5] here, [-201.  201. -207.] there"
    ), message
    assert "NextStep and Disabled agree: SameStep alone differs." in message
    assert "Transform SAME_STEP's info['final_obs']" in message


def test_catches_statistics_that_count_next_steps_reset_step():
    with pytest.raises(AssertionError) as caught:
        check_wrapper(CountsResetSteps)
    message = str(caught.value)
    assert (  # SameStep and Disabled agree: NextStep's run is named
        "[NextStep over vecmode.SyncVectorEnv, episodes ending together] (here) "
        "differs from [SameStep " in (message)
    )
    assert "field reward" in message
    assert "SameStep and Disabled agree: NextStep alone differs." in message
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
        "[SameStep over vecmode.SyncVectorEnv, episodes ending together] (here) "
        "differs" in (message)
    )
    assert "an episode start" in message and "field obs" in message
    assert (
        "[-100.5  101.5 -100.5    3. ] here, [-100.5  101.5 -100.5    0. ] there"
        in message
    )


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


@pytest.mark.parametrize(
    "name",
    [
        "observation_space",
        "single_observation_space",
        "action_space",
        "single_action_space",
    ],
)
def test_catches_a_space_set_without_its_twin(name):
    """A wrapper setting one of its two spaces leaves the other stale."""

    def widens(env):
        wrapped, space = VectorWrapper(env), getattr(env, name)
        setattr(wrapped, name, gym.spaces.Box(space.low * 2, space.high * 2))
        return wrapped

    with pytest.raises(ConformanceError) as caught:
        check_wrapper(widens, modes=vecmode.MODES, action_type="box")
    assert caught.value.property == "returns_well_formed_results"
    kind = name.removeprefix("single_")
    assert re.search(
        rf"\[NextStep over [^]]*\], field {kind}: Box\(.* is not single_{kind} Box",
        str(caught.value),
    ), caught.value
    assert f"Set both spaces: single_{kind}, and {kind} = gymnasium.vector" in str(
        caught.value
    )
    assert "(vecmode.wrappers.base.set_spaces(self, " in str(caught.value)
    check_wrapper(VectorWrapper, modes=vecmode.MODES, action_type="box")


class _Opaque(gym.spaces.Space):
    """A space with no __eq__ (Gymnasium's base has none): equal to itself only."""

    def contains(self, x):
        return True


def test_spaces_that_cannot_be_compared_raise_no_false_alarm():
    """Two batches of a space without __eq__ never compare equal: not stale."""

    class AddsAPart(vecmode.wrappers.ObservationWrapper):
        def __init__(self, env):
            super().__init__(env)
            single = {"o": env.single_observation_space, "x": _Opaque()}
            set_spaces(self, "observation", None, gym.spaces.Dict(single))

        def observations(self, obs):
            return {"o": obs, "x": np.zeros(self.num_envs)}

    with pytest.warns(UserWarning, match="don't match as expected"):  # Gymnasium's
        check_wrapper(AddsAPart, modes=vecmode.MODES)


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


def test_catches_final_obs_dropped_with_its_mask_kept():
    """The final observations dropped with the final infos, their mask kept:
    named as the missing key, at the first sub-env the mask marks."""

    @vecmode.supports(*vecmode.MODES)
    class DropsFinals(VectorWrapper):
        def step(self, actions):
            *result, infos = self.env.step(actions)
            kept = ("final_obs", "final_info", "_final_info")
            return *result, {k: v for k, v in infos.items() if k not in kept}

    with pytest.raises(AssertionError) as caught:
        check_wrapper(DropsFinals, num_envs=3)
    assert str(caught.value).splitlines()[1:] == [
        "[SameStep over vecmode.SyncVectorEnv, episodes ending together], call 3 "
        "(step), field info['final_obs'], sub-env 0: expected present, got nothing",
        "Keep SAME_STEP's final observations (transformed like the observations) "
        "and their mask, marking exactly the sub-envs whose episode ended.",
    ]


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
        "[NextStep over vecmode.SyncVectorEnv, staggered episodes] (here) differs "
        "from [NextStep over vecmode.SyncVectorEnv, staggered episodes truncated by "
        "the env where cut] (there): sub-env 0, an episode start, by the caller's "
        "reset that cut the last (call"
    ) in message, message
    assert message.startswith("StackIgnoringCuts breaks cut_like_truncated (expected: ")
    assert "field obs" in message
    assert "clear the sub-env's state on a masked reset" in message


class TimeoutPenalty(vw.StatefulWrapper):
    """Right: reward - 1 where the env truncated. It cannot know that the caller
    will cut an episode, so there its reward is not the truncated run's."""

    def _step_result(self, result):
        obs, rewards, terms, truncs, infos = super()._step_result(result)
        penalty = np.where(np.asarray(self.boundary.real) & truncs, 1.0, 0.0)
        return obs, rewards - penalty, terms, truncs, infos


def test_the_reward_at_a_cut_is_not_compared_with_the_env_s_truncation():
    report = check_wrapper(TimeoutPenalty)
    assert report.record() is report


def test_a_forgotten_final_obs_is_caught_in_same_step_alone():
    """Proved in one mode, nothing to compare it with: the next observation at
    a cut is still compared with the final one of the env's truncation."""
    same_step = vecmode.supports("SameStep")(type("Forgets", (ForgetsFinalObs,), {}))
    with pytest.raises(ConformanceError) as caught:
        check_wrapper(same_step)
    assert caught.value.property == "cut_like_truncated"
    assert "at the cut is a final observation not transformed" in str(caught.value)
    assert re.search(
        r"real transition, the last before the caller's reset cut its episode "
        r"\(call \d+ here, call \d+ there\), field next_obs",
        str(caught.value),
    )


class OnResetSteps(vw.StatefulWrapper):
    """Adds info[key] (as RecordEpisodeStatistics does "episode") on NEXT_STEP's
    reset steps: no transition, so no episode ended there."""

    key = "episode"

    def _step_result(self, result):
        obs, rewards, terms, truncs, infos = super()._step_result(result)
        rows = ~np.asarray(self.boundary.real)
        if rows.any():
            zeros = np.zeros(self.num_envs)
            stats = {"r": zeros, "l": zeros.astype(int), "t": zeros}
            infos = {**infos, self.key: stats, f"_{self.key}": rows}
        return obs, rewards, terms, truncs, infos


def test_catches_an_episode_reported_on_next_step_s_reset_step():
    with pytest.raises(ConformanceError) as caught:
        check_wrapper(OnResetSteps)
    assert caught.value.property == "reset_step_stays_empty"
    assert re.search(
        r"\[NextStep over [^]]*\], call \d+ \(step\), sub-env \d, field "
        r"info\['episode'\]: NEXT_STEP's reset step reports an episode, but none "
        r"ended there\nReport an episode at its last real transition only",
        str(caught.value),
    ), caught.value
    with pytest.raises(ConformanceError, match=r"field info\['episode'\]: NEXT_"):
        check_wrapper(lambda env: vw.DictInfoToList(OnResetSteps(env)))  # a list
    # other infos there are the wrapper's own
    check_wrapper(type("Other", (OnResetSteps,), {"key": "stats"}))


@vecmode.supports("NextStep")
class CountsTheResetStep(VectorWrapper):
    """Wrong: info["elapsed"] counts NEXT_STEP's reset step; it clears its count
    on a masked reset, so a cut episode's next one counts right."""

    def reset(self, *, seed=None, options=None):
        obs, infos, mask = forward_reset(self.env, seed, options)
        self.t = np.zeros(self.num_envs, int) if mask is None else self.t * ~mask
        return obs, infos

    def step(self, actions):
        obs, rewards, terms, truncs, infos = self.env.step(actions)
        self.t += 1
        elapsed = {"elapsed": self.t.copy(), "_elapsed": np.ones(self.num_envs, bool)}
        self.t[terms | truncs] = 0
        return obs, rewards, terms, truncs, {**infos, **elapsed}


def test_a_difference_after_a_cut_in_next_step_names_the_reset_step_too():
    with pytest.raises(ConformanceError) as caught:
        check_wrapper(CountsTheResetStep, compare_info=lambda i: i.get("elapsed"))
    assert caught.value.property == "cut_like_truncated"
    assert str(caught.value).endswith(
        "In NEXT_STEP, one after it may be the reset step that follows the env's "
        "truncation there counted as a step: count real transitions only "
        "(vecmode.modes.BoundaryTracker says which)."
    )


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
    # asked to prove that mode: refused as an argument, as for a class that
    # declares its modes (it was a failure, builds_in_declared_modes)
    with pytest.raises(
        ProofArgumentError,
        match=r"modes asks to prove SameStep, which it does not declare and "
        r"refuses when built; prove the modes it declares \(NextStep, Disabled\)",
    ):
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
        "NoPartialResets breaks handles_every_call (expected: reset, step and "
        "masked resets work).\n[Disabled over vecmode.SyncVectorEnv, "
        "episodes ending together], call 4 (reset with reset_mask="
    )
    assert "raised ValueError: no partial resets here" in message
    assert PARTIAL_RESET_HINT in message


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
        "reset() changed the caller's options: {'reset_mask': array([ True, False, "
        "False])} became {}"
    ) in message, message

    @vecmode.supports(*vecmode.MODES)
    class CountsResetStepsInLength(vw.RecordEpisodeStatistics):
        def step(self, actions):
            result = super().step(actions)
            self.episode_lengths[~self.boundary.real] += 1  # the reset step too
            return result

    with pytest.raises(
        AssertionError,
        match=r"field episode_statistics\(info\): \[1\]: 2 here, 1 there",
    ):
        check_wrapper(CountsResetStepsInLength, compare_info=episode_statistics)
    with pytest.raises(AssertionError, match=r"\['length'\]: 2 here, 1 there"):
        check_wrapper(CountsResetStepsInLength)  # the episode statistics by default
    check_wrapper(CountsResetStepsInLength, compare_info=None)  # none: not caught


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


@pytest.mark.parametrize("masked", [False, True], ids=["every reset", "masked"])
@pytest.mark.parametrize("info_type", ["numeric", "rich"])
def test_a_wrapper_losing_the_env_s_reset_infos_fails(info_type, masked):
    """A wrapper whose reset() returned {} passed: reset infos were not read."""

    @vecmode.supports(*vecmode.MODES)
    class DropsResetInfos(gym.vector.VectorWrapper):
        def reset(self, *, seed=None, options=None):
            obs, infos = self.env.reset(seed=seed, options=options)
            return obs, ({} if masked == bool(options) else infos)

    key = RESET_INFO_KEYS[info_type]
    with pytest.raises(AssertionError) as caught:
        check_wrapper(DropsResetInfos, info_type=info_type)
    message = " ".join(str(caught.value).split())
    assert "breaks passes_env_infos_on" in message, message
    call = r"\(reset with reset_mask=\[[^]]*\]\)" if masked else r"call 0 \(reset\)"
    what = f"the sub-env's reset info\\[{key!r}\\] is missing: the sub-env's info did"
    assert re.search(f"{call}, sub-env \\d, field info: {what} not reach", message)
    assert "env_infos=False" in message
    check_wrapper(DropsResetInfos, info_type=info_type, env_infos=False)


def test_reset_infos_out_of_gymnasium_s_layout_fail_by_name():
    @vecmode.supports(*vecmode.MODES)
    class ListInResetInfos(gym.vector.VectorWrapper):
        def reset(self, *, seed=None, options=None):
            obs, infos = self.env.reset(seed=seed, options=options)
            return obs, {**infos, "ep": list(infos["ep"])}

    with pytest.raises(AssertionError) as caught:
        check_wrapper(ListInResetInfos, env_infos=False)  # checked all the same
    assert "breaks returns_well_formed_results" in str(caught.value)
    assert "info['ep'] is a list of 3 entries, not a NumPy array" in str(caught.value)


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


# ------------------------------------ transforms the old test values hid (#1)
class _ForgetsFinalObs(vw.ObservationWrapper):
    """Transforms the observations but leaves ``info["final_obs"]`` as it is."""

    def final_observations(self, infos, observations):
        return infos


IDENTITY_ON_SMALL_COUNTS = {
    "abs": np.abs,
    "clip to 100": lambda obs: np.clip(obs, -100, 100),
    "max(0, x)": lambda obs: np.maximum(obs, 0),
    "round": np.round,
}


@pytest.mark.parametrize("name", list(IDENTITY_ON_SMALL_COUNTS))
def test_catches_a_forgotten_final_obs_whatever_the_transform(name):
    """A transform that leaves small non-negative integers alone is still seen
    forgetting ``info["final_obs"]``: the kit's observations are signed and not
    integers; transforming them too passes."""
    transform = staticmethod(IDENTITY_ON_SMALL_COUNTS[name])
    right = type("Right", (vw.ObservationWrapper,), {"observations": transform})
    check_wrapper(right)
    forgets = type("Forgets", (_ForgetsFinalObs,), {"observations": transform})
    with pytest.raises(ConformanceError) as caught:
        check_wrapper(forgets)
    assert caught.value.property == "mode_equivalence_together"
    message = str(caught.value)
    assert "[SameStep over vecmode.SyncVectorEnv, episodes ending together]" in (
        message
    )
    assert "field next_obs" in message
    assert "NextStep and Disabled agree: SameStep alone differs." in message
    assert "Transform SAME_STEP's info['final_obs']" in message


def test_the_kit_s_observations_are_signed_and_not_integers():
    """Each box entry is negative or positive, beyond ±100 and not an integer;
    ``decode`` reads them, and ScheduledEnv's own default is unchanged."""
    kinds = {"num_envs": 2, "obs_type": "box"}
    envs = base_env("vecmode.SyncVectorEnv", AutoresetMode.NEXT_STEP, kinds)
    obs = envs.reset(seed=0)[0].copy()  # (copy=False: the next call writes over it)
    obs = np.concatenate([obs, envs.step(np.array([0, 0]))[0]])
    envs.close()
    assert (np.abs(obs) > 100).all() and (obs % 1 != 0).all()
    assert (obs < 0).any(axis=1).all() and (obs > 0).any(axis=1).all()
    assert [decode(row) for row in obs] == [(0, 0, 0), (1, 0, 0), (0, 0, 1), (1, 0, 1)]
    assert ScheduledEnv(index=2).reset(seed=0)[0].tolist() == [2.0, 0.0, 0.0]


# ------------------------------------------- the layout of final_obs (#2)
class StacksFinalObs(vw.ObservationWrapper):
    """Transforms final observations right, but into one float batch with zeros
    where no episode ended, not Gymnasium's object array."""

    def observations(self, observations):
        return observations + 1

    def final_observations(self, infos, observations):
        rows = [
            np.zeros_like(observations[0]) if obs is None else obs + 1
            for obs in infos["final_obs"]
        ]
        return {**infos, "final_obs": np.stack(rows)}


class FillsFinalObs(vw.ObservationWrapper):
    """Gymnasium's object array, but every entry filled: the returned
    observation where no episode ended."""

    def observations(self, observations):
        return observations + 1

    def final_observations(self, infos, observations):
        final_obs = np.empty(self.num_envs, dtype=object)
        for i, obs in enumerate(infos["final_obs"]):
            final_obs[i] = observations[i] if obs is None else obs + 1
        return {**infos, "final_obs": final_obs}


@pytest.mark.parametrize(
    ("wrapper", "found"),
    [
        (
            StacksFinalObs,
            "call 3 (step), field info['final_obs']: expected Gymnasium's layout, "
            "the env below's: a NumPy object array of shape (3,), None where "
            "info['_final_obs'] is False; got a NumPy float32 array of shape (3, 3)",
        ),
        (
            FillsFinalObs,
            "field info['final_obs'], sub-env 0: expected None (Gymnasium's layout, "
            "the env below's: a NumPy object array of shape (3,), None where "
            "info['_final_obs'] is False); got [-100.5  100.5 -101.5]",
        ),
    ],
)
def test_catches_final_obs_out_of_gymnasium_s_layout(wrapper, found):
    """final_obs keeps Gymnasium's layout over an env in it: an object array of a
    row per sub-env, None where info['_final_obs'] is False."""
    with pytest.raises(ConformanceError) as caught:
        check_wrapper(wrapper)
    assert caught.value.property == "returns_well_formed_results"
    assert "[SameStep over vecmode.SyncVectorEnv, " in str(caught.value)
    assert found in str(caught.value), str(caught.value)
    assert "vecmode.modes.with_final_observations" in str(caught.value)


@vecmode.supports(*vecmode.MODES)
class KeepsPendingResetStep(VectorWrapper):
    """Counts each episode's steps, skipping NEXT_STEP's reset step by itself,
    but never forgets a pending one at reset(): the step after counts 0."""

    def __init__(self, env):
        super().__init__(env)
        self.next_step = vecmode.modes.mode_of(env) is AutoresetMode.NEXT_STEP
        self.t = np.zeros(self.num_envs, dtype=np.int64)
        self.pending = np.zeros(self.num_envs, dtype=bool)

    def reset(self, *, seed=None, options=None):
        mask = (options or {}).get("reset_mask")
        obs, infos = self.env.reset(seed=seed, options=options)
        self.t[slice(None) if mask is None else mask] = 0  # (pending kept: the bug)
        return obs, infos

    def step(self, actions):
        obs, _, terms, truncs, infos = self.env.step(actions)
        real = ~self.pending if self.next_step else np.ones(self.num_envs, bool)
        self.t = np.where(real, self.t + 1, 0)
        ended = terms | truncs
        out = np.where(real, self.t.astype(np.float64), 0.0)
        if self.next_step:
            self.pending = ended
        else:
            self.t[ended] = 0
        return obs, out, terms, truncs, infos


def test_catches_a_pending_reset_step_kept_across_reset():
    """Only a reset() right after an episode's end shows it: the kit makes one
    in NextStep and Disabled, and compares them."""
    with pytest.raises(ConformanceError) as caught:
        check_wrapper(KeepsPendingResetStep)
    message = str(caught.value)
    assert message.startswith(
        "KeepsPendingResetStep breaks mode_equivalence_together (expected: the "
        "same transitions in every mode, ends together).\n[Disabled over "
        "vecmode.SyncVectorEnv, episodes ending together, reset() after an end] "
        "(here) differs from [NextStep over vecmode.SyncVectorEnv, episodes ending "
        "together, reset() after an end] (there)"
    ), message
    assert "Clear NEXT_STEP's pending reset step at reset()" in message
    # neither the other modes alone, nor NextStep alone, can show it
    check_wrapper(KeepsPendingResetStep, modes=["NextStep", "SameStep"])
    check_wrapper(ClearsPendingResetStep)  # and the fixed wrapper passes


class ClearsPendingResetStep(KeepsPendingResetStep):
    def reset(self, *, seed=None, options=None):
        mask = (options or {}).get("reset_mask")
        self.pending[slice(None) if mask is None else mask] = False
        return super().reset(seed=seed, options=options)


# ------------------------------------------ big arrays in messages (review)
@vecmode.supports(*vecmode.MODES)
class FlipsOnePixel(VectorWrapper):
    """Inverts pixel [2, 5, 1] of image observations, but not of final_obs."""

    def _flip(self, obs):
        obs = obs.copy()
        obs[:, 2, 5, 1] = 255 - obs[:, 2, 5, 1]
        return obs

    def reset(self, *, seed=None, options=None):
        obs, infos = self.env.reset(seed=seed, options=options)
        return self._flip(obs), infos

    def step(self, actions):
        obs, rewards, terms, truncs, infos = self.env.step(actions)
        return self._flip(obs), rewards, terms, truncs, infos


def test_a_big_image_difference_is_named_by_index_in_a_few_lines():
    with pytest.raises(ConformanceError) as caught:
        check_wrapper(FlipsOnePixel, obs_type="image")
    message = str(caught.value)
    assert len(message.splitlines()) <= 4, message
    found = re.search(
        r"field next_obs: uint8 \(6, 8, 3\) arrays differ at \[2, 5, 1\]: "
        r"(\d+) here, (\d+) there \(1 of 144 elements\)",
        message,
    )
    assert found is not None, message
    assert int(found[1]) + int(found[2]) == 255


def test_big_image_observations_outside_the_space_are_summarised():
    @vecmode.supports(*vecmode.MODES)
    class Narrow(VectorWrapper):
        """Declares a space its image observations are not in."""

        def __init__(self, env):
            super().__init__(env)
            shape = env.single_observation_space.shape
            self.single_observation_space = gym.spaces.Box(0, 10, shape, np.uint8)
            self.observation_space = gym.vector.utils.batch_space(
                self.single_observation_space, env.num_envs
            )

    with pytest.raises(ConformanceError, match="returns_well_formed_results") as e:
        check_wrapper(Narrow, obs_type="image")
    message = str(e.value)
    assert len(message.splitlines()) <= 4, message
    assert "the observations uint8 (3, 6, 8, 3) array [  0   0   0 ..." in message


@vecmode.supports(*vecmode.MODES)
class ForgetsDisabled(VectorWrapper):
    """Each episode's step count as reward, written for the two autoreset modes:
    in Disabled nothing clears it (the caller's masked reset should)."""

    def __init__(self, env):
        super().__init__(env)
        self.mode = vecmode.modes.mode_of(env)
        self.t = np.zeros(self.num_envs)
        self.pending = np.zeros(self.num_envs, dtype=bool)

    def reset(self, *, seed=None, options=None):
        if (options or {}).get("reset_mask") is None:
            self.t[:], self.pending[:] = 0, False
        return self.env.reset(seed=seed, options=options)

    def step(self, actions):
        obs, _, terms, truncs, infos = self.env.step(actions)
        real = ~self.pending
        self.t = np.where(real, self.t + 1, 0)
        out, ended = np.where(real, self.t, 0.0), terms | truncs
        if self.mode is AutoresetMode.NEXT_STEP:
            self.pending = ended
        elif self.mode is AutoresetMode.SAME_STEP:
            self.t[ended] = 0
        return obs, out, terms, truncs, infos


def test_a_mode_alone_differing_is_named_with_its_hint():
    with pytest.raises(ConformanceError) as caught:
        check_wrapper(ForgetsDisabled)
    message = str(caught.value)
    assert "[Disabled over vecmode.SyncVectorEnv, episodes ending together] (here)" in (
        message
    )
    assert "NextStep and SameStep agree: Disabled alone differs." in message
    assert "Handle reset(options={'reset_mask': mask})" in message


def test_the_odd_mode_s_message_keeps_whole_values_and_the_property_s_hint():
    """Values printed over several lines, and the hint that names the other
    causes (batch_dependent), stay in the message."""
    reshape = [lambda e: gym.wrappers.ReshapeObservation(e, (3, 1))]
    with pytest.raises(ConformanceError) as caught:
        check_wrapper(ForgetsFinalObs, wrappers=reshape)
    message = str(caught.value)
    assert "[-103.5]] here, [[-201.]\n [ 201.]\n [-207.]] there\n" in message
    assert "SameStep alone differs" in message
    assert message.endswith("declare batch_dependent = True.")


@vecmode.supports(*vecmode.MODES)
class ForgetsFinalObsAndFailsMaskedResets(ForgetsFinalObs):
    def reset(self, *, seed=None, options=None):
        if (options or {}).get("reset_mask") is not None:
            raise RuntimeError("no masked resets here")
        return super().reset(seed=seed, options=options)


def test_a_third_mode_failing_on_its_own_leaves_the_first_failure_reported():
    with pytest.raises(ConformanceError) as caught:
        check_wrapper(ForgetsFinalObsAndFailsMaskedResets)
    assert caught.value.property == "mode_equivalence_together"
    assert "[SameStep over vecmode.SyncVectorEnv" in str(caught.value)


class PooledScale(vw.StatefulWrapper):
    """Scales rewards by a running mean square pooled over the sub-envs, and
    does not say batch_dependent = True."""

    reads_final_observations = False

    def __init__(self, env):
        super().__init__(env)
        self.n, self.mean_sq = 0, 1.0

    def transition(self, observations, rewards, terminations, truncations, mask):
        r = rewards[mask]
        self.n += len(r)
        self.mean_sq += (np.mean(r**2) - self.mean_sq) * len(r) / self.n

    def _step_result(self, result):
        obs, rewards, *rest = super()._step_result(result)
        return obs, rewards / np.sqrt(self.mean_sq), *rest


def test_a_pooled_statistic_undeclared_is_told_to_declare_batch_dependent():
    """Episodes ending together agree, so the staggered failure's hint starts
    with pooling (it came last, after a note on NextStep's reset step)."""
    with pytest.raises(ConformanceError) as caught:
        check_wrapper(PooledScale)
    assert caught.value.property == "mode_equivalence_staggered"
    hint = str(caught.value).splitlines()[-1]
    assert hint.startswith(
        "Episodes ending together agreed. If its outputs pool the sub-envs of a "
        "call (a running mean), declare batch_dependent = True; else"
    )
    assert check_wrapper(PooledScale, batch_dependent=True).modes == tuple(
        AutoresetMode
    )


class NeedsVecmodesCore(vw.StatefulWrapper):
    """Builds over vecmode's sync core only."""

    def __init__(self, env):
        if not isinstance(env.unwrapped, vecmode.SyncVectorEnv):
            raise TypeError("NeedsVecmodesCore needs vecmode.SyncVectorEnv")
        super().__init__(env)


def test_a_wrapper_built_over_the_first_base_only_is_told_which_bases():
    """Its error over Gymnasium's base went out as it was (the command line:
    "raised", exit 1), with no word of the bases."""
    with pytest.raises(ConformanceError) as caught:
        check_wrapper(NeedsVecmodesCore)
    assert caught.value.property == "builds_in_declared_modes"
    lines = str(caught.value).splitlines()
    assert lines[1] == (
        "[NextStep over gymnasium.vector.SyncVectorEnv, episodes ending together]: "
        "was not built (it is in NextStep over vecmode.SyncVectorEnv): TypeError: "
        "NeedsVecmodesCore needs vecmode.SyncVectorEnv"
    )
    assert "bases=['vecmode.SyncVectorEnv']" in lines[2]
    assert check_wrapper(NeedsVecmodesCore, bases="vecmode.SyncVectorEnv").modes
