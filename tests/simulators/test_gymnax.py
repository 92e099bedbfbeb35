"""GymnaxAdapter: gymnax 1.0's functional env as a SAME_STEP vector env, its
final observations (``info["final_observation"]``, every step) in the dense
layout, over the fake (tests/simulators/fakes/gymnax.py) and over the real
gymnax when it is installed."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

jax = pytest.importorskip("jax")
jnp = jax.numpy

import vecmode  # noqa: E402
from tests.batched.support import host, no_host_copies  # noqa: E402
from tests.simulators.fakes.gymnax import FakeGymnaxEnv, Params  # noqa: E402
from tests.simulators.support import assert_same, same_step_rows  # noqa: E402
from vecmode.simulators import GymnaxAdapter  # noqa: E402


@given(
    n=st.integers(1, 4),
    max_steps=st.integers(1, 6),
    max_length=st.integers(1, 6),
    rows=st.lists(
        st.lists(st.integers(0, 1), min_size=4, max_size=4), min_size=1, max_size=12
    ),
    seed=st.integers(0, 2**16),
)
@settings(max_examples=10)
def test_the_collected_transitions_are_the_true_ones(
    n, max_steps, max_length, rows, seed
):
    env = FakeGymnaxEnv(record=True)
    params = Params(max_steps_in_episode=max_steps, max_length=max_length)
    got = same_step_rows(GymnaxAdapter(env, params, num_envs=n), rows, seed)
    truth = env.transitions(n)
    assert len(got) == len(rows)
    assert_same(got, truth, atol=0)


def test_terminations_and_truncations_both_come_with_their_final_observation():
    env = FakeGymnaxEnv(record=True)
    got = same_step_rows(
        GymnaxAdapter(env, Params(3, 5), num_envs=4), [[1, 0, 1, 0]] * 12, 0
    )
    ended = np.array([t["terminated"] | t["truncated"] for t in got])
    assert np.array([t["terminated"] for t in got]).any()
    assert np.array([t["truncated"] for t in got]).any()
    # the final observation is the stepped one: its time entry is the episode's length
    for t in got:
        assert (t["next_obs"][:, 1] >= 1).all()
    assert ended.any()


def test_the_step_is_gymnasiums_with_the_dense_final_observations():
    adapter = GymnaxAdapter(FakeGymnaxEnv(), Params(2, 9), num_envs=3, seed=1)
    assert adapter.metadata["autoreset_mode"] == gym_mode("SAME_STEP")
    assert adapter.semantics.final_observation == "every-step"
    assert adapter.semantics.truncation == "flag" and adapter.semantics.exact
    obs, _ = adapter.reset(seed=2)
    adapter.step(jnp.zeros(3, jnp.int32))
    obs, rewards, terminated, truncated, infos = adapter.step(jnp.ones(3, jnp.int32))
    assert host(truncated).all() and isinstance(obs, jax.Array)
    assert host(infos["_final_obs"]).all()
    assert rewards.dtype == jnp.float32 and terminated.dtype == jnp.bool_
    assert host(infos["final_obs"])[:, 1].tolist() == [2.0, 2.0, 2.0]
    assert host(obs)[:, 1].tolist() == [0.0, 0.0, 0.0]  # reset already
    assert "final_observation" not in infos


def gym_mode(name: str):
    from gymnasium.vector import AutoresetMode

    return AutoresetMode[name]


def test_no_host_copy_in_a_step():
    adapter = GymnaxAdapter(FakeGymnaxEnv(), Params(3, 4), num_envs=8, seed=0)
    adapter.reset()
    actions = jnp.ones(8, jnp.int32)
    adapter.step(actions)  # compiled outside the guard
    with jax.transfer_guard("disallow"), no_host_copies():
        for _ in range(6):
            infos = adapter.step(actions)[-1]
    assert host(infos["_final_obs"]).shape == (8,)


def test_a_masked_reset_is_refused_naming_the_simulator():
    adapter = GymnaxAdapter(FakeGymnaxEnv(), num_envs=2)
    adapter.reset()
    with pytest.raises(
        ValueError, match="GymnaxAdapter cannot reset some sub-envs alone"
    ):
        adapter.reset(options={"reset_mask": np.array([True, False])})
    adapter.reset(options={"reset_mask": np.array([True, True])})  # all: fine


def test_actions_of_another_array_library_step_nothing():
    """torch's actions raised deep inside JAX's vmap; NumPy's are taken."""
    torch = pytest.importorskip("torch")
    adapter = GymnaxAdapter(FakeGymnaxEnv(), Params(3, 4), num_envs=2, seed=0)
    obs, _ = adapter.reset()
    with pytest.raises(
        vecmode.errors.ActionBatchError, match=r"torch actions, expected jax\.numpy"
    ):
        adapter.step(torch.zeros(2, dtype=torch.int32))
    assert adapter.step(np.zeros(2, np.int32))[0] is not obs


def test_a_five_value_step_is_refused():
    class Legacy(FakeGymnaxEnv):
        def step(self, key, state, action, params=None):
            obs, state, reward, terminated, truncated, info = super().step(
                key, state, action, params
            )
            return obs, state, reward, terminated | truncated, info

    adapter = GymnaxAdapter(Legacy(), num_envs=2)
    adapter.reset()
    with pytest.raises(TypeError, match="returns 5 values"):
        adapter.step(jnp.zeros(2, jnp.int32))


@pytest.mark.parametrize(
    "wrong",
    [lambda: (FakeGymnaxEnv(), Params()), Params],
    ids=["make's tuple", "params first"],
)
def test_what_is_not_a_gymnax_env_is_refused_saying_what_to_pass(wrong):
    """gymnax.make's (env, params) tuple, or the params in the env's place: it
    raised an AttributeError of the tuple's or the params'."""
    given = wrong()
    with pytest.raises(TypeError) as error:
        GymnaxAdapter(given, num_envs=2)
    message = str(error.value)
    assert "GymnaxAdapter(env, params, num_envs=...) with env, params = " in message
    assert message.endswith(f"got {type(given).__name__}.")


# ------------------------------------------------------------- the real gymnax
def test_over_the_real_gymnax_cartpole_the_final_observations_are_step_envs():
    gymnax = pytest.importorskip("gymnax")
    env, params = gymnax.make("CartPole-v1")
    params = params.replace(max_steps_in_episode=12)  # pushing one way ends sooner
    n = 16
    adapter = GymnaxAdapter(env, params, num_envs=n, seed=3)
    assert str(adapter.single_action_space) == "Discrete(2)"
    assert adapter.single_observation_space.shape == (4,)
    adapter.reset()
    truth_step = jax.jit(jax.vmap(lambda k, s, a: env.step_env(k, s, a, params)))
    keys = jax.random.split(jax.random.PRNGKey(0), n)
    ended_kinds = set()
    for i in range(40):
        pushes = np.where(np.arange(n) < n // 2, 1, (np.arange(n) + i) % 2)
        actions = jnp.asarray(pushes, dtype=jnp.int32)
        before = adapter.state
        obs_st, _, reward, term, _ = truth_step(keys, before, actions)
        with jax.transfer_guard("disallow"):
            _, rewards, terminated, truncated, infos = adapter.step(actions)
        np.testing.assert_allclose(host(infos["final_obs"]), host(obs_st), rtol=1e-6)
        np.testing.assert_allclose(host(rewards), host(reward))
        np.testing.assert_array_equal(host(terminated), host(term))
        time = host(before.time) + 1
        np.testing.assert_array_equal(host(truncated), time >= 12)
        ended = host(infos["_final_obs"])
        np.testing.assert_array_equal(ended, host(terminated) | host(truncated))
        assert (host(adapter.state.time)[ended] == 0).all()
        ended_kinds |= {"terminated"} if host(terminated).any() else set()
        ended_kinds |= {"truncated"} if host(truncated).any() else set()
    assert ended_kinds == {"terminated", "truncated"}


def test_over_the_real_gymnax_the_collector_reads_every_episodes_end():
    gymnax = pytest.importorskip("gymnax")
    env, params = gymnax.make("CartPole-v1")
    adapter = GymnaxAdapter(env, params.replace(max_steps_in_episode=5), num_envs=4)
    got = same_step_rows(adapter, [[0, 1, 1, 0]] * 11, seed=5)
    ends = [t for t in got if (t["terminated"] | t["truncated"]).any()]
    assert ends and all(t["next_obs"].shape == (4, 4) for t in got)
    for t in got:  # one physics step from obs to next_obs, even at an episode's end
        np.testing.assert_allclose(
            t["next_obs"][:, 0],
            t["obs"][:, 0] + 0.02 * t["obs"][:, 1],
            rtol=1e-5,
            atol=1e-6,
        )


def test_check_vector_env_proves_the_adapter_as_check_stack_asks():
    """It failed at the first all-False mask (the dense layout's keys on every
    step), then at the masked reset the adapter has no way to make; the probe
    found it in no mode (check_stack's note asks for this proof)."""
    from vecmode.testing import check_vector_env

    result = check_vector_env(
        lambda: GymnaxAdapter(FakeGymnaxEnv(), Params(2, 9), num_envs=3, seed=1),
        steps=40,
    )
    assert "no masked reset made: it has no partial reset" in str(result)
    assert "vecmode.probe_mode finds SameStep" in str(result)
