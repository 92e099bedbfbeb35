"""``WrapperConformance``: :func:`~vecmode.testing.check_wrapper` as a test mixin,
one test per property, in the spirit of dm_env's ``EnvironmentTestMixin``."""

from __future__ import annotations

from typing import Any, ClassVar

from gymnasium.vector import VectorEnv

from vecmode.testing.wrapper.check import check_wrapper
from vecmode.testing.wrapper.events import ConformanceError
from vecmode.testing.wrapper.report import WrapperReport

__all__ = ["WrapperConformance"]


class WrapperConformance:
    """A test mixin: one ``test_*`` per property :func:`check_wrapper` proves.

    Mix it into a pytest test class (or a ``unittest.TestCase``) and define
    :meth:`make_wrapper`; ``check_options`` holds :func:`check_wrapper`'s other
    arguments. The whole check runs once per class; where it fails, the failed
    property's test fails with its message, and each other test checks its own
    property alone.

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
        outcome = self._outcome()
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def _outcome(self) -> WrapperReport | BaseException:
        cls = type(self)
        if "_conformance_outcome" not in vars(cls):
            try:
                outcome: Any = check_wrapper(self.make_wrapper, **self.check_options)
            except Exception as error:
                outcome = error
            cls._conformance_outcome = outcome  # type: ignore[attr-defined]
        return vars(cls)["_conformance_outcome"]

    def _check(self, prop: str) -> None:
        """Fail where the wrapper breaks ``prop``."""
        outcome = self._outcome()
        if isinstance(outcome, ConformanceError) and outcome.property != prop:
            options = {**self.check_options, "properties": [prop]}
            check_wrapper(self.make_wrapper, **options)
        elif isinstance(outcome, BaseException):
            raise outcome

    def test_builds_in_declared_modes(self) -> None:
        """Built in every mode it declares (and over every base)."""
        self._check("builds_in_declared_modes")

    def test_refuses_undeclared_modes(self) -> None:
        """Every mode it does not declare is refused when it is built."""
        self._check("refuses_undeclared_modes")

    def test_keeps_the_autoreset_mode(self) -> None:
        """``metadata["autoreset_mode"]`` is the mode it wraps (or declares)."""
        self._check("keeps_the_autoreset_mode")

    def test_handles_every_call(self) -> None:
        """``reset``, ``step`` and masked resets work in every declared mode."""
        self._check("handles_every_call")

    def test_returns_well_formed_results(self) -> None:
        """Observations in its spaces, final ones too, with SAME_STEP's masks;
        rewards and flags of the right shapes and types."""
        self._check("returns_well_formed_results")

    def test_reset_step_stays_empty(self) -> None:
        """NEXT_STEP's reset step keeps reward 0 and both flags False."""
        self._check("reset_step_stays_empty")

    def test_masked_reset_keeps_the_others(self) -> None:
        """A masked reset returns the other sub-envs' last observations."""
        self._check("masked_reset_keeps_the_others")

    def test_passes_env_infos_on(self) -> None:
        """The sub-envs' own infos reach the caller at every real transition."""
        self._check("passes_env_infos_on")

    def test_leaves_inputs_untouched(self) -> None:
        """``step`` leaves the caller's actions, ``reset`` its options, as given."""
        self._check("leaves_inputs_untouched")

    def test_no_writes_below(self) -> None:
        """Nothing the env below returned is written into."""
        self._check("no_writes_below")

    def test_results_kept(self) -> None:
        """Nothing a call returned is changed by a later call."""
        self._check("results_kept")

    def test_mode_equivalence_together(self) -> None:
        """The same events in every mode where episodes end together."""
        self._check("mode_equivalence_together")

    def test_mode_equivalence_staggered(self) -> None:
        """The same events in every mode with staggered episodes and cuts."""
        self._check("mode_equivalence_staggered")

    def test_same_over_every_base(self) -> None:
        """The same events over every base env of one mode."""
        self._check("same_over_every_base")

    def test_cut_like_truncated(self) -> None:
        """An episode cut by a masked reset is followed by what one the env
        truncated there is."""
        self._check("cut_like_truncated")
