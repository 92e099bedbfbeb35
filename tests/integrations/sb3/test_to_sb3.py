"""vecmode.sb3.to_sb3 against SB3's own ``DummyVecEnv`` over the same sub-envs, call
by call (observations, rewards, dones, infos, ``reset_infos``), in every mode, over
the sync and async cores, under SB3's wrappers, and for every other point of SB3's
``VecEnv`` contract (seeds, options, ``indices``, rendering, the split API, closing).
"""

from __future__ import annotations

import functools
import subprocess
import sys
import time
import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector.utils import batch_space
from hypothesis import given, settings
from hypothesis import strategies as st

sb3 = pytest.importorskip("stable_baselines3")

from stable_baselines3.common.monitor import Monitor  # noqa: E402
from stable_baselines3.common.vec_env import (  # noqa: E402
    DummyVecEnv,
    SubprocVecEnv,
    VecFrameStack,
    VecMonitor,
    VecNormalize,
)

import vecmode  # noqa: E402
from tests.helpers import assert_same, envpool_warnings  # noqa: E402
from tests.integrations.sb3.envs import (  # noqa: E402
    ACTION_SPACES,
    CORES,
    DISABLED,
    FORK,
    MODES,
    NEXT,
    SAME,
    SUB_ENVS,
    cartpoles,
    limited,
    recorders,
    tagged_fns,
    vecmode_env,
)
from vecmode import IncompatibleModeError  # noqa: E402
from vecmode.errors import ActionBatchError, SeedError  # noqa: E402
from vecmode.sb3 import from_sb3, to_sb3  # noqa: E402
from vecmode.sb3.to_vec_env import AFTER_A_FAULT  # noqa: E402
from vecmode.testing import ScheduledEnv  # noqa: E402


def actions_for(space: gym.Space, steps: int, n: int, seed: int) -> np.ndarray:
    """``steps`` batches of ``n`` random actions, as SB3 passes them."""
    rng = np.random.default_rng(seed)
    if isinstance(space, gym.spaces.Discrete):
        return rng.integers(0, int(space.n), size=(steps, n))
    return rng.uniform(-1, 1, size=(steps, n, *space.shape)).astype(space.dtype)


def assert_same_obs(expected: Any, got: Any, where: str) -> None:
    assert type(got) is type(expected), f"{where}: {type(got)} != {type(expected)}"
    assert_same(expected, got, where)


def assert_same_infos(expected: list, got: list, where: str, ignore=()) -> None:
    """SB3's infos, with Gymnasium's batching of Python scalars (documented) as the
    only difference allowed; ``ignore``: ``(key, subkey)`` pairs left out (the
    wall-clock time VecMonitor adds)."""
    assert type(got) is list and len(got) == len(expected), where
    for i, (e, g) in enumerate(zip(expected, got, strict=True)):
        e, g = dict(e), dict(g)
        for key, sub in ignore:
            for info in (e, g):
                if key in info:
                    info[key] = {k: v for k, v in info[key].items() if k != sub}
        assert_same(e, g, f"{where}[{i}]", batched_scalars=True)


def sb3_run(
    ours: Any, theirs: Any, steps: int, seed: int = 0, ignore=(), reseed_every=0
) -> int:
    """Drive an SB3 VecEnv of ours and SB3's own with the same calls, comparing
    every result; returns how many sub-env episodes ended."""
    ours.seed(seed)
    theirs.seed(seed)
    assert_same_obs(theirs.reset(), ours.reset(), "reset")
    assert_same_infos(theirs.reset_infos, ours.reset_infos, "reset_infos")
    ended = 0
    actions = actions_for(theirs.action_space, steps, theirs.num_envs, seed)
    for t, batch in enumerate(actions):
        expected, got = theirs.step(batch), ours.step(batch)
        where = f"step {t}"
        assert_same_obs(expected[0], got[0], f"{where} obs")
        assert_same(expected[1], got[1], f"{where} rewards")
        assert_same(expected[2], got[2], f"{where} dones")
        assert_same_infos(expected[3], got[3], f"{where} infos", ignore)
        assert_same_infos(theirs.reset_infos, ours.reset_infos, f"{where} reset_infos")
        ended += int(expected[2].sum())
        if reseed_every and t % reseed_every == reseed_every - 1:
            # seed() and set_options() apply at the next reset, and only to it
            for venv in (ours, theirs):
                venv.seed(seed + t)
                venv.set_options({"level": t})
            assert_same_obs(theirs.reset(), ours.reset(), f"{where} reset")
            assert_same_infos(theirs.reset_infos, ours.reset_infos, f"{where} ri")
    return ended


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
@pytest.mark.parametrize("sub_envs", sorted(SUB_ENVS))
def test_to_sb3_is_dummy_vec_env_in_every_mode(sub_envs, mode):
    fns = SUB_ENVS[sub_envs]()
    ours, theirs = to_sb3(vecmode_env(fns, mode)), DummyVecEnv(fns)
    ended = sb3_run(ours, theirs, steps=1200, seed=3, reseed_every=400)
    assert ended > 100  # the run crossed many episode ends
    ours.close()
    theirs.close()


RECORDERS = {
    "vecmode": vecmode.wrappers.RecordEpisodeStatistics,
    "gymnasium": gym.wrappers.vector.RecordEpisodeStatistics,
}


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
@pytest.mark.parametrize("recorder", sorted(RECORDERS))
def test_episode_statistics_reach_sb3_as_monitors_do(recorder, mode):
    """SB3 logs an episode from info["episode"] where it ends, as Monitor puts
    it. In SameStep the statistics sat beside the next episode's reset info, and
    went to reset_infos; Gymnasium's recorder over Disabled lost them in the
    masked reset (its "_episode" mask is its own state, which reset clears)."""
    fns = SUB_ENVS["cartpole"]()
    ours = to_sb3(RECORDERS[recorder](vecmode_env(fns, mode)))
    theirs = DummyVecEnv([lambda fn=fn: Monitor(fn()) for fn in fns])
    assert sb3_run(ours, theirs, steps=300, seed=5, ignore=[("episode", "t")]) > 10
    ours.close()
    theirs.close()


class CountsEpisodes(gym.Wrapper):
    """Its reset info says which episode starts, under the key "episode"."""

    count = 0

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        self.count += 1
        return obs, {**info, "episode": self.count}


@pytest.mark.parametrize("mode", [NEXT, DISABLED], ids=lambda m: m.value)
def test_episode_statistics_stay_beside_a_reset_info_of_that_name(mode):
    """A recorder below the SameStep conversion has its statistics in the ending
    info already: its key in the reset info is the sub-env's own, which
    replaced the statistics (SB3's PPO then failed on an int)."""
    fns = [lambda: CountsEpisodes(gym.make("CartPole-v1")) for _ in range(2)]
    ours = to_sb3(vecmode.wrappers.RecordEpisodeStatistics(vecmode_env(fns, mode)))
    theirs = DummyVecEnv([lambda fn=fn: Monitor(fn()) for fn in fns])
    assert sb3_run(ours, theirs, steps=200, seed=5, ignore=[("episode", "t")]) > 5


def test_a_sub_envs_own_episode_statistics_are_kept_in_same_step():
    """SB3's Monitor inside, a reward clip between: SB3 gets Monitor's return,
    not the recorder's (clipped) one, silently swapped in."""
    fns = [lambda: Monitor(gym.make("CartPole-v1", max_episode_steps=5))]
    clipped = vecmode.wrappers.ClipReward(vecmode_env(fns, SAME), 0, 0.5)
    venv = to_sb3(vecmode.wrappers.RecordEpisodeStatistics(clipped))
    venv.reset()
    for _ in range(5):
        _, _, dones, infos = venv.step(np.array([0]))
    assert dones[0] and infos[0]["episode"]["r"] == 5.0  # Monitor's, not 2.5
    venv.close()


class DiscreteInDict(gym.Env):
    observation_space = gym.spaces.Dict({"pos": gym.spaces.Discrete(10)})
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return {"pos": 0}, {}

    def step(self, action):
        self.t += 1
        return {"pos": self.t}, 1.0, False, self.t == 2, {}


def test_to_sb3_over_make_vec_puts_same_step_on_the_core():
    """make_vec's NextStep policy was kept under the conversion: three layers,
    and terminal observations read back from the batch (np.int64 where
    DummyVecEnv gives a Python int)."""
    ours = to_sb3(vecmode.make_vec(DiscreteInDict, 1, "sync"))
    assert type(ours.vector_env) is vecmode.SameStepAutoreset
    assert type(ours.vector_env.env) is vecmode.SyncVectorEnv
    for venv in (ours, DummyVecEnv([DiscreteInDict])):
        venv.reset()
        venv.step(np.array([0]))
        _, _, dones, infos = venv.step(np.array([0]))
        final = infos[0]["terminal_observation"]["pos"]
        assert dones[0] and type(final) is int and final == 2, (venv, final)
    ours.close()


@pytest.mark.parametrize("mode", [NEXT, SAME], ids=lambda m: m.value)
@pytest.mark.parametrize("sub_envs", ["box", "dict", "cartpole"])
def test_to_sb3_over_the_async_core_is_dummy_vec_env(sub_envs, mode):
    fns = SUB_ENVS[sub_envs]()
    ours, theirs = to_sb3(vecmode_env(fns, mode, "async")), DummyVecEnv(fns)
    assert ours._send is not None  # it steps through the split API
    assert sb3_run(ours, theirs, steps=800, seed=5, reseed_every=300) > 100
    ours.close()
    theirs.close()


@pytest.mark.parametrize("mode", [NEXT, SAME], ids=lambda m: m.value)
def test_to_sb3_over_gymnasiums_own_envs_is_dummy_vec_env(mode):
    fns = SUB_ENVS["box"]()
    envs = gym.vector.SyncVectorEnv(fns, autoreset_mode=mode)
    ours, theirs = to_sb3(envs), DummyVecEnv(fns)
    assert sb3_run(ours, theirs, steps=600, seed=1, reseed_every=200) > 100
    ours.close()
    theirs.close()


WRAPPERS = {
    "VecNormalize": (VecNormalize, ("box", "cartpole")),
    "VecFrameStack": (functools.partial(VecFrameStack, n_stack=3), ("box", "image")),
    "VecMonitor": (VecMonitor, ("box", "discrete", "cartpole")),
}


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
@pytest.mark.parametrize(
    ("wrapper", "sub_envs"),
    [(w, s) for w, (_, kinds) in WRAPPERS.items() for s in kinds],
)
def test_to_sb3_under_sb3s_wrappers_is_dummy_vec_env(wrapper, sub_envs, mode):
    wrap = WRAPPERS[wrapper][0]
    fns = SUB_ENVS[sub_envs]()
    ours = wrap(to_sb3(vecmode_env(fns, mode)))
    theirs = wrap(DummyVecEnv(fns))
    ignore = [("episode", "t")]  # VecMonitor's wall-clock time
    ended = sb3_run(ours, theirs, steps=1000, seed=7, ignore=ignore)
    assert ended > 100
    ours.close()
    theirs.close()


@settings(max_examples=40)
@given(
    lengths=st.lists(
        st.lists(st.integers(1, 6), min_size=1, max_size=3), min_size=1, max_size=4
    ),
    truncate=st.lists(st.booleans(), min_size=1, max_size=3),
    limit=st.integers(1, 8),
    obs_type=st.sampled_from(["box", "discrete", "dict"]),
    mode=st.sampled_from(MODES),
    seed=st.integers(0, 2**16),
)
def test_to_sb3_is_dummy_vec_env_for_any_schedule(
    lengths, truncate, limit, obs_type, mode, seed
):
    """Any episode lengths, ends by either flag or by a TimeLimit (sub-env 0),
    together or apart."""
    fns = [
        functools.partial(ScheduledEnv, i, ls, truncate, obs_type)
        for i, ls in enumerate(lengths)
    ]
    fns[0] = functools.partial(limited, fns[0], limit)
    ours, theirs = to_sb3(vecmode_env(fns, mode)), DummyVecEnv(fns)
    sb3_run(ours, theirs, steps=40, seed=seed, reseed_every=17)
    ours.close()
    theirs.close()


@pytest.mark.parametrize("env", ["SameStep", "NextStep", "gymnasium-NextStep"])
def test_infos_come_back_as_gymnasium_batches_them(env):
    """The documented difference, shown: a Python int in a sub-env's info comes
    back as np.int64 (equal to it) when it went through Gymnasium's batched info;
    arrays, nested dicts and strings as they were. Over SAME_STEP's policy directly
    on a vecmode core (to_sb3 puts it in place of make_vec's NextStep), the ended
    step's info is the sub-env's own."""
    fns = SUB_ENVS["box"]()
    envs = (
        gym.vector.SyncVectorEnv(fns)
        if env.startswith("gymnasium")
        else vecmode_env(fns, env)
    )
    ours, theirs = to_sb3(envs), DummyVecEnv(fns)
    for venv in (ours, theirs):
        venv.seed(0)
        venv.reset()
    batch = np.zeros(4, dtype=np.int64)
    (*_, expected), (*_, got) = theirs.step(batch), ours.step(batch)
    assert type(expected[0]["step"]) is int and type(got[0]["step"]) is np.int64
    for _ in range(2):  # sub-env 0's first episode ends at its third step
        (*_, expected), (*_, got) = theirs.step(batch), ours.step(batch)
    assert "terminal_observation" in got[0]
    assert got[0]["step"] == expected[0]["step"] == 3
    batched = np.int64 if env.startswith("gymnasium") else int
    assert type(got[0]["step"]) is batched
    assert type(got[0]["nested"]["tag"]) is str
    assert type(got[0]["TimeLimit.truncated"]) is bool  # ours, not batched
    ours.close()
    theirs.close()


class _Infos(gym.Env):
    """A sub-env whose every step's info is ``info``."""

    observation_space = gym.spaces.Box(-1, 1, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, info: dict) -> None:
        self.info = info

    def reset(self, *, seed=None, options=None):
        return np.zeros(1, np.float32), {}

    def step(self, action):
        return np.zeros(1, np.float32), 0.0, False, False, dict(self.info)


@pytest.mark.parametrize("mode", ["NextStep", "SameStep"])
def test_infos_of_two_types_or_other_keys_come_back_as_dummy_vec_env_s(mode):
    """A cost of 0 in one sub-env and 0.5 in another came back as 0 and 0 (the
    batch typed after the int); an int key crashed DictInfoToList."""
    infos = [{"cost": 0, 1: "a", ("t", 2): True}, {"cost": 0.5, 1: "b"}]
    fns = [functools.partial(_Infos, info) for info in infos]
    ours, theirs = to_sb3(vecmode_env(fns, mode)), DummyVecEnv(fns)
    for venv in (ours, theirs):
        venv.reset()
    actions = np.zeros(2, dtype=np.int64)
    assert ours.step(actions)[3] == theirs.step(actions)[3]
    ours.close()
    theirs.close()


#: SB3 calls on sub-envs, each with its ``indices``; run on ours and on DummyVecEnv
SUB_ENV_CALLS = [
    ("set_attr", ("label", "x"), {"indices": [1, 3]}),
    ("get_attr", ("label",), {"indices": [3, 1]}),
    ("get_attr", ("label",), {"indices": 0}),  # AttributeError: 0 was not set
    ("has_attr", ("label",), {}),
    ("set_attr", ("label", "y"), {}),
    ("has_attr", ("label",), {}),
    ("get_attr", ("label",), {"indices": -1}),
    ("env_method", ("bump",), {"indices": [2]}),
    ("env_method", ("bump", 5), {"indices": [0, 2, 2]}),
    ("env_method", ("bump",), {"by": 2}),
    ("get_attr", ("bumps",), {}),
    ("get_attr", ("index",), {"indices": range(1, 3)}),
    ("env_is_wrapped", (Monitor,), {}),
    ("env_is_wrapped", (gym.wrappers.TimeLimit,), {"indices": [3, 0]}),
    ("env_method", ("no_such_method",), {"indices": [1]}),  # AttributeError
]


def _outcome(venv: Any, name: str, args: tuple, kwargs: dict) -> Any:
    try:
        return getattr(venv, name)(*args, **kwargs)
    except AttributeError:
        return AttributeError


@pytest.mark.parametrize("core", sorted(CORES))
def test_sub_env_calls_honour_indices_as_dummy_vec_env(core):
    """get_attr, set_attr, env_method and env_is_wrapped act on the sub-envs at
    ``indices`` only (the bump counts tell), in each sub-env's own process for the
    async core, with DummyVecEnv's results and errors."""
    fns = tagged_fns()
    ours, theirs = CORES[core](fns), DummyVecEnv(fns)
    for name, args, kwargs in SUB_ENV_CALLS:
        expected = _outcome(theirs, name, args, kwargs)
        assert _outcome(ours, name, args, kwargs) == expected, (name, args, kwargs)
    assert ours.env_method("bump", indices=[1])[0] == (1, 3)  # 1 bumped once before
    ours.close()
    theirs.close()


def test_dict_info_to_list_is_refused_when_built_saying_to_leave_it_out():
    """It failed at the first reset, saying to make DictInfoToList outermost."""
    envs = vecmode.wrappers.DictInfoToList(
        vecmode.make_vec("CartPole-v1", 2, "sync", autoreset_mode="SameStep")
    )
    with pytest.raises(TypeError, match="leave DictInfoToList out"):
        to_sb3(envs)
    envs.close()


def test_sub_env_calls_over_an_env_whose_sub_envs_are_out_of_reach():
    """Gymnasium's AsyncVectorEnv calls every sub-env or none: what can be done
    exactly is, the rest raises AttributeError saying why (SB3's VecMonitor
    treats that as "not wrapped", as it does for its own envs)."""
    fns = tagged_fns()
    envs = gym.vector.AsyncVectorEnv(fns, context=FORK)
    ours, theirs = to_sb3(envs), DummyVecEnv(fns)
    assert ours.get_attr("index", indices=[2, 0]) == [2, 0]
    assert ours.env_method("bump") == theirs.env_method("bump")
    for what, call in (
        ("set_attr", lambda: ours.set_attr("label", "x", indices=[1])),
        ("env_method", lambda: ours.env_method("bump", indices=[1])),
        ("env_is_wrapped", lambda: ours.env_is_wrapped(Monitor)),
    ):
        with pytest.raises(AttributeError, match=r"vecmode\.AsyncVectorEnv") as info:
            call()
        # of every sub-env too: not "at once only", which is what was asked
        assert f"and SB3's {what} is not one of them" in str(info.value)
    # a missing attribute: AttributeError, as DummyVecEnv's; the workers live on
    with pytest.raises(AttributeError, match="no_such_attribute"):
        ours.get_attr("no_such_attribute")
    assert ours.get_attr("index") == [0, 1, 2, 3]
    VecMonitor(ours).close()


@envpool_warnings
@pytest.mark.filterwarnings("ignore:The `render_mode` attribute is not defined")
def test_sub_env_calls_over_an_env_with_no_python_sub_envs():
    """EnvPool's C++ sub-envs: nothing a gymnasium.Wrapper could wrap, so
    env_is_wrapped is False for each (SB3's evaluate_policy asks it), and the
    attribute calls say why they cannot be made."""
    envpool = pytest.importorskip("envpool")
    from stable_baselines3 import PPO
    from stable_baselines3.common.evaluation import evaluate_policy

    pool = envpool.make(
        "CartPole-v1", env_type="gymnasium", num_envs=2, seed=0, max_episode_steps=5
    )
    venv = to_sb3(pool)
    assert venv.env_is_wrapped(Monitor) == [False, False]
    assert venv.env_is_wrapped(Monitor, indices=[1]) == [False]
    for call in (
        lambda: venv.get_attr("spec"),
        lambda: venv.set_attr("label", "x", indices=[1]),
        lambda: venv.env_method("render"),
    ):
        with pytest.raises(AttributeError, match="runs its sub-envs outside Python"):
            call()
    model = PPO("MlpPolicy", venv, n_steps=8, batch_size=8, device="cpu")
    with pytest.warns(UserWarning, match="not wrapped with a ``Monitor`` wrapper"):
        mean, _ = evaluate_policy(model, venv, n_eval_episodes=2)
    assert 1 <= mean <= 5
    venv.close()


@envpool_warnings
@pytest.mark.parametrize("library", ["envpool", "ale_py"])
def test_sub_envs_out_of_reach_take_the_vector_env_s_render_mode(library):
    """SB3 reads render_mode from the sub-envs: out of reach (C++), it warned
    "The `render_mode` attribute is not defined" and set None."""
    pytest.importorskip(library)
    if library == "envpool":
        import envpool

        envs = envpool.make("CartPole-v1", env_type="gymnasium", num_envs=2)
    else:
        from ale_py.vector_env import AtariVectorEnv

        envs = AtariVectorEnv("breakout", num_envs=2)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", "The `render_mode` attribute")
        venv = to_sb3(envs)
    assert venv.render_mode == getattr(envs, "render_mode", None)
    venv.close()


def test_sub_env_calls_over_from_sb3_are_the_sb3_vec_envs_own():
    """to_sb3(from_sb3(venv)): SB3's calls reach venv's sub-envs, at the indices
    asked for, as venv answers them."""
    fns = tagged_fns()
    wrapped = [lambda fn=fn: Monitor(fn()) for fn in fns]
    inner = DummyVecEnv(wrapped)
    ours = to_sb3(from_sb3(inner))
    assert ours.env_is_wrapped(Monitor) == [True] * 4
    assert ours.env_is_wrapped(Monitor, indices=[2]) == [True]
    assert ours.get_attr("index", indices=[2, 0]) == [2, 0]
    ours.set_attr("label", "x", indices=[1])
    assert inner.get_attr("label", indices=[1]) == ["x"]
    assert ours.env_method("bump", 2, indices=[3]) == [(3, 2)]
    assert inner.env_method("bump", indices=[3]) == [(3, 3)]
    ours.close()


@pytest.mark.parametrize("core", sorted(CORES))
def test_seed_and_options_apply_at_the_next_reset_only(core):
    fns = tagged_fns()
    ours, theirs = CORES[core](fns), DummyVecEnv(fns)
    for venv in (ours, theirs):
        venv.reset()
        assert venv.seed(11) == list(range(11, 15))
        venv.set_options({"level": 2})
        venv.step(np.zeros(4, dtype=np.int64))  # not a reset: nothing applied
    assert ours.reset_infos[0].get("options") is None
    assert_same_obs(theirs.reset(), ours.reset(), "seeded reset")
    assert_same_infos(theirs.reset_infos, ours.reset_infos, "seeded reset")
    assert ours.reset_infos[2]["options"] == {"level": 2}
    seeded = [info["noise"] for info in ours.reset_infos]
    assert_same_obs(theirs.reset(), ours.reset(), "next reset")
    assert_same_infos(theirs.reset_infos, ours.reset_infos, "next reset")
    assert "options" not in ours.reset_infos[2]
    again = to_sb3(vecmode_env(fns, SAME))  # the same seeds give the same noise
    again.seed(11)
    again.reset()
    assert [info["noise"] for info in again.reset_infos] == seeded
    assert [info["noise"] for info in ours.reset_infos] != seeded
    for venv in (ours, theirs, again):
        venv.close()


def test_set_options_takes_one_dict_for_every_sub_env():
    ours = to_sb3(vecmode_env(tagged_fns(), SAME))
    ours.set_options([{"level": 1}] * 4)  # equal dicts: fine
    # equal dicts, not the same objects, with arrays and sequences inside: fine
    ours.set_options([{"start": np.array([0.5, 0.5]), "n": [1, (2,)]} for _ in "abcd"])
    ours.reset()
    assert_same(ours.reset_infos[3]["options"]["start"], np.array([0.5, 0.5]))
    with pytest.raises(ValueError, match="a list of 4"):
        ours.set_options([{"level": 1}])
    ours.reset()  # the refused options were dropped
    assert "options" not in ours.reset_infos[0]
    ours.close()


class KeepsOptions(gym.Env):
    """Keeps the options of its last reset."""

    observation_space = gym.spaces.Discrete(2)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.options = options
        return 0, {}

    def step(self, action):
        return 0, 0.0, False, False, {}


def test_set_options_equal_but_not_the_same_reach_each_sub_env_as_given():
    """True == 1 == 1.0 and an array equals a list, but each sub-env gets its own
    (it got the first of the equal ones), as from DummyVecEnv."""
    given = [{"k": 1}, {"k": True}, {"k": 1.0}, {"k": np.array([1])}]
    given += [{"k": [1]}, {"k": np.array([1.0])}]
    fns = [KeepsOptions] * len(given)
    ours, theirs = to_sb3(vecmode_env(fns, SAME)), DummyVecEnv(fns)
    for venv in (ours, theirs):
        venv.set_options(given)
        venv.reset()
    for want, got, dummy in zip(
        given, ours.get_attr("options"), theirs.get_attr("options"), strict=True
    ):
        assert type(got["k"]) is type(want["k"]) is type(dummy["k"])
        assert getattr(got["k"], "dtype", None) == getattr(want["k"], "dtype", None)
    ours.close()


PER_SUB_ENV = [{"level": 1}, {"level": 2, "start": np.array([0.5])}, {}, {"level": 1}]


@pytest.mark.parametrize("core", ["sync", "async"])
@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_set_options_gives_each_sub_env_its_own_as_dummy_vec_env(mode, core):
    """A list of different dicts: each sub-env gets its own at the next reset
    (sub-env 2 none), with the seeds, as DummyVecEnv and SubprocVecEnv do."""
    fns = tagged_fns()
    ours = to_sb3(vecmode_env(fns, mode, core))
    theirs = [DummyVecEnv(fns), SubprocVecEnv(fns, start_method=FORK)]
    for step in range(2):  # before the first reset, and after steps
        for venv in (ours, *theirs):
            venv.seed(7 + step)
            venv.set_options(PER_SUB_ENV)
        obs = ours.reset()
        for other in theirs:
            assert_same_obs(other.reset(), obs, "reset")
            assert_same_infos(other.reset_infos, ours.reset_infos, "reset_infos")
        assert "options" not in ours.reset_infos[2]
        assert ours.reset_infos[1]["options"]["level"] == 2
        for t in range(6):  # the next autoresets get no options
            actions = np.zeros(4, dtype=np.int64)
            expected = [other.step(actions) for other in theirs]
            got = ours.step(actions)
            for e in expected:
                assert_same_obs(e[0], got[0], f"step {t}")
                assert_same_infos(e[3], got[3], f"step {t}", [("episode", "t")])
                assert_same_infos(theirs[0].reset_infos, ours.reset_infos, "ri")
    for venv in (ours, *theirs):
        venv.close()


def test_set_options_per_sub_env_before_a_first_reset_needs_vecmode_s_cores():
    """Gymnasium's own envs take no masked reset before their first reset."""
    ours = to_sb3(gym.vector.SyncVectorEnv(tagged_fns()))
    with pytest.raises(ValueError, match="before its first reset"):
        ours.set_options(PER_SUB_ENV)
    ours.reset()  # nothing pending: the refused options were dropped
    assert "options" not in ours.reset_infos[0]
    ours.set_options(PER_SUB_ENV)  # after a reset: fine
    ours.reset()
    assert [info.get("options", {}).get("level") for info in ours.reset_infos] == [
        1,
        2,
        None,
        1,
    ]
    ours.close()


class SeedOnly(ScheduledEnv):
    """An env whose reset takes a seed but no options (SB3 supports such envs)."""

    def reset(self, *, seed: int | None = None) -> Any:  # type: ignore[override]
        return super().reset(seed=seed)


class NoResetArguments(ScheduledEnv):
    """An env whose reset takes neither seed nor options."""

    def reset(self) -> Any:  # type: ignore[override]
        return super().reset()


@pytest.mark.parametrize("core", ["sync", "async"])
@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_an_env_whose_reset_takes_no_options_runs_through_to_sb3(mode, core):
    """seed= and options= reach a sub-env only when SB3 has them: a seeded first
    reset, bare autoresets and resets; an env taking neither runs unseeded."""
    fns = [functools.partial(SeedOnly, i, (2, 3), (i == 1,)) for i in range(3)]
    ours, theirs = to_sb3(vecmode_env(fns, mode, core)), DummyVecEnv(fns)
    assert sb3_run(ours, theirs, steps=40, seed=2) > 20
    assert_same_obs(theirs.reset(), ours.reset(), "an unseeded reset")
    assert_same_infos(theirs.reset_infos, ours.reset_infos, "reset_infos")
    ours.close()
    fns = [functools.partial(NoResetArguments, i, (2, 3)) for i in range(3)]
    bare = to_sb3(vecmode_env(fns, mode, core))
    bare.reset()
    ended = 0
    for _ in range(8):  # the autoresets
        ended += int(bare.step(np.zeros(3, dtype=np.int64))[2].sum())
    assert ended == 9  # each sub-env ended 3 episodes (2, 3, 2 steps)
    bare.reset()
    bare.close()


def test_to_sb3_refuses_a_nested_observation_space_as_dummy_vec_env():
    inner = gym.spaces.Dict({"b": gym.spaces.Discrete(2)})
    for space in (
        gym.spaces.Dict({"a": inner}),
        gym.spaces.Dict({"a": gym.spaces.Tuple((gym.spaces.Discrete(2),))}),
    ):
        fns = [functools.partial(_with_observation_space, space)]
        with pytest.raises(NotImplementedError):
            DummyVecEnv(fns)
        envs = vecmode.SyncVectorEnv(fns)
        with pytest.raises(NotImplementedError, match="FlattenObservation"):
            to_sb3(envs)
        envs.close()


def _with_observation_space(space: gym.Space) -> gym.Env:
    env = ScheduledEnv(0, (3,))
    env.observation_space = space
    return env


@pytest.mark.parametrize("core", sorted(CORES))
def test_render_and_get_images_as_dummy_vec_env(core):
    fns = tagged_fns("rgb_array")
    ours, theirs = CORES[core](fns), DummyVecEnv(fns)
    for venv in (ours, theirs):
        venv.seed(0)
        venv.reset()
        venv.step(np.ones(4, dtype=np.int64))
    assert ours.render_mode == theirs.render_mode == "rgb_array"
    assert_same(theirs.get_images(), ours.get_images(), "images")
    assert_same(theirs.render(), ours.render(), "tiled")
    assert_same(theirs.render("rgb_array"), ours.render("rgb_array"), "tiled")
    ours.close()
    theirs.close()
    ours = CORES[core](tagged_fns())
    with pytest.warns(UserWarning, match="rgb_array"):
        assert ours.get_images() == [None] * 4
    ours.close()


@pytest.mark.parametrize("core", ["vecmode-sync", "vecmode-async"])
def test_close_closes_the_vector_env(core):
    ours = CORES[core](tagged_fns())
    ours.reset()
    ours.close()
    assert ours.vector_env.unwrapped.closed
    with pytest.raises(gym.error.ClosedEnvironmentError):
        ours.reset()


def test_step_async_sends_through_the_split_api_where_there_is_one():
    """Over the async core the sub-envs step while the caller goes on; over the
    sync core step_wait does the work."""
    from tests.helpers import SlowEnv

    delay = 0.4
    fns = [functools.partial(SlowEnv, i, delay) for i in range(2)]
    waits = {}
    for core in ("sync", "async"):
        venv = to_sb3(vecmode_env(fns, SAME, core))
        venv.reset()
        started = time.perf_counter()
        venv.step_async(np.zeros(2, dtype=np.int64))
        assert time.perf_counter() - started < delay / 2
        time.sleep(delay * 2.5)
        started = time.perf_counter()
        venv.step_wait()
        waits[core] = time.perf_counter() - started
        venv.close()
    assert waits["sync"] >= delay and waits["async"] < delay / 2, waits


class Remembering(ScheduledEnv):
    """Puts the same list object, which it keeps changing, in every info."""

    def __init__(self, index: int = 0) -> None:
        super().__init__(index, lengths=(2,))
        self.seen: list[int] = []

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        self.seen.append(self.t)
        return obs, reward, terminated, truncated, {**info, "seen": self.seen}


def test_infos_share_no_object_with_the_sub_envs():
    """DummyVecEnv hands out deep copies of the infos; so does to_sb3."""
    fns = [functools.partial(Remembering, i) for i in range(2)]
    for venv in (to_sb3(vecmode_env(fns, SAME)), DummyVecEnv(fns)):
        venv.reset()
        for seen in ([1], [1, 2]):  # the second step ends the episodes
            *_, infos = venv.step(np.zeros(2, dtype=np.int64))
            assert infos[0]["seen"] == seen
            infos[0]["seen"].append(99)
            assert venv.get_attr("seen")[0] == seen
        venv.close()


def test_to_sb3_refuses_what_it_cannot_do_exactly():
    with pytest.raises(TypeError, match=r"gymnasium\.vector\.VectorEnv") as caught:
        to_sb3(DummyVecEnv(tagged_fns()))
    assert "a Stable-Baselines3 VecEnv (SB3 takes it as it is" in str(caught.value)
    numpy_cartpole = gym.make_vec(
        "CartPole-v1", 2, vectorization_mode="vector_entry_point"
    )
    with pytest.raises(IncompatibleModeError, match="CartPoleVectorEnv"):
        to_sb3(numpy_cartpole)  # it resets every sub-env whatever the mask
    undeclared = gym.vector.SyncVectorEnv(tagged_fns())
    undeclared.metadata.pop("autoreset_mode")
    with pytest.raises(IncompatibleModeError, match="autoreset_mode"):
        to_sb3(undeclared)
    ours = to_sb3(vecmode_env(tagged_fns(), SAME))
    for name in ("step", "reset", "close"):
        with pytest.raises(ValueError, match="behind the VecEnv's back"):
            ours.env_method(name)
    with pytest.raises(IndexError, match="out of range for 4 sub-envs"):
        ours.get_attr("index", indices=[4])
    with pytest.raises(RuntimeError, match="step_async"):
        ours.step_wait()
    ours.close()


def python_prints(code: str) -> str:
    """What ``code`` prints in a fresh interpreter."""
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout


@pytest.mark.slow
def test_importing_vecmode_imports_neither_sb3_nor_torch():
    code = (
        "import sys, vecmode, vecmode.sb3_subenv\n"
        "print(sorted(m for m in ('stable_baselines3', 'torch') if m in sys.modules))"
    )
    assert python_prints(code).strip() == "[]"


@pytest.mark.slow
def test_without_sb3_the_error_names_the_extra():
    code = (
        "import sys\nsys.modules['stable_baselines3'] = None\n"
        "try:\n    import vecmode.sb3\nexcept ImportError as error:\n    print(error)"
    )
    said = python_prints(code)
    assert "pip install stable-baselines3 (or, in a vecmode checkout, pip" in said
    assert 'install ".[sb3]"' in said


@pytest.mark.slow
def test_workers_run_sb3_calls_without_importing_sb3():
    """The functions sent to the workers live in vecmode.sb3_subenv (no SB3)."""
    fns = [functools.partial(ScheduledEnv, i) for i in range(2)]
    core = vecmode.AsyncVectorEnv(fns, num_workers=1, context="spawn")
    ours = to_sb3(vecmode.with_autoreset(core, SAME))
    assert ours.get_attr("index") == [0, 1]
    assert ours.env_is_wrapped(gym.Wrapper) == [False, False]
    loaded = core.each(
        lambda env: sorted(
            m for m in ("stable_baselines3", "torch") if m in sys.modules
        )
    )
    assert loaded == ([], [])
    ours.close()


@pytest.mark.parametrize("name", ["reset", "close", "step"])
def test_env_method_refuses_the_vec_env_s_own_calls_in_sb3_s_words(name):
    """DummyVecEnv runs env_method("reset") behind its own back; to_sb3 refuses
    it (its record of ended sub-envs would be wrong), and said so in
    Gymnasium's words, call('reset'), with a remedy an SB3 user cannot use."""
    venv = to_sb3(vecmode.make_vec("CartPole-v1", 2, vectorization_mode="sync"))
    with pytest.raises(ValueError) as info:
        venv.env_method(name, indices=[0])
    instead = (
        "venv.step_async(actions) / venv.step_wait()"
        if name == "step"
        else f"venv.{name}() (all sub-envs: SB3's VecEnv has no {name} of some)"
    )
    assert str(info.value) == (
        f"env_method({name!r}) would run the sub-envs' {name} behind the VecEnv's "
        f"back; use {instead}."
    )
    venv.reset()  # usable
    venv.close()


def test_to_sb3_of_from_sb3_is_the_sb3_env_itself():
    """The round trip changes nothing SB3 sees (terminated-and-truncated steps
    included: SB3 encodes them as terminated, both ways)."""
    fns = SUB_ENVS["box"]()
    ours, theirs = to_sb3(from_sb3(DummyVecEnv(fns))), DummyVecEnv(fns)
    assert sb3_run(ours, theirs, steps=400, seed=6, reseed_every=150) > 50
    ours.close()
    theirs.close()


DICT_TUPLE_BRIDGES = {
    **CORES,
    "gymnasium-async": lambda fns: to_sb3(gym.vector.AsyncVectorEnv(fns, context=FORK)),
    "from_sb3-dummy": lambda fns: to_sb3(from_sb3(DummyVecEnv(fns))),
}


@pytest.mark.parametrize("space", sorted(ACTION_SPACES))
@pytest.mark.parametrize("bridge", sorted(DICT_TUPLE_BRIDGES))
def test_to_sb3_takes_sb3s_per_env_list_of_dict_or_tuple_actions(bridge, space):
    """SB3's VecEnv takes a list of one action per sub-env (DummyVecEnv's
    actions[i]; SB3's tests pass them so); to_sb3 takes it too, and Gymnasium's
    batch layout as before. Vecmode's cores raised ActionBatchError, Gymnasium's
    SyncVectorEnv a TypeError or IndexError."""
    fns = recorders(space)
    ours, theirs = DICT_TUPLE_BRIDGES[bridge](fns), DummyVecEnv(fns)
    sampler = ACTION_SPACES[space]
    sampler.seed(5)
    per_env = [[sampler.sample() for _ in range(3)] for _ in range(7)]
    per_env[0] = (
        [(1, 3), (2, 4), (0, 1)]
        if space == "tuple"
        else [
            {
                "x": i,
                "y": np.full(2, i / 4, np.float32),
                "z": (np.array([i % 2, 1], np.int8), i),
            }
            for i in range(3)
        ]
    )
    for venv in (ours, theirs):
        venv.reset()
        for actions in per_env:
            venv.step(actions)
    expected, got = theirs.get_attr("received"), ours.get_attr("received")
    assert_same(expected, got, "received", batched_scalars=True)
    # Gymnasium's batch layout is taken as well
    batch = batch_space(sampler, 3).sample()
    ours.step(batch)
    assert_same(
        list(gym.vector.utils.iterate(batch_space(sampler, 3), batch)),
        [received[-1] for received in ours.get_attr("received")],
        "Gymnasium's batch",
    )
    before = ours.get_attr("received")
    wrong = [
        per_env[0][:2],  # too few
        tuple(per_env[0]),  # SB3's per-env actions, but not in a list
        [per_env[0][0], per_env[0][1], 7],  # not an action
        np.zeros(3, dtype=np.int64),
    ]
    if space == "dict":
        wrong.append([{**a, "extra": 1} for a in per_env[0]])
        wrong.append([{"x": 1, "y": a["y"], "z": a["z"]} for a in per_env[0][:2]])
    for actions in wrong:
        with pytest.raises(ActionBatchError) as info:
            ours.step(actions)
        message = str(info.value)
        assert "nothing was stepped" in message, message
        assert "SB3's layout, a list of 3 actions" in message, message
        assert "Gymnasium's batch layout" in message, message
    assert_same(before, ours.get_attr("received"), "nothing stepped")
    ours.step(per_env[1])  # still usable
    ours.close()
    theirs.close()


@pytest.mark.parametrize(
    "wrap", [lambda venv: venv, VecNormalize], ids=["bare", "VecNormalize"]
)
def test_has_attr_over_from_sb3_of_subproc_vec_env_keeps_its_workers(wrap):
    """SB3's base has_attr calls get_attr, which a SubprocVecEnv's worker does
    not survive for a missing attribute (its own has_attr is a safe command):
    to_sb3(from_sb3(...)).has_attr is the SB3 VecEnv's own."""
    fns = tagged_fns()
    inner = wrap(SubprocVecEnv(fns, start_method=FORK))
    ours = to_sb3(from_sb3(inner))
    assert ours.has_attr("no_such_attribute") is False
    assert ours.has_attr("bumps") is True
    ours.reset()
    ours.step(np.zeros(4, dtype=np.int64))  # the workers are alive
    assert ours.get_attr("index") == [0, 1, 2, 3]
    ours.close()


@pytest.mark.parametrize("core", sorted(DICT_TUPLE_BRIDGES))
def test_has_attr_is_dummy_vec_envs_over_every_source(core):
    fns = tagged_fns()
    ours, theirs = DICT_TUPLE_BRIDGES[core](fns), DummyVecEnv(fns)
    for name in ("bumps", "no_such_attribute", "index"):
        assert ours.has_attr(name) is theirs.has_attr(name), name
    ours.reset()
    ours.step(np.zeros(4, dtype=np.int64))
    ours.close()
    theirs.close()


@pytest.mark.parametrize(
    "source",
    ["vecmode-sync", "gymnasium-sync", "from_sb3-dummy"],
)
def test_envs_are_the_sub_envs_where_they_are_in_this_process(source):
    """SB3 code reaches venv.envs[0] (DummyVecEnv's list of sub-envs)."""
    fns = tagged_fns()
    ours = DICT_TUPLE_BRIDGES[source](fns)
    holder = (
        ours.vector_env.unwrapped.venv
        if source == "from_sb3-dummy"
        else ours.vector_env.unwrapped
    )
    assert ours.envs is holder.envs
    assert [env.unwrapped.index for env in ours.envs] == [0, 1, 2, 3]
    ours.envs[2].unwrapped.bumps = 7  # the very sub-env the calls reach
    assert ours.get_attr("bumps") == [0, 0, 7, 0]
    assert isinstance(ours.envs[1], Monitor)
    assert VecMonitor(ours).envs is ours.envs  # through SB3's wrappers
    ours.close()


@pytest.mark.parametrize(
    "source", ["vecmode-async", "gymnasium-async", "from_sb3-subproc"]
)
def test_envs_says_where_the_sub_envs_are_elsewhere(source):
    fns = tagged_fns()
    ours = (
        to_sb3(from_sb3(SubprocVecEnv(fns, start_method=FORK)))
        if source == "from_sb3-subproc"
        else DICT_TUPLE_BRIDGES[source](fns)
    )
    with pytest.raises(AttributeError, match="in other processes") as info:
        ours.envs  # noqa: B018
    assert "get_attr" in str(info.value) and "env_method" in str(info.value)
    assert not hasattr(ours, "envs")
    ours.close()


def _train(algo: str, venv: Any, steps: int) -> tuple[list, list, int]:
    import torch
    from stable_baselines3 import DQN, PPO
    from stable_baselines3.common.logger import Logger

    torch.set_num_threads(1)  # a small network: one thread is fastest
    kwargs = {"policy_kwargs": {"net_arch": [16]}, "seed": 0, "device": "cpu"}
    if algo == "PPO":
        model = PPO("MlpPolicy", venv, n_steps=64, batch_size=64, n_epochs=2, **kwargs)
    else:
        model = DQN(
            "MlpPolicy",
            venv,
            learning_starts=300,
            buffer_size=2000,
            train_freq=4,
            target_update_interval=200,
            **kwargs,
        )
    # SB3's default logger makes a folder in the system's temp dir per learn()
    model.set_logger(Logger(folder=None, output_formats=[]))
    initial = [p.detach().clone() for p in model.policy.parameters()]
    model.learn(total_timesteps=steps)
    params = [p.detach().clone() for p in model.policy.parameters()]
    assert not all(torch.equal(a, b) for a, b in zip(initial, params, strict=True))
    episodes = [(e["r"], e["l"]) for e in model.ep_info_buffer]
    venv.close()
    return params, episodes, model.num_timesteps


@pytest.mark.slow
@pytest.mark.parametrize("core", ["sync", "async"])
@pytest.mark.parametrize("algo", ["PPO", "DQN"])
def test_training_on_to_sb3_is_training_on_dummy_vec_env(algo, core):
    """PPO and DQN train on to_sb3(vecmode env) exactly as on DummyVecEnv: the same
    seeds give the same episodes and the same weights after 2000 steps."""
    import torch

    fns = cartpoles(4, limit=60)
    ours = _train(algo, VecMonitor(to_sb3(vecmode_env(fns, NEXT, core))), 2000)
    theirs = _train(algo, VecMonitor(DummyVecEnv(fns)), 2000)
    assert ours[2] == theirs[2] >= 2000
    assert len(ours[1]) > 20 and ours[1] == theirs[1]
    assert all(torch.equal(a, b) for a, b in zip(ours[0], theirs[0], strict=True))


class RaisesAtItsThirdStep(ScheduledEnv):
    def step(self, action: Any) -> Any:
        if self.t == 2:
            raise RuntimeError("the sub-env's own bug")
        return super().step(action)


@pytest.mark.parametrize("core", ["vecmode-sync", "vecmode-async"])
def test_a_sub_env_fault_tells_an_sb3_caller_what_to_do(core):
    """The SubEnvError names the sub-env; its note says what an SB3 VecEnv can do
    (reset(), not the masked reset the message offers); reset() recovers."""
    fns = [functools.partial(RaisesAtItsThirdStep, i, (9,)) for i in range(2)]
    venv = CORES[core](fns)
    venv.reset()
    venv.step(np.zeros(2, dtype=np.int64))
    venv.step(np.zeros(2, dtype=np.int64))
    with pytest.raises(vecmode.SubEnvError) as caught:
        venv.step(np.zeros(2, dtype=np.int64))
    assert caught.value.index == 0
    if sys.version_info >= (3, 11):
        assert caught.value.__notes__ == [AFTER_A_FAULT]
    venv.reset()
    venv.step(np.zeros(2, dtype=np.int64))
    venv.close()


def test_without_add_note_the_sb3_advice_joins_the_message():
    """Python 3.10 has no add_note: the advice goes into the message itself."""
    from vecmode.sb3.to_vec_env import _sb3_advice

    class NoNotes(vecmode.EpisodeEndedError):
        add_note = None

    with pytest.raises(vecmode.EpisodeEndedError) as caught, _sb3_advice():
        raise NoNotes([1])
    assert str(caught.value).endswith(f"\n{AFTER_A_FAULT}")
    assert caught.value.indices == (1,)


def test_a_batch_of_two_actions_on_one_sub_env_is_refused_where_sb3_steps_one():
    """Documented (docs/integrations.md): DummyVecEnv steps the first action."""
    ours, theirs = to_sb3(vecmode_env(cartpoles(1), SAME)), DummyVecEnv(cartpoles(1))
    for venv in (ours, theirs):
        venv.reset()
    assert theirs.step(np.array([1, 0]))[0].shape == (1, 4)
    with pytest.raises(ActionBatchError, match="got a batch of 2; nothing was stepped"):
        ours.step(np.array([1, 0]))
    ours.step(np.array([1]))  # still usable
    ours.close()


@pytest.mark.parametrize("vectorization", ["sync", "async"])
def test_to_sb3_follows_an_episode_seed_schedule_in_every_mode(vectorization):
    def run(mode):
        envs = vecmode.make_vec(
            "CartPole-v1", 2, vectorization, autoreset_mode=mode, episode_seeds=7
        )
        venv = to_sb3(envs)
        venv.seed(1)  # under a schedule: restarts it from run seed 1
        out = [venv.reset()]
        for t in range(40):  # each sub-env ends a few episodes
            obs, _, dones, infos = venv.step(np.array([t % 2, (t // 3) % 2]))
            out.append(obs)
            out += [infos[i]["terminal_observation"] for i in dones.nonzero()[0]]
        venv.close()
        return out

    same = run("SameStep")
    for mode in ("NextStep", "Disabled"):
        assert_same(run(mode), same)


def test_seed_with_options_per_sub_env_under_a_schedule_is_refused_and_dropped():
    """Every reset() failed for good: each option's masked reset got the seed,
    which a schedule refuses, and the seeds and options stayed pending."""
    envs = vecmode.make_vec("CartPole-v1", 2, "sync", episode_seeds=42)
    venv = to_sb3(envs)
    venv.reset()
    venv.seed(3)
    venv.set_options([{"low": -0.01, "high": 0.01}, {}])
    with pytest.raises(SeedError, match="Both were dropped; call seed"):
        venv.reset()
    assert venv.reset().shape == (2, 4)  # usable: both dropped
    venv.set_options([{"low": -0.01, "high": 0.01}, {}])
    assert np.abs(venv.reset()[0]).max() <= 0.01  # each its own, as scheduled
    venv.close()
    # without a schedule, a bad seed is told as such, and nothing is dropped
    venv = to_sb3(vecmode.make_vec("CartPole-v1", 2, "sync"))
    venv.reset()
    venv.seed(-5)
    venv.set_options([{"low": -0.01, "high": 0.01}, {}])
    with pytest.raises(SeedError, match="seed must be >= 0"):
        venv.reset()
    assert venv._seeds == [-5, -4]
    venv.close()


def test_to_sb3_warns_over_a_stack_that_is_not_ok():
    """Gymnasium's NormalizeReward in SameStep, which to_sb3 runs: the warning
    names the layer and points at the caller's line."""
    envs = vecmode.make_vec("CartPole-v1", 2, "sync", autoreset_mode="SameStep")
    envs = gym.wrappers.vector.NormalizeReward(envs)
    with pytest.warns(vecmode.IncompatibleModeWarning, match="NormalizeReward") as got:
        venv = to_sb3(envs)
    assert got[0].filename == __file__
    venv.close()
