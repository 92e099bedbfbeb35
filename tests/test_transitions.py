"""TransitionCollector: the same real transitions from every autoreset mode.

The ground truth is the env itself: every ScheduledEnv observation says which
sub-env, episode and step it is ([index, episode, step]), and its reward is
``action + 0.5 * step + 0.01 * index``. So each sub-env's valid transitions are
known in advance from its episode lengths and its action queue (advanced only on
valid transitions): consecutive steps of consecutive episodes, nothing lost,
nothing twice. Every run is checked against that, in every mode, and the runs of
the three modes against each other (values, dtypes and order).

Transitions are read only after the whole run, and compared with copies taken
when they were returned, so a buffer that a later call overwrites shows up.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import warnings
from copy import deepcopy
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.error import ResetNeeded
from hypothesis import given
from hypothesis import strategies as st

import vecmode
import vecmode.transitions
from tests.helpers import array_layout, assert_same
from tests.registry.gym_verdict_helpers import sub
from tests.wrappers.cases import FRESH
from vecmode.modes import MODES, AutoresetMode
from vecmode.testing.envs import DenseFinalObsVectorEnv, decode, scheduled_env_fns
from vecmode.transitions import Transition, TransitionCollector
from vecmode.wrappers import DictInfoToList

#: Sub-env i's episode lengths and how they end: ends on different calls, both
#: flags, one-step episodes (an end right after a reset).
LENGTHS = ((2, 3), (1, 4), (3,), (2, 1, 2))
TRUNCATE = ((True, False), (False,), (False, True), (True,))
N = len(LENGTHS)
WANTED = 8

BASES = ("vecmode", "vecmode-async", "gymnasium", "gymnasium-async")


def make_envs(
    base: str,
    mode: AutoresetMode,
    lengths: Any = LENGTHS,
    truncate: Any = TRUNCATE,
    obs_type: str = "box",
    copy: bool = True,
) -> gym.vector.VectorEnv:
    fns = scheduled_env_fns(len(lengths), lengths, truncate, obs_type)
    if base == "vecmode":
        return vecmode.with_autoreset(vecmode.SyncVectorEnv(fns, copy=copy), mode)
    if base == "vecmode-async":
        core = vecmode.AsyncVectorEnv(fns, copy=copy, context="fork")
        return vecmode.with_autoreset(core, mode)
    if base == "gymnasium":
        return gym.vector.SyncVectorEnv(fns, copy=copy, autoreset_mode=mode)
    if base == "gymnasium-async":
        return gym.vector.AsyncVectorEnv(
            fns, copy=copy, autoreset_mode=mode, context="fork"
        )
    if base == "dense":  # SAME_STEP's final observations as ALE reports them
        return DenseFinalObsVectorEnv(fns, copy=copy, autoreset_mode=mode)
    if base == "vecmode+DictInfoToList":
        return DictInfoToList(
            vecmode.with_autoreset(vecmode.SyncVectorEnv(fns, copy=copy), mode)
        )
    raise ValueError(base)


def queues_for(n: int, seed: int = 0) -> list[list[int]]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 3, size=5).tolist() for _ in range(n)]


class Run:
    """Drive a collector with per-sub-env action queues, advanced on valid rows."""

    def __init__(self, collector, queues, wanted=WANTED, seed=0):
        n = collector.num_envs
        self.collector = collector
        taken = [0] * n
        obs, _ = collector.reset(seed=seed)
        assert collector.obs is obs
        self.kept: list[tuple[Transition, Transition, Any]] = []
        for _ in range(3 * wanted + 3):
            if min(taken) >= wanted:
                break
            actions = np.array([queues[i][taken[i] % len(queues[i])] for i in range(n)])
            acted_on = collector.obs
            t = collector.step(actions)
            assert isinstance(t, Transition)
            assert t.obs is acted_on, "obs is not what the collector said to act on"
            assert t.actions is actions
            self.kept.append((t, deepcopy(t), deepcopy(collector.obs)))
            for i in np.flatnonzero(t.valid):
                taken[i] += 1
        assert min(taken) >= wanted, "ran out of calls"
        self.n, self.wanted, self.mode = n, wanted, collector.mode

    def assert_unchanged(self) -> None:
        """Nothing returned earlier was changed by a later call."""
        for k, (t, snapshot, _) in enumerate(self.kept):
            assert_same(tuple(snapshot), tuple(t), f"transition {k}")
        for k in range(len(self.kept) - 1):
            following = self.kept[k + 1][0].obs
            assert_same(self.kept[k][2], following, f"collector.obs after step {k}")

    def valid(self) -> list[list[tuple]]:
        """Per sub-env, its first ``wanted`` valid transitions, in order."""
        out: list[list[tuple]] = [[] for _ in range(self.n)]
        for t, _, _ in self.kept:
            for i in np.flatnonzero(t.valid):
                if len(out[i]) < self.wanted:
                    out[i].append(
                        (
                            sub(t.obs, i),
                            t.actions[i],
                            t.rewards[i],
                            t.terminations[i],
                            t.truncations[i],
                            sub(t.next_obs, i),
                        )
                    )
        return out


def expected(lengths, truncate, queues, wanted, i):
    """Sub-env ``i``'s first ``wanted`` real transitions, from its schedule:
    ``((i, episode, step), action, reward, terminated, truncated, next)``."""
    out, k, step = [], 0, 0
    for n in range(wanted):
        action = queues[i][n % len(queues[i])]
        after = step + 1
        ended = after >= lengths[i][k % len(lengths[i])]
        cut = ended and truncate[i][k % len(truncate[i])]
        reward = float(action) + 0.5 * after + 0.01 * i
        out.append(
            ((i, k, step), action, reward, ended and not cut, cut, (i, k, after))
        )
        k, step = (k + 1, 0) if ended else (k, after)
    return out


def assert_ground_truth(run, lengths, truncate, queues, obs_type="box"):
    """The valid transitions are exactly the schedule's; the only invalid rows
    are NEXT_STEP's reset steps, right after an end, from the ended episode's
    final observation to the next one's first, reward 0 and flags False."""
    mod = 10 if obs_type == "discrete" else None  # the code keeps episode % 10

    def norm(where):
        return where if mod is None else (where[0], where[1] % mod, where[2])

    for i, rows in enumerate(run.valid()):
        want = [
            (norm(o), a, r, te, tr, norm(x))
            for o, a, r, te, tr, x in expected(lengths, truncate, queues, run.wanted, i)
        ]
        got = [
            (decode(o), int(a), float(r), bool(te), bool(tr), decode(x))
            for o, a, r, te, tr, x in rows
        ]
        assert got == want, f"sub-env {i}:\n got {got}\nwant {want}"
        ended_before, n = False, 0  # n: valid rows so far
        for k, (t, _, _) in enumerate(run.kept):
            if n >= run.wanted:
                break
            reset_step = ended_before and run.mode is AutoresetMode.NEXT_STEP
            assert bool(t.valid[i]) is not reset_step, f"call {k}, sub-env {i}"
            if reset_step:
                assert decode(sub(t.obs, i)) == want[n - 1][5], f"call {k}"
                assert decode(sub(t.next_obs, i)) == want[n][0], f"call {k}"
                flags = (t.rewards[i], t.terminations[i], t.truncations[i])
                assert flags == (0, False, False), f"call {k}"
                ended_before = False
            else:
                n += 1
                ended_before = bool(t.terminations[i] or t.truncations[i])


def run_all_modes(base, obs_type="box", copy=True, lengths=LENGTHS, truncate=TRUNCATE):
    queues = queues_for(len(lengths))
    runs = {}
    for mode in MODES:
        envs = make_envs(base, mode, lengths, truncate, obs_type, copy)
        with TransitionCollector(envs) as collector:
            assert collector.mode is mode
            run = Run(collector, queues)
        run.assert_unchanged()
        assert_ground_truth(run, lengths, truncate, queues, obs_type)
        runs[mode] = run
    reference = runs[AutoresetMode.DISABLED].valid()
    for mode, run in runs.items():
        assert_same(reference, run.valid(), f"{base} {obs_type} {mode.value}")
    return runs


# ------------------------------------------------------------ mode equivalence
@pytest.mark.parametrize("copy", [True, False], ids=["copy", "no-copy"])
@pytest.mark.parametrize("base", BASES)
def test_same_valid_transitions_in_every_mode(base, copy):
    run_all_modes(base, copy=copy)


@pytest.mark.parametrize("obs_type", ["dict", "tuple", "image", "discrete"])
@pytest.mark.parametrize("base", ["vecmode", "gymnasium"])
def test_same_valid_transitions_for_every_observation_space(base, obs_type):
    run_all_modes(base, obs_type, copy=False)


def test_infos_as_a_list_carry_final_observations():
    """DictInfoToList outermost: SAME_STEP's final observations are in each
    sub-env's own dict, and found there."""
    runs = run_all_modes("vecmode+DictInfoToList", copy=False)
    for mode in MODES:  # every transition's infos: the list of per-sub-env dicts
        for t, *_ in runs[mode].kept:
            assert isinstance(t.infos, list) and len(t.infos) == N, (mode, t.infos)
            assert all(isinstance(info, dict) for info in t.infos), mode


def test_a_copying_collector_over_torch_tensors_keeps_them_tensors():
    """copy=True over NumpyToTorch: the copies are tensors of the batch's shape
    (a tensor is no tuple to copy item by item)."""
    torch = pytest.importorskip("torch")
    envs = vecmode.wrappers.NumpyToTorch(
        vecmode.make_vec(
            "CartPole-v1",
            num_envs=N,
            vectorization_mode="sync",
            autoreset_mode="SameStep",
            max_episode_steps=2,
        )
    )
    with TransitionCollector(envs, copy=True) as collector:
        obs, _ = collector.reset(seed=0)
        assert isinstance(obs, torch.Tensor) and obs.shape == (N, 4)
        for _ in range(4):  # episode ends included
            t = collector.step(torch.zeros(N, dtype=torch.int64))
            for batch in (t.obs, t.next_obs):
                assert isinstance(batch, torch.Tensor) and batch.shape == (N, 4)


def test_an_env_reporting_final_observations_its_own_way_is_read_through():
    """ALE's layout (one dense final_obs array, no mask): the collector reads it
    through GymnasiumFinalObs, so SAME_STEP's final observations are found (it
    used to raise a contract error at the first episode end)."""
    runs = run_all_modes("dense", copy=False)
    envs = runs[AutoresetMode.SAME_STEP].collector.envs
    assert isinstance(envs, vecmode.autoreset.GymnasiumFinalObs)


@pytest.mark.parametrize("base", ["vecmode", "gymnasium"])
def test_collector_copies_only_what_a_later_call_could_change(base):
    for env_copies, argument, copies in [
        (True, None, False),  # the env returns fresh arrays
        (False, None, True),  # the env reuses its buffer
        (False, False, False),  # the caller's choice
        (True, True, True),
    ]:
        envs = make_envs(base, AutoresetMode.SAME_STEP, copy=env_copies)
        with TransitionCollector(envs, copy=argument) as collector:
            assert collector.copy is copies


def test_next_obs_never_aliases_the_env_buffer_without_copy():
    """An env that reuses its buffer (copy=False): a kept transition (and the
    observation acted on) is not changed by the next step or DISABLED's reset."""
    for base in ("vecmode", "gymnasium"):
        for mode in MODES:
            envs = make_envs(base, mode, copy=False)
            collector = TransitionCollector(envs)
            collector.reset(seed=0)
            kept = []
            for _ in range(6):
                t = collector.step(np.zeros(N, dtype=np.int64))
                kept.append((t, t.obs.copy(), t.next_obs.copy()))
            for k, (t, obs, next_obs) in enumerate(kept):
                np.testing.assert_array_equal(t.obs, obs, f"{base} {mode} {k}")
                np.testing.assert_array_equal(t.next_obs, next_obs, f"{base} {k}")
            collector.close()


class _InPlaceGraphEnv(gym.Env):
    """Graph observations whose node array the env updates in place: an env
    batched as a tuple of items, whose items a ``copy=False`` env hands out."""

    observation_space = gym.spaces.Graph(
        gym.spaces.Box(-100, 100, (1,), np.float32), None
    )
    action_space = gym.spaces.Discrete(2)

    def __init__(self, length):
        self.length, self.nodes = length, np.zeros((2, 1), np.float32)

    def _obs(self):
        return gym.spaces.GraphInstance(self.nodes, None, np.zeros((0, 2), np.int64))

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        self.nodes[:] = 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        self.nodes[:] = self.t
        return self._obs(), 0.0, False, self.t >= self.length, {}


def test_next_obs_of_the_sub_envs_that_did_not_end_is_copied_too():
    """A step where one sub-env ends merges its final observation into the
    others' next observations: from the collector's copy, not the env's items
    (which a later step changes in place)."""
    for mode in MODES:
        envs = vecmode.with_autoreset(
            vecmode.SyncVectorEnv(
                [lambda: _InPlaceGraphEnv(2), lambda: _InPlaceGraphEnv(100)],
                copy=False,
            ),
            mode,
        )
        with TransitionCollector(envs) as collector:
            assert collector.copy
            collector.reset(seed=0)
            kept = []
            for _ in range(5):
                t = collector.step(np.array([0, 0]))
                kept.append((t, deepcopy(t.next_obs), deepcopy(t.obs)))
            # sub-env 1 (sub-env 0's final observations are its env's own array,
            # which its reset changes in place: wrong at once, whatever a caller
            # does, as in Gymnasium's env)
            for k, (t, next_obs, obs) in enumerate(kept):
                assert_same(next_obs[1].nodes, t.next_obs[1].nodes, f"{mode} {k}")
                assert_same(obs[1].nodes, t.obs[1].nodes, f"{mode} {k}")


class _OneBuffer(vecmode.wrappers.ObservationWrapper):
    """A wrapper of the kind an author may write: its observations (obs * 2) go
    into one buffer, written again by every call (a right wrapper, in every mode:
    the conformance kit proves it, but a caller must copy what it keeps)."""

    def observations(self, observations):
        if getattr(self, "_buffer", None) is None:
            self._buffer = np.empty_like(observations)
        return np.multiply(observations, 2, out=self._buffer)


def _gym_reward_identity(envs):
    return gym.wrappers.vector.TransformReward(envs, lambda rewards: rewards)


def test_a_wrapper_not_known_to_return_new_arrays_is_copied():
    """The innermost env returning fresh arrays is not enough: a wrapper over it
    may reuse one buffer (any but vecmode's own classes, subclasses included)."""
    kinds = {
        "vecmode's only": (lambda e: vecmode.wrappers.ClipReward(e, -1, 1), False),
        "a subclass reusing a buffer": (_OneBuffer, True),
        "Gymnasium's": (_gym_reward_identity, True),
        "vecmode's over Gymnasium's": (
            lambda e: vecmode.wrappers.ClipReward(_gym_reward_identity(e), -1, 1),
            True,
        ),
    }
    for name, (wrap, copies) in kinds.items():
        for mode in MODES:
            envs = wrap(make_envs("vecmode", mode, copy=True))
            with TransitionCollector(envs) as collector:
                assert collector.copy is copies, name
                collector.reset(seed=0)
                kept = []
                for _ in range(6):
                    t = collector.step(np.zeros(N, dtype=np.int64))
                    kept.append((t, deepcopy(t.obs), deepcopy(t.next_obs)))
                for k, (t, obs, next_obs) in enumerate(kept):
                    assert_same(t.obs, obs, f"{name} {mode} {k}: obs")
                    assert_same(t.next_obs, next_obs, f"{name} {mode} {k}")


def _fresh_cases():
    """Every wrapper case (tests/wrappers/cases.py), and the fused PPO stack."""
    from tests.wrappers.cases import CASES, Case, why_not_runnable

    ppo = Case("PPOStack", "box", lambda e: vecmode.wrappers.ppo_stack(e, gamma=0.9))
    return [
        pytest.param(
            case,
            marks=pytest.mark.skipif(
                why_not_runnable(case) is not None,
                reason=str(why_not_runnable(case)),
            ),
            id=case.name,
        )
        for case in (*CASES, ppo)
    ]


def test_every_class_said_to_return_new_arrays_is_held_to_it_below():
    """Each class of ``FRESH_OBSERVATION_WRAPPERS`` is the outer layer of a
    case of the next test (named after it), or an autoreset policy (every base
    there has one)."""
    cases = {param.values[0].name.split("-")[0] for param in _fresh_cases()}
    policies = {
        vecmode.NextStepAutoreset,
        vecmode.SameStepAutoreset,
        vecmode.DisableAutoreset,
        vecmode.autoreset.GymnasiumFinalObs,
        vecmode.autoreset.GymnasiumBatch,
    }
    named = {cls.__name__ for cls in vecmode.core.FRESH_OBSERVATION_WRAPPERS - policies}
    assert named <= cases, f"no case builds {sorted(named - cases)}"


@pytest.mark.parametrize("case", _fresh_cases())
def test_wrappers_said_to_return_new_arrays_never_change_what_they_returned(case):
    """What a layer of ``FRESH_OBSERVATION_WRAPPERS`` returned (observations and
    final observations) is the same after later steps and masked resets, in
    every mode: a collector over such a stack does not copy."""
    from tests.wrappers.cases import vecmode_base

    for mode in MODES:
        envs = case.wrap(vecmode_base(case.env, mode))
        layers, layer = [], envs
        while isinstance(layer, gym.vector.VectorWrapper):
            layers.append(type(layer))
            layer = layer.env
        if not set(layers) <= vecmode.core.FRESH_OBSERVATION_WRAPPERS:
            assert vecmode.core.reuses_buffers(envs), case.name  # copied
            envs.close()
            continue
        assert not vecmode.core.reuses_buffers(envs), case.name
        envs.action_space.seed(0)
        kept = [(envs.reset(seed=0), None)]
        kept[-1] = (kept[-1][0], deepcopy(kept[-1][0]))
        for k in range(10):
            returned = envs.step(envs.action_space.sample())
            kept.append((returned, deepcopy(returned)))
            # a masked reset: of the ended sub-envs in Disabled, and of sub-env 0
            # every third step
            mask = np.zeros(envs.num_envs, dtype=bool)
            if mode is AutoresetMode.DISABLED:
                mask = np.asarray(returned[2], bool) | np.asarray(returned[3], bool)
            mask[0] |= k % 3 == 2
            if mask.any():
                reset = envs.reset(options={"reset_mask": mask})
                kept.append((reset, deepcopy(reset)))
        for k, (returned, copied) in enumerate(kept):
            assert_same(copied[0], returned[0], f"{case.name} {mode} call {k}: obs")
            infos = [copied[-1], returned[-1]]
            if isinstance(copied[-1], list):  # DictInfoToList: a dict per sub-env
                infos = [[i.get("final_obs") for i in each] for each in infos]
            else:
                infos = [each.get("final_obs") for each in infos]
            assert_same(infos[0], infos[1], f"{case.name} {mode} call {k}: final")
        envs.close()


# ------------------------------------------------------- Gymnasium's CartPole
def _reference_next_step_loop(envs, actions, seed):
    """The reference's NEXT_STEP replay-buffer loop, per sub-env."""
    buffer: list[list[tuple]] = [[] for _ in range(envs.num_envs)]
    obs, _ = envs.reset(seed=seed)
    autoreset = np.zeros(envs.num_envs, dtype=bool)
    for row in actions:
        next_obs, rewards, terminations, truncations, _ = envs.step(row)
        for j in range(envs.num_envs):
            if not autoreset[j]:
                buffer[j].append(
                    (
                        obs[j].copy(),
                        row[j],
                        rewards[j],
                        terminations[j],
                        truncations[j],
                        next_obs[j].copy(),
                    )
                )
        obs = next_obs
        autoreset = np.logical_or(terminations, truncations)
    return buffer


def _collected(collector, actions, seed):
    buffer: list[list[tuple]] = [[] for _ in range(collector.num_envs)]
    collector.reset(seed=seed)
    for row in actions:
        t = collector.step(row)
        for j in np.flatnonzero(t.valid):
            buffer[j].append(
                (
                    t.obs[j],
                    t.actions[j],
                    t.rewards[j],
                    t.terminations[j],
                    t.truncations[j],
                    t.next_obs[j],
                )
            )
    return buffer


def test_cartpole_vector_entry_point_matches_the_reference_loop():
    """Gymnasium's own vectorised CartPole (NEXT_STEP, no ``copy`` attribute):
    the collector's valid transitions are the reference loop's, and the
    invalid rows are exactly its reset steps."""
    actions = np.random.default_rng(0).integers(0, 2, size=(120, 4))

    def make():
        return gym.make_vec(
            "CartPole-v1",
            num_envs=4,
            vectorization_mode="vector_entry_point",
            max_episode_steps=9,
        )

    envs = make()
    assert vecmode.mode_of(envs) is AutoresetMode.NEXT_STEP
    want = _reference_next_step_loop(envs, actions, seed=3)
    envs.close()
    with TransitionCollector(make()) as collector:
        assert collector.copy  # it declares nothing: copied to be safe
        got = _collected(collector, actions, seed=3)
    assert sum(map(len, want)) < 4 * len(actions)  # episodes did end
    assert_same(want, got, "CartPoleVectorEnv")


def test_cartpole_same_transitions_in_every_mode():
    """Real physics (float observations) through Gymnasium's make_vec."""
    actions = np.random.default_rng(1).integers(0, 2, size=(80, 4))
    results = {}
    for mode in MODES:
        envs = gym.make_vec(
            "CartPole-v1",
            num_envs=4,
            vectorization_mode="sync",
            vector_kwargs={"autoreset_mode": mode},
            max_episode_steps=7,
        )
        queues = actions.T.tolist()
        with TransitionCollector(envs) as collector:
            results[mode] = Run(collector, queues, wanted=30).valid()
    for mode in MODES:
        assert_same(results[AutoresetMode.DISABLED], results[mode], mode.value)


# ------------------------------------------------------------- DISABLED resets
class RecordResets(gym.vector.VectorWrapper):
    """Records the options of every reset, and can make the next masked one fail."""

    def __init__(self, env):
        super().__init__(env)
        self.options: list[Any] = []  # copies: Gymnasium pops from them
        self.given: list[Any] = []  # the dicts themselves
        self.fail_masked = False

    def reset(self, *, seed=None, options=None):
        self.options.append(None if options is None else dict(options))
        self.given.append(options)
        if self.fail_masked and options and "reset_mask" in options:
            raise RuntimeError("reset failed")
        return self.env.reset(seed=seed, options=options)


@pytest.mark.parametrize("base", ["vecmode", "gymnasium"])
def test_disabled_resets_ended_sub_envs_with_a_fresh_mask(base):
    envs = RecordResets(make_envs(base, AutoresetMode.DISABLED))
    collector = TransitionCollector(envs)
    _, infos = collector.reset(seed=0)
    assert collector.reset_infos is infos
    assert list(infos["episode"]) == [0] * N
    resets = 0
    for _ in range(10):
        t = collector.step(np.ones(N, dtype=np.int64))
        ended = np.logical_or(t.terminations, t.truncations)
        if ended.any():
            resets += 1
            options = envs.options[-1]
            assert set(options) == {"reset_mask"}
            np.testing.assert_array_equal(options["reset_mask"], ended)
            assert all(envs.given[-1] is not o for o in envs.given[:-1])
            np.testing.assert_array_equal(collector.reset_infos["_episode"], ended)
            for i in np.flatnonzero(ended):
                episode = decode(t.next_obs[i])[1]
                assert decode(collector.obs[i]) == (i, episode + 1, 0)
                assert collector.reset_infos["episode"][i] == episode + 1
            for i in np.flatnonzero(~ended):
                assert decode(collector.obs[i]) == decode(t.next_obs[i])
        else:
            assert collector.reset_infos == {}
            assert_same(t.next_obs, collector.obs)
    assert resets == len(envs.options) - 1 > 3
    collector.close()


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_the_step_s_infos_as_returned_whatever_the_collector_s_reset_does(mode):
    """Gymnasium's RecordEpisodeStatistics returns its own array as
    info["_episode"] and clears it in place when the sub-envs are reset: in
    DISABLED the collector's reset dropped every episode's statistics."""
    fns = [lambda: gym.make("CartPole-v1", max_episode_steps=2)] * 2
    envs = gym.wrappers.vector.RecordEpisodeStatistics(
        vecmode.with_autoreset(vecmode.SyncVectorEnv(fns), mode)
    )
    with TransitionCollector(envs) as collector:
        collector.reset(seed=0)
        ended = [collector.step(np.array([1, 0])) for _ in range(2)][-1]
        assert ended.truncations.tolist() == [True, True]
        assert ended.infos["_episode"].tolist() == [True, True]
        assert ended.infos["episode"]["l"].tolist() == [2, 2]


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_autoreset_modes_make_no_reset_calls(mode):
    envs = RecordResets(make_envs("vecmode", mode))
    collector = TransitionCollector(envs)
    collector.reset(seed=0)
    for _ in range(10):
        collector.step(np.ones(N, dtype=np.int64))
        assert collector.reset_infos == {}
    assert len(envs.options) == 1


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_masked_reset_mid_episode_starts_a_new_episode(mode):
    """collector.reset with a reset_mask: the masked sub-env's next transition
    starts a new episode, the others go on, the caller's options untouched."""
    lengths, truncate = ((5,), (5,)), ((False,), (False,))
    for base in ("vecmode", "gymnasium"):
        collector = TransitionCollector(make_envs(base, mode, lengths, truncate))
        collector.reset(seed=0)
        collector.step(np.zeros(2, dtype=np.int64))
        options = {"reset_mask": np.array([True, False])}
        obs, _ = collector.reset(options=options)
        assert set(options) == {"reset_mask"}
        assert obs is collector.obs
        t = collector.step(np.zeros(2, dtype=np.int64))
        assert t.valid.all()
        assert [decode(o) for o in t.obs] == [(0, 1, 0), (1, 0, 1)]
        assert [decode(o) for o in t.next_obs] == [(0, 1, 1), (1, 0, 2)]
        collector.close()


@pytest.mark.parametrize("base", ["vecmode", "gymnasium"])
@pytest.mark.parametrize("mask", [True, False], ids=["masked", "full"])
def test_a_reset_after_an_end_clears_next_step_s_pending_reset(base, mask):
    """NEXT_STEP: a sub-env that ended and is then reset by the caller (with a
    mask or fully) makes a real transition on the next step, not a reset step."""
    collector = TransitionCollector(
        make_envs(base, AutoresetMode.NEXT_STEP, ((1,), (5,)), ((False,), (False,)))
    )
    collector.reset(seed=0)
    t = collector.step(np.zeros(2, dtype=np.int64))
    assert t.terminations.tolist() == [True, False]
    options = {"reset_mask": np.array([True, False])} if mask else None
    collector.reset(options=options)
    t = collector.step(np.zeros(2, dtype=np.int64))
    assert t.valid.tolist() == [True, True]
    assert decode(t.obs[0]) == (0, 1, 0) and decode(t.next_obs[0]) == (0, 1, 1)
    collector.close()


def test_invalid_rows_are_only_next_step_reset_steps():
    """The Boundary rows the collector marks: NEXT_STEP's step after an end."""
    for mode in MODES:
        collector = TransitionCollector(
            make_envs("vecmode", mode, ((1,),), ((False,),))
        )
        collector.reset(seed=0)
        valid = [bool(collector.step(np.zeros(1, np.int64)).valid[0]) for _ in range(4)]
        assert valid == (
            [True, False, True, False]
            if mode is AutoresetMode.NEXT_STEP
            else [True] * 4
        )


# ------------------------------------------------------------------- property
@given(
    num_envs=st.integers(1, 4),
    lengths=st.lists(
        st.lists(st.integers(1, 4), min_size=1, max_size=3), min_size=4, max_size=4
    ),
    truncate=st.lists(
        st.lists(st.booleans(), min_size=1, max_size=3), min_size=4, max_size=4
    ),
    mode=st.sampled_from(MODES),
    base=st.sampled_from(["vecmode", "gymnasium"]),
    copy=st.booleans(),
    obs_type=st.sampled_from(["box", "dict"]),
    seed=st.integers(0, 1000),
)
def test_valid_transitions_are_the_schedule_property(
    num_envs, lengths, truncate, mode, base, copy, obs_type, seed
):
    lengths, truncate = lengths[:num_envs], truncate[:num_envs]
    queues = queues_for(num_envs, seed)
    envs = make_envs(base, mode, lengths, truncate, obs_type, copy)
    with TransitionCollector(envs) as collector:
        run = Run(collector, queues, wanted=6, seed=seed)
    run.assert_unchanged()
    assert_ground_truth(run, lengths, truncate, queues, obs_type)


# --------------------------------------------------------------------- errors
def test_step_before_reset_is_a_clear_error_and_changes_nothing():
    envs = make_envs("vecmode", AutoresetMode.DISABLED)
    collector = TransitionCollector(envs)
    with pytest.raises(ResetNeeded, match="before reset") as caught:
        collector.step(np.zeros(N, dtype=np.int64))
    assert str(caught.value) == vecmode.transitions.NOT_RESET
    with pytest.raises(ResetNeeded, match="before reset"):
        collector.obs  # noqa: B018
    with pytest.raises(ResetNeeded, match="full"):
        collector.reset(options={"reset_mask": np.ones(N, dtype=bool)})
    collector.reset(seed=0)
    with pytest.raises(TypeError, match=re.escape("`dtype=np.bool_`")):
        collector.reset(options={"reset_mask": np.ones(N, dtype=int)})
    with pytest.raises(ValueError, match="shape"):
        collector.reset(options={"reset_mask": np.ones(N + 1, dtype=bool)})
    t = collector.step(np.zeros(N, dtype=np.int64))
    assert [decode(o) for o in t.next_obs] == [(i, 0, 1) for i in range(N)]
    collector.close()


@pytest.mark.slow
def test_checks_raise_under_python_O():
    code = (
        "import numpy as np, vecmode\n"
        "from gymnasium.error import ResetNeeded\n"
        "from vecmode.transitions import TransitionCollector\n"
        "c = TransitionCollector(vecmode.make_vec('CartPole-v1', num_envs=2, "
        "vectorization_mode='sync'))\n"
        "try:\n"
        "    c.step(np.zeros(2, dtype=np.int64))\n"
        "except ResetNeeded:\n"
        "    print('raised')\n"
    )
    out = subprocess.run(
        [sys.executable, "-O", "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out == "raised\n"


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_bad_actions_are_the_env_s_error_and_the_collector_goes_on(mode):
    collector = TransitionCollector(make_envs("vecmode", mode, ((5,),) * N))
    collector.reset(seed=0)
    collector.step(np.zeros(N, dtype=np.int64))
    before = collector.obs
    with pytest.raises(ValueError, match="batch of 4"):
        collector.step(np.zeros(N + 1, dtype=np.int64))
    assert collector.obs is before
    t = collector.step(np.zeros(N, dtype=np.int64))
    assert t.obs is before
    assert [decode(o) for o in t.next_obs] == [(i, 0, 2) for i in range(N)]
    collector.close()


def test_a_failed_reset_inside_step_needs_a_reset():
    """DISABLED's masked reset raising: the step's outcome is unknown, so the
    collector refuses to step on until reset, and works again after it."""
    envs = RecordResets(make_envs("vecmode", AutoresetMode.DISABLED))
    collector = TransitionCollector(envs)
    collector.reset(seed=0)
    envs.fail_masked = True
    with pytest.raises(RuntimeError, match="reset failed"):
        for _ in range(5):
            collector.step(np.zeros(N, dtype=np.int64))
    with pytest.raises(ResetNeeded) as caught:
        collector.step(np.zeros(N, dtype=np.int64))
    assert str(caught.value) == vecmode.transitions.call_failed_message("step")
    # the env's error advises a masked reset: through the collector it is
    # refused, saying why (it said no full reset had been done)
    with pytest.raises(ResetNeeded) as caught:
        collector.reset(options={"reset_mask": np.ones(N, dtype=bool)})
    assert str(caught.value).startswith(
        'TransitionCollector.reset(options={"reset_mask": mask}) cannot follow a '
        "call of the collector that failed midway"
    ), caught.value
    envs.fail_masked = False
    collector.reset(seed=1)
    t = collector.step(np.zeros(N, dtype=np.int64))
    assert [decode(o)[2] for o in t.next_obs] == [1] * N


class Undeclared(gym.vector.VectorWrapper):
    """Hides the mode of a NEXT_STEP env."""

    def __init__(self, env):
        super().__init__(env)
        self.metadata = {k: v for k, v in env.metadata.items() if k != "autoreset_mode"}


def test_undeclared_mode_warns_and_assumes_next_step():
    envs = Undeclared(make_envs("gymnasium", AutoresetMode.NEXT_STEP))
    with pytest.warns(vecmode.UndeclaredModeWarning, match="TransitionCollector") as w:
        collector = TransitionCollector(envs)
    assert w[0].filename == __file__
    assert collector.mode is AutoresetMode.NEXT_STEP
    queues = queues_for(N)
    run = Run(collector, queues)
    assert_ground_truth(run, LENGTHS, TRUNCATE, queues)
    collector.close()


def test_undeclared_mode_is_an_error_under_strict():
    envs = Undeclared(make_envs("gymnasium", AutoresetMode.NEXT_STEP))
    with vecmode.strict(), pytest.raises(vecmode.IncompatibleModeError, match="strict"):
        TransitionCollector(envs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with vecmode.strict(False), pytest.raises(vecmode.UndeclaredModeWarning):
            TransitionCollector(envs)
    envs.close()


def test_not_a_vector_env():
    with pytest.raises(TypeError, match="VectorEnv"):
        TransitionCollector(gym.make("CartPole-v1"))


# ----------------------------------------------------------------- attributes
def test_attributes_and_closing():
    envs = make_envs("vecmode", AutoresetMode.SAME_STEP)
    with TransitionCollector(envs) as collector:
        assert collector.envs is envs
        assert collector.num_envs == N
        assert collector.mode is AutoresetMode.SAME_STEP
        assert collector.single_observation_space == envs.single_observation_space
        assert collector.single_action_space == envs.single_action_space
        assert collector.observation_space == envs.observation_space
        assert collector.action_space == envs.action_space
        assert repr(collector).startswith("TransitionCollector(<SameStepAutoreset")
        assert repr(collector).endswith("mode=SameStep)")
    assert envs.unwrapped.closed


def test_same_step_infos_are_returned_unchanged():
    collector = TransitionCollector(make_envs("vecmode", AutoresetMode.SAME_STEP))
    collector.reset(seed=0)
    for _ in range(4):
        t = collector.step(np.zeros(N, dtype=np.int64))
        if "final_obs" in t.infos:
            break
    rows = np.flatnonzero(t.infos["_final_obs"])
    assert len(rows)
    for i in rows:
        # the env's final_obs entry is untouched and equals next_obs's row
        np.testing.assert_array_equal(t.infos["final_obs"][i], t.next_obs[i])
        assert decode(t.obs[i])[1] == decode(t.next_obs[i])[1]
        assert decode(collector.obs[i]) == (i, decode(t.next_obs[i])[1] + 1, 0)


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_the_collector_over_numpy_to_torch_gives_the_numpy_transitions(mode):
    """Over NumpyToTorch (torch flags and observations): the same transitions as
    over the NumPy env, episodes ending apart and masked resets included, the
    observations moved to as tensors at every step (SAME_STEP's merged ones too),
    and a torch reset_mask taken as the env takes it. (Torch's flags made the
    boundaries uint8 index arrays: a false contract error in SAME_STEP, a refused
    reset in DISABLED.)"""
    torch = pytest.importorskip("torch")
    from vecmode.wrappers import NumpyToTorch

    def collector(convert: bool) -> TransitionCollector:
        envs = vecmode.with_autoreset(
            vecmode.SyncVectorEnv(scheduled_env_fns(3, info_type="numeric")), mode
        )
        return TransitionCollector(NumpyToTorch(envs) if convert else envs)

    rng = np.random.default_rng(0)
    with collector(True) as ours, collector(False) as plain:
        for c in (ours, plain):
            c.reset(seed=0)
        cuts = 0
        for k in range(40):
            actions = rng.integers(0, 3, size=3)
            got, expected = ours.step(actions), plain.step(actions)
            assert isinstance(got.next_obs, torch.Tensor), k
            assert_same(got.next_obs.numpy(), expected.next_obs)
            for name in ("rewards", "terminations", "truncations"):
                assert_same(getattr(got, name).numpy(), getattr(expected, name))
            assert_same(got.valid, expected.valid)
            if k % 7 == 3:  # a cut, the mask as each env takes it
                mask = np.array([k % 2 == 0, False, True])
                ours.reset(options={"reset_mask": torch.tensor(mask)})
                plain.reset(options={"reset_mask": mask})
                cuts += 1
            assert_same(ours.obs.numpy(), plain.obs)
        assert cuts > 3


#: Conversions the collector runs over, from a NumPy env: NumpyToTorch; and
#: ArrayConversion to jax, JaxToNumpy and JaxToTorch over it. The jax ones run
#: only in a fresh interpreter (see the test after this one): once jax is
#: imported, the "fork" start method of this session's async envs risks a deadlock.
CONVERSIONS = ("NumpyToTorch", "ArrayConversion-to-jax", "JaxToNumpy", "JaxToTorch")


def _converted(name: str, envs: gym.vector.VectorEnv) -> gym.vector.VectorEnv:
    from vecmode import wrappers as vw

    if name == "NumpyToTorch":
        return vw.NumpyToTorch(envs)
    jax_envs = vw.ArrayConversion(
        envs, env_xp=np, target_xp=importlib.import_module("jax.numpy")
    )
    if name == "ArrayConversion-to-jax":
        return jax_envs
    return getattr(vw, name)(jax_envs)


def _values(batch: Any) -> Any:
    """A batch's values, as lists."""
    if isinstance(batch, dict):
        return {key: _values(value) for key, value in batch.items()}
    if isinstance(batch, tuple):
        return tuple(_values(value) for value in batch)
    return np.asarray(batch).tolist()


@pytest.mark.parametrize("obs_type", ["box", "dict", "tuple", "discrete"])
@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
@pytest.mark.parametrize("name", CONVERSIONS)
def test_next_obs_is_batched_like_obs_over_a_conversion(name, mode, obs_type):
    """next_obs at every step: the same structure, array library, dtype and
    device as obs, and the values of the same collector over the NumPy env (the
    final observations where episodes end). In SAME_STEP, over jax arrays it
    raised TypeError (JAX arrays are immutable); over torch, Dict / Tuple leaves
    became NumPy arrays at episode ends; over JaxToNumpy, Discrete leaves int64
    where obs is int32."""
    needs = ["array_api_compat"]
    needs += ["torch"] if "Torch" in name else []
    needs += ["jax"] if "jax" in name.lower() else []
    missing = [m for m in needs if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)}")
    if "jax" in name.lower() and not os.environ.get(FRESH):
        pytest.skip("imports jax: runs in a fresh interpreter (test below)")

    def collector(convert: bool) -> TransitionCollector:
        fns = scheduled_env_fns(N, LENGTHS, TRUNCATE, obs_type, info_type="numeric")
        envs = vecmode.with_autoreset(vecmode.SyncVectorEnv(fns), mode)
        return TransitionCollector(_converted(name, envs) if convert else envs)

    rng = np.random.default_rng(0)
    with collector(True) as ours, collector(False) as plain:
        obs, _ = ours.reset(seed=0)
        plain.reset(seed=0)
        layout = array_layout(obs)
        ends = 0
        for k in range(12):
            actions = rng.integers(0, 3, size=N)
            got, expected = ours.step(actions), plain.step(actions)
            for batch in (got.obs, got.next_obs, ours.obs):
                assert array_layout(batch) == layout, (k, array_layout(batch))
            assert _values(got.next_obs) == _values(expected.next_obs), k
            assert _values(ours.obs) == _values(plain.obs), k
            ends += int(np.count_nonzero(expected.terminations | expected.truncations))
        assert ends >= 4
