"""Batched simulators (ManiSkill3, IsaacLab, Genesis, Brax, gymnax, Jumanji,
Craftax) behind Gymnasium's vector API, their batches left in torch or JAX:
what each does at an episode's end declared, converted where it is exact,
refused where the final observation is lost (docs/simulators.md)."""

from __future__ import annotations

from dataclasses import replace

from vecmode.env_classes import register_vector_env
from vecmode.simulators import (
    brax,
    craftax,
    gymnax,
    isaaclab,
    jumanji,
    maniskill,
    rsl_rl,
)
from vecmode.simulators.approximate import ApproximateFinalObs
from vecmode.simulators.base import SimulatorAdapter
from vecmode.simulators.brax import BraxAdapter
from vecmode.simulators.craftax import CraftaxAdapter
from vecmode.simulators.gymnax import GymnaxAdapter
from vecmode.simulators.isaaclab import IsaacLabAdapter
from vecmode.simulators.jumanji import JumanjiAdapter
from vecmode.simulators.maniskill import ManiSkillAdapter
from vecmode.simulators.rsl_rl import RslRlAdapter

__all__ = [
    "ApproximateFinalObs",
    "BraxAdapter",
    "CraftaxAdapter",
    "GymnaxAdapter",
    "IsaacLabAdapter",
    "JumanjiAdapter",
    "ManiSkillAdapter",
    "RslRlAdapter",
    "SimulatorAdapter",
]

# the simulators' own classes, as each adapter finds them by default (vecmode
# table --simulators), in SameStep unless said; none takes Gymnasium's reset_mask
for path, adapter, semantics, *modes in (
    (
        "mani_skill.vector.wrappers.gymnasium:ManiSkillVectorEnv",
        "ManiSkillAdapter",
        maniskill.SEMANTICS,
        ("SameStep", "Disabled"),
    ),
    ("isaaclab.envs.direct_rl_env:DirectRLEnv", "IsaacLabAdapter", isaaclab.SEMANTICS),
    (
        "isaaclab.envs.manager_based_rl_env:ManagerBasedRLEnv",
        "IsaacLabAdapter",
        isaaclab.SEMANTICS,
    ),
    ("rsl_rl.env.vec_env:VecEnv", "RslRlAdapter", rsl_rl.SEMANTICS),
    ("brax.envs.wrappers.training:AutoResetWrapper", "BraxAdapter", brax.SEMANTICS),
    (
        "mujoco_playground._src.wrapper:BraxAutoResetWrapper",
        "BraxAdapter",
        replace(brax.SEMANTICS, source=brax.PLAYGROUND),
    ),
    ("gymnax.environments.environment:Environment", "GymnaxAdapter", gymnax.SEMANTICS),
    ("jumanji.wrappers:AutoResetWrapper", "JumanjiAdapter", jumanji.SEMANTICS),
    (  # Craftax_Baselines' wrappers.py
        "wrappers:OptimisticResetVecEnvWrapper",
        "CraftaxAdapter",
        craftax.SEMANTICS,
    ),
):
    register_vector_env(
        path,
        modes=modes[0] if modes else ("SameStep",),
        masked_reset="ignores",
        semantics=semantics,
        why="{name} is a batched simulator with its own reset and final-observation API.",
        remedy=f"Wrap it in vecmode.simulators.{adapter}.",
    )
