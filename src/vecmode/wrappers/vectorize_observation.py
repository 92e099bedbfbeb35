"""Gymnasium's observation transforms, right in every mode: the final observations
transformed too, the wrapped env's arrays never written."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np
from gymnasium import Space
from gymnasium.error import DependencyNotInstalled
from gymnasium.vector import VectorEnv
from gymnasium.wrappers import transform_observation

from vecmode.modes import MODES, final_observations, with_final_observations
from vecmode.registry import supports
from vecmode.wrappers import base
from vecmode.wrappers.array_stats import RescalingPath

OPENCV_MISSING = (
    "ResizeObservation needs OpenCV, which is not installed: run pip install "
    'opencv-python-headless (or, in a vecmode checkout, pip install ".[opencv]").'
)


@supports(*MODES, array_native=True)
class TransformObservation(base.ObservationWrapper):
    """Gymnasium's ``TransformObservation``; same arguments. ``func`` may assume
    ``num_envs`` rows: final observations are transformed in a full-size batch.

    >>> import numpy as np, vecmode
    >>> from gymnasium.spaces import Box
    >>> from vecmode.wrappers import TransformObservation
    >>> envs = vecmode.make_vec("CartPole-v1", 2, "sync", autoreset_mode="SameStep")
    >>> envs = TransformObservation(envs, lambda obs: obs[:, :2],
    ...     single_observation_space=Box(-5, 5, (2,)))  # the cart's position, speed
    >>> _ = envs.reset(seed=0)
    >>> envs.step(np.array([0, 1]))[0].shape
    (2, 2)
    >>> envs.close()
    """

    def __init__(
        self,
        env: VectorEnv,
        func: Callable[[Any], Any],
        observation_space: Space | None = None,
        single_observation_space: Space | None = None,
    ) -> None:
        super().__init__(env)
        base.set_spaces(
            self, "observation", observation_space, single_observation_space
        )
        self.func = func

    def observations(self, observations: Any) -> Any:
        return self.func(observations)


class VectorizeTransformObservation(base.ObservationWrapper):
    """Gymnasium's ``VectorizeTransformObservation``: a single-env
    ``TransformObservation`` (``wrapper(env, **kwargs)``) applied to each
    observation, the final ones included.

    >>> import vecmode
    >>> from gymnasium.spaces import Box
    >>> from gymnasium.wrappers import TransformObservation as SingleTransform
    >>> from vecmode.wrappers import VectorizeTransformObservation
    >>> envs = vecmode.make_vec("CartPole-v1", 2, "sync")
    >>> envs = VectorizeTransformObservation(envs, wrapper=SingleTransform,
    ...     func=lambda o: o[:2], observation_space=Box(-5, 5, (2,)))
    >>> envs.reset(seed=0)[0].shape
    (2, 2)
    >>> envs.close()
    """

    def __init__(
        self,
        env: VectorEnv,
        wrapper: type[transform_observation.TransformObservation],
        **kwargs: Any,
    ) -> None:
        super().__init__(env)
        self.wrapper = wrapper(
            base.SpaceEnv(self.env.single_observation_space), **kwargs
        )
        base.set_spaces(self, "observation", None, self.wrapper.observation_space)
        self._func = self.wrapper.func

    def observations(self, observations: Any) -> Any:
        return base.map_items(
            self._func,
            self.env.observation_space,
            observations,
            self.single_observation_space,
            self.num_envs,
        )

    def final_observations(self, infos: base.Infos, observations: Any) -> base.Infos:
        rows, final = cast(tuple, final_observations(infos))
        return with_final_observations(
            infos, {i: self._func(final[i]) for i in np.flatnonzero(rows).tolist()}
        )


class FilterObservation(VectorizeTransformObservation):
    """Gymnasium's ``FilterObservation``: keeps some keys (Dict) or indices (Tuple)."""

    def __init__(self, env: VectorEnv, filter_keys: Sequence[str | int]) -> None:
        super().__init__(
            env, transform_observation.FilterObservation, filter_keys=filter_keys
        )


class FlattenObservation(VectorizeTransformObservation):
    """Gymnasium's ``FlattenObservation``: flattens each observation."""

    def __init__(self, env: VectorEnv) -> None:
        super().__init__(env, transform_observation.FlattenObservation)


class GrayscaleObservation(VectorizeTransformObservation):
    """Gymnasium's ``GrayscaleObservation``: RGB images to grayscale."""

    def __init__(self, env: VectorEnv, keep_dim: bool = False) -> None:
        super().__init__(
            env, transform_observation.GrayscaleObservation, keep_dim=keep_dim
        )


class ResizeObservation(VectorizeTransformObservation):
    """Gymnasium's ``ResizeObservation`` (needs OpenCV: the ``opencv`` extra)."""

    def __init__(self, env: VectorEnv, shape: tuple[int, ...]) -> None:
        try:
            super().__init__(env, transform_observation.ResizeObservation, shape=shape)
        except DependencyNotInstalled as error:
            raise DependencyNotInstalled(OPENCV_MISSING) from error


class ReshapeObservation(VectorizeTransformObservation):
    """Gymnasium's ``ReshapeObservation``: reshapes Box observations."""

    def __init__(self, env: VectorEnv, shape: int | tuple[int, ...]) -> None:
        super().__init__(env, transform_observation.ReshapeObservation, shape=shape)


@supports(*MODES, array_native=True)
class RescaleObservation(RescalingPath, VectorizeTransformObservation):
    """Gymnasium's ``RescaleObservation``; same arguments. Over torch or JAX
    observations (the final ones too), in their library, on their device."""

    _array_final_observations = base.ObservationWrapper.final_observations

    def __init__(
        self,
        env: VectorEnv,
        min_obs: float | np.floating | np.integer | np.ndarray,
        max_obs: float | np.floating | np.integer | np.ndarray,
    ) -> None:
        super().__init__(
            env,
            transform_observation.RescaleObservation,
            min_obs=min_obs,
            max_obs=max_obs,
        )
        self._arm("observations")

    def _array_observations(self, observations: Any) -> Any:
        out = self._gradient * observations + self._intercept
        return self.array_xp.astype(out, self._gradient.dtype, copy=False)


class DtypeObservation(VectorizeTransformObservation):
    """Gymnasium's ``DtypeObservation``: observations cast to ``dtype``."""

    def __init__(self, env: VectorEnv, dtype: Any) -> None:
        super().__init__(env, transform_observation.DtypeObservation, dtype=dtype)
