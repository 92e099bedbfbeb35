"""ManiSkillAdapter over a fake ManiSkillVectorEnv: the same transitions as the
simulator's true ones in every mode offered (SAME_STEP built with
``auto_reset=True``; DISABLED and SAME_STEP from ``auto_reset=False``), masks
turned into ``env_idx`` exactly, no host copy in a step."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import vecmode  # noqa: E402
from tests.batched.support import host, no_host_copies  # noqa: E402
from tests.simulators.fakes.maniskill import ManiSkillVectorEnv  # noqa: E402
from tests.simulators.support import (  # noqa: E402
    action_batches,
    assert_same,
    collect,
    endings,
)
from vecmode.simulators import ManiSkillAdapter  # noqa: E402

#: (auto_reset, the mode asked of with_autoreset): every mode offered
OFFERED = [(True, "SameStep"), (False, "Disabled"), (False, "SameStep")]


def run(auto_reset, mode, n=4, steps=24, limit=4, ignore=False, seed=0, trap=False):
    sim = ManiSkillVectorEnv(
        n, auto_reset, ignore, max_episode_steps=limit, seed=seed, record=True
    )
    envs = vecmode.with_autoreset(ManiSkillAdapter(sim), mode)
    sim.physics.record = (
        None if trap else sim.physics.record
    )  # (NumPy: not in the trap)
    got = collect(envs, action_batches(n, steps, seed), seed=seed, trap=trap)
    return got, sim


@pytest.mark.parametrize(("auto_reset", "mode"), OFFERED)
@pytest.mark.parametrize("ignore", [False, True])
def test_the_transitions_are_the_simulators(auto_reset, mode, ignore) -> None:
    got, sim = run(auto_reset, mode, ignore=ignore)
    assert_same(got, sim.record)
    terminated, truncated = endings(sim.record)
    assert truncated > 0 and (terminated == 0 if ignore else terminated > 0)


@pytest.mark.parametrize(("auto_reset", "mode"), OFFERED)
@given(
    n=st.integers(1, 5),
    limit=st.integers(1, 6),
    steps=st.integers(1, 16),
    seed=st.integers(0, 2**16),
)
@settings(max_examples=10)
def test_any_episodes_give_the_simulators_transitions(
    auto_reset, mode, n, limit, steps, seed
) -> None:
    got, sim = run(auto_reset, mode, n=n, steps=steps, limit=limit, seed=seed)
    assert_same(got, sim.record)


def test_the_modes_presented() -> None:
    same = ManiSkillAdapter(ManiSkillVectorEnv(auto_reset=True))
    disabled = ManiSkillAdapter(ManiSkillVectorEnv(auto_reset=False))
    assert same.metadata["autoreset_mode"].value == "SameStep"
    assert disabled.metadata["autoreset_mode"].value == "Disabled"
    assert same.metadata["array_namespace"] == "torch"
    s = same.semantics
    assert (s.final_observation, s.partial_reset, s.truncation) == (
        "masked",
        "indices",
        "flag",
    )
    assert s.exact and s.source.startswith("haosulab/ManiSkill ")
    with pytest.raises(vecmode.IncompatibleModeError, match="NextStep"):
        vecmode.with_autoreset(same, "NextStep")
    with pytest.raises(vecmode.IncompatibleModeError, match="inside its step") as e:
        vecmode.with_autoreset(same, "Disabled")  # it resets by itself
    assert "(ManiSkillVectorEnv(..., auto_reset=False)): it is then Disabled" in str(
        e.value
    )


def test_the_final_observations_come_in_the_dense_layout() -> None:
    sim = ManiSkillVectorEnv(3, max_episode_steps=2)
    adapter = ManiSkillAdapter(sim)
    adapter.reset(seed=0)
    adapter.step(torch.zeros(3, 2))
    obs, _, terminated, truncated, infos = adapter.step(torch.zeros(3, 2))
    ended = terminated | truncated
    assert bool(ended.all())
    final = infos["final_obs"]
    assert type(final) is torch.Tensor and final.shape == (3, 3)
    assert torch.equal(infos["_final_obs"], ended)
    assert torch.equal(infos["_final_info"], ended)
    assert not torch.equal(final, obs)  # the reset's observations are returned
    # the step's info, not ManiSkill's reset info, with its final keys gone
    assert torch.equal(infos["elapsed_steps"], torch.full((3,), 2))
    assert torch.equal(infos["final_info"]["elapsed_steps"], torch.full((3,), 2))
    for key in (
        "reconfigure",
        "final_observation",
        "_final_observation",
        "_elapsed_steps",
    ):
        assert key not in infos
    assert sim.resets[-1].tolist() == [0, 1, 2]
    # a step where nothing ended has no final keys
    _, _, terminated, truncated, infos = adapter.step(torch.zeros(3, 2))
    if not bool((terminated | truncated).any()):
        assert not set(vecmode.modes.FINAL_KEYS) & set(infos)


@given(
    n=st.integers(1, 6),
    masks=st.lists(st.lists(st.booleans(), min_size=6, max_size=6), max_size=6),
    as_numpy=st.booleans(),
)
@settings(max_examples=25)
def test_a_reset_mask_becomes_env_idx(n, masks, as_numpy) -> None:
    sim = ManiSkillVectorEnv(n, auto_reset=False)
    adapter = ManiSkillAdapter(sim)
    adapter.reset(seed=3)
    for row in masks:
        mask = np.array(row[:n])
        given_mask = mask if as_numpy else torch.as_tensor(mask)
        adapter.step(torch.zeros(n, 2))
        stepped, resets = sim.physics.observe(), len(sim.resets)
        obs, _ = adapter.reset(options={"reset_mask": given_mask})
        if not mask.any():  # no sub-env: the simulator is not called
            assert len(sim.resets) == resets and torch.equal(obs, stepped)
            continue
        env_idx = sim.resets[-1]
        assert type(env_idx) is torch.Tensor and env_idx.dtype == torch.int64
        assert env_idx.tolist() == np.flatnonzero(mask).tolist()
        assert torch.equal(obs, sim.physics.observe())  # the whole batch
        kept = ~torch.as_tensor(mask)
        assert torch.equal(obs[kept], stepped[kept])  # the others untouched
        assert bool((sim.physics.t[torch.as_tensor(mask)] == 0).all())


@pytest.mark.parametrize(("auto_reset", "mode"), OFFERED)
def test_no_step_copies_a_batch_to_the_host(auto_reset, mode) -> None:
    got, _ = run(auto_reset, mode, steps=12, limit=3, trap=True)
    _, sim = run(auto_reset, mode, steps=12, limit=3)
    assert_same(got, sim.record)
    with no_host_copies():
        adapter = ManiSkillAdapter(ManiSkillVectorEnv(auto_reset=False))
        adapter.reset(seed=0)
        obs, _ = adapter.reset(
            options={"reset_mask": torch.tensor([1, 0, 1, 0]).bool()}
        )
    assert host(obs).shape == (4, 3)
