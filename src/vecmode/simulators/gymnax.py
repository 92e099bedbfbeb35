"""gymnax (1.0) behind Gymnasium's vector API: its functional single-env
``reset``/``step`` vmapped and jitted once, the batch left in JAX. gymnax 1.0
resets inside its step and returns the step's own observation in
``info["final_observation"]`` on every step, with separate ``terminated`` and
``truncated`` flags: presented in SAME_STEP mode, the final observations in the
dense layout (mask: the sub-envs that ended)."""

from __future__ import annotations

from typing import Any

from gymnasium import spaces
from gymnasium.vector import AutoresetMode

from vecmode import modes
from vecmode.env_classes import Semantics
from vecmode.simulators.base import SimulatorAdapter, StepResult

SOURCE = "RobertTLange/gymnax gymnax/environments/environment.py @ 086ad95697d5"
_FINAL = "final_observation"  # gymnax's own key


def gym_space(space: Any) -> spaces.Space[Any]:
    """Gymnasium's space for a gymnax or Jumanji one (a discrete one or a box).

    >>> import numpy as np
    >>> class Box: low, high, shape, dtype = -1.0, 1.0, (2,), np.float32
    >>> gym_space(Box())
    Box(-1.0, 1.0, (2,), float32)
    """
    import numpy as np  # building a space is not a step: NumPy is fine here

    n = getattr(space, "n", getattr(space, "num_values", None))
    if n is not None and np.ndim(n) == 0:
        return spaces.Discrete(int(n))
    if n is not None:
        return spaces.MultiDiscrete(np.asarray(n))
    low = getattr(space, "low", getattr(space, "minimum", None))
    high = getattr(space, "high", getattr(space, "maximum", None))
    if low is None and hasattr(space, "dtype"):
        low, high = -np.inf, np.inf  # Jumanji's unbounded specs.Array
    if low is None:
        raise TypeError(
            f"vecmode's simulator adapters take discrete and box spaces (one "
            f"array), not {type(space).__name__}."
        )
    dtype, shape = np.dtype(space.dtype), tuple(space.shape)
    cast = dtype if dtype.kind == "f" else None  # Gymnasium bounds ints' infinities
    low, high = (
        np.broadcast_to(np.asarray(b, cast), shape).copy() for b in (low, high)
    )
    return spaces.Box(low, high, shape, dtype)


class JaxAdapter(SimulatorAdapter):
    """The JAX adapters' reset and step: a key and the batch of the
    simulator's states, through ``_reset_fn(key)`` and
    ``_step_fn(key, state, actions)``, jitted once by the subclass."""

    state: Any = None  #: the batch of the simulator's states
    _key: Any
    _reset_fn: Any
    _step_fn: Any

    def _reset(self, seed: int | None, mask: Any | None) -> tuple[Any, dict[str, Any]]:
        import jax

        if seed is not None:
            self._key = jax.random.PRNGKey(seed)
        self._key, self.state, obs = self._reset_fn(self._key)
        return obs, {}

    def _step(self, actions: Any) -> StepResult:
        self._key, self.state, *out = self._step_fn(self._key, self.state, actions)
        return tuple(out)  # type: ignore[return-value]


class GymnaxAdapter(JaxAdapter):
    """A gymnax env (1.0's six-value step) as a Gymnasium vector env of
    ``num_envs`` sub-envs, in SAME_STEP mode, its batches in JAX.

    Args:
        env: the gymnax env (``gymnax.make(...)[0]``).
        params: its params (None: ``env.default_params``).
        num_envs: the number of sub-envs.
        seed: the first key's seed (``reset(seed=...)`` replaces it).
    """

    def __init__(
        self, env: Any, params: Any = None, *, num_envs: int, seed: int = 0
    ) -> None:
        import jax

        params = env.default_params if params is None else params
        super().__init__(
            env,
            num_envs=num_envs,
            single_observation_space=gym_space(env.observation_space(params)),
            single_action_space=gym_space(env.action_space(params)),
            mode=AutoresetMode.SAME_STEP,
            namespace="jax.numpy",
            semantics=Semantics(
                final_observation="every-step", partial_reset="none", source=SOURCE
            ),
        )
        self.params = params
        self._key = jax.random.PRNGKey(seed)

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
            return (
                key,
                state,
                obs,
                rewards.astype("float32"),
                terminated,
                truncated,
                infos,
            )

        self._reset_fn, self._step_fn = jax.jit(reset), jax.jit(step)
