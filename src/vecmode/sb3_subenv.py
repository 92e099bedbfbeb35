"""What Stable-Baselines3's ``VecEnv`` calls do to one sub-env, as ``DummyVecEnv``
does, wherever it runs (here, or in a vecmode worker that must not import SB3)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym


def get_attr(env: gym.Env, name: str) -> Any:
    """The attribute ``name`` of the first wrapper that has it (SB3's ``get_attr``)."""
    return env.get_wrapper_attr(name)


def call_method(
    env: gym.Env, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Call ``name`` of the first wrapper that has it (SB3's ``env_method``)."""
    return env.get_wrapper_attr(name)(*args, **kwargs)


def is_wrapped(env: gym.Env, wrapper_class: type) -> bool:
    """Whether ``env`` is wrapped with ``wrapper_class`` (SB3's ``is_wrapped``)."""
    while isinstance(env, gym.Wrapper):
        if isinstance(env, wrapper_class):
            return True
        env = env.env
    return False
