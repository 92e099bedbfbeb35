"""Where a run of :func:`~vecmode.testing.check_vector_env` breaks the declared
mode's contract: each check returns its first :class:`Difference`, or None."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from itertools import pairwise
from typing import Any, cast

import numpy as np
from gymnasium.spaces import Space
from gymnasium.vector import VectorEnv

from vecmode import _arrays
from vecmode.modes import AutoresetMode, caller_resets, final_observations
from vecmode.replay import predictions
from vecmode.replay.compare import Difference, describe, per_sub_env, raised, same
from vecmode.replay.record import Call
from vecmode.testing.vector_env.run import CheckedRun
from vecmode.testing.writes import HeldResults

_FINAL_OBS = "info['final_obs']"
_STEP_ARRAYS = (
    ("rewards", 1, "fiu"),
    ("terminations", 2, "b"),
    ("truncations", 3, "b"),
)


def first_failure(run: CheckedRun, seed: int) -> Difference | None:
    """The earliest difference of any kind (ties in the order checked); then, if
    none, whether ``reset(seed=...)`` cleared the pending autoresets."""
    mode, first, n = run.mode, run.first.calls, run.env.num_envs
    found = [
        _structure_difference(run.env, first),
        _library_difference(run),
        next(predictions.mode_differences(mode, first, n, run.second), None),
        _masked_keeps_difference(mode, first),
        _detail_difference(run),
        _reproducibility_difference(first, run.second, seed, run.plan.reseeded),
        _changed_later(run.results),
        _cleared_difference(run),
        _unmasked_difference(run),
    ]
    diff = min(filter(None, found), key=lambda diff: diff.call, default=None)
    return _reseed_difference(run) if diff is None else diff


def _structure_difference(env: VectorEnv, calls: Sequence[Call]) -> Difference | None:
    """Observations, rewards, flags and infos of the right kinds; no call raised."""
    n, library = env.num_envs, _arrays.declared_namespace(env) or "numpy"
    array = "an ndarray" if library == "numpy" else f"a {library} array"
    for call in calls:
        raw = call.raw
        if isinstance(raw, tuple) and len(raw) in (2, 5):
            found = _observation_difference(env, call, raw[0])
            if found is not None:
                return found
            found = _step_arrays_difference(call, raw, n, array)
            if found is not None:
                return found
            if not isinstance(raw[-1], dict):
                got = type(raw[-1]).__name__
                return Difference.at(call, None, "infos", "a dict", got)
        if call.error is not None:
            note = "the run makes only calls that the declared mode allows"
            got = raised(call.error)
            return Difference.at(call, None, "result", "a result", got, note)
    return None


def _step_arrays_difference(
    call: Call, raw: tuple[Any, ...], n: int, array: str
) -> Difference | None:
    """Rewards and flags of a step's ``raw`` result of the right kinds (``array``:
    "an ndarray", or "a torch array"...)."""
    for name, place, kinds in _STEP_ARRAYS if len(raw) == 5 else ():
        value = raw[place]
        if not (
            isinstance(value, np.ndarray)
            and value.shape == (n,)
            and value.dtype.kind in kinds
        ):
            dtype = "bool" if kinds == "b" else "float or int"
            expected = f"{array} of shape ({n},) and dtype {dtype}"
            got = type(value).__name__  # (an array's host copy: its library's)
            got = array[array.index(" ") + 1 :] if got == "ndarray" else got
            if hasattr(value, "shape") and hasattr(value, "dtype"):
                got += f" of shape {value.shape} and dtype {value.dtype}"
            return Difference.at(call, None, name, expected, got)
    return None


def _library_difference(run: CheckedRun) -> Difference | None:
    """A batch not in the library the env declares in metadata["array_namespace"]."""
    for call in run.first.calls:
        if call.index in run.libraries:
            field, got = run.libraries[call.index]
            declared = _arrays.declared_namespace(run.env)
            expected = (
                f"{declared} batches, as metadata['array_namespace'] declares"
                if declared
                else "numpy batches: declare another library in "
                "metadata['array_namespace']"
            )
            return Difference.at(call, None, field, expected, f"{got} batches")
    return None


def _observation_difference(
    env: VectorEnv, call: Call, batch: Any
) -> Difference | None:
    space, single = env.observation_space, env.single_observation_space
    if _contains(space, batch):
        return None
    try:
        items = per_sub_env(space, batch, env.num_envs)
    except (TypeError, ValueError, IndexError):
        items = []
    for i, item in enumerate(items):
        if not _contains(single, item):
            return Difference.at(
                call, i, "obs", f"an element of {single}", describe(item)
            )
    return Difference.at(call, None, "obs", f"an element of {space}", describe(batch))


def _contains(space: Space, value: Any) -> bool:
    try:
        return bool(space.contains(value))
    except Exception:
        return False


def _detail_difference(run: CheckedRun) -> Difference | None:
    """The final infos and observations themselves, and a masked reset's infos."""
    mode, ends = run.mode, list[tuple[Call, int]]()
    for view in predictions.views(mode, run.first.calls, run.env.num_envs):
        call = view.call
        if call.error is not None or not isinstance(call.infos, dict):
            return None
        if call.kind == "reset(mask)" and call.mask is not None:
            found = _masked_info_difference(mode, call, call.mask)
            if found is not None:
                return found
        if view.boundary is None:
            continue
        final = view.boundary.final_in_info
        found = predictions.layout_difference(mode, call, final, complete=True)
        if found is not None:  # a key that should not be there: the whole batch's
            return found if final.any() else dataclasses.replace(found, sub_env=None)
        for i in np.flatnonzero(final).tolist():
            found = _final_obs_difference(run, call, i)
            if found is not None:
                return found
            ends.append((call, i))
    return predictions.overwritten_finals(mode, run.first.calls, ends, least=3)


def _final_obs(call: Call) -> Any:
    """The final observations of a step whose layout was checked."""
    return cast(tuple, final_observations(call.infos))[1]


def _final_obs_difference(run: CheckedRun, call: Call, i: int) -> Difference | None:
    """A final observation in the single space, and an array of its own."""
    mode, obs, single = run.mode, _final_obs(call)[i], run.env.single_observation_space
    if not _contains(single, obs):
        note = predictions.final_obs_present_message(mode)
        return Difference.at(
            call, i, _FINAL_OBS, f"an element of {single}", describe(obs), note
        )
    if i in run.aliased.get(call.index, ()):
        got = "an array sharing memory with the returned observations"
        note = (
            f"in {mode.value} mode the final observation must outlive the reset: "
            f"return a copy, not a view of the observation buffer"
        )
        return Difference.at(call, i, _FINAL_OBS, "an array of its own", got, note)
    return None


def _masked_info_difference(
    mode: AutoresetMode, call: Call, mask: np.ndarray
) -> Difference | None:
    """A masked reset's info holds data only for the masked sub-envs."""
    infos = call.infos
    for key, value in infos.items():
        if not str(key).startswith("_") or key[1:] not in infos:
            continue
        try:
            present = np.asarray(value, dtype=np.bool_)
        except (TypeError, ValueError):
            continue
        if present.shape != mask.shape:
            continue
        for j in np.flatnonzero(present & ~mask).tolist():
            note = (
                f"in {mode.value} mode a masked reset's info holds data only for "
                f"the reset sub-envs"
            )
            return Difference.at(call, j, f"info[{key!r}]", "False", "True", note)
    return None


def _masked_keeps_difference(
    mode: AutoresetMode, calls: Sequence[Call]
) -> Difference | None:
    """A masked reset leaves the others as they were (DISABLED: in
    ``mode_differences``)."""
    if caller_resets(mode):
        return None
    note = (
        f"in {mode.value} mode too, reset(options={{'reset_mask': mask}}) resets "
        f"only the masked sub-envs. If the env resets every sub-env, declare "
        f"it: vecmode.register_vector_env(its class, masked_reset='ignores')"
    )
    for last, call in pairwise(calls):
        if last.error is not None or call.error is not None:
            return None
        if call.kind == "reset(mask)":
            found = predictions.masked_keeps_difference(call, last.obs, note)
            if found is not None:
                return found
    return None


def _changed_later(results: HeldResults[Call]) -> Difference | None:
    """The first result that a later call changed."""
    found = results.first_changed()
    if found is None:
        return None
    call, part, by = found
    note = (
        "the caller keeps what a call returns: return new arrays and a new info "
        "dict, not ones the env writes into again"
    )
    if results.reuses_observations:
        note += " (copy=False allows it for the observation buffer only)"
    elif part.startswith("observations"):  # (a class attribute, as Gymnasium's)
        note += ", or say so: copy = False on the env, as Gymnasium's copy=False envs"
    got = "changed by a later call" if by is None else f"changed by call {by.index}"
    return Difference.at(call, None, part, "to stay as returned", got, note)


def _cleared_difference(run: CheckedRun) -> Difference | None:
    """The step after a masked reset of pending sub-envs is no autoreset."""
    calls, cleared = run.first.calls, run.cleared
    if run.plan.cleared is None:
        return None
    index, which = run.plan.cleared
    if index >= len(cleared) or index >= len(calls):
        return None
    step, other = calls[index], cleared[index]
    if step.kind != "step" or step.error is not None or other.error is not None:
        return None
    for i in np.flatnonzero(which).tolist():
        if predictions.looks_reset(step, other, i) and run.ignores_action(index, i):
            expected = "a step of the episode that the masked reset started"
            note = (
                f"in {run.mode.value} mode reset(options={{'reset_mask': mask}}) "
                f"clears the masked sub-envs' pending autoresets, but this step "
                f"looks like the autoreset of the episode that ended before the "
                f"masked reset at call {index - 1}. If the env keeps them pending, "
                f"declare it: vecmode.register_vector_env(its class, "
                f"masked_reset='keeps-pending')"
            )
            return Difference.at(
                step, i, "step()", expected, predictions.AUTORESET_STEP, note
            )
    return None


def _unmasked_difference(run: CheckedRun) -> Difference | None:
    """A sub-env masked mid-episode that went on as if not reset."""
    calls, unmasked = run.first.calls, run.unmasked
    if run.plan.mid_episode is None or not unmasked:
        return None
    index, i = run.plan.mid_episode
    reset, before = calls[index], calls[index - 1]
    if reset.obs is None or before.obs is None or not same(reset.obs[i], before.obs[i]):
        return None
    for call in calls[index + 1 :]:
        if call.index - 1 >= len(unmasked):
            return None
        other = unmasked[call.index - 1]
        if call.error is not None or other.error is not None or other.kind != call.kind:
            return None
        if predictions.differs_at(call, other, i) is not None:
            return None
        if call.kind == "step" and call.ended[i]:
            expected = "a new episode's first observation"
            note = (
                f"in {run.mode.value} mode a masked reset resets the masked "
                f"sub-envs; this one came back unchanged and went on as without "
                f"the reset, up to its episode's end at call {call.index}: it was "
                f"not reset"
            )
            return Difference.at(
                reset, i, "obs", expected, describe(reset.obs[i]), note
            )
    return None


def _reproducibility_difference(
    first: list[Call], second: list[Call], seed: int, upto: int | None
) -> Difference | None:
    """Where the replay on a second instance returned something else."""
    diff = next(
        predictions.run_differences(first, second, upto=upto, run="instance 2"), None
    )
    if diff is None:
        return None
    note = (
        f"a second instance, reset with seed={seed} and given the same actions, "
        f"returned something else: make the env deterministic under reset(seed=...)"
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
                    f"must be ignored"
                )
                break
    return dataclasses.replace(diff, note=note)


def _reseed_difference(run: CheckedRun) -> Difference | None:
    """The step after ``reset(seed=seed + 1)`` is no pending autoreset."""
    plan = run.plan
    if plan.pending is None or plan.reseeded is None or len(run.fresh) != 2:
        return None
    last, other, clean = run.first.calls[-1], run.second[-1], run.fresh[-1]
    if last.index != plan.reseeded + 1 or other.index != last.index:
        return None
    if any(call.error is not None for call in (last, other, clean)):
        return None
    for i in np.flatnonzero(plan.pending).tolist():
        looks = predictions.looks_reset(last, other, i)
        differs = predictions.differs_at(clean, last, i) if looks else None
        if differs is not None:
            name, expected, got = differs
            note = (
                f"in {run.mode.value} mode reset() clears pending autoresets, but "
                f"this step looks like the autoreset of the episode that ended "
                f"before the reset at call {plan.reseeded}; a fresh instance returns "
                f"the expected value"
            )
            return Difference.at(last, i, name, describe(expected), describe(got), note)
    return None
