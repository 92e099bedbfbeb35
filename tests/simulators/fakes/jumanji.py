"""A fake Jumanji env and Jumanji's autoreset wrappers, JAX-CPU and functional,
written from instadeepai/jumanji at commit
590005b0fb305b1a98a4828bfb6b2ea28b47dd5b: ``jumanji/types.py`` (``TimeStep``,
``StepType``; ``termination`` sets discount 0, ``truncation`` keeps it, both
LAST) and ``jumanji/wrappers.py`` (``AutoResetWrapper``: step, then where the
step is LAST reset with a key split from ``state.key``, put the step's
observation in ``extras["next_obs"]`` if ``next_obs_in_extras`` (on every step,
the reset's too), replace the observation with the reset's, keep step type LAST
and the step's reward and discount). ``VmapAutoResetWrapper`` is jumanji 1.1.2's
(the PyPI wheel): ``VmapWrapper(AutoResetWrapper(env))``.

Each episode draws its length at reset: it terminates after ``length`` steps
unless ``time_limit`` truncates it first. ``record=True`` records the true
transitions (``jax.debug.callback`` in the bare env's step, one sub-env at a
time, in order): :meth:`FakeJumanjiEnv.transitions` batches them per step.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

_host = np.array  # bound at import: out of the tests' no-host-copy trap

# NumPy scalars: a jnp array here would start JAX's backend at import (and
# with it, threads a later os.fork() in the same test process would inherit).
FIRST, MID, LAST = (np.int8(i) for i in range(3))


@jax.tree_util.register_dataclass
@dataclass
class TimeStep:
    step_type: jax.Array
    reward: jax.Array
    discount: jax.Array
    observation: Any
    extras: dict = field(default_factory=dict)

    def last(self) -> jax.Array:
        return self.step_type == LAST

    def replace(self, **changes: Any) -> TimeStep:
        return dataclasses.replace(self, **changes)


@jax.tree_util.register_dataclass
@dataclass
class State:
    key: jax.Array
    x: jax.Array
    step_count: jax.Array
    length: jax.Array


@dataclass(frozen=True)
class Array:  # jumanji.specs.Array / DiscreteArray
    shape: tuple[int, ...]
    dtype: Any
    num_values: int | None = None


@dataclass(eq=False)
class FakeJumanjiEnv:
    """A bare Jumanji ``Environment``: ``reset(key)``, ``step(state, action)``."""

    time_limit: int = 5
    max_length: int = 8
    record: bool = False
    records: list[dict[str, np.ndarray]] = field(default_factory=list)

    def _obs(self, state: State) -> jax.Array:
        return jnp.stack([state.x, state.step_count.astype(jnp.float32)])

    def reset(self, key: jax.Array) -> tuple[State, TimeStep]:
        key, kx, kl = jax.random.split(key, 3)
        state = State(
            key=key,
            x=jax.random.uniform(kx, minval=-1.0, maxval=1.0),
            step_count=jnp.int32(0),
            length=jax.random.randint(kl, (), 1, self.max_length + 1),
        )
        return state, TimeStep(FIRST, jnp.float32(0), jnp.float32(1), self._obs(state))

    def step(self, state: State, action: jax.Array) -> tuple[State, TimeStep]:
        key, _ = jax.random.split(state.key)
        new = State(key, state.x + action - 0.5, state.step_count + 1, state.length)
        terminated = new.step_count >= new.length
        truncated = ~terminated & (new.step_count >= self.time_limit)
        step_type = jnp.where(terminated | truncated, LAST, MID)
        discount = jnp.where(terminated, 0.0, 1.0).astype(jnp.float32)
        reward = (new.x * 10.0).astype(jnp.float32)
        timestep = TimeStep(step_type, reward, discount, self._obs(new), {"x": new.x})
        if self.record:
            jax.debug.callback(
                self._record,
                self._obs(state),
                action,
                reward,
                self._obs(new),
                terminated,
                truncated,
            )
        return new, timestep

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

    @property
    def observation_spec(self) -> Array:
        return Array((2,), jnp.float32)

    @property
    def action_spec(self) -> Array:
        return Array((), jnp.int32, num_values=2)


class Wrapper:
    def __init__(self, env: Any) -> None:
        self._env = env

    def __getattr__(self, name: str) -> Any:
        if name == "__setstate__":
            raise AttributeError(name)
        return getattr(self._env, name)

    def reset(self, key: jax.Array) -> tuple[Any, TimeStep]:
        return self._env.reset(key)

    def step(self, state: Any, action: jax.Array) -> tuple[Any, TimeStep]:
        return self._env.step(state, action)


def add_obs_to_extras(timestep: TimeStep) -> TimeStep:
    return timestep.replace(
        extras={**timestep.extras, "next_obs": timestep.observation}
    )


class AutoResetWrapper(Wrapper):
    def __init__(self, env: Any, next_obs_in_extras: bool = False) -> None:
        super().__init__(env)
        self.next_obs_in_extras = next_obs_in_extras
        self._maybe_add = add_obs_to_extras if next_obs_in_extras else (lambda t: t)

    def _auto_reset(self, state: Any, timestep: TimeStep) -> tuple[Any, TimeStep]:
        key, _ = jax.random.split(state.key)
        state, reset_timestep = self._env.reset(key)
        timestep = self._maybe_add(timestep)
        return state, timestep.replace(observation=reset_timestep.observation)

    def reset(self, key: jax.Array) -> tuple[Any, TimeStep]:
        state, timestep = super().reset(key)
        return state, self._maybe_add(timestep)

    def step(self, state: Any, action: jax.Array) -> tuple[Any, TimeStep]:
        state, timestep = self._env.step(state, action)
        return jax.lax.cond(
            timestep.last(),
            self._auto_reset,
            lambda s, t: (s, self._maybe_add(t)),
            state,
            timestep,
        )


class VmapWrapper(Wrapper):
    def reset(self, key: jax.Array) -> tuple[Any, TimeStep]:
        return jax.vmap(self._env.reset)(key)

    def step(self, state: Any, action: jax.Array) -> tuple[Any, TimeStep]:
        return jax.vmap(self._env.step)(state, action)


class VmapAutoResetWrapper(VmapWrapper):
    def __init__(self, env: Any, next_obs_in_extras: bool = False) -> None:
        super().__init__(AutoResetWrapper(env, next_obs_in_extras=next_obs_in_extras))
