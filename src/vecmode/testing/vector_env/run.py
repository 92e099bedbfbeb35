"""The checked run of :func:`~vecmode.testing.check_vector_env`, driven as
training code in the declared mode would drive it, and its replays."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from vecmode.modes import (
    AutoresetMode,
    Boundary,
    BoundaryTracker,
    caller_resets,
    final_observations,
    resets_on_next_step,
)
from vecmode.replay.compare import arrays_in
from vecmode.replay.record import Call, Instances, Recorder
from vecmode.testing.writes import HeldResults

#: The kinds of masked resets the checked run makes.
AFTER_END, MID_EPISODE, BY_CALLER = "after an end", "mid-episode", "by the caller"


@dataclass
class Plan:
    """What the checked run did that its replays must know: per step, the
    sub-envs that ignore their action there (``ignored``: NEXT_STEP's reset
    steps); the ``reset(seed=seed + 1)`` made while the ``pending`` sub-envs
    awaited their autoreset (``reseeded``: one step follows); the step after a
    masked reset of sub-envs whose autoreset was pending, and those (``cleared``);
    a masked reset of one sub-env mid-episode, and that sub-env
    (``mid_episode``)."""

    ignored: dict[int, np.ndarray] = dataclasses.field(default_factory=dict)
    reseeded: int | None = None
    pending: np.ndarray | None = None
    cleared: tuple[int, np.ndarray] | None = None
    mid_episode: tuple[int, int] | None = None

    def change(self, call: Call) -> np.ndarray | None:
        """The sub-envs whose action the replay changes at ``call``."""
        if self.reseeded is not None and call.index == self.reseeded + 1:
            return self.pending
        return self.ignored.get(call.index)

    def masked(
        self, index: int, mask: np.ndarray, pending: np.ndarray, kind: str
    ) -> None:
        """Note the masked reset at call ``index`` of ``kind``, which reset the
        ``pending`` sub-envs that awaited their autoreset."""
        if kind == MID_EPISODE and self.mid_episode is None:
            self.mid_episode = (index, int(np.argmax(mask)))
        if kind == AFTER_END and pending.any() and self.cleared is None:
            self.cleared = (index + 1, pending)


class MaskedResets:
    """Which sub-envs the checked run resets with a mask after a step: where the
    caller resets (DISABLED), the ended ones after each step; elsewhere, the
    ones that ended at the second step where episodes end (the first alone if
    all did); then once, one mid-episode. None with one sub-env, nor where
    ``optional`` (what a masked reset is declared to do) is not ``"clears"`` or
    ``"keeps-pending"``."""

    def __init__(self, mode: AutoresetMode, num_envs: int, optional: str) -> None:
        self.by_caller = caller_resets(mode)
        self.ends = 0
        makes = num_envs >= 2 and optional in ("clears", "keeps-pending")
        self.after_end_done = self.by_caller or not makes
        self.mid_episode_done = num_envs < 2 or not (self.by_caller or makes)
        #: whether a masked reset clears the masked sub-envs' pending autoreset
        self.clears = optional == "clears"

    def after(self, b: Boundary, awaiting: np.ndarray) -> tuple[np.ndarray | None, str]:
        """The mask to reset after a step of boundary ``b`` (None: no reset),
        and its kind."""
        self.ends += bool(b.ended.any())
        if self.by_caller and awaiting.any():
            return awaiting.copy(), BY_CALLER
        if not self.after_end_done and b.ended.any() and self.ends >= 2:
            self.after_end_done = True
            return _strict_subset(b.ended), AFTER_END
        running = ~(b.starts | b.ended | awaiting)
        if self.after_end_done and not self.mid_episode_done and running.any():
            self.mid_episode_done = True
            return _strict_subset(running, first=True), MID_EPISODE
        return None, ""


def _strict_subset(mask: np.ndarray, *, first: bool = False) -> np.ndarray:
    """``mask``, or its first True alone where it is all True (or ``first``)."""
    if mask.all() or first:
        out = np.zeros(mask.shape, dtype=np.bool_)
        out[int(np.argmax(mask))] = True
        return out
    return np.array(mask, dtype=np.bool_)


def drive(
    recorder: Recorder, mode: AutoresetMode, steps: int, seed: int, optional: str
) -> Plan:
    """Run ``steps`` steps with the masked resets of :class:`MaskedResets`; in a
    mode with reset steps, then step on until an episode ends, reset everything
    with ``seed + 1`` and step once."""
    tracker = BoundaryTracker(mode, recorder.num_envs)
    masks = MaskedResets(mode, recorder.num_envs, optional)
    plan = Plan()
    if recorder.reset(seed).error is not None:
        return plan
    tracker.reset(None)

    def step() -> Boundary | None:
        call = recorder.step(recorder.sample())
        if call.error is not None:
            return None
        b = tracker.step(*call.flags)
        if not b.real.all():
            plan.ignored[call.index] = ~b.real
        return b

    for _ in range(steps):
        b = step()
        if b is None:
            return plan
        mask, kind = masks.after(b, tracker.awaiting_reset)
        if mask is None:
            continue
        pending = mask & tracker.awaiting_reset & masks.clears
        reset = recorder.reset_mask(mask)
        if reset.error is not None:
            return plan
        tracker.reset(mask)
        plan.masked(reset.index, mask, pending, kind)
    for _ in range(steps if resets_on_next_step(mode) else 0):
        if tracker.awaiting_reset.any():
            pending = tracker.awaiting_reset.copy()
            if recorder.reset(seed + 1).error is None:
                tracker.reset(None)
                plan.reseeded, plan.pending = recorder.calls[-1].index, pending
                recorder.step(recorder.sample())
            return plan
        if step() is None:
            return plan
    return plan


@dataclass
class Runs:
    """The other instances' calls: ``second`` replays the run, with other
    actions where :meth:`Plan.change` says; ``fresh`` makes its
    ``reset(seed=seed + 1)`` and last step; ``cleared`` replays it up to the step
    after :attr:`Plan.cleared`, with other actions there; ``unmasked`` without
    the mid-episode masked reset, up to that sub-env's episode end."""

    second: list[Call]
    fresh: list[Call] = dataclasses.field(default_factory=list)
    cleared: list[Call] = dataclasses.field(default_factory=list)
    unmasked: list[Call] = dataclasses.field(default_factory=list)


def _replayed(
    instances: Instances,
    seed: int,
    calls: Sequence[Call],
    change: Callable[[Call], np.ndarray | None] | None = None,
) -> list[Call]:
    recorder = Recorder(instances.new(), seed)
    recorder.replay(calls, change)
    instances.close(recorder.env)
    return recorder.calls


def other_runs(instances: Instances, calls: list[Call], plan: Plan, seed: int) -> Runs:
    """The other instances' runs (see :class:`Runs`)."""
    runs = Runs(_replayed(instances, seed, calls, plan.change))
    if plan.reseeded is not None:
        third = Recorder(instances.new(), seed)
        if third.reset(seed + 1).error is None:
            third.step(calls[-1].actions or [])
        instances.close(third.env)
        runs.fresh = third.calls
    if plan.cleared is not None and plan.cleared[0] < len(calls):
        index, which = plan.cleared
        if calls[index].kind == "step":
            runs.cleared = _replayed(
                instances,
                seed,
                calls[: index + 1],
                lambda call: which if call.index == index else None,
            )
    if plan.mid_episode is not None:
        runs.unmasked = _unmasked(instances, calls, plan.mid_episode, seed)
    return runs


def _unmasked(
    instances: Instances, calls: list[Call], masked: tuple[int, int], seed: int
) -> list[Call]:
    """The run without the masked reset ``masked`` (its call, its sub-env), up to
    that sub-env's next episode end (none if it has none)."""
    index, i = masked
    end = next(
        (
            call.index
            for call in calls[index + 1 :]
            if call.kind == "step" and call.ended.size and call.ended[i]
        ),
        None,
    )
    if end is None:
        return []
    kept = [call for call in calls[: end + 1] if call.index != index]
    return _replayed(instances, seed, kept)


class Returned:
    """The checked run's results as the env returned them, to find one a later
    call changed; per call, the sub-envs whose final observation shares memory
    with the observations."""

    def __init__(self) -> None:
        self.results: HeldResults[Call] = HeldResults()
        self.aliased: dict[int, list[int]] = {}

    def inspect(self, call: Call, result: Any) -> None:
        """Sees each result before the recorder copies it into ``call.raw``."""
        self.aliased[call.index] = _final_obs_sharing_memory(result)
        self.results.keep(call, result, lambda: call.raw)


def _final_obs_sharing_memory(result: Any) -> list[int]:
    """The sub-envs whose final observation shares memory with the returned
    observations (the next call may overwrite it)."""
    if not (isinstance(result, tuple) and len(result) == 5):
        return []
    found = final_observations(result[4])
    final = None if found is None else found[1]
    if not isinstance(final, np.ndarray) or final.dtype != object:
        return []
    returned = [array for _, array in arrays_in(result[0])]
    return [
        i
        for i, entry in enumerate(final)
        if entry is not None
        and any(
            np.shares_memory(leaf, other)
            for _, leaf in arrays_in(entry)
            for other in returned
        )
    ]
