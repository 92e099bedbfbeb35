"""vecmode.RayVectorEnv on a local Ray: fidelity, one remote call per busy actor,
Ray as the user runs it, actor options, the docs' examples (the faults:
test_ray_faults.py).

Ray starts slowly (10-20 s here) and each actor is a new Python process (1-3 s
on a loaded 2-core machine), so each module shares ONE Ray session and reuses a
few envs across tests: between runs, their sub-envs' counters are put back with
``set_attr`` (:func:`restart`), which the tests of ``set_attr`` itself check. The
multi-node test is ``tests/cores/test_ray_cluster.py``.
"""

from __future__ import annotations

import contextlib
import doctest
import functools
import json
import os
import pickle
import re
import subprocess
import sys
import threading
import time
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.error import (
    AlreadyPendingCallError,
    NoAsyncCallError,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import vecmode
from tests.cores import ray_support
from tests.cores.ray_support import (
    MODES,
    RESOURCE,
    RESOURCE_TOTAL,
    ROOT,
    assert_no_actor_left,
    live_actors,
    ray,
    restart,
    writeable_arrays,
)
from tests.helpers import (
    assert_same,
    assert_same_run,
    drive,
    make_script,
    scenarios,
    scheduled_fns,
    space_fns,
)
from vecmode import (
    AutoresetMode,
    IncompatibleModeError,
    RayVectorEnv,
)
from vecmode.core import Command

pytestmark = pytest.mark.slow
ray_session = ray_support.ray_session  # autouse: one Ray for the module
shared = ray_support.shared


# ------------------------------------------------------------------- fidelity
#: name -> (env_fns factory, num_actors): Box, Dict, Discrete, Text, Graph and
#: Sequence spaces, as observations and actions (arrays, dicts and tuples of
#: samples, split between actors); infos nested and on some steps only.
SPACES = {
    "scheduled-dict": (functools.partial(scheduled_fns, 5, obs_type="dict"), 2),
    "scheduled-box": (functools.partial(scheduled_fns, 5, obs_type="box"), 2),
    "discrete": (functools.partial(space_fns, "discrete"), 1),
    "text": (functools.partial(space_fns, "text"), 1),
    "dict-of-graph-and-text": (
        functools.partial(space_fns, "dict-of-graph-and-text"),
        2,
    ),
    "sequence": (functools.partial(space_fns, "sequence"), 1),
}


def shared_core(shared, name: str) -> RayVectorEnv:
    fns, num_actors = SPACES[name]
    return shared(name, lambda: RayVectorEnv(fns(), num_actors=num_actors))


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
@pytest.mark.parametrize("name", sorted(SPACES))
def test_same_as_the_sync_core(shared, name, mode):
    """Every mode (through with_autoreset), masked resets with options, seeds."""
    core = shared_core(shared, name)
    fns, _ = SPACES[name]
    restart(core, fns())
    sync = vecmode.with_autoreset(vecmode.SyncVectorEnv(fns()), mode)
    ours = vecmode.with_autoreset(core, mode)
    script = make_script(sync, 24, seed=7, mask_prob=0.4)
    script.options = {"tag": 3} if name.startswith("scheduled") else None
    disabled = mode is AutoresetMode.DISABLED
    expected, got = drive(sync, script, disabled), drive(ours, script, disabled)
    sync.close()
    assert_same_run(expected, got)
    for n, (_, result) in enumerate(got):  # nothing read-only reaches the caller
        assert writeable_arrays(result) == [], f"call {n}"


def _scaled_pendulum(k: float) -> gym.Env:
    """Pendulum whose observations (and their Box's bounds) are scaled by ``k``."""
    space = gym.spaces.Box(-8.0 * k, 8.0 * k, (3,), np.float32)
    return gym.wrappers.TransformObservation(
        gym.make("Pendulum-v1"), lambda obs: obs * np.float32(k), space
    )


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_observation_mode_different_as_the_sync_core(mode):
    """Sub-envs of different Box bounds ("different"): still a Box batch, sent as
    raw rows; the same as the sync core's, masked resets included."""
    fns = [functools.partial(_scaled_pendulum, k) for k in (1.0, 2.0, 3.0)]
    sync = vecmode.with_autoreset(
        vecmode.SyncVectorEnv(fns, observation_mode="different"), mode
    )
    core = RayVectorEnv(fns, num_actors=2, observation_mode="different")
    with vecmode.with_autoreset(core, mode) as ours:
        assert ours.observation_space == sync.observation_space
        script = make_script(sync, 12, seed=3, mask_prob=0.4)
        disabled = mode is AutoresetMode.DISABLED
        expected, got = drive(sync, script, disabled), drive(ours, script, disabled)
    sync.close()
    assert_same_run(expected, got)


def test_probe_finds_the_mode_it_declares():
    """vecmode.probe_mode on throwaway Ray cores (over two actors) finds the mode
    the class declares, Disabled: the proof behind its "verified" evidence
    (vecmode._evidence.VERIFIED_ENVS)."""
    result = vecmode.probe_mode(
        lambda: RayVectorEnv(scheduled_fns(3, obs_type="box"), num_actors=2)
    )
    assert result.mode is AutoresetMode.DISABLED and result.agrees, str(result)
    core = RayVectorEnv(scheduled_fns(2, obs_type="box"), num_actors=1)
    try:
        assert vecmode.check_stack(core).rows[0].evidence.value == "verified"
    finally:
        core.close()


@settings(max_examples=25)
@given(scenarios(num_envs=st.just(5), obs_types=("dict", "box"), max_steps=20))
def test_same_as_the_sync_core_property(shared, scenario):
    """Random episode lengths, endings, actions, masks and options, on 5 sub-envs
    over 2 actors (3 + 2)."""
    core = shared_core(shared, f"scheduled-{scenario['obs_type']}")
    restart(
        core,
        SPACES["scheduled-box"][0](),
        lengths=scenario["lengths"],
        truncate=scenario["truncate"],
    )
    fns = scheduled_fns(
        5, scenario["lengths"], scenario["truncate"], scenario["obs_type"]
    )
    mode = scenario["mode"]
    sync = vecmode.with_autoreset(vecmode.SyncVectorEnv(fns), mode)
    ours = vecmode.with_autoreset(core, mode)
    disabled = mode is AutoresetMode.DISABLED
    try:
        expected = drive(sync, scenario["script"], disabled)
        got = drive(ours, scenario["script"], disabled)
    finally:
        sync.close()
    assert_same_run(expected, got)


class _Spy:
    """An actor handle that logs the messages sent to it."""

    def __init__(self, actor: Any, log: list, index: int) -> None:
        self._actor, self._log, self._index = actor, log, index

    @property
    def handle(self) -> Any:
        actor, log, index = self._actor, self._log, self._index

        class Method:
            @staticmethod
            def remote(message):
                log.append((index, pickle.loads(message)[0]))
                return actor.handle.remote(message)

        return Method

    def __getattr__(self, name: str) -> Any:
        return getattr(self._actor, name)


def test_one_remote_call_per_busy_actor_and_idle_actors_are_not_called(shared):
    core = shared_core(shared, "scheduled-box")  # sub-envs 0-2 and 3-4
    restart(
        core,
        scheduled_fns(5),
        lengths=[(5,), (5,), (5,), (5,), (1,)],
        truncate=[(False,)] * 5,
    )
    log: list = []
    actors = core._actors
    core._actors = [_Spy(actor, log, a) for a, actor in enumerate(actors)]
    try:
        obs0, _ = core.reset(seed=0)
        assert len(log) == 2
        log.clear()
        obs, rewards, terminations, _, infos, ended, finals = core.execute(
            [Command.KEEP] * 3 + [Command.STEP, Command.STEP_THEN_RESET],
            np.full(5, 2),
        )
        assert log == [(1, 0)], "only actor 1 has work: one message, to it"
        assert rewards.tolist() == [0, 0, 0, 2.53, 2.54]
        assert terminations.tolist() == [False] * 4 + [True]
        assert ended == [4] and [i for i, _, _ in finals] == [4]
        np.testing.assert_array_equal(obs[:3], obs0[:3])  # KEEP: the last ones
        # sub-env 4's info is its reset's (it was reset within the call)
        assert infos["_step"].tolist() == [False, False, False, True, False]
        assert infos["_episode_index"].tolist() == [False, False, False, False, True]
        log.clear()
        _, infos = core.reset(options={"reset_mask": np.array([1, 0, 0, 0, 0], bool)})
        assert log == [(0, 0)]
        assert infos["_episode_index"].tolist() == [True, False, False, False, False]
        log.clear()
        _, infos = core.reset(options={"reset_mask": np.zeros(5, bool)})
        assert log == [] and infos == {}
        core.step(np.zeros(5, dtype=int))
        assert log == [(0, 0), (1, 0)]
    finally:
        core._actors = actors


def test_a_box_batch_s_observations_follow_the_answer_as_raw_rows():
    """An actor of a Box batch answers a step or reset with ROWS, its slice's
    rows following the pickle; anything else (a call, or a batch that is not a
    Box) is a plain pickled answer; the driver copies only the rows of the
    sub-envs that ran."""
    from vecmode.ray_vector_env import SliceActor
    from vecmode.worker import CALL, EXECUTE, OK, ROWS, SliceRows, SliceSpec

    fns = [lambda: gym.make("CartPole-v1")] * 2
    single = gym.make("CartPole-v1")
    spec = SliceSpec(5, single.observation_space, single.action_space, "same")
    reset = pickle.dumps((EXECUTE, [int(Command.RESET)] * 2, None, [0, 1], None))
    actor = SliceActor(3, fns, spec, ((4,), np.float32))
    data = actor.handle(reset)
    answer = pickle.loads(data)
    assert answer[0] == ROWS and answer[4] is None
    rows = np.frombuffer(data, np.float32, offset=len(data) - 32).reshape(2, 4)
    first = [gym.make("CartPole-v1").reset(seed=seed)[0] for seed in (0, 1)]
    np.testing.assert_array_equal(rows, first)
    assert pickle.loads(actor.handle(pickle.dumps((CALL, "reset", (), {}))))[0] == OK
    pickled = SliceActor(3, fns, spec)
    answer = pickle.loads(pickled.handle(reset))
    assert answer[0] == OK and [i for i, _ in answer[4]] == [3, 4]

    batch = np.zeros((5, 4), np.float32)
    new = SliceRows(3, np.ones((2, 4), np.float32))
    keep, step = int(Command.KEEP), int(Command.STEP)
    new.copy_into(batch, [step] * 3 + [keep, step])
    assert batch[:, 0].tolist() == [0, 0, 0, 0, 1], "a KEEP sub-env's row is kept"
    new.copy_into(batch, [keep] * 3 + [step, step])
    assert batch[:, 0].tolist() == [0, 0, 0, 1, 1]


def test_call_get_attr_set_attr_render_and_seeds_as_the_sync_core(shared):
    core = shared_core(shared, "scheduled-box")
    restart(core, scheduled_fns(5))
    sync = vecmode.SyncVectorEnv(scheduled_fns(5))
    for envs in (core, sync):
        envs.reset(seed=11)
    assert core.get_attr("index") == sync.get_attr("index") == (0, 1, 2, 3, 4)
    assert core.np_random_seed == sync.np_random_seed
    assert core.render() == sync.render() == (None,) * 5
    frames = core.call("_obs")  # arrays made in the actors
    assert_same(frames, sync.call("_obs"))
    assert writeable_arrays(frames) == []
    assert core.call("get_wrapper_attr", "lengths") == sync.call(
        "get_wrapper_attr", "lengths"
    )
    core.set_attr("t", [9, 8, 7, 6, 5])
    assert core.get_attr("t") == (9, 8, 7, 6, 5)
    core.set_attr("t", 0)
    assert core.get_attr("t") == (0,) * 5
    with pytest.raises(ValueError, match="one per sub-env"):
        core.set_attr("t", [1, 2])
    with pytest.raises(ValueError, match=r"use the env's own step\(\)"):
        core.call("step", 0)
    assert callable(sync.get_attr("_obs")[0])  # bound to the sub-env itself
    with pytest.raises(vecmode.SubEnvError, match="'_obs' is a method: get_attr would"):
        core.get_attr("_obs")  # bound to a copy: refused
    # each: where the sub-envs run, in the order asked (twice: run twice)
    bump = lambda env, k: setattr(env, "t", env.t + k) or (env.index, env.t)  # noqa: E731
    for envs in (core, sync):
        envs.set_attr("t", 0)
    asked = [4, 0, 4, 2]
    assert core.each(bump, 3, indices=asked) == sync.each(bump, 3, indices=asked)
    assert core.each(bump, 1, indices=asked)[2] == sync.each(bump, 1, indices=asked)[2]
    assert core.get_attr("t") == sync.get_attr("t") == (4, 0, 4, 0, 8)
    sync.close()


def test_a_message_that_does_not_pickle_is_refused_and_the_env_goes_on(shared):
    """As in the async core: nothing is sent, the env is unchanged."""

    core = shared_core(shared, "scheduled-box")
    restart(core, scheduled_fns(5))
    core.reset(seed=0)
    with pytest.raises(vecmode.errors.NotPicklableError, match="cannot be pickled"):
        core.reset(options={"lock": threading.Lock()})
    with pytest.raises(vecmode.errors.NotPicklableError):
        core.set_attr("t", threading.Lock())
    assert not core.awaiting_reset.any()
    assert core.step(np.zeros(5, dtype=int))[0].shape[0] == 5


def test_the_split_api_through_a_policy(shared):
    core = shared_core(shared, "scheduled-box")
    restart(core, scheduled_fns(5))
    sync = vecmode.with_autoreset(vecmode.SyncVectorEnv(scheduled_fns(5)), "SameStep")
    ours = vecmode.with_autoreset(core, "SameStep")
    ours.reset_async(seed=4)
    assert_same(sync.reset(seed=4), ours.reset_wait(timeout=10))
    for t in range(6):
        actions = np.full(5, t % 3)
        ours.step_async(actions)
        with pytest.raises(AlreadyPendingCallError):
            ours.step_async(actions)
        assert_same(sync.step(actions), ours.step_wait())
    with pytest.raises(NoAsyncCallError):
        ours.step_wait()
    core.call_async("get_wrapper_attr", "t")
    assert core.call_wait(timeout=10) == sync.call("get_wrapper_attr", "t")
    core.execute_async([Command.RESET] * 5, seed=2)
    assert_same(sync.reset(seed=2)[0], core.execute_wait().observations)
    sync.close()


def test_make_vec_builds_it_records_it_and_never_calls_ray_init(monkeypatch):
    """vectorization_mode="ray" (a string: Gymnasium's VectorizeMode has no such
    member); the default num_actors is one per CPU of the cluster (2 here); with
    Ray initialised, vecmode never calls ray.init; copy=False gives the buffer."""

    def refuse(*args, **kwargs):
        raise AssertionError("vecmode called ray.init with Ray initialised")

    monkeypatch.setattr(ray, "init", refuse)
    before = live_actors()
    envs = vecmode.make_vec(
        "CartPole-v1",
        num_envs=3,
        vectorization_mode="ray",
        autoreset_mode="SameStep",
        vector_kwargs={"copy": False},
        max_episode_steps=4,
    )
    sync = vecmode.make_vec(
        "CartPole-v1",
        num_envs=3,
        vectorization_mode="sync",
        autoreset_mode="SameStep",
        max_episode_steps=4,
    )
    core = envs.unwrapped
    assert isinstance(core, RayVectorEnv) and core.num_actors == 2
    assert repr(envs) == (
        "<SameStepAutoreset, RayVectorEnv(CartPole-v1, num_envs=3, num_actors=2)>"
    )
    assert envs.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
    assert core.spec.kwargs["vectorization_mode"] == "ray"
    obs, _ = envs.reset(seed=5)
    assert obs is core._observations  # copy=False
    assert_same(sync.reset(seed=5)[0], obs.copy())
    for _ in range(6):
        result = envs.step(np.array([1, 0, 1]))
        assert result[0] is core._observations
        assert_same(sync.step(np.array([1, 0, 1])), (result[0].copy(), *result[1:]))
    again = vecmode.make_vec(envs.spec)  # made again from its spec
    assert isinstance(again.unwrapped, RayVectorEnv)
    assert again.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
    for made in (envs, again, sync):
        made.close()
    assert_no_actor_left(envs, before)
    assert_no_actor_left(again, before)


def test_actor_options_reach_ray():
    """num_cpus, custom resources and a scheduling strategy, per actor; the
    resources are Ray's again after close()."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    node = ray.get_runtime_context().get_node_id()
    pinned = NodeAffinitySchedulingStrategy(node, soft=False)
    envs = RayVectorEnv(
        scheduled_fns(3),
        envs_per_actor=2,  # 2 + 1
        actor_options=[
            {"num_cpus": 1, "resources": {RESOURCE: 1}, "scheduling_strategy": pinned},
            {"num_cpus": 1, "resources": {RESOURCE: 2}},
        ],
    )
    assert envs.num_actors == 2 and envs.slices == [(0, 2), (2, 3)]
    assert envs.nodes[0] == node
    assert _available(RESOURCE, RESOURCE_TOTAL - 3) and _available("CPU", 0.0)
    envs.reset(seed=0)
    envs.close()
    assert _available(RESOURCE, RESOURCE_TOTAL) and _available("CPU", 2.0)


def _available(resource: str, amount: float, within: float = 10.0) -> bool:
    """Whether Ray reports ``amount`` of ``resource`` available (it updates its
    view every few hundred ms)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if ray.available_resources().get(resource, 0.0) == amount:
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize(
    ("kwargs", "error", "text"),
    [
        ({"num_actors": 0}, ValueError, "num_actors must be None or an int >= 1"),
        ({"envs_per_actor": True}, ValueError, "envs_per_actor must be"),
        ({"num_actors": 1, "envs_per_actor": 2}, ValueError, "not both"),
        ({"actor_options": {"max_restarts": 2}}, ValueError, "silently lost"),
        ({"actor_options": {"max_task_retries": 1}}, ValueError, "twice"),
        ({"actor_options": {"max_concurrency": 4}}, ValueError, "one call at a time"),
        ({"actor_options": {"lifetime": "detached"}}, ValueError, "outlive"),
        ({"actor_options": [{}]}, ValueError, "one dict per actor"),
        ({"actor_options": "num_cpus=1"}, TypeError, "dict of Ray actor options"),
        ({"actor_options": {"num_cpus": -1}}, ValueError, None),  # Ray's own check
        ({"autoreset_mode": "SameStep"}, IncompatibleModeError, "with_autoreset"),
        ({"timeout": 0}, ValueError, "timeout must be None or > 0"),
        ({"timeout": "5"}, ValueError, "> 0 seconds (an int or float), got '5'"),
    ],
)
def test_bad_arguments_are_clear_errors_and_start_no_actor(kwargs, error, text):
    before = live_actors()
    with pytest.raises(error, match=None if text is None else re.escape(text)):
        RayVectorEnv(scheduled_fns(2), **kwargs)
    assert live_actors() - before == set()


def test_without_ray_initialised_it_calls_ray_init_and_says_so_once():
    """In a fresh process: Ray's own ray.init() (here RAY_ADDRESS, this module's
    session), one warning for two envs."""
    code = """if True:
        import json, warnings
        import gymnasium as gym
        import ray, vecmode
        fns = [lambda: gym.make("CartPole-v1")]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(2):
                vecmode.RayVectorEnv(fns, num_actors=1).close()
        said = [str(w.message) for w in caught if "vecmode called ray.init" in str(w.message)]
        print(json.dumps({"said": said, "address": ray.get_runtime_context().gcs_address}))
    """
    address = ray.get_runtime_context().gcs_address
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "RAY_ADDRESS": address},
        check=True,
    ).stdout
    report = json.loads(out.strip().splitlines()[-1])
    assert report["address"] == address
    assert len(report["said"]) == 1 and address in report["said"][0]


def test_with_warnings_as_errors_the_ray_init_warning_leaves_ray_as_it_was():
    """``-W error``: the warning is the error, no env is built and Ray is shut
    down again; the next env (warnings as usual) says so and works."""
    code = """if True:
        import json, warnings
        import gymnasium as gym
        import ray, vecmode
        fns = [lambda: gym.make("CartPole-v1")]
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            try:
                vecmode.RayVectorEnv(fns, num_actors=1)
            except UserWarning as exc:
                raised = str(exc)
        after = ray.is_initialized()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            envs = vecmode.RayVectorEnv(fns, num_actors=1)
            envs.reset(seed=0)
            envs.close()
        said = [str(w.message) for w in caught if "vecmode called ray.init" in str(w.message)]
        print(json.dumps({"raised": raised, "after": after, "said": said}))
    """
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "RAY_ADDRESS": ray.get_runtime_context().gcs_address},
        check=True,
    ).stdout
    report = json.loads(out.strip().splitlines()[-1])
    assert "vecmode called ray.init" in report["raised"]
    assert report["after"] is False, "Ray was left initialised by a failed build"
    assert len(report["said"]) == 1


def test_importing_vecmode_does_not_import_ray():
    code = "import sys, vecmode, vecmode.ray_vector_env; print('ray' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False"


# ------------------------------------------------------------ docs and examples
def test_the_docstring_examples_run():
    """Including those pytest's doctest run leaves out (they need this session:
    see the root conftest.py)."""
    import vecmode.ray_vector_env as module

    runner = doctest.DocTestRunner(
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    )
    tests = doctest.DocTestFinder().find(module)
    assert any(t.name == "vecmode.ray_vector_env.RayVectorEnv" for t in tests)
    for test in tests:
        runner.run(test)
    assert runner.tries >= 9 and runner.failures == 0


def test_the_examples_of_the_scaling_page_run(capsys):
    """docs/scaling.md's ``py`` blocks need Ray (``python`` blocks run in
    tests/docs/test_docs.py without it); those that connect to a cluster
    (``address=``) are shown, not run."""
    page = (ROOT / "docs" / "scaling.md").read_text()
    blocks = re.findall(r"```py\n(.*?)```", page, re.S)
    runnable = [code for code in blocks if "address=" not in code]
    assert runnable
    for code in runnable:
        with contextlib.redirect_stdout(sys.stderr):
            exec(compile(code, "<docs/scaling.md>", "exec"), {})


def test_the_same_episodes_in_every_mode_under_a_seed_schedule():
    from tests.test_episode_seeds import check_run, fns, shift_by_episode

    with RayVectorEnv(fns(3, 3), num_actors=2) as core:
        check_run(core, 11, 3, shift_by_episode)
