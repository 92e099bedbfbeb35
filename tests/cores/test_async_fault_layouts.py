"""A sub-env's fault is the same error in every layout (the sync core, a
worker, the parent's share); calls from other threads, copies, interrupts."""

from __future__ import annotations

import builtins
import collections
import copy
import functools
import gc
import multiprocessing
import os
import pickle
import signal
import threading
import time
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.error import AlreadyPendingCallError, ClosedEnvironmentError

import vecmode
from tests.cores.async_support import FORK, MODES, deadline, gone, make_async
from tests.helpers import SlowEnv, scheduled_fns
from vecmode import AsyncVectorEnv, EpisodeEndedError, SubEnvError, WorkerError
from vecmode.errors import InfoBatchError


# --------------------------------------------- a fault in every layout
class OddStep(gym.Env):
    """A sub-env whose step returns the ``reward`` and ``info`` it was given, as
    some custom envs do (a one-element array reward, info arrays whose shape
    differs between sub-envs)."""

    observation_space = gym.spaces.Box(-1, 1, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(
        self, reward: Any = 0.0, info: dict | None = None, flags: Any = (False, False)
    ) -> None:
        self.reward, self.info, self.flags = reward, info or {}, flags

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2, np.float32), {}

    def step(self, action):
        return np.zeros(2, np.float32), self.reward, *self.flags, dict(self.info)


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
        "(ValueError: shape (0,), not (2,))"
    )
    with pytest.raises(EpisodeEndedError, match=r"sub-env\(s\) 0, 1 lost their state"):
        envs.step(np.zeros(2, np.int64))
    envs.reset()
    envs.close()


#: Sub-envs 0 and 1's values of one info key, and the batch expected: where
#: Gymnasium's batching cuts the second (0.5 after an int became 0, 7 after a
#: bool True), the array takes both dtypes.
KEPT_WHOLE = {
    "float after int": ((0, 0.5), np.array([0.0, 0.5])),
    "int after bool": ((True, 7), np.array([1, 7])),
    "float array after int array": (
        (np.array([1]), np.array([2.7])),
        np.array([[1.0], [2.7]]),
    ),
    "float64 after float32": (
        (np.float32(0.25), np.float64(0.1)),
        np.array([0.25, 0.1]),
    ),
    "int after float": ((0.5, 2), np.array([0.5, 2.0])),  # (as Gymnasium)
    "NumPy string after int": ((1, np.str_("3")), np.array([1, 3])),  # (as Gymnasium)
}


@pytest.mark.parametrize("case", KEPT_WHOLE)
@pytest.mark.parametrize(("core", "in_parent"), LAYOUTS)
def test_info_values_of_two_types_are_batched_whole(core, in_parent, case):
    values, expected = KEPT_WHOLE[case]
    fns = [functools.partial(OddStep, info={"k": v, "d": {"k": v}}) for v in values]
    envs = _core(core, fns, in_parent)
    envs.reset(seed=0)
    infos = envs.step(np.zeros(2, np.int64))[4]
    for got in (infos["k"], infos["d"]["k"]):
        np.testing.assert_array_equal(got, expected)
        assert got.dtype == expected.dtype
    envs.close()


@pytest.mark.parametrize(("core", "in_parent"), LAYOUTS)
def test_info_values_are_kept_whole_whatever_the_order_of_their_keys(core, in_parent):
    """Infos of the same keys and types as the last one's skip the check: not
    when the same types come under other keys."""
    infos = [{"a": 0, "b": 0.5}, {"a": 1, "b": 1.5}, {"b": 2, "a": 2.5}]
    fns = [functools.partial(OddStep, info=info) for info in infos]
    envs = _core(core, fns, in_parent)
    envs.reset(seed=0)
    got = envs.step(np.zeros(3, np.int64))[4]
    assert got["a"].tolist() == [0, 1, 2.5] and got["b"].tolist() == [0.5, 1.5, 2]
    envs.close()


@pytest.mark.parametrize(("core", "in_parent"), LAYOUTS)
def test_infos_whose_type_does_not_say_they_fit_are_checked_each_time(core, in_parent):
    """A list's length, a dict subclass's values: the same types as the last
    info's are no proof (a [7] after [1, 2, 3] was broadcast to [7, 7, 7])."""
    deep = [
        {"x": np.zeros(3), "d": collections.OrderedDict(a=1)},
        {"x": [1, 2, 3], "d": collections.OrderedDict(a=0.5)},
        {"x": [7], "d": collections.OrderedDict(a=2)},
    ]
    fns = [functools.partial(OddStep, info=info) for info in deep]
    envs = _core(core, fns, in_parent)
    envs.reset(seed=0)
    with pytest.raises(InfoBatchError, match=r"^sub-env 2's info\['x'\] cannot"):
        envs.step(np.zeros(3, np.int64))
    envs.close()
    for info in deep:
        del info["x"]
    envs = _core(core, fns, in_parent)
    envs.reset(seed=0)
    assert envs.step(np.zeros(3, np.int64))[4]["d"]["a"].tolist() == [1, 0.5, 2]
    envs.close()


#: Values of one key that no array holds: sub-env 1's key is named.
UNBATCHABLE = {
    "a narrower array": (np.array([1.0, 2.0, 3.0]), np.array([9.0])),  # (broadcast)
    "a number after a row": (np.array([1.0, 2.0]), 9.0),  # (broadcast)
    "a dict after a number": (5, {"a": 1}),
    "a number after a dict": ({"a": 1}, 5),
    "an int too big": (1, 2**70),
}


@pytest.mark.parametrize("case", UNBATCHABLE)
@pytest.mark.parametrize(("core", "in_parent"), LAYOUTS)
def test_info_values_no_array_holds_are_a_named_error(core, in_parent, case):
    fns = [functools.partial(OddStep, info={"k": v}) for v in UNBATCHABLE[case]]
    envs = _core(core, fns, in_parent)
    envs.reset(seed=0)
    with pytest.raises(InfoBatchError, match=r"^sub-env 1's info\['k'\] cannot"):
        envs.step(np.zeros(2, np.int64))
    envs.reset()
    envs.close()


@pytest.mark.parametrize(("core", "in_parent"), LAYOUTS)
def test_a_nested_info_value_no_array_holds_is_named_by_its_path(core, in_parent):
    """A value in a dict of the info: the error names the keys down to it."""
    fns = [
        functools.partial(OddStep, info={"stats": {"n": 1, "events": np.arange(k)}})
        for k in (2, 0)
    ]
    envs = _core(core, fns, in_parent)
    envs.reset(seed=0)
    with pytest.raises(InfoBatchError) as caught:
        envs.step(np.zeros(2, np.int64))
    assert str(caught.value).startswith(
        "sub-env 1's info['stats']['events'] cannot be batched with the other "
        "sub-envs' (ValueError: shape (0,), not (2,))"
    )
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
    assert caught.value.message == vecmode.runner.reward_not_a_number_message(reward)
    envs.reset(seed=0)
    assert multiprocessing.active_children() or core == "sync"  # workers alive
    envs.close()


@pytest.mark.parametrize(
    "flags", [(np.array([True]), False), (False, [1]), (np.array([[0]]), None)]
)
@pytest.mark.parametrize(("core", "in_parent"), LAYOUTS)
def test_flags_are_what_gymnasium_s_sync_env_makes_of_them(core, in_parent, flags):
    """A one-element array flag: Gymnasium's sync env (and vecmode's) reads its
    element; a worker died on it, the parent's share broke the env. Now every
    layout returns Gymnasium's flags."""
    fns = [OddStep, functools.partial(OddStep, flags=flags)]
    theirs = gym.vector.SyncVectorEnv(fns, autoreset_mode="Disabled")
    theirs.reset(seed=0)
    expected = theirs.step(np.zeros(2, np.int64))[2:4]
    theirs.close()
    envs = _core(core, fns, in_parent)
    envs.reset(seed=0)
    with deadline(30):
        got = envs.step(np.zeros(2, np.int64))[2:4]
    assert [flag.tolist() for flag in got] == [flag.tolist() for flag in expected]
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
