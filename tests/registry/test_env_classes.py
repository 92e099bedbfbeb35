"""Declared vector env classes: each declaration of a library's class is
established by running the class, and the conversions it allows are exact.

For each class: after an episode ends, a masked reset of the ended sub-envs (a)
returns the whole batch or only the masked rows, (b) resets only the masked
sub-envs or every one ("ignores"), and (c) clears their pending autoreset or keeps
it (the step after it then ignores the sub-env's action: "keeps-pending"), found
by twin runs whose only difference is that sub-env's action on that step.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import vecmode
from tests.custom_vector_envs import CounterVectorEnv
from tests.helpers import (
    assert_same,
    assert_same_run,
    drive,
    envpool_warnings,
    make_script,
    scheduled_fns,
    space_fns,
    vector_env_metadata_kept,
)
from vecmode import AutoresetMode, IncompatibleModeError
from vecmode.autoreset import GymnasiumFinalObs
from vecmode.env_classes import final_obs_layout, vector_env_declaration
from vecmode.wrappers import FrameStackObservation, RecordEpisodeStatistics


def _until_an_end(envs: Any, actions: Callable[[int], np.ndarray], limit: int = 500):
    """Step until a sub-env's episode ends; the ended mask."""
    for t in range(limit):
        _, _, terminations, truncations, _ = envs.step(actions(t))
        ended = np.logical_or(terminations, truncations)
        if ended.any():
            return ended
    raise AssertionError(f"no episode ended in {limit} steps")


def measure(
    factory: Callable[[], Any],
    actions: Callable[[int], np.ndarray],
    other: np.ndarray,
) -> dict[str, str]:
    """What a masked reset does (see the module doc). ``other``: actions that
    differ from ``actions(10_000)`` for every sub-env, for the twin run."""
    envs = factory()
    try:  # (a) and (b): a masked reset of sub-env 0 alone, mid-episode
        envs.reset(seed=3)
        last = np.array(envs.step(actions(0))[0], copy=True)
        n = len(last)
        mask = np.zeros(n, dtype=bool)
        mask[0] = True
        obs, _ = envs.reset(options={"reset_mask": mask})
    finally:
        envs.close()
    returns = "all" if len(obs) == n else "masked"
    if returns == "all" and not np.array_equal(obs[1:], last[1:]):
        return {"returns": returns, "masked_reset": "ignores"}
    after = []
    for step in (actions(10_000), other):  # (c): twin runs
        envs = factory()
        try:
            envs.reset(seed=3)
            ended = _until_an_end(envs, actions)
            envs.reset(options={"reset_mask": ended.copy()})
            after.append((ended, np.array(envs.step(step)[0], copy=True)))
        finally:
            envs.close()
    (ended, a), (_, b) = after
    i = int(np.flatnonzero(ended)[0])
    # the same observation whatever its action: the action was ignored, a reset step
    pending = "keeps-pending" if np.array_equal(a[i], b[i]) else "clears"
    return {"returns": returns, "masked_reset": pending}


def _cartpole_fns(n: int, steps: int) -> list:
    return [functools.partial(gym.make, "CartPole-v1", max_episode_steps=steps)] * n


def _alternating(n: int) -> Callable[[int], np.ndarray]:
    return lambda t: np.full(n, t % 2, dtype=np.int64)


GYMNASIUM_CASES = {
    "SyncVectorEnv": (
        lambda: gym.vector.SyncVectorEnv(_cartpole_fns(3, 4)),
        "clears",
        "all",
    ),
    "AsyncVectorEnv(shared_memory=True)": (
        lambda: gym.vector.AsyncVectorEnv(_cartpole_fns(3, 4), context="fork"),
        "clears",
        "all",
    ),
    "AsyncVectorEnv(shared_memory=False)": (
        lambda: gym.vector.AsyncVectorEnv(
            _cartpole_fns(3, 4), shared_memory=False, context="fork"
        ),
        "keeps-pending",
        "all",
    ),
    "CartPoleVectorEnv": (
        lambda: gym.make_vec("CartPole-v1", num_envs=3, max_episode_steps=4),
        "ignores",
        "all",
    ),
}


@pytest.mark.parametrize("name", sorted(GYMNASIUM_CASES))
def test_gymnasium_classes_behave_as_declared(name):
    factory, masked_reset, returns = GYMNASIUM_CASES[name]
    measured = measure(factory, _alternating(3), np.ones(3, dtype=np.int64))
    assert measured == {"returns": returns, "masked_reset": masked_reset}
    envs = factory()
    try:
        found = vector_env_declaration(envs)
        assert found is not None and found.masked_reset(envs) == masked_reset
        assert found.reset_returns == returns
    finally:
        envs.close()


# --------------------------------------------------------------------- ALE
ale_py = pytest.importorskip("ale_py") if False else None


def _ale(mode: str = "NextStep", **kwargs: Any):
    from ale_py.vector_env import AtariVectorEnv

    return AtariVectorEnv(
        game="pong",
        num_envs=2,
        autoreset_mode=mode,
        max_num_frames_per_episode=40,
        noop_max=0,
        repeat_action_probability=0.0,
        **kwargs,
    )


@pytest.fixture(autouse=True)
def _shared_metadata():
    """ALE's AtariVectorEnv writes its mode into gymnasium.vector.VectorEnv.metadata,
    a dict every VectorEnv class without its own shares: undo that after a test."""
    with vector_env_metadata_kept():
        yield


def test_an_ale_env_keeps_its_own_mode_when_another_is_built():
    """Building an AtariVectorEnv in SameStep rewrites the metadata of one built
    before in NextStep (they share the dict); vecmode reads each one's own mode."""
    pytest.importorskip("ale_py")
    first = _ale("NextStep")
    second = _ale("SameStep")
    try:
        assert first.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP  # ALE's bug
        assert vecmode.mode_of(first) is AutoresetMode.NEXT_STEP
        assert vecmode.mode_of(second) is AutoresetMode.SAME_STEP
        converted = vecmode.with_autoreset(first, "SameStep")
        assert isinstance(converted.env, vecmode.DisableAutoreset)  # a real conversion

        class Undeclared(gym.vector.VectorEnv):  # (the shared dict is its metadata)
            num_envs = 2

        assert vecmode.mode_of(Undeclared()) is None  # not ALE's last mode
    finally:
        first.close()
        second.close()


def test_ale_behaves_as_declared():
    pytest.importorskip("ale_py")
    measured = measure(
        _ale,
        lambda t: np.full(2, 2 + t % 2, dtype=np.int64),
        np.array([3, 3]),
    )
    assert measured == {"returns": "all", "masked_reset": "clears"}
    envs = _ale("SameStep")
    try:
        found = vector_env_declaration(envs)
        assert found is not None and found.final_obs_layout == "dense"
        assert found.modes == {AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP}
        envs.reset(seed=0)
        ended = _until_an_end(envs, lambda t: np.zeros(2, dtype=np.int64))
        assert ended.all()  # (the frame limit truncates both together)
    finally:
        envs.close()
    with pytest.raises(ValueError):
        _ale("Disabled")  # the one mode it cannot be built in


@pytest.mark.parametrize("mode", ["SameStep", "Disabled"])
def test_ale_converted_equals_its_own_same_step(mode):
    """NextStep ALE converted to SameStep is exactly ALE's own SameStep (final
    observations in Gymnasium's layout); converted to Disabled, exactly what
    SameStep's steps show."""
    pytest.importorskip("ale_py")
    ours = vecmode.with_autoreset(_ale("NextStep"), mode)
    theirs = vecmode.with_autoreset(_ale("SameStep"), "SameStep")
    assert isinstance(theirs, GymnasiumFinalObs)
    assert vecmode.mode_of(ours) is vecmode.as_mode(mode)
    try:
        ours.reset(seed=0)
        theirs.reset(seed=0)
        for t in range(25):
            actions = np.array([t % 4, (t + 1) % 4], dtype=np.int64)
            got = ours.step(actions)
            want = theirs.step(actions)
            ended = np.logical_or(want[2], want[3])
            for a, b in zip(got[1:4], want[1:4], strict=True):
                np.testing.assert_array_equal(a, b)
            if mode == "SameStep":
                np.testing.assert_array_equal(got[0], want[0])
                _same_finals(got[4], want[4])
            elif ended.any():
                # Disabled: the step returns the final observations; the caller resets
                finals = vecmode.modes.final_observations(want[4])
                for i in np.flatnonzero(ended):
                    np.testing.assert_array_equal(got[0][i], finals[1][i])
                obs, _ = ours.reset(options={"reset_mask": ended})
                np.testing.assert_array_equal(obs, want[0])
            else:
                np.testing.assert_array_equal(got[0], want[0])
    finally:
        ours.close()
        theirs.close()


def _same_finals(got: dict, want: dict) -> None:
    a = vecmode.modes.final_observations(got)
    b = vecmode.modes.final_observations(want)
    assert (a is None) == (b is None)
    if a is not None:
        np.testing.assert_array_equal(a[0], b[0])
        for i in np.flatnonzero(a[0]):
            np.testing.assert_array_equal(a[1][i], b[1][i])


def _first_final_observations(envs) -> None:
    """Step ``envs`` (2 ALE sub-envs) until both episodes end, and check that
    step's infos hold both final frames and both episodes' statistics."""
    envs.reset(seed=0)
    for _ in range(12):
        _, _, terms, truncs, infos = envs.step(np.zeros(2, dtype=np.int64))
        if np.logical_or(terms, truncs).any():
            break
    finals = vecmode.modes.final_observations(infos)
    assert finals is not None and finals[0].all()
    assert finals[1][0].shape == (4, 84, 84) and finals[1][0].dtype == np.uint8
    assert infos["_episode"].all()
    envs.close()


def test_wrappers_over_ale_converted_to_same_step_read_its_final_observations():
    """ALE's NextStep env converted to SameStep by the policies: the policy writes
    Gymnasium's layout itself, so the wrappers above accept it."""
    pytest.importorskip("ale_py")
    envs = RecordEpisodeStatistics(vecmode.with_autoreset(_ale(), "SameStep"))
    assert final_obs_layout(envs) == final_obs_layout(envs.env) == "gymnasium"
    _first_final_observations(envs)


def test_wrappers_over_ale_same_step_read_its_final_observations_right():
    """A wrapper that reads final observations is refused over the raw dense
    layout (saying what to do), and right once it is translated at the edge of the
    stack; RecordEpisodeStatistics reads none, and runs over either."""
    pytest.importorskip("ale_py")
    raw = _ale("SameStep")
    with pytest.raises(IncompatibleModeError, match="GymnasiumFinalObs"):
        FrameStackObservation(raw, 2)
    dense = RecordEpisodeStatistics(_ale("SameStep"))
    dense.reset(seed=0)
    steps = 0
    while steps < 12:
        *_, terms, truncs, infos = dense.step(np.zeros(2, dtype=np.int64))
        steps += 1
        if np.logical_or(terms, truncs).any():
            break
    assert infos["_episode"].all() and infos["final_obs"].shape == (2, 4, 84, 84)
    assert infos["episode"]["l"].tolist() == [steps, steps]
    dense.close()
    envs = RecordEpisodeStatistics(vecmode.with_autoreset(raw, "SameStep"))
    assert final_obs_layout(envs) == "gymnasium"
    _first_final_observations(envs)


def test_gymnasium_final_obs_over_gymnasium_s_layout_changes_nothing():
    """Put by hand over an env already in Gymnasium's layout, the translation is the
    identity: every step's result, final infos included, is the env's own (it
    once rebuilt them, losing final_info)."""
    fns = scheduled_fns(3)
    plain = gym.vector.SyncVectorEnv(fns, autoreset_mode="SameStep")
    translated = GymnasiumFinalObs(
        gym.vector.SyncVectorEnv(fns, autoreset_mode="SameStep")
    )
    script = make_script(plain, 30, seed=3)
    expected, got = drive(plain, script, False), drive(translated, script, False)
    steps = [result for kind, result in expected if kind == "step"]
    finals = [r[4]["final_info"] for r in steps if "final_info" in r[4]]
    assert finals and all(finals), "the run has final infos to keep"
    assert_same_run(expected, got)
    plain.close()
    translated.close()


# ------------------------------------------------------------------ EnvPool
def _envpool(num_envs: int = 3):
    envpool = pytest.importorskip("envpool")
    return envpool.make(
        "CartPole-v1",
        env_type="gymnasium",
        num_envs=num_envs,
        seed=0,
        max_episode_steps=4,
    )


@envpool_warnings
def test_envpool_behaves_as_declared():
    pytest.importorskip("envpool")
    measured = measure(_envpool, _alternating(3), np.ones(3, dtype=np.int64))
    assert measured == {"returns": "masked", "masked_reset": "clears"}
    envs = _envpool()
    try:
        found = vector_env_declaration(envs)
        assert found is not None and found.reset_returns == "masked"
    finally:
        envs.close()


@envpool_warnings
def test_check_stack_names_envpool_as_the_package_of_its_env():
    """EnvPool makes its classes at run time (their __module__ is 'abc'): the
    report named the package 'abc'."""
    pytest.importorskip("envpool")
    envs = _envpool()
    try:
        report = str(vecmode.check_stack(envs))
    finally:
        envs.close()
    assert f"{type(envs).__name__} (envpool)" in report, report


@envpool_warnings
@pytest.mark.parametrize("mode", ["NextStep", "SameStep", "Disabled"])
def test_envpool_has_gymnasium_s_spaces_and_masked_resets_in_every_mode(mode):
    """with_autoreset(pool, "NextStep") returned the pool itself (a single env's
    spaces, a masked reset returning the masked rows only) while the other modes
    had Gymnasium's conventions: code switching the mode by name broke. Now every
    mode has them (NextStep through GymnasiumBatch, in the pool's own mode)."""
    pytest.importorskip("envpool")
    envs = vecmode.with_autoreset(_envpool(), mode)
    try:
        assert vecmode.mode_of(envs) is vecmode.as_mode(mode)
        assert envs.observation_space.shape == (3, 4)
        assert envs.action_space == gym.spaces.MultiDiscrete([2, 2, 2])
        obs, _ = envs.reset(seed=0)
        mask = np.array([False, True, False])
        obs2, infos = envs.reset(options={"reset_mask": mask})
        assert obs2.shape == obs.shape
        np.testing.assert_array_equal(obs2[[0, 2]], obs[[0, 2]])
        assert infos["_elapsed_step"].tolist() == mask.tolist()
        # the infos batched as Gymnasium batches them: the pool's dtype, zero
        # outside the mask (not an object array of None)
        assert infos["elapsed_step"].dtype == np.int32, infos
        assert infos["elapsed_step"][[0, 2]].tolist() == [0, 0]
        # after a step too: the rows not reset are the step's observations
        stepped = envs.step(np.zeros(3, dtype=np.int64))[0]
        obs4, _ = envs.reset(options={"reset_mask": mask})
        np.testing.assert_array_equal(obs4[[0, 2]], stepped[[0, 2]])
        assert not np.array_equal(obs4[1], stepped[1])
        # an all-False mask: nothing reset, the last observations again
        obs2 = obs4
        obs3, infos = envs.reset(options={"reset_mask": np.zeros(3, dtype=bool)})
        assert infos == {} and np.array_equal(obs3, obs2)
    finally:
        envs.close()
    if mode == "NextStep":
        assert isinstance(envs, vecmode.autoreset.GymnasiumBatch)


@envpool_warnings
@pytest.mark.parametrize("mode", ["SameStep", "Disabled"])
def test_envpool_converted_behaves_as_the_mode_it_declares(mode):
    """check_vector_env proves the converted env against the mode's rules (masked
    resets included), and the whole batch comes back from a masked reset."""
    pytest.importorskip("envpool")
    from vecmode.testing import check_vector_env

    report = check_vector_env(lambda: vecmode.with_autoreset(_envpool(), mode))
    assert report.mode is vecmode.as_mode(mode)
    envs = vecmode.with_autoreset(_envpool(), mode)
    obs, _ = envs.reset(seed=0)
    obs2, infos = envs.reset(options={"reset_mask": np.array([False, True, False])})
    assert obs2.shape == obs.shape
    np.testing.assert_array_equal(obs2[[0, 2]], obs[[0, 2]])
    assert infos["_elapsed_step"].tolist() == [False, True, False]
    envs.close()


@envpool_warnings
def test_envpool_converted_to_same_step_keeps_the_running_sub_envs_step_infos():
    """EnvPool's step infos have no masks, its masked reset's have: the sub-envs
    that did not end got the reset's blanks (env_id 0, elapsed_step 0)."""
    pytest.importorskip("envpool")
    own, envs = _envpool(2), vecmode.with_autoreset(_envpool(2), "SameStep")
    truth: dict = {}
    for env in (own, envs):  # episodes of 4 steps, sub-env 1's a step behind
        env.reset(seed=0)
        env.step(np.zeros(2, dtype=np.int64))
        env.reset(options={"reset_mask": np.array([False, True])})
        for _ in range(3):
            *_, terminations, truncations, infos = env.step(np.zeros(2, dtype=np.int64))
        truth = infos if env is own else truth
    assert (terminations | truncations).tolist() == [True, False]
    assert infos["env_id"].tolist() == [0, 1]
    assert infos["elapsed_step"].tolist() == [0, truth["elapsed_step"][1]]
    assert infos["final_info"]["elapsed_step"][0] == truth["elapsed_step"][0] == 4
    own.close()
    envs.close()


@envpool_warnings
@pytest.mark.parametrize(
    "build, says",
    [
        (lambda envpool: envpool.make_gymnasium("Breakout-v5", num_envs=2,
                                                episodic_life=True), "with episodic_life=True"),
        (lambda envpool: envpool.make_gymnasium("CartPole-v1", num_envs=4,
                                                batch_size=2), "async"),
        (lambda _: pytest.importorskip("ale_py.vector_env").AtariVectorEnv(
            "pong", num_envs=4, batch_size=2), "async"),
    ],
    ids=["envpool episodic_life", "envpool async", "ALE async"],
)  # fmt: skip
def test_pools_whose_masked_reset_is_not_their_own_reset_are_not_converted(build, says):
    """An async pool returns some sub-envs per call, and EnvPool's own reset
    after a lost life (episodic_life=True) goes on with the game: a masked reset
    restarted it (5 lives at every episode's start)."""
    envs = build(pytest.importorskip("envpool"))
    for mode in ("SameStep", "Disabled"):
        with pytest.raises(vecmode.IncompatibleModeError, match=says):
            vecmode.with_autoreset(envs, mode)
    if says == "async":  # (an episodic_life pool's own run is read)
        with pytest.raises(vecmode.IncompatibleModeError, match="batch_size=2 < num"):
            vecmode.TransitionCollector(envs)  # (it crashed EnvPool's process)
        # vecmode's layers take a row per sub-env (they raised at the first call,
        # or EnvPool's process aborted on a step with no env_id)
        rows = "RecordEpisodeStatistics cannot track each sub-env's episodes"
        with pytest.raises(vecmode.IncompatibleModeError, match=rows):
            vecmode.wrappers.RecordEpisodeStatistics(envs)
        with pytest.raises(vecmode.IncompatibleModeError, match="cannot run over"):
            vecmode.wrappers.TransformObservation(envs, lambda obs: obs)
        report = vecmode.check_stack(gym.wrappers.vector.NormalizeReward(envs))
        assert str(report).startswith(
            "NOT OK: layer 1 NormalizeReward is known-wrong over"
        )
        assert "NormalizeReward cannot track" in report.rows[1].note
    assert vecmode.with_autoreset(envs, "NextStep").unwrapped is envs  # its own mode
    envs.close()


# ---------------------------------------------------------- refusals, per class
#: Classes whose resets vecmode refuses to build on, and what their refusals say.
_MASKS_WRONG = [
    (
        # forkserver: a child forked from this test process, which may hold
        # the threads of Ray, torch or jax by now, can die at start (EOFError)
        lambda: gym.vector.AsyncVectorEnv(
            scheduled_fns(2), shared_memory=False, context="forkserver"
        ),
        [
            "AsyncVectorEnv(shared_memory=False)",
            "shared_memory=True",
            "vectorization_mode='async'",
        ],
    ),
    (
        lambda: gym.make_vec("CartPole-v1", num_envs=2),
        [
            "CartPoleVectorEnv resets every sub-env whatever the mask",
            "vectorization_mode='sync'",
        ],
    ),
]


@pytest.mark.parametrize(("factory", "says"), _MASKS_WRONG)
@pytest.mark.parametrize("mode", ["SameStep", "Disabled"])
def test_refusals_name_the_class_the_reason_and_the_remedy(factory, says, mode):
    """Asked for SameStep, the message speaks of SameStep (not of the
    DisableAutoreset on the way), names the real class and its real reason, and
    a remedy that works for that class."""
    envs = factory()
    try:
        with pytest.raises(IncompatibleModeError) as info:
            vecmode.with_autoreset(envs, mode)
        message = str(info.value)
        for part in says:
            assert part in message, message
        if mode == "SameStep":
            assert message.startswith(
                f"with_autoreset cannot turn {type(envs.unwrapped).__name__} "
                "(NextStep) into SameStep"
            ), message
        assert "Build the env in DISABLED mode itself" not in message
    finally:
        envs.close()


@pytest.mark.parametrize(("factory", "says"), _MASKS_WRONG)
def test_what_such_a_class_gets_wrong_is_refused_before_it_runs(factory, says):
    """CartPoleVectorEnv resets every sub-env whatever the mask: a masked reset
    through a vecmode layer or the collector is refused (the layers above took
    the others as not reset); the env steps on. AsyncVectorEnv(shared_memory=
    False) keeps NextStep's pending autoresets across any reset: what tracks
    episodes is refused over it (a reset step was read as a real transition)."""
    masked = "CartPoleVectorEnv" in says[0]
    for layer in (
        vecmode.wrappers.RecordEpisodeStatistics,
        vecmode.TransitionCollector,
    ):
        envs = factory()
        try:
            if not masked:
                with pytest.raises(IncompatibleModeError) as info:
                    layer(envs)
            else:
                envs = layer(envs)
                envs.reset(seed=0)
                envs.action_space.seed(0)
                envs.step(envs.action_space.sample())
                if layer is vecmode.TransitionCollector:  # (a no-op, over any env)
                    envs.reset(options={"reset_mask": np.array([False, False])})
                with pytest.raises(IncompatibleModeError) as info:
                    envs.reset(options={"reset_mask": np.array([True, False])})
                envs.step(envs.action_space.sample())
            said = "cannot take options['reset_mask']" if masked else "track each"
            for part in [said, *says]:
                assert part in str(info.value), str(info.value)
        finally:
            envs.close()


def _ale_if_installed(mode: str) -> Any:
    pytest.importorskip("ale_py")
    return _ale(mode)


@pytest.mark.parametrize(
    ("build", "target", "remedy"),
    [
        # ALE cannot be built in Disabled, but its NextStep converts exactly
        (_ale_if_installed, "Disabled", "NextStep"),
        (
            lambda mode: gym.vector.SyncVectorEnv(
                scheduled_fns(2), autoreset_mode=mode
            ),
            "Disabled",
            "Disabled",
        ),
        (
            lambda mode: gym.vector.SyncVectorEnv(
                scheduled_fns(2), autoreset_mode=mode
            ),
            "NextStep",
            "NextStep",
        ),
    ],
)
def test_a_same_step_env_is_told_how_its_class_gets_there(build, target, remedy):
    """Nothing converts SameStep to another mode; when the env's declared class
    can be built in a mode that gets there, the refusal says so (it used to say
    "Build the env in DISABLED mode itself", which ALE refuses), and the advice
    works."""
    envs = build("SameStep")
    try:
        with pytest.raises(IncompatibleModeError) as info:
            vecmode.with_autoreset(envs, target)
    finally:
        envs.close()
    name = type(envs).__name__
    message = str(info.value)
    assert f"Build {name} with autoreset_mode={remedy!r} instead" in message, message
    assert "cannot be recovered exactly" in message, message  # the reason stays
    assert "Build the env in DISABLED mode itself" not in message
    envs = build(remedy)  # the advice, followed
    try:
        converted = vecmode.with_autoreset(envs, target)
        assert vecmode.mode_of(converted) is AutoresetMode(target)
    finally:
        envs.close()


def test_an_undeclared_class_is_refused_with_how_to_declare_it():
    class MyVecEnv(gym.vector.SyncVectorEnv):
        pass

    vecmode.register_vector_env(MyVecEnv, masked_reset="ignores")  # measured wrong
    vecmode.unregister_vector_env(MyVecEnv)
    envs = MyVecEnv(scheduled_fns(2))
    # it inherits Gymnasium's SyncVectorEnv declaration: converted
    assert vecmode.mode_of(vecmode.with_autoreset(envs, "Disabled")) is (
        AutoresetMode.DISABLED
    )

    class Foreign(gym.vector.VectorEnv):
        metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP}
        num_envs = 2

    with pytest.raises(IncompatibleModeError) as info:
        vecmode.with_autoreset(Foreign(), "Disabled")
    assert "vecmode.register_vector_env(Foreign, masked_reset='clears')" in str(
        info.value
    )
    vecmode.register_vector_env(Foreign, masked_reset="clears")
    try:
        assert vecmode.autoreset.honours_reset_mask(Foreign())
    finally:
        vecmode.unregister_vector_env(Foreign)
    envs.close()


@pytest.mark.parametrize(
    ("masked_reset", "what"),
    [
        ("ignores", "ignores the mask and resets every sub-env"),
        (
            "keeps-pending",
            "keeps a masked sub-env's pending autoreset, so the next step would "
            "reset it once more",
        ),
    ],
)
def test_a_declaration_without_why_still_says_why_it_is_refused(masked_reset, what):
    """register_vector_env's ``why`` defaults to "": the refusal read "... goes
    through DisableAutoreset, and  Build the env ...", saying nothing."""

    class MyVec(gym.vector.SyncVectorEnv):
        pass

    vecmode.register_vector_env(MyVec, masked_reset=masked_reset)
    envs = MyVec(scheduled_fns(2))
    try:
        with pytest.raises(IncompatibleModeError) as info:
            vecmode.with_autoreset(envs, "Disabled")
        message = str(info.value)
        assert (
            f"MyVec's reset(options={{'reset_mask': mask}}) {what} (declared "
            f"masked_reset={masked_reset!r} with vecmode.register_vector_env)."
        ) in message, message
        assert "and  " not in message
    finally:
        vecmode.unregister_vector_env(MyVec)
        envs.close()


def test_register_vector_env_checks_its_arguments():
    with pytest.raises(ValueError, match="masked_reset must be one of"):
        vecmode.register_vector_env("x:Y", masked_reset="sometimes")
    with pytest.raises(ValueError, match="reset_returns must be one of"):
        vecmode.register_vector_env("x:Y", masked_reset="clears", reset_returns="no")
    with pytest.raises(ValueError, match="not an autoreset mode"):
        vecmode.register_vector_env("x:Y", masked_reset="clears", modes=["Later"])
    # what register() checks, register_vector_env now checks too (it accepted a
    # wrapper, a path without a colon and no modes; 42 was an AttributeError)
    with pytest.raises(ValueError, match="needs at least one mode"):
        vecmode.register_vector_env("x:Y", masked_reset="clears", modes=[])
    with pytest.raises(ValueError, match=r"'x\.Y' is not a class path; write "):
        vecmode.register_vector_env("x.Y", masked_reset="clears")
    for not_a_class in (42, gym.Wrapper, gym.vector.VectorWrapper):
        with pytest.raises(TypeError, match="takes a vector env class"):
            vecmode.register_vector_env(not_a_class, masked_reset="clears")


def test_conversions_over_gymnasium_envs_still_equal_gymnasium():
    """Over Gymnasium's SyncVectorEnv in NextStep, converted to SameStep: as
    Gymnasium's own SameStep env (the declarations changed nothing there)."""
    reference = gym.vector.SyncVectorEnv(scheduled_fns(3), autoreset_mode="SameStep")
    ours = vecmode.with_autoreset(
        gym.vector.SyncVectorEnv(scheduled_fns(3)), "SameStep"
    )
    script = make_script(reference, 20, seed=1)
    assert_same_run(drive(reference, script, False), drive(ours, script, False))
    reference.close()
    ours.close()


def _masked_rows(batch: Any, mask: np.ndarray) -> Any:
    """The rows of ``mask`` of a batch (of a Dict or Tuple space: of each part)."""
    if isinstance(batch, dict):
        return {key: _masked_rows(value, mask) for key, value in batch.items()}
    if isinstance(batch, tuple):
        return tuple(_masked_rows(value, mask) for value in batch)
    return batch[mask]


class _MaskedRowsVecEnv(gym.vector.SyncVectorEnv):
    """Gymnasium's sync env whose masked reset returns only the masked rows (as
    EnvPool's does), with Gymnasium's batched spaces; its infos too, unmasked."""

    def reset(self, *, seed=None, options=None):
        mask = None if options is None else options.get("reset_mask")
        obs, infos = super().reset(seed=seed, options=options)
        if mask is None:
            return obs, infos
        rows = {k: v[mask] for k, v in infos.items() if not k.startswith("_")}
        return _masked_rows(obs, mask), rows


def test_a_class_declaring_masked_rows_gets_the_whole_batch_back():
    """Declared ``reset_returns="masked"`` with batched spaces: wrapped in
    GymnasiumBatch all the same (not only for EnvPool's single-env spaces), so a
    masked reset returns the whole batch, the other rows kept."""
    vecmode.register_vector_env(
        _MaskedRowsVecEnv, masked_reset="clears", reset_returns="masked"
    )
    try:
        envs = vecmode.with_autoreset(_MaskedRowsVecEnv(scheduled_fns(3)), "NextStep")
        assert isinstance(envs, vecmode.autoreset.GymnasiumBatch)
        obs, _ = envs.reset(seed=0)
        stepped = envs.step(np.zeros(3, dtype=np.int64))[0]
        mask = np.array([False, True, False])
        again, _ = envs.reset(options={"reset_mask": mask})
        assert again.shape == obs.shape
        np.testing.assert_array_equal(again[[0, 2]], stepped[[0, 2]])
        envs.close()
    finally:
        vecmode.unregister_vector_env(_MaskedRowsVecEnv)


@pytest.mark.parametrize("space", ["dict", "tuple"])
def test_masked_rows_of_dict_and_tuple_observations_go_into_the_whole_batch(space):
    """The masked rows of each key (Dict) and part (Tuple) go into the batch the
    step left; the reset is Gymnasium's own masked reset of the whole batch,
    infos included (spread over the rows, with their masks)."""
    vecmode.register_vector_env(
        _MaskedRowsVecEnv, masked_reset="clears", reset_returns="masked"
    )
    try:
        envs = vecmode.with_autoreset(_MaskedRowsVecEnv(space_fns(space)), "NextStep")
        reference = gym.vector.SyncVectorEnv(space_fns(space))
        mask = np.array([True, False, True])
        runs = []
        for run in (reference, envs):
            run.reset(seed=0)
            run.action_space.seed(0)
            stepped = run.step(run.action_space.sample())[0]
            runs.append((stepped, run.reset(options={"reset_mask": mask.copy()})))
            run.close()
        (stepped, want), (_, got) = runs
        assert_same(want, got)
        assert got[1]["_episode"].tolist() == [True, False, True]
        for key in ["a", "b"] if space == "dict" else [0, 1]:
            assert_same(stepped[key][1], got[0][key][1])  # sub-env 1 as stepped
    finally:
        vecmode.unregister_vector_env(_MaskedRowsVecEnv)


def test_a_disabled_class_declared_to_ignore_the_mask_gets_no_same_step_policy():
    """SameStep over a DISABLED env resets the ended sub-envs with a mask: over a
    class whose masked reset resets every sub-env, the others' episodes would
    restart unflagged, so the policy is refused, saying why."""

    class ResetsAll(CounterVectorEnv):
        pass

    vecmode.register_vector_env(ResetsAll, masked_reset="ignores")
    try:
        envs = ResetsAll(2, AutoresetMode.DISABLED)
        for build in (vecmode.SameStepAutoreset, vecmode.DisableAutoreset):
            with pytest.raises(IncompatibleModeError, match="resets every sub-env"):
                build(envs)
        with pytest.raises(IncompatibleModeError, match="in the mode you need"):
            vecmode.with_autoreset(envs, "SameStep")
        assert vecmode.with_autoreset(envs, "Disabled") is envs  # as it is
        vecmode.SameStepAutoreset(CounterVectorEnv(2, AutoresetMode.DISABLED))
    finally:
        vecmode.unregister_vector_env(ResetsAll)
