"""``vecmode.make_vec``: core + autoreset policy, mirroring ``gymnasium.make_vec``."""

from __future__ import annotations

import copy
import importlib
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import EnvSpec, VectorizeMode
from gymnasium.vector import AutoresetMode

from vecmode.async_vector_env import AsyncVectorEnv
from vecmode.autoreset import with_autoreset
from vecmode.modes import ModeLike, as_mode
from vecmode.sync_vector_env import SyncVectorEnv

__all__ = ["make_vec"]


def _spec(env_id: str) -> EnvSpec:
    module, _, name = env_id.rpartition(":")
    if module:
        importlib.import_module(module)
    return gym.spec(name)


def make_vec(
    env_id: str | EnvSpec | Callable[..., gym.Env],
    num_envs: int = 1,
    vectorization_mode: str | VectorizeMode | None = "sync",
    autoreset_mode: ModeLike | None = None,
    vector_kwargs: dict[str, Any] | None = None,
    wrappers: Sequence[Callable[[gym.Env], gym.Env]] | None = None,
    **env_kwargs: Any,
) -> gym.vector.VectorEnv:
    """Create a vector env in the autoreset mode you ask for.

    Args:
        env_id: a registered id (``"CartPole-v1"``, ``"module:Env-v0"``), an
            ``EnvSpec``, or a callable returning a ``gymnasium.Env``.
        num_envs: the number of sub-envs.
        vectorization_mode: ``"sync"`` (:class:`vecmode.SyncVectorEnv`, every
            mode exact); ``"async"`` (:class:`vecmode.AsyncVectorEnv`, the same
            core in worker processes, every mode exact); ``"vector_entry_point"``
            (the env's own vector implementation); ``None``: the entry point where
            the env registers one, else ``"sync"`` (Gymnasium's rule).
        autoreset_mode: the mode to run in, an ``AutoresetMode`` or its value.
            ``None``: ``vector_kwargs["autoreset_mode"]`` if given, else
            NEXT_STEP for ``sync``/``async`` (Gymnasium's default), and the env's
            own declared mode for a vector entry point. Asking a vector entry point
            for another mode applies an exact conversion or raises
            :class:`~vecmode.IncompatibleModeError`.
        vector_kwargs: keyword arguments of the core (``copy``,
            ``observation_mode``; for ``async`` also ``num_workers``,
            ``shared_memory``, ``context``, ``daemon`` and ``timeout``).
        wrappers: wrappers applied to each sub-env, innermost first.
        **env_kwargs: passed to each sub-env's constructor (``gym.make``).

    >>> import vecmode
    >>> envs = vecmode.make_vec("CartPole-v1", num_envs=2, autoreset_mode="SameStep")
    >>> envs
    <SameStepAutoreset, SyncVectorEnv(CartPole-v1, num_envs=2)>
    >>> envs.metadata["autoreset_mode"]
    <AutoresetMode.SAME_STEP: 'SameStep'>
    >>> envs.close()
    """
    vector_kwargs = dict(vector_kwargs or {})
    wrappers = list(wrappers or [])
    kwarg_mode = vector_kwargs.pop("autoreset_mode", None)
    if (
        autoreset_mode is not None
        and kwarg_mode is not None
        and as_mode(autoreset_mode) is not as_mode(kwarg_mode)
    ):
        raise ValueError(
            f"autoreset_mode={autoreset_mode!r} and vector_kwargs['autoreset_mode']"
            f"={kwarg_mode!r} disagree; give the mode once."
        )
    requested = autoreset_mode if autoreset_mode is not None else kwarg_mode
    mode = None if requested is None else as_mode(requested)

    spec: EnvSpec | None = None
    if isinstance(env_id, EnvSpec):
        spec = env_id
    elif isinstance(env_id, str):
        spec = _spec(env_id)
    elif not callable(env_id):
        raise TypeError(
            f"env_id must be an env id, an EnvSpec or a callable returning a "
            f"gymnasium.Env, got {type(env_id).__name__}."
        )

    if vectorization_mode is None:
        has_entry = spec is not None and spec.vector_entry_point is not None
        vectorization_mode = (
            VectorizeMode.VECTOR_ENTRY_POINT if has_entry else VectorizeMode.SYNC
        )
    try:
        vmode = VectorizeMode(vectorization_mode)
    except ValueError:
        raise ValueError(
            f"vectorization_mode={vectorization_mode!r} is not one of "
            f"{[m.value for m in VectorizeMode]}."
        ) from None

    if vmode is VectorizeMode.VECTOR_ENTRY_POINT:
        if spec is None:
            raise ValueError(
                "vectorization_mode='vector_entry_point' needs a registered env id "
                "or EnvSpec, not a callable."
            )
        envs = gym.make_vec(
            spec,
            num_envs=num_envs,
            vectorization_mode=vmode,
            vector_kwargs=vector_kwargs,
            wrappers=wrappers,  # type: ignore[arg-type]
            **env_kwargs,
        )
        return envs if mode is None else with_autoreset(envs, mode)

    def make_one() -> gym.Env:
        env = (
            gym.make(spec, **env_kwargs) if spec is not None else env_id(**env_kwargs)  # type: ignore[operator]
        )
        for wrapper in wrappers:
            env = wrapper(env)
        return env

    env_fns = [make_one] * num_envs
    mode = AutoresetMode.NEXT_STEP if mode is None else mode
    core_type = AsyncVectorEnv if vmode is VectorizeMode.ASYNC else SyncVectorEnv
    envs = with_autoreset(core_type(env_fns, **vector_kwargs), mode)
    if spec is not None:
        made = copy.deepcopy(spec)
        made.kwargs = {
            **spec.kwargs,
            **env_kwargs,
            "num_envs": num_envs,
            "vectorization_mode": vmode.value,
            "autoreset_mode": mode.value,
        }
        envs.unwrapped.spec = made
    return envs
