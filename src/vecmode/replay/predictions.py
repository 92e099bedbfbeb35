"""What each autoreset mode predicts of a recorded run, and where a run breaks
it: :func:`mode_differences` checks a run against a mode's predictions,
:func:`run_differences` compares it with its replay."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from vecmode import modes
from vecmode.modes import AutoresetMode, Boundary, caller_resets
from vecmode.replay.compare import MISSING, Difference, describe, raised, same
from vecmode.replay.record import CALL_TEXT, Call

#: What a step that resets the sub-env looks like, for messages.
AUTORESET_STEP = (
    "an autoreset step (reward 0, terminated and truncated False, action ignored)"
)


def final_obs_present_message(mode: AutoresetMode) -> str:
    """Why a final observation must be in the info, in ``mode``."""
    return (
        f"in {mode.value} mode the step that ends an episode puts its final "
        f"observation / info in info['final_obs'] / info['final_info'], with "
        f"info['_final_obs'] / info['_final_info'] True for it"
    )


def masked_keeps_message(mode: AutoresetMode) -> str:
    """Why a masked reset must leave the other sub-envs as they were."""
    return (
        f"in {mode.value} mode reset(options={{'reset_mask': mask}}) resets only the "
        f"masked sub-envs; the others' observations come back unchanged"
    )


@dataclass(frozen=True)
class View:
    """A call, its boundary (steps only), and the sub-envs awaiting the caller."""

    call: Call
    boundary: Boundary | None
    pending: np.ndarray


class Walker:
    """Follows a run's calls in ``mode``: :meth:`see` gives each one's View."""

    def __init__(self, mode: AutoresetMode, num_envs: int) -> None:
        self.tracker = modes.BoundaryTracker(mode, num_envs)
        self.pending = np.zeros(num_envs, dtype=np.bool_)

    def see(self, call: Call) -> View:
        """The view of ``call``, the next call of the run."""
        pending, b = self.pending, None
        if call.error is None and call.kind == "step":
            b = self.tracker.step(*call.flags)
            self.pending = b.needs_reset
        elif call.error is None:
            self.pending = self.tracker.reset(call.mask).needs_reset
        return View(call, b, pending)


def views(mode: AutoresetMode, calls: Sequence[Call], num_envs: int) -> Iterator[View]:
    """The calls of a run seen through ``mode``, up to one that raised."""
    walker = Walker(mode, num_envs)
    for call in calls:
        yield walker.see(call)
        if call.error is not None:
            return


def differs_at(first: Call, second: Call, i: int) -> tuple[str, Any, Any] | None:
    """``(field, first's, second's)`` of sub-env ``i``'s first differing result."""
    for name, a, b in (
        ("obs", first.obs, second.obs),
        ("reward", first.rewards, second.rewards),
        ("terminated", first.terminations, second.terminations),
        ("truncated", first.truncations, second.truncations),
    ):
        if a is not None and b is not None and not same(a[i], b[i]):
            return name, a[i], b[i]
    return None


def action_changed(first: Call, second: Call, i: int) -> bool:
    return (
        first.actions is not None
        and second.actions is not None
        and not same(first.actions[i], second.actions[i])
    )


def looks_reset(call: Call, other: Call, i: int) -> bool:
    """Whether sub-env ``i``'s step in ``call`` looks like an autoreset step:
    reward 0, flags False, and the same result in ``other`` with another action."""
    if call.rewards is None or call.terminations is None or call.truncations is None:
        return False
    return bool(
        call.rewards[i] == 0
        and not call.terminations[i]
        and not call.truncations[i]
        and other.error is None
        and action_changed(call, other, i)
        and differs_at(call, other, i) is None
    )


def layout_difference(
    mode: AutoresetMode, call: Call, final: np.ndarray, *, complete: bool
) -> Difference | None:
    """Where a step's info breaks SAME_STEP's layout for the rows ``final``."""
    infos = call.infos if isinstance(call.infos, dict) else {}
    every_step = modes.final_in_info(mode)
    problem = modes.final_layout_problem(
        infos, final, complete=complete, every_step=every_step
    )
    if problem is None:
        return None
    i = problem.sub_env
    if final.any() and (i is None or final[i]):
        note = final_obs_present_message(mode)
    elif modes.final_in_info(mode):
        note = (
            f"in {mode.value} mode the masks are True exactly for the sub-envs "
            f"whose episode ended here"
        )
    else:
        note = f"in {mode.value} mode info has no final_obs / final_info"
    got = describe(problem.got if problem.present else MISSING)
    return Difference.at(call, i, problem.field, problem.expected, got, note)


def mode_differences(
    mode: AutoresetMode,
    calls: list[Call],
    num_envs: int,
    replay: list[Call] | None = None,
) -> Iterator[Difference]:
    """Where the run ``calls`` contradicts ``mode``'s predictions, in call order;
    ``replay``: the same calls with other actions where an action is ignored."""
    others = {call.index: call for call in replay or ()}
    last_obs: list[Any] | None = None
    for view in views(mode, calls, num_envs):
        call = view.call
        if call.error is not None:
            yield from _raised_differences(mode, view)
            return
        if call.kind == "reset(mask)" and caller_resets(mode):
            found = masked_keeps_difference(call, last_obs, masked_keeps_message(mode))
            yield from () if found is None else (found,)
        if view.boundary is not None:
            other = others.get(call.index)
            final = view.boundary.final_in_info
            found = layout_difference(mode, call, final, complete=False)
            yield from () if found is None else (found,)
            yield from _reset_step_differences(mode, view, other)
            yield from _caller_reset_differences(mode, view, other)
        last_obs = call.obs


def _raised_differences(mode: AutoresetMode, view: View) -> Iterator[Difference]:
    """A call raised where the mode says it must work."""
    call = view.call
    if call.error is None:
        return
    if call.kind == "step" and not view.pending.any():
        why = "no sub-env awaits a reset by the caller here, so step() must work"
    elif call.kind == "reset(mask)" and caller_resets(mode):
        why = (
            "the caller resets ended sub-envs with reset(options={'reset_mask': "
            "mask}), so that must work"
        )
    else:
        return
    note = f"in {mode.value} mode {why}"
    got = raised(call.error)
    yield Difference.at(call, None, CALL_TEXT[call.kind], "a result", got, note)


def _reset_step_differences(
    mode: AutoresetMode, view: View, other: Call | None
) -> Iterator[Difference]:
    """A reset step: reward 0, flags False, the action ignored."""
    call, b = view.call, view.boundary
    if b is None or call.rewards is None:
        return
    for i in np.flatnonzero(~b.real & ~view.pending).tolist():
        for name, array, wanted in (
            ("reward", call.rewards, 0.0),
            ("terminated", call.terminations, False),
            ("truncated", call.truncations, False),
        ):
            if array is not None and array[i] != wanted:
                note = (
                    f"in {mode.value} mode the step after an episode ends resets "
                    f"the sub-env: reward 0, flags False, action ignored"
                )
                yield Difference.at(
                    call, i, name, repr(wanted), describe(array[i]), note
                )
                return
        if other is not None and action_changed(call, other, i):
            found = _ignored_action_difference(mode, call, other, i)
            if found is not None:
                yield found
                return


def _ignored_action_difference(
    mode: AutoresetMode, call: Call, other: Call, i: int
) -> Difference | None:
    """Where ``other``, the reset step with another action, differs."""
    base, changed = (call.actions or [])[i], (other.actions or [])[i]
    note = f"in {mode.value} mode a reset step ignores its action"
    if other.error is not None:
        field, expected, got = "step()", "a result", raised(other.error)
    else:
        differs = differs_at(call, other, i)
        if differs is None:
            return None
        field, expected, got = (differs[0], describe(differs[1]), describe(differs[2]))
    field = f"{field} with action {changed} instead of {base}"
    return Difference.at(call, i, field, expected, got, note)


def _caller_reset_differences(
    mode: AutoresetMode, view: View, other: Call | None
) -> Iterator[Difference]:
    """A step while awaiting the caller's reset must not reset the sub-env."""
    call = view.call
    for i in np.flatnonzero(view.pending).tolist():
        if other is not None and looks_reset(call, other, i):
            expected = "an error, or a step of the ended episode"
            note = (
                f"in {mode.value} mode step() never resets a sub-env, the caller "
                f"does with reset(options={{'reset_mask': mask}})"
            )
            yield Difference.at(call, i, "step()", expected, AUTORESET_STEP, note)
            return


def masked_keeps_difference(
    call: Call, last_obs: list[Any] | None, note: str
) -> Difference | None:
    """Where a masked reset changed a sub-env outside its mask (from ``last_obs``)."""
    if call.obs is None or call.mask is None or last_obs is None:
        return None
    for j in np.flatnonzero(~call.mask).tolist():
        if not same(call.obs[j], last_obs[j]):
            expected, got = describe(last_obs[j]), describe(call.obs[j])
            return Difference.at(call, j, "obs", expected, got, note)
    return None


def run_differences(
    first: list[Call], second: list[Call], *, upto: int | None = None, run: str = ""
) -> Iterator[Difference]:
    """Where ``second``, a replay of ``first`` named ``run``, returned something
    else, up to call ``upto`` (of the infos, the keys only)."""
    for a, b in zip(first, second, strict=False):
        if upto is not None and a.index > upto:
            return
        if a.error is not None or b.error is not None:
            if (a.error is None) != (b.error is None):
                ours, theirs = (
                    "a result" if e is None else raised(e) for e in (a.error, b.error)
                )
                note = "the same seed and actions"
                yield Difference.at(a, None, "result", ours, theirs, note, run)
            return
        yield from _call_differences(a, b, run)


def _call_differences(a: Call, b: Call, run: str) -> Iterator[Difference]:
    """Where two calls that both returned differ."""
    for i in range(len(a.obs or ())):
        differs = differs_at(a, b, i) or _final_differs_at(a, b, i)
        if differs is not None:
            name, x, y = differs
            yield Difference.at(a, i, name, describe(x), describe(y), "", run)
    keys = [
        sorted(c.infos, key=str) if isinstance(c.infos, dict) else c.infos
        for c in (a, b)
    ]
    if keys[0] != keys[1]:
        yield Difference.at(a, None, "info keys", str(keys[0]), str(keys[1]), "", run)


def _final_differs_at(first: Call, second: Call, i: int) -> tuple[str, Any, Any] | None:
    a = modes.final_entries_of(first.infos, i)
    b = modes.final_entries_of(second.infos, i)
    return next(
        ((f"info[{key!r}]", a[key], b[key]) for key in a if not same(a[key], b[key])),
        None,
    )


def overwritten_finals(
    mode: AutoresetMode, calls: Sequence[Call], ends: list[tuple[Call, int]], least: int
) -> Difference | None:
    """Where each final observation of ``ends`` (``(call, sub-env)``, ``least``
    of them at least) is what its step returned, in an env whose observations
    change: the reset overwrote it."""
    finals = [(call, i, modes.final_observations(call.infos)) for call, i in ends]
    if len(ends) < least or any(
        call.obs is None
        or found is None
        or not same(found[1][i], call.obs[i], strict=False)
        for call, i, found in finals
    ):
        return None
    seen = [obs for call in calls if call.obs is not None for obs in call.obs]
    if all(same(obs, seen[0], strict=False) for obs in seen):
        return None
    call, i, found = finals[0]
    note = (
        f"at all {len(ends)} episode ends, info['final_obs'] equals what step() "
        f"returned, in {mode.value} mode the next episode's first observation: the "
        f"reset overwrote the final observation, or step() did not reset (then "
        f"declare NextStep, without info['final_obs']); unless every episode ends "
        f"in its first state, which this check cannot tell apart"
    )
    expected = "the ended episode's last observation"
    got = describe(found[1][i])  # type: ignore[index]
    return Difference.at(call, i, "info['final_obs']", expected, got, note)
