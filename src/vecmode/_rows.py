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


class EndedTracker:
    """Which sub-envs' episodes ended and were not reset since: the one record
    the cores, the NEXT_STEP policy and ``vecmode.modes.BoundaryTracker`` share."""

    __slots__ = ("_none", "count", "mask")

    def __init__(self, num_envs: int) -> None:
        self._none = constant_masks(num_envs)[0]
        #: Their bool mask; replaced, never written into (don't write into it).
        self.mask = self._none
        self.count = 0

    def update(self, cleared: Rows = None, ended: Rows = None) -> None:
        """The sub-envs in ``cleared`` were reset, those in ``ended`` ended."""
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

    def set(self, mask: np.ndarray) -> None:
        """Exactly the sub-envs in ``mask``, which is kept (don't write into it)."""
        mask = np.asarray(mask, dtype=np.bool_)
        count = int(count_nonzero(mask))
        self.mask, self.count = (mask, count) if count else (self._none, 0)

    def indices(self) -> list[int]:
        """The indices of those sub-envs, in order."""
        return self.mask.nonzero()[0].tolist() if self.count else []


def flags_say(ended: np.ndarray, terminations: Any, truncations: Any) -> bool:
    """Whether a step's flags (a layer may write into them) still say ``ended``."""
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
    return copy.deepcopy(batch)


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
