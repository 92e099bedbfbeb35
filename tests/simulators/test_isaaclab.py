"""IsaacLabAdapter over a fake IsaacLab RL env: with ``compute_final_obs=True``
the simulator's true transitions, read in SAME_STEP mode; without it the
simulator's own outputs, no final observation, and semantics that say lost or
opt-in and name the remedy; masked resets refused; no host copy in a step."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import vecmode  # noqa: E402
from tests.batched.support import no_host_copies  # noqa: E402
from tests.simulators.fakes.isaaclab import DirectRLEnv, GymWrapper  # noqa: E402
from tests.simulators.support import (  # noqa: E402
    action_batches,
    assert_same,
    collect,
    endings,
)
from vecmode.simulators import IsaacLabAdapter  # noqa: E402


@pytest.mark.parametrize("critic", [False, True])
@pytest.mark.parametrize("wrapped", [False, True])
def test_with_compute_final_obs_the_transitions_are_the_simulators(critic, wrapped):
    sim = DirectRLEnv(4, 4, compute_final_obs=True, critic=critic, record=True)
    adapter = IsaacLabAdapter(GymWrapper(sim) if wrapped else sim)
    envs = vecmode.with_autoreset(adapter, "SameStep")
    got = collect(envs, action_batches(4, 24), key="policy")
    assert_same(got, sim.record)
    terminated, truncated = endings(sim.record)
    assert terminated > 0 and truncated > 0


@given(
    n=st.integers(1, 5),
    limit=st.integers(1, 6),
    steps=st.integers(1, 16),
    seed=st.integers(0, 2**16),
)
@settings(max_examples=10)
def test_any_episodes_give_the_simulators_transitions(n, limit, steps, seed) -> None:
    sim = DirectRLEnv(n, limit, compute_final_obs=True, seed=seed, record=True)
    envs = vecmode.with_autoreset(IsaacLabAdapter(sim), "SameStep")
    got = collect(envs, action_batches(n, steps, seed), seed=seed, key="policy")
    assert_same(got, sim.record)


def test_the_final_observations_come_in_the_dense_layout() -> None:
    sim = DirectRLEnv(3, 2, compute_final_obs=True, critic=True)
    adapter = IsaacLabAdapter(sim)
    adapter.reset(seed=0)
    adapter.step(torch.zeros(3, 2))
    obs, _, terminated, truncated, infos = adapter.step(torch.zeros(3, 2))
    ended = terminated | truncated
    assert bool(ended.all())
    assert set(infos["final_obs"]) == {"policy", "critic"}
    assert torch.equal(infos["_final_obs"], ended)
    assert not torch.equal(infos["final_obs"]["policy"], obs["policy"])
    assert "log" in infos["final_info"] and "final_obs" not in infos["final_info"]
    assert "final_obs" in sim.extras  # the env's own dict is left as it is


@pytest.mark.parametrize(
    ("flag", "final"), [(True, "masked"), (False, "opt-in"), (None, "lost")]
)
def test_the_semantics_follow_the_config(flag, final) -> None:
    s = IsaacLabAdapter(DirectRLEnv(compute_final_obs=flag)).semantics
    assert s.final_observation == final
    assert (s.partial_reset, s.truncation, s.ending_reward) == (
        "none",
        "flag",
        "before-reset",
    )
    assert s.exact is (flag is True)
    assert ("compute_final_obs=True" in s.remedy) is (flag is not True)
    assert s.source.startswith("isaac-sim/IsaacLab ")


@pytest.mark.parametrize("flag", [False, None])
def test_when_lost_the_outputs_are_the_simulators_and_no_final_obs(flag) -> None:
    sim = DirectRLEnv(4, 3, compute_final_obs=flag, record=True)
    twin = DirectRLEnv(4, 3, compute_final_obs=flag)
    adapter = IsaacLabAdapter(sim)
    assert adapter.metadata["autoreset_mode"].value == "SameStep"
    obs, _ = adapter.reset(seed=5)
    expected, _ = twin.reset(seed=5)
    assert torch.equal(obs["policy"], expected["policy"])
    ended_rows = 0
    for actions in action_batches(4, 12):
        obs, rewards, terminated, truncated, infos = adapter.step(actions)
        want = twin.step(actions)
        assert torch.equal(obs["policy"], want[0]["policy"])
        for ours, theirs in zip(
            (rewards, terminated, truncated), want[1:4], strict=True
        ):
            assert torch.equal(ours, theirs)
        assert not set(vecmode.modes.FINAL_KEYS) & set(infos)
        true = sim.record[-1]
        ended = torch.as_tensor(true["terminated"] | true["truncated"])
        ended_rows += int(ended.sum())
        # the returned rows of ended sub-envs are the reset's, not the final ones
        final = torch.as_tensor(true["next_obs"])
        assert not torch.isclose(obs["policy"][ended], final[ended]).all(1).any()
    assert ended_rows > 0


def test_the_flags_and_rewards_are_not_the_envs_buffers() -> None:
    sim = DirectRLEnv(4, 2, compute_final_obs=False)
    adapter = IsaacLabAdapter(sim)
    adapter.reset(seed=0)
    _, rewards, terminated, truncated, infos = adapter.step(torch.zeros(4, 2))
    kept = [x.clone() for x in (rewards, terminated, truncated)]
    adapter.step(torch.ones(4, 2))
    for now, then in zip((rewards, terminated, truncated), kept, strict=True):
        assert torch.equal(now, then)
    assert infos is not sim.extras


def test_a_masked_reset_is_refused() -> None:
    adapter = IsaacLabAdapter(DirectRLEnv(3))
    adapter.reset(seed=0)
    with pytest.raises(
        ValueError, match=r"IsaacLabAdapter cannot reset some sub-envs"
    ) as e:
        adapter.reset(options={"reset_mask": torch.tensor([True, False, True])})
    assert "reset() without reset_mask" in str(e.value)
    assert "SameStep" in str(e.value)
    obs, _ = adapter.reset(options={"reset_mask": torch.ones(3, dtype=torch.bool)})
    assert obs["policy"].shape == (3, 3)


def test_next_step_is_refused() -> None:
    adapter = IsaacLabAdapter(DirectRLEnv(compute_final_obs=True))
    with pytest.raises(vecmode.IncompatibleModeError, match="NextStep"):
        vecmode.with_autoreset(adapter, "NextStep")


@pytest.mark.parametrize("flag", [True, False])
def test_no_step_copies_a_batch_to_the_host(flag) -> None:
    sim = DirectRLEnv(4, 3, compute_final_obs=flag)
    adapter = IsaacLabAdapter(sim)
    if flag:
        got = collect(
            vecmode.with_autoreset(adapter, "SameStep"),
            action_batches(4, 12),
            key="policy",
            trap=True,
        )
        truth = DirectRLEnv(4, 3, compute_final_obs=True, record=True)
        collect(IsaacLabAdapter(truth), action_batches(4, 12))
        assert_same(got, truth.record)
        return
    with no_host_copies():
        adapter.reset(seed=0)
        for actions in action_batches(4, 12):
            adapter.step(actions)
