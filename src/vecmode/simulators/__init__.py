"""Batched simulators (ManiSkill3, IsaacLab, Genesis, Brax, gymnax, Jumanji,
Craftax) behind Gymnasium's vector API, their batches left in torch or JAX:
what each does at an episode's end declared, converted where it is exact,
refused where the final observation is lost (docs/simulators.md)."""

from __future__ import annotations

from vecmode.env_classes import Semantics, register_vector_env
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

_NONE, _LOST = "none", "lost"

# the simulators' own classes, as each adapter finds them by default (vecmode
# table --simulators); none takes Gymnasium's reset_mask
for path, adapter, semantics, modes in (
    (
        "mani_skill.vector.wrappers.gymnasium:ManiSkillVectorEnv",
        "ManiSkillAdapter",
        Semantics(partial_reset="indices", source=maniskill.SOURCE),
        ("SameStep", "Disabled"),
    ),
    *(
        (
            f"isaaclab.envs.{module}",
            "IsaacLabAdapter",
            Semantics(
                final_observation="opt-in",
                partial_reset=_NONE,
                remedy=isaaclab.REMEDY,
                source=isaaclab.SOURCE,
            ),
            ("SameStep",),
        )
        for module in (
            "direct_rl_env:DirectRLEnv",
            "manager_based_rl_env:ManagerBasedRLEnv",
        )
    ),
    (
        "rsl_rl.env.vec_env:VecEnv",
        "RslRlAdapter",
        Semantics(
            _LOST, partial_reset=_NONE, truncation="time_outs", source=rsl_rl.SOURCE
        ),
        ("SameStep",),
    ),
    *(
        (
            path,
            "BraxAdapter",
            Semantics(
                _LOST,
                "cached-first",
                partial_reset=_NONE,
                truncation="info",
                source=source,
            ),
            ("SameStep",),
        )
        for path, source in (
            ("brax.envs.wrappers.training:AutoResetWrapper", brax.BRAX),
            ("mujoco_playground._src.wrapper:BraxAutoResetWrapper", brax.PLAYGROUND),
        )
    ),
    (
        "gymnax.environments.environment:Environment",
        "GymnaxAdapter",
        Semantics("every-step", partial_reset=_NONE, source=gymnax.SOURCE),
        ("SameStep",),
    ),
    (
        "jumanji.wrappers:AutoResetWrapper",
        "JumanjiAdapter",
        Semantics(
            "opt-in",
            partial_reset=_NONE,
            truncation="discount",
            remedy="next_obs_in_extras=True",
            source=jumanji.SOURCE,
        ),
        ("SameStep",),
    ),
    (
        "wrappers:OptimisticResetVecEnvWrapper",  # Craftax_Baselines' wrappers.py
        "CraftaxAdapter",
        Semantics(
            _LOST,
            "pool",
            partial_reset=_NONE,
            truncation="step-count",
            source=craftax.SOURCE,
        ),
        ("SameStep",),
    ),
):
    register_vector_env(
        path,
        modes=modes,
        masked_reset="ignores",
        semantics=semantics,
        why="{name} is a batched simulator with its own reset and final-observation API.",
        remedy=f"Wrap it in vecmode.simulators.{adapter}.",
    )
