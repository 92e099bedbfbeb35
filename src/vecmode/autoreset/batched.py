"""The policies' array path: SAME_STEP and DISABLED over a DISABLED vector env
whose batches are another library's (torch, JAX), in that library and on its
device, with no host copy and no per-sub-env loop.

>>> import numpy as np
>>> merged_infos({}, {}, np.array([True]))
{}
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vecmode import _arrays, _rows, errors, modes
from vecmode.core import StepResult
from vecmode.infos import merged_by_row


def merged_infos(
    infos: dict[str, Any], reset_infos: dict[str, Any], ended: Any
) -> dict[str, Any]:
    """The step's batched ``infos`` with the masked reset's ``reset_infos`` in
    the rows they mask, as ``vecmode.infos`` merges NumPy's: a step's masked
    info no longer masks the ``ended`` rows; an unmasked one is merged by row
    where :func:`vecmode.infos.merged_by_row` can, else the reset's if it has
    one."""
    out = dict(infos)
    for key in infos:
        if not str(key).startswith("_") and f"_{key}" in infos:
            out[f"_{key}"] = infos[f"_{key}"] & ~ended
    for key, value in reset_infos.items():
        if str(key).startswith("_"):
            continue
        had, has = out.get(f"_{key}"), reset_infos.get(f"_{key}")
        if key in infos and had is not None and has is not None:
            out[key] = _arrays.rows_where(has, value, infos[key])
            out[f"_{key}"] = had | has
        elif had is None and has is None and key in infos:  # unmasked: by row?
            merged = merged_by_row(value, infos[key], ended, merged_infos)
            out[key] = value if merged is None else merged
        else:
            out[key] = value
            if has is not None:
                out[f"_{key}"] = has
    return out


def same_step(policy: Any, result: StepResult) -> StepResult:
    """SAME_STEP from a DISABLED array env's step: the ended sub-envs reset with
    a ``reset_mask`` of the batch's library, their final observations in the
    dense layout (one batch, meaningful where they ended), their final infos
    the step's infos as the env returned them."""
    obs, rewards, terminations, truncations, infos = result
    if type(terminations) is np.ndarray or type(truncations) is np.ndarray:
        raise errors.ArrayLibraryError(
            f"{errors.describe(policy.env)} returned NumPy terminations or "
            f"truncations, and declares metadata['array_namespace'] = "
            f"{_arrays.declared_namespace(policy.env)!r}: return every batch in "
            f"the declared library."
        )
    ended = _arrays.ended(terminations, truncations)
    if _arrays.any_true(ended):
        final_obs = _rows.copied(obs)  # the env may write into its batch
        reset_obs, reset_infos = policy.env.reset(options={"reset_mask": ended})
        obs = _arrays.rows_where(ended, reset_obs, obs)
        step_infos = merged_infos(infos, reset_infos, ended)
        infos = modes.with_finals(step_infos, ended, final_obs, infos)
    policy._last_obs = obs
    return obs, rewards, terminations, truncations, infos


def refuse_unreachable(
    env: Any, current: Any, target: Any, who: str = "with_autoreset"
) -> None:
    """Raise :class:`~vecmode.IncompatibleModeError` if ``env`` of torch or JAX
    batches cannot be given ``target``: NEXT_STEP resets a sub-env without
    stepping it, which only a vecmode core can do; an env that resets inside
    its step (SAME_STEP) has done the caller's resets (DISABLED) already."""
    if current is None or not _arrays.is_array_env(env):
        return
    same_step = modes.final_in_info(current)
    if modes.resets_on_next_step(target):
        why = (
            "NEXT_STEP must reset a sub-env without stepping it, which only a "
            "vecmode core can do."
        )
        todo = (
            "Use it in SameStep mode as it is."
            if same_step
            else "Use vecmode.with_autoreset(env, 'SameStep') or 'Disabled' (both "
            "take its batches as they are), or build the env in NEXT_STEP mode."
        )
    elif same_step and modes.caller_resets(target):
        why, todo = "it resets the ended sub-envs inside its step.", _instead(env)
    else:
        return
    library, mode = _arrays.declared_namespace(env), modes.as_mode(current).value
    raise errors.IncompatibleModeError(
        f"{who} cannot turn {errors.describe(env)} ({mode}, {library} "
        f"batches) into {modes.as_mode(target).value}: {why} {todo}"
    )


def _instead(env: Any) -> str:
    """How to get DISABLED instead of ``env``, which resets inside its step."""
    inner = env.unwrapped
    below, how = modes.mode_of(inner), getattr(inner, "without_autoreset", None)
    if inner is not env and below is not None and modes.caller_resets(below):
        return f"Pass the {type(inner).__name__} it wraps ({below.value}) instead."
    if how == "":  # a simulator adapter with no such setting
        return (
            "Use it in SameStep mode as it is: it cannot step without its own "
            "autoreset."
        )
    built = f"without its own autoreset ({how}): it is then Disabled" if how else ""
    return (
        f"Use it in SameStep mode as it is, or build it {built or 'in Disabled mode'}."
    )
