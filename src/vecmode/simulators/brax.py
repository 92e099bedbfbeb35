"""Brax's training env (``brax.envs.training.wrap``: VmapWrapper, EpisodeWrapper,
AutoResetWrapper) and MuJoCo Playground's (``wrap_for_brax_training``) as a
Gymnasium vector env in SAME_STEP mode, its batches left in JAX.

Both reset an ended sub-env inside ``step``, to the first state of the last
``reset()`` (Playground's ``full_reset=True``: to a fresh reset), and keep no
copy of the observation the episode ended on: the final observation is lost.
Neither has a setting that keeps it (brax PR #641 and Playground PRs #320, #350,
#351 for issue #305 propose one; none is merged at the commits read)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np
from gymnasium import spaces

from vecmode.env_classes import Semantics
from vecmode.simulators.base import JaxAdapter, StepResult, key_of

BRAX = "google/brax brax/envs/wrappers/training.py @ 0b96d056328d"
PLAYGROUND = (
    "google-deepmind/mujoco_playground mujoco_playground/_src/wrapper.py @ d5e6b4753132"
)
#: What Brax's training env does at an episode's end (Playground's by default
#: too, with its own source).
SEMANTICS = Semantics(
    "lost", "cached-first", partial_reset="none", truncation="info", source=BRAX
)
#: The AutoResetWrapper's caches in ``state.info`` (Brax's and Playground's):
#: the first state it resets to, its key, its count; not the step's infos.
_CACHES = ("first_obs", "first_pipeline_state", "AutoResetWrapper_")


def _box(shape: Any, low: float = -np.inf, high: float = np.inf) -> spaces.Space[Any]:
    if isinstance(shape, Mapping):  # a dict of observation sizes
        return spaces.Dict({k: _box(v) for k, v in shape.items()})
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return spaces.Box(low, high, shape, np.float32)


def _infos(state: Any) -> dict[str, Any]:
    """The step's infos: ``state.info`` without the autoreset's caches."""
    return {k: v for k, v in state.info.items() if not k.startswith(_CACHES)}


class BraxAdapter(JaxAdapter):
    """A Brax or MuJoCo Playground env, wrapped for training (batched), as a
    vector env in SAME_STEP mode: observations after the autoreset, the ending
    step's reward and flags, no final observation (it is lost). ``terminated``
    is ``done`` where ``state.info["truncation"]`` is 0, ``truncated`` where it
    is 1 (EpisodeWrapper's time limit). Playground's ``full_reset=True`` resets
    that info too: there ``truncated`` is ``info["steps"] >= episode_length``,
    and an episode terminating on that very step reads as truncated. There is
    no partial reset: a reset resets every sub-env. The simulator's ``State`` is
    :attr:`state`.

    Args:
        env: ``brax.envs.training.wrap(env)``, ``brax.envs.create(name,
            batch_size=num_envs)`` or Playground's ``wrap_for_brax_training(env)``:
            ``reset(keys)`` (or one key), ``step(state, action)``.
        num_envs: the number of sub-envs (keys given to ``reset``).
        seed: the key of the first reset (``reset(seed=...)`` replaces it).
    """

    def __init__(self, env: Any, num_envs: int, seed: int = 0) -> None:
        import jax

        # Playground's BraxAutoResetWrapper has its own ``_full_reset``
        full_reset = getattr(env, "_full_reset", None)
        super().__init__(
            env,
            num_envs=num_envs,
            single_observation_space=_box(env.observation_size),
            single_action_space=_box(env.action_size, -1.0, 1.0),
            namespace="jax.numpy",
            semantics=SEMANTICS
            if full_reset is None
            else replace(
                SEMANTICS,
                resets_to="fresh" if full_reset else "cached-first",
                source=PLAYGROUND,
            ),
        )
        #: Playground's full reset also resets ``info["truncation"]`` of an ended
        #: sub-env (to the fresh state's 0): a time-out is read from ``steps``.
        self._limit = getattr(env, "episode_length", None) if full_reset else None
        self._batch_size = getattr(env, "batch_size", None)
        if self._batch_size not in (None, num_envs):
            raise ValueError(
                f"BraxAdapter: num_envs={num_envs}, but the env batches "
                f"{self._batch_size} sub-envs (its VmapWrapper's batch_size)."
            )
        self.key = key_of(seed)
        self._reset_fn = jax.jit(self._reset_all)
        self._step_fn = jax.jit(self._step_all)

    def _reset_all(self, key: Any) -> tuple[Any, Any, Any, dict[str, Any]]:
        import jax

        key, sub = jax.random.split(key)
        # brax.envs.create(batch_size=n)'s VmapWrapper splits one key itself
        keys = sub if self._batch_size else jax.random.split(sub, self.num_envs)
        state = self.simulator.reset(keys)
        return key, state, state.obs, _infos(state)

    def _step_all(self, state: Any, actions: Any) -> tuple[Any, ...]:
        """The new state and its flags (the rest is read off the state, and the
        key is not passed: fewer arguments and outputs, a faster dispatch)."""
        import jax.numpy as jnp

        state = self.simulator.step(state, actions)
        done = state.done.astype(bool)
        cut = state.info.get("truncation", jnp.zeros_like(state.done))
        if self._limit is not None:
            cut = state.info["steps"] >= self._limit
        truncated = done & cut.astype(bool)
        return state, done & ~truncated, truncated

    def _step(self, actions: Any) -> StepResult:
        if self.state is None:
            raise RuntimeError(f"{self.name}: call reset() before step().")
        state, terminated, truncated = self._step_fn(self.state, actions)
        self.state = state
        return state.obs, state.reward, terminated, truncated, _infos(state)
