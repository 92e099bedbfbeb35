"""The checks of one call of a wrapper: each raises a
:class:`~vecmode.testing.wrapper.events.ConformanceError` naming the broken
property, the call, the sub-env and the field."""

from __future__ import annotations

import copy
from typing import Any

import gymnasium as gym
import numpy as np

from vecmode.core import space_row
from vecmode.modes import FINAL_INFO, final_layout_problem, final_observations, final_of
from vecmode.replay.compare import where_different
from vecmode.testing.wrapper.events import (
    NO_STEP_INFO,
    NOT_REACHED,
    difference,
    fail,
    show,
)

#: What a wrapper that changed the caller's options is told.
OPTIONS_HINT = (
    "A wrapper leaves the options it is given as they were: the caller keeps them "
    "and may use them again (a layer above may read reset_mask after its own "
    "reset). Pass a copy down, options = dict(options), and never write into "
    "options['reset_mask']."
)
#: What a wrapper that loses the env's infos is told.
ENV_INFOS_HINT = (
    "A wrapper passes the env's infos on, in every mode: in SAME_STEP the ended "
    "step's info is in info['final_info'] (with info['_final_info']). A wrapper "
    "that removes or rewrites the infos on purpose: check_wrapper(..., "
    "env_infos=False) (vecmode conform --no-env-infos)."
)


def final_rows(infos: Any, rows: np.ndarray, where: str, who: str) -> dict[int, Any]:
    """The final observations of ``rows``, checking SAME_STEP's layout (its mask
    marks exactly ``rows``)."""
    if isinstance(infos, list):  # DictInfoToList: one dict per sub-env
        finals = {}
        for i, info in enumerate(infos):
            found, final = final_of(info)
            if found != bool(rows[i]):
                raise fail(
                    "returns_well_formed_results",
                    who,
                    f"{where}, sub-env {i}",
                    f"info has {'a' if found else 'no'} final observation, but the "
                    f"mode puts {'one' if rows[i] else 'none'} there",
                )
            if found:
                finals[i] = final
        return finals
    # the final infos and their mask too, where they are there (an env or a
    # wrapper may drop the infos: the dense layout has none)
    complete = any(key in infos for key in (FINAL_INFO, f"_{FINAL_INFO}"))
    problem = final_layout_problem(infos, rows, complete=complete)
    if problem is not None:
        sub_env = "" if problem.sub_env is None else f", sub-env {problem.sub_env}"
        raise fail(
            "returns_well_formed_results",
            who,
            f"{where}, field {problem.field}{sub_env}",
            f"expected {problem.expected}, got "
            f"{show(problem.got) if problem.present else 'nothing'}",
            "The wrapper must keep the final observations and their mask, as "
            "SAME_STEP puts them (transformed like the observations), marking "
            "exactly the sub-envs whose episode ended.",
        )
    present = final_observations(infos)
    if present is None:
        return {}
    return {int(i): present[1][i] for i in np.flatnonzero(rows)}


class Options:
    """The options of a masked reset as given to the wrapper, and a copy, to
    check that ``reset`` left them (and the mask array in them) as they were.

    Args:
        mask: the reset's mask.
        base_keeps: the base env leaves the caller's options as they were
            (Gymnasium's pop ``reset_mask``: a wrapper passing them down loses it).
    """

    def __init__(self, mask: np.ndarray, base_keeps: bool) -> None:
        self.mask = mask.copy()
        self.given: dict[str, Any] = {"reset_mask": self.mask}
        self.copy = copy.deepcopy(self.given)
        self.base_keeps = base_keeps

    def check(self, where: str, who: str) -> None:
        """Fail where ``reset`` wrote into the caller's options or mask."""
        given = show(self.copy["reset_mask"])
        if not np.array_equal(self.mask, self.copy["reset_mask"]):
            raise fail(
                "leaves_inputs_untouched",
                who,
                f"{where}, field options['reset_mask']",
                f"reset() wrote into the caller's reset_mask array: {given} became "
                f"{show(self.mask)}",
                OPTIONS_HINT,
            )
        expected = dict(self.copy)
        if not self.base_keeps and "reset_mask" not in self.given:
            del expected["reset_mask"]  # the base env popped it
        if where_different(expected, self.given) is not None:
            raise fail(
                "leaves_inputs_untouched",
                who,
                f"{where}, field options",
                f"reset() changed the caller's options: {show(self.copy)} became "
                f"{show(self.given)}",
                OPTIONS_HINT,
            )


def check_actions_untouched(
    given: np.ndarray, actions: np.ndarray, where: str, who: str
) -> None:
    """Fail where ``step`` wrote into the caller's action array."""
    if not np.array_equal(given, actions):
        raise fail(
            "leaves_inputs_untouched",
            who,
            f"{where}, field actions",
            f"step() wrote into the caller's actions: {show(given)} became "
            f"{show(actions)}",
            "A wrapper transforms a copy of the actions it is given (the caller "
            "keeps them, e.g. in a rollout buffer); never write into them.",
        )


def check_step_arrays(
    n: int, rewards: Any, terminations: Any, truncations: Any, where: str, who: str
) -> None:
    """Fail unless rewards and flags are arrays of ``n`` numbers / bools."""
    for name, array, kinds in (
        ("rewards", rewards, "fiub"),
        ("terminations", terminations, "b"),
        ("truncations", truncations, "b"),
    ):
        array = np.asarray(array)
        if array.shape != (n,) or array.dtype.kind not in kinds:
            raise fail(
                "returns_well_formed_results",
                who,
                f"{where}, field {name}",
                f"shape {array.shape} dtype {array.dtype}: expected shape ({n},) "
                f"of {'numbers' if kinds != 'b' else 'bools'}",
            )


def check_others_kept(
    space: gym.Space, last: Any, obs: Any, mask: np.ndarray, where: str, who: str
) -> None:
    """Fail where a masked reset returns, for a sub-env it did not reset, other
    than the observation last returned for it."""
    for i in np.flatnonzero(~mask).tolist():
        why = difference(space_row(space, last, i), space_row(space, obs, i))
        if why is not None:
            raise fail(
                "masked_reset_keeps_the_others",
                who,
                f"{where}, sub-env {i} (not reset), field obs",
                f"{why}: here the masked reset's, there the call before's",
                "A masked reset returns the whole batch, the sub-envs it did not "
                "reset at the observation last returned for them (as Gymnasium's "
                "vector envs do): transform every row the env returns, as after a "
                "step, and give the rows it did not reset the values the call "
                "before gave them (a wrapper whose statistics the reset rows "
                "update normalises the others as before the update), so that a "
                "sub-env acts on the observation it was last given.",
            )


def check_reset_steps(
    real: np.ndarray,
    rewards: Any,
    terminations: Any,
    truncations: Any,
    where: str,
    who: str,
) -> None:
    """Fail where a step that is no transition (NEXT_STEP's reset step: the
    sub-env is reset, the action ignored) returns a reward or an ended flag."""
    for i in np.flatnonzero(~real).tolist():
        if rewards[i] != 0 or terminations[i] or truncations[i]:
            raise fail(
                "reset_step_stays_empty",
                who,
                f"{where}, sub-env {i}",
                f"NEXT_STEP's reset step (the call after the sub-env's episode "
                f"ended) returned reward {rewards[i]}, terminated "
                f"{bool(terminations[i])}, truncated {bool(truncations[i])}: "
                f"expected reward 0, terminated False, truncated False",
                "NEXT_STEP's reset step is no transition: the env returns reward 0 "
                "and both flags False there, and a wrapper keeps them so (a reward "
                "transform like r + 1 would invent a reward for it; "
                "vecmode.wrappers.RewardWrapper leaves those rows alone, and "
                "vecmode.modes.BoundaryTracker tells which they are).",
            )


def check_env_info(picked: list[Any], real: np.ndarray, where: str, who: str) -> None:
    """Fail where a real transition's info lacks the sub-env's own step count."""
    for i in np.flatnonzero(real).tolist():
        found = picked[i]
        for name, value in found.items() if isinstance(found, dict) else ():
            if isinstance(value, str) and value == NO_STEP_INFO:
                raise fail(
                    "passes_env_infos_on",
                    who,
                    f"{where}, sub-env {i}, field info",
                    f"{name} is missing: {NOT_REACHED}",
                    ENV_INFOS_HINT,
                )
