"""The ground truth the TransitionCollector's tests check runs against.

Every ScheduledEnv observation says which sub-env, episode and step it is
([index, episode, step]), and its reward is ``action + 0.5 * step + 0.01 * index``.
So each sub-env's valid transitions are known in advance from its episode lengths
and its action queue (advanced only on valid transitions): consecutive steps of
consecutive episodes, nothing lost, nothing twice. Transitions are read only after
the whole run, and compared with copies taken when they were returned, so a buffer
that a later call overwrites shows up.
"""

from __future__ import annotations

from copy import deepcopy
from typing import Any

import gymnasium as gym
import numpy as np

import vecmode
from tests.helpers import assert_same
from tests.registry.gym_verdict_helpers import sub
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
            assert t.actions is not actions and np.array_equal(t.actions, actions)
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
