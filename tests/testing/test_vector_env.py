"""vecmode.testing.vector_env.check_vector_env: proves a vector env's declared mode.

Correct envs (Gymnasium's, vecmode's, a hand-written numpy one) pass in each mode;
deliberately broken ones fail with a message naming the first difference: the
call, the sub-env, the field, what was expected and what came.
"""

from __future__ import annotations

import functools
import re

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.spaces import Discrete
from gymnasium.vector.utils import batch_space

import vecmode
from tests.custom_vector_envs import CounterVectorEnv
from vecmode import AutoresetMode
from vecmode.probe import ProbeResult
from vecmode.replay.predictions import (
    AUTORESET_STEP,
    final_obs_present_message,
    masked_keeps_message,
)
from vecmode.testing import scheduled_env_fns
from vecmode.testing.vector_env import VectorEnvReport, check_vector_env

MODES = list(AutoresetMode)
FORK = "fork"
NEXT, SAME, DISABLED = MODES
#: The report's line for an env built with copy=False.
COPY_FALSE_LINE = (
    "what a call returned is not changed by later calls, the observations excepted "
    "(copy=False)"
)


def _gym_sync(mode, obs_type="box"):
    return gym.vector.SyncVectorEnv(
        scheduled_env_fns(3, obs_type=obs_type), autoreset_mode=mode
    )


def _pendulum(mode):
    fns = [functools.partial(gym.make, "Pendulum-v1", max_episode_steps=4)] * 2
    return gym.vector.SyncVectorEnv(fns, autoreset_mode=mode)


def _gym_async(mode):
    fns = [functools.partial(gym.make, "CartPole-v1", max_episode_steps=6)] * 2
    return gym.vector.AsyncVectorEnv(fns, autoreset_mode=mode, context=FORK)


def _vecmode_make_vec(mode):
    return vecmode.make_vec(
        "CartPole-v1",
        num_envs=3,
        autoreset_mode=mode,
        max_episode_steps=5,
        vectorization_mode="sync",
    )


ENVS = {
    "gymnasium-sync-dict-obs": functools.partial(_gym_sync, obs_type="dict"),
    "gymnasium-sync-continuous-actions": _pendulum,
    "vecmode-make_vec": _vecmode_make_vec,
    "custom-numpy": functools.partial(CounterVectorEnv, 3),
}


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
@pytest.mark.parametrize("name", sorted(ENVS))
def test_correct_envs_pass(name, mode):
    report = check_vector_env(functools.partial(ENVS[name], mode), steps=60)
    assert isinstance(report, VectorEnvReport)
    assert report.mode is mode
    assert report.steps >= 60  # NEXT_STEP: a few more, to reset with episodes pending
    assert report.episode_ends >= 2
    assert isinstance(report.probe, ProbeResult) and report.probe.mode is mode
    assert report.masked_resets > 0  # in every mode (a strict subset each time)
    text = str(report)
    assert text.startswith(
        f"{report.env} conforms to {mode.value}: {report.steps} steps, "
        f"{report.episode_ends} episode ends"
    )
    assert f"vecmode.probe_mode finds {mode.value}" in text


class _IntKeys(gym.Wrapper):
    """Infos with a non-string key (as some envs' are), at reset and step."""

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        return obs, {**info, 1: 1.0}

    def step(self, action):
        *result, info = self.env.step(action)
        return (*result, {**info, 1: 2.0})


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_infos_with_non_string_keys_pass(mode):
    """The kit sorted the keys and read key.startswith: int keys raised."""

    def factory():
        return vecmode.make_vec(
            "CartPole-v1",
            2,
            "sync",
            autoreset_mode=mode,
            max_episode_steps=5,
            wrappers=[_IntKeys],
        )

    assert check_vector_env(factory, steps=40).mode is mode


def _vecmode_async(mode):
    return vecmode.make_vec(
        "CartPole-v1",
        num_envs=2,
        vectorization_mode="async",
        autoreset_mode=mode,
        max_episode_steps=5,
        vector_kwargs={"context": FORK},
    )


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
@pytest.mark.parametrize(
    "factory", [_gym_async, _vecmode_async], ids=["gymnasium", "vecmode"]
)
def test_async_envs_pass(factory, mode):
    """Gymnasium's AsyncVectorEnv in DISABLED mode steps an ended sub-env on
    instead of raising; that is still DISABLED (the caller must not do it)."""
    assert check_vector_env(functools.partial(factory, mode), steps=40).mode is mode


def test_gymnasium_custom_cartpole_vector_env_passes():
    report = check_vector_env(
        functools.partial(gym.make_vec, "CartPole-v1", num_envs=4)
    )
    assert report.mode is NEXT
    assert report.env.startswith("CartPoleVectorEnv(")


# ------------------------------------------------------------------ failures
def _failure(factory, **kwargs) -> str:
    with pytest.raises(AssertionError) as caught:
        check_vector_env(factory, **kwargs)
    return str(caught.value)


def test_declares_same_step_but_behaves_next_step():
    """Sub-env 0's first episode ends at call 2: SAME_STEP would have put its final
    observation in info there."""
    message = _failure(lambda: CounterVectorEnv(3, NEXT, declared=SAME))
    assert message.startswith(
        "CounterVectorEnv(num_envs=3) does not behave as SameStep, the mode it "
        "declares: call 2 (step), sub-env 0, info['_final_obs']: expected True, got "
        f"<no such key> ({final_obs_present_message(SAME)})."
    )
    assert message.endswith(
        "vecmode.probe_mode finds that it behaves as NextStep: declare that mode, "
        "or fix the env."
    )


def test_forgets_final_obs_mask():
    message = _failure(lambda: CounterVectorEnv(3, SAME, bug="no_final_obs_mask"))
    assert (
        "call 2 (step), sub-env 0, info['_final_obs']: expected True, got <no such key>"
    ) in message
    # the env fits no mode, so the probe adds no diagnosis
    assert "probe_mode finds" not in message


def test_next_step_reset_step_with_a_reward():
    """Sub-env 0 ends at call 2, so call 3 is its reset step."""
    message = _failure(lambda: CounterVectorEnv(3, NEXT, bug="reset_step_reward"))
    assert (
        "does not behave as NextStep, the mode it declares: call 3 (step), sub-env 0, "
        "reward: expected 0.0, got 1.0 (float64) (in NextStep mode the step after an "
        "episode ends resets the sub-env: reward 0, flags False, action ignored)."
    ) in message


class PaidResetStep(gym.vector.VectorEnv):
    """NextStep, but its reset step pays reward 1 (a review's env, shortened)."""

    metadata = {"autoreset_mode": NEXT}

    def __init__(self, n: int = 4) -> None:
        self.num_envs, box = n, gym.spaces.Box(-100, 100, (2,), np.float32)
        self.single_observation_space, self.single_action_space = box, Discrete(2)
        self.observation_space = batch_space(box, n)
        self.action_space = batch_space(Discrete(2), n)
        self.x, self.t = np.zeros(n, np.float32), np.zeros(n, int)
        self.pending, self.rng = np.zeros(n, bool), np.random.default_rng()

    def _reset(self, mask):
        self.x[mask], self.t[mask] = self.rng.integers(-1, 2, mask.sum()), 0
        self.pending[mask] = False
        return np.stack([self.x, self.t.astype(np.float32)], 1)

    def reset(self, *, seed=None, options=None):
        self.rng = np.random.default_rng(seed) if seed is not None else self.rng
        everyone = np.ones(self.num_envs, bool)
        return self._reset(np.asarray((options or {}).get("reset_mask", everyone))), {}

    def step(self, actions):
        rewards, pending = np.zeros(self.num_envs, np.float32), self.pending.copy()
        self._reset(pending)
        rewards[pending] = 1.0  # the bug
        live = ~pending
        self.x[live] += np.where(np.asarray(actions)[live] == 1, 1, -1)
        self.t[live] += 1
        rewards[live] = self.x[live] / 10
        terms = live & (np.abs(self.x) >= 3)
        truncs = live & (self.t >= 6) & ~terms
        self.pending = terms | truncs
        obs = np.stack([self.x, self.t.astype(np.float32)], 1)
        return obs, rewards, terms, truncs, {}


def test_a_paid_reset_step_is_not_advised_to_declare_disabled():
    """The probe knows a reset step by its reward and flags alone, so it finds
    Disabled here: the advice says when declaring that would be wrong."""
    message = _failure(PaidResetStep)
    assert (
        "vecmode.probe_mode finds that it behaves as Disabled: declare that mode if "
        "it does not reset on the step after an episode's end; if it does, fix that "
        "step's reward and flags."
    ) in message, message


def test_next_step_reset_step_with_a_flag():
    message = _failure(lambda: CounterVectorEnv(3, NEXT, bug="reset_step_truncated"))
    assert (
        "call 3 (step), sub-env 0, truncated: expected False, got True (bool) "
        "(in NextStep mode the step after an episode ends resets the sub-env: "
        "reward 0, flags False, action ignored)."
    ) in message


def test_same_step_wrong_final_obs_mask():
    message = _failure(lambda: CounterVectorEnv(3, SAME, bug="final_obs_mask_all"))
    assert (
        "call 2 (step), sub-env 1, info['_final_obs']: expected False, got True "
        "(in SameStep mode the masks are True exactly for the sub-envs whose "
        "episode ended here)."
    ) in message


def test_same_step_final_obs_outside_the_single_space():
    message = _failure(lambda: CounterVectorEnv(3, SAME, bug="final_obs_float64"))
    # the space as this numpy prints it (Box(-1e+06, ...) or Box(-1000000.0, ...))
    space = CounterVectorEnv(3, SAME).single_observation_space
    assert (
        f"call 2 (step), sub-env 0, info['final_obs']: expected an element of "
        f"{space}, got [0., 0., 2.] (float64)"
    ) in message


def test_disabled_masked_reset_info_for_other_sub_envs():
    message = _failure(lambda: CounterVectorEnv(3, DISABLED, bug="reset_info_all"))
    assert (
        "call 2 (reset(mask)), sub-env 1, info['_episode']: expected False, got True "
        "(in Disabled mode a masked reset's info holds data only for the reset "
        "sub-envs)."
    ) in message


def test_next_step_reset_step_that_uses_its_action():
    """A NEXT_STEP env that steps (rather than resets) on the step after an end:
    reward and flags are those of a reset step, but the observation depends on the
    action, which the second instance changes."""

    class ActsOnResetStep(CounterVectorEnv):
        def step(self, actions):
            resetting = self.ended.copy()
            obs, rewards, terms, truncs, infos = super().step(actions)
            obs[resetting, 2] = actions[resetting]  # the action leaks into obs
            return obs, rewards, terms, truncs, infos

    message = _failure(lambda: ActsOnResetStep(3, NEXT))
    assert re.search(
        r"call 3 \(step\), sub-env 0, obs with action \S+ instead of \S+: "
        r"expected \[.*\] \(float32\), got \[.*\] \(float32\) \("
        + re.escape("in NextStep mode a reset step ignores its action)"),
        message,
    ), message


@pytest.fixture
def declared_keeps_pending():
    """CounterVectorEnv declared as keeping pending autoresets over a masked reset
    (as Gymnasium's AsyncVectorEnv(shared_memory=False) is)."""
    vecmode.register_vector_env(CounterVectorEnv, masked_reset="keeps-pending")
    yield
    vecmode.unregister_vector_env(CounterVectorEnv)


def test_reset_that_keeps_pending_autoresets(declared_keeps_pending):
    """After its run the check steps on until an episode ends (sub-env 0's, at
    some step k), resets with seed + 1 at call k + 1 and steps: that step must not
    be sub-env 0's autoreset. (Its masked reset keeps them too, and is declared
    so: the check's masked resets expect it.)"""
    message = _failure(lambda: CounterVectorEnv(2, NEXT, bug="reset_keeps_pending"))
    found = re.search(r"call (\d+) \(step\), sub-env 0, obs: ", message)
    assert found, message
    reset_call = int(found.group(1)) - 1
    assert (
        "(in NextStep mode reset() clears pending autoresets, but this step looks "
        "like the autoreset of the episode that ended before the reset at call "
        f"{reset_call}; a fresh instance returns the expected value)."
    ) in message


def test_gymnasium_async_without_shared_memory_keeps_pending_autoresets():
    """Gymnasium 1.4's AsyncVectorEnv(shared_memory=False) in NEXT_STEP mode clears
    a worker's pending autoreset only when it writes to shared memory, so after
    reset() the first step of a sub-env whose episode had ended is a reset step
    (reward 0, action ignored). The check catches it; with shared memory it passes.
    """

    def factory(shared_memory):
        fns = [functools.partial(gym.make, "CartPole-v1", max_episode_steps=6)] * 2
        return gym.vector.AsyncVectorEnv(fns, shared_memory=shared_memory, context=FORK)

    message = _failure(functools.partial(factory, False), steps=30)
    assert "in NextStep mode reset() clears pending autoresets" in message
    assert check_vector_env(functools.partial(factory, True), steps=30).mode is NEXT


def test_disabled_reset_mask_ignored():
    """After the first step, the check resets sub-env 0 alone (in the middle of its
    episode); that must leave sub-env 1 (observation [1, 0, 1]) alone, but this env
    resets it to [1, 1, 0]."""
    message = _failure(
        lambda: CounterVectorEnv(3, DISABLED, bug="reset_mask_resets_all")
    )
    assert (
        "call 2 (reset(mask)), sub-env 1, obs: expected [1., 0., 1.] (float32), got "
        f"[1., 1., 0.] (float32) ({masked_keeps_message(DISABLED)})."
    ) in message


def test_final_obs_is_a_copy_of_the_reset_obs():
    message = _failure(lambda: CounterVectorEnv(3, SAME, bug="final_obs_is_reset_obs"))
    assert (
        "call 2 (step), sub-env 0, info['final_obs']: expected "
        "the ended episode's last observation, got [0., 1., 0.] (float32)"
    ) in message
    assert "at all " in message and "episode ends" in message
    # an env whose every episode ends where it started looks the same: said
    assert "unless every episode ends in its first state" in message


class SaysCopyFalse(CounterVectorEnv):
    """Says it reuses its observation buffer, as copy=False vector envs do."""

    copy = False


def test_final_obs_is_a_view_of_the_obs_buffer():
    """(The env reuses its observation buffer too, which copy=False allows.)"""
    message = _failure(lambda: SaysCopyFalse(3, SAME, bug="final_obs_view"))
    assert (
        "call 2 (step), sub-env 0, info['final_obs']: expected an array of its own, "
        "got an array sharing memory with the returned observations (in SameStep "
        "mode the final observation must outlive the reset: return a copy, not a "
        "view of the observation buffer)"
    ) in message


def test_nondeterministic_env():
    message = _failure(lambda: CounterVectorEnv(3, NEXT, bug="unseeded"))
    assert "instance 2, call 0 (reset), sub-env 0, obs: expected [" in message
    assert (
        "a second instance, reset with seed=0 and given the same actions, returned "
        "something else: make the env deterministic under reset(seed=...)"
    ) in message


def test_observation_outside_the_space():
    class Escapes(CounterVectorEnv):
        def step(self, actions):
            obs, *rest = super().step(actions)
            obs[1, 2] = 1e9
            return (obs, *rest)

    message = _failure(lambda: Escapes(3, NEXT))
    assert "call 1 (step), sub-env 1, obs: expected an element of Box(" in message


def test_wrong_flag_dtype():
    class IntFlags(CounterVectorEnv):
        def step(self, actions):
            obs, rewards, terms, truncs, infos = super().step(actions)
            return obs, rewards, terms.astype(int), truncs, infos

    message = _failure(lambda: IntFlags(2, SAME))
    assert (
        "call 1 (step), terminations: expected an ndarray of shape (2,) and dtype "
        "bool, got ndarray of shape (2,) and dtype int64"
    ) in message


def test_rewards_not_an_array():
    class ListRewards(CounterVectorEnv):
        def step(self, actions):
            obs, rewards, terms, truncs, infos = super().step(actions)
            return obs, rewards.tolist(), terms, truncs, infos

    message = _failure(lambda: ListRewards(2, DISABLED))
    assert (
        "call 1 (step), rewards: expected an ndarray of shape (2,) and dtype float or "
        "int, got list"
    ) in message


def test_final_info_in_a_mode_without_final_obs():
    """DISABLED returns the final info as the step's info; a final_info key there
    is a SAME_STEP habit. (The check resets sub-env 0 at call 2, after its first
    step, so its episode ends at call 4.)"""

    class FinalInfo(CounterVectorEnv):
        def step(self, actions):
            obs, rewards, terms, truncs, infos = super().step(actions)
            ended = terms | truncs
            if ended.any():
                infos = {"final_info": {}, "_final_info": ended}
            return obs, rewards, terms, truncs, infos

    message = _failure(lambda: FinalInfo(3, DISABLED))
    assert (
        "call 4 (step), info['final_info']: expected no such key, got {} "
        "(in Disabled mode info has no final_obs / final_info)."
    ) in message


def test_disabled_env_that_resets_by_itself_is_caught_by_the_probe():
    """It declares DISABLED and honours reset_mask, but its step resets an ended
    sub-env (NEXT_STEP): the contract run (which always resets ended sub-envs)
    cannot see that, the probe can."""
    message = _failure(lambda: CounterVectorEnv(3, NEXT, declared=DISABLED))
    assert message.startswith(
        "CounterVectorEnv(num_envs=3) declares Disabled, but vecmode.probe_mode does "
        "not find it behaving so: behaves as NextStep (declares Disabled)"
    )


def test_undeclared_mode():
    message = _failure(lambda: CounterVectorEnv(2, NEXT, declared=None))
    assert message == (
        "CounterVectorEnv(num_envs=2) declares no metadata['autoreset_mode']: set "
        "it to the mode the env implements (vecmode.probe_mode(factory) finds it)."
    )


def test_declared_mode_that_is_not_a_mode():
    message = _failure(lambda: CounterVectorEnv(2, NEXT, declared="sometimes"))
    assert message.startswith(
        "CounterVectorEnv's metadata['autoreset_mode'] is 'sometimes', not an "
        "autoreset mode: the env must declare one of 'NextStep', 'SameStep', "
        "'Disabled' (or an AutoresetMode) there."
    )


def test_too_few_episode_ends():
    message = _failure(
        functools.partial(CounterVectorEnv, 2, SAME, lengths=[30, 40]), steps=35
    )
    assert message == (
        "CounterVectorEnv(num_envs=2): 1 episode end(s) in 35 steps, fewer than "
        "min_episode_ends=2: raise steps, or make the episodes shorter."
    )


@pytest.mark.parametrize(
    ("mode", "unmade", "ends"),
    [(NEXT, "after an end and mid-episode", 2), (SAME, "mid-episode", 2),
     (DISABLED, "mid-episode", 3)],
    ids=lambda value: getattr(value, "value", ""),
)  # fmt: skip
def test_a_run_too_short_for_its_masked_resets_fails_rather_than_claim_them(
    mode, unmade, ends
):
    """It passed a mask-ignoring env, listing "masked resets (...) reset exactly
    the masked sub-envs" among its checks, with no masked reset made (or one made
    mid-episode, of sub-env 0, whose episode did not end to show it ignored)."""
    factory = functools.partial(
        CounterVectorEnv, 2, mode, lengths=[6, 2], bug="reset_mask_ignored"
    )
    assert _failure(factory, steps=4, min_episode_ends=1) == (
        f"CounterVectorEnv(num_envs=2): the run ended before making its masked "
        f"reset(s) {unmade} ({ends} episode end(s) in 4 steps): raise steps, or "
        f"make the episodes shorter, but not all one step long (a mid-episode reset "
        f"needs an episode that goes on)."
    )
    assert "does not behave as" in _failure(factory, steps=30)  # long enough


class ResetsOnlyEnded(CounterVectorEnv):
    """Wrong: a masked reset resets only the masked sub-envs whose episode ended."""

    def reset(self, *, seed=None, options=None):
        if options and "reset_mask" in options:
            options = {**options, "reset_mask": options["reset_mask"] & self.ended}
        return super().reset(seed=seed, options=options)


def test_disabled_with_a_sub_env_ending_every_step_makes_its_mid_episode_reset():
    """Sub-env 0 ends at every step, so the caller resets it after each: the
    mid-episode masked reset waited for a step with none to reset, and a correct
    env failed. It follows the caller's reset (call 2), and is still checked."""
    factory = functools.partial(CounterVectorEnv, 2, DISABLED, lengths=[1, 5])
    assert check_vector_env(factory, steps=60).mode is DISABLED
    message = _failure(lambda: ResetsOnlyEnded(2, DISABLED, lengths=[1, 5]))
    assert (
        "call 3 (reset(mask)), sub-env 1, obs: expected a new episode's first "
        "observation, got [1., 0., 1.] (float32)"
    ) in message, message


def test_the_probe_gets_the_steps_the_run_made():
    """In NextStep the run goes on to an episode end: episodes of 35 ended
    within it, but the probe, given steps=30, found none and failed the env."""
    vecmode.register_vector_env(CounterVectorEnv, masked_reset="ignores")
    try:
        report = check_vector_env(
            lambda: CounterVectorEnv(2, NEXT, lengths=[35, 35]), steps=30
        )
    finally:
        vecmode.unregister_vector_env(CounterVectorEnv)
    assert report.steps > 30 and report.mode is NEXT


def test_bad_arguments():
    with pytest.raises(
        TypeError, match="takes a function that builds a new vector env"
    ):
        check_vector_env(CounterVectorEnv(2))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="steps must be an int >= 1"):
        check_vector_env(CounterVectorEnv, steps=0)
    with pytest.raises(ValueError, match="min_episode_ends must be an int >= 1"):
        check_vector_env(CounterVectorEnv, min_episode_ends=True)
    for seed in (None, 1.5, True):  # None: a TypeError from inside the kit
        with pytest.raises(TypeError, match=f"seed must be an int, got {seed}"):
            check_vector_env(CounterVectorEnv, seed=seed)  # type: ignore[arg-type]


def test_every_instance_is_closed():
    made: list[CounterVectorEnv] = []

    def factory():
        made.append(CounterVectorEnv(3, SAME, bug="final_obs_view"))
        return made[-1]

    with pytest.raises(AssertionError):
        check_vector_env(factory, steps=20)
    assert made and all(env.closed_count == 1 for env in made)


# ------------------------------------------- what a call returned, kept
class ReusesItsBuffer(CounterVectorEnv):
    """Returns its observation buffer at every call, written over."""

    def _out(self, obs):
        return obs


class AliasedTruncations(CounterVectorEnv):
    """Returns its own truncations array, which the next step writes into."""

    def step(self, actions):
        obs, rewards, terminations, truncations, infos = super().step(actions)
        if not hasattr(self, "flags"):
            self.flags = np.zeros(self.num_envs, dtype=np.bool_)
        self.flags[...] = truncations
        return obs, rewards, terminations, self.flags, infos


def test_a_returned_array_changed_by_a_later_call_fails():
    """Sub-env 0's first episode is truncated at call 2: the truncations returned
    by call 1 (all False) are written over then."""
    message = _failure(lambda: AliasedTruncations(3, NEXT))
    assert (
        "call 1 (step), truncations: expected to stay as returned, got changed by "
        "call 2 (the caller keeps what a call returns: return new arrays and a new "
        "info dict, not ones the env writes into again)."
    ) in message, message


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_a_reused_observation_buffer_fails_unless_the_env_says_copy_false(mode):
    message = _failure(lambda: ReusesItsBuffer(3, mode))
    assert (
        "call 0 (reset), observations: expected to stay as returned, got changed "
        "by call 1"
    ) in message, message
    assert "or say so: copy = False on the env" in message  # the way out, said

    class CopyFalse(ReusesItsBuffer):
        copy = False

    report = check_vector_env(lambda: CopyFalse(3, mode), steps=40)
    assert COPY_FALSE_LINE in report.checks
    # never the other arrays
    message = _failure(
        lambda: type("Both", (CopyFalse, AliasedTruncations), {})(3, mode)
    )
    assert "call 1 (step), truncations: expected" in message, message


def test_gymnasium_copy_false_envs_pass():
    """Gymnasium's vector envs built with copy=False reuse their observation
    buffer: allowed, and said in the report."""
    fns = [functools.partial(gym.make, "CartPole-v1", max_episode_steps=5)] * 2
    report = check_vector_env(
        lambda: gym.vector.SyncVectorEnv(fns, copy=False), steps=30
    )
    assert COPY_FALSE_LINE in report.checks


# ------------------------------------------- masked resets in every mode
@pytest.mark.parametrize(
    ("mode", "last"),
    [(NEXT, "[0., 1., 0.]"), (SAME, "[0., 1., 1.]")],
    ids=["NextStep", "SameStep"],
)
def test_a_masked_reset_that_resets_every_sub_env_fails_in_every_mode(mode, last):
    """The second step where an episode ends is call 3 (sub-env 1's first end):
    the check then resets sub-env 1 alone, which must leave sub-env 0 (observation
    [sub-env, episode, step]) alone."""
    message = _failure(lambda: CounterVectorEnv(3, mode, bug="reset_mask_resets_all"))
    assert (
        f"call 4 (reset(mask)), sub-env 0, obs: expected {last} (float32), got "
        "[0., 2., 0.] (float32) "
        f"(in {mode.value} mode too, reset(options={{'reset_mask': mask}}) resets "
        "only the masked sub-envs. If the env resets every sub-env, declare it: "
        "vecmode.register_vector_env(its class, masked_reset='ignores'))."
    ) in message, message
    assert "masked_reset='ignores'" in message


@pytest.mark.parametrize("mode", [NEXT, SAME], ids=lambda m: m.value)
def test_a_class_declared_to_ignore_the_mask_gets_no_masked_reset(mode):
    """A class declared with masked_reset='ignores' (Gymnasium's
    CartPoleVectorEnv is) is not reset with a mask where the caller need not."""
    vecmode.register_vector_env(CounterVectorEnv, masked_reset="ignores")
    try:
        report = check_vector_env(
            lambda: CounterVectorEnv(3, mode, bug="reset_mask_resets_all"), steps=40
        )
    finally:
        vecmode.unregister_vector_env(CounterVectorEnv)
    assert report.masked_resets == 0
    assert "no masked reset made: its class declares masked_reset='ignores'" in (
        report.checks
    )


def test_a_masked_reset_that_keeps_the_pending_autoreset_fails():
    """Sub-env 1's first episode ends at call 3; the check resets it alone at
    call 4: the step at call 5 must be its new episode's first, not its
    autoreset (another instance, sent another action there, gets the same)."""
    message = _failure(lambda: CounterVectorEnv(3, NEXT, bug="reset_keeps_pending"))
    assert (
        "call 5 (step), sub-env 1, step(): expected a step of the episode that the "
        f"masked reset started, got {AUTORESET_STEP} (in NextStep mode "
        "reset(options={'reset_mask': mask}) clears the masked sub-envs' pending "
        "autoresets, but this step looks like the autoreset of the episode that "
        "ended before the masked reset at call 4."
    ) in message, message


def test_a_masked_reset_declared_to_keep_pending_autoresets_passes(
    declared_keeps_pending,
):
    class KeepsPendingOnMaskedResets(CounterVectorEnv):
        def reset(self, *, seed=None, options=None):
            pending = self.ended.copy()
            result = super().reset(seed=seed, options=options)
            if options and "reset_mask" in options:
                self.ended = pending
            return result

    report = check_vector_env(lambda: KeepsPendingOnMaskedResets(3, NEXT), steps=40)
    assert report.masked_resets > 0
    assert (
        "masked resets (after an end, and mid-episode) reset exactly the "
        "masked sub-envs, keeping their pending autoresets"
    ) in report.checks


@pytest.mark.parametrize("mode", [NEXT, SAME])
def test_one_sub_env_s_report_claims_no_masked_reset(mode):
    """With num_envs=1 the run makes no masked reset (of every sub-env, it is a
    full reset): its report said it had checked them."""
    report = check_vector_env(lambda: CounterVectorEnv(1, mode))
    assert report.masked_resets == 0
    assert "no masked reset made: one sub-env" in "\n".join(report.checks)
    assert not any(line.startswith("masked resets") for line in report.checks)


@pytest.mark.parametrize(
    ("mode", "found"),
    [
        (NEXT, "call 5 (step), sub-env 1, step(): expected "),
        (SAME, "call 6 (reset(mask)), sub-env 1, obs: expected "),
        (DISABLED, "call 2 (reset(mask)), sub-env 0, obs: expected "),
    ],
    ids=lambda value: getattr(value, "value", ""),
)
def test_a_masked_reset_that_resets_nobody_fails(mode, found):
    """NextStep: the sub-env reset after its episode ended is autoreset at the
    next step all the same. SameStep, Disabled: the sub-env reset in the middle
    of its episode comes back unchanged and goes on as in a run without that
    reset, up to its episode's end."""
    message = _failure(lambda: CounterVectorEnv(3, mode, bug="reset_mask_ignored"))
    assert found in message, message
    if mode is not NEXT:
        assert "expected a new episode's first observation" in message
        assert "it was not reset" in message


# ------------------------------------------- advice, and record()
class SilentAutoreset(CounterVectorEnv):
    """Resets an ended sub-env inside the step that ends its episode (as SameStep)
    but reports no final observation: they are lost."""

    def step(self, actions):
        obs, rewards, terminations, truncations, _ = super().step(actions)
        return obs, rewards, terminations, truncations, {}


@pytest.mark.parametrize("declared", [NEXT, DISABLED])
def test_an_env_resetting_inside_the_ending_step_is_told_to_report_final_obs(
    declared,
):
    """Declared Disabled, it passed: every final observation was lost. Declared
    NextStep, the advice was to declare Disabled."""
    message = " ".join(
        _failure(lambda: SilentAutoreset(3, SAME, declared=declared)).split()
    )
    if declared is DISABLED:
        assert "got what a masked reset returns there" in message, message
    else:
        diagnosis = message[message.index("vecmode.probe_mode finds") :]
        assert diagnosis == (
            "vecmode.probe_mode finds that step() reset the sub-env itself: it "
            "returned what a masked reset returns there, then went on as a new "
            "episode. An env that resets inside the ending step must report final "
            "observations in info['final_obs'] and declare SameStep."
        )


def test_record_reports_the_class_verified_in_the_mode_proved():
    class MyCounter(CounterVectorEnv):
        pass

    envs, other_mode = MyCounter(3, NEXT), MyCounter(3, SAME)
    assert vecmode.check_stack(envs)[0].evidence.value == "declared"
    report = check_vector_env(lambda: MyCounter(3, NEXT), steps=40)
    assert report.env_class is MyCounter
    assert report.record() is report
    row = vecmode.check_stack(envs)[0]
    assert row.evidence.value == "verified"
    assert row.evidence_note == (
        f"verified: proven by check_vector_env in this process ({report.summary})"
    )
    vecmode.assert_compatible(envs, verified=True)
    # that mode only, that class only
    assert vecmode.check_stack(other_mode)[0].evidence.value == "declared"
    subclass = type("Sub", (MyCounter,), {})(3, NEXT)
    assert vecmode.check_stack(subclass)[0].evidence.value == "declared"
    # evidence() of the class says the same (it said "none": wrappers only)
    evidence = vecmode.registry.evidence
    assert evidence(MyCounter).value == evidence(envs).value == "verified"
    assert evidence(MyCounter, "SameStep").value == evidence(other_mode).value
    assert evidence(other_mode).value == "declared"


def test_record_refuses_a_stack():
    report = check_vector_env(
        lambda: vecmode.wrappers.ClipReward(CounterVectorEnv(3, NEXT), 0.0, 1.0),
        steps=40,
    )
    assert report.env_class is None
    assert report.stack == ("ClipReward", "CounterVectorEnv")
    with pytest.raises(ValueError) as caught:
        report.record()
    assert str(caught.value).startswith(
        f"check_vector_env proved {report.env}, which the factory built as a stack "
        "(ClipReward over CounterVectorEnv), not one vector env class;"
    )


class _FinalInfoAsList(gym.vector.VectorWrapper):
    """SAME_STEP's ``info["final_info"]`` as a list of per-sub-env dicts, not
    Gymnasium's batched dict."""

    def step(self, actions):
        obs, rewards, terminations, truncations, infos = self.env.step(actions)
        if "final_info" in infos:
            infos = dict(infos)
            infos["final_info"] = [infos["final_info"]] * self.num_envs
        return obs, rewards, terminations, truncations, infos


def test_same_step_final_info_not_a_batched_dict():
    message = _failure(lambda: _FinalInfoAsList(_gym_sync(SAME)))
    assert "info['final_info']" in message, message


class _MostActionsAlike(gym.Env):
    """Reward 0 on every step, and only action 31 of 32 changes the observation
    (as Pong's NOOP and FIRE give the same frames): a step after a masked reset
    looks like an autoreset step to one other random action."""

    observation_space = gym.spaces.Box(0, 1000, (1,), np.float32)
    action_space = Discrete(32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.t += 1
        return (
            np.array([self.t + 100 * (action == 31)], np.float32),
            0.0,
            False,
            False,
            {},
        )


def test_a_step_that_ignores_most_actions_is_no_autoreset_step():
    """Gymnasium's own sync env over it passes: the check tries every other
    action before it calls a step an autoreset step."""
    env_fn = lambda: gym.wrappers.TimeLimit(_MostActionsAlike(), 5)  # noqa: E731
    check_vector_env(lambda: gym.vector.SyncVectorEnv([env_fn] * 2), steps=60)


class _SeededResetLeaks(_MostActionsAlike):
    """A wrong sub-env: the count of seeded resets leaks into the first step
    after one, where only action 31 matters."""

    observation_space = gym.spaces.Box(0, 1e6, (1,), np.float32)
    seeded = 0

    def reset(self, *, seed=None, options=None):
        self.seeded += seed is not None
        return super().reset(seed=seed)

    def step(self, action):
        obs, *rest = super().step(action)
        return obs + 1000 * self.seeded * (self.t == 1), *rest


def test_a_reset_that_differs_from_a_fresh_instance_fails_whatever_the_actions():
    """A step that differs from a fresh instance's after reset(seed=...) fails,
    though another action changes it (no autoreset step is needed for that)."""
    env_fn = lambda: gym.wrappers.TimeLimit(_SeededResetLeaks(), 5)  # noqa: E731
    message = _failure(lambda: gym.vector.SyncVectorEnv([env_fn] * 2))
    assert "a fresh instance returns the expected value" in message
