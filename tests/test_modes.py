"""as_mode and mode_of."""

from __future__ import annotations

import gymnasium as gym
import pytest

import vecmode
from vecmode import AutoresetMode, as_mode, mode_of


@pytest.mark.parametrize("mode", list(AutoresetMode), ids=lambda m: m.value)
def test_as_mode_accepts_the_enum_its_value_and_its_name(mode):
    for spelling in (
        mode,
        mode.value,
        mode.name,
        mode.name.lower(),
        mode.value.lower(),
    ):
        assert as_mode(spelling) is mode
    assert as_mode(mode.name.lower().replace("_", "-")) is mode


@pytest.mark.parametrize("bad", ["Next", "", "SameStepp", 1, None, object()])
def test_as_mode_rejects_anything_else_listing_the_valid_ones(bad):
    with pytest.raises(ValueError) as info:
        as_mode(bad)
    message = str(info.value)
    assert repr(bad) in message
    for mode in AutoresetMode:
        assert repr(mode.value) in message and f"AutoresetMode.{mode.name}" in message


def test_mode_of():
    envs = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")])
    assert mode_of(envs) is AutoresetMode.NEXT_STEP
    envs.metadata["autoreset_mode"] = "SameStep"  # a string is read as a mode
    assert mode_of(envs) is AutoresetMode.SAME_STEP
    del envs.metadata["autoreset_mode"]
    assert mode_of(envs) is None
    envs.metadata["autoreset_mode"] = "bogus"
    with pytest.raises(ValueError, match="bogus"):
        mode_of(envs)
    assert mode_of(object()) is None
    envs.close()


def test_public_api():
    for name in vecmode.__all__:
        assert getattr(vecmode, name) is not None
    assert tuple(AutoresetMode) == vecmode.MODES
