"""check_wrapper(..., episodic=True): each episode's outputs as a fresh wrapper's.
It catches state never cleared at an episode's start, an error every mode shares.
vecmode's own wrappers pass it (test_check_wrapper.py, every catalogue case)."""

from __future__ import annotations

import unittest

import numpy as np
import pytest

import vecmode
from vecmode import wrappers as vw
from vecmode.testing import (
    PROPERTIES,
    ConformanceError,
    WrapperConformance,
    check_wrapper,
)
from vecmode.testing.wrapper.report import NOT_EPISODIC


class AddsRewardsSinceBuilt(vw.ObservationWrapper):
    """Wrong the same way in every mode: each observation plus the sum of the
    sub-env's rewards since the wrapper was built, never cleared."""

    def __init__(self, env):
        super().__init__(env)
        self.total = np.zeros((self.num_envs, 1), np.float32)

    def observations(self, observations):
        return observations + self.total

    def _step_result(self, result):
        self.total = self.total + np.asarray(result[1], np.float32)[:, None]
        return super()._step_result(result)


def test_a_wrapper_that_never_clears_its_state_fails_episodic_alone():
    """It passes every other property (the gap: every mode agrees); with
    episodic=True, a fresh wrapper's first observation differs, named."""
    report = check_wrapper(AddsRewardsSinceBuilt)
    assert report.modes == tuple(vecmode.MODES)
    assert report.limits == (NOT_EPISODIC,)
    with pytest.raises(ConformanceError) as caught:
        check_wrapper(AddsRewardsSinceBuilt, episodic=True)
    assert caught.value.property == "episodic"
    assert str(caught.value) == (
        "AddsRewardsSinceBuilt breaks episodic (expected: each episode's outputs as "
        "from a fresh wrapper).\n"
        "[NextStep over vecmode.SyncVectorEnv, episodes ending together, a fresh "
        "wrapper from episode 2] (here) differs from [NextStep over "
        "vecmode.SyncVectorEnv, episodes ending together, from episode 2] (there): "
        "sub-env 0, an episode start (call 0 here, call 4 there), field obs: "
        "[-100.5  101.5 -100.5] here, [-93.5 108.5 -93.5] there\n"
        "Clear the state of the sub-envs whose episode starts: at reset, and where "
        "boundary.starts is True (a StatefulWrapper's episode_start). Outputs that "
        "depend on earlier episodes (running statistics) are not episodic."
    )


def test_a_class_says_it_is_episodic_and_an_argument_overrides_it():
    """A class's attribute; a stack is episodic if each of its layers says so
    (one that says nothing is not: NormalizeReward over a frame stack was)."""
    said = type("SaysEpisodic", (AddsRewardsSinceBuilt,), {"episodic": True})
    with pytest.raises(ConformanceError, match="SaysEpisodic breaks episodic"):
        check_wrapper(said)
    clipped = type("ClipsEpisodic", (vw.ClipReward,), {"episodic": True})
    with pytest.raises(ConformanceError, match=r"ClipsEpisodic\(SaysEpisodic\) breaks"):
        check_wrapper(lambda env: clipped(said(env), 0, 1))
    over = check_wrapper(lambda env: vw.ClipReward(said(env), 0, 1))  # says nothing
    assert over.limits == (NOT_EPISODIC,)
    assert check_wrapper(said, episodic=False).limits == (NOT_EPISODIC,)
    # a subclass says it again (PPOStack, a RecordEpisodeStatistics, is not)
    heir = type("Heir", (vw.RecordEpisodeStatistics,), {})
    assert check_wrapper(heir).limits == (NOT_EPISODIC,)


@pytest.mark.parametrize("library", [None, "torch"])
def test_running_statistics_are_not_episodic(library):
    """NormalizeObservation's statistics carry over: a fresh one differs."""
    if library is not None:
        pytest.importorskip(library)
    with pytest.raises(ConformanceError) as caught:
        check_wrapper(vw.NormalizeObservation, episodic=True, array_library=library)
    assert caught.value.property == "episodic"
    assert "sub-env 0, an episode start (call 0 here, call 4 there), field obs" in (
        str(caught.value)
    )


def test_episodic_is_selected_as_the_other_properties_are():
    only = check_wrapper(
        AddsRewardsSinceBuilt, episodic=True, properties=["no_writes_below"]
    )
    assert only.properties == ("no_writes_below",)
    with pytest.raises(ConformanceError, match="breaks episodic"):
        check_wrapper(AddsRewardsSinceBuilt, episodic=True, properties=["episodic"])
    none = check_wrapper(AddsRewardsSinceBuilt, properties=["episodic"])
    assert (none.properties, none.runs) == ((), ())
    assert none.limits[-1] == NOT_EPISODIC
    with pytest.raises(
        ValueError,
        match=r"transitions must be an int >= 9 \(its runs call reset\(\) after 8\)",
    ):
        check_wrapper(AddsRewardsSinceBuilt, episodic=True, transitions=8)


class NeverClears(WrapperConformance):
    check_options = {"episodic": True}

    def make_wrapper(self, env):
        return AddsRewardsSinceBuilt(env)


def test_the_mixin_fails_test_episodic_when_asked_and_skips_it_otherwise():
    with pytest.raises(ConformanceError, match="breaks episodic"):
        NeverClears().test_episodic()
    for prop in PROPERTIES:
        if prop != "episodic":
            getattr(NeverClears(), f"test_{prop}")()

    class NotAsked(NeverClears):
        check_options = {}

    with pytest.raises(unittest.SkipTest, match="episodic not checked"):
        NotAsked().test_episodic()
