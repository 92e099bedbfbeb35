"""NumPy's ``count_nonzero`` without its Python-level dispatch (which costs more
than counting a mask of a few dozen flags), and other libraries' arrays as NumPy.

>>> import numpy as np
>>> from vecmode._numpy import count_nonzero
>>> int(count_nonzero(np.array([True, False, True])))
2
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


def _undispatched() -> Callable[[Any], int]:
    for module in ("numpy._core.multiarray", "numpy.core.multiarray"):  # 2, 1
        try:
            found = __import__(module, fromlist=["count_nonzero"]).count_nonzero
        except (ImportError, AttributeError):
            continue
        if callable(found):
            return found  # type: ignore[no-any-return]
    return np.count_nonzero  # pragma: no cover


count_nonzero: Callable[[Any], int] = _undispatched()


def true_indices(mask: Any) -> list[int]:
    """``np.flatnonzero(mask).tolist()``: one C call for a 1-D NumPy mask."""
    if type(mask) is np.ndarray and mask.ndim == 1:
        return mask.nonzero()[0].tolist()  # type: ignore[no-any-return]
    return np.flatnonzero(mask).tolist()  # type: ignore[no-any-return]


def host_array(value: Any) -> Any:
    """``value`` as is (a NumPy array, a list), or any library's array (a torch
    tensor, wherever it lives) as NumPy."""
    if isinstance(value, (np.ndarray, list, tuple)):
        return value
    cpu = getattr(value, "cpu", None)  # a torch tensor, wherever it lives
    return np.asarray(cpu() if callable(cpu) else value)
