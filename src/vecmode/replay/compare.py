"""Exact comparison of what vector envs return, and a readable difference."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium.spaces import Space
from gymnasium.vector.utils import iterate

from vecmode import _arrays


class _Missing:
    def __repr__(self) -> str:
        return "<no such key>"


#: Stands for an absent dict key in a :class:`Difference`.
MISSING: Any = _Missing()

_NUMBER = (bool, int, float, complex, np.generic)


def as_numpy(value: Any) -> Any:
    """``value`` with every torch or jax array in it made a NumPy array."""
    if isinstance(value, dict):
        return {key: as_numpy(item) for key, item in value.items()}
    if isinstance(value, (tuple, list)):
        return type(value)(as_numpy(item) for item in value)
    if isinstance(value, np.ndarray):
        if value.dtype != object:
            return value
        out = np.empty(value.shape, dtype=object)
        for index, item in np.ndenumerate(value):
            out[index] = as_numpy(item)
        return out
    if isinstance(value, _NUMBER) or not hasattr(value, "__array__"):
        return value
    return _arrays.to_numpy(value)


def where_different(a: Any, b: Any, *, strict: bool = True) -> str | None:
    """The path (``""``, ``['key']``, ``[i]``) of the first difference, or None;
    NaN equals NaN; ``strict``: dtypes and types must match too."""
    if isinstance(a, (dict, tuple, list)) or isinstance(b, (dict, tuple, list)):
        pairs = _pairs(a, b, strict)
        if pairs is None:
            return ""
        for key, x, y in pairs:
            inner = where_different(x, y, strict=strict)
            if inner is not None:
                return f"[{key!r}]{inner}"
        return None
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return _arrays_differ(a, b, strict)
    return _scalars_differ(a, b, strict)


def _pairs(a: Any, b: Any, strict: bool) -> list[tuple[Any, Any, Any]] | None:
    """The entries of two dicts or two sequences side by side (None: no match)."""
    if isinstance(a, dict) or isinstance(b, dict):
        if isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
            return [(key, a[key], b[key]) for key in a]
        return None
    if not (isinstance(a, (tuple, list)) and isinstance(b, (tuple, list))):
        return None
    if len(a) != len(b) or (strict and type(a) is not type(b)):
        return None
    return list(zip(range(len(a)), a, b, strict=True))


def _scalars_differ(a: Any, b: Any, strict: bool) -> str | None:
    if strict and type(a) is not type(b):
        return ""
    if isinstance(a, _NUMBER) and isinstance(b, _NUMBER):
        both_nan = bool(a != a) and bool(b != b)  # only NaN differs from itself
        return None if bool(a == b) or both_nan else ""
    try:
        return None if bool(a == b) else ""
    except (TypeError, ValueError):  # pragma: no cover - exotic values
        return ""


def _arrays_differ(a: Any, b: Any, strict: bool) -> str | None:
    if strict and not (
        isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype
    ):
        return ""
    try:
        x, y = np.asarray(a), np.asarray(b)
    except (TypeError, ValueError):  # pragma: no cover - ragged values
        return ""
    if x.shape != y.shape:
        return ""
    if x.dtype == object or y.dtype == object:
        equal = x.dtype == y.dtype and all(
            same(p, q) for p, q in zip(x.ravel(), y.ravel(), strict=True)
        )
    else:
        nan_equal = x.dtype.kind in "fc" and y.dtype.kind in "fc"
        equal = bool(np.array_equal(x, y, equal_nan=nan_equal))
    return None if equal else ""


def same(a: Any, b: Any, *, strict: bool = True) -> bool:
    """Whether ``a`` and ``b`` are exactly equal (see :func:`where_different`)."""
    return where_different(a, b, strict=strict) is None


def arrays_in(
    value: Any, path: str = "", *, every_library: bool = False
) -> Iterator[tuple[str, Any]]:
    """Every NumPy array in ``value`` (object arrays' entries too), with its path;
    ``every_library``: other libraries' arrays (torch's, JAX's) too."""
    entries: Any = ()
    if isinstance(value, np.ndarray):
        yield path, value
        entries = enumerate(value.flat) if value.dtype == object else ()
    elif isinstance(value, dict):
        entries = value.items()
    elif isinstance(value, (tuple, list)):
        entries = enumerate(value)
    elif every_library and hasattr(value, "__dlpack__"):
        yield path, value  # another library's array (the array API's protocol)
    for key, entry in entries:
        yield from arrays_in(entry, f"{path}[{key!r}]", every_library=every_library)


def per_sub_env(space: Space, batch: Any, num_envs: int) -> list[Any]:
    """One entry per sub-env of ``batch``; ``ValueError`` unless ``num_envs``."""
    try:
        items = list(iterate(space, batch))
    except (TypeError, ValueError, NotImplementedError, IndexError):
        items = [batch[i] for i in range(len(batch))]
    if len(items) != num_envs:
        raise ValueError(
            f"expected one entry per sub-env ({num_envs}), got {len(items)}"
        )
    return items


def describe(value: Any, limit: int = 160) -> str:
    """A one-line text for ``value`` of at most about ``limit`` characters."""
    if value is MISSING:
        return repr(value)
    if isinstance(value, np.ndarray):
        text = np.array2string(value, threshold=12, edgeitems=3, separator=", ")
        if value.dtype != object:
            text += f" ({value.dtype})"
    elif isinstance(value, np.generic):
        text = f"{value.item()!r} ({value.dtype})"
    else:
        text = repr(value)
    return _clipped(" ".join(text.split()), limit)


def raised(error: BaseException) -> str:
    """``"TypeError: text"`` for an error a call raised, on one line."""
    text = _clipped(" ".join(str(error).split()), 200)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _clipped(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass(frozen=True)
class Difference:
    """Where a vector env's output differs from what it should be: at call
    ``call`` (0 is the first ``reset``) of ``kind``, for ``sub_env`` (None: the
    whole batch), in ``field``; ``note`` says why, ``run`` names the run."""

    call: int
    kind: str
    sub_env: int | None
    field: str
    expected: str
    got: str
    note: str = ""
    run: str = ""

    @classmethod
    def at(cls, call: Any, *fields: Any) -> Difference:
        """At ``call``: ``sub_env, field, expected, got[, note[, run]]``."""
        return cls(call.index, call.kind, *fields)

    def __str__(self) -> str:
        where = f"call {self.call} ({self.kind})"
        if self.run:
            where = f"{self.run}, {where}"
        if self.sub_env is not None:
            where += f", sub-env {self.sub_env}"
        text = f"{where}, {self.field}: expected {self.expected}, got {self.got}"
        return f"{text} ({self.note})" if self.note else text
