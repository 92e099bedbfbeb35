"""vecmode.replay.predictions: each mode's predictions, checked against runs."""

from __future__ import annotations

import numpy as np

from tests.custom_vector_envs import CounterVectorEnv
from vecmode.modes import AutoresetMode
from vecmode.replay.predictions import (
    AUTORESET_STEP,
    differs_at,
    looks_reset,
    mode_differences,
    run_differences,
    views,
)
from vecmode.replay.record import Call, Recorder

NEXT, SAME, DISABLED = AutoresetMode


def _run(mode, steps=3, **kwargs):
    """Sub-env 0's first episode ends at call 2, sub-env 1's at call 3."""
    recorder = Recorder(CounterVectorEnv(2, mode, **kwargs), seed=0)
    recorder.reset(seed=0)
    for _ in range(steps):
        recorder.step(recorder.sample())
    return recorder


def test_views_read_each_call_by_the_mode():
    calls = _run(NEXT).calls
    seen = list(views(NEXT, calls, 2))
    assert [view.boundary is None for view in seen] == [True, False, False, False]
    assert seen[3].boundary.real.tolist() == [False, True]  # sub-env 0's reset step
    disabled = list(views(DISABLED, calls, 2))
    assert disabled[3].pending.tolist() == [True, False]  # awaits the caller


def test_a_run_fits_its_own_mode_only():
    for mode in AutoresetMode:
        recorder = _run(mode)
        replay = Recorder(CounterVectorEnv(2, mode), seed=0)
        replay.replay(recorder.calls, lambda call: np.array([True, True]))
        others = {
            other
            for other in AutoresetMode
            if next(mode_differences(other, recorder.calls, 2, replay.calls), None)
        }
        assert mode not in others, mode


def test_a_reset_step_with_a_reward_breaks_next_step():
    diff = next(mode_differences(NEXT, _run(NEXT, bug="reset_step_reward").calls, 2))
    assert (diff.call, diff.sub_env, diff.field) == (3, 0, "reward")
    assert diff.note.startswith("in NextStep mode the step after an episode ends")


def test_same_step_s_layout_is_predicted_exactly():
    diff = next(mode_differences(SAME, _run(SAME, bug="no_final_obs_mask").calls, 2))
    assert (diff.call, diff.sub_env, diff.field, diff.got) == (
        2,
        0,
        "info['_final_obs']",
        "<no such key>",
    )
    diff = next(mode_differences(NEXT, _run(SAME).calls, 2))
    assert (diff.field, diff.expected) == ("info['_final_obs']", "no such key")


def test_an_autoreset_where_the_caller_resets_is_found_with_the_replay():
    run = _run(NEXT)
    replay = Recorder(CounterVectorEnv(2, NEXT), seed=0)
    replay.replay(run.calls, lambda call: np.array([call.index == 3, False]))
    assert looks_reset(run.calls[3], replay.calls[3], 0)
    assert not looks_reset(run.calls[2], replay.calls[2], 0)
    diff = next(mode_differences(DISABLED, run.calls, 2, replay.calls))
    assert (diff.call, diff.sub_env, diff.got) == (3, 0, AUTORESET_STEP)


def test_a_masked_reset_must_keep_the_others_where_the_caller_resets():
    recorder = _run(DISABLED, steps=1, bug="reset_mask_resets_all")
    recorder.reset_mask(np.array([True, False]))
    diff = next(mode_differences(DISABLED, recorder.calls, 2))
    assert (diff.kind, diff.sub_env, diff.field) == ("reset(mask)", 1, "obs")


def test_run_differences_compares_flags_results_and_info_keys():
    def run(terminated: bool, keys=()) -> list[Call]:
        step = Call(
            1, "step", obs=[0, 1], rewards=np.zeros(2), infos=dict.fromkeys(keys)
        )
        step.terminations = np.array([False, terminated])
        step.truncations = np.zeros(2, dtype=bool)
        return [Call(0, "reset", obs=[0, 1], infos={}), step]

    assert next(run_differences(run(False), run(False)), None) is None
    diff = next(run_differences(run(False), run(True), run="instance 2"))
    assert str(diff) == (
        "instance 2, call 1 (step), sub-env 1, terminated: expected False (bool), "
        "got True (bool)"
    )
    assert differs_at(run(False)[1], run(True)[1], 1)[0] == "terminated"
    diff = next(run_differences(run(False), run(False, ["t"])))
    assert (diff.field, diff.got) == ("info keys", "['t']")
    assert next(run_differences(run(False), run(True), upto=0), None) is None
    failed = run(False)
    failed[1].error = RuntimeError("boom")
    diff = next(run_differences(run(False), failed))
    assert (diff.field, diff.got) == ("result", "RuntimeError: boom")
