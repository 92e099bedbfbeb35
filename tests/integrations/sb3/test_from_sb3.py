"""vecmode.sb3.from_sb3 against Gymnasium's SAME_STEP ``SyncVectorEnv`` over the same
sub-envs: identical but for the steps that are both terminated and truncated.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

sb3 = pytest.importorskip("stable_baselines3")

from stable_baselines3.common.vec_env import (  # noqa: E402
    DummyVecEnv,
    SubprocVecEnv,
    VecNormalize,
)

import vecmode  # noqa: E402
from tests.helpers import assert_same  # noqa: E402
from tests.integrations.sb3.envs import (  # noqa: E402
    ACTION_SPACES,
    DISABLED,
    FORK,
    NEXT,
    SAME,
    SUB_ENVS,
    recorders,
    sb3_vec_env,
    tagged_fns,
    vecmode_env,
)
from vecmode import IncompatibleModeError  # noqa: E402
from vecmode.errors import ActionBatchError  # noqa: E402
from vecmode.sb3 import from_sb3  # noqa: E402


def drive_gym(envs: Any, steps: int, seed: int, options=None, mask_prob=0.0) -> list:
    """Every result of a run of ``envs``: resets (full, with ``options``, and
    masked), steps with seeded actions."""
    rng = np.random.default_rng(seed)
    envs.action_space.seed(seed)
    records = [("reset", envs.reset(seed=seed, options=options))]
    for t in range(steps):
        records.append(("step", envs.step(envs.action_space.sample())))
        mask = rng.random(envs.num_envs) < mask_prob
        if mask.any():
            reset_seed = int(rng.integers(100)) if t % 2 else None
            records.append(
                (
                    "reset_mask",
                    envs.reset(seed=reset_seed, options={"reset_mask": mask}),
                )
            )
    return records


def assert_same_but_both_flags(expected: list, got: list, float32=False) -> int:
    """The runs are identical, except that a step Gymnasium reports both
    terminated and truncated comes back terminated only (SB3's encoding); with
    ``float32``, rewards are Gymnasium's rounded to float32 (DummyVecEnv's
    buffer). Returns how many sub-env steps were both."""
    assert len(expected) == len(got)
    both_seen = 0
    for n, ((kind, e), (kind_g, g)) in enumerate(zip(expected, got, strict=True)):
        assert kind == kind_g
        if kind == "step":
            obs, rewards, terminations, truncations, infos = e
            both = terminations & truncations
            both_seen += int(both.sum())
            if float32:
                rewards = rewards.astype(np.float32).astype(np.float64)
            e = (obs, rewards, terminations, truncations & ~both, infos)
        assert_same(e, g, f"call {n} ({kind})")
    return both_seen


@pytest.mark.parametrize("kind", ["SubprocVecEnv", "DummyVecEnv"])
@pytest.mark.parametrize("sub_envs", ["box", "discrete", "dict", "cartpole"])
def test_from_sb3_is_gymnasiums_same_step_env_but_for_both_flags(sub_envs, kind):
    fns = SUB_ENVS[sub_envs]()
    reference = gym.vector.SyncVectorEnv(fns, autoreset_mode=SAME)
    ours = from_sb3(sb3_vec_env(kind, fns))
    assert vecmode.mode_of(ours) is SAME is ours.autoreset_mode  # (TorchRL reads it)
    assert ours.single_observation_space == reference.single_observation_space
    assert ours.observation_space == reference.observation_space
    assert ours.action_space == reference.action_space
    options = {"level": 3} if sub_envs == "box" else None
    expected = drive_gym(reference, 1000, seed=2, options=options, mask_prob=0.03)
    got = drive_gym(ours, 1000, seed=2, options=options, mask_prob=0.03)
    both = assert_same_but_both_flags(expected, got, float32=kind == "DummyVecEnv")
    assert both > 50 or sub_envs == "cartpole"  # sub-env 3 ends with both flags
    reference.close()
    ours.close()


class OffDtypeTuple(gym.Env):
    """Tuple observations whose parts come in other dtypes than the space's
    (float64 for a float32 Box, int32 for a Discrete), as many envs return
    them; sub-env ``i``'s episodes end after ``i + 2`` steps."""

    observation_space = gym.spaces.Tuple(
        (gym.spaces.Box(-10, 10, (2,), np.float32), gym.spaces.Discrete(5))
    )
    action_space = gym.spaces.Discrete(2)

    def __init__(self, index: int = 0) -> None:
        self.index, self.t = index, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        return self._obs(), float(action), self.t >= self.index + 2, False, {}

    def _obs(self) -> tuple:
        x = np.array([self.index, self.t], np.float64) + self.np_random.random()
        return x, np.int32(self.t % 5)


def test_from_sb3_over_tuple_observations_is_gymnasiums_batch():
    """SubprocVecEnv stacks each part as the sub-envs return it (float64,
    int32): from_sb3 gives Gymnasium's batch, each part in its space's dtype,
    final observations and masked resets included."""
    fns = [functools.partial(OffDtypeTuple, i) for i in range(3)]
    reference = gym.vector.SyncVectorEnv(fns, autoreset_mode=SAME)
    ours = from_sb3(SubprocVecEnv(fns, start_method=FORK))
    assert ours.observation_space == reference.observation_space
    expected = drive_gym(reference, 12, seed=5, mask_prob=0.2)
    got = drive_gym(ours, 12, seed=5, mask_prob=0.2)
    assert assert_same_but_both_flags(expected, got) == 0
    assert [str(part.dtype) for part in got[-1][1][0]] == ["float32", "int64"]
    assert any(kind == "reset_mask" for kind, _ in got)
    assert any("final_obs" in result[-1] for kind, result in got if kind == "step")
    reference.close()
    ours.close()


def test_vecmode_works_over_from_sb3():
    """vecmode's wrappers, check and TransitionCollector over SB3's envs: the same
    as over Gymnasium's SAME_STEP env, but for the both-flags steps."""
    from vecmode.wrappers import NormalizeObservation, NormalizeReward

    fns = SUB_ENVS["box"]()

    def stack(envs):
        return NormalizeReward(NormalizeObservation(envs))

    ours = stack(from_sb3(SubprocVecEnv(fns, start_method=FORK)))
    reference = stack(gym.vector.SyncVectorEnv(fns, autoreset_mode=SAME))
    assert vecmode.check_stack(ours).ok
    both = assert_same_but_both_flags(
        drive_gym(reference, 300, seed=4), drive_gym(ours, 300, seed=4)
    )
    assert both > 10
    ours.close()
    reference.close()
    collected = []
    for envs in (
        from_sb3(DummyVecEnv(SUB_ENVS["cartpole"]())),
        gym.vector.SyncVectorEnv(SUB_ENVS["cartpole"](), autoreset_mode=SAME),
    ):
        with vecmode.TransitionCollector(envs) as collector:
            collector.reset(seed=1)
            envs.action_space.seed(1)
            steps = [collector.step(envs.action_space.sample()) for _ in range(200)]
        collected.append(
            [
                (t.obs, t.next_obs, t.terminations | t.truncations, t.valid)
                for t in steps
            ]
        )
    assert_same(collected[1], collected[0], "transitions")


def test_from_sb3_refuses_what_it_cannot_do_exactly():
    venv = VecNormalize(DummyVecEnv(tagged_fns()))
    envs = from_sb3(venv)
    for mode in (NEXT, DISABLED):  # SB3 has already reset an ended sub-env
        with pytest.raises(IncompatibleModeError, match="SameStep"):
            vecmode.with_autoreset(envs, mode)
    envs.reset(seed=0)
    with pytest.raises(ValueError, match="VecNormalize"):  # its statistics
        envs.reset(options={"reset_mask": np.array([True, False, False, False])})
    with pytest.raises(TypeError, match="SB3's seed"):
        envs.reset(seed=[1, 5, 2, 3])
    # no seed for any sub-env: as seed=None (Gymnasium's envs take it)
    first, _ = envs.reset(seed=[None] * 4)
    assert first.shape[0] == 4
    with pytest.raises(ValueError, match="takes no timeout"):
        envs.step_async(np.zeros(4, dtype=np.int64))
        envs.step_wait(timeout=1.0)
    with pytest.raises(TypeError, match="stable_baselines3 VecEnv"):
        from_sb3(gym.vector.SyncVectorEnv(tagged_fns()))
    with pytest.raises(TypeError, match=r"TimeLimit; to vectorize .*make_vec\("):
        from_sb3(gym.make("CartPole-v1"))
    envs.close()
    envs = from_sb3(DummyVecEnv(tagged_fns()))
    with pytest.raises(gym.error.ResetNeeded):
        envs.reset(options={"reset_mask": np.ones(4, dtype=bool)})
    # a step before any reset: told to reset() (a masked reset needs one first)
    with pytest.raises(gym.error.ResetNeeded, match=r"call reset\(\) first"):
        envs.step(np.zeros(4, dtype=np.int64))
    envs.reset(seed=0)
    envs.step(np.zeros(4, dtype=np.int64))  # nothing was stepped: no fault left
    envs.close()


class _IntObs(gym.Env):
    """Integer Box observations (as Atari RAM's), episodes of 5 steps."""

    observation_space = gym.spaces.Box(0, 100, (2,), np.int64)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self.np_random.integers(0, 100, 2), {}

    def step(self, action):
        self.t += 1
        return self.np_random.integers(0, 100, 2), 1.0, False, self.t >= 5, {}


def test_a_vec_env_that_loses_a_final_observation_is_refused_naming_the_sub_env():
    from stable_baselines3.common.vec_env import VecEnvWrapper

    class Lossy(VecEnvWrapper):  # a VecEnv breaking SB3's contract
        def reset(self):
            return self.venv.reset()

        def step_wait(self):
            obs, rewards, dones, infos = self.venv.step_wait()
            for info in infos:
                info.pop("terminal_observation", None)
            return obs, rewards, dones, infos

    envs = from_sb3(Lossy(DummyVecEnv([lambda: gym.make("CartPole-v1")] * 2)))
    envs.reset(seed=0)
    with pytest.raises(ValueError, match=r"sub-env [01] done without info\['termin"):
        for _ in range(600):
            envs.step(np.zeros(2, dtype=np.int64))
    envs.close()


def test_from_sb3_of_vec_normalize_declares_the_clipped_bounds_of_a_float_box():
    """CartPole's Box has finite bounds (4.8 and 0.42) that normalised values
    pass: the space said so and contains() failed on most observations."""
    envs = from_sb3(VecNormalize(DummyVecEnv([lambda: gym.make("CartPole-v1")] * 2)))
    assert envs.single_observation_space == gym.spaces.Box(-10, 10, (4,), np.float32)
    obs, _ = envs.reset(seed=0)
    for _ in range(50):
        assert envs.observation_space.contains(obs)
        obs = envs.step(np.ones(2, dtype=np.int64))[0]
    envs.close()


def test_from_sb3_keeps_vec_normalize_s_float_observations_of_an_integer_box():
    """VecNormalize keeps a non-image integer Box but returns floats: they were
    cast to the space's integers (0 or 1), final observations left float."""
    theirs = VecNormalize(DummyVecEnv([_IntObs] * 2), norm_reward=False)
    envs = from_sb3(VecNormalize(DummyVecEnv([_IntObs] * 2), norm_reward=False))
    assert envs.single_observation_space == gym.spaces.Box(-10, 10, (2,), np.float32)
    theirs.seed(0)
    expected, (obs, _) = theirs.reset(), envs.reset(seed=0)
    for _ in range(5):
        np.testing.assert_array_equal(obs, expected)
        assert envs.observation_space.contains(obs)
        actions = np.zeros(2, dtype=np.int64)
        expected, _, dones, sb3_infos = theirs.step(actions)
        obs, _, _, truncated, infos = envs.step(actions)
    np.testing.assert_array_equal(obs, expected)  # the next episode's first
    assert dones.all() and truncated.all()
    for i in range(2):
        final = sb3_infos[i]["terminal_observation"]
        np.testing.assert_array_equal(infos["final_obs"][i], final)
    envs.close()
    theirs.close()

    # in a Dict, its norm_obs_keys only (the others stay integers)
    def pair():
        return gym.wrappers.TransformObservation(
            _IntObs(),
            lambda obs: {"a": obs, "b": obs},
            gym.spaces.Dict(a=_IntObs.observation_space, b=_IntObs.observation_space),
        )

    venv = VecNormalize(DummyVecEnv([pair] * 2), norm_obs_keys=["a"])
    stacked = vecmode.wrappers.FrameStackObservation(from_sb3(venv), 2)
    obs, _ = stacked.reset(seed=0)
    assert (obs["a"].dtype, obs["b"].dtype) == (np.float32, np.int64)
    assert stacked.observation_space.contains(obs)  # (the values kept, as floats)
    stacked.close()


def test_from_sb3_sub_env_calls_and_render():
    fns = tagged_fns("rgb_array")
    ours = from_sb3(DummyVecEnv(fns))
    reference = gym.vector.SyncVectorEnv(fns, autoreset_mode=SAME)
    for envs in (ours, reference):
        envs.reset(seed=0)
        envs.step(np.ones(4, dtype=np.int64))
    assert_same(reference.render(), ours.render(), "frames")
    assert ours.call("bump", 2) == reference.call("bump", 2)
    assert ours.get_attr("bumps") == reference.get_attr("bumps") == (2, 2, 2, 2)
    ours.set_attr("label", ["a", "b", "c", "d"])
    assert ours.get_attr("label") == ("a", "b", "c", "d")
    ours.set_attr("label", "z")
    assert ours.get_attr("label") == ("z",) * 4
    with pytest.raises(ValueError, match="list or tuple of 4 values"):
        ours.set_attr("label", ["a"])
    ours.close()
    reference.close()


@pytest.mark.parametrize("kind", ["DummyVecEnv", "SubprocVecEnv"])
@pytest.mark.parametrize("space", sorted(ACTION_SPACES))
def test_from_sb3_gives_each_sub_env_its_own_dict_or_tuple_action(space, kind):
    """from_sb3 takes Gymnasium's batch (a tuple or dict of batches) and hands SB3
    one action per sub-env: each sub-env receives what it receives under
    Gymnasium's SyncVectorEnv. (Sub-env 0 got the first component's batch, [1 2],
    for Tuple actions; Dict actions raised KeyError: 0.)"""
    fns = recorders(space)
    reference = gym.vector.SyncVectorEnv(fns, autoreset_mode=SAME)
    ours = from_sb3(sb3_vec_env(kind, fns))
    assert ours.action_space == reference.action_space
    ours.action_space.seed(3)
    batches = [ours.action_space.sample() for _ in range(7)]
    if space == "tuple":
        batches[0] = (np.array([1, 2, 0]), np.array([3, 4, 0]))
    for envs in (reference, ours):
        envs.reset(seed=0)
        for batch in batches:
            envs.step(batch)
    ours.step_async(batches[0])  # the split API, too
    ours.step_wait()
    reference.step(batches[0])
    expected, got = reference.get_attr("received"), ours.get_attr("received")
    assert_same(expected, got, "received")
    if space == "tuple":
        assert [r[0] for r in got] == [(1, 3), (2, 4), (0, 0)]
    with pytest.raises(ActionBatchError, match="Gymnasium's batch layout"):
        ours.step([ours.single_action_space.sample() for _ in range(3)])
    assert_same(got, ours.get_attr("received"), "nothing was stepped")
    reference.close()
    ours.close()


@pytest.mark.parametrize("kind", ["DummyVecEnv", "SubprocVecEnv"])
def test_a_wrong_batch_of_plain_actions_steps_nothing(kind):
    """A batch one action short made SubprocVecEnv send some actions before it
    raised, and every later answer came a call late (silently stale resets); over
    DummyVecEnv, a sub-env's IndexError was blamed."""
    fns = SUB_ENVS["cartpole"](3)
    ours, reference = from_sb3(sb3_vec_env(kind, fns)), vecmode_env(fns, SAME)
    first = [envs.reset(seed=0)[0] for envs in (ours, reference)]
    assert_same(*first, "reset")
    for bad in (np.zeros(2, dtype=int), np.zeros((3, 1), dtype=int), 0, [0, 1, 0, 1]):
        with pytest.raises(ActionBatchError, match="nothing was stepped"):
            ours.step(bad)
    for seed in (10, 20):
        got, expected = ours.reset(seed=seed), reference.reset(seed=seed)
        assert_same(got[0], expected[0], f"reset(seed={seed})")
    actions = np.array([0, 1, 1])
    assert_same(ours.step(actions)[:4], reference.step(actions)[:4], "step")
    ours.close()
    reference.close()


@pytest.mark.parametrize("kind", ["DummyVecEnv", "SubprocVecEnv"])
def test_from_sb3_behaves_as_the_mode_it_declares(kind):
    """vecmode's own proof of an env's declared mode: check_vector_env drives
    throwaway instances across many episode ends, probe_mode finds the mode."""
    from vecmode.testing import check_vector_env

    def factory():
        return from_sb3(sb3_vec_env(kind, SUB_ENVS["box"]()))

    report = check_vector_env(factory)
    assert report.mode is SAME and report.episode_ends > 10
    result = vecmode.probe_mode(factory)
    assert result.mode is SAME and result.agrees, str(result)


@pytest.mark.parametrize("venv_cls", [DummyVecEnv, SubprocVecEnv])
def test_from_sb3_refuses_calls_once_closed(venv_cls):
    """Over DummyVecEnv a closed bridge went on stepping; over SubprocVecEnv it
    raised OSError: both raise Gymnasium's ClosedEnvironmentError now."""
    from gymnasium.error import ClosedEnvironmentError

    kwargs = {"start_method": "fork"} if venv_cls is SubprocVecEnv else {}
    envs = from_sb3(venv_cls(tagged_fns(), **kwargs))
    envs.reset(seed=0)
    envs.close()
    envs.close()  # twice: fine
    for call in (
        lambda: envs.reset(),
        lambda: envs.step(np.zeros(4, dtype=np.int64)),
        lambda: envs.get_attr("index"),
        lambda: envs.call("bump"),
        lambda: envs.set_attr("label", "x"),
    ):
        with pytest.raises(ClosedEnvironmentError, match="was closed"):
            call()


ROOT = Path(__file__).resolve().parents[3]
#: Seconds a fault case may take before it counts as a hang.
HARD_LIMIT = 60.0


def fault_run(source: str, at: int, *also: str) -> dict[str, Any]:
    """The fault driver's report of one case, run in a child process under a hard
    time limit (``at``: the step sub-env 1 raises at; 0: in its second reset)."""
    driver = "tests.integrations.sb3.fault_driver"
    done = subprocess.run(
        [sys.executable, "-m", driver, source, str(at), *also],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=HARD_LIMIT,
        check=True,
    )
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize("at", [2, 0], ids=["in-step", "in-reset"])
def test_a_sub_env_fault_in_dummy_vec_env_is_the_sync_core_s(at):
    """A sub-env raising under from_sb3(DummyVecEnv(...)): the sync core's
    SubEnvError naming it, the same sub-envs lost, the next step refused (no
    transition silently skipped), a masked reset of them recovers."""
    ours = fault_run("DummyVecEnv", at)
    assert ours == fault_run("sync-core", at)
    fault = ours["fault"]
    assert (
        fault["raised"][:2] == ["SubEnvError"] * 2 and "ValueError" in fault["raised"]
    )
    assert (fault["index"], fault["method"], fault["lost"]) == (
        1,
        "step" if at else "reset",
        [0, 1],
    )
    assert ours["awaiting_reset"] == [True, True, False]
    assert ours["step"]["raised"][0] == "EpisodeEndedError"
    assert (ours["step"]["indices"], ours["step"]["lost"]) == ([0, 1], True)
    if at:  # sub-env 2 goes on from step 2 to 3, 0 and 1 from their resets
        assert [obs[2] for obs in ours["then step"]] == [1.0, 1.0, 3.0]
    assert ours["processes left"] == 0


@pytest.mark.parametrize(
    ("start_method", "at"),
    [
        ("fork", 2),
        pytest.param("forkserver", 2, marks=pytest.mark.slow),
        pytest.param("forkserver", 0, marks=pytest.mark.slow),
    ],
)
def test_a_sub_env_fault_in_subproc_vec_env_is_a_worker_error(start_method, at):
    """SubprocVecEnv's worker dies with the sub-env's exception and SB3 sends none:
    WorkerError naming the sub-env, at once (with fork too: SB3 would wait for
    ever), every later call WorkerError, close() ends every worker."""
    report = fault_run(start_method, at)
    assert report["fault"]["raised"][0] == "WorkerError"
    assert report["fault"]["lost"] == [1]
    for call in ("step", "masked reset", "then step"):
        assert report[call]["raised"][0] == "WorkerError"
    assert report["processes left"] == 0


def test_a_fault_every_worker_dies_of_names_every_sub_env():
    """Every worker died of the same step: the error named only those dead when
    it looked (sub-env 0), and every later call repeated it."""
    report = fault_run("fork", 2, "every")
    assert report["fault"]["raised"][0] == "WorkerError"
    assert report["fault"]["lost"] == [0, 1, 2]
    assert report["processes left"] == 0


@vecmode.supports("NextStep", "SameStep", "Disabled")
class _FailAfterReset(gym.vector.VectorWrapper):
    fail = False

    def reset(self, *, seed=None, options=None):
        result = self.env.reset(seed=seed, options=options)
        if self.fail:
            raise RuntimeError("failed after the env's reset")
        return result


def test_a_collector_over_from_sb3_knows_which_calls_ran():
    """from_sb3 counts the calls that ran: a refused seed leaves the collector as
    it was; a reset that ran and then failed above blocks it (the collector once
    kept its old observations there, and joined two episodes)."""
    from vecmode.testing.envs import decode, scheduled_env_fns

    fns = scheduled_env_fns(2, ((9,),) * 2, ((False,),) * 2)
    envs = _FailAfterReset(from_sb3(DummyVecEnv(fns)))
    collector = vecmode.TransitionCollector(envs)
    collector.reset(seed=0)
    collector.step(np.zeros(2, dtype=np.int64))
    with pytest.raises(vecmode.errors.SeedError):
        collector.reset(seed="abc")
    t = collector.step(np.zeros(2, dtype=np.int64))
    assert [decode(o) for o in t.next_obs] == [(0, 0, 2), (1, 0, 2)]
    envs.fail = True
    with pytest.raises(RuntimeError, match="failed after"):
        collector.reset(seed=5)
    envs.fail = False
    with pytest.raises(gym.error.ResetNeeded, match=r"last reset\(\)"):
        collector.step(np.zeros(2, dtype=np.int64))
    envs.step(np.zeros(2, dtype=np.int64))  # behind its back, once reset again
    collector.reset(seed=5)
    collector.step(np.zeros(2, dtype=np.int64))
    envs.step(np.zeros(2, dtype=np.int64))
    with pytest.raises(gym.error.ResetNeeded, match="without the TransitionCollector"):
        collector.step(np.zeros(2, dtype=np.int64))
    collector.close()
