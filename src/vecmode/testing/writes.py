"""The write checks both kits share: :class:`HeldResults` finds a result that a
later call changed, :class:`WritesBelow` where a wrapper wrote into what the env
below returned to it."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np
import wrapt
from gymnasium.vector import VectorEnv

from vecmode import _arrays
from vecmode.modes import FINAL_INFO
from vecmode.replay.compare import arrays_in, as_numpy, where_different

#: The parts of a result, by the size of its tuple (``reset``'s, ``step``'s).
RESULT_PARTS: dict[int, tuple[str, ...]] = {
    2: ("observations", "infos"),
    5: ("observations", "rewards", "terminations", "truncations", "infos"),
}


Label = TypeVar("Label")


class HeldResults(Generic[Label]):
    """A run's results, each beside a deep copy made then (the observations
    excepted where ``reuses_observations``: the env says ``copy=False``)."""

    def __init__(self, reuses_observations: bool = False) -> None:
        self.reuses_observations = reuses_observations
        self._results: list[tuple[Label, Any, Callable[[], Any]]] = []
        #: per result found changed: the part, and the call that changed it
        self._changed: dict[int, tuple[str, Label | None]] = {}

    def keep(
        self, label: Label, result: Any, kept: Callable[[], Any] | None = None
    ) -> tuple[Label, str] | None:
        """Keep ``result``; the label and part of the one before this call changed."""
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
        """``(label, part, changed by)`` of the first result changed, or None."""
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
        copied = kept()
        if not (isinstance(result, tuple) and isinstance(copied, tuple)):
            return None
        if len(result) != len(copied) or len(result) not in RESULT_PARTS:
            return None
        for name, now, then in zip(
            RESULT_PARTS[len(result)], result, copied, strict=True
        ):
            if name == "observations" and self.reuses_observations:
                continue
            path = where_different(as_numpy(then), as_numpy(now))
            if path is not None:
                self._changed[index] = (name + path, by)
                return name + path
        return None


@dataclass(frozen=True)
class Written:
    """An array returned in the call ``where``, written into by the call ``by``."""

    path: str
    where: str
    returned: np.ndarray
    found: np.ndarray
    by: str | None


class WritesBelow:
    """Every array the env ``envs`` below a wrapper returns to it, beside a copy
    (not the observations of a ``copy=False`` env: it writes into them itself);
    ``wrapt`` wraps its methods on the instance, so the wrapper sees no layer."""

    def __init__(self, envs: VectorEnv) -> None:
        self._arrays: list[list[Any]] = []
        #: The keys of the infos it returned (and of their final_info).
        self.info_keys: set[Any] = set()
        self._checked = 0
        self._own = {"observations"} if getattr(envs, "copy", None) is False else ()
        for method in ("reset", "step"):
            setattr(
                envs, method, wrapt.FunctionWrapper(getattr(envs, method), self._record)
            )

    def _record(self, wrapped: Callable[..., Any], _: Any, args: Any, kw: Any) -> Any:
        result = wrapped(*args, **kw)
        if isinstance(result, tuple) and len(result) in RESULT_PARTS:
            parts = RESULT_PARTS[len(result)]
            for part, value in zip(parts, result, strict=True):
                if part == "infos" and isinstance(value, dict):
                    self.info_keys.update(value, value.get(FINAL_INFO) or ())
                if part in self._own:
                    continue
                for path, array in arrays_in(value, part, every_library=True):
                    xp = _arrays.namespace(array)  # a copy in its library, no host's
                    kept = array.copy() if xp is None else xp.asarray(array, copy=True)
                    self._arrays.append([path, "", array, kept])
        return result

    def check_call(self, where: str) -> Written | None:
        """Where the wrapper's call ``where`` wrote into what it was returned."""
        new = self._arrays[self._checked :]
        self._checked = len(self._arrays)
        for entry in new:
            entry[1] = where
        return self._first_written(new, by=where)

    def check_all(self) -> Written | None:
        """Where a later call wrote into what the wrapper was returned before."""
        return self._first_written(self._arrays, by=None)

    @staticmethod
    def _first_written(arrays: list[list[Any]], by: str | None) -> Written | None:
        for path, where, array, copied in arrays:
            if array.dtype == object:  # its entries are held on their own
                changed = array.shape != copied.shape or any(
                    a is not b for a, b in zip(array.flat, copied.flat, strict=True)
                )
            else:  # (another library's: read as NumPy after the call)
                copied, array = as_numpy(copied), as_numpy(array)
                changed = where_different(copied, array) is not None
            if changed:
                return Written(path, where, copied, array, by)
        return None
