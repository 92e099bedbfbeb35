"""The schedules a wrapper is run on, and the base envs it is run over."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv

from vecmode.autoreset import with_autoreset
from vecmode.errors import ArrayLibraryError, IncompatibleModeError
from vecmode.sync_vector_env import SyncVectorEnv
from vecmode.testing.envs import DenseFinalObsVectorEnv, scheduled_env_fns

#: The base vector envs a wrapper can be run over, by name.
BASES: dict[str, Callable[[list[Callable[[], gym.Env]], AutoresetMode], VectorEnv]] = {
    "vecmode.SyncVectorEnv": lambda fns, mode: with_autoreset(
        SyncVectorEnv(fns, copy=False), mode
    ),
    "gymnasium.vector.SyncVectorEnv": lambda fns, mode: gym.vector.SyncVectorEnv(
        fns, autoreset_mode=mode
    ),
    # ALE's dense SAME_STEP final observations, for adapters of that layout
    "vecmode.testing.DenseFinalObsVectorEnv": lambda fns, mode: DenseFinalObsVectorEnv(
        fns, autoreset_mode=mode
    ),
}
#: The bases a wrapper is run over by default: those in Gymnasium's layout.
DEFAULT_BASES = ("vecmode.SyncVectorEnv", "gymnasium.vector.SyncVectorEnv")
#: The one base runs over torch or JAX batches are made on (see base_env).
ARRAY_BASE = DEFAULT_BASES[0]
#: The real transitions per sub-env after which the runs call ``reset()``
#: (mid-episode; after an end, at 4 too); a check compares one more at least.
RESET_AT = 8
#: The bases in ALE's dense layout: no final infos to compare.
DENSE_LAYOUT = frozenset({"vecmode.testing.DenseFinalObsVectorEnv"})


@dataclass(frozen=True)
class Schedule:
    """Per sub-env: its episodes' lengths and truncations (repeated), and after
    which of its real transitions a masked reset cuts the episode; ``resets``:
    after which (reached by every sub-env together) ``reset()`` resets them all,
    at an episode's end in place of the autoreset or the masked reset."""

    name: str
    lengths: tuple[tuple[int, ...], ...]
    truncate: tuple[tuple[bool, ...], ...]
    cuts: tuple[frozenset[int], ...]
    resets: frozenset[int] = frozenset()

    def after(self, n: int) -> Schedule:
        """The schedule of sub-envs that start ``n`` transitions in (its resets)."""
        return replace(self, resets=frozenset(r - n for r in self.resets if r > n))


def schedules(num_envs: int, wanted: int) -> tuple[Schedule, ...]:
    """Episodes ending together (all reset mid-episode), staggered, staggered
    truncated where cut, and ending together reset after an end (NEXT_STEP's
    and DISABLED's)."""
    staggered = Schedule(
        "staggered episodes",
        tuple(((2, 3), (3,), (1, 4), (4, 2))[i % 4] for i in range(num_envs)),
        tuple(((i % 2 == 0), False, True) for i in range(num_envs)),
        tuple(frozenset({3 + i, 8}) for i in range(num_envs)),
    )
    together = Schedule(
        "episodes ending together",
        tuple((3, 1, 2, 4) for _ in range(num_envs)),
        tuple(((i % 2 == 0), (i % 3 == 0)) for i in range(num_envs)),
        tuple(frozenset() for _ in range(num_envs)),
        frozenset({RESET_AT}),  # mid-episode
    )
    # (NEXT_STEP's and DISABLED's: SAME_STEP's autoreset is no reset(), which
    # may clear more, as Gymnasium's NormalizeReward does its sums)
    name = f"{together.name}, reset() after an end"
    after_end = replace(together, name=name, resets=frozenset({4, RESET_AT}))
    return together, staggered, _truncated_at_cuts(staggered, wanted), after_end


def _truncated_at_cuts(schedule: Schedule, wanted: int) -> Schedule:
    """``schedule`` whose episodes the env truncates where it has cuts."""
    lengths, truncate = [], []
    for ls, ts, cuts in zip(
        schedule.lengths, schedule.truncate, schedule.cuts, strict=True
    ):
        done, episode, ref_ls, ref_ts = 0, 0, [], []
        while done < wanted + 8:
            length, trunc = ls[episode % len(ls)], ts[episode % len(ts)]
            cut = min((c for c in cuts if done < c < done + length), default=None)
            ref_ls.append(length if cut is None else cut - done)
            ref_ts.append(trunc if cut is None else True)
            done = done + length if cut is None else cut
            episode += 1
        lengths.append(tuple(ref_ls))
        truncate.append(tuple(ref_ts))
    return Schedule(
        "staggered episodes truncated by the env where cut",
        tuple(lengths),
        tuple(truncate),
        tuple(frozenset() for _ in schedule.cuts),
    )


def base_env(
    name: str,
    mode: AutoresetMode,
    kinds: Mapping[str, Any],
    schedule: Schedule | None = None,
) -> VectorEnv:
    """The base env ``name`` in ``mode``, over test sub-envs of ``kinds`` whose
    box values are ``signed`` (which ``abs``, rounding or a clip change)."""
    rest = dict(kinds, signed=True)
    num_envs, obs_type = rest.pop("num_envs"), rest.pop("obs_type")
    library = rest.pop("array_library", None)
    lengths, truncate = (
        (None, None) if schedule is None else (schedule.lengths, schedule.truncate)
    )
    fns = scheduled_env_fns(num_envs, lengths, truncate, obs_type, **rest)
    if library is None:
        return BASES[name](fns, mode)
    return in_library(SyncVectorEnv(fns), mode, library_module(library))


#: The array libraries a wrapper can be run over (``check_wrapper``'s
#: ``array_library``), by name: the module holding them.
ARRAY_LIBRARIES = {
    "numpy": "numpy",
    "torch": "torch",
    "jax": "jax.numpy",
    "jax.numpy": "jax.numpy",
}


def library_module(name: str) -> Any:
    """The array module of a key of :data:`ARRAY_LIBRARIES`."""
    return importlib.import_module(ARRAY_LIBRARIES[name])


def in_library(core: VectorEnv, mode: AutoresetMode, xp: Any) -> VectorEnv:
    """``core`` (vecmode's, DISABLED) in ``mode``, returning batches of ``xp``:
    vecmode's policy over the conversion where the policy is array-native (its
    final observations then in the dense layout), else the conversion over it."""
    from vecmode.wrappers import ArrayConversion  # imports neither torch nor jax

    try:
        return with_autoreset(ArrayConversion(core, env_xp=np, target_xp=xp), mode)
    except (ArrayLibraryError, IncompatibleModeError):  # NEXT_STEP, for one
        return ArrayConversion(with_autoreset(core, mode), env_xp=np, target_xp=xp)
