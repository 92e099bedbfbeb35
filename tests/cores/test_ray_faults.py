"""vecmode.RayVectorEnv's faults on a local Ray: every fault, no actor left
behind (one Ray session for the module, as in test_ray.py)."""

from __future__ import annotations

import functools
import multiprocessing
import os
import signal
import threading
import time
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.error import ClosedEnvironmentError

import vecmode
from tests.cores import fault_envs, ray_support
from tests.cores.ray_support import (
    MODES,
    assert_no_actor_left,
    live_actors,
    ray,
)
from tests.helpers import (
    RaisesIn,
    UserFault,
    scheduled_fns,
)
from vecmode import (
    EpisodeEndedError,
    RayVectorEnv,
    SubEnvError,
    WorkerError,
    WorkerTimeoutError,
)

pytestmark = pytest.mark.slow
ray_session = ray_support.ray_session  # autouse: one Ray for the module
shared = ray_support.shared


# --------------------------------------------------------------------- faults
def faulty_core(n: int = 4, num_actors: int = 2, **kwargs: Any) -> RayVectorEnv:
    """Sub-envs that can be told to fail (:func:`arm`)."""
    return RayVectorEnv(
        fault_envs.env_fns(n, dict.fromkeys(range(n), "none")),
        num_actors=num_actors,
        **kwargs,
    )


def arm(core: Any, faults: dict[int, str]) -> None:
    """Make sub-env ``i`` fail as ``faults[i]`` says at its next step (or next
    reset, for ``raise_reset``); the others not at all."""
    steps, resets = core.get_attr("steps_taken"), core.get_attr("resets")
    core.set_attr("fault", [faults.get(i, "none") for i in range(core.num_envs)])
    core.set_attr(
        "at",
        [
            resets[i] + 1 if faults.get(i) == "raise_reset" else steps[i] + 1
            for i in range(core.num_envs)
        ],
    )


def test_faults_a_usable_env_survives(shared):
    """Sub-envs raising in step (every mode; two at once), in reset, in call and
    get_attr, and values Ray cannot serialize: SubEnvError naming the sub-env with
    its traceback; the call's sub-envs must be reset; then the env goes on."""
    core = shared("faulty", faulty_core)  # sub-envs 0-1 and 2-3
    zeros = np.zeros(4, dtype=int)
    for mode in MODES:
        envs = vecmode.with_autoreset(core, mode)
        envs.reset(seed=0)
        arm(core, {2: "raise_step"})
        with pytest.raises(SubEnvError) as caught:
            envs.step(zeros)
        error = caught.value
        assert (error.index, error.method, error.exc_type) == (2, "step", "ValueError")
        assert isinstance(error, ValueError)  # as Gymnasium's envs raise
        assert "step of sub-env 2 failed on purpose" in error.worker_traceback
        assert isinstance(error.__cause__, ValueError)
        assert error.lost == (0, 1, 2, 3) and core.awaiting_reset.all()
        with pytest.raises(EpisodeEndedError) as stepped:  # NextStep does not
            envs.step(zeros)  # silently reset them either
        assert stepped.value.lost
        envs.reset(options={"reset_mask": core.awaiting_reset})
        envs.step(zeros)
    arm(core, {1: "raise_step", 3: "raise_step"})
    with pytest.raises(SubEnvError) as caught:
        core.step(zeros)
    assert caught.value.index == 1 and caught.value.others == (3,)
    arm(core, {3: "raise_reset"})
    with pytest.raises(SubEnvError) as caught:
        core.reset(seed=1)
    assert (caught.value.index, caught.value.method) == (3, "reset")
    core.reset(seed=1)
    with pytest.raises(SubEnvError) as caught:
        core.get_attr("no_such_attribute")
    assert caught.value.index == 0 and "no_such_attribute" in str(caught.value)
    with pytest.raises(SubEnvError, match="AttributeError"):
        core.call("no_such_method")
    with pytest.raises(SubEnvError) as caught:  # it named sub-env 0, twice
        core.each(lambda env: threading.Lock(), indices=[2, 1])
    assert (caught.value.index, caught.value.others) == (1, (2,))
    assert caught.value.method == "pickling its result"
    for fault, what in (
        ("unpicklable_info", "pickling its info"),
        # a Box batch: the actor writes each observation into its rows, which
        # it does not fit (as in the other cores); see the next test for one
        # that is pickled
        ("unpicklable_obs", "writing its observation"),
    ):
        arm(core, {2: fault})
        with pytest.raises(SubEnvError) as caught:
            core.step(zeros)
        assert (caught.value.index, caught.value.method) == (2, what)
        assert caught.value.lost == (0, 1, 2, 3)
        core.reset(seed=2)
    arm(core, {})
    core.step(zeros)  # usable


def test_an_observation_that_cannot_be_pickled_names_its_sub_env():
    """Observations that are not a Box batch travel pickled in the answer: one
    that cannot be pickled is a SubEnvError naming its sub-env; the env goes on."""
    fns = [functools.partial(fault_envs.DictFaultyEnv, i, "none") for i in range(3)]
    with RayVectorEnv(fns, num_actors=1) as core:
        core.reset(seed=0)
        arm(core, {1: "unpicklable_obs"})
        with pytest.raises(SubEnvError) as caught:
            core.step(np.zeros(3, dtype=int))
        assert (caught.value.index, caught.value.method) == (
            1,
            "pickling its observation",
        )
        assert caught.value.lost == (0, 1, 2)
        core.reset(seed=1)
        arm(core, {})
        obs = core.step(np.zeros(3, dtype=int))[0]
        assert obs["obs"].shape[0] == 3


def test_a_sub_env_s_exception_is_of_its_class_as_in_the_other_cores(shared):
    """As over the sync and async cores (tests/cores/test_gymnasium_compat.py): the
    SubEnvError is an instance of the sub-env's exception class too, so the
    ``except`` clause that catches Gymnasium's exception catches it; an OSError
    gives a plain SubEnvError."""
    core = shared("raises", lambda: RayVectorEnv([RaisesIn, RaisesIn], num_actors=1))
    for original in (
        ValueError("a bad value"),
        KeyError("a key"),
        gym.error.ResetNeeded("reset first"),
        UserFault("the user's own"),
        NotImplementedError("not yet"),
        AttributeError("no such attribute"),
        OSError(28, "No space left on device"),
    ):
        kind = type(original)
        core.reset(seed=0)
        core.set_attr("error", [None, original])
        for where in ("call", "step"):
            core.set_attr("where", where)
            with pytest.raises(SubEnvError) as caught:
                core.call("poke") if where == "call" else core.step(np.zeros(2, int))
            error = caught.value
            assert isinstance(error, kind) == (kind is not OSError), (kind, where)
            assert (error.index, error.exc_type, error.message) == (
                1,
                kind.__name__,
                str(original),
            )
            assert type(error.__cause__) is kind and error.__cause__.args == (
                original.args
            )
    core.set_attr("error", None)


def test_a_failing_close_still_closes_and_leaves_no_actor():
    """Sub-envs 1 and 3 raise in close(), sub-env 5 hangs in it: close() waits
    the grace period for actor 2, kills every actor, then names the failures."""
    before = live_actors()
    core = faulty_core(n=6, num_actors=3)  # sub-envs 0-1, 2-3, 4-5
    arm(core, {})
    core.set_attr("fault", ["none", "close_raises"] * 2 + ["none", "close_hangs"])
    started = time.monotonic()
    with (
        pytest.raises(SubEnvError) as caught,
        pytest.warns(UserWarning, match=r"sub-env\(s\) 4, 5 did not close within 1.0"),
    ):
        core.close(timeout=1.0)
    assert time.monotonic() - started < 4.0
    assert caught.value.method == "close" and caught.value.index == 1
    assert "Sub-env(s) 3 raised in the same call too" in str(caught.value)
    assert core.closed
    assert_no_actor_left(core, before)
    core.close()  # idempotent
    with pytest.raises(ClosedEnvironmentError):
        core.step(np.zeros(6, dtype=int))


@pytest.mark.parametrize(
    "fault", ["raise_interrupt", "raise_exit", "raise_base", "flag_array"]
)
def test_a_sub_env_s_own_interrupt_or_exit_or_a_bad_flag_is_its_failure(fault):
    """No Ctrl-C reaches an actor: a sub-env's own KeyboardInterrupt, SystemExit
    or other BaseException (the actor died of it) is a SubEnvError naming it, and
    the env goes on (the actor lives); so is a flag that is not one bool (a bare
    ValueError naming no sub-env)."""
    before = live_actors()
    core = faulty_core(n=4, num_actors=2)
    envs = vecmode.with_autoreset(core, "SameStep")
    envs.reset(seed=0)
    arm(core, {1: fault})
    with pytest.raises(SubEnvError) as caught:
        envs.step(np.zeros(4, dtype=int))
    assert (caught.value.index, caught.value.method) == (1, "step"), caught.value
    envs.reset(seed=1)
    envs.step(np.zeros(4, dtype=int))
    envs.close()
    assert_no_actor_left(core, before)


def test_dead_actors_are_a_worker_error_naming_the_sub_envs_lost_at_once():
    """Three ways an actor dies, in one step: killed with ray.kill (actor 0) and
    with SIGKILL (actor 2) from outside, and by os._exit in one of its sub-envs
    (actor 3) during the step; actor 1 lives, its sub-env 2 stuck in the step.
    Without a timeout, the deaths are reported at once all the same, and actor
    1's sub-envs are not counted lost."""
    before = live_actors()
    core = faulty_core(n=7, num_actors=4)  # sub-envs 0-1, 2-3, 4-5, 6
    envs = vecmode.with_autoreset(core, "NextStep")
    envs.reset(seed=0)
    arm(core, {2: "hang", 6: "exit"})
    ray.kill(core.actors[0])  # asynchronous: wait, or actor 0 may still step
    os.kill(core.pids[2], signal.SIGKILL)
    ray_support.wait_gone(core.pids[0])
    started = time.monotonic()
    with pytest.raises(WorkerError) as caught:
        envs.step(np.zeros(7, dtype=int))
    assert time.monotonic() - started < 5.0
    message = str(caught.value)
    assert caught.value.lost == (0, 1, 4, 5, 6), message
    for named in (
        "actor 0 (sub-envs 0-1",
        "actor 2 (sub-envs 4-5",
        "actor 3 (sub-env 6",
    ):
        assert named in message
    assert "actor 1" not in message and "Sub-env(s) 0, 1, 4, 5, 6 are lost" in message
    assert "killed by `ray.kill`" in message  # Ray's reason, kept
    with pytest.raises(WorkerError, match="cannot be used any more"):
        envs.reset()
    started = time.monotonic()
    # actor 1 is still stuck: killed after 0.5 s; the dead actors are not named
    with pytest.warns(UserWarning, match=r"sub-env\(s\) 2, 3 did not close within"):
        envs.close(timeout=0.5)
    assert time.monotonic() - started < 3.0
    assert_no_actor_left(core, before)


def test_a_dead_actor_is_reported_within_2_s_while_the_others_are_busy():
    """Every actor stuck in the step; one killed with SIGKILL (before the step's
    first half second, and after it): its WorkerError comes within 2 s, as the
    docs say (about PROBE_SECONDS, a second, measured: the others' calls are
    watched that long for deaths at the same time)."""
    before = live_actors()
    killed: list[float] = []

    def kill(pid: int) -> None:
        killed.append(time.monotonic())
        os.kill(pid, signal.SIGKILL)

    for after in (0.2, 0.8):
        core = faulty_core(n=3, num_actors=3)
        core.reset(seed=0)
        arm(core, dict.fromkeys(range(3), "hang"))
        killed.clear()
        threading.Timer(after, kill, (core.pids[1],)).start()
        with pytest.raises(WorkerError) as caught:
            core.step(np.zeros(3, dtype=int))
        took = time.monotonic() - killed[0]
        assert took < 2.0, f"the death was reported {took:.2f} s after the kill"
        assert caught.value.lost == (1,), str(caught.value)
        with pytest.warns(UserWarning, match=r"sub-env\(s\) 0, 2 did not close"):
            core.close(timeout=0.5)  # they are stuck; 1 is dead
        assert_no_actor_left(core, before)


def test_the_actors_on_a_dead_actors_node_are_watched_longer_when_it_is_remote():
    """A dead node's actors can fail seconds apart (under load, before its
    health checks end): the actors on a dead actor's node, when that is not the
    driver's, are watched for NEIGHBOUR_SECONDS, so the error names them all.
    Here actors 1 and 2 are said to be on another node; 2 dies 2.5 s after 1."""
    before = live_actors()
    core = faulty_core(n=3, num_actors=3)
    core.reset(seed=0)
    core.nodes = [core.nodes[0], "a-remote-node", "a-remote-node"]
    arm(core, dict.fromkeys(range(3), "hang"))
    for delay, actor in ((0.3, 1), (2.8, 2)):
        threading.Timer(delay, os.kill, (core.pids[actor], signal.SIGKILL)).start()
    with pytest.raises(WorkerError) as caught:
        core.step(np.zeros(3, dtype=int))
    assert caught.value.lost == (1, 2), str(caught.value)
    assert "on node a-remote-nod" in str(caught.value)
    with pytest.warns(UserWarning, match=r"sub-env\(s\) 0 did not close"):
        core.close(timeout=0.5)
    assert_no_actor_left(core, before)


class Watchdog(Exception):
    """What an alarm-based watchdog raises."""


def test_an_exception_a_signal_handler_raises_reaches_the_caller_as_it_is():
    """A SIGALRM handler that raises while the driver waits in ray.get (before
    half a second) or ray.wait (after): that exception, not the SystemError Ray
    wraps it in; then the env is unusable, as after Ctrl-C, and close() works."""

    def watchdog(signum: int, frame: Any) -> None:
        raise Watchdog("the step took too long")

    before = live_actors()
    previous = signal.signal(signal.SIGALRM, watchdog)
    try:
        for after in (0.2, 0.8):
            core = faulty_core(n=2, num_actors=1)
            core.reset(seed=0)
            arm(core, {0: "hang"})
            signal.setitimer(signal.ITIMER_REAL, after)
            started = time.monotonic()
            with pytest.raises(Watchdog, match="took too long"):
                core.step(np.zeros(2, dtype=int))
            assert time.monotonic() - started < after + 1.0
            with pytest.raises(WorkerError, match="interrupted by Watchdog"):
                core.step(np.zeros(2, dtype=int))
            with pytest.warns(UserWarning, match=r"sub-env\(s\) 0, 1 did not close"):
                core.close(timeout=0.5)
            assert_no_actor_left(core, before)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_a_timeout_is_a_worker_timeout_error_and_close_kills_the_stuck_actor():
    before = live_actors()
    core = faulty_core(n=3, timeout=0.5)  # sub-envs 0-1 and 2
    core.reset(seed=0)
    arm(core, {2: "hang"})
    started = time.monotonic()
    with pytest.raises(WorkerTimeoutError) as caught:
        core.step(np.zeros(3, dtype=int))
    assert 0.5 <= time.monotonic() - started < 2.5
    assert isinstance(caught.value, multiprocessing.TimeoutError)
    assert caught.value.lost == (2,) and "Ray actor(s) 1" in str(caught.value)
    with pytest.raises(WorkerError, match="timed out"):
        core.step(np.zeros(3, dtype=int))
    started = time.monotonic()
    core.close()  # kills at once: the actor is stuck
    assert time.monotonic() - started < 3.0
    assert_no_actor_left(core, before)


def test_close_from_another_thread_during_a_step_ends_it_with_the_closed_error():
    """A thread steps a sub-env that hangs; close() from the main thread gives
    the actors its grace, kills them, returns; the step raises the closed-env
    error, as the async core's does (it raised IndexError); no actor is left."""
    before = live_actors()
    core = faulty_core(n=2, num_actors=2)
    core.reset(seed=0)
    arm(core, {1: "hang"})
    outcome: list = []

    def step() -> None:
        try:
            core.step(np.zeros(2, dtype=int))
            outcome.append("returned")
        except BaseException as exc:  # what the stepping thread got
            outcome.append(exc)

    stepping = threading.Thread(target=step, daemon=True)
    stepping.start()
    time.sleep(0.5)  # the step is under way
    started = time.monotonic()
    with pytest.warns(UserWarning, match=r"sub-env\(s\) 1 did not close"):
        core.close(timeout=1.0)
    assert time.monotonic() - started < 4.0
    stepping.join(10.0)
    assert not stepping.is_alive(), "the step still waits after close()"
    assert len(outcome) == 1, outcome  # as the async core says it:
    assert isinstance(outcome[0], ClosedEnvironmentError), outcome
    assert "its results are lost" in str(outcome[0])
    assert_no_actor_left(core, before)


@pytest.fixture
def ctrl_c():
    """Ctrl-C raises KeyboardInterrupt in this process for the test, as in a
    terminal (a test run in the background, or a pytest-xdist worker, ignores it)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def interrupt(call: Any, after: float = 0.5) -> float:
    """Run ``call`` with a Ctrl-C ``after`` s; the seconds it took to surface."""
    timer = threading.Timer(after, os.kill, (os.getpid(), signal.SIGINT))
    started = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            call()
    finally:
        timer.cancel()
    return time.monotonic() - started


@pytest.mark.parametrize("split", [False, True], ids=["step", "step_wait"])
def test_after_ctrl_c_in_a_step_the_env_goes_on_from_a_reset(ctrl_c, split):
    """Ctrl-C while the driver waited for a step made the env unusable ("close()
    it and build a new one"). The next call now reads and drops that step's
    answers, as the async core does: its sub-envs are lost until reset, then the
    env steps as one given the same calls."""
    before = live_actors()
    core = faulty_core(n=4, num_actors=2)
    core.reset(seed=0)
    arm(core, {1: "slow"})  # a second's step; Ctrl-C at 0.2 s, seen at the 0.5 s poll
    ones = np.ones(4, dtype=int)
    if split:
        assert interrupt(lambda: (core.step_async(ones), core.step_wait()), 0.2) < 1.0
    else:
        assert interrupt(lambda: core.step(ones), 0.2) < 1.0
    with pytest.raises(EpisodeEndedError, match=r"sub-env\(s\) 0, 1, 2, 3 lost"):
        core.step(ones)
    core.reset(seed=1)
    fresh = vecmode.SyncVectorEnv(
        fault_envs.env_fns(4, dict.fromkeys(range(4), "none"))
    )
    fresh.reset(seed=0)
    fresh.step(ones)  # (the interrupted step ran)
    fresh.reset(seed=1)
    for got, want in zip(
        core.step(ones * 0)[:4], fresh.step(ones * 0)[:4], strict=True
    ):
        np.testing.assert_array_equal(got, want)
    fresh.close()
    core.close()
    assert_no_actor_left(core, before)


def test_ctrl_c_in_a_hung_step_surfaces_at_once_and_the_drain_times_out(ctrl_c):
    before = live_actors()
    core = faulty_core(n=2, num_actors=1, timeout=2.0)
    core.reset(seed=0)
    arm(core, {0: "hang"})
    assert interrupt(lambda: core.step(np.zeros(2, dtype=int))) < 2.0
    started = time.monotonic()
    with pytest.raises(
        WorkerTimeoutError, match=r"interrupted by Ctrl-C\) did not finish within 2 s"
    ):
        core.step(np.zeros(2, dtype=int))  # drains at most the env's timeout
    assert time.monotonic() - started < 4.0
    with pytest.raises(WorkerError, match="timed out"):
        core.step(np.zeros(2, dtype=int))
    core.close()
    assert_no_actor_left(core, before)


def test_ctrl_c_in_close_after_a_hung_step_still_kills_the_actors(ctrl_c):
    """Ctrl-C again, while close() waits for the stuck actor: the actor is killed
    all the same, and a second close() has nothing left to do."""
    before = live_actors()
    core = faulty_core(n=2, num_actors=1)
    core.reset(seed=0)
    arm(core, {0: "hang"})
    assert interrupt(lambda: core.step(np.zeros(2, dtype=int))) < 2.0
    assert interrupt(lambda: core.close(timeout=30.0)) < 3.0
    assert core.closed
    core.close()
    assert_no_actor_left(core, before)


def test_construction_faults_leave_no_actor():
    """An env_fn that raises in an actor, and a sub-env whose space differs."""
    before = live_actors()

    def broken() -> gym.Env:
        raise ValueError("this env_fn cannot build its env")

    fns = scheduled_fns(3)
    with pytest.raises(SubEnvError) as caught:
        RayVectorEnv([fns[0], fns[1], broken], num_actors=2)
    assert (caught.value.index, caught.value.method) == (2, "env_fn")
    with pytest.raises(TypeError, match="sub-env 1's env_fn returned None"):
        RayVectorEnv([fns[0], lambda: None, fns[2]], num_actors=2)  # (it died)
    other = scheduled_fns(3, obs_type="dict")
    with pytest.raises(RuntimeError, match="sub-env 1's observation space"):
        RayVectorEnv([fns[0], other[1], fns[2]], num_actors=1)
    deadline = time.monotonic() + 5.0
    while live_actors() - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert live_actors() - before == set()


def test_an_env_the_actors_cannot_import_is_named_with_what_to_do(
    tmp_path, monkeypatch
):
    """env_fns whose module the driver imports but the actors cannot: the
    WorkerError names the ModuleNotFoundError (Ray buries it in a traceback) and
    says how to ship the code; no actor is left."""
    (tmp_path / "only_in_the_driver.py").write_text(
        "import gymnasium as gym\ndef make():\n    return gym.make('CartPole-v1')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import only_in_the_driver  # type: ignore[import-not-found]

    before = live_actors()
    with pytest.raises(WorkerError) as caught:
        RayVectorEnv([only_in_the_driver.make] * 2, num_actors=1)
    message = str(caught.value)
    assert "ModuleNotFoundError: No module named 'only_in_the_driver'" in message
    assert "runtime_env" in message and "The env is not built" in message
    assert "\x1b[" not in message  # no terminal colours
    deadline = time.monotonic() + 5.0
    while live_actors() - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert live_actors() - before == set()


def test_actors_ray_cannot_place_time_out_at_construction(monkeypatch):
    """Asking for a resource no node has: with a timeout, a WorkerTimeoutError
    (after BUILD_GRACE, a minute, shortened here) and no actor left."""
    import vecmode.ray_vector_env as module
    import vecmode.remote

    monkeypatch.setattr(vecmode.remote, "BUILD_GRACE", 0.5)
    monkeypatch.setattr(module, "PLACEMENT_WARNING", 0.2)
    before = live_actors()
    started = time.monotonic()
    with (
        pytest.raises(WorkerTimeoutError, match="construction did not finish") as info,
        pytest.warns(UserWarning, match="not built after") as warned,
    ):
        RayVectorEnv(
            scheduled_fns(2),
            num_actors=1,
            timeout=1.0,
            actor_options={"resources": {"no_node_has_it": 1}},
        )
    assert time.monotonic() - started < 5.0
    # the warning knows the timeout given; the error, that no env exists to close
    [warning] = [str(w.message) for w in warned if "not built" in str(w.message)]
    assert "Still waiting, for 1 s in all" in warning, warning
    assert "pass timeout=" not in warning, warning
    message = str(info.value)
    assert "No env was built and the actors were ended" in message, message
    assert "`ray status`" in message and "close()" not in message, message
    deadline = time.monotonic() + 5.0
    while live_actors() - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert live_actors() - before == set()
