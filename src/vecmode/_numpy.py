"""NumPy functions without NumPy's Python-level dispatch.

``np.count_nonzero(a)`` is two Python calls (the function and its
``__array_function__`` dispatcher) around one C call; on a mask of a few dozen
flags, tested several times per step by every wrapper, the two cost more than the
counting. Without an ``axis``, ``np.count_nonzero`` is exactly that C function,
which this module gives under the same name (NumPy's own, where it has moved).

>>> import numpy as np
>>> from vecmode._numpy import count_nonzero
>>> int(count_nonzero(np.array([True, False, True])))
2
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["count_nonzero"]


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
