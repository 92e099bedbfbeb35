"""The physics the torch simulators' fakes share (ManiSkill3, IsaacLab, the
RSL-RL ``VecEnv`` shape): a tiny torch-CPU dynamics with random episode
lengths, terminations and truncations, that can record its true transitions.

Each sub-env has a 3-float state (its observation) and takes a 2-float action.
Each episode draws the step it terminates at, uniformly in ``1..2*max_steps``,
and is truncated at ``max_steps``: about half end each way, and both at once
sometimes (Gymnasium allows it). Randomness comes from one ``torch.Generator``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from gymnasium import spaces

OBS_DIM, ACT_DIM = 3, 2


def observation_space() -> spaces.Box:
    return spaces.Box(-np.inf, np.inf, (OBS_DIM,), np.float32)


def action_space() -> spaces.Box:
    return spaces.Box(-1.0, 1.0, (ACT_DIM,), np.float32)


def host(x: Any) -> np.ndarray:
    """A tensor as NumPy (recording only: the one place a fake converts)."""
    return x.detach().cpu().numpy().copy()


class Episodes:
    """The state of ``num_envs`` sub-envs and their episodes.

    Args:
        num_envs: the number of sub-envs.
        max_steps: episodes are truncated at this many steps.
        seed: the generator's seed.
        record: keep the true transitions in :attr:`record` (host NumPy).
    """

    def __init__(
        self, num_envs: int, max_steps: int = 6, seed: int = 0, record: bool = False
    ) -> None:
        self.num_envs, self.max_steps = num_envs, max_steps
        self.generator = torch.Generator().manual_seed(seed)
        self.state = torch.zeros(num_envs, OBS_DIM)
        self.t = torch.zeros(num_envs, dtype=torch.int64)
        self.goal = torch.ones(num_envs, dtype=torch.int64)
        #: per step: obs, action, reward, next_obs (the true final observation
        #: where an episode ended), terminated, truncated; None: not recording.
        self.record: list[dict[str, np.ndarray]] | None = [] if record else None

    def seed(self, seed: int) -> None:
        self.generator.manual_seed(seed)

    def reset_rows(self, mask: torch.Tensor) -> None:
        """Start new episodes in the rows of the bool ``mask``."""
        n, g = self.num_envs, self.generator
        fresh = torch.rand((n, OBS_DIM), generator=g) - 0.5
        goal = torch.randint(1, 2 * self.max_steps + 1, (n,), generator=g)
        self.state = torch.where(mask[:, None], fresh, self.state)
        self.t = torch.where(mask, torch.zeros_like(self.t), self.t)
        self.goal = torch.where(mask, goal, self.goal)

    def observe(self) -> torch.Tensor:
        return self.state.clone()

    def advance(self, actions: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """Step every sub-env: ``(terminated, truncated)``."""
        a = torch.as_tensor(actions, dtype=torch.float32).reshape(
            self.num_envs, ACT_DIM
        )
        push = torch.cat((a, a[:, :1] - a[:, 1:]), dim=1)
        self.state = 0.9 * self.state + 0.1 * push + 0.01
        self.t = self.t + 1
        return self.t == self.goal, self.t >= self.max_steps

    def reward(self, actions: Any) -> torch.Tensor:
        """The reward of the current state (a new tensor)."""
        a = torch.as_tensor(actions, dtype=torch.float32).reshape(
            self.num_envs, ACT_DIM
        )
        return self.state.sum(dim=1) - 0.1 * a.square().sum(dim=1)

    def note(self, **transition: Any) -> None:
        """Record one step's true transitions (when recording)."""
        if self.record is not None:
            self.record.append(
                {k: host(torch.as_tensor(v)) for k, v in transition.items()}
            )
