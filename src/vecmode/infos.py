"""Gymnasium's batched info dicts (``{key: array, "_key": mask}``) split by a
sub-env mask and merged, as Gymnasium's info batching would have built them."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from vecmode._arrays import rows_where
from vecmode.errors import InfoBatchError


def _blank(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    if dtype.kind == "O":
        return np.full(shape, None, dtype=object)
    return np.zeros(shape, dtype=dtype)


def _masked_keys(infos: dict[str, Any]) -> list[str]:
    return [k for k in infos if not str(k).startswith("_") or f"_{k}" in infos]


def select_infos(infos: dict[str, Any], selected: np.ndarray) -> dict[str, Any]:
    """The part of ``infos`` that belongs to the ``selected`` sub-envs."""
    out: dict[str, Any] = {}
    for key in _masked_keys(infos):
        mask_key = f"_{key}"
        if mask_key not in infos:
            out[key] = infos[key]
            continue
        mask = np.logical_and(infos[mask_key], selected)
        if not mask.any():
            continue
        value = infos[key]
        if isinstance(value, dict):
            out[key] = select_infos(value, mask)
        else:
            kept = _blank(value.shape, value.dtype)
            kept[mask] = value[mask]
            out[key] = kept
        out[mask_key] = mask
    return out


def restricted_infos(infos: dict[str, Any], rows: Any) -> dict[str, Any]:
    """:func:`select_infos` for batches of any library, with no copy or host
    read: each ``_key`` mask ANDed with the bool mask ``rows``, nested dicts
    too; the keys and values as they are."""
    out = dict(infos)
    for key, value in infos.items():
        if (mask := infos.get(f"_{key}")) is not None:
            out[f"_{key}"] = mask = mask & rows
        if isinstance(value, dict):
            out[key] = restricted_infos(value, rows if mask is None else mask)
    return out


def merged_by_row(value: Any, other: Any, rows: Any, merge: Callable) -> Any:
    """Two info values with no ``_key`` mask (batched simulators' infos) merged
    row by row, ``value``'s in ``rows``: arrays of one shape with a row per
    sub-env, of ``rows``' type and device; dicts by ``merge``. None otherwise."""
    if isinstance(value, dict) and isinstance(other, dict):
        return merge(other, value, rows)
    shape = tuple(getattr(value, "shape", ()))
    devices = [getattr(x, "device", None) for x in (value, other, rows)]
    if (
        shape[:1] != (len(rows),)
        or tuple(getattr(other, "shape", ())) != shape
        or not type(value) is type(other) is type(rows)
        or devices.count(devices[0]) != 3
        or not _mergeable(value, other)
    ):
        return None
    return rows_where(rows, value, other)


def merge_infos(
    first: dict[str, Any], second: dict[str, Any], rows: np.ndarray | None = None
) -> dict[str, Any]:
    """Merge two batched info dicts about disjoint sets of sub-envs; ``rows``: the
    sub-envs of ``second``, whose rows of an unmasked per-row value are taken."""
    out = dict(first)
    for key in _masked_keys(second):
        mask_key = f"_{key}"
        value = second[key]
        merged = None if mask_key in first else _unmasked(first, second, key, rows)
        if merged is not None:
            out[key] = merged
            continue
        if key not in first or mask_key not in first or mask_key not in second:
            out[key] = value
            if mask_key in second:
                out[mask_key] = second[mask_key]
            continue
        mask_a, mask_b = first[mask_key], second[mask_key]
        if isinstance(value, dict) and isinstance(first[key], dict):
            out[key] = merge_infos(first[key], value)
        else:
            # the lowest sub-env's array, as Gymnasium's, holding both's numbers
            a_first = int(np.argmax(mask_a)) < int(np.argmax(mask_b))
            base, other, other_mask = (
                (first[key], value, mask_b) if a_first else (value, first[key], mask_a)
            )
            merged = base.astype(_both(base.dtype, other.dtype))  # (a copy)
            merged[other_mask] = other[other_mask]
            out[key] = merged
        out[mask_key] = np.logical_or(mask_a, mask_b)
    return out


def _unmasked(first: dict, second: dict, key: str, rows: Any) -> Any:
    """``second[key]`` merged into ``first[key]``, which has no mask: row by
    row (a batched simulator's infos, EnvPool's step infos); None if it can't."""
    value, mask, base = second[key], second.get(f"_{key}"), first.get(key)
    if mask is not None:
        return _into_unmasked(base, value, mask)
    return None if rows is None else merged_by_row(value, base, rows, merge_infos)


def _into_unmasked(value: Any, other: Any, mask: Any) -> Any:
    """``value``, a row per sub-env and no mask, with ``other``'s rows in
    ``mask``; None where they are no such pair (or of dtypes other than numbers
    that differ)."""
    if isinstance(value, dict) and isinstance(other, dict):
        return merge_infos(value, other, mask)
    if not (
        isinstance(value, np.ndarray)
        and isinstance(other, np.ndarray)
        and value.shape[:1] == other.shape[:1] == np.shape(mask)
        and _mergeable(value, other)
    ):
        return None
    merged = value.astype(_both(value.dtype, other.dtype))  # (a copy)
    merged[mask] = other[mask]
    return merged


def expand_infos(
    infos: dict[str, Any], rows: np.ndarray, num_envs: int
) -> dict[str, Any]:
    """Infos about the sub-envs in ``rows`` only (EnvPool) as about all of them."""
    out: dict[str, Any] = {}
    indices = np.flatnonzero(rows)
    for key in _masked_keys(infos):
        value = infos[key]
        own = infos.get(f"_{key}")
        if isinstance(value, dict):
            out[key] = expand_infos(value, rows, num_envs)
        elif (
            isinstance(value, np.ndarray) and value.ndim and len(value) == len(indices)
        ):
            full = _blank((num_envs, *value.shape[1:]), value.dtype)
            full[indices] = value
            out[key] = full
        else:
            out[key] = value
            continue
        mask = np.zeros(num_envs, dtype=np.bool_)
        mask[indices] = True if own is None else np.asarray(own, dtype=np.bool_)
        out[f"_{key}"] = mask
    return out


def add_infos(
    add_info: Callable[[dict[str, Any], dict[str, Any], int], dict[str, Any]],
    infos: dict[str, Any],
    pairs: Iterable[tuple[int, dict[str, Any]]],
) -> dict[str, Any]:
    """``infos`` with each ``(i, info)`` of ``pairs`` added by ``add_info``; an
    :class:`~vecmode.errors.InfoBatchError` where a value cannot be batched."""
    i, info = -1, dict[str, Any]()
    fitted: dict[Any, tuple[Any, ...]] = {}  # keys and types fitted: their deep keys
    try:
        for i, info in pairs:
            kinds = (*info, *map(type, info.values()))  # its keys, their types
            deep = fitted.get(kinds)
            if deep is None:
                _fit(infos, info)
                fitted[kinds] = _deep(kinds)
            elif deep:  # keys and types fitted before: the plain values fit
                _fit(infos, {key: info[key] for key in deep})
            infos = add_info(infos, info, i)
    except (ValueError, TypeError, AttributeError, OverflowError) as error:
        where = "info" + "".join(f"[{k!r}]" for k in _unbatchable_key(infos, info))
        raise InfoBatchError(
            f"sub-env {i}'s {where} cannot be batched with the other sub-envs' "
            f"({type(error).__name__}: {error}): give arrays of one shape for every "
            f"sub-env, or a list or tuple (batched as objects). The call's results "
            f"are lost: reset the sub-envs it ran."
        ) from error
    return infos


#: The array kinds a Python scalar fits in whole.
_FITS = {bool: "biufc", int: "iufc", float: "fc", complex: "c"}
#: Whether a type says alone that its values fit where another of it did.
_PLAIN: dict[type, bool] = {str: True, bytes: True, type(None): True}


#: :func:`_deep` of the last infos' keys and types (a few hundred at most).
_DEEP: dict[tuple[Any, ...], tuple[Any, ...]] = {}


def _deep(kinds: tuple[Any, ...]) -> tuple[Any, ...]:
    """The keys of ``kinds`` (keys, then their types) whose type does not say
    alone that they fit (an array's shape, a list's length, a dict's keys): not
    numbers, NumPy's included, nor strings (kept: :data:`_DEEP`)."""
    if (found := _DEEP.get(kinds)) is not None:
        return found
    n = len(kinds) // 2
    for kind in kinds[n:]:
        if kind not in _PLAIN:
            scalar = issubclass(kind, np.generic) and np.dtype(kind).kind in "biufc"
            _PLAIN[kind] = kind in _FITS or scalar
    deep = tuple(
        k for k, kind in zip(kinds[:n], kinds[n:], strict=True) if not _PLAIN[kind]
    )
    if len(_DEEP) > 256:
        _DEEP.clear()
    _DEEP[kinds] = deep
    return deep


def _fit(infos: dict[str, Any], info: dict[str, Any]) -> None:
    """Make ``infos``' arrays hold ``info``'s values whole, where Gymnasium's
    batching would cut them (0.5 after ints, 7 after bools): the array takes
    the dtype of both. A value of another shape, or a dict where the others
    have none, raises (an InfoBatchError of :func:`add_infos`)."""
    for key, value in info.items():
        batch = infos.get(key)
        if batch is None or (type(batch) is np.ndarray and batch.dtype == object):
            continue  # (objects: anything, as Gymnasium's final observations)
        if isinstance(batch, dict) or isinstance(value, dict):
            if not (isinstance(batch, dict) and isinstance(value, dict)):
                raise TypeError("a dict in some sub-envs' info, not in this one's")
            _fit(batch, value)
        elif type(batch) is np.ndarray:
            _fit_value(infos, key, batch, value)


def _fit_value(infos: dict[str, Any], key: str, batch: np.ndarray, value: Any) -> None:
    """:func:`_fit` of a value that is no dict, where ``infos[key]`` is ``batch``."""
    kind = type(value)
    kinds = _FITS.get(kind)
    if kinds is not None:  # a Python number
        if batch.ndim != 1:
            raise ValueError(f"a number, not an array of shape {batch.shape[1:]}")
        if batch.dtype.kind not in kinds:
            infos[key] = batch.astype(np.result_type(batch.dtype, kind))
    elif kind is np.ndarray or issubclass(kind, np.generic):
        if value.shape != batch.shape[1:]:
            raise ValueError(f"shape {value.shape}, not {batch.shape[1:]}")
        if (dtype := _both(batch.dtype, value.dtype)) is not batch.dtype:
            infos[key] = batch.astype(dtype)
    elif np.shape(value) != batch.shape[1:]:
        raise ValueError(f"shape {np.shape(value)}, not {batch.shape[1:]}")


def _mergeable(value: Any, other: Any) -> bool:
    """Whether rows of ``other`` may go into ``value``: numbers (widened), or
    one dtype (a NumPy str into ints is the other's whole, as before)."""
    kinds = [getattr(getattr(x, "dtype", None), "kind", "f") for x in (value, other)]
    return set(kinds) <= set("biufc") or value.dtype == other.dtype


def _both(dtype: np.dtype, other: np.dtype) -> np.dtype:
    """``dtype``, or one that also holds the numbers of ``other`` whole."""
    numbers = dtype.kind in "biufc" and other.kind in "biufc"
    return (
        np.result_type(dtype, other)
        if numbers and not np.can_cast(other, dtype)
        else dtype
    )


def _unbatchable_key(infos: dict[str, Any], info: dict[str, Any]) -> list[str]:
    """The path to the first value of ``info`` that does not fit ``infos``."""
    for key, value in info.items():
        batch = infos.get(key)
        if isinstance(batch, dict) and isinstance(value, dict):
            inner = _unbatchable_key(batch, value)
            if inner:
                return [key, *inner]
        elif batch is not None and isinstance(batch, dict) != isinstance(value, dict):
            return [key]
        elif isinstance(batch, np.ndarray) and batch.dtype != object:
            try:  # as the batch's row takes it
                np.empty(batch.shape[1:], batch.dtype)[...] = value
            except (ValueError, TypeError, OverflowError):
                return [key]
            if np.shape(value) != batch.shape[1:]:
                return [key]
    return []
