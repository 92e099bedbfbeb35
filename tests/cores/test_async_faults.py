"""vecmode.AsyncVectorEnv's faults: a sub-env that raises, a worker that dies,
a timeout, a failed construction, close(), pickling, daemonic parents."""

from __future__ import annotations

import contextlib
import functools
import json
import multiprocessing
import os
import pathlib
import re
import signal
import sys
import threading
import time
import types
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.error import ClosedEnvironmentError

import vecmode
from tests.cores.async_support import FORK, MODES, deadline, gone, make_async
from tests.helpers import (
    ScheduledEnv,
    SlowEnv,
    alive_in_session,
    assert_same,
    env_fn_that_exits_in_a_worker,
    env_fn_that_raises,
    faulty_fns,
    scheduled_fns,
)
from vecmode import (
    AsyncVectorEnv,
    EpisodeEndedError,
    SubEnvError,
    WorkerError,
    WorkerTimeoutError,
)


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
    assert obs[:, 2].tolist() == [0, 0, 0] and infos["_episode_index"].all()
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


@pytest.mark.parametrize("in_parent", [None, 1])
def test_a_result_that_cannot_be_pickled_names_its_sub_env(in_parent):
    """each() and call() results that do not pickle were sub-env 0's, in every
    worker (indices=[1, 2]: "sub-env 0 ..., others=(0,)")."""
    envs = make_async(scheduled_fns(3), in_parent=in_parent)
    for indices, index, others in (([2], 2, ()), ([2, 1], 1, (2,))):
        with pytest.raises(SubEnvError) as caught:
            envs.each(lambda env: threading.Lock(), indices=indices)
        error = caught.value
        assert (error.index, error.others) == (index, others), str(error)
        assert error.method == "pickling its result"
        assert "cannot pickle '_thread.lock' object" in str(error)
    envs.set_attr("lock", None)
    envs.each(lambda env: setattr(env.unwrapped, "lock", threading.Lock()), indices=1)
    with pytest.raises(SubEnvError) as caught:
        envs.get_attr("lock")
    assert (caught.value.index, caught.value.others) == (1, ())
    envs.reset(seed=0)  # usable
    envs.close()


def test_a_sub_env_raising_in_call_get_attr_set_attr_leaves_the_env_as_it_was():
    envs = make_async(faulty_fns(3))
    envs.reset(seed=0)
    with pytest.raises(SubEnvError) as info:
        envs.call("explode")
    assert info.value.index == 0 and isinstance(info.value.__cause__, KeyError)
    assert "The other sub-envs asked ran it; nothing is undone" in str(info.value)
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
    assert str(info.value).endswith("close() it and build a new one.")
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
    assert "did not finish within 0.3 s" in str(info.value)
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
    with deadline(20), pytest.warns(UserWarning) as warned:
        envs.close(timeout=0.2)
    assert time.monotonic() - started < 1.0  # 0.2 s, not 0.2 + 1
    said = [str(w.message) for w in warned]
    assert any("did not close within 0.2 s" in text for text in said), said
    assert any("pending call" in text for text in said), said
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


@pytest.mark.parametrize(
    ("core", "bad", "options"),
    [
        ("sync", 1, {}),
        ("async", 0, {}),  # sub-env 0 is also built in the parent, to read spaces
        ("async", 2, {}),
        ("async", 2, {"in_parent": 1}),
        ("async", 2, {"observation_mode": "different"}),  # every one in the parent
    ],
)
def test_an_env_fn_that_returns_no_env_is_named(core, bad, options):
    """A raw AttributeError (sync), a close() error of the parent's copy (sub-env
    0), a worker that died (the others): now one SubEnvError, a TypeError."""
    before = set(multiprocessing.active_children())
    fns: list = scheduled_fns(3)
    fns[bad] = lambda: None
    with deadline(30), pytest.raises(TypeError) as caught:
        vecmode.SyncVectorEnv(fns) if core == "sync" else make_async(fns, **options)
    error = caught.value
    assert isinstance(error, SubEnvError)
    assert (error.index, error.method) == (bad, "env_fn")
    assert str(error).startswith(
        f"sub-env {bad}'s env_fn returned None (NoneType), not a gymnasium.Env: "
        f"return the env it builds. Fix the env_fn; nothing was left running."
    )
    assert set(multiprocessing.active_children()) == before


class _DuckEnv:
    """An env that is no gymnasium.Env subclass: Gymnasium's vector envs take it."""

    metadata: dict = {}
    render_mode = spec = None
    observation_space = gym.spaces.Box(0, 1, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        return np.zeros(2, np.float32), {}

    def step(self, action):
        return np.ones(2, np.float32), 1.0, False, False, {}

    def close(self):
        pass


def test_an_env_that_is_no_gymnasium_env_subclass_is_taken_as_gymnasium_does():
    reference = gym.vector.SyncVectorEnv([_DuckEnv] * 2)
    envs = vecmode.SyncVectorEnv([_DuckEnv] * 2)
    for each in (reference, envs):
        each.reset(seed=0)
    assert_same(envs.step(np.zeros(2, int)), reference.step(np.zeros(2, int)), "step")


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


class CloseHangs(ScheduledEnv):
    def close(self):
        if multiprocessing.parent_process() is not None:  # (not the parent's copy)
            time.sleep(30)


def test_a_close_that_does_not_finish_is_warned_about():
    envs = make_async([CloseHangs, *scheduled_fns(1)])
    pids = [p.pid for p in envs.processes]
    with deadline(20), pytest.warns(UserWarning, match=r"sub-env\(s\) 0 did not close"):
        envs.close(timeout=0.3)
    assert gone(pids)


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
    with deadline(20), pytest.raises(WorkerError, match="died with exit code 3") as e:
        make_async([env_fn_that_exits_in_a_worker, *scheduled_fns(2)])
    assert set(multiprocessing.active_children()) == before
    # there is no env to close(), as it said
    assert "during construction. No env was built and no worker is left" in str(e.value)


class _Picky(gym.Env):
    """Sub-env 1 refuses every level and every bump."""

    observation_space = gym.spaces.Box(-1, 1, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, index):
        self.index, self._level, self.bumps = index, 0, 0

    @property
    def level(self):
        return self._level

    @level.setter
    def level(self, value):
        if self.index == 1:
            raise ValueError("sub-env 1 refuses this level")
        self._level = value

    def bump(self):
        if self.index == 1:
            raise ValueError("sub-env 1 cannot bump")
        self.bumps += 1

    def reset(self, *, seed=None, options=None):
        return np.zeros(1, np.float32), {}


@pytest.mark.parametrize("layout", ["sync", "async"])
def test_a_failed_set_attr_or_call_reaches_every_other_sub_env_and_says_so(
    layout, monkeypatch
):
    """The sync core stopped at the failure, the async core at the failure in
    each worker's share, and both said the env was unchanged."""
    fns = [functools.partial(_Picky, i) for i in range(4)]
    envs = (
        vecmode.SyncVectorEnv(fns)
        if layout == "sync"
        else make_async(fns, num_workers=2)
    )
    envs.reset(seed=0)
    with pytest.raises(ValueError, match=r"4 values \(one per sub-env\), got 2"):
        envs.set_attr("level", [10, 11])
    with pytest.raises(SubEnvError) as info:
        envs.set_attr("level", [10, 11, 12, 13])
    assert (info.value.index, info.value.others) == (1, ())
    assert "The other sub-envs asked ran it; nothing is undone" in str(info.value)
    assert envs.get_attr("level") == (10, 0, 12, 13)
    with pytest.raises(SubEnvError, match="The other sub-envs asked ran it"):
        envs.call("bump")
    assert envs.get_attr("bumps") == (1, 0, 1, 1)
    with pytest.raises(SubEnvError, match="unchanged and usable") as info:
        envs.get_attr("missing")
    assert (info.value.index, info.value.others) == (0, (1, 2, 3))
    with pytest.raises(SubEnvError) as info:  # the lowest named first, as by workers
        envs.each(lambda env: 1 / 0, indices=[3, 1])
    assert (info.value.index, info.value.others) == (1, (3,))
    if layout == "async":  # a value no worker can unpickle: none ran it
        ghost = types.ModuleType("ghost_module")
        exec("class Thing:\n    pass", ghost.__dict__)
        ghost.Thing.__module__ = "ghost_module"
        monkeypatch.setitem(sys.modules, "ghost_module", ghost)  # not the workers'
        with pytest.raises(SubEnvError, match="Its worker's sub-envs ran none of it"):
            envs.set_attr("level", ghost.Thing())
        assert envs.get_attr("level") == (10, 0, 12, 13)
    envs.close()


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


LEFT_OPEN = """if __name__ == "__main__":
    import functools
    import gymnasium as gym
    import vecmode
    envs = vecmode.AsyncVectorEnv(
        [functools.partial(gym.make, "CartPole-v1")] * 2,
        daemon=False,
        context={context!r},
    )
    envs.reset(seed=0)
    raise RuntimeError("the training loop's own bug")
"""


@pytest.mark.slow
@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_non_daemonic_workers_left_open_do_not_keep_the_interpreter(tmp_path, context):
    """No close() before an uncaught error: the interpreter waited forever for
    the non-daemonic workers (Gymnasium's AsyncVectorEnv too)."""
    import subprocess
    import sys

    script = tmp_path / "left_open.py"
    script.write_text(LEFT_OPEN.format(context=context))
    child = subprocess.Popen(
        [sys.executable, str(script)],
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        _, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
    assert child.returncode == 1 and "the training loop's own bug" in err, err
    time.sleep(0.5)
    assert alive_in_session(child.pid) == []


class _RaisesBare(_DuckEnv):
    def step(self, action):
        raise GeneratorExit  # no message


def test_an_exception_with_no_message_reads_as_a_sentence():
    """It read "raised GeneratorExit in step(): . The call's results..."."""
    envs = vecmode.SyncVectorEnv([_RaisesBare])
    envs.reset(seed=0)
    with pytest.raises(SubEnvError) as info:
        envs.step(np.zeros(1, int))
    assert str(info.value).startswith(
        "sub-env 0 raised GeneratorExit in step(). The call's results are lost"
    )


class _Finalised:
    """Cyclic garbage whose finaliser writes down the process that ran it."""

    def __init__(self, record) -> None:
        self.record = record
        self.me = self

    def __del__(self) -> None:
        with open(self.record, "a") as f:
            f.write(f"{os.getpid()}\n")


def _collect(env) -> int:
    import gc

    return gc.collect()


def test_a_forked_worker_never_collects_the_parent_s_garbage(tmp_path):
    """A worker that garbage-collects what it inherited runs the parent's
    finalisers (torch's, Ray's: a crash in the worker, or a file closed twice)."""
    import gc

    record = tmp_path / "finalised"
    gc.disable()
    try:
        _Finalised(record)
        with make_async(scheduled_fns(2)) as envs:
            envs.reset(seed=0)
            envs.each(_collect)  # the workers collect every generation
            assert not record.exists(), "a worker ran a finaliser of the parent's"
            assert gc.get_freeze_count() == 0, "the parent's objects stay frozen"
    finally:
        gc.enable()
    gc.collect()
    assert record.read_text() == f"{os.getpid()}\n"


def test_building_an_async_env_leaves_the_parent_s_garbage_collection_alone():
    """A freeze in the parent put every young object in the oldest generation:
    a loop building envs left its cyclic garbage uncollected."""
    import gc
    import weakref

    before = gc.get_freeze_count()
    garbage = weakref.ref(_Finalised(os.devnull))  # young, unreachable, a cycle
    with make_async(scheduled_fns(2)):
        pass
    assert gc.get_freeze_count() == before
    gc.collect(1)  # the young generations only
    assert garbage() is None, "the parent's young garbage was moved out of reach"


def test_a_worker_never_collects_what_it_inherited_whatever_the_caller_froze(tmp_path):
    import gc

    record = tmp_path / "finalised"
    gc.disable()
    gc.freeze()  # the caller's own, before the garbage
    try:
        _Finalised(record)
        with make_async(scheduled_fns(2)) as envs:
            envs.reset(seed=0)
            envs.each(_collect)
            assert not record.exists(), "a worker ran a finaliser of the parent's"
        assert gc.get_freeze_count() > 0, "the caller's freeze was undone"
    finally:
        gc.unfreeze()
        gc.enable()
    gc.collect()
    assert record.read_text() == f"{os.getpid()}\n"


CTRL_C_THEN_GO_ON = """if __name__ == "__main__":
    import functools, json, os, signal, threading, time
    import numpy as np
    import vecmode
    from tests.helpers import SlowEnv, scheduled_fns
    signal.signal(signal.SIGINT, signal.default_int_handler)  # a terminal's Ctrl-C
    out = {{}}
    fns = [functools.partial(SlowEnv, i, {delay}) for i in range(4)]
    envs = vecmode.AsyncVectorEnv(fns, num_workers=2, timeout={timeout})
    pids = [p.pid for p in envs.processes]
    envs.reset(seed=0)
    threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
    started = time.monotonic()
    try:
        if {split}:  # the split API (as to_sb3 steps)
            envs.step_async(np.ones(4, dtype=int))
            envs.step_wait()
        else:
            envs.step(np.ones(4, dtype=int))
    except KeyboardInterrupt:
        out["interrupt_after"] = time.monotonic() - started
    for name, call in (("step", lambda: envs.step(np.ones(4, dtype=int))),
                       ("reset", lambda: envs.reset(seed=1))):
        started = time.monotonic()
        try:
            result = call()
            out[name] = "ok"
        except Exception as exc:
            out[name] = type(exc).__name__ + ": " + str(exc)[:80]
        out[name + "_seconds"] = time.monotonic() - started
    if out["reset"] == "ok":  # the same as an env given the same calls
        fresh = vecmode.SyncVectorEnv([functools.partial(SlowEnv, i) for i in range(4)])
        fresh.reset(seed=0)
        fresh.step(np.ones(4, dtype=int))  # (the interrupted step ran)
        fresh.reset(seed=1)
        a = envs.step(np.zeros(4, dtype=int))
        b = fresh.step(np.zeros(4, dtype=int))
        out["same"] = all(np.array_equal(x, y) for x, y in zip(a[:4], b[:4]))
    started = time.monotonic()
    envs.close()
    out["close_seconds"] = time.monotonic() - started
    try:
        envs.get_attr("index")
    except Exception as exc:
        out["after_close"] = type(exc).__name__ + ": " + str(exc)[:60]
    out["alive"] = [p for p in pids if os.path.exists(f"/proc/{{p}}") and
                    open(f"/proc/{{p}}/stat").read().split()[2] != "Z"]
    print(json.dumps(out))
"""


@pytest.mark.parametrize(
    ("delay", "timeout", "usable", "split"),
    [(1.0, None, True, False), (1.0, None, True, True), (30.0, 1.0, False, False)],
    ids=["step-ends", "step_wait-ends", "step-hangs"],
)
def test_after_ctrl_c_in_a_step_a_reset_goes_on(delay, timeout, usable, split):
    """Ctrl-C while the parent waited for a step's answers made the env unusable
    ("close() it and build a new one"). The next call now reads and drops those
    answers (at most the env's timeout, else 5 s): the step's sub-envs are lost
    until reset, and then it steps as an env given the same calls. A step that does
    not end in time leaves the env broken, as before, and close() ends all."""
    import subprocess
    import sys

    script = CTRL_C_THEN_GO_ON.format(delay=delay, timeout=timeout, split=split)
    run = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=90,
        cwd=str(pathlib.Path(__file__).parents[2]),
    )
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout.splitlines()[-1])
    assert out["interrupt_after"] < 1.0, out  # Ctrl-C reached the caller at once
    if usable:
        assert out["step"].startswith("EpisodeEndedError: sub-env(s) 0, 1, 2, 3 lost")
        assert out["reset"] == "ok" and out["same"], out
    else:
        assert out["step"].startswith("WorkerTimeoutError"), out
        assert out["step_seconds"] < 5.0, out  # the env's timeout, not the step's
        assert out["reset"].startswith("WorkerError"), out
    assert out["close_seconds"] < 5.0 and out["alive"] == [], out
    assert out["after_close"].startswith("ClosedEnvironmentError: "), out
    assert "interrupted" not in out["after_close"], out  # closed after it


class SlowClose(SlowEnv):
    def close(self):
        time.sleep(1.5)


def test_close_with_a_call_outstanding_gives_the_sub_envs_their_time():
    """A call sent and not waited for (no Ctrl-C): close() gave the sub-envs
    1 s, the grace after an interrupted call, and ended their workers."""
    envs = make_async([functools.partial(SlowClose, i) for i in range(2)])
    envs.reset(seed=0)
    envs.step_async(np.zeros(2, dtype=int))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        envs.close()
    assert not [w for w in caught if "did not close" in str(w.message)]
