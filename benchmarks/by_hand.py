"""CleanRL's five PPO layers written by hand as one object: the yardstick of
``bench_batched.py``.

``ByHand`` does the five layers' arithmetic (episode returns and lengths, float64
running statistics of the observations and the discounted returns, both
normalised and clipped to [-10, 10]) with a few array calls per step, for the
mode one loop assumes. It checks nothing, keeps no episode times or queues and
treats NEXT_STEP's reset step as a real transition: what a user who writes the
stack for one env would write, and the least the same arithmetic costs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from array_api_compat import array_namespace
from gymnasium.vector import VectorEnv

CLIP = 10.0


class ByHand:
    """The five layers over ``env``, in its arrays (NumPy, torch)."""

    def __init__(self, env: VectorEnv, gamma: float = 0.99) -> None:
        self.env, self.gamma, n = env, gamma, env.num_envs
        obs = env.reset(seed=0)[0]  # NumPy's own functions: no compat layer
        self.xp = xp = np if type(obs) is np.ndarray else array_namespace(obs)
        wide = xp.float64
        self.returns = xp.zeros(n, dtype=wide)
        self.lengths = xp.zeros(n, dtype=xp.int64)
        self.discounted = xp.zeros(n, dtype=wide)
        self.obs_stats = (xp.zeros(4, dtype=wide), xp.ones(4, dtype=wide), 1e-4)
        self.return_stats = (xp.zeros((), dtype=wide), xp.ones((), dtype=wide), 1e-4)

    def _merge(self, stats: Any, x: Any) -> Any:
        """Chan et al.'s merge of the rows of ``x`` into ``(mean, var, count)``."""
        xp, (mean, var, count) = self.xp, stats
        d, n = xp.astype(x, xp.float64), x.shape[0]
        batch_mean = xp.sum(d, axis=0) / n
        d = d - batch_mean
        m2, total, delta = xp.sum(d * d, axis=0), count + n, batch_mean - mean
        new_var = (var * count + m2 + delta * delta * (count * n / total)) / total
        return mean + delta * (n / total), new_var, total

    def _normalized(self, obs: Any) -> Any:
        xp, (mean, var, _) = self.xp, self.obs_stats
        std = xp.sqrt(var + 1e-8)
        out = (obs - xp.astype(mean, obs.dtype)) / xp.astype(std, obs.dtype)
        return xp.clip(out, -CLIP, CLIP)

    def reset(self, *, seed: Any = None, options: Any = None) -> tuple[Any, Any]:
        xp, (obs, infos) = self.xp, self.env.reset(seed=seed, options=options)
        mask = (options or {}).get("reset_mask")
        if mask is None:
            self.obs_stats = self._merge(self.obs_stats, obs)
        else:
            self.obs_stats = self._merge(self.obs_stats, obs[mask])
            self.returns = xp.where(mask, 0.0, self.returns)
            self.lengths = xp.where(mask, 0, self.lengths)
        return self._normalized(obs), infos

    def step(self, actions: Any) -> tuple[Any, ...]:
        xp = self.xp
        obs, rewards, terminated, truncated, infos = self.env.step(actions)
        ended = terminated | truncated
        self.returns, self.lengths = self.returns + rewards, self.lengths + 1
        if xp.any(ended):
            episode = {
                "r": xp.where(ended, self.returns, 0.0),
                "l": xp.where(ended, self.lengths, 0),
            }
            infos = {**infos, "episode": episode, "_episode": ended}
            self.returns = xp.where(ended, 0.0, self.returns)
            self.lengths = xp.where(ended, 0, self.lengths)
        self.obs_stats = self._merge(self.obs_stats, obs)
        sums = xp.where(terminated, 0.0, self.discounted * self.gamma) + rewards
        self.discounted = sums
        self.return_stats = self._merge(self.return_stats, sums)
        scale = xp.sqrt(self.return_stats[1] + 1e-8)
        rewards = xp.clip(rewards / xp.astype(scale, rewards.dtype), -CLIP, CLIP)
        return self._normalized(obs), rewards, terminated, truncated, infos

    def close(self) -> None:
        self.env.close()
