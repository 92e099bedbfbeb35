"""The base of vecmode's simulator adapters: Gymnasium's vector API over a
batched simulator that steps every sub-env in one call, its batches left in
their library (torch, JAX) and on their device."""

from __future__ import annotations

from typing import Any

from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from vecmode import _arrays, modes
from vecmode.env_classes import Semantics
from vecmode.forwarding import valid_reset_mask

StepResult = tuple[Any, Any, Any, Any, dict[str, Any]]


class SimulatorAdapter(VectorEnv):
    """A batched simulator as a Gymnasium vector env. Subclasses implement
    :meth:`_reset` and :meth:`_step` in the simulator's library, and set
    :attr:`semantics` (what the simulator does at an episode's end).

    A simulator that resets inside its step is presented in SAME_STEP mode:
    its final observations, where it has them, in the dense layout (one batch,
    with the ``_final_obs`` mask). One the caller resets is presented in
    DISABLED mode, honouring ``reset(options={"reset_mask": m})``.
    ``vecmode.with_autoreset`` converts from there where it is exact.

    Args:
        simulator: the simulator's own env object.
        num_envs: the number of sub-envs.
        single_observation_space: one sub-env's observation space.
        single_action_space: one sub-env's action space.
        mode: the mode it is presented in (SAME_STEP or DISABLED).
        namespace: the array library of its batches (``"torch"``, ``"jax.numpy"``).
        semantics: what it does at an episode's end.
    """

    #: What the simulator does at an episode's end (per instance: it can
    #: depend on the simulator's configuration).
    semantics: Semantics

    def __init__(
        self,
        simulator: Any,
        *,
        num_envs: int,
        single_observation_space: spaces.Space[Any],
        single_action_space: spaces.Space[Any],
        mode: AutoresetMode,
        namespace: str,
        semantics: Semantics,
    ) -> None:
        self.simulator = simulator
        self.num_envs = num_envs
        self.single_observation_space = single_observation_space
        self.single_action_space = single_action_space
        self.observation_space = batch_space(single_observation_space, num_envs)
        self.action_space = batch_space(single_action_space, num_envs)
        self.metadata = {
            **type(self).metadata,
            "autoreset_mode": modes.as_mode(mode),
            _arrays.ARRAY_NAMESPACE: namespace,
        }
        self.semantics = semantics

    # ----------------------------------------------------- what subclasses write
    def _reset(self, seed: int | None, mask: Any | None) -> tuple[Any, dict[str, Any]]:
        """Reset every sub-env (``mask`` None), or those of ``mask`` (a bool
        array of the batch's library; only if ``semantics.partial_reset`` is
        not ``"none"``): the whole batch of observations and the infos."""
        raise NotImplementedError

    def _step(self, actions: Any) -> StepResult:
        """Step every sub-env: Gymnasium's five batches."""
        raise NotImplementedError

    # ------------------------------------------------------ Gymnasium's API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset the sub-envs: all, or those of ``options["reset_mask"]``."""
        mask = None
        if options and options.get("reset_mask") is not None:
            mask = valid_reset_mask(options["reset_mask"], self.num_envs)
            if self.semantics.partial_reset == "none" and not bool(mask.all()):
                raise ValueError(
                    f"{self.name} cannot reset some sub-envs alone (it has no "
                    f"partial reset), and vecmode never resets the whole batch in "
                    f"place of a masked reset. Reset every sub-env "
                    f"(reset() without reset_mask), or use the simulator's own "
                    f"autoreset (this adapter's {self.metadata['autoreset_mode'].value}"
                    f" mode)."
                )
        return self._reset(seed, mask)

    def step(self, actions: Any) -> StepResult:
        """Step every sub-env."""
        return self._step(actions)

    @property
    def name(self) -> str:
        """The simulator's name, for messages."""
        return type(self).__name__

    def __repr__(self) -> str:
        return f"{type(self).__name__}({type(self.simulator).__name__}, num_envs={self.num_envs})"
