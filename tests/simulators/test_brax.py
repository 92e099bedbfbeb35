"""BraxAdapter over the fakes of Brax's and MuJoCo Playground's training envs
(tests/simulators/fakes/brax.py): the adapter's steps are the simulator's, its
flags the true ones, and the final observation, which both lose, is absent."""

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
from tests.simulators.fakes import brax as fake  # noqa: E402
from vecmode.simulators import BraxAdapter  # noqa: E402

N = 4
KINDS = ("brax", "brax-create", "playground", "playground-full")
FINAL_KEYS = {"final_obs", "_final_obs", "final_info", "_final_info"}


def make(kind: str, length: int = 5, bound: float = 1.0, record: bool = True):
    """The wrapped, batched fake env of ``kind``."""
    if kind == "brax":
        return fake.wrap(fake.Slide(bound), length, record=record)
    if kind == "brax-create":
        return fake.create(fake.Slide(bound), length, N, record=record)
    full = kind == "playground-full"
    slide = fake.Slide(bound, playground=True)
    return fake.wrap_for_brax_training(slide, length, full_reset=full, record=record)


def pushes(seed: int, steps: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.uniform(-1, 1, (steps, N, 1)).astype(np.float32)


@functools.cache
def adapter_of(kind: str, length: int, bound: float) -> BraxAdapter:
    """An adapter over a recording fake (one per kind and size: compiled once)."""
    return BraxAdapter(make(kind, length, bound), N)


def run(kind: str, length: int, bound: float, seed: int, steps: int = 12):
    """An adapter over a recording fake, reset and stepped: (env, adapter,
    reset obs, the steps' outputs on the host)."""
    adapter = adapter_of(kind, length, bound)
    env = adapter.simulator
    env.transitions.clear()
    obs, _ = adapter.reset(seed=seed)
    outs = [host(adapter.step(jnp.asarray(a))) for a in pushes(seed, steps)]
    return env, adapter, host(obs), outs


@pytest.mark.parametrize("kind", KINDS)
def test_the_steps_are_the_simulators_own(kind: str) -> None:
    """Observations, rewards and ``done`` step for step as the wrapped env's own
    run from the same reset state; ``truncated`` is ``info["truncation"]``."""
    adapter = BraxAdapter(make(kind, record=False), N, seed=3)
    obs, _ = adapter.reset()
    state = adapter.state  # the simulator's own reset
    np.testing.assert_array_equal(host(obs), host(state.obs))
    raw_step = jax.jit(make(kind, record=False).step)
    for a in pushes(3, 15):
        obs, rewards, terminated, truncated, infos = adapter.step(jnp.asarray(a))
        state = raw_step(state, jnp.asarray(a))
        np.testing.assert_array_equal(host(obs), host(state.obs))
        np.testing.assert_array_equal(host(rewards), host(state.reward))
        assert terminated.dtype == truncated.dtype == jnp.bool_
        ended = host(terminated | truncated)
        np.testing.assert_array_equal(ended, host(state.done).astype(bool))
        assert not (host(terminated) & host(truncated)).any()
        if kind != "playground-full":
            cut = host(state.info["truncation"]).astype(bool)
            np.testing.assert_array_equal(host(truncated), cut)
        assert set(infos) == {"steps", "truncation", "episode_done", "pushes"}


@given(
    kind=st.sampled_from(KINDS),
    length=st.sampled_from([1, 4]),
    bound=st.sampled_from([0.3, 3.0]),
    seed=st.integers(0, 2**16),
)
@settings(max_examples=40)
def test_flags_are_the_true_ones(
    kind: str, length: int, bound: float, seed: int
) -> None:
    """Against the fake's true transitions: rewards, terminations, truncations
    (EpisodeWrapper's: a termination on the limit's step is a termination);
    observations where no episode ended. Playground's ``full_reset`` resets
    ``info["truncation"]`` with the state: the adapter reads the time limit from
    ``info["steps"]``, so there an episode that terminates on the limit's step
    reads as truncated."""
    env, _, obs, outs = run(kind, length, bound, seed)
    assert len(env.transitions) == len(outs)
    for true, (next_obs, rewards, terminated, truncated, _) in zip(
        env.transitions, outs, strict=True
    ):
        np.testing.assert_array_equal(true["obs"], obs)
        np.testing.assert_array_equal(true["reward"], rewards)
        if kind == "playground-full":
            assert not (true["truncated"] & ~truncated).any()
            np.testing.assert_array_equal(terminated, true["terminated"] & ~truncated)
            ended = true["terminated"] | true["truncated"]
            np.testing.assert_array_equal(terminated | truncated, ended)
        else:
            np.testing.assert_array_equal(terminated, true["terminated"])
            np.testing.assert_array_equal(truncated, true["truncated"])
        going = ~(terminated | truncated)
        np.testing.assert_array_equal(next_obs[going], true["next_obs"][going])
        obs = next_obs


@pytest.mark.parametrize("kind", KINDS)
def test_the_final_observation_is_lost_and_declared_lost(kind: str) -> None:
    env, adapter, first, outs = run(kind, 3, 1.0, seed=7, steps=9)
    s = adapter.semantics
    assert (s.final_observation, s.partial_reset, s.truncation) == (
        "lost",
        "none",
        "info",
    )
    assert s.resets_to == ("fresh" if kind == "playground-full" else "cached-first")
    assert not s.exact and s.remedy == ""
    brax = kind.startswith("brax")
    assert s.source.startswith("google/brax" if brax else "google-deepmind")
    assert adapter.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
    assert adapter.metadata["array_namespace"] == "jax.numpy"
    ended_somewhere = False
    for true, (obs, _, terminated, truncated, infos) in zip(
        env.transitions, outs, strict=True
    ):
        ended = terminated | truncated
        assert not FINAL_KEYS & set(infos)
        if ended.any():
            ended_somewhere = True
            assert not np.array_equal(obs[ended], true["next_obs"][ended])
            if kind != "playground-full":  # the cached first observation
                np.testing.assert_array_equal(obs[ended], first[ended])
    assert ended_somewhere


@pytest.mark.parametrize("kind", KINDS)
def test_vecmodes_transitions_where_no_episode_ended_are_the_true_ones(
    kind: str,
) -> None:
    env, adapter = make(kind, 8, 3.0), None
    adapter = BraxAdapter(env, N, seed=11)
    reader = vecmode.transitions.TransitionReader("SameStep", N, adapter)
    reader.reset(*adapter.reset(seed=11))
    compared = 0
    for step, a in enumerate(pushes(11, 14)):
        reading = reader.step(jnp.asarray(a), *adapter.step(jnp.asarray(a)))
        true = env.transitions[step]
        if (true["terminated"] | true["truncated"]).any():
            continue
        for t in reading.transitions():
            np.testing.assert_array_equal(host(t.obs), true["obs"][t.sub_env])
            np.testing.assert_array_equal(host(t.action), true["action"][t.sub_env])
            assert float(t.reward) == true["reward"][t.sub_env]
            assert not (t.terminated or t.truncated)
            np.testing.assert_array_equal(host(t.next_obs), true["next_obs"][t.sub_env])
            compared += 1
    assert compared >= 2 * N


@pytest.mark.parametrize("kind", KINDS)
def test_a_masked_reset_is_refused_whole_resets_work(kind: str) -> None:
    adapter = BraxAdapter(make(kind, record=False), N, seed=0)
    first, _ = adapter.reset(seed=5)
    adapter.step(jnp.ones((N, 1)))
    for mask in (jnp.array([True, False, True, False]), np.array([0, 1, 0, 0], bool)):
        with pytest.raises(ValueError, match="BraxAdapter cannot reset some sub-envs"):
            adapter.reset(options={"reset_mask": mask})
    again, _ = adapter.reset(seed=5, options={"reset_mask": jnp.ones(N, bool)})
    np.testing.assert_array_equal(host(again), host(first))
    other, _ = adapter.reset()  # the next key: other first states
    assert not np.array_equal(host(other), host(first))


@pytest.mark.parametrize("kind", KINDS)
def test_no_batch_leaves_the_device(kind: str) -> None:
    adapter = BraxAdapter(make(kind, record=False), N, seed=0)
    adapter.reset(seed=0)
    actions = [jnp.asarray(a) for a in pushes(0, 6)]
    adapter.step(actions[0])  # compiled outside the trap
    with no_host_copies(), jax.transfer_guard("disallow"):
        adapter.reset(seed=1)
        for a in actions:
            obs, _, terminated, _, _ = adapter.step(a)
        adapter.reset()
    assert isinstance(obs, jax.Array) and isinstance(terminated, jax.Array)


def test_the_spaces_come_from_the_env_sizes() -> None:
    class Sizes:  # Playground's observation_size may be a dict of shapes
        observation_size = {"state": 3, "privileged_state": (2, 2)}
        action_size = 2

    adapter = BraxAdapter(Sizes(), 5)
    assert adapter.single_observation_space == spaces.Dict(
        state=spaces.Box(-np.inf, np.inf, (3,), np.float32),
        privileged_state=spaces.Box(-np.inf, np.inf, (2, 2), np.float32),
    )
    assert adapter.single_action_space == spaces.Box(-1, 1, (2,), np.float32)
    assert adapter.action_space.shape == (5, 2)
    with pytest.raises(RuntimeError, match="reset"):
        adapter.step(jnp.zeros((5, 2)))
    with pytest.raises(ValueError, match="num_envs=3, but the env batches 4"):
        BraxAdapter(fake.create(fake.Slide(), 5, batch_size=4), 3)
