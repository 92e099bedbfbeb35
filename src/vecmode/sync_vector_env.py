"""The synchronous core: every sub-env in this process, one after the other."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import Space
from gymnasium.spaces import Box, MultiBinary, MultiDiscrete
from gymnasium.vector.utils import concatenate, iterate

from vecmode import core, errors, runner
from vecmode.core import Command, Executed, Request, VectorCore
from vecmode.infos import add_infos
from vecmode.modes import CORE_MODE, ModeLike

__all__ = ["SyncVectorEnv"]

#: The batched action spaces whose batch Gymnasium's ``iterate`` reads with ``iter``.
_ARRAY_BATCHES = (Box, MultiDiscrete, MultiBinary)
_STEPPING = frozenset((Command.STEP, Command.STEP_THEN_RESET))


class SyncVectorEnv(VectorCore, gym.vector.SyncVectorEnv):
    """Gymnasium's ``SyncVectorEnv`` without an autoreset policy (DISABLED mode).

    Its ``step`` resets nothing: reset ended sub-envs with ``reset(options=
    {"reset_mask": mask})``, or give it a policy with :func:`vecmode.with_autoreset`.
    Stepping a sub-env whose episode ended raises
    :class:`vecmode.EpisodeEndedError` before anything is stepped.

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
        copy: bool = True,
        observation_mode: str | tuple[Space, Space] = "same",
        autoreset_mode: ModeLike = CORE_MODE,
    ) -> None:
        """Create the sub-envs.

        Args:
            env_fns: one function per sub-env that creates it.
            copy: return a copy of the observations (else one buffer, refilled by
                the next call), as Gymnasium's.
            observation_mode: ``"same"``, ``"different"`` or a tuple
                ``(batched_space, single_space)``, as Gymnasium's.
            autoreset_mode: only ``DISABLED``; another mode's error says how to
                get it.

        Raises:
            ValueError: two env_fns returned the same env object.
        """
        core.check_core_arguments(type(self).__name__, autoreset_mode, observation_mode)
        env_fns = core.env_fn_list(env_fns)
        built: list[gym.Env] = []
        try:  # each env_fn's error names its sub-env; those built are closed
            for index, env_fn in enumerate(env_fns):
                built.append(runner.build_env(index, env_fn))
            super().__init__(
                [lambda env=env: env for env in built],
                copy=copy,
                observation_mode=observation_mode,
                autoreset_mode=CORE_MODE,
            )
        except BaseException:
            runner.close_quietly(built)
            raise
        self.env_fns = env_fns
        # (one env object would be stepped twice a step; it is the caller's: kept open)
        shared = runner.shared_sub_envs(self.envs)
        if shared:
            raise ValueError(errors.same_env_instance(shared))
        # Box observations go into their row of the batch. With copy=False the
        # caller holds ``_observations``: the rows are the env's own, copied into it
        # every call, so what the caller writes into it never comes back.
        self._rows: np.ndarray | None = (
            (self._observations if copy else self._observations.copy())
            if type(self.observation_space) is Box
            and self._observations.shape[0] == self.num_envs
            else None
        )
        self._array_actions = type(self.action_space) in _ARRAY_BATCHES
        self._env_obs[:] = runner.unreset_rows(self)
        write = runner.checked_writer(
            self.single_observation_space, self._env_obs.__setitem__
        )
        self._runner = runner.Runner(self.envs, 0, write, rows=self._rows)
        self._unreset = set(range(self.num_envs))  # (a failed call names them too)

    # A sub-env that raises in call / get_attr / set_attr / render / each gives
    # a SubEnvError naming it (an AttributeError stays one), as in the async core.
    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call method ``name`` of every sub-env (or get it), as Gymnasium's;
        ``call("step")`` and the like are refused."""
        self._open()
        core.check_call(name)
        return self._each(*runner.call_each(name, args, kwargs))

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """The attribute ``name`` of every sub-env."""
        self._open()
        return self._each(*runner.get_attr_each(name))

    def set_attr(self, name: str, values: Any) -> None:
        """Set attribute ``name`` of every sub-env: one value for all, or a list or
        tuple of ``num_envs`` values."""
        self._open()
        if not isinstance(values, (list, tuple)):
            values = [values] * self.num_envs
        if len(values) != self.num_envs:
            raise ValueError(errors.set_attr_values(len(values), self.num_envs))
        self._each(*runner.set_attr_each(name, values))

    def render(self) -> tuple[Any, ...]:
        """The frames of every sub-env (``call("render")``)."""
        return self.call("render")

    def each(
        self,
        fn: Callable[..., Any],
        *args: Any,
        indices: int | Sequence[int] | None = None,
    ) -> tuple[Any, ...]:
        """``fn(sub_env, *args)`` for each sub-env at ``indices`` (all by default),
        in that order: the results.

        >>> import gymnasium as gym, vecmode
        >>> envs = vecmode.SyncVectorEnv([lambda: gym.make("CartPole-v1")] * 3)
        >>> envs.each(lambda env: env.spec.id, indices=[2])
        ('CartPole-v1',)
        >>> envs.close()
        """
        self._open()
        order = core.check_indices(indices, self.num_envs)
        during = f"each({getattr(fn, '__name__', 'fn')})"
        return self._each(during, lambda env: fn(env, *args), order)

    def _each(
        self,
        during: str,
        fn: Callable[[gym.Env], Any],
        order: list[int] | None = None,
    ) -> tuple[Any, ...]:
        """``fn`` of each sub-env (all, or those in ``order``), as a tuple."""
        results, failures = self._runner.each(during, fn, order)
        if failures:  # (the lowest sub-env's, as the remote cores)
            first, *rest = sorted(failures, key=lambda failure: failure.index)
            raise first.as_error(others=[f.index for f in rest])
        return tuple(results)

    def close_extras(self, **kwargs: Any) -> None:
        """Close every sub-env, even if one's ``close()`` raises."""
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
            lost = sorted({*out.ran, failure.index, *self._unreset})
            raise failure.as_error(lost=lost)
        if self._unreset:
            self._unreset.difference_update(core.ran_by(commands))
        # (every flag is False but those of the sub-envs whose episode ended)
        terminations = np.zeros(self.num_envs, dtype=np.bool_)
        truncations = np.zeros(self.num_envs, dtype=np.bool_)
        for i in out.ended:
            terminations[i], truncations[i] = out.terminations[i], out.truncations[i]
        return Executed(
            self._batch(),
            np.zeros(self.num_envs)  # (nothing stepped: every reward is 0.0)
            if _STEPPING.isdisjoint(commands)
            else np.fromiter(out.rewards, np.float64, self.num_envs),
            terminations,
            truncations,
            add_infos(self._add_info, {}, out.infos) if out.infos else {},
            out.ended,
            out.finals,
        )

    def _batch(self) -> Any:
        """The batch of observations to return (a copy with ``copy=True``)."""
        rows = self._rows
        if rows is None:
            self._observations = concatenate(
                self.single_observation_space, self._env_obs, self._observations
            )
            return (
                core.copy_batch(self._observations) if self.copy else self._observations
            )
        if rows is self._observations:  # copy=True
            return rows.copy()
        np.copyto(self._observations, rows)  # copy=False: refill it
        return self._observations
