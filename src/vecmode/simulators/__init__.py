"""Batched simulators (ManiSkill3, IsaacLab, Genesis, Brax, gymnax, Jumanji,
Craftax) behind Gymnasium's vector API, their batches left in torch or JAX:
what each does at an episode's end declared, converted where it is exact,
refused where the final observation is lost (docs/simulators.md)."""

from __future__ import annotations

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
