"""A fake of Craftax behind its ``OptimisticResetVecEnvWrapper``, in JAX on the CPU.

The wrapper is copied from MichaelTMatthews/Craftax_Baselines ``wrappers.py`` @
7ce36fa05b84 (Craftax itself removed ``craftax/environment_base/wrappers.py`` in
MichaelTMatthews/Craftax f72542ab45b1 "remove wrappers"; its README still points
to it). Its step order: step every sub-env (``vmap`` of the env's ``step``); draw
``num_envs // reset_ratio`` fresh reset states; give them to up to that many
ended sub-envs (``jax.random.choice`` weighted by ``done``, or the last of
``argsort(done)`` when fewer ended), every other sub-env the pool state
``i // reset_ratio``; select the reset state and observation where ``done``.
The final observation is lost.

The env follows MichaelTMatthews/Craftax @ c3c2e0d038c4
(``craftax/environment_base/environment_bases.py`` ``EnvironmentNoAutoReset``,
``craftax/craftax/envs/craftax_symbolic_env.py``, ``game_logic.is_game_over``):
``step(key, state, action, params) -> (obs, state, reward, done, info)``, ``done =
timestep >= params.max_timesteps | health <= 0``, ``info["discount"] = 0`` where
done (a time-out too), spaces with ``n`` / ``low, high, shape, dtype``. Its
"game": a walker hit with probability 0.3 a step, dead at health 0.

With ``record=True`` the wrapper hands the TRUE transitions to the host through
``jax.debug.callback``: :attr:`transitions`, NumPy arrays (``terminated``: died;
``truncated``: timed out, Gymnasium's ``TimeLimit`` rule, so both on a death on
the limit's step).
"""

from __future__ import annotations

import dataclasses
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np


@dataclasses.dataclass(frozen=True)
class EnvParams:
    max_timesteps: int = 8
    max_health: int = 4


@partial(
    jax.tree_util.register_dataclass,
    data_fields=["pos", "health", "timestep"],
    meta_fields=[],
)
@dataclasses.dataclass
class EnvState:
    pos: jax.Array
    health: jax.Array
    timestep: jax.Array


class Discrete:
    def __init__(self, num_categories: int) -> None:
        self.n, self.shape, self.dtype = num_categories, (), jnp.int32


class Box:
    def __init__(
        self, low: Any, high: Any, shape: Any, dtype: Any = jnp.float32
    ) -> None:
        self.low, self.high, self.shape, self.dtype = low, high, shape, dtype


class Walker:
    """A Craftax-like env without autoreset (``EnvironmentNoAutoReset``)."""

    @property
    def default_params(self) -> EnvParams:
        return EnvParams()

    @partial(jax.jit, static_argnums=(0, 2))
    def reset(self, key: jax.Array, params: EnvParams | None = None) -> Any:
        params = self.default_params if params is None else params
        k1, k2 = jax.random.split(key)
        health = jax.random.randint(k1, (), 1, params.max_health + 1)
        pos = jax.random.randint(k2, (), 0, 10)
        state = EnvState(pos, health, jnp.asarray(0, dtype=jnp.int32))
        return self.get_obs(state), state

    @partial(jax.jit, static_argnums=(0, 4))
    def step(
        self,
        key: jax.Array,
        state: EnvState,
        action: Any,
        params: EnvParams | None = None,
    ) -> Any:
        params = self.default_params if params is None else params
        hit = jax.random.bernoulli(key, 0.3)
        state = EnvState(state.pos + action - 1, state.health - hit, state.timestep + 1)
        reward = 1.0 - hit + 0.1 * action
        done = self.is_terminal(state, params)
        info = {"discount": jax.lax.select(done, 0.0, 1.0)}
        return self.get_obs(state), state, reward, done, info

    def get_obs(self, state: EnvState) -> jax.Array:
        return jnp.stack([state.pos, state.health, state.timestep]).astype(jnp.float32)

    def is_terminal(self, state: EnvState, params: EnvParams) -> jax.Array:
        return (state.timestep >= params.max_timesteps) | (state.health <= 0)

    def action_space(self, params: EnvParams | None = None) -> Discrete:
        return Discrete(3)

    def observation_space(self, params: EnvParams) -> Box:
        return Box(-100.0, 100.0, (3,), dtype=jnp.float32)


class GymnaxWrapper:
    def __init__(self, env: Any) -> None:
        self._env = env

    def __getattr__(self, name: str) -> Any:
        return getattr(self._env, name)


class OptimisticResetVecEnvWrapper(GymnaxWrapper):
    """Craftax_Baselines' wrapper (its step verbatim, plus the recording)."""

    def __init__(
        self, env: Any, num_envs: int, reset_ratio: int, record: bool = False
    ) -> None:
        super().__init__(env)
        self.num_envs, self.reset_ratio = num_envs, reset_ratio
        assert num_envs % reset_ratio == 0, (
            "Reset ratio must perfectly divide num envs."
        )
        self.num_resets = self.num_envs // reset_ratio
        self.reset_fn = jax.vmap(self._env.reset, in_axes=(0, None))
        self.step_fn = jax.vmap(self._env.step, in_axes=(0, 0, 0, None))
        self.record, self.transitions, self._obs = record, [], None

    @partial(jax.jit, static_argnums=(0, 2))
    def reset(self, rng: jax.Array, params: Any = None) -> Any:
        rng, _rng = jax.random.split(rng)
        rngs = jax.random.split(_rng, self.num_envs)
        obs, env_state = self.reset_fn(rngs, params)
        if self.record:
            jax.debug.callback(self._host_reset, obs, ordered=True)
        return obs, env_state

    @partial(jax.jit, static_argnums=(0, 4))
    def step(self, rng: jax.Array, state: Any, action: Any, params: Any = None) -> Any:
        rng, _rng = jax.random.split(rng)
        rngs = jax.random.split(_rng, self.num_envs)
        obs_st, state_st, reward, done, info = self.step_fn(rngs, state, action, params)

        rng, _rng = jax.random.split(rng)
        rngs = jax.random.split(_rng, self.num_resets)
        obs_re, state_re = self.reset_fn(rngs, params)

        rng, _rng = jax.random.split(rng)
        reset_indexes = jnp.arange(self.num_resets).repeat(self.reset_ratio)
        being_reset_random = jax.random.choice(
            _rng,
            jnp.arange(self.num_envs),
            shape=(self.num_resets,),
            p=done,
            replace=False,
        )
        being_reset_deterministic = jnp.argsort(done)[-self.num_resets :]
        being_reset = jax.lax.select(
            done.astype(jnp.int32).sum() < self.num_resets,
            being_reset_deterministic,
            being_reset_random,
        )
        reset_indexes = reset_indexes.at[being_reset].set(jnp.arange(self.num_resets))
        obs_re = obs_re[reset_indexes]
        state_re = jax.tree.map(lambda x: x[reset_indexes], state_re)

        def auto_reset(done, state_re, state_st, obs_re, obs_st):  # type: ignore[no-untyped-def]
            state = jax.tree.map(
                lambda x, y: jax.lax.select(done, x, y), state_re, state_st
            )
            obs = jax.lax.select(done, obs_re, obs_st)
            return state, obs

        state, obs = jax.vmap(auto_reset)(done, state_re, state_st, obs_re, obs_st)
        if self.record:
            p = self.default_params if params is None else params
            jax.debug.callback(
                self._host_step,
                action,
                reward,
                obs_st,
                state_st.health <= 0,
                state_st.timestep >= p.max_timesteps,
                obs,
                ordered=True,
            )
        return obs, state, reward, done, info

    def _host_reset(self, obs: Any) -> None:
        self._obs = np.asarray(obs)

    def _host_step(self, action, reward, next_obs, terminated, truncated, obs) -> None:  # type: ignore[no-untyped-def]
        self.transitions.append(
            {
                "obs": self._obs,
                "action": np.asarray(action),
                "reward": np.asarray(reward),
                "next_obs": np.asarray(next_obs),
                "terminated": np.asarray(terminated),
                "truncated": np.asarray(truncated),
            }
        )
        self._obs = np.asarray(obs)
