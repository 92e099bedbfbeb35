"""vecmode's exceptions and every message it raises, built in one place.

Tests and docs refer to these builders (and the exception classes) rather than
copying message text, the way dm_env's test mixin names its failure messages.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gymnasium.vector import AutoresetMode

__all__ = ["EpisodeEndedError", "IncompatibleModeError"]


class IncompatibleModeError(ValueError):
    """An env's autoreset mode is not one that a wrapper (or a caller) can work with.

    Raised when the wrapper is built, never later: vecmode refuses a mode it cannot
    serve exactly instead of approximating it. The message names the wrapper, the
    mode it got, the modes it accepts and what to do instead.
    """


class EpisodeEndedError(RuntimeError):
    """A sub-env whose episode ended was stepped before it was reset.

    In DISABLED mode the caller resets ended sub-envs with
    ``reset(options={"reset_mask": mask})``. The check runs before any sub-env is
    stepped, so the env is unchanged and usable after the error.

    Attributes:
        indices: the indices of the ended sub-envs that were asked to step.
    """

    def __init__(self, indices: Iterable[int]) -> None:
        self.indices: tuple[int, ...] = tuple(int(i) for i in indices)
        super().__init__(episode_ended(self.indices))


def _mode_names(modes: Iterable[AutoresetMode]) -> str:
    return ", ".join(mode.value for mode in modes)


def not_a_mode(value: Any) -> str:
    return (
        f"{value!r} is not an autoreset mode; use one of "
        + ", ".join(f"AutoresetMode.{mode.name}" for mode in AutoresetMode)
        + " or their values "
        + ", ".join(repr(mode.value) for mode in AutoresetMode)
        + "."
    )


def episode_ended(indices: tuple[int, ...]) -> str:
    which = ", ".join(str(i) for i in indices)
    return (
        f"sub-env(s) {which} ended their episode and must be reset before they are "
        f"stepped again; nothing was stepped. In DISABLED mode reset them with "
        f'env.reset(options={{"reset_mask": mask}}) where mask[i] is True for the '
        f"ended sub-envs (terminations | truncations), or wrap the env with "
        f"vecmode.NextStepAutoreset / vecmode.SameStepAutoreset to reset them "
        f"automatically."
    )


def incompatible_mode(
    wrapper: str,
    got: AutoresetMode | None,
    accepts: Iterable[AutoresetMode],
    why: str,
    instead: str,
) -> str:
    got_text = "no declared mode" if got is None else f"mode {got.value}"
    return (
        f"{wrapper} cannot wrap an env in {got_text}: it accepts "
        f"{_mode_names(accepts)}. {why} {instead}"
    )


def reset_mask_type(got: Any) -> str:
    return (
        f'options["reset_mask"] must be a numpy array of dtype bool, got '
        f"{type(got).__name__}; pass e.g. np.logical_or(terminations, truncations)."
    )


def reset_mask_dtype(dtype: Any) -> str:
    return (
        f'options["reset_mask"] must have dtype bool, got dtype {dtype}; '
        f"convert it with mask.astype(bool) if its values are 0/1."
    )


def reset_mask_shape(shape: tuple[int, ...], num_envs: int) -> str:
    return (
        f'options["reset_mask"] must have shape ({num_envs},), one flag per '
        f"sub-env, got shape {shape}."
    )


def actions_batch(got: Any, num_envs: int) -> str:
    return (
        f"actions must be a batch of {num_envs} actions (one per sub-env, leading "
        f"dimension {num_envs}), got {got}; sample a batch with "
        f"env.action_space.sample()."
    )


def seeds_length(got: int, num_envs: int) -> str:
    return (
        f"seed must be None, an int, or a list of {num_envs} seeds (one per sub-env), "
        f"got a list of {got}."
    )


def commands_shape(shape: tuple[int, ...], num_envs: int) -> str:
    return (
        f"commands must be a sequence of {num_envs} vecmode.Command values (one per "
        f"sub-env), got shape {shape}."
    )


def unknown_command(value: Any) -> str:
    return (
        f"{value!r} is not a vecmode.Command; use Command.KEEP, Command.STEP, "
        f"Command.RESET or Command.STEP_THEN_RESET."
    )


def observation_mode(value: Any) -> str:
    return (
        f"observation_mode must be 'same', 'different' or a tuple "
        f"(batched_space, single_space), got {value!r}."
    )


def sub_env_spaces(what: str, index: int, got: Any, expected: Any, hint: str) -> str:
    return (
        f"sub-env {index}'s {what} {got} differs from the first sub-env's {expected}. "
        f"{hint}"
    )
