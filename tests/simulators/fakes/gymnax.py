"""A fake gymnax 1.0 env, JAX-CPU and functional, written from
RobertTLange/gymnax ``gymnax/environments/environment.py`` at commit
086ad95697d5898b95ce3b14fa25f2b0bae4a1fc (identical to the file in the
gymnax 1.0.1 wheel): ``step(key, state, action, params)`` splits the key, runs
``step_env`` (the step's own observation, reward and ``terminated``), computes
``truncated = state.time >= params.max_steps_in_episode`` on the stepped state,
runs ``reset_env`` every step, selects the reset state and observation where
``terminated | truncated``, and returns six values, with
``info["final_observation"]`` the stepped observation on every step (no mask)
beside ``info["terminated"]`` and ``info["truncated"]``.

Each episode draws its length at reset: it terminates after ``length`` steps
unless ``max_steps_in_episode`` truncates it first. ``record=True`` records the
true transitions (``jax.debug.callback``, one sub-env at a time, in order):
:meth:`FakeGymnaxEnv.transitions` batches them per step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

#: Bound at import: recording (the fakes' one conversion to NumPy) stays out of
#: the tests' no-host-copy trap, which patches ``np.array`` where it is looked up.
_host = np.array


@jax.tree_util.register_dataclass
@dataclass
class State:
    x: jax.Array  # the observation's first entry
    time: jax.Array  # gymnax's EnvState.time
    length: jax.Array  # the step that terminates the episode


@dataclass(frozen=True)
class Params:
    max_steps_in_episode: int = 5
    max_length: int = 8  # episode lengths (terminations) in 1..max_length


class Discrete:
    def __init__(self, n: int) -> None:
        self.n, self.shape, self.dtype = n, (), jnp.int32


class Box:
    def __init__(self, low: Any, high: Any, shape: tuple[int, ...], dtype: Any) -> None:
        self.low, self.high, self.shape, self.dtype = low, high, shape, dtype


@dataclass(eq=False)
class FakeGymnaxEnv:
    """gymnax 1.0's ``Environment``: ``reset``, ``step``, ``step_env``,
    ``reset_env``, ``observation_space``, ``action_space``."""

    record: bool = False
    records: list[dict[str, np.ndarray]] = field(default_factory=list)

    @property
    def default_params(self) -> Params:
        return Params()

    def get_obs(self, state: State) -> jax.Array:
        return jnp.stack([state.x, state.time.astype(jnp.float32)])

    def reset_env(self, key: jax.Array, params: Params) -> tuple[jax.Array, State]:
        kx, kl = jax.random.split(key)
        state = State(
            x=jax.random.uniform(kx, minval=-1.0, maxval=1.0),
            time=jnp.int32(0),
            length=jax.random.randint(kl, (), 1, params.max_length + 1),
        )
        return self.get_obs(state), state

    def step_env(
        self, key: jax.Array, state: State, action: Any, params: Params
    ) -> Any:
        new = State(x=state.x + action - 0.5, time=state.time + 1, length=state.length)
        terminated = new.time >= new.length
        reward = new.x * 10.0
        return (
            self.get_obs(new),
            new,
            reward,
            terminated,
            {"discount": 1.0 - terminated},
        )

    def is_truncated(self, state: State, params: Params) -> jax.Array:
        return state.time >= params.max_steps_in_episode

    def reset(
        self, key: jax.Array, params: Params | None = None
    ) -> tuple[jax.Array, State]:
        return self.reset_env(key, params or self.default_params)

    def step(
        self, key: jax.Array, state: State, action: Any, params: Params | None = None
    ) -> Any:
        params = params or self.default_params
        key_step, key_reset = jax.random.split(key)
        obs_st, state_st, reward, terminated, info = self.step_env(
            key_step, state, action, params
        )
        truncated = self.is_truncated(state_st, params)
        done = jnp.logical_or(terminated, truncated)
        obs_re, state_re = self.reset_env(key_reset, params)
        state_new = jax.tree.map(
            lambda x, y: jax.lax.select(done, x, y), state_re, state_st
        )
        obs = jax.tree.map(lambda x, y: jax.lax.select(done, x, y), obs_re, obs_st)
        if self.record:
            jax.debug.callback(
                self._record,
                self.get_obs(state),
                action,
                reward,
                obs_st,
                terminated,
                truncated,
            )
        info = {**info, "terminated": terminated, "truncated": truncated}
        return (
            obs,
            state_new,
            reward,
            terminated,
            truncated,
            {**info, "final_observation": obs_st},
        )

    def _record(self, *values: Any) -> None:
        names = ("obs", "action", "reward", "next_obs", "terminated", "truncated")
        self.records.append({k: _host(v) for k, v in zip(names, values, strict=True)})

    def transitions(self, num_envs: int) -> list[dict[str, np.ndarray]]:
        """The recorded true transitions, one dict of batches per step."""
        jax.effects_barrier()
        rows = self.records
        return [
            {k: np.stack([r[k] for r in rows[i : i + num_envs]]) for k in rows[0]}
            for i in range(0, len(rows), num_envs)
        ]

    def observation_space(self, params: Params) -> Box:
        return Box(-jnp.inf, jnp.inf, (2,), jnp.float32)

    def action_space(self, params: Params | None = None) -> Discrete:
        return Discrete(2)
