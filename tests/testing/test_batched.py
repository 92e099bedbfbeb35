"""vecmode.testing.BatchedCartPole: the same episodes in NumPy, torch and JAX, and
Gymnasium's CartPole physics."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from gymnasium.envs.classic_control.cartpole import CartPoleVectorEnv
from gymnasium.vector import AutoresetMode
from hypothesis import given, settings
from hypothesis import strategies as st

from vecmode.testing import BatchedCartPole, check_vector_env

pytest.importorskip("array_api_compat")


def library(name: str) -> Any:
    """The array module ``name`` ("numpy", "torch" or "jax"), or a skip."""
    if name == "numpy":
        return np
    if name == "jax":
        return pytest.importorskip("jax").numpy
    return pytest.importorskip(name)


@contextlib.contextmanager
def x64(name: str) -> Iterator[None]:
    """JAX in float64 inside the block (the other libraries have it anyway)."""
    if name != "jax":
        yield
        return
    import jax

    was = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", was)


def host(batch: Any) -> np.ndarray:
    """A batch as NumPy, for comparing (tests only)."""
    return np.asarray(batch)


def run(
    name: str, num_envs: int, limit: int, steps: int, seed: int, p_extra: float
) -> list[tuple[np.ndarray, ...]]:
    """Every result of a run in library ``name``: random actions; after each
    step, a masked reset of the ended sub-envs (each left running on with
    probability ``p_extra``) and of others (probability ``p_extra``)."""
    xp = library(name)
    rng = np.random.default_rng(seed)
    with x64(name):
        env = BatchedCartPole(num_envs, xp, max_episode_steps=limit)
        obs, _ = env.reset(seed=seed)
        out = [(host(obs),)]
        for _ in range(steps):
            actions = rng.integers(0, 2, num_envs)
            obs, rewards, terminated, truncated, _ = env.step(xp.asarray(actions))
            out.append(tuple(host(a) for a in (obs, rewards, terminated, truncated)))
            ended = out[-1][2] | out[-1][3]
            mask = (ended & (rng.random(num_envs) >= p_extra)) | (
                rng.random(num_envs) < p_extra
            )
            if mask.any():
                obs, _ = env.reset(options={"reset_mask": xp.asarray(mask)})
                out.append((host(obs),))
    return out


@settings(max_examples=25, deadline=None)
@given(
    num_envs=st.integers(1, 6),
    limit=st.integers(1, 40),
    steps=st.integers(1, 80),
    seed=st.integers(0, 2**32 - 1),
    p_extra=st.sampled_from([0.0, 0.1, 0.5]),
)
def test_numpy_torch_and_jax_give_the_same_episodes(
    num_envs: int, limit: int, steps: int, seed: int, p_extra: float
) -> None:
    runs = {
        name: run(name, num_envs, limit, steps, seed, p_extra)
        for name in ("numpy", "torch", "jax")
    }
    expected = runs.pop("numpy")
    for name, got in runs.items():
        assert len(got) == len(expected), name
        for i, (theirs, ours) in enumerate(zip(expected, got, strict=True)):
            np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6, atol=1e-7)
            for a, b in zip(theirs[1:], ours[1:], strict=True):
                np.testing.assert_array_equal(b, a, err_msg=f"{name}, result {i}")


@pytest.mark.parametrize("name", ["numpy", "torch", "jax"])
def test_batches_are_the_librarys_own_arrays(name: str) -> None:
    xp = library(name)
    env = BatchedCartPole(3, xp)
    obs, _ = env.reset(seed=0)
    results = env.step(xp.asarray([0, 1, 1]))[:4]
    kind = type(xp.asarray(0))
    assert all(isinstance(a, kind) for a in (obs, *results))
    assert [str(a.dtype).split(".")[-1] for a in (obs, *results)] == [
        "float32",
        "float32",
        "float32",
        "bool",
        "bool",
    ]
    assert env.metadata["autoreset_mode"] is AutoresetMode.DISABLED
    # float64 where the library has it: JAX only with jax_enable_x64
    assert str(env.state.dtype).endswith("float32" if name == "jax" else "float64")


@pytest.mark.parametrize("num_envs", [1, 7])
@pytest.mark.parametrize("seed", [0, 5])
def test_numpy_version_steps_as_gymnasiums_cartpole_vector_env(
    num_envs: int, seed: int
) -> None:
    theirs = CartPoleVectorEnv(num_envs, max_episode_steps=25)
    ours = BatchedCartPole(num_envs, max_episode_steps=25)
    theirs.reset(seed=seed)
    ours.reset(seed=seed)
    ours.state = theirs.state.T.copy()  # the same start states
    rng = np.random.default_rng(seed)
    running = np.ones(num_envs, dtype=bool)  # Gymnasium autoresets the rest
    for _ in range(40):
        actions = rng.integers(0, 2, num_envs)
        expected, got = theirs.step(actions)[:4], ours.step(actions)[:4]
        for a, b in zip(expected, got, strict=True):
            np.testing.assert_array_equal(b[running], a[running])
        running &= ~(got[2] | got[3])
        if not running.any():
            return
    pytest.fail("no episode ended")  # pragma: no cover


def test_reset_seeds_starts_and_masks_keep_the_others() -> None:
    env = BatchedCartPole(64)
    first, _ = env.reset(seed=3)
    assert np.array_equal(env.reset(seed=3)[0], first)
    assert (np.abs(first) < 0.05).all() and len(np.unique(first)) == first.size
    assert not np.array_equal(env.reset()[0], first)
    obs, *_ = env.step(np.ones(64, dtype=np.int64))
    mask = np.arange(64) % 3 == 0
    options = {"reset_mask": mask}
    after, _ = env.reset(options=options)
    assert options == {"reset_mask": mask}  # not mutated
    np.testing.assert_array_equal(after[~mask], obs[~mask])
    assert (np.abs(after[mask]) < 0.05).all() and not np.isin(after[mask], obs).any()
    assert (env.steps[mask] == 0).all() and (env.steps[~mask] == 1).all()


def test_a_torch_env_takes_a_numpy_mask() -> None:
    torch = pytest.importorskip("torch")
    env = BatchedCartPole(4, torch)
    env.reset(seed=0)
    env.step(torch.zeros(4, dtype=torch.int64))
    after, _ = env.reset(options={"reset_mask": np.array([True, False] * 2)})
    assert isinstance(after, torch.Tensor)
    assert torch.equal(env.steps, torch.tensor([0, 1, 0, 1], dtype=torch.int32))


@pytest.mark.parametrize(
    ("mask", "error", "said"),
    [
        (np.ones(3, dtype=bool), ValueError, r"must have shape `\(4,\)`, got \(3,\)"),
        (np.ones(4, dtype=np.int64), TypeError, "must have `dtype=np.bool_`"),
        ([[True] * 4], ValueError, r"must have shape `\(4,\)`, got \(1, 4\)"),
    ],
)
def test_a_bad_mask_is_refused_and_changes_nothing(mask, error, said) -> None:
    """As the cores refuse it: a wrong shape ValueError, a wrong dtype TypeError."""
    env = BatchedCartPole(4)
    env.reset(seed=0)
    env.step(np.zeros(4, dtype=np.int64))
    state, key, draws = env.state.copy(), env.key, env.draws.copy()
    with pytest.raises(error, match=said):
        env.reset(seed=1, options={"reset_mask": mask})
    np.testing.assert_array_equal(env.state, state)
    np.testing.assert_array_equal(env.draws, draws)
    assert env.key == key and (env.steps == 1).all()
    env.step(np.zeros(4, dtype=np.int64))  # still usable


def test_stepping_before_reset_raises() -> None:
    with pytest.raises(RuntimeError, match="call reset"):
        BatchedCartPole(2).step(np.zeros(2, dtype=np.int64))


def test_an_ended_sub_env_stepped_without_a_reset_runs_its_episode_on() -> None:
    env = BatchedCartPole(2, max_episode_steps=1)
    env.reset(seed=0)
    first = env.step(np.zeros(2, dtype=np.int64))
    second = env.step(np.zeros(2, dtype=np.int64))
    assert first[3].all() and second[3].all() and (env.steps == 2).all()
    assert (second[0][:, 0] != first[0][:, 0]).all()  # the physics ran on


@pytest.mark.parametrize("name", ["numpy", "torch", "jax"])
def test_check_vector_env_passes(name: str) -> None:
    xp = library(name)
    report = check_vector_env(lambda: BatchedCartPole(4, xp), steps=200)
    assert report.mode is AutoresetMode.DISABLED
    assert report.episode_ends >= 2 and report.masked_resets >= 1


class ResetsInItsStep(BatchedCartPole):
    """Resets its ended sub-envs inside the ending step, as many batched
    simulators do, and reports no final observation."""

    def step(self, actions: Any) -> Any:
        obs, rewards, terminations, truncations, infos = super().step(actions)
        ended = terminations | truncations
        if bool(ended.any()):
            obs, _ = self.reset(options={"reset_mask": ended})
        return obs, rewards, terminations, truncations, infos


@pytest.mark.parametrize("name", ["numpy", "torch", "jax"])
def test_check_vector_env_fails_an_env_resetting_inside_its_step(name: str) -> None:
    """Declared Disabled, it passed in every library, losing every final
    observation."""
    xp = library(name)
    with pytest.raises(AssertionError) as failure:
        check_vector_env(lambda: ResetsInItsStep(4, xp), steps=200)
    message = " ".join(str(failure.value).split())
    assert "declares Disabled, but vecmode.probe_mode does not find it" in message
    assert "got what a masked reset returns there" in message
