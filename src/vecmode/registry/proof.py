"""What a verdict rests on: :class:`Evidence`, and the proofs recorded here."""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from enum import Enum
from typing import Any

from gymnasium.vector import AutoresetMode, VectorEnv, VectorWrapper

from vecmode._evidence import CONFORMANCE_TESTED, VERIFIED_ENVS
from vecmode.env_classes import class_path
from vecmode.modes import MODES, ModeLike, as_mode, mode_of
from vecmode.registry import declare
from vecmode.registry.declare import Declaration


class Named(str, Enum):
    """An enum whose ``str()`` is its value."""

    def __str__(self) -> str:
        return self.value


class Evidence(Named):
    """What a class's declared modes rest on: runs that proved them (verified), the
    class's own word (declared), a base class's (inherited), or nothing (none)."""

    VERIFIED = "verified"
    DECLARED = "declared"
    INHERITED = "inherited"
    NONE = "none"


#: check_wrapper's proofs in this process: the declaration proved (the proof lapses
#: when it changes), the modes proved, the run's summary.
_recorded: weakref.WeakKeyDictionary[
    type, tuple[Declaration, frozenset[AutoresetMode], str]
] = weakref.WeakKeyDictionary()
#: check_vector_env's proofs in this process: mode -> the run's summary.
_recorded_envs: weakref.WeakKeyDictionary[type, dict[AutoresetMode, str]] = (
    weakref.WeakKeyDictionary()
)


def record_verified(cls: type, modes: Iterable[AutoresetMode], summary: str) -> None:
    """Record that ``check_wrapper`` proved ``cls`` right or refusing in ``modes``
    (what ``WrapperReport.record()`` calls); ``summary`` is shown with the verdict."""
    found = declare.declaration(cls)
    if found is None:
        raise ValueError(
            f"{cls.__name__} declares no autoreset modes, so no proof of them can be "
            f"recorded; declare them with @vecmode.supports or vecmode.register first."
        )
    with declare.lock:
        _recorded[cls] = (found, frozenset(modes), summary)


def record_env_verified(cls: type, mode: AutoresetMode, summary: str) -> None:
    """Record that ``check_vector_env`` proved envs of ``cls`` behave as ``mode``."""
    with declare.lock:
        _recorded_envs.setdefault(cls, {})[mode] = summary


def _proven(cls: type, found: Declaration, mode: AutoresetMode | None) -> str | None:
    """How runs proved ``cls``'s declaration (in ``mode``, or in every mode): "" by
    vecmode's, a note by a recorded run; None if nothing did."""
    own = declare.own_declaration(cls)
    if own is not None and own.source == "gymnasium":
        return ""
    if class_path(cls) in CONFORMANCE_TESTED and found.source == "supports":
        return ""
    proved, modes, summary = _recorded.get(cls, (None, frozenset(), ""))
    if proved is found and (frozenset(MODES) if mode is None else {mode}) <= modes:
        return f"verified: proven by check_wrapper in this process ({summary})"
    return None


def proof(cls: type, mode: AutoresetMode | None = None) -> tuple[Evidence, str]:
    """The evidence for ``cls``'s declaration (in ``mode``, or in every mode), and
    a note: where a recorded proof comes from, or how to prove it."""
    found = declare.declaration(cls)
    if found is None:
        return Evidence.NONE, ""
    proven = _proven(cls, found, mode)
    if proven is not None:
        return Evidence.VERIFIED, proven
    name = cls.__name__
    how = (
        f"run {check_command(cls)} to prove them, and record a passing run "
        f"(check_wrapper({name}).record(), e.g. in your tests) to have it reported "
        f"verified."
    )
    own = declare.own_declaration(cls)
    if own is not None:
        by = "@vecmode.supports" if own.source == "supports" else "vecmode.register"
        return Evidence.DECLARED, (
            f"its modes are declared by {name} itself ({by}) and not proven here; {how}"
        )
    for base in cls.__mro__[1:]:
        if (
            declare.declaration(base) is found
            and _proven(base, found, mode) is not None
        ):
            return Evidence.INHERITED, (
                f"its modes are inherited from {base.__name__}, which is verified; "
                f"nothing proves this subclass's own code; {how}"
            )
    base = next(k for k in cls.__mro__[1:] if declare.own_declaration(k) is found)
    return Evidence.INHERITED, (
        f"its modes are {base.__name__}'s declaration, inherited: nothing proves "
        f"this class's own code; {how}"
    )


def evidence(cls_or_instance: Any, mode: ModeLike | None = None) -> Evidence:
    """What the declared modes of a wrapper class (or instance) rest on, in
    ``mode`` only or (by default) in every mode; for a vector env class (or
    instance), what its mode rests on: ``mode``, else the one it declares, else
    one a ``check_vector_env(...).record()`` proved.

    >>> import vecmode
    >>> vecmode.registry.evidence(vecmode.wrappers.NormalizeReward).value
    'verified'
    """
    given = cls_or_instance
    cls = given if isinstance(given, type) else type(given)
    if issubclass(cls, VectorEnv) and not issubclass(cls, VectorWrapper):
        found = as_mode(mode) if mode is not None else mode_of(given)
        if found is None:
            with declare.lock:
                found = next(iter(_recorded_envs.get(cls, {})), None)
        return env_proof(cls, found)[0]
    return proof(cls, None if mode is None else as_mode(mode))[0]


def check_command(cls: type, every_mode: bool = False) -> str:
    """What checks ``cls``: ``vecmode conform`` if it can be imported by name, else
    ``check_wrapper``; in every mode or (by default) those declared."""
    if "<locals>" in cls.__qualname__ or cls.__module__ == "__main__":
        modes = ", modes=vecmode.MODES" if every_mode else ""
        return f"`vecmode.testing.check_wrapper({cls.__name__}{modes})`"
    modes = " --modes NextStep SameStep Disabled" if every_mode else ""
    return f"`vecmode conform {class_path(cls)}{modes}`"


def env_proof(cls: type, declared: AutoresetMode | None) -> tuple[Evidence, str]:
    """The evidence for a vector env class's mode ``declared`` (None: none), and a
    note: where a recorded proof comes from, or how to prove it."""
    name = cls.__name__
    if declared is None:
        return Evidence.NONE, (
            f"`vecmode probe module:factory` (vecmode.probe_mode) finds the mode "
            f"{name} really behaves as."
        )
    if class_path(cls) in VERIFIED_ENVS:
        return Evidence.VERIFIED, ""
    with declare.lock:
        recorded = _recorded_envs.get(cls, {}).get(declared)
    if recorded is not None:
        return Evidence.VERIFIED, (
            f"verified: proven by check_vector_env in this process ({recorded})"
        )
    how = (
        "record a passing vecmode.testing.check_vector_env(factory).record() in "
        "the process that checks the stack (your tests, then "
        "vecmode.assert_compatible(envs, verified=True)); from the shell, "
        "`vecmode conform module:factory` proves it, but another command can't "
        "see that proof."
    )
    # a subclass of a verified class (EnvPool builds one per task)
    base = next((k for k in cls.__mro__[1:] if class_path(k) in VERIFIED_ENVS), None)
    if base is not None:
        return Evidence.INHERITED, (
            f"{name} is a {base.__name__}, whose mode vecmode's tests prove; nothing "
            f"proves this subclass's own code: {how}"
        )
    return Evidence.DECLARED, (
        f"{name}'s metadata['autoreset_mode'] declares its mode, and nothing here "
        f"proved it: {how}"
    )
