"""``check_wrapper``: prove that a vector wrapper is right in the modes it declares.

The proof is mode equivalence. The wrapper is run over deterministic
:class:`~vecmode.testing.ScheduledEnv` sub-envs in every mode it declares, over
vecmode's core and over Gymnasium's ``SyncVectorEnv``, with the same seeds and the
same per-sub-env actions (sub-env ``i``'s ``k``-th real transition always takes the
``k``-th action of its own queue). Each run is read by the mode's rules
(:class:`vecmode.modes.BoundaryTracker`) into per-sub-env *events*: an episode's
first observation, and each real transition's action, reward, flags and the
observation moved to (the final one for an ended episode, wherever the mode puts
it). A wrapper right in every declared mode gives the same events in all of them.

Two schedules are run:

* **together**: all sub-envs' episodes end at the same calls (by termination or
  truncation). Every call then reveals the same real observations and steps in
  every mode, so even a wrapper whose statistics pool the sub-envs (running means,
  reward normalisation) must give *exactly* the same events in every mode;
* **staggered**: episodes of different lengths, ending at different calls, plus
  partial resets (``reset(options={"reset_mask": ...})``) in the middle of
  episodes. Compared exactly too, unless the wrapper pools statistics across
  sub-envs (``batch_dependent``): its values then depend on which sub-envs'
  events share a call, and only the events' kinds, actions and flags must agree
  across modes (values must still agree between the two base envs of one mode).

Every call is also checked on its own: the wrapper's ``metadata["autoreset_mode"]``
is the mode it wraps; observations are in its observation spaces, final ones
included; ``info["_final_obs"]`` (and ``info["_final_info"]``, where the final
infos are there) is a bool mask marking exactly the sub-envs whose final
observation the mode puts there; rewards and flags have the right shapes and
types; ``step`` leaves the caller's actions, and ``reset`` the caller's
``options`` (its ``reset_mask`` array too), as they were; and nothing a call
returned is changed by a later call (the kit keeps every result of a run; a
wrapper with a ``copy = False`` attribute may reuse its observation buffer), nor
anything the env below returned to the wrapper (no array of it written into, in
that call or later; a new key in its info dict is no write).
Finally every mode the wrapper does *not* declare must be refused when it
is built, with :class:`vecmode.IncompatibleModeError`. What an array-converting
wrapper returns (torch tensors, jax arrays) is read as NumPy, but the final
observations' layout must stay SAME_STEP's (a NumPy object array, NumPy bool masks).

The first difference fails the check with an ``AssertionError`` naming the run,
the call, the sub-env, the field, what was expected and what came instead.

>>> from vecmode.testing import check_wrapper
>>> from vecmode.wrappers import ClipReward
>>> report = check_wrapper(lambda env: ClipReward(env, 0.0, 1.0))
>>> print(report.summary)
ClipReward: right in NextStep, SameStep, Disabled (15 runs, 351 transitions compared)
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import wrapt
from gymnasium.vector import AutoresetMode, VectorEnv

from vecmode import registry
from vecmode._gymnasium import BATCH_DEPENDENT
from vecmode.autoreset import with_autoreset
from vecmode.core import space_row
from vecmode.env_classes import keeps_options, layers
from vecmode.errors import IncompatibleModeError
from vecmode.modes import (
    FINAL_INFO,
    MODES,
    BoundaryTracker,
    ModeLike,
    as_mode,
    caller_resets,
    final_layout_problem,
    final_observations,
    final_of,
    mode_of,
    without_finals,
)
from vecmode.registry import declaration, supported_modes
from vecmode.sync_vector_env import SyncVectorEnv
from vecmode.testing._compare import arrays_in, as_numpy, where_different
from vecmode.testing.envs import (
    STEP_INFO_KEYS,
    DenseFinalObsVectorEnv,
    ScheduledEnv,
    scheduled_env_fns,
)
from vecmode.testing.vector_env import RESULT_PARTS, HeldResults
from vecmode.wrappers.dict_info_to_list import infos_to_list

__all__ = [
    "WrapperConformance",
    "WrapperReport",
    "check_wrapper",
    "episode_statistics",
]

WrapperFactory = Callable[[VectorEnv], VectorEnv]

#: The base vector envs a wrapper can be run over, by name.
BASES: dict[str, Callable[[list[Callable[[], gym.Env]], AutoresetMode], VectorEnv]] = {
    "vecmode.SyncVectorEnv": lambda fns, mode: with_autoreset(SyncVectorEnv(fns), mode),
    "gymnasium.vector.SyncVectorEnv": lambda fns, mode: gym.vector.SyncVectorEnv(
        fns, autoreset_mode=mode
    ),
    # ALE's dense SAME_STEP final observations: for adapters of that layout
    # (every other wrapper needs Gymnasium's layout, and refuses it)
    "vecmode.testing.DenseFinalObsVectorEnv": lambda fns, mode: DenseFinalObsVectorEnv(
        fns, autoreset_mode=mode
    ),
}
#: The bases a wrapper is run over by default: those in Gymnasium's layout.
DEFAULT_BASES = ("vecmode.SyncVectorEnv", "gymnasium.vector.SyncVectorEnv")
#: The bases in ALE's dense layout. Their SAME_STEP steps report no final infos,
#: so the infos of an ended step are not compared over them (the env dropped
#: them, not the wrapper).
_DENSE_LAYOUT = frozenset({"vecmode.testing.DenseFinalObsVectorEnv"})


@dataclass(frozen=True)
class _Schedule:
    """Sub-env ``i``'s episode lengths and endings, and where to cut episodes."""

    name: str
    lengths: tuple[tuple[int, ...], ...]
    truncate: tuple[tuple[bool, ...], ...]
    #: per sub-env, after which of its real transitions a masked reset cuts the
    #: episode (only when that transition did not end it)
    cuts: tuple[frozenset[int], ...]


def _schedules(num_envs: int, wanted: int) -> tuple[_Schedule, ...]:
    """The "together" and "staggered" schedules, and the staggered one with each
    cut made by the env itself (a truncation) instead of a masked reset."""
    staggered = _Schedule(
        "staggered episodes",
        tuple(((2, 3), (3,), (1, 4), (4, 2))[i % 4] for i in range(num_envs)),
        tuple(((i % 2 == 0), False, True) for i in range(num_envs)),
        tuple(frozenset({3 + i, 8}) for i in range(num_envs)),
    )
    return (
        _Schedule(
            "episodes ending together",
            tuple((3, 1, 2, 4) for _ in range(num_envs)),
            tuple(((i % 2 == 0), (i % 3 == 0)) for i in range(num_envs)),
            tuple(frozenset() for _ in range(num_envs)),
        ),
        staggered,
        _truncated_at_cuts(staggered, wanted),
    )


def _truncated_at_cuts(schedule: _Schedule, wanted: int) -> _Schedule:
    """``schedule`` whose episodes the env truncates where it has cuts.

    A wrapper must treat an episode cut by ``reset(options={"reset_mask": ...})``
    like one the env truncated there: the same events follow.
    """
    lengths, truncate = [], []
    for ls, ts, cuts in zip(
        schedule.lengths, schedule.truncate, schedule.cuts, strict=True
    ):
        done, episode, ref_ls, ref_ts = 0, 0, [], []
        while done < wanted + 8:
            length, trunc = ls[episode % len(ls)], ts[episode % len(ts)]
            cut = min((c for c in cuts if done < c < done + length), default=None)
            if cut is None:
                ref_ls.append(length)
                ref_ts.append(trunc)
                done += length
            else:
                ref_ls.append(cut - done)
                ref_ts.append(True)
                done = cut
            episode += 1
        lengths.append(tuple(ref_ls))
        truncate.append(tuple(ref_ts))
    return _Schedule(
        "staggered episodes truncated by the env where cut",
        tuple(lengths),
        tuple(truncate),
        tuple(frozenset() for _ in schedule.cuts),
    )


# ------------------------------------------------------------------ events
@dataclass(frozen=True)
class _Event:
    """One sub-env's real event, and the call that revealed it."""

    kind: str  # "start" | "step"
    call: int  # the call that revealed it (0: the first reset)
    obs: Any  # the first observation, or the one moved to
    action: Any = None
    reward: Any = None
    terminated: Any = None
    truncated: Any = None
    #: what ``compare_info`` took from the transition's info (``_SKIP``: nothing)
    info: Any = None

    def fields(self, values: bool) -> dict[str, Any]:
        """The fields compared; with ``values=False`` only kinds, actions, flags."""
        out: dict[str, Any] = {"kind": self.kind}
        if self.kind == "step":
            out.update(
                action=self.action, terminated=self.terminated, truncated=self.truncated
            )
            if values:
                out.update(reward=self.reward, next_obs=self.obs, info=self.info)
        elif values:
            out["obs"] = self.obs
        return out


#: An info not compared: none was asked for, or the caller cut the episode (the
#: env did not end it, so episode statistics differ from an env's truncation).
_SKIP: Any = None


def _transition_infos(
    infos: Any, rows: np.ndarray, num_envs: int, pick: Callable[[dict], Any]
) -> list[Any]:
    """Per sub-env, ``pick`` of its info at a transition: the call's info, and
    where the ended step's info is in ``final_info`` (SAME_STEP) that one merged
    under the call's (the wrapper's own keys, like episode statistics, are there)."""
    infos = as_numpy(infos)  # an array-converting wrapper's tensors, as NumPy
    views = infos if isinstance(infos, list) else infos_to_list(infos, num_envs)
    picked = []
    for i, view in enumerate(views):
        view, final = without_finals(view)
        if rows[i] and isinstance(final, dict):
            view = {**final, **view}
        picked.append(pick(view))
    return picked


#: Why a transition's info lacks the sub-env's step count (the key of
#: :data:`STEP_INFO_KEYS`), and the value compared in its place.
_NOT_REACHED = "the sub-env's info did not reach the caller"
_NO_STEP_INFO = f"<{_NOT_REACHED}>"


def _with_env_info(
    key: str, compare_info: Callable[[dict], Any] | None
) -> Callable[[dict], Any]:
    """What is compared of a transition's info: the sub-env's own step count (the
    env's info reached the caller), and what ``compare_info`` takes, if given."""

    def pick(info: dict) -> Any:
        own = {f"the sub-env's info[{key!r}]": info.get(key, _NO_STEP_INFO)}
        if compare_info is None:
            return own
        return {**own, "compare_info": compare_info(info)}

    return pick


def _check_env_info(picked: list[Any], real: np.ndarray, where: str, who: str) -> None:
    """Fail where a real transition's info lacks the sub-env's own step count."""
    for i in np.flatnonzero(real).tolist():
        found = picked[i]
        if isinstance(found, dict):
            for name, value in found.items():
                if isinstance(value, str) and value == _NO_STEP_INFO:
                    raise _fail(
                        who,
                        f"{where}, sub-env {i}, field info",
                        f"{name} is missing: {_NOT_REACHED}",
                        _HINT_ENV_INFOS,
                    )


def _difference(expected: Any, got: Any) -> str | None:
    """How ``got`` (this run's) differs from ``expected`` (the run it is compared
    with), in values, dtypes or shapes, or None. Neither run is known to be the
    right one, so the message says which is which, not which is wrong."""
    if isinstance(expected, dict) or isinstance(got, dict):
        if not (isinstance(expected, dict) and isinstance(got, dict)):
            return f"a {type(got).__name__} here, a {type(expected).__name__} there"
        if expected.keys() != got.keys():
            return f"keys {sorted(got)} here, {sorted(expected)} there"
        for key in expected:
            why = _difference(expected[key], got[key])
            if why is not None:
                return f"[{key!r}]: {why}"
        return None
    if isinstance(expected, tuple) or isinstance(got, tuple):
        if not (isinstance(expected, tuple) and isinstance(got, tuple)):
            return f"a {type(got).__name__} here, a {type(expected).__name__} there"
        if len(expected) != len(got):
            return f"{len(got)} items here, {len(expected)} there"
        for j, (e, g) in enumerate(zip(expected, got, strict=True)):
            why = _difference(e, g)
            if why is not None:
                return f"[{j}]: {why}"
        return None
    return _array_difference(expected, got)


def _array_difference(expected: Any, got: Any) -> str | None:
    """:func:`_difference` of two values that are neither dicts nor tuples."""
    e, g = np.asarray(expected), np.asarray(got)
    if e.shape != g.shape:
        return f"shape {g.shape} here, {e.shape} there"
    if e.dtype != g.dtype and not (e.dtype.kind in "iub" and g.dtype.kind in "iub"):
        if e.dtype.kind in "OSU" or g.dtype.kind in "OSU":  # not two numbers' types
            return f"{_show(got)} here, {_show(expected)} there"
        return f"dtype {g.dtype} here, {e.dtype} there"
    if not np.array_equal(e, g, equal_nan=e.dtype.kind in "fc"):
        return f"{_show(got)} here, {_show(expected)} there"
    return None


def _show(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return np.array2string(value, precision=6, threshold=12)
    return repr(value)


class ConformanceError(AssertionError):
    """What :func:`check_wrapper` raises for a wrapper that does not conform: an
    ``AssertionError`` (so pytest shows it as a failed check) naming the run, the
    call, the sub-env and the field that differ."""


def _fail(who: str, where: str, what: str, hint: str = "") -> ConformanceError:
    return ConformanceError(
        f"check_wrapper({who}): {where}: {what}" + (f"\n{hint}" if hint else "")
    )


# ----------------------------------------------------------------- one run
@dataclass
class _Run:
    """One run of the wrapped env: its per-sub-env events."""

    label: str
    events: list[list[_Event]] = field(default_factory=list)
    transitions: int = 0


def _final_rows(infos: Any, rows: np.ndarray, where: str, who: str) -> dict[int, Any]:
    """The final observations of ``rows``, checking SAME_STEP's layout (its mask
    marks exactly ``rows``)."""
    if isinstance(infos, list):  # DictInfoToList: one dict per sub-env
        finals = {}
        for i, info in enumerate(infos):
            found, final = final_of(info)
            if found != bool(rows[i]):
                raise _fail(
                    who,
                    f"{where}, sub-env {i}",
                    f"info has {'a' if found else 'no'} final observation, but the "
                    f"mode puts {'one' if rows[i] else 'none'} there",
                )
            if found:
                finals[i] = final
        return finals
    # the final infos and their mask too, where they are there (an env or a
    # wrapper may drop the infos: the dense layout has none)
    complete = any(key in infos for key in (FINAL_INFO, f"_{FINAL_INFO}"))
    problem = final_layout_problem(infos, rows, complete=complete)
    if problem is not None:
        got = _show(problem.got) if problem.present else "nothing"
        raise _fail(
            who,
            f"{where}, field {problem.field}"
            + ("" if problem.sub_env is None else f", sub-env {problem.sub_env}"),
            f"expected {problem.expected}, got {got}",
            "The wrapper must keep the final observations and their mask, as "
            "SAME_STEP puts them (transformed like the observations), marking "
            "exactly the sub-envs whose episode ended.",
        )
    present = final_observations(infos)
    if present is None:
        return {}
    return {int(i): present[1][i] for i in np.flatnonzero(rows)}


def _drive(
    envs: VectorEnv,
    mode: AutoresetMode,
    schedule: _Schedule,
    queues: list[list[Any]],
    wanted: int,
    seed: int,
    label: str,
    who: str,
    compare_info: Callable[[dict], Any] | None,
    final_infos: bool = True,
    base_keeps_options: bool = True,
    reuses_observations: bool = False,
    below: _Below | None = None,
) -> _Run:
    n = envs.num_envs
    run = _Run(label, [[] for _ in range(n)])
    # what the wrapper returned (and the env below returned to it), kept
    held = _Held(who, reuses_observations, below)
    found = mode_of(envs)
    if found is not mode:
        raise _fail(
            who,
            label,
            f"metadata['autoreset_mode'] is {found}, expected {mode}",
            "A wrapper keeps the wrapped env's metadata['autoreset_mode'], unless "
            "it declares another output mode (@vecmode.supports(..., output=...)) "
            "and puts that one there.",
        )
    single_space = envs.single_observation_space
    tracker = BoundaryTracker(mode, n)
    taken = [0] * n
    calls = 0

    def observe(obs: Any, where: str) -> None:
        if not envs.observation_space.contains(obs):
            raise _fail(
                who,
                where,
                f"the observations {_show(obs)} are not in the wrapper's "
                f"observation_space {envs.observation_space}",
            )

    def started(obs: Any, mask: np.ndarray) -> None:
        for i in np.flatnonzero(mask).tolist():
            row = space_row(single_space, obs, i)
            run.events[i].append(_Event("start", calls, _kept(row)))

    def call(where: str, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``method(*args, **kwargs)``; what it raises is a failure at ``where``."""
        try:
            result = method(*args, **kwargs)
        except Exception as error:
            masked = "reset_mask" in (kwargs.get("options") or {})
            raise _fail(
                who,
                where,
                f"raised {type(error).__name__}: {error}",
                conformance_partial_reset_hint() if masked else "",
            ) from error
        held.keep(where, result)
        return result

    obs = as_numpy(call(f"{label}, call 0 (reset)", envs.reset, seed=seed)[0])
    observe(obs, f"{label}, call 0 (reset)")
    last = obs  # the observations last returned (a copy: see _kept)
    started(obs, tracker.reset(None).starts)
    while min(taken) < wanted:
        calls += 1
        if calls > 8 * wanted + 16:
            raise _fail(
                who,
                label,
                f"after {calls} calls some sub-envs made fewer than {wanted} real "
                f"transitions ({taken})",
            )
        where = f"{label}, call {calls} (step)"
        actions = np.stack(
            [np.asarray(queues[i][taken[i] % len(queues[i])]) for i in range(n)]
        )
        given = actions.copy()
        obs, rewards, terminations, truncations, infos = call(where, envs.step, actions)
        _check_actions_untouched(given, actions, where, who)
        # what an array-converting wrapper returns (torch, jax) is read as NumPy
        obs, rewards, terminations, truncations = as_numpy(
            (obs, rewards, terminations, truncations)
        )
        observe(obs, where)
        _check_step_arrays(n, rewards, terminations, truncations, where, who)
        b = tracker.step(terminations, truncations)
        _check_reset_steps(b.real, rewards, terminations, truncations, where, who)
        finals = as_numpy(_final_rows(infos, b.final_in_info, where, who))
        for i, final in finals.items():
            if not single_space.contains(final):
                raise _fail(
                    who,
                    f"{where}, sub-env {i}, field final_obs",
                    f"{_show(final)} is not in the wrapper's single_observation_space "
                    f"{single_space}",
                    "The final observations must be transformed like the returned "
                    "ones.",
                )
        picked = (
            _transition_infos(infos, b.final_in_info, n, compare_info)
            if compare_info is not None
            else [_SKIP] * n
        )
        if not final_infos:  # the base dropped the ended steps' infos
            picked = [
                _SKIP if e else p for p, e in zip(picked, b.final_in_info, strict=True)
            ]
        _check_env_info(picked, b.real, where, who)
        cut = np.zeros(n, dtype=np.bool_)
        for i in np.flatnonzero(b.real).tolist():
            run.events[i].append(
                _Event(
                    "step",
                    calls,
                    _kept(
                        finals[i]
                        if b.final_in_info[i]
                        else space_row(single_space, obs, i)
                    ),
                    actions[i].tolist(),
                    float(rewards[i]),
                    bool(terminations[i]),
                    bool(truncations[i]),
                    picked[i],
                )
            )
            taken[i] += 1
            run.transitions += 1
            cut[i] = taken[i] in schedule.cuts[i] and not b.ended[i]
            if cut[i]:  # the caller truncates the episode here
                run.events[i][-1] = replace(
                    run.events[i][-1], truncated=True, info=_SKIP
                )
        started(obs, b.starts)
        last = _kept(obs)
        mask = b.needs_reset | cut
        if mask.any():
            calls += 1
            where = f"{label}, call {calls} (reset with reset_mask={mask.tolist()})"
            options = _Options(mask, base_keeps_options)
            obs = as_numpy(call(where, envs.reset, options=options.given)[0])
            options.check(where, who)
            observe(obs, where)
            _check_others_kept(single_space, last, obs, mask, where, who)
            started(obs, tracker.reset(mask).starts)
            last = _kept(obs)
    held.check_all()
    return run


class _Options:
    """The options of a masked reset, as given to the wrapper, and a copy to
    check that ``reset`` left them (and the mask array in them) as they were."""

    def __init__(self, mask: np.ndarray, base_keeps: bool) -> None:
        self.mask = mask.copy()
        self.given: dict[str, Any] = {"reset_mask": self.mask}
        self.copy = copy.deepcopy(self.given)
        #: whether the base env leaves the caller's options as they were
        #: (Gymnasium's pop ``reset_mask``, so a wrapper passing them down loses it)
        self.base_keeps = base_keeps

    def check(self, where: str, who: str) -> None:
        """Fail where ``reset`` wrote into the caller's options or mask."""
        if not np.array_equal(self.mask, self.copy["reset_mask"]):
            raise _fail(
                who,
                f"{where}, field options['reset_mask']",
                conformance_mask_written(
                    _show(self.copy["reset_mask"]), _show(self.mask)
                ),
                conformance_options_hint(),
            )
        expected = dict(self.copy)
        if not self.base_keeps and "reset_mask" not in self.given:
            del expected["reset_mask"]  # the base env popped it
        if where_different(expected, self.given) is not None:
            raise _fail(
                who,
                f"{where}, field options",
                conformance_options_changed(_show(self.copy), _show(self.given)),
                conformance_options_hint(),
            )


class _Held:
    """What the wrapper returned in one run, as returned, and deep copies made
    then: a result that a later call changes is a failure (the kit's base envs
    return new arrays, so any change is the wrapper's doing), the observations
    excepted for a wrapper that says it reuses its buffer (``copy = False``).
    With ``below``, what the env below returned to the wrapper is held to the
    same: the wrapper writes into none of it."""

    def __init__(
        self,
        who: str,
        reuses_observations: bool = False,
        below: _Below | None = None,
    ) -> None:
        self.who = who
        self.results: HeldResults[str] = HeldResults(reuses_observations)
        self.below = below

    def keep(self, where: str, result: Any) -> None:
        """Keep ``result`` (returned at ``where``), after checking that the call
        left the result before it, and what the env below returned to it in the
        call, as they were."""
        if self.below is not None:
            self.below.check_call(where, self.who)
        found = self.results.keep(where, result)
        if found is not None:
            raise self._fail(*found, by=where)

    def check_all(self) -> None:
        """Fail where a result kept, or one the env below returned, is no longer
        what was returned."""
        if self.below is not None:
            self.below.check_all(self.who)
        found = self.results.first_changed()
        if found is not None:
            raise self._fail(*found)

    def _fail(self, where: str, part: str, by: str | None) -> ConformanceError:
        return _fail(
            self.who,
            f"{where}, field {part}",
            conformance_changed_later(part, by),
            conformance_changed_later_hint(),
        )


class _Below:
    """What the env below the wrapper returned to it in one run (each array of
    its ``reset`` and ``step`` results, an object array's entries too) beside a
    copy made then. The wrapper writes into none of them: the env below may
    keep what it returned (a core built with ``copy=False`` reuses its
    observation buffer; a layer that logs or stores transitions holds them), so
    a wrapper writing into them changes that env's data. A new key in an info
    dict is no write: only arrays are compared.

    The env's ``reset`` and ``step`` are wrapped (with ``wrapt``) on the
    instance itself, so the wrapper finds no extra layer under it."""

    def __init__(self, envs: VectorEnv) -> None:
        #: each array returned, its part, the call it was returned in (set when
        #: that call is checked) and its copy
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

    def check_call(self, where: str, who: str) -> None:
        """Fail where the wrapper's call ``where`` wrote into what the env below
        returned to it within that call."""
        new = self._arrays[self._checked :]
        self._checked = len(self._arrays)
        for entry in new:
            entry[1] = where
        self._check(new, who, by=where)

    def check_all(self, who: str) -> None:
        """Fail where a later call of the wrapper wrote into what the env below
        returned to it before."""
        self._check(self._arrays, who, by=None)

    @staticmethod
    def _check(arrays: list[list[Any]], who: str, by: str | None) -> None:
        for path, where, array, copied in arrays:
            if array.dtype == object:  # its entries are held on their own
                changed = array.shape != copied.shape or any(
                    a is not b for a, b in zip(array.flat, copied.flat, strict=True)
                )
            else:
                changed = where_different(copied, array) is not None
            if changed:
                raise _fail(
                    who,
                    f"{where}, field {path}",
                    conformance_wrote_below(path, _show(copied), _show(array), by),
                    conformance_wrote_below_hint(),
                )


def _check_actions_untouched(
    given: np.ndarray, actions: np.ndarray, where: str, who: str
) -> None:
    """Fail where ``step`` wrote into the caller's action array."""
    if not np.array_equal(given, actions):
        raise _fail(
            who,
            f"{where}, field actions",
            f"step() wrote into the caller's actions: {_show(given)} became "
            f"{_show(actions)}",
            "A wrapper transforms a copy of the actions it is given (the caller "
            "keeps them, e.g. in a rollout buffer); never write into them.",
        )


def _check_step_arrays(
    n: int, rewards: Any, terminations: Any, truncations: Any, where: str, who: str
) -> None:
    """Fail unless rewards and flags are arrays of ``n`` numbers / bools."""
    for name, array, kinds in (
        ("rewards", rewards, "fiub"),
        ("terminations", terminations, "b"),
        ("truncations", truncations, "b"),
    ):
        array = np.asarray(array)
        if array.shape != (n,) or array.dtype.kind not in kinds:
            raise _fail(
                who,
                f"{where}, field {name}",
                f"shape {array.shape} dtype {array.dtype}: expected shape ({n},) "
                f"of {'numbers' if kinds != 'b' else 'bools'}",
            )


def _check_others_kept(
    space: gym.Space, last: Any, obs: Any, mask: np.ndarray, where: str, who: str
) -> None:
    """Fail where a masked reset returns, for a sub-env it did not reset, other
    than the observation last returned for it."""
    for i in np.flatnonzero(~mask).tolist():
        why = _difference(space_row(space, last, i), space_row(space, obs, i))
        if why is not None:
            raise _fail(
                who,
                f"{where}, sub-env {i} (not reset), field obs",
                f"{why}: here the masked reset's, there the call before's",
                _HINT_OTHERS_KEPT,
            )


def _check_reset_steps(
    real: np.ndarray,
    rewards: Any,
    terminations: Any,
    truncations: Any,
    where: str,
    who: str,
) -> None:
    """Fail where a step that is no transition (NEXT_STEP's reset step: the
    sub-env is reset, the action ignored) returns a reward or an ended flag."""
    for i in np.flatnonzero(~real).tolist():
        if rewards[i] != 0 or terminations[i] or truncations[i]:
            raise _fail(
                who,
                f"{where}, sub-env {i}",
                conformance_reset_step(
                    rewards[i], bool(terminations[i]), bool(truncations[i])
                ),
                _HINT_RESET_STEP,
            )


def _kept(obs: Any) -> Any:
    """A copy of an observation to keep: a wrapper may return the same buffer
    again, written over, at the next call (as ``copy=False`` vector envs do)."""
    return copy.deepcopy(obs)


def _cut(events: list[_Event], wanted: int) -> list[_Event]:
    """The events up to the ``wanted``-th real transition."""
    kept: list[_Event] = []
    steps = 0
    for event in events:
        if steps == wanted:
            break
        kept.append(event)
        steps += event.kind == "step"
    return kept


def _compare(
    reference: _Run, run: _Run, wanted: int, values: bool, who: str, hint: str
) -> int:
    """Assert the two runs' events agree; return the transitions compared."""
    compared = 0
    for i, (expected, got) in enumerate(zip(reference.events, run.events, strict=True)):
        expected, got = _cut(expected, wanted), _cut(got, wanted)
        for k, (e, g) in enumerate(zip(expected, got, strict=False)):
            e_fields, g_fields = e.fields(values), g.fields(values)
            for name, value in e_fields.items():
                if name == "info" and (value is _SKIP or g_fields[name] is _SKIP):
                    continue
                why = _difference(value, g_fields[name])
                if why is None:
                    continue
                if name == "kind":
                    why = f"{g.kind!r} here, {e.kind!r} there"
                raise _fail(
                    who,
                    f"{run.label} differs from {reference.label}",
                    f"sub-env {i}, event {k} ({_describe(e)}, call {g.call} here, "
                    f"call {e.call} there), field {name}: {why}",
                    hint,
                )
            compared += e.kind == "step"
        if len(expected) != len(got):
            raise _fail(
                who,
                f"{run.label} differs from {reference.label}",
                f"sub-env {i}: {len(got)} events here, {len(expected)} there",
                hint,
            )
    return compared


def _describe(event: _Event) -> str:
    return "an episode start" if event.kind == "start" else "a real transition"


# ------------------------------------------------------------------ report
@dataclass(frozen=True)
class WrapperReport:
    """What :func:`check_wrapper` proved. ``str(report)`` shows it all;
    :meth:`record` makes :func:`vecmode.check_stack` report the class as verified."""

    #: The wrapper's name.
    wrapper: str
    #: The modes proved right.
    modes: tuple[AutoresetMode, ...]
    #: The modes refused at construction, as declared.
    refused: tuple[AutoresetMode, ...]
    #: The runs made (mode, base env, schedule).
    runs: tuple[str, ...]
    #: Real transitions compared across runs.
    transitions: int
    #: Whether values were compared only where episodes end together.
    batch_dependent: bool
    #: The class proved: the factory built one wrapper of it over the base env
    #: (None when it built a stack of several).
    wrapper_class: type | None = field(default=None, compare=False, repr=False)
    #: How each refused mode was refused: vecmode's IncompatibleModeError, or the
    #: class's own constructor (its error, for an undeclared mode).
    refusals: Mapping[AutoresetMode, str] = field(
        default_factory=lambda: MappingProxyType({}), compare=False, repr=False
    )
    #: The wrappers the factory stacked over the base env.
    layers: int = field(default=1, compare=False, repr=False)
    #: The base envs the runs were made over (keys of :data:`BASES`).
    bases: tuple[str, ...] = field(default=DEFAULT_BASES, compare=False, repr=False)
    #: The factory that was checked, and the test envs' kinds (for :meth:`record`).
    _factory: Any = field(default=None, compare=False, repr=False)
    _kinds: Mapping[str, Any] = field(
        default_factory=lambda: MappingProxyType({}), compare=False, repr=False
    )

    @property
    def limits(self) -> tuple[str, ...]:
        """What this proof cannot see, for the run it was (empty when it was
        run in several modes, over the default bases): a proof in one mode
        compares that mode's runs only with each other, so an error they share
        goes unseen."""
        found = []
        if len(self.modes) == 1:
            found.append(limit_one_mode(self.modes[0]))
        if self.modes and all(caller_resets(mode) for mode in self.modes):
            found.append(limit_masked_resets())
        left_out = [base for base in DEFAULT_BASES if base not in self.bases]
        if left_out:
            found.append(limit_bases(self.bases, left_out))
        return tuple(found)

    def record(self) -> WrapperReport:
        """Record this proof for :attr:`wrapper_class`, in this process: from now
        on :func:`vecmode.check_stack` reports its layers as *verified* in the modes
        proved right or refused (instead of *declared* / *inherited*).

        The evidence belongs to that exact class, not to its subclasses, and
        lapses if the class's declaration changes (``vecmode.register``). Record
        where the stack is checked, e.g. in your test suite before
        ``vecmode.assert_compatible(envs, verified=True)``.

        >>> import gymnasium as gym
        >>> import vecmode
        >>> from vecmode.testing import check_wrapper
        >>> @vecmode.supports(*vecmode.MODES)
        ... class Twice(gym.vector.VectorWrapper):
        ...     pass
        >>> vecmode.registry.evidence(Twice).value
        'declared'
        >>> check_wrapper(Twice).record().summary
        'Twice: right in NextStep, SameStep, Disabled (15 runs, 351 transitions compared)'
        >>> vecmode.registry.evidence(Twice).value
        'verified'

        Returns:
            The report itself.

        Raises:
            ValueError: the factory built a stack of several wrappers (record a
                check of each class alone), or the class declares no modes.
        """
        if self.wrapper_class is None:
            raise ValueError(record_not_one_class(self.wrapper, self.layers))
        for base in DEFAULT_BASES:
            if base not in self.bases and self._builds_over(base):
                raise ValueError(record_left_out_base(self.wrapper, base))
        registry.record_verified(
            self.wrapper_class, (*self.modes, *self.refused), self.summary
        )
        return self

    def _builds_over(self, base: str) -> bool:
        """Whether the factory builds its wrapper over ``base`` in a proved mode
        (where it does, a proof that left that base out does not cover it)."""
        if self._factory is None:
            return False
        for mode in self.modes:
            envs = _base(base, mode, self._kinds)
            try:
                self._factory(envs).close()
            except Exception:  # refused there, or cannot wrap it
                envs.close()
                continue
            return True
        return False

    @property
    def summary(self) -> str:
        """One line: the modes proved and how much was compared."""
        modes = ", ".join(mode.value for mode in self.modes)
        return (
            f"{self.wrapper}: right in {modes} ({len(self.runs)} runs, "
            f"{self.transitions} transitions compared)"
        )

    def __str__(self) -> str:
        lines = [self.summary]
        declared = [m for m in self.refused if m not in self.refusals]
        if declared:
            refused = ", ".join(mode.value for mode in declared)
            lines.append(f"refused at construction, as declared: {refused}")
        for mode, why in self.refusals.items():
            lines.append(
                f"refused {mode.value} at construction, by its own constructor: {why}"
            )
        if self.batch_dependent:
            lines.append(
                "batch-dependent: values compared across modes where episodes end "
                "together; kinds, actions and flags everywhere"
            )
        lines += [f"limits: {limit}" for limit in self.limits]
        lines += [f"  {run}" for run in self.runs]
        return "\n".join(lines)


# ------------------------------------------------------------------- check
def _name(factory: Any) -> str:
    """The class's name, or a function's (until it builds a wrapper: then the
    wrapper's class name)."""
    if isinstance(factory, type):
        return factory.__name__
    return getattr(factory, "__name__", None) or type(factory).__name__


def _build(factory: WrapperFactory, envs: VectorEnv, who: str) -> VectorEnv:
    wrapped = factory(envs)
    if not isinstance(wrapped, VectorEnv):
        raise TypeError(conformance_not_a_vector_env(who, wrapped))
    return wrapped


def check_wrapper(
    factory: WrapperFactory,
    *,
    modes: Iterable[ModeLike] | None = None,
    obs_type: str = "box",
    action_type: str = "discrete",
    info_type: str = "numeric",
    render_mode: str | None = None,
    wrappers: Sequence[Callable[[gym.Env], gym.Env]] = (),
    num_envs: int = 3,
    transitions: int = 9,
    seed: int = 0,
    batch_dependent: bool | None = None,
    bases: Iterable[str] | None = None,
    compare_info: Callable[[dict[str, Any]], Any] | None = None,
    env_infos: bool = True,
) -> WrapperReport:
    """Prove a vector wrapper right in every mode it declares; see the module doc.

    Args:
        factory: builds the wrapper over a vector env: the wrapper class itself,
            or a callable such as ``lambda env: MyWrapper(env, k=3)``; it may
            build a whole stack.
        modes: the modes to prove. Default: the modes the wrapper declares
            (``@vecmode.supports`` or ``vecmode.register``). Every other mode
            the wrapper does not declare must be refused at construction.
        obs_type: the test sub-envs' observations: ``"box"``, ``"dict"``,
            ``"tuple"``, ``"discrete"`` or ``"image"`` (see
            :class:`~vecmode.testing.ScheduledEnv`).
        action_type: ``"discrete"`` (``Discrete(3)``) or ``"box"``.
        info_type: ``"numeric"`` or ``"rich"`` infos.
        render_mode: the test sub-envs' render mode: None, or ``"rgb_array"``
            (frames that say which sub-env, episode and step they show), for
            wrappers that render.
        wrappers: single-env wrappers around each test sub-env, innermost first
            (as ``make_vec``'s), e.g. ``[vecmode.wrappers.FinalFrameInfo]``.
        num_envs: sub-envs per run (at least 2, so batches mix sub-envs).
        transitions: real transitions compared per sub-env and run.
        seed: the reset seed and the seed of the action queues.
        batch_dependent: whether the wrapper's values depend on which sub-envs'
            events share a call (statistics pooled over the batch). Default: the
            wrapper's ``batch_dependent`` attribute, else False.
        bases: the base vector envs to run over, by name (keys of
            :data:`BASES`). Default: :data:`DEFAULT_BASES`, the two in
            Gymnasium's layout: ``"vecmode.SyncVectorEnv"`` (with its autoreset
            policy) and ``"gymnasium.vector.SyncVectorEnv"``. A wrapper that
            needs vecmode's core (like :class:`vecmode.NextStepAutoreset`) passes
            ``["vecmode.SyncVectorEnv"]``; an adapter of ALE's dense final
            observations adds ``"vecmode.testing.DenseFinalObsVectorEnv"``
            (:class:`vecmode.testing.DenseFinalObsVectorEnv`; it reports no final
            infos, so an ended step's infos are not compared over it): the same
            runs over it and over Gymnasium's env prove the translation.
        compare_info: what of a sub-env's info must agree across modes at each
            real transition, as a function of its info dict: the call's info for
            that sub-env, merged over the ended step's ``final_info`` where the
            mode puts it there (SAME_STEP), so the keys a wrapper writes at an
            episode's end are found in every mode. For example
            ``lambda info: info.get("episode", {}).get("l")`` for episode lengths.
            Whatever it is, the sub-envs' own step count (their info's
            :data:`vecmode.testing.envs.STEP_INFO_KEYS` key) is compared too (see ``env_infos``). Not
            compared at a transition the caller cut with a masked reset.
        env_infos: compare the sub-envs' own step count at every real transition
            (default): a wrapper must pass the env's infos on, ``final_info``
            included, in every mode. False for a wrapper that removes or
            rewrites the env's infos on purpose.

    Returns:
        A :class:`WrapperReport`.

    Raises:
        AssertionError: the wrapper is not right in a declared mode, or accepts an
            undeclared one; the message names the run, call, sub-env and field,
            the expected value and the one found.
        TypeError, ValueError: bad arguments (not a factory, an unknown
            ``obs_type``, ``num_envs`` < 2, a wrapper declaring no modes with no
            ``modes`` given).
    """
    who = _name(factory)
    _check_arguments(factory, num_envs, transitions, bases)
    # bad kinds raise ValueError here, naming the choices
    ScheduledEnv(
        obs_type=obs_type,
        action_type=action_type,
        info_type=info_type,
        render_mode=render_mode,
    )
    checker = _Checker(
        factory,
        who,
        list(DEFAULT_BASES) if bases is None else list(bases),
        _schedules(num_envs, transitions),
        {
            "num_envs": num_envs,
            "obs_type": obs_type,
            "action_type": action_type,
            "info_type": info_type,
            "render_mode": render_mode,
            "wrappers": tuple(wrappers),
        },
    )
    checker.build_in_every_mode()
    to_prove = checker.modes_to_prove(modes)
    checker.check_modes_to_prove_are_accepted(to_prove)
    if batch_dependent is None:
        batch_dependent = checker.batch_dependent(to_prove[0])
    queues = checker.action_queues(to_prove[0], seed)
    runs, compared = checker.check_same_transitions_in_every_mode(
        to_prove,
        queues,
        transitions,
        seed,
        batch_dependent,
        _with_env_info(STEP_INFO_KEYS[info_type], compare_info)
        if env_infos
        else compare_info,
    )
    checker.check_undeclared_modes_are_refused(to_prove)
    return WrapperReport(
        checker.who,
        to_prove,
        tuple(m for m in MODES if m in checker.refusals),
        tuple(runs),
        compared,
        bool(batch_dependent),
        checker.built,
        MappingProxyType(checker.own_refusals),
        checker.layers,
        tuple(checker.over),
        factory,
        MappingProxyType(checker.kinds),
    )


_HINT_MODES = (
    "The same real transitions must come out in every declared mode: final "
    "observations (info['final_obs'] in SAME_STEP) transformed like the "
    "others, statistics counting each real step once (not NEXT_STEP's reset "
    "step), state cleared for the sub-envs of a masked reset. (A wrapper whose "
    "values depend on which sub-envs share a call, such as statistics pooled "
    "over the batch, declares batch_dependent = True: its values are then "
    "compared only where episodes end together.)"
)
_HINT_ENV_INFOS = (
    "A wrapper passes the env's infos on, in every mode: in SAME_STEP the ended "
    "step's info is in info['final_info'] (with info['_final_info']). A wrapper "
    "that removes or rewrites the infos on purpose: check_wrapper(..., "
    "env_infos=False) (vecmode conform --no-env-infos)."
)
_HINT_CUTS = (
    "An episode cut by reset(options={'reset_mask': ...}) must be followed by "
    "the same events as one the env truncated there. A difference at the cut "
    "itself (the episode's last observation) is a final observation "
    "(info['final_obs'] in SAME_STEP, where the env truncated) not transformed "
    "like the observations; one after it is state the wrapper keeps across the "
    "masked reset: clear the sub-env's state on a masked reset."
)
_HINT_BASES = (
    "The same mode over two base envs must give the same events. One known "
    "difference between them: Gymnasium's vector envs pop 'reset_mask' from "
    "the options dict passed to reset(), vecmode's leave it there, so a "
    "wrapper that reads options['reset_mask'] after passing the options down "
    "sees a partial reset as a full one over Gymnasium's envs: read it before."
)

_HINT_OTHERS_KEPT = (
    "A masked reset returns the whole batch, the sub-envs it did not reset at the "
    "observation last returned for them (as Gymnasium's vector envs do): "
    "transform every row the env returns, as after a step, and give the rows it "
    "did not reset the values the call before gave them (a wrapper whose "
    "statistics the reset rows update normalises the others as before the "
    "update), so that a sub-env acts on the observation it was last given."
)
_HINT_RESET_STEP = (
    "NEXT_STEP's reset step is no transition: the env returns reward 0 and both "
    "flags False there, and a wrapper keeps them so (a reward transform like "
    "r + 1 would invent a reward for it; vecmode.wrappers.RewardWrapper leaves "
    "those rows alone, and vecmode.modes.BoundaryTracker tells which they are)."
)
_HINT_DENSE = (
    "Over vecmode.testing.DenseFinalObsVectorEnv, SameStep's final observations "
    "come as ALE's: one dense array in info['final_obs'], a row for every sub-env "
    "(stale where no episode ended), no mask, no final infos. An adapter takes the "
    "rows of the sub-envs whose episode ended in this step (terminated or "
    "truncated) into Gymnasium's layout: final_obs, _final_obs, final_info, "
    "_final_info (vecmode.modes.from_dense_finals does it)."
)


def _base(
    name: str,
    mode: AutoresetMode,
    kinds: Mapping[str, Any],
    schedule: _Schedule | None = None,
) -> VectorEnv:
    """The base env ``name`` in ``mode``, over test sub-envs of ``kinds`` (as
    ``check_wrapper`` was given them) on ``schedule`` (default: theirs)."""
    rest = dict(kinds)
    num_envs, obs_type = rest.pop("num_envs"), rest.pop("obs_type")
    lengths, truncate = (
        (None, None) if schedule is None else (schedule.lengths, schedule.truncate)
    )
    fns = scheduled_env_fns(num_envs, lengths, truncate, obs_type, **rest)
    return BASES[name](fns, mode)


def _check_arguments(
    factory: Any, num_envs: Any, transitions: Any, bases: Iterable[str] | None
) -> None:
    if not callable(factory):
        raise TypeError(conformance_factory(factory))
    if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 2:
        raise ValueError(conformance_count("num_envs", num_envs, 2))
    if (
        isinstance(transitions, bool)
        or not isinstance(transitions, int)
        or transitions < 1
    ):
        raise ValueError(conformance_count("transitions", transitions, 1))
    if isinstance(bases, str):  # one name, not a list of them
        raise ValueError(conformance_bases([bases], list(BASES)))
    over = list(DEFAULT_BASES) if bases is None else list(bases)
    if not over or any(name not in BASES for name in over):
        raise ValueError(conformance_bases(over, list(BASES)))


class _Checker:
    """The property checks :func:`check_wrapper` makes, each with its own failure
    message (in the spirit of dm_env's ``EnvironmentTestMixin``)."""

    def __init__(
        self,
        factory: WrapperFactory,
        who: str,
        over: list[str],
        schedules: tuple[_Schedule, ...],
        kinds: dict[str, Any],
    ) -> None:
        self.factory = factory
        self.who = who
        self.over = over
        self.schedules = schedules
        self.kinds = kinds
        #: the wrapper as built over each mode it accepts, and its refusals
        self.accepted: dict[AutoresetMode, VectorEnv] = {}
        self.refusals: dict[AutoresetMode, Exception] = {}
        #: the class's own errors when built (a bad argument, or its own refusal)
        self.raised: dict[AutoresetMode, Exception] = {}
        #: how the undeclared modes it raised in were refused, for the report
        self.own_refusals: dict[AutoresetMode, str] = {}
        self.declared: frozenset[AutoresetMode] | None = (
            supported_modes(factory) if isinstance(factory, type) else None
        )
        #: the one class the factory builds over the base env (None: a stack)
        self.built: type | None = None
        self.layers = 1

    def base(self, name: str, mode: AutoresetMode, schedule: _Schedule) -> VectorEnv:
        return _base(name, mode, self.kinds, schedule)

    def build(
        self, mode: AutoresetMode, schedule: _Schedule | None = None
    ) -> VectorEnv:
        """The wrapper over the first base in ``mode``."""
        schedule = self.schedules[0] if schedule is None else schedule
        return _build(self.factory, self.base(self.over[0], mode, schedule), self.who)

    def build_in_every_mode(self) -> None:
        """Which modes the wrapper accepts when built, and which it declares."""
        for mode in MODES:
            envs = self.base(self.over[0], mode, self.schedules[0])
            try:
                wrapped = _build(self.factory, envs, self.who)
            except IncompatibleModeError as error:
                self.refusals[mode] = error
                envs.close()
                continue
            except Exception as error:  # a bad argument, or its own refusal of mode
                self.raised[mode] = error
                envs.close()
                continue
            self.accepted[mode] = wrapped
            if self.declared is None:
                self.declared = supported_modes(wrapped)
            self.layers = _layers_over(wrapped, envs)
            self.built = type(wrapped) if self.layers == 1 else None
        if not self.accepted and self.raised:  # it cannot be built: caller's error
            raise next(iter(self.raised.values()))
        for wrapped in self.accepted.values():
            if not isinstance(self.factory, type):  # a function: by what it builds
                self.who = type(wrapped).__name__
            wrapped.close()

    def modes_to_prove(
        self, modes: Iterable[ModeLike] | None
    ) -> tuple[AutoresetMode, ...]:
        if self.declared is None and modes is None:
            raise ValueError(conformance_undeclared(self.who))
        to_prove = (
            tuple(as_mode(m) for m in modes)
            if modes is not None
            else tuple(m for m in MODES if self.declared and m in self.declared)
        )
        if not to_prove:
            raise ValueError(conformance_no_modes(self.who))
        return to_prove

    def check_modes_to_prove_are_accepted(
        self, to_prove: tuple[AutoresetMode, ...]
    ) -> None:
        """A declared mode, or one to prove, is built without error; the class's
        own error in another mode counts as its refusal of that mode."""
        for mode, own in self.raised.items():
            if mode in to_prove or (
                self.declared is not None and mode in self.declared
            ):
                raise _fail(
                    self.who,
                    f"built over a {mode.value} env",
                    conformance_build_raised(mode, own),
                ) from own
            self.refusals[mode] = own
            self.own_refusals[mode] = f"{type(own).__name__}: {own}"
        for mode in to_prove:
            if mode in self.refusals:
                raise _fail(
                    self.who,
                    f"built over a {mode.value} env",
                    f"refused a mode to prove: {self.refusals[mode]}",
                )

    def batch_dependent(self, mode: AutoresetMode) -> bool:
        wrapped = self.build(mode)
        try:
            found = _attribute(wrapped, "batch_dependent")
            if found is not None:
                return bool(found)
            # Gymnasium's statistics wrappers pool the batch but do not say so
            cls = type(wrapped)
            return f"{cls.__module__}:{cls.__qualname__}" in BATCH_DEPENDENT
        finally:
            wrapped.close()

    def action_queues(self, mode: AutoresetMode, seed: int) -> list[list[Any]]:
        """Seven actions per sub-env, sampled from the wrapper's action space."""
        wrapped = self.build(mode)
        single = wrapped.single_action_space
        wrapped.close()
        single.seed(seed)
        return [
            [single.sample() for _ in range(7)] for _ in range(self.kinds["num_envs"])
        ]

    def run(
        self,
        name: str,
        mode: AutoresetMode,
        schedule: _Schedule,
        label: str,
        drive_args: tuple[Any, ...],
    ) -> _Run:
        base = self.base(name, mode, schedule)
        base_keeps_options = keeps_options(base)
        below = _Below(base)
        try:
            wrapped = _build(self.factory, base, self.who)
        except IncompatibleModeError as error:
            raise _fail(
                self.who,
                label,
                f"refused to be built although it accepts {mode.value} over "
                f"{self.over[0]}: {error}",
                conformance_bases_hint(self.over[0]),
            ) from error
        found = declaration(wrapped)
        produces = found.output if found is not None else None
        try:
            queues, transitions, seed, compare_info, _ = drive_args
            return _drive(
                wrapped,
                produces or mode,
                schedule,
                queues,
                transitions,
                seed,
                label,
                self.who,
                compare_info,
                name not in _DENSE_LAYOUT,
                base_keeps_options,
                _says_copy_false(wrapped, base),
                below,
            )
        finally:
            wrapped.close()

    def check_same_transitions_in_every_mode(
        self,
        to_prove: tuple[AutoresetMode, ...],
        queues: list[list[Any]],
        transitions: int,
        seed: int,
        batch_dependent: bool,
        compare_info: Callable[[dict[str, Any]], Any] | None,
    ) -> tuple[list[str], int]:
        """Mode equivalence: every declared mode, over every base and schedule,
        gives the same real transitions; an episode cut by a masked reset gives
        what one the env truncated there gives."""
        runs: list[str] = []
        compared = 0
        cut_runs: dict[AutoresetMode, _Run] = {}
        who = self.who
        for schedule in self.schedules:
            reference: _Run | None = None
            per_mode: dict[AutoresetMode, _Run] = {}
            truncated = schedule is self.schedules[2]
            values = schedule is self.schedules[0] or not batch_dependent
            for mode in to_prove:
                for name in self.over if not truncated else self.over[:1]:
                    label = f"[{mode.value} over {name}, {schedule.name}]"
                    run = self.run(
                        name,
                        mode,
                        schedule,
                        label,
                        (queues, transitions, seed, compare_info, batch_dependent),
                    )
                    runs.append(label)
                    if truncated:  # the same mode with cuts instead of truncations
                        compared += _compare(
                            run, cut_runs[mode], transitions, values, who, _HINT_CUTS
                        )
                    elif mode in per_mode:  # same mode, other base: same batching
                        hint = _HINT_DENSE if name in _DENSE_LAYOUT else _HINT_BASES
                        compared += _compare(
                            per_mode[mode], run, transitions, True, who, hint
                        )
                    else:
                        per_mode[mode] = run
                        if any(schedule.cuts):
                            cut_runs[mode] = run
                        if reference is None:
                            reference = run
                        else:
                            compared += _compare(
                                reference, run, transitions, values, who, _HINT_MODES
                            )
        return runs, compared

    def check_undeclared_modes_are_refused(
        self, to_prove: tuple[AutoresetMode, ...]
    ) -> None:
        if self.declared is None:
            return
        for mode in self.accepted:
            if mode not in self.declared and mode not in to_prove:
                found = declaration(type(self.accepted[mode]))
                if found is not None and mode in found.wrong:
                    # a class vecmode does not own, accepting a mode it is
                    # known to get wrong (Gymnasium's: refused under guard())
                    raise _fail(
                        self.who,
                        f"built over a {mode.value} env",
                        conformance_known_wrong(mode, found.wrong[mode]),
                        found.instead,
                    )
                raise _fail(
                    self.who,
                    f"built over a {mode.value} env",
                    f"accepted {mode.value}, which it does not declare; an "
                    "undeclared mode must be refused at construction",
                    "Classes declared with @vecmode.supports or vecmode.register "
                    "refuse other modes when built; Gymnasium's own wrappers do so "
                    "only under vecmode.guard().",
                )


def _says_copy_false(wrapped: VectorEnv, base: VectorEnv) -> bool:
    """Whether a layer the factory built over ``base`` says that it hands out
    its observation buffer, which later calls write into: ``copy = False``, as
    Gymnasium's vector envs say it."""
    for layer in layers(wrapped, limit=10_000):
        if layer is base:
            return False
        if getattr(layer, "copy", None) is False:
            return True
    return False


def _layers_over(wrapped: VectorEnv, base: VectorEnv) -> int:
    """How many wrappers ``wrapped`` stacks over ``base``."""
    count = 0
    env: Any = wrapped
    while env is not base and env is not None and count < 10_000:
        count += 1
        env = getattr(env, "env", None)
    return count


def episode_statistics(info: dict[str, Any]) -> dict[str, float | int] | None:
    """The episode statistics of a transition's info, for ``compare_info``:
    ``{"return": r, "length": l}`` from ``info["episode"]`` (what
    ``RecordEpisodeStatistics`` writes at an episode's end, Gymnasium's and
    vecmode's), None elsewhere.

    >>> from vecmode.testing import check_wrapper, episode_statistics
    >>> from vecmode.wrappers import RecordEpisodeStatistics
    >>> check_wrapper(RecordEpisodeStatistics, compare_info=episode_statistics).modes
    (<AutoresetMode.NEXT_STEP: 'NextStep'>, <AutoresetMode.SAME_STEP: 'SameStep'>, <AutoresetMode.DISABLED: 'Disabled'>)
    """
    episode = info.get("episode")
    if not isinstance(episode, dict) or "r" not in episode or "l" not in episode:
        return None
    return {
        "return": float(np.asarray(episode["r"])),
        "length": int(np.asarray(episode["l"])),
    }


def _attribute(env: Any, name: str) -> Any:
    """``name`` on the outermost wrapper that has it (without forwarding)."""
    while env is not None:
        if any(name in vars(cls) for cls in type(env).__mro__):
            return getattr(env, name)
        env = getattr(env, "env", None)
    return None


class WrapperConformance:
    """A test mixin, in the spirit of dm_env's ``EnvironmentTestMixin``.

    Mix it into a pytest test class (or a ``unittest.TestCase``) and define
    :meth:`make_wrapper`; ``check_options`` holds :func:`check_wrapper`'s other
    arguments. The class gains ``test_wrapper_conforms``.

    >>> import vecmode
    >>> from vecmode.testing import WrapperConformance
    >>> from vecmode.wrappers import ClipReward
    >>> class TestClipReward(WrapperConformance):
    ...     def make_wrapper(self, env):
    ...         return ClipReward(env, 0.0, 1.0)
    >>> TestClipReward().test_wrapper_conforms()  # what pytest runs
    """

    #: Keyword arguments for :func:`check_wrapper` (``modes``, ``obs_type``, ...).
    check_options: ClassVar[dict[str, Any]] = {}

    def make_wrapper(self, env: VectorEnv) -> VectorEnv:
        """Build the wrapper (or stack) under test over ``env``."""
        raise NotImplementedError(
            f"{type(self).__name__} must define make_wrapper(self, env) returning "
            "the wrapper under test built over env"
        )

    def test_wrapper_conforms(self) -> None:
        """The wrapper is right in every mode it declares and refuses the others."""
        self.conformance_report = check_wrapper(self.make_wrapper, **self.check_options)


# ------------------------------------------------------------------ messages
def conformance_factory(got: Any) -> str:
    return (
        f"check_wrapper needs a wrapper class or a callable env -> wrapped env, "
        f"got {got!r}; e.g. check_wrapper(MyWrapper) or "
        f"check_wrapper(lambda env: MyWrapper(env, k=3))"
    )


def conformance_not_a_vector_env(who: str, got: Any) -> str:
    return (
        f"check_wrapper({who}): the factory returned {type(got).__name__}, not a "
        f"gymnasium.vector.VectorEnv; it must return the wrapped vector env"
    )


def conformance_count(name: str, got: Any, least: int) -> str:
    return f"check_wrapper: {name} must be an int >= {least}, got {got!r}"


def conformance_undeclared(who: str) -> str:
    return (
        f"check_wrapper({who}): the wrapper declares no autoreset modes, so there "
        f"is nothing to prove; declare them with @vecmode.supports(...) (or "
        f"vecmode.register for a class you don't own), or pass modes=[...]"
    )


def conformance_no_modes(who: str) -> str:
    return (
        f"check_wrapper({who}): no mode to prove (modes=[] or a declaration with "
        f"no supported mode)"
    )


def conformance_bases(got: list[str], known: list[str]) -> str:
    return (
        f"check_wrapper: bases must be a list naming one or more of "
        f"{', '.join(map(repr, known))}; got {got!r}"
    )


def limit_one_mode(mode: AutoresetMode) -> str:
    return (
        f"proved in {mode.value} alone: its runs are compared with each other "
        f"(over two base envs, episodes cut against the same ones truncated by the "
        f"env), not with another mode's, so an error common to them all is not "
        f"seen; declare and prove more modes for a stronger proof."
    )


def limit_masked_resets() -> str:
    return (
        "every mode proved has the caller reset ended sub-envs: a masked reset "
        "is compared only with another masked reset, so state that "
        "reset(options={'reset_mask': m}) should clear and the wrapper keeps is "
        "not seen; test that yourself, or prove a mode where the env resets."
    )


def limit_bases(bases: tuple[str, ...], left_out: list[str]) -> str:
    return (
        f"run over {', '.join(bases)} only, not over {', '.join(left_out)}; record() "
        f"refuses this proof if the wrapper can be built over those."
    )


def record_left_out_base(who: str, base: str) -> str:
    return (
        f"{who} was proved over some base envs only, but it can also be built over "
        f"{base}: record a proof that covers it (check_wrapper(..., bases=None), "
        f"or name {base!r} in bases), or do not record."
    )


def record_not_one_class(who: str, layers: int) -> str:
    return (
        f"check_wrapper({who}) proved a stack of {layers} wrappers, not one class; "
        f"record a check_wrapper run of each class alone."
    )


def conformance_build_raised(mode: AutoresetMode, error: BaseException) -> str:
    return (
        f"raised {type(error).__name__} there, in {mode.value}, a mode it declares "
        f"(or was asked to prove): {error}"
    )


def conformance_known_wrong(mode: AutoresetMode, what: str) -> str:
    return (
        f"accepted {mode.value}, in which vecmode's registry records it as wrong: "
        f"{what} (Gymnasium's own wrappers refuse such a mode only under "
        f"vecmode.guard())"
    )


def conformance_bases_hint(accepted: str) -> str:
    return (
        f"If the wrapper can wrap only some base envs, run it over those: "
        f"check_wrapper(..., bases=[{accepted!r}]) (vecmode conform --bases "
        f"{accepted})."
    )


def conformance_reset_step(reward: Any, terminated: bool, truncated: bool) -> str:
    return (
        f"NEXT_STEP's reset step (the call after the sub-env's episode ended) "
        f"returned reward {reward}, terminated {terminated}, truncated "
        f"{truncated}: expected reward 0, terminated False, truncated False"
    )


def conformance_partial_reset_hint() -> str:
    return (
        "A wrapper must handle reset(options={'reset_mask': mask}), a partial "
        "reset, in every mode it declares: DISABLED relies on it, and NEXT_STEP "
        "and SAME_STEP envs accept it too; clear only the masked sub-envs' state."
    )


def conformance_options_changed(given: str, now: str) -> str:
    return f"reset() changed the caller's options: {given} became {now}"


def conformance_mask_written(given: str, now: str) -> str:
    return f"reset() wrote into the caller's reset_mask array: {given} became {now}"


def conformance_options_hint() -> str:
    return (
        "A wrapper leaves the options it is given as they were: the caller keeps "
        "them and may use them again (a layer above may read reset_mask after "
        "its own reset). Pass a copy down, options = dict(options), and never "
        "write into options['reset_mask']."
    )


def conformance_changed_later(part: str, by: str | None) -> str:
    later = "a later call" if by is None else f"a later call ({by})"
    return f"what was returned here ({part}) was changed by {later}"


def conformance_wrote_below(
    part: str, returned: str, found: str, by: str | None
) -> str:
    when = "in this call" if by is not None else "in a later call"
    return (
        f"the wrapper wrote into what the env below returned to it ({part}): "
        f"{returned} became {found} {when}"
    )


def conformance_wrote_below_hint() -> str:
    return (
        "Transform into a new array (np.clip(x, lo, hi), x * 2), never into the "
        "one the wrapped env returned (x *= 2, x[i] = ..., out=x): the env below "
        "may keep it (a core built with copy=False reuses its observation buffer; "
        "a layer that logs or stores transitions holds what it returned)."
    )


def conformance_changed_later_hint() -> str:
    return (
        "Return new arrays (and a new info dict), not a buffer or an array of "
        "the wrapper's state that a later call writes into: a caller keeps what "
        "step() and reset() return (a rollout buffer, "
        "vecmode.TransitionCollector's transitions)."
    )
