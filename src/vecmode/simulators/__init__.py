"""Batched simulators (ManiSkill3, IsaacLab, Genesis, Brax, gymnax, Jumanji,
Craftax) behind Gymnasium's vector API, their batches left in torch or JAX:
what each does at an episode's end declared, converted where it is exact,
refused where the final observation is lost (docs/simulators.md)."""

from __future__ import annotations

from vecmode.simulators.base import SimulatorAdapter
from vecmode.simulators.gymnax import GymnaxAdapter
from vecmode.simulators.jumanji import JumanjiAdapter

__all__ = ["GymnaxAdapter", "JumanjiAdapter", "SimulatorAdapter"]
