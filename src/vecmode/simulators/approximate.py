"""The opt-in approximation of a lost final observation."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gymnasium.vector import AutoresetMode, VectorEnv

from vecmode import _arrays, _rows, modes
from vecmode.core import StepResult
from vecmode.env_classes import GYMNASIUM_SEMANTICS, semantics_of
from vecmode.forwarding import ForwardingWrapper
from vecmode.registry import supports


@supports(
    AutoresetMode.SAME_STEP,
    array_native=True,
    why={
        m: "it fills in the final observations of a simulator that resets inside "
        "its step (SameStep) and loses them."
        for m in (AutoresetMode.NEXT_STEP, AutoresetMode.DISABLED)
    },
)
class ApproximateFinalObs(ForwardingWrapper):
    """A SAME_STEP env whose final observation is lost, with each ended
    episode's final observation approximated by the last observation seen
    (the one its last action was taken on), as Sample Factory and TorchRL
    bootstrap truncated episodes. Opt-in: ``semantics`` says ``approximated``,
    and ``check_stack``, the CLI and ``TransitionCollector`` report it.

    Args:
        env: a simulator adapter (or any SAME_STEP env) that loses the final
            observation.
    """

    def __init__(self, env: VectorEnv) -> None:
        super().__init__(env)
        found, name = semantics_of(env), type(env.unwrapped).__name__
        if found.final_observation not in ("lost", "opt-in"):
            declare = (
                f" If it is lost, declare so: vecmode.register_vector_env({name}, "
                f"masked_reset=..., semantics=vecmode.env_classes.Semantics('lost'))."
                if found is GYMNASIUM_SEMANTICS
                else ""
            )
            raise ValueError(
                f"ApproximateFinalObs is for an env that loses its final "
                f"observation; {name}'s is {found.final_observation}, which vecmode "
                f"reads exactly: drop the approximation.{declare}"
            )
        self.semantics = replace(found, final_observation="approximated")
        self._last: Any = None

    def _reset_result(
        self, obs: Any, infos: dict[str, Any], state: Any
    ) -> tuple[Any, dict[str, Any]]:
        mask = state  # the reset_mask, or None
        if mask is None or self._last is None:
            self._last = _rows.copied(obs)
        else:
            self._last = _arrays.rows_where(mask, _rows.copied(obs), self._last)
        return obs, infos

    def _step_result(self, result: StepResult) -> StepResult:
        obs, rewards, terminations, truncations, infos = result
        if self._last is None:
            raise RuntimeError("ApproximateFinalObs: call reset() before step().")
        ended = _arrays.ended(terminations, truncations)
        if _arrays.any_true(ended):
            infos = modes.with_finals(infos, ended, self._last, infos)
        self._last = _rows.copied(obs)
        return obs, rewards, terminations, truncations, infos
