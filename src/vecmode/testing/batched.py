"""A batched CartPole over the array API, in NumPy, torch or JAX arrays."""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
from gymnasium.envs.classic_control.cartpole import CartPoleEnv
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from vecmode import _arrays
from vecmode.forwarding import valid_reset_mask


class BatchedCartPole(VectorEnv):
    """CartPole-v1's physics over ``num_envs`` sub-envs in DISABLED mode, in the
    arrays of ``xp`` on ``device``, with no per-sub-env loop. Start states are
    hashed on the device, alike in every library; the state is float64 where the
    device has it (JAX: with ``jax_enable_x64``). The actions' shape is checked,
    not their values, nor resets of ended sub-envs (a host sync): stepping one
    runs its episode on.
    Its ``metadata["array_namespace"]`` names the library (``"numpy"``,
    ``"torch"``, ``"jax.numpy"``).

    Args:
        num_envs: the number of sub-envs.
        xp: the array module, or its name: ``numpy``, ``torch`` or ``jax.numpy``.
        device: where the arrays live (None: the library's default).
        max_episode_steps: episodes are truncated after this many steps.

    >>> envs = BatchedCartPole(3)
    >>> obs, _ = envs.reset(seed=0)
    >>> obs, rewards, terminated, truncated, _ = envs.step(np.array([0, 1, 1]))
    >>> envs.reset(options={"reset_mask": terminated | truncated})[0].shape
    (3, 4)
    """

    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.DISABLED}
    autoreset_mode = AutoresetMode.DISABLED  # (as Gymnasium's envs; TorchRL reads it)

    def __init__(
        self,
        num_envs: int,
        xp: Any = np,
        device: Any = None,
        max_episode_steps: int = 500,
    ) -> None:
        from array_api_compat import array_namespace

        xp = importlib.import_module(xp) if isinstance(xp, str) else xp
        self.xp = xp = array_namespace(xp.asarray(0))
        self.metadata = {**self.metadata, _arrays.ARRAY_NAMESPACE: _arrays.name_of(xp)}
        self.num_envs, self.device = num_envs, device
        self.max_episode_steps, self.key = max_episode_steps, -1  # -1: no reset yet
        self.cartpole = c = CartPoleEnv()  # the constants and spaces
        self.single_observation_space = c.observation_space
        self.single_action_space = c.action_space
        self.observation_space = batch_space(c.observation_space, num_envs)
        self.action_space = batch_space(c.action_space, num_envs)
        has64 = "float64" in xp.__array_namespace_info__().dtypes(device=device)
        dtype = xp.float64 if has64 else xp.float32
        self.state = xp.zeros((num_envs, 4), dtype=dtype, device=device)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset all sub-envs, or those of ``options["reset_mask"]`` (xp or NumPy)."""
        xp, n, i32 = self.xp, self.num_envs, self.xp.int32
        got = (options or {}).get("reset_mask", np.ones(n, dtype=bool))
        mask = valid_reset_mask(got, n, like=self.state)  # (as the cores check it)
        super().reset(seed=seed)
        if seed is not None or self.key < 0:
            self.key = int(self.np_random.integers(2**31 - 1))
            self.draws = xp.zeros(n, dtype=i32, device=self.device)
            self.steps = xp.zeros(n, dtype=i32, device=self.device)
        # start states in [-0.05, 0.05): an int32 hash, alike in every library
        h = xp.reshape(xp.arange(4 * n, dtype=i32, device=self.device), (n, 4))
        h = h * 0x6B43 + (self.draws * 0x2C1B3C6D + self.key)[:, None]
        for _ in range(2):
            h = (h ^ (h >> 16)) * 0x45D9F3B
        h = xp.astype((h ^ (h >> 16)) & 0xFFFFFF, self.state.dtype)
        self.state = xp.where(mask[:, None], h * (0.1 / 2**24) - 0.05, self.state)
        self.steps = xp.where(mask, xp.zeros_like(self.steps), self.steps)
        self.draws = self.draws + xp.astype(mask, i32)
        return xp.astype(self.state, xp.float32), {}

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        """Step every sub-env as ``CartPoleVectorEnv`` does (Euler integration)."""
        if self.key < 0:
            raise RuntimeError("BatchedCartPole: call reset() before step().")
        xp, s, c = self.xp, self.state, self.cartpole
        x, x_dot, theta, theta_dot = s[:, 0], s[:, 1], s[:, 2], s[:, 3]
        action = xp.astype(xp.asarray(actions, device=self.device), s.dtype)
        if tuple(action.shape) != (self.num_envs,):
            raise ValueError(
                f"BatchedCartPole.step takes one action per sub-env, shape "
                f"({self.num_envs},); got shape {tuple(action.shape)}."
            )
        force = xp.sign(action - 0.5) * c.force_mag
        cos, sin = xp.cos(theta), xp.sin(theta)
        temp = (force + c.polemass_length * xp.square(theta_dot) * sin) / c.total_mass
        theta_acc = (c.gravity * sin - cos * temp) / (
            c.length * (4.0 / 3.0 - c.masspole * xp.square(cos) / c.total_mass)
        )
        x_acc = temp - c.polemass_length * theta_acc * cos / c.total_mass
        x, x_dot = x + c.tau * x_dot, x_dot + c.tau * x_acc
        theta, theta_dot = theta + c.tau * theta_dot, theta_dot + c.tau * theta_acc
        self.state = xp.stack((x, x_dot, theta, theta_dot), axis=1)
        limit = c.theta_threshold_radians
        terminated = (xp.abs(x) > c.x_threshold) | (xp.abs(theta) > limit)
        self.steps = self.steps + 1
        truncated = self.steps >= self.max_episode_steps
        rewards = xp.ones(self.num_envs, dtype=xp.float32, device=self.device)
        return xp.astype(self.state, xp.float32), rewards, terminated, truncated, {}
