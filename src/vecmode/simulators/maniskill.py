"""ManiSkill3's ``ManiSkillVectorEnv`` behind Gymnasium's vector API, its torch
batches left on their device.

Read from haosulab/ManiSkill ``mani_skill/vector/wrappers/gymnasium.py`` @
07e17a0a42c1 (and ``mani_skill/utils/registration.py``, ``envs/sapien_env.py``):

* ``auto_reset=True``: the step resets the ended sub-envs itself
  (``reset(options={"env_idx": ...})``) and gives a dense clone of the whole
  batch's observations in ``info["final_observation"]``, the mask
  (``terminated | truncated``) in ``info["_final_observation"]``, and a clone
  of the step's whole info in its ``final_info``. The info it returns on such a
  step is its reset's (``{"reconfigure": ...}``), not the step's.
* ``auto_reset=False``: nothing is reset; the caller resets with ``env_idx``.
* ``ignore_terminations=True`` writes ``terminated`` to all False: episodes end
  by truncation only (success stays in ``info["success"]``).
* Truncation is a flag: ``elapsed_steps >= max_episode_steps``.
"""

from __future__ import annotations

from typing import Any

from gymnasium.vector import AutoresetMode

from vecmode import modes
from vecmode.env_classes import Semantics
from vecmode.simulators.base import SimulatorAdapter, StepResult

SOURCE = "haosulab/ManiSkill mani_skill/vector/wrappers/gymnasium.py @ 07e17a0a42c1"
#: What the simulator does at an episode's end, as it is built by default.
SEMANTICS = Semantics(partial_reset="indices", source=SOURCE)


class ManiSkillAdapter(SimulatorAdapter):
    """A ``ManiSkillVectorEnv`` as a Gymnasium vector env of torch batches.

    Built with ``auto_reset=True`` it is presented in SAME_STEP mode: its final
    observations in vecmode's dense layout (its ``final_observation`` batch,
    meaningful where its ``_final_observation`` mask is True). Its
    ``final_info`` (the step's info of every sub-env, cloned before the reset)
    becomes the final info, and it is also the step's info: ManiSkill returns
    its reset's info on a step where an episode ended, so the keys of a step
    (``success``, ``elapsed_steps``, ``episode``...) would come and go.

    Built with ``auto_reset=False`` it is presented in DISABLED mode:
    ``reset(options={"reset_mask": m})`` resets the sub-envs of ``m`` with
    ManiSkill's ``env_idx`` (``torch.nonzero`` on the device). Both builds take
    a masked reset; ``vecmode.with_autoreset(adapter, "SameStep")`` over the
    DISABLED one is exact.

    Args:
        simulator: the ``ManiSkillVectorEnv``.
    """

    without_autoreset = "ManiSkillVectorEnv(..., auto_reset=False)"

    def __init__(self, simulator: Any) -> None:
        auto = bool(simulator.auto_reset)
        super().__init__(
            simulator,
            num_envs=simulator.num_envs,
            single_observation_space=simulator.single_observation_space,
            single_action_space=simulator.single_action_space,
            mode=AutoresetMode.SAME_STEP if auto else AutoresetMode.DISABLED,
            namespace="torch",
            semantics=SEMANTICS,
        )

    def _reset(self, seed: int | None, mask: Any | None) -> tuple[Any, dict[str, Any]]:
        options: dict[str, Any] = {}  # (older ManiSkill reads `"env_idx" in options`)
        if mask is not None:
            import torch

            mask = torch.as_tensor(mask, device=self.simulator.device)
            options["env_idx"] = torch.nonzero(mask).flatten()
        obs, infos = self.simulator.reset(seed=seed, options=options)
        return obs, dict(infos)

    def _step(self, actions: Any) -> StepResult:
        obs, rewards, terminated, truncated, infos = self.simulator.step(actions)
        infos = dict(infos)
        final_obs = infos.get("final_observation")
        if final_obs is not None:  # its reset's info is dropped ({"reconfigure"})
            ended, step_infos = infos["_final_observation"], infos[modes.FINAL_INFO]
            infos = modes.with_finals(dict(step_infos), ended, final_obs, step_infos)
        return obs, rewards, terminated, truncated, infos
