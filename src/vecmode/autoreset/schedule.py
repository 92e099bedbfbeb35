"""The episode seed schedule: the seed and options of every episode of every
sub-env, the same in every mode and on every core (docs/training.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv

from vecmode import core, errors
from vecmode.core import Executed, VectorCore

__all__ = ["EpisodeSchedule", "schedule_for", "started_by"]

_RESET = int(core.Command.RESET)


class EpisodeSchedule:
    """The seed and options of every episode of every sub-env: sub-env ``i``'s
    episode ``e`` (0: the one the first reset starts) is seeded with
    ``SeedSequence(run.entropy, spawn_key=(*run.spawn_key, i, e))``'s first word
    and reset with ``options(i, e)``.

    Args:
        run: the run seed, an int >= 0 or a ``numpy.random.SeedSequence``.
        options: a function ``(sub_env_index, episode) -> dict | None``, or None.
        num_envs: the number of sub-envs.

    >>> schedule = EpisodeSchedule(7, lambda i, e: {"level": e}, num_envs=2)
    >>> schedule.seeds == [schedule.seed(0, 0), schedule.seed(1, 0)], schedule.options
    (True, [{'level': 0}, {'level': 0}])
    >>> schedule.started([1]); schedule.episodes, schedule.options
    ([-1, 0], [{'level': 0}, {'level': 1}])
    """

    def __init__(
        self, run: Any, options: Callable[[int, int], Any] | None, num_envs: int
    ) -> None:
        if core.is_int(run) and run >= 0:
            run = np.random.SeedSequence(int(run))
        if not isinstance(run, np.random.SeedSequence):
            raise errors.SeedError(
                f"an episode seed schedule's run seed (episode_seeds=, or reset's "
                f"seed= under a schedule) must be an int >= 0 or a numpy.random."
                f"SeedSequence, got {type(run).__name__} {run!r}; sub-env i's "
                f"episode e is then seeded from (run seed, i, e)."
            )
        if options is not None and not callable(options):
            raise TypeError(
                f"episode_options must be a function (sub_env_index, episode) -> "
                f"dict or None, got {type(options).__name__} {options!r}."
            )
        self.run, self.options_of = run, options
        #: The episode each sub-env is in (-1: none started yet).
        self.episodes = [-1] * num_envs
        #: The seed of each sub-env's next episode.
        self.seeds = [self.seed(i, 0) for i in range(num_envs)]
        #: The options of each sub-env's next episode (None: no ``options``).
        self.options = (
            None if options is None else list(map(self._options, range(num_envs)))
        )

    def seed(self, index: int, episode: int) -> int:
        """The seed of episode ``episode`` of sub-env ``index``."""
        run = self.run
        key = (*run.spawn_key, index, episode)
        sequence = np.random.SeedSequence(
            run.entropy, spawn_key=key, pool_size=run.pool_size
        )
        return int(sequence.generate_state(1)[0])

    def _options(self, i: int) -> dict[str, Any] | None:
        """The options of sub-env ``i``'s next episode, checked."""
        found = self.options_of(i, self.episodes[i] + 1)  # type: ignore[misc]
        if found is None or isinstance(found, dict):
            return found
        raise TypeError(
            f"episode_options({i}, {self.episodes[i] + 1}) returned "
            f"{type(found).__name__} {found!r}; it must return a dict of reset "
            f"options, or None."
        )

    def started(self, indices: list[int]) -> None:
        """These sub-envs started their next episode."""
        for i in indices:
            self.episodes[i] += 1
            self.seeds[i] = self.seed(i, self.episodes[i] + 1)
            if self.options is not None:
                self.options[i] = self._options(i)

    def reset_call(
        self, env: VectorCore, seed: Any, options: dict[str, Any] | None
    ) -> tuple[list[int], dict[str, Any], EpisodeSchedule]:
        """The commands and ``execute`` arguments of ``env.reset(seed=seed,
        options=options)``, and the schedule then: a run seed restarts it at
        episode 0; the caller's options go over the scheduled ones."""
        cmds, given = env._reset_commands(options)
        schedule = self
        if seed is not None:
            if options is not None and "reset_mask" in options:
                raise errors.SeedError(
                    f"reset(seed={seed!r}) with a reset_mask: under an episode seed "
                    f"schedule the masked sub-envs take their scheduled seeds; pass "
                    f"no seed, or restart the schedule with reset(seed=...) and no "
                    f"mask."
                )
            schedule = EpisodeSchedule(seed, self.options_of, len(self.seeds))
        each: Any = schedule.options
        if given is not None:
            each = [{**(o or {}), **given} for o in each or [None] * len(cmds)]
        return cmds, {"seed": schedule.seeds, "options": each}, schedule


def started_by(cmds: list[int], executed: Executed) -> list[int]:
    """The sub-envs a call reset (a RESET, or a STEP_THEN_RESET that ended)."""
    reset = [i for i, c in enumerate(cmds) if c == _RESET] if _RESET in cmds else []
    return reset + [final[0] for final in executed.finals]


def schedule_for(
    env: VectorEnv, target: AutoresetMode, seeds: Any, options: Any
) -> EpisodeSchedule:
    """The schedule of ``with_autoreset(env, target, episode_seeds=seeds,
    episode_options=options)``; refused unless ``env`` is a vecmode core."""
    if seeds is None:
        raise TypeError(
            "episode_options needs episode_seeds (the run seed the episodes are "
            "seeded from): pass with_autoreset(env, mode, episode_seeds=0, "
            "episode_options=...)."
        )
    schedule = EpisodeSchedule(seeds, options, env.num_envs)
    if not isinstance(env, VectorCore):
        raise errors.IncompatibleModeError(
            f"with_autoreset cannot honour episode_seeds over {errors.describe(env)}"
            f": only a vecmode core resets each sub-env with a seed and options of "
            f"its own (Gymnasium's and ALE's autoresets pass no seed, EnvPool fixes "
            f"its seeds when built). Put it directly on a vecmode core, other "
            f"wrappers above: vecmode.with_autoreset(vecmode.SyncVectorEnv(env_fns)"
            f", {target.value!r}, episode_seeds=...) (or AsyncVectorEnv, RayVectorEnv)."
        )
    return schedule
