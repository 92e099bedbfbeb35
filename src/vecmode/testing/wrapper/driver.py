"""The event driver: one run of a wrapped env, each call checked on its own, read
into per-sub-env events (:mod:`vecmode.testing.wrapper.events`)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv

from vecmode.core import space_row
from vecmode.modes import (
    FINAL_INFO,
    Boundary,
    BoundaryTracker,
    final_layout_problem,
    final_observations,
    final_of,
    mode_of,
)
from vecmode.replay.compare import as_numpy, where_different
from vecmode.testing.wrapper.events import (
    NO_STEP_INFO,
    NOT_REACHED,
    SKIP,
    ConformanceError,
    Event,
    Run,
    difference,
    fail,
    show,
    transition_infos,
)
from vecmode.testing.wrapper.schedules import Schedule
from vecmode.testing.writes import HeldResults, WritesBelow, Written

PARTIAL_RESET_HINT = (
    "A wrapper must handle reset(options={'reset_mask': mask}), a partial reset, "
    "in every mode it declares: DISABLED relies on it, and NEXT_STEP and "
    "SAME_STEP envs accept it too; clear only the masked sub-envs' state."
)
CHANGED_LATER_HINT = (
    "Return new arrays (and a new info dict), not a buffer or an array of the "
    "wrapper's state that a later call writes into: a caller keeps what step() "
    "and reset() return (a rollout buffer, vecmode.TransitionCollector's "
    "transitions)."
)
WROTE_BELOW_HINT = (
    "Transform into a new array (np.clip(x, lo, hi), x * 2), never into the one "
    "the wrapped env returned (x *= 2, x[i] = ..., out=x): the env below may keep "
    "it (a core built with copy=False reuses its observation buffer; a layer that "
    "logs or stores transitions holds what it returned)."
)
OPTIONS_HINT = (
    "A wrapper leaves the options it is given as they were: the caller keeps them "
    "and may use them again (a layer above may read reset_mask after its own "
    "reset). Pass a copy down, options = dict(options), and never write into "
    "options['reset_mask']."
)
_ENV_INFOS_HINT = (
    "A wrapper passes the env's infos on, in every mode: in SAME_STEP the ended "
    "step's info is in info['final_info'] (with info['_final_info']). A wrapper "
    "that removes or rewrites the infos on purpose: check_wrapper(..., "
    "env_infos=False) (vecmode conform --no-env-infos)."
)
_OTHERS_KEPT_HINT = (
    "A masked reset returns the whole batch, the sub-envs it did not reset at the "
    "observation last returned for them (as Gymnasium's vector envs do): transform "
    "every row the env returns, as after a step, and give the rows it did not "
    "reset the values the call before gave them (a wrapper whose statistics the "
    "reset rows update normalises the others as before the update), so that a "
    "sub-env acts on the observation it was last given."
)
_RESET_STEP_HINT = (
    "NEXT_STEP's reset step is no transition: the env returns reward 0 and both "
    "flags False there, and a wrapper keeps them so (a reward transform like r + 1 "
    "would invent a reward for it; vecmode.wrappers.RewardWrapper leaves those "
    "rows alone, and vecmode.modes.BoundaryTracker tells which they are)."
)


@dataclass(frozen=True)
class RunPlan:
    """What one run does: its ``label``, the ``mode`` the wrapper reports, the
    ``schedule``, each sub-env's action ``queues``, the real transitions
    ``wanted`` per sub-env, and the reset ``seed``."""

    label: str
    mode: AutoresetMode
    schedule: Schedule
    queues: list[list[Any]]
    wanted: int
    seed: int


@dataclass(frozen=True)
class Checking:
    """Who is checked (``who``) and what: ``compare_info`` of each transition's
    info, the properties ``only`` (None: all), and what the base env below does:
    whether its ended steps' infos reach the wrapper (``final_infos``), whether it
    keeps the caller's options, whether the wrapper says ``copy = False``, and
    what it returned to the wrapper (``below``)."""

    who: str
    compare_info: Callable[[dict], Any] | None
    only: frozenset[str] | None = None
    final_infos: bool = True
    base_keeps_options: bool = True
    reuses_observations: bool = False
    below: WritesBelow | None = None

    def on(self, prop: str) -> bool:
        """Whether ``prop``'s per-call checks are made."""
        return self.only is None or prop in self.only


class Driver:
    """Drives the wrapped ``envs`` through a :class:`RunPlan`, checking each call.

    Sub-env ``i``'s ``k``-th real transition takes the ``k``-th action of its
    queue; the run ends when every sub-env made the transitions wanted.

    >>> from vecmode.testing.wrapper.schedules import base_env, schedules
    >>> mode, schedule = AutoresetMode.SAME_STEP, schedules(2, 3)[0]
    >>> envs = base_env("vecmode.SyncVectorEnv", mode, {"num_envs": 2, "obs_type": "box"}, schedule)
    >>> run = Driver(envs, RunPlan("demo", mode, schedule, [[0], [1]], 3, 0), Checking("demo", None)).run()
    >>> [event.kind for event in run.events[0]]
    ['start', 'step', 'step', 'step', 'start']
    """

    def __init__(self, envs: VectorEnv, plan: RunPlan, checking: Checking) -> None:
        self.envs, self.plan, self.checking = envs, plan, checking
        self.num_envs = envs.num_envs
        self.single_space = envs.single_observation_space
        self.tracker = BoundaryTracker(plan.mode, self.num_envs)
        self.result = Run(plan.label, [[] for _ in range(self.num_envs)])
        self.held: HeldResults[str] = HeldResults(checking.reuses_observations)
        self.taken = [0] * self.num_envs
        self.calls = 0

    def fail(
        self, prop: str, where: str, what: str, hint: str = ""
    ) -> ConformanceError:
        """The failure of ``prop`` at ``where``."""
        return fail(prop, self.checking.who, where, what, hint)

    def run(self) -> Run:
        """Make the run; raise :class:`ConformanceError` at the first failure."""
        plan, found = self.plan, mode_of(self.envs)
        if found is not plan.mode:
            raise self.fail(
                "keeps_the_autoreset_mode",
                plan.label,
                f"metadata['autoreset_mode'] is {found}, expected {plan.mode}",
                "A wrapper keeps the wrapped env's metadata['autoreset_mode'], "
                "unless it declares another output mode (@vecmode.supports(..., "
                "output=...)) and puts that one there.",
            )
        where = f"{plan.label}, call 0 (reset)"
        obs = as_numpy(self._call(where, self.envs.reset, seed=plan.seed)[0])
        self._observe(obs, where)
        self._started(obs, self.tracker.reset(None).starts)
        while min(self.taken) < plan.wanted:
            if self.calls >= 8 * plan.wanted + 16:
                what = (
                    f"after {self.calls + 1} calls some sub-envs made fewer than "
                    f"{plan.wanted} real transitions ({self.taken})"
                )
                raise self.fail("handles_every_call", plan.label, what)
            obs, mask = self._step()
            if mask.any():
                self._masked_reset(mask, obs)
        self._check_all_held()
        return self.result

    def real_transitions(
        self, obs: Any, terminations: Any, truncations: Any, infos: Any, where: str
    ) -> tuple[Boundary, dict[int, Any]]:
        """Which sub-envs made a real transition at this step, and the
        observation each moved to: the ended episode's final one where the mode
        puts it in the info (its layout checked), else the one returned."""
        b = self.tracker.step(terminations, truncations)
        finals = as_numpy(self._final_rows(infos, b.final_in_info, where))
        return b, {
            i: finals[i] if b.final_in_info[i] else space_row(self.single_space, obs, i)
            for i in np.flatnonzero(b.real).tolist()
        }

    def _step(self) -> tuple[Any, np.ndarray]:
        """One step, checked and read; the observations (a copy) and the
        sub-envs to reset with a mask."""
        self.calls += 1
        where = f"{self.plan.label}, call {self.calls} (step)"
        actions = np.stack(
            [
                np.asarray(q[t % len(q)])
                for q, t in zip(self.plan.queues, self.taken, strict=True)
            ]
        )
        given = actions.copy()
        obs, rewards, terms, truncs, infos = self._call(where, self.envs.step, actions)
        if self.checking.on("leaves_inputs_untouched") and not np.array_equal(
            given, actions
        ):
            raise self.fail(
                "leaves_inputs_untouched",
                f"{where}, field actions",
                f"step() wrote into the caller's actions: {show(given)} became "
                f"{show(actions)}",
                "A wrapper transforms a copy of the actions it is given (the caller "
                "keeps them, e.g. in a rollout buffer); never write into them.",
            )
        # what an array-converting wrapper returns (torch, jax) is read as NumPy
        obs, rewards, terms, truncs = as_numpy((obs, rewards, terms, truncs))
        self._observe(obs, where)
        self._check_step_arrays(
            where, rewards=rewards, terminations=terms, truncations=truncs
        )
        b, moved = self.real_transitions(obs, terms, truncs, infos, where)
        for i in np.flatnonzero(b.final_in_info).tolist():
            if not self.single_space.contains(moved[i]):
                raise self.fail(
                    "returns_well_formed_results",
                    f"{where}, sub-env {i}, field final_obs",
                    f"{show(moved[i])} is not in the wrapper's single_observation_space "
                    f"{self.single_space}",
                    "The final observations must be transformed like the returned ones.",
                )
        if self.checking.on("reset_step_stays_empty"):
            self._check_reset_steps(b.real, rewards, terms, truncs, where)
        picked = self._picked_infos(infos, b, where)
        cut = self._record(b, moved, picked, actions, (rewards, terms, truncs))
        self._started(obs, b.starts)
        return copy.deepcopy(obs), b.needs_reset | cut

    def _record(
        self,
        b: Boundary,
        moved: dict[int, Any],
        picked: list[Any],
        actions: np.ndarray,
        arrays: tuple[Any, Any, Any],
    ) -> np.ndarray:
        """Record this step's real transitions as events; the sub-envs whose
        episode the caller cuts here (it truncates them)."""
        rewards, terms, truncs = arrays
        cut = np.zeros(self.num_envs, dtype=np.bool_)
        for i, next_obs in moved.items():
            self.taken[i] += 1
            self.result.transitions += 1
            cut[i] = self.taken[i] in self.plan.schedule.cuts[i] and not b.ended[i]
            event = Event(
                "step",
                self.calls,
                copy.deepcopy(next_obs),
                actions[i].tolist(),
                float(rewards[i]),
                bool(terms[i]),
                bool(truncs[i]),
                picked[i],
            )
            self.result.events[i].append(
                replace(event, truncated=True, info=SKIP) if cut[i] else event
            )
        return cut

    def _picked_infos(self, infos: Any, b: Boundary, where: str) -> list[Any]:
        """What is compared of each sub-env's info at this step; fail where a
        real transition's info lacks the sub-env's own step count."""
        n, pick = self.num_envs, self.checking.compare_info
        picked = (
            [SKIP] * n
            if pick is None
            else transition_infos(infos, b.final_in_info, n, pick)
        )
        if not self.checking.final_infos:  # the base dropped the ended steps' infos
            picked = [
                SKIP if e else p for p, e in zip(picked, b.final_in_info, strict=True)
            ]
        if not self.checking.on("passes_env_infos_on"):
            return picked
        for i in np.flatnonzero(b.real).tolist():
            found = picked[i] if isinstance(picked[i], dict) else {}
            for name, value in found.items():
                if isinstance(value, str) and value == NO_STEP_INFO:
                    raise self.fail(
                        "passes_env_infos_on",
                        f"{where}, sub-env {i}, field info",
                        f"{name} is missing: {NOT_REACHED}",
                        _ENV_INFOS_HINT,
                    )
        return picked

    def _masked_reset(self, mask: np.ndarray, last: Any) -> None:
        """Reset the sub-envs of ``mask``; ``last``: the observations before."""
        self.calls += 1
        where = f"{self.plan.label}, call {self.calls} (reset with reset_mask={mask.tolist()})"
        given = {"reset_mask": mask.copy()}
        kept, array = copy.deepcopy(given), given["reset_mask"]
        obs = as_numpy(self._call(where, self.envs.reset, options=given)[0])
        if self.checking.on("leaves_inputs_untouched"):
            self._check_options(given, array, kept, where)
        self._observe(obs, where)
        if self.checking.on("masked_reset_keeps_the_others"):
            self._check_others_kept(mask, last, obs, where)
        self._started(obs, self.tracker.reset(mask).starts)

    def _check_others_kept(
        self, mask: np.ndarray, last: Any, obs: Any, where: str
    ) -> None:
        """Fail where a masked reset returns, for a sub-env it did not reset,
        other than the observation last returned for it."""
        space = self.single_space
        for i in np.flatnonzero(~mask).tolist():
            why = difference(space_row(space, last, i), space_row(space, obs, i))
            if why is not None:
                raise self.fail(
                    "masked_reset_keeps_the_others",
                    f"{where}, sub-env {i} (not reset), field obs",
                    f"{why}: here the masked reset's, there the call before's",
                    _OTHERS_KEPT_HINT,
                )

    def _call(
        self, where: str, method: Callable[..., Any], *args: Any, **kwargs: Any
    ) -> Any:
        """``method(*args, **kwargs)``, whose result is held; what it raises fails."""
        try:
            result = method(*args, **kwargs)
        except Exception as error:
            hint = PARTIAL_RESET_HINT if "options" in kwargs else ""
            what = f"raised {type(error).__name__}: {error}"
            raise self.fail("handles_every_call", where, what, hint) from error
        below = self.checking.below
        if below is not None and self.checking.on("no_writes_below"):
            written = below.check_call(where)
            if written is not None:
                raise self._wrote_below(written)
        if self.checking.on("results_kept"):
            found = self.held.keep(where, result)
            if found is not None:
                raise self._changed_later(*found, by=where)
        return result

    def _observe(self, obs: Any, where: str) -> None:
        if not self.envs.observation_space.contains(obs):
            what = (
                f"the observations {show(obs)} are not in the wrapper's "
                f"observation_space {self.envs.observation_space}"
            )
            raise self.fail("returns_well_formed_results", where, what)

    def _started(self, obs: Any, mask: np.ndarray) -> None:
        for i in np.flatnonzero(mask).tolist():
            row = copy.deepcopy(space_row(self.single_space, obs, i))
            self.result.events[i].append(Event("start", self.calls, row))

    def _final_rows(self, infos: Any, rows: np.ndarray, where: str) -> dict[int, Any]:
        """The final observations of ``rows``, checking SAME_STEP's layout (its
        mask marks exactly ``rows``)."""
        if isinstance(infos, list):  # DictInfoToList: one dict per sub-env
            finals = {i: final_of(info) for i, info in enumerate(infos)}
            for i, (found, _) in finals.items():
                if found != bool(rows[i]):
                    what = (
                        f"info has {'a' if found else 'no'} final observation, but "
                        f"the mode puts {'one' if rows[i] else 'none'} there"
                    )
                    raise self.fail(
                        "returns_well_formed_results", f"{where}, sub-env {i}", what
                    )
            return {i: final for i, (found, final) in finals.items() if found}
        # the final infos and their mask too, where they are there (an env or a
        # wrapper may drop the infos: the dense layout has none)
        complete = any(key in infos for key in (FINAL_INFO, f"_{FINAL_INFO}"))
        problem = final_layout_problem(infos, rows, complete=complete)
        if problem is not None:
            sub_env = "" if problem.sub_env is None else f", sub-env {problem.sub_env}"
            got = show(problem.got) if problem.present else "nothing"
            raise self.fail(
                "returns_well_formed_results",
                f"{where}, field {problem.field}{sub_env}",
                f"expected {problem.expected}, got {got}",
                "The wrapper must keep the final observations and their mask, as "
                "SAME_STEP puts them (transformed like the observations), marking "
                "exactly the sub-envs whose episode ended.",
            )
        present = final_observations(infos)
        return (
            {}
            if present is None
            else {int(i): present[1][i] for i in np.flatnonzero(rows)}
        )

    def _check_step_arrays(self, where: str, **arrays: Any) -> None:
        """Fail unless rewards and flags are arrays of ``num_envs`` numbers / bools."""
        n = self.num_envs
        for name, array in arrays.items():
            kinds = "fiub" if name == "rewards" else "b"
            array = np.asarray(array)
            if array.shape != (n,) or array.dtype.kind not in kinds:
                what = (
                    f"shape {array.shape} dtype {array.dtype}: expected shape ({n},) "
                    f"of {'numbers' if kinds != 'b' else 'bools'}"
                )
                raise self.fail(
                    "returns_well_formed_results", f"{where}, field {name}", what
                )

    def _check_reset_steps(
        self, real: np.ndarray, rewards: Any, terms: Any, truncs: Any, where: str
    ) -> None:
        """Fail where NEXT_STEP's reset step (no transition) has a reward or a flag."""
        for i in np.flatnonzero(~real).tolist():
            if rewards[i] != 0 or terms[i] or truncs[i]:
                what = (
                    f"NEXT_STEP's reset step (the call after the sub-env's episode "
                    f"ended) returned reward {rewards[i]}, terminated {bool(terms[i])}, "
                    f"truncated {bool(truncs[i])}: expected reward 0, terminated False, "
                    f"truncated False"
                )
                raise self.fail(
                    "reset_step_stays_empty",
                    f"{where}, sub-env {i}",
                    what,
                    _RESET_STEP_HINT,
                )

    def _check_options(
        self, given: dict[str, Any], array: Any, kept: dict[str, Any], where: str
    ) -> None:
        """Fail where ``reset`` wrote into the caller's options or its mask
        ``array``; ``kept`` is a copy of them made before."""
        if not np.array_equal(array, kept["reset_mask"]):
            what = (
                f"reset() wrote into the caller's reset_mask array: "
                f"{show(kept['reset_mask'])} became {show(array)}"
            )
            raise self.fail(
                "leaves_inputs_untouched",
                f"{where}, field options['reset_mask']",
                what,
                OPTIONS_HINT,
            )
        expected = dict(kept)
        if not self.checking.base_keeps_options and "reset_mask" not in given:
            del expected["reset_mask"]  # the base env popped it
        if where_different(expected, given) is not None:
            what = f"reset() changed the caller's options: {show(kept)} became {show(given)}"
            raise self.fail(
                "leaves_inputs_untouched", f"{where}, field options", what, OPTIONS_HINT
            )

    def _check_all_held(self) -> None:
        """Fail where a result kept, or one the env below returned, is no longer
        what was returned."""
        below = self.checking.below
        if below is not None and self.checking.on("no_writes_below"):
            written = below.check_all()
            if written is not None:
                raise self._wrote_below(written)
        found = self.held.first_changed() if self.checking.on("results_kept") else None
        if found is not None:
            raise self._changed_later(*found)

    def _changed_later(self, where: str, part: str, by: str | None) -> ConformanceError:
        later = "a later call" if by is None else f"a later call ({by})"
        what = f"what was returned here ({part}) was changed by {later}"
        return self.fail(
            "results_kept", f"{where}, field {part}", what, CHANGED_LATER_HINT
        )

    def _wrote_below(self, written: Written) -> ConformanceError:
        when = "in this call" if written.by is not None else "in a later call"
        what = (
            f"the wrapper wrote into what the env below returned to it "
            f"({written.path}): {show(written.returned)} became "
            f"{show(written.found)} {when}"
        )
        return self.fail(
            "no_writes_below",
            f"{written.where}, field {written.path}",
            what,
            WROTE_BELOW_HINT,
        )
