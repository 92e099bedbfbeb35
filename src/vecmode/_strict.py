"""``vecmode.strict``: whether an env that declares no autoreset mode is an
error (strict) or a warning, in this thread or task."""

from __future__ import annotations

import contextvars
import itertools

#: The strict handles held in this thread or task, oldest first: (number,
#: enabled). The newest decides; a handle may be released in any order.
_strict: contextvars.ContextVar[tuple[tuple[int, bool], ...]] = contextvars.ContextVar(
    "vecmode_strict", default=()
)
_strict_numbers = itertools.count()


class Strict:
    """Handle returned by :func:`strict`; its setting holds until released
    (handles made later take precedence while they are held)."""

    def __init__(self, enabled: bool) -> None:
        self._number: int | None = next(_strict_numbers)
        _strict.set((*_strict.get(), (self._number, bool(enabled))))

    def restore(self) -> None:
        """End this handle's setting; a second call does nothing."""
        if self._number is None:
            return
        held = _strict.get()
        kept = tuple(entry for entry in held if entry[0] != self._number)
        if len(kept) == len(held):
            raise RuntimeError(
                "this vecmode.strict() handle was made in another thread or task "
                "(strict mode holds in the thread or task that turns it on): "
                "release it there."
            )
        _strict.set(kept)
        self._number = None

    #: The same, under the name a guard's handle has.
    release = restore

    def __enter__(self) -> Strict:
        return self

    def __exit__(self, *exc: object) -> None:
        self.restore()


def strict(enabled: bool = True) -> Strict:
    """Treat an env that declares no mode as an error, not a warning
    (:class:`~vecmode.UndeclaredModeWarning`, NEXT_STEP assumed) in declared
    wrappers and :func:`~vecmode.check_stack`. A call holds for the rest of the
    thread or task; a ``with`` block, to its end."""
    return Strict(enabled)


def is_strict(override: bool | None = None) -> bool:
    """``override``, else the :func:`strict` setting in force."""
    if override is not None:
        return override
    held = _strict.get()
    return held[-1][1] if held else False
