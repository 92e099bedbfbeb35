"""A vector wrapper that passes ``call``, ``get_attr``, ``set_attr`` and ``envs`` on.

Gymnasium 1.4's ``VectorWrapper`` does not forward them, so
``NormalizeObservation(envs).call("render")`` fails with an ``AttributeError``
though ``envs.call`` exists. Every vecmode wrapper forwards them to the env it
wraps, and so works wherever the innermost vector env offers them.
"""

from __future__ import annotations

from typing import Any

from gymnasium.vector import VectorWrapper

__all__ = ["ForwardingWrapper"]


class ForwardingWrapper(VectorWrapper):
    """A ``VectorWrapper`` forwarding ``call``, ``get_attr``, ``set_attr``, ``envs``.

    >>> import gymnasium as gym, vecmode
    >>> from vecmode.wrappers import ClipReward
    >>> envs = ClipReward(vecmode.make_vec("CartPole-v1", num_envs=2), 0.0, 1.0)
    >>> envs.get_attr("spec")[0].id
    'CartPole-v1'
    >>> envs.close()
    """

    #: The wrapped env (typed loosely: ``call`` & co. are not on ``VectorEnv``).
    env: Any

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call ``name`` on every sub-env (see Gymnasium's ``SyncVectorEnv.call``)."""
        return self.env.call(name, *args, **kwargs)

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """Get attribute ``name`` of every sub-env."""
        return self.env.get_attr(name)

    def set_attr(self, name: str, values: Any) -> None:
        """Set attribute ``name`` of every sub-env."""
        self.env.set_attr(name, values)

    @property
    def envs(self) -> Any:
        """The sub-envs of the wrapped vector env (where it has them)."""
        return self.env.envs
