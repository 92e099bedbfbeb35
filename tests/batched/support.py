"""Shared helpers of the array-batch tests: the array libraries, a batched env
in each, and a trap that makes any host copy of a torch or JAX batch raise."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

#: The array libraries the tests run over (``xp_of`` skips a missing one).
LIBRARIES = ("numpy", "torch", "jax")

#: Modules whose own code may convert their arrays (they do it internally).
_LIBRARY_CODE = ("jax", "jaxlib", "torch")


class HostCopyError(AssertionError):
    """A torch tensor or JAX array went to NumPy (or to a list) inside the trap."""


def xp_of(name: str) -> Any:
    """The array module of ``name`` ("numpy", "torch", "jax"/"jax.numpy"), or a
    skip. JAX runs in float64 (``jax_enable_x64``; conftest.py restores it
    after each test), as the others."""
    pytest.importorskip("array_api_compat")
    if name == "numpy":
        return np
    if name in ("jax", "jax.numpy"):
        jax = pytest.importorskip("jax")
        jax.config.update("jax_enable_x64", True)
        return jax.numpy
    return pytest.importorskip(name)


def make_batched(name: str, n: int, **kw: Any) -> Any:
    """A ``vecmode.testing.BatchedCartPole`` of ``n`` sub-envs in library
    ``name``, declaring its library in ``metadata["array_namespace"]``."""
    from vecmode.testing import BatchedCartPole

    return BatchedCartPole(n, xp=xp_of(name), **kw)


def as_dict_obs(envs: Any) -> Any:
    """``envs`` (a batched env) with Dict observations, as IsaacLab's:
    ``{"policy": obs, "pos": obs[:, :2]}`` (a Gymnasium ``VectorWrapper``)."""
    import gymnasium as gym
    from gymnasium.spaces import Box, Dict
    from gymnasium.vector.utils import batch_space

    class DictObs(gym.vector.VectorWrapper):
        def __init__(self, env: Any) -> None:
            super().__init__(env)
            box = env.single_observation_space
            pos = Box(box.low[:2], box.high[:2], dtype=box.dtype)
            self.single_observation_space = Dict({"policy": box, "pos": pos})
            self.observation_space = batch_space(
                self.single_observation_space, env.num_envs
            )

        def reset(self, **kwargs: Any) -> Any:
            obs, infos = self.env.reset(**kwargs)
            return {"policy": obs, "pos": obs[:, :2] * 1}, infos

        def step(self, actions: Any) -> Any:
            obs, *rest = self.env.step(actions)
            return ({"policy": obs, "pos": obs[:, :2] * 1}, *rest)

    return DictObs(envs)


def host(batch: Any) -> Any:
    """A batch (dicts, tuples, None) as NumPy, for comparing outside the trap."""
    if batch is None or isinstance(batch, (bool, int, float, np.ndarray)):
        return batch
    if isinstance(batch, dict):
        return {key: host(value) for key, value in batch.items()}
    if isinstance(batch, (tuple, list)):
        return type(batch)(host(value) for value in batch)
    if hasattr(batch, "detach"):  # torch (its __array__ warns under NumPy 2)
        return batch.detach().cpu().numpy()
    return np.asarray(batch)


def _from_library(frame: Any) -> bool:
    """Whether the first frame outside NumPy and this module is the array
    library's own code (which may convert its arrays internally)."""
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module != __name__ and not module.startswith("numpy"):
            return module.split(".")[0] in _LIBRARY_CODE
        frame = frame.f_back
    return False


def _arrays_in(values: Any) -> bool:
    """Whether a torch tensor or a JAX array is among ``values`` (one level)."""
    for value in values:
        module = type(value).__module__
        if module.startswith(("torch", "jax", "jaxlib")) and hasattr(value, "shape"):
            return True
    return False


def _raiser(what: str) -> Any:
    def trap(*args: Any, **kwargs: Any) -> Any:
        raise HostCopyError(f"host copy inside a step: {what}")

    return trap


def _guarded(original: Any, name: str) -> Any:
    def guarded(*args: Any, **kwargs: Any) -> Any:
        if _arrays_in(args[:1]) and not _from_library(sys._getframe(1)):
            raise HostCopyError(f"host copy inside a step: numpy.{name}")
        return original(*args, **kwargs)

    return guarded


@contextlib.contextmanager
def no_host_copies() -> Iterator[None]:
    """Inside the block, converting a torch tensor or a JAX array to NumPy or to
    a list raises ``HostCopyError``: ``np.asarray``/``np.array`` (JAX on the CPU
    hands NumPy its buffer, not ``__array__``: the NumPy functions are trapped
    too), ``__array__``, ``.numpy()``, ``.tolist()``, NumPy ufuncs and functions
    over them, and iteration row by row (a per-sub-env loop). Scalar syncs
    (``bool``, ``int``, ``float``, ``.item()``) stay allowed. The NumPy functions
    are trapped where they are looked up at the call (``np.asarray(x)``), not
    where a module bound them at import (``from numpy import asarray``)."""
    asarray = np.asarray
    with pytest.MonkeyPatch.context() as patch:
        for name in ("asarray", "array", "asanyarray", "ascontiguousarray"):
            patch.setattr(np, name, _guarded(getattr(np, name), name))
        classes = []
        if "torch" in sys.modules:
            classes.append(sys.modules["torch"].Tensor)
            patch.setattr(classes[-1], "numpy", _raiser("Tensor.numpy()"))
        if "jax" in sys.modules:
            from jax._src.array import ArrayImpl

            classes.append(ArrayImpl)
        for cls in classes:
            what = cls.__name__
            patch.setattr(cls, "__array__", _raiser(f"{what}.__array__"))
            patch.setattr(cls, "tolist", _raiser(f"{what}.tolist()"))
            ufunc, function = _protocol_traps(what, asarray)
            patch.setattr(cls, "__array_ufunc__", ufunc, raising=False)
            patch.setattr(cls, "__array_function__", function, raising=False)
            patch.setattr(cls, "__iter__", _iter_trap(cls.__iter__, what))
        yield


def _protocol_traps(what: str, asarray: Any) -> tuple[Any, Any]:
    """NumPy's ufunc and function protocols over ``what``: raising, unless the
    array library's own code calls them (then NumPy's default)."""

    def ufunc(self: Any, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if not _from_library(sys._getframe(1)):
            raise HostCopyError(f"host copy inside a step: a NumPy ufunc on {what}")
        host = [asarray(x) if _arrays_in([x]) else x for x in inputs]
        return getattr(ufunc, method)(*host, **kwargs)

    def function(self: Any, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        if not _from_library(sys._getframe(1)):
            raise HostCopyError(f"host copy inside a step: numpy.{func.__name__}")
        return func._implementation(*args, **kwargs)

    return ufunc, function


def _iter_trap(original: Any, what: str) -> Any:
    def iterate(self: Any) -> Any:
        if not _from_library(sys._getframe(1)):
            raise HostCopyError(f"a per-row Python loop over a {what} inside a step")
        return original(self)

    return iterate


def array_native(cls: Any) -> Any:
    """Declare a test wrapper class array-native in every mode."""
    import vecmode

    return vecmode.supports(*vecmode.MODES, array_native=True)(cls)
