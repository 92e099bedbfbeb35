"""check_wrapper over torch and JAX batches: a wrapper's results stay in the
batch's library, and its final observations in the dense layout."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from gymnasium.vector import VectorWrapper

import vecmode
from vecmode import wrappers as vw
from vecmode.testing import ConformanceError, check_wrapper

pytest.importorskip("array_api_compat")

LIBRARIES = {"torch": "torch", "jax": "jax.numpy"}


def library(name: str) -> str:
    """The name of ``name``'s arrays in messages, or a skip."""
    pytest.importorskip(name)
    return LIBRARIES[name]


@vecmode.supports(*vecmode.MODES, array_native=True)
class HalvesOnTheHost(vw.RewardWrapper):
    """Wrong: halves the rewards in NumPy, whatever the batch's library."""

    def rewards(self, rewards: Any) -> Any:
        return np.asarray(rewards) * 0.5


@vecmode.supports(*vecmode.MODES, array_native=True)
class Halves(vw.RewardWrapper):
    """Right: halves the rewards in the batch's library."""

    def rewards(self, rewards: Any) -> Any:
        return rewards * 0.5


@pytest.mark.parametrize("name", list(LIBRARIES))
def test_catches_a_result_leaving_the_batch_s_library(name: str) -> None:
    """NumPy rewards from a torch or JAX batch fail a named property at the first
    step, not the wrapper's own crash at NEXT_STEP's reset step."""
    xp = library(name)
    check_wrapper(Halves, array_library=name)
    with pytest.raises(ConformanceError) as caught:
        check_wrapper(HalvesOnTheHost, array_library=name)
    assert caught.value.property == "returns_well_formed_results"
    message = str(caught.value)
    assert (
        f"[NextStep over vecmode.SyncVectorEnv ({name} batches), episodes ending "
        f"together], call 1 (step), field rewards: numpy rewards over {xp} batches, a result leaving "
        f"the batch's library: expected {xp} arrays"
    ) in message, message
    assert "np.asarray and NumPy's functions make NumPy arrays" in message


@vecmode.supports(*vecmode.MODES, array_native=True)
class FinalObsToNumpy(VectorWrapper):
    """Wrong: SAME_STEP's final observations moved to NumPy."""

    def step(self, actions: Any) -> Any:
        *result, infos = self.env.step(actions)
        if "final_obs" in infos:
            infos = {**infos, "final_obs": np.asarray(infos["final_obs"].cpu())}
        return *result, infos


@vecmode.supports(*vecmode.MODES, array_native=True)
class FinalObsAsEntries(VectorWrapper):
    """Wrong: SAME_STEP's final observations in Gymnasium's object array, over
    an env in the dense layout."""

    def step(self, actions: Any) -> Any:
        *result, infos = self.env.step(actions)
        if "final_obs" in infos:
            entries = np.empty(self.num_envs, dtype=object)
            entries[:] = list(infos["final_obs"])
            infos = {**infos, "final_obs": entries}
        return *result, infos


@pytest.mark.parametrize(
    ("wrapper", "found"),
    [
        (
            FinalObsToNumpy,
            "field info['final_obs']: numpy info['final_obs'] over torch batches",
        ),
        (
            FinalObsAsEntries,
            "field info['final_obs']: expected the dense layout, the env below's: a "
            "batch like a NumPy float32 array of shape (3, 3); got a NumPy object "
            "array of shape (3,)",
        ),
    ],
)
def test_catches_final_obs_out_of_the_dense_layout(wrapper: Any, found: str) -> None:
    """Over torch batches, final_obs is one torch batch shaped like the
    observations (vecmode's dense layout), as the env below returns it."""
    library("torch")
    with pytest.raises(ConformanceError) as caught:
        check_wrapper(wrapper, array_library="torch")
    assert caught.value.property == "returns_well_formed_results"
    message = str(caught.value)
    assert (
        "[SameStep over vecmode.SyncVectorEnv (torch batches), episodes ending "
        "together], call 3" in message
    )
    assert found in message, message


@vecmode.supports(*vecmode.MODES, array_native=True)
class ClampsActionsInPlace(vw.ActionWrapper):
    """Wrong: clamps the caller's actions in place."""

    def actions(self, actions: Any) -> Any:
        return actions.clamp_(0, 1)


@vecmode.supports(*vecmode.MODES, array_native=True)
class HalvesRewardsInPlace(vw.RewardWrapper):
    """Wrong: halves the rewards the env below returned, in place."""

    def rewards(self, rewards: Any) -> Any:
        return rewards.mul_(0.5)


@pytest.mark.parametrize(
    ("wrapper", "kwargs", "prop", "found"),
    [
        (
            ClampsActionsInPlace,
            {"action_type": "box"},
            "leaves_inputs_untouched",
            "field actions: step() wrote into the caller's actions",
        ),
        (
            HalvesRewardsInPlace,
            {},
            "no_writes_below",
            "call 1 (step), field rewards: the wrapper wrote into what the env below "
            "returned to it (rewards): [2.5  0.51 2.52] became [1.25  0.255 1.26 ]",
        ),
    ],
)
def test_catches_in_place_writes_into_torch_batches(
    wrapper: Any, kwargs: dict[str, Any], prop: str, found: str
) -> None:
    """The kit's copy of the actions shared the torch tensor's memory, and it
    kept no copy of the torch results below: both writes passed."""
    library("torch")
    with pytest.raises(ConformanceError) as caught:
        check_wrapper(wrapper, array_library="torch", **kwargs)
    assert caught.value.property == prop
    assert found in str(caught.value), str(caught.value)


def test_bases_without_vecmode_s_core_keep_the_proof_over_numpy():
    """The run over array batches is made on vecmode's core only: bases that
    leave it out (a factory that builds over Gymnasium's env alone) keep the
    proof over NumPy, and the report says why."""
    pytest.importorskip("torch")

    def over_gymnasium_only(env):
        if not type(env.unwrapped).__module__.startswith("gymnasium"):
            raise TypeError(f"over Gymnasium's SyncVectorEnv only, not {env}")
        return Halves(env)

    report = check_wrapper(over_gymnasium_only, bases="gymnasium.vector.SyncVectorEnv")
    assert report.also_over is None
    assert any(
        "run over NumPy batches only (bases: array batches run over "
        "vecmode.SyncVectorEnv)" in limit
        for limit in report.limits
    ), report.limits
    assert check_wrapper(Halves).also_over == "torch"  # (vecmode's core by default)
