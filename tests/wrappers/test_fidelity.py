"""vecmode's wrappers against Gymnasium itself, call by call, in every mode.

* Per-sub-env reference: ``SyncVectorEnv([single_wrapper(env_i) ...], mode)`` is
  what each sub-env must see; the vecmode vector wrapper returns exactly that, in
  every mode, over vecmode's core and over Gymnasium's own vector envs, with
  partial resets (DISABLED's resets of ended sub-envs, and extra random masks).
* Gymnasium's vector wrapper, where it is right (NEXT_STEP): exactly the same.
"""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.wrappers import vector as gym_vector
from gymnasium.wrappers.utils import RunningMeanStd as GymRunningMeanStd
from hypothesis import given
from hypothesis import strategies as st

import vecmode
from tests.helpers import assert_same_run, drive, make_script
from tests.wrappers.cases import (
    GYM_CASES,
    MODES,
    SINGLE_CASES,
    Case,
    env_fns,
    reference,
    skip_unless_runnable,
    vecmode_base,
)
from vecmode import AutoresetMode
from vecmode.wrappers import RecordEpisodeStatistics
from vecmode.wrappers.common import round_seconds

STEPS = 14


class Snapshot(gym.vector.VectorWrapper):
    """Deep-copies every result when it is returned (a later call may mutate it)."""

    def reset(self, **kwargs):
        return copy.deepcopy(self.env.reset(**kwargs))

    def step(self, actions):
        return copy.deepcopy(self.env.step(actions))


def _run(envs, script, mode):
    try:
        return drive(Snapshot(envs), script, disabled=mode is AutoresetMode.DISABLED)
    finally:
        envs.close()


@pytest.mark.parametrize("base", ["vecmode", "gymnasium"])
@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
@pytest.mark.parametrize("case", SINGLE_CASES, ids=str)
def test_each_sub_env_sees_the_single_env_wrapper(case: Case, mode, base):
    expected_envs = reference(case.env, mode, case)
    script = make_script(expected_envs, STEPS, seed=3, mask_prob=0.4)
    expected = _run(expected_envs, script, mode)
    got = _run(case.wrap(vecmode_base(case.env, mode, base)), script, mode)
    assert_same_run(expected, got)


ASYNC_CASES = [
    pytest.param(case, mode, id=f"{case}-{mode.value}")
    for case in SINGLE_CASES
    for mode in MODES
    # every wrapper where final observations matter; three in every mode
    if mode is AutoresetMode.SAME_STEP
    or case.name in ("FrameStackObservation", "TransformObservation", "ClipAction")
]


@pytest.mark.parametrize(("case", "mode"), ASYNC_CASES)
def test_over_gymnasium_async(case, mode):
    expected_envs = reference(case.env, mode, case)
    script = make_script(expected_envs, 8, seed=5, mask_prob=0.4)
    expected = _run(expected_envs, script, mode)
    got = _run(case.wrap(vecmode_base(case.env, mode, "gymnasium-async")), script, mode)
    assert_same_run(expected, got)


def _without_time(run):
    """Drop RecordEpisodeStatistics' wall-clock ``t`` (the one non-deterministic value)."""
    for _, result in run:
        infos = result[-1]
        if isinstance(infos, dict) and "episode" in infos:
            infos["episode"].pop("t")
    return run


@pytest.mark.parametrize("case", GYM_CASES, ids=str)
def test_same_as_gymnasiums_wrapper_in_next_step(case: Case):
    skip_unless_runnable(case)
    mode = AutoresetMode.NEXT_STEP
    # Gymnasium's NormalizeObservation refuses partial resets, its
    # NormalizeReward clears every sub-env on one, and its jax wrappers pass a
    # jax reset_mask, which the envs reject: compare those without extra masks.
    mask_prob = 0.4 if case.gym_vector_masks and not case.stateful else 0.0
    expected_envs = case.gym_vector(
        gym.vector.SyncVectorEnv(env_fns(case.env), autoreset_mode=mode)
    )
    script = make_script(expected_envs, STEPS, seed=4, mask_prob=mask_prob)
    expected = _without_time(_run(expected_envs, script, mode))
    got = _without_time(_run(case.wrap(vecmode_base(case.env, mode)), script, mode))
    assert_same_run(expected, got)


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_record_episode_statistics_where_gymnasiums_is_right(mode):
    """SAME_STEP: Gymnasium's is right; DISABLED: Gymnasium's is right directly over
    vecmode's core (whose reset leaves the options alone), so compare there."""
    from gymnasium.wrappers.vector import RecordEpisodeStatistics as GymStats

    script = make_script(vecmode_base("box", mode), STEPS, seed=6, mask_prob=0.4)
    expected = _without_time(_run(GymStats(vecmode_base("box", mode)), script, mode))
    got = _without_time(
        _run(RecordEpisodeStatistics(vecmode_base("box", mode)), script, mode)
    )
    assert_same_run(expected, got)


def test_record_episode_statistics_queues_hold_what_gymnasiums_hold():
    """The queues of ended episodes: the same values, as the same NumPy scalar
    types, as Gymnasium's (SAME_STEP, where Gymnasium's is right)."""
    from gymnasium.wrappers.vector import RecordEpisodeStatistics as GymStats

    mode = AutoresetMode.SAME_STEP
    script = make_script(vecmode_base("box", mode), STEPS, seed=7)
    expected, got = (
        GymStats(vecmode_base("box", mode)),
        RecordEpisodeStatistics(vecmode_base("box", mode)),
    )
    _run(expected, script, mode)
    _run(got, script, mode)
    assert got.episode_count == expected.episode_count > 5
    for name in ("return_queue", "length_queue", "time_queue"):
        ours, theirs = list(getattr(got, name)), list(getattr(expected, name))
        assert [type(v) for v in ours] == [type(v) for v in theirs], name
        if name != "time_queue":  # wall-clock seconds differ
            assert ours == theirs, name


@pytest.mark.parametrize(
    ("num_envs", "buffer_length"), [(4, 100), (256, 100), (256, 5)]
)
def test_record_episode_statistics_over_gymnasiums_batched_cartpole(
    num_envs, buffer_length
):
    """Over Gymnasium's CartPoleVectorEnv (NEXT_STEP): few episodes ending in a
    step (row by row) and many (by NumPy calls; more than the queues hold),
    Gymnasium's values and types."""
    from gymnasium.wrappers.vector import RecordEpisodeStatistics as GymStats

    actions = np.random.default_rng(0).integers(0, 2, (150, num_envs))

    def run(cls):
        envs = gym.make_vec("CartPole-v1", num_envs, "vector_entry_point")
        envs = cls(envs, buffer_length=buffer_length)
        envs.reset(seed=3)
        ended = []
        for a in actions:
            infos = envs.step(a)[4]
            if "episode" in infos:
                stats = infos["episode"]
                t = stats["t"]
                assert (np.round(t, 6) == t).all() and (
                    t[~infos["_episode"]] == 0
                ).all()
                ended.append((infos["_episode"], stats["r"], stats["l"]))
        queues = [list(envs.return_queue), list(envs.length_queue)]
        return ended, queues, [type(v) for v in envs.time_queue]

    ours, theirs = run(RecordEpisodeStatistics), run(GymStats)
    assert max(int(mask.sum()) for mask, _, _ in theirs[0]) > (8 if num_envs > 4 else 0)
    assert len(ours[0]) == len(theirs[0])
    for got, want in zip(ours[0], theirs[0], strict=True):
        for a, b in zip(got, want, strict=True):
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    assert ours[1:] == theirs[1:]
    assert [[type(v) for v in q] for q in ours[1]] == [
        [type(v) for v in q] for q in theirs[1]
    ]


@given(
    st.one_of(
        st.floats(-1e7, 1e7),
        st.integers(0, 10**9).map(lambda k: k / 1e6 + 5e-7),  # near the ties
        st.sampled_from([float("inf"), float("-inf"), -0.0, 2.5e-6]),
    )
)
def test_episode_seconds_round_as_np_round(seconds):
    """The seconds RecordEpisodeStatistics reports: ``np.round(t, 6)`` exactly
    (NumPy's rint(t * 1e6) / 1e6, ties to even), computed without NumPy."""
    got = round_seconds(np.float64(seconds))
    assert type(got) is np.float64
    assert got.tobytes() == np.round(np.float64(seconds), 6).tobytes()


def test_reward_transform_leaves_next_steps_reset_step_at_zero():
    from vecmode.wrappers import TransformReward

    envs = TransformReward(
        vecmode_base("box", AutoresetMode.NEXT_STEP), lambda r: r + 100
    )
    envs.reset(seed=0)
    rewards = []
    for _ in range(4):
        _, r, _, _, _ = envs.step(np.zeros(3, dtype=np.int64))
        rewards.append(r.tolist())
    # sub-env 2's first episode lasts 1 step: its second call is the reset step
    assert rewards[1][2] == 0.0
    assert all(r >= 100 for r in rewards[0])
    envs.close()


def test_episode_mask_is_not_changed_by_a_later_partial_reset():
    """Gymnasium 1.4's RecordEpisodeStatistics returns its own ``prev_dones`` as
    ``info["_episode"]``, so a later masked reset rewrites the info the caller
    holds; vecmode's returns a fresh array."""
    from gymnasium.wrappers.vector import RecordEpisodeStatistics as GymStats

    results = {}
    for name, wrapper in (
        ("gymnasium", GymStats),
        ("vecmode", RecordEpisodeStatistics),
    ):
        envs = wrapper(vecmode_base("box", AutoresetMode.NEXT_STEP))
        envs.reset(seed=0)
        _, _, _, _, infos = envs.step(np.zeros(3, dtype=np.int64))
        held = infos["_episode"].copy()
        envs.reset(options={"reset_mask": np.array([False, False, True])})
        results[name] = (held, infos["_episode"])
        envs.close()
    held, later = results["vecmode"]
    assert held.tolist() == later.tolist() == [False, False, True]
    held, later = results["gymnasium"]
    assert held.tolist() == [False, False, True] and later.tolist() == [False] * 3


NORMALISERS = {
    "NormalizeObservation": (
        gym_vector.NormalizeObservation,
        vecmode.wrappers.NormalizeObservation,
        "obs_rms",
    ),
    "NormalizeReward": (
        lambda e: gym_vector.NormalizeReward(e, gamma=0.9),
        lambda e: vecmode.wrappers.NormalizeReward(e, gamma=0.9),
        "return_rms",
    ),
}


def _normaliser_runs(name, load_gymnasium_statistics):
    """Gymnasium's normaliser and vecmode's over the same NEXT_STEP steps."""
    gym_wrap, vm_wrap, field = NORMALISERS[name]
    mode = AutoresetMode.NEXT_STEP
    theirs = gym_wrap(gym.vector.SyncVectorEnv(env_fns("box"), autoreset_mode=mode))
    ours = vm_wrap(vecmode_base("box", mode))
    if load_gymnasium_statistics:  # as users load saved statistics
        stats = getattr(theirs, field)
        setattr(
            ours, field, type(stats)(shape=stats.mean.shape, dtype=stats.mean.dtype)
        )
    script = make_script(theirs, 40, seed=4, mask_prob=0.0)
    expected = _run(theirs, script, mode)
    got = drive(Snapshot(ours), script, disabled=False)
    ours_stats = getattr(ours, field)
    ours.close()
    return expected, got, getattr(theirs, field), ours_stats


@pytest.mark.parametrize("name", NORMALISERS)
def test_normalisers_given_gymnasiums_statistics_are_gymnasiums_bit_for_bit(name):
    """With Gymnasium's RunningMeanStd loaded in, vecmode's normaliser is
    Gymnasium's wrapper exactly: its own arithmetic (what it feeds the statistics,
    the normalising, the discounted sums) is unchanged."""
    expected, got, _, _ = _normaliser_runs(name, load_gymnasium_statistics=True)
    assert_same_run(expected, got)


@pytest.mark.parametrize("name", NORMALISERS)
def test_normalisers_agree_with_gymnasiums_to_float32_rounding(name):
    """vecmode's own statistics (float64 arithmetic) against Gymnasium's
    (float32 arithmetic on float32 data): the same values to float32 rounding,
    and statistics of the same types, dtypes and shapes."""
    expected, got, theirs, ours = _normaliser_runs(
        name, load_gymnasium_statistics=False
    )
    assert len(expected) == len(got)
    for (kind, e), (_, g) in zip(expected, got, strict=True):
        for index in (0, 1) if kind == "step" else (0,):
            assert e[index].dtype == g[index].dtype
            np.testing.assert_allclose(g[index], e[index], rtol=2e-5, atol=1e-6)
    assert isinstance(ours, GymRunningMeanStd)
    for field in ("mean", "var"):
        a, b = getattr(ours, field), getattr(theirs, field)
        assert type(a) is type(b) and np.asarray(a).dtype == np.asarray(b).dtype
        np.testing.assert_allclose(a, b, rtol=1e-5)
    assert ours.count == theirs.count
