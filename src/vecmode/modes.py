"""The boundary module: the one place that knows the autoreset modes.

* parsing modes and reading them off an env (:func:`as_mode`, :func:`mode_of`);
* what each ``step`` means for each sub-env in each mode (:class:`Boundary`,
  :func:`boundary`, :class:`BoundaryTracker`), and the mode predicates derived from
  it (:func:`resets_on_next_step`, :func:`final_in_info`, :func:`caller_resets`);
* the one record of which sub-envs ended and were not reset since
  (:class:`EndedTracker`), which the core, the policies and the wrappers share;
* SAME_STEP's info layout: the only writer (:func:`same_step_infos`,
  :func:`with_finals`, :func:`with_final_observations`, :func:`map_infos`) and
  reader (:func:`final_observations`, :func:`final_of`, :func:`final_frames`) of ``info["final_obs"]``,
  ``info["_final_obs"]``, ``info["final_info"]`` and ``info["_final_info"]``.

Everything else in vecmode asks here: no other module names those keys or branches
on a mode (``tests/test_architecture.py`` keeps it so).

>>> from vecmode import as_mode
>>> as_mode("SameStep")
<AutoresetMode.SAME_STEP: 'SameStep'>
>>> as_mode("next_step")
<AutoresetMode.NEXT_STEP: 'NextStep'>
"""

from __future__ import annotations

import contextvars
import itertools
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv

from vecmode import errors
from vecmode._numpy import count_nonzero, host_array

__all__ = [
    "ASSUMED_MODE",
    "CORE_MODE",
    "DEFAULT_MODE",
    "FINAL_INFO",
    "FINAL_KEYS",
    "FINAL_OBS",
    "MODES",
    "AutoresetMode",
    "Boundary",
    "BoundaryTracker",
    "EndedTracker",
    "LayoutProblem",
    "ModeLike",
    "Strict",
    "as_mode",
    "boundary",
    "caller_resets",
    "final_entries_of",
    "final_frames",
    "final_in_info",
    "final_layout_problem",
    "final_observations",
    "final_observations_of",
    "final_of",
    "from_dense_finals",
    "is_strict",
    "map_infos",
    "mode_of",
    "mode_or_assumed",
    "resets_on_next_step",
    "same_step_infos",
    "strict",
    "to_dense_finals",
    "with_final_observations",
    "with_finals",
    "without_finals",
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

#: The mode Gymnasium's vector envs run in unless asked otherwise (and so
#: ``vecmode.make_vec``'s sync and async envs).
DEFAULT_MODE = AutoresetMode.NEXT_STEP

#: The mode every vecmode core runs in: no autoreset policy, the caller resets.
CORE_MODE = AutoresetMode.DISABLED

#: SAME_STEP's info keys: the final observations (a NumPy object array indexed by
#: sub-env) and the final infos (batched like the step's info), each with a mask.
FINAL_OBS = "final_obs"
FINAL_INFO = "final_info"
_FINAL_OBS_MASK = "_" + FINAL_OBS
_FINAL_INFO_MASK = "_" + FINAL_INFO
#: Every key of SAME_STEP's layout, masks included.
FINAL_KEYS = (FINAL_OBS, _FINAL_OBS_MASK, FINAL_INFO, _FINAL_INFO_MASK)


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
    raise ValueError(not_a_mode(value))


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
    if metadata is VectorEnv.metadata:
        # the dict every VectorEnv class shares: an env wrote its mode there (ALE's
        # AtariVectorEnv does), so it says the mode of the last such env built,
        # not this one's; the env's own attribute says what it runs
        own = getattr(getattr(env, "unwrapped", env), "autoreset_mode", None)
        if own is not None:
            return as_mode(own)
    if not isinstance(metadata, dict) or metadata.get("autoreset_mode") is None:
        return None
    return as_mode(metadata["autoreset_mode"])


# ------------------------------------------------ an env that declares no mode

#: The strict handles in force in this thread or task, oldest first: (handle
#: number, enabled). The newest decides; releasing one removes it wherever it
#: is, so handles may be released in any order.
_strict: contextvars.ContextVar[tuple[tuple[int, bool], ...]] = contextvars.ContextVar(
    "vecmode_strict", default=()
)
_strict_numbers = itertools.count()


class Strict:
    """Handle returned by :func:`strict`; its setting holds until it is released
    (handles made later take precedence while they are held)."""

    def __init__(self, enabled: bool) -> None:
        self._number: int | None = next(_strict_numbers)
        _strict.set((*_strict.get(), (self._number, bool(enabled))))

    def restore(self) -> None:
        """End this handle's setting (the setting in force before it comes back,
        unless a handle made since still holds); a second call does nothing."""
        if self._number is None:
            return
        held = _strict.get()
        kept = tuple(entry for entry in held if entry[0] != self._number)
        if len(kept) == len(held):
            raise RuntimeError(
                "this vecmode.strict() handle was made in another thread or task "
                "(strict mode holds in the thread or task that turns it on): "
                "release it there."
            )
        _strict.set(kept)
        self._number = None

    #: As :meth:`Guard.release`: the same, under the name a guard's handle has.
    release = restore

    def __enter__(self) -> Strict:
        return self

    def __exit__(self, *exc: object) -> None:
        self.restore()


def strict(enabled: bool = True) -> Strict:
    """Treat an env that declares no mode as an error, not a warning.

    By default a declared wrapper built on an env with no
    ``metadata["autoreset_mode"]`` warns with :class:`~vecmode.UndeclaredModeWarning`
    and assumes NEXT_STEP (Gymnasium's convention), and :func:`check_stack` counts such a
    layer as a warning. Under ``strict`` both raise / fail instead. Works as a call
    (for the rest of the current thread or task) and as a context manager.

    >>> import vecmode
    >>> with vecmode.strict():
    ...     pass
    """
    return Strict(enabled)


def is_strict(override: bool | None = None) -> bool:
    """Whether an undeclared mode is an error here: ``override``, else the
    :func:`strict` setting in force."""
    if override is not None:
        return override
    held = _strict.get()
    return held[-1][1] if held else False


def mode_or_assumed(
    env: Any, who: str, strict_override: bool | None, stacklevel: int
) -> AutoresetMode:
    """``env``'s mode; NEXT_STEP with a warning (or an error, strict) if undeclared.

    ``stacklevel`` is counted from the caller of this function's caller, so that
    the warning points at the user's line.
    """
    mode = mode_of(env)
    if mode is not None:
        return mode
    strict = is_strict(strict_override)
    consequence = (
        "vecmode.strict() is on, so this is an error"
        if strict
        else f"assuming {ASSUMED_MODE.value} (Gymnasium's convention)"
    )
    message = (
        f"{who}: {errors.describe(env)} declares no metadata['autoreset_mode']; "
        f"{consequence}. Set metadata['autoreset_mode'] to the "
        f"gymnasium.vector.AutoresetMode the env really uses."
    )
    if strict:
        raise errors.IncompatibleModeError(message)
    warnings.warn(message, errors.UndeclaredModeWarning, stacklevel=stacklevel + 2)
    return ASSUMED_MODE


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


def _at_an_end(mode: ModeLike) -> Boundary:
    """The boundary of a one-sub-env step in ``mode`` where the episode ends."""
    yes = np.ones(1, dtype=np.bool_)
    return boundary(mode, yes, ~yes, ~yes)


def _after_an_end(mode: ModeLike) -> Boundary:
    """The boundary of the step after that one."""
    yes = np.ones(1, dtype=np.bool_)
    return boundary(mode, ~yes, ~yes, yes)


# The mode predicates, read off the boundary table (so they cannot disagree with it).
def resets_on_next_step(mode: ModeLike) -> bool:
    """Whether in ``mode`` the step after an episode's end resets the sub-env
    instead of stepping it (its action ignored: not a real transition)."""
    return not _after_an_end(mode).real[0]


def final_in_info(mode: ModeLike) -> bool:
    """Whether ``mode`` puts an ended episode's last observation and info in
    ``info["final_obs"]`` / ``info["final_info"]``."""
    return bool(_at_an_end(mode).final_in_info[0])


def caller_resets(mode: ModeLike) -> bool:
    """Whether in ``mode`` the caller resets ended sub-envs, with
    ``reset(options={"reset_mask": mask})`` (nothing resets them otherwise), so
    that masked resets are part of its contract."""
    return bool(_at_an_end(mode).needs_reset[0])


class EndedTracker:
    """Which sub-envs' episodes ended and were not reset since.

    The one record of it, shared by the core (its DISABLED check: such a sub-env
    must not be stepped), the NEXT_STEP policy (they are the sub-envs its next
    step resets), :class:`BoundaryTracker` (what the previous step ended) and the
    DISABLED policy over a foreign env.

    >>> import numpy as np
    >>> ended = EndedTracker(3)
    >>> ended.update(ended=[0, 2])
    >>> ended.mask, ended.count
    (array([ True, False,  True]), 2)
    >>> ended.update(cleared=[0])
    >>> ended.indices()
    [2]
    """

    __slots__ = ("_none", "count", "mask")

    def __init__(self, num_envs: int) -> None:
        #: the read-only all-False mask every tracker of this size shares
        self._none = _constants(num_envs)[0]
        #: The bool mask of those sub-envs. It is replaced, never written into
        #: (don't write into it either): a mask seen once stays what it was.
        self.mask = self._none
        #: How many there are (0 is the common case: a fast test).
        self.count = 0

    def update(
        self,
        cleared: Sequence[int] | np.ndarray | None = None,
        ended: Sequence[int] | np.ndarray | None = None,
    ) -> None:
        """The sub-envs in ``cleared`` were reset, those in ``ended`` ended (and
        were not reset within the same call); both are indices or bool masks."""
        if (cleared is None or not len(cleared)) and (ended is None or not len(ended)):
            return
        mask = self.mask.copy()
        if cleared is not None and len(cleared):
            mask[cleared] = False
        if ended is not None and len(ended):
            mask[ended] = True
        self.set(mask)

    def clear(self) -> None:
        """Every sub-env was reset."""
        self.mask, self.count = self._none, 0

    def set(self, mask: np.ndarray) -> None:
        """Exactly the sub-envs in ``mask`` (after a step that ended them); the
        tracker keeps ``mask`` itself, so don't write into it afterwards."""
        mask = np.asarray(mask, dtype=np.bool_)
        count = int(count_nonzero(mask))
        self.mask, self.count = (mask, count) if count else (self._none, 0)

    def adopt(self, mask: np.ndarray, count: int) -> None:
        """The very state of another tracker that saw the same calls."""
        self.mask, self.count = mask, count

    def indices(self) -> list[int]:
        """The indices of those sub-envs, in order."""
        return np.flatnonzero(self.mask).tolist() if self.count else []


# ------------------------------------------------------- SAME_STEP's info layout
def same_step_infos(
    infos: dict[str, Any],
    finals: Sequence[tuple[int, Any, dict[str, Any]]],
    num_envs: int,
    add_info: Callable[[dict[str, Any], dict[str, Any], int], dict[str, Any]],
) -> dict[str, Any]:
    """``infos`` with SAME_STEP's final observations and infos, from the sub-envs
    reset within the step: ``finals`` holds ``(index, final obs, final info)`` in
    sub-env order, ``add_info`` is the env's ``VectorEnv._add_info``. Exactly
    Gymnasium's layout; ``infos`` itself unchanged when ``finals`` is empty."""
    if not finals:
        return infos
    final_obs = np.full(num_envs, None, dtype=object)
    mask = np.zeros(num_envs, dtype=np.bool_)
    final_info: dict[str, Any] = {}
    for i, obs, info in finals:
        final_obs[i] = obs
        mask[i] = True
        final_info = add_info(final_info, info, i)
    return with_finals(infos, mask, final_obs, final_info)


def with_finals(
    infos: dict[str, Any],
    mask: np.ndarray,
    final_obs: np.ndarray,
    final_info: dict[str, Any],
) -> dict[str, Any]:
    """A new ``infos`` holding the final observations (an object array), the final
    infos (a batched dict) and their ``mask`` (SAME_STEP's layout)."""
    return {
        **infos,
        FINAL_OBS: final_obs,
        _FINAL_OBS_MASK: mask,
        FINAL_INFO: final_info,
        _FINAL_INFO_MASK: mask.copy(),
    }


def from_dense_finals(infos: dict[str, Any], ended: np.ndarray) -> dict[str, Any]:
    """SAME_STEP's layout from a *dense* one (ALE's ``AtariVectorEnv``: one array
    with a row for every sub-env, stale where nothing ended, and no mask nor final
    infos): the rows of the ``ended`` sub-envs, with their masks, and empty final
    infos (the env reports none). Infos already in Gymnasium's layout (a
    ``_final_obs`` mask) are returned as they are."""
    if _FINAL_OBS_MASK in infos:
        return infos
    rest = {k: v for k, v in infos.items() if k not in FINAL_KEYS}
    dense = infos.get(FINAL_OBS)
    if dense is None or not np.count_nonzero(ended):
        return rest
    final_obs = np.full(len(ended), None, dtype=object)
    for i in np.flatnonzero(ended).tolist():
        final_obs[i] = np.array(dense[i], copy=True)
    mask = np.asarray(ended, dtype=np.bool_).copy()
    return with_finals(rest, mask, final_obs, {})


def to_dense_finals(infos: dict[str, Any], dense: np.ndarray) -> dict[str, Any]:
    """ALE's *dense* layout from SAME_STEP's (:func:`from_dense_finals` undone,
    for test envs that report as ALE does): the infos without the final keys,
    and, where some sub-env's episode ended, ``final_obs`` a copy of ``dense``
    (one row per sub-env, kept between calls) with the ended rows written in."""
    rest, _ = without_finals(infos)
    found = final_observations(infos)
    if found is None:
        return rest
    mask, final_obs = found
    for i in np.flatnonzero(mask).tolist():
        dense[i] = final_obs[i]
    return {**rest, FINAL_OBS: dense.copy()}


def final_observations(infos: Any) -> tuple[np.ndarray, Any] | None:
    """``(mask, final_obs)`` of a step's infos: the sub-envs whose ended episode's
    last observation is in the info, and the object array holding them; None when
    there is none (no such key, or no sub-env in its mask)."""
    if not isinstance(infos, dict):
        return None
    mask = infos.get(_FINAL_OBS_MASK)
    if mask is None or not count_nonzero(mask):
        return None
    return np.asarray(mask, dtype=np.bool_), infos.get(FINAL_OBS)


def with_final_observations(
    infos: dict[str, Any], replacements: Mapping[int, Any]
) -> dict[str, Any]:
    """A new ``infos`` whose final observation of sub-env ``i`` is
    ``replacements[i]`` (a new object array; the mask and ``infos`` untouched)."""
    final_obs = np.array(infos[FINAL_OBS], dtype=object, copy=True)
    for i, obs in replacements.items():
        final_obs[i] = obs
    return {**infos, FINAL_OBS: final_obs}


def map_infos(
    infos: dict[str, Any],
    *,
    others: Callable[[dict[str, Any]], dict[str, Any]],
    observation: Callable[[Any], Any],
    final_info: Callable[[dict[str, Any]], Any],
) -> dict[str, Any]:
    """A new ``infos`` for a wrapper that maps everything it returns (to another
    array library, say): the keys outside SAME_STEP's layout through ``others`` (one
    dict in, one out), each final observation through ``observation`` (into a new
    object array; entries outside the mask stay as they are), the final infos
    through ``final_info``; both masks exactly as they are (NumPy bool arrays).

    >>> import numpy as np
    >>> infos = {"t": np.array([1, 2]), "final_obs": np.array([None, 5.0]),
    ...          "_final_obs": np.array([False, True]), "final_info": {},
    ...          "_final_info": np.array([False, True])}
    >>> out = map_infos(infos, others=lambda d: {k: v * 10 for k, v in d.items()},
    ...                 observation=lambda o: -o, final_info=dict)
    >>> out["t"], out["final_obs"], out["_final_obs"] is infos["_final_obs"]
    (array([10, 20]), array([None, -5.0], dtype=object), True)
    >>> infos["final_obs"]  # untouched: a layer below may have kept it
    array([None, 5.0], dtype=object)
    """
    rest, finals = without_finals(infos)
    out = dict(others(rest))
    if FINAL_OBS in infos:
        mask = infos.get(_FINAL_OBS_MASK)
        entries = np.array(infos[FINAL_OBS], dtype=object, copy=True)
        rows = range(len(entries)) if mask is None else np.flatnonzero(mask).tolist()
        for i in rows:
            if entries[i] is not None:
                entries[i] = observation(entries[i])
        out[FINAL_OBS] = entries
    if finals is not None:
        out[FINAL_INFO] = final_info(finals)
    for key in (_FINAL_OBS_MASK, _FINAL_INFO_MASK):
        if key in infos:
            out[key] = infos[key]
    return out


def final_frames(infos: Any, key: str) -> tuple[np.ndarray, Any] | None:
    """``(mask, frames)`` of ``infos["final_info"][key]`` and its ``_key`` mask:
    what the sub-envs put under ``key`` in the info of the step that ended their
    episode, where SAME_STEP keeps it (None when the final infos hold no ``key``)."""
    _, finals = without_finals(infos) if isinstance(infos, dict) else ({}, None)
    if not isinstance(finals, dict) or key not in finals:
        return None
    mask = finals.get(f"_{key}")
    frames = finals[key]
    if mask is None:
        mask = np.ones(len(frames), dtype=np.bool_)
    return np.asarray(mask, dtype=np.bool_), frames


def final_of(info: Any) -> tuple[bool, Any]:
    """``(found, final obs)`` in ONE sub-env's info dict (infos as a list of dicts,
    as ``DictInfoToList`` makes them)."""
    if isinstance(info, dict) and FINAL_OBS in info:
        return True, info[FINAL_OBS]
    return False, None


def final_observations_of(infos: Any, num_envs: int) -> tuple[np.ndarray, Any] | None:
    """:func:`final_observations` of infos in Gymnasium's batched dict, or in a list
    of one dict per sub-env (``DictInfoToList``)."""
    if isinstance(infos, (list, tuple)) and len(infos) == num_envs:
        final_obs = np.full(num_envs, None, dtype=object)
        mask = np.zeros(num_envs, dtype=np.bool_)
        for i, info in enumerate(infos):
            mask[i], final_obs[i] = final_of(info)
        return (mask, final_obs) if mask.any() else None
    return final_observations(infos)


@dataclass(frozen=True)
class LayoutProblem:
    """Where a step's info breaks SAME_STEP's layout (see
    :func:`final_layout_problem`)."""

    #: The info key at fault.
    key: str
    #: The sub-env concerned, where one is.
    sub_env: int | None
    #: What should be there (``"no such key"``, ``"present"``, ``"True"``, ...).
    expected: str
    #: Whether the key is there, and its value (or its entry for ``sub_env``).
    present: bool
    got: Any

    @property
    def field(self) -> str:
        """``info['key']``, for messages."""
        return f"info[{self.key!r}]"


def final_layout_problem(
    infos: dict[str, Any], expected: np.ndarray, *, complete: bool = True
) -> LayoutProblem | None:
    """The first way ``infos`` breaks SAME_STEP's layout for a step whose final
    observations belong to the sub-envs in ``expected`` (all False: none), or None.

    No key of the layout when nothing ended; else the final observations and their
    mask (and with ``complete``, the final infos and their mask): masks are bool
    arrays equal to ``expected``, the final observations an object array (with
    ``complete``, the final infos a dict).
    """
    keys = FINAL_KEYS if complete else (_FINAL_OBS_MASK, FINAL_OBS)
    if not expected.any():
        return next(
            (
                LayoutProblem(
                    key, _first_true(infos[key]), errors.diff_no_key(), True, infos[key]
                )
                for key in keys
                if key in infos
            ),
            None,
        )
    masks = (_FINAL_OBS_MASK, _FINAL_INFO_MASK) if complete else (_FINAL_OBS_MASK,)
    first = int(np.argmax(expected))
    for key in keys if complete else masks:
        if key not in infos:  # a missing mask: its entry for ``first`` is missing
            what = "True" if key in masks else diff_key_present()
            return LayoutProblem(key, first, what, False, None)
    for key in masks:
        problem = _mask_problem(key, infos[key], expected)
        if problem is not None:
            return problem
    if FINAL_OBS not in infos:
        return LayoutProblem(FINAL_OBS, first, diff_key_present(), False, None)
    return _contents_problem(infos, expected) if complete else None


def _mask_problem(key: str, mask: Any, expected: np.ndarray) -> LayoutProblem | None:
    """A mask that is not a bool array equal to ``expected``."""
    if not (
        isinstance(mask, np.ndarray)
        and mask.shape == expected.shape
        and mask.dtype == np.bool_
    ):
        return LayoutProblem(key, None, diff_mask(expected.shape), True, mask)
    for i in np.flatnonzero(mask != expected).tolist():
        return LayoutProblem(key, i, str(bool(expected[i])), True, bool(mask[i]))
    return None


def _contents_problem(
    infos: dict[str, Any], expected: np.ndarray
) -> LayoutProblem | None:
    """Final observations that are not an object array, final infos not a dict."""
    obs = infos[FINAL_OBS]
    if not (
        isinstance(obs, np.ndarray)
        and obs.dtype == object
        and obs.shape == expected.shape
    ):
        return LayoutProblem(
            FINAL_OBS, None, diff_object_array(expected.shape), True, obs
        )
    if not isinstance(infos[FINAL_INFO], dict):
        return LayoutProblem(
            FINAL_INFO, None, errors.diff_dict(), True, infos[FINAL_INFO]
        )
    return None


def _first_true(value: Any) -> int | None:
    """The first True of a 1-d mask-like value, or None."""
    try:
        mask = np.asarray(value, dtype=np.bool_)
    except (TypeError, ValueError):
        return None
    return int(np.argmax(mask)) if mask.ndim == 1 and mask.any() else None


def final_entries_of(infos: Any, i: int) -> dict[str, Any]:
    """Sub-env ``i``'s entries of the final-observation mask and object array in
    ``infos``, by key (None where a key is missing), to compare two runs."""
    out: dict[str, Any] = {}
    for key in (_FINAL_OBS_MASK, FINAL_OBS):
        value = infos.get(key) if isinstance(infos, dict) else None
        try:
            out[key] = None if value is None else value[i]
        except (TypeError, IndexError, KeyError):
            out[key] = value
    return out


def without_finals(infos: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    """``(the infos without SAME_STEP's keys, their final_info or None)``."""
    rest = {k: v for k, v in infos.items() if k not in FINAL_KEYS}
    return rest, infos.get(FINAL_INFO)


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
    every ``reset`` and ``step``; it remembers which sub-envs ended and were not
    reset since (its :class:`EndedTracker`), the one fact a single step does not
    carry. Don't write into the arrays it returns: they are shared between calls
    and trackers.

    Build it before the first ``reset``: it assumes no sub-env awaits a reset.

    ``source``: the tracker of a wrapper further down the same stack, in the same
    mode. A boundary is a function of the mode, the call's arguments (the step's
    flags, the reset's mask) and the state before the call; when this tracker is
    handed the very objects its source was handed for its latest call, from the
    very state its source was in, it takes its source's boundary and state
    instead of computing them again. Stacked wrappers thus compute each call's
    boundary once (the arrays a wrapper is handed are never written into, by
    vecmode's wrappers nor by the tracker, and a state is replaced, never
    changed), and a tracker whose calls differ from its source's (a layer between
    that changes the flags, in new arrays or by writing into the ones it was
    handed, or calls of its own) computes its own, as without a source.

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
        "_caller_resets",
        "_false",
        "_last",
        "_source",
        "_true",
        "ended",
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
        self._caller_resets = caller_resets(self.mode)
        #: The boundary of a step where no episode ends or starts (the same in
        #: every mode); returned as this very object, so ``b is tracker.quiet``
        #: is a fast test.
        self._false, self._true, self.quiet = _constants(num_envs)
        #: The sub-envs whose episode ended and that were not reset since.
        self.ended = EndedTracker(num_envs)
        same = source is not None and (source.mode, source.num_envs) == (
            self.mode,
            num_envs,
        )
        self._source = source if same else None
        #: (what the latest call was handed (two objects), the state before, its
        #: boundary, the state after, its count)
        self._last: tuple[Any, Any, np.ndarray, Boundary, np.ndarray, int] | None = None

    @property
    def awaiting_reset(self) -> np.ndarray:
        """The sub-envs whose episode ended and that were not reset since (in
        NEXT_STEP, the next step resets them; in DISABLED, the caller must)."""
        return self.ended.mask

    def _shared(self, first: Any, second: Any) -> Boundary | None:
        """The source's boundary of this very call, if it had it (see above)."""
        last = self._source._last  # type: ignore[union-attr]
        if (
            last is None
            or last[0] is not first
            or last[1] is not second
            or last[2] is not self.ended.mask
        ):
            return None
        if second is not None and not _same_ended(last[3], first, second):
            return None  # a layer between wrote into the step's flags
        self.ended.adopt(last[4], last[5])
        self._last = last
        return last[3]

    def _remember(
        self, first: Any, second: Any, before: np.ndarray, b: Boundary
    ) -> Boundary:
        ended = self.ended
        self._last = (first, second, before, b, ended.mask, ended.count)
        return b

    def reset(self, mask: np.ndarray | None) -> Boundary:
        """The boundary of ``reset``: the sub-envs in ``mask`` (all if None) start."""
        if self._source is not None:
            shared = self._shared(mask, None)
            if shared is not None:
                return shared
        false, before = self._false, self.ended.mask
        if mask is None:
            self.ended.clear()
            return self._remember(
                mask, None, before, Boundary(false, self._true, false, false, false)
            )
        starts = np.asarray(mask, dtype=np.bool_)
        self.ended.update(cleared=starts)
        pending = self.ended.mask if self._caller_resets else false
        return self._remember(
            mask, None, before, Boundary(false, starts, false, false, pending)
        )

    def step(self, terminations: np.ndarray, truncations: np.ndarray) -> Boundary:
        """The boundary of a ``step`` that returned these flags."""
        # Performance (this runs on every step of every tracked wrapper):
        # count_nonzero is one C call, several times faster than ndarray.any()
        # on small arrays (which goes through numpy's Python-level wrapper); the
        # all-False / all-True fields are shared read-only arrays rather than new
        # ones; a tracker below that saw this very step did the work already.
        if self._source is not None:
            shared = self._shared(terminations, truncations)
            if shared is not None:
                return shared
        if type(terminations) is np.ndarray:
            ended = np.logical_or(terminations, truncations)
        else:  # another library's flags (torch's, whose logical_or through NumPy
            # gives uint8, no bool mask): as NumPy bools
            ended = np.logical_or(host_array(terminations), host_array(truncations))
        tracked = self.ended
        before = tracked.mask
        if not count_nonzero(ended):
            if not tracked.count:
                b = self.quiet
            else:
                b = _boundary(self.mode, ended, before, self._false, self._true)
                tracked.clear()
        else:
            b = _boundary(self.mode, ended, before, self._false, self._true)
            # ended here and not reset within this very call (SAME_STEP's are)
            reset_within = b.final_in_info
            if reset_within is self._false:  # none: no NumPy call
                tracked.set(ended)
            elif reset_within is ended:  # all that ended
                tracked.clear()
            else:
                tracked.set(ended & ~reset_within)
        return self._remember(terminations, truncations, before, b)


def _same_ended(b: Boundary, terminations: Any, truncations: Any) -> bool:
    """Whether a step's flags still say which episodes ended in ``b``, the
    boundary computed from these very arrays: a layer between two trackers may
    have written into them since (three C calls where none ended)."""
    if type(terminations) is not np.ndarray or type(truncations) is not np.ndarray:
        terminations, truncations = host_array(terminations), host_array(truncations)
    ended = b.ended
    if not count_nonzero(ended):
        return not (count_nonzero(terminations) or count_nonzero(truncations))
    return not count_nonzero(np.logical_or(terminations, truncations) != ended)


# ------------------------------------------------------------------ messages
def not_a_mode(value: Any) -> str:
    return (
        f"{value!r} is not an autoreset mode; use one of "
        + ", ".join(f"AutoresetMode.{mode.name}" for mode in AutoresetMode)
        + " or their values "
        + ", ".join(repr(mode.value) for mode in AutoresetMode)
        + "."
    )


def diff_key_present() -> str:
    return "present"


def diff_mask(shape: tuple[int, ...]) -> str:
    return f"a bool array of shape {shape}"


def diff_object_array(shape: tuple[int, ...]) -> str:
    return f"a numpy object array of shape {shape}"
