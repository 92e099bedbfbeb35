"""``vecmode.make_vec``: ``gymnasium.make_vec``'s signature and defaults, any mode."""

from __future__ import annotations

import copy
import functools
import importlib
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import gymnasium as gym
from gymnasium.envs import registration
from gymnasium.envs.registration import EnvSpec, VectorizeMode
from gymnasium.error import Error
from gymnasium.vector import AutoresetMode

from vecmode.async_vector_env import AsyncVectorEnv
from vecmode.autoreset import with_autoreset
from vecmode.core import is_int
from vecmode.errors import EnvIdError, IncompatibleModeError, short
from vecmode.modes import DEFAULT_MODE, ModeLike, as_mode, mode_of
from vecmode.ray_vector_env import RayVectorEnv
from vecmode.sync_vector_env import SyncVectorEnv

#: ``vectorization_mode="ray"`` (not a member of Gymnasium's ``VectorizeMode``).
RAY = "ray"


class InvalidIdError(Error, TypeError):
    """``make_vec``'s ``id`` is neither an env id, an ``EnvSpec`` nor a callable."""


def make_vec(
    id: str | EnvSpec | Callable[..., gym.Env],
    num_envs: int = 1,
    vectorization_mode: str | VectorizeMode | None = None,  # or "ray"
    vector_kwargs: dict[str, Any] | None = None,
    wrappers: Sequence[Callable[[gym.Env], gym.Env]] | None = None,
    *,
    autoreset_mode: ModeLike | None = None,
    episode_seeds: Any = None,
    episode_options: Callable[[int, int], Any] | None = None,
    **kwargs: Any,
) -> gym.vector.VectorEnv:
    """Create a vector env, as ``gymnasium.make_vec`` does, in the mode you ask for.

    ``num_envs``, ``vector_kwargs``, ``wrappers`` and ``**kwargs`` are as
    Gymnasium's.

    Args:
        id: a registered id (``"module:Env-v0"`` imports the module), an
            ``EnvSpec`` (a vector env's ``spec`` makes it again) or a callable.
        vectorization_mode: ``"sync"``, ``"async"``, ``"ray"``,
            ``"vector_entry_point"``, or None: the env's vector entry point if it
            gives ``autoreset_mode`` (CartPole's: NextStep only), else sync.
        autoreset_mode: the mode; None: NEXT_STEP, or a vector entry point's own.
        episode_seeds: a run seed for every episode (:func:`~vecmode.with_autoreset`).
        episode_options: ``(sub_env_index, episode) -> dict | None``, with it.

    >>> import vecmode
    >>> vecmode.make_vec("CartPole-v1", 2, "sync", autoreset_mode="SameStep")
    <SameStepAutoreset, SyncVectorEnv(CartPole-v1, num_envs=2)>
    """
    spec, env_kwargs = _spec_of(id)
    vector_kwargs = dict(vector_kwargs or {})
    wrappers = _wrapper_list(wrappers)
    if spec is not None:  # as Gymnasium: what a vector env's spec records is taken back
        num_envs = env_kwargs.pop("num_envs", num_envs)
        vectorization_mode = env_kwargs.pop("vectorization_mode", vectorization_mode)
        vector_kwargs = dict(env_kwargs.pop("vector_kwargs", vector_kwargs))
        wrappers = list(env_kwargs.pop("wrappers", wrappers))
    env_kwargs.update(kwargs)
    given = vector_kwargs.pop("autoreset_mode", None)
    mode = _requested_mode(autoreset_mode, given)
    schedule = {"episode_seeds": episode_seeds, "episode_options": episode_options}
    vmode = _vectorize_mode(vectorization_mode, spec)
    _check_buildable(spec, num_envs, vmode)
    if vmode is VectorizeMode.VECTOR_ENTRY_POINT:
        envs = _from_entry_point(spec, num_envs, vector_kwargs, wrappers, env_kwargs)
        found = _entry_point_in(envs, spec, mode, schedule, vectorization_mode is None)
        if found is not None:
            return found
        vmode = VectorizeMode.SYNC  # the entry point can't give the mode asked
    make_one = functools.partial(_make_one, spec or id, env_kwargs, wrappers)  # type: ignore[arg-type]
    core = _CORES[vmode]([make_one] * num_envs, **vector_kwargs)
    envs = _with_policy(core, DEFAULT_MODE if mode is None else mode, schedule)
    if spec is not None:  # the mode as given (a string or the enum), as Gymnasium's
        as_given = autoreset_mode if autoreset_mode is not None else given
        envs.unwrapped.spec = _made_spec(
            spec, env_kwargs, num_envs, vmode, vector_kwargs, wrappers, as_given
        )
    return envs


def _wrapper_list(wrappers: Any) -> list[Any]:
    """``wrappers`` as a list; a TypeError, as Gymnasium's, for one wrapper."""
    if isinstance(wrappers, Iterable) and not isinstance(wrappers, str):
        return list(wrappers)
    if wrappers is None:
        return []
    name = getattr(wrappers, "__name__", None)
    raise TypeError(
        f"wrappers must be a sequence of callables (each wraps an env), got "
        f"{name or short(wrappers)}{f': pass wrappers=[{name}]' if name else ''}."
    )


def _with_policy(
    envs: gym.vector.VectorEnv, mode: ModeLike, schedule: dict[str, Any]
) -> gym.vector.VectorEnv:
    """``with_autoreset(envs, mode, **schedule)``; ``envs`` closed if refused."""
    try:
        return with_autoreset(envs, mode, **schedule)
    except BaseException:
        envs.close()
        raise


def _entry_point_in(
    envs: gym.vector.VectorEnv,
    spec: Any,
    mode: AutoresetMode | None,
    schedule: dict[str, Any],
    chosen_for_the_user: bool,
) -> gym.vector.VectorEnv | None:
    """The entry point's ``envs`` in ``mode``; None (``envs`` closed) where it
    can't give a mode asked for that vecmode chose it for."""
    own, scheduled = mode_of(envs), any(v is not None for v in schedule.values())
    if mode is None and not scheduled:
        return envs
    try:
        return _with_policy(envs, mode or own or DEFAULT_MODE, schedule)
    except IncompatibleModeError as error:  # (envs closed)
        cores = spec.entry_point is not None  # (else only the entry point builds it)
        other = mode not in (None, own) or scheduled
        if chosen_for_the_user and cores and other:  # (a core gives them)
            return None
        why = getattr(error, "why", None) or getattr(error.__cause__, "why", None)
        if mode is None or (why is None and cores):
            raise
        raise _cannot_give(envs, spec, mode, own, error, why) from error


def _cannot_give(
    envs: gym.vector.VectorEnv,
    spec: Any,
    mode: AutoresetMode,
    own: AutoresetMode | None,
    error: IncompatibleModeError,
    why: str | None,
) -> IncompatibleModeError:
    """The entry point's ``envs`` (``own`` mode) can't be given ``mode``: why
    (``error``'s), and what works."""
    name, n = type(envs.unwrapped).__name__, envs.num_envs
    if spec.entry_point is not None:  # the cores build it
        works = (
            f"This call works: vecmode.make_vec({spec.id!r}, num_envs={n}, "
            f"vectorization_mode='sync', autoreset_mode={mode.value!r}) (or "
            f"'async'), with your other arguments."
        )
    else:
        works = getattr(error, "instead", None) or str(
            getattr(error.__cause__, "instead", "")
        )
    if why is None:  # the policy's refusal; the cores it advises can't build it
        why = f"{str(error).partition('. ')[0]} (it has no other entry point)."
        works = (
            f"Ask for {(own or mode).value}, or build {name} in {mode.value} itself."
        )
    return IncompatibleModeError(
        f"make_vec({spec.id!r}, vectorization_mode='vector_entry_point') can't "
        f"give autoreset_mode={mode.value!r}: {spec.id}'s vector entry point "
        f"builds {name}, which runs {getattr(own, 'value', own)}, and {why} {works}"
    )


def _check_buildable(
    spec: EnvSpec | None, num_envs: Any, vmode: VectorizeMode | str
) -> None:
    """Refuse a ``num_envs`` that is not an int >= 1, or a spec with no entry."""
    if not is_int(num_envs):
        raise TypeError(
            f"num_envs must be an int >= 1, got {type(num_envs).__name__} {num_envs!r}."
        )
    if num_envs < 1:
        raise ValueError(
            f"num_envs must be >= 1 (the number of sub-envs), got {num_envs!r}."
        )
    entry = VectorizeMode.VECTOR_ENTRY_POINT
    if spec is not None and spec.entry_point is None and vmode is not entry:
        raise Error(
            f"Cannot create vectorized environment for {spec.id} because it doesn't "
            f"have an entry point defined."
            + (
                " It has a vector entry point: vectorization_mode="
                "'vector_entry_point' (vecmode check's default for it)."
                if spec.vector_entry_point is not None
                else ""
            )
        )


def _make_one(
    maker: EnvSpec | Callable[..., gym.Env],
    env_kwargs: dict[str, Any],
    wrappers: list[Callable[[gym.Env], gym.Env]],
) -> gym.Env:
    if isinstance(maker, EnvSpec):
        env = gym.make(maker, **env_kwargs.copy())
    else:
        env = maker(**env_kwargs)
    for wrapper in wrappers:
        env = wrapper(env)
    return env


def _from_entry_point(
    spec: EnvSpec | None,
    num_envs: int,
    vector_kwargs: dict[str, Any],
    wrappers: list[Any],
    env_kwargs: dict[str, Any],
) -> gym.vector.VectorEnv:
    if spec is None:
        raise ValueError(
            "vectorization_mode='vector_entry_point' needs a registered env id "
            "or EnvSpec, not a callable."
        )
    if spec.vector_entry_point is None:  # Gymnasium's words, then what to do
        raise Error(
            f"Cannot create vectorized environment for {spec.id} because it doesn't "
            f"have a vector entry point defined. Use vectorization_mode='sync' or "
            f"'async' (vecmode's cores, which run every mode)."
        )
    return gym.make_vec(
        spec,
        num_envs=num_envs,
        vectorization_mode=VectorizeMode.VECTOR_ENTRY_POINT,
        vector_kwargs=vector_kwargs,
        wrappers=wrappers,  # type: ignore[arg-type]
        **env_kwargs,
    )


def _spec_of(id: Any) -> tuple[EnvSpec | None, dict[str, Any]]:
    """``id``'s spec (a copy, without its kwargs) and kwargs; None, {}: callable."""
    if isinstance(id, EnvSpec):
        spec = id
    elif isinstance(id, str):
        spec = registered_spec(id)
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


def registered_spec(env_id: str) -> EnvSpec:
    """The registered spec of ``env_id``, as ``gymnasium.make_vec`` finds it."""
    module, env_name = None, env_id
    if ":" in env_id:
        parts = env_id.split(":")
        if len(parts) != 2:
            raise EnvIdError(
                f"env id {env_id!r} has {len(parts) - 1} colons: write "
                f"'module:EnvName-v0', with one colon, or just 'EnvName-v0'."
            )
        module, env_name = parts
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as e:  # Gymnasium's words
            raise ModuleNotFoundError(
                f"{e}. Environment registration via importing a module failed. "
                f"Check whether '{module}' contains env registration and can be "
                f"imported."
            ) from e
    ns, name, version = registration.parse_env_id(env_name)
    latest = registration.find_highest_version(ns, name)
    if version is not None and latest is not None and latest > version:
        gym.logger.deprecation(
            f"The environment {env_name} is out of date. You should consider "
            f"upgrading to version `v{latest}`."
        )
    if version is None and latest is not None:
        env_name, unversioned = registration.get_env_id(ns, name, latest), env_name
        gym.logger.warn(
            f"Using the latest versioned environment `{env_name}` "
            f"instead of the unversioned environment `{unversioned}`."
        )
    return gym.spec(env_name)


_CORES: dict[VectorizeMode | str, Callable[..., gym.vector.VectorEnv]] = {
    VectorizeMode.SYNC: SyncVectorEnv,
    VectorizeMode.ASYNC: AsyncVectorEnv,
    RAY: RayVectorEnv,
}


def _vectorize_mode(
    vectorization_mode: str | VectorizeMode | None, spec: EnvSpec | None
) -> VectorizeMode | str:
    """Gymnasium's rule (None: the vector entry point, else sync), and RAY."""
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
    autoreset_mode: Any,
) -> EnvSpec:
    """Gymnasium's record of how a vector env was made, to make it again."""
    if autoreset_mode is not None:
        vector_kwargs = {**vector_kwargs, "autoreset_mode": autoreset_mode}
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
