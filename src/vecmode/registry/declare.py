"""What is declared: :class:`Declaration`, where declarations live, the lookup."""

from __future__ import annotations

import sys
import threading
import warnings
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from gymnasium.vector import AutoresetMode, VectorEnv, VectorWrapper

from vecmode import _arrays, _gymnasium, errors, modes
from vecmode.core import VectorCore
from vecmode.env_classes import (
    class_path,
    final_obs_layout,
    keeps_options,
    keeps_rows,
    lists_infos,
    reads_final_observations,
)
from vecmode.errors import mode_names
from vecmode.modes import MODES, ModeLike, as_mode

#: Reasons keyed by mode (``AutoresetMode`` members or names), as ``why=`` takes.
ModeReasons = Mapping[AutoresetMode, str] | Mapping[str, str] | Mapping[ModeLike, str]

ATTRIBUTE = "__vecmode_declaration__"
NO_MODES = "declare at least one mode: NextStep, SameStep or Disabled."


@dataclass(frozen=True)
class Declaration:
    """What a wrapper class declares about the autoreset modes: ``modes``,
    ``output``, ``wrong``, ``reasons`` (``why=``) and ``instead`` as
    :func:`~vecmode.register` takes them.

    Attributes:
        source: ``"supports"``, ``"register"`` or ``"gymnasium"``.
        array_native: it takes batches of any array library (torch, JAX...) in
            their library and on their device; the others read NumPy.
        caveats: what goes wrong in a supported mode's optional use (ok still).
        masked_reset_fault: what goes wrong when a masked reset (``reset_mask``)
            reaches it in a supported mode, and what to do ("" if nothing): a
            stack with a layer above that makes masked resets is wrong.
        kept_options_caveat, kept_rows_fault: see :meth:`over`.
    """

    modes: frozenset[AutoresetMode]
    output: AutoresetMode | None = None
    wrong: Mapping[AutoresetMode, str] = field(default_factory=dict)
    reasons: Mapping[AutoresetMode, str] = field(default_factory=dict)
    instead: str = ""
    source: str = "register"
    caveats: Mapping[AutoresetMode, str] = field(default_factory=dict)
    kept_options_caveat: str = ""
    array_native: bool = False
    masked_reset_fault: str = ""
    kept_rows_fault: str = ""
    dict_infos: bool = False

    def over(self, env: Any) -> Declaration:
        """This declaration over ``env``: right in every mode, with
        ``kept_options_caveat`` as caveat, if it has one (its faults need popped
        options) and ``env`` keeps them (vecmode's cores); its
        ``kept_rows_fault`` a masked reset's fault where ``env`` keeps its rows
        (so wrong in DISABLED), no caveat where it does not; wrong in every mode
        if it reads ``dict_infos`` and a ``DictInfoToList`` below lists them."""
        if self.dict_infos and lists_infos(env):
            wrong = dict.fromkeys(MODES, _gymnasium.LISTED_INFOS)
            return replace(self, modes=frozenset(), wrong=wrong, instead="")
        if self.kept_rows_fault and (kept := keeps_rows(env)) is not None:
            fault, disabled = self.kept_rows_fault, AutoresetMode.DISABLED
            if not kept:
                return replace(self, caveats=MappingProxyType({}))
            wrong = {**self.wrong, disabled: fault} if disabled in self.modes else {}
            use = self.instead.partition(", or build")[0]  # (Gymnasium's entries')
            return replace(
                self,
                modes=self.modes - {disabled},
                wrong=MappingProxyType(wrong or self.wrong),
                instead=f"{use}, or build the env below with copy=True.",
                masked_reset_fault=f"{fault[0].upper()}{fault[1:]} {use}.",
            )
        if not self.kept_options_caveat or not keeps_options(env):
            return self
        modes = self.modes | frozenset(self.wrong)
        return replace(
            self,
            modes=modes,
            wrong=MappingProxyType({}),
            caveats=MappingProxyType(dict.fromkeys(modes, self.kept_options_caveat)),
            masked_reset_fault="",
        )

    def behaviour(self, mode: ModeLike) -> str:
        """``"ok"``, ``"refused"`` or ``"known-wrong"`` (accepted, but wrong)."""
        mode = as_mode(mode)
        if mode in self.modes:
            return "ok"
        return "known-wrong" if mode in self.wrong else "refused"

    def note(self, mode: AutoresetMode) -> str:
        """Why ``mode`` is wrong or not supported, or its caveat; empty if nothing."""
        return (
            self.wrong.get(mode) or self.reasons.get(mode) or self.caveats.get(mode, "")
        )

    def why(self, mode: AutoresetMode) -> str:
        """Why ``mode`` is not supported, as a sentence for an error message."""
        if mode in self.wrong:
            return f"It is known to be wrong in {mode.value}: {self.wrong[mode]}"
        return self.reasons.get(mode, "")


def declare(
    modes: Any,
    output: ModeLike | None = None,
    wrong: ModeReasons | None = None,
    why: ModeReasons | None = None,
    instead: str | None = None,
    source: str = "register",
    array_native: bool = False,
) -> Declaration:
    """A checked :class:`Declaration` of what :func:`~vecmode.register` takes."""
    if isinstance(modes, AutoresetMode | str):
        modes = [modes]
    given = list(modes)
    one = given[0] if len(given) == 1 else None
    if isinstance(one, Iterable) and not isinstance(one, AutoresetMode | str):
        given = list(one)
    accepted = frozenset(as_mode(mode) for mode in given)
    if not accepted:
        raise ValueError(NO_MODES)
    wrong_modes = {as_mode(mode): text for mode, text in _texts(wrong, "wrong")}
    if overlap := accepted & wrong_modes.keys():
        raise ValueError(
            f"{mode_names(overlap)} cannot be both supported and silently wrong; "
            f"list each mode in modes or in wrong, not both."
        )
    reasons = {as_mode(m): text for m, text in _texts(why, "why")}
    if supported := accepted & reasons.keys():
        raise ValueError(
            f"why gives the reasons for refused modes, but "
            f"{mode_names(supported)} is supported; remove it "
            f"from why (or from the supported modes)."
        )
    if not isinstance(array_native, bool):
        raise TypeError(f"array_native must be True or False, got {array_native!r}.")
    return Declaration(
        modes=accepted,
        output=None if output is None else as_mode(output),
        wrong=MappingProxyType(wrong_modes),
        reasons=MappingProxyType(reasons),
        instead=_instead(instead),
        source=source,
        array_native=array_native,
    )


def _texts(given: Any, name: str) -> list[tuple[Any, str]]:
    """The ``(mode, text)`` pairs of ``why=`` or ``wrong=``; TypeError if not a
    dict of texts."""
    if given is None:
        return []
    if not isinstance(given, Mapping) or not all(
        isinstance(t, str) for t in given.values()
    ):
        raise TypeError(
            f"{name} must be a dict of mode -> reason (a str), e.g. "
            f"{name}={{'SameStep': 'It ignores final_obs.'}}; got {given!r}."
        )
    return list(given.items())


def _instead(instead: Any) -> str:
    if instead is not None and not isinstance(instead, str):
        raise TypeError(f"instead must be a str (what to use), got {instead!r}.")
    return instead or ""


# where declarations live: change them under the lock
lock = threading.RLock()
registered: dict[type, Declaration] = {}
#: register("module:Class", ...) not resolved yet; the names resolved.
pending: dict[str, Declaration] = {}
resolved: dict[str, type] = {}
_warned: set[str] = set()
#: Classes declared by @supports, in declaration order (for the table).
decorated: list[weakref.ref[type]] = []
_gymnasium_entries: dict[str, Declaration] = {}
#: Gymnasium's wrappers that take batches of any library: its conversions.
_GYMNASIUM_CONVERSIONS = ("ArrayConversion", "NumpyToTorch", "JaxToNumpy", "JaxToTorch")


def gymnasium_entries() -> dict[str, Declaration]:
    """vecmode's declarations of Gymnasium's wrappers, by ``"module:QualName"``."""
    if _gymnasium_entries:
        return _gymnasium_entries
    for name, verdicts in _gymnasium.GYMNASIUM_VERDICTS.items():
        by_mode = {as_mode(mode): verdict for mode, verdict in verdicts.items()}
        ok = [mode for mode in MODES if by_mode[mode][0] == "ok"]
        use = (  # vecmode has an equivalent of each
            f"Use vecmode.wrappers.{name.rpartition(':')[2]} instead (same arguments, "
            f"right in every mode)"
        )
        instead = f"{use}, or build the vector env in {mode_names(ok)}."
        wrong = {m: text for m, (v, text) in by_mode.items() if v == "wrong"}
        why = {m: text for m, (v, text) in by_mode.items() if v == "refuses"}
        fault = _gymnasium.PARTIAL_RESET_CAVEATS.get(name, "")
        _gymnasium_entries[name] = replace(
            declare(ok, None, wrong, why, instead, "gymnasium"),
            caveats=_gymnasium_caveats(name, ok),
            kept_options_caveat=_gymnasium.CAVEATS_WHERE_OPTIONS_KEPT.get(name, ""),
            array_native=name.rpartition(":")[2] in _GYMNASIUM_CONVERSIONS,
            masked_reset_fault=fault and f"{fault[0].upper()}{fault[1:]} {use}.",
            kept_rows_fault=_gymnasium.KEPT_ROWS_FAULTS.get(name, ""),
            dict_infos=name in _gymnasium.DICT_INFO_READERS,
        )
    return _gymnasium_entries


def _gymnasium_caveats(name: str, ok: list[AutoresetMode]) -> Mapping[Any, str]:
    """The caveats of Gymnasium's wrapper ``name`` in its ``ok`` modes."""
    caveat = (
        _gymnasium.PARTIAL_RESET_CAVEATS.get(name)
        or _gymnasium.WRITES_BELOW_CAVEATS.get(name)
        or _gymnasium.KEPT_ROWS_FAULTS.get(name)
    )
    next_step = {AutoresetMode.NEXT_STEP: _gymnasium.NEXT_STEP_CAVEATS.get(name)}
    texts = {m: " ".join(filter(None, (caveat, next_step.get(m)))) for m in ok}
    return MappingProxyType({m: text for m, text in texts.items() if text})


def wrapper_class(cls: Any, caller: str) -> type:
    """``cls`` if it is a ``VectorWrapper`` class, else TypeError naming ``caller``."""
    if not (isinstance(cls, type) and issubclass(cls, VectorWrapper)):
        instead = (
            "declare a vector env class with vecmode.register_vector_env"
            if isinstance(cls, type) and issubclass(cls, VectorEnv)
            else "declare the wrapper class itself (not an instance)"
        )
        raise TypeError(
            f"{caller} takes a subclass of gymnasium.vector.VectorWrapper, got "
            f"{cls!r}; {instead}."
        )
    return cls


def named_wrapper(name: str) -> type:
    """The wrapper class ``"module:Qual.Name"`` names in its imported module."""
    module, _, qualname = name.partition(":")
    target: Any = sys.modules.get(module)
    for part in qualname.split("."):
        target = getattr(target, part, None)
    if target is None:
        raise AttributeError(
            f"vecmode.register({name!r}): module {module!r} has no attribute "
            f"{qualname!r}; name the class as 'package.module:ClassName'."
        )
    return wrapper_class(target, f"vecmode.register({name!r})")


def keep(target: type | str, found: Declaration) -> None:
    """Keep a :func:`~vecmode.register` declaration of a class or a class path."""
    with lock:
        if isinstance(target, str):
            if target.partition(":")[0] not in sys.modules:
                pending[target] = found
                return
            name, target = target, named_wrapper(target)
            pending.pop(name, None)
            resolved[name] = target
        registered[target] = found


def forget(target: type | str) -> tuple[bool, type | None]:
    """Drop a :func:`~vecmode.register` declaration: (if there was one, its class)."""
    with lock:
        if isinstance(target, str):
            _warned.discard(target)
            had = pending.pop(target, None) is not None
            cls = resolved.pop(target, None)
            if cls is not None:
                had = registered.pop(cls, None) is not None or had
            return had, cls
        for name in [name for name, cls in resolved.items() if cls is target]:
            del resolved[name]
        return registered.pop(target, None) is not None, target


def resolve_pending() -> None:
    """Resolve the pending names whose module is imported now (warn once if not a
    wrapper class)."""
    if not pending:
        return
    with lock:
        for name in [name for name in pending if name.partition(":")[0] in sys.modules]:
            try:
                cls = named_wrapper(name)
            except (AttributeError, TypeError) as error:
                if name not in _warned:
                    _warned.add(name)
                    warnings.warn(str(error), RuntimeWarning, stacklevel=3)
                continue
            registered[cls] = pending.pop(name)
            resolved[name] = cls


def own_declaration(cls: type) -> Declaration | None:
    """The declaration of ``cls`` itself, not one it inherits."""
    found = registered.get(cls) or cls.__dict__.get(ATTRIBUTE)
    if found is None and cls.__module__.startswith("gymnasium."):
        found = gymnasium_entries().get(class_path(cls))
    return found


def declaration(cls_or_instance: Any) -> Declaration | None:
    """The :class:`Declaration` that applies to a wrapper class or instance (the
    nearest up the MRO; see ``docs/registry.md`` for which wins)."""
    resolve_pending()
    cls = (
        cls_or_instance if isinstance(cls_or_instance, type) else type(cls_or_instance)
    )
    return next(filter(None, map(own_declaration, cls.__mro__)), None)


def masked_reset_fault(layer: Any) -> str:
    """What goes wrong when a masked reset reaches ``layer``, a wrapper right in
    its mode otherwise, and what to do; "" if nothing is known."""
    found = declaration(layer)
    return "" if found is None else found.over(layer.env).masked_reset_fault


def dense_layout_fault(
    cls: type, env: Any, mode: AutoresetMode | None, found: Declaration
) -> str:
    """Why ``cls`` may not read ``env``'s SameStep final observations, in ALE's
    dense layout; "" if it may."""
    if (
        mode is None
        or not modes.final_in_info(mode)
        or isinstance(getattr(cls, "final_obs_layout", None), str)
        or final_obs_layout(env) == "gymnasium"
        # over torch or JAX batches, an array-native wrapper reads the dense layout
        or (found.array_native and _arrays.is_array_env(env))
        # one declared to read none; Gymnasium's reading none, splitting none
        or getattr(cls, "reads_final_observations", None) is False
        or (
            found.source == "gymnasium"
            and not reads_final_observations(cls)
            and cls.__name__ != "DictInfoToList"
        )
    ):
        return ""
    name, inner = cls.__name__, type(getattr(env, "unwrapped", env)).__name__
    return (
        f"{name} cannot wrap this {inner} as it is: {inner} reports SameStep's "
        f"final observations as one dense array, not in Gymnasium's layout, "
        f"which {name} reads. Wrap vecmode.with_autoreset(env, 'SameStep') "
        f"instead (it adds vecmode.autoreset.GymnasiumFinalObs)."
    )


def string_mode_fault(cls: type, env: Any, found: Declaration) -> str:
    """Why Gymnasium's ``cls`` misreads ``env``'s mode, declared as a string, equal
    to no ``AutoresetMode`` (``_gymnasium.MISREAD_STRING_MODES``); "" if not."""
    declared = (getattr(env, "metadata", None) or {}).get("autoreset_mode")
    misreads = any(
        class_path(k) in _gymnasium.MISREAD_STRING_MODES for k in cls.__mro__
    )
    if found.source != "gymnasium" or not misreads or not isinstance(declared, str):
        return ""
    return (
        f"{cls.__name__} compares metadata['autoreset_mode'] with "
        f"gymnasium.vector.AutoresetMode members, and the env below declares the "
        f"string {declared!r}, equal to none of them: declare "
        f"AutoresetMode({declared!r}) there."
    )


def not_array_native(cls: type, library: str) -> str:
    """:func:`vecmode.errors.not_array_native` of ``cls``, naming vecmode's
    array-native wrapper of its name (same arguments) if there is one."""
    twin = getattr(sys.modules.get("vecmode.wrappers"), cls.__name__, cls)
    name, own = cls.__name__, own_declaration(cls) is not None
    instead = f"vecmode.wrappers.{name}" if is_array_native(twin) else ""
    return errors.not_array_native(name, library, own, instead)


def supported_modes(cls_or_instance: Any) -> frozenset[AutoresetMode] | None:
    """The modes a wrapper class (or instance) supports; None if nothing is declared.

    >>> import gymnasium as gym, vecmode
    >>> sorted(m.value for m in vecmode.supported_modes(gym.wrappers.vector.ClipReward))
    ['Disabled', 'NextStep', 'SameStep']
    """
    found = declaration(cls_or_instance)
    return None if found is None else found.modes


def is_array_native(cls_or_instance: Any) -> bool:
    """Whether a wrapper class (or instance) is declared to take batches of any
    array library (``array_native=True``); False if nothing is declared.

    >>> import vecmode
    >>> vecmode.registry.is_array_native(vecmode.wrappers.JaxToNumpy)
    True
    """
    found = declaration(cls_or_instance)
    return found is not None and found.array_native


def convert_hint(
    env: Any, mode: AutoresetMode, allowed: Iterable[AutoresetMode]
) -> str:
    """What to do for ``env``, in ``mode``, none of the ``allowed``: a conversion
    to one it can reach (NEXT_STEP from a vecmode core alone, or a policy on one)."""
    core = isinstance(getattr(env, "__dict__", {}).get("core", env), VectorCore)
    reach = [m for m in allowed if core or not modes.resets_on_next_step(m)]
    return errors.convert_to(reach or allowed, not modes.final_in_info(mode), not reach)
