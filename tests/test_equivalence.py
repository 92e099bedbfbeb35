"""Mode equivalence: the same real transitions in every mode, none lost or doubled.

Each sub-env takes its k-th real transition with the k-th action of its own queue,
so the same seeds give the same episodes whatever the mode; the transitions are
extracted with the boundary view (NEXT_STEP: skip reset steps; SAME_STEP: next obs
from final_obs; DISABLED: reset ended sub-envs with a mask).
"""

from __future__ import annotations

import functools
import itertools

import gymnasium as gym
import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import vecmode
from tests.helpers import scheduled_fns
from vecmode import AutoresetMode
from vecmode.modes import boundary


def transitions(fns, mode, queues, seed, wanted):
    """Per sub-env, its first ``wanted`` real transitions in ``mode``."""
    envs = vecmode.with_autoreset(vecmode.SyncVectorEnv(fns()), mode)
    n = envs.num_envs
    obs, _ = envs.reset(seed=seed)
    taken = [[] for _ in range(n)]
    ended_before = np.zeros(n, dtype=bool)
    for _ in range(10 * wanted + 10):
        if min(len(t) for t in taken) >= wanted:
            break
        actions = np.array(
            [queues[i][len(taken[i]) % len(queues[i])] for i in range(n)]
        )
        next_obs, rewards, terminations, truncations, infos = envs.step(actions)
        b = boundary(mode, terminations, truncations, ended_before)
        for i in np.flatnonzero(b.real):
            final = infos["final_obs"][i] if b.final_in_info[i] else next_obs[i]
            taken[i].append(
                (
                    obs[i].tolist(),
                    int(actions[i]),
                    float(rewards[i]),
                    bool(terminations[i]),
                    bool(truncations[i]),
                    np.asarray(final).tolist(),
                )
            )
        obs, ended_before = next_obs, b.ended
        if b.needs_reset.any():
            obs, _ = envs.reset(options={"reset_mask": b.needs_reset})
            ended_before = np.zeros(n, dtype=bool)
    envs.close()
    assert min(len(t) for t in taken) >= wanted, "ran out of calls"
    return [t[:wanted] for t in taken]


@given(
    num_envs=st.integers(1, 4),
    lengths=st.lists(
        st.lists(st.integers(1, 5), min_size=1, max_size=3), min_size=4, max_size=4
    ),
    truncate=st.lists(
        st.lists(st.booleans(), min_size=1, max_size=2), min_size=4, max_size=4
    ),
    queues=st.lists(
        st.lists(st.integers(0, 2), min_size=1, max_size=5), min_size=4, max_size=4
    ),
    seed=st.integers(0, 1000),
    cartpole=st.booleans(),
)
def test_same_real_transitions_in_every_mode(
    num_envs, lengths, truncate, queues, seed, cartpole
):
    if cartpole:
        queues = [[a % 2 for a in q] for q in queues]
        fns = functools.partial(
            lambda n: (
                [functools.partial(gym.make, "CartPole-v1", max_episode_steps=6)] * n
            ),
            num_envs,
        )
    else:
        fns = functools.partial(
            scheduled_fns, num_envs, lengths[:num_envs], truncate[:num_envs]
        )
    runs = {mode: transitions(fns, mode, queues, seed, 12) for mode in AutoresetMode}
    reference = runs[AutoresetMode.DISABLED]
    for mode, run in runs.items():
        assert run == reference, f"{mode.value} differs from Disabled"
    # nothing lost or doubled: within an episode each transition starts where the
    # previous one ended; after an episode's end the next starts a new episode
    for per_env in reference:
        for before, after in itertools.pairwise(per_env):
            if not (before[3] or before[4]):
                assert after[0] == before[5]
            elif not cartpole:
                assert after[0][2] == 0 and after[0][1] == before[0][1] + 1
