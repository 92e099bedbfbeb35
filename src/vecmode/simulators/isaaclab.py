"""IsaacLab's ``DirectRLEnv`` and ``ManagerBasedRLEnv`` behind Gymnasium's
vector API, their torch batches left on their device.

Read from isaac-sim/IsaacLab ``source/isaaclab/isaaclab/envs/direct_rl_env.py``
@ 7ff33ed47bd8 and ``manager_based_rl_env.py`` @ 02dc5f7461a6: a step computes
the dones (``reset_terminated``, ``reset_time_outs``: Gymnasium's 4th value)
and the rewards, resets the ended sub-envs inside (``_reset_idx``), then
computes the observations: the final observation is lost. IsaacLab PR #6219
(merged; issues #4369, #1362) adds the opt-in ``cfg.compute_final_obs``: the
observations computed before the reset, a dense dict of the whole batch, in
``extras["final_obs"]`` on a step where a sub-env ended. The returned dones and
rewards are the env's own buffers, written in place by the next step.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from vecmode import modes
from vecmode.env_classes import Semantics
from vecmode.simulators.base import SimulatorAdapter, StepResult

SOURCE = (
    "isaac-sim/IsaacLab source/isaaclab/isaaclab/envs/direct_rl_env.py @ 7ff33ed47bd8"
)
REMEDY = "env_cfg.compute_final_obs=True (IsaacLab with PR #6219)"
#: What the simulator does at an episode's end, as it is built by default
#: (``compute_final_obs=False``; its ``_reset_idx`` is internal: no partial reset).
SEMANTICS = Semantics("opt-in", partial_reset="none", remedy=REMEDY, source=SOURCE)


def configured(env: Any) -> Semantics:
    """The semantics of an IsaacLab env as configured: its final observation
    ``"masked"`` with ``cfg.compute_final_obs=True``, ``"opt-in"`` with it False,
    ``"lost"`` where its config has no such field (IsaacLab before PR #6219).

    >>> from types import SimpleNamespace as config
    >>> configured(config(cfg=config(compute_final_obs=False))).final_observation
    'opt-in'
    >>> configured(config(cfg=config())).remedy
    'env_cfg.compute_final_obs=True (IsaacLab with PR #6219)'
    """
    flag = getattr(getattr(env, "cfg", None), "compute_final_obs", None)
    final = "lost" if flag is None else "masked" if flag else "opt-in"
    return replace(SEMANTICS, final_observation=final, remedy="" if flag else REMEDY)


class IsaacLabAdapter(SimulatorAdapter):
    """An IsaacLab RL env (``DirectRLEnv``, ``ManagerBasedRLEnv``, or the
    ``gym.make`` wrappers over one) as a Gymnasium vector env of torch batches,
    in SAME_STEP mode: the simulator resets ended sub-envs inside its step.

    Observations are IsaacLab's dict of groups (``{"policy": ..., "critic":
    ...}``). With ``cfg.compute_final_obs=True`` the final observations are
    given in vecmode's dense layout (IsaacLab's whole-batch ``final_obs``, with
    ``terminated | truncated`` as the mask; the step's extras as final info),
    and :attr:`semantics` says ``"masked"``. Without it, the final observation
    is lost: nothing is put in the infos, and :attr:`semantics` says so and
    names the remedy. Terminations, truncations and rewards are copied (the
    env writes its buffers in place); the extras are a new dict each step.
    IsaacLab has no public partial reset: a mask of some sub-envs is refused
    (of all: a whole reset; of none: a no-op).

    Args:
        simulator: the IsaacLab env (its ``unwrapped`` has ``cfg``, ``num_envs``
            and the single spaces).
    """

    def __init__(self, simulator: Any) -> None:
        env = getattr(simulator, "unwrapped", simulator)
        super().__init__(
            simulator,
            num_envs=env.num_envs,
            single_observation_space=env.single_observation_space,
            single_action_space=env.single_action_space,
            namespace="torch",
            semantics=configured(env),
        )

    def _reset(self, seed: int | None, mask: Any | None) -> tuple[Any, dict[str, Any]]:
        obs, extras = self.simulator.reset(seed=seed)  # (mask: all True here)
        infos = dict(extras)
        infos.pop(modes.FINAL_OBS, None)  # a step's, left in the env's extras
        return obs, infos

    def _step(self, actions: Any) -> StepResult:
        obs, rewards, terminated, truncated, extras = self.simulator.step(actions)
        terminated, truncated = terminated.clone(), truncated.clone()
        infos = dict(extras)
        final_obs = infos.pop(modes.FINAL_OBS, None)  # IsaacLab's key is Gymnasium's
        if final_obs is not None:
            infos = modes.with_finals(infos, terminated | truncated, final_obs, infos)
        return obs, rewards.clone(), terminated, truncated, infos
