"""vecmode.RayVectorEnv on a local Ray: fidelity, one remote call per busy actor,
Ray as the user runs it, actor options, every fault, no actor left behind.

Ray starts slowly (10-20 s here) and each actor is a new Python process (1-3 s
on a loaded 2-core machine), so the module shares ONE Ray session and reuses a few
envs across tests: between runs, their sub-envs' counters are put back with
``set_attr`` (:func:`restart`), which the tests of ``set_attr`` itself check. The
multi-node test is ``tests/cores/test_ray_cluster.py``.
"""

from __future__ import annotations

import contextlib
import doctest
import functools
import json
import multiprocessing
import os
import pickle
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
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
from tests.cores import fault_envs
from tests.helpers import (
    RaisesIn,
    UserFault,
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
    EpisodeEndedError,
    IncompatibleModeError,
    RayVectorEnv,
    SubEnvError,
    WorkerError,
    WorkerTimeoutError,
)
from vecmode.core import Command

ray = pytest.importorskip("ray")

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
MODES = list(AutoresetMode)
#: A custom resource of the test session, to see actor_options reach Ray.
RESOURCE, RESOURCE_TOTAL = "vecmode_test", 4.0


@pytest.fixture(scope="module", autouse=True)
def ray_session():
    """One local Ray for the module (``address="local"``: never a cluster that
    happens to run on this machine). Its autoscaler's events (the tip about
    ``ray status``, a resource request no node can fulfil) are turned off: they
    reach this process's stdout at any later moment, a doctest's output too."""
    events = os.environ.get("RAY_SCHEDULER_EVENTS")
    os.environ["RAY_SCHEDULER_EVENTS"] = "0"
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        resources={RESOURCE: RESOURCE_TOTAL},
        log_to_driver=False,  # nor the actors' output
    )
    yield
    ray.shutdown()
    if events is None:
        os.environ.pop("RAY_SCHEDULER_EVENTS", None)
    else:
        os.environ["RAY_SCHEDULER_EVENTS"] = events


@pytest.fixture(scope="module")
def shared():
    """Envs built once for the module, by name (closed at its end)."""
    made: dict[str, Any] = {}

    def get(name: str, build):
        if name not in made:
            made[name] = build()
        return made[name]

    yield get
    for envs in made.values():
        envs.close()


#: The attributes of the test sub-envs that change as they run, or that tests set.
RESTART = ("episode", "t", "resets", "lengths", "truncate")


def restart(core: Any, fns: list, **attrs: Any) -> None:
    """Give every sub-env the state of a new one built by ``fns`` (then set
    ``attrs``), so that a reused env runs like a new one from its next seeded
    reset."""
    fresh = [fn() for fn in fns]
    for name in RESTART:
        if hasattr(fresh[0], name):
            core.set_attr(name, [getattr(env, name) for env in fresh])
    for name, value in attrs.items():
        core.set_attr(name, value)


def live_actors() -> set[str]:
    """The actors Ray has not marked dead (the GCS's table: ``ray.util.state``
    needs the dashboard)."""
    from ray._private import state

    return {aid for aid, info in state.actors().items() if info["State"] != "DEAD"}


def assert_no_actor_left(envs: Any, before: set[str]) -> None:
    """No actor of ``envs`` is alive in Ray, and their processes are gone."""
    assert live_actors() - before == set(), "an actor was left alive"
    pids = envs.unwrapped.pids
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        running = [pid for pid in pids if _running(pid)]
        if not running:
            return
        time.sleep(0.05)
    pytest.fail(f"actor processes {running} still run after close()")


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0] != "Z"


def writeable_arrays(value: Any, where: str = "") -> list[str]:
    """Where ``value`` holds a read-only array (none should reach the caller)."""
    if isinstance(value, np.ndarray):
        if not value.flags.writeable:
            return [where]
        if value.dtype == object:
            return [
                p
                for i, v in enumerate(value.flat)
                for p in writeable_arrays(v, f"{where}[{i}]")
            ]
        return []
    if isinstance(value, dict):
        return [
            p for k, v in value.items() for p in writeable_arrays(v, f"{where}.{k}")
        ]
    if isinstance(value, (list, tuple)):
        return [
            p for i, v in enumerate(value) for p in writeable_arrays(v, f"{where}[{i}]")
        ]
    return []


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
        assert infos["_episode"].tolist() == [False, False, False, False, True]
        log.clear()
        _, infos = core.reset(options={"reset_mask": np.array([1, 0, 0, 0, 0], bool)})
        assert log == [(0, 0)]
        assert infos["_episode"].tolist() == [True, False, False, False, False]
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
    from vecmode.worker import CALL, EXECUTE, OK, ROWS, SliceRows

    fns = [lambda: gym.make("CartPole-v1")] * 2
    single = gym.make("CartPole-v1")
    space, action_space = single.observation_space, single.action_space
    reset = pickle.dumps((EXECUTE, [int(Command.RESET)] * 2, None, [0, 1], None))
    actor = SliceActor(3, fns, 5, space, action_space, "same", ((4,), np.float32))
    data = actor.handle(reset)
    answer = pickle.loads(data)
    assert answer[0] == ROWS and answer[4] is None
    rows = np.frombuffer(data, np.float32, offset=len(data) - 32).reshape(2, 4)
    first = [gym.make("CartPole-v1").reset(seed=seed)[0] for seed in (0, 1)]
    np.testing.assert_array_equal(rows, first)
    assert pickle.loads(actor.handle(pickle.dumps((CALL, "reset", (), {}))))[0] == OK
    pickled = SliceActor(3, fns, 5, space, action_space, "same")
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
    import threading

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
    with pytest.raises(SubEnvError) as caught:
        core.close(timeout=1.0)
    assert time.monotonic() - started < 4.0
    assert caught.value.method == "close" and caught.value.index == 1
    assert "Sub-env(s) 3 raised in the same call too" in str(caught.value)
    assert core.closed
    assert_no_actor_left(core, before)
    core.close()  # idempotent
    with pytest.raises(ClosedEnvironmentError):
        core.step(np.zeros(6, dtype=int))


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
    ray.kill(core.actors[0])
    os.kill(core.pids[2], signal.SIGKILL)
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
    envs.close(timeout=0.5)  # actor 1 is still stuck: killed after 0.5 s
    assert time.monotonic() - started < 3.0
    assert_no_actor_left(core, before)


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
    core.close(timeout=1.0)
    assert time.monotonic() - started < 4.0
    stepping.join(10.0)
    assert not stepping.is_alive(), "the step still waits after close()"
    assert len(outcome) == 1, outcome  # as the async core says it:
    assert isinstance(outcome[0], ClosedEnvironmentError), outcome
    assert "its results are lost" in str(outcome[0])
    assert_no_actor_left(core, before)


def test_ctrl_c_in_the_driver_surfaces_at_once():
    before = live_actors()
    core = faulty_core(n=2, num_actors=1)
    core.reset(seed=0)
    arm(core, {0: "hang"})
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    started = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            core.step(np.zeros(2, dtype=int))
    finally:
        timer.cancel()
    assert time.monotonic() - started < 2.0
    with pytest.raises(WorkerError, match="interrupted by KeyboardInterrupt"):
        core.step(np.zeros(2, dtype=int))
    # Ctrl-C again, while close() waits for the stuck actor: the actor is killed
    # all the same, and a second close() has nothing left to do
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    started = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            core.close(timeout=30.0)
    finally:
        timer.cancel()
    assert time.monotonic() - started < 3.0
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
    assert runner.tries > 10 and runner.failures == 0


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
