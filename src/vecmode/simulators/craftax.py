"""Craftax behind its ``OptimisticResetVecEnvWrapper`` as a Gymnasium vector env
in SAME_STEP mode, its batches left in JAX.

The wrapper (Craftax_Baselines' ``wrappers.py``; Craftax removed its own copy)
steps the whole batch, then replaces each ended sub-env's state with one of
``num_envs // reset_ratio`` fresh reset states drawn that step: several ended
sub-envs can share one. It returns ``(obs, state, reward, done, info)`` with the
reset observation where ``done``: the final observation is lost, and no
setting keeps it. Craftax's ``done`` is gymnax's, a time-out included, and its
``info["discount"]`` is 0 at a time-out too (``discount = 1 - is_terminal``)."""

from __future__ import annotations

from typing import Any

from vecmode.env_classes import Semantics
from vecmode.simulators.base import JaxAdapter, StepResult, gym_space, key_of

SOURCE = "MichaelTMatthews/Craftax_Baselines wrappers.py @ 7ce36fa05b84"
#: What the simulator does at an episode's end, as it is built by default.
SEMANTICS = Semantics(
    "lost", "pool", partial_reset="none", truncation="step-count", source=SOURCE
)


class CraftaxAdapter(JaxAdapter):
    """Craftax's ``OptimisticResetVecEnvWrapper`` as a vector env in SAME_STEP
    mode: observations after the reset, the ending step's reward and flags, no
    final observation (it is lost). Craftax tells a time-out from a death in
    nothing it returns, so the adapter counts each sub-env's steps: ``truncated``
    where ``done`` on the step ``params.max_timesteps`` (Craftax's own rule),
    ``terminated`` for the other ends (a death on that very step reads as a
    truncation). There is no partial reset: a reset resets every sub-env. The
    simulator's state is :attr:`state`, the key of the next step :attr:`key`
    (a step splits it into the next ``key`` and the key it steps with).

    Args:
        env: ``OptimisticResetVecEnvWrapper(env, num_envs, reset_ratio)``.
        params: the env's params (None: ``env.default_params``).
        seed: the key of the first reset (``reset(seed=...)`` replaces it).
    """

    def __init__(self, env: Any, params: Any = None, seed: int = 0) -> None:
        import jax

        self.params = env.default_params if params is None else params
        super().__init__(
            env,
            num_envs=int(env.num_envs),
            single_observation_space=gym_space(env.observation_space(self.params)),
            single_action_space=gym_space(env.action_space(self.params)),
            namespace="jax.numpy",
            semantics=SEMANTICS,
        )
        #: The time limit (None: every end is a termination).
        self.max_timesteps: int | None = getattr(self.params, "max_timesteps", None)
        self.key = key_of(seed)
        self._reset_fn = jax.jit(self._reset_all)
        self._step_fn = jax.jit(self._step_all)

    def _reset_all(self, key: Any) -> tuple[Any, ...]:
        import jax
        import jax.numpy as jnp

        key, sub = jax.random.split(key)
        obs, state = self.simulator.reset(sub, self.params)
        return key, state, jnp.zeros(self.num_envs, jnp.int32), obs

    def _step_all(
        self, key: Any, state: Any, steps: Any, actions: Any
    ) -> tuple[Any, ...]:
        import jax
        import jax.numpy as jnp

        key, sub = jax.random.split(key)
        obs, state, reward, done, info = self.simulator.step(
            sub, state, actions, self.params
        )
        steps, done = steps + 1, done.astype(bool)
        limit = self.max_timesteps or jnp.iinfo(jnp.int32).max
        truncated = done & (steps >= limit)
        steps = jnp.where(done, 0, steps)
        return key, state, steps, (obs, reward, done & ~truncated, truncated, info)

    def _reset(self, seed: int | None, mask: Any | None) -> tuple[Any, dict[str, Any]]:
        if seed is not None:
            self.key = key_of(seed)
        self.key, self.state, self._steps, obs = self._reset_fn(self.key)
        return obs, {}

    def _step(self, actions: Any) -> StepResult:
        if self.state is None:
            raise RuntimeError(f"{self.name}: call reset() before step().")
        self.key, self.state, self._steps, out = self._step_fn(
            self.key, self.state, self._steps, actions
        )
        return out
