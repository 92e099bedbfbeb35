"""Copies of observation batches, with rows written in, whatever the batch's
structure (by its space) and array library."""

from __future__ import annotations

import copy
import importlib
from collections.abc import Mapping
from typing import Any, cast

import numpy as np
from gymnasium import Space
from gymnasium.spaces import Box, Dict, Discrete, MultiBinary, MultiDiscrete, Tuple
from gymnasium.vector.utils import concatenate, create_empty_array, iterate

#: The spaces whose batches are arrays with a row per sub-env.
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
    """A copy of ``batch`` (of the batched ``space``, whose sub-env space is
    ``single``) whose row ``indices[k]`` is ``rows[k]``, leaf by leaf; each leaf
    keeps its array library, dtype and device."""
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
