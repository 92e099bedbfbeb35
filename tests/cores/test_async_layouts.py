"""vecmode.AsyncVectorEnv's start methods, and its sub-envs in the parent
(``in_parent``), with the spinning that layout choice brings."""

from __future__ import annotations

import functools
import multiprocessing
import os
import signal
import threading
import time

import gymnasium as gym
import numpy as np
import pytest

import vecmode
from tests.cores.async_support import FORK, MODES, deadline, gone, make_async, run_three
from tests.helpers import (
    InPlaceActionEnv,
    ScheduledEnv,
    SlowEnv,
    assert_same_run,
    drive,
    env_fn_that_raises,
    faulty_fns,
    make_script,
    scheduled_fns,
)
from vecmode import (
    AsyncVectorEnv,
    AutoresetMode,
    SubEnvError,
    WorkerError,
    WorkerTimeoutError,
)
from vecmode import layout as layout_module


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
