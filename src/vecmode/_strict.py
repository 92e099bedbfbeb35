"""``vecmode.strict``: whether an env that declares no autoreset mode is an
error (strict) or a warning, in this thread or task."""

from __future__ import annotations

import contextvars
import itertools
from typing import Any

#: The strict handles held in this thread or task, oldest first: (number,
#: enabled). The newest decides; a handle may be released in any order.
_strict: contextvars.ContextVar[tuple[tuple[int, bool], ...]] = contextvars.ContextVar(
    "vecmode_strict", default=()
)
_strict_numbers = itertools.count()
#: Set where each handle is made: resetting its token elsewhere (another
#: thread, or a task's copy of the context) raises ValueError.
_made_here: contextvars.ContextVar[None] = contextvars.ContextVar("vecmode_made_here")


def made_here() -> contextvars.Token[None]:
    """A token that :func:`release_here` takes back in this thread or task only."""
    return _made_here.set(None)


def release_here(token: contextvars.Token[None], what: str) -> None:
    """``RuntimeError`` unless called where ``token`` was made (once)."""
    try:
        _made_here.reset(token)
    except ValueError:
        raise RuntimeError(
            f"this vecmode.{what}() handle was made in another thread or task "
            f"({what} holds in the thread or task that makes it): release it there."
        ) from None


def not_a_decorator(handle: Any, what: str) -> TypeError:
    """The error of ``@vecmode.{what}()``, once ``handle`` (if any) is released."""
    if handle is not None:
        handle.release()
    return TypeError(
        f"vecmode.{what}() is no decorator: it holds from the call on. Write "
        f"'with vecmode.{what}():' inside the function; the handle is released."
    )


class Strict:
    """Handle returned by :func:`strict`; its setting holds until released
    (handles made later take precedence while they are held)."""

    def __init__(self, enabled: bool) -> None:
        self._number: int | None = next(_strict_numbers)
        self._token = made_here()
        _strict.set((*_strict.get(), (self._number, bool(enabled))))

    def restore(self) -> None:
        """End this handle's setting; a second call does nothing."""
        if self._number is None:
            return
        release_here(self._token, "strict")
        _strict.set(tuple(entry for entry in _strict.get() if entry[0] != self._number))
        self._number = None

    #: The same, under the name a guard's handle has.
    release = restore

    def __enter__(self) -> Strict:
        return self

    def __exit__(self, *exc: object) -> None:
        self.restore()

    def __call__(self, function: Any) -> Any:
        raise not_a_decorator(self, "strict")


def strict(enabled: bool = True) -> Strict:
    """Treat an env that declares no mode as an error, not a warning
    (:class:`~vecmode.UndeclaredModeWarning`, NEXT_STEP assumed) in declared
    wrappers and :func:`~vecmode.check_stack`. A call holds for the rest of the
    thread or task; a ``with`` block, to its end."""
    if callable(enabled):  # @vecmode.strict, without parentheses
        raise not_a_decorator(None, "strict")
    return Strict(enabled)


def is_strict(override: bool | None = None) -> bool:
    """``override``, else the :func:`strict` setting in force."""
    if override is not None:
        return override
    held = _strict.get()
    return held[-1][1] if held else False
