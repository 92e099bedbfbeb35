"""The episode seed schedule, ``with_autoreset(env, mode, episode_seeds=...)``:
the same episodes, seed for seed, in every mode and on every core."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vecmode
from vecmode import AsyncVectorEnv, SyncVectorEnv
from vecmode.autoreset import EpisodeSchedule
from vecmode.errors import IncompatibleModeError, SeedError

MODES = list(vecmode.MODES)
STEPS = 14


class SeededEpisodes(gym.Env):
    """An env whose episodes are drawn from the seed of their reset: the length,
    the observations, whether it terminates or is truncated. ``options``:
    ``{"shift": x}`` adds ``x`` to the first observation."""

    observation_space = gym.spaces.Box(-10.0, 10.0, (2,), np.float64)
    action_space = gym.spaces.Discrete(3)

    def __init__(self, max_length: int = 4) -> None:
        self.max_length = max_length

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.length = int(self.np_random.integers(1, self.max_length + 1))
        self.t = 0
        shift = (options or {}).get("shift", 0.0)
        return self.np_random.random(2) + shift, {"seed": seed}

    def step(self, action):
        self.t += 1
        obs = self.np_random.random(2) + action
        ended = self.t >= self.length
        terminated = ended and self.length % 2 == 0
        return obs, float(action) + obs[0], terminated, ended and not terminated, {}


def fns(num_envs: int, max_length: int = 4):
    return [lambda: SeededEpisodes(max_length)] * num_envs


def act(sub_env: int, t: int) -> int:
    """The action of sub-env ``sub_env`` at step ``t`` of an episode."""
    return (3 * sub_env + t * t) % 3


def collect(envs, steps: int = STEPS) -> list[list[list[tuple]]]:
    """Each sub-env's complete episodes (each a list of real transitions) in
    ``steps`` calls, the actions a function of (sub-env, step in the episode)."""
    collector = vecmode.TransitionCollector(envs)
    collector.reset()
    n = envs.num_envs
    at, episodes = [0] * n, [[] for _ in range(n)]
    current = [[] for _ in range(n)]
    for _ in range(steps):
        t = collector.step(np.array([act(i, at[i]) for i in range(n)]))
        for i in np.flatnonzero(t.valid):
            ended = bool(t.terminations[i] or t.truncations[i])
            current[i].append(
                (
                    t.obs[i].tolist(),
                    int(t.actions[i]),
                    float(t.rewards[i]),
                    bool(t.terminations[i]),
                    t.next_obs[i].tolist(),
                )
            )
            at[i] += 1
            if ended:
                episodes[i].append(current[i])
                current[i], at[i] = [], 0
    return episodes


def reference(run, i: int, count: int, max_length: int, options=None) -> list:
    """Sub-env ``i``'s first ``count`` episodes, each reset by hand with the
    schedule's seed (and options)."""
    schedule, env, found = (
        EpisodeSchedule(run, None, i + 1),
        SeededEpisodes(max_length),
        [],
    )
    for e in range(count):
        opts = None if options is None else options(i, e)
        obs, _ = env.reset(seed=schedule.seed(i, e), options=opts)
        episode, ended = [], False
        while not ended:
            a = act(i, len(episode))
            nxt, reward, terminated, truncated, _ = env.step(a)
            episode.append((obs.tolist(), a, reward, terminated, nxt.tolist()))
            obs, ended = nxt, terminated or truncated
        found.append(episode)
    return found


def check_run(core, run, max_length: int, options=None) -> None:
    """In every mode over ``core``: each sub-env's episodes are the scheduled
    ones, so the same in every mode and on every core."""
    for mode in MODES:
        envs = vecmode.with_autoreset(
            core, mode, episode_seeds=run, episode_options=options
        )
        episodes = collect(envs)
        for i, got in enumerate(episodes):
            assert got, f"sub-env {i} ended no episode in {mode.value}"
            wanted = reference(run, i, len(got), max_length, options)
            assert got == wanted, f"sub-env {i} in {mode.value}"


@settings(max_examples=6, deadline=None)
@given(
    num_envs=st.integers(1, 4),
    max_length=st.integers(1, 4),
    run=st.integers(0, 2**32 - 1),
)
def test_the_same_episodes_in_every_mode_on_the_sync_core(num_envs, max_length, run):
    with SyncVectorEnv(fns(num_envs, max_length)) as core:
        check_run(core, run, max_length)


@settings(max_examples=4, deadline=None)
@given(
    num_envs=st.integers(2, 4),
    max_length=st.integers(1, 4),
    layout=st.data(),
    run=st.integers(0, 2**32 - 1),
)
def test_the_same_episodes_in_every_mode_on_the_async_core(
    num_envs, max_length, layout, run
):
    in_parent = layout.draw(st.integers(0, 1), "in_parent")
    workers = layout.draw(st.integers(1, num_envs - in_parent), "num_workers")
    with AsyncVectorEnv(
        fns(num_envs, max_length),
        num_workers=workers,
        in_parent=in_parent,
        context="fork",
    ) as core:
        check_run(core, np.random.SeedSequence(run), max_length)


def shift_by_episode(i: int, e: int):
    return None if e % 2 else {"shift": 10 * i + e}


def test_episode_options_reach_each_episode_in_every_mode_and_core():
    with SyncVectorEnv(fns(3)) as core:
        check_run(core, 5, 4, shift_by_episode)
    with AsyncVectorEnv(fns(3), num_workers=2, in_parent=1, context="fork") as core:
        check_run(core, 5, 4, shift_by_episode)


# ------------------------------------------------------- explicit resets
def first_observations(envs, **reset):
    obs, infos = envs.reset(**reset)
    return obs.tolist(), list(infos["seed"])


@pytest.mark.parametrize("mode", MODES)
def test_reset_with_a_seed_restarts_the_schedule(mode):
    with SyncVectorEnv(fns(2)) as core:
        envs = vecmode.with_autoreset(core, mode, episode_seeds=3)
        first = first_observations(envs)
        schedule = EpisodeSchedule(3, None, 2)
        assert first[1] == [schedule.seed(0, 0), schedule.seed(1, 0)]
        following = first_observations(envs)  # goes on: episode 1
        assert following[1] == [schedule.seed(0, 1), schedule.seed(1, 1)]
        assert first_observations(envs, seed=3) == first
        other = EpisodeSchedule(np.random.SeedSequence(4), None, 2)
        assert first_observations(envs, seed=np.random.SeedSequence(4))[1] == [
            other.seed(0, 0),
            other.seed(1, 0),
        ]
        assert envs.schedule.episodes == [0, 0]


def test_a_masked_reset_takes_the_next_scheduled_seeds():
    with SyncVectorEnv(fns(3)) as core:
        envs = vecmode.with_autoreset(core, "Disabled", episode_seeds=1)
        envs.reset()
        while not envs.awaiting_reset[1]:
            envs.step(np.array([0, 0, 0]))
            if envs.awaiting_reset[[0, 2]].any():
                envs.reset(
                    options={
                        "reset_mask": envs.awaiting_reset
                        & np.array([True, False, True])
                    }
                )
        with pytest.raises(vecmode.EpisodeEndedError):
            envs.step(np.array([0, 0, 0]))
        _, infos = envs.reset(options={"reset_mask": np.array([False, True, False])})
        assert infos["_seed"].tolist() == [False, True, False]
        assert infos["seed"][1] == EpisodeSchedule(1, None, 3).seed(1, 1)
        assert envs.schedule.episodes[1] == 1


def test_the_callers_options_go_over_the_scheduled_ones():
    seen = []

    class Recording(SeededEpisodes):
        def reset(self, *, seed=None, options=None):
            seen.append(options)
            return super().reset(seed=seed, options=options)

    def scheduled(i, e):
        return {"shift": 1.0, "level": e} if i == 0 else None

    given = {"shift": 2.0, "extra": True}
    with SyncVectorEnv([Recording] * 2) as core:
        envs = vecmode.with_autoreset(
            core, "SameStep", episode_seeds=0, episode_options=scheduled
        )
        envs.reset(options=given)
        assert seen == [{"shift": 2.0, "level": 0, "extra": True}, given]
        assert given == {"shift": 2.0, "extra": True}  # never mutated
        seen.clear()
        envs.reset()
        assert seen == [{"shift": 1.0, "level": 1}, None]


@pytest.mark.parametrize("mode", ["NextStep", "SameStep", "Disabled"])
def test_an_episode_with_no_options_gets_none_in_every_mode(mode):
    """A masked reset passes Gymnasium's {} where no options are left: under a
    schedule, the episodes it starts got {} where the autoresets give None."""
    seen = []

    class Recording(SeededEpisodes):
        def reset(self, *, seed=None, options=None):
            seen.append(options)
            return super().reset(seed=seed, options=options)

    with SyncVectorEnv([Recording] * 2) as core:
        envs = vecmode.with_autoreset(core, mode, episode_seeds=0)
        envs.reset()
        while len(seen) < 4:
            terminated, truncated = envs.step(np.array([0, 0]))[2:4]
            if mode == "Disabled" and (terminated | truncated).any():
                envs.reset(options={"reset_mask": terminated | truncated})
    assert seen[:4] == [None] * 4


# ------------------------------------------------------------ refusals
def test_a_foreign_env_refuses_a_schedule_when_built():
    foreign = [
        gym.vector.SyncVectorEnv(fns(2)),
        gym.vector.SyncVectorEnv(
            fns(2), autoreset_mode=gym.vector.AutoresetMode.SAME_STEP
        ),
        gym.vector.SyncVectorEnv(
            fns(2), autoreset_mode=gym.vector.AutoresetMode.DISABLED
        ),
    ]
    for env in foreign:
        for mode in MODES:
            with pytest.raises(IncompatibleModeError, match="only a vecmode core"):
                vecmode.with_autoreset(env, mode, episode_seeds=0)
        env.close()


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"episode_seeds": -1}, SeedError, "an int >= 0 or a numpy.random"),
        ({"episode_seeds": 1.5}, SeedError, "got float 1.5"),
        ({"episode_seeds": [1, 2]}, SeedError, "got list"),
        ({"episode_seeds": True}, SeedError, "got bool"),
        ({"episode_seeds": 0, "episode_options": {}}, TypeError, "a function"),
        ({"episode_options": lambda i, e: None}, TypeError, "needs episode_seeds"),
        (
            {"episode_seeds": 0, "episode_options": lambda i, e: [i]},
            TypeError,
            r"episode_options\(0, 0\) returned list",
        ),
    ],
)
def test_bad_arguments_get_clear_errors(kwargs, error, match):
    with SyncVectorEnv(fns(2)) as core, pytest.raises(error, match=match):
        vecmode.with_autoreset(core, "SameStep", **kwargs)


def test_a_bad_reset_seed_under_a_schedule_is_refused_and_changes_nothing():
    with SyncVectorEnv(fns(2)) as core:
        envs = vecmode.with_autoreset(core, "NextStep", episode_seeds=0)
        envs.reset()
        with pytest.raises(SeedError, match="got list"):
            envs.reset(seed=[1, 2])
        with pytest.raises(SeedError, match="with a reset_mask"):
            envs.reset(seed=1, options={"reset_mask": np.array([True, False])})
        assert envs.schedule.episodes == [0, 0]
        envs.step(np.array([0, 0]))  # still usable


def test_execute_takes_options_per_sub_env_and_refuses_a_wrong_list():
    from vecmode.core import Command

    with SyncVectorEnv(fns(3)) as core:
        core.reset()
        done = core.execute(
            [Command.RESET, Command.KEEP, Command.RESET],
            options=[{"shift": 5.0}, {"shift": 7.0}, None],
        )
        assert done.observations[0].min() >= 5.0
        assert done.observations[2].max() < 1.0
        with pytest.raises(TypeError, match="a list of 3 dicts or Nones"):
            core.execute([Command.RESET] * 3, options=[{}, {}])


def test_the_split_async_api_follows_the_schedule():
    def run(envs, split):
        if split:
            envs.reset_async(seed=9)
            obs, _ = envs.reset_wait()
        else:
            obs, _ = envs.reset(seed=9)
        seen = [obs.tolist()]
        for _ in range(8):
            if split:
                envs.step_async(np.array([1, 2]))
                obs, rewards, *_ = envs.step_wait()
            else:
                obs, rewards, *_ = envs.step(np.array([1, 2]))
            seen.append((obs.tolist(), rewards.tolist()))
        return seen, list(envs.schedule.episodes)

    with AsyncVectorEnv(fns(2, 2), num_workers=2, context="fork") as core:
        envs = vecmode.with_autoreset(core, "SameStep", episode_seeds=0)
        assert run(envs, split=True) == run(envs, split=False)
        assert min(envs.schedule.episodes) >= 2


def test_check_stack_shows_whether_the_episodes_follow_a_schedule():
    with SyncVectorEnv(fns(2)) as core:
        plain = vecmode.with_autoreset(core, "SameStep")
        assert not vecmode.check_stack(plain).seeded
        scheduled = vecmode.with_autoreset(core, "SameStep", episode_seeds=0)
        outer = gym.wrappers.vector.RecordEpisodeStatistics(scheduled)
        report = vecmode.check_stack(outer)
        assert report.seeded
        assert (
            str(report)
            .splitlines()[0]
            .endswith("; its episodes follow a seed schedule")
        )
