"""Mode equivalence: the same real transitions in every mode, none lost or doubled.

Each sub-env takes its k-th real transition with the k-th action of its own queue,
so the same seeds give the same episodes whatever the mode. The transitions are
read by :class:`vecmode.transitions.TransitionReader` (``tests.helpers``'s
``real_transitions``), which :class:`vecmode.TransitionCollector` uses too.
"""

from __future__ import annotations

import functools
import itertools

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import vecmode
from tests.helpers import real_transitions, scheduled_fns
from tests.registry.gym_verdict_helpers import sub
from vecmode import AutoresetMode
from vecmode.testing.envs import decode
from vecmode.transitions import TransitionReader, read_run

OBS_TYPES = ("box", "dict", "tuple", "discrete")


def values(obs):
    return np.asarray(obs).tolist()


def transitions(fns, mode, queues, seed, wanted, cuts=None, view=values):
    """Per sub-env, its first ``wanted`` real transitions in ``mode`` (infos
    aside), the observations seen through ``view``."""
    envs = vecmode.with_autoreset(vecmode.SyncVectorEnv(fns()), mode)
    try:
        found = real_transitions(envs, queues, seed, wanted, cuts)
    finally:
        envs.close()
    return [
        [
            (
                view(t.obs),
                int(t.action),
                float(t.reward),
                t.terminated,
                t.truncated,
                view(t.next_obs),
            )
            for t in per_env
        ]
        for per_env in found
    ]


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


# ------------------------------------------- the reader, with masked resets too
@st.composite
def schedules(draw):
    """Sub-envs' episodes, the caller's cuts (masked resets), actions, a mode."""
    n = draw(st.integers(1, 4))
    return {
        "fns": functools.partial(
            scheduled_fns,
            n,
            [
                draw(st.lists(st.integers(1, 5), min_size=1, max_size=3))
                for _ in range(n)
            ],
            [draw(st.lists(st.booleans(), min_size=1, max_size=2)) for _ in range(n)],
            draw(st.sampled_from(OBS_TYPES)),
        ),
        "queues": [
            draw(st.lists(st.integers(0, 2), min_size=1, max_size=4)) for _ in range(n)
        ],
        "cuts": [draw(st.sets(st.integers(1, 10), max_size=3)) for _ in range(n)],
        "seed": draw(st.integers(0, 1000)),
    }


def assert_each_transition_once(per_env, cuts):
    """Observations say (sub-env, episode, step): a lost or doubled transition
    breaks the chain."""
    for i, found in enumerate(per_env):
        assert found[0][0] == (i, 0, 0)
        for k, t in enumerate(found, start=1):
            index, episode, step = t[0]
            assert t[5] == (index, episode, step + 1), f"sub-env {i}, transition {k}"
            if k == len(found):
                break
            index, episode, step = found[k][0]
            if t[3] or t[4] or k in cuts[i]:  # a new episode
                assert (index, episode % 10, step) == (i, (t[0][1] + 1) % 10, 0)
            else:
                assert found[k][0] == t[5], f"sub-env {i}, transition {k + 1}"


@given(run=schedules())
def test_the_reader_gives_each_real_transition_once_in_every_mode(run):
    """Random episode lengths, masked resets mid-episode, observation types."""
    runs = {
        mode: transitions(
            run["fns"], mode, run["queues"], run["seed"], 10, run["cuts"], decode
        )
        for mode in AutoresetMode
    }
    reference = runs[AutoresetMode.DISABLED]
    for mode, found in runs.items():
        assert found == reference, f"{mode.value} differs from Disabled"
    assert_each_transition_once(reference, run["cuts"])


def collected(envs, queues, seed, wanted, cuts):
    """:func:`real_transitions`'s run, made with a TransitionCollector."""
    taken = [[] for _ in range(envs.num_envs)]
    with vecmode.TransitionCollector(envs) as collector:
        collector.reset(seed=seed)
        while min(len(t) for t in taken) < wanted:
            counts = [len(t) for t in taken]
            actions = np.array(
                [queues[i][c % len(queues[i])] for i, c in enumerate(counts)]
            )
            t = collector.step(actions)
            cut = np.zeros(envs.num_envs, dtype=bool)
            for i in np.flatnonzero(t.valid).tolist():
                taken[i].append(
                    (
                        decode(sub(t.obs, i)),
                        int(actions[i]),
                        float(t.rewards[i]),
                        bool(t.terminations[i]),
                        bool(t.truncations[i]),
                        decode(sub(t.next_obs, i)),
                    )
                )
                ended = t.terminations[i] or t.truncations[i]
                cut[i] = len(taken[i]) in cuts[i] and not ended
            if cut.any():
                collector.reset(options={"reset_mask": cut})
    return [t[:wanted] for t in taken]


@pytest.mark.parametrize("mode", list(AutoresetMode), ids=lambda m: m.value)
@given(run=schedules())
def test_the_reader_agrees_with_the_collector(mode, run):
    queues, seed, cuts = run["queues"], run["seed"], run["cuts"]
    got = transitions(run["fns"], mode, queues, seed, 8, cuts, decode)
    envs = vecmode.with_autoreset(vecmode.SyncVectorEnv(run["fns"]()), mode)
    assert got == collected(envs, queues, seed, 8, cuts)


def test_a_recorded_run_reads_as_a_live_one():
    """read_run over the calls of a run gives what the reader gave live."""
    envs = vecmode.with_autoreset(
        vecmode.SyncVectorEnv(scheduled_fns(2, [(2,), (1, 3)], [(True,), (False,)])),
        AutoresetMode.SAME_STEP,
    )
    obs, infos = envs.reset(seed=0)
    calls = [("reset", obs, infos, None)]
    for step in range(6):
        actions = np.array([step % 3, 1])
        calls.append(("step", actions, *envs.step(actions)))
    envs.close()
    live = TransitionReader(AutoresetMode.SAME_STEP, 2, envs)
    expected = [
        [
            (t.sub_env, decode(t.next_obs))
            for t in getattr(live, name)(*args).transitions()
        ]
        for name, *args in calls
    ]
    offline = TransitionReader(AutoresetMode.SAME_STEP, 2)  # no spaces: by rows
    got = [
        [(t.sub_env, decode(t.next_obs)) for t in reading.transitions()]
        for reading in read_run(offline, calls)
    ]
    assert got == expected
    assert sum(map(len, got)) == 12  # two sub-envs, six real transitions each
    with pytest.raises(ValueError, match="not one named 'rest'"):
        list(read_run(offline, [("rest", obs, infos, None)]))


def test_the_reader_needs_a_reset_first_and_spaces_for_a_batched_next_obs():
    reader = TransitionReader("SameStep", 1)
    flags = np.array([True]), np.array([False])
    with pytest.raises(gym.error.ResetNeeded, match="before any reset"):
        reader.step(np.array([0]), np.zeros((1, 3)), np.zeros(1), *flags, {})
    reader.reset(np.zeros((1, 3)))
    final = np.full(1, None, dtype=object)
    final[0] = np.ones(3)
    infos = {"final_obs": final, "_final_obs": np.array([True])}
    reading = reader.step(np.array([0]), np.zeros((1, 3)), np.zeros(1), *flags, infos)
    assert reading.transitions()[0].next_obs is infos["final_obs"][0]
    with pytest.raises(TypeError, match="give the reader the env"):
        reading.next_obs  # noqa: B018
