"""as_mode and mode_of."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
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


def test_as_mode_error_says_what_to_use_instead():
    with pytest.raises(ValueError) as info:
        as_mode("sometimes")
    assert str(info.value) == (
        "'sometimes' is not an autoreset mode; use one of AutoresetMode.NEXT_STEP, "
        "AutoresetMode.SAME_STEP, AutoresetMode.DISABLED or their values "
        "'NextStep', 'SameStep', 'Disabled'."
    )


def test_a_declaration_that_is_not_a_mode_is_the_envs_fault():
    """It said "'Custom' is not an autoreset mode; use one of ...", as if the
    caller's argument (require_mode's, say) were wrong."""
    envs = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")])
    envs.metadata["autoreset_mode"] = "Custom"
    said = (
        "SyncVectorEnv's metadata['autoreset_mode'] is 'Custom', not an autoreset "
        "mode: the env must declare one of 'NextStep', 'SameStep', 'Disabled' (or an "
        "AutoresetMode) there."
    )
    for call in (lambda: mode_of(envs), lambda: vecmode.require_mode(envs, "NextStep")):
        with pytest.raises(ValueError) as info:
            call()
        assert str(info.value) == said
    envs.close()


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


@pytest.mark.parametrize("mode", list(AutoresetMode), ids=lambda m: m.value)
def test_boundary_describes_what_each_mode_really_returns(mode):
    """Observations encode (sub-env, episode, step): check every boundary fact."""
    from tests.helpers import scheduled_fns
    from vecmode.modes import boundary

    envs = vecmode.with_autoreset(
        vecmode.SyncVectorEnv(scheduled_fns(3, lengths=[(1, 3), (2,), (4, 1)])), mode
    )
    obs, _ = envs.reset(seed=0)
    ended_before = np.zeros(3, dtype=bool)
    seen = {"starts": 0, "unreal": 0, "final": 0}
    for _ in range(20):
        last = obs
        obs, _, terminations, truncations, infos = envs.step(np.zeros(3, dtype=int))
        b = boundary(mode, terminations, truncations, ended_before)
        episode, step = obs[:, 1], obs[:, 2]
        np.testing.assert_array_equal(b.starts, step == 0)
        np.testing.assert_array_equal(b.starts, episode == last[:, 1] + 1)
        np.testing.assert_array_equal(b.real, ~(b.starts & ~b.ended & ~b.final_in_info))
        np.testing.assert_array_equal(
            b.final_in_info, infos.get("_final_obs", np.zeros(3, dtype=bool))
        )
        for i in np.flatnonzero(b.final_in_info):
            assert infos["final_obs"][i][1:].tolist() == [last[i, 1], last[i, 2] + 1]
        seen["starts"] += b.starts.sum()
        seen["unreal"] += (~b.real).sum()
        seen["final"] += b.final_in_info.sum()
        np.testing.assert_array_equal(
            b.needs_reset, b.ended if mode is AutoresetMode.DISABLED else False
        )
        if b.needs_reset.any():
            obs, _ = envs.reset(options={"reset_mask": b.needs_reset})
            ended_before = np.zeros(3, dtype=bool)
        else:
            ended_before = b.ended
    envs.close()
    expected = {
        AutoresetMode.NEXT_STEP: ("starts", "unreal"),
        AutoresetMode.SAME_STEP: ("starts", "final"),
        AutoresetMode.DISABLED: (),
    }[mode]
    assert {k for k, v in seen.items() if v} == set(expected)


def test_the_undispatched_count_nonzero_is_numpys():
    from vecmode._numpy import count_nonzero

    rng = np.random.default_rng(0)
    for value in (
        rng.random(16) < 0.5,
        np.zeros(3, dtype=bool),
        rng.integers(-2, 3, size=(4, 5)),
        [True, False, True],
        np.array([np.nan, 0.0, -0.0, 1.0]),
    ):
        assert count_nonzero(value) == np.count_nonzero(value)


def test_the_shared_quiet_boundary_cannot_be_written_into():
    """Every tracker of a size shares the quiet boundary's arrays: writing into
    one (``envs.boundary.ended[1] = True``) must fail, not change them all."""
    from vecmode.modes import BoundaryTracker

    one = BoundaryTracker(AutoresetMode.SAME_STEP, 3)
    other = BoundaryTracker(AutoresetMode.NEXT_STEP, 3)
    import dataclasses

    for field in dataclasses.fields(one.quiet):
        array = getattr(one.quiet, field.name)
        with pytest.raises(ValueError, match="read-only"):
            array[1] = not array[1]
    assert not other.quiet.ended.any() and other.quiet.real.all()


def test_the_mode_predicates_agree_with_the_boundary_table():
    from vecmode.modes import (
        boundary,
        caller_resets,
        final_in_info,
        resets_on_next_step,
    )

    yes, no = np.ones(1, dtype=bool), np.zeros(1, dtype=bool)
    for mode in AutoresetMode:
        ends = boundary(mode, yes, no, no)  # the step where the episode ends
        after = boundary(mode, no, no, yes)  # the step after it
        for spelling in (mode, mode.value, mode.name.lower()):
            assert resets_on_next_step(spelling) is (not after.real[0]), mode
            assert final_in_info(spelling) is bool(ends.final_in_info[0]), mode
            assert caller_resets(spelling) is bool(ends.needs_reset[0]), mode


def test_map_infos_maps_each_part_and_leaves_the_infos_as_they_were():
    from vecmode.modes import map_infos

    infos = {
        "t": np.array([1, 2]),
        "final_obs": np.array([None, 5.0]),
        "_final_obs": np.array([False, True]),
        "final_info": {},
        "_final_info": np.array([False, True]),
    }
    out = map_infos(
        infos,
        others=lambda d: {k: v * 10 for k, v in d.items()},
        observation=lambda o: -o,
        final_info=lambda finals: {"mapped": finals},
    )
    assert out["t"].tolist() == [10, 20]
    assert out["final_obs"].tolist() == [None, -5.0]
    assert out["final_obs"].dtype == object
    assert out["final_info"] == {"mapped": {}}
    assert out["_final_obs"] is infos["_final_obs"]
    assert out["_final_info"] is infos["_final_info"]
    # untouched: a layer below may have kept them
    assert infos["final_obs"].tolist() == [None, 5.0] and infos["t"].tolist() == [1, 2]
