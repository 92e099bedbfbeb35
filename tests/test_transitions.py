"""TransitionCollector: the same real transitions from every autoreset mode.

Every run is checked against its schedule (``tests.transition_runs``), in every
mode, and the runs of the three modes against each other (values, dtypes and
order).
"""

from __future__ import annotations

import importlib.util
import os
from copy import deepcopy
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import vecmode
from tests.helpers import array_layout, assert_same
from tests.transition_runs import (
    BASES,
    LENGTHS,
    TRUNCATE,
    N,
    Run,
    assert_ground_truth,
    make_envs,
    queues_for,
    run_all_modes,
)
from tests.wrappers.cases import FRESH
from vecmode.modes import MODES, AutoresetMode
from vecmode.testing.envs import scheduled_env_fns
from vecmode.transitions import TransitionCollector


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


# ------------------------------------------------------ over array conversions
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
            assert isinstance(got.valid, torch.Tensor), k  # like terminations
            assert got.valid.device == got.terminations.device
            assert_same(got.valid.numpy(), expected.valid)
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
            assert type(got.valid) is type(got.terminations), k  # the same library
            assert _values(got.valid) == _values(expected.valid), k
            assert _values(ours.obs) == _values(plain.obs), k
            ends += int(np.count_nonzero(expected.terminations | expected.truncations))
        assert ends >= 4


@pytest.mark.parametrize("told", MODES, ids=lambda m: m.value)
def test_a_reader_told_another_mode_than_its_env_declares_refuses(told):
    """Read in the wrong mode, a SameStep env gave reset observations as next_obs
    and pairs that never happened, silently."""
    from vecmode.transitions import TransitionReader

    for declared in MODES:
        envs = gym.vector.SyncVectorEnv(scheduled_env_fns(2), autoreset_mode=declared)
        if told is declared:
            TransitionReader(told, 2, envs)
            continue
        with pytest.raises(ValueError, match=f"pass {declared.value!r}"):
            TransitionReader(told, 2, envs)
