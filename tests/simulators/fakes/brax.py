"""A fake of Brax's training env and of MuJoCo Playground's, in JAX on the CPU.

Written from google/brax ``brax/envs/wrappers/training.py`` @ 0b96d056328d
(``wrap``: ``VmapWrapper``, ``EpisodeWrapper``, ``AutoResetWrapper``;
``brax/envs/__init__.py`` ``create``, with ``batch_size``) and
google-deepmind/mujoco_playground ``mujoco_playground/_src/wrapper.py`` @
d5e6b4753132 (``wrap_for_brax_training``, ``BraxAutoResetWrapper`` with its
``full_reset``). The wrappers' step order is theirs: the inner step; the
EpisodeWrapper's ``truncation = steps >= episode_length and not done`` (a float),
``done`` forced at the limit; then, where ``done``, the observation and the
physics state replaced by the CACHED first ones of the last ``reset()`` (Brax;
Playground's ``AutoResetWrapper_first_obs``/``_first_data``), or by a fresh
reset (Playground's ``full_reset=True``). The final observation is lost.

The physics (``Slide``) is a point pushed by the action: ``v += action / 2``,
``x += v``; terminated when ``|x| > bound``; reward ``1 - |x|``. With
``record=True`` the autoreset wrapper hands the TRUE transition of every step
(the observation the episode ended on, before the replacement) to the host
through ``jax.debug.callback``: :attr:`transitions`, NumPy arrays.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import numpy as np
from jax import numpy as jp


def _state_class(name: str, physics: str) -> type:
    fields = [physics, "obs", "reward", "done", "metrics", "info"]
    cls = dataclasses.make_dataclass(
        name,
        [(f, Any) for f in fields],
        namespace={"replace": lambda self, **kw: dataclasses.replace(self, **kw)},
    )
    return jax.tree_util.register_dataclass(cls, data_fields=fields, meta_fields=[])


#: brax.envs.base.State (``pipeline_state``); mujoco_playground's (``data``).
BraxState = _state_class("BraxState", "pipeline_state")
PlaygroundState = _state_class("PlaygroundState", "data")


class Slide:
    """One env, Brax's functional API: ``reset(rng)``, ``step(state, action)``."""

    observation_size = 2
    action_size = 1

    def __init__(self, bound: float = 1.0, playground: bool = False) -> None:
        self.bound = bound
        self.cls, self.physics = (
            (PlaygroundState, "data") if playground else (BraxState, "pipeline_state")
        )

    def reset(self, rng: jax.Array) -> Any:
        x = jax.random.uniform(rng, (), minval=-0.5, maxval=0.5)
        q = jp.stack([x, jp.zeros(())])
        zero = jp.zeros(())
        return self.cls(
            **{self.physics: q},
            obs=q,
            reward=zero,
            done=zero,
            metrics={"x": x},
            info={"pushes": zero},
        )

    def step(self, state: Any, action: jax.Array) -> Any:
        x, v = getattr(state, self.physics)
        v = v + action[0] / 2
        x = x + v
        q = jp.stack([x, v])
        done = jp.where(jp.abs(x) > self.bound, 1.0, 0.0)
        state.info["pushes"] = state.info["pushes"] + 1
        return state.replace(
            **{self.physics: q},
            obs=q,
            reward=1 - jp.abs(x),
            done=done,
            metrics={"x": x},
        )


class Wrapper:
    def __init__(self, env: Any) -> None:
        self.env = env

    def reset(self, rng: jax.Array) -> Any:
        return self.env.reset(rng)

    def step(self, state: Any, action: jax.Array) -> Any:
        return self.env.step(state, action)

    def __getattr__(self, name: str) -> Any:
        if name == "__setstate__":
            raise AttributeError(name)
        return getattr(self.env, name)


class VmapWrapper(Wrapper):
    def __init__(self, env: Any, batch_size: int | None = None) -> None:
        super().__init__(env)
        self.batch_size = batch_size

    def reset(self, rng: jax.Array) -> Any:
        if self.batch_size is not None:
            rng = jax.random.split(rng, self.batch_size)
        return jax.vmap(self.env.reset)(rng)

    def step(self, state: Any, action: jax.Array) -> Any:
        return jax.vmap(self.env.step)(state, action)


class EpisodeWrapper(Wrapper):
    def __init__(self, env: Any, episode_length: int, action_repeat: int = 1) -> None:
        super().__init__(env)
        self.episode_length, self.action_repeat = episode_length, action_repeat

    def reset(self, rng: jax.Array) -> Any:
        state = self.env.reset(rng)
        state.info["steps"] = jp.zeros(rng.shape[:-1])
        state.info["truncation"] = jp.zeros(rng.shape[:-1])
        state.info["episode_done"] = jp.zeros(rng.shape[:-1])
        return state

    def step(self, state: Any, action: jax.Array) -> Any:
        state = self.env.step(state, action)  # action_repeat 1: brax's scan once
        steps = state.info["steps"] + self.action_repeat
        one, zero = jp.ones_like(state.done), jp.zeros_like(state.done)
        limit = jp.array(self.episode_length, dtype=jp.int32)
        done = jp.where(steps >= limit, one, state.done)
        state.info["truncation"] = jp.where(steps >= limit, 1 - state.done, zero)
        state.info["steps"] = steps
        state.info["episode_done"] = done
        return state.replace(done=done)


def _where_done(done: jax.Array) -> Any:
    def where_done(x: jax.Array, y: jax.Array) -> jax.Array:
        if done.shape and done.shape[0] != x.shape[0]:
            return y
        d = jp.reshape(done, [x.shape[0]] + [1] * (len(x.shape) - 1))
        return jp.where(d, x, y)

    return where_done


class Recording(Wrapper):
    """The true transitions, handed to the host from inside the step."""

    def __init__(self, env: Any, record: bool) -> None:
        super().__init__(env)
        self.record, self.transitions = record, []

    def _true(self, before: Any, action: jax.Array, after: Any) -> None:
        if self.record:
            cut = after.info["truncation"]
            jax.debug.callback(
                self._host,
                before.obs,
                action,
                after.reward,
                after.obs,
                after.done * (1 - cut),
                cut,
                ordered=True,
            )

    def _host(self, obs, action, reward, next_obs, terminated, truncated) -> None:  # type: ignore[no-untyped-def]
        self.transitions.append(
            {
                "obs": np.asarray(obs),
                "action": np.asarray(action),
                "reward": np.asarray(reward),
                "next_obs": np.asarray(next_obs),
                "terminated": np.asarray(terminated).astype(bool),
                "truncated": np.asarray(truncated).astype(bool),
            }
        )


class AutoResetWrapper(Recording):
    """Brax's: resets to ``info["first_obs"]``/``info["first_pipeline_state"]``."""

    def __init__(self, env: Any, record: bool = False) -> None:
        super().__init__(env, record)

    def reset(self, rng: jax.Array) -> Any:
        state = self.env.reset(rng)
        state.info["first_pipeline_state"] = state.pipeline_state
        state.info["first_obs"] = state.obs
        return state

    def step(self, state: Any, action: jax.Array) -> Any:
        before = state
        steps = jp.where(
            state.done, jp.zeros_like(state.info["steps"]), state.info["steps"]
        )
        state.info.update(steps=steps)
        state = state.replace(done=jp.zeros_like(state.done))
        state = self.env.step(state, action)
        self._true(before, action, state)
        where_done = _where_done(state.done)
        physics = jax.tree.map(
            where_done, state.info["first_pipeline_state"], state.pipeline_state
        )
        obs = jax.tree.map(where_done, state.info["first_obs"], state.obs)
        return state.replace(pipeline_state=physics, obs=obs)


class BraxAutoResetWrapper(Recording):
    """Playground's: the cached ``AutoResetWrapper_first_*``, or ``full_reset``."""

    def __init__(
        self, env: Any, full_reset: bool = False, record: bool = False
    ) -> None:
        super().__init__(env, record)
        self._full_reset, self._info_key = full_reset, "AutoResetWrapper"

    def reset(self, rng: jax.Array) -> Any:
        rng_key = jax.vmap(jax.random.split)(rng)
        rng, key = rng_key[..., 0], rng_key[..., 1]
        state = self.env.reset(key)
        k = self._info_key
        state.info[f"{k}_first_data"] = state.data
        state.info[f"{k}_first_obs"] = state.obs
        state.info[f"{k}_rng"] = rng
        state.info[f"{k}_done_count"] = jp.zeros(key.shape[:-1], dtype=int)
        return state

    def step(self, state: Any, action: jax.Array) -> Any:
        k, before = self._info_key, state
        rng_key = jax.vmap(jax.random.split)(state.info[f"{k}_rng"])
        reset_rng, reset_key = rng_key[..., 0], rng_key[..., 1]
        if self._full_reset:
            reset_state = self.reset(reset_key)
            reset_data, reset_obs = reset_state.data, reset_state.obs
        else:
            reset_data, reset_obs = (
                state.info[f"{k}_first_data"],
                state.info[f"{k}_first_obs"],
            )
        steps = jp.where(
            state.done, jp.zeros_like(state.info["steps"]), state.info["steps"]
        )
        state.info.update(steps=steps)
        state = state.replace(done=jp.zeros_like(state.done))
        state = self.env.step(state, action)
        self._true(before, action, state)
        where_done = _where_done(state.done)
        data = jax.tree.map(where_done, reset_data, state.data)
        obs = jax.tree.map(where_done, reset_obs, state.obs)
        info = state.info
        if self._full_reset:
            info = jax.tree.map(where_done, reset_state.info, state.info)
            info[f"{k}_done_count"] = state.info[f"{k}_done_count"]
            info["steps"] = state.info["steps"]
        info[f"{k}_done_count"] += state.done.astype(int)
        info[f"{k}_rng"] = reset_rng
        return state.replace(data=data, obs=obs, info=info)


def wrap(env: Any, episode_length: int = 1000, record: bool = False) -> Any:
    """``brax.envs.training.wrap``: Vmap, Episode, AutoReset."""
    env = EpisodeWrapper(VmapWrapper(env), episode_length)
    return AutoResetWrapper(env, record=record)


def create(env: Any, episode_length: int, batch_size: int, record: bool = False) -> Any:
    """``brax.envs.create(..., batch_size=...)``: Episode, Vmap(batch_size), AutoReset."""
    env = VmapWrapper(EpisodeWrapper(env, episode_length), batch_size)
    return AutoResetWrapper(env, record=record)


def wrap_for_brax_training(
    env: Any, episode_length: int = 1000, full_reset: bool = False, record: bool = False
) -> Any:
    """mujoco_playground's ``wrap_for_brax_training``."""
    env = EpisodeWrapper(VmapWrapper(env), episode_length)
    return BraxAutoResetWrapper(env, full_reset=full_reset, record=record)
