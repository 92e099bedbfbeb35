"""Whether a vector env's masked reset can drive it as DISABLED exactly:
:func:`honours_reset_mask`, and why not."""

from __future__ import annotations

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv, VectorWrapper

from vecmode import errors, modes
from vecmode.core import VectorCore
from vecmode.env_classes import layers, semantics_of, vector_env_declaration
from vecmode.registry.declare import masked_reset_fault

BUILD_DISABLED = (
    "Build the env in DISABLED mode itself if its library can, or its sub-envs "
    "on a vecmode core (vecmode.make_vec, sync or async), which has every mode."
)


def honours_reset_mask(env: VectorEnv) -> bool:
    """Whether ``env`` can be driven as DISABLED through ``reset_mask`` exactly:
    a DISABLED env (unless its class is declared to ignore the mask), or a
    NEXT_STEP env whose class is declared to clear the pending autoreset of the
    sub-envs a masked reset resets, under no wrapper known to be wrong after a
    masked reset."""
    mode = modes.mode_of(env)
    if mode is None or semantics_of(env).partial_reset == "none":
        return False
    found = vector_env_declaration(env)
    if modes.caller_resets(mode):
        return found is None or found.masked_reset(env) != "ignores"
    return (
        modes.resets_on_next_step(mode)
        and found is not None
        and found.masked_reset(env) == "clears"
        and _hurt_by_masked_resets(env) is None
    )


def _hurt_by_masked_resets(env: VectorEnv) -> tuple[str, str] | None:
    """The outermost layer of ``env`` known to be wrong after a masked reset: its
    name, and what goes wrong and what to do."""
    for layer in layers(env):
        fault = isinstance(layer, VectorWrapper) and masked_reset_fault(layer)
        if fault:
            return type(layer).__name__, fault
    return None


def why_not_masked(env: VectorEnv) -> tuple[str, str]:
    """Why ``env``'s masked reset cannot drive it as DISABLED, and the remedy."""
    name, mode = type(env.unwrapped).__name__, modes.mode_of(env)
    if mode is None:
        return (
            "It declares no mode, so what its reset with a mask does is unknown.",
            "Declare the mode it runs in in metadata['autoreset_mode'].",
        )
    if semantics_of(env).partial_reset == "none":
        return (
            f"{name} has no partial reset (semantics.partial_reset 'none'): it "
            f"cannot reset the ended sub-envs alone.",
            f"Present it in SameStep (the simulator's own autoreset): "
            f"{name}(..., mode=AutoresetMode.SAME_STEP).",
        )
    hurt = _hurt_by_masked_resets(env)
    if hurt is not None:
        layer, fault = hurt
        return f"it resets ended sub-envs by reset_mask, which reaches {layer}.", fault
    found = vector_env_declaration(env)
    if found is None:
        return (
            f"vecmode does not know what {name}'s reset(options={{'reset_mask': "
            f"mask}}) does: it must reset only the masked sub-envs and clear their "
            f"pending autoreset for the conversion to be exact.",
            f"If it does (vecmode.testing.check_vector_env and a masked reset after "
            f"an episode end show it), declare it: vecmode.register_vector_env("
            f"{name}, masked_reset='clears'); or build it in Disabled mode.",
        )
    why = found.why.format(name=name)
    if not why:
        masked_reset = found.masked_reset(env)
        what = {
            "keeps-pending": "keeps a masked sub-env's pending autoreset, so the "
            "next step would reset it once more",
            "ignores": "ignores the mask and resets every sub-env",
        }.get(masked_reset, "does not reset only the masked sub-envs")
        why = (
            f"{name}'s reset(options={{'reset_mask': mask}}) {what} (declared "
            f"masked_reset={masked_reset!r} with vecmode.register_vector_env)."
        )
    default = BUILD_DISABLED
    if modes.caller_resets(mode):  # DISABLED already
        default = "Build the env in the mode you need, if it has that mode."
    return why, found.remedy.format(name=name) or default


def awaiting_reset_step(env: VectorEnv) -> np.ndarray | None:
    """The sub-envs of a NEXT_STEP ``env`` whose reset step is pending (all False
    in another mode), or None where they cannot be seen: vecmode's cores and
    Gymnasium's sync env show them; its async env keeps them in its workers."""
    inner, none = env.unwrapped, np.zeros(env.num_envs, dtype=np.bool_)
    if not modes.resets_on_next_step(modes.mode_of(env) or modes.CORE_MODE):
        return none
    name = "awaiting_reset" if isinstance(inner, VectorCore) else "_autoreset_envs"
    pending = getattr(inner, name, None)
    return None if pending is None else np.array(pending, dtype=np.bool_)


def refuse_pending(
    env: VectorEnv, current: AutoresetMode, target: AutoresetMode
) -> None:
    """Refuse to convert a NEXT_STEP ``env`` to SAME_STEP while sub-envs await
    its reset step, which SAME_STEP has no place for (DISABLED leaves them to
    the caller's masked reset)."""
    awaiting = awaiting_reset_step(env)  # (unseen: DisableAutoreset refuses steps)
    if awaiting is not None and awaiting.any() and not modes.caller_resets(target):
        raise errors.IncompatibleModeError(
            f"with_autoreset cannot turn {errors.describe(env)} into {target.value} "
            f"now: sub-env(s) {np.flatnonzero(awaiting).tolist()} ended on the last "
            f"step and await {current.value}'s reset step. Reset them "
            f"first (env.reset(options={{'reset_mask': mask}})), or convert right "
            f"after reset()."
        )
