"""The autoreset modes: parsing them and reading them off an env.

This is the one module that knows what the three
:class:`gymnasium.vector.AutoresetMode` values are called and where an env records
its mode (``metadata["autoreset_mode"]``). Everything else in vecmode asks here.

>>> from vecmode import as_mode
>>> as_mode("SameStep")
<AutoresetMode.SAME_STEP: 'SameStep'>
>>> as_mode("next_step")
<AutoresetMode.NEXT_STEP: 'NextStep'>
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode

from vecmode import errors
from vecmode._numpy import count_nonzero

__all__ = [
    "ASSUMED_MODE",
    "MODES",
    "AutoresetMode",
    "Boundary",
    "BoundaryTracker",
    "ModeLike",
    "as_mode",
    "boundary",
    "mode_of",
]

#: A mode as an :class:`~gymnasium.vector.AutoresetMode` or its string value.
ModeLike = AutoresetMode | str

#: The three modes, in the order the reference presents them.
MODES: tuple[AutoresetMode, ...] = (
    AutoresetMode.NEXT_STEP,
    AutoresetMode.SAME_STEP,
    AutoresetMode.DISABLED,
)


#: The mode Gymnasium assumes for a vector env that declares none (its wrappers
#: warn and treat it as NEXT_STEP); vecmode's checks do the same, with a warning.
ASSUMED_MODE = AutoresetMode.NEXT_STEP


def _normalise(text: str) -> str:
    return text.replace("_", "").replace("-", "").replace(" ", "").lower()


_BY_SPELLING: dict[str, AutoresetMode] = {}
for _mode in AutoresetMode:
    _BY_SPELLING[_normalise(_mode.value)] = _mode
    _BY_SPELLING[_normalise(_mode.name)] = _mode


def as_mode(value: ModeLike) -> AutoresetMode:
    """Return ``value`` as an :class:`~gymnasium.vector.AutoresetMode`.

    Accepts the enum itself, its string value (``"NextStep"``, ``"SameStep"``,
    ``"Disabled"``, the spelling Gymnasium uses), and the same words written
    ``"next_step"``, ``"NEXT_STEP"`` or ``"next-step"``.

    Raises:
        ValueError: ``value`` is not a mode; the message lists the valid ones.

    >>> as_mode("Disabled")
    <AutoresetMode.DISABLED: 'Disabled'>
    >>> as_mode("sometimes")
    Traceback (most recent call last):
    ...
    ValueError: 'sometimes' is not an autoreset mode; use one of AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP, AutoresetMode.DISABLED or their values 'NextStep', 'SameStep', 'Disabled'.
    """
    if isinstance(value, AutoresetMode):
        return value
    if isinstance(value, str):
        mode = _BY_SPELLING.get(_normalise(value))
        if mode is not None:
            return mode
    raise ValueError(errors.not_a_mode(value))


def mode_of(env: Any) -> AutoresetMode | None:
    """The autoreset mode ``env`` declares in ``metadata["autoreset_mode"]``.

    Returns ``None`` when the env declares no mode (Gymnasium then assumes
    NEXT_STEP, but vecmode does not guess for you).

    >>> import gymnasium as gym
    >>> from vecmode import mode_of
    >>> envs = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")], autoreset_mode="SameStep")
    >>> mode_of(envs)
    <AutoresetMode.SAME_STEP: 'SameStep'>
    >>> envs.close()
    """
    metadata = getattr(env, "metadata", None)
    if not isinstance(metadata, dict) or metadata.get("autoreset_mode") is None:
        return None
    return as_mode(metadata["autoreset_mode"])


@dataclass(frozen=True)
class Boundary:
    """What one ``step`` call means for each sub-env, whatever the mode.

    Every field is a bool array of shape ``(num_envs,)``.
    """

    #: The episode ended at this call (terminated or truncated).
    ended: np.ndarray
    #: The returned observation is the first of a new episode.
    starts: np.ndarray
    #: This call is a real transition of the env (False only for NEXT_STEP's reset
    #: step, whose action was ignored).
    real: np.ndarray
    #: The ended episode's last observation / info is in ``info["final_obs"]`` /
    #: ``info["final_info"]`` rather than the returned observation / info.
    final_in_info: np.ndarray
    #: The episode ended and nothing will reset the sub-env: the caller must, with
    #: ``reset(options={"reset_mask": needs_reset})`` (DISABLED mode).
    needs_reset: np.ndarray


def boundary(
    mode: ModeLike,
    terminations: np.ndarray,
    truncations: np.ndarray,
    ended_before: np.ndarray,
) -> Boundary:
    """The :class:`Boundary` of a ``step`` in ``mode``.

    ``ended_before`` is the ``ended`` mask of the previous ``step`` (all False after
    a ``reset``, and False for sub-envs reset by a masked reset since).

    >>> import numpy as np
    >>> from vecmode.modes import boundary
    >>> b = boundary("NextStep", np.array([False]), np.array([False]), np.array([True]))
    >>> b.starts, b.real
    (array([ True]), array([False]))
    >>> b = boundary("SameStep", np.array([True]), np.array([False]), np.array([False]))
    >>> b.starts, b.real, b.final_in_info
    (array([ True]), array([ True]), array([ True]))
    """
    ended = np.logical_or(terminations, truncations)
    never = np.zeros_like(ended)
    return _boundary(as_mode(mode), ended, ended_before, never, ~never)


def _boundary(
    mode: AutoresetMode,
    ended: np.ndarray,
    ended_before: np.ndarray,
    never: np.ndarray,
    always: np.ndarray,
) -> Boundary:
    """``never`` / ``always``: all-False / all-True arrays (shared or not)."""
    if mode is AutoresetMode.NEXT_STEP:
        starts = np.asarray(ended_before, dtype=np.bool_)
        return Boundary(ended, starts, ~starts, never, never)
    if mode is AutoresetMode.SAME_STEP:
        return Boundary(ended, ended, always, ended, never)
    return Boundary(ended, never, always, never, ended)


_CONSTANTS: dict[int, tuple[np.ndarray, np.ndarray, Boundary]] = {}


def _constants(num_envs: int) -> tuple[np.ndarray, np.ndarray, Boundary]:
    """The read-only all-False and all-True arrays of ``num_envs`` flags and the
    quiet boundary, one set per size shared by every tracker (never written to),
    so that trackers that saw the same calls hold the very same objects."""
    found = _CONSTANTS.get(num_envs)
    if found is None:
        false = np.zeros(num_envs, dtype=np.bool_)
        true = np.ones(num_envs, dtype=np.bool_)
        for array in (true, false):
            array.flags.writeable = False
        found = (false, true, Boundary(false, false, true, false, false))
        _CONSTANTS[num_envs] = found
    return found


class BoundaryTracker:
    """Follows one vector env's calls and gives the :class:`Boundary` of each.

    A wrapper holds one, made from the mode of the env it wraps, and tells it about
    every ``reset`` and ``step``; it remembers which sub-envs ended on the previous
    step, the one fact a single step does not carry. Don't write into the arrays
    it returns: they are shared between calls and trackers.

    Build it before the first ``reset``: it assumes no sub-env awaits a reset.

    ``source``: the tracker of a wrapper further down the same stack, in the same
    mode. A boundary is a function of the mode, the call's arguments (the step's
    flags, the reset's mask) and the state before the call; when this tracker is
    handed the very objects its source was handed for its latest call, from the
    very state its source was in, it takes its source's boundary and state
    instead of computing them again. Stacked wrappers thus compute each call's
    boundary once (the arrays a wrapper is handed are never written into, by
    vecmode's wrappers nor by the tracker), and a tracker whose calls differ from
    its source's (a layer between that changes the flags, or calls of its own)
    computes its own, as without a source.

    >>> import numpy as np
    >>> from vecmode.modes import BoundaryTracker
    >>> tracker = BoundaryTracker("NextStep", num_envs=2)
    >>> tracker.reset(None).starts
    array([ True,  True])
    >>> tracker.step(np.array([True, False]), np.array([False, False])).ended
    array([ True, False])
    >>> b = tracker.step(np.array([False, False]), np.array([False, False]))
    >>> b.starts, b.real
    (array([ True, False]), array([False,  True]))
    """

    __slots__ = (
        "_ended",
        "_false",
        "_last",
        "_source",
        "_true",
        "mode",
        "num_envs",
        "quiet",
    )

    def __init__(
        self,
        mode: ModeLike | None,
        num_envs: int,
        source: BoundaryTracker | None = None,
    ) -> None:
        """``mode``: the env's mode (None: not declared, so :data:`ASSUMED_MODE`);
        ``source``: a tracker to share boundaries with (see above; ignored unless
        it has the same mode and size)."""
        self.mode = ASSUMED_MODE if mode is None else as_mode(mode)
        self.num_envs = num_envs
        #: The boundary of a step where no episode ends or starts (the same in
        #: every mode); returned as this very object, so ``b is tracker.quiet``
        #: is a fast test.
        self._false, self._true, self.quiet = _constants(num_envs)
        self._ended = self._false
        same = source is not None and (source.mode, source.num_envs) == (
            self.mode,
            num_envs,
        )
        self._source = source if same else None
        #: (what the latest call was handed, the state before, its boundary,
        #: the state after)
        self._last: tuple[Any, Any, Any, Boundary, np.ndarray] | None = None

    @property
    def awaiting_reset(self) -> np.ndarray:
        """The sub-envs whose episode ended on the last step and were not reset."""
        return self._ended

    def _shared(self, first: Any, second: Any) -> Boundary | None:
        """The source's boundary of this very call, if it had it (see above)."""
        last = self._source._last  # type: ignore[union-attr]
        if (
            last is None
            or last[0] is not first
            or last[1] is not second
            or last[2] is not self._ended
        ):
            return None
        self._ended = last[4]
        self._last = last
        return last[3]

    def reset(self, mask: np.ndarray | None) -> Boundary:
        """The boundary of ``reset``: the sub-envs in ``mask`` (all if None) start."""
        if self._source is not None:
            shared = self._shared(mask, None)
            if shared is not None:
                return shared
        false, before = self._false, self._ended
        if mask is None:
            self._ended = false
            b = Boundary(false, self._true, false, false, false)
        else:
            starts = np.asarray(mask, dtype=np.bool_)
            if before is not false:
                self._ended = before & ~starts
            pending = self._ended if self.mode is AutoresetMode.DISABLED else false
            b = Boundary(false, starts, false, false, pending)
        self._last = (mask, None, before, b, self._ended)
        return b

    def step(self, terminations: np.ndarray, truncations: np.ndarray) -> Boundary:
        """The boundary of a ``step`` that returned these flags."""
        # Performance (this runs on every step of every tracked wrapper):
        # np.count_nonzero is one C call, several times faster than ndarray.any()
        # on small arrays (which goes through numpy's Python-level wrapper); the
        # all-False / all-True fields are shared read-only arrays rather than new
        # ones; a tracker below that saw this very step did the work already.
        if self._source is not None:
            shared = self._shared(terminations, truncations)
            if shared is not None:
                return shared
        ended = np.logical_or(terminations, truncations)
        before = self._ended
        if count_nonzero(ended):
            self._ended = ended
            b = _boundary(self.mode, ended, before, self._false, self._true)
        else:
            self._ended = self._false
            if before is self._false or not count_nonzero(before):
                b = self.quiet
            else:
                b = _boundary(self.mode, ended, before, self._false, self._true)
        self._last = (terminations, truncations, before, b, self._ended)
        return b
