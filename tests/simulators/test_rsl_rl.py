"""RslRlAdapter over a fake Genesis env of RSL-RL's ``VecEnv`` shape: the
simulator's own outputs in SAME_STEP mode, ``time_outs`` decoded into
Gymnasium's flags, no final observation (lost, declared), the ending reward as
the source computes it, masked resets refused, no host copy in a step."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from gymnasium import spaces  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import vecmode  # noqa: E402
from tests.batched.support import host, no_host_copies  # noqa: E402
from tests.simulators.fakes.isaaclab import DirectRLEnv  # noqa: E402
from tests.simulators.fakes.rsl_rl import Go2Env, RslRlVecEnvWrapper  # noqa: E402
from tests.simulators.support import (  # noqa: E402
    action_batches,
    assert_same,
    collect,
    endings,
)
from vecmode.simulators import RslRlAdapter  # noqa: E402


def policy(obs):
    return obs["policy"] if isinstance(obs, dict) else obs


def drive(n=4, limit=4, steps=24, seed=0, after=False, api=5):
    """The adapter's step outputs (NumPy) beside the fake's true transitions
    and a twin fake's own outputs."""
    sim = Go2Env(n, limit, after, api, seed=seed, record=True)
    twin = Go2Env(n, limit, after, api, seed=seed)
    adapter = RslRlAdapter(
        sim, ending_reward="after-reset" if after else "before-reset"
    )
    adapter.reset()
    twin.reset()
    out = []
    for actions in action_batches(n, steps, seed):
        obs, rewards, terminated, truncated, infos = adapter.step(actions)
        want_obs, want_rewards, dones, extras = twin.step(actions)
        assert set(infos) == set(extras) and infos is not extras
        assert not set(vecmode.modes.FINAL_KEYS) & set(infos)
        assert torch.equal(
            policy(obs), policy(want_obs) if api == 2 else want_obs["policy"]
        )
        assert torch.equal(rewards, want_rewards)
        assert torch.equal(terminated | truncated, dones)
        assert terminated.dtype == truncated.dtype == torch.bool
        out.append([host(x) for x in (rewards, terminated, truncated)])
    return out, sim.record


@pytest.mark.parametrize("api", [5, 2])
@pytest.mark.parametrize("after", [False, True])
def test_the_outputs_are_the_simulators_with_gymnasiums_flags(api, after) -> None:
    got, truth = drive(after=after, api=api)
    changed = 0
    for (rewards, terminated, truncated), true in zip(got, truth, strict=True):
        np.testing.assert_array_equal(truncated, true["truncated"])
        np.testing.assert_array_equal(
            terminated, true["terminated"] & ~true["truncated"]
        )
        ended = true["terminated"] | true["truncated"]
        np.testing.assert_allclose(rewards[~ended], true["reward"][~ended], rtol=1e-6)
        if not after:
            np.testing.assert_allclose(rewards, true["reward"], rtol=1e-6)
        changed += int((~np.isclose(rewards, true["reward"]) & ended).sum())
    assert (changed > 0) is after  # the after-reset reward is not the episode's
    assert sum(int(t["terminated"].sum()) for t in truth) > 0
    assert sum(int(t["truncated"].sum()) for t in truth) > 0


@given(
    n=st.integers(1, 5),
    limit=st.integers(1, 6),
    steps=st.integers(1, 16),
    seed=st.integers(0, 2**16),
    after=st.booleans(),
)
@settings(max_examples=15)
def test_any_episodes_decode_to_the_true_flags(n, limit, steps, seed, after) -> None:
    got, truth = drive(n, limit, steps, seed, after)
    for (_, terminated, truncated), true in zip(got, truth, strict=True):
        np.testing.assert_array_equal(truncated, true["truncated"])
        np.testing.assert_array_equal(
            terminated, true["terminated"] & ~true["truncated"]
        )


def test_the_semantics_and_spaces() -> None:
    adapter = RslRlAdapter(Go2Env())
    s = adapter.semantics
    assert (s.final_observation, s.partial_reset, s.truncation, s.ending_reward) == (
        "lost",
        "none",
        "time_outs",
        "before-reset",
    )
    assert not s.exact and s.source.startswith("leggedrobotics/rsl_rl ")
    assert adapter.metadata["autoreset_mode"].value == "SameStep"
    assert adapter.single_observation_space == spaces.Dict(
        {"policy": spaces.Box(-np.inf, np.inf, (3,), np.float32)}
    )
    assert adapter.single_action_space.shape == (2,)
    old = RslRlAdapter(Go2Env(api=2), ending_reward="after-reset")
    assert old.single_observation_space == spaces.Box(-np.inf, np.inf, (3,), np.float32)
    assert "after the reset" in old.semantics.lost()
    with pytest.raises(ValueError, match="ending_reward"):
        RslRlAdapter(Go2Env(), ending_reward="later")


def test_the_rewards_are_not_the_envs_buffer() -> None:
    adapter = RslRlAdapter(Go2Env())
    adapter.reset()
    rewards = adapter.step(torch.zeros(4, 2))[1]
    kept = rewards.clone()
    adapter.step(torch.ones(4, 2))
    assert torch.equal(rewards, kept)


def test_a_masked_reset_is_refused_and_a_full_one_is_the_envs() -> None:
    sim = Go2Env(3)
    adapter = RslRlAdapter(sim)
    with pytest.raises(
        ValueError, match=r"RslRlAdapter cannot reset some sub-envs"
    ) as e:
        adapter.reset(options={"reset_mask": torch.tensor([True, False, False])})
    assert "reset() without reset_mask" in str(e.value)
    adapter.step(torch.zeros(3, 2))
    obs, infos = adapter.reset(seed=1)
    assert bool((sim.physics.t == 0).all()) and infos == {}
    assert torch.equal(obs["policy"], sim.obs_buf)


def test_next_step_is_refused() -> None:
    with pytest.raises(vecmode.IncompatibleModeError, match="NextStep"):
        vecmode.with_autoreset(RslRlAdapter(Go2Env()), "NextStep")


@pytest.mark.parametrize("api", [5, 2])
def test_no_step_copies_a_batch_to_the_host(api) -> None:
    adapter = RslRlAdapter(Go2Env(api=api))
    with no_host_copies():
        adapter.reset()
        for actions in action_batches(4, 12):
            adapter.step(actions)


@pytest.mark.parametrize("api", [5, 2])
def test_over_isaaclabs_wrapper_with_compute_final_obs_the_transitions_are_exact(api):
    sim = DirectRLEnv(4, 4, compute_final_obs=True, critic=True, record=True)
    adapter = RslRlAdapter(RslRlVecEnvWrapper(sim, api))
    assert adapter.semantics.final_observation == "masked" and adapter.semantics.exact
    sim.physics.record.clear()  # (the wrapper resets the env when built)
    got = collect(
        vecmode.with_autoreset(adapter, "SameStep"),
        action_batches(4, 20),
        key="policy" if api == 5 else None,
    )
    # rsl_rl's encoding: a sub-env both terminated and timed out is truncated
    truth = [{**t, "terminated": t["terminated"] & ~t["truncated"]} for t in sim.record]
    assert_same(got, truth)
    assert min(endings(truth)) > 0


@pytest.mark.parametrize(("flag", "final"), [(False, "opt-in"), (None, "lost")])
def test_over_isaaclabs_wrapper_without_it_the_final_obs_is_not_there(flag, final):
    sim = DirectRLEnv(3, 2, compute_final_obs=flag)
    adapter = RslRlAdapter(RslRlVecEnvWrapper(sim))
    s = adapter.semantics
    assert s.final_observation == final and not s.exact
    assert ("compute_final_obs=True" in s.remedy) is (flag is False)
    adapter.reset()
    for actions in action_batches(3, 4):
        infos = adapter.step(actions)[4]
        assert not set(vecmode.modes.FINAL_KEYS) & set(infos)


def test_no_step_over_isaaclabs_wrapper_copies_a_batch_to_the_host() -> None:
    sim = DirectRLEnv(4, 3, compute_final_obs=True)
    envs = vecmode.with_autoreset(RslRlAdapter(RslRlVecEnvWrapper(sim)), "SameStep")
    got = collect(envs, action_batches(4, 12), key="policy", trap=True)
    assert sum(int(step["truncated"].sum()) for step in got) > 0
