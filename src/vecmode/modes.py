"""The boundary module: the one place that knows the autoreset modes.

It parses modes, says what each call means for each sub-env (:class:`Boundary`,
:class:`BoundaryTracker`) and is the only writer and reader of SAME_STEP's info
keys (``final_obs``, ``final_info`` and their masks).
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv

from vecmode import _arrays, _rows, errors
from vecmode._numpy import count_nonzero, host_array, true_indices
from vecmode._rows import EndedTracker
from vecmode._strict import Strict, is_strict, strict
from vecmode.infos import add_infos, restricted_infos

__all__ = [
    "MODES",
    "Boundary",
    "BoundaryTracker",
    "ModeLike",
    "Strict",
    "as_mode",
    "boundary",
    "caller_resets",
    "final_in_info",
    "mode_of",
    "resets_on_next_step",
    "strict",
]

#: A mode as an :class:`~gymnasium.vector.AutoresetMode` or its string value.
ModeLike = AutoresetMode | str

#: The three modes, in the reference's order.
MODES: tuple[AutoresetMode, ...] = tuple(AutoresetMode)

#: The mode assumed for a vector env that declares none (Gymnasium's convention).
ASSUMED_MODE = AutoresetMode.NEXT_STEP
#: The mode Gymnasium's vector envs (and ``vecmode.make_vec``) run in by default.
DEFAULT_MODE = AutoresetMode.NEXT_STEP
#: The mode of every vecmode core: the caller resets.
CORE_MODE = AutoresetMode.DISABLED

#: SAME_STEP's info keys: the final observations (an object array indexed by
#: sub-env) and the final infos (batched like the step's info), each with a mask.
FINAL_OBS = "final_obs"
FINAL_INFO = "final_info"
_FINAL_OBS_MASK = "_" + FINAL_OBS
_FINAL_INFO_MASK = "_" + FINAL_INFO
FINAL_KEYS = (FINAL_OBS, _FINAL_OBS_MASK, FINAL_INFO, _FINAL_INFO_MASK)


def _normalise(text: str) -> str:
    return text.replace("_", "").replace("-", "").replace(" ", "").lower()


_BY_SPELLING = {_normalise(s): m for m in AutoresetMode for s in (m.value, m.name)}


def as_mode(value: ModeLike) -> AutoresetMode:
    """Return ``value`` as an :class:`~gymnasium.vector.AutoresetMode`: the enum,
    its value (``"NextStep"``) or name in any case, with ``_``, ``-`` or neither.

    >>> as_mode("next-step")
    <AutoresetMode.NEXT_STEP: 'NextStep'>
    """
    if isinstance(value, AutoresetMode):
        return value
    mode = _BY_SPELLING.get(_normalise(value)) if isinstance(value, str) else None
    if mode is not None:
        return mode
    members = ", ".join(f"AutoresetMode.{mode.name}" for mode in AutoresetMode)
    values = ", ".join(repr(mode.value) for mode in AutoresetMode)
    raise ValueError(
        f"{value!r} is not an autoreset mode; use one of {members} or their "
        f"values {values}."
    )


def mode_of(env: Any) -> AutoresetMode | None:
    """The mode ``env`` declares in ``metadata["autoreset_mode"]``, or None.

    >>> import gymnasium as gym
    >>> envs = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")], autoreset_mode="SameStep")
    >>> mode_of(envs)
    <AutoresetMode.SAME_STEP: 'SameStep'>
    >>> envs.close()
    """
    metadata = getattr(env, "metadata", None)
    if metadata is VectorEnv.metadata:
        # the dict all VectorEnv classes share, where ALE's AtariVectorEnv writes
        # the mode of the last env built: only the env's own attribute says its
        own = getattr(getattr(env, "unwrapped", env), "autoreset_mode", None)
        return None if own is None else _declared(own, env, "autoreset_mode")
    if not isinstance(metadata, dict) or metadata.get("autoreset_mode") is None:
        return None
    return _declared(metadata["autoreset_mode"], env, "metadata['autoreset_mode']")


def _declared(value: Any, env: Any, where: str) -> AutoresetMode:
    """``value``, what ``env`` declares in ``where``, as a mode (else the env's fault)."""
    try:
        return as_mode(value)
    except ValueError:
        values = ", ".join(repr(mode.value) for mode in AutoresetMode)
        raise ValueError(
            f"{type(env).__name__}'s {where} is {value!r}, not an autoreset mode: "
            f"the env must declare one of {values} (or an AutoresetMode) there."
        ) from None


# ------------------------------------------------ an env that declares no mode
def mode_or_assumed(
    env: Any, who: str, strict_override: bool | None, stacklevel: int
) -> AutoresetMode:
    """``env``'s mode; NEXT_STEP with a warning (an error under strict) if it
    declares none. ``stacklevel`` counts from the caller's caller."""
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


# ------------------------------------------------------------- the boundary
@dataclass(frozen=True)
class Boundary:
    """What one call means for each sub-env, whatever the mode.

    Every field is a bool array of shape ``(num_envs,)``, in the array library
    and on the device of the flags and masks the tracker was given:

    * ``ended``: the episode ended at this call (terminated or truncated);
    * ``starts``: the returned observation is the first of a new episode;
    * ``real``: a real transition (False for NEXT_STEP's reset step and resets);
    * ``final_in_info``: the ended episode's last observation and info are in
      ``info["final_obs"]`` and ``info["final_info"]``;
    * ``needs_reset``: ended, and the caller must reset it (DISABLED).
    """

    ended: np.ndarray
    starts: np.ndarray
    real: np.ndarray
    final_in_info: np.ndarray
    needs_reset: np.ndarray


def boundary(
    mode: ModeLike,
    terminations: np.ndarray,
    truncations: np.ndarray,
    ended_before: np.ndarray,
) -> Boundary:
    """The :class:`Boundary` of a ``step`` in ``mode``; ``ended_before`` is the
    previous step's ``ended`` (False after a reset of the sub-env)."""
    ended = np.logical_or(terminations, truncations)
    return _boundary(as_mode(mode), ended, ended_before)


def _boundary(mode: Any, ended: Any, before: Any, masks: Any = None) -> Boundary:
    """The table of the modes; ``masks``: the all-False and all-True masks to
    share (NumPy's of the size by default)."""
    never, always = masks or _rows.constant_masks(len(ended))
    if mode is AutoresetMode.NEXT_STEP:
        if masks is None:
            before = np.asarray(before, dtype=np.bool_)
        real = always if before is never else ~before  # the shared mask if all
        return Boundary(ended, before, real, never, never)
    if mode is AutoresetMode.SAME_STEP:
        return Boundary(ended, ended, always, ended, never)
    return Boundary(ended, never, always, never, ended)


def resets_on_next_step(mode: ModeLike) -> bool:
    """Whether the step after an episode's end resets the sub-env (action ignored)."""
    return as_mode(mode) is AutoresetMode.NEXT_STEP


def final_in_info(mode: ModeLike) -> bool:
    """Whether an ended episode's last obs and info go in ``final_obs``/``final_info``."""
    return as_mode(mode) is AutoresetMode.SAME_STEP


def caller_resets(mode: ModeLike) -> bool:
    """Whether only the caller resets ended sub-envs (with a ``reset_mask``)."""
    return as_mode(mode) is AutoresetMode.DISABLED


@functools.cache
def _constants(num_envs: int) -> tuple[np.ndarray, Boundary, Boundary]:
    """The shared all-False mask of a size, its quiet boundary and a full reset's."""
    false, true = _rows.constant_masks(num_envs)
    quiet = Boundary(false, false, true, false, false)
    return false, quiet, Boundary(false, true, false, false, false)


class BoundaryTracker:
    """Follows one vector env's calls and gives the :class:`Boundary` of each.

    Build it before the first ``reset`` and tell it every ``reset`` and
    ``step``. Don't write into the arrays it returns: they are shared.
    ``source``: the tracker of a wrapper below in the same stack; given the very
    objects the source was given for its latest call, it reuses its boundary.
    """

    __slots__ = (
        "_caller_resets",
        "_false",
        "_full_reset",
        "_kind",
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
        """``mode`` None: not declared, so :data:`ASSUMED_MODE`."""
        self.mode = ASSUMED_MODE if mode is None else as_mode(mode)
        self.num_envs = num_envs
        self._caller_resets = caller_resets(self.mode)
        #: The boundary of a step where no episode ends or starts (this very
        #: object, so ``b is tracker.quiet`` is a fast test).
        self._false, self.quiet, self._full_reset = _constants(num_envs)
        self._true, self._kind = self.quiet.real, (np.ndarray, None)  # see _adopt
        self.ended = EndedTracker(num_envs)
        fits = source and (source.mode, source.num_envs) == (self.mode, num_envs)
        self._source = source if fits else None  # the same mode and size
        #: (the latest call's arguments, state before, boundary, state after)
        self._last: tuple[Any, Any, np.ndarray, Boundary, np.ndarray, int] | None = None

    @property
    def awaiting_reset(self) -> np.ndarray:
        """The sub-envs whose episode ended and that were not reset since."""
        return self.ended.mask

    def refuse_ended_step(self) -> None:
        """Raise :class:`~vecmode.EpisodeEndedError` if a step now would step a
        sub-env that ended and awaits the caller's reset (DISABLED)."""
        if self._caller_resets and self.ended.count:
            raise errors.EpisodeEndedError(self.ended.indices())

    def _shared(self, first: Any, second: Any) -> Boundary | None:
        """The source's boundary of this very call, if it had it."""
        last = self._source._last  # type: ignore[union-attr]
        if (
            last is None
            or last[0] is not first
            or last[1] is not second
            or last[2] is not self.ended.mask
        ):
            return None
        if second is not None and not _rows.flags_say(last[3].ended, first, second):
            return None  # a layer between wrote into the step's flags
        self.ended.mask, self.ended.count = last[4], last[5]
        self._last = last
        return last[3]

    def _remember(self, first: Any, second: Any, before: Any, b: Boundary) -> Boundary:
        ended = self.ended
        self._last = (first, second, before, b, ended.mask, ended.count)
        return b

    def _adopt(self, sample: Any) -> None:
        """Give the boundaries the array library and device of ``sample``."""
        found = _rows.masks_like(sample, self.num_envs, *self._kind)
        if found is not None:
            self._kind, (false, true) = found[:2], found[2:]
            self._false, self._true = false, true
            self.quiet = Boundary(false, false, true, false, false)
            self._full_reset = Boundary(false, true, false, false, false)
            self.ended.adopt(false)

    def reset(self, mask: Any | None, like: Any = None) -> Boundary:
        """The boundary of ``reset``: the sub-envs in ``mask`` (all if None) start;
        ``like``: the batch it returned, whose library the masks take (or mask's)."""
        if self._source and (shared := self._shared(mask, None)):
            return shared
        sample = mask if like is None else like
        numpy = type(sample) is np.ndarray and self._kind[0] is np.ndarray
        if sample is not None and not numpy:  # (NumPy's stays NumPy's)
            self._adopt(sample)
        false, before = self._false, self.ended.mask
        if mask is None:
            self.ended.clear()
            return self._remember(mask, None, before, self._full_reset)
        starts = _rows.in_library(mask, self._false)
        self.ended.update(cleared=starts)
        pending = self.ended.mask if self._caller_resets else false
        return self._remember(
            mask, None, before, Boundary(false, starts, false, false, pending)
        )

    def step(self, terminations: np.ndarray, truncations: np.ndarray) -> Boundary:
        """The boundary of a ``step`` that returned these flags."""
        if self._source and (shared := self._shared(terminations, truncations)):
            return shared
        if type(terminations) is np.ndarray:
            ended = np.logical_or(terminations, truncations)
        elif type(terminations) is self._kind[0] or _arrays.namespace(terminations):
            return self._array_step(terminations, truncations)
        else:  # lists, Python values: as NumPy bools
            ended = np.logical_or(host_array(terminations), host_array(truncations))
        tracked = self.ended
        before = tracked.mask
        # the hot path of every tracked wrapper: count_nonzero is one C call
        count = count_nonzero(ended)
        if not count and not tracked.count:
            b = self.quiet
        else:
            masks = (self._false, self._true) if self._kind[0] is np.ndarray else None
            b = _boundary(self.mode, ended, before, masks)
            # ended here and not reset within this very call (SAME_STEP's are)
            reset_within = b.final_in_info
            if reset_within is self._false:  # none: no NumPy call
                tracked.set(ended, count)
            elif reset_within is ended:  # all that ended
                tracked.clear()
            else:
                tracked.set(ended & ~reset_within)
        return self._remember(terminations, truncations, before, b)

    def _array_step(self, terminations: Any, truncations: Any) -> Boundary:
        """:meth:`step` over another library's flags (no copy; one scalar sync)."""
        self._adopt(terminations)
        ended = _arrays.ended(terminations, truncations)
        tracked, before = self.ended, self.ended.mask
        count = _arrays.count_true(ended)
        if not tracked.count and not count:
            b = self.quiet
        else:
            b = _boundary(self.mode, ended, before, (self._false, self._true))
            if b.final_in_info is ended:  # SAME_STEP: all that ended reset
                tracked.clear()
            else:
                tracked.set(ended, count)
        return self._remember(terminations, truncations, before, b)


# ------------------------------------------------------- SAME_STEP's info layout
def same_step_infos(
    infos: dict[str, Any],
    finals: Sequence[tuple[int, Any, dict[str, Any]]],
    num_envs: int,
    add_info: Callable[[dict[str, Any], dict[str, Any], int], dict[str, Any]],
) -> dict[str, Any]:
    """``infos`` with ``finals``, ``(index, final obs, final info)`` in sub-env
    order, in Gymnasium's layout; ``add_info`` batches an info (the env's)."""
    if not finals:
        return infos
    final_obs = np.full(num_envs, None, dtype=object)
    mask = np.zeros(num_envs, dtype=np.bool_)
    for i, obs, _ in finals:
        final_obs[i], mask[i] = obs, True
    final_info = add_infos(add_info, {}, ((i, info) for i, _, info in finals))
    return with_finals(infos, mask, final_obs, final_info)


def with_finals(
    infos: dict[str, Any],
    mask: np.ndarray,
    final_obs: np.ndarray,
    final_info: dict[str, Any],
) -> dict[str, Any]:
    """A new ``infos`` with the final observations, final infos and their ``mask``,
    in Gymnasium's layout (``final_obs`` an object array) or the dense one
    (``final_obs`` one batch, meaningful where ``mask`` is True: array batches)."""
    if not (type(final_obs) is np.ndarray and final_obs.dtype == object):  # dense
        final_info = restricted_infos(final_info, mask)  # the ended rows'
    finals = {FINAL_OBS: final_obs, _FINAL_OBS_MASK: mask, FINAL_INFO: final_info}
    return {**infos, **finals, _FINAL_INFO_MASK: _rows.copied(mask)}


def without_finals(infos: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    """``(the infos without SAME_STEP's keys, their final_info or None)``."""
    rest = {k: v for k, v in infos.items() if k not in FINAL_KEYS}
    return rest, infos.get(FINAL_INFO)


def from_dense_finals(infos: dict[str, Any], ended: Any) -> dict[str, Any]:
    """SAME_STEP's layout from a dense ``final_obs``: ALE's (the ``ended`` rows)
    or a NumPy batch with its ``_final_obs`` mask (an array batch converted to
    NumPy; its final infos kept); any other layout is returned as it is."""
    dense, masked = infos.get(FINAL_OBS), _FINAL_OBS_MASK in infos
    batch = type(dense) is np.ndarray and dense.dtype != object
    if (masked and not batch) or (not masked and ended is None):
        return infos
    rest, final_info = without_finals(infos)
    if dense is None:
        return rest
    ended = np.asarray(infos[_FINAL_OBS_MASK]) if masked else ended
    finals: list[tuple[int, Any, dict[str, Any]]]
    finals = [(i, np.array(dense[i], copy=True), {}) for i in true_indices(ended)]
    out = same_step_infos(rest, finals, len(ended), lambda batched, *_: batched)
    if final_info is not None:
        out[FINAL_INFO], out[_FINAL_INFO_MASK] = final_info, infos[_FINAL_INFO_MASK]
    return out


def to_dense_finals(infos: dict[str, Any], dense: np.ndarray) -> dict[str, Any]:
    """ALE's dense layout from SAME_STEP's: where a sub-env ended, a copy of
    ``dense`` (kept between calls) with the ended rows written in."""
    rest, _ = without_finals(infos)
    found = final_observations(infos)
    if found is None:
        return rest
    mask, final_obs = found
    for i in true_indices(mask):
        dense[i] = final_obs[i]
    return {**rest, FINAL_OBS: dense.copy()}


def final_observations(infos: Any) -> tuple[np.ndarray, Any] | None:
    """``(mask, final_obs)`` of a step's infos; None when no sub-env has one."""
    mask = infos.get(_FINAL_OBS_MASK) if isinstance(infos, dict) else None
    if mask is None:
        return None
    if type(mask) is not np.ndarray and _arrays.namespace(mask) is not None:
        return (mask, infos.get(FINAL_OBS)) if _arrays.any_true(mask) else None
    if not count_nonzero(mask):
        return None
    return np.asarray(mask, dtype=np.bool_), infos.get(FINAL_OBS)


def with_final_batch(infos: dict[str, Any], rows: Any, batch: Any) -> dict[str, Any]:
    """``infos`` with ``batch`` (all rows) as final observations, in its layout."""
    final = infos.get(FINAL_OBS)
    if not (type(final) is np.ndarray and final.dtype == object):  # dense
        return {**infos, FINAL_OBS: batch}
    indices = true_indices(rows)
    return with_final_observations(infos, {i: _rows.row_of(batch, i) for i in indices})


def final_of(info: Any) -> tuple[bool, Any]:
    """``(found, final obs)`` in ONE sub-env's info dict (``DictInfoToList``)."""
    if isinstance(info, dict) and FINAL_OBS in info:
        return True, info[FINAL_OBS]
    return False, None


def with_final_observations(
    infos: dict[str, Any], replacements: Mapping[int, Any]
) -> dict[str, Any]:
    """A new ``infos`` whose final observation of sub-env ``i`` is
    ``replacements[i]`` (a new object array; the mask untouched)."""
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
    """A new ``infos`` mapped key by key (to another array library, say): the
    keys outside SAME_STEP's layout through ``others`` (a dict to a dict), each
    final observation through ``observation``, the final infos through
    ``final_info``; the masks as they are (an array env's: by ``observation``)."""
    rest, finals = without_finals(infos)
    out, dense = dict(others(rest)), infos.get(FINAL_OBS)
    if dense is not None and type(dense) is not np.ndarray and _arrays.namespace(dense):
        masks = FINAL_KEYS[1::2]  # an array env's dense layout: masks, one batch
        out.update({k: observation(infos[k]) for k in masks if k in infos})
        out[FINAL_OBS] = observation(dense)
    elif FINAL_OBS in infos:
        mask = infos.get(_FINAL_OBS_MASK)
        entries = np.array(infos[FINAL_OBS], dtype=object, copy=True)
        rows = range(len(entries)) if mask is None else true_indices(mask)
        for i in rows:
            if entries[i] is not None:
                entries[i] = observation(entries[i])
        out[FINAL_OBS] = entries
    if finals is not None:
        out[FINAL_INFO] = final_info(finals)
    for key in (_FINAL_OBS_MASK, _FINAL_INFO_MASK):
        if key in infos and key not in out:
            out[key] = infos[key]
    return out


def final_frames(infos: Any, key: str) -> tuple[np.ndarray, Any] | None:
    """``(mask, frames)`` of ``infos["final_info"][key]`` (all True without a
    ``_key`` mask); None when the final infos hold no ``key``."""
    _, finals = without_finals(infos) if isinstance(infos, dict) else ({}, None)
    if not isinstance(finals, dict) or key not in finals:
        return None
    mask, frames = finals.get(f"_{key}"), finals[key]
    if mask is None:
        mask = np.ones(len(frames), dtype=np.bool_)
    return np.asarray(mask, dtype=np.bool_), frames


def final_entries_of(infos: Any, i: int) -> dict[str, Any]:
    """Sub-env ``i``'s entries of the final-observation mask and array, by key."""
    out: dict[str, Any] = {}
    for key in (_FINAL_OBS_MASK, FINAL_OBS):
        value = infos.get(key) if isinstance(infos, dict) else None
        try:
            out[key] = None if value is None else value[i]
        except (TypeError, IndexError, KeyError):
            out[key] = value
    return out


# ------------------------------------------------- checking SAME_STEP's layout
@dataclass(frozen=True)
class LayoutProblem:
    """Where a step's info breaks SAME_STEP's layout: the info ``key`` at fault,
    the ``sub_env`` concerned (or None), what was ``expected`` there (``"no
    such key"``, ``"True"``...), whether the key is ``present``, and what it
    held (``got``: its entry for ``sub_env`` where there is one)."""

    key: str
    sub_env: int | None
    expected: str
    present: bool
    got: Any

    @property
    def field(self) -> str:
        """``info['key']``, for messages."""
        return f"info[{self.key!r}]"


def final_layout_problem(
    infos: dict[str, Any],
    expected: np.ndarray,
    *,
    complete: bool = True,
    every_step: bool = False,
) -> LayoutProblem | None:
    """The first way ``infos`` breaks SAME_STEP's layout for a step whose final
    observations belong to the sub-envs in ``expected``, or None; ``complete``:
    check the final infos too; ``every_step``: the keys may come where nothing
    ended, with all-False masks (GymnaxAdapter's dense layout)."""
    keys = FINAL_KEYS if complete else (_FINAL_OBS_MASK, FINAL_OBS)
    if not expected.any():
        return _unexpected_key(infos, keys, expected, every_step)
    masks = (_FINAL_OBS_MASK, _FINAL_INFO_MASK) if complete else (_FINAL_OBS_MASK,)
    first = int(np.argmax(expected))
    for key in keys if complete else masks:
        if key not in infos:  # a missing mask: its entry for ``first`` is missing
            return LayoutProblem(
                key, first, "True" if key in masks else "present", False, None
            )
    for key in masks:
        problem = _mask_problem(key, infos[key], expected)
        if problem is not None:
            return problem
    if FINAL_OBS not in infos:
        return LayoutProblem(FINAL_OBS, first, "present", False, None)
    return _contents_problem(infos, expected) if complete else None


def _unexpected_key(
    infos: dict[str, Any], keys: Sequence[str], expected: np.ndarray, every_step: bool
) -> LayoutProblem | None:
    """A key of ``keys`` where no episode ended (``every_step``: but all-False masks)."""
    for key in (key for key in keys if key in infos):
        mask = key if key.startswith("_") else f"_{key}"
        if not every_step or mask not in infos:
            first = _rows.first_true(infos[key])
            return LayoutProblem(key, first, "no such key", True, infos[key])
        if problem := _mask_problem(mask, infos[mask], expected):
            return problem
    return None


def _mask_problem(key: str, mask: Any, expected: np.ndarray) -> LayoutProblem | None:
    """A mask that is not a bool array equal to ``expected``."""
    if not (
        isinstance(mask, np.ndarray)
        and mask.shape == expected.shape
        and mask.dtype == np.bool_
    ):
        shape = f"a bool array of shape {expected.shape}"
        return LayoutProblem(key, None, shape, True, mask)
    for i in true_indices(mask != expected):
        return LayoutProblem(key, i, str(bool(expected[i])), True, bool(mask[i]))
    return None


def _contents_problem(
    infos: dict[str, Any], expected: np.ndarray
) -> LayoutProblem | None:
    """Final observations that are neither an object array of a row per sub-env
    nor one batch of as many rows (the dense layout), final infos not a dict."""
    obs = infos[FINAL_OBS]
    if _rows.rows_of(obs) != len(expected):  # Gymnasium's layout, or the dense one
        shape = f"a numpy object array of shape {expected.shape} (or a dense batch)"
        return LayoutProblem(FINAL_OBS, None, shape, True, obs)
    if not isinstance(infos[FINAL_INFO], dict):
        return LayoutProblem(FINAL_INFO, None, "a dict", True, infos[FINAL_INFO])
    return None


# ------------------------------------------- the final observations in the batch
def final_entries(infos: Any, rows: np.ndarray, who: str) -> np.ndarray:
    """The object array of final observations in a step's ``infos`` (batched, or
    a list of one dict per sub-env); ValueError if one of ``rows`` has none."""
    num_envs = len(rows)
    if isinstance(infos, (list, tuple)) and len(infos) == num_envs:
        final_obs = np.full(num_envs, None, dtype=object)
        mask = np.zeros(num_envs, dtype=np.bool_)
        for i, info in enumerate(infos):
            mask[i], final_obs[i] = final_of(info)
        found = (mask, final_obs) if mask.any() else None
    else:
        found = final_observations(infos)
    if found is None or found[1] is None or _rows.missing(rows, found[0]):
        subs = ", ".join(str(i) for i in np.flatnonzero(host_array(rows)).tolist())
        raise ValueError(
            f"{who}: sub-env(s) {subs} ended in a SAME_STEP env but "
            f"info['final_obs'] / info['_final_obs'] does not hold their final "
            f"observation. Check the env (or a wrapper under {who}) with "
            f"vecmode.check_stack(env) and declare its real mode."
        )
    return found[1]


def merge_final_observations(
    env: VectorEnv,
    observations: Any,
    infos: Any,
    rows: np.ndarray,
    who: str = "wrapper",
) -> Any:
    """A copy of the batch ``observations`` (which ``env`` returned) whose
    ``rows`` hold the final observations of ``infos`` (either layout); leaves
    keep their type. Another library's batch: in that library, no host copy."""
    final = final_entries(infos, rows, who)
    if type(rows) is not np.ndarray:  # another library's mask
        if not (type(final) is np.ndarray and final.dtype == object):  # dense
            return _arrays.rows_where(rows, final, observations)
        rows = np.asarray(host_array(rows), dtype=np.bool_)  # (NumpyToTorch's)
    indices = true_indices(rows)
    spaces = env.observation_space, env.single_observation_space
    return _rows.with_rows(*spaces, observations, indices, [final[i] for i in indices])
