"""``WrapperReport``: what :func:`~vecmode.testing.check_wrapper` proved."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from gymnasium.vector import AutoresetMode

from vecmode import registry
from vecmode.modes import MODES, caller_resets
from vecmode.testing.wrapper.events import PROPERTIES, PROPERTY_TEXT
from vecmode.testing.wrapper.schedules import DEFAULT_BASES, base_env

#: The limit of a check made without ``episodic``.
NOT_EPISODIC = (
    "episodic not checked: if its outputs depend on the current episode alone, "
    "pass episodic=True (vecmode conform --episodic)."
)
#: The properties a full check makes (``episodic`` only when asked).
ALWAYS = tuple(p for p in PROPERTIES if p != "episodic")


@dataclass(frozen=True)
class WrapperReport:
    """What :func:`~vecmode.testing.check_wrapper` proved; ``str(report)`` shows
    it all, :meth:`record` records it. ``wrapper_class`` is None where the
    factory built a stack of ``layers`` wrappers; ``refusals`` holds the errors
    of the class's own constructor."""

    wrapper: str
    modes: tuple[AutoresetMode, ...]
    refused: tuple[AutoresetMode, ...]
    runs: tuple[str, ...]
    transitions: int
    batch_dependent: bool
    wrapper_class: type | None = field(default=None, compare=False, repr=False)
    refusals: Mapping[AutoresetMode, str] = field(
        default_factory=lambda: MappingProxyType({}), compare=False, repr=False
    )
    layers: int = field(default=1, compare=False, repr=False)
    bases: tuple[str, ...] = field(default=DEFAULT_BASES, compare=False, repr=False)
    properties: tuple[str, ...] = field(default=PROPERTIES, compare=False, repr=False)
    _factory: Any = field(default=None, compare=False, repr=False)
    _kinds: Mapping[str, Any] = field(
        default_factory=lambda: MappingProxyType({}), compare=False, repr=False
    )
    #: The array library an array-native class was also proved over (None: none).
    also_over: str | None = field(default=None, compare=False, repr=False)
    #: Why an array-native class was proved over NumPy batches only ("": it was not).
    numpy_only: str = field(default="", compare=False, repr=False)
    #: The modes the wrapper declares (None: it declares none).
    declared: frozenset[AutoresetMode] | None = field(
        default=frozenset(MODES), compare=False, repr=False
    )
    #: The info keys the wrapper adds that compare_info does not read.
    unread_info: tuple[str, ...] = field(default=(), compare=False, repr=False)

    @property
    def limits(self) -> tuple[str, ...]:
        """What this proof cannot see."""
        return (*self._mode_limits(), *self._run_limits())

    def _mode_limits(self) -> list[str]:
        found = []
        declared = self.wrapper_class and registry.declaration(self.wrapper_class)
        modes = declared.modes if declared else ()
        unproved = [m.value for m in MODES if m in modes and m not in self.modes]
        if unproved:
            found.append(
                f"declares {', '.join(unproved)} too, not proved here: prove every "
                f"mode it declares (modes=None)."
            )
        if len(self.modes) == 1:
            more = "prove" if unproved else "declare and prove"
            found.append(
                f"proved in {self.modes[0].value} alone: its runs are compared with "
                f"each other only; {more} more modes."
            )
        if self.modes and all(caller_resets(mode) for mode in self.modes):
            found.append(
                "every mode proved has the caller reset ended sub-envs: state kept "
                "across masked resets is not seen; prove a mode where the env resets."
            )
        return found

    def _run_limits(self) -> list[str]:
        found = []
        if not set(ALWAYS) <= set(self.properties):
            found.append(
                f"checked {', '.join(self.properties) or 'no property'} only "
                f"(properties=None: all)."
            )
        if "episodic" not in self.properties:
            found.append(NOT_EPISODIC)
        if self.numpy_only:
            found.append(
                f"declares array_native, but was run over NumPy batches only "
                f"({self.numpy_only})."
            )
        if self.unread_info:
            found.append(
                f"info keys it adds that compare_info does not read, so not compared: "
                f"{', '.join(self.unread_info)} (pass compare_info=... to compare "
                f"them; vecmode conform --compare-info KEY)."
            )
        if self.batch_dependent:
            found.append(
                "batch-dependent: values compared across modes only where episodes "
                "end together (kinds, actions and flags everywhere)."
            )
        left_out = [base for base in DEFAULT_BASES if base not in self.bases]
        if left_out:
            found.append(
                f"run over {', '.join(self.bases)} only, not over "
                f"{', '.join(left_out)}; record() refuses this proof if the wrapper "
                f"can be built over those."
            )
        return found

    def record(self) -> WrapperReport:
        """Record this proof in this process: :func:`vecmode.check_stack` then
        reports :attr:`wrapper_class` as *verified* in the modes proved or
        refused, until its declaration changes, naming the info keys it adds
        that were not compared. Returns the report.

        Raises:
            ValueError: the check left out properties or a default base the
                wrapper builds over, or proved a stack.
        """
        if not set(ALWAYS) <= set(self.properties):
            raise ValueError(
                f"check_wrapper({self.wrapper}) checked {', '.join(self.properties)} "
                f"only; record a check of every property (properties=None)."
            )
        if self.wrapper_class is None:
            raise ValueError(
                f"check_wrapper({self.wrapper}) proved a stack of {self.layers} "
                f"wrappers; record a check of each class alone."
            )
        for base in DEFAULT_BASES:
            if base not in self.bases and self._builds_over(base):
                raise ValueError(
                    f"{self.wrapper} was proved over some base envs only, but it can "
                    f"also be built over {base}: record a proof that covers it "
                    f"(bases=None, or name {base!r} in bases)."
                )
        unread = ", ".join(self.unread_info)
        summary = self.summary + (
            f"; info keys not compared: {unread}" if unread else ""
        )
        registry.record_verified(
            self.wrapper_class, (*self.modes, *self.refused), summary
        )
        return self

    def _builds_over(self, base: str) -> bool:
        """Whether the factory builds over ``base`` in a proved mode."""
        if self._factory is None:
            return False
        for mode in self.modes:
            envs = base_env(base, mode, self._kinds)
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
        library = self._kinds.get("array_library")
        over = f" over {library} batches" if library not in (None, "numpy") else ""
        over = f" over NumPy and {self.also_over} batches" if self.also_over else over
        return (
            f"{self.wrapper}: right in {modes}{over} ({len(self.runs)} runs, "
            f"{self.transitions} transitions compared)"
        )

    def __str__(self) -> str:
        """The summary, one line per property checked, then the limits."""
        lines = [self.summary]
        lines += [f"  ok  {prop}: {self._proved(prop)}" for prop in self.properties]
        lines += [
            f"refused {mode.value} at construction, by its own constructor: {why}"
            for mode, why in self.refusals.items()
        ]
        lines += [f"limits: {limit}" for limit in self.limits]
        return "\n".join(lines)

    def _proved(self, prop: str) -> str:
        """What this check proved of ``prop``, in a few words."""
        if prop.startswith("mode_equivalence") and len(self.modes) == 1:
            return "one mode: nothing to compare across modes"
        declared = [m.value for m in self.refused if m not in self.refusals]
        if prop != "refuses_undeclared_modes" or (self.refused and not declared):
            return PROPERTY_TEXT[prop]
        if declared:
            return f"refused at construction, as declared: {', '.join(declared)}"
        if self.declared is None:
            return "declares no mode, so none to refuse (it accepts every mode)"
        return "declares every mode: none to refuse"
