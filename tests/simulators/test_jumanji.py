"""JumanjiAdapter: a Jumanji env under its autoreset wrappers as a SAME_STEP
vector env; the final observations (``extras["next_obs"]``) in the dense layout
with ``next_obs_in_extras=True``, declared opt-in without it. Over the fake
(tests/simulators/fakes/jumanji.py) and over the real Jumanji when installed."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

jax = pytest.importorskip("jax")
jnp = jax.numpy

import gymnasium as gym  # noqa: E402
from gymnasium.vector.utils import batch_space  # noqa: E402

from tests.batched.support import host, no_host_copies  # noqa: E402
from tests.simulators.fakes import jumanji as fake  # noqa: E402
from tests.simulators.support import assert_same, same_step_rows  # noqa: E402
from vecmode.errors import ActionBatchError  # noqa: E402
from vecmode.simulators import JumanjiAdapter  # noqa: E402

WRAPPERS = {
    "AutoResetWrapper": fake.AutoResetWrapper,
    "Vmap": fake.VmapAutoResetWrapper,
}


@pytest.mark.parametrize("wrapper", WRAPPERS)
@given(
    n=st.integers(1, 4),
    time_limit=st.integers(1, 6),
    max_length=st.integers(1, 6),
    rows=st.lists(
        st.lists(st.integers(0, 1), min_size=4, max_size=4), min_size=1, max_size=12
    ),
    seed=st.integers(0, 2**16),
)
@settings(max_examples=8)
def test_the_collected_transitions_are_the_true_ones(
    wrapper, n, time_limit, max_length, rows, seed
):
    env = fake.FakeJumanjiEnv(time_limit, max_length, record=True)
    adapter = JumanjiAdapter(
        WRAPPERS[wrapper](env, next_obs_in_extras=True), num_envs=n
    )
    assert adapter.semantics.final_observation == "masked" and adapter.semantics.exact
    got = same_step_rows(adapter, rows, seed)
    truth = env.transitions(n)
    assert len(got) == len(rows)
    assert_same(got, truth, atol=0)


def test_termination_is_discount_zero_truncation_is_last_with_discount():
    env = fake.FakeJumanjiEnv(time_limit=3, max_length=5, record=True)
    adapter = JumanjiAdapter(fake.VmapAutoResetWrapper(env, True), num_envs=4, seed=1)
    assert adapter.semantics.truncation == "discount"
    got = same_step_rows(adapter, [[1, 0, 1, 0]] * 12, 0)
    assert any(t["terminated"].any() for t in got) and any(
        t["truncated"].any() for t in got
    )
    for t in got:  # the final observation is the step's: its step count is >= 1
        assert not (t["terminated"] & t["truncated"]).any()
        assert (t["next_obs"][:, 1] >= 1).all()


def test_without_next_obs_in_extras_the_final_observation_is_opt_in_and_absent():
    env = fake.FakeJumanjiEnv(time_limit=1, max_length=9)
    adapter = JumanjiAdapter(fake.AutoResetWrapper(env), num_envs=3)
    semantics = adapter.semantics
    assert semantics.final_observation == "opt-in" and not semantics.exact
    assert semantics.remedy == "next_obs_in_extras=True"
    adapter.reset(seed=0)
    obs, rewards, terminated, truncated, infos = adapter.step(jnp.ones(3, jnp.int32))
    # the simulator's outputs: the reset observation, the ending step's reward
    assert (host(truncated) | host(terminated)).all()
    assert host(obs)[:, 1].tolist() == [0.0, 0.0, 0.0]
    np.testing.assert_allclose(host(rewards), host(infos["x"]) * 10.0, rtol=1e-6)
    assert set(infos) == {"x"}  # no final observation, no mask


def test_no_host_copy_in_a_step():
    env = fake.FakeJumanjiEnv(time_limit=3, max_length=4)
    adapter = JumanjiAdapter(fake.VmapAutoResetWrapper(env, True), num_envs=8)
    adapter.reset()
    actions = jnp.ones(8, jnp.int32)
    adapter.step(actions)  # compiled outside the guard
    with jax.transfer_guard("disallow"), no_host_copies():
        for _ in range(6):
            infos = adapter.step(actions)[-1]
    assert host(infos["_final_obs"]).shape == (8,)


class MultiDiscreteActions(fake.FakeJumanjiEnv):
    """The fake with the action spec of Jumanji's MultiDiscreteArray: an array
    of ``num_values``, one per part of an action (here 3 and 2)."""

    @property
    def action_spec(self) -> fake.Array:
        return fake.Array((2,), jnp.int32, num_values=jnp.asarray([3, 2]))


def test_multi_discrete_actions_are_a_multi_discrete_space_of_the_batch():
    """A spec of several discrete values is a MultiDiscrete space, batched as
    Gymnasium batches it: a batch of its shape goes to the simulator (here:
    which has no state yet), one of another shape is refused before it."""
    adapter = JumanjiAdapter(
        fake.VmapAutoResetWrapper(MultiDiscreteActions(), True), num_envs=3
    )
    assert adapter.single_action_space == gym.spaces.MultiDiscrete([3, 2])
    assert adapter.action_space == batch_space(adapter.single_action_space, 3)
    assert adapter.action_space.shape == (3, 2)
    actions = np.array([[2, 0], [0, 1], [1, 1]])
    assert actions in adapter.action_space
    with pytest.raises(RuntimeError, match=r"call reset\(\) before step\(\)"):
        adapter.step(actions)  # the shape taken
    with pytest.raises(ActionBatchError, match=r"expected an array of shape \(3, 2\)"):
        adapter.step(np.array([2, 0, 1]))


def test_a_masked_reset_is_refused_naming_the_simulator():
    adapter = JumanjiAdapter(
        fake.AutoResetWrapper(fake.FakeJumanjiEnv(), True), num_envs=2
    )
    adapter.reset()
    with pytest.raises(
        ValueError, match="JumanjiAdapter cannot reset some sub-envs alone"
    ):
        adapter.reset(options={"reset_mask": np.array([False, True])})


def test_an_env_that_does_not_reset_itself_is_refused_naming_the_wrapper():
    with pytest.raises(
        TypeError, match=r"AutoResetWrapper\(env, next_obs_in_extras=True\)"
    ):
        JumanjiAdapter(fake.FakeJumanjiEnv(), num_envs=2)
    with pytest.raises(TypeError, match="AutoResetWrapper"):
        JumanjiAdapter(fake.VmapWrapper(fake.FakeJumanjiEnv()), num_envs=2)


# ------------------------------------------------------------ the real Jumanji
def real_snake(
    next_obs_in_extras: bool, n: int, wrapper: str = "VmapAutoResetWrapper"
) -> tuple[object, JumanjiAdapter]:
    jumanji = pytest.importorskip("jumanji")
    wrappers = pytest.importorskip("jumanji.wrappers")

    env = jumanji.make("Snake-v1", num_rows=6, num_cols=6, time_limit=9)
    wrapped = getattr(wrappers, wrapper)(env, next_obs_in_extras=next_obs_in_extras)
    return env, JumanjiAdapter(wrapped, num_envs=n, seed=2, observe=lambda o: o.grid)


@pytest.mark.parametrize("wrapper", ["VmapAutoResetWrapper", "AutoResetWrapper"])
def test_over_the_real_snake_the_final_observations_are_the_bare_steps(wrapper):
    env, adapter = real_snake(True, 8, wrapper)
    assert str(adapter.single_action_space) == "Discrete(4)"
    assert adapter.single_observation_space.shape == (6, 6, 5)
    bare_step = jax.jit(jax.vmap(env.step))
    adapter.reset()
    ends = 0
    for i in range(24):
        actions = jnp.asarray((np.arange(8) + i // 3) % 4, dtype=jnp.int32)
        _, truth = bare_step(adapter.state, actions)
        with jax.transfer_guard("disallow"):
            _, rewards, terminated, truncated, infos = adapter.step(actions)
        last = host(truth.step_type) == 2
        np.testing.assert_array_equal(host(infos["_final_obs"]), last)
        np.testing.assert_array_equal(
            host(infos["final_obs"]), host(truth.observation.grid)
        )
        np.testing.assert_array_equal(host(rewards), host(truth.reward))
        np.testing.assert_array_equal(
            host(terminated), last & (host(truth.discount) == 0)
        )
        np.testing.assert_array_equal(
            host(truncated), last & (host(truth.discount) != 0)
        )
        ended = host(terminated | truncated)
        assert (host(adapter.state.step_count)[ended] == 0).all()
        ends += int(ended.sum())
    assert ends  # Snake ends its episodes (its time limit too) as terminations


def test_over_the_real_snake_without_next_obs_the_final_observation_is_opt_in():
    _, adapter = real_snake(False, 4)
    assert adapter.semantics.final_observation == "opt-in"
    adapter.reset()
    for _ in range(12):
        infos = adapter.step(jnp.zeros(4, jnp.int32))[-1]
        assert "final_obs" not in infos and "next_obs" not in infos
