"""Drop-in fidelity: vecmode's sync env in each mode == gymnasium's SyncVectorEnv.

Differential tests against Gymnasium itself: same seeds, same actions, the same
calls, and every returned value (observations, rewards, flags, the whole info dict
with final_obs / final_info and every mask) must be identical, dtypes included.
"""

from __future__ import annotations

import functools

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given

import vecmode
from tests.helpers import (
    OBS_TYPES,
    assert_same_run,
    drive,
    make_script,
    scenarios,
    scheduled_fns,
)
from vecmode import AutoresetMode

MODES = list(AutoresetMode)


def _gym_fns(env_id: str, num_envs: int, **kwargs) -> list:
    return [functools.partial(gym.make, env_id, **kwargs) for _ in range(num_envs)]


#: (name, factory of env_fns) covering Box / Discrete / Tuple / Dict observations,
#: discrete and continuous actions, termination and truncation, infos that appear
#: on some steps only, and nested infos.
ENVS = {
    "cartpole-box-discrete-act": lambda: _gym_fns(
        "CartPole-v1", 4, max_episode_steps=12
    ),
    "pendulum-continuous-act-truncation": lambda: _gym_fns(
        "Pendulum-v1", 3, max_episode_steps=7
    ),
    "frozenlake-discrete-obs-termination": lambda: _gym_fns(
        "FrozenLake-v1", 4, is_slippery=True, max_episode_steps=9
    ),
    "blackjack-tuple-obs": lambda: _gym_fns("Blackjack-v1", 5),
    "taxi-discrete-obs-array-info": lambda: _gym_fns("Taxi-v4", 3, max_episode_steps=6),
    "mountaincar-continuous": lambda: _gym_fns(
        "MountainCarContinuous-v0", 2, max_episode_steps=5
    ),
    **{
        f"scheduled-{obs_type}-nested-info": functools.partial(
            scheduled_fns, 4, obs_type=obs_type
        )
        for obs_type in OBS_TYPES
    },
}


def run_pair(fns_factory, mode, script_steps=40, seed=3, mask_prob=0.0, copy=True):
    """Run gymnasium's and vecmode's sync env on the same script; return both runs."""
    reference = gym.vector.SyncVectorEnv(fns_factory(), copy=copy, autoreset_mode=mode)
    ours = vecmode.with_autoreset(vecmode.SyncVectorEnv(fns_factory(), copy=copy), mode)
    try:
        script = make_script(reference, script_steps, seed=seed, mask_prob=mask_prob)
        disabled = mode is AutoresetMode.DISABLED
        return drive(reference, script, disabled), drive(ours, script, disabled)
    finally:
        reference.close()
        ours.close()


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
@pytest.mark.parametrize("name", sorted(ENVS))
def test_same_as_gymnasium(name, mode):
    expected, got = run_pair(ENVS[name], mode)
    assert_same_run(expected, got)


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_same_as_gymnasium_with_partial_resets(mode):
    expected, got = run_pair(ENVS["scheduled-dict-nested-info"], mode, mask_prob=0.4)
    assert_same_run(expected, got)


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_same_as_gymnasium_without_copy(mode):
    """copy=False returns the internal buffer; the values are still Gymnasium's."""
    reference = gym.vector.SyncVectorEnv(
        ENVS["cartpole-box-discrete-act"](), copy=False, autoreset_mode=mode
    )
    ours = vecmode.with_autoreset(
        vecmode.SyncVectorEnv(ENVS["cartpole-box-discrete-act"](), copy=False), mode
    )
    ref_obs, _ = reference.reset(seed=1)
    our_obs, _ = ours.reset(seed=1)
    for _ in range(30):
        np.testing.assert_array_equal(ref_obs, our_obs)
        actions = reference.action_space.sample()
        ref = reference.step(actions)
        got = ours.step(actions)
        done = np.logical_or(ref[2], ref[3])
        if mode is AutoresetMode.DISABLED and done.any():
            reference.reset(options={"reset_mask": done})
            ours.reset(options={"reset_mask": done})
        assert ours.unwrapped._observations is ours.unwrapped._observations
        ref_obs, our_obs = ref[0], got[0]
    reference.close()
    ours.close()


def test_observation_mode_different_matches_gymnasium():
    def fns():
        return [
            functools.partial(gym.make, "MountainCarContinuous-v0"),
            functools.partial(gym.make, "MountainCarContinuous-v0"),
        ]

    reference = gym.vector.SyncVectorEnv(fns(), observation_mode="different")
    ours = vecmode.with_autoreset(
        vecmode.SyncVectorEnv(fns(), observation_mode="different"), "NextStep"
    )
    assert ours.observation_space == reference.observation_space
    script = make_script(reference, 10)
    assert_same_run(drive(reference, script, False), drive(ours, script, False))


# ------------------------------------------------------------------ hypothesis
@given(scenarios())
def test_same_as_gymnasium_property(scenario):
    """Random episode lengths, endings, actions, reset masks and options."""

    def fns():
        return scheduled_fns(
            scenario["num_envs"],
            scenario["lengths"],
            scenario["truncate"],
            scenario["obs_type"],
        )

    mode = scenario["mode"]
    reference = gym.vector.SyncVectorEnv(fns(), autoreset_mode=mode)
    ours = vecmode.with_autoreset(vecmode.SyncVectorEnv(fns()), mode)
    disabled = mode is AutoresetMode.DISABLED
    try:
        expected = drive(reference, scenario["script"], disabled)
        got = drive(ours, scenario["script"], disabled)
    finally:
        reference.close()
        ours.close()
    assert_same_run(expected, got)
