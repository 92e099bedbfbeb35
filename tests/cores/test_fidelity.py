"""Drop-in fidelity: vecmode's sync env in each mode == gymnasium's SyncVectorEnv.

Differential tests against Gymnasium itself: same seeds, same actions, the same
calls, and every returned value (observations, rewards, flags, the whole info dict
with final_obs / final_info and every mask) must be identical, dtypes included.
"""

from __future__ import annotations

import copy
import functools

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vecmode
from tests.cores.test_core import TupleEcho
from tests.helpers import (
    OBS_TYPES,
    assert_same,
    assert_same_run,
    drive,
    make_script,
    scenarios,
    scheduled_fns,
)
from vecmode import AutoresetMode
from vecmode.infos import _fit

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


class WholeInfos(gym.vector.SyncVectorEnv):
    """Gymnasium's SyncVectorEnv, its infos' numbers of two types batched whole,
    as vecmode's cores batch them (documented: Gymnasium's batching cuts 0.33
    after an int to 0; see test_gymnasium_cuts_frozen_lake_s_prob)."""

    def _add_info(self, vector_infos, env_info, env_num):
        _fit(vector_infos, env_info)
        return super()._add_info(vector_infos, env_info, env_num)


def run_pair(fns_factory, mode, script_steps=40, seed=3, mask_prob=0.0, copy=True):
    """Run gymnasium's and vecmode's sync env on the same script; return both runs."""
    reference = WholeInfos(fns_factory(), copy=copy, autoreset_mode=mode)
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


def test_gymnasium_cuts_frozen_lake_s_prob():
    """FrozenLake's reset info has prob 1 (an int), its step's 0.33: in NextStep,
    after a sub-env's reset step, Gymnasium's batch is int and the other sub-envs'
    0.33 becomes 0. vecmode's keeps it."""
    fns = ENVS["frozenlake-discrete-obs-termination"]
    theirs = gym.vector.SyncVectorEnv(fns(), autoreset_mode=AutoresetMode.NEXT_STEP)
    ours = vecmode.make_vec("FrozenLake-v1", 4, "sync", is_slippery=True)
    for envs in (theirs, ours):
        envs.reset(seed=3)
    cut = 0
    for _ in range(60):
        actions = theirs.action_space.sample()
        expected, got = theirs.step(actions)[4], ours.step(actions)[4]
        assert set(np.round(got["prob"], 6).tolist()) <= {1.0, round(1 / 3, 6)}
        cut += expected["prob"].dtype.kind == "i" and (got["prob"] != 1).any()
    assert cut
    theirs.close()
    ours.close()


class OneBuffer(gym.Env):
    """Returns its one buffer (itself, a view of it, or in a dict), written in
    place by step and reset; every episode is truncated at its second step."""

    observation_space = gym.spaces.Box(-1.0, 99.0, (2,), np.float64)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, kind: str):
        self.buffer, self.kind, self.t = np.zeros(2), kind, 0
        if kind == "dict":
            self.observation_space = gym.spaces.Dict(x=OneBuffer.observation_space)

    def _obs(self):
        buffer = self.buffer
        return (
            {"x": buffer} if self.kind == "dict" else buffer[:] if self.kind else buffer
        )

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t, self.buffer[:] = 0, (self.np_random.random(), 0.0)
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        self.buffer[1] = 10 + self.t
        return self._obs(), 1.0, False, self.t >= 2, {}


@pytest.mark.parametrize("kind", ["", "view", "dict"])
@pytest.mark.parametrize("core", [vecmode.SyncVectorEnv, vecmode.AsyncVectorEnv])
def test_same_step_s_final_observation_is_not_the_reset_s(core, kind):
    """A sub-env whose reset writes into the buffer its step returned: SameStep's
    final observation was the reset's (as in Gymnasium's), silently."""
    fns = [functools.partial(OneBuffer, kind)] * 2
    envs = vecmode.with_autoreset(core(fns), "SameStep")
    envs.reset(seed=0)
    envs.step(np.zeros(2, dtype=int))
    *_, truncations, infos = envs.step(np.zeros(2, dtype=int))
    assert truncations.all()
    finals = [o["x"] if kind == "dict" else o for o in infos["final_obs"]]
    assert [final[1] for final in finals] == [12.0, 12.0]
    envs.close()


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
        assert got[0] is ours.unwrapped._observations  # the buffer, handed out
        ref_obs, our_obs = ref[0], got[0]
    reference.close()
    ours.close()


class DoublesInPlace(gym.vector.VectorWrapper):
    """Doubles the observations in the array the env below returned (as
    Gymnasium's VectorizeTransformObservation does when the space stays the
    same: it concatenates the transformed observations into the env's array)."""

    def reset(self, **kwargs):
        obs, infos = self.env.reset(**kwargs)
        obs *= 2
        return obs, infos

    def step(self, actions):
        obs, *rest = self.env.step(actions)
        obs *= 2
        return (obs, *rest)


class Snapshots(gym.vector.VectorWrapper):
    """Returns a deep copy of each result, so a run's records keep what each call
    returned when the env below hands out one buffer (copy=False)."""

    def reset(self, **kwargs):
        return copy.deepcopy(self.env.reset(**kwargs))

    def step(self, actions):
        return copy.deepcopy(self.env.step(actions))


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_without_copy_what_a_layer_writes_into_the_buffer_stays_there(mode):
    """copy=False hands out the env's buffer, and a layer above may write into
    it: Gymnasium's SyncVectorEnv refills the whole buffer every call, so the
    sub-envs a masked reset leaves alone are still returned as they were; so
    are ours (before, a kept sub-env's row came back doubled twice)."""
    make = ENVS["cartpole-box-discrete-act"]
    reference = Snapshots(
        DoublesInPlace(
            gym.vector.SyncVectorEnv(make(), copy=False, autoreset_mode=mode)
        )
    )
    ours = Snapshots(
        DoublesInPlace(
            vecmode.with_autoreset(vecmode.SyncVectorEnv(make(), copy=False), mode)
        )
    )
    script = make_script(reference, 40, seed=3, mask_prob=0.5)
    disabled = mode is AutoresetMode.DISABLED
    assert sum(m is not None for m in script.masks) >= 10
    assert_same_run(drive(reference, script, disabled), drive(ours, script, disabled))
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


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), st.integers(0, 2**16))
def test_a_tuple_action_batch_reaches_each_sub_env_as_in_gymnasium(
    num_envs, subspaces, seed
):
    """The batched form of a Tuple space's actions (a tuple of per-subspace
    batches, what envs.action_space.sample() returns) steps every sub-env as
    Gymnasium's does, with as many sub-envs as subspaces too (issue 34, row 2:
    only a list is refused)."""
    fns = [functools.partial(TupleEcho, subspaces)] * num_envs
    reference, ours = gym.vector.SyncVectorEnv(fns), vecmode.SyncVectorEnv(fns)
    assert_same(reference.reset(seed=seed), ours.reset(seed=seed), "reset")
    reference.action_space.seed(seed)
    for k in range(3):
        actions = reference.action_space.sample()
        assert type(actions) is tuple
        assert_same(reference.step(actions), ours.step(actions), f"step {k}")
    reference.close()
    ours.close()


@pytest.mark.parametrize("in_parent", [0, 1], ids=["async", "async-parent"])
def test_a_tuple_action_batch_reaches_each_async_sub_env_as_in_gymnasium(in_parent):
    fns = [functools.partial(TupleEcho, 2)] * 2
    reference = gym.vector.SyncVectorEnv(fns)
    ours = vecmode.AsyncVectorEnv(fns, context="fork", in_parent=in_parent)
    assert_same(reference.reset(seed=0), ours.reset(seed=0), "reset")
    reference.action_space.seed(0)
    for k in range(3):
        actions = reference.action_space.sample()
        assert_same(reference.step(actions), ours.step(actions), f"step {k}")
    reference.close()
    ours.close()
