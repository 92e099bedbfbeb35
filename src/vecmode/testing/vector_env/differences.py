"""Where a run of :func:`~vecmode.testing.check_vector_env` breaks the declared
mode's contract, beyond the probe's predictions (:mod:`vecmode.replay`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
from gymnasium.spaces import Space

from vecmode.modes import AutoresetMode, caller_resets, final_observations
from vecmode.replay.compare import Difference, describe, per_sub_env, raised, same
from vecmode.replay.predictions import (
    AUTORESET_STEP,
    differs_at,
    final_obs_present_message,
    layout_difference,
    looks_reset,
    masked_keeps_difference,
    masked_keeps_message,
    mode_differences,
    run_differences,
    views,
)
from vecmode.replay.record import Call
from vecmode.testing.vector_env.run import Plan, Returned, Runs

#: How a difference in the final observations is labelled.
_FINAL_OBS_FIELD = "info['final_obs']"


@dataclass(frozen=True)
class Spaces:
    """The spaces of the checked env."""

    num_envs: int
    observation_space: Space
    single_observation_space: Space


def first_failure(
    mode: AutoresetMode,
    spaces: Spaces,
    first: Sequence[Call],
    runs: Runs,
    returned: Returned,
    seed: int,
    plan: Plan,
) -> Difference | None:
    """The earliest difference of any kind (ties in the order checked); then, if
    none, whether ``reset(seed=...)`` cleared the pending autoresets."""
    found = [
        next(_structure_differences(spaces, first), None),
        next(mode_differences(mode, first, spaces.num_envs, runs.second), None),
        next(_masked_keeps_differences(mode, first), None),
        next(_detail_differences(mode, spaces, first, returned.aliased), None),
        _reproducibility_difference(first, runs.second, seed, plan.reseeded),
        _changed_later(returned),
        next(_cleared_differences(mode, first, runs.cleared, plan), None),
        next(_unmasked_differences(mode, first, runs.unmasked, plan), None),
    ]
    diff = min(
        (diff for diff in found if diff is not None),
        key=lambda diff: diff.call,
        default=None,
    )
    if diff is None and plan.reseeded is not None:
        diff = next(
            _reseed_differences(mode, first, runs.second, runs.fresh, plan), None
        )
    return diff


def _structure_differences(
    spaces: Spaces, calls: Sequence[Call]
) -> Iterator[Difference]:
    """Observations in the space, rewards and flags arrays of ``num_envs``
    numbers and bools, infos dicts; no call raises."""
    n = spaces.num_envs
    for call in calls:
        raw = call.raw
        if isinstance(raw, tuple) and len(raw) in (2, 5):
            yield from _observation_differences(spaces, call, raw[0])
            for name, value, kinds in _STEP_ARRAYS if len(raw) == 5 else ():
                value = raw[value]
                if not (
                    isinstance(value, np.ndarray)
                    and value.shape == (n,)
                    and value.dtype.kind in kinds
                ):
                    dtype = "bool" if kinds == "b" else "float or int"
                    expected = f"an ndarray of shape ({n},) and dtype {dtype}"
                    got = type(value).__name__
                    if hasattr(value, "shape") and hasattr(value, "dtype"):
                        got += f" of shape {value.shape} and dtype {value.dtype}"
                    yield Difference.at(call, None, name, expected, got)
            if not isinstance(raw[-1], dict):
                got = type(raw[-1]).__name__
                yield Difference.at(call, None, "infos", "a dict", got)
        if call.error is not None:
            note = "the run makes only calls that the declared mode allows"
            yield Difference.at(
                call, None, "result", "a result", raised(call.error), note
            )
            return


#: A step's arrays: name, place in the result, dtype kinds.
_STEP_ARRAYS = (
    ("rewards", 1, "fiu"),
    ("terminations", 2, "b"),
    ("truncations", 3, "b"),
)


def _observation_differences(
    spaces: Spaces, call: Call, batch: Any
) -> Iterator[Difference]:
    if _contains(spaces.observation_space, batch):
        return
    try:
        items = per_sub_env(spaces.observation_space, batch, spaces.num_envs)
    except (TypeError, ValueError, IndexError):
        items = []
    single = spaces.single_observation_space
    for i, item in enumerate(items):
        if not _contains(single, item):
            yield Difference.at(
                call, i, "obs", f"an element of {single}", describe(item)
            )
            return
    space = spaces.observation_space
    yield Difference.at(call, None, "obs", f"an element of {space}", describe(batch))


def _contains(space: Space, value: Any) -> bool:
    try:
        return bool(space.contains(value))
    except Exception:
        return False


def _detail_differences(
    mode: AutoresetMode,
    spaces: Spaces,
    calls: Sequence[Call],
    aliased: dict[int, list[int]],
) -> Iterator[Difference]:
    """What the contract says beyond the probe's predictions: the final infos,
    the final observations themselves, and the infos of a masked reset."""
    ends: list[tuple[Call, int]] = []
    for view in views(mode, calls, spaces.num_envs):
        call = view.call
        if call.error is not None or not isinstance(call.infos, dict):
            return
        if call.kind == "reset(mask)" and call.mask is not None:
            yield from _masked_info_differences(mode, call, call.mask)
        if view.boundary is None:
            continue
        final = view.boundary.final_in_info
        diff = layout_difference(mode, call, final, complete=True)
        if diff is not None:  # a key that should not be there: the whole batch's
            yield diff if final.any() else dataclasses.replace(diff, sub_env=None)
            return
        if final.any():
            yield from _final_differences(mode, spaces, call, final, aliased)
            ends.extend((call, i) for i in np.flatnonzero(final).tolist())
    yield from _final_obs_overwritten(mode, calls, ends)


def _final_obs(call: Call) -> Any:
    """The final observations (object array) of a step whose layout was checked."""
    return cast(tuple, final_observations(call.infos))[1]


def _final_differences(
    mode: AutoresetMode,
    spaces: Spaces,
    call: Call,
    final: np.ndarray,
    aliased: dict[int, list[int]],
) -> Iterator[Difference]:
    """Each final observation in the single space, and an array of its own."""
    obs = _final_obs(call)
    single = spaces.single_observation_space
    for i in np.flatnonzero(final).tolist():
        if not _contains(single, obs[i]):
            yield Difference.at(
                call,
                i,
                _FINAL_OBS_FIELD,
                f"an element of {single}",
                describe(obs[i]),
                final_obs_present_message(mode),
            )
            return
        if i in aliased.get(call.index, ()):
            yield Difference.at(
                call,
                i,
                _FINAL_OBS_FIELD,
                "an array of its own",
                "an array sharing memory with the returned observations",
                f"in {mode.value} mode the final observation must outlive the "
                f"reset; this one is a view of the observation buffer, which the "
                f"reset and later calls overwrite",
            )
            return


def _final_obs_overwritten(
    mode: AutoresetMode, calls: Sequence[Call], ends: list[tuple[Call, int]]
) -> Iterator[Difference]:
    """Every final observation equals the observation returned with it (the
    next episode's first) although the env's observations vary: it was
    overwritten by the reset's. Nothing is concluded from fewer than 3 ends."""
    if len(ends) < 3:
        return
    for call, i in ends:
        if call.obs is None or not same(_final_obs(call)[i], call.obs[i], strict=False):
            return
    seen = [obs for call in calls if call.obs is not None for obs in call.obs]
    if all(same(obs, seen[0], strict=False) for obs in seen):
        return
    call, i = ends[0]
    yield Difference.at(
        call,
        i,
        _FINAL_OBS_FIELD,
        "the ended episode's last observation",
        describe(_final_obs(call)[i]),
        f"at all {len(ends)} episode ends, info['final_obs'] equals the "
        f"observation step() returned, which in {mode.value} mode starts the next "
        f"episode, although the env's observations vary: the final observation "
        f"was overwritten by the reset's",
    )


def _masked_info_differences(
    mode: AutoresetMode, call: Call, mask: np.ndarray
) -> Iterator[Difference]:
    """A masked reset's info holds data only for the masked sub-envs."""
    infos = call.infos
    for key, value in infos.items():
        if not key.startswith("_") or key[1:] not in infos:
            continue
        try:
            present = np.asarray(value, dtype=np.bool_)
        except (TypeError, ValueError):
            continue
        if present.shape != mask.shape:
            continue
        for j in np.flatnonzero(present & ~mask).tolist():
            yield Difference.at(
                call,
                j,
                f"info[{key!r}]",
                "False",
                "True",
                f"in {mode.value} mode the info of reset(options={{'reset_mask': "
                f"mask}}) holds data only for the reset sub-envs",
            )
            return


def _masked_keeps_differences(
    mode: AutoresetMode, calls: Sequence[Call]
) -> Iterator[Difference]:
    """A masked reset leaves the sub-envs it does not reset as they were, in
    every mode."""
    note = masked_keeps_message(mode)
    if not caller_resets(mode):
        note = (
            f"in {mode.value} mode too, reset(options={{'reset_mask': mask}}) resets "
            f"only the masked sub-envs (as Gymnasium's vector envs do, and as "
            f"vecmode's conversions of the env rely on); the others' observations "
            f"come back unchanged. If the env resets every sub-env whatever the "
            f"mask, declare it: vecmode.register_vector_env(its class, "
            f"masked_reset='ignores'), and this check makes no masked reset"
        )
    last: Call | None = None
    for call in calls:
        if call.error is not None:
            return
        if call.kind == "reset(mask)" and last is not None:
            found = masked_keeps_difference(call, last.obs, note)
            if found is not None:
                yield found
                return
        last = call


def _changed_later(returned: Returned) -> Difference | None:
    """The first result that a later call changed."""
    found = returned.results.first_changed()
    if found is None:
        return None
    call, part, by = found
    note = (
        "what a call returns must not change later: return new arrays (and a new "
        "info dict), not ones the env writes into again, since a caller keeps "
        "them (a rollout buffer, vecmode.TransitionCollector's transitions)"
    )
    if returned.results.reuses_observations:
        note += (
            "; copy=False lets the env reuse its observation buffer, not its "
            "other arrays"
        )
    got = "changed by a later call" if by is None else f"changed by call {by.index}"
    return Difference.at(call, None, part, "to stay as returned", got, note)


def _cleared_differences(
    mode: AutoresetMode, calls: Sequence[Call], cleared: Sequence[Call], plan: Plan
) -> Iterator[Difference]:
    """The step right after a masked reset of sub-envs whose autoreset was
    pending is no autoreset (another instance, sent another action there, must
    not return the same)."""
    if plan.cleared is None:
        return
    index, which = plan.cleared
    if index >= len(cleared) or index >= len(calls):
        return
    step, other = calls[index], cleared[index]
    if step.kind != "step" or step.error is not None or other.error is not None:
        return
    for i in np.flatnonzero(which).tolist():
        if looks_reset(step, other, i):
            yield Difference.at(
                step,
                i,
                "step()",
                "a step of the episode that the masked reset started",
                AUTORESET_STEP,
                f"in {mode.value} mode reset(options={{'reset_mask': mask}}) clears "
                f"the masked sub-envs' pending autoresets: this sub-env's episode "
                f"had ended before the masked reset at call {index - 1}, and this "
                f"step looks like its autoreset (another instance, sent another "
                f"action here, returned the same). If the env keeps them pending, "
                f"declare it: vecmode.register_vector_env(its class, "
                f"masked_reset='keeps-pending')",
            )
            return


def _unmasked_differences(
    mode: AutoresetMode, calls: Sequence[Call], unmasked: Sequence[Call], plan: Plan
) -> Iterator[Difference]:
    """A masked reset resets the masked sub-env: one masked mid-episode that
    came back unchanged and then returned exactly what a run without that reset
    returns, up to its episode's end, was not reset."""
    if plan.mid_episode is None or not unmasked:
        return
    index, i = plan.mid_episode
    reset, before = calls[index], calls[index - 1]
    if reset.obs is None or before.obs is None or not same(reset.obs[i], before.obs[i]):
        return
    for call in calls[index + 1 :]:
        if call.index - 1 >= len(unmasked):
            return
        other = unmasked[call.index - 1]
        if call.error is not None or other.error is not None or other.kind != call.kind:
            return
        if differs_at(call, other, i) is not None:
            return
        if call.kind == "step" and call.ended[i]:
            yield Difference.at(
                reset,
                i,
                "obs",
                "a new episode's first observation",
                describe(reset.obs[i]),
                f"in {mode.value} mode reset(options={{'reset_mask': mask}}) resets "
                f"the masked sub-envs; this one, masked in the middle of its "
                f"episode, came back unchanged, and then returned exactly what an "
                f"instance given the same calls without this reset returned, up to "
                f"its episode's end at call {call.index}: it was not reset",
            )
            return


def _reproducibility_difference(
    first: Sequence[Call], second: Sequence[Call], seed: int, upto: int | None
) -> Difference | None:
    """Where the replay on a second instance returned something else."""
    diff = next(run_differences(first, second, upto=upto, run="instance 2"), None)
    if diff is None:
        return None
    note = (
        f"a second instance, reset with seed={seed} and given the same actions, "
        f"returned something else: the env must be deterministic under "
        f"reset(seed=...)"
    )
    for a, b in zip(first, second, strict=False):
        if diff.sub_env is None or a.index > diff.call:
            break
        if a.actions is not None and b.actions is not None:
            ours, theirs = a.actions[diff.sub_env], b.actions[diff.sub_env]
            if not same(ours, theirs):
                note = (
                    f"the second instance got action {describe(theirs)} instead of "
                    f"{describe(ours)} at call {a.index}, a reset step whose action "
                    f"is ignored, and that changed this"
                )
                break
    return dataclasses.replace(diff, note=note)


def _reseed_differences(
    mode: AutoresetMode,
    first: Sequence[Call],
    second: Sequence[Call],
    fresh: Sequence[Call],
    plan: Plan,
) -> Iterator[Difference]:
    """The step after ``reset(seed=seed + 1)``, made while some sub-envs awaited
    their autoreset, must not be that autoreset: where it looks like one and a
    fresh instance, given the same reset and actions, returns something else."""
    if plan.pending is None or plan.reseeded is None or len(fresh) != 2:
        return
    last, other, clean = first[-1], second[-1], fresh[-1]
    if last.index != plan.reseeded + 1 or other.index != last.index:
        return
    if any(call.error is not None for call in (last, other, clean)):
        return
    for i in np.flatnonzero(plan.pending).tolist():
        differs = differs_at(clean, last, i) if looks_reset(last, other, i) else None
        if differs is not None:
            name, expected, got = differs
            yield Difference.at(
                last,
                i,
                name,
                describe(expected),
                describe(got),
                f"in {mode.value} mode reset() ends every episode, clearing pending "
                f"autoresets: this sub-env's episode had ended before the reset at "
                f"call {plan.reseeded}, and this step looks like its autoreset "
                f"(reward 0, flags False, action ignored); a fresh instance, given "
                f"the same reset and actions, returns the expected value",
            )
            return
