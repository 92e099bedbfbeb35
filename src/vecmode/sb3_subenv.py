"""What Stable-Baselines3's ``VecEnv`` calls do to one sub-env, wherever it runs.

:class:`vecmode.sb3.ToSB3VecEnv` runs these on the sub-envs a call names
(``indices``), in this process or in a vecmode worker (``VectorCore.each``). They
do exactly what SB3's ``DummyVecEnv`` does to each of its sub-envs. They live apart
from :mod:`vecmode.sb3` so that a worker process, which imports the module of each
function it is sent, never imports SB3 (nor torch).

>>> import gymnasium as gym
>>> env = gym.make("CartPole-v1")
>>> get_attr(env, "spec").id, is_wrapped(env, gym.wrappers.TimeLimit)
('CartPole-v1', True)
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

__all__ = ["call_method", "get_attr", "is_wrapped"]


def get_attr(env: gym.Env, name: str) -> Any:
    """The attribute ``name`` of the first wrapper (outermost first) that has it
    (SB3's ``get_attr``; a method is returned, not called)."""
    return env.get_wrapper_attr(name)


def call_method(
    env: gym.Env, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """``name(*args, **kwargs)`` on the first wrapper that has ``name`` (SB3's
    ``env_method``)."""
    return env.get_wrapper_attr(name)(*args, **kwargs)


def is_wrapped(env: gym.Env, wrapper_class: type) -> bool:
    """Whether a wrapper of ``wrapper_class`` is in ``env``'s chain of wrappers
    (SB3's ``env_util.is_wrapped``)."""
    while isinstance(env, gym.Wrapper):
        if isinstance(env, wrapper_class):
            return True
        env = env.env
    return False
