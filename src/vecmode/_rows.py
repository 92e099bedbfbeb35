"""Per-sub-env rows with no mode knowledge: masks of sub-envs (the record of
ended episodes) and copies of observation batches with rows written in, whatever
the batch's structure and array library."""

from __future__ import annotations

import copy
import functools
import importlib
from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np
from gymnasium import Space
from gymnasium.spaces import Box, Dict, Discrete, MultiBinary, MultiDiscrete, Tuple
from gymnasium.vector.utils import concatenate, create_empty_array, iterate

from vecmode import _arrays
from vecmode._numpy import count_nonzero, host_array

#: Sub-envs as indices or a bool mask.
Rows = Sequence[int] | np.ndarray | None


@functools.cache
def constant_masks(num_envs: int) -> tuple[np.ndarray, np.ndarray]:
    """Read-only all-False and all-True masks of ``num_envs``, one pair per size."""
    false = np.zeros(num_envs, dtype=np.bool_)
    true = np.ones(num_envs, dtype=np.bool_)
    false.flags.writeable = true.flags.writeable = False
    return false, true


def masks_like(sample: Any, num_envs: int, kind: type, device: Any) -> Any:
    """``(array type, device, all-False, all-True)`` masks of ``num_envs`` in
    the library and on the device of ``sample`` (a batch; NumPy's shared
    read-only pair for NumPy), or None if those are ``kind`` and ``device``
    already, or ``sample`` is no array (a list: read as NumPy)."""
    leaf = _arrays.leaf(sample)
    where = getattr(leaf, "device", None)
    if type(leaf) is kind and where == device:
        return None
    xp = _arrays.namespace(leaf)
    if xp is None and kind is np.ndarray:
        return None
    if xp is None:
        return (np.ndarray, None, *constant_masks(num_envs))
    key = (type(leaf), str(where), num_envs)
    if key not in _CONSTANT_MASKS:  # shared by the trackers: known to :func:`some`
        found = importlib.import_module("array_api_compat").device(leaf)
        false = xp.zeros(num_envs, dtype=xp.bool, device=found)
        true = xp.ones(num_envs, dtype=xp.bool, device=found)
        _CONSTANT_MASKS[key] = (false, true)
        _HOLDS_TRUE.update({id(false): (False, false), id(true): (True, true)})
    return type(leaf), where, *_CONSTANT_MASKS[key]


#: Another library's all-False and all-True masks by (type, device, size), and
#: whether each holds a True by id (kept alive here: the ids stay theirs).
_CONSTANT_MASKS: dict[tuple[Any, str, int], tuple[Any, Any]] = {}
_HOLDS_TRUE: dict[int, tuple[bool, Any]] = {}


class EndedTracker:
    """Which sub-envs' episodes ended and were not reset since: the one record
    the cores, the NEXT_STEP policy and ``vecmode.modes.BoundaryTracker`` share.
    Its mask is NumPy's, or another array library's (bool masks in, then: see
    :meth:`adopt`)."""

    __slots__ = ("_none", "count", "mask")

    def __init__(self, num_envs: int, none: Any = None) -> None:
        self._none = constant_masks(num_envs)[0] if none is None else none
        #: Their bool mask; replaced, never written into (don't write into it).
        self.mask = self._none
        self.count = 0

    def adopt(self, none: Any) -> None:
        """Keep the record in ``none``'s library and device (an all-False mask,
        kept and never written into), the sub-envs awaiting a reset carried over
        (through the host: once, at a switch)."""
        pending = (
            np.array(host_array(self.mask), dtype=np.bool_) if self.count else None
        )
        self._none = self.mask = none
        if pending is not None:
            self.set(in_library(pending, none), self.count)

    def update(self, cleared: Rows = None, ended: Rows = None) -> None:
        """The sub-envs in ``cleared`` were reset, those in ``ended`` ended
        (indices or bool masks; bool masks, taken into its library, for another
        library's record: NumPy's would promote torch's bools)."""
        if not self.count and ended is None:
            return  # nothing to clear
        if type(self.mask) is not np.ndarray:  # another library's: bool masks
            mask: Any = self.mask
            mask = mask if cleared is None else mask & ~in_library(cleared, mask)
            self.set(mask if ended is None else mask | in_library(ended, mask))
            return
        mask = None
        for rows, value in ((cleared, False), (ended, True)):
            if rows is not None and len(rows):
                mask = self.mask.copy() if mask is None else mask
                mask[rows] = value
        if mask is not None:
            self.set(mask)

    def clear(self) -> None:
        """Every sub-env was reset."""
        self.mask, self.count = self._none, 0

    def set(self, mask: np.ndarray, count: int | None = None) -> None:
        """Exactly the sub-envs in ``mask``, which is kept (don't write into it);
        ``count``: its Trues, if known (then a NumPy mask must be bool)."""
        if type(mask) is np.ndarray or _arrays.namespace(mask) is None:
            if count is None or type(mask) is not np.ndarray:
                mask = np.asarray(mask, dtype=np.bool_)
                count = int(count_nonzero(mask))
        else:  # another library's mask: one scalar to the host
            count = _arrays.count_true(mask) if count is None else count
            if type(self._none) is not type(mask):  # kept in its library now
                self._none = mask & ~mask
        self.mask, self.count = (mask, count) if count else (self._none, 0)

    def indices(self) -> list[int]:
        """The indices of those sub-envs, in order (a host copy of another
        library's mask: for error messages)."""
        if not self.count:
            return []
        mask = self.mask
        if type(mask) is not np.ndarray:
            mask = np.asarray(host_array(mask), dtype=np.bool_)
        return mask.nonzero()[0].tolist()  # type: ignore[no-any-return]


def in_library(mask: Any, like: Any) -> Any:
    """A bool ``mask`` in the array library and on the device of the mask
    ``like`` (NumPy's ``like``: as NumPy, as ``np.asarray`` gives it)."""
    if type(like) is np.ndarray:
        return np.asarray(host_array(mask), dtype=np.bool_)
    if type(mask) is type(like):
        return mask
    xp: Any = _arrays.namespace(like)
    device = importlib.import_module("array_api_compat").device(like)
    host = np.array(host_array(mask), dtype=np.bool_)  # (a writable copy: torch's)
    return xp.asarray(host, device=device)


def rows_of(batch: Any) -> int | None:
    """The rows of a batch (of its first leaf), whatever its library; None for
    no array, or an object array of more than one dimension."""
    leaf = _arrays.leaf(batch)
    shape = getattr(leaf, "shape", None)
    objects = isinstance(leaf, np.ndarray) and leaf.dtype.kind == "O"
    if not shape or (objects and len(shape) != 1):
        return None
    return int(shape[0])


def some(mask: Any) -> bool:
    """Whether a mask, NumPy's (one C call) or another library's (one scalar to
    the host), holds a True."""
    if type(mask) is np.ndarray:
        return bool(count_nonzero(mask))
    known = _HOLDS_TRUE.get(id(mask))
    return known[0] if known is not None else _arrays.any_true(mask)


def missing(rows: Any, mask: Any) -> bool:
    """Whether a sub-env of ``rows`` is not in ``mask`` (masks of two libraries,
    a tensor's over NumPy's under ``NumpyToTorch``: compared on the host)."""
    if type(rows) is np.ndarray and type(mask) is np.ndarray:  # the NumPy path
        return bool(count_nonzero(mask[rows]) != count_nonzero(rows))
    if type(rows) is not type(mask):
        rows, mask = (np.asarray(host_array(m), dtype=np.bool_) for m in (rows, mask))
    return some(rows & ~mask)


def flags_say(ended: np.ndarray, terminations: Any, truncations: Any) -> bool:
    """Whether a step's flags (a layer may write into them) still say ``ended``."""
    if type(ended) is not np.ndarray and _arrays.namespace(ended) is not None:
        return not _arrays.any_true(_arrays.ended(terminations, truncations) != ended)
    if type(terminations) is not np.ndarray or type(truncations) is not np.ndarray:
        terminations, truncations = host_array(terminations), host_array(truncations)
    if not count_nonzero(ended):
        return not (count_nonzero(terminations) or count_nonzero(truncations))
    return not count_nonzero(np.logical_or(terminations, truncations) != ended)


def first_true(value: Any) -> int | None:
    """The first True of a 1-d mask-like value, or None."""
    try:
        mask = np.asarray(value, dtype=np.bool_)
    except (TypeError, ValueError):
        return None
    return int(np.argmax(mask)) if mask.ndim == 1 and mask.any() else None


_ARRAY_SPACES = (Box, Discrete, MultiDiscrete, MultiBinary)


def copied(batch: Any) -> Any:
    """A copy of a batch of observations that shares no array with it."""
    if type(batch) is np.ndarray:
        return batch.copy()
    if isinstance(batch, dict):
        return type(batch)((key, copied(value)) for key, value in batch.items())
    if type(batch) is tuple:
        return tuple(copied(value) for value in batch)
    if type(batch).__module__.startswith(("jax", "jaxlib")):
        return batch  # immutable
    clone = getattr(batch, "clone", None)  # a torch tensor
    return clone() if callable(clone) else copy.deepcopy(batch)


def place_rows(whole: Any, rows: np.ndarray, part: Any) -> None:
    """Write the rows of batch ``part`` into batch ``whole`` at ``rows``."""
    if isinstance(whole, dict):
        for key in whole:
            place_rows(whole[key], rows, part[key])
    elif isinstance(whole, tuple):
        for sub_whole, sub_part in zip(whole, part, strict=True):
            place_rows(sub_whole, rows, sub_part)
    else:
        whole[rows] = part


def row_of(batch: Any, i: int) -> Any:
    """A copy of row ``i`` of a batch (dicts and tuples of arrays)."""
    if isinstance(batch, dict):
        return {key: row_of(value, i) for key, value in batch.items()}
    if type(batch) is tuple:
        return tuple(row_of(value, i) for value in batch)
    return copied(batch[i])


def with_rows(
    space: Space, single: Space, batch: Any, indices: list[int], rows: list[Any]
) -> Any:
    """A copy of ``batch`` (of ``space``; ``single``: a sub-env's) whose row
    ``indices[k]`` is ``rows[k]``; each leaf keeps its array library and device."""
    if isinstance(space, _ARRAY_SPACES) and hasattr(batch, "shape"):
        return _array_with_rows(batch, indices, rows)
    if (
        isinstance(space, Dict)
        and isinstance(single, Dict)
        and isinstance(batch, Mapping)
    ):
        return {
            key: with_rows(
                space[key], single[key], batch[key], indices, [r[key] for r in rows]
            )
            for key in space.spaces
        }
    if (
        isinstance(space, Tuple)
        and isinstance(single, Tuple)
        and type(batch) is tuple
        and len(batch) == len(space.spaces)
    ):
        return tuple(
            with_rows(part, single[j], batch[j], indices, [r[j] for r in rows])
            for j, part in enumerate(space.spaces)
        )
    # the other spaces' batches (Text, Graph, Sequence, OneOf: tuples of items)
    items = list(iterate(space, batch))
    for i, item in zip(indices, rows, strict=True):
        items[i] = item
    empty = cast(Any, create_empty_array(single, len(items)))
    return concatenate(single, items, empty)


def _array_with_rows(batch: Any, indices: list[int], rows: list[Any]) -> Any:
    if type(batch) is np.ndarray:  # the hot path: nothing else to ask
        merged = batch.copy()
    elif type(batch).__module__.partition(".")[0] in ("jax", "jaxlib"):
        jnp = importlib.import_module("jax.numpy")  # immutable: a new array
        values = jnp.stack([jnp.asarray(r, dtype=batch.dtype) for r in rows])
        return batch.at[np.asarray(indices)].set(values)
    elif callable(getattr(batch, "clone", None)):  # a torch tensor
        merged = batch.clone()
    else:  # another library's array
        merged = batch.copy()
    for i, item in zip(indices, rows, strict=True):
        merged[i] = item
    return merged
