"""The synchronous core: every sub-env in this process, one after the other."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import Space
from gymnasium.spaces import Box, MultiBinary, MultiDiscrete
from gymnasium.vector.utils import concatenate, iterate

from vecmode import errors
from vecmode.core import (
    Executed,
    Request,
    VectorCore,
    check_call,
    check_core_arguments,
    check_indices,
    copy_batch,
    env_fn_list,
)
from vecmode.errors import same_env_instance
from vecmode.infos import add_infos
from vecmode.modes import CORE_MODE, ModeLike
from vecmode.runner import (
    Runner,
    call_each,
    checked_writer,
    get_attr_each,
    set_attr_each,
    shared_sub_envs,
)

__all__ = ["SyncVectorEnv"]


class SyncVectorEnv(VectorCore, gym.vector.SyncVectorEnv):
    """Gymnasium's ``SyncVectorEnv`` without an autoreset policy (DISABLED mode).

    It is a :class:`gymnasium.vector.SyncVectorEnv` (same constructor arguments,
    spaces, ``call``, ``get_attr``, ``set_attr``, ``render``, ``envs``), whose
    ``step`` resets nothing: reset ended sub-envs with
    ``reset(options={"reset_mask": mask})``, or give it an autoreset policy with
    :func:`vecmode.with_autoreset` / :func:`vecmode.make_vec`. Stepping a sub-env
    whose episode ended raises :class:`vecmode.EpisodeEndedError` before anything
    is stepped.

    >>> import numpy as np, gymnasium as gym
    >>> import vecmode
    >>> envs = vecmode.SyncVectorEnv(
    ...     [lambda: gym.make("CartPole-v1", max_episode_steps=1)] * 2)
    >>> envs.metadata["autoreset_mode"]
    <AutoresetMode.DISABLED: 'Disabled'>
    >>> _ = envs.reset(seed=0)
    >>> _, _, _, truncations, _ = envs.step(np.array([1, 1]))
    >>> truncations
    array([ True,  True])
    >>> envs.step(np.array([1, 1]))
    Traceback (most recent call last):
    ...
    vecmode.errors.EpisodeEndedError: sub-env(s) 0, 1 ended their episode ...
    >>> obs, infos = envs.reset(options={"reset_mask": truncations})
    >>> envs.close()
    """

    def __init__(
        self,
        env_fns: Sequence[Callable[[], gym.Env]],
        *,
        copy: bool = True,
        observation_mode: str | tuple[Space, Space] = "same",
        autoreset_mode: ModeLike = CORE_MODE,
    ) -> None:
        """Create the sub-envs.

        Args:
            env_fns: one function per sub-env that creates it.
            copy: return a copy of the observations from ``reset`` and ``step``
                (otherwise the same buffer, refilled by the next call: what the
                caller writes into it reaches no sub-env, as with Gymnasium's).
            observation_mode: ``"same"``, ``"different"`` or a tuple
                ``(batched_space, single_space)``, as Gymnasium's.
            autoreset_mode: only ``DISABLED`` (the default): a core has no
                autoreset policy. Given another mode, the error says how to get it.

        Raises:
            ValueError: two env_fns returned the same env object (it would be
                stepped once per sub-env each step; SB3's DummyVecEnv refuses
                it too).
        """
        check_core_arguments(type(self).__name__, autoreset_mode, observation_mode)
        env_fns = env_fn_list(env_fns)
        super().__init__(
            env_fns,
            copy=copy,
            observation_mode=observation_mode,
            autoreset_mode=CORE_MODE,
        )
        # One env object behind two sub-envs would be stepped twice a step. As for
        # Gymnasium's construction errors (spaces that differ), nothing is closed:
        # the shared env is the caller's own.
        shared = shared_sub_envs(self.envs)
        if shared:
            raise ValueError(same_env_instance(shared))
        # Box observations are written straight into their row of the batch
        # (what ``concatenate`` does, without re-stacking every sub-env each call).
        # With copy=False the caller gets ``_observations`` itself, so the rows
        # are a batch of the env's own, copied into it every call (as Gymnasium's
        # concatenate refills it every call): what the caller, or a wrapper,
        # writes into it never becomes a kept sub-env's observation.
        self._rows: np.ndarray | None = (
            (self._observations if copy else self._observations.copy())
            if type(self.observation_space) is Box
            and self._observations.shape[0] == self.num_envs
            else None
        )
        self._array_actions = type(self.action_space) in (
            Box,
            MultiDiscrete,
            MultiBinary,
        )
        self._runner = (
            Runner(
                self.envs,
                0,
                checked_writer(
                    self.single_observation_space, self._env_obs.__setitem__
                ),
            )
            if self._rows is None
            else Runner(self.envs, 0, rows=self._rows)
        )

    # A sub-env that raises in call / get_attr / set_attr / render / each gives
    # a SubEnvError naming it (an AttributeError stays one), as in the async core.
    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call method ``name`` of every sub-env (or get it, if not callable), as
        Gymnasium's; ``call("step")`` and the like are refused (use ``step``)."""
        self._open()
        check_call(name)
        return self._each(*call_each(name, args, kwargs))

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """The attribute ``name`` of every sub-env."""
        self._open()
        return self._each(*get_attr_each(name))

    def set_attr(self, name: str, values: Any) -> None:
        """Set attribute ``name`` of every sub-env: one value for all, or a list or
        tuple of ``num_envs`` values."""
        self._open()
        if not isinstance(values, (list, tuple)):
            values = [values] * self.num_envs
        if len(values) != self.num_envs:
            raise ValueError(errors.set_attr_values(len(values), self.num_envs))
        self._each(*set_attr_each(name, values))

    def render(self) -> tuple[Any, ...]:
        """The frames of every sub-env (``call("render")``)."""
        return self.call("render")

    def each(
        self,
        fn: Callable[..., Any],
        *args: Any,
        indices: int | Sequence[int] | None = None,
    ) -> tuple[Any, ...]:
        """``fn(sub_env, *args)`` for each sub-env at ``indices`` (all by default,
        in the order given); the results in that order. A sub-env that raises
        gives a :class:`~vecmode.SubEnvError` naming it, as in the async core.

        >>> import gymnasium as gym, vecmode
        >>> envs = vecmode.SyncVectorEnv([lambda: gym.make("CartPole-v1")] * 3)
        >>> envs.each(lambda env: env.spec.id, indices=[2])
        ('CartPole-v1',)
        >>> envs.close()
        """
        self._open()
        order = check_indices(indices, self.num_envs)
        during = f"each({getattr(fn, '__name__', 'fn')})"
        return self._each(during, lambda env: fn(env, *args), order)

    def _each(
        self,
        during: str,
        fn: Callable[[gym.Env], Any],
        order: list[int] | None = None,
    ) -> tuple[Any, ...]:
        """``fn`` of each sub-env (all, or those in ``order``), as a tuple; the
        first that raises stops it, with a :class:`~vecmode.SubEnvError`."""
        results, failure = self._runner.each(during, fn, order)
        if failure is not None:
            raise failure.as_error()
        return tuple(results)

    def close_extras(self, **kwargs: Any) -> None:
        """Close every sub-env, even if one's ``close()`` raises (then a
        :class:`~vecmode.SubEnvError` names every sub-env whose close failed)."""
        failures = self._runner.close()
        if failures:
            raise failures[0].as_error(others=[f.index for f in failures[1:]])

    def _execute(self, request: Request) -> Executed:
        commands, actions, seeds, options = request
        if actions is None:
            acts = None
        elif self._array_actions and type(actions) is np.ndarray:
            acts = iter(actions)  # what gymnasium's ``iterate`` does for these
        else:
            acts = iterate(self.action_space, actions)
        out = self._runner.run(commands, acts, seeds, options)
        failure = out.failure
        if failure is not None:
            raise failure.as_error(lost=[*out.ran, failure.index])
        # every flag is False but those of the sub-envs whose episode ended
        terminations = np.zeros(self.num_envs, dtype=np.bool_)
        truncations = np.zeros(self.num_envs, dtype=np.bool_)
        for i in out.ended:
            terminations[i], truncations[i] = out.terminations[i], out.truncations[i]
        return Executed(
            self._batch(),
            np.array(out.rewards, dtype=np.float64),
            terminations,
            truncations,
            add_infos(self._add_info, {}, out.infos) if out.infos else {},
            out.ended,
            out.finals,
        )

    def _batch(self) -> Any:
        """The batch of observations to return (a copy with ``copy=True``)."""
        if self._rows is None:
            self._observations = concatenate(
                self.single_observation_space, self._env_obs, self._observations
            )
            return copy_batch(self._observations) if self.copy else self._observations
        if self._rows is not self._observations:  # copy=False: refill it
            np.copyto(self._observations, self._rows)
            return self._observations
        return self._observations.copy()
