"""The compatibility registry: which autoreset modes each wrapper supports.

A wrapper class declares the modes of the env it can wrap (and, if it changes the
mode, the mode it produces):

* :func:`supports`, a class decorator, for wrappers you write;
* :func:`register` / :func:`unregister` for classes you don't own (a colleague's,
  another library's, Gymnasium's), without editing them;
* Gymnasium 1.4's own vector wrappers come with entries that record what each
  really does in each mode (correct, refused by the class itself, or accepted but
  wrong: silently, or by failing later), established by running them (``tests/registry/test_gymnasium_verdicts.py``).

A declared class is checked when it is constructed: an env whose
``metadata["autoreset_mode"]`` it does not support raises
:class:`~vecmode.IncompatibleModeError` before the wrapper is built. Checks on
Gymnasium's classes are opt-in (:func:`guard`); importing vecmode patches nothing.

:func:`check_stack` walks a built stack from the innermost vector env outwards and returns
a :class:`CompatibilityReport`; :func:`assert_compatible` raises with that report;
:func:`require_mode` is for training code that supports only some modes.

Each verdict comes with its :class:`Evidence`: *verified* when runs proved the
class's modes (vecmode's own wrappers, by the conformance kit in vecmode's test
suite; Gymnasium's, by the runs behind their entries; a class of yours, by a
``check_wrapper(YourWrapper).record()`` in this process), *declared* when the
class declares them and nothing here proved it, *inherited* when the
declaration is a base class's.

>>> import gymnasium as gym
>>> import vecmode
>>> envs = vecmode.make_vec("CartPole-v1", num_envs=2, vectorization_mode="sync",
...     autoreset_mode="SameStep")
>>> envs = gym.wrappers.vector.RecordEpisodeStatistics(envs)
>>> vecmode.check_stack(envs).ok
True
>>> envs.close()
"""

from __future__ import annotations

import contextvars
import inspect
import itertools
import sys
import textwrap
import threading
import warnings
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from types import MappingProxyType
from typing import Any, TypeVar, overload

import wrapt
from gymnasium.vector import AutoresetMode, VectorEnv, VectorWrapper

from vecmode import errors
from vecmode._evidence import CONFORMANCE_TESTED, VERIFIED_ENVS
from vecmode._gymnasium import (
    CAVEATS_WHERE_OPTIONS_KEPT,
    GYMNASIUM_VERDICTS,
    PARTIAL_RESET_CAVEATS,
    VECMODE_EQUIVALENTS,
    WRITES_BELOW_CAVEATS,
)
from vecmode.env_classes import final_obs_layout, keeps_options, layers
from vecmode.errors import (
    IncompatibleModeError,
    convert_to,
    mode_names,
)
from vecmode.modes import (
    ASSUMED_MODE,
    MODES,
    ModeLike,
    Strict,
    as_mode,
    final_in_info,
    is_strict,
    mode_of,
    mode_or_assumed,
    strict,
)

#: Reasons keyed by mode, as ``why=`` and ``wrong=`` take them: a dict keyed by
#: mode names (``{"SameStep": "..."}``) or by ``AutoresetMode`` members.
ModeReasons = Mapping[AutoresetMode, str] | Mapping[str, str] | Mapping[ModeLike, str]

__all__ = [
    "TABLE_LEGEND",
    "CompatibilityReport",
    "Declaration",
    "Evidence",
    "Guard",
    "LayerReport",
    "Strict",
    "Verdict",
    "assert_compatible",
    "check_stack",
    "declaration",
    "declarations",
    "evidence",
    "format_table",
    "guard",
    "instrumented",
    "record_env_verified",
    "record_verified",
    "register",
    "require_mode",
    "strict",
    "supported_modes",
    "supports",
    "table_entries",
    "unregister",
]

_W = TypeVar("_W", bound=type)

_ATTRIBUTE = "__vecmode_declaration__"


@dataclass(frozen=True)
class Declaration:
    """What a wrapper class declares about the autoreset modes.

    Attributes:
        modes: the modes of the wrapped env it supports (correctly).
        output: the mode it produces, for a wrapper that changes the mode; None
            when its mode is the wrapped env's.
        wrong: modes the class itself accepts but gets wrong (silently, or by
            failing at a later step or reset), with what goes wrong (recorded
            for classes vecmode does not own).
        reasons: why a mode is not supported, where that is known.
        instead: what to do when the mode is not supported.
        source: ``"supports"`` (the decorator), ``"register"`` or ``"gymnasium"``
            (vecmode's entries for Gymnasium's own wrappers).
        caveats: for a supported mode, what the class still gets wrong in a use
            the mode allows but does not need (a partial reset), where that is
            known; the mode stays ok, and :func:`check_stack` notes the caveat.
    """

    modes: frozenset[AutoresetMode]
    output: AutoresetMode | None = None
    wrong: Mapping[AutoresetMode, str] = field(default_factory=dict)
    reasons: Mapping[AutoresetMode, str] = field(default_factory=dict)
    instead: str = ""
    source: str = "register"
    caveats: Mapping[AutoresetMode, str] = field(default_factory=dict)
    #: Whether its ``wrong`` modes and caveats come from the env below popping
    #: ``reset_mask`` from the options (see :meth:`over`).
    needs_popped_options: bool = False
    #: Its caveat (for every mode) over an env that keeps the options, if any.
    kept_options_caveat: str = ""

    def over(self, env: Any) -> Declaration:
        """This declaration for a wrapper built over ``env``: where what it gets
        wrong comes from an env that pops ``reset_mask`` from the options
        (Gymnasium's) and ``env`` keeps them (vecmode's cores), it is right in
        every mode it accepts, with :attr:`kept_options_caveat` (if any) as the
        caveat of each."""
        if not self.needs_popped_options or not keeps_options(env):
            return self
        modes = self.modes | frozenset(self.wrong)
        caveat = self.kept_options_caveat
        return replace(
            self,
            modes=modes,
            wrong=MappingProxyType({}),
            caveats=MappingProxyType(dict.fromkeys(modes, caveat) if caveat else {}),
        )

    def behaviour(self, mode: ModeLike) -> str:
        """``"ok"``, ``"refused"`` or ``"wrong"`` (accepted, but known to be wrong)."""
        mode = as_mode(mode)
        if mode in self.modes:
            return "ok"
        return "wrong" if mode in self.wrong else "refused"

    def note(self, mode: AutoresetMode) -> str:
        """What is recorded of ``mode``: why it is wrong or not supported, or
        the caveat of a supported one; empty if nothing."""
        return (
            self.wrong.get(mode) or self.reasons.get(mode) or self.caveats.get(mode, "")
        )

    def why(self, mode: AutoresetMode) -> str:
        """Why ``mode`` is not supported, as a sentence for an error message."""
        if mode in self.wrong:
            return known_wrong(mode, self.wrong[mode])
        return self.reasons.get(mode, "")


def _declare(
    modes: Iterable[ModeLike],
    output: ModeLike | None,
    wrong: ModeReasons | None,
    why: ModeReasons | None,
    instead: str | None,
    source: str,
) -> Declaration:
    accepted = frozenset(as_mode(mode) for mode in modes)
    if not accepted:
        raise ValueError(no_modes_declared())
    wrong_modes = {as_mode(mode): text for mode, text in (wrong or {}).items()}
    overlap = accepted & wrong_modes.keys()
    if overlap:
        raise ValueError(declared_both_ways(overlap))
    return Declaration(
        modes=accepted,
        output=None if output is None else as_mode(output),
        wrong=MappingProxyType(wrong_modes),
        reasons=MappingProxyType({as_mode(m): text for m, text in (why or {}).items()}),
        instead=instead or "",
        source=source,
    )


def _modes_argument(modes: ModeLike | Iterable[ModeLike]) -> list[ModeLike]:
    if isinstance(modes, AutoresetMode | str):
        return [modes]
    return list(modes)


# --- where declarations live ------------------------------------------------------

#: Classes declared by register(cls, ...).
_registered: dict[type, Declaration] = {}
#: Classes declared by register("module:Class", ...), possibly not imported yet.
_registered_by_name: dict[str, Declaration] = {}
#: Those of them whose module was imported, and the class each name resolved to.
_resolved: dict[str, type] = {}
#: Classes declared by @supports, in declaration order (for the table).
_decorated: list[weakref.ref[type]] = []
#: vecmode's entries for Gymnasium's wrappers, by "module:QualName".
_gymnasium: dict[str, Declaration] = {}


def _gymnasium_entries() -> dict[str, Declaration]:
    if not _gymnasium:
        for name, verdicts in GYMNASIUM_VERDICTS.items():
            by_mode = {as_mode(mode): verdict for mode, verdict in verdicts.items()}
            ok = [mode for mode in MODES if by_mode[mode][0] == "ok"]
            short = name.rpartition(".")[2].rpartition(":")[2]
            instead = (
                use_vecmode_wrapper(short, ok)
                if short in VECMODE_EQUIVALENTS
                else use_supported_modes(ok)
            )
            found = _declare(
                ok,
                None,
                {m: text for m, (v, text) in by_mode.items() if v == "wrong"},
                {m: text for m, (v, text) in by_mode.items() if v == "refuses"},
                instead,
                "gymnasium",
            )
            caveat = PARTIAL_RESET_CAVEATS.get(name) or WRITES_BELOW_CAVEATS.get(name)
            if caveat is not None:
                caveats = MappingProxyType(dict.fromkeys(ok, caveat))
                found = replace(found, caveats=caveats)
            if name in CAVEATS_WHERE_OPTIONS_KEPT:
                found = replace(
                    found,
                    needs_popped_options=True,
                    kept_options_caveat=CAVEATS_WHERE_OPTIONS_KEPT[name],
                )
            _gymnasium[name] = found
    return _gymnasium


def _name(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _own_declaration(cls: type) -> Declaration | None:
    found = _registered.get(cls) or cls.__dict__.get(_ATTRIBUTE)
    if found is None and cls.__module__.startswith("gymnasium."):
        found = _gymnasium_entries().get(_name(cls))
    return found


def declaration(cls_or_instance: Any) -> Declaration | None:
    """The :class:`Declaration` that applies to a wrapper class or instance.

    The nearest declaration up the class's MRO wins, so a subclass inherits its
    base's declaration until it declares its own. For one class, a
    :func:`register` call overrides a :func:`supports` decorator (until
    :func:`unregister`), and both override vecmode's entries for Gymnasium.
    """
    cls = (
        cls_or_instance if isinstance(cls_or_instance, type) else type(cls_or_instance)
    )
    for klass in cls.__mro__:
        found = _own_declaration(klass)
        if found is not None:
            return found
    return None


def supported_modes(cls_or_instance: Any) -> frozenset[AutoresetMode] | None:
    """The modes a wrapper class (or instance) supports; None if nothing is declared.

    >>> import gymnasium as gym
    >>> import vecmode
    >>> sorted(m.value for m in vecmode.supported_modes(vecmode.SameStepAutoreset))
    ['Disabled']
    >>> sorted(m.value for m in vecmode.supported_modes(gym.wrappers.vector.ClipReward))
    ['Disabled', 'NextStep', 'SameStep']
    """
    found = declaration(cls_or_instance)
    return None if found is None else found.modes


# --- evidence ------------------------------------------------------------------------


class Evidence(str, Enum):
    """What a class's declared modes rest on (a :class:`LayerReport`'s ``evidence``)."""

    #: Runs proved them: vecmode's own wrappers and policies by the conformance
    #: kit in vecmode's test suite; Gymnasium's wrappers by the runs behind
    #: vecmode's entries for them; a class of yours by
    #: ``check_wrapper(YourClass).record()`` in this process. For the innermost
    #: env: the classes vecmode's test suite probes in every mode they can be
    #: built in (vecmode's cores and SB3 bridge, Gymnasium's sync, async and
    #: CartPole vector envs, ALE's, EnvPool's), and a class of yours in the mode
    #: it declares by ``check_vector_env(factory).record()`` in this process.
    VERIFIED = "verified"
    #: The class declares its modes (``@vecmode.supports``, ``vecmode.register``;
    #: an env, its ``metadata["autoreset_mode"]``), and nothing here proved them.
    DECLARED = "declared"
    #: The class declares nothing itself: the modes are a base class's declaration,
    #: which says nothing about the subclass's own code. For the innermost env: a
    #: subclass of a verified env class (EnvPool's envs are such).
    INHERITED = "inherited"
    #: Nothing is declared.
    NONE = "none"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class _Recorded:
    """A :func:`vecmode.testing.check_wrapper` result recorded for one class."""

    declaration: Declaration
    #: the modes it proved right and those it proved refused
    modes: frozenset[AutoresetMode]
    summary: str


#: Classes proven by check_wrapper in this process (the exact class, not its
#: subclasses); an entry lapses when the class's declaration changes.
_recorded: weakref.WeakKeyDictionary[type, _Recorded] = weakref.WeakKeyDictionary()


def record_verified(cls: type, modes: Iterable[AutoresetMode], summary: str) -> None:
    """Record that check_wrapper proved ``cls`` right or refusing in ``modes``
    (what ``WrapperReport.record()`` calls)."""
    found = declaration(cls)
    if found is None:
        raise ValueError(record_undeclared(cls.__name__))
    with _lock:
        _recorded[cls] = _Recorded(found, frozenset(modes), summary)


#: Vector env classes proven by check_vector_env in this process (the exact
#: class, not its subclasses): per mode proved, the proof's summary.
_recorded_envs: weakref.WeakKeyDictionary[type, dict[AutoresetMode, str]] = (
    weakref.WeakKeyDictionary()
)


def record_env_verified(cls: type, mode: AutoresetMode, summary: str) -> None:
    """Record that check_vector_env proved that envs of ``cls`` behave as ``mode``
    (what ``VectorEnvReport.record()`` calls)."""
    with _lock:
        _recorded_envs.setdefault(cls, {})[mode] = summary


def _proof(cls: type, mode: AutoresetMode | None = None) -> tuple[Evidence, str]:
    """The evidence for ``cls``'s declaration (in ``mode``, or in every mode), and
    where it comes from, as a phrase."""
    found = declaration(cls)
    if found is None:
        return Evidence.NONE, ""
    own = _own_declaration(cls)
    if own is not None and own.source == "gymnasium":
        return Evidence.VERIFIED, evidence_gymnasium()
    if _name(cls) in CONFORMANCE_TESTED and found.source == "supports":
        return Evidence.VERIFIED, evidence_conformance_tested()
    recorded = _recorded.get(cls)
    if recorded is not None and recorded.declaration is found:
        wanted = frozenset(MODES) if mode is None else frozenset({mode})
        if wanted <= recorded.modes:
            return Evidence.VERIFIED, evidence_recorded(recorded.summary)
    if own is not None:
        return Evidence.DECLARED, evidence_declared(cls.__name__, own.source)
    # the nearest base whose modes are proven (a subclass of one of vecmode's
    # wrappers), else the base that declares them
    for base in cls.__mro__[1:]:
        if declaration(base) is found and _proof(base, mode)[0] is Evidence.VERIFIED:
            return Evidence.INHERITED, evidence_inherited(base.__name__, True)
    base = next(k for k in cls.__mro__[1:] if _own_declaration(k) is found)
    return Evidence.INHERITED, evidence_inherited(base.__name__, False)


def evidence(cls_or_instance: Any, mode: ModeLike | None = None) -> Evidence:
    """What the declared modes of a wrapper class (or instance) rest on.

    ``mode``: in that mode only (a recorded ``check_wrapper`` run may have proved
    some modes and not others); default: in every mode.

    >>> import gymnasium as gym
    >>> import vecmode
    >>> from vecmode.wrappers import NormalizeReward, StatefulWrapper
    >>> vecmode.registry.evidence(NormalizeReward).value  # vecmode's tests prove it
    'verified'
    >>> vecmode.registry.evidence(gym.wrappers.vector.NormalizeReward).value
    'verified'
    >>> class Mine(StatefulWrapper):
    ...     pass
    >>> vecmode.registry.evidence(Mine).value  # StatefulWrapper's declaration, not Mine's
    'inherited'
    """
    cls = (
        cls_or_instance if isinstance(cls_or_instance, type) else type(cls_or_instance)
    )
    return _proof(cls, None if mode is None else as_mode(mode))[0]


def _conform_hint(cls: type, declared: bool = True) -> str:
    """How to prove ``cls``: the command when it has an import path, else the
    function; for an undeclared class, how to find its modes."""
    local = "<locals>" in cls.__qualname__ or cls.__module__ == "__main__"
    path = None if local else f"{cls.__module__}:{cls.__qualname__}"
    if not declared:
        return how_to_find_modes(cls.__name__, path)
    return how_to_verify(cls.__name__, path)


def _alive(refs: list[weakref.ref[type]]) -> list[type]:
    classes = [ref() for ref in refs]
    return [cls for cls in classes if cls is not None]


def _public_path(cls: type) -> str:
    """The shortest ``package.module.Class`` path that gives ``cls``."""
    parts = cls.__module__.split(".")
    for end in range(1, len(parts)):
        module = ".".join(parts[:end])
        if getattr(sys.modules.get(module), cls.__qualname__, None) is cls:
            return f"{module}.{cls.__qualname__}"
    return f"{cls.__module__}.{cls.__qualname__}"


def declarations() -> list[tuple[str, Declaration]]:
    """Every declaration known to this process: ``(class path, declaration)``.

    vecmode's own wrappers first (with the public vecmode subclasses that inherit
    a declaration), then Gymnasium's, then those registered here.
    """
    return [(name, found) for name, found, _ in table_entries()]


def table_entries() -> list[tuple[str, Declaration, Evidence]]:
    """:func:`declarations`, with the :class:`Evidence` behind each: the rows of
    :func:`format_table` (``(class path, declaration, evidence)``)."""
    # a class defined again under the same path (a re-run notebook cell) replaces
    # the earlier one
    latest: dict[str, tuple[Declaration, Evidence]] = {}
    for cls in _alive(_decorated):
        latest[_public_path(cls)] = (cls.__dict__[_ATTRIBUTE], evidence(cls))
        for heir in _vecmode_heirs(cls):
            found = declaration(heir)
            if found is not None:
                latest.setdefault(_public_path(heir), (found, evidence(heir)))
    # the autoreset policies first, then the wrappers (whatever the import order)
    rows = [
        (name, found, proof)
        for name, (found, proof) in sorted(
            latest.items(), key=lambda row: row[0].startswith("vecmode.wrappers")
        )
    ]
    for name, found in _gymnasium_entries().items():
        module, qualname = name.split(":")
        public = (
            "gymnasium.wrappers.vector" if ".wrappers.vector." in module else module
        )
        rows.append((f"{public}.{qualname}", found, Evidence.VERIFIED))
    rows.extend(
        (_public_path(cls), found, evidence(cls)) for cls, found in _registered.items()
    )
    rows.extend(  # not imported yet (once imported, a name that did not resolve
        # to a wrapper class was warned about, and is not a row)
        (name.replace(":", "."), found, Evidence.DECLARED)
        for name, found in _registered_by_name.items()
        if name not in _resolved and name.partition(":")[0] not in sys.modules
    )
    return rows


def _vecmode_heirs(cls: type) -> list[type]:
    """vecmode's public subclasses of ``cls`` that declare nothing themselves."""
    heirs: list[type] = []
    sub: type
    for sub in cls.__subclasses__():
        if _ATTRIBUTE in sub.__dict__ or sub in _registered:
            continue
        if sub.__module__.startswith("vecmode.") and not sub.__name__.startswith("_"):
            heirs.append(sub)
        heirs.extend(_vecmode_heirs(sub))
    return heirs


#: A table cell: ok in that mode, with a caveat listed below the table.
OK_WITH_CAVEAT = "ok\u2020"

TABLE_LEGEND = (
    f"ok: correct in that mode ({OK_WITH_CAVEAT}: but for a caveat, see below). "
    "refused: raises IncompatibleModeError (vecmode's "
    "wrappers; Gymnasium's under vecmode.guard()) or the class's own error when "
    "built. WRONG: Gymnasium's class accepts the mode but is wrong there (silently, "
    "or failing at a later step); "
    "vecmode.guard() refuses it. produces: the mode a mode-changing wrapper outputs. "
    "evidence: verified (runs proved it: vecmode's wrappers by the conformance kit in "
    "vecmode's tests, Gymnasium's by the runs behind their entries, yours by a "
    "recorded check_wrapper), declared (the class says so; nothing here proved it: "
    "run vecmode conform) or inherited (from a base class's declaration)."
)


def _verdict_cell(found: Declaration, mode: AutoresetMode) -> str:
    """A cell of the table: the verdict, :data:`OK_WITH_CAVEAT` for ok with a
    caveat."""
    if mode in found.caveats:  # only supported modes have one
        return OK_WITH_CAVEAT
    return found.behaviour(mode).replace("wrong", "WRONG")


def _reasons(entries: list[tuple[str, Declaration]], markdown: bool) -> list[str]:
    lines = []
    for name, found in entries:
        for mode in MODES:
            text = found.note(mode)
            if text:
                verdict = _verdict_cell(found, mode)
                shown = f"`{name}`" if markdown else name
                lines.append(f"{shown} in {mode.value} ({verdict}): {text}")
    return lines


def format_table(*, markdown: bool = False, why: bool = False) -> str:
    """The registry as a wrapper x mode matrix (what ``vecmode table`` prints).

    ``why`` adds, below the matrix, the recorded reason for every mode that is
    not ok.

    >>> from vecmode.registry import format_table
    >>> print(format_table())  # doctest: +ELLIPSIS
    wrapper                    NextStep  SameStep  Disabled  produces  evidence
    -------...
    vecmode.NextStepAutoreset  refused   refused   ok        NextStep  verified
    ...
    """
    entries = table_entries()
    header = ("wrapper", *(mode.value for mode in MODES), "produces", "evidence")
    rows = [
        (
            f"`{name}`" if markdown else name,
            *(_verdict_cell(found, mode) for mode in MODES),
            found.output.value if found.output else "",
            proof.value,
        )
        for name, found, proof in entries
    ]
    reasons = (
        _reasons([(name, found) for name, found, _ in entries], markdown) if why else []
    )
    if markdown:
        lines = [f"| {' | '.join(row)} |" for row in (header, *rows)]
        lines.insert(1, "|" + "---|" * len(header))
        # a blank line before the list: Markdown runs a list on into the
        # paragraph above it otherwise
        notes = [TABLE_LEGEND, *[""] * bool(reasons), *[f"* {r}" for r in reasons]]
    else:
        lines = _aligned(header, rows)
        notes = [*textwrap.wrap(TABLE_LEGEND, 88), *([""] * bool(reasons)), *reasons]
    return "\n".join([*lines, "", *notes])


def _aligned(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    """Rows as left-aligned columns under a header and a rule of dashes."""
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    rule = tuple("-" * width for width in widths)
    return [
        "  ".join(
            text.ljust(width) for text, width in zip(row, widths, strict=True)
        ).rstrip()
        for row in [header, rule, *rows]
    ]


#: Held while declarations or instrumentation change (import hooks run in
#: whichever thread imports the module).
_lock = threading.RLock()


# --- checking at construction -------------------------------------------------------

#: Instrumented class -> (its own __init__ before we wrapped it, or None).
_instrumented: dict[type, Any] = {}
#: Why each class is instrumented: "supports", "register", "guard".
_because: dict[type, set[str]] = {}
#: Objects whose construction is being checked (a subclass's __init__ calling its
#: base's checked __init__ is checked once, with the subclass's declaration).
_constructing: contextvars.ContextVar[frozenset[int]] = contextvars.ContextVar(
    "vecmode_constructing", default=frozenset()
)


def _env_argument(args: Any, kwargs: Any, env_parameter: str) -> Any:
    """The env a wrapper is being built on: the first argument that is a vector
    env (whatever its position or keyword, ``*args`` / ``**kwargs`` included),
    else the one in the env's place in the signature."""
    for value in (*args, *kwargs.values()):
        if isinstance(value, VectorEnv):
            return value
    return args[0] if args else kwargs.get(env_parameter)


def _env_parameter(init: Callable[..., Any]) -> str:
    try:
        parameters = list(inspect.signature(init).parameters)
    except (TypeError, ValueError):
        return "env"
    return parameters[1] if len(parameters) > 1 else "env"


def _check_construction(cls: type, env: Any) -> None:
    """Raise if a ``cls`` wrapper may not be built on ``env``; vecmode calls this."""
    found = declaration(cls)
    if found is None or not hasattr(env, "metadata"):
        return
    found = found.over(env)
    mode = mode_or_assumed(env, cls.__name__, None, stacklevel=2)
    if mode not in found.modes:
        raise IncompatibleModeError(
            errors.incompatible_mode(
                cls.__name__,
                mode,
                found.modes,
                found.why(mode),
                found.instead or use_supported_modes(found.modes),
            )
        )
    if (
        final_in_info(mode)
        and not isinstance(getattr(cls, "final_obs_layout", None), str)
        and final_obs_layout(env) != "gymnasium"
    ):
        raise IncompatibleModeError(own_final_obs_layout(cls.__name__, env))
    library = _converted_to(env)
    if (
        library is not None
        and any(k.__module__ == "vecmode.forwarding" for k in cls.__mro__)
        and not getattr(cls, "converts_arrays", False)
    ):
        raise TypeError(converted_below(cls.__name__, library))


def _converted_to(env: Any) -> tuple[str, str] | None:
    """The array library ``env`` returns if a conversion layer in it (vecmode's or
    Gymnasium's ``ArrayConversion`` and its subclasses) makes it other than
    NumPy: ``(the layer's class name, the library)``; else None."""
    for layer in layers(env):
        target = getattr(layer, "__dict__", {}).get("_target_xp")
        if target is not None:
            name = getattr(target, "__name__", str(target))
            name = name.replace("array_api_compat.", "")
            return None if name == "numpy" else (type(layer).__name__, name)
    return None


def _instrument(cls: type, because: str) -> None:
    _because.setdefault(cls, set()).add(because)
    if cls in _instrumented:
        return
    own = cls.__dict__.get("__init__")
    env_parameter = _env_parameter(inspect.getattr_static(cls, "__init__"))

    def checked_init(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        building = _constructing.get()
        if cls not in _instrumented or id(instance) in building:
            return wrapped(*args, **kwargs)
        env = _env_argument(args, kwargs, env_parameter)
        _check_construction(type(instance), env)
        token = _constructing.set(building | {id(instance)})
        try:
            return wrapped(*args, **kwargs)
        finally:
            _constructing.reset(token)

    wrapt.wrap_function_wrapper(cls, "__init__", checked_init)
    _instrumented[cls] = own


def _release(cls: type, because: str) -> None:
    reasons = _because.get(cls, set())
    reasons.discard(because)
    if reasons or cls not in _instrumented:
        return
    own = _instrumented.pop(cls)
    del _because[cls]
    if own is None:
        delattr(cls, "__init__")
    else:
        type.__setattr__(cls, "__init__", own)


def instrumented() -> frozenset[type]:
    """The classes whose construction vecmode currently checks."""
    return frozenset(_instrumented)


# --- declaring ----------------------------------------------------------------------


def _vector_wrapper_class(cls: Any, caller: str) -> type:
    if not (isinstance(cls, type) and issubclass(cls, VectorWrapper)):
        raise TypeError(not_a_wrapper_class(caller, cls))
    return cls


@overload
def supports(
    *modes: ModeLike,
    output: ModeLike | None = None,
    why: ModeReasons | None = None,
    instead: str | None = None,
) -> Callable[[_W], _W]: ...


@overload
def supports(
    modes: Iterable[ModeLike],
    /,
    *,
    output: ModeLike | None = None,
    why: ModeReasons | None = None,
    instead: str | None = None,
) -> Callable[[_W], _W]: ...


def supports(
    *modes: Any,
    output: ModeLike | None = None,
    why: ModeReasons | None = None,
    instead: str | None = None,
) -> Callable[[_W], _W]:
    """Class decorator: the modes of the wrapped env a ``VectorWrapper`` supports.

    Building the wrapper on an env whose ``metadata["autoreset_mode"]`` is not one
    of ``modes`` raises :class:`~vecmode.IncompatibleModeError` before its
    ``__init__`` runs. A wrapper that changes the mode passes ``output`` (the mode
    it produces, which it must also put in its ``metadata``). ``why`` maps an
    unsupported mode to the reason, ``instead`` says what to do; both go into the
    error message. Subclasses inherit the declaration until they declare their own.
    The modes are given one by one (``@supports("NextStep", "Disabled")``) or as
    one list, as :func:`register` takes them.

    >>> import gymnasium as gym
    >>> import vecmode
    >>> @vecmode.supports("NextStep", "Disabled", why={"SameStep": "It skips final_obs."})
    ... class MyWrapper(gym.vector.VectorWrapper):
    ...     pass
    >>> envs = vecmode.make_vec("CartPole-v1", num_envs=2, vectorization_mode="sync",
    ...     autoreset_mode="SameStep")
    >>> MyWrapper(envs)
    Traceback (most recent call last):
    ...
    vecmode.errors.IncompatibleModeError: MyWrapper cannot wrap an env in mode SameStep: it supports NextStep, Disabled. It skips final_obs. ...
    >>> envs.close()
    """

    if len(modes) == 1 and isinstance(modes[0], type):  # @supports, no modes
        raise TypeError(supports_without_modes(modes[0]))
    given: Iterable[Any] = modes
    if (
        len(modes) == 1
        and isinstance(modes[0], Iterable)
        and not isinstance(modes[0], (str, AutoresetMode))
    ):
        given = modes[0]  # one collection of modes (any iterable), as register takes
    found = _declare(given, output, None, why, instead, "supports")

    def decorate(cls: _W) -> _W:
        _vector_wrapper_class(cls, "@vecmode.supports")
        with _lock:
            type.__setattr__(cls, _ATTRIBUTE, found)
            _decorated.append(weakref.ref(cls))
            _instrument(cls, "supports")
        return cls

    return decorate


@wrapt.synchronized(_lock)
def register(
    cls: type | str,
    modes: ModeLike | Iterable[ModeLike],
    *,
    output: ModeLike | None = None,
    wrong: ModeReasons | None = None,
    why: ModeReasons | None = None,
    instead: str | None = None,
) -> None:
    """Declare the modes of a wrapper class you don't own, and check it from now on.

    ``cls`` is the class, or ``"package.module:ClassName"`` for a class whose
    package may not be imported yet (it is checked from when it is imported).
    ``modes`` are the modes it supports; ``wrong`` records modes it accepts but gets
    wrong (with what goes wrong), which :func:`check_stack` reports as
    known-wrong. ``output``, ``why`` and ``instead`` are as for :func:`supports`.
    Registering again replaces the declaration; :func:`unregister` removes it and
    the check.

    >>> import gymnasium as gym
    >>> import vecmode
    >>> class Legacy(gym.vector.VectorWrapper):
    ...     pass
    >>> vecmode.register(Legacy, ["NextStep"])
    >>> envs = vecmode.make_vec("CartPole-v1", num_envs=2, vectorization_mode="sync",
    ...     autoreset_mode="Disabled")
    >>> Legacy(envs)
    Traceback (most recent call last):
    ...
    vecmode.errors.IncompatibleModeError: Legacy cannot wrap an env in mode Disabled: it supports NextStep. ...
    >>> vecmode.unregister(Legacy)
    True
    >>> Legacy(envs)
    <Legacy, SyncVectorEnv(CartPole-v1, num_envs=2)>
    >>> envs.close()
    """
    found = _declare(_modes_argument(modes), output, wrong, why, instead, "register")
    if isinstance(cls, str):
        module, _, qualname = cls.partition(":")
        if not module or not qualname:
            raise ValueError(class_path(cls))
        if module in sys.modules:
            _vector_wrapper_class(_named(cls), f"vecmode.register({cls!r})")
        _registered_by_name[cls] = found
        _when_imported(module)
        return
    _registered[_vector_wrapper_class(cls, "vecmode.register")] = found
    _instrument(cls, "register")


@wrapt.synchronized(_lock)
def unregister(cls: type | str) -> bool:
    """Remove a :func:`register` declaration and its check; True if there was one.

    A class's own :func:`supports` declaration (and vecmode's entry for a
    Gymnasium class, enforced under :func:`guard`) applies again afterwards.
    """
    if isinstance(cls, str):
        had = _registered_by_name.pop(cls, None) is not None
        target = _resolved.pop(cls, None)
        if target is not None:
            _registered.pop(target, None)
            _release(target, "register")
        return had
    for name in [n for n, target in _resolved.items() if target is cls]:
        del _resolved[name], _registered_by_name[name]
    had = _registered.pop(cls, None) is not None
    _release(cls, "register")
    return had


def _named(name: str) -> Any:
    """What ``"module:Qual.Name"`` names in an imported module; AttributeError
    naming what is missing if nothing."""
    target = _resolve(name)
    if target is None:
        raise AttributeError(no_such_name(name))
    return target


def _resolve(name: str) -> Any:
    """The object ``"module:Qual.Name"`` names in an imported module, or None."""
    module, _, qualname = name.partition(":")
    target: Any = sys.modules.get(module)
    for part in qualname.split("."):
        target = getattr(target, part, None)
    return target


#: Modules with an import hook installed (one per module, for the process).
_hooked: set[str] = set()


def _when_imported(module: str) -> None:
    """Instrument what is declared by name in ``module`` once it is imported."""
    if module in sys.modules:
        _instrument_named(sys.modules[module])
    elif module not in _hooked:
        _hooked.add(module)
        wrapt.register_post_import_hook(_instrument_named, module)


@wrapt.synchronized(_lock)
def _instrument_named(module: Any) -> None:
    prefix = module.__name__ + ":"
    for name in [n for n in _registered_by_name if n.startswith(prefix)]:
        target = _resolve(name)
        if not (isinstance(target, type) and issubclass(target, VectorWrapper)):
            message = (
                no_such_name(name)
                if target is None
                else not_a_wrapper_class(f"vecmode.register({name!r})", target)
            )
            warnings.warn(message, RuntimeWarning, stacklevel=2)
            continue
        _resolved[name] = target
        _registered[target] = _registered_by_name[name]
        _instrument(target, "register")
    if _guards:
        for name in [n for n in _gymnasium_entries() if n.startswith(prefix)]:
            target = _resolve(name)
            if isinstance(target, type):
                _instrument(target, "guard")


# --- guard ----------------------------------------------------------------------------

_guards: list[Guard] = []


class Guard:
    """Handle returned by :func:`guard`; :meth:`release` (or leaving a ``with``
    block) stops the checks it started."""

    @wrapt.synchronized(_lock)
    def __init__(self) -> None:
        self.active = True
        _guards.append(self)
        if len(_guards) == 1:
            for module in sorted(
                {name.partition(":")[0] for name in _gymnasium_entries()}
            ):
                _when_imported(module)

    @wrapt.synchronized(_lock)
    def release(self) -> None:
        """Stop checking Gymnasium's wrappers (unless another guard is active)."""
        if not self.active:
            return
        self.active = False
        _guards.remove(self)
        if not _guards:
            for cls in [c for c, why in _because.items() if "guard" in why]:
                _release(cls, "guard")

    def __enter__(self) -> Guard:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def guard() -> Guard:
    """Check Gymnasium's own vector wrappers against their registry entries.

    Until the returned handle is released (or its ``with`` block ends), building a
    ``gymnasium.wrappers.vector`` wrapper on an env whose mode it does not support
    (one it refuses, or accepts but gets wrong) raises
    :class:`~vecmode.IncompatibleModeError`. Modules not imported yet (the array
    conversion wrappers need optional packages) are checked from when they are.
    Importing vecmode does none of this; only ``guard()`` does.

    >>> import gymnasium as gym
    >>> import vecmode
    >>> envs = vecmode.make_vec("CartPole-v1", num_envs=2, vectorization_mode="sync",
    ...     autoreset_mode="SameStep")
    >>> with vecmode.guard():
    ...     gym.wrappers.vector.NormalizeReward(envs)
    Traceback (most recent call last):
    ...
    vecmode.errors.IncompatibleModeError: NormalizeReward cannot wrap an env in mode SameStep: ...
    >>> gym.wrappers.vector.NormalizeReward(envs)  # unchecked again
    <NormalizeReward, <SameStepAutoreset, SyncVectorEnv(CartPole-v1, num_envs=2)>>
    >>> envs.close()
    """
    return Guard()


# --- checking a stack -------------------------------------------------------------------


class Verdict(str, Enum):
    """One layer's verdict in a :class:`CompatibilityReport`."""

    #: The layer supports the mode it gets.
    OK = "ok"
    #: The layer's declaration does not include the mode it gets.
    REFUSED = "refused"
    #: The layer accepts the mode but is known to be wrong in it (silently, or
    #: by failing at a later step or reset).
    KNOWN_WRONG = "known-wrong"
    #: No mode is declared: the env has no ``metadata["autoreset_mode"]``, or the
    #: wrapper class has no declaration.
    UNDECLARED = "undeclared"
    #: The layer's ``metadata["autoreset_mode"]`` disagrees with its declaration.
    MISMATCH = "mismatch"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class LayerReport:
    """One layer of a checked stack.

    Attributes:
        name: the layer's class name.
        origin: the package it comes from (``"vecmode"``, ``"gymnasium"``, ...).
        mode_in: the mode of the env it wraps (None for the innermost env).
        accepts: the modes it supports (None: innermost env, or undeclared).
        mode_out: the mode it runs in (None: unknown).
        verdict: see :class:`Verdict`.
        note: why, for any verdict but ok; for ok, a caveat where one is known
            (what a partial reset gets wrong).
        layer: the layer object itself.
        evidence: what the verdict rests on (see :class:`Evidence`).
        evidence_note: where the evidence comes from, and, unless it is
            verified, how to prove it (``vecmode conform``).
    """

    name: str
    origin: str
    mode_in: AutoresetMode | None
    accepts: frozenset[AutoresetMode] | None
    mode_out: AutoresetMode | None
    verdict: Verdict
    note: str = ""
    layer: Any = field(default=None, repr=False, compare=False)
    evidence: Evidence = Evidence.NONE
    evidence_note: str = ""


@dataclass(frozen=True)
class CompatibilityReport:
    """The result of :func:`check_stack`: one :class:`LayerReport` per layer, innermost
    first. ``str(report)`` is an aligned table for a terminal."""

    rows: tuple[LayerReport, ...]
    strict: bool = False

    @property
    def ok(self) -> bool:
        """Every layer supports the mode it gets (undeclared ones count as failures
        only under ``strict``)."""
        return not self.problems

    @property
    def problems(self) -> tuple[LayerReport, ...]:
        """The layers that make the report not ok."""
        allowed = {Verdict.OK} if self.strict else {Verdict.OK, Verdict.UNDECLARED}
        return tuple(row for row in self.rows if row.verdict not in allowed)

    @property
    def verified(self) -> bool:
        """Every layer's verdict rests on runs that proved it (see
        :class:`Evidence`)."""
        return not self.unverified

    @property
    def unverified(self) -> tuple[LayerReport, ...]:
        """The layers whose verdict rests on a declaration only (their own, a
        base class's), or on nothing."""
        return tuple(row for row in self.rows if row.evidence is not Evidence.VERIFIED)

    @property
    def mode(self) -> AutoresetMode | None:
        """The mode the whole stack runs in (the outermost layer's)."""
        return self.rows[-1].mode_out

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
        return _format_report(self)


def _cell(modes: frozenset[AutoresetMode] | AutoresetMode | None) -> str:
    if modes is None:
        return "-"
    if isinstance(modes, AutoresetMode):
        return modes.value
    if modes == frozenset(MODES):
        return "all"
    return ", ".join(mode.value for mode in MODES if mode in modes)


def _summary(report: CompatibilityReport) -> str:
    if report.ok:
        undeclared = sum(row.verdict is Verdict.UNDECLARED for row in report)
        caveat = f", {undeclared} undeclared (see notes)" if undeclared else ""
        unproven = [
            f"layer {position} {row.name} ({row.evidence.value})"
            for position, row in enumerate(report)
            if row.evidence in (Evidence.DECLARED, Evidence.INHERITED)
        ]
        if unproven:
            caveat += f"; not verified: {', '.join(unproven)} (see notes)"
        return f"ok: the stack runs {_cell(report.mode)}{caveat}"
    failing = "; ".join(
        f"layer {report.rows.index(row)} {row.name} is "
        f"{'mismatched' if row.verdict is Verdict.MISMATCH else row.verdict.value}"
        f" in {_cell(row.mode_in or row.mode_out)}"
        for row in report.problems
    )
    return f"NOT OK: {failing}"


def _sentence(text: str) -> str:
    """``text`` as a sentence: a capital first letter, a full stop at the end."""
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else f"{text}."


def _format_report(report: CompatibilityReport) -> str:
    header = ("#", "layer", "mode in", "supports", "mode out", "verdict", "evidence")
    rows: list[tuple[str, ...]] = []
    notes: list[str] = []
    for position, row in enumerate(report):
        verdict = row.verdict.value
        text = " ".join(
            _sentence(part) for part in (row.note, row.evidence_note) if part
        )
        if text:
            notes.append(
                textwrap.fill(
                    f"[{len(notes) + 1}] {row.name}: {text}",
                    88,
                    subsequent_indent="    ",
                    break_on_hyphens=False,
                )
            )
            verdict += f" [{len(notes)}]"
        rows.append(
            (
                str(position),
                f"{row.name} ({row.origin})",
                _cell(row.mode_in),
                _cell(row.accepts),
                _cell(row.mode_out),
                verdict,
                row.evidence.value,
            )
        )
    table = _aligned(header, rows)
    summary = _summary(report)
    return "\n".join([summary, "", *table, *(["", *notes] if notes else [])])


def _origin(obj: Any) -> str:
    """The package ``obj``'s class comes from (a class made at run time in
    ``abc`` or the like, as EnvPool's are: the first base's that is not)."""
    for cls in type(obj).__mro__:
        package = cls.__module__.split(".")[0]
        if package not in _NOT_AN_ORIGIN:
            return package
    return type(obj).__module__.split(".")[0]


#: Modules where classes made at run time say they come from.
_NOT_AN_ORIGIN = frozenset({"abc", "builtins", "typing", "types"})


def _layers(env: Any) -> list[Any]:
    if not isinstance(env, VectorEnv):
        raise TypeError(errors.not_a_vector_env("vecmode.check_stack", env))
    stack = itertools.takewhile(
        lambda layer: isinstance(layer, VectorEnv), layers(env, limit=10_000)
    )
    return list(stack)[::-1]


def _env_evidence(env: Any, declared: AutoresetMode | None) -> tuple[Evidence, str]:
    """The innermost env's evidence: its class's, for the mode it declares."""
    if declared is None:
        return Evidence.NONE, evidence_env_undeclared(type(env).__name__)
    cls = type(env)
    if _name(cls) in VERIFIED_ENVS:
        return Evidence.VERIFIED, ""
    with _lock:
        recorded = _recorded_envs.get(cls, {}).get(declared)
    if recorded is not None:
        return Evidence.VERIFIED, evidence_env_recorded(recorded)
    # a subclass of a verified class (EnvPool builds one per task): its base's
    # behaviour is proven, not the subclass's own code
    base = next((k for k in cls.__mro__[1:] if _name(k) in VERIFIED_ENVS), None)
    if base is not None:
        return Evidence.INHERITED, evidence_env_inherited(cls.__name__, base.__name__)
    return Evidence.DECLARED, evidence_env_declared(cls.__name__)


def _wrapper_evidence(layer: Any, mode: AutoresetMode | None) -> tuple[Evidence, str]:
    """A wrapper's evidence in ``mode``, with a note unless it is verified."""
    cls = type(layer)
    proof, source = _proof(cls, mode)
    if proof in (Evidence.VERIFIED, Evidence.NONE):
        return proof, ""
    return proof, f"{source}; {_conform_hint(cls)}"


def _layer_verdict(
    name: str,
    found: Declaration,
    mode_in: AutoresetMode | None,
    mode: AutoresetMode | None,
    declared: AutoresetMode | None,
) -> tuple[Verdict, str]:
    """A declared layer's verdict and note: it gets ``mode_in``, produces
    ``mode``, and says (metadata) it runs in ``declared``."""
    verdict, note = Verdict.OK, found.caveats.get(mode_in, "") if mode_in else ""
    if mode_in is not None and mode_in in found.wrong:
        verdict, note = (
            Verdict.KNOWN_WRONG,
            " ".join(part for part in (found.wrong[mode_in], found.instead) if part),
        )
    elif mode_in is not None and mode_in not in found.modes:
        verdict, note = (
            Verdict.REFUSED,
            " ".join(
                part
                for part in (
                    found.why(mode_in) or report_refused(name, mode_in),
                    found.instead,
                )
                if part
            ),
        )
    elif declared is not None and mode is not None and declared is not mode:
        verdict, note = Verdict.MISMATCH, report_mismatch(declared, mode)
    return verdict, note


def check_stack(env: VectorEnv, *, strict: bool | None = None) -> CompatibilityReport:
    """Check every layer of a vector env stack against the modes it supports.

    Walks ``env.env.env...`` down to the innermost vector env and back out,
    propagating the mode through mode-changing layers, and reports one row per
    layer: ok, refused, known-wrong (a Gymnasium wrapper that accepts the mode but
    is wrong in it), undeclared, or mismatch (a layer's metadata disagrees
    with its declaration); and the :class:`Evidence` behind it: verified,
    declared or inherited. ``strict`` (default: :func:`vecmode.strict`'s setting)
    makes undeclared layers failures.

    >>> import gymnasium as gym
    >>> import vecmode
    >>> envs = vecmode.make_vec("CartPole-v1", num_envs=2, vectorization_mode="sync",
    ...     autoreset_mode="SameStep")
    >>> report = vecmode.check_stack(gym.wrappers.vector.NormalizeReward(envs))
    >>> report.ok, [row.verdict.value for row in report]
    (False, ['ok', 'ok', 'known-wrong'])
    >>> [row.evidence.value for row in report]
    ['verified', 'verified', 'verified']
    >>> envs.close()
    """
    rows: list[LayerReport] = []
    mode: AutoresetMode | None = None
    for position, layer in enumerate(_layers(env)):
        name, origin = type(layer).__name__, _origin(layer)
        try:
            declared = mode_of(layer)
        except ValueError as error:  # metadata["autoreset_mode"] is no mode
            raise ValueError(f"layer {position} {name} ({origin}): {error}") from None
        if position == 0:
            proof, proof_note = _env_evidence(layer, declared)
            if declared is None:
                rows.append(
                    LayerReport(
                        name,
                        origin,
                        None,
                        None,
                        ASSUMED_MODE,
                        Verdict.UNDECLARED,
                        report_undeclared_env(ASSUMED_MODE),
                        layer,
                        proof,
                        proof_note,
                    )
                )
                mode = ASSUMED_MODE
            else:
                rows.append(
                    LayerReport(
                        name,
                        origin,
                        None,
                        None,
                        declared,
                        Verdict.OK,
                        "",
                        layer,
                        proof,
                        proof_note,
                    )
                )
                mode = declared
            continue
        found = declaration(layer)
        if found is not None:
            found = found.over(layer.env)
        mode_in = mode
        if found is None:
            mode = declared or mode_in
            rows.append(
                LayerReport(
                    name,
                    origin,
                    mode_in,
                    None,
                    mode,
                    Verdict.UNDECLARED,
                    report_undeclared_wrapper(name),
                    layer,
                    Evidence.NONE,
                    _conform_hint(type(layer), declared=False),
                )
            )
            continue
        mode = found.output or mode_in
        verdict, note = _layer_verdict(name, found, mode_in, mode, declared)
        proof, proof_note = _wrapper_evidence(layer, mode_in)
        rows.append(
            LayerReport(
                name,
                origin,
                mode_in,
                found.modes,
                mode,
                verdict,
                note,
                layer,
                proof,
                proof_note,
            )
        )
    return CompatibilityReport(tuple(rows), is_strict(strict))


def assert_compatible(
    env: VectorEnv, *, strict: bool | None = None, verified: bool = False
) -> CompatibilityReport:
    """:func:`check_stack` the stack; raise :class:`~vecmode.IncompatibleModeError` with the
    report's table if it is not ok, else return the report.

    ``verified=True`` also raises when a layer's verdict is not verified (its
    modes only declared, or inherited from a base class): for a CI that wants
    every layer proven (``check_wrapper(YourWrapper).record()`` first)."""
    report = check_stack(env, strict=strict)
    if not report.ok:
        raise IncompatibleModeError(stack_not_compatible(str(report)))
    if verified and not report.verified:
        raise IncompatibleModeError(stack_not_verified(str(report)))
    return report


def require_mode(
    env: VectorEnv,
    *modes: ModeLike,
    who: str | None = None,
    strict: bool | None = None,
) -> AutoresetMode:
    """Return ``env``'s mode if it is one of ``modes``; raise otherwise.

    For training code written for some modes only. An env that declares no mode
    warns (:class:`~vecmode.UndeclaredModeWarning`) and is taken as NEXT_STEP, or
    raises under ``strict``. ``who`` names the caller in the message.

    >>> import vecmode
    >>> envs = vecmode.make_vec("CartPole-v1", num_envs=2, vectorization_mode="sync",
    ...     autoreset_mode="Disabled")
    >>> vecmode.require_mode(envs, "NextStep", "SameStep", who="my_ppo")
    Traceback (most recent call last):
    ...
    vecmode.errors.IncompatibleModeError: my_ppo needs a vector env in NextStep, SameStep, got one in Disabled. ...
    >>> envs.close()
    """
    wanted = frozenset(as_mode(mode) for mode in modes)
    if not wanted:
        raise ValueError(no_modes_declared())
    caller = who or "vecmode.require_mode"
    if not isinstance(env, VectorEnv):  # as check_stack: no mode to assume
        raise TypeError(errors.not_a_vector_env(caller, env))
    mode = mode_or_assumed(env, caller, strict, stacklevel=1)
    if mode not in wanted:
        raise IncompatibleModeError(mode_required(caller, mode, wanted))
    return mode


# ------------------------------------------------------------------ messages
def mode_required(who: str, got: AutoresetMode, wanted: Iterable[AutoresetMode]) -> str:
    return (
        f"{who} needs a vector env in {mode_names(wanted)}, got one in {got.value}. "
        f"{convert_to(wanted)}"
    )


def known_wrong(mode: AutoresetMode, what: str) -> str:
    return f"It accepts {mode.value} but is known to be wrong there: {what}"


def use_supported_modes(modes: Iterable[AutoresetMode]) -> str:
    names = mode_names(modes)
    first = names.split(", ")[0]
    return (
        f"Build the vector env in {names} (e.g. vecmode.make_vec(..., "
        f"autoreset_mode={first!r}), or vecmode.with_autoreset(env, {first!r})), or "
        f"use a wrapper that supports the env's mode."
    )


def use_vecmode_wrapper(name: str, modes: Iterable[AutoresetMode]) -> str:
    return (
        f"Use vecmode.wrappers.{name} instead (same arguments, right in every mode), "
        f"or build the vector env in {mode_names(modes)}."
    )


def no_modes_declared() -> str:
    return (
        "declare at least one mode: NextStep, SameStep or Disabled "
        "(AutoresetMode values or their strings)."
    )


def declared_both_ways(modes: Iterable[AutoresetMode]) -> str:
    return (
        f"{mode_names(modes)} cannot be both supported and silently wrong; list each "
        f"mode in modes or in wrong, not both."
    )


def no_such_name(name: str) -> str:
    module, _, qualname = name.partition(":")
    return (
        f"vecmode.register({name!r}): module {module!r} has no attribute "
        f"{qualname!r}; name the class as 'package.module:ClassName'."
    )


def supports_without_modes(cls: type) -> str:
    return (
        f"@vecmode.supports was used without its modes on {cls.__name__}: write "
        f"@vecmode.supports('NextStep', 'SameStep', ...) with the modes it supports."
    )


def not_a_wrapper_class(caller: str, got: Any) -> str:
    return (
        f"{caller} takes a subclass of gymnasium.vector.VectorWrapper, got {got!r}; "
        f"declare the wrapper class itself (not an instance)."
    )


def class_path(got: str) -> str:
    return (
        f"{got!r} is not a class path; write 'package.module:ClassName' "
        f"(e.g. 'gymnasium.wrappers.vector:NormalizeReward')."
    )


def report_undeclared_env(assumed: AutoresetMode) -> str:
    return (
        f"declares no metadata['autoreset_mode']; {assumed.value} assumed "
        f"(Gymnasium's convention)"
    )


def report_undeclared_wrapper(name: str) -> str:
    return (
        f"no modes declared for {name}; declare them with @vecmode.supports or "
        f"vecmode.register"
    )


def report_refused(name: str, mode: AutoresetMode) -> str:
    return f"{name} does not declare {mode.value}"


def report_mismatch(declared: AutoresetMode, expected: AutoresetMode) -> str:
    return (
        f"its metadata['autoreset_mode'] is {declared.value}, but its declaration "
        f"and the layers below give {expected.value}"
    )


def stack_not_compatible(table: str) -> str:
    return f"this vector env stack is not compatible with its autoreset mode:\n{table}"


def converted_below(wrapper: str, below: tuple[str, str]) -> str:
    layer, library = below
    return (
        f"{wrapper} reads NumPy arrays, but {layer} below it returns {library} "
        f"arrays. Put the conversion outermost: {layer}({wrapper}(env)), so that "
        f"vecmode's wrappers see NumPy and your code gets {library}."
    )


def own_final_obs_layout(wrapper: str, env: Any) -> str:
    name = type(getattr(env, "unwrapped", env)).__name__
    return (
        f"{wrapper} cannot wrap this {name} as it is: in SameStep, {name} reports "
        f"final observations its own way (one dense array, no mask, no final "
        f"infos), not in Gymnasium's layout, which {wrapper} reads. Translate it "
        f"once, at the edge of the stack: vecmode.with_autoreset(env, 'SameStep') "
        f"(it adds vecmode.autoreset.GymnasiumFinalObs), then wrap that."
    )


def evidence_gymnasium() -> str:
    return "established by runs of it in each mode (vecmode's entries for Gymnasium)"


def evidence_conformance_tested() -> str:
    return "proven by the conformance kit (check_wrapper) in vecmode's test suite"


def evidence_recorded(summary: str) -> str:
    return f"proven by check_wrapper in this process ({summary})"


def evidence_declared(name: str, source: str) -> str:
    how = "@vecmode.supports" if source == "supports" else "vecmode.register"
    return f"its modes are declared by {name} itself ({how}) and not proven here"


def evidence_inherited(base: str, base_verified: bool) -> str:
    if base_verified:
        return (
            f"its modes are inherited from {base}, which is verified; nothing "
            "proves this subclass's own code"
        )
    return (
        f"its modes are {base}'s declaration, inherited: nothing proves this "
        "class's own code"
    )


def how_to_verify(name: str, path: str | None) -> str:
    run = (
        f"run `vecmode conform {path}`"
        if path
        else f"run vecmode.testing.check_wrapper({name})"
    )
    return (
        f"{run} to prove them, and record a passing run "
        f"(check_wrapper({name}).record(), e.g. in your tests) to have it reported "
        f"verified."
    )


def evidence_env_declared(name: str) -> str:
    return (
        f"{name}'s metadata['autoreset_mode'] declares its mode, and nothing here "
        "proved that it behaves so: run `vecmode probe module:factory` "
        "(vecmode.probe_mode) or vecmode.testing.check_vector_env on a factory "
        f"of it, and record a passing check "
        f"(vecmode.testing.check_vector_env(factory).record(), e.g. in your "
        f"tests) to have it reported verified."
    )


def evidence_env_inherited(name: str, base: str) -> str:
    return (
        f"{name} is a {base}, whose mode vecmode's tests prove; nothing proves "
        f"this subclass's own code: run `vecmode probe module:factory` "
        "(vecmode.probe_mode) or vecmode.testing.check_vector_env on a factory of "
        "it, and record a passing check "
        "(vecmode.testing.check_vector_env(factory).record()) to have it reported "
        "verified."
    )


def evidence_env_recorded(summary: str) -> str:
    return f"verified: proven by check_vector_env in this process ({summary})"


def record_undeclared(name: str) -> str:
    return (
        f"{name} declares no autoreset modes, so there is nothing to record as "
        f"verified; declare them with @vecmode.supports (or vecmode.register) "
        f"first."
    )


def stack_not_verified(table: str) -> str:
    return (
        f"this vector env stack has layers whose modes nothing here proved "
        f"(assert_compatible(..., verified=True)):\n{table}"
    )


def how_to_find_modes(name: str, path: str | None) -> str:
    run = (
        f"`vecmode conform {path} --modes NextStep SameStep Disabled`"
        if path
        else f"vecmode.testing.check_wrapper({name}, modes=vecmode.MODES)"
    )
    return f"{run} shows which modes it is right in."


def evidence_env_undeclared(name: str) -> str:
    return (
        f"`vecmode probe module:factory` (vecmode.probe_mode) finds the mode a "
        f"{name} really behaves as."
    )
