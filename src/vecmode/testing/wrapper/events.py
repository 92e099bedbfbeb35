"""The events a wrapper's run is read into (per sub-env: episode starts and real
transitions), how two runs are compared, and the error a failed check raises."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode

from vecmode.testing.envs import STEP_INFO_KEYS

#: What :func:`~vecmode.testing.check_wrapper` proves, each in a few words.
PROPERTY_TEXT = {
    "builds_in_declared_modes": "built in every mode it declares, over every base",
    "refuses_undeclared_modes": "every other mode refused when built",
    "keeps_the_autoreset_mode": "metadata['autoreset_mode'] is the mode it runs in",
    "handles_every_call": "reset, step and masked resets work",
    "returns_well_formed_results": "observations in its spaces, masks, rewards, flags",
    "reset_step_stays_empty": "NextStep's reset step: reward 0, flags False, no episode in its info",
    "masked_reset_keeps_the_others": "a masked reset keeps the others' observations",
    "passes_env_infos_on": "the sub-envs' own infos reach the caller",
    "leaves_inputs_untouched": "the caller's actions, options and reset_mask kept",
    "no_writes_below": "nothing the env below returned is written into",
    "results_kept": "nothing a call returned is changed by a later call",
    "mode_equivalence_together": "the same transitions in every mode, ends together",
    "mode_equivalence_staggered": "the same, with staggered ends and masked resets",
    "same_over_every_base": "the same transitions over every base env",
    "cut_like_truncated": "an episode cut by a masked reset ends as if truncated "
    "(last reward aside)",
    "episodic": "each episode's outputs as from a fresh wrapper",
}
#: The properties, one ``test_<name>`` each (``episodic`` checked only when asked).
PROPERTIES = tuple(PROPERTY_TEXT)


class ConformanceError(AssertionError):
    """What :func:`~vecmode.testing.check_wrapper` raises: an ``AssertionError``
    naming the run, the call, the sub-env and the field; ``property`` is the
    property broken."""

    def __init__(self, message: str, property: str = "") -> None:
        super().__init__(message)
        self.property = property


class ProofArgumentError(ValueError):
    """A :func:`~vecmode.testing.check_wrapper` argument that does not fit the
    wrapper (a mode it refuses, a library it cannot take): no proof was run."""


def fail(
    prop: str, who: str, where: str, what: str, hint: str = ""
) -> ConformanceError:
    """The :class:`ConformanceError` of ``who`` at ``where``, breaking ``prop``:
    the property first, then where and what."""
    text = f"{who} breaks {prop} (expected: {PROPERTY_TEXT[prop]}).\n{where}: {what}"
    return ConformanceError(text + (f"\n{hint}" if hint else ""), prop)


#: Arrays of more elements are summarised in messages (dtype, shape, a few values).
BIG = 20


def show(value: Any) -> str:
    """A value, for messages; an array of more than ``BIG`` elements in one line."""
    if isinstance(value, np.ndarray) and value.size > BIG:
        flat = np.array2string(value.ravel(), precision=6, threshold=BIG, edgeitems=3)
        return f"{value.dtype} {value.shape} array {flat}"
    if isinstance(value, np.ndarray):
        return np.array2string(value, precision=6, threshold=12)
    return repr(value)


#: An info not compared: none asked for, or the caller cut the episode.
SKIP: Any = None
NOT_REACHED = "the sub-env's info did not reach the caller"
NO_STEP_INFO = f"<{NOT_REACHED}>"


@dataclass(frozen=True)
class Event:
    """One sub-env's ``"start"`` (``obs``: its first observation) or ``"step"``
    (``obs``: the one moved to), and the call that revealed it."""

    kind: str
    call: int
    obs: Any
    action: Any = None
    reward: Any = None
    terminated: Any = None
    truncated: Any = None
    info: Any = None
    #: The caller cut the episode here (the wrapper cannot know it would).
    cut: bool = False

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


@dataclass
class Run:
    """One run of the wrapped env: its per-sub-env events."""

    label: str
    events: list[list[Event]] = field(default_factory=list)
    transitions: int = 0
    #: The keys the wrapper adds to its step infos, and those compare_info reads.
    info_keys: set[Any] = field(default_factory=set)
    read: set[Any] = field(default_factory=set)


def with_env_info(
    info_type: str, compare_info: Callable[[dict], Any] | None
) -> Callable[[dict], Any]:
    """What is compared of an info: the step count of the test sub-envs'
    ``info_type``, and ``compare_info``'s."""
    key = STEP_INFO_KEYS[info_type]
    name = getattr(compare_info, "__name__", "<lambda>")
    name = "compare_info" if name == "<lambda>" else name
    label = getattr(compare_info, "label", f"{name}(info)")

    def pick(info: dict) -> Any:
        own = Fields({f"the sub-env's info[{key!r}]": info.get(key, NO_STEP_INFO)})
        if compare_info is not None:
            own[label] = compare_info(info)
        return own

    return pick


class Fields(dict):
    """Parts of an info compared as fields of their own, named by their keys."""


def difference(expected: Any, got: Any) -> str | None:
    """How ``got`` ("here") differs from ``expected`` ("there"), or None."""
    for kind in (dict, tuple):
        if isinstance(expected, kind) or isinstance(got, kind):
            return _container_difference(expected, got, kind)
    e, g = np.asarray(expected), np.asarray(got)
    if e.shape != g.shape:
        return f"shape {g.shape} here, {e.shape} there"
    if e.dtype != g.dtype and not (e.dtype.kind in "iub" and g.dtype.kind in "iub"):
        if e.dtype.kind in "OSU" or g.dtype.kind in "OSU":  # not two numbers' types
            return f"{show(got)} here, {show(expected)} there"
        return f"dtype {g.dtype} here, {e.dtype} there"
    if np.array_equal(e, g, equal_nan=e.dtype.kind in "fc"):
        return None
    return _big_difference(e, g) or f"{show(got)} here, {show(expected)} there"


def _big_difference(e: np.ndarray, g: np.ndarray) -> str | None:
    """Where two unequal numeric arrays of one shape and over ``BIG`` elements
    differ first, and in how many elements (None: not such arrays)."""
    if e.size <= BIG or e.dtype.kind not in "biufc" or g.dtype.kind not in "biufc":
        return None
    differ = (e != g) & ~((e != e) & (g != g))  # (NaN equals NaN)
    at = tuple(int(i) for i in np.argwhere(differ)[0])
    dtype = g.dtype if g.dtype == e.dtype else f"{g.dtype} and {e.dtype}"
    return (
        f"{dtype} {g.shape} arrays differ at {list(at)}: {g[at]} here, {e[at]} "
        f"there ({int(differ.sum())} of {g.size} elements)"
    )


def _container_difference(expected: Any, got: Any, kind: Any) -> str | None:
    """:func:`difference` of two dicts or two tuples."""
    if not (isinstance(expected, kind) and isinstance(got, kind)):
        return f"a {type(got).__name__} here, a {type(expected).__name__} there"
    if kind is dict and expected.keys() != got.keys():
        return f"keys {sorted(got)} here, {sorted(expected)} there"
    if len(expected) != len(got):
        return f"{len(got)} items here, {len(expected)} there"
    for key in expected if kind is dict else range(len(expected)):
        why = difference(expected[key], got[key])
        if why is not None:
            return f"[{key!r}]: {why}"
    return None


def _cut(events: list[Event], wanted: int) -> list[Event]:
    """The events up to the ``wanted``-th real transition."""
    kept: list[Event] = []
    steps = 0
    for event in events:
        if steps == wanted:
            break
        kept.append(event)
        steps += event.kind == "step"
    return kept


def compare_runs(
    reference: Run, run: Run, wanted: int, values: bool, context: tuple[str, str, str]
) -> int:
    """Raise where the runs' first ``wanted`` transitions per sub-env differ
    (``values``: else kinds, actions and flags only); the transitions compared.
    ``context``: the property, the wrapper's name and the hint."""
    prop, who, hint = context
    where = f"{run.label} (here) differs from {reference.label} (there)"
    compared = 0
    for i, (expected, got) in enumerate(zip(reference.events, run.events, strict=True)):
        expected, got = _cut(expected, wanted), _cut(got, wanted)
        for k, (e, g) in enumerate(zip(expected, got, strict=False)):
            name, why = _first_field_difference(e, g, values, prop)
            if why is not None:
                event = "an episode start" if e.kind == "start" else "a real transition"
                if g.cut:
                    event += ", the last before the caller's reset cut its episode"
                elif k and got[k - 1].cut:
                    event += ", by the caller's reset that cut the last"
                what = (
                    f"sub-env {i}, {event} (call {g.call} here, call {e.call} "
                    f"there), field {name}: {why}"
                )
                raise fail(prop, who, where, what, hint)
            compared += e.kind == "step"
        if len(expected) != len(got):
            what = (
                f"sub-env {i}: {len(got)} episode starts and real transitions here, "
                f"{len(expected)} there"
            )
            raise fail(prop, who, where, what, hint)
    return compared


def _first_field_difference(
    e: Event, g: Event, values: bool, prop: str
) -> tuple[str, str | None]:
    """The first field of two events that differs, and how (None: none); the
    reward at a cut not for ``cut_like_truncated``: a timeout penalty may differ."""
    g_fields = g.fields(values)
    for name, value in e.fields(values).items():
        if name == "info" and (value is SKIP or g_fields[name] is SKIP):
            continue
        if name == "reward" and g.cut and prop == "cut_like_truncated":
            continue
        name, why = _named_difference(name, value, g_fields[name])
        if why is not None:
            return name, f"{g.kind!r} here, {e.kind!r} there" if name == "kind" else why
    return "", None


def _named_difference(name: str, expected: Any, got: Any) -> tuple[str, str | None]:
    """``difference(expected, got)`` and the field's name: of an info of
    :class:`Fields`, the name of its first part that differs."""
    if type(expected) is type(got) is Fields and expected.keys() == got.keys():
        for part, value in expected.items():
            why = difference(value, got[part])
            if why is not None:
                return part, why
    return name, difference(expected, got)


#: What to look at where one mode alone differs from the others.
ODD_HINTS = {
    AutoresetMode.NEXT_STEP: "Count each real step once: not NEXT_STEP's reset "
    "step, the step after an episode's end whose action the env ignores "
    "(vecmode.modes.BoundaryTracker says which).",
    AutoresetMode.SAME_STEP: "Transform SAME_STEP's info['final_obs'] (the ended "
    "episodes' last observations) like the observations, and start the next "
    "episode's state in the step that ended the last.",
    AutoresetMode.DISABLED: "Handle reset(options={'reset_mask': mask}), which "
    "DISABLED relies on: clear the masked sub-envs' state, and theirs only.",
}


def name_the_odd_mode(
    error: ConformanceError,
    runs: dict[AutoresetMode, Run],
    wanted: int,
    exact: bool,
    hint: str,
) -> None:
    """``runs``: three modes' runs, the first two those ``error`` found different.
    Where the third agrees with one of them, raise naming the other: its hint,
    then ``hint`` (the property's)."""
    (first, there), (mode, here), (_, other) = runs.items()
    context = (error.property, "", "")

    def difference(a: Run, b: Run) -> str | None:
        try:
            compare_runs(a, b, wanted, exact, context)
        except ConformanceError as found:
            return str(found).split("\n", 1)[1]
        return None

    if difference(here, other) is None:  # the first mode's alone differs
        odd, detail = first, difference(here, there)
    elif difference(there, other) is None:
        odd, detail = mode, difference(there, here)
    else:
        return
    agreeing = " and ".join(m.value for m in runs if m is not odd)
    note = f"{agreeing} agree: {odd.value} alone differs. {ODD_HINTS[odd]}"
    head = str(error).split("\n")[0]
    raise ConformanceError(f"{head}\n{detail}\n{note}\n{hint}", error.property)


def kept(given: Any) -> Any:
    """A generator (read once) as a tuple: the arguments are read more than once."""
    return tuple(given) if isinstance(given, Iterator) else given


def listed(given: Any) -> list[Any]:
    """One name, or an iterable of them, as a list."""
    return [given] if isinstance(given, str) else list(given)
