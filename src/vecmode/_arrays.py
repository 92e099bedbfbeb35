"""Batches of any array library, with no mode knowledge: which library a batch
is in, and the few operations the array path needs in that library, on the
batch's device.

NumPy batches take vecmode's NumPy path (:func:`namespace` is None). Other
libraries' arrays (torch, JAX...) go through ``array-api-compat``, installed
with vecmode's ``torch`` or ``jax`` extra.

>>> import numpy as np
>>> namespace(np.zeros(3)) is None
True
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

#: The ``metadata`` key where a vector env declares the array library of its
#: batches (``"numpy"``, ``"torch"``, ``"jax.numpy"``...).
ARRAY_NAMESPACE = "array_namespace"

_HOST = (np.ndarray, np.generic, bool, int, float, list, tuple)


def leaf(batch: Any) -> Any:
    """The first array of a batch (a dict or tuple of arrays: its first leaf)."""
    while isinstance(batch, (dict, tuple)) and batch:
        batch = next(iter(batch.values())) if isinstance(batch, dict) else batch[0]
    return batch


#: The namespace of each array type met (None: NumPy's path).
_BY_TYPE: dict[type, Any] = {}


def namespace(batch: Any) -> Any | None:
    """None for a NumPy batch (or a Python value); else the array-api-compat
    namespace of the batch's library (of its first leaf)."""
    first = leaf(batch)
    kind = type(first)
    if kind in _BY_TYPE:
        return _BY_TYPE[kind]
    if first is None or isinstance(first, _HOST):
        return None
    found = _BY_TYPE[kind] = _namespace_of(first)
    return found


def _namespace_of(first: Any) -> Any | None:
    """The array-api-compat namespace of an array (None: NumPy's)."""
    try:
        import array_api_compat
    except ImportError as error:  # pragma: no cover - the extras install it
        raise ImportError(
            f"vecmode needs array-api-compat for a batch of "
            f"{type(first).__module__}.{type(first).__name__}: pip install "
            f"array-api-compat (or, in a vecmode checkout, '.[torch]' or '.[jax]')."
        ) from error
    if not array_api_compat.is_array_api_obj(first):
        return None
    return array_api_compat.array_namespace(first)


def name_of(xp: Any | None) -> str:
    """The library's module name: ``"numpy"``, ``"torch"``, ``"jax.numpy"``..."""
    if xp is None:
        return "numpy"
    name = getattr(xp, "__name__", "")
    # array-api-compat's wrappers: array_api_compat.torch -> torch
    return name.removeprefix("array_api_compat.")


def module_named(name: str) -> Any | None:
    """The array module named ``name`` (``"torch"``, ``"jax.numpy"``), if it is
    installed and has ``asarray``; else None."""
    try:
        module = importlib.import_module(name)
    except ImportError:
        return None
    return module if callable(getattr(module, "asarray", None)) else None


def declared_namespace(env: Any) -> str | None:
    """The array library ``env`` declares in ``metadata["array_namespace"]``."""
    metadata = getattr(env, "metadata", None)
    if not isinstance(metadata, dict):
        return None
    found = metadata.get(ARRAY_NAMESPACE)
    return None if found is None else str(found)


def is_array_env(env: Any) -> bool:
    """Whether ``env`` declares batches of a library other than NumPy."""
    return declared_namespace(env) not in (None, "numpy")


def any_true(mask: Any) -> bool:
    """Whether a bool array of any library holds a True (one scalar to the host)."""
    return bool(mask.any())  # NumPy's, torch's and JAX's arrays alike


def flags(x: Any) -> Any:
    """Bool flags of any library as they are; integer or float ones (IsaacGym's
    0/1) as bools."""
    return x if x.dtype == namespace(x).bool else x != 0  # type: ignore[union-attr]


def ended(terminations: Any, truncations: Any) -> Any:
    """``terminations | truncations`` of any library, as bools (see :func:`flags`)."""
    if namespace(terminations) is None:  # NumPy's (or lists)
        return np.logical_or(terminations, truncations)
    return flags(terminations) | flags(truncations)


def count_true(mask: Any) -> int:
    """How many Trues a bool array of any library holds."""
    xp = namespace(mask)
    if xp is None:
        return int(np.count_nonzero(mask))
    return int(xp.count_nonzero(mask))


def rows_where(mask: Any, chosen: Any, other: Any) -> Any:
    """``chosen`` in the rows of ``mask``, ``other`` elsewhere: a new batch (dicts
    and tuples of arrays leaf by leaf), in ``chosen``'s library and device."""
    if isinstance(chosen, dict):
        return {k: rows_where(mask, chosen[k], other[k]) for k in chosen}
    if isinstance(chosen, tuple):
        return tuple(rows_where(mask, c, o) for c, o in zip(chosen, other, strict=True))
    xp = namespace(chosen) or np
    wide = xp.reshape(mask, (-1,) + (1,) * (len(chosen.shape) - 1))
    return xp.where(wide, chosen, other)


def to_numpy(batch: Any) -> Any:
    """A NumPy copy of an array of any library, on the host: for saving and
    reports, never in a step."""
    cpu = getattr(batch, "cpu", None)  # a torch tensor, wherever it lives
    value = cpu() if callable(cpu) else batch
    detach = getattr(value, "detach", None)
    # np.asarray, then a copy: np.array(copy=True) warns over torch's __array__
    return np.asarray(detach() if callable(detach) else value).copy()
