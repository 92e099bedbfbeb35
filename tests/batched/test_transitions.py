"""TransitionCollector over torch and JAX batches: the same transitions as over
NumPy, in the batch's library, with no host copy in a step."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vecmode
from tests.batched.support import host, make_batched, no_host_copies

ARRAYS = ["torch", "jax"]


def collect(name: str, mode: str, n: int, limit: int, actions: list) -> list:
    """Each transition's fields as NumPy, over ``mode`` in library ``name``."""
    env = make_batched(name, n, max_episode_steps=limit)
    collector = vecmode.TransitionCollector(vecmode.with_autoreset(env, mode))
    xp = env.xp
    out = []
    with no_host_copies():
        obs, _ = collector.reset(seed=7)
    out.append(host(obs))
    for row in actions:
        with no_host_copies():
            t = collector.step(xp.asarray(row[:n]))
        fields = (t.obs, t.actions, t.rewards, t.terminations, t.truncations)
        if name != "numpy":  # every field in the batch's library
            for field in (*fields, t.next_obs, t.valid, collector.obs):
                assert type(field) is type(t.obs)
        out.append([host(f) for f in (*fields, t.next_obs, t.valid, collector.obs)])
    return out


@pytest.mark.parametrize("name", ARRAYS)
@pytest.mark.parametrize("mode", ["SameStep", "Disabled"])
@given(
    n=st.integers(1, 4),
    limit=st.integers(1, 8),
    actions=st.lists(
        st.lists(st.integers(0, 1), min_size=4, max_size=4), min_size=1, max_size=14
    ),
)
@settings(max_examples=15)
def test_the_collectors_transitions_are_numpys(name, mode, n, limit, actions) -> None:
    got = collect(name, mode, n, limit, actions)
    expected = collect("numpy", mode, n, limit, actions)
    assert len(got) == len(expected)
    for a, b in zip(got, expected, strict=True):
        for x, y in zip(a, b, strict=True):
            np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", ARRAYS)
def test_the_final_observation_is_next_obs_at_an_episodes_end(name) -> None:
    env = make_batched(name, 2, max_episode_steps=2)
    collector = vecmode.TransitionCollector(vecmode.with_autoreset(env, "SameStep"))
    xp = env.xp
    collector.reset(seed=0)
    with no_host_copies():
        collector.step(xp.asarray([0, 1]))
        t = collector.step(xp.asarray([0, 1]))
        masked, _ = collector.reset(options={"reset_mask": xp.asarray([True, False])})
    assert host(t.truncations).all()
    np.testing.assert_array_equal(host(t.next_obs), host(t.infos["final_obs"]))
    assert not np.allclose(host(t.next_obs), host(collector.obs))
    assert type(masked) is type(t.obs)


@pytest.mark.parametrize("name", ["torch"])
def test_transitions_keep_their_rewards_and_flags_where_the_env_reuses_them(name):
    """An env that writes its reward and flag buffers in place (simulators do)
    changed the transitions kept: the collector copies them too."""
    env = make_batched(name, 2, max_episode_steps=2)  # (JAX's: immutable)
    step = env.step
    buffers = [None, None, None]

    def reusing(actions):
        obs, *arrays, infos = step(actions)
        for k, array in enumerate(arrays):
            if buffers[k] is None:
                buffers[k] = array
            buffers[k][...] = array
        return obs, *buffers, infos

    env.step = reusing
    collector = vecmode.TransitionCollector(env)
    collector.reset(seed=0)
    first = collector.step(env.xp.asarray([0, 1]))
    fields = ("rewards", "terminations", "truncations")
    kept = [host(getattr(first, field)).tolist() for field in fields]
    collector.step(env.xp.asarray([0, 1]))  # (the second ends every episode)
    assert [host(getattr(first, field)).tolist() for field in fields] == kept
    assert kept[2] == [False, False]


@pytest.mark.parametrize("name", ARRAYS)
@pytest.mark.parametrize("mode", ["SameStep", "Disabled"])
def test_cut_is_in_the_batch_library_with_no_host_copy(name, mode) -> None:
    env = make_batched(name, 3, max_episode_steps=2)
    collector = vecmode.TransitionCollector(vecmode.with_autoreset(env, mode))
    xp = env.xp
    with no_host_copies():
        obs, _ = collector.reset(seed=0)
        assert type(collector.cut) is type(obs)
        collector.step(xp.asarray([0, 1, 0]))
        collector.reset(options={"reset_mask": xp.asarray([True, False, False])})
        assert type(collector.cut) is type(obs)
    assert host(collector.cut).tolist() == [True, False, False]
