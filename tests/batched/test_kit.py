"""The conformance kit over torch and JAX batches: ``check_vector_env`` over
``BatchedCartPole`` in each library, ``check_wrapper(..., array_library=...)``,
and both failing where the array path is wrong."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import pytest
from gymnasium.vector import VectorWrapper

import vecmode
from tests.batched.support import xp_of
from vecmode.errors import ArrayLibraryError
from vecmode.testing import BatchedCartPole, check_vector_env, check_wrapper
from vecmode.testing.wrapper import ConformanceError

pytest.importorskip("array_api_compat")


class Seen(BatchedCartPole):
    """BatchedCartPole noting the types of the actions and masks it is given."""

    given: set[str] = set()

    def step(self, actions: Any) -> Any:
        Seen.given.add(f"actions {type(actions).__name__}")
        return super().step(actions)

    def reset(self, *, seed: Any = None, options: Any = None) -> Any:
        if options and "reset_mask" in options:
            Seen.given.add(f"mask {type(options['reset_mask']).__name__}")
        return super().reset(seed=seed, options=options)


class ResetsAll(BatchedCartPole):
    """Resets every sub-env on a masked reset, whatever the mask."""

    def reset(self, *, seed: Any = None, options: Any = None) -> Any:
        return super().reset(seed=seed)


@pytest.mark.parametrize("name", ["numpy", "torch", "jax"])
def test_check_vector_env_runs_the_same_checks_in_every_xp_of(name: str) -> None:
    xp = xp_of(name)  # JAX in float64, as NumPy and torch run CartPole
    report = check_vector_env(lambda: BatchedCartPole(4, xp), steps=150)
    expected = check_vector_env(lambda: BatchedCartPole(4), steps=150)
    assert report == expected  # the same episodes: the same calls, ends, resets
    assert report.episode_ends >= 2 and report.masked_resets >= 1


@pytest.mark.parametrize("name", ["torch", "jax"])
def test_check_vector_env_drives_the_env_in_its_xp_of(name: str) -> None:
    xp = xp_of(name)
    Seen.given = set()
    check_vector_env(lambda: Seen(3, xp), steps=100)
    kind = type(xp.asarray(0)).__name__
    assert Seen.given == {f"actions {kind}", f"mask {kind}"}


@pytest.mark.parametrize("name", ["numpy", "torch", "jax"])
def test_check_vector_env_finds_a_torch_or_jax_env_that_breaks_its_mode(
    name: str,
) -> None:
    xp = xp_of(name)
    with pytest.raises(AssertionError, match="does not behave as Disabled") as info:
        check_vector_env(lambda: ResetsAll(3, xp), steps=200)
    assert "reset(options={'reset_mask'" in str(info.value)


@vecmode.supports(*vecmode.MODES, array_native=True)
class PassThrough(VectorWrapper):
    """Array-native: passes every call on, noting what it was given."""

    given: set[str] = set()

    def step(self, actions: Any) -> Any:
        result = self.env.step(actions)
        PassThrough.given.add(type(actions).__name__)
        PassThrough.given.add(type(result[0]).__name__)
        return result


@vecmode.supports(*vecmode.MODES, array_native=True)
class RewardsEveryRow(VectorWrapper):
    """Array-native, but wrong: adds 1 to NEXT_STEP's reset step's reward too."""

    def step(self, actions: Any) -> Any:
        obs, rewards, terminated, truncated, infos = self.env.step(actions)
        return obs, rewards + 1, terminated, truncated, infos


@vecmode.supports(*vecmode.MODES)
class ReadsNumpy(VectorWrapper):
    """Declares its modes, not array_native."""


@pytest.mark.parametrize("name", ["torch", "jax"])
def test_check_wrapper_runs_a_wrapper_over_torch_and_jax_batches(name: str) -> None:
    kind = type(xp_of(name).asarray(0)).__name__
    PassThrough.given = set()
    report = check_wrapper(PassThrough, array_library=name)
    assert PassThrough.given == {kind}  # its actions and batches: that library's
    assert report.modes == tuple(vecmode.MODES)
    assert report.summary.startswith(
        f"PassThrough: right in NextStep, SameStep, Disabled over {name} batches ("
    )
    numpy = check_wrapper(
        PassThrough, bases=["vecmode.SyncVectorEnv"], array_library="numpy"
    )
    assert report.transitions == numpy.transitions


@pytest.mark.parametrize("name", ["torch", "jax"])
def test_check_wrapper_finds_a_wrong_array_path(name: str) -> None:
    xp_of(name)
    with pytest.raises(ConformanceError, match="reset_step_stays_empty"):
        check_wrapper(RewardsEveryRow, array_library=name)


def test_check_wrapper_over_torch_refuses_a_wrapper_that_reads_numpy() -> None:
    xp_of("torch")
    not_native = r"array_library='torch'\): it is not array-native \(it reads NumPy\)"
    with pytest.raises(ValueError, match=rf"^check_wrapper\(ReadsNumpy, {not_native}"):
        check_wrapper(ReadsNumpy, array_library="torch")
    clip = gym.wrappers.vector.ClipReward
    with vecmode.guard(), pytest.raises(ValueError, match=not_native) as raised:
        check_wrapper(lambda env: clip(env, 0, 1), array_library="torch")
    assert isinstance(raised.value.__cause__, ArrayLibraryError)  # the registry's


def test_check_wrapper_array_library_arguments() -> None:
    with pytest.raises(ValueError, match="array_library must be one of 'numpy'"):
        check_wrapper(PassThrough, array_library="cupy")
    xp_of("torch")
    with pytest.raises(ValueError, match="over torch batches it runs over vecmode"):
        check_wrapper(
            PassThrough,
            array_library="torch",
            bases=["gymnasium.vector.SyncVectorEnv"],
        )
    numpy = check_wrapper(PassThrough, array_library="numpy")
    assert "over" not in numpy.summary and len(numpy.bases) == 2


@pytest.mark.parametrize(
    ("declared", "says"),
    [
        ("jax.numpy", "obs: expected jax.numpy batches, as metadata"),
        (None, "obs: expected numpy batches: declare another library"),
    ],
)
def test_batches_not_in_the_declared_library_fail(declared, says):
    """The kit passed such an env, which with_autoreset then refused at its
    first episode end."""
    pytest.importorskip("torch")

    def factory() -> Any:
        env = BatchedCartPole(2, xp=xp_of("torch"))
        env.metadata = {**env.metadata, "array_namespace": declared}
        if declared is None:
            del env.metadata["array_namespace"]
        return env

    with pytest.raises(AssertionError) as info:
        check_vector_env(factory, steps=20)
    assert f"call 0 (reset), {says}" in str(info.value), str(info.value)
    assert "got torch batches" in str(info.value)


def test_number_flags_fail_naming_the_batch_library() -> None:
    """0/1 flags are read as bools by vecmode, but Gymnasium's API wants bools:
    the kit says so in the env's own library's words."""
    torch = pytest.importorskip("torch")

    class FloatFlags(BatchedCartPole):
        def step(self, actions: Any) -> Any:
            obs, rewards, terms, truncs, infos = super().step(actions)
            return obs, rewards, terms.float(), truncs.float(), infos

    with pytest.raises(AssertionError) as caught:
        check_vector_env(lambda: FloatFlags(3, xp=torch, max_episode_steps=4))
    assert (
        "terminations: expected a torch array of shape (3,) and dtype bool, got "
        "torch array of shape (3,) and dtype float32"
    ) in str(caught.value)
