"""``vecmode.make_vec``: ``gymnasium.make_vec``'s signature and defaults, any mode."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import (  # _find_spec: what gymnasium.make_vec uses
    EnvSpec,
    VectorizeMode,
    _find_spec,
)
from gymnasium.error import Error
from gymnasium.vector import AutoresetMode

from vecmode.async_vector_env import AsyncVectorEnv
from vecmode.autoreset import with_autoreset
from vecmode.core import is_int
from vecmode.modes import DEFAULT_MODE, ModeLike, as_mode
from vecmode.ray_vector_env import RayVectorEnv
from vecmode.sync_vector_env import SyncVectorEnv

__all__ = ["RAY", "make_vec"]

#: ``vectorization_mode="ray"``: :class:`vecmode.RayVectorEnv`. Gymnasium's
#: ``VectorizeMode`` enum has no member for it, so ``make_vec`` reads the string
#: itself (and records it in the spec, so ``make_vec(envs.spec)`` makes it again).
RAY = "ray"


class InvalidIdError(Error, TypeError):
    """``make_vec``'s ``id`` is neither an env id, an ``EnvSpec`` nor a callable
    (a ``gymnasium.error.Error``, as Gymnasium raises, and a ``TypeError``)."""


def make_vec(
    id: str | EnvSpec | Callable[..., gym.Env],
    num_envs: int = 1,
    vectorization_mode: str | VectorizeMode | None = None,  # or "ray"
    vector_kwargs: dict[str, Any] | None = None,
    wrappers: Sequence[Callable[[gym.Env], gym.Env]] | None = None,
    *,
    autoreset_mode: ModeLike | None = None,
    **kwargs: Any,
) -> gym.vector.VectorEnv:
    """Create a vector env, as ``gymnasium.make_vec`` does, in the mode you ask for.

    The same parameters, defaults and spec bookkeeping as
    :func:`gymnasium.make_vec` (switching is an import change), with vecmode's
    cores under ``"sync"`` and ``"async"``, one more vectorization mode,
    ``"ray"``, and one more keyword, ``autoreset_mode``.

    Args:
        id: a registered id (``"CartPole-v1"``, ``"module:Env-v0"``), an
            ``EnvSpec`` (including a vector env's own ``spec``, which re-makes it),
            or a callable returning a ``gymnasium.Env`` (a vecmode extension).
        num_envs: the number of sub-envs.
        vectorization_mode: ``"sync"`` (:class:`vecmode.SyncVectorEnv`, every
            mode exact); ``"async"`` (:class:`vecmode.AsyncVectorEnv`, the same
            core in worker processes, every mode exact); ``"vector_entry_point"``
            (the env's own vector implementation, e.g. CartPole's numpy
            ``CartPoleVectorEnv``); ``None`` (Gymnasium's default): the entry
            point where the env registers one, else ``"sync"``.
        vector_kwargs: keyword arguments of the core (``copy``,
            ``observation_mode``, ``autoreset_mode``; for ``async`` also
            ``num_workers``, ``in_parent``, ``shared_memory``, ``context``,
            ``daemon`` and ``timeout``; for ``ray`` also ``num_actors``,
            ``envs_per_actor``, ``actor_options`` and ``timeout``).
        wrappers: wrappers applied to each sub-env, innermost first.
        autoreset_mode: the mode to run in, an ``AutoresetMode`` or its value
            (also spelled ``"same_step"`` and the like: ``vecmode.as_mode``); the
            same as ``vector_kwargs["autoreset_mode"]``. ``None``: NEXT_STEP for
            ``sync``/``async`` (Gymnasium's default), the env's own mode for a
            vector entry point. Asking a vector entry point for another mode
            applies an exact conversion or raises
            :class:`~vecmode.IncompatibleModeError` saying what to use instead
            (``vectorization_mode="sync"`` always works).
        **kwargs: passed to each sub-env's constructor (``gym.make``).

    >>> import vecmode
    >>> envs = vecmode.make_vec("CartPole-v1", num_envs=2, vectorization_mode="sync",
    ...     autoreset_mode="SameStep")
    >>> envs
    <SameStepAutoreset, SyncVectorEnv(CartPole-v1, num_envs=2)>
    >>> envs.metadata["autoreset_mode"]
    <AutoresetMode.SAME_STEP: 'SameStep'>
    >>> envs.close()
    >>> vecmode.make_vec("CartPole-v1", num_envs=2)  # CartPole's own vector env
    CartPoleVectorEnv(CartPole-v1, num_envs=2)
    """
    spec, env_kwargs = _spec_of(id)
    vector_kwargs = dict(vector_kwargs or {})
    wrappers = list(wrappers or [])
    if spec is not None:
        # as Gymnasium: what a vector env's spec records is taken back from it
        num_envs = env_kwargs.pop("num_envs", num_envs)
        vectorization_mode = env_kwargs.pop("vectorization_mode", vectorization_mode)
        vector_kwargs = dict(env_kwargs.pop("vector_kwargs", vector_kwargs))
        wrappers = list(env_kwargs.pop("wrappers", wrappers))
    env_kwargs.update(kwargs)
    given = vector_kwargs.pop("autoreset_mode", None)
    mode = _requested_mode(autoreset_mode, given)
    vmode = _vectorize_mode(vectorization_mode, spec)
    if not is_int(num_envs):
        raise TypeError(num_envs_type(num_envs))
    if num_envs < 1:
        raise ValueError(num_envs_value(num_envs))

    if vmode is VectorizeMode.VECTOR_ENTRY_POINT:
        if spec is None:
            raise ValueError(
                "vectorization_mode='vector_entry_point' needs a registered env id "
                "or EnvSpec, not a callable."
            )
        if spec.vector_entry_point is None:  # Gymnasium's words, then what to do
            raise Error(no_vector_entry_point(spec.id))
        envs = gym.make_vec(
            spec,
            num_envs=num_envs,
            vectorization_mode=vmode,
            vector_kwargs=vector_kwargs,
            wrappers=wrappers,  # type: ignore[arg-type]
            **env_kwargs,
        )
        return envs if mode is None else with_autoreset(envs, mode)

    if spec is not None and spec.entry_point is None:
        raise Error(
            f"Cannot create vectorized environment for {spec.id} because it doesn't "
            f"have an entry point defined."
        )

    def make_one() -> gym.Env:
        if spec is not None:
            env = gym.make(spec, **env_kwargs.copy())
        else:
            env = id(**env_kwargs)  # type: ignore[operator]
        for wrapper in wrappers:
            env = wrapper(env)
        return env

    core_type = _CORES[vmode]
    core = core_type([make_one] * num_envs, **vector_kwargs)
    try:
        envs = with_autoreset(core, DEFAULT_MODE if mode is None else mode)
    except BaseException:
        core.close()
        raise
    if spec is not None:
        # the mode as given (a string or the enum), as Gymnasium's spec keeps it
        as_given = autoreset_mode if autoreset_mode is not None else given
        recorded = (
            vector_kwargs
            if mode is None
            else {**vector_kwargs, "autoreset_mode": as_given}
        )
        envs.unwrapped.spec = _made_spec(
            spec, env_kwargs, num_envs, vmode, recorded, wrappers
        )
    return envs


def _spec_of(id: Any) -> tuple[EnvSpec | None, dict[str, Any]]:
    """``id``'s spec (a copy, its kwargs taken out) and those kwargs; None and
    ``{}`` for a callable."""
    if isinstance(id, EnvSpec):
        spec = id
    elif isinstance(id, str):
        spec = _find_spec(id)  # imports "module:" first, suggests versions
    elif callable(id):
        return None, {}
    else:
        raise InvalidIdError(
            f"Invalid id type: {type(id)}. Expected `str` or `EnvSpec` (or a "
            f"callable returning a gymnasium.Env)."
        )
    spec = copy.deepcopy(spec)
    env_kwargs, spec.kwargs = dict(spec.kwargs), {}
    return spec, env_kwargs


#: The core each vectorization mode builds.
_CORES: dict[VectorizeMode | str, Callable[..., gym.vector.VectorEnv]] = {
    VectorizeMode.SYNC: SyncVectorEnv,
    VectorizeMode.ASYNC: AsyncVectorEnv,
    RAY: RayVectorEnv,
}


def _vectorize_mode(
    vectorization_mode: str | VectorizeMode | None, spec: EnvSpec | None
) -> VectorizeMode | str:
    """Gymnasium's rule: None is the vector entry point where the env registers
    one, else sync; and vecmode's :data:`RAY`."""
    if vectorization_mode is None:
        has_entry = spec is not None and spec.vector_entry_point is not None
        return VectorizeMode.VECTOR_ENTRY_POINT if has_entry else VectorizeMode.SYNC
    if vectorization_mode == RAY:
        return RAY
    try:
        return VectorizeMode(vectorization_mode)
    except ValueError:
        raise ValueError(
            f"Invalid vectorization mode: {vectorization_mode!r}, "
            f"valid modes: {[m.value for m in VectorizeMode] + [RAY]}"
        ) from None


def _made_spec(
    spec: EnvSpec,
    env_kwargs: dict[str, Any],
    num_envs: int,
    vmode: VectorizeMode | str,
    vector_kwargs: dict[str, Any],
    wrappers: list[Any],
) -> EnvSpec:
    """Gymnasium's record of how a vector env was made (``make_vec(envs.spec)``
    makes it again)."""
    made = copy.deepcopy(spec)
    made.kwargs = env_kwargs.copy()
    if num_envs != 1:
        made.kwargs["num_envs"] = num_envs
    made.kwargs["vectorization_mode"] = getattr(vmode, "value", vmode)
    if vector_kwargs:
        made.kwargs["vector_kwargs"] = vector_kwargs
    if wrappers:
        made.kwargs["wrappers"] = wrappers
    return made


def _requested_mode(argument: Any, in_vector_kwargs: Any) -> AutoresetMode | None:
    """The mode asked for, by ``autoreset_mode=`` or in ``vector_kwargs``."""
    if (
        argument is not None
        and in_vector_kwargs is not None
        and as_mode(argument) is not as_mode(in_vector_kwargs)
    ):
        raise ValueError(
            f"autoreset_mode={argument!r} and vector_kwargs['autoreset_mode']"
            f"={in_vector_kwargs!r} disagree; give the mode once."
        )
    requested = argument if argument is not None else in_vector_kwargs
    return None if requested is None else as_mode(requested)


def num_envs_type(got: Any) -> str:
    return f"num_envs must be an int >= 1, got {type(got).__name__} {got!r}."


def num_envs_value(got: Any) -> str:
    return f"num_envs must be >= 1 (the number of sub-envs), got {got!r}."


def no_vector_entry_point(env_id: str) -> str:
    return (
        f"Cannot create vectorized environment for {env_id} because it doesn't have "
        f"a vector entry point defined. Use vectorization_mode='sync' or 'async' "
        f"(vecmode's cores, which run every mode)."
    )
