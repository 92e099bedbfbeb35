"""check_wrapper catches wrappers that write where they must not: into the
caller's inputs, into what they returned before, into what the env below returned."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, VectorWrapper

import vecmode
from vecmode import wrappers as vw
from vecmode.testing import check_wrapper
from vecmode.testing.wrapper.driver import (
    CHANGED_LATER_HINT,
    OPTIONS_HINT,
    WROTE_BELOW_HINT,
)
from vecmode.testing.wrapper.report import NOT_EPISODIC


# ------------------------------------------------ results, inputs, the env below
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
    assert (
        "NEXT_STEP's reset step returned reward 1.0, terminated False, truncated "
        "False: expected reward 0 and both flags False"
    ) in message
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
    """The kit keeps what the wrapper returns (Gymnasium's base returns new
    arrays): observations that a later call writes over fail, since a caller
    keeps them;
    a wrapper that says it reuses its buffer (copy = False, as copy=False vector
    envs do) conforms, its observations copied by the kit."""
    with pytest.raises(AssertionError) as caught:
        check_wrapper(ReusesItsBuffer)
    message = str(caught.value)
    assert (
        "[NextStep over gymnasium.vector.SyncVectorEnv, episodes ending together], "
        "call 0 (reset), field observations: what was returned here (observations) "
        "was changed by a later call ([NextStep over gymnasium.vector.SyncVectorEnv, "
        "episodes ending together], call 1 (step))"
    ) in message, message
    assert CHANGED_LATER_HINT in message
    says_so = type("SaysCopyFalse", (ReusesItsBuffer,), {"copy": False})
    report = check_wrapper(says_so)
    assert report.modes == tuple(AutoresetMode)
    assert report.limits == (NOT_EPISODIC,)


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
    assert CHANGED_LATER_HINT in message


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
    assert WROTE_BELOW_HINT in message


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
        "reset() changed the caller's options: {'reset_mask': array([ True,  True,  "
        "True])} became {}"
    ) in message, message
    assert OPTIONS_HINT in message
    assert "Pass a copy down, options = dict(options)" in message
    with pytest.raises(AssertionError) as caught:
        check_wrapper(WritesIntoTheResetMask)
    message = str(caught.value)
    assert "field options['reset_mask']: " in message, message
    assert (
        "reset() wrote into the caller's reset_mask array: [False  True False] "
        "became [ True  True False]"
    ) in message, message
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


@vecmode.supports(*vecmode.MODES)
class KeepsLastObservations(vw.ObservationWrapper):
    """Wrong over a ``copy=False`` env: adds the last observations, kept as the
    array the env returned, which the env writes the next ones into."""

    def __init__(self, env):
        super().__init__(env)
        self.last = None

    def observations(self, observations):
        out = observations + (0 if self.last is None else self.last)
        self.last = observations
        return out


@vecmode.supports(*vecmode.MODES)
class KeepsACopyOfThem(KeepsLastObservations):
    """Right over every base: keeps a copy."""

    def observations(self, observations):
        return super().observations(np.array(observations))


def test_a_wrapper_keeping_the_env_s_arrays_fails_over_the_copy_false_base():
    """vecmode's base reuses its observation arrays (copy=False), Gymnasium's
    does not: a wrapper holding the env's array past a call sees other values
    over each, and the hint says to keep a copy."""
    only = ["same_over_every_base"]  # (neither handles masked resets)
    with pytest.raises(AssertionError) as caught:
        check_wrapper(KeepsLastObservations, properties=only)
    message = str(caught.value)
    assert "keep a copy (np.array(obs)) of any you hold past a call" in message
    check_wrapper(KeepsACopyOfThem, properties=only)
