"""vecmode.AsyncVectorEnv: fidelity, one round trip per call, faults, start methods.

Most tests use the ``fork`` start method (fast to start); a few run under ``spawn``
and ``forkserver``, whose env_fns must be picklable (the env classes live in
``tests.helpers``).
"""

from __future__ import annotations

import builtins
import contextlib
import copy
import functools
import gc
import multiprocessing
import os
import pickle
import re
import signal
import threading
import time
import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.error import (
    AlreadyPendingCallError,
    ClosedEnvironmentError,
    NoAsyncCallError,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import vecmode
from tests.helpers import (
    OBS_TYPES,
    InPlaceActionEnv,
    ScheduledEnv,
    Script,
    SlowEnv,
    assert_same,
    assert_same_run,
    drive,
    env_fn_that_exits_in_a_worker,
    env_fn_that_raises,
    faulty_fns,
    make_script,
    scheduled_fns,
)
from vecmode import (
    AsyncVectorEnv,
    AutoresetMode,
    EpisodeEndedError,
    IncompatibleModeError,
    SubEnvError,
    WorkerError,
    WorkerTimeoutError,
)
from vecmode import layout as layout_module
from vecmode.core import Command
from vecmode.errors import InfoBatchError
from vecmode.layout import default_layout, default_num_workers, slices

MODES = list(AutoresetMode)
FORK = "fork"


def make_async(fns, **kwargs) -> AsyncVectorEnv:
    kwargs.setdefault("context", FORK)
    kwargs.setdefault("num_workers", 2)
    return AsyncVectorEnv(fns, **kwargs)


@contextlib.contextmanager
def deadline(seconds: int):
    """Fail (instead of hanging the suite) if the block takes too long."""

    def alarm(signum, frame):
        raise AssertionError(f"still running after {seconds} s: a hang")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def gone(pids) -> bool:
    """Whether every process in ``pids`` has exited and been reaped."""
    for pid in pids:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        return False
    children = {child.pid for child in multiprocessing.active_children()}
    return not children & set(pids)


def run_three(fns_factory, mode, steps=30, seed=1, mask_prob=0.3, **kwargs):
    """Gymnasium's async env, vecmode's sync env and vecmode's async env, on one
    script; return the three runs."""
    reference = gym.vector.AsyncVectorEnv(
        fns_factory(),
        autoreset_mode=mode,
        context=FORK,
        shared_memory=kwargs.get("shared_memory", True),
        copy=kwargs.get("copy", True),
    )
    sync = vecmode.with_autoreset(vecmode.SyncVectorEnv(fns_factory()), mode)
    ours = vecmode.with_autoreset(make_async(fns_factory(), **kwargs), mode)
    try:
        script = make_script(reference, steps, seed=seed, mask_prob=mask_prob)
        disabled = mode is AutoresetMode.DISABLED
        return (
            drive(reference, script, disabled),
            drive(sync, script, disabled),
            drive(ours, script, disabled),
        )
    finally:
        reference.close()
        sync.close()
        ours.close()


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


# ------------------------------------------------------ the core's contract
def test_is_a_disabled_vecmode_core_and_a_gymnasium_vector_env():
    envs = make_async(scheduled_fns(3))
    assert isinstance(envs, vecmode.core.VectorCore)
    assert isinstance(envs, gym.vector.VectorEnv)
    assert envs.metadata["autoreset_mode"] is AutoresetMode.DISABLED
    assert envs.autoreset_mode is AutoresetMode.DISABLED
    assert envs.num_envs == 3 and envs.num_workers == 2
    assert envs.single_observation_space == ScheduledEnv().observation_space
    assert envs.action_space == gym.vector.utils.batch_space(gym.spaces.Discrete(3), 3)
    assert repr(envs) == "AsyncVectorEnv(num_envs=3, num_workers=2)"
    envs.close()


def test_refuses_another_mode_and_says_how_to_get_it():
    with pytest.raises(IncompatibleModeError) as info:
        make_async(scheduled_fns(2), autoreset_mode="SameStep")
    assert "with_autoreset" in str(info.value) and "async" in str(info.value)
    assert multiprocessing.active_children() == []


@pytest.mark.parametrize(
    ("kwargs", "text"),
    [
        ({"num_workers": 0}, "num_workers must be None or an int >= 1"),
        ({"num_workers": 1.5}, "num_workers must be None or an int >= 1"),
        ({"observation_mode": "mixed"}, "observation_mode"),
        ({"timeout": 0}, "timeout must be None or > 0"),
    ],
)
def test_bad_arguments_are_clear_errors(kwargs, text):
    with pytest.raises(ValueError, match=text):
        make_async(scheduled_fns(2), **kwargs)
    with pytest.raises(ValueError, match="at least one function"):
        make_async([])


def test_default_num_workers_and_slices(monkeypatch):
    cpus = len(os.sched_getaffinity(0))
    assert default_num_workers(100) == cpus
    assert default_num_workers(1) == 1
    # by default every sub-env in a worker, one worker per CPU
    envs = AsyncVectorEnv(scheduled_fns(3), context=FORK)
    assert (envs.num_workers, envs.in_parent) == default_layout(3, None, None)
    assert envs.in_parent == 0
    envs.close()
    monkeypatch.setattr(layout_module, "usable_cpus", lambda: 2)
    assert default_layout(8, None, None) == (2, 0)
    assert default_layout(3, None, None) == (2, 0)
    assert default_layout(1, None, None) == (1, 0)
    assert default_layout(8, 3, None) == (3, 0)
    assert default_layout(8, None, 0) == (2, 0)
    # the parent's share is an opt-in; one worker per CPU but one then
    assert default_layout(8, None, 2) == (1, 2)
    assert default_layout(8, 3, 2) == (3, 2)
    monkeypatch.setattr(layout_module, "usable_cpus", lambda: 1)
    assert default_layout(8, None, None) == (1, 0)
    monkeypatch.undo()
    assert make_async(scheduled_fns(2), num_workers=5).num_workers == 2
    assert slices(7, 3) == [(0, 3), (3, 5), (5, 7)]
    assert slices(4, 4) == [(0, 1), (1, 2), (2, 3), (3, 4)]


def test_stepping_an_ended_sub_env_raises_before_anything_is_stepped():
    envs = make_async(scheduled_fns(3, lengths=[(2,), (3,), (5,)]))
    envs.reset(seed=0)
    actions = np.zeros(3, dtype=int)
    envs.step(actions)
    _, _, terminations, truncations, _ = envs.step(actions)
    assert np.logical_or(terminations, truncations).tolist() == [True, False, False]
    before = envs.get_attr("t")
    with pytest.raises(EpisodeEndedError) as info:
        envs.step(actions)
    assert info.value.indices == (0,)
    with pytest.raises(EpisodeEndedError):
        envs.step_async(actions)
    with pytest.raises(EpisodeEndedError):
        envs.execute([Command.STEP_THEN_RESET, Command.KEEP, Command.KEEP], actions)
    assert envs.get_attr("t") == before, "something was stepped"
    obs, _ = envs.reset(options={"reset_mask": np.array([True, False, False])})
    assert obs[0].tolist() == [0, 1, 0]
    envs.step(actions)
    envs.close()


def test_execute_one_command_per_sub_env_and_idle_workers_are_not_asked():
    envs = make_async(scheduled_fns(4, lengths=[(5,), (5,), (5,), (1,)]))
    obs0, _ = envs.reset(seed=0)
    obs, rewards, terminations, _, infos, ended, finals = envs.execute(
        [Command.STEP, Command.KEEP, Command.RESET, Command.STEP], np.full(4, 2)
    )
    assert ended == [3] and finals == []
    assert rewards.tolist() == [2.5, 0.0, 0.0, 2.53]
    assert terminations.tolist() == [False, False, False, True]
    assert obs[1].tolist() == obs0[1].tolist() and obs[2].tolist() == [2, 1, 0]
    assert infos["_step"].tolist() == [True, False, False, True]
    # only the first worker (sub-envs 0, 1) has work: the second is not asked, and
    # its sub-envs get reward 0 and False flags, not what it wrote last time
    obs, rewards, terminations, truncations, *_ = envs.execute(
        [Command.STEP, Command.STEP, Command.KEEP, Command.KEEP], np.full(4, 1)
    )
    assert rewards.tolist() == [2.0, 1.51, 0.0, 0.0]
    assert not terminations.any() and not truncations.any()
    _, infos = envs.reset(options={"reset_mask": np.array([False, True, False, True])})
    assert infos["_episode"].tolist() == [False, True, False, True]
    _, infos = envs.reset(options={"reset_mask": np.zeros(4, dtype=bool)})
    assert infos == {}
    envs.close()


class QuirkyInfo(ScheduledEnv):
    """Odd sub-envs put a float in info["x"], even ones an int: Gymnasium's
    _add_info makes the array's dtype that of the first sub-env with the key."""

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        x = self.index if self.index % 2 == 0 else self.index + 0.5
        if (self.t + self.index) % 3:
            info = {**info, "x": x}
        return obs, reward, terminated, truncated, info


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_info_casting_quirks_are_gymnasiums(mode):
    """Infos are merged in sub-env order across workers, so the first sub-env that
    has a key decides its dtype, exactly as in Gymnasium's envs."""
    fns = functools.partial(
        lambda: [functools.partial(QuirkyInfo, i, (4, 2)) for i in range(5)]
    )
    gym_run, sync_run, async_run = run_three(fns, mode, steps=15, num_workers=3)
    assert_same_run(gym_run, async_run)
    assert_same_run(sync_run, async_run)
    dtypes = {
        str(result[-1]["x"].dtype)
        for kind, result in async_run
        if kind == "step" and "x" in result[-1]
    }
    assert dtypes == {"int64", "float64"}, dtypes


@pytest.mark.parametrize(
    ("mask", "error", "text"),
    [
        (np.array([1, 0, 1]), TypeError, "must have `dtype=np.bool_`, got int64"),
        (np.array([True, False]), ValueError, "must have shape `(3,)`, got (2,)"),
        ("yes", TypeError, "must be a numpy array, got <class 'str'>"),
    ],
)
def test_bad_input_is_the_sync_envs_error_and_leaves_the_env_usable(mask, error, text):
    envs = make_async(scheduled_fns(3))
    envs.reset(seed=0)
    with pytest.raises(error, match=re.escape(text)):
        envs.reset(options={"reset_mask": mask})
    with pytest.raises(error):
        envs.reset_async(options={"reset_mask": mask})
    with pytest.raises(ValueError, match="batch of 3 actions"):
        envs.step(np.zeros(2, dtype=int))
    with pytest.raises(ValueError, match="list of 3 seeds"):
        envs.reset(seed=[1, 2])
    with pytest.raises(ValueError, match=r"not a vecmode\.core\.Command"):
        envs.execute([1, 1, 9], np.zeros(3, dtype=int))
    envs.step(np.zeros(3, dtype=int))
    envs.close()


def test_options_are_not_mutated_and_each_sub_env_gets_its_own_copy():
    envs = make_async([functools.partial(Popper, i) for i in range(3)], num_workers=1)
    options = {"tag": "z"}
    _, infos = envs.reset(options=options)
    assert options == {"tag": "z"}
    assert infos["had_tag"].tolist() == [True, True, True]
    mask = np.array([True, False, True])
    options = {"reset_mask": mask, "tag": "x"}
    _, infos = envs.reset(options=options)
    assert options["reset_mask"] is mask and options["tag"] == "x"
    assert infos["had_tag"].tolist() == [True, False, True]
    envs.close()


class Popper(ScheduledEnv):
    """Pops "tag" from the reset options it gets, and says whether it was there."""

    def reset(self, *, seed=None, options=None):
        had_tag = bool(options) and options.pop("tag", None) is not None
        obs, info = super().reset(seed=seed, options=options)
        return obs, {**info, "had_tag": had_tag}


# --------------------------------------------------- Gymnasium's async surface
def test_step_async_step_wait_reset_async_reset_wait_call_async_call_wait():
    envs = make_async(scheduled_fns(3))
    envs.reset_async(seed=0)
    with pytest.raises(AlreadyPendingCallError, match="reset_wait"):
        envs.step_async(np.zeros(3, dtype=int))
    with pytest.raises(NoAsyncCallError):
        envs.step_wait()
    obs, infos = envs.reset_wait()
    assert obs[:, 2].tolist() == [0, 0, 0] and infos["_episode"].all()
    envs.step_async(np.ones(3, dtype=int))
    with pytest.raises(
        AlreadyPendingCallError,
        match=re.escape("Calling `step` while waiting for a pending call to `step`"),
    ):
        envs.step(np.ones(3, dtype=int))
    with pytest.raises(AlreadyPendingCallError):
        envs.reset(seed=1)
    obs, rewards, *_ = envs.step_wait(timeout=5)
    assert rewards.tolist() == [1.5, 1.51, 1.52]
    # the refused calls ran nothing: no sub-env lost its state, the env goes on
    assert not envs.awaiting_reset.any()
    obs = envs.step(np.ones(3, dtype=int))[0]
    assert obs[:, 2].tolist() == [2, 2, 2]
    envs.call_async("_obs")
    assert [o.tolist() for o in envs.call_wait()] == obs.tolist()
    with pytest.raises(NoAsyncCallError):
        envs.reset_wait()
    envs.close()


def test_call_get_attr_set_attr_render():
    envs = make_async(scheduled_fns(3))
    assert envs.get_attr("index") == (0, 1, 2)
    envs.set_attr("index", [7, 8, 9])
    assert envs.call("_obs")[0].tolist()[0] == 7
    envs.set_attr("index", 4)
    assert envs.get_attr("index") == (4, 4, 4)
    assert callable(envs.get_attr("_obs")[0])  # like SyncVectorEnv: not called
    with pytest.raises(ValueError, match="list or tuple of 3 values"):
        envs.set_attr("index", [1, 2])
    with pytest.raises(ValueError, match="use the env's own step"):
        envs.call("step", 0)
    assert envs.render() == (None, None, None)
    assert len(envs.np_random_seed) == 3
    wrapped = vecmode.with_autoreset(envs, "SameStep")
    wrapped.set_attr("index", [1, 2, 3])
    assert wrapped.get_attr("index") == (1, 2, 3)
    wrapped.close()
    assert envs.closed


def _where(env, tag):
    """Which process runs ``env``, with the sub-env's index and a tag."""
    return os.getpid(), env.unwrapped.index, tag


@pytest.mark.parametrize("in_parent", [None, 2], ids=["workers", "in-parent"])
def test_each_runs_a_function_on_the_chosen_sub_envs_where_they_run(in_parent):
    """Only the sub-envs asked for, in the order asked (repeats too), each in its
    own process; the same in the sync core, and the same errors."""
    fns = scheduled_fns(5)
    envs = make_async(fns, in_parent=in_parent)
    sync = vecmode.SyncVectorEnv(fns)
    order = [4, 0, 3, 3, 1]
    got = envs.each(_where, "x", indices=order)
    assert [(i, tag) for _, i, tag in got] == [(i, "x") for i in order]
    pids = {i: pid for pid, i, _ in envs.each(_where, "y")}
    assert len(set(pids.values())) == 3 if in_parent else 2
    assert (pids[4] == os.getpid()) == bool(in_parent)
    assert envs.each(lambda env: env.unwrapped.index, indices=-1) == (4,)
    for core in (envs, sync):
        core.each(lambda env: setattr(env.unwrapped, "mark", True), indices=(1, 3))
        assert core.each(lambda env: hasattr(env.unwrapped, "mark")) == (
            False,
            True,
            False,
            True,
            False,
        )
        with pytest.raises(vecmode.SubEnvError) as info:
            core.each(lambda env: 1 / (env.unwrapped.index - 2), indices=[0, 2, 4])
        assert info.value.index == 2 and "ZeroDivisionError" in str(info.value)
        with pytest.raises(IndexError, match="out of range for 5 sub-envs"):
            core.each(_where, "z", indices=[5])
        with pytest.raises(TypeError, match="indices must be"):
            core.each(_where, "z", indices="all")
        assert core.each(_where, "ok", indices=[])[:0] == ()  # still usable
        core.close()


def test_make_vec_async_builds_vecmodes_async_core_in_every_mode():
    for mode in MODES:
        envs = vecmode.make_vec(
            "CartPole-v1",
            num_envs=3,
            vectorization_mode="async",
            autoreset_mode=mode,
            vector_kwargs={"num_workers": 2, "context": FORK},
        )
        assert isinstance(envs.unwrapped, AsyncVectorEnv)
        assert vecmode.mode_of(envs) is mode
        assert envs.unwrapped.num_workers == 2
        envs.close()


def test_check_reports_a_stack_over_the_async_core():
    envs = vecmode.with_autoreset(make_async(scheduled_fns(2)), "NextStep")
    report = vecmode.check_stack(envs)
    assert report.ok
    lines = str(report).splitlines()
    assert lines[0] == "ok: the stack runs NextStep"
    assert lines[4].split() == [
        "0",
        "AsyncVectorEnv",
        "(vecmode)",
        "-",
        "-",
        "Disabled",
        "ok",
        "verified",
    ]
    assert lines[5].split()[1:3] == ["NextStepAutoreset", "(vecmode)"]
    envs.close()


# --------------------------------------------------------------------- faults
def test_a_sub_env_raising_in_step_is_reported_with_its_index_and_traceback():
    envs = make_async(faulty_fns(4, {2: {"fail_step": 2, "lengths": (10,)}}))
    envs.reset(seed=0)
    envs.step(np.zeros(4, dtype=int))
    with pytest.raises(SubEnvError) as info:
        envs.step(np.zeros(4, dtype=int))
    error = info.value
    assert (
        error.index == 2 and error.method == "step" and error.exc_type == "ValueError"
    )
    assert "sub-env 2 raised ValueError in step()" in str(error)
    assert "step of sub-env 2 failed on purpose" in str(error)
    assert "Traceback (most recent call last)" in error.worker_traceback
    assert (
        "in step" in error.worker_traceback and "helpers.py" in error.worker_traceback
    )
    assert isinstance(error.__cause__, ValueError)
    assert isinstance(error, RuntimeError)
    # the call's results are lost: every sub-env awaits a reset
    assert envs.awaiting_reset.all()
    with pytest.raises(EpisodeEndedError):
        envs.step(np.zeros(4, dtype=int))
    # the workers are alive; a reset makes the env usable again
    obs, _ = envs.reset(seed=1)
    assert obs[:, 2].tolist() == [0, 0, 0, 0]
    envs.step(np.zeros(4, dtype=int))
    pids = [p.pid for p in envs.processes]
    envs.close()
    assert gone(pids)


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_after_a_failed_step_the_lost_sub_envs_must_be_reset_in_every_mode(mode):
    """No policy invents a transition for a sub-env whose step was lost (NEXT_STEP
    would otherwise show a reset step the caller never saw an episode end for)."""
    envs = vecmode.with_autoreset(
        make_async(faulty_fns(3, {0: {"fail_step": 1}})), mode
    )
    envs.reset(seed=0)
    with pytest.raises(SubEnvError, match="sub-env 0 raised") as info:
        envs.step(np.zeros(3, dtype=int))
    assert info.value.lost == (0, 1, 2)
    with pytest.raises(EpisodeEndedError, match="lost their state") as ended:
        envs.step(np.zeros(3, dtype=int))
    assert ended.value.indices == (0, 1, 2) and ended.value.lost
    assert envs.unwrapped.awaiting_reset.all()
    obs, infos = envs.reset(options={"reset_mask": envs.unwrapped.awaiting_reset})
    assert obs[:, 2].tolist() == [0, 0, 0] and infos["_episode"].all()
    _, rewards, *_ = envs.step(np.zeros(3, dtype=int))
    assert rewards.tolist() == [0.5, 0.51, 0.52]  # real steps again
    envs.close()


def test_a_sub_env_raising_in_reset_and_several_failures_in_one_call():
    envs = make_async(
        faulty_fns(4, {1: {"fail_reset": 2}, 3: {"fail_reset": 2}}), num_workers=2
    )
    envs.reset(seed=0)
    with pytest.raises(SubEnvError) as info:
        envs.reset()
    assert info.value.index == 1 and info.value.method == "reset"
    assert info.value.others == (3,)
    assert "Sub-env(s) 3 raised in the same call too" in str(info.value)
    assert envs.awaiting_reset.all()
    envs.reset()
    envs.close()


class LockInInfo(ScheduledEnv):
    """Puts something that cannot be pickled in its info on its second step."""

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        if self.t == 2 and self.index == 1:
            info = {**info, "lock": threading.Lock()}
        return obs, reward, terminated, truncated, info


def test_an_info_that_cannot_be_pickled_is_reported_naming_the_sub_env():
    envs = make_async([functools.partial(LockInInfo, i, (10,)) for i in range(3)])
    envs.reset(seed=0)
    envs.step(np.zeros(3, dtype=int))
    with pytest.raises(SubEnvError) as info:
        envs.step(np.zeros(3, dtype=int))
    assert info.value.index == 1 and info.value.method == "pickling its info"
    assert "lock" in str(info.value) and envs.awaiting_reset.all()
    envs.reset()  # the worker is alive and answers
    envs.step(np.zeros(3, dtype=int))
    envs.close()


def test_a_sub_env_raising_in_call_get_attr_set_attr_leaves_the_env_as_it_was():
    envs = make_async(faulty_fns(3))
    envs.reset(seed=0)
    with pytest.raises(SubEnvError) as info:
        envs.call("explode")
    assert info.value.index == 0 and isinstance(info.value.__cause__, KeyError)
    assert "unchanged and usable" in str(info.value)
    with pytest.raises(SubEnvError, match="get_attr\\('missing'\\)"):
        envs.get_attr("missing")
    assert not envs.awaiting_reset.any()
    envs.step(np.zeros(3, dtype=int))
    envs.close()


def test_a_killed_worker_is_reported_at_once_even_without_a_timeout():
    envs = make_async(scheduled_fns(4, lengths=[(50,)] * 4))
    envs.reset(seed=0)
    victim = envs.processes[1]
    pids = [p.pid for p in envs.processes]
    os.kill(victim.pid, signal.SIGKILL)
    victim.join(5)
    started = time.monotonic()
    with deadline(20), pytest.raises(WorkerError) as info:
        envs.step(np.zeros(4, dtype=int))
    assert time.monotonic() - started < 5
    message = str(info.value)
    assert "worker process 1 (sub-envs 2-3) died" in message
    assert "killed by signal 9" in message and "close()" in message
    assert "during a step" in message  # the call it was found in, named
    with pytest.raises(WorkerError, match="cannot be used any more") as info:
        envs.reset()
    assert str(info.value).endswith(
        "close() it (which ends what is left of it) and build a new one."
    )
    with deadline(20):
        envs.close()
    envs.close()  # idempotent
    assert gone(pids)


def test_a_killed_worker_whose_pipe_is_held_open_is_still_reported():
    """A sub-env that forked a process of its own: the worker's end of the pipe
    stays open after the worker is killed, so only its process sentinel tells."""
    envs = make_async([functools.partial(Forking, i) for i in range(2)])
    envs.reset(seed=0)
    grandchildren = envs.get_attr("grandchild")
    try:
        os.kill(envs.processes[0].pid, signal.SIGKILL)
        started = time.monotonic()
        with deadline(20), pytest.raises(WorkerError, match="worker process 0"):
            envs.step(np.zeros(2, dtype=int))
        assert time.monotonic() - started < 5
    finally:
        for pid in grandchildren:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    with deadline(20):
        envs.close()


class Forking(ScheduledEnv):
    """Forks a process that sleeps (holding copies of the worker's pipe)."""

    def __init__(self, index: int = 0) -> None:
        super().__init__(index, lengths=(100,))
        pid = os.fork()
        if pid == 0:  # the grandchild
            time.sleep(30)
            os._exit(0)
        self.grandchild = pid


def test_a_worker_killed_during_a_call_is_reported():
    envs = make_async([functools.partial(SlowEnv, i, 0.5) for i in range(2)])
    envs.reset(seed=0)
    pids = [p.pid for p in envs.processes]
    envs.step_async(np.zeros(2, dtype=int))
    time.sleep(0.1)
    os.kill(pids[0], signal.SIGKILL)
    with deadline(20), pytest.raises(WorkerError, match="worker process 0"):
        envs.step_wait()
    with deadline(20):
        envs.close()
    assert gone(pids)


def test_timeout_is_a_clear_error_and_close_terminates_the_stuck_workers():
    envs = make_async([functools.partial(SlowEnv, i, 30.0) for i in range(2)])
    envs.reset(seed=0)
    pids = [p.pid for p in envs.processes]
    started = time.monotonic()
    with deadline(20), pytest.raises(WorkerTimeoutError) as info:
        envs.step_async(np.zeros(2, dtype=int))
        envs.step_wait(timeout=0.3)
    assert 0.25 < time.monotonic() - started < 5
    assert isinstance(info.value, multiprocessing.TimeoutError)
    assert "did not finish within timeout=0.3 s" in str(info.value)
    with pytest.raises(WorkerError, match="timed out"):
        envs.step(np.zeros(2, dtype=int))
    started = time.monotonic()
    with deadline(20):
        envs.close()
    assert time.monotonic() - started < 5
    assert gone(pids)


def test_close_ends_a_busy_worker_when_its_timeout_is_up():
    """close(timeout=...) after an interrupted call (here: a pending one) waits
    that long for the busy worker, then ends it; it used to wait a second more
    (the wait for a worker that answered), past the documented limit."""
    envs = make_async([functools.partial(SlowEnv, i, 30.0) for i in range(2)])
    envs.reset(seed=0)
    pids = [p.pid for p in envs.processes]
    envs.step_async(np.zeros(2, dtype=int))
    started = time.monotonic()
    with deadline(20), pytest.warns(UserWarning, match="pending call"):
        envs.close(timeout=0.2)
    assert time.monotonic() - started < 1.0  # 0.2 s, not 0.2 + 1
    assert gone(pids)


def test_the_timeout_argument_applies_to_every_call():
    envs = make_async([functools.partial(SlowEnv, 0, 30.0)], timeout=0.3)
    envs.reset(seed=0)
    with deadline(20), pytest.raises(WorkerTimeoutError):
        envs.step(np.zeros(1, dtype=int))
    with deadline(20):
        envs.close()


def test_an_env_fn_that_fails_is_reported_at_construction_and_leaves_no_process():
    before = set(multiprocessing.active_children())
    fns = scheduled_fns(4)
    fns[3] = env_fn_that_raises
    with pytest.raises(SubEnvError) as info:
        make_async(fns)
    assert info.value.index == 3 and info.value.method == "env_fn"
    assert "sub-env 3's env_fn raised ValueError" in str(info.value)
    assert "cannot build its env" in info.value.worker_traceback
    assert set(multiprocessing.active_children()) == before
    # sub-env 0 is also built in the parent, to read its spaces
    with pytest.raises(SubEnvError, match="sub-env 0's env_fn raised"):
        make_async([env_fn_that_raises, *scheduled_fns(1)])
    assert set(multiprocessing.active_children()) == before


def env_fn_slow_in_a_worker() -> gym.Env:
    """Builds at once in the parent (sub-env 0's copy), in 30 s in a worker."""
    if multiprocessing.parent_process() is not None:
        time.sleep(30)
    return ScheduledEnv(0)


def test_an_env_fn_that_fails_is_reported_without_waiting_for_slower_builds():
    """One worker's env_fn raised while another was still building: the error
    came when the slowest build ended (30 s here); now at once, and the busy
    worker is ended."""
    before = set(multiprocessing.active_children())
    started = time.monotonic()
    with deadline(25), pytest.raises(SubEnvError) as info:
        make_async([*scheduled_fns(1), env_fn_slow_in_a_worker, env_fn_that_raises])
    assert time.monotonic() - started < 10
    assert (info.value.index, info.value.method) == (2, "env_fn")
    assert set(multiprocessing.active_children()) == before


class CloseRaises(ScheduledEnv):
    def close(self):
        raise ValueError("this close fails on purpose")


def test_a_close_that_raises_at_construction_is_the_sub_env_s_error():
    """Sub-env 0 is also built in the parent, to read the spaces, and closed:
    its close() raising was a bare ValueError out of the constructor."""
    before = set(multiprocessing.active_children())
    with pytest.raises(SubEnvError) as info:
        make_async([CloseRaises, *scheduled_fns(1)])
    assert (info.value.index, info.value.method) == (0, vecmode.errors.BUILDING_CLOSE)
    assert "No env was built" in str(info.value)
    assert set(multiprocessing.active_children()) == before


def test_a_worker_dying_at_construction_is_reported_and_leaves_no_process():
    before = set(multiprocessing.active_children())
    with deadline(20), pytest.raises(WorkerError, match="died with exit code 3"):
        make_async([env_fn_that_exits_in_a_worker, *scheduled_fns(2)])
    assert set(multiprocessing.active_children()) == before


def test_different_spaces_are_refused_at_construction():
    class Other(ScheduledEnv):
        def __init__(self):
            super().__init__(obs_type="discrete")

    with pytest.raises(RuntimeError, match="sub-env 2's observation space"):
        make_async([*scheduled_fns(2), Other])
    assert multiprocessing.active_children() == []


def test_close_is_idempotent_and_leaves_no_process():
    envs = make_async(scheduled_fns(3))
    pids = [p.pid for p in envs.processes]
    assert len(pids) == 2 and not gone(pids)
    envs.close()
    envs.close()
    assert envs.closed and gone(pids)
    with pytest.raises(ClosedEnvironmentError):
        envs.step(np.zeros(3, dtype=int))
    with pytest.raises(ClosedEnvironmentError):
        envs.get_attr("index")


def test_close_with_a_pending_call_terminate_and_context_manager():
    with (
        pytest.warns(
            UserWarning,
            match=re.escape(
                "Calling `close` while waiting for a pending call to `step` to "
                "complete."
            ),
        ),
        make_async(scheduled_fns(3)) as envs,
    ):
        envs.reset(seed=0)
        envs.step_async(np.zeros(3, dtype=int))
        pids = [p.pid for p in envs.processes]
    assert envs.closed and gone(pids)
    envs = make_async(scheduled_fns(3))
    pids = [p.pid for p in envs.processes]
    envs.close(terminate=True)
    assert gone(pids)


def test_close_with_a_pending_call_under_warnings_as_errors_leaks_nothing():
    """The warning came before the shutdown: raised as an error (pytest's -W
    error, python -W error), it left the workers running, closed=True."""
    envs = make_async(scheduled_fns(3))
    envs.reset(seed=0)
    envs.step_async(np.zeros(3, dtype=int))
    pids = [p.pid for p in envs.processes]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning, match="Calling `close` while waiting"):
            envs.close()
    assert envs.closed and gone(pids)


def test_close_in_a_forked_child_leaves_the_parents_workers():
    """A child forked from the training process (os.fork) holds a copy of the
    env, not its workers: its close() ended nothing but raised an
    AssertionError from multiprocessing; now it returns, and the parent's env
    steps on."""
    envs = make_async(scheduled_fns(2))
    envs.reset(seed=0)
    pid = os.fork()
    if pid == 0:  # the child: close the copy, and leave without atexit handlers
        code = 0
        try:
            envs.close()
            code = 0 if envs.closed else 2
        except BaseException:
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    obs = envs.step(np.zeros(2, dtype=int))[0]
    assert obs[:, 2].tolist() == [1, 1]
    envs.close()
    envs = make_async(scheduled_fns(3), daemon=False)
    assert not any(p.daemon for p in envs.processes)
    pids = [p.pid for p in envs.processes]
    envs.close()
    assert gone(pids)


@pytest.mark.parametrize("in_parent", [0, 1])
@pytest.mark.parametrize(
    "send",
    [
        lambda envs, lock: envs.reset(options={"lock": lock}),
        lambda envs, lock: envs.call("get_wrapper_attr", lock),
        lambda envs, lock: envs.call_async("get_wrapper_attr", lock),
        lambda envs, lock: envs.set_attr("lock", [lock] * 3),
    ],
    ids=["reset-options", "call", "call_async", "set_attr"],
)
def test_a_message_that_does_not_pickle_is_refused_and_the_env_goes_on(send, in_parent):
    """Nothing is sent: a NotPicklableError (a TypeError, as Gymnasium's), and
    the env is unchanged (it was broken for good: the failure counted as an
    interrupted send)."""
    envs = make_async(scheduled_fns(3), in_parent=in_parent)
    envs.reset(seed=0)
    before = envs.step(np.zeros(3, dtype=int))[0].copy()
    with pytest.raises(vecmode.errors.NotPicklableError, match="cannot be pickled"):
        send(envs, threading.Lock())
    assert isinstance(vecmode.errors.NotPicklableError("x"), TypeError)
    assert not envs.awaiting_reset.any()
    obs = envs.step(np.zeros(3, dtype=int))[0]
    np.testing.assert_array_equal(obs[:, 2], before[:, 2] + 1)
    assert len(envs.get_attr("spec")) == 3
    envs.close()


def _explode() -> None:
    raise AttributeError("Can't get attribute 'Stats' on <module '__main__'>")


class LoadsBadly:
    """Pickles here, fails to unpickle in the worker (as an object of a class
    defined in the main script does under spawn)."""

    def __reduce__(self):
        return (_explode, ())


@pytest.mark.parametrize(
    "send, usable",
    [
        (lambda envs: envs.reset(options={"x": LoadsBadly()}), False),
        (lambda envs: envs.call("get_wrapper_attr", LoadsBadly()), True),
        (lambda envs: envs.set_attr("x", LoadsBadly()), True),
    ],
    ids=["reset", "call", "set_attr"],
)
def test_a_message_the_worker_cannot_unpickle_is_the_sub_env_s_error(send, usable):
    """The worker died of it (WorkerError, exit code 1, the reason only on its
    standard error); now a SubEnvError naming what failed, and the env goes on
    (after a reset where the call was a reset)."""
    envs = make_async(scheduled_fns(3))
    envs.reset(seed=0)
    with pytest.raises(SubEnvError, match="unpickling what the parent sent") as caught:
        send(envs)
    assert "Can't get attribute 'Stats'" in str(caught.value)
    assert envs.awaiting_reset.any() is not usable
    envs.reset(seed=0)
    assert envs.step(np.zeros(3, dtype=int))[0].shape[0] == 3
    envs.close()


@pytest.mark.parametrize(
    "layout, shared",
    [({}, "0, 1, 2"), ({"in_parent": 2}, "1, 2")],
    ids=["workers", "in_parent"],
)
def test_the_same_env_object_behind_two_sub_envs_is_refused(layout, shared):
    """As in the sync core: one env object from two env_fns of a slice (a
    worker's, or the parent's share) was stepped twice a step."""
    env = ScheduledEnv(0)
    before = set(multiprocessing.active_children())
    with pytest.raises(ValueError, match=f"same env object for sub-envs {shared}:"):
        make_async([lambda: env] * 3, num_workers=1, **layout)
    time.sleep(0.1)
    assert set(multiprocessing.active_children()) <= before


def _build_async_in_a_daemonic_worker(_: int) -> str:
    try:
        AsyncVectorEnv([lambda: gym.make("CartPole-v1")], context="fork").close()
    except AssertionError as exc:
        return str(exc)
    return "built"


def test_a_daemonic_parent_is_told_what_to_build_instead():
    """In a multiprocessing.Pool (or DataLoader) worker no process can be
    started: multiprocessing's AssertionError, with what to do."""
    with multiprocessing.get_context(FORK).Pool(1) as pool:
        said = pool.map(_build_async_in_a_daemonic_worker, [0])[0]
    assert "daemonic processes are not allowed to have children" in said
    assert "vecmode.SyncVectorEnv" in said


NO_MAIN_GUARD = """
import gymnasium as gym
import vecmode
envs = vecmode.AsyncVectorEnv([lambda: gym.make("CartPole-v1")], context="spawn")
envs.close()
"""


@pytest.mark.slow
def test_a_spawned_worker_that_dies_at_construction_says_why_it_may(tmp_path):
    """A script with no main guard under spawn: the worker's re-import of it
    fails, and the parent's WorkerError points at the guard."""
    import subprocess
    import sys

    script = tmp_path / "no_guard.py"
    script.write_text(NO_MAIN_GUARD)
    run = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120
    )
    assert run.returncode != 0
    raised = [line for line in run.stderr.splitlines() if "WorkerError:" in line]
    assert raised and "starts by importing the main module" in raised[-1], run.stderr


FORK_AND_EXIT = """if True:
    import os, sys
    import numpy as np
    import vecmode
    envs = vecmode.make_vec("CartPole-v1", 2, vectorization_mode="async",
                            autoreset_mode="SameStep", {layout})
    envs.reset(seed=0)
    pid = os.fork()
    if pid == 0:  # the child: try the copy, then exit normally (atexit runs)
        try:
            envs.step(np.array([0, 1]))
            print("the child stepped the parent's workers")
        except vecmode.WorkerError as exc:
            print("child:", exc)
        sys.exit(0)
    _, status = os.waitpid(pid, 0)
    print("child exit", os.waitstatus_to_exitcode(status))
    for _ in range(3):
        rewards = envs.step(np.array([0, 1]))[1]
    print("parent", rewards.tolist())
    envs.close()
"""


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["", "vector_kwargs={'in_parent': 1}"])
def test_a_child_forked_with_os_fork_leaves_the_parents_env_working(layout):
    """A child forked from the training process (os.fork) that exits normally:
    multiprocessing's atexit handler in the child listed the parent's workers
    as its own and terminated them (WorkerError in the parent). Stepping the
    copy in the child is refused, naming os.fork(), not sent to the parent's
    workers."""
    import subprocess
    import sys

    run = subprocess.run(
        [sys.executable, "-c", FORK_AND_EXIT.format(layout=layout)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("child:") and "os.fork()" in lines[0], run.stdout
    assert lines[1:] == ["child exit 0", "parent [1.0, 1.0]"], run.stdout + run.stderr
    assert "Exception ignored" not in run.stderr, run.stderr


# ------------------------------------------------------------- start methods
@pytest.mark.slow
@pytest.mark.parametrize("context", ["spawn", "forkserver"])
def test_spawn_and_forkserver(context):
    def fns():
        return scheduled_fns(3, obs_type="dict")

    for layout in ({}, {"num_workers": 1, "in_parent": 1}):
        sync = vecmode.with_autoreset(vecmode.SyncVectorEnv(fns()), "SameStep")
        ours = vecmode.with_autoreset(
            make_async(fns(), context=context, **layout), "SameStep"
        )
        script = make_script(sync, 12, mask_prob=0.3)
        assert_same_run(drive(sync, script, False), drive(ours, script, False))
        pids = [p.pid for p in ours.unwrapped.processes]
        ours.close()
        sync.close()
        assert gone(pids)
    envs = make_async(faulty_fns(2, {1: {"fail_step": 1}}), context=context)
    envs.reset(seed=0)
    with pytest.raises(SubEnvError) as info:
        envs.step(np.zeros(2, dtype=int))
    assert info.value.index == 1 and "failed on purpose" in info.value.worker_traceback
    envs.close()
    with pytest.raises(SubEnvError, match="sub-env 1's env_fn"):
        make_async([*scheduled_fns(1), env_fn_that_raises], context=context)
    before = set(multiprocessing.active_children())
    lock = threading.Lock()  # cannot be pickled, even by cloudpickle
    with pytest.raises(TypeError, match="could not start the worker of sub-env 1"):
        make_async(
            [*scheduled_fns(1), lambda: lock and ScheduledEnv(1)], context=context
        )
    assert set(multiprocessing.active_children()) == before


class SequenceObs(gym.Env):
    """Observations of a Sequence space: no shared memory can hold them."""

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Sequence(gym.spaces.Discrete(5))
        self.action_space = gym.spaces.Discrete(2)
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return (1, 2), {}

    def step(self, action):
        self.t += 1
        return tuple(range(self.t % 4)), float(action), False, self.t > 3, {}


@pytest.mark.parametrize("shared_memory", [True, False])
def test_array_actions_travel_packed_and_each_sub_env_gets_a_row_of_its_own(
    shared_memory,
):
    """Actions of an array of numbers are packed into each slice's message
    (actions of the batch's own dtype go through shared memory); every sub-env
    gets a writable row of its own, as from shared memory."""
    from vecmode.worker import slice_message, unpack_rows

    actions = np.arange(16, dtype=np.float64).reshape(4, 2, 2)
    message = slice_message(1, 3, [1] * 4, actions, None, None)
    assert message is not None and type(message[2]) is tuple
    np.testing.assert_array_equal(unpack_rows(message[2]), actions[1:3])
    objects = np.empty(4, dtype=object)
    message = slice_message(1, 3, [1] * 4, objects, None, None)
    assert message is not None and message[2] is not objects  # not packed
    assert type(message[2]) is np.ndarray and len(message[2]) == 2
    fns = [InPlaceActionEnv] * 4
    with AsyncVectorEnv(fns, shared_memory=shared_memory) as envs:
        envs.reset(seed=0)
        for batch in (actions, actions.astype(np.float32)):  # packed, shared
            obs = envs.step(batch)[0]
            np.testing.assert_array_equal(obs, batch + 1)
        np.testing.assert_array_equal(actions, np.arange(16).reshape(4, 2, 2))


def test_a_space_shared_memory_cannot_hold_needs_shared_memory_false():
    with pytest.raises(ValueError, match="pass shared_memory=False"):
        make_async([SequenceObs] * 2)
    assert multiprocessing.active_children() == []
    gym_run, sync_run, async_run = run_three(
        lambda: [SequenceObs] * 3,
        AutoresetMode.SAME_STEP,
        steps=10,
        mask_prob=0.0,
        shared_memory=False,
    )
    assert_same_run(gym_run, async_run)
    assert_same_run(sync_run, async_run)


# ------------------------------------------------- sub-envs in the parent
def test_the_default_steps_a_share_in_the_parent_and_matches_the_sync_env():
    """make_vec's async env with default workers: the same run as the sync env,
    with and without shared memory, whatever this machine's CPUs."""
    for shared in (True, False):
        for mode in MODES:
            fns = functools.partial(scheduled_fns, 5, obs_type="dict")
            sync = vecmode.with_autoreset(vecmode.SyncVectorEnv(fns()), mode)
            ours = vecmode.with_autoreset(
                AsyncVectorEnv(fns(), context=FORK, shared_memory=shared), mode
            )
            script = make_script(sync, 20, seed=3, mask_prob=0.3)
            disabled = mode is AutoresetMode.DISABLED
            assert_same_run(
                drive(sync, script, disabled), drive(ours, script, disabled)
            )
            sync.close()
            ours.close()


def test_parent_sub_envs_answer_call_get_attr_set_attr_and_close():
    envs = make_async(scheduled_fns(4), num_workers=1, in_parent=2)
    assert repr(envs) == "AsyncVectorEnv(num_envs=4, num_workers=1, in_parent=2)"
    assert len(envs.processes) == 1
    assert envs.get_attr("index") == (0, 1, 2, 3)
    envs.set_attr("index", [5, 6, 7, 8])
    assert [o.tolist()[0] for o in envs.call("_obs")] == [5, 6, 7, 8]
    envs.call_async("_obs")
    assert len(envs.call_wait()) == 4
    envs.reset(seed=0)
    envs.step_async(np.zeros(4, dtype=int))
    before, rewards, *_ = envs.step_wait()
    assert rewards.tolist() == [0.5 + 0.01 * i for i in (5, 6, 7, 8)]
    # a masked reset that leaves the parent's sub-envs (2, 3) alone
    obs, _ = envs.reset(options={"reset_mask": np.array([True, False, False, False])})
    np.testing.assert_array_equal(obs[1:], before[1:])
    assert obs[0].tolist()[2] == 0 and before[0].tolist()[2] == 1
    pids = [p.pid for p in envs.processes]
    envs.close()
    envs.close()
    assert gone(pids)


def test_a_sub_env_in_the_parent_raising_is_reported_like_a_workers():
    envs = make_async(
        faulty_fns(4, {3: {"fail_step": 2, "lengths": (10,)}}),
        num_workers=1,
        in_parent=2,
    )
    envs.reset(seed=0)
    envs.step(np.zeros(4, dtype=int))
    with pytest.raises(SubEnvError) as info:
        envs.step(np.zeros(4, dtype=int))
    assert info.value.index == 3 and info.value.method == "step"
    assert "step of sub-env 3 failed on purpose" in str(info.value)
    assert envs.awaiting_reset.all()
    envs.reset(seed=1)  # usable again; the worker's answer was read
    envs.step(np.zeros(4, dtype=int))
    with pytest.raises(SubEnvError, match="sub-env 0 raised KeyError"):
        envs.call("explode")
    assert envs.get_attr("index") == (0, 1, 2, 3)
    envs.close()


def test_an_env_fn_failing_in_the_parent_leaves_no_process():
    def broken():
        raise OSError("no display")

    fns = [*scheduled_fns(2), broken]
    with pytest.raises(SubEnvError, match="sub-env 2's env_fn raised OSError"):
        make_async(fns, num_workers=1, in_parent=1)
    assert not [p for p in multiprocessing.active_children() if p.is_alive()]


@pytest.mark.parametrize("bad", [-1, 4, 1.5, True])
def test_in_parent_must_leave_a_sub_env_to_the_workers(bad):
    with pytest.raises(ValueError, match="in_parent must be an int from 0 to 3"):
        make_async(scheduled_fns(4), in_parent=bad)


def test_processes_spin_only_where_each_has_a_cpu(monkeypatch):
    monkeypatch.setattr(layout_module, "usable_cpus", lambda: 4)
    assert layout_module.spin_seconds(3) == layout_module.SPIN  # 3 workers + parent
    assert layout_module.spin_seconds(2, in_parent=2) == layout_module.SPIN
    assert layout_module.spin_seconds(4) == 0.0  # a worker per CPU: none to spare
    assert layout_module.worker_spin_seconds() == layout_module.SPIN
    monkeypatch.setattr(layout_module, "usable_cpus", lambda: 2)
    assert layout_module.worker_spin_seconds() == layout_module.SPIN  # they yield
    monkeypatch.setattr(layout_module, "usable_cpus", lambda: 1)
    assert layout_module.spin_seconds(1) == 0.0
    assert layout_module.worker_spin_seconds() == 0.0


@pytest.mark.skipif(layout_module.usable_cpus() < 2, reason="needs a CPU to spare")
def test_a_spinning_parent_still_sees_timeouts_deaths_and_the_right_results():
    """With one worker and a CPU to spare, the parent polls the pipes without
    blocking before it blocks: the results are the sync core's, and a timeout
    or a dead worker is reported as when it blocks."""
    fns = scheduled_fns(3, lengths=[(2, 3), (4,), (1, 5)])
    spinning = make_async(fns, num_workers=1)
    assert spinning._pool.spin == layout_module.SPIN
    sync = vecmode.SyncVectorEnv(fns)
    script = make_script(sync, 12, seed=4, mask_prob=0.2)
    assert_same_run(drive(sync, script, True), drive(spinning, script, True))
    sync.close()
    spinning.close()

    slow = make_async([functools.partial(SlowEnv, 0, 30.0)], num_workers=1)
    assert slow._pool.spin == layout_module.SPIN
    slow.reset(seed=0)
    started = time.monotonic()
    with deadline(20), pytest.raises(WorkerTimeoutError):
        slow.step_async(np.zeros(1, dtype=int))
        slow.step_wait(timeout=0.3)
    assert 0.25 < time.monotonic() - started < 5
    with deadline(20):
        slow.close()

    envs = make_async(scheduled_fns(2, lengths=[(50,)] * 2), num_workers=1)
    envs.reset(seed=0)
    pid = envs.processes[0].pid
    os.kill(pid, signal.SIGKILL)
    started = time.monotonic()
    with deadline(20), pytest.raises(WorkerError, match="worker process 0"):
        envs.step(np.zeros(2, dtype=int))
    assert time.monotonic() - started < 5
    with deadline(20):
        envs.close()
    assert gone([pid])


def bell_counts(envs) -> list[int]:
    """The doorbell's counters once each worker's answers count as many as the
    messages it was sent: a worker counts its answer just after sending it, so
    the parent may read the answer (and the call return) a moment before."""
    doorbell = envs._pool.doorbell
    if doorbell is None:
        return []
    give_up = time.monotonic() + 5
    counts = doorbell.counts.tolist()
    while counts[0::2] != counts[1::2] and time.monotonic() < give_up:
        time.sleep(0.001)
        counts = doorbell.counts.tolist()
    return counts


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_spinning_processes_ring_the_doorbell_for_every_message(monkeypatch, context):
    """Where the processes spin, they watch counters in shared memory, not the
    pipes: the parent counts every message it sent to a worker, the worker every
    answer, and the counts agree after each call (a message or answer left
    uncounted would make its reader spin the whole spin time on every call).
    Results stay the sync core's, with several spinning workers."""
    monkeypatch.setattr(layout_module, "usable_cpus", lambda: 8)
    fns = scheduled_fns(5, lengths=[(2, 3), (4,), (1, 5), (3,), (2,)])
    spinning = make_async(fns, num_workers=3, context=context)
    assert spinning._pool.spin == layout_module.SPIN
    assert bell_counts(spinning) == [0] * 6  # the build answers are not counted
    sync = vecmode.SyncVectorEnv(fns)
    script = make_script(sync, 12, seed=4, mask_prob=0.2)
    assert_same_run(drive(sync, script, True), drive(spinning, script, True))
    counts = bell_counts(spinning)
    sent, answered = counts[0::2], counts[1::2]
    assert sent == answered, counts
    assert min(sent) >= 1, counts
    spinning.get_attr("spec")  # every worker: one message, one answer each
    assert [c - 1 for c in bell_counts(spinning)] == counts
    pids = [p.pid for p in spinning.processes]
    sync.close()
    spinning.close()
    assert gone(pids)


def test_a_miscounted_doorbell_costs_time_not_results(monkeypatch):
    """The counters only say "look now": one the parent rang with nothing sent
    (or one that is torn) makes a worker read its pipe, where it blocks for the
    message; the results are unchanged."""
    monkeypatch.setattr(layout_module, "usable_cpus", lambda: 4)
    fns = scheduled_fns(3, lengths=[(2, 3), (4,), (1, 5)])
    spinning = make_async(fns, num_workers=1)
    sync = vecmode.SyncVectorEnv(fns)
    script = make_script(sync, 10, seed=2, mask_prob=0.2)
    spinning._pool.doorbell.rang(0)  # a ring with no message
    assert_same_run(drive(sync, script, True), drive(spinning, script, True))
    sync.close()
    spinning.close()


def test_with_a_worker_per_cpu_the_workers_spin_and_the_parent_blocks(monkeypatch):
    """No CPU to spare: the parent blocks for the answers, the workers spin
    (yielding) for the next message; the counters still agree and the results
    are the sync core's. On one CPU nothing spins: no doorbell."""
    monkeypatch.setattr(layout_module, "usable_cpus", lambda: 2)
    fns = scheduled_fns(4, lengths=[(2, 3), (4,), (1, 5), (3,)])
    envs = make_async(fns, num_workers=2)
    assert envs._pool.spin == 0.0
    assert envs._pool.doorbell is not None
    sync = vecmode.SyncVectorEnv(fns)
    script = make_script(sync, 12, seed=5, mask_prob=0.2)
    assert_same_run(drive(sync, script, True), drive(envs, script, True))
    counts = bell_counts(envs)
    assert counts[0::2] == counts[1::2] and min(counts) >= 1, counts
    sync.close()
    envs.close()
    monkeypatch.setattr(layout_module, "usable_cpus", lambda: 1)
    envs = make_async(scheduled_fns(2), num_workers=2)
    assert envs._pool.spin == 0.0 and envs._pool.doorbell is None
    envs.close()


def test_a_worker_spins_only_while_messages_come_within_the_spin(monkeypatch):
    """A worker whose last message came later than the spin after its answer
    (a training loop computing between steps) blocks at once for the next one;
    one message that comes within the spin and it spins again."""
    from vecmode.frames import frame_sender
    from vecmode.layout import SPIN_AGAIN
    from vecmode.worker import Doorbell, _doorbell

    yields = []
    monkeypatch.setattr(os, "sched_yield", lambda: yields.append(1), raising=False)
    spin = 0.1
    parent, child = multiprocessing.Pipe()
    bell = Doorbell(multiprocessing.RawArray("q", 2))
    receive, send_answer = _doorbell(child, spin, (bell, 0))
    send = frame_sender(parent)

    def message_after(seconds: float) -> threading.Thread:
        def later() -> None:
            time.sleep(seconds)
            send(b"m")
            bell.rang(0)

        thread = threading.Thread(target=later)
        thread.start()
        return thread

    def yields_while_receiving(seconds: float | None) -> int:
        """Answer, then receive a message sent ``seconds`` later (None: sent
        before the worker looks)."""
        send_answer(b"a")
        assert parent.recv_bytes() == b"a"
        thread = None
        if seconds is None:
            send(b"m")
            bell.rang(0)
        else:
            thread = message_after(seconds)
        before = len(yields)
        assert receive() == b"m"
        if thread is not None:
            thread.join()
        return len(yields) - before

    late = 2 * SPIN_AGAIN * spin
    assert yields_while_receiving(late) > 0  # spins the whole spin in vain
    assert yields_while_receiving(late) == 0  # so it blocks at once
    assert yields_while_receiving(None) == 0  # this one came at once...
    assert yields_while_receiving(spin / 4) > 0  # ...so it spins again
    assert bell.counts.tolist() == [4, 4]  # every message and answer counted
    parent.close()
    child.close()


class OddStep(gym.Env):
    """A sub-env whose step returns the ``reward`` and ``info`` it was given, as
    some custom envs do (a one-element array reward, info arrays whose shape
    differs between sub-envs)."""

    observation_space = gym.spaces.Box(-1, 1, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, reward: Any = 0.0, info: dict | None = None) -> None:
        self.reward, self.info = reward, info or {}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2, np.float32), {}

    def step(self, action):
        return np.zeros(2, np.float32), self.reward, False, False, dict(self.info)


#: The layouts a sub-env's fault is the same in: (core, in_parent).
LAYOUTS = [("sync", None), ("async", None), ("async", 1)]


def _core(core: str, fns: list, in_parent: int | None, **kwargs: Any):
    if core == "sync":
        return vecmode.SyncVectorEnv(fns)
    return AsyncVectorEnv(
        fns, num_workers=1, in_parent=in_parent, context=FORK, **kwargs
    )


class WrongObservation(OddStep):
    """Steps to ``obs`` (in a Box(-1, 1, (2,), float32))."""

    def __init__(self, obs: Any) -> None:
        super().__init__()
        self.obs = obs

    def step(self, action):
        _, *rest = super().step(action)
        return (self.obs, *rest)


def _refused_as_gymnasium_refuses(fns, theirs, core, in_parent, shared_memory):
    """Step ``fns`` (one of them returns an observation that does not fit) in
    Gymnasium's sync env, which raises ``theirs``, then in vecmode's core; return
    that core (reset, to go on with) and the SubEnvError its step raised."""
    gym_envs = gym.vector.SyncVectorEnv(fns)
    gym_envs.reset(seed=0)
    with pytest.raises(theirs):
        gym_envs.step(np.zeros(2, np.int64))
    gym_envs.close()
    kwargs = {} if core == "sync" else {"shared_memory": shared_memory}
    envs = _core(core, fns, in_parent, **kwargs)
    envs.reset(seed=0)
    with pytest.raises(SubEnvError) as caught:
        envs.step(np.zeros(2, np.int64))
    return envs, caught.value


#: Observations that do not fit a Box(2,) float32 batch, and the exception
#: Gymnasium's sync env raises for each: a wrong size, shapes NumPy would
#: broadcast into the row (a bug, not a batch to fill), a dtype that does not
#: cast within its kind.
WRONG_OBSERVATIONS = {
    "5 values": (np.zeros(5, np.float32), "ValueError"),
    "1 value": (np.zeros(1, np.float32), "ValueError"),
    "a scalar": (np.float32(0.5), "ValueError"),
    "a row of a 1x2 array": (np.zeros((1, 2), np.float32), "ValueError"),
    "complex values": (np.zeros(2, np.complex64), "TypeError"),
}


@pytest.mark.parametrize("wrong", WRONG_OBSERVATIONS)
@pytest.mark.parametrize("shared_memory", [True, False], ids=["shm", "no-shm"])
@pytest.mark.parametrize("bad", [0, 1])
@pytest.mark.parametrize(("core", "in_parent"), LAYOUTS)
def test_an_observation_that_does_not_fit_is_the_sub_env_s_error(
    core, in_parent, bad, shared_memory, wrong
):
    """Without shared memory the parent wrote a worker's observation into the
    batch and raised NumPy's bare ValueError, and a shape NumPy broadcasts (or
    a dtype it casts unsafely) filled the row silently; now every layout refuses
    what Gymnasium's sync env refuses, names the sub-env, the call's sub-envs
    await a reset, and a reset recovers."""
    if core == "sync" and not shared_memory:
        pytest.skip("the sync core has no shared memory to go without")
    obs, exc_type = WRONG_OBSERVATIONS[wrong]
    fns: list[Any] = [OddStep, OddStep]
    fns[bad] = functools.partial(WrongObservation, obs)
    envs, caught = _refused_as_gymnasium_refuses(
        fns, getattr(builtins, exc_type), core, in_parent, shared_memory
    )
    assert (caught.index, caught.method, caught.exc_type) == (
        bad,
        "writing its observation",
        exc_type,
    )
    # the sub-envs whose step was lost (the sync core stops at the fault)
    assert envs.awaiting_reset[bad]
    assert np.flatnonzero(envs.awaiting_reset).tolist() == sorted(caught.lost)
    envs.reset(seed=0)
    envs.close()


class SpacedObservation(gym.Env):
    """Resets to ``space.sample()``, steps to ``obs``."""

    action_space = gym.spaces.Discrete(2)

    def __init__(self, space: gym.Space, obs: Any) -> None:
        self.observation_space, self.obs = space, obs

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.observation_space.seed(0)
        return self.observation_space.sample(), {}

    def step(self, action):
        return self.obs, 0.0, False, False, {}


_U8 = gym.spaces.Box(0, 255, (2,), np.uint8)
#: Observations that do not fit other spaces' batches (every array leaf is
#: checked, in Dicts and Tuples too): space, observation, vecmode's exception,
#: where the message says it is (None: the top level).
WRONG_NESTED = {
    "Dict: 300 into uint8": (
        gym.spaces.Dict(x=_U8),
        {"x": np.array([300, 1])},
        "TypeError",
        "observation['x']",
    ),
    "Dict: shape (1,) into (2,)": (
        gym.spaces.Dict(x=_U8),
        {"x": np.array([7], np.uint8)},
        "ValueError",
        "observation['x']",
    ),
    "Dict: a key missing": (
        gym.spaces.Dict(x=_U8, y=gym.spaces.Discrete(3)),
        {"x": np.array([7, 7], np.uint8)},
        "ValueError",
        "has no key 'y'",
    ),
    "Tuple: 2.7 into Discrete": (
        gym.spaces.Tuple((_U8, gym.spaces.Discrete(3))),
        (np.array([7, 7], np.uint8), 2.7),
        "TypeError",
        "observation[1]",
    ),
    "Discrete: 2.7": (gym.spaces.Discrete(5), 2.7, "TypeError", None),
    "MultiDiscrete: 3 values for 2": (
        gym.spaces.MultiDiscrete([3, 3]),
        np.array([1, 1, 1]),
        "ValueError",
        None,
    ),
    "MultiBinary: floats": (
        gym.spaces.MultiBinary(2),
        np.array([0.5, 1.0]),
        "TypeError",
        None,
    ),
}


@pytest.mark.parametrize("wrong", WRONG_NESTED)
@pytest.mark.parametrize("shared_memory", [True, False], ids=["shm", "no-shm"])
@pytest.mark.parametrize(("core", "in_parent"), LAYOUTS)
def test_an_observation_of_any_space_that_does_not_fit_is_the_sub_env_s_error(
    core, in_parent, shared_memory, wrong
):
    """Only a Box batch was checked: shared memory wrote 300 into uint8 as 44,
    2.7 as 2 and broadcast a wrong shape, silently; the sync core and the
    parent raised NumPy's bare error later, naming no sub-env. Every layout now
    refuses what Gymnasium's sync env refuses, naming the sub-env and the leaf."""
    if core == "sync" and not shared_memory:
        pytest.skip("the sync core has no shared memory to go without")
    space, obs, exc_type, where = WRONG_NESTED[wrong]
    fns = [
        functools.partial(SpacedObservation, space, space.sample()),
        functools.partial(SpacedObservation, space, obs),
    ]
    envs, caught = _refused_as_gymnasium_refuses(
        fns, (ValueError, TypeError, KeyError), core, in_parent, shared_memory
    )
    assert (caught.index, caught.method, caught.exc_type) == (
        1,
        "writing its observation",
        exc_type,
    )
    if where is not None:
        assert where in str(caught)
    envs.reset(seed=0)  # usable again
    envs.close()


@pytest.mark.parametrize(("core", "in_parent"), LAYOUTS)
def test_an_info_gymnasium_cannot_batch_is_a_named_error(core, in_parent):
    """Sub-envs whose info arrays differ in shape in one step: Gymnasium raises
    NumPy's bare ValueError; vecmode names the sub-env and the key, the call's
    sub-envs await a reset, and a reset makes the env usable again."""
    fns = [functools.partial(OddStep, info={"events": np.arange(k)}) for k in (2, 0)]
    envs = _core(core, fns, in_parent)
    envs.reset(seed=0)
    with pytest.raises(InfoBatchError) as caught:
        envs.step(np.zeros(2, np.int64))
    assert isinstance(caught.value, ValueError)
    assert str(caught.value).startswith(
        "sub-env 1's info['events'] cannot be batched with the other sub-envs' "
        "(ValueError: could not broadcast input array from shape (0,) into shape (2,))"
    )
    with pytest.raises(EpisodeEndedError, match=r"sub-env\(s\) 0, 1 lost their state"):
        envs.step(np.zeros(2, np.int64))
    envs.reset()
    envs.close()


class RaisingAccess(OddStep):
    """A sub-env whose method, property, attribute setter and render raise
    (``fail``) or work."""

    render_mode = "rgb_array"

    def __init__(self, fail: bool = False) -> None:
        super().__init__()
        self.fail = fail

    def _maybe(self, what: str) -> int:
        if self.fail:
            raise ValueError(f"{what} failed on purpose")
        return 0

    def poke(self) -> int:
        return self._maybe("poke")

    @property
    def prop(self) -> int:
        return self._maybe("prop")

    @property
    def knob(self) -> int:
        return 0

    @knob.setter
    def knob(self, value: int) -> None:
        self._maybe("knob")

    def render(self) -> Any:
        self._maybe("render")
        return np.zeros((2, 2, 3), np.uint8)


@pytest.mark.parametrize("bad", [0, 1])  # one in the parent's share, one not
@pytest.mark.parametrize(("core", "in_parent"), LAYOUTS)
def test_a_sub_env_raising_in_call_get_attr_set_attr_render_is_named(
    core, in_parent, bad
):
    """The sync core raised what the sub-env raised, with no index (as
    Gymnasium's); now every layout raises the same SubEnvError naming the sub-env
    and the call, and the env goes on."""
    fns: list[Any] = [RaisingAccess, RaisingAccess]
    fns[bad] = functools.partial(RaisingAccess, fail=True)
    envs = _core(core, fns, in_parent)
    envs.reset(seed=0)
    calls = {
        "call('poke')": lambda: envs.call("poke"),
        "get_attr('prop')": lambda: envs.get_attr("prop"),
        "set_attr('knob')": lambda: envs.set_attr("knob", 1),
        "call('render')": envs.render,
    }
    for method, make_the_call in calls.items():
        with pytest.raises(SubEnvError) as caught:
            make_the_call()
        assert (caught.value.index, caught.value.method) == (bad, method)
        assert caught.value.exc_type == "ValueError"
        assert "failed on purpose" in str(caught.value), str(caught.value)
        assert not envs.awaiting_reset.any()
    with pytest.raises(AttributeError):  # a SubEnvAttributeError in every layout
        envs.get_attr("missing")
    envs.step(np.zeros(2, np.int64))  # usable
    envs.close()


@pytest.mark.parametrize("bad", [0, 1])  # one in the parent's share, one not
@pytest.mark.parametrize("reward", [np.array([1.5]), "abc", None], ids=repr)
@pytest.mark.parametrize(("core", "in_parent"), LAYOUTS)
def test_a_reward_that_is_not_one_number_is_the_sub_env_s_error(
    core, in_parent, reward, bad
):
    """Gymnasium's envs return a (num_envs, 1) reward batch for an array, raise a
    bare ValueError for a string and make None a NaN; a worker writing them into
    its (num_envs,) rewards died (WorkerError, env lost), the parent's share
    broke the env for good. Now every layout raises SubEnvError naming the
    sub-env, and a reset recovers."""
    fns = [OddStep, OddStep]
    fns[bad] = functools.partial(OddStep, reward)
    envs = _core(core, fns, in_parent)
    envs.reset(seed=0)
    with pytest.raises(SubEnvError) as caught:
        envs.step(np.zeros(2, np.int64))
    assert (caught.value.index, caught.value.method) == (bad, "step")
    assert caught.value.message == vecmode.runner.reward_not_a_number(reward)
    envs.reset(seed=0)
    assert multiprocessing.active_children() or core == "sync"  # workers alive
    envs.close()


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_call_async_goes_through_every_layer(mode):
    """docs/core.md: the split calls work through every layer on top."""
    envs = vecmode.wrappers.RecordEpisodeStatistics(
        vecmode.with_autoreset(make_async(scheduled_fns(3)), mode)
    )
    envs.reset(seed=0)
    envs.call_async("get_wrapper_attr", "index")
    assert envs.call_wait() == envs.call("get_wrapper_attr", "index")
    envs.close()
    sync = vecmode.with_autoreset(vecmode.SyncVectorEnv(scheduled_fns(2)), mode)
    assert not hasattr(sync, "call_async")  # no split API below
    sync.close()


@pytest.mark.parametrize("in_parent", [None, 1])
def test_a_missing_attribute_is_an_attribute_error_in_every_core(in_parent):
    """Code probing attributes with `except AttributeError` (as over Gymnasium's
    vector envs) works over the async core: its SubEnvError is then a
    SubEnvAttributeError, an AttributeError too, naming the sub-env."""
    envs = make_async(scheduled_fns(3), in_parent=in_parent)
    sync = vecmode.SyncVectorEnv(scheduled_fns(3))
    for core in (envs, sync):
        for call in (core.get_attr, core.call):
            with pytest.raises(AttributeError, match="no_such_name"):
                call("no_such_name")
    with pytest.raises(vecmode.errors.SubEnvAttributeError) as caught:
        envs.get_attr("no_such_name")
    assert isinstance(caught.value, SubEnvError) and caught.value.index == 0
    assert envs.get_attr("index") == (0, 1, 2)  # unchanged and usable
    envs.close()
    sync.close()


@pytest.mark.parametrize(
    "how", ["copy", "deepcopy", "pickle", "deepcopy of a wrapper stack"]
)
def test_a_copy_is_refused_and_the_env_goes_on(how):
    """A shallow copy shared the workers (closing it left the original reading
    stale shared memory, with no error); a deep copy failed half-way on the
    pipes, whose duplicates, collected, closed the original's. Now each is a
    TypeError saying what to do, and the original is untouched."""
    envs = make_async(scheduled_fns(2))
    stack = vecmode.wrappers.ClipReward(
        vecmode.with_autoreset(envs, "SameStep"), 0.0, 1.0
    )
    stack.reset(seed=0)
    attempt = {
        "copy": lambda: copy.copy(envs),
        "deepcopy": lambda: copy.deepcopy(envs),
        "pickle": lambda: pickle.dumps(envs),
        "deepcopy of a wrapper stack": lambda: copy.deepcopy(stack),
    }[how]
    with pytest.raises(TypeError, match=r"AsyncVectorEnv\(envs.env_fns, ...\)"):
        attempt()
    gc.collect()  # half-built copies, if any, are collected now
    obs = stack.step(np.zeros(2, dtype=int))[0]
    assert obs[:, 2].tolist() == [1, 1]  # step 1 of each episode, fresh data
    obs = stack.step(np.zeros(2, dtype=int))[0]
    assert obs[:, 2].tolist() == [0, 2]  # sub-env 0's episode ended and restarted
    stack.close()
    assert envs.closed


def test_close_from_another_thread_during_a_step_is_the_closed_env_error():
    """A thread waiting in step() while another closed the env got a bare
    KeyError from the pool's table of pipes; now the closed-env error, saying
    the results are lost. close() itself waits for the step, then ends all."""
    envs = make_async([functools.partial(SlowEnv, i, 1.0) for i in range(2)])
    envs.reset(seed=0)
    pids = [p.pid for p in envs.processes]
    caught: list[BaseException] = []

    def step() -> None:
        try:
            envs.step(np.zeros(2, dtype=int))
        except BaseException as exc:
            caught.append(exc)

    stepping = threading.Thread(target=step)
    stepping.start()
    time.sleep(0.1)
    envs.close()
    stepping.join(30)
    assert not stepping.is_alive() and gone(pids)
    assert len(caught) == 1 and isinstance(caught[0], ClosedEnvironmentError)
    assert "its results are lost" in str(caught[0])


def test_a_call_from_another_thread_during_a_step_is_refused_and_the_step_goes_on():
    """Two threads on one env: the second call's messages went to the busy
    workers ("concurrent poll() invocation", then the env broken for both). Now
    the second call is refused before anything is sent, and the first ends as
    if alone."""
    envs = make_async([functools.partial(SlowEnv, i, 0.5) for i in range(2)])
    envs.reset(seed=0)
    done: list[Any] = []
    stepping = threading.Thread(
        target=lambda: done.append(envs.step(np.zeros(2, dtype=int)))
    )
    stepping.start()
    time.sleep(0.1)
    with pytest.raises(
        AlreadyPendingCallError, match=r"while step\(\) was in progress"
    ):
        envs.get_attr("index")
    with pytest.raises(AlreadyPendingCallError, match="another thread"):
        envs.step(np.zeros(2, dtype=int))
    stepping.join(30)
    assert len(done) == 1 and not envs.awaiting_reset.any()
    assert done[0][0][:, 2].tolist() == [1, 1]
    assert envs.get_attr("index") == (0, 1)
    envs.step(np.zeros(2, dtype=int))
    envs.close()


def test_a_call_from_another_thread_waits_for_the_whole_of_the_first(monkeypatch):
    """The first call is one until its record is built and its episodes
    tracked: a second thread coming in after its answers were read, while its
    results were still being copied out of shared memory, was let in and gave
    the first thread its own step's rewards and observations."""
    envs = make_async(scheduled_fns(2))
    envs.reset(seed=0)
    stats = envs._stats

    def slowly(token, answers):  # the first thread preempted right there
        time.sleep(0.5)
        return stats(token, answers)

    monkeypatch.setattr(envs, "_stats", slowly)
    done: list[Any] = []
    first = threading.Thread(
        target=lambda: done.append(envs.step(np.zeros(2, dtype=int)))
    )
    first.start()
    time.sleep(0.2)
    monkeypatch.setattr(envs, "_stats", stats)
    with pytest.raises(AlreadyPendingCallError, match="another thread"):
        envs.step(np.ones(2, dtype=int))
    first.join(30)
    obs = done[0][0]
    assert obs[:, 2].tolist() == [1, 1]  # one step, the first thread's
    assert envs.step(np.zeros(2, dtype=int))[0][:, 2].tolist() == [2, 2]
    envs.close()


def test_an_interrupt_between_sending_and_reading_breaks_the_env_clearly(
    monkeypatch,
):
    """Ctrl-C after a call's messages went out but before its answers were
    read: the next call read those stale answers (a TypeError, or wrong data);
    now it is the WorkerError saying so, and close() ends all."""
    envs = make_async(scheduled_fns(2))
    envs.reset(seed=0)
    pids = [p.pid for p in envs.processes]

    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(envs, "_finish", interrupted)
    with pytest.raises(KeyboardInterrupt):
        envs.step(np.zeros(2, dtype=int))
    monkeypatch.undo()
    for call in (envs.reset, lambda: envs.get_attr("index")):
        with pytest.raises(WorkerError, match="interrupted before its answers"):
            call()
    envs.close()
    assert gone(pids)


def test_close_from_a_signal_handler_during_a_step_is_the_closed_env_error():
    """A signal handler (SIGUSR1 here) closing the env while the main thread
    waits in step(): the step read the ended processes and raised
    multiprocessing's "process object is closed" ValueError (or, from a thread,
    now and then an OSError "handle is closed"); now the closed-env error."""
    envs = make_async([functools.partial(SlowEnv, i, 1.0) for i in range(2)])
    envs.reset(seed=0)
    pids = [p.pid for p in envs.processes]
    previous = signal.signal(signal.SIGUSR1, lambda *_: envs.close())
    timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGUSR1))
    try:
        timer.start()
        with deadline(30), pytest.raises(ClosedEnvironmentError, match="are lost"):
            envs.step(np.zeros(2, dtype=int))
    finally:
        timer.cancel()
        signal.signal(signal.SIGUSR1, previous)
    assert envs.closed and gone(pids)
    with pytest.raises(ClosedEnvironmentError):
        envs.step(np.zeros(2, dtype=int))


class ClosesTheVectorEnv(OddStep):
    """Closes ``vector`` (the vector env it is a sub-env of) in its second step,
    as an early-stopping hook might."""

    vector: Any = None

    def __init__(self) -> None:
        super().__init__()
        self.t = 0

    def step(self, action):
        self.t += 1
        if self.t == 2:
            type(self).vector.close()
        return super().step(action)


def test_a_sub_env_in_the_parent_closing_the_env_ends_its_step_clearly():
    """A sub-env of the parent's share that closed the env in its step left the
    call to read the ended workers: multiprocessing's "process object is
    closed" ValueError; now the closed-env error, with nothing left running."""
    envs = make_async([ClosesTheVectorEnv] * 3, in_parent=1)
    ClosesTheVectorEnv.vector = envs
    pids = [p.pid for p in envs.processes]
    envs.reset(seed=0)
    envs.step(np.zeros(3, dtype=int))
    with pytest.raises(ClosedEnvironmentError, match="its results are lost"):
        envs.step(np.zeros(3, dtype=int))
    assert envs.closed and gone(pids)
    ClosesTheVectorEnv.vector = None
