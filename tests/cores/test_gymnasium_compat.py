"""Drop-in compatibility with Gymnasium: what Gymnasium's own vector tests found.

Regression tests (our own, written for what running Gymnasium's suite against
vecmode found) for each class of incompatibility:

* every space type of ``gymnasium.spaces`` as observation AND action space, in
  every mode, sync and async: the same results as Gymnasium's ``SyncVectorEnv``,
  ``final_obs`` included (differential and property-based);
* the split async API (``reset_async``/``reset_wait``, ``step_async``/
  ``step_wait``) through every vecmode layer over an async core, with each mode's
  semantics and Gymnasium's errors for out-of-order calls;
* the exception-type contract: where vecmode's exception is more precise than
  Gymnasium's, it is a subclass of Gymnasium's type too, and its message contains
  Gymnasium's wording.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import multiprocessing
import re

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.error import AlreadyPendingCallError, NoAsyncCallError
from gymnasium.spaces import Box, Dict, Tuple
from gymnasium.vector import VectorEnv
from hypothesis import given, settings
from hypothesis import strategies as st

import vecmode
from tests.helpers import (
    SHARED_MEMORY_SPACES,
    CodedFault,
    LockedFault,
    RaisesIn,
    ScheduledEnv,
    Script,
    SlowEnv,
    UserFault,
    assert_same_run,
    drive,
    every_space,
    make_script,
    scheduled_fns,
    space_fns,
)
from vecmode import AutoresetMode, SubEnvError, as_mode
from vecmode.errors import ActionBatchError, InfoLayoutError, SharedMemorySpaceError
from vecmode.wrappers import (
    ClipReward,
    DictInfoToList,
    FrameStackObservation,
    NormalizeObservation,
    NormalizeReward,
    RecordEpisodeStatistics,
    StatefulWrapper,
    TransformObservation,
)

MODES = list(AutoresetMode)
SPACES = sorted(every_space())
FORK = "fork"


def run_both(expected_env, got_env, script, mode, drive_got=drive):
    """Drive both envs through ``script`` (closing them); return both runs."""
    disabled = as_mode(mode) is AutoresetMode.DISABLED
    try:
        return drive(expected_env, script, disabled), drive_got(
            got_env, script, disabled
        )
    finally:
        expected_env.close()
        got_env.close()


def ours(fns, mode, backend):
    if backend == "sync":
        core = vecmode.SyncVectorEnv(fns)
    else:
        core = vecmode.AsyncVectorEnv(
            fns, context=FORK, num_workers=2, shared_memory=backend == "async-shared"
        )
    return vecmode.with_autoreset(core, mode)


# ------------------------------------------------------------ every space type
def backends(space):
    return ["sync", "async"] + (
        ["async-shared"] if space in SHARED_MEMORY_SPACES else []
    )


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
@pytest.mark.parametrize(
    ("space", "backend"),
    [(space, backend) for space in SPACES for backend in backends(space)],
)
def test_every_space_as_observation_and_action_equals_gymnasium(space, backend, mode):
    """Episodes ending together and apart, truncated and terminated, partial
    resets in every mode: every returned value equals Gymnasium's."""
    reference = gym.vector.SyncVectorEnv(space_fns(space), autoreset_mode=mode)
    script = make_script(reference, 14, seed=5, mask_prob=0.4)
    expected, got = run_both(
        reference, ours(space_fns(space), mode, backend), script, mode
    )
    assert_same_run(expected, got)
    if mode is AutoresetMode.SAME_STEP:  # the final observations were there
        assert any("final_obs" in r[1][4] for r in got if r[0] == "step")


class EmptyObservations(gym.Env):
    """Observations of a space with no elements; episodes of 2 steps."""

    action_space = gym.spaces.Discrete(2)

    def __init__(self, space: gym.Space) -> None:
        self.observation_space, self.t = copy.deepcopy(space), 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if seed is not None:  # the same samples in every vector env
            self.observation_space.seed(seed)
        self.t = 0
        return self.observation_space.sample(), {}

    def step(self, action):
        self.t += 1
        return self.observation_space.sample(), 1.0, False, self.t == 2, {"t": self.t}


EMPTY = {
    "box": Box(-1, 1, (0,)),
    "box-2-0-3": Box(-1, 1, (2, 0, 3)),
    "dict": Dict({}),
    "tuple": Tuple(()),
    "dict-of-an-empty-tuple": Dict({"a": Tuple(()), "b": Box(-1, 1, (1,))}),
}


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
@pytest.mark.parametrize("backend", ["sync", "async"])
@pytest.mark.parametrize("space", sorted(EMPTY))
def test_observations_with_no_elements_equal_gymnasium(space, backend, mode):
    """Gymnasium runs them; vecmode's cores crashed (a memoryview cast, an
    empty Dict's rows), found by an outside review."""
    fns = [functools.partial(EmptyObservations, EMPTY[space])] * 3
    reference = gym.vector.SyncVectorEnv(fns, autoreset_mode=mode)
    script = make_script(reference, 8, seed=5, mask_prob=0.4)
    expected, got = run_both(reference, ours(fns, mode, backend), script, mode)
    assert_same_run(expected, got)


@pytest.mark.parametrize("space", sorted(set(SPACES) - SHARED_MEMORY_SPACES))
def test_shared_memory_refusal_is_gymnasiums_type_and_wording(space):
    """Gymnasium raises TypeError (a dynamic shape) or ValueError (a custom
    space); vecmode's error is both, and no process is left behind."""
    before = multiprocessing.active_children()
    with pytest.raises(SharedMemorySpaceError) as info:
        vecmode.AsyncVectorEnv(space_fns(space), context=FORK, shared_memory=True)
    assert isinstance(info.value, TypeError) and isinstance(info.value, ValueError)
    assert "shared_memory=False" in str(info.value)
    if space != "custom":
        assert "has a dynamic shape so its not possible to make a static shared " in (
            str(info.value)
        )
    assert multiprocessing.active_children() == before


@st.composite
def space_scenarios(draw):
    num_envs = draw(st.integers(1, 3))
    steps = draw(st.integers(1, 12))
    return {
        "space": draw(st.sampled_from(SPACES)),
        "mode": draw(st.sampled_from(MODES)),
        "lengths": draw(
            st.lists(st.integers(1, 4), min_size=num_envs, max_size=num_envs)
        ),
        "seed": draw(st.integers(0, 2**16)),
        "steps": steps,
        "masks": draw(
            st.lists(
                st.none()
                | st.lists(st.booleans(), min_size=num_envs, max_size=num_envs).map(
                    lambda m: np.array(m, dtype=bool)
                ),
                min_size=steps,
                max_size=steps,
            )
        ),
    }


@settings(max_examples=60)
@given(space_scenarios())
def test_every_space_property(scenario):
    """Random spaces, episode lengths, modes, seeds and reset masks."""
    fns = functools.partial(space_fns, scenario["space"], scenario["lengths"])
    mode = scenario["mode"]
    reference = gym.vector.SyncVectorEnv(fns(), autoreset_mode=mode)
    script = make_script(reference, scenario["steps"], seed=scenario["seed"])
    script = Script(script.seed, script.actions, scenario["masks"])
    assert_same_run(*run_both(reference, ours(fns(), mode, "sync"), script, mode))


# --------------------------------------------------------------- the split API
def drive_split(envs, script, disabled):
    """:func:`drive`, every call made with ``*_async`` then ``*_wait``."""
    envs.reset_async(seed=script.seed, options=script.options)
    records = [("reset", envs.reset_wait(timeout=10))]
    for t, actions in enumerate(script.actions):
        envs.step_async(actions)
        result = envs.step_wait(timeout=10)
        records.append(("step", result))
        mask = np.zeros(envs.num_envs, dtype=bool)
        if disabled:
            mask |= np.logical_or(result[2], result[3])
        if script.masks[t] is not None:
            mask |= script.masks[t]
        if mask.any():
            envs.reset_async(options={"reset_mask": mask.copy()})
            records.append(("reset_mask", envs.reset_wait()))
    return records


def _stack(envs):
    """Observation, stateful and reward wrappers (info still a dict below)."""
    envs = TransformObservation(envs, lambda obs: obs * 2)
    envs = NormalizeObservation(envs)
    envs = RecordEpisodeStatistics(envs, stats_key="stats")
    envs = NormalizeReward(envs, gamma=0.9)
    envs = ClipReward(envs, -1.0, 1.0)
    return FrameStackObservation(envs, 2)


def _untimed(records):
    """The records without RecordEpisodeStatistics' wall-clock times ("t")."""

    def strip(value):
        if isinstance(value, dict):
            timed = {"r", "l", "t"} <= set(value)
            return {k: strip(v) for k, v in value.items() if not (timed and k == "t")}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return [(kind, (*result[:-1], strip(result[-1]))) for kind, result in records]


def _async_core(fns):
    return vecmode.AsyncVectorEnv(fns, context=FORK, num_workers=2)


LAYERS = {
    "policy": lambda fns, mode: vecmode.with_autoreset(_async_core(fns), mode),
    "make_vec": lambda fns, mode: vecmode.make_vec(
        ScheduledEnv,
        num_envs=3,
        vectorization_mode="async",
        autoreset_mode=mode,
        vector_kwargs={"context": FORK, "num_workers": 2},
        lengths=(2, 3),
    ),
    "wrappers": lambda fns, mode: _stack(
        vecmode.with_autoreset(_async_core(fns), mode)
    ),
    # vecmode's policies over Gymnasium's async env (NextStep cannot be exact)
    "gymnasium-async-below": lambda fns, mode: vecmode.with_autoreset(
        gym.vector.AsyncVectorEnv(fns, context=FORK, autoreset_mode="Disabled"), mode
    ),
}


@pytest.mark.parametrize(
    ("layer", "mode"),
    [
        (layer, mode)
        for layer in sorted(LAYERS)
        for mode in MODES
        if not (layer == "gymnasium-async-below" and mode is AutoresetMode.NEXT_STEP)
    ],
    ids=lambda x: getattr(x, "value", x),
)
def test_split_api_equals_blocking_calls_through_every_layer(layer, mode):
    def fns():
        return scheduled_fns(3, lengths=[(2, 3), (3,), (1, 4)])

    blocking = LAYERS[layer](fns(), mode)
    split = LAYERS[layer](fns(), mode)
    assert vecmode.mode_of(split) is mode
    script = make_script(blocking, 16, seed=2, mask_prob=0.3)
    expected, got = run_both(blocking, split, script, mode, drive_split)
    assert_same_run(_untimed(expected), _untimed(got))


def test_dict_info_to_list_outermost_has_the_split_api_too():
    def build():
        return DictInfoToList(
            _stack(vecmode.with_autoreset(_async_core(scheduled_fns(2)), "SameStep"))
        )

    blocking, split = build(), build()
    script = make_script(blocking, 8, seed=1)
    expected, got = run_both(blocking, split, script, "SameStep", drive_split)
    assert_same_run(_untimed(expected), _untimed(got))


@pytest.mark.parametrize("layer", ["policy", "wrappers", "gymnasium-async-below"])
def test_out_of_order_calls_get_gymnasiums_errors(layer):
    envs = LAYERS[layer](scheduled_fns(2), "SameStep")
    try:
        with pytest.raises(
            NoAsyncCallError,
            match=re.escape(
                "Calling `reset_wait` without any prior call to `reset_async`."
            ),
        ):
            envs.reset_wait()
        envs.reset(seed=0)
        with pytest.raises(
            NoAsyncCallError,
            match=re.escape(
                "Calling `step_wait` without any prior call to `step_async`."
            ),
        ):
            envs.step_wait()
        envs.reset_async()
        with pytest.raises(
            AlreadyPendingCallError,
            match=re.escape(
                "Calling `step_async` while waiting for a pending call to `reset` to "
                "complete"
            ),
        ):
            envs.step_async(np.zeros(2, dtype=int))
        envs.reset_wait()
        envs.step_async(np.zeros(2, dtype=int))
        with pytest.raises(
            AlreadyPendingCallError,
            match=re.escape(
                "Calling `reset_async` while waiting for a pending call to `step` to "
                "complete"
            ),
        ):
            envs.reset_async()
        envs.step_wait()
        envs.step_async(np.zeros(2, dtype=int))
        with pytest.warns(
            UserWarning,
            match=re.escape(
                "Calling `close` while waiting for a pending call to `step` to complete."
            ),
        ):
            envs.close()
    finally:
        envs.close()


@pytest.mark.parametrize("layer", ["policy", "wrappers"])
def test_a_split_call_times_out_as_gymnasiums(layer):
    fns = [functools.partial(SlowEnv, i, 0.5) for i in range(2)]
    envs = LAYERS[layer](fns, "SameStep")
    try:
        envs.reset(seed=0)
        envs.step_async(np.zeros(2, dtype=int))
        with pytest.raises(multiprocessing.TimeoutError):
            envs.step_wait(timeout=0.05)
    finally:
        envs.close(terminate=True)


def test_no_split_api_where_there_is_none_below():
    """Over a sync core, no layer claims the split API (hasattr is honest)."""
    sync = vecmode.with_autoreset(vecmode.SyncVectorEnv(scheduled_fns(2)), "SameStep")
    for envs in (sync, _stack(sync), vecmode.NextStepAutoreset(sync.unwrapped)):
        for name in ("step_async", "step_wait", "reset_async", "reset_wait"):
            assert not hasattr(envs, name), (envs, name)
        with pytest.raises(AttributeError, match="use an async vector env below"):
            _ = envs.step_async
    sync.close()
    asynchronous = _stack(
        vecmode.with_autoreset(_async_core(scheduled_fns(2)), "SameStep")
    )
    assert all(
        hasattr(asynchronous, name)
        for name in ("step_async", "step_wait", "reset_async", "reset_wait")
    )
    asynchronous.close()


def test_a_wrapper_that_overrides_step_has_no_split_api():
    """Its step_wait would skip what its step() adds: refused, saying why."""

    class Doubling(StatefulWrapper):
        def step(self, actions):
            obs, rewards, *rest = super().step(actions)
            return (obs, rewards * 2, *rest)

    class DoublingByHalves(StatefulWrapper):
        def _step_result(self, result):
            obs, rewards, *rest = super()._step_result(result)
            return (obs, rewards * 2, *rest)

    envs = Doubling(vecmode.with_autoreset(_async_core(scheduled_fns(2)), "NextStep"))
    assert not hasattr(envs, "step_wait")
    with pytest.raises(AttributeError, match="overrides step"):
        _ = envs.step_async
    assert hasattr(envs, "reset_async")  # reset is not overridden
    envs.close()
    envs = DoublingByHalves(
        vecmode.with_autoreset(_async_core(scheduled_fns(2)), "NextStep")
    )
    envs.reset(seed=0)
    envs.step_async(np.ones(2, dtype=int))
    assert envs.step_wait()[1].tolist() == [3.0, 3.02]
    envs.close()


# ------------------------------------------------- the exception-type contract
@pytest.mark.parametrize("backend", ["sync", "async"])
@pytest.mark.parametrize(
    ("space", "actions", "says"),
    [
        ("discrete", 0, "got int 0"),
        ("discrete", np.zeros(2, dtype=int), "got a batch of 2"),
        ("discrete", np.zeros(4, dtype=int), "got a batch of 4"),
        ("text", ("a", "b"), "tuple of 3 samples"),
        ("text", "abc", "tuple of 3 samples"),
        ("tuple", (np.zeros(3, dtype=int),), "tuple of 2 batches"),
        ("tuple", (np.zeros(3, dtype=int), np.zeros((2, 2))), r"actions\[1\] must be"),
        ("dict", {"a": np.zeros(3, dtype=int)}, "lacks the key 'b'"),
        (
            "dict",
            {"a": np.zeros(3, dtype=int), "b": np.zeros((3, 2)), "c": 1},
            "has the key 'c'",
        ),
        ("dict-of-graph-and-text", {"g": (None,) * 3, "t": ("a",)}, r"actions\['t'\]"),
        # the shape of each action (these reached the sub-envs)
        (
            "discrete",
            np.zeros((3, 2), dtype=int),
            r"must have shape \(3,\) .*got shape",
        ),
        ("discrete", [[0], [1], [0]], r"must have shape \(3,\) .*got shape \(3, 1\)"),
        # ragged or text (these reached the sub-envs: a Box(2,) got a (1,) action,
        # CartPole under python -O stepped text as action 0)
        ("box", [[0.5, 0.5], [0.5], [0.5, 0.5]], r"got list \[\[0.5, 0.5\], \[0.5\]"),
        ("discrete", [1, [1], 1], r"got list \[1, \[1\], 1\]"),
        ("discrete", "abc", "got str 'abc'"),
        ("discrete", ["1", "1", "1"], r"got list \['1'"),
        ("discrete", np.array(["1", "1", "1"]), "got ndarray array"),
        (
            "dict",
            {"a": np.zeros(3, dtype=int), "b": np.zeros((3, 5))},
            r"actions\['b'\] must have shape \(3, 2\)",
        ),
    ],
)
def test_bad_actions_are_both_gymnasium_types_and_leave_the_env_usable(
    backend, space, actions, says
):
    envs = ours(space_fns(space), "NextStep", backend)
    try:
        envs.reset(seed=0)
        with pytest.raises(ActionBatchError, match=says) as info:
            envs.step(actions)
        assert isinstance(info.value, ValueError) and isinstance(info.value, TypeError)
        assert "nothing was stepped" in str(info.value)
        envs.action_space.seed(0)
        envs.step(envs.action_space.sample())  # still usable, nothing was stepped
    finally:
        envs.close()


def test_valid_batches_of_every_structure_are_accepted():
    """Lists where Gymnasium's iterate reads them; the batch as the space samples."""
    for space in SPACES:
        envs = ours(space_fns(space), "SameStep", "sync")
        envs.reset(seed=0)
        envs.action_space.seed(1)
        for _ in range(4):
            envs.step(envs.action_space.sample())
        envs.close()
    envs = ours(space_fns("discrete"), "SameStep", "sync")
    envs.reset(seed=0)
    envs.step([0, 1, 2])
    envs.close()


@pytest.mark.parametrize("backend", ["sync", "async"])
def test_reset_mask_messages_contain_gymnasiums(backend):
    envs = ours(scheduled_fns(3), "Disabled", backend)
    try:
        envs.reset(seed=0)
        for mask, error, text in [
            (
                np.array([True]),
                ValueError,
                "`options['reset_mask']` must have shape `(3,)`, got (1,)",
            ),
            (np.array([[True] * 3]), ValueError, "must have shape `(3,)`, got (1, 3)"),
            (
                np.array([1, 1, 0]),
                TypeError,
                "`options['reset_mask']` must have `dtype=np.bool_`, got int64",
            ),
            (
                "yes",
                TypeError,
                "`options['reset_mask']` must be a numpy array, got <class 'str'>",
            ),
        ]:
            with pytest.raises(error, match=re.escape(text)):
                envs.reset(options={"reset_mask": mask})
    finally:
        envs.close()


@pytest.mark.parametrize("core", ["sync", "async"])
def test_observation_mode_and_space_messages_contain_gymnasiums(core):
    def build(fns, **kwargs):
        if core == "sync":
            return vecmode.SyncVectorEnv(fns, **kwargs)
        return vecmode.AsyncVectorEnv(fns, context=FORK, **kwargs)

    with pytest.raises(
        ValueError,
        match=re.escape(
            "Invalid `observation_mode`, expected: 'same' or 'different' or tuple of "
            "single and batch observation space, actual got invalid"
        ),
    ):
        build(scheduled_fns(2), observation_mode="invalid")

    class Wider(ScheduledEnv):
        def __init__(self, index=0):
            super().__init__(index)
            self.observation_space = Box(-1000, 1000, (3,), np.float32)

    before = multiprocessing.active_children()
    with pytest.raises(
        RuntimeError,
        match=r"the sub-environments observation spaces are not equivalent\. .*If "
        r"this is intentional, use `observation_mode='different'` instead",
    ):
        build([ScheduledEnv, Wider])
    assert multiprocessing.active_children() == before


@pytest.mark.parametrize("core", ["sync", "async"])
def test_an_observation_mode_pair_of_no_spaces_is_gymnasiums_type_error(core):
    """As Gymnasium's sync and async envs: the pair's types named, no worker left."""
    before = multiprocessing.active_children()
    with pytest.raises(
        TypeError,
        match=re.escape(
            "Expected both elements of observation_mode to be Spaces, got "
            "<class 'str'> and <class 'int'>"
        ),
    ):
        if core == "sync":
            vecmode.SyncVectorEnv(scheduled_fns(2), observation_mode=("box", 3))
        else:
            vecmode.AsyncVectorEnv(
                scheduled_fns(2), context=FORK, observation_mode=("box", 3)
            )
    assert multiprocessing.active_children() == before


#: A sub-env's exceptions (class, message) whose type Gymnasium's vector envs
#: raise again: its sync env the exception itself, its async env a new one of
#: the same class.
ORIGINALS = [
    (ValueError, "Error in reset"),
    (KeyError, "no such key"),
    (gym.error.ResetNeeded, "reset first"),
    (UserFault, "the user's own"),
    (NotImplementedError, "not yet"),  # a RuntimeError already
    (AttributeError, "no such attribute"),
]


def _raised(envs, where):
    """What ``envs`` raises when its sub-envs raise in ``where`` ("step",
    "reset" or "call"); closes ``envs``."""
    try:
        if where != "reset":
            envs.reset(seed=0)
        with pytest.raises(Exception) as caught:
            if where == "step":
                envs.step(np.zeros(2, dtype=np.int64))
            elif where == "reset":
                envs.reset(seed=0)
            else:
                envs.call("poke")
        return caught.value
    finally:
        with contextlib.suppress(Exception):
            envs.close()


# Gymnasium's AsyncVectorEnv logs the sub-env's traceback, as a UserWarning
@pytest.mark.filterwarnings("ignore:.*ERROR.*:UserWarning")
@pytest.mark.parametrize("where", ["step", "reset", "call"])
@pytest.mark.parametrize(("kind", "text"), ORIGINALS, ids=lambda v: str(v))
def test_a_sub_env_s_exception_is_caught_by_what_catches_gymnasiums(kind, text, where):
    """Gymnasium's sync env lets a sub-env's exception through and its async env
    raises its type again, so user code catches ``ValueError`` or
    ``gymnasium.error.ResetNeeded`` around a step: every ``except`` clause that
    catches theirs catches vecmode's SubEnvError, in every core and through
    make_vec, with SubEnvError's own message and the original as ``__cause__``."""
    fns = [RaisesIn, functools.partial(RaisesIn, kind(text), where)]
    theirs = [
        _raised(gym.vector.SyncVectorEnv(fns), where),
        _raised(gym.vector.AsyncVectorEnv(fns, context=FORK), where),
    ]
    caught_by = {cls for error in theirs for cls in type(error).__mro__}
    assert kind in caught_by
    ours = {
        "sync": vecmode.SyncVectorEnv(fns),
        "async": vecmode.AsyncVectorEnv(fns, context=FORK),
        "async, no shared memory": vecmode.AsyncVectorEnv(
            fns, context=FORK, shared_memory=False
        ),
        "async, in the parent": vecmode.AsyncVectorEnv(
            fns, context=FORK, num_workers=1, in_parent=1
        ),
        "make_vec": vecmode.make_vec(
            fns[1], 2, "async", vector_kwargs={"context": FORK}
        ),  # both sub-envs raise: 0 is named
    }
    for name, envs in ours.items():
        error = _raised(envs, where)
        assert isinstance(error, SubEnvError) and isinstance(error, RuntimeError)
        missed = [cls.__name__ for cls in caught_by if not isinstance(error, cls)]
        assert not missed, f"{name}: {type(error).__qualname__} is no {missed}"
        assert (error.method, error.exc_type) == (
            "call('poke')" if where == "call" else where,
            kind.__name__,
        ), name
        assert error.index == (0 if name == "make_vec" else 1), name
        assert error.message == str(kind(text)), name
        assert str(error) == vecmode.errors.sub_env_failed(
            error.index,
            error.method,
            error.exc_type,
            error.message,
            error.worker_traceback,
            error.others,
            error.lost,
        ), name
        assert repr(error).startswith(type(error).__name__ + "("), name
        assert type(error.__cause__) is kind and error.__cause__.args == (text,), name


@pytest.mark.parametrize(
    "error",
    [CodedFault(7, "bad gear"), LockedFault("no such tool")],
    ids=["does not unpickle", "does not pickle"],
)
def test_a_worker_s_exception_that_cannot_cross_is_still_of_its_class(error):
    """An exception that cannot be rebuilt in the parent (its ``__init__`` takes
    other args; it holds a lock) still makes the SubEnvError an instance of its
    class, named by its class alone, in every remote layout: ``except`` clauses
    catch it as they catch the sync core's (which raises the exception itself as
    the cause). Only the original object, as ``__cause__``, is missing."""
    fns = [RaisesIn, functools.partial(RaisesIn, error, "step")]
    kind = type(error)
    sync = _raised(vecmode.SyncVectorEnv(fns), "step")
    assert isinstance(sync, kind) and sync.__cause__ is error
    for envs in (
        vecmode.AsyncVectorEnv(fns, context=FORK),
        vecmode.AsyncVectorEnv(fns, context=FORK, shared_memory=False),
    ):
        raised = _raised(envs, "step")
        assert isinstance(raised, SubEnvError) and isinstance(raised, kind)
        assert type(raised).__qualname__ == f"SubEnvError[{kind.__name__}]"
        assert (raised.index, raised.exc_type, raised.message) == (
            1,
            kind.__name__,
            str(error),
        )
        assert raised.__cause__ is None
        assert f"{kind.__name__}: {error}" in raised.worker_traceback


def test_an_async_sub_env_s_error_in_reset_is_its_type_as_gymnasiums_own_test_says():
    """Gymnasium's tests/vector/test_async_vector_env.py::
    test_async_vector_subenv_error, over vecmode's async core."""
    fns = [RaisesIn, functools.partial(RaisesIn, ValueError("Error in reset"), "reset")]
    envs = vecmode.AsyncVectorEnv(fns, context=FORK)
    with pytest.raises(ValueError, match="Error in reset"):
        envs.reset()
    envs.close()


@pytest.mark.parametrize(
    ("core", "in_parent"), [("sync", None), ("async", None), ("async", 1)]
)
def test_where_no_subclass_can_be_made_it_is_a_plain_sub_env_error(core, in_parent):
    """An OSError's instances are built by OSError's own __new__, which a
    subclass of RuntimeError cannot call: a plain SubEnvError, in every core. A
    class defined in a function cannot be pickled: from a worker (or the
    parent's share, which pickles as a worker does) only its name arrives, so a
    plain SubEnvError; the sync core has the exception itself."""

    class LocalFault(ValueError):
        """Pickling cannot name it."""

    for original in (OSError(28, "No space left on device"), LocalFault("local")):
        fns = [RaisesIn, functools.partial(RaisesIn, original, "step")]
        if core == "sync":
            envs = vecmode.SyncVectorEnv(fns)
        else:
            envs = vecmode.AsyncVectorEnv(
                fns, context=FORK, num_workers=1, in_parent=in_parent
            )
        error = _raised(envs, "step")
        name = type(original).__name__
        crossed = core != "sync"
        if isinstance(original, OSError) or crossed:
            assert type(error) is SubEnvError, name
            assert not isinstance(error, type(original)), name
        else:
            assert isinstance(error, LocalFault) and isinstance(error, SubEnvError)
        assert (error.index, error.method, error.exc_type) == (1, "step", name)
        assert error.message == str(original) and error.lost == (0, 1)
        assert "raise self.error" in error.worker_traceback
        assert str(error) == vecmode.errors.sub_env_failed(
            1, "step", name, str(original), error.worker_traceback, (), (0, 1)
        )
        if isinstance(original, OSError):
            assert isinstance(error.__cause__, OSError) and error.__cause__.errno == 28
        elif crossed:
            assert error.__cause__ is None  # only its name crossed
        else:
            assert error.__cause__ is original


class _BareVectorEnv(VectorEnv):
    """A minimal custom vector env: no num_envs until the caller sets one."""

    def reset(self, *, seed=None, options=None):
        return None, options


def test_dict_info_to_list_over_a_minimal_vector_env():
    """Built before the env has num_envs (its repr fails until then); malformed
    infos raise an error that is both an AssertionError (Gymnasium's) and a
    ValueError."""
    with pytest.warns(vecmode.UndeclaredModeWarning, match="_BareVectorEnv object"):
        envs = DictInfoToList(_BareVectorEnv())
    envs.unwrapped.num_envs = 2
    _, infos = envs.reset(
        options={"a": np.array([1, 2]), "_a": np.array([True, False])}
    )
    assert infos == [{"a": 1}, {}]
    for bad in (
        {"a": np.array([1, 2, 3])},
        {"a": np.array([1, 2]), "_a": np.array([True, True, False])},
        {"e": {"a": np.array([1])}},
    ):
        with pytest.raises(InfoLayoutError) as info:
            envs.reset(options=bad)
        assert isinstance(info.value, AssertionError)
        assert isinstance(info.value, ValueError)
    # a list of one entry per sub-env: the length is right, the type is not (it
    # said "has 2 entries where the env has 2 sub-envs")
    with pytest.raises(InfoLayoutError) as info:
        envs.reset(options={"tag": ["a", "b"]})
    assert str(info.value).startswith(
        "info['tag'] is a list of 2 entries, not a NumPy array: batched infos hold "
        "a NumPy array with one entry per sub-env (2 here)"
    ), info.value


def test_errors_are_raised_under_python_O():
    """The checks are real raises, not asserts."""
    import subprocess
    import sys

    code = (
        "import numpy as np, vecmode\n"
        "from tests.helpers import space_fns\n"
        "envs = vecmode.with_autoreset(vecmode.SyncVectorEnv(space_fns('text')), 'NextStep')\n"
        "envs.reset(seed=0)\n"
        "try:\n"
        "    envs.step(('a',))\n"
        "except ValueError as e:\n"
        "    print('raised', type(e).__name__)\n"
    )
    out = subprocess.run(
        [sys.executable, "-O", "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "raised ActionBatchError", out.stderr


def test_spaces_used_here_cover_gymnasium_spaces():
    """A new space type in Gymnasium must get a case above."""
    import gymnasium.spaces as spaces

    covered = {type(space) for space in every_space().values()}
    nested = {type(s) for space in every_space().values() for s in _children(space)}
    public = {
        getattr(spaces, name)
        for name in spaces.__all__
        if isinstance(getattr(spaces, name), type)
        and issubclass(getattr(spaces, name), gym.Space)
        and getattr(spaces, name) is not gym.Space
    }
    assert public <= covered | nested, public - covered - nested


def _children(space):
    if isinstance(space, (Tuple,)):
        return list(space.spaces)
    if isinstance(space, Dict):
        return list(space.spaces.values())
    return []


@pytest.mark.parametrize("core", ["SyncVectorEnv", "AsyncVectorEnv"])
def test_the_constructors_take_gymnasiums_arguments_in_its_order(core):
    import inspect

    ours = inspect.signature(getattr(vecmode, core)).parameters
    theirs = inspect.signature(getattr(gym.vector, core)).parameters
    positional = [n for n, p in ours.items() if p.kind is p.POSITIONAL_OR_KEYWORD]
    assert positional == list(theirs)  # vecmode's own arguments come after, by name
    fns = [lambda: gym.make("CartPole-v1")] * 2
    args = (False, False) if core == "AsyncVectorEnv" else (False,)  # copy=False
    envs = getattr(vecmode, core)(fns, *args)
    assert envs.copy is False
    envs.close()


@pytest.mark.parametrize("vectorization", ["sync", "async"])
def test_make_vecs_policy_reads_the_envs_own_attributes_as_gymnasiums(vectorization):
    ours = vecmode.make_vec("CartPole-v1", 2, vectorization, autoreset_mode="SameStep")
    theirs = gym.make_vec("CartPole-v1", 2, vectorization)
    try:
        names = ["copy", "env_fns", "observation_mode"]
        if vectorization == "async":
            names += ["shared_memory", "context", "daemon"]
        for name in names:
            assert getattr(ours, name) == getattr(ours.unwrapped, name), name
            assert type(getattr(ours, name)) is type(getattr(theirs, name)), name
        with pytest.raises(AttributeError, match="'SameStepAutoreset' object has no"):
            ours.processes  # noqa: B018 (not forwarded: vecmode's workers differ)
    finally:
        ours.close()
        theirs.close()
