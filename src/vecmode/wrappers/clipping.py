"""``np.clip``, bit for bit, calling its ufunc directly for a float array and
scalar bounds (``np.clip``'s two Python layers cost more than clipping a small
batch)."""

from __future__ import annotations

import importlib
import math
from typing import Any

import numpy as np


def _find_clip_ufunc() -> Any:
    """The ufunc ``np.clip`` calls (NumPy 2 or 1), or None."""
    for module in ("numpy._core.umath", "numpy.core.umath"):
        try:
            found = getattr(importlib.import_module(module), "clip", None)
        except ImportError:
            continue
        if isinstance(found, np.ufunc):
            return found
    return None


_clip_ufunc = _find_clip_ufunc()


def fast_bounds(low: Any, high: Any) -> bool:
    """Whether ``clip`` may call the ufunc: scalar bounds, neither zero nor NaN,
    ``low <= high``."""
    for bound in (low, high):
        if isinstance(bound, bool) or not isinstance(bound, (int, float, np.number)):
            return False
        if bound == 0 or math.isnan(bound):
            return False
    return bool(low <= high)


def clip(x: Any, low: Any, high: Any, out: Any = None, fast: bool = False) -> Any:
    """``np.clip(x, low, high, out=out)``; ``fast``: :func:`fast_bounds` holds."""
    if (
        fast
        and _clip_ufunc is not None
        and type(x) is np.ndarray
        and x.dtype.kind == "f"
    ):
        return _clip_ufunc(x, low, high, out=out)
    # np.clip drops an integer array's out-of-range Python-int bound; the ufunc
    # would refuse it
    return np.clip(x, low, high, out=out)


def clip_symmetric(x: np.ndarray, bound: float, out: np.ndarray | None = None) -> Any:
    """``np.clip(x, -bound, bound, out=out)``, bit for bit (``bound >= 0``)."""
    return clip(x, -bound, bound, out, fast=bound > 0)
