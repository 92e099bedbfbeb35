"""vecmode.AsyncVectorEnv's contract as a core, and Gymnasium's async surface."""

from __future__ import annotations

import collections
import functools
import multiprocessing
import os
import re
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.error import AlreadyPendingCallError, NoAsyncCallError

import vecmode
from tests.cores.async_support import FORK, MODES, make_async, run_three
from tests.helpers import ScheduledEnv, assert_same_run, scheduled_fns
from vecmode import (
    AsyncVectorEnv,
    AutoresetMode,
    EpisodeEndedError,
    IncompatibleModeError,
    SubEnvError,
)
from vecmode import layout as layout_module
from vecmode.core import Command
from vecmode.layout import default_layout, default_num_workers, slices


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
        (
            {"timeout": "5"},
            r"timeout must be None or > 0 seconds \(an int or float\), got '5'",
        ),
        ({"timeout": True}, r"\(an int or float\), got True"),  # it was taken as 1 s
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
    assert infos["_episode_index"].tolist() == [False, True, False, True]
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
def test_info_values_of_two_types_are_kept_whole_across_workers(mode):
    """Gymnasium types info["x"] after the first sub-env that has it, cutting
    1.5 to 1 after an int; vecmode's cores keep every value (infos merged in
    sub-env order across workers: the same on both cores)."""
    fns = functools.partial(
        lambda: [functools.partial(QuirkyInfo, i, (4, 2)) for i in range(5)]
    )
    gym_run, sync_run, async_run = run_three(fns, mode, steps=15, num_workers=3)
    assert_same_run(sync_run, async_run)
    cut = 0
    for (kind, ours), (_, theirs) in zip(async_run, gym_run, strict=True):
        if kind != "step" or "x" not in ours[-1]:
            continue
        x, has_x = ours[-1]["x"], ours[-1]["_x"]
        for i in np.flatnonzero(has_x):
            assert x[i] == (i if i % 2 == 0 else i + 0.5)
        cut += int((theirs[-1]["x"][has_x] != x[has_x]).any())
    assert cut, "Gymnasium's batching cut no value: the test shows nothing"


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
    assert obs[:, 2].tolist() == [0, 0, 0] and infos["_episode_index"].all()
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


class AttributeDict(dict):
    """A config answering every attribute (as addict's)."""

    def __getattr__(self, name):
        return self.get(name, AttributeDict())


def test_call_get_attr_set_attr_render():
    envs = make_async(scheduled_fns(3))
    assert envs.get_attr("index") == (0, 1, 2)
    envs.set_attr("index", [7, 8, 9])
    assert envs.call("_obs")[0].tolist()[0] == 7
    envs.set_attr("index", 4)
    assert envs.get_attr("index") == (4, 4, 4)
    # a method would come back bound to a copy, which calling would not change
    with pytest.raises(SubEnvError, match=r"'_obs' is a method: .* envs.call\('_obs'"):
        envs.get_attr("_obs")
    assert envs.get_attr("index") == (4, 4, 4)  # (usable)
    envs.set_attr("tick", collections.Counter().update)  # another object's method
    with pytest.raises(SubEnvError, match="'tick' is a method"):
        envs.get_attr("tick")
    envs.set_attr("make", dict.fromkeys)  # a class's: pickled by name, not copied
    assert envs.get_attr("make")[0]("a") == {"a": None}
    envs.set_attr("config", AttributeDict(lr=1))  # it answers __self__: no method
    assert envs.get_attr("config")[0] == {"lr": 1}
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


def test_a_bad_wait_timeout_is_refused_and_the_call_stays_pending():
    """A wrong timeout is bad input: refused before the wait, the call still
    pending (it used to take the call, and the env refused every later one)."""
    envs = make_async(scheduled_fns(2))
    envs.reset(seed=0)
    envs.step_async(np.zeros(2, dtype=np.int64))
    for bad in ("x", float("nan"), -1, 0, True):
        with pytest.raises(ValueError, match="timeout must be None or > 0 seconds"):
            envs.step_wait(timeout=bad)
    assert envs.step_wait(timeout=np.float32(5))[1].shape == (2,)  # (poll wants float)
    with pytest.raises(gym.error.NoAsyncCallError):  # nothing pending: said first
        envs.step_wait(timeout="x")
    envs.call_async("index")
    with pytest.raises(ValueError, match="got 'x'"):
        envs.call_wait(timeout="x")
    assert envs.call_wait() == (0, 1)
    with pytest.raises(ValueError, match=r">= 0 seconds .*got -1"):
        envs.close(timeout=-1)
    assert envs.get_attr("index") == (0, 1)  # not closed: still usable
    with warnings.catch_warnings():  # (that their close() may not have finished)
        warnings.simplefilter("ignore", UserWarning)
        envs.close(timeout=0)  # (0 s for the sub-envs' close: the workers end at once)
    envs.close(timeout="x")  # closed: nothing to check, nothing done
    with pytest.raises(gym.error.ClosedEnvironmentError):
        envs.step_wait(timeout="x")
