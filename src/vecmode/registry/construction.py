"""Checking a wrapper when it is built: :func:`supports`, :func:`register`,
:func:`unregister` and :func:`guard` wrap ``__init__`` with ``wrapt``."""

from __future__ import annotations

import contextlib
import contextvars
import weakref
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import wrapt
from gymnasium.vector import VectorEnv, VectorWrapper

from vecmode import _arrays, _strict
from vecmode.env_classes import (
    class_path,
    layers,
    reads_final_observations,
    refuse_lost,
    row_state_fault,
)
from vecmode.errors import (
    ArrayLibraryError,
    IncompatibleModeError,
    incompatible_mode,
)
from vecmode.forwarding import ForwardingWrapper
from vecmode.modes import ModeLike, mode_or_assumed
from vecmode.registry import declare
from vecmode.registry.declare import ModeReasons

_W = TypeVar("_W", bound=type)

#: Instrumented class -> its own ``__init__`` before it was wrapped (or None).
_instrumented: dict[type, Any] = {}
#: Why each class is instrumented: "supports", "register", "watch" (VectorWrapper).
_because: dict[type, set[str]] = {}
#: Objects being built (checked once, with their own class's declaration).
_constructing: contextvars.ContextVar[frozenset[int]] = contextvars.ContextVar(
    "vecmode_constructing", default=frozenset()
)
#: The guards held in this thread or task, and in the whole process.
_guards: contextvars.ContextVar[tuple[Guard, ...]] = contextvars.ContextVar(
    "vecmode_guards", default=()
)
_live_guards: set[Guard] = set()


def check_construction(cls: type, env: Any) -> None:
    """Raise if a ``cls`` wrapper may not be built on ``env``."""
    found = declare.declaration(cls)
    if not hasattr(env, "metadata"):
        return
    if (found is None or found.source == "gymnasium") and not _guards.get():
        return
    first = getattr(cls, "refuse_first", None)  # a class's own, better reason
    if first is not None:
        first(env)
    if found is None or not found.array_native:  # the batches first: its remedy
        _check_arrays(cls, env)  # comes before any mode's
    if found is not None:
        _check_modes(cls, found.over(env), env)
    if reads_final_observations(cls):
        refuse_lost(env, cls.__name__, "read final observations")
    if fault := row_state_fault(cls, env):
        raise IncompatibleModeError(fault)


def _check_modes(cls: type, found: declare.Declaration, env: Any) -> None:
    """Raise if ``found``, ``cls``'s declaration, refuses ``env``'s mode."""
    name = cls.__name__
    mode = mode_or_assumed(env, name, None, stacklevel=3)
    if mode not in found.modes:
        convert = found.modes and declare.convert_hint(env, mode, found.modes)
        instead = found.instead or convert or ""
        raise IncompatibleModeError(
            incompatible_mode(name, mode, found.modes, found.why(mode), instead)
        )
    why = declare.dense_layout_fault(cls, env, mode, found)
    if why := why or declare.string_mode_fault(cls, env, found):
        raise IncompatibleModeError(why)


def _check_arrays(cls: type, env: Any) -> None:
    """Raise if ``cls``, not array-native, would get batches of another library
    than NumPy from ``env``."""
    name = cls.__name__
    converted = _converted_to(env)
    if (
        converted is not None
        and issubclass(cls, ForwardingWrapper)
        and not getattr(cls, "converts_arrays", False)
    ):
        layer, library = converted
        raise ArrayLibraryError(
            f"{name} reads NumPy arrays, but {layer} below it returns {library} "
            f"arrays. Put the conversion outermost: {layer}({name}(env))."
        )
    if _arrays.is_array_env(env):
        library = str(_arrays.declared_namespace(env))
        note = declare.not_array_native(cls, library)
        raise ArrayLibraryError(f"{name} cannot wrap this {type(env).__name__}: {note}")


def _converted_to(env: Any) -> tuple[str, str] | None:
    """(layer name, array library) of the nearest conversion if not to NumPy."""
    for layer in layers(env):
        target = getattr(layer, "__dict__", {}).get("_target_xp")
        if target is not None:  # no public attribute says it
            name = _arrays.name_of(target)
            return None if name == "numpy" else (type(layer).__name__, name)
    return None


def _instrument(cls: type, because: str) -> None:
    _because.setdefault(cls, set()).add(because)
    if cls in _instrumented:
        return
    own = cls.__dict__.get("__init__")

    def checked_init(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        building = _constructing.get()
        if cls not in _instrumented or id(instance) in building:
            return wrapped(*args, **kwargs)
        if cls is VectorWrapper:
            _watch()
        # VectorWrapper takes only a VectorEnv: the first one among the arguments
        given = (*args, *kwargs.values())
        env = next((value for value in given if isinstance(value, VectorEnv)), None)
        check_construction(type(instance), env)
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


def _watch() -> None:
    """Instrument the registered classes (and ``VectorWrapper`` if needed)."""
    with declare.lock:
        declare.resolve_pending()
        for cls in list(declare.registered):
            _instrument(cls, "register")
        if declare.pending or _live_guards:
            _instrument(VectorWrapper, "watch")
        else:
            _release(VectorWrapper, "watch")


def instrumented() -> frozenset[type]:
    """The classes whose construction vecmode currently checks."""
    return frozenset(_instrumented)


def supports(
    *modes: ModeLike | Iterable[ModeLike],
    output: ModeLike | None = None,
    why: ModeReasons | None = None,
    instead: str | None = None,
    array_native: bool = False,
) -> Callable[[_W], _W]:
    """Class decorator: the modes of the wrapped env a ``VectorWrapper`` supports.

    Building the wrapper on an env in another mode raises
    :class:`~vecmode.IncompatibleModeError` before its ``__init__`` runs.

    Args:
        modes: the modes, one by one or as one iterable.
        output: the mode it produces, for a wrapper that changes the mode.
        why: an unsupported mode -> the reason, for the error message.
        instead: what to do instead, for the error message.
        array_native: it takes torch, JAX... batches in their library and on
            their device, and SameStep's final observations in the dense layout
            there. Otherwise building it over an env that declares
            another library than NumPy (``metadata["array_namespace"]``) raises
            :class:`~vecmode.errors.ArrayLibraryError`.

    >>> import gymnasium as gym, vecmode
    >>> @vecmode.supports("NextStep", "Disabled", why={"SameStep": "It skips final_obs."})
    ... class MyWrapper(gym.vector.VectorWrapper):
    ...     pass
    >>> envs = vecmode.make_vec("CartPole-v1", 2, "sync", autoreset_mode="SameStep")
    >>> MyWrapper(envs)
    Traceback (most recent call last):
    ...
    vecmode.errors.IncompatibleModeError: MyWrapper cannot wrap an env in mode SameStep: it supports NextStep, Disabled. It skips final_obs. ...
    >>> envs.close()
    """
    if len(modes) == 1 and isinstance(modes[0], type):  # @supports, no modes
        raise TypeError(
            f"@vecmode.supports was used without its modes on {modes[0].__name__}: "
            f"write @vecmode.supports('NextStep', ...) with the modes it supports."
        )
    found = declare.declare(modes, output, None, why, instead, "supports", array_native)

    def decorate(cls: _W) -> _W:
        declare.wrapper_class(cls, "@vecmode.supports")
        with declare.lock:
            type.__setattr__(cls, declare.ATTRIBUTE, found)
            declare.decorated.append(weakref.ref(cls))
            _instrument(cls, "supports")
        return cls

    return decorate


@wrapt.synchronized(declare.lock)
def register(
    cls: type | str,
    modes: ModeLike | Iterable[ModeLike],
    *,
    output: ModeLike | None = None,
    wrong: ModeReasons | None = None,
    why: ModeReasons | None = None,
    instead: str | None = None,
    array_native: bool = False,
) -> None:
    """Declare the modes of a wrapper class you don't own, and check it from now on.

    ``output``, ``why``, ``instead`` and ``array_native`` are as for
    :func:`supports`.

    Args:
        cls: the class, or ``"package.module:ClassName"`` (imports nothing).
        wrong: modes it accepts but gets wrong, with what goes wrong.

    >>> import gymnasium as gym, vecmode
    >>> class Legacy(gym.vector.VectorWrapper):
    ...     pass
    >>> vecmode.register(Legacy, ["NextStep"])
    >>> [mode.value for mode in vecmode.supported_modes(Legacy)]
    ['NextStep']
    >>> vecmode.unregister(Legacy)
    True
    """
    found = declare.declare(
        modes, output, wrong, why, instead, "register", array_native
    )
    if isinstance(cls, str):
        class_path(cls)  # checked, not imported
    else:
        declare.wrapper_class(cls, "vecmode.register")
    declare.keep(cls, found)
    _watch()


@wrapt.synchronized(declare.lock)
def unregister(cls: type | str) -> bool:
    """Remove a :func:`register` declaration and its check; True if there was one."""
    had, target = declare.forget(cls)
    if target is not None:
        _release(target, "register")
    _watch()
    return had


class Guard(contextlib.AbstractContextManager["Guard"]):
    """Handle returned by :func:`guard`; :meth:`release` or a ``with`` block ends it."""

    def __init__(self) -> None:
        self._held = True
        self._token = _strict.made_here()
        _guards.set((*_guards.get(), self))
        with declare.lock:
            _live_guards.add(self)
            _watch()

    @property
    def active(self) -> bool:
        """Whether the guard is held."""
        return self._held

    def release(self) -> None:
        """End the guard; a second call does nothing."""
        if not self._held:
            return
        _strict.release_here(self._token, "guard")
        _guards.set(tuple(guard for guard in _guards.get() if guard is not self))
        with declare.lock:
            _live_guards.discard(self)
            self._held = False
            _watch()

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __call__(self, function: Any) -> Any:
        raise _strict.not_a_decorator(self, "guard")


def guard() -> Guard:
    """Check Gymnasium's own vector wrappers against vecmode's entries for them:
    until the handle is released (or its ``with`` block ends), building one in a
    mode it refuses or gets wrong raises :class:`~vecmode.IncompatibleModeError`,
    in this thread or asyncio task only (an example: ``docs/registry.md``)."""
    return Guard()
