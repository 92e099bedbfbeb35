"""vecmode.wrappers.ppo_stack: the fused layer returns exactly what the five
layers return, in every mode, across partial resets, sync and split async; it
conforms; bad arguments are refused."""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.error import InvalidBound
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import vecmode
from tests.cores.test_gymnasium_compat import FORK, drive_split
from tests.helpers import assert_same_run, drive, make_script
from tests.wrappers.cases import MODES, env_fns, vecmode_base
from vecmode import AutoresetMode
from vecmode import wrappers as vw
from vecmode._evidence import CONFORMANCE_TESTED
from vecmode.testing import check_wrapper, episode_statistics
from vecmode.wrappers.vectorize_reward import clip, clip_symmetric, fast_bounds


class Snapshot(gym.vector.VectorWrapper):
    """Deep-copies every result when it is returned."""

    def reset(self, **kwargs):
        return copy.deepcopy(self.env.reset(**kwargs))

    def step(self, actions):
        return copy.deepcopy(self.env.step(actions))


def untimed(run):
    """The run without RecordEpisodeStatistics' wall-clock ``t``."""
    for _, result in run:
        infos = result[-1]
        if "episode" in infos:
            infos["episode"].pop("t")
    return run


STATE = (
    "accumulated_reward",
    "episode_returns",
    "episode_lengths",
    "episode_count",
    "return_queue",
    "length_queue",
)


def state(envs):
    """Every statistic of a stack, fused or layered, by name."""
    layers, layer = {}, envs
    while isinstance(layer, gym.vector.VectorWrapper):
        layers.setdefault(type(layer).__name__, layer)
        layer = layer.env
    found = {}
    for layer in layers.values():
        for name in STATE:
            if hasattr(layer, name):
                found[name] = copy.deepcopy(getattr(layer, name))
        for name in ("obs_rms", "return_rms"):
            if hasattr(layer, name):
                rms = getattr(layer, name)
                found[name] = (rms.mean, rms.var, rms.count)
    assert set(found) == {*STATE, "obs_rms", "return_rms"}, sorted(found)
    return found


def assert_same_state(expected, got):
    for name, value in expected.items():
        if name.endswith("_rms"):
            for a, b in zip(value, got[name], strict=True):
                assert type(a) is type(b) and np.array_equal(a, b), name
        elif isinstance(value, np.ndarray):
            assert value.dtype == got[name].dtype, name
            np.testing.assert_array_equal(value, got[name], err_msg=name)
        else:
            assert value == got[name], name


def runs(base, mode, script, **kw):
    """The layered and the fused stack over the same base and calls: the script
    twice, so the second starts with a full reset of a stack that has run."""
    out = []
    for fused in (False, True):
        envs = vw.ppo_stack(base(), gamma=0.9, fused=fused, **kw)
        assert type(envs) is (vw.PPOStack if fused else vw.ClipReward)
        disabled = mode is AutoresetMode.DISABLED
        run = drive(Snapshot(envs), script, disabled)
        run += drive(Snapshot(envs), script, disabled)
        out.append((untimed(run), state(envs), envs))
        envs.close()
    return out


class RewardOnResetSteps(gym.vector.VectorWrapper):
    """A NEXT_STEP env whose every reward is raised by 1, the reset steps'
    included (the reference's envs give 0 there; the stack must still report 0:
    those steps are not transitions)."""

    def step(self, actions):
        obs, rewards, terminations, truncations, infos = self.env.step(actions)
        return obs, rewards + 1.0, terminations, truncations, infos


def test_next_steps_reset_step_reward_is_zero_whatever_the_env_says():
    mode = AutoresetMode.NEXT_STEP

    def make():
        return RewardOnResetSteps(vecmode_base("box", mode))

    script = make_script(make(), 30, seed=5)
    (layered, s1, _), (fused, s2, _) = runs(make, mode, script)
    assert_same_run(layered, fused)
    assert_same_state(s1, s2)
    zeros = [r[1] for kind, r in fused if kind == "step" and 0.0 in r[1]]
    assert zeros  # reset steps happened, and their rewards are 0


@pytest.mark.parametrize("base", ["vecmode", "gymnasium"])
@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_fused_is_the_five_layers_exactly(mode, base):
    def make():
        return vecmode_base("box", mode, base)

    script = make_script(make(), 30, seed=7, mask_prob=0.4)
    (layered, layered_state, a), (fused, fused_state, b) = runs(make, mode, script)
    assert_same_run(layered, fused)
    assert_same_state(layered_state, fused_state)
    assert a.single_observation_space == b.single_observation_space
    assert a.observation_space == b.observation_space
    assert a.metadata["autoreset_mode"] is b.metadata["autoreset_mode"] is mode


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_fused_is_the_five_layers_on_cartpole_with_small_clips(mode):
    """Real observations, the clips reached (small bounds), many episodes."""

    def make():
        return vecmode.make_vec(
            "CartPole-v1", 6, vectorization_mode="sync", autoreset_mode=mode
        )

    script = make_script(make(), 200, seed=3, mask_prob=0.2)
    (layered, s1, _), (fused, s2, _) = runs(
        make, mode, script, clip_obs=0.5, clip_reward=0.25
    )
    assert_same_run(layered, fused)
    assert_same_state(s1, s2)
    rewards = np.concatenate([r[1] for kind, r in fused if kind == "step"])
    observations = np.concatenate([r[0] for _, r in fused])
    assert np.abs(rewards).max() == 0.25 and np.abs(observations).max() == 0.5


def freeze(envs):
    """``update_running_mean = False`` on every layer that has it."""
    layer = envs
    while isinstance(layer, gym.vector.VectorWrapper):
        if hasattr(layer, "update_running_mean"):
            layer.update_running_mean = False
        layer = layer.env


_EPISODES = st.lists(
    st.tuples(st.integers(1, 5), st.booleans()), min_size=1, max_size=3
)


@settings(max_examples=25)
@given(
    mode=st.sampled_from(MODES),
    episodes=st.lists(_EPISODES, min_size=3, max_size=3),
    mask_prob=st.floats(0.0, 0.9),
    seed=st.integers(0, 100),
    frozen=st.booleans(),
)
def test_fused_is_the_five_layers_property(mode, episodes, mask_prob, seed, frozen):
    """Random episode lengths and ends, reset masks, seeds; statistics frozen or
    not."""
    lengths = [[length for length, _ in per_env] for per_env in episodes]
    truncate = [[cut for _, cut in per_env] for per_env in episodes]

    def make():
        return vecmode_base("box", mode, lengths=lengths, truncate=truncate)

    script = make_script(make(), 20, seed=seed, mask_prob=mask_prob)
    results = []
    for fused in (False, True):
        envs = vw.ppo_stack(make(), gamma=0.95, fused=fused)
        if frozen:
            freeze(envs)
        run = drive(Snapshot(envs), script, mode is AutoresetMode.DISABLED)
        results.append((untimed(run), state(envs)))
        envs.close()
    assert_same_run(results[0][0], results[1][0])
    assert_same_state(results[0][1], results[1][1])


def test_split_async_api_is_the_blocking_one():
    """The fused layer implements the halves: step_async / step_wait over an
    async core return what step returns."""
    for mode in MODES:

        def build(mode=mode):
            core = vecmode.AsyncVectorEnv(env_fns("box"), context=FORK, num_workers=2)
            return vw.ppo_stack(vecmode.with_autoreset(core, mode), gamma=0.9)

        blocking, split = build(), build()
        assert hasattr(split, "step_async") and hasattr(split, "reset_wait")
        script = make_script(blocking, 12, seed=2, mask_prob=0.3)
        disabled = mode is AutoresetMode.DISABLED
        try:
            expected = untimed(drive(Snapshot(blocking), script, disabled))
            got = untimed(drive_split(split, script, disabled))
        finally:
            blocking.close()
            split.close()
        assert_same_run(expected, got)


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "layered"])
def test_conforms_in_every_mode(fused):
    report = check_wrapper(
        lambda env: vw.ppo_stack(env, gamma=0.9, fused=fused),
        compare_info=episode_statistics,
    )
    assert report.modes == tuple(AutoresetMode)
    assert report.batch_dependent
    layered = "ClipReward(NormalizeReward(TransformObservation(NormalizeObservation("
    assert report.wrapper == (
        "PPOStack" if fused else f"{layered}RecordEpisodeStatistics))))"
    )
    if fused:  # the proof vecmode.check_stack's "verified" for PPOStack stands on
        key = f"{vw.PPOStack.__module__}:{vw.PPOStack.__qualname__}"
        assert report.wrapper_class is vw.PPOStack
        assert key in CONFORMANCE_TESTED


def test_the_registry_reads_it():
    envs = vw.ppo_stack(vecmode_base("box", AutoresetMode.SAME_STEP), gamma=0.9)
    report = vecmode.check_stack(envs)
    assert report.ok and report.mode is AutoresetMode.SAME_STEP, str(report)
    assert vecmode.supported_modes(vw.PPOStack) == frozenset(MODES)
    envs.close()


def test_frozen_statistics_stay_frozen():
    envs = vw.ppo_stack(vecmode_base("box", AutoresetMode.SAME_STEP), gamma=0.9)
    envs.reset(seed=0)
    envs.step(np.zeros(3, dtype=np.int64))
    envs.update_running_mean = False
    before = (envs.obs_rms.count, envs.return_rms.count, envs.obs_rms.mean)
    for _ in range(5):
        envs.step(np.zeros(3, dtype=np.int64))
    envs.reset(options={"reset_mask": np.array([True, False, False])})
    assert (envs.obs_rms.count, envs.return_rms.count, envs.obs_rms.mean) == before
    assert envs.episode_count > 0  # the episode statistics go on
    envs.close()


def test_gymnasiums_statistics_can_be_loaded():
    """Saved statistics (Gymnasium's class) loaded into an evaluation stack."""
    from gymnasium.wrappers.utils import RunningMeanStd

    train = vw.ppo_stack(vecmode_base("box", AutoresetMode.NEXT_STEP), gamma=0.9)
    train.reset(seed=0)
    for _ in range(6):
        train.step(np.zeros(3, dtype=np.int64))
    saved = RunningMeanStd(shape=(3,), dtype=np.float32)
    saved.mean, saved.var, saved.count = (
        train.obs_rms.mean,
        train.obs_rms.var,
        train.obs_rms.count,
    )
    evaluation = vw.ppo_stack(vecmode_base("box", AutoresetMode.NEXT_STEP), gamma=0.9)
    evaluation.obs_rms = saved
    evaluation.update_running_mean = False
    obs, _ = evaluation.reset(seed=1)
    raw = vecmode_base("box", AutoresetMode.NEXT_STEP).reset(seed=1)[0]
    want = (raw - saved.mean) / np.sqrt(saved.var + 1e-8)
    np.testing.assert_array_equal(obs, np.clip(want.astype(np.float32), -10, 10))
    train.close()
    evaluation.close()


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"gamma": 1.5}, InvalidBound, "gamma"),
        ({"gamma": 0.9, "clip_obs": -1.0}, InvalidBound, "clip_obs"),
        ({"gamma": 0.9, "clip_reward": float("nan")}, InvalidBound, "clip_reward"),
        ({"gamma": 0.9, "clip_obs": "10"}, TypeError, "clip_obs"),
    ],
)
@pytest.mark.parametrize("fused", [True, False], ids=["fused", "layered"])
def test_bad_arguments_are_refused(kwargs, error, match, fused):
    envs = vecmode_base("box", AutoresetMode.NEXT_STEP)
    with pytest.raises(error, match=match):
        vw.ppo_stack(envs, fused=fused, **kwargs)
    envs.close()


def test_observations_must_be_a_box():
    envs = vecmode_base("dict", AutoresetMode.NEXT_STEP)
    with pytest.raises(TypeError, match="needs a Box"):
        vw.ppo_stack(envs, gamma=0.9)
    envs.close()


def test_gamma_is_required():
    envs = vecmode_base("box", AutoresetMode.NEXT_STEP)
    with pytest.raises(TypeError, match="gamma"):
        vw.ppo_stack(envs)  # type: ignore[call-arg]
    envs.close()


@given(
    x=hnp.arrays(
        st.sampled_from([np.float32, np.float64]),
        hnp.array_shapes(max_dims=2, max_side=5),
        elements=st.floats(allow_nan=True, width=32),
    ),
    bound=st.sampled_from([0.0, -0.0, 1e-3, 0.5, 10.0, float("inf")]),
)
def test_clip_symmetric_is_np_clip_bit_for_bit(x, bound):
    want = np.clip(x, -bound, bound)
    got = clip_symmetric(x, bound)
    assert got.dtype == want.dtype
    # the same bits: signed zeros and NaNs included
    assert want.tobytes() == got.tobytes() or (
        np.array_equal(np.isnan(want), np.isnan(got))
        and np.array_equal(want[~np.isnan(want)], got[~np.isnan(got)])
        and np.array_equal(np.signbit(want), np.signbit(got))
    )
    out = x.copy()
    assert clip_symmetric(out, bound, out) is out


@pytest.mark.parametrize(
    ("dtype", "low", "high"),
    [
        (np.uint8, 1, 1000),
        (np.uint8, -5, 100),
        (np.int8, -1000, 5),
        (np.int64, 1, 2**70),
    ],
)
def test_clip_takes_integer_bounds_beyond_the_dtype_as_np_clip(dtype, low, high):
    """A uint8 reward clipped to [1, 1000]: np.clip drops the bound no uint8
    reaches; the ufuncs would raise OverflowError."""
    x = np.array([0, 1, 7, 100], dtype=dtype)
    want = np.clip(x, low, high)
    got = clip(x, low, high, fast=fast_bounds(low, high))
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


@given(
    x=hnp.arrays(
        st.sampled_from([np.float32, np.float64, np.int64, np.uint8, np.int8]),
        hnp.array_shapes(max_dims=2, max_side=5),
        elements=st.integers(0, 20),
    ),
    low=st.sampled_from([-10.0, -0.5, 0.0, -0.0, 1, -1000, np.float32(-2.5), None]),
    high=st.sampled_from([10.0, 0.5, 0.0, 3, 1000, np.float32(2.5), float("inf")]),
)
def test_clip_is_np_clip_bit_for_bit(x, low, high):
    """Bit for bit through the clip ufunc; integer arrays with bounds beyond their
    dtype's range (-1000 and 1000 for uint8 and int8) clip as np.clip does."""
    if low is not None and low > high:
        return
    want = np.clip(x, low, high)
    got = clip(x, low, high, fast=fast_bounds(low, high))
    assert got.dtype == want.dtype and want.tobytes() == got.tobytes()
    assert fast_bounds(low, high) == (low not in (None, 0.0) and high != 0)
