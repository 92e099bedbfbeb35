"""The write checks both kits share: what a call returned must not change later.

:class:`HeldResults` keeps each result beside a deep copy made when it was
returned, and finds one that a later call changed (the env or wrapper writes
into an array it returned). :class:`WritesBelow` keeps what the env below a
wrapper returned to it, and finds where the wrapper wrote into it.

>>> import numpy as np
>>> flags = np.array([True, False])
>>> held = HeldResults()
>>> held.keep("call 0", (np.zeros(2), {}))
>>> held.keep("call 1", (np.zeros(2), np.ones(2), flags, flags, {})) is None
True
>>> flags[0] = False  # the env clears its own array, which it returned
>>> held.keep("call 2", (np.zeros(2), {}))
('call 1', 'terminations')
>>> held.first_changed()
('call 1', 'terminations', 'call 2')
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Container
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np
import wrapt
from gymnasium.vector import VectorEnv

from vecmode.replay.compare import arrays_in, as_numpy, where_different

__all__ = ["RESULT_PARTS", "HeldResults", "WritesBelow", "Written", "changed_part"]

#: The parts of a result, by the size of its tuple (``reset``'s, ``step``'s).
RESULT_PARTS: dict[int, tuple[str, ...]] = {
    2: ("observations", "infos"),
    5: ("observations", "rewards", "terminations", "truncations", "infos"),
}


def changed_part(returned: Any, kept: Any, skip: Container[str] = ()) -> str | None:
    """The part of a ``reset`` or ``step`` result that is no longer what it was.

    Args:
        returned: the result, as it was returned.
        kept: a deep copy of it made then.
        skip: parts not compared (e.g. ``("observations",)``).

    Returns:
        The part and where in it (e.g. ``"infos['_episode']"``), or None.

    >>> result = (np.zeros(2), {"n": [1]})
    >>> kept = copy.deepcopy(result)
    >>> result[1]["n"].append(2)
    >>> changed_part(result, kept)
    "infos['n']"
    """
    if not (isinstance(returned, tuple) and isinstance(kept, tuple)):
        return None
    if len(returned) != len(kept) or len(returned) not in RESULT_PARTS:
        return None
    parts = RESULT_PARTS[len(returned)]
    for name, now, then in zip(parts, returned, kept, strict=True):
        if name in skip:
            continue
        path = where_different(as_numpy(then), as_numpy(now))
        if path is not None:
            return name + path
    return None


#: What names a call in :class:`HeldResults`.
Label = TypeVar("Label")


class HeldResults(Generic[Label]):
    """A run's results as returned, each beside a deep copy made then.

    Each result is compared with its copy when the next call has returned (that
    call changed it) and at the end of the run (some later call did).

    Args:
        reuses_observations: the env says it reuses its observation buffer
            (``copy=False``): the observations may change, nothing else.
    """

    def __init__(self, reuses_observations: bool = False) -> None:
        self.reuses_observations = reuses_observations
        #: each call's label, its result as returned, and how to read the copy
        self._results: list[tuple[Label, Any, Callable[[], Any]]] = []
        #: per result found changed (by its place): the part, and the call that
        #: changed it (None where only the end of the run found it)
        self._changed: dict[int, tuple[str, Label | None]] = {}

    def keep(
        self, label: Label, result: Any, kept: Callable[[], Any] | None = None
    ) -> tuple[Label, str] | None:
        """Keep ``result``, returned by the call ``label``.

        Args:
            label: names the call.
            result: what it returned.
            kept: reads a deep copy of ``result`` made when it was returned (read
                once the next call has returned); by default one is made here.

        Returns:
            The result before this one, and its part this call changed, or None.
        """
        found = None
        if self._results:
            part = self._check(len(self._results) - 1, by=label)
            if part is not None:
                found = (self._results[-1][0], part)
        if kept is None:
            copied = copy.deepcopy(result)

            def kept() -> Any:
                return copied

        self._results.append((label, result, kept))
        return found

    def first_changed(self) -> tuple[Label, str, Label | None] | None:
        """The first result a later call changed: its label, the part, and the
        call that changed it (None where only now is it found); or None."""
        for index in range(len(self._results)):
            self._check(index, by=None)
        for index, (label, _, _) in enumerate(self._results):
            if index in self._changed:
                part, by = self._changed[index]
                return label, part, by
        return None

    def _check(self, index: int, by: Label | None) -> str | None:
        """The part of the result at ``index`` found changed now, or None."""
        if index in self._changed:
            return None
        _, result, kept = self._results[index]
        skip = ("observations",) if self.reuses_observations else ()
        part = changed_part(result, kept(), skip)
        if part is not None:
            self._changed[index] = (part, by)
        return part


@dataclass(frozen=True)
class Written:
    """An array the env below returned, which the wrapper wrote into.

    Attributes:
        path: where it is in the result (e.g. ``"rewards"``).
        where: the wrapper's call in which the env returned it.
        returned: a copy of it as returned.
        found: it now.
        by: the wrapper's call that wrote into it (None: a later one).
    """

    path: str
    where: str
    returned: np.ndarray
    found: np.ndarray
    by: str | None


class WritesBelow:
    """What the env below a wrapper returned to it, beside copies made then.

    Every array of its ``reset`` and ``step`` results (an object array's entries
    too) is kept; a new key in an info dict is no write. The env's ``reset`` and
    ``step`` are wrapped (with ``wrapt``) on the instance itself, so the wrapper
    finds no extra layer under it.

    Args:
        envs: the env below the wrapper.
    """

    def __init__(self, envs: VectorEnv) -> None:
        #: each array returned: its path, the wrapper's call, it, and its copy
        self._arrays: list[list[Any]] = []
        self._checked = 0
        for method in ("reset", "step"):
            setattr(
                envs, method, wrapt.FunctionWrapper(getattr(envs, method), self._record)
            )

    def _record(
        self,
        wrapped: Callable[..., Any],
        instance: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:
        result = wrapped(*args, **kwargs)
        if isinstance(result, tuple) and len(result) in RESULT_PARTS:
            parts = RESULT_PARTS[len(result)]
            for part, value in zip(parts, result, strict=True):
                for path, array in arrays_in(value, part):
                    self._arrays.append([path, "", array, array.copy()])
        return result

    def check_call(self, where: str) -> Written | None:
        """Where the wrapper's call ``where`` wrote into what the env below
        returned to it within that call."""
        new = self._arrays[self._checked :]
        self._checked = len(self._arrays)
        for entry in new:
            entry[1] = where
        return self._first_written(new, by=where)

    def check_all(self) -> Written | None:
        """Where a later call of the wrapper wrote into what the env below
        returned to it before."""
        return self._first_written(self._arrays, by=None)

    @staticmethod
    def _first_written(arrays: list[list[Any]], by: str | None) -> Written | None:
        for path, where, array, copied in arrays:
            if array.dtype == object:  # its entries are held on their own
                changed = array.shape != copied.shape or any(
                    a is not b for a, b in zip(array.flat, copied.flat, strict=True)
                )
            else:
                changed = where_different(copied, array) is not None
            if changed:
                return Written(path, where, copied, array, by)
        return None
