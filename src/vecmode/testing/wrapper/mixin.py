"""``WrapperConformance``: :func:`~vecmode.testing.check_wrapper` as a test mixin,
one test per property, in the spirit of dm_env's ``EnvironmentTestMixin``."""

from __future__ import annotations

import unittest
import warnings
from collections.abc import Callable
from typing import Any, ClassVar

from gymnasium.vector import VectorEnv

from vecmode.testing.wrapper.check import check_wrapper
from vecmode.testing.wrapper.events import PROPERTIES, ConformanceError, kept
from vecmode.testing.wrapper.report import ALWAYS, NOT_EPISODIC, WrapperReport


class WrapperConformance:
    """A test mixin: one ``test_<property>`` per property of
    :data:`~vecmode.testing.PROPERTIES`. Define :meth:`make_wrapper`; the check
    runs once per class, and fails the test of the property it breaks. A test
    whose property cannot be checked, another failing first, is skipped, as is
    ``test_episodic`` unless asked (``check_options = {"episodic": True}``).

    >>> from vecmode.testing import WrapperConformance
    >>> from vecmode.wrappers import ClipReward
    >>> class TestClipReward(WrapperConformance):
    ...     def make_wrapper(self, env):
    ...         return ClipReward(env, 0.0, 1.0)
    >>> TestClipReward().test_mode_equivalence_staggered()  # what pytest runs
    >>> TestClipReward().conformance_report().modes[0].value
    'NextStep'
    """

    #: Keyword arguments for :func:`check_wrapper` (``modes``, ``obs_type``, ...).
    check_options: ClassVar[dict[str, Any]] = {}

    def make_wrapper(self, env: VectorEnv) -> VectorEnv:
        """Build the wrapper (or stack) under test over ``env``."""
        raise NotImplementedError(
            f"{type(self).__name__} must define make_wrapper(self, env) returning "
            "the wrapper under test built over env"
        )

    def conformance_report(self) -> WrapperReport:
        """The report of the whole check (made once per class)."""
        outcome = self._conformance()
        if isinstance(outcome, BaseException):
            raise _fresh(outcome)
        return outcome

    def _conformance(self) -> WrapperReport | BaseException:
        cls = type(self)
        if "_conformance_outcome" not in vars(cls):
            options = {k: kept(v) for k, v in self.check_options.items()}
            cls._kept_options = options  # type: ignore[attr-defined]
            try:
                outcome: Any = check_wrapper(self.make_wrapper, **options)
            except Exception as error:
                outcome = error
                outcome.first_traceback = error.__traceback__  # type: ignore[attr-defined]
            cls._conformance_outcome = outcome  # type: ignore[attr-defined]
            if isinstance(outcome, WrapperReport) and outcome.unread_info:
                warnings.warn(  # (else a wrong key it adds passes unseen)
                    f"{cls.__name__}: {outcome.wrapper} adds info keys compare_info "
                    f"does not read, so not compared: {', '.join(outcome.unread_info)}"
                    f"; compare them with check_options = {{'compare_info': lambda "
                    f"info: info.get(KEY)}}.",
                    UserWarning,
                    stacklevel=3,
                )
        return vars(cls)["_conformance_outcome"]

    def _check(self, prop: str) -> None:
        """Fail where the wrapper breaks ``prop``: the diagnosis, without the
        kit's frames (a wrapper's own exception keeps its traceback); skip where
        another property fails before ``prop`` can be checked."""
        __tracebackhide__ = True  # pytest shows the test's line, then the message
        outcome = self._conformance()
        asked = vars(type(self))["_kept_options"]
        if isinstance(outcome, ConformanceError) and outcome.property != prop:
            options = {**asked, "properties": [prop]}
            try:
                outcome = check_wrapper(self.make_wrapper, **options)
            except ConformanceError as error:
                if error.property != prop:
                    raise unittest.SkipTest(
                        f"not checked: the wrapper breaks {error.property} first "
                        f"(test_{error.property} says how)"
                    ) from None
                outcome = error
        if isinstance(outcome, WrapperReport) and prop not in outcome.properties:
            if set(ALWAYS) <= set(outcome.properties):  # (episodic: not asked)
                raise unittest.SkipTest(NOT_EPISODIC)
            raise unittest.SkipTest("not checked: not in check_options['properties']")
        if isinstance(outcome, ConformanceError):
            raise ConformanceError(str(outcome), outcome.property) from (
                outcome.__cause__
            )
        if isinstance(outcome, BaseException):
            raise _fresh(outcome)


def _fresh(error: BaseException) -> BaseException:
    """``error`` with its first traceback (each raise would add its frames)."""
    return error.with_traceback(getattr(error, "first_traceback", None))


def _property_test(prop: str) -> Callable[[WrapperConformance], None]:
    def test(self: WrapperConformance) -> None:
        self._check(prop)

    test.__name__ = f"test_{prop}"
    test.__qualname__ = f"WrapperConformance.test_{prop}"
    test.__doc__ = f"The wrapper has the property {prop} (docs/authors.md)."
    return test


for _prop in PROPERTIES:
    setattr(WrapperConformance, f"test_{_prop}", _property_test(_prop))
