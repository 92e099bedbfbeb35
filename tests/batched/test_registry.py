"""The registry over array batches: which wrappers take torch and JAX batches
(``array_native``), the refusal of the others at construction and in
``check_stack``, and the array library each layer declares."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import VectorWrapper

import vecmode
from tests.batched.support import xp_of
from vecmode import registry
from vecmode.errors import ArrayLibraryError
from vecmode.registry import Verdict
from vecmode.testing import BatchedCartPole

pytest.importorskip("array_api_compat")

DECLARED = {"numpy": "numpy", "torch": "torch", "jax": "jax.numpy"}


@vecmode.supports(*vecmode.MODES)
class ReadsNumpy(VectorWrapper):
    """Declares its modes, not array_native: it reads NumPy."""


@vecmode.supports(*vecmode.MODES, array_native=True)
class Native(VectorWrapper):
    """Declared array-native: it passes every batch on as it is."""


class Undeclared(VectorWrapper):
    """A user's wrapper that declares nothing."""


@pytest.mark.parametrize("name", ["numpy", "torch", "jax"])
def test_batched_cartpole_declares_its_library_per_instance(name: str) -> None:
    env = BatchedCartPole(2, xp_of(name))
    assert env.metadata["array_namespace"] == DECLARED[name]
    assert "array_namespace" not in BatchedCartPole.metadata  # not the class's
    assert vecmode._arrays.is_array_env(env) is (name != "numpy")


@pytest.mark.parametrize("name", ["torch", "jax"])
def test_a_wrapper_not_array_native_is_refused_at_construction(name: str) -> None:
    env = BatchedCartPole(2, xp_of(name))
    with pytest.raises(ArrayLibraryError) as info:
        ReadsNumpy(env)
    text = str(info.value)
    assert text.startswith(
        f"ReadsNumpy cannot wrap this BatchedCartPole: its env returns "
        f"{DECLARED[name]} batches (metadata['array_namespace'] is "
        f"'{DECLARED[name]}') and ReadsNumpy is not array-native: it reads NumPy"
    )
    assert "vecmode table lists them" in text
    convert = "JaxToNumpy(env)" if name == "jax" else "env_xp=torch, target_xp=numpy"
    assert convert in text
    assert "declare it" not in text  # it did declare: array_native=False
    assert isinstance(info.value, TypeError)  # a wrong kind of argument


def test_the_exact_message_over_torch() -> None:
    env = BatchedCartPole(2, xp_of("torch"))
    with pytest.raises(ArrayLibraryError) as info:
        ReadsNumpy(env)
    assert str(info.value) == (
        "ReadsNumpy cannot wrap this BatchedCartPole: its env returns torch batches "
        "(metadata['array_namespace'] is 'torch') and ReadsNumpy is not "
        "array-native: it reads NumPy, so each batch would be copied to the host, "
        "or fail. Use an array-native wrapper instead (vecmode table lists them), "
        "or convert the batches first: ReadsNumpy(vecmode.wrappers.ArrayConversion"
        "(env, env_xp=torch, target_xp=numpy))."
    )


def test_over_numpy_batches_nothing_changes() -> None:
    for env in (BatchedCartPole(2), vecmode.make_vec("CartPole-v1", 2, "sync")):
        wrapped = ReadsNumpy(env)
        report = vecmode.check_stack(wrapped)
        assert report.ok and "arrays" not in str(report).splitlines()[2]
        wrapped.close()


@pytest.mark.parametrize("name", ["torch", "jax"])
def test_gymnasiums_and_undeclared_wrappers_are_refused_under_guard(
    name: str,
) -> None:
    env = BatchedCartPole(2, xp_of(name))
    with vecmode.guard():
        with pytest.raises(ArrayLibraryError, match=r"^ClipReward cannot"):
            gym.wrappers.vector.ClipReward(env, 0.0, 1.0)
        with pytest.raises(ArrayLibraryError) as info:
            Undeclared(env)
    assert str(info.value).endswith(
        f"If Undeclared does work on {DECLARED[name]} arrays, on their device and "
        f"with no copy to NumPy, declare it: @vecmode.supports(*vecmode.MODES, "
        f"array_native=True) (the modes it supports) or vecmode.register(..., "
        f"array_native=True)."
    )
    # as for the modes, Gymnasium's and undeclared wrappers are checked under
    # guard() only: built without it, check_stack still reports them
    for layer in (gym.wrappers.vector.ClipReward(env, 0.0, 1.0), Undeclared(env)):
        report = vecmode.check_stack(layer)
        assert not report.ok and report[1].verdict is Verdict.REFUSED
        assert report[1].array_native is False


@pytest.mark.parametrize("name", ["torch", "jax"])
def test_array_native_wrappers_are_accepted(name: str) -> None:
    env = BatchedCartPole(2, xp_of(name))
    wrapped = Native(env)
    assert wrapped.metadata["array_namespace"] == DECLARED[name]  # forwarded
    obs, _ = wrapped.reset(seed=0)
    assert vecmode._arrays.namespace(obs) is not None
    report = vecmode.check_stack(wrapped)
    assert report.ok and report[1].array_native is True
    assert registry.is_array_native(Native) and registry.is_array_native(wrapped)
    assert not registry.is_array_native(ReadsNumpy)
    assert not registry.is_array_native(Undeclared)
    with vecmode.guard():
        Native(env)


def test_register_declares_array_native_too() -> None:
    class Theirs(VectorWrapper):
        pass

    env = BatchedCartPole(2, xp_of("torch"))
    vecmode.register(Theirs, vecmode.MODES)
    try:
        with pytest.raises(ArrayLibraryError, match=r"^Theirs cannot"):
            Theirs(env)
        vecmode.register(Theirs, vecmode.MODES, array_native=True)
        assert registry.is_array_native(Theirs)
        Theirs(env)
    finally:
        vecmode.unregister(Theirs)


@pytest.mark.parametrize("value", [1, "yes", None])
def test_array_native_must_be_a_bool(value: Any) -> None:
    with pytest.raises(TypeError, match="array_native must be True or False"):
        vecmode.supports("NextStep", array_native=value)
    with pytest.raises(TypeError, match="array_native must be True or False"):
        vecmode.register(Undeclared, ["NextStep"], array_native=value)
    assert registry.declaration(Undeclared) is None


def test_check_stack_reports_the_layer_that_reads_numpy() -> None:
    env = BatchedCartPole(2, xp_of("torch"))
    layer = gym.wrappers.vector.ClipReward(Native(env), 0.0, 1.0)  # no guard
    report = vecmode.check_stack(layer)
    assert [row.verdict for row in report] == [Verdict.OK, Verdict.OK, Verdict.REFUSED]
    assert [row.library for row in report] == ["torch"] * 3
    assert [row.array_native for row in report] == [None, True, False]
    text = str(report)
    assert text.startswith("NOT OK: layer 2 ClipReward is refused over torch batches")
    header, _, *rows = text.splitlines()[2:7]
    assert header.split()[-1] == "arrays"
    assert rows[0].split()[-1] == "torch" and rows[1].endswith("native: torch")
    assert rows[2].endswith("reads NumPy")
    assert "is not array-native: it reads NumPy" in report[2].note
    # the class's evidence still (it was "none", as if nothing were declared)
    assert [row.evidence.value for row in report][1:] == ["declared", "verified"]
    with pytest.raises(vecmode.IncompatibleModeError, match="over torch batches"):
        vecmode.assert_compatible(layer)


def test_conversions_are_array_native_and_declare_their_output() -> None:
    torch = pytest.importorskip("torch")
    jnp = pytest.importorskip("jax").numpy
    from vecmode.wrappers import ArrayConversion, JaxToNumpy, JaxToTorch, NumpyToTorch

    base = vecmode.make_vec("CartPole-v1", 2, "sync", autoreset_mode="SameStep")
    to_jax = ArrayConversion(base, env_xp=np, target_xp=jnp)
    assert to_jax.metadata["array_namespace"] == "jax.numpy"
    assert NumpyToTorch(base).metadata["array_namespace"] == "torch"
    assert JaxToNumpy(to_jax).metadata["array_namespace"] == "numpy"
    assert JaxToTorch(to_jax).metadata["array_namespace"] == "torch"
    assert base.metadata.get("array_namespace") is None  # not written into
    assert to_jax.metadata["autoreset_mode"] is vecmode.AutoresetMode.SAME_STEP
    for cls in (ArrayConversion, NumpyToTorch, JaxToNumpy, JaxToTorch):
        assert registry.is_array_native(cls)
    for name in ("ArrayConversion", "NumpyToTorch", "JaxToNumpy", "JaxToTorch"):
        assert registry.is_array_native(getattr(gym.wrappers.vector, name))
    # converted to NumPy, a wrapper that reads NumPy is fine again
    jax_env = BatchedCartPole(2, jnp)
    numpy_env = ReadsNumpy(JaxToNumpy(jax_env))
    obs, _ = numpy_env.reset(seed=0)
    assert type(obs) is np.ndarray and vecmode.check_stack(numpy_env).ok
    assert torch.is_tensor(NumpyToTorch(BatchedCartPole(2)).reset(seed=0)[0])


def test_the_table_lists_the_array_native_wrappers() -> None:
    text = registry.format_table()
    line = next(row for row in text.splitlines() if row.startswith("Array-native"))
    assert "vecmode.wrappers.JaxToNumpy" in line
    assert "gymnasium.wrappers.vector.JaxToNumpy" in line
    assert f"{__name__}.Native" in line and "ReadsNumpy" not in line
    markdown = registry.format_table(markdown=True).splitlines()
    assert any(row.startswith("Array-native") for row in markdown)
    entries = {name: found for name, found, _ in registry.table_entries()}
    assert entries[f"{__name__}.Native"].array_native
    assert not entries["gymnasium.wrappers.vector.ClipReward"].array_native


class DenseSameStep(BatchedCartPole):
    """Says it runs SameStep with its final observations in the dense layout
    (it never ends an episode in these tests: only its construction matters)."""

    final_obs_layout = "dense"

    def __init__(self, num_envs: int, xp: Any = np) -> None:
        super().__init__(num_envs, xp)
        self.metadata = {**self.metadata, "autoreset_mode": "SameStep"}


@pytest.mark.parametrize("name", ["torch", "jax"])
def test_array_native_wrappers_read_the_dense_layout_of_array_batches(
    name: str,
) -> None:
    Native(DenseSameStep(2, xp_of(name)))  # over torch/JAX: dense is their layout
    with pytest.raises(vecmode.IncompatibleModeError, match="one dense array"):
        Native(DenseSameStep(2))  # over NumPy as before: Gymnasium's layout only


@pytest.mark.parametrize("name", ["torch", "jax"])
def test_a_refusal_names_vecmodes_wrapper_of_the_same_name(name: str) -> None:
    """It said "Use an array-native wrapper instead (vecmode table lists them)"."""
    env = BatchedCartPole(2, xp_of(name))
    with vecmode.guard(), pytest.raises(ArrayLibraryError) as info:
        gym.wrappers.vector.RecordEpisodeStatistics(env)
    assert (
        "Use vecmode.wrappers.RecordEpisodeStatistics instead (same arguments), or "
        "convert the batches first"
    ) in str(info.value)
    report = vecmode.check_stack(gym.wrappers.vector.RecordEpisodeStatistics(env))
    assert "vecmode.wrappers.RecordEpisodeStatistics instead" in report[1].note


@pytest.mark.parametrize("name", ["torch", "jax"])
def test_an_undeclared_subclass_of_a_vecmode_base_is_told_to_declare_it(name):
    """It inherits the base's NumPy-only declaration: the advice was left out."""

    class Doubled(vecmode.wrappers.ObservationWrapper):
        def observations(self, observations):
            return observations * 2

    with pytest.raises(ArrayLibraryError) as info:
        Doubled(BatchedCartPole(2, xp_of(name)))
    text = str(info.value)
    assert "@vecmode.supports(*vecmode.MODES, array_native=True)" in text
    assert "vecmode table lists them" in text
