"""Layers known to be wrong after a masked reset, in a mode they support: a layer
above that resets ended sub-envs by ``reset_mask`` makes the stack wrong, which
the policies refuse when built and :func:`vecmode.check_stack` reports."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import gymnasium.wrappers.vector as gwv
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, VectorWrapper

import vecmode
from tests.cli.helpers import run
from vecmode.cli import EXIT_FAILED
from vecmode.registry import Verdict

#: Gymnasium's wrappers with a partial-reset caveat, and how to build each.
FAULTY = {
    "NormalizeObservation": gwv.NormalizeObservation,
    "NormalizeReward": gwv.NormalizeReward,
    "RecordEpisodeStatistics": gwv.RecordEpisodeStatistics,
}


def _gymnasium_env() -> Any:
    return gym.make_vec("CartPole-v1", 2, vectorization_mode="sync")


def _vecmode_env() -> Any:
    return vecmode.make_vec("CartPole-v1", 2, "sync", autoreset_mode="NextStep")


@pytest.mark.parametrize("short", sorted(FAULTY))
def test_the_policies_refuse_to_make_masked_resets_over_such_a_layer(short):
    below = FAULTY[short](_gymnasium_env())
    with pytest.raises(vecmode.IncompatibleModeError) as caught:
        vecmode.DisableAutoreset(below)
    message = str(caught.value)
    assert f"reset_mask, which reaches {short}." in message, message
    assert f"Use vecmode.wrappers.{short} instead" in message, message
    with pytest.raises(vecmode.IncompatibleModeError, match=f"reaches {short}"):
        vecmode.with_autoreset(below, "SameStep")
    # the stack below is untouched and still usable
    below.reset(seed=0)
    below.step(np.zeros(2, dtype=np.int64))
    below.close()


def test_a_layer_right_over_vecmode_s_envs_is_not_refused():
    """RecordEpisodeStatistics is wrong after a masked reset only over Gymnasium's
    envs, which pop reset_mask; vecmode's keep it."""
    envs = vecmode.DisableAutoreset(gwv.RecordEpisodeStatistics(_vecmode_env()))
    assert vecmode.check_stack(envs).ok
    envs.close()
    with pytest.raises(vecmode.IncompatibleModeError, match="reaches NormalizeReward"):
        vecmode.DisableAutoreset(gwv.NormalizeReward(_vecmode_env()))


def test_a_layer_over_a_vecmode_layer_over_gymnasium_s_env_keeps_the_mask():
    """A vecmode layer hands Gymnasium's env a copy of the options: Gymnasium's
    RecordEpisodeStatistics above it sees reset_mask and is right (it was
    reported known-wrong, as over Gymnasium's env itself)."""
    envs = gwv.RecordEpisodeStatistics(
        vecmode.with_autoreset(_gymnasium_env(), "Disabled")
    )
    assert vecmode.check_stack(envs).ok
    envs.reset(seed=0)
    envs.step(np.zeros(2, dtype=np.int64))
    envs.reset(options={"reset_mask": np.array([True, False])})
    assert envs.episode_returns.tolist() == [0.0, 1.0]  # sub-env 1's kept
    envs.close()
    with pytest.raises(vecmode.IncompatibleModeError, match="pop reset_mask"):
        vecmode.DisableAutoreset(gwv.RecordEpisodeStatistics(_gymnasium_env()))

    class HandsOnTheOptions(vecmode.wrappers.ObservationWrapper):  # its own reset
        def observations(self, observations):
            return observations

        def reset(self, *, seed=None, options=None):
            return self.env.reset(seed=seed, options=options)

    disabled = gym.make_vec(
        "CartPole-v1", 2, "sync", vector_kwargs={"autoreset_mode": "Disabled"}
    )
    envs = gwv.RecordEpisodeStatistics(HandsOnTheOptions(disabled))
    assert not vecmode.check_stack(envs).ok  # Gymnasium's env pops the mask

    class PassesThem:  # a mixin's reset counts as its own
        def reset(self, *, seed=None, options=None):
            return self.env.reset(seed=seed, options=options)

    class Mixed(PassesThem, vecmode.wrappers.ObservationWrapper):
        def observations(self, observations):
            return observations

    assert not Mixed.copies_options

    class PopsInItsHook(vecmode.wrappers.ObservationWrapper):  # hands the env a copy
        def observations(self, observations):
            return observations

        def _reset_arguments(self, seed, options):
            options and options.pop("reset_mask")
            return super()._reset_arguments(seed, options)

    hooked = PopsInItsHook(vecmode.make_vec("CartPole-v1", 2, "sync"))
    hooked.reset(seed=0)
    options = {"reset_mask": np.array([True, False])}
    hooked.reset(options=options)
    assert "reset_mask" in options  # the caller's dict is kept
    envs.close()
    hooked.close()


def test_the_report_marks_such_a_layer_known_wrong():
    """A converter the policies' check does not cover (a third party's, declared
    to give Disabled) still gets the stack reported wrong."""

    @vecmode.supports("NextStep", output="Disabled")
    class ThirdPartyDisable(VectorWrapper):
        def __init__(self, env: Any) -> None:
            super().__init__(env)
            self.metadata = {**env.metadata, "autoreset_mode": AutoresetMode.DISABLED}

    try:
        report = vecmode.check_stack(
            ThirdPartyDisable(gwv.NormalizeReward(_vecmode_env()))
        )
    finally:
        vecmode.unregister(ThirdPartyDisable)
    assert not report.ok
    row = report[2]
    assert (row.name, row.verdict) == ("NormalizeReward", Verdict.KNOWN_WRONG)
    assert row.note.startswith("layer 3 ThirdPartyDisable runs Disabled"), row.note
    assert str(report).startswith(
        "NOT OK: layer 2 NormalizeReward is known-wrong under masked resets"
    )
    # without a layer that resets by mask above it, the same layer is ok (a caveat)
    alone = vecmode.check_stack(gwv.NormalizeReward(_vecmode_env()))
    assert alone.ok and alone[2].verdict is Verdict.OK


def test_the_cli_check_fails_such_a_stack(capsys):
    code, out, _ = run(
        ["check", "CartPole-v1", "--mode", "NextStep",
         "--wrap", "gymnasium:NormalizeReward", "--wrap", "DisableAutoreset"],
        capsys,
    )  # fmt: skip
    assert code == EXIT_FAILED
    assert "reaches NormalizeReward" in " ".join(out.split())
