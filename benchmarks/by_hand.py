"""CleanRL's five PPO layers written by hand as one object: the yardstick of
``bench_batched.py``.

``ByHand`` does the five layers' arithmetic (episode returns and lengths,
running statistics of the observations and the discounted returns, float64
where the library has it, both normalised and clipped to [-10, 10]) in one
function per call, compiled by ``jax.jit`` on JAX. It checks nothing, keeps no
episode times or queues, puts the episode statistics in every step's info and
treats NEXT_STEP's reset step as a real transition: what a user who writes the
stack for one env would write, and the least the same arithmetic costs.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from array_api_compat import array_namespace
from gymnasium.vector import VectorEnv

CLIP = 10.0


def _merge(xp: Any, stats: Any, x: Any, w: Any = None) -> Any:
    """Chan et al.'s merge of the rows of ``x`` (weighted 0/1 by ``w``, all if
    None) into ``(mean, var, count)``."""
    mean, var, count = stats
    d = xp.astype(x, mean.dtype)
    if w is None:
        n = x.shape[0]
        if not n:  # (no row chosen)
            return stats
        batch_mean = xp.sum(d, axis=0) / n
        d = d - batch_mean
    else:  # JAX's masked reset: no gather of a data-dependent size
        w = xp.reshape(xp.astype(w, mean.dtype), (-1,) + (1,) * (x.ndim - 1))
        n = xp.sum(w)
        batch_mean = xp.sum(d * w, axis=0) / xp.maximum(n, 1.0)
        d = (d - batch_mean) * w
    m2, total, delta = xp.sum(d * d, axis=0), count + n, batch_mean - mean
    new_var = (var * count + m2 + delta * delta * (count * n / total)) / total
    return mean + delta * (n / total), new_var, total


def _normalized(xp: Any, stats: Any, obs: Any) -> Any:
    mean, var, _ = stats
    std = xp.astype(xp.sqrt(var + 1e-8), obs.dtype)
    return xp.clip((obs - xp.astype(mean, obs.dtype)) / std, -CLIP, CLIP)


def _on_step(xp: Any, state: Any, obs: Any, rewards: Any, *flags: Any) -> Any:
    """``(state, obs, rewards, episode)`` after a step; ``flags``:
    ``(terminated, truncated, gamma)``."""
    returns, lengths, discounted, obs_stats, return_stats = state
    terminated, truncated, gamma = flags
    ended = terminated | truncated
    returns, lengths = returns + rewards, lengths + 1
    episode = {
        "r": xp.where(ended, returns, 0.0),
        "l": xp.where(ended, lengths, 0),
        "_r": ended,
    }
    returns, lengths = xp.where(ended, 0.0, returns), xp.where(ended, 0, lengths)
    obs_stats = _merge(xp, obs_stats, obs)
    discounted = xp.where(terminated, 0.0, discounted * gamma) + rewards
    return_stats = _merge(xp, return_stats, discounted)
    scale = xp.astype(xp.sqrt(return_stats[1] + 1e-8), rewards.dtype)
    rewards = xp.clip(rewards / scale, -CLIP, CLIP)
    state = (returns, lengths, discounted, obs_stats, return_stats)
    return state, _normalized(xp, obs_stats, obs), rewards, episode


def _on_reset(xp: Any, state: Any, obs: Any, mask: Any) -> Any:
    """``(state, obs)`` after a reset of the rows of ``mask`` (all if None)."""
    returns, lengths, discounted, obs_stats, return_stats = state
    if mask is None:
        obs_stats = _merge(xp, obs_stats, obs)
    else:
        jax = "jax" in xp.__name__
        chosen, w = (obs, mask) if jax else (obs[mask], None)
        obs_stats = _merge(xp, obs_stats, chosen, w)
        returns, lengths = xp.where(mask, 0.0, returns), xp.where(mask, 0, lengths)
    state = (returns, lengths, discounted, obs_stats, return_stats)
    return state, _normalized(xp, obs_stats, obs)


class ByHand:
    """The five layers over ``env``, in its arrays (NumPy, torch, JAX)."""

    def __init__(self, env: VectorEnv, gamma: float = 0.99) -> None:
        self.env, self.gamma, n = env, gamma, env.num_envs
        obs = env.reset(seed=0)[0]  # NumPy's own functions: no compat layer
        xp = np if type(obs) is np.ndarray else array_namespace(obs)
        wide = (
            xp.float64
            if "float64" in xp.__array_namespace_info__().dtypes()
            else xp.float32
        )
        step, reset = functools.partial(_on_step, xp), functools.partial(_on_reset, xp)
        if "jax" in xp.__name__:
            import jax

            step, reset = jax.jit(step, static_argnums=5), jax.jit(reset)
        self._step, self._reset = step, reset
        zeros, ones = xp.zeros, xp.ones
        self.state = (
            zeros(n, dtype=wide),
            zeros(n, dtype=xp.int64 if wide == xp.float64 else xp.int32),
            zeros(n, dtype=wide),
            (zeros(obs.shape[1:], dtype=wide), ones(obs.shape[1:], dtype=wide), 1e-4),
            (zeros((), dtype=wide), ones((), dtype=wide), 1e-4),
        )

    def reset(self, *, seed: Any = None, options: Any = None) -> tuple[Any, Any]:
        obs, infos = self.env.reset(seed=seed, options=options)
        mask = (options or {}).get("reset_mask")
        self.state, obs = self._reset(self.state, obs, mask)
        return obs, infos

    def step(self, actions: Any) -> tuple[Any, ...]:
        obs, rewards, terminated, truncated, infos = self.env.step(actions)
        self.state, obs, rewards, episode = self._step(
            self.state, obs, rewards, terminated, truncated, self.gamma
        )
        infos = {**infos, "episode": episode, "_episode": episode.pop("_r")}
        return obs, rewards, terminated, truncated, infos

    def close(self) -> None:
        self.env.close()
