"""Declared vector env classes: how each foreign vector env really behaves.

A vector env declares its mode in ``metadata["autoreset_mode"]``, but a conversion
to another mode needs more: whether ``reset(options={"reset_mask": mask})`` resets
only the masked sub-envs and clears their pending autoreset, what that reset
returns, and how the env reports final observations. vecmode's autoreset policies
decide from these declarations, not from ``isinstance`` checks; each entry for a
library's class was established by running it (``tests/registry/test_env_classes.py``).
Declare your own class with :func:`register_vector_env`.

Classes are named as ``"module:QualName"`` and matched along the env's class
hierarchy, so declaring a class imports nothing (nor does importing vecmode).

>>> import gymnasium as gym
>>> from vecmode.env_classes import vector_env_declaration
>>> envs = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")])
>>> vector_env_declaration(envs).masked_reset(envs)
'clears'
>>> envs.close()
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
from gymnasium.vector import VectorWrapper
from gymnasium.wrappers.vector import (
    RecordEpisodeStatistics as GymRecordEpisodeStatistics,
)

from vecmode.modes import MODES, ModeLike, as_mode

__all__ = [
    "FINAL_OBS_LAYOUTS",
    "MASKED_RESETS",
    "RESET_RETURNS",
    "VectorEnvDeclaration",
    "final_obs_layout",
    "keeps_options",
    "layers",
    "register_vector_env",
    "unregister_vector_env",
    "vector_env_declaration",
]

#: What ``reset(options={"reset_mask": mask})`` does: resets only the masked
#: sub-envs and clears their pending autoreset ("clears"); resets them but a
#: pending autoreset stays, so the next step resets them again ("keeps-pending");
#: resets every sub-env whatever the mask ("ignores").
MASKED_RESETS = ("clears", "keeps-pending", "ignores")
#: What a masked reset returns: the whole batch, the others' last observations
#: included (Gymnasium's, "all"), or only the masked sub-envs' rows ("masked").
RESET_RETURNS = ("all", "masked")
#: How SAME_STEP final observations come: Gymnasium's layout (an object array with
#: ``_final_obs`` / ``final_info`` / ``_final_info``, "gymnasium"), or one dense
#: array with a row for every sub-env and no mask nor final infos ("dense").
FINAL_OBS_LAYOUTS = ("gymnasium", "dense")


@dataclass(frozen=True)
class VectorEnvDeclaration:
    """How a vector env class behaves (see the module doc)."""

    #: The class, as ``"module:QualName"``.
    path: str
    #: The modes it can be built in (its own ``autoreset_mode`` argument).
    modes: frozenset[Any]
    #: One of :data:`MASKED_RESETS`, or a function of the env (for classes whose
    #: behaviour depends on how the instance was built).
    masked_reset_of: str | Callable[[Any], str]
    reset_returns: str = "all"
    final_obs_layout: str = "gymnasium"
    #: Whether ``observation_space`` / ``action_space`` are the batched spaces
    #: (Gymnasium's convention) or, like EnvPool's, the single-env ones.
    batched_spaces: bool = True
    #: Whether ``reset`` leaves the caller's options dict as it is (vecmode's
    #: cores); Gymnasium's vector envs pop ``reset_mask`` from it, so a wrapper
    #: that reads it after passing the options down no longer finds it.
    keeps_options: bool = False
    #: Why the masked reset is what it is, for messages (may use ``{name}``).
    why: str = ""
    #: What to use instead when a conversion is refused (may use ``{name}``).
    remedy: str = ""

    def masked_reset(self, env: Any) -> str:
        """What a masked reset does for this instance."""
        found = self.masked_reset_of
        return found(env.unwrapped) if callable(found) else found


_lock = threading.RLock()
_declared: dict[str, VectorEnvDeclaration] = {}


def _path(cls: type | str) -> str:
    if isinstance(cls, str):
        return cls
    return f"{cls.__module__}:{cls.__qualname__}"


def _checked_path(cls: Any) -> str:
    """``"module:QualName"`` of a class to declare: a class (a vector env, or a
    mixin of one, as EnvPool's; not a wrapper), or a path with a colon."""
    if isinstance(cls, str):
        module, colon, name = cls.partition(":")
        if not (colon and module and name):
            raise ValueError(not_a_class_path(cls))
        return cls
    if not isinstance(cls, type) or issubclass(cls, (gym.Wrapper, VectorWrapper)):
        raise TypeError(not_a_vector_env_class(cls))
    return _path(cls)


def register_vector_env(
    cls: type | str,
    *,
    masked_reset: str | Callable[[Any], str],
    modes: Any = None,
    reset_returns: str = "all",
    final_obs_layout: str = "gymnasium",
    batched_spaces: bool = True,
    keeps_options: bool = False,
    why: str = "",
    remedy: str = "",
) -> VectorEnvDeclaration:
    """Declare how a vector env class behaves, for vecmode's conversions.

    Args:
        cls: the class, or ``"module:QualName"`` (subclasses match too).
        masked_reset: one of :data:`MASKED_RESETS`, or a function of the env
            returning one.
        modes: the modes it can be built in (default: all three).
        reset_returns: one of :data:`RESET_RETURNS`.
        final_obs_layout: one of :data:`FINAL_OBS_LAYOUTS`.
        batched_spaces: False if its ``observation_space`` and ``action_space``
            are the single-env spaces (EnvPool's), not the batched ones.
        keeps_options: True if its ``reset`` leaves the caller's options dict as
            it is (Gymnasium's pop ``reset_mask`` from it).
        why: why its masked reset is what it is (shown when a conversion is
            refused).
        remedy: what to use instead when a conversion is refused.

    >>> import gymnasium as gym, vecmode
    >>> class MyVecEnv(gym.vector.VectorEnv):
    ...     metadata = {"autoreset_mode": vecmode.AutoresetMode.NEXT_STEP}
    >>> _ = vecmode.register_vector_env(MyVecEnv, masked_reset="clears")
    >>> vecmode.unregister_vector_env(MyVecEnv)
    """
    for name, value, allowed in (
        ("reset_returns", reset_returns, RESET_RETURNS),
        ("final_obs_layout", final_obs_layout, FINAL_OBS_LAYOUTS),
    ):
        if value not in allowed:
            raise ValueError(not_one_of(name, value, allowed))
    if not callable(masked_reset) and masked_reset not in MASKED_RESETS:
        raise ValueError(not_one_of("masked_reset", masked_reset, MASKED_RESETS))
    declared_modes = frozenset(
        MODES if modes is None else (as_mode(m) for m in _modes(modes))
    )
    if not declared_modes:
        raise ValueError(no_modes(cls))
    found = VectorEnvDeclaration(
        _checked_path(cls),
        declared_modes,
        masked_reset,
        reset_returns,
        final_obs_layout,
        bool(batched_spaces),
        bool(keeps_options),
        why,
        remedy,
    )
    with _lock:
        _declared[found.path] = found
    return found


def _modes(modes: Any) -> list[ModeLike]:
    return [modes] if isinstance(modes, str) else list(modes)


def unregister_vector_env(cls: type | str) -> None:
    """Remove the declaration of ``cls`` (nothing if there is none)."""
    with _lock:
        _declared.pop(_path(cls), None)


def vector_env_declaration(env: Any) -> VectorEnvDeclaration | None:
    """The declaration of ``env``'s innermost vector env's class (the nearest
    along its class hierarchy), or None."""
    inner = getattr(env, "unwrapped", env)
    with _lock:
        for cls in type(inner).__mro__:
            found = _declared.get(_path(cls))
            if found is not None:
                return found
    return None


# ------------------------------------------------- the classes vecmode knows
def _async_masked_reset(env: Any) -> str:
    # its workers keep a pending autoreset after a masked reset without shared
    # memory (Gymnasium 1.4: the flag lives in the worker, not the parent)
    return "clears" if getattr(env, "shared_memory", True) else "keeps-pending"


register_vector_env(
    "gymnasium.vector.sync_vector_env:SyncVectorEnv",
    masked_reset="clears",
    why="{name} resets only the masked sub-envs and clears their pending autoreset.",
)
register_vector_env(
    "gymnasium.vector.async_vector_env:AsyncVectorEnv",
    masked_reset=_async_masked_reset,
    why="{name}(shared_memory=False) resets the masked sub-envs, but its workers "
    "keep their pending autoreset, so the next step resets them again.",
    remedy="Build it with shared_memory=True, or use vecmode's async core "
    "(vecmode.make_vec(..., vectorization_mode='async')), which runs every mode.",
)
register_vector_env(
    "gymnasium.envs.classic_control.cartpole:CartPoleVectorEnv",
    modes=["NextStep"],
    masked_reset="ignores",
    why="{name} resets every sub-env whatever the mask.",
    remedy="Use vecmode.make_vec('CartPole-v1', vectorization_mode='sync') (or "
    "'async'), whose cores run every mode.",
)
register_vector_env(
    "ale_py.vector_env:AtariVectorEnv",
    modes=["NextStep", "SameStep"],
    masked_reset="clears",
    final_obs_layout="dense",
    why="{name} resets only the masked sub-envs and clears their pending autoreset.",
    remedy="Build it in NextStep mode (its default), which vecmode converts to "
    "SameStep and Disabled exactly.",
)
register_vector_env(
    "envpool.python.gymnasium_envpool:GymnasiumEnvPoolMixin",
    modes=["NextStep"],
    masked_reset="clears",
    reset_returns="masked",
    batched_spaces=False,
    why="{name} resets only the masked sub-envs and clears their pending autoreset "
    "(returning their rows only).",
)


register_vector_env(
    "vecmode.testing.envs:DenseFinalObsVectorEnv",
    masked_reset="clears",
    final_obs_layout="dense",
    why="{name} is Gymnasium's SyncVectorEnv with ALE's dense final observations.",
)


register_vector_env(
    "vecmode.core:VectorCore",
    modes=["Disabled"],
    masked_reset="clears",
    keeps_options=True,
    why="{name} is a vecmode core: a masked reset resets exactly the masked sub-envs.",
)


def keeps_options(env: Any) -> bool:
    """Whether the caller's reset options come back from ``env.reset`` as they
    were: its innermost vector env leaves them (a declared ``keeps_options``; an
    undeclared class is assumed to pop ``reset_mask``, as Gymnasium's do) and no
    layer on the way pops ``reset_mask`` (Gymnasium's vector
    ``RecordEpisodeStatistics`` does, after its own reset)."""
    found = vector_env_declaration(env)
    if found is None or not found.keeps_options:
        return False
    return not any(
        isinstance(layer, GymRecordEpisodeStatistics) for layer in layers(env)
    )


def final_obs_layout(env: Any) -> str:
    """How ``env`` reports SAME_STEP final observations (:data:`FINAL_OBS_LAYOUTS`):
    what the outermost layer that says so declares (a layer normalising the layout
    has a ``final_obs_layout`` class attribute), else the innermost env's class
    declaration, else Gymnasium's."""
    for layer in layers(env):
        said = getattr(type(layer), "final_obs_layout", None)  # not forwarded
        if isinstance(said, str):
            return said
    found = vector_env_declaration(env)
    return "gymnasium" if found is None else found.final_obs_layout


def layers(env: Any, limit: int = 64) -> Iterator[Any]:
    """``env``, then the env each layer wraps (its own ``env`` attribute, not a
    forwarded one), down to the innermost: at most ``limit`` layers."""
    for _ in range(limit):
        if env is None:
            return
        yield env
        inner = env.__dict__.get("env") if hasattr(env, "__dict__") else None
        env = None if inner is env else inner


# ------------------------------------------------------------------ messages
def not_a_class_path(got: str) -> str:
    return (
        f"register_vector_env takes a vector env class or its path "
        f"'module:QualName', got {got!r}."
    )


def not_a_vector_env_class(got: Any) -> str:
    what = got.__name__ if isinstance(got, type) else f"{type(got).__name__} {got!r}"
    return (
        f"register_vector_env takes a vector env class (or its path "
        f"'module:QualName'), got {what}; wrappers are declared with "
        f"vecmode.register or @vecmode.supports."
    )


def no_modes(cls: Any) -> str:
    return (
        f"register_vector_env({_shown(cls)}, modes=...) needs at least one mode the "
        f"class can be built in (leave modes out for all three)."
    )


def _shown(cls: Any) -> str:
    return cls if isinstance(cls, str) else getattr(cls, "__name__", repr(cls))


def not_one_of(name: str, got: Any, allowed: tuple[str, ...]) -> str:
    return f"{name} must be one of {', '.join(map(repr, allowed))}, got {got!r}."
