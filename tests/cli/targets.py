"""Importable things the command line's tests name (``tests.cli.targets:Name``).

Wrappers and factories with a known behaviour: declared or not, refusing a mode
(by the registry or by their own error), conforming or not, raising.
"""

from __future__ import annotations

import warnings
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import VectorEnv, VectorWrapper

import vecmode
from vecmode import MODES
from vecmode.autoreset import GymnasiumFinalObs
from vecmode.testing import DenseFinalObsVectorEnv

#: Not callable.
NOT_CALLABLE = 3


class Undeclared(VectorWrapper):
    """A vector wrapper that declares no modes."""


class RegisteredElsewhere(VectorWrapper):
    """Undeclared here; a module of a test registers it."""


class UndeclaredWithArgument(VectorWrapper):
    """A vector wrapper that declares no modes and takes an argument."""

    def __init__(self, env, k=1):
        super().__init__(env)


@vecmode.supports("NextStep")
class NextStepOnly(VectorWrapper):
    """Declares NextStep only: the registry refuses the other modes when built."""


class RefusesByItself(VectorWrapper):
    """Undeclared, but raises its own error when built (as some of Gymnasium's do)."""

    def __init__(self, env: VectorEnv) -> None:
        raise ValueError("RefusesByItself works on no env at all")


@vecmode.supports(*MODES)
class Warns(VectorWrapper):
    """Warns when built."""

    def __init__(self, env: VectorEnv) -> None:
        warnings.warn("careful,\n this is a test", UserWarning, stacklevel=2)
        gym.logger.warn("in Gymnasium's colours")
        super().__init__(env)


@vecmode.supports(*MODES)
class ShiftObservation(VectorWrapper):
    """Declares every mode but shifts only the returned observations, never
    ``info["final_obs"]``: wrong in SameStep, and check_wrapper says so."""

    def __init__(self, env: VectorEnv, shift: float = 1.0) -> None:
        super().__init__(env)
        self.shift = shift

    def reset(self, **kwargs: Any) -> Any:
        obs, infos = self.env.reset(**kwargs)
        return obs + self.shift, infos

    def step(self, actions: Any) -> Any:
        obs, *rest = self.env.step(actions)
        return (obs + self.shift, *rest)


class DenseOnly(GymnasiumFinalObs):
    """An adapter of the dense final-observation layout that builds over the
    layout's test base only."""

    def __init__(self, env: VectorEnv) -> None:
        if not isinstance(env.unwrapped, DenseFinalObsVectorEnv):
            raise TypeError("DenseOnly wraps DenseFinalObsVectorEnv only")
        super().__init__(env)


@vecmode.supports(*MODES)
class DropsInfos(VectorWrapper):
    """Declares every mode and returns none of the env's infos (on purpose, say)
    but SameStep's final observations."""

    def step(self, actions: Any) -> Any:
        *result, infos = self.env.step(actions)
        kept = {k: v for k, v in infos.items() if k in ("final_obs", "_final_obs")}
        return (*result, kept)


def clipped(env: VectorEnv, high: float = 1.0) -> VectorEnv:
    """A factory ``env -> wrapped env``: vecmode's ClipReward, right in every mode."""
    return vecmode.wrappers.ClipReward(env, 0.0, high)


def not_a_vector_env(env: VectorEnv) -> Any:
    """Returns something that is not a vector env."""
    return np.zeros(3)


def raises(*args: Any, **kwargs: Any) -> Any:
    """A factory whose own code raises (taking no env: a vector env's factory)."""
    raise RuntimeError("the factory's own bug")


def returns_none(num_envs: int = 2) -> None:
    """Takes no env, and returns no vector env."""


def needs_num_envs(num_envs: int) -> VectorEnv:
    """A vector env factory with an argument to give (else read as a wrapper)."""
    return cartpole(num_envs)


def wrap_with_defaults(env: Any = None, gamma: float = 0.99) -> VectorEnv:
    """A wrapper whose arguments all have defaults (read as a vector env's factory)."""
    return vecmode.wrappers.NormalizeReward(env, gamma=gamma)


def raises_on_wrap(env: VectorEnv, **kwargs: Any) -> Any:
    """A wrapper factory whose own code raises."""
    raise RuntimeError("the factory's own bug")


class StaleFinalObs(VectorWrapper):
    """Declares SameStep but reports each final observation as the next episode's
    first: one episode end looks right to the probe, check_vector_env fails it."""

    def step(self, actions: Any) -> Any:
        obs, rewards, terminations, truncations, infos = self.env.step(actions)
        if "final_obs" in infos:
            final = infos["final_obs"].copy()
            for i in np.flatnonzero(infos["_final_obs"]):
                final[i] = obs[i].copy()
            infos = {**infos, "final_obs": final}
        return obs, rewards, terminations, truncations, infos


def stale_final_obs(num_envs: int = 2) -> VectorEnv:
    """A SameStep vector env whose final observations are wrong."""
    return StaleFinalObs(cartpole(num_envs, "SameStep"))


def cartpole(num_envs: int = 2, mode: str = "NextStep") -> VectorEnv:
    """A zero-argument vector env factory (for probe)."""
    return vecmode.make_vec(
        "CartPole-v1", num_envs=num_envs, autoreset_mode=mode, vectorization_mode="sync"
    )


def listed_below(num_envs: int = 2) -> VectorEnv:
    """A stack vecmode refuses: RecordEpisodeStatistics over a DictInfoToList."""
    listed = vecmode.wrappers.DictInfoToList(cartpole(num_envs))
    return vecmode.wrappers.RecordEpisodeStatistics(listed)


def never_ending(num_envs: int = 2) -> VectorEnv:
    """Episodes far longer than any probe here: nothing to tell the mode by."""
    return vecmode.make_vec(
        "CartPole-v1",
        num_envs=num_envs,
        max_episode_steps=100_000,
        vectorization_mode="sync",
    )


class CrashesOnStep(gym.Wrapper):
    """CartPole whose step raises (registered as ``CrashesOnStep-v0``)."""

    def step(self, action: Any) -> Any:
        raise RuntimeError("the env's own bug")


gym.register(
    "CrashesOnStep-v0", entry_point=lambda **kw: CrashesOnStep(gym.make("CartPole-v1"))
)


def no_arguments() -> VectorEnv:
    """A zero-argument vector env factory (what probe takes; conform proves it)."""
    return cartpole()


class SpacesEnv(gym.Env):
    """Observations of ``obs`` (Box or Graph), actions of ``act`` (a Discrete(2),
    or Text(4)); ``init_error``: its constructor raises ValueError. Registered
    as ``CliTextAction-v0``, ``CliGraphObs-v0``, ``CliInitError-v0`` and
    ``CliMissingDependency-v0`` (``missing``: it raises DependencyNotInstalled)."""

    def __init__(self, obs="Box", act="Discrete", init_error=False, missing=False):
        if init_error:
            raise ValueError("the env's own bad value")
        if missing:
            raise gym.error.DependencyNotInstalled(
                "Box9 is not installed: pip install box9"
            )
        node = gym.spaces.Box(0, 1, (2,), np.float32)
        self.observation_space = (
            gym.spaces.Graph(node, None) if obs == "Graph" else node
        )
        self.action_space = (
            gym.spaces.Text(4) if act == "Text" else gym.spaces.Discrete(2)
        )

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.observation_space.seed(seed)
        return self.observation_space.sample(), {}

    def step(self, action):
        if not self.action_space.contains(action):
            raise ValueError(f"{action!r} is not in {self.action_space}")
        return self.observation_space.sample(), 1.0, False, False, {}


for _id, _kwargs in (
    ("CliTextAction-v0", {"act": "Text"}),
    ("CliGraphObs-v0", {"obs": "Graph"}),
    ("CliInitError-v0", {"init_error": True}),
    ("CliMissingDependency-v0", {"missing": True}),
):
    if _id not in gym.registry:
        gym.register(_id, entry_point=SpacesEnv, kwargs=_kwargs)


class ForeignVectorEnv(VectorEnv):
    """A vector env class of another library (EnvPool's kind), declaring NextStep
    in its metadata, with nothing here proving it (``ForeignVec-v0``)."""

    metadata = {"autoreset_mode": vecmode.AutoresetMode.NEXT_STEP}

    def __init__(self, num_envs: int = 2, **kwargs: Any) -> None:
        self.core = gym.vector.SyncVectorEnv(
            [lambda: gym.make("CartPole-v1")] * num_envs
        )
        self.num_envs = num_envs
        for name in ("observation_space", "action_space", "single_observation_space"):
            setattr(self, name, getattr(self.core, name))
        self.single_action_space = self.core.single_action_space

    def reset(self, **kwargs: Any) -> Any:
        return self.core.reset(**kwargs)

    def step(self, actions: Any) -> Any:
        return self.core.step(actions)

    def close(self, **kwargs: Any) -> None:
        self.core.close()


gym.register(
    "ForeignVec-v0",
    entry_point="gymnasium.envs.classic_control.cartpole:CartPoleEnv",
    vector_entry_point=ForeignVectorEnv,
)
gym.register("ForeignVecOnly-v0", vector_entry_point=ForeignVectorEnv)


@vecmode.supports(*MODES)
class CountsCalls(VectorWrapper):
    """``info["calls"]``: calls since built, NEXT_STEP's reset step counted
    (wrong; only a comparison of that key shows it)."""

    def __init__(self, env):
        super().__init__(env)
        self.calls = 0

    def step(self, actions):
        obs, rewards, terms, truncs, infos = self.env.step(actions)
        self.calls += 1
        n, calls = self.num_envs, self.calls
        added = {"calls": np.full(n, calls), "_calls": np.ones(n, dtype=bool)}
        return obs, rewards, terms, truncs, {**infos, **added}


class RefusesSameStepItself(vecmode.DisableAutoreset):
    """Its own ``__init__`` refuses SameStep first, naming the enum member."""

    def __init__(self, env: VectorEnv) -> None:
        mode = env.metadata.get("autoreset_mode")
        if mode is vecmode.AutoresetMode.SAME_STEP:
            raise ValueError(f"cannot undo {mode}: its sub-envs are already reset")
        super().__init__(env)
