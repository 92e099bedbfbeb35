"""An env of RSL-RL's ``VecEnv`` shape (Genesis's example envs, IsaacLab's
``RslRlVecEnvWrapper``, legged_gym) behind Gymnasium's vector API, its torch
batches left on their device.

Read from leggedrobotics/rsl_rl ``rsl_rl/env/vec_env.py`` @ c281c32e5746 (v5;
and v2.3.0) and Genesis-Embodied-AI/Genesis ``examples/locomotion/go2_env.py``
@ 7bf5f6a7bf29: ``step(actions) -> (obs, rewards, dones, extras)``, the ended
sub-envs reset inside the step and the observations computed after: the final
observation is lost. Truncation is ``extras["time_outs"]`` (float 0/1 in
Genesis), a part of ``dones``. rsl_rl >= 3 gives observations as a TensorDict
of groups (``get_observations()``, ``step``); rsl_rl 2 as one tensor
(``get_observations() -> (obs, extras)``). Its ``VecEnv`` has no partial reset
(Genesis's ``_reset_idx`` is internal and leaves the observations stale).
Genesis's go2_env.py computed the ending step's reward after the reset up to
v0.4.4 (commit 50e71ee109916); since v0.4.5 (043960829507) before it.
IsaacLab's ``RslRlVecEnvWrapper`` (``source/isaaclab_rl/isaaclab_rl/rsl_rl/
vecenv_wrapper.py`` @ d719f7d5efc1) passes IsaacLab's extras through: with
``cfg.compute_final_obs=True`` its ``final_obs`` (a dict of groups) is there.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
from gymnasium import spaces

from vecmode import modes
from vecmode.env_classes import Semantics
from vecmode.simulators.base import SimulatorAdapter, StepResult
from vecmode.simulators.isaaclab import REMEDY

SOURCE = "leggedrobotics/rsl_rl rsl_rl/env/vec_env.py @ c281c32e5746"
#: What the simulator does at an episode's end, as it is built by default.
SEMANTICS = Semantics(
    "lost", partial_reset="none", truncation="time_outs", source=SOURCE
)


def observations(found: Any) -> Any:
    """The observation batch of ``get_observations()`` or ``step``: a dict of
    groups for a TensorDict (no copy), the tensor of rsl_rl 2's ``(obs,
    extras)``, else as it is."""
    if isinstance(found, tuple):
        found = found[0]
    if hasattr(found, "items"):  # a TensorDict, a dict (a tensor has none)
        return {key: value for key, value in found.items()}
    return found


def space_of(batch: Any) -> spaces.Space[Any]:
    """One sub-env's unbounded space of a batch of observations (a dict of
    groups: a Dict space).

    >>> space_of({"policy": np.zeros((4, 45), np.float32)})
    Dict('policy': Box(-inf, inf, (45,), float32))
    """
    if isinstance(batch, dict):
        return spaces.Dict({key: space_of(value) for key, value in batch.items()})
    dtype = np.dtype(str(batch.dtype).removeprefix("torch."))
    return spaces.Box(-np.inf, np.inf, tuple(batch.shape[1:]), dtype)


def configured(env: Any, ending_reward: str) -> Semantics:
    """The semantics of an RSL-RL-shaped env: its final observation lost, but
    for IsaacLab's wrapper over an env with ``cfg.compute_final_obs`` (True:
    ``"masked"``; False: ``"opt-in"``)."""
    flag = getattr(getattr(env, "cfg", None), "compute_final_obs", None)
    return replace(
        SEMANTICS,
        final_observation="masked" if flag else "lost" if flag is None else "opt-in",
        ending_reward=ending_reward,
        remedy=REMEDY if flag is False else "",
    )


class RslRlAdapter(SimulatorAdapter):
    """An env of RSL-RL's ``VecEnv`` shape as a Gymnasium vector env of torch
    batches, in SAME_STEP mode: the env resets ended sub-envs inside its step.

    Its final observation is lost: nothing is put in the infos, and
    :attr:`semantics` says so. Over IsaacLab's ``RslRlVecEnvWrapper`` with
    ``cfg.compute_final_obs=True`` it is not: IsaacLab's whole-batch final
    observations are given in vecmode's dense layout (of the ``"policy"``
    group where the observations are rsl_rl 2's tensor), masked by ``dones``.

    ``terminated`` is ``dones`` without the time-outs, ``truncated`` the
    time-outs that are done (a sub-env both timed out and failed counts as
    truncated, as rsl_rl bootstraps it). The rewards are
    copied (Genesis writes its reward buffer in place); the extras are a new
    dict each step. ``reset()`` calls the env's own ``reset()`` where it has one
    (rsl_rl 3+ envs reset when built), then reads ``get_observations()``; a
    seed is the simulator's own (``gs.init(seed=...)``) and is not used. A
    mask of some sub-envs is refused (of all: a whole reset; of none: a no-op).

    Args:
        simulator: the env (``num_envs``, ``num_actions``, ``step``,
            ``get_observations``).
        ending_reward: ``"before-reset"`` (rsl_rl's envs, Genesis >= 0.4.5) or
            ``"after-reset"`` (Genesis's go2_env.py up to 0.4.4): when the env
            computes the ending step's reward.
        single_observation_space: default: unbounded, from the observations.
        single_action_space: default: unbounded, ``(num_actions,)`` float32.
    """

    def __init__(
        self,
        simulator: Any,
        *,
        ending_reward: str = "before-reset",
        single_observation_space: spaces.Space[Any] | None = None,
        single_action_space: spaces.Space[Any] | None = None,
    ) -> None:
        if single_observation_space is None:
            single_observation_space = space_of(
                observations(simulator.get_observations())
            )
        if single_action_space is None:
            shape = (int(simulator.num_actions),)
            single_action_space = spaces.Box(-np.inf, np.inf, shape, np.float32)
        super().__init__(
            simulator,
            num_envs=int(simulator.num_envs),
            single_observation_space=single_observation_space,
            single_action_space=single_action_space,
            namespace="torch",
            semantics=configured(simulator, ending_reward),
        )

    def _reset(self, seed: int | None, mask: Any | None) -> tuple[Any, dict[str, Any]]:
        reset = getattr(self.simulator, "reset", None)
        if callable(reset):
            reset()
        return observations(self.simulator.get_observations()), {}

    def _step(self, actions: Any) -> StepResult:
        obs, rewards, dones, extras = self.simulator.step(actions)
        obs, infos, dones = observations(obs), dict(extras), dones.bool()
        time_outs = infos.get("time_outs")
        truncated = dones & time_outs.bool() if time_outs is not None else dones & False
        final_obs = infos.pop(modes.FINAL_OBS, None)  # IsaacLab's, through its wrapper
        if final_obs is not None:
            final_obs = observations(final_obs)
            if isinstance(final_obs, dict) and not isinstance(obs, dict):
                final_obs = final_obs["policy"]  # (rsl_rl 2: the policy group alone)
            infos = modes.with_finals(infos, dones, final_obs, infos)
        return obs, rewards.clone(), dones & ~truncated, truncated, infos
