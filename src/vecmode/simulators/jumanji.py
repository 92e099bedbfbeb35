"""Jumanji behind Gymnasium's vector API: an env under Jumanji's
``AutoResetWrapper`` (vmapped here) or ``VmapAutoResetWrapper``, jitted once,
the batch left in JAX. Jumanji resets inside its step: the ending ``TimeStep``
is LAST, its reward and discount the episode's, its observation the reset's.
The true one is in ``extras["next_obs"]`` only with ``next_obs_in_extras=True``.
Presented in SAME_STEP mode; termination is a LAST step with discount 0, a
truncation one with another discount."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from vecmode import modes
from vecmode.env_classes import Semantics
from vecmode.simulators.base import JaxAdapter, gym_space, key_of

SOURCE = "instadeepai/jumanji jumanji/wrappers.py @ 590005b0fb30"
#: What the simulator does at an episode's end, as it is built by default.
SEMANTICS = Semantics(
    "opt-in",
    partial_reset="none",
    truncation="discount",
    remedy="next_obs_in_extras=True",
    source=SOURCE,
)
_NEXT_OBS = "next_obs"  # Jumanji's NEXT_OBS_KEY_IN_EXTRAS
_LAST = 2  # StepType.LAST


def _inspect(env: Any) -> tuple[bool, bool]:
    """``(batched, has_finals)``: whether a Vmap wrapper batches ``env``, and
    whether its autoreset wrapper has ``next_obs_in_extras`` on."""
    layers = [env]
    while "_env" in vars(layers[-1]):  # Jumanji's Wrapper._env
        layers.append(vars(layers[-1])["_env"])
    names = {cls.__name__ for layer in layers for cls in type(layer).__mro__}
    if not names & {"AutoResetWrapper", "VmapAutoResetWrapper"}:
        raise TypeError(
            f"JumanjiAdapter takes an env that resets itself: wrap "
            f"{type(env).__name__} in jumanji.wrappers.AutoResetWrapper(env, "
            f"next_obs_in_extras=True) or VmapAutoResetWrapper(env, "
            f"next_obs_in_extras=True)."
        )
    batched = bool(names & {"VmapWrapper", "VmapAutoResetWrapper"})
    return batched, any(vars(layer).get("next_obs_in_extras") for layer in layers)


def _spec(env: Any, name: str) -> Any:
    spec = getattr(env, name)  # a property (1.1) or a method (older)
    return spec if hasattr(spec, "dtype") or not callable(spec) else spec()


def _compiled(env: Any, num_envs: int, batched: bool, finals: bool, pick: Any) -> Any:
    """The jitted batched ``reset(key)`` and ``step(state, actions)``."""
    import jax

    env_reset = env.reset if batched else jax.vmap(env.reset)
    env_step = env.step if batched else jax.vmap(env.step)

    def observation(obs: Any) -> Any:
        obs = pick(obs)
        if not hasattr(obs, "shape"):
            raise TypeError(
                f"JumanjiAdapter presents one array of observations; "
                f"{type(obs).__name__} is structured: pick one with "
                f"JumanjiAdapter(..., observe=lambda o: o.<field>)."
            )
        return obs

    def reset(key: Any) -> Any:
        key, sub = jax.random.split(key)
        state, timestep = env_reset(jax.random.split(sub, num_envs))
        return key, state, observation(timestep.observation)

    def step(key: Any, state: Any, actions: Any) -> Any:
        state, timestep = env_step(state, actions)
        last, kept = timestep.step_type == _LAST, timestep.discount != 0
        terminated, truncated = last & ~kept, last & kept
        infos = {k: v for k, v in timestep.extras.items() if k != _NEXT_OBS}
        if finals:  # else opt-in, and off: SAME_STEP without final observations
            final = observation(timestep.extras[_NEXT_OBS])
            infos = modes.with_finals(infos, last, final, infos)
        obs = observation(timestep.observation)
        rewards = timestep.reward.astype("float32")
        return key, state, obs, rewards, terminated, truncated, infos

    return jax.jit(reset), jax.jit(step)


class JumanjiAdapter(JaxAdapter):
    """A Jumanji env as a Gymnasium vector env of ``num_envs`` sub-envs, in
    SAME_STEP mode, its batches in JAX.

    Args:
        env: ``AutoResetWrapper(env, ...)`` (this adapter vmaps it) or
            ``VmapAutoResetWrapper(env, ...)`` (batched already); other
            Jumanji wrappers may wrap them.
        seed: the first key's seed (``reset(seed=...)`` replaces it).
        observe: picks one array of a structured observation (a NamedTuple),
            e.g. ``lambda o: o.grid``; applied to the observation spec too.
    """

    def __init__(
        self,
        env: Any,
        *,
        num_envs: int,
        seed: int = 0,
        observe: Callable[[Any], Any] | None = None,
    ) -> None:
        batched, finals = _inspect(env)
        pick = observe or (lambda obs: obs)
        super().__init__(
            env,
            num_envs=num_envs,
            single_observation_space=gym_space(pick(_spec(env, "observation_spec"))),
            single_action_space=gym_space(_spec(env, "action_spec")),
            namespace="jax.numpy",
            semantics=replace(SEMANTICS, final_observation="masked")
            if finals
            else SEMANTICS,
        )
        self.key = key_of(seed)
        self._reset_fn, self._step_fn = _compiled(env, num_envs, batched, finals, pick)
