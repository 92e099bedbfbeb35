"""Infos as a list of per-sub-env dicts, ``final_info`` / ``final_obs`` included."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from vecmode.core import SeedLike, StepResult
from vecmode.errors import InfoLayoutError
from vecmode.modes import MODES
from vecmode.registry import supports
from vecmode.wrappers.base import Infos, Mask, MaskedResetWrapper, check_infos


def infos_to_list(infos: Infos, num_envs: int) -> list[Infos]:
    """Gymnasium's batched info dict as one dict per sub-env (nested dicts too),
    each with the keys its ``_key`` masks mark."""
    out: list[Infos] = [{} for _ in range(num_envs)]
    for key, value in infos.items():
        if str(key).startswith("_"):  # masks (and private keys), as Gymnasium's
            continue
        mask = infos.get(f"_{key}")
        if mask is not None and len(mask) != num_envs:
            raise InfoLayoutError(info_length_message(f"_{key}", len(mask), num_envs))
        if isinstance(value, dict):
            items: Any = infos_to_list(value, num_envs)
        elif isinstance(value, np.ndarray) and value.ndim and len(value) == num_envs:
            items = value
        elif isinstance(value, np.ndarray):
            raise InfoLayoutError(
                info_length_message(key, len(value) if value.ndim else None, num_envs)
            )
        else:
            length = f" of {len(value)} entries" if hasattr(value, "__len__") else ""
            raise InfoLayoutError(
                f"info[{key!r}] is a {type(value).__name__}{length}, not a NumPy "
                f"array: batched infos hold a NumPy array with one entry per sub-env "
                f"({num_envs} here) and a bool mask under '_{key}'. Build it with "
                f"np.array(...)."
            )
        for i in range(num_envs) if mask is None else np.flatnonzero(mask):
            out[i][key] = items[i]
    return out


@supports(*MODES)
class DictInfoToList(MaskedResetWrapper):
    """Gymnasium's ``DictInfoToList``, right in every mode, the final observations
    and infos included. Other wrappers read the dict layout: this one goes outermost.

    >>> import numpy as np, vecmode
    >>> from vecmode.wrappers import DictInfoToList
    >>> envs = DictInfoToList(vecmode.make_vec("CartPole-v1", 2, "sync",
    ...     autoreset_mode="SameStep", max_episode_steps=1))
    >>> _ = envs.reset(seed=0)
    >>> sorted(envs.step(np.array([0, 1]))[4][0])
    ['final_info', 'final_obs']
    >>> envs.close()
    """

    if TYPE_CHECKING:  # reset's infos typed; overriding reset loses the split API

        def reset(  # type: ignore[override]
            self, *, seed: SeedLike = None, options: dict[str, Any] | None = None
        ) -> tuple[Any, list[Infos]]: ...

    def _reset_result(  # type: ignore[override]
        self, obs: Any, infos: Infos, state: Mask
    ) -> tuple[Any, list[Infos]]:
        obs, infos = super()._reset_result(obs, infos, state)
        return obs, infos_to_list(infos, self.num_envs)

    def _step_result(  # type: ignore[override]
        self, result: StepResult
    ) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, list[Infos]]:
        obs, rewards, terminations, truncations, infos = result
        check_infos(infos, type(self).__name__)
        lists = infos_to_list(infos, self.num_envs)
        return obs, rewards, terminations, truncations, lists


def info_length_message(key: str, got: Any, num_envs: int) -> str:
    """The message of an info entry (or mask) of the wrong length."""
    return (
        f"info[{key!r}] has {got} entries where the env has {num_envs} sub-envs: "
        f"batched infos hold one entry per sub-env."
    )
