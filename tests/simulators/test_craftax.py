"""CraftaxAdapter over the fake of Craftax behind its OptimisticResetVecEnvWrapper
(tests/simulators/fakes/craftax.py): the adapter's steps are the simulator's, its
flags the true ones, and the final observation, which the wrapper loses, is
absent."""

from __future__ import annotations

import functools

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import jax.numpy as jnp  # noqa: E402
from gymnasium import spaces  # noqa: E402
from gymnasium.vector import AutoresetMode  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import vecmode  # noqa: E402
from tests.batched.support import host, no_host_copies  # noqa: E402
from tests.simulators.fakes import craftax as fake  # noqa: E402
from vecmode.simulators import CraftaxAdapter  # noqa: E402

N = 4
FINAL_KEYS = {"final_obs", "_final_obs", "final_info", "_final_info"}


def make(ratio: int = 2, record: bool = True) -> fake.OptimisticResetVecEnvWrapper:
    return fake.OptimisticResetVecEnvWrapper(fake.Walker(), N, ratio, record=record)


def moves(seed: int, steps: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 3, (steps, N), dtype=np.int32)


@functools.cache
def adapter_of(ratio: int, limit: int, health: int) -> CraftaxAdapter:
    """An adapter over a recording fake (one per size: compiled once)."""
    return CraftaxAdapter(make(ratio), fake.EnvParams(limit, health))


def run(ratio: int, limit: int, health: int, seed: int, steps: int = 14):
    """The adapter reset and stepped: (env, adapter, reset obs, the steps'
    outputs on the host)."""
    adapter = adapter_of(ratio, limit, health)
    env = adapter.simulator
    env.transitions.clear()
    obs, _ = adapter.reset(seed=seed)
    outs = [host(adapter.step(jnp.asarray(a))) for a in moves(seed, steps)]
    return env, adapter, host(obs), outs


@pytest.mark.parametrize("ratio", [1, 2, 4])
def test_the_steps_are_the_simulators_own(ratio: int) -> None:
    """Observations, rewards, ``done`` and infos step for step as the wrapper's
    own run from the same state with the same keys (a step of the adapter
    splits its ``key`` into the next one and the step's)."""
    adapter = CraftaxAdapter(make(ratio, record=False), seed=3)
    obs, infos = adapter.reset()
    state, params = adapter.state, adapter.params
    assert infos == {} and params == fake.EnvParams()
    raw = make(ratio, record=False)
    for a in moves(3, 20):
        _, key = jax.random.split(adapter.key)
        obs, rewards, terminated, truncated, infos = adapter.step(jnp.asarray(a))
        own, state, reward, done, info = raw.step(key, state, jnp.asarray(a), params)
        np.testing.assert_array_equal(host(obs), host(own))
        np.testing.assert_array_equal(host(rewards), host(reward))
        assert terminated.dtype == truncated.dtype == jnp.bool_
        np.testing.assert_array_equal(host(terminated | truncated), host(done))
        assert not host(terminated & truncated).any()
        assert set(infos) == {"discount"}
        np.testing.assert_array_equal(host(infos["discount"]), host(info["discount"]))


@given(
    ratio=st.sampled_from([1, 4]),
    limit=st.sampled_from([1, 4]),
    health=st.sampled_from([1, 3]),
    seed=st.integers(0, 2**16),
)
@settings(max_examples=40)
def test_flags_are_the_true_ones(
    ratio: int, limit: int, health: int, seed: int
) -> None:
    """Against the fake's true transitions: rewards; ``truncated`` is the
    time-out; ``terminated`` a death, but on the limit's step (Craftax's ``done``
    says nothing more) a death reads as a truncation; observations where no
    episode ended."""
    env, adapter, obs, outs = run(ratio, limit, health, seed)
    assert adapter.max_timesteps == limit
    assert len(env.transitions) == len(outs)
    for true, (next_obs, rewards, terminated, truncated, _) in zip(
        env.transitions, outs, strict=True
    ):
        np.testing.assert_array_equal(true["obs"], obs)
        np.testing.assert_array_equal(true["reward"], rewards)
        np.testing.assert_array_equal(truncated, true["truncated"])
        np.testing.assert_array_equal(terminated, true["terminated"] & ~truncated)
        going = ~(terminated | truncated)
        np.testing.assert_array_equal(next_obs[going], true["next_obs"][going])
        obs = next_obs


def test_the_final_observation_is_lost_and_resets_come_from_a_pool() -> None:
    """With ``reset_ratio == num_envs`` the pool holds one reset state a step:
    every sub-env that ended in it gets that one."""
    env, adapter, _, outs = run(N, 3, 3, seed=1, steps=20)
    s = adapter.semantics
    assert (s.final_observation, s.resets_to, s.partial_reset) == (
        "lost",
        "pool",
        "none",
    )
    assert s.truncation == "step-count" and not s.exact and s.remedy == ""
    assert s.source.startswith("MichaelTMatthews/Craftax_Baselines wrappers.py @ ")
    assert adapter.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
    assert adapter.metadata["array_namespace"] == "jax.numpy"
    shared = False
    for true, (obs, _, terminated, truncated, infos) in zip(
        env.transitions, outs, strict=True
    ):
        assert not FINAL_KEYS & set(infos)
        ended = terminated | truncated
        if ended.any():
            assert not np.array_equal(obs[ended], true["next_obs"][ended])
            assert (obs[ended, 2] == 0).all()  # a fresh state: timestep 0
            assert (obs[ended] == obs[ended][:1]).all()
            shared |= ended.sum() > 1
    assert shared


def test_vecmodes_transitions_where_no_episode_ended_are_the_true_ones() -> None:
    env = make(2)
    adapter = CraftaxAdapter(env, fake.EnvParams(max_timesteps=7, max_health=4), seed=2)
    reader = vecmode.transitions.TransitionReader("SameStep", N, adapter)
    reader.reset(*adapter.reset(seed=2))
    compared = 0
    for step, a in enumerate(moves(2, 14)):
        reading = reader.step(jnp.asarray(a), *adapter.step(jnp.asarray(a)))
        true = env.transitions[step]
        if (true["terminated"] | true["truncated"]).any():
            continue
        for t in reading.transitions():
            np.testing.assert_array_equal(host(t.obs), true["obs"][t.sub_env])
            assert int(host(t.action)) == true["action"][t.sub_env]
            assert float(t.reward) == true["reward"][t.sub_env]
            assert not (t.terminated or t.truncated)
            np.testing.assert_array_equal(host(t.next_obs), true["next_obs"][t.sub_env])
            compared += 1
    assert compared >= 2 * N


def test_a_masked_reset_is_refused_whole_resets_work() -> None:
    adapter = CraftaxAdapter(make(record=False), seed=0)
    first, _ = adapter.reset(seed=5)
    adapter.step(jnp.ones(N, jnp.int32))
    for mask in (jnp.array([True, False, True, False]), np.array([0, 1, 0, 0], bool)):
        with pytest.raises(
            ValueError, match="CraftaxAdapter cannot reset some sub-envs"
        ):
            adapter.reset(options={"reset_mask": mask})
    again, _ = adapter.reset(seed=5, options={"reset_mask": np.ones(N, bool)})
    np.testing.assert_array_equal(host(again), host(first))
    other, _ = adapter.reset()  # the next key: other first states
    assert not np.array_equal(host(other), host(first))


def test_no_batch_leaves_the_device() -> None:
    adapter = CraftaxAdapter(make(record=False), seed=0)
    adapter.reset(seed=0)
    actions = [jnp.asarray(a) for a in moves(0, 8)]
    adapter.step(actions[0])  # compiled outside the trap
    with no_host_copies(), jax.transfer_guard("disallow"):
        adapter.reset(seed=1)
        for a in actions:
            obs, _, terminated, _, _ = adapter.step(a)
        adapter.reset()
    assert isinstance(obs, jax.Array) and isinstance(terminated, jax.Array)


def test_the_spaces_are_craftaxs_and_the_limit_is_optional() -> None:
    adapter = CraftaxAdapter(make(record=False), params=Unlimited())
    assert adapter.single_action_space == spaces.Discrete(3)
    assert adapter.single_observation_space == spaces.Box(-100, 100, (3,), np.float32)
    assert adapter.max_timesteps is None
    with pytest.raises(RuntimeError, match="reset"):
        adapter.step(jnp.zeros(N, jnp.int32))


class Unlimited:
    """Params without ``max_timesteps``: every end is a termination."""

    max_health = 2
