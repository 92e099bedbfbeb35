"""Checking a built stack: :func:`check_stack` and its :class:`CompatibilityReport`,
:func:`assert_compatible`, :func:`require_mode`."""

from __future__ import annotations

import contextlib
import contextvars
import functools
import itertools
import textwrap
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any, overload

from gymnasium.vector import (
    AutoresetMode,
    VectorActionWrapper,
    VectorEnv,
    VectorRewardWrapper,
    VectorWrapper,
)

from vecmode import _arrays, errors, modes
from vecmode.env_classes import (
    GYMNASIUM_SEMANTICS,
    layers,
    lost_message,
    reads_final_observations,
    row_state_fault,
    semantics_of,
)
from vecmode.registry.declare import (
    NO_MODES,
    Declaration,
    convert_hint,
    declaration,
    dense_layout_fault,
    masked_reset_fault,
    not_array_native,
    string_mode_fault,
)
from vecmode.registry.proof import Evidence, Named, check_command, env_proof, proof
from vecmode.registry.table import aligned

#: The layers whose held vector envs are being checked (a cycle stops there).
_holding: contextvars.ContextVar[frozenset[int]] = contextvars.ContextVar(
    "vecmode_holding", default=frozenset()
)
_HEADER = ("#", "layer", "mode in", "accepts", "mode out", "verdict", "evidence")
_NOTE = textwrap.TextWrapper(88, subsequent_indent="    ", break_on_hyphens=False)
#: Where classes made at run time (EnvPool's) say they come from.
_NOT_AN_ORIGIN = frozenset({"abc", "builtins", "typing", "types"})


class Verdict(Named):
    """One layer's verdict in a :class:`CompatibilityReport` (see
    ``docs/registry.md``)."""

    OK = "ok"
    REFUSED = "refused"
    KNOWN_WRONG = "known-wrong"
    UNDECLARED = "undeclared"
    MISMATCH = "mismatch"


@dataclass(frozen=True)
class LayerReport:
    """One layer of a checked stack.

    Attributes:
        origin: the package the layer's class comes from.
        mode_in: the mode of the env it wraps (None for the innermost env).
        accepts: the modes it supports (None: innermost env, or undeclared).
        note: why, for any verdict but ok; for ok, a caveat where one is known.
        evidence_note: where the evidence comes from, or how to prove it.
        array_native: it takes batches of any array library (None: the
            innermost env).
        library: the array library of the batches it returns
            (``metadata["array_namespace"]``; None: not declared, NumPy).
    """

    name: str
    origin: str
    mode_in: AutoresetMode | None
    accepts: frozenset[AutoresetMode] | None
    mode_out: AutoresetMode | None
    verdict: Verdict
    note: str = ""
    evidence: Evidence = Evidence.NONE
    evidence_note: str = ""
    layer: Any = field(default=None, repr=False, compare=False)
    array_native: bool | None = None
    library: str | None = None


@dataclass(frozen=True)
class CompatibilityReport:
    """The result of :func:`check_stack`: one :class:`LayerReport` per layer,
    innermost first. ``str(report)`` is an aligned table for a terminal."""

    rows: tuple[LayerReport, ...]
    strict: bool = False

    @property
    def ok(self) -> bool:
        """No layer fails (undeclared ones fail only under ``strict``)."""
        return not self.problems

    @property
    def problems(self) -> tuple[LayerReport, ...]:
        """The layers that make the report not ok."""
        allowed = {Verdict.OK} if self.strict else {Verdict.OK, Verdict.UNDECLARED}
        return tuple(row for row in self.rows if row.verdict not in allowed)

    @property
    def verified(self) -> bool:
        """Every layer's verdict rests on runs that proved it."""
        return not self.unverified

    @property
    def unverified(self) -> tuple[LayerReport, ...]:
        """The layers whose evidence is not :attr:`Evidence.VERIFIED`."""
        return tuple(row for row in self.rows if row.evidence is not Evidence.VERIFIED)

    @property
    def mode(self) -> AutoresetMode | None:
        """The mode the whole stack runs in (the outermost layer's)."""
        return self.rows[-1].mode_out

    @property
    def seeded(self) -> bool:
        """Whether a layer's episodes follow an episode seed schedule
        (``vecmode.with_autoreset(..., episode_seeds=...)``, over a vecmode core)."""
        return any(
            hasattr(getattr(row.layer, "__dict__", {}).get("schedule"), "seeds")
            for row in self.rows
        )

    def __iter__(self) -> Iterator[LayerReport]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    @overload
    def __getitem__(self, index: int) -> LayerReport: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[LayerReport, ...]: ...

    def __getitem__(self, index: int | slice) -> LayerReport | tuple[LayerReport, ...]:
        return self.rows[index]

    def __str__(self) -> str:
        rows: list[tuple[str, ...]] = []
        notes: list[str] = []
        for position, row in enumerate(self):
            verdict = row.verdict.value
            text = " ".join(
                _sentence(part) for part in (row.note, row.evidence_note) if part
            )
            if text:
                notes.append(_NOTE.fill(f"[{len(notes) + 1}] {row.name}: {text}"))
                verdict += f" [{len(notes)}]"
            name = f"{row.name} ({row.origin})"
            cells = (_cell(row.mode_in), _cell(row.accepts), _cell(row.mode_out))
            rows.append((str(position), name, *cells, verdict, row.evidence.value))
        header: tuple[str, ...] = _HEADER
        if any(row.library not in (None, "numpy") for row in self):  # array batches
            header = (*_HEADER, "arrays")
            rows = [
                (*cells, _arrays_cell(row))
                for cells, row in zip(rows, self, strict=True)
            ]
        table = aligned(header, rows)
        return "\n".join([_summary(self), "", *table, *(["", *notes] if notes else [])])


def _cell(value: frozenset[AutoresetMode] | AutoresetMode | None) -> str:
    if value is None:
        return "-"
    if isinstance(value, AutoresetMode):
        return value.value
    return (
        "all" if value == frozenset(modes.MODES) else errors.mode_names(value) or "none"
    )


def _where(report: CompatibilityReport, row: LayerReport) -> str:
    """``in <mode>``, or ``over <library> batches`` for a refused layer that
    reads NumPy over another library."""
    below = report.rows[max(_position(report, row) - 1, 0)].library
    if row.array_native is False and below not in (None, "numpy"):
        return f"over {below} batches"
    if row.verdict is Verdict.KNOWN_WRONG and row.mode_in in (row.accepts or ()):
        rows = row_state_fault(type(row.layer), row.layer.env)
        if masked_reset_fault(row.layer) and not rows:
            return "under masked resets"
        return f"over {type(row.layer.unwrapped).__name__}"  # (its env's layout)
    return f"in {_cell(row.mode_in or row.mode_out)}"


def _position(report: CompatibilityReport, row: LayerReport) -> int:
    """``row``'s layer number (two layers may report alike)."""
    return next(i for i, each in enumerate(report.rows) if each is row)


def _arrays_cell(row: LayerReport) -> str:
    """What a layer of a stack over array batches returns, or takes."""
    if row.array_native is None:
        return row.library or "numpy"
    return f"native: {row.library}" if row.array_native else "reads NumPy"


def _summary(report: CompatibilityReport) -> str:
    if not report.ok:
        failing = "; ".join(
            f"layer {_position(report, row)} {row.name} is "
            f"{'mismatched' if row.verdict is Verdict.MISMATCH else row.verdict.value}"
            f" {_where(report, row)}"
            for row in report.problems
        )
        return f"NOT OK: {failing}"
    undeclared = sum(row.verdict is Verdict.UNDECLARED for row in report)
    layers = "layer behaves" if undeclared == 1 else "layers behave"
    caveat = f" if its {undeclared} undeclared {layers} as assumed (see notes)"
    caveat = caveat if undeclared else ""
    unproven = [
        f"layer {position} {row.name} ({row.evidence.value})"
        for position, row in enumerate(report)
        if row.evidence in (Evidence.DECLARED, Evidence.INHERITED)
    ]
    if unproven:
        caveat += f"; not verified: {', '.join(unproven)} (see notes)"
    if report.seeded:
        caveat += "; its episodes follow a seed schedule"
    lost = semantics_of(report.rows[-1].layer).lost()
    if lost:
        caveat += f"; {lost}"
    return f"ok: the stack runs {_cell(report.mode)}{caveat}"


def _sentence(text: str) -> str:
    """``text`` with a capital first letter and a full stop at the end."""
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else f"{text}."


def _origin(obj: Any) -> str:
    """The package ``obj``'s class comes from (its first base not made at run time)."""
    packages = [cls.__module__.split(".")[0] for cls in type(obj).__mro__]
    return next((p for p in packages if p not in _NOT_AN_ORIGIN), packages[0])


def _verdict(
    name: str,
    found: Declaration,
    mode_in: AutoresetMode,
    mode: AutoresetMode,
    declared: AutoresetMode | None,
) -> tuple[Verdict, str]:
    """A declared layer's verdict and note (``declared``: its metadata's mode)."""
    if mode_in in found.wrong:
        return Verdict.KNOWN_WRONG, " ".join(
            part for part in (found.wrong[mode_in], found.instead) if part
        )
    if mode_in not in found.modes:
        why = found.why(mode_in) or f"{name} does not declare {mode_in.value}"
        return Verdict.REFUSED, " ".join(part for part in (why, found.instead) if part)
    if declared is not None and declared is not mode:
        return Verdict.MISMATCH, (
            f"its metadata['autoreset_mode'] is {declared.value}, but its "
            f"declaration and the layers below give {mode.value}"
        )
    return Verdict.OK, found.caveats.get(mode_in, "")


def _final_observations(layer: Any, verdict: Verdict, note: str) -> tuple[Verdict, str]:
    """A layer's verdict and note, refused if it reads final observations its
    env loses; the approximation's note says it approximates."""
    name = type(layer).__name__
    lost = reads_final_observations(type(layer)) and lost_message(
        layer.env, name, "read final observations"
    )
    if verdict is Verdict.OK and lost:
        return Verdict.REFUSED, lost
    if "semantics" in vars(layer):  # the approximation
        note = " ".join(part for part in (note, semantics_of(layer).lost()) if part)
    return verdict, note


def _row(position: int, layer: Any, mode_in: AutoresetMode | None) -> LayerReport:
    """The report of the layer at ``position``, which gets ``mode_in``."""
    name, origin = type(layer).__name__, _origin(layer)
    try:
        declared = modes.mode_of(layer)
    except ValueError as error:  # metadata["autoreset_mode"] is no mode
        raise ValueError(f"layer {position} {name} ({origin}): {error}") from None
    namespace = _arrays.declared_namespace(layer)
    row = functools.partial(
        LayerReport, name, origin, mode_in, layer=layer, library=namespace
    )
    if mode_in is None:
        return _innermost_row(row, layer, declared)
    found = declaration(layer)
    native = found is not None and found.array_native
    row = functools.partial(row, array_native=native)
    if not native and _arrays.is_array_env(layer.env):
        note = not_array_native(type(layer), str(_arrays.declared_namespace(layer.env)))
        accepts = None if found is None else found.modes
        evidence = () if found is None else proof(type(layer), mode_in)
        return row(accepts, declared or mode_in, Verdict.REFUSED, note, *evidence)
    if found is None:
        note = (
            f"no modes declared for {name}; declare them with @vecmode.supports or "
            f"vecmode.register"
        )
        run = check_command(type(layer), every_mode=True)
        hint = f"{run} checks it in every mode and names the first property it breaks."
        mode_out = declared or mode_in
        return row(None, mode_out, Verdict.UNDECLARED, note, Evidence.NONE, hint)
    found = found.over(layer.env)
    mode = found.output or mode_in
    verdict, note = _final_observations(
        layer, *_verdict(name, found, mode_in, mode, declared)
    )
    if verdict is Verdict.OK:
        verdict, note = _layout(layer, found, mode_in, note)
    own = getattr(layer, "__dict__", {}).get("semantics")  # (an approximation's)
    evidence = _unproven(name, own, proof(type(layer), mode_in))
    return row(found.modes, mode, verdict, note, *evidence)


def _unproven(
    name: str, semantics: Any, found: tuple[Evidence, str]
) -> tuple[Evidence, str]:
    """The evidence ``found`` of layer ``name``, its note saying no check can prove
    it exact where its ``semantics`` lose or approximate final observations."""
    if found[0] is Evidence.VERIFIED or semantics is None or semantics.exact:
        return found
    how = f" (or {semantics.remedy}: then check_vector_env proves it)"
    how = how if semantics.remedy and not semantics.approximated else ""
    final = semantics.final_observation
    why = f"its final observations are {final}"
    if final in ("masked", "every-step"):
        why = f"its ending reward is {semantics.ending_reward}"
    return found[0], (
        f"no check can prove {name} exact: {why}{how}. A stack with it is never "
        f"verified (assert_compatible(envs, verified=True) refuses it)."
    )


def _innermost_row(
    row: Callable[..., LayerReport], layer: Any, declared: AutoresetMode | None
) -> LayerReport:
    """The innermost env's report (``row``: a partial :class:`LayerReport`)."""
    name, semantics = type(layer).__name__, semantics_of(layer)
    evidence = _unproven(name, semantics, env_proof(type(layer), declared))
    held = None if evidence[0] is Evidence.VERIFIED else _held(layer)
    if held is not None and (declared is None or not held[1].ok):
        key, inner = held
        note = (
            f"keeps the vector env {inner.rows[-1].name} in .{key}, not .env, so "
            f"the layers of that stack are no rows here; it says: "
            f"{_summary(inner)}. Make {name} a gymnasium.vector.VectorWrapper "
            f"(self.env = env), or check that stack alone"
        )
        verdict = Verdict.UNDECLARED if inner.ok else Verdict.KNOWN_WRONG
        return row(None, declared or inner.mode, verdict, note, *evidence)
    # a simulator's semantics: what it does at an end
    said = "" if semantics == GYMNASIUM_SEMANTICS else semantics.describe()
    if declared is not None:
        return row(None, declared, Verdict.OK, said, *evidence)
    note = (
        f"declares no metadata['autoreset_mode']; {modes.ASSUMED_MODE.value} "
        f"assumed (Gymnasium's convention)"
    )
    return row(None, modes.ASSUMED_MODE, Verdict.UNDECLARED, note, *evidence)


def _held(layer: Any) -> tuple[str, CompatibilityReport] | None:
    """The attribute and report (undeclared layers passing) of a vector env that
    ``layer`` keeps under another name than ``env``, out of the layers' walk
    (one that holds ``layer`` back is checked without it)."""
    holding = _holding.get()
    for key, value in getattr(layer, "__dict__", {}).items():
        if isinstance(value, VectorEnv) and id(value) not in holding | {id(layer)}:
            token = _holding.set(holding | {id(layer)})
            try:
                return key, check_stack(value, strict=False)
            finally:
                _holding.reset(token)
    return None


def _layout(
    layer: Any, found: Declaration, mode_in: AutoresetMode, note: str
) -> tuple[Verdict, str]:
    """An ok layer's verdict and note, wrong if it reads final observations in a
    layout its env does not give, keeps a row per sub-env where it cannot (an
    async pool; a reset that keeps pending autoresets), or misreads a mode
    declared as a string (Gymnasium's)."""
    fault = dense_layout_fault(type(layer), layer.env, mode_in, found)
    fault = fault or row_state_fault(type(layer), layer.env)
    fault = fault or string_mode_fault(type(layer), layer.env, found)
    if not fault:
        return Verdict.OK, note
    gymnasium = found.source == "gymnasium"  # (accepts it: guard() refuses)
    return (Verdict.KNOWN_WRONG if gymnasium else Verdict.REFUSED), fault


def check_stack(env: VectorEnv, *, strict: bool | None = None) -> CompatibilityReport:
    """Check every layer of a vector env stack against the modes it supports: one
    row per layer, innermost first, with its :class:`Verdict` and :class:`Evidence`.

    Args:
        strict: undeclared layers fail the report (default: :func:`vecmode.strict`).

    >>> import gymnasium as gym, vecmode
    >>> envs = vecmode.make_vec("CartPole-v1", 2, "sync", autoreset_mode="SameStep")
    >>> report = vecmode.check_stack(gym.wrappers.vector.NormalizeReward(envs))
    >>> report.ok, [row.verdict.value for row in report]
    (False, ['ok', 'ok', 'known-wrong'])
    >>> envs.close()
    """
    if not isinstance(env, VectorEnv):
        raise TypeError(errors.not_a_vector_env("vecmode.check_stack", env))
    stack = itertools.takewhile(
        lambda layer: isinstance(layer, VectorEnv), layers(env, limit=10_000)
    )
    rows: list[LayerReport] = []
    for position, layer in enumerate(reversed(list(stack))):
        rows.append(_row(position, layer, rows[-1].mode_out if rows else None))
    return CompatibilityReport(_masked_resets(rows), modes.is_strict(strict))


def _masked_resets(rows: list[LayerReport]) -> tuple[LayerReport, ...]:
    """``rows``, each ok layer known to be wrong after a masked reset made
    known-wrong if a layer above has its ended sub-envs reset by ``reset_mask``."""
    out = list(rows)
    masking = [
        q for q, r in enumerate(rows) if r.mode_out and modes.caller_resets(r.mode_out)
    ]
    for position, row in enumerate(rows):
        ok = row.verdict is Verdict.OK and row.mode_in
        fault = ok and masked_reset_fault(row.layer)
        q = next((q for q in masking if q > position), None)
        if fault and q is not None:
            sender = rows[q]
            note = (
                f"layer {q} {sender.name} runs {_cell(sender.mode_out)}, so its ended "
                f"sub-envs are reset by reset_mask, which reaches this layer. {fault}"
            )
            out[position] = replace(row, verdict=Verdict.KNOWN_WRONG, note=note)
    return tuple(out)


def assert_compatible(
    env: VectorEnv, *, strict: bool | None = None, verified: bool = False
) -> CompatibilityReport:
    """:func:`check_stack` the stack and return the report; raise
    :class:`~vecmode.IncompatibleModeError` with its table if it is not ok (or,
    with ``verified``, if a layer is not verified)."""
    report = check_stack(env, strict=strict)
    if not report.ok:
        raise errors.IncompatibleModeError(
            f"this vector env stack is not compatible with its autoreset mode or "
            f"its batches' array library:\n{report}"
        )
    if verified and not report.verified:
        raise errors.IncompatibleModeError(
            f"this vector env stack has layers whose modes nothing here proved "
            f"(assert_compatible(..., verified=True)):\n{report}"
        )
    return report


def warn_if_incompatible(env: VectorEnv, who: str, stacklevel: int = 3) -> None:
    """Warn (:class:`~vecmode.IncompatibleModeWarning`) if :func:`check_stack`
    finds ``env``'s stack not ok: what ``who`` reads of it is wrong there; or if
    an undeclared layer wraps an env whose final observations are in its infos,
    which such a layer may not transform like the observations."""
    with contextlib.suppress(ValueError):  # a layer's metadata: its own error
        report = check_stack(env)
        unsure = [
            (position, row)
            for position, row in enumerate(report)
            if row.verdict is Verdict.UNDECLARED
            and row.mode_in is not None
            and modes.final_in_info(row.mode_in)
            and not _keeps_observations(type(row.layer))
        ]
        if not report.ok:
            why = (
                "is not compatible with its autoreset mode or its batches' array "
                "library, so what it reads is wrong where a layer is"
            )
        elif unsure:
            named = ", ".join(
                f"layer {position} {row.name}" for position, row in unsure
            )
            why = (
                f"has undeclared layers over a {_cell(unsure[0][1].mode_in)} env "
                f"({named}): the transitions that end an episode are "
                f"wrong if such a layer changes observations but not "
                f"info['final_obs']. Declare its modes once the check in the notes "
                f"passes"
            )
        else:
            return
        warnings.warn(
            f"{who} was given a stack that {why}:\n{report}",
            errors.IncompatibleModeWarning,
            stacklevel=stacklevel,
        )


def _keeps_observations(cls: Any) -> bool:
    """A Gymnasium reward or action wrapper that changes only those."""
    steps = (VectorRewardWrapper.step, VectorActionWrapper.step)
    return cls.step in steps and cls.reset is VectorWrapper.reset


def require_mode(
    env: VectorEnv,
    *wanted: modes.ModeLike,
    who: str | None = None,
    strict: bool | None = None,
) -> AutoresetMode:
    """Return ``env``'s mode if it is one of ``wanted``; raise otherwise.

    An env that declares no mode warns (:class:`~vecmode.UndeclaredModeWarning`)
    and is taken as NEXT_STEP, or raises under ``strict``. ``who`` names the caller.
    """
    allowed = frozenset(modes.as_mode(mode) for mode in wanted)
    if not allowed:
        raise ValueError(NO_MODES)
    caller = who or "vecmode.require_mode"
    if not isinstance(env, VectorEnv):  # as check_stack: no mode to assume
        raise TypeError(errors.not_a_vector_env(caller, env))
    mode = modes.mode_or_assumed(env, caller, strict, stacklevel=1)
    if mode not in allowed:
        hint = convert_hint(env, mode, allowed)
        raise errors.IncompatibleModeError(
            f"{caller} needs a vector env in {errors.mode_names(allowed)}, got one "
            f"in {mode.value}. {hint}"
        )
    return mode
