"""vecmode.AsyncVectorEnv returns what Gymnasium's async env and vecmode's sync
env return, call by call (and as a hypothesis property)."""

from __future__ import annotations

import functools

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vecmode
from tests.cores.async_support import FORK, MODES, make_async, run_three
from tests.helpers import (
    OBS_TYPES,
    ScheduledEnv,
    Script,
    assert_same,
    assert_same_run,
    drive,
    make_script,
    scheduled_fns,
)
from vecmode import AutoresetMode


# ------------------------------------------------------------------- fidelity
@pytest.mark.parametrize("in_parent", [0, 2])
@pytest.mark.parametrize("obs_type", OBS_TYPES)
@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_same_as_gymnasium_async_and_vecmode_sync(mode, obs_type, in_parent):
    """5 sub-envs on 2 workers (3 + 2; with 2 in the parent: 2 + 1 + 2), masked
    resets on top of each mode."""
    gym_run, sync_run, async_run = run_three(
        functools.partial(scheduled_fns, 5, obs_type=obs_type),
        mode,
        in_parent=in_parent,
    )
    assert_same_run(sync_run, async_run)
    assert_same_run(gym_run, async_run)


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_same_as_gymnasium_without_shared_memory(mode):
    """Observations by pipe. No extra masks: Gymnasium's own shared_memory=False
    env keeps a pending NEXT_STEP autoreset after a masked reset (a known bug)."""
    fns = functools.partial(scheduled_fns, 4, obs_type="dict")
    gym_run, sync_run, async_run = run_three(
        fns, mode, mask_prob=0.0, shared_memory=False
    )
    assert_same_run(sync_run, async_run)
    assert_same_run(gym_run, async_run)
    # and with masked resets, against the sync env
    for obs_type in ("box", "tuple"):
        fns = functools.partial(scheduled_fns, 4, obs_type=obs_type)
        _, sync_run, async_run = run_three(fns, mode, shared_memory=False)
        assert_same_run(sync_run, async_run)


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_same_as_gymnasium_on_gymnasium_envs(mode):
    """Real envs: continuous actions (shared-memory actions of another dtype too)."""
    pendulum = functools.partial(
        lambda: [functools.partial(gym.make, "Pendulum-v1", max_episode_steps=5)] * 3
    )
    gym_run, sync_run, async_run = run_three(pendulum, mode, steps=12)
    assert_same_run(gym_run, async_run)
    assert_same_run(sync_run, async_run)
    blackjack = functools.partial(
        lambda: [functools.partial(gym.make, "Blackjack-v1")] * 3
    )
    gym_run, sync_run, async_run = run_three(blackjack, mode, steps=12)
    assert_same_run(gym_run, async_run)
    assert_same_run(sync_run, async_run)


@pytest.mark.parametrize("num_workers", [1, 2, 3, 7])
def test_any_number_of_workers_gives_the_same_run(num_workers):
    """1 worker, uneven slices (3 + 2 + 2), one worker per sub-env."""
    fns = functools.partial(scheduled_fns, 7, obs_type="dict")
    for mode in (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP):
        sync = vecmode.with_autoreset(vecmode.SyncVectorEnv(fns()), mode)
        ours = vecmode.with_autoreset(make_async(fns(), num_workers=num_workers), mode)
        assert ours.unwrapped.num_workers == num_workers
        script = make_script(sync, 25, seed=num_workers, mask_prob=0.4)
        assert_same_run(drive(sync, script, False), drive(ours, script, False))
        sync.close()
        ours.close()


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_copy_false_returns_the_shared_buffer_with_the_right_values(mode):
    fns = functools.partial(scheduled_fns, 3)
    sync = vecmode.with_autoreset(vecmode.SyncVectorEnv(fns(), copy=False), mode)
    ours = vecmode.with_autoreset(make_async(fns(), copy=False), mode)
    script = make_script(sync, 15, mask_prob=0.3)
    disabled = mode is AutoresetMode.DISABLED
    expected, got = [], []
    # compare each result as soon as it comes (the buffer is overwritten later)
    for envs, out in ((sync, expected), (ours, got)):
        for kind, result in drive_each(envs, script, disabled):
            out.append((kind, tuple(np.copy(x) if kind else x for x in result)))
            if envs is ours:
                assert result[0] is ours.unwrapped._observations
    assert_same_run(expected, got)
    sync.close()
    ours.close()


def drive_each(envs, script, disabled):
    """``drive``, yielding each call's result before the next call is made."""
    yield "reset", envs.reset(seed=script.seed)
    for t, actions in enumerate(script.actions):
        result = envs.step(actions)
        yield "step", result
        mask = np.zeros(envs.num_envs, dtype=bool)
        if disabled:
            mask |= np.logical_or(result[2], result[3])
        if script.masks[t] is not None:
            mask |= script.masks[t]
        if mask.any():
            yield "reset_mask", envs.reset(options={"reset_mask": mask})


@pytest.mark.parametrize("in_parent", [0, 2])
def test_actions_of_another_dtype_and_lists_reach_the_sub_envs_as_in_sync(in_parent):
    """Actions not in the batch's dtype are pickled, not cast: like the sync env
    (and handed over as they are to the parent's own sub-envs)."""

    def fns():
        return [lambda: EchoAction(0), lambda: EchoAction(1), lambda: EchoAction(2)]

    sync = vecmode.SyncVectorEnv(fns())
    ours = make_async(fns(), num_workers=1, in_parent=in_parent)
    sync.reset(seed=0)
    ours.reset(seed=0)
    for actions in (
        np.array([0, 1, 2]),
        np.array([0, 1, 2], dtype=np.int32),
        np.array([2, 1, 0], dtype=np.uint8),
        [1, 2, 0],
    ):
        assert_same(sync.step(actions), ours.step(actions))
    sync.close()
    ours.close()


class EchoAction(ScheduledEnv):
    """Puts the action it got, and its type, in the info."""

    def __init__(self, index: int = 0) -> None:
        super().__init__(index, lengths=(100,))

    def step(self, action):
        obs, reward, terminated, truncated, _ = super().step(action)
        return (
            obs,
            reward,
            terminated,
            truncated,
            {
                "action": action,
                "type": type(action).__name__,
            },
        )


def test_observation_mode_different_matches_gymnasium():
    def fns():
        return [
            functools.partial(gym.make, "MountainCarContinuous-v0"),
            functools.partial(gym.make, "MountainCarContinuous-v0"),
        ]

    reference = gym.vector.AsyncVectorEnv(
        fns(), observation_mode="different", context=FORK
    )
    ours = vecmode.with_autoreset(
        make_async(fns(), observation_mode="different"), "NextStep"
    )
    assert ours.observation_space == reference.observation_space
    script = make_script(reference, 8)
    assert_same_run(drive(reference, script, False), drive(ours, script, False))
    reference.close()
    ours.close()


def test_observation_mode_spaces_given_match_gymnasium():
    """observation_mode=(batched space, single space), wider than the sub-envs'
    (their shapes and dtypes): the spaces and the run as Gymnasium's."""
    single = gym.spaces.Box(-10.0, 10.0, (2,), np.float32)
    spaces = (gym.vector.utils.batch_space(single, 2), single)

    def fns():
        return [functools.partial(gym.make, "MountainCarContinuous-v0")] * 2

    reference = gym.vector.AsyncVectorEnv(fns(), observation_mode=spaces, context=FORK)
    ours = vecmode.with_autoreset(
        make_async(fns(), observation_mode=spaces), "NextStep"
    )
    assert ours.observation_space == reference.observation_space == spaces[0]
    assert ours.single_observation_space == reference.single_observation_space
    assert ours.single_observation_space == single
    script = make_script(reference, 4)
    assert_same_run(drive(reference, script, False), drive(ours, script, False))
    reference.close()
    ours.close()


# ---------------------------------------------------------- property (hypothesis)
@st.composite
def scenarios(draw):
    num_envs = draw(st.integers(1, 5))
    steps = draw(st.integers(1, 20))
    return {
        "num_envs": num_envs,
        "num_workers": draw(st.integers(1, 2)),
        "in_parent": draw(st.integers(0, num_envs - 1)),
        "shared_memory": draw(st.booleans()),
        "lengths": [
            draw(st.lists(st.integers(1, 5), min_size=1, max_size=3))
            for _ in range(num_envs)
        ],
        "truncate": [
            draw(st.lists(st.booleans(), min_size=1, max_size=2))
            for _ in range(num_envs)
        ],
        "obs_type": draw(st.sampled_from(OBS_TYPES)),
        "mode": draw(st.sampled_from(MODES)),
        "script": Script(
            seed=draw(st.integers(0, 2**16)),
            actions=[
                np.array(
                    draw(
                        st.lists(
                            st.integers(0, 2), min_size=num_envs, max_size=num_envs
                        )
                    )
                )
                for _ in range(steps)
            ],
            masks=[
                draw(
                    st.none()
                    | st.lists(st.booleans(), min_size=num_envs, max_size=num_envs).map(
                        lambda m: np.array(m, dtype=bool)
                    )
                )
                for _ in range(steps)
            ],
            options=draw(st.none() | st.just({"tag": "x"})),
        ),
    }


@settings(max_examples=50)
@given(scenarios())
def test_async_equals_sync_property(scenario):
    """Random episode lengths, endings, actions, masks, options, modes, workers."""

    def fns():
        return scheduled_fns(
            scenario["num_envs"],
            scenario["lengths"],
            scenario["truncate"],
            scenario["obs_type"],
        )

    mode = scenario["mode"]
    sync = vecmode.with_autoreset(vecmode.SyncVectorEnv(fns()), mode)
    ours = vecmode.with_autoreset(
        make_async(
            fns(),
            num_workers=scenario["num_workers"],
            in_parent=scenario["in_parent"],
            shared_memory=scenario["shared_memory"],
        ),
        mode,
    )
    disabled = mode is AutoresetMode.DISABLED
    try:
        expected = drive(sync, scenario["script"], disabled)
        got = drive(ours, scenario["script"], disabled)
    finally:
        sync.close()
        ours.close()
    assert_same_run(expected, got)
