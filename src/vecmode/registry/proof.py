"""What a verdict rests on: :class:`Evidence`, and the proofs recorded in this process."""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from enum import Enum
from typing import Any

from gymnasium.vector import AutoresetMode

from vecmode._evidence import CONFORMANCE_TESTED, VERIFIED_ENVS
from vecmode.modes import MODES, ModeLike, as_mode
from vecmode.registry.declare import (
    Declaration,
    class_path,
    declaration,
    lock,
    own_declaration,
)

FROM_GYMNASIUM_RUNS = (
    "established by runs of it in each mode (vecmode's entries for Gymnasium)"
)
FROM_CONFORMANCE_TESTS = (
    "proven by the conformance kit (check_wrapper) in vecmode's test suite"
)


class Evidence(str, Enum):
    """What a class's declared modes rest on (see ``docs/registry.md``)."""

    #: Runs proved them: vecmode's tests, the runs behind vecmode's entries for
    #: Gymnasium, or a ``check_wrapper(...).record()`` /
    #: ``check_vector_env(...).record()`` in this process.
    VERIFIED = "verified"
    #: The class declares its modes, and nothing here proved them.
    DECLARED = "declared"
    #: The modes are a base class's declaration (for an env: a subclass of a
    #: verified env class).
    INHERITED = "inherited"
    #: Nothing is declared.
    NONE = "none"

    def __str__(self) -> str:
        return self.value


#: Classes proven by check_wrapper in this process (the exact class): the
#: declaration proved (the proof lapses when it changes), the modes proved right
#: or refused, and the proof's summary.
_recorded: weakref.WeakKeyDictionary[
    type, tuple[Declaration, frozenset[AutoresetMode], str]
] = weakref.WeakKeyDictionary()
#: Vector env classes proven by check_vector_env: mode -> the proof's summary.
_recorded_envs: weakref.WeakKeyDictionary[type, dict[AutoresetMode, str]] = (
    weakref.WeakKeyDictionary()
)


def record_verified(cls: type, modes: Iterable[AutoresetMode], summary: str) -> None:
    """Record that ``check_wrapper`` proved ``cls`` right or refusing in ``modes``
    (what ``WrapperReport.record()`` calls)."""
    found = declaration(cls)
    if found is None:
        raise ValueError(
            f"{cls.__name__} declares no autoreset modes, so there is nothing to "
            f"record as verified; declare them with @vecmode.supports (or "
            f"vecmode.register) first."
        )
    with lock:
        _recorded[cls] = (found, frozenset(modes), summary)


def record_env_verified(cls: type, mode: AutoresetMode, summary: str) -> None:
    """Record that ``check_vector_env`` proved that envs of ``cls`` behave as
    ``mode`` (what ``VectorEnvReport.record()`` calls)."""
    with lock:
        _recorded_envs.setdefault(cls, {})[mode] = summary


def proof(cls: type, mode: AutoresetMode | None = None) -> tuple[Evidence, str]:
    """The evidence for ``cls``'s declaration (in ``mode``, or in every mode),
    and where it comes from."""
    found = declaration(cls)
    if found is None:
        return Evidence.NONE, ""
    own = own_declaration(cls)
    if own is not None and own.source == "gymnasium":
        return Evidence.VERIFIED, FROM_GYMNASIUM_RUNS
    if class_path(cls) in CONFORMANCE_TESTED and found.source == "supports":
        return Evidence.VERIFIED, FROM_CONFORMANCE_TESTS
    proved, modes, summary = _recorded.get(cls, (None, frozenset(), ""))
    wanted = frozenset(MODES) if mode is None else frozenset({mode})
    if proved is found and wanted <= modes:
        return Evidence.VERIFIED, f"proven by check_wrapper in this process ({summary})"
    if own is not None:
        how = "@vecmode.supports" if own.source == "supports" else "vecmode.register"
        return Evidence.DECLARED, (
            f"its modes are declared by {cls.__name__} itself ({how}) and not "
            f"proven here"
        )
    return Evidence.INHERITED, _inherited(cls, found, mode)


def _inherited(cls: type, found: Declaration, mode: AutoresetMode | None) -> str:
    """Where ``cls``'s inherited declaration comes from: the nearest base whose
    modes are proven, else the base that declares them."""
    for base in cls.__mro__[1:]:
        if declaration(base) is found and proof(base, mode)[0] is Evidence.VERIFIED:
            return (
                f"its modes are inherited from {base.__name__}, which is verified; "
                f"nothing proves this subclass's own code"
            )
    base = next(k for k in cls.__mro__[1:] if own_declaration(k) is found)
    return (
        f"its modes are {base.__name__}'s declaration, inherited: nothing proves "
        f"this class's own code"
    )


def evidence(cls_or_instance: Any, mode: ModeLike | None = None) -> Evidence:
    """What the declared modes of a wrapper class (or instance) rest on.

    Args:
        cls_or_instance: the wrapper class or instance.
        mode: in that mode only (a recorded run may prove some modes only);
            default: in every mode.

    >>> import vecmode
    >>> from vecmode.wrappers import NormalizeReward, StatefulWrapper
    >>> vecmode.registry.evidence(NormalizeReward).value  # vecmode's tests prove it
    'verified'
    >>> class Mine(StatefulWrapper):
    ...     pass
    >>> vecmode.registry.evidence(Mine).value  # StatefulWrapper's declaration
    'inherited'
    """
    cls = (
        cls_or_instance if isinstance(cls_or_instance, type) else type(cls_or_instance)
    )
    return proof(cls, None if mode is None else as_mode(mode))[0]


def _import_path(cls: type) -> str | None:
    """``"module:QualName"``, or None for a class defined in a function or __main__."""
    if "<locals>" in cls.__qualname__ or cls.__module__ == "__main__":
        return None
    return class_path(cls)


def how_to_verify(cls: type) -> str:
    """How to prove ``cls``'s declared modes, and have them reported verified."""
    path, name = _import_path(cls), cls.__name__
    run = (
        f"run `vecmode conform {path}`"
        if path
        else f"run vecmode.testing.check_wrapper({name})"
    )
    return (
        f"{run} to prove them, and record a passing run (check_wrapper({name})."
        f"record(), e.g. in your tests) to have it reported verified."
    )


def how_to_find_modes(cls: type) -> str:
    """How to find the modes an undeclared ``cls`` is right in."""
    path = _import_path(cls)
    run = (
        f"`vecmode conform {path} --modes NextStep SameStep Disabled`"
        if path
        else f"vecmode.testing.check_wrapper({cls.__name__}, modes=vecmode.MODES)"
    )
    return f"{run} shows which modes it is right in."


def env_proof(env: Any, declared: AutoresetMode | None) -> tuple[Evidence, str]:
    """The innermost env's evidence: its class's, in the mode it declares."""
    cls = type(env)
    name = cls.__name__
    if declared is None:
        return Evidence.NONE, (
            f"`vecmode probe module:factory` (vecmode.probe_mode) finds the mode a "
            f"{name} really behaves as."
        )
    if class_path(cls) in VERIFIED_ENVS:
        return Evidence.VERIFIED, ""
    with lock:
        recorded = _recorded_envs.get(cls, {}).get(declared)
    if recorded is not None:
        return Evidence.VERIFIED, (
            f"verified: proven by check_vector_env in this process ({recorded})"
        )
    how = (
        "run `vecmode probe module:factory` (vecmode.probe_mode) or "
        "vecmode.testing.check_vector_env on a factory of it, and record a passing "
        "check (vecmode.testing.check_vector_env(factory).record()"
    )
    # a subclass of a verified class (EnvPool builds one per task)
    base = next((k for k in cls.__mro__[1:] if class_path(k) in VERIFIED_ENVS), None)
    if base is not None:
        return Evidence.INHERITED, (
            f"{name} is a {base.__name__}, whose mode vecmode's tests prove; nothing "
            f"proves this subclass's own code: {how}) to have it reported verified."
        )
    return Evidence.DECLARED, (
        f"{name}'s metadata['autoreset_mode'] declares its mode, and nothing here "
        f"proved that it behaves so: {how}, e.g. in your tests) to have it reported "
        f"verified."
    )
