"""Gymnasium's array-library conversions, right in every mode (importing
:mod:`vecmode.wrappers` imports neither torch nor jax)."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

import numpy as np
from gymnasium.error import DependencyNotInstalled
from gymnasium.vector import VectorEnv

from vecmode import _arrays
from vecmode._numpy import host_array
from vecmode.core import StepResult
from vecmode.errors import ArrayLibraryError
from vecmode.modes import MODES, from_dense_finals, map_infos
from vecmode.registry import supports
from vecmode.wrappers.base import Infos, Mask, MaskedResetWrapper, check_infos

# module: (its name, its pip name, vecmode's extra; None: the wrapper's library's)
_EXTRAS: dict[str, tuple[str, str, str | None]] = {
    "torch": ("PyTorch", "torch", "torch"),
    "jax.numpy": ("jax", "jax", "jax"),
    "array_api_compat": ("array-api-compat", "array-api-compat", None),
}


def _require(module: str, who: str) -> ModuleType:
    """Import ``module`` for ``who``, or say which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        name, pip_name, extra = _EXTRAS.get(module, (module, module, None))
        if extra is None:
            libraries = [lib for lib in ("jax", "torch") if lib in who.lower()]
            extra = libraries[0] if libraries else None
        install = f"pip install {pip_name}"
        if extra:
            install += f' (or, in a vecmode checkout, pip install ".[{extra}]")'
        raise DependencyNotInstalled(
            f"{who} needs {name}, which is not installed: run {install}."
        ) from error


@supports(*MODES, array_native=True)
class ArrayConversion(MaskedResetWrapper):
    """Gymnasium's ``ArrayConversion``, right in every mode; same arguments. Final
    observations are converted one by one (their object array and masks stay
    NumPy); to NumPy, a dense batch of them (torch's, JAX's) becomes Gymnasium's
    object array. ``reset_mask`` reaches the env as a NumPy bool array (of the
    env's library if it declares ``metadata["array_namespace"]``). Its
    ``metadata["array_namespace"]`` names ``target_xp``'s library.

    >>> import numpy as np, vecmode
    >>> import array_api_compat.numpy as xp
    >>> from vecmode.wrappers import ArrayConversion
    >>> envs = vecmode.make_vec("CartPole-v1", 2, "sync", autoreset_mode="SameStep")
    >>> envs = ArrayConversion(envs, env_xp=xp, target_xp=xp)
    >>> type(envs.reset(seed=0)[0]).__name__
    'ndarray'
    >>> envs.close()
    """

    # the registry lets it wrap a conversion (vecmode's other wrappers refuse one)
    converts_arrays = True

    def __init__(
        self,
        env: VectorEnv,
        env_xp: ModuleType,
        target_xp: ModuleType,
        env_device: Any | None = None,
        target_device: Any | None = None,
    ) -> None:
        super().__init__(env)
        who = type(self).__name__
        declared, given = _arrays.declared_namespace(env), _arrays.name_of(env_xp)
        if declared not in (None, given):
            raise ArrayLibraryError(
                f"{who} converts {given} batches, but the env below declares "
                f"metadata['array_namespace'] = {declared!r}: convert from its "
                f"library (ArrayConversion(env, env_xp=..., target_xp=...)), or "
                f"leave {who} out."
            )
        _require("array_api_compat", who)
        self._convert = _require(
            "gymnasium.wrappers.array_conversion", who
        ).array_conversion
        self._env_xp = env_xp
        self._target_xp = target_xp
        self._env_device = env_device
        self._target_device = target_device
        self.metadata = {
            **env.metadata,
            _arrays.ARRAY_NAMESPACE: _arrays.name_of(target_xp),
        }

    def _to_env(self, value: Any) -> Any:
        return self._convert(value, xp=self._env_xp, device=self._env_device)

    def _to_target(self, value: Any) -> Any:
        return self._convert(value, xp=self._target_xp, device=self._target_device)

    def _info_values(self, value: Any) -> Any:
        """``value`` in the target library, but arrays of strings or objects
        (which no other library holds), kept as they are."""
        if isinstance(value, dict):
            return {key: self._info_values(item) for key, item in value.items()}
        if isinstance(value, np.ndarray) and value.dtype.kind in "OSU":
            return value
        return self._to_target(value)

    def _infos(self, infos: Infos) -> Infos:
        check_infos(infos, type(self).__name__)
        convert, values = self._to_target, self._info_values
        infos = map_infos(infos, others=values, observation=convert, final_info=values)
        if self.metadata[_arrays.ARRAY_NAMESPACE] == "numpy":  # Gymnasium's layout
            infos = from_dense_finals(infos, None)
        return infos

    def _step_actions(self, actions: Any) -> Any:
        return self._to_env(actions)

    def _step_result(self, result: StepResult) -> StepResult:
        obs, rewards, terminations, truncations = map(self._to_target, result[:4])
        return obs, rewards, terminations, truncations, self._infos(result[4])

    def _reset_arguments(
        self, seed: Any, options: dict[str, Any] | None
    ) -> tuple[Any, dict[str, Any] | None, Any]:
        """The options in the env's library, but ``reset_mask`` in NumPy's (or the
        declared library's)."""
        if options:
            rest = dict(options)
            has_mask = "reset_mask" in rest
            mask = rest.pop("reset_mask", None)
            options = dict(self._to_env(rest)) if rest else {}
            if has_mask:
                options["reset_mask"] = host_array(mask)
        return super()._reset_arguments(seed, options)

    def _reset_result(self, obs: Any, infos: Infos, state: Mask) -> tuple[Any, Any]:
        obs, infos = super()._reset_result(obs, infos, state)
        return self._to_target(obs), self._infos(infos)


class NumpyToTorch(ArrayConversion):
    """Gymnasium's ``NumpyToTorch``, right in every mode; same arguments. Needs
    the ``torch`` extra.

    >>> import torch, vecmode
    >>> from vecmode.wrappers import NumpyToTorch
    >>> envs = NumpyToTorch(vecmode.make_vec("CartPole-v1", 2, "sync"))
    >>> _ = envs.reset(seed=0)
    >>> type(envs.step(torch.tensor([0, 1]))[0]).__name__
    'Tensor'
    >>> envs.close()
    """

    def __init__(self, env: VectorEnv, device: Any | None = None) -> None:
        torch = _require("torch", type(self).__name__)
        super().__init__(env, env_xp=np, target_xp=torch, target_device=device)
        self.device = device


class JaxToNumpy(ArrayConversion):
    """Gymnasium's ``JaxToNumpy``, right in every mode; same arguments. Needs
    the ``jax`` extra.

    >>> import jax.numpy as jnp, numpy as np, vecmode
    >>> from vecmode.wrappers import ArrayConversion, JaxToNumpy
    >>> envs = vecmode.make_vec("CartPole-v1", 2, "sync", autoreset_mode="SameStep")
    >>> envs = JaxToNumpy(ArrayConversion(envs, env_xp=np, target_xp=jnp))
    >>> _ = envs.reset(seed=0)
    >>> type(envs.step(np.array([0, 1]))[0]).__name__
    'ndarray'
    >>> envs.close()
    """

    def __init__(self, env: VectorEnv) -> None:
        jnp = _require("jax.numpy", type(self).__name__)
        super().__init__(env, env_xp=jnp, target_xp=np)


class JaxToTorch(ArrayConversion):
    """Gymnasium's ``JaxToTorch``, right in every mode; same arguments. Needs
    the ``jax`` and ``torch`` extras.

    >>> import jax.numpy as jnp, numpy as np, torch, vecmode
    >>> from vecmode.wrappers import ArrayConversion, JaxToTorch
    >>> envs = vecmode.make_vec("CartPole-v1", 2, "sync", autoreset_mode="SameStep")
    >>> envs = JaxToTorch(ArrayConversion(envs, env_xp=np, target_xp=jnp))
    >>> _ = envs.reset(seed=0)
    >>> type(envs.step(torch.tensor([0, 1]))[0]).__name__
    'Tensor'
    >>> envs.close()
    """

    def __init__(self, env: VectorEnv, device: Any | None = None) -> None:
        jnp = _require("jax.numpy", type(self).__name__)
        torch = _require("torch", type(self).__name__)
        super().__init__(env, env_xp=jnp, target_xp=torch, target_device=device)
        self.device = device
