"""gymnax (1.0) behind Gymnasium's vector API: its functional single-env
``reset``/``step`` vmapped and jitted once, the batch left in JAX. gymnax 1.0
resets inside its step and returns the step's own observation in
``info["final_observation"]`` on every step, with separate ``terminated`` and
``truncated`` flags: presented in SAME_STEP mode, the final observations in the
dense layout (mask: the sub-envs that ended)."""

from __future__ import annotations

from typing import Any

from vecmode import modes
from vecmode.env_classes import Semantics
from vecmode.simulators.base import JaxAdapter, gym_space, key_of

SOURCE = "RobertTLange/gymnax gymnax/environments/environment.py @ 086ad95697d5"
#: What the simulator does at an episode's end, as it is built by default.
SEMANTICS = Semantics("every-step", partial_reset="none", source=SOURCE)
_FINAL = "final_observation"  # gymnax's own key


class GymnaxAdapter(JaxAdapter):
    """A gymnax env (1.0's six-value step) as a Gymnasium vector env of
    ``num_envs`` sub-envs, in SAME_STEP mode, its batches in JAX.

    Args:
        env: the gymnax env (``gymnax.make(...)[0]``).
        params: its params (None: ``env.default_params``).
        seed: the first key's seed (``reset(seed=...)`` replaces it).
    """

    def __init__(
        self, env: Any, params: Any = None, *, num_envs: int, seed: int = 0
    ) -> None:
        import jax

        if not (hasattr(env, "default_params") and hasattr(env, "observation_space")):
            raise TypeError(
                f"GymnaxAdapter takes a gymnax env and its params: "
                f"GymnaxAdapter(env, params, num_envs=...) with env, params = "
                f"gymnax.make(...); got {type(env).__name__}."
            )
        params = env.default_params if params is None else params
        super().__init__(
            env,
            num_envs=num_envs,
            single_observation_space=gym_space(env.observation_space(params)),
            single_action_space=gym_space(env.action_space(params)),
            namespace="jax.numpy",
            semantics=SEMANTICS,
        )
        self.params = params
        self.key = key_of(seed)

        def reset(key: Any) -> Any:
            key, sub = jax.random.split(key)
            obs, state = jax.vmap(lambda k: env.reset(k, params))(
                jax.random.split(sub, num_envs)
            )
            return key, state, obs

        def step(key: Any, state: Any, actions: Any) -> Any:
            key, sub = jax.random.split(key)
            keys = jax.random.split(sub, num_envs)
            out = jax.vmap(lambda *a: env.step(*a, params))(keys, state, actions)
            if len(out) != 6:
                raise TypeError(
                    f"GymnaxAdapter takes gymnax 1.0's step (obs, state, reward, "
                    f"terminated, truncated, info); {type(env).__name__}.step returns "
                    f"{len(out)} values (gymnax 0.0.x, or LegacyStepAPIWrapper)."
                )
            obs, state, rewards, terminated, truncated, info = out
            info = {k: v for k, v in info.items() if k != _FINAL}
            infos = modes.with_finals(
                info, terminated | truncated, out[5][_FINAL], info
            )
            rewards = rewards.astype("float32")
            return key, state, obs, rewards, terminated, truncated, infos

        self._reset_fn, self._step_fn = jax.jit(reset), jax.jit(step)
