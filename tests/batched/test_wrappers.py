"""The stateful and per-step wrappers over torch and JAX batches: the same values
as over NumPy, step by step, in the batch's library, with no host copy."""

from __future__ import annotations

import copy
import sys
import time

import numpy as np
import pytest
from gymnasium.spaces import Box, Dict
from gymnasium.vector.utils import batch_space
from gymnasium.wrappers.utils import RunningMeanStd as GymnasiumRunningMeanStd
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import vecmode
from tests.batched.support import host, make_batched, no_host_copies, xp_of
from vecmode import modes
from vecmode.testing import BatchedCartPole
from vecmode.wrappers import (
    ClipAction,
    ClipReward,
    FrameStackObservation,
    NormalizeObservation,
    NormalizeReward,
    RecordEpisodeStatistics,
    TransformObservation,
    TransformReward,
    ppo_stack,
)
from vecmode.wrappers.array_stats import ArrayRunningMeanStd
from vecmode.wrappers.array_stats import normalize as array_normalize
from vecmode.wrappers.running_stats import RunningMeanStd, normalize

ARRAYS = ("torch", "jax")


MODES = ("SameStep", "Disabled")


def _continuous(env):
    """``env`` (a BatchedCartPole) with Box actions in [-1, 1] (a push: sign)."""
    env.single_action_space = Box(-1.0, 1.0, (), np.float32)
    env.action_space = batch_space(env.single_action_space, env.num_envs)
    return env


STACKS = {
    "RecordEpisodeStatistics": RecordEpisodeStatistics,
    "NormalizeObservation": NormalizeObservation,
    "NormalizeReward": lambda env: NormalizeReward(env, gamma=0.9),
    "TransformReward": lambda env: TransformReward(env, lambda r: r * 2 - 0.5),
    "ClipReward": lambda env: ClipReward(
        TransformReward(env, lambda r: r * 3), -1.0, 2.0
    ),
    "TransformObservation": lambda env: TransformObservation(env, lambda o: o * 3),
    "ClipAction": lambda env: ClipAction(_continuous(env)),
    "ppo_stack": lambda env: ppo_stack(env, gamma=0.9, clip_obs=1.0),
    "ppo_stack-unfused": lambda env: ppo_stack(
        env, gamma=0.9, clip_obs=1.0, clip_reward=0.5, fused=False
    ),
    "FrameStackObservation": lambda env: FrameStackObservation(env, 3),
    "FrameStackObservation-zero": lambda env: FrameStackObservation(
        env, 2, padding_type="zero"
    ),
    "FrameStackObservation-custom": lambda env: FrameStackObservation(
        env, 4, padding_type=np.array([0.5, -1.0, 0.25, 2.0], np.float32)
    ),
    "RecordEpisodeStatistics+NormalizeObservation": lambda env: NormalizeObservation(
        RecordEpisodeStatistics(env)
    ),
}


def _finals(infos):
    """The final observations of a step's infos as ``{row: obs}`` (either layout)."""
    found = modes.final_observations(infos)
    if found is None:
        return {}
    mask, final = (host(x) for x in found)
    return {i: np.asarray(final[i], dtype=np.float64) for i in np.flatnonzero(mask)}


def _record(obs, rewards, terms, truncs, infos):
    stats = {
        key: host(value)
        for key, value in infos.get("episode", {}).items()
        if key != "t"  # seconds: not comparable
    }
    mask = host(infos.get("_episode"))
    return (
        host(obs),
        host(rewards),
        host(terms),
        host(truncs),
        stats,
        mask,
        _finals(infos),
    )


def _run(name, stack, mode, steps, n=6, max_steps=4, seed=0, resets=None, cls=None):
    """Every step's (obs, rewards, flags, episode stats, final obs) of ``stack``
    over a BatchedCartPole (or ``cls``) in library ``name``, the array ones in
    the trap."""
    base = (cls or BatchedCartPole)(n, xp=xp_of(name), max_episode_steps=max_steps)
    xp = base.xp
    envs = STACKS[stack](vecmode.with_autoreset(base, mode))
    rng = np.random.default_rng(seed)
    trap = no_host_copies if name != "numpy" else _nothing
    out = []
    with trap():
        obs, _ = envs.reset(seed=seed)
    out.append(host(obs))
    for step in range(steps):
        actions = rng.integers(0, 2, n)
        if stack == "ClipAction":
            actions = (actions * 3.0 - 1.5).astype(np.float32)  # some out of bounds
        actions = xp.asarray(actions)
        with trap():
            result = envs.step(actions)
        out.append(_record(*result))
        ended = (host(result[2]) | host(result[3])).astype(bool)  # (int flags)
        extra = resets[step % len(resets)] if resets else np.zeros(n, bool)
        if mode == "Disabled" and (ended.any() or extra.any()):
            mask = xp.asarray(ended | extra[:n])
            with trap():
                obs, _ = envs.reset(options={"reset_mask": mask})
            out.append(("reset", host(obs)))
    return envs, out


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def _assert_same(got, want, path=""):
    if isinstance(want, dict):
        assert set(got) == set(want), path
        for key in want:
            _assert_same(got[key], want[key], f"{path}/{key}")
    elif isinstance(want, (tuple, list)):
        assert len(got) == len(want), path
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            _assert_same(g, w, f"{path}[{i}]")
    elif isinstance(want, str) or want is None:
        assert got == want, path
    else:
        np.testing.assert_allclose(
            np.asarray(got, np.float64),
            np.asarray(want, np.float64),
            rtol=1e-5,
            atol=1e-5,
            err_msg=path,
        )


@pytest.mark.parametrize("name", ARRAYS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("stack", sorted(STACKS))
def test_the_wrappers_give_numpys_values(name, mode, stack) -> None:
    _, got = _run(name, stack, mode, steps=14)
    _, want = _run("numpy", stack, mode, steps=14)
    _assert_same(got, want)
    assert any(step[5] is not None for step in want if len(step) == 7) or (
        "Record" not in stack and "ppo" not in stack
    )


masks = st.lists(st.lists(st.booleans(), min_size=5, max_size=5), min_size=1)


@pytest.mark.parametrize("name", ARRAYS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "stacks",
    [
        ("ppo_stack", "RecordEpisodeStatistics+NormalizeObservation"),
        ("FrameStackObservation", "FrameStackObservation-zero"),
    ],
)
@given(
    max_steps=st.integers(1, 5),
    resets=masks.map(lambda rows: [np.array(r) for r in rows]),
    seed=st.integers(0, 2**16),
)
@settings(max_examples=15, deadline=None)
def test_the_stack_gives_numpys_values_over_any_episodes(
    name, mode, stacks, max_steps, resets, seed
) -> None:
    """Random episode lengths and (Disabled) extra resets mid-episode."""
    kw = {"n": 5, "max_steps": max_steps, "seed": seed, "resets": resets}
    for stack in stacks:
        _, got = _run(name, stack, mode, steps=8, **kw)
        _, want = _run("numpy", stack, mode, steps=8, **kw)
        _assert_same(got, want)


@pytest.mark.parametrize("name", ARRAYS)
def test_the_statistics_live_in_the_batch_library(name) -> None:
    xp = xp_of(name)
    envs, _ = _run(name, "ppo_stack", "SameStep", steps=6)
    for array in (
        envs.obs_rms.mean,
        envs.return_rms.var,
        envs.episode_returns,
        envs.accumulated_reward,
    ):
        assert type(array) is type(xp.asarray(0.0))
    assert str(envs.obs_rms.mean.dtype).endswith("float64")  # x64: float64
    saved = envs.obs_rms.to_numpy()
    assert isinstance(saved, GymnasiumRunningMeanStd)
    assert saved.mean.dtype == np.float64 and saved.count == envs.obs_rms.count
    numpy_envs, _ = _run("numpy", "ppo_stack", "SameStep", steps=6)
    np.testing.assert_allclose(saved.var, numpy_envs.obs_rms.var, rtol=1e-5)
    assert list(envs.return_queue) == list(numpy_envs.return_queue)
    assert list(envs.length_queue) == list(numpy_envs.length_queue)
    assert envs.episode_count == numpy_envs.episode_count


@pytest.mark.parametrize("name", ARRAYS)
@pytest.mark.parametrize("shape", [(), (3,), (2, 2)])
@given(
    batches=st.lists(
        st.tuples(
            st.lists(st.floats(-1e3, 1e3, width=32), min_size=1, max_size=9),
            st.lists(st.booleans(), min_size=9, max_size=9),
        ),
        min_size=1,
        max_size=6,
    )
)
@settings(max_examples=25, deadline=None)
def test_running_statistics_are_numpys(name, shape, batches) -> None:
    """Chan's merge in the batch library: Gymnasium's values, masked or not."""
    xp = xp_of(name)
    ours, numpy = ArrayRunningMeanStd(xp, shape), RunningMeanStd(shape=shape)
    size = int(np.prod(shape))
    for values, mask in batches:
        rows = len(values) // size
        if not rows:
            continue
        batch = np.array(values[: rows * size], np.float32).reshape((rows, *shape))
        chosen = np.array(mask[:rows])
        with no_host_copies():
            ours.update(xp.asarray(batch), xp.asarray(chosen))
        numpy.update(batch[chosen])
    saved = ours.to_numpy()
    np.testing.assert_allclose(saved.mean, numpy.mean, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(saved.var, numpy.var, rtol=1e-7, atol=1e-9)
    assert saved.count == pytest.approx(numpy.count)
    back = ArrayRunningMeanStd.from_numpy(saved, xp)
    np.testing.assert_array_equal(host(back.var), saved.var)


@pytest.mark.parametrize("name", [*ARRAYS, "jax-float32"])
def test_episode_seconds_are_numpys_however_long_the_machine_has_run(
    name, monkeypatch
) -> None:
    """perf_counter() counts from boot: kept as float32 (JAX's default), a month
    of it is off by a quarter of a second, so 37 ms episodes took 0 or 0.25 s."""
    clock = [0.0]
    monkeypatch.setattr(time, "perf_counter", lambda: clock[0])

    def seconds(name):
        clock[0] = 30 * 24 * 3600.0
        base = make_batched(name.partition("-")[0], 2, max_episode_steps=3)
        if name == "jax-float32":  # JAX's default
            sys.modules["jax"].config.update("jax_enable_x64", False)
            base = BatchedCartPole(2, xp=base.xp, max_episode_steps=3)
        envs = RecordEpisodeStatistics(vecmode.with_autoreset(base, "SameStep"))
        envs.reset(seed=0)
        ended = []
        for step in range(40):
            clock[0] += 100.0 if step == 20 else 0.0123  # 100 s: the origin moves
            *_, infos = envs.step(base.xp.asarray(np.ones(2, dtype=np.int64)))
            if "episode" in infos:
                ended.append(host(infos["episode"]["t"]))
        return ended, [float(t) for t in envs.time_queue]

    (got, got_queue), (want, want_queue) = seconds(name), seconds("numpy")
    assert len(got) == len(want) > 10 and max(want_queue) > 100
    np.testing.assert_allclose(np.asarray(got, float), want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got_queue, want_queue, rtol=1e-6, atol=1e-6)


def test_jax_without_x64_keeps_float32_statistics() -> None:
    jax = pytest.importorskip("jax")
    pytest.importorskip("array_api_compat")
    with jax.enable_x64(False):
        rms = ArrayRunningMeanStd(jax.numpy, (2,))
        rms.update(jax.numpy.ones((3, 2)))
        assert rms.mean.dtype == jax.numpy.float32
        assert rms.to_numpy().mean.dtype == np.float32


def test_the_numpy_path_is_untouched_after_the_first_call() -> None:
    """NumPy batches keep the classes' methods: nothing is installed per instance."""
    envs, _ = _run("numpy", "ppo_stack", "SameStep", steps=2)
    for name in ("_reset_result", "_step_result", "transition", "normalize"):
        assert name not in vars(envs)
    assert envs.array_xp is None and isinstance(envs.obs_rms, RunningMeanStd)


@pytest.mark.parametrize("name", ARRAYS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("stack", ["ppo_stack", "ppo_stack-unfused"])
def test_a_large_batch_gives_numpys_values(name, mode, stack) -> None:
    """8,192 sub-envs: batches of 32,768+ numbers are merged and normalised as
    rows of 64 numbers, and many episodes end and reset in one step."""
    kw = {"n": 8192, "max_steps": 3}
    _, got = _run(name, stack, mode, steps=5, **kw)
    _, want = _run("numpy", stack, mode, steps=5, **kw)
    _assert_same(got, want)


@pytest.mark.parametrize("name", ARRAYS)
@pytest.mark.parametrize("rows", [8192, 8193])
def test_large_batches_merge_and_normalise_as_numpy(name, rows) -> None:
    """Folded (8,192 rows of 4) and not (8,193), masked or not."""
    xp = xp_of(name)
    rng = np.random.default_rng(rows)
    batch = (rng.normal(size=(rows, 4)) * 3 - 20).astype(np.float32)
    mask = rng.random(rows) < 0.3
    ours, numpy = ArrayRunningMeanStd(xp, (4,)), RunningMeanStd(shape=(4,))
    with no_host_copies():
        ours.update(xp.asarray(batch))
        ours.update(xp.asarray(batch * 2), xp.asarray(mask))
        out = ours.normalized(xp.asarray(batch), xp.asarray(mask), 1e-8, xp.float32, 1)
    numpy.update(batch)
    numpy.update((batch * 2)[mask])
    before = normalize(batch, numpy.mean, numpy.var, 1e-8)
    numpy.update(batch[mask])
    after = normalize(batch, numpy.mean, numpy.var, 1e-8)
    saved = ours.to_numpy()
    np.testing.assert_allclose(saved.mean, numpy.mean, rtol=1e-9)
    np.testing.assert_allclose(saved.var, numpy.var, rtol=1e-7)
    want = np.clip(np.where(mask[:, None], after, before), -1, 1)
    np.testing.assert_allclose(host(out), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("source", ["gymnasium", "numpy-path", "torch", "jax"])
@pytest.mark.parametrize("name", ["numpy", *ARRAYS])
def test_statistics_assigned_after_reset_go_on_in_the_batch_library(name, source):
    """Saved statistics loaded into a running stack (Gymnasium's, or another
    library's) are held in its library: the run goes on as if never saved. They
    failed at the next step with AttributeError (no ``normalized``)."""
    if "numpy" not in (name, source):
        xp_of("jax" if "jax" in (name, source) else "torch")  # (skip if missing)
    want = _run(name, "ppo_stack", "SameStep", steps=8)[1]
    envs = ppo_stack(
        vecmode.with_autoreset(make_batched(name, 6, max_episode_steps=4), "SameStep"),
        gamma=0.9,
        clip_obs=1.0,
    )
    envs.reset(seed=0)
    saved = {attr: getattr(envs, attr) for attr in ("obs_rms", "return_rms")}
    for attr, rms in saved.items():
        rms = rms.to_numpy() if hasattr(rms, "to_numpy") else rms
        if source not in ("gymnasium", "numpy-path"):
            rms = ArrayRunningMeanStd.from_numpy(rms, xp_of(source))
        elif source == "numpy-path":
            ours = RunningMeanStd(shape=rms.mean.shape)
            ours.mean, ours.var, ours.count = rms.mean, rms.var, rms.count
            rms = ours
        setattr(envs, attr, rms)
        kept = getattr(envs, attr)
        assert type(kept.mean) is type(envs.episode_returns)
    rng, got = np.random.default_rng(0), []
    trap = no_host_copies if name != "numpy" else _nothing
    for _ in range(8):
        actions = envs.unwrapped.xp.asarray(rng.integers(0, 2, 6))
        with trap():
            result = envs.step(actions)
        got.append(_record(*result))
    _assert_same(got, want[1:])


@pytest.mark.parametrize("reset", [False, True], ids=["before-reset", "after"])
@pytest.mark.parametrize("source", ARRAYS)
@pytest.mark.parametrize("name", ["numpy", *ARRAYS])
def test_statistics_assigned_are_shared_before_the_first_reset_too(name, source, reset):
    """An eval stack given the training stack's statistics follows them, built
    (make, assign, reset) either way; before the first reset they were copied."""
    xp_of(source)  # (skip if missing)

    def build(library):
        base = vecmode.with_autoreset(make_batched(library, 3), "SameStep")
        return ppo_stack(base, gamma=0.9)

    train = build(source)
    train.reset(seed=0)
    evaluate = build(name)
    if reset:
        evaluate.reset(seed=1)
    evaluate.obs_rms = train.obs_rms
    assert (evaluate.obs_rms is train.obs_rms) is (not reset or name == source)
    evaluate.reset(seed=1)
    evaluate.step(evaluate.unwrapped.xp.asarray([0, 1, 0]))
    shared = evaluate.obs_rms is train.obs_rms
    assert shared is (name == source)  # another library's: a copy in its own
    assert type(evaluate.obs_rms.mean) is type(evaluate.episode_returns)


@pytest.mark.parametrize("reset", [False, True], ids=["before-reset", "after"])
@pytest.mark.parametrize("name", ["numpy", *ARRAYS])
def test_the_statistics_save_as_numpy_on_every_path(name, reset):
    """``envs.obs_rms.to_numpy()``, the save docs/batched.md shows, worked only
    on torch and JAX batches after the first reset."""
    base = vecmode.with_autoreset(make_batched(name, 3), "SameStep")
    envs = ppo_stack(base, gamma=0.9)
    if reset:
        envs.reset(seed=0)
    for rms in (envs.obs_rms, envs.return_rms):
        saved = rms.to_numpy()
        assert isinstance(saved, GymnasiumRunningMeanStd) and saved is not rms
        np.testing.assert_array_equal(saved.var, host(rms.var))


@pytest.mark.parametrize("name", ["numpy", *ARRAYS])
def test_statistics_of_another_shape_or_kind_are_refused_when_assigned(name):
    envs = NormalizeObservation(
        vecmode.with_autoreset(make_batched(name, 3), "SameStep")
    )
    envs.reset(seed=0)
    shapes = "obs_rms: its mean and var have shapes"
    with pytest.raises(
        ValueError, match=rf"{shapes} \(3,\) and \(3,\), this .* \(4,\)"
    ):
        envs.obs_rms = RunningMeanStd(shape=(3,))
    wrong_var = GymnasiumRunningMeanStd(shape=(4,))
    wrong_var.var = np.ones(3)  # failed at the next step, in the library's words
    with pytest.raises(ValueError, match=rf"{shapes} \(4,\) and \(3,\), this "):
        envs.obs_rms = wrong_var
    with pytest.raises(TypeError, match=r"mean, var and count .* got dict"):
        envs.obs_rms = {"mean": 0}
    lists = GymnasiumRunningMeanStd(shape=(4,))
    lists.mean, lists.var = [0.0] * 4, [1.0] * 4  # failed at the next reset
    with pytest.raises(TypeError, match="must be arrays, got list and list"):
        envs.obs_rms = lists
    envs.step(envs.unwrapped.xp.asarray([0, 1, 0]))  # still usable


@pytest.mark.parametrize("name", ARRAYS)
def test_statistics_assigned_anew_are_seen_by_the_next_normalisation(name) -> None:
    xp = xp_of(name)
    rms = ArrayRunningMeanStd(xp, (4,))
    x = xp.ones((8, 4), dtype=xp.float32)
    np.testing.assert_allclose(host(array_normalize(x, rms, 1e-8, xp.float32)), 1)
    rms.mean = xp.ones((4,), dtype=rms.dtype)
    np.testing.assert_allclose(host(array_normalize(x, rms, 1e-8, xp.float32)), 0)
    rms.var = xp.full((4,), 4.0, dtype=rms.dtype)
    rms.mean = xp.zeros((4,), dtype=rms.dtype)
    np.testing.assert_allclose(host(array_normalize(x, rms, 0.0, xp.float32)), 0.5)


def test_torch_statistics_changed_in_place_are_seen_by_the_next_normalisation():
    """obs_rms.mean.copy_(saved), as torch users load statistics: a frozen
    normalisation kept its float32 forms of the old values."""
    torch = pytest.importorskip("torch")
    rms = ArrayRunningMeanStd(torch, (4,))
    x = torch.ones((8, 4), dtype=torch.float32)
    np.testing.assert_allclose(host(array_normalize(x, rms, 1e-8, torch.float32)), 1)
    rms.mean.copy_(torch.ones(4))
    np.testing.assert_allclose(host(array_normalize(x, rms, 1e-8, torch.float32)), 0)
    rms.var.mul_(4.0)
    rms.mean.zero_()
    np.testing.assert_allclose(host(array_normalize(x, rms, 0.0, torch.float32)), 0.5)


@pytest.mark.parametrize("name", ARRAYS)
@pytest.mark.parametrize("mode", MODES)
def test_a_kept_frame_stack_is_not_overwritten_by_later_steps(name, mode) -> None:
    """Each step's stacks (and final stacks) are the caller's to keep."""
    xp = xp_of(name)
    base = make_batched(name, 4, max_episode_steps=3)
    envs = FrameStackObservation(vecmode.with_autoreset(base, mode), 3)
    kept = [envs.reset(seed=0)[0]]
    snapshots = [copy.deepcopy(host(kept[0]))]  # (torch's .numpy(): a view)
    for step in range(8):
        with no_host_copies():
            obs, _, terms, truncs, infos = envs.step(xp.asarray([0, 1, 1, 0]))
        kept.append((obs, modes.final_observations(infos)))
        snapshots.append(copy.deepcopy(host(kept[-1])))
        if mode == "Disabled" and step % 3 == 2:
            kept.append(envs.reset(options={"reset_mask": terms | truncs})[0])
            snapshots.append(copy.deepcopy(host(kept[-1])))
    assert mode == "Disabled" or any(final is not None for _, final in kept[1:])
    for batch, snapshot in zip(kept, snapshots, strict=True):
        _assert_same(host(batch), snapshot)
    assert type(envs.stacks) is type(xp.asarray(0.0))
    assert envs.stacks.shape == (4, 3, 4) and envs.stacks.dtype == xp.float32
    assert envs.stacks.device == xp.asarray(0.0).device


def test_writing_into_a_returned_frame_stack_leaves_the_next_ones_right() -> None:
    """torch tensors are mutable: a step returns a copy, as NumPy's path does."""
    xp_of("torch")
    _, want = _run("torch", "FrameStackObservation", "SameStep", steps=6)
    base = make_batched("torch", 6, max_episode_steps=4)
    envs = STACKS["FrameStackObservation"](vecmode.with_autoreset(base, "SameStep"))
    rng = np.random.default_rng(0)
    obs, _ = envs.reset(seed=0)
    for step in range(6):
        obs.mul_(1000.0)  # the caller writes into what it was given
        obs = envs.step(base.xp.asarray(rng.integers(0, 2, 6)))[0]
        _assert_same(host(obs), want[step + 1][0])


def test_a_frame_stack_refuses_dict_array_batches_and_says_what_to_do() -> None:
    xp_of("torch")
    base = make_batched("torch", 2)
    base.single_observation_space = Dict({"x": base.single_observation_space})
    base.observation_space = batch_space(base.single_observation_space, 2)
    envs = FrameStackObservation(vecmode.with_autoreset(base, "SameStep"), 2)
    with pytest.raises(TypeError, match=r"join them first \(TransformObservation"):
        envs.reset(seed=0)


def _as_same_step(disabled_run):
    """A Disabled run's records as SameStep gives them: each masked reset's
    observations in the step's place, the ended rows' step observations as its
    final observations."""
    out = [disabled_run[0]]
    for record in disabled_run[1:]:
        if isinstance(record[0], str):  # ("reset", obs)
            *start, _ = out[-1]
            step_obs = start[0]
            ended = np.flatnonzero(start[2] | start[3])
            finals = {i: np.asarray(step_obs[i], np.float64) for i in ended}
            out[-1] = (record[1], *start[1:], finals)
        else:
            out.append(record)
    return out


@pytest.mark.parametrize("name", ("numpy", *ARRAYS))
@pytest.mark.parametrize(
    "stack",
    [
        "NormalizeObservation",
        "ppo_stack",
        "ppo_stack-unfused",
        "RecordEpisodeStatistics+NormalizeObservation",
    ],
)
@given(max_steps=st.integers(12, 40), seed=st.integers(0, 2**16))
@settings(max_examples=4, deadline=None)
def test_same_step_normalises_as_disabled_bit_for_bit(name, stack, max_steps, seed):
    """The rows that did not end are normalised before the new episodes' first
    observations update the statistics, in SameStep as at a masked reset."""
    kw = {"n": 5, "max_steps": max_steps, "seed": seed}
    _, same_step = _run(name, stack, "SameStep", steps=30, **kw)
    _, disabled = _run(name, stack, "Disabled", steps=30, **kw)
    disabled = _as_same_step(disabled)
    assert len(same_step) == len(disabled)
    ends = [(r[2] | r[3]).sum() for r in same_step[1:]]
    assume(any(0 < e < kw["n"] for e in ends))  # a step where only some ended
    for k, (got, want) in enumerate(zip(same_step, disabled, strict=True)):
        got, want = (r if isinstance(r, tuple) else (r,) for r in (got, want))
        for field, g, w in zip(("obs", "rewards"), got, want, strict=False):
            assert np.array_equal(g, w), f"call {k}, {field}: {g} != {w}"
        if len(want) > 1:
            assert set(got[6]) == set(want[6]), f"call {k}: final rows"
            for i in want[6]:
                assert np.array_equal(got[6][i], want[6][i]), f"call {k}, final {i}"


def _to_numpy(name, env):
    """``env``'s batches converted to NumPy (the docs' way to NumPy-only wrappers)."""
    if name == "jax":
        return vecmode.wrappers.JaxToNumpy(env)
    return vecmode.wrappers.ArrayConversion(env, env_xp=xp_of(name), target_xp=np)


@pytest.mark.parametrize("name", ARRAYS)
@pytest.mark.parametrize(
    "stack",
    [
        "FrameStackObservation",
        "NormalizeObservation",
        "ppo_stack",
        "TransformObservation",
    ],
)
def test_numpy_wrappers_over_a_conversion_get_gymnasiums_layout(name, stack):
    """Converted to NumPy, SameStep's dense final observations become Gymnasium's
    object array: the NumPy path's wrappers over it give NumPy's values."""
    n, steps = 5, 12
    base = vecmode.with_autoreset(
        make_batched(name, n, max_episode_steps=3), "SameStep"
    )
    envs = STACKS[stack](_to_numpy(name, base))
    want = _run("numpy", stack, "SameStep", steps=steps, n=n, max_steps=3)[1]
    rng = np.random.default_rng(0)  # _run's actions
    got = [host(envs.reset(seed=0)[0])]
    for _ in range(steps):
        result = envs.step(rng.integers(0, 2, n))
        infos = result[4]
        if "final_obs" in infos:
            final, mask = infos["final_obs"], infos["_final_obs"]
            assert final.dtype == object and final.shape == (n,), final
            assert all((x is None) != m for x, m in zip(final, mask, strict=True))
        got.append(_record(*result))
    _assert_same(got, want)
    assert any(step[6] for step in want[1:]), "no episode ended"


class _IntRewards(BatchedCartPole):
    """Rewards as int32 (the episode's steps so far), as some batched envs give."""

    def step(self, actions):
        obs, _, terms, truncs, infos = super().step(actions)
        return obs, self.xp.astype(self.steps, self.xp.int32), terms, truncs, infos


@pytest.mark.parametrize("name", ARRAYS)
@pytest.mark.parametrize("stack", ["NormalizeReward", "ppo_stack"])
def test_integer_rewards_are_normalised_as_floats_as_on_numpy(name, stack) -> None:
    """They were cast back to int32 over torch/JAX (ppo_stack: then to float)."""

    def rewards(library):
        base = _IntRewards(3, xp=xp_of(library), max_episode_steps=4)
        envs = STACKS[stack](vecmode.with_autoreset(base, "SameStep"))
        envs.reset(seed=0)
        actions = base.xp.asarray(np.ones(3, dtype=np.int64))
        return [host(envs.step(actions)[1]) for _ in range(6)]

    got, want = rewards(name), rewards("numpy")
    assert all(r.dtype.kind == "f" for r in got)
    _assert_same(got, want)


class _IntFlags(BatchedCartPole):
    """Terminations and truncations as int64 0/1 (rsl_rl's, IsaacGym's)."""

    def step(self, actions):
        obs, rewards, terms, truncs, infos = super().step(actions)
        terms, truncs = (self.xp.astype(x, self.xp.int64) for x in (terms, truncs))
        return obs, rewards, terms, truncs, infos


@pytest.mark.parametrize("name", ARRAYS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("stack", ["RecordEpisodeStatistics", "ppo_stack"])
def test_integer_flags_are_read_as_bools_as_on_numpy(name, mode, stack) -> None:
    """They raised torch's "where expected condition to be a boolean tensor", or
    a TypeError about a ``reset_mask`` the user never passed."""
    _, got = _run(name, stack, mode, steps=10, cls=_IntFlags)
    _, want = _run("numpy", stack, mode, steps=10, cls=_IntFlags)
    _assert_same(got, want)
    assert any(step[5] is not None for step in want if len(step) == 7)


@pytest.mark.parametrize("name", ("numpy", *ARRAYS))
@pytest.mark.parametrize("stack", ["NormalizeObservation", "ppo_stack"])
@pytest.mark.parametrize("freeze", [False, True], ids=["updating", "frozen-between"])
def test_masked_resets_in_a_row_keep_the_others_rows(name, stack, freeze):
    """Masked resets in a row return the rows they do not reset as the call before
    did, in every library, also with the statistics frozen between them."""
    base = make_batched(name, 4, max_episode_steps=3)
    envs = (
        NormalizeObservation(base)
        if stack == "NormalizeObservation"
        else ppo_stack(base, gamma=0.99)
    )
    xp = xp_of(name)
    envs.reset(seed=0)
    last = host(envs.step(xp.asarray(np.zeros(4, dtype=np.int64)))[0])
    masks = ([True, False, False, False], [False, True, False, False], [0, 0, 1, 1])
    for k, mask in enumerate(np.array(masks, dtype=bool)):
        if freeze and k == 1:
            envs.update_running_mean = False
        obs = host(envs.reset(options={"reset_mask": xp.asarray(mask)})[0])
        np.testing.assert_array_equal(obs[~mask], last[~mask], err_msg=f"reset {k}")
        last = obs


def test_next_step_over_torch_updates_the_statistics_from_their_rows_only():
    """NEXT_STEP over torch batches (NumpyToTorch over vecmode's NumPy core):
    obs_rms takes every observation a step returns, and of a masked reset the
    reset rows only; return_rms skips the rows of reset steps (some rows at a
    time: sub-env 1 was cut short). Their values are a hand oracle's (obs_rms:
    Gymnasium's RunningMeanStd fed those rows) and the NumPy path's."""
    torch = xp_of("torch")
    masks = {1: np.array([False, True, False])}  # after step 1
    actions = [np.array([t % 2, 1, (t + 1) % 2]) for t in range(7)]

    def run(convert):
        base = vecmode.make_vec(
            "CartPole-v1", 3, "sync", autoreset_mode="NextStep", max_episode_steps=3
        )
        envs = NormalizeObservation(
            vecmode.wrappers.NumpyToTorch(base) if convert else base
        )
        envs = NormalizeReward(envs, gamma=0.9)
        got = [host(envs.reset(seed=0)[0])]
        for t, action in enumerate(actions):
            obs, rewards, *_ = envs.step(torch.asarray(action) if convert else action)
            got.append((host(obs), host(rewards)))
            if t in masks:
                mask = torch.asarray(masks[t]) if convert else masks[t]
                got.append(host(envs.reset(options={"reset_mask": mask})[0]))
        stats = [
            (host(rms.mean), host(rms.var), rms.count)
            for rms in (envs.return_rms, envs.env.obs_rms)
        ]
        envs.close()
        return got, stats

    raw = vecmode.make_vec(
        "CartPole-v1", 3, "sync", autoreset_mode="NextStep", max_episode_steps=3
    )
    oracle = GymnasiumRunningMeanStd(shape=(4,))
    oracle.update(raw.reset(seed=0)[0].astype(np.float64))
    ended, reset_steps = np.zeros(3, dtype=bool), []
    for t, action in enumerate(actions):
        reset_steps.append(ended.tolist())  # the rows this step resets
        obs, _, terms, truncs, _ = raw.step(action)
        oracle.update(obs.astype(np.float64))
        ended = terms | truncs
        if t in masks:
            again, _ = raw.reset(options={"reset_mask": masks[t]})
            oracle.update(again[masks[t]].astype(np.float64))
    raw.close()
    assert [False, True, False] in reset_steps and [True, False, True] in reset_steps
    (got, stats), (want, want_stats) = run(True), run(False)
    _assert_same(got, want)
    _assert_same(stats, want_stats)
    mean, var, count = stats[1]
    np.testing.assert_allclose(mean, oracle.mean, rtol=1e-9)
    np.testing.assert_allclose(var, oracle.var, rtol=1e-9)
    assert count == pytest.approx(oracle.count)


@pytest.mark.parametrize("name", ("numpy", *ARRAYS))
@pytest.mark.parametrize("mode", MODES)
def test_frozen_normalize_observation_normalises_every_observation_with_its_stats(
    name, mode
):
    """Frozen, over an episode's end too: the batch and the final observations
    by the kept statistics, which stay as they were."""
    envs, raw = (
        vecmode.with_autoreset(make_batched(name, 3, max_episode_steps=3), mode)
        for _ in range(2)
    )
    envs = NormalizeObservation(envs)
    envs.reset(seed=0)
    raw.reset(seed=0)
    envs.update_running_mean = False
    mean, var = host(envs.obs_rms.mean), host(envs.obs_rms.var)
    scale, ends = np.sqrt(var + envs.epsilon), 0
    actions = raw.unwrapped.xp.asarray([0, 1, 0])
    for _ in range(8):
        obs, *_, infos = envs.step(actions)
        want, _, terminations, truncations, raw_infos = raw.step(actions)
        np.testing.assert_allclose(host(obs), (host(want) - mean) / scale, rtol=1e-5)
        if "final_obs" in raw_infos:
            ends += 1
            rows = host(raw_infos["_final_obs"])

            def ended_rows(finals, rows=rows):  # (NumPy's: Gymnasium's object rows)
                return np.stack([np.asarray(row) for row in host(finals)[rows]])

            finals = (ended_rows(raw_infos["final_obs"]) - mean) / scale
            got = ended_rows(infos["final_obs"])
            np.testing.assert_allclose(got, finals, rtol=1e-5)
        ended = terminations | truncations
        if mode == "Disabled" and bool(ended.any()):
            envs.reset(options={"reset_mask": ended})
            raw.reset(options={"reset_mask": ended})
    assert ends > 0 or mode == "Disabled"
    np.testing.assert_array_equal(host(envs.obs_rms.mean), mean)
    np.testing.assert_array_equal(host(envs.obs_rms.var), var)


@pytest.mark.parametrize("name", ["numpy", *ARRAYS])
@pytest.mark.parametrize("stack", ["RecordEpisodeStatistics", "ppo_stack"])
def test_a_disabled_env_without_its_policy_refuses_to_step_an_ended_sub_env(
    name, stack
) -> None:
    """A DISABLED batched env that steps whatever it is given: the wrapper
    refuses before stepping, so no statistics of made-up episodes."""
    envs = STACKS[stack](make_batched(name, 4, max_episode_steps=3))
    xp = envs.unwrapped.xp
    actions = xp.asarray([0, 1, 0, 1])
    envs.reset(seed=0)
    for _ in range(3):
        *_, terminated, truncated, _ = envs.step(actions)
    ended = host(terminated | truncated)
    assert ended.all()  # (each truncated at step 3, if not terminated before)
    returns = host(envs.episode_returns).copy()
    with pytest.raises(vecmode.EpisodeEndedError, match="0, 1, 2, 3") as caught:
        envs.step(actions)
    assert caught.value.indices == (0, 1, 2, 3)
    np.testing.assert_array_equal(host(envs.episode_returns), returns)
    envs.reset(options={"reset_mask": terminated | truncated})
    *_, infos = envs.step(actions)  # usable again
    assert "episode" not in infos
