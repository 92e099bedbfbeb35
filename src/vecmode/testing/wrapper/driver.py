"""The event driver: one run of a wrapped env, checked call by call and read
into per-sub-env events (:mod:`vecmode.testing.wrapper.events`).

The run steps the wrapper with each sub-env's queue of actions (sub-env ``i``'s
``k``-th real transition takes the ``k``-th action of its queue) until every
sub-env made the transitions wanted, and cuts episodes with masked resets where
the schedule says. :meth:`Driver.real_transitions` reads each step by the mode's
rules (:class:`vecmode.modes.BoundaryTracker`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv

from vecmode.core import space_row
from vecmode.modes import Boundary, BoundaryTracker, mode_of
from vecmode.replay.compare import as_numpy
from vecmode.testing.wrapper.calls import (
    Options,
    check_actions_untouched,
    check_env_info,
    check_others_kept,
    check_reset_steps,
    check_step_arrays,
    final_rows,
)
from vecmode.testing.wrapper.events import (
    SKIP,
    ConformanceError,
    Event,
    Run,
    fail,
    show,
    transition_infos,
)
from vecmode.testing.wrapper.schedules import Schedule
from vecmode.testing.writes import HeldResults, WritesBelow, Written

#: What a wrapper that fails a masked reset is told.
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


@dataclass(frozen=True)
class RunPlan:
    """What one run does.

    Attributes:
        label: names the run in messages.
        mode: the mode the wrapper reports (its output mode).
        schedule: the sub-envs' episodes, and where the caller cuts them.
        queues: per sub-env, the actions of its real transitions (repeated).
        wanted: the real transitions each sub-env makes.
        seed: the reset seed.
    """

    label: str
    mode: AutoresetMode
    schedule: Schedule
    queues: list[list[Any]]
    wanted: int
    seed: int


@dataclass(frozen=True)
class Checking:
    """Who is checked, and what.

    Attributes:
        who: the wrapper's name.
        compare_info: what of a transition's info is compared (None: nothing).
        only: the properties whose per-call checks are made (None: all).
        final_infos: the base env's ended steps' infos reach the wrapper.
        base_keeps_options: the base env leaves the caller's options alone.
        reuses_observations: the wrapper says ``copy = False``.
        below: what the env below returned to the wrapper.
    """

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
    """Drives one wrapped env through a :class:`RunPlan`, checking each call.

    Args:
        envs: the wrapped env.
        plan: what the run does.
        checking: who is checked, and what.

    >>> from vecmode.testing.wrapper.schedules import base_env, schedules
    >>> kinds = {"num_envs": 2, "obs_type": "box"}
    >>> schedule = schedules(2, 3)[0]
    >>> envs = base_env("vecmode.SyncVectorEnv", AutoresetMode.SAME_STEP, kinds, schedule)
    >>> plan = RunPlan("demo", AutoresetMode.SAME_STEP, schedule, [[0], [1]], 3, 0)
    >>> run = Driver(envs, plan, Checking("demo", None)).run()
    >>> [event.kind for event in run.events[0]]
    ['start', 'step', 'step', 'step', 'start']
    """

    def __init__(self, envs: VectorEnv, plan: RunPlan, checking: Checking) -> None:
        self.envs = envs
        self.plan = plan
        self.checking = checking
        self.who = checking.who
        self.num_envs = n = envs.num_envs
        self.single_space = envs.single_observation_space
        self.tracker = BoundaryTracker(plan.mode, n)
        self.result = Run(plan.label, [[] for _ in range(n)])
        self.held: HeldResults[str] = HeldResults(checking.reuses_observations)
        self.taken = [0] * n
        self.calls = 0

    def run(self) -> Run:
        """Make the run; raise :class:`ConformanceError` at the first failure."""
        plan = self.plan
        found = mode_of(self.envs)
        if found is not plan.mode:
            raise fail(
                "keeps_the_autoreset_mode",
                self.who,
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
            if self.calls + 1 > 8 * plan.wanted + 16:
                raise fail(
                    "handles_every_call",
                    self.who,
                    plan.label,
                    f"after {self.calls + 1} calls some sub-envs made fewer than "
                    f"{plan.wanted} real transitions ({self.taken})",
                )
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
        finals = as_numpy(final_rows(infos, b.final_in_info, where, self.who))
        moved = {
            i: finals[i] if b.final_in_info[i] else space_row(self.single_space, obs, i)
            for i in np.flatnonzero(b.real).tolist()
        }
        return b, moved

    def _step(self) -> tuple[Any, np.ndarray]:
        """One step: its checks and events; the observations (a copy) and the
        sub-envs to reset with a mask."""
        self.calls += 1
        where = f"{self.plan.label}, call {self.calls} (step)"
        queues = self.plan.queues
        actions = np.stack(
            [np.asarray(q[t % len(q)]) for q, t in zip(queues, self.taken, strict=True)]
        )
        given = actions.copy()
        obs, rewards, terms, truncs, infos = self._call(where, self.envs.step, actions)
        if self.checking.on("leaves_inputs_untouched"):
            check_actions_untouched(given, actions, where, self.who)
        # what an array-converting wrapper returns (torch, jax) is read as NumPy
        obs, rewards, terms, truncs = as_numpy((obs, rewards, terms, truncs))
        self._observe(obs, where)
        check_step_arrays(self.num_envs, rewards, terms, truncs, where, self.who)
        b, moved = self.real_transitions(obs, terms, truncs, infos, where)
        for i in np.flatnonzero(b.final_in_info).tolist():
            if not self.single_space.contains(moved[i]):
                raise fail(
                    "returns_well_formed_results",
                    self.who,
                    f"{where}, sub-env {i}, field final_obs",
                    f"{show(moved[i])} is not in the wrapper's "
                    f"single_observation_space {self.single_space}",
                    "The final observations must be transformed like the returned "
                    "ones.",
                )
        if self.checking.on("reset_step_stays_empty"):
            check_reset_steps(b.real, rewards, terms, truncs, where, self.who)
        picked = self._picked_infos(infos, b, where)
        cut = np.zeros(self.num_envs, dtype=np.bool_)
        for i, next_obs in moved.items():
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
            self.taken[i] += 1
            self.result.transitions += 1
            cut[i] = self.taken[i] in self.plan.schedule.cuts[i] and not b.ended[i]
            if cut[i]:  # the caller truncates the episode here
                event = replace(event, truncated=True, info=SKIP)
            self.result.events[i].append(event)
        self._started(obs, b.starts)
        return copy.deepcopy(obs), b.needs_reset | cut

    def _picked_infos(self, infos: Any, b: Boundary, where: str) -> list[Any]:
        """What is compared of each sub-env's info at this step."""
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
        if self.checking.on("passes_env_infos_on"):
            check_env_info(picked, b.real, where, self.who)
        return picked

    def _masked_reset(self, mask: np.ndarray, last: Any) -> None:
        """Reset the sub-envs of ``mask``; ``last``: the observations before."""
        self.calls += 1
        where = (
            f"{self.plan.label}, call {self.calls} (reset with "
            f"reset_mask={mask.tolist()})"
        )
        options = Options(mask, self.checking.base_keeps_options)
        obs = as_numpy(self._call(where, self.envs.reset, options=options.given)[0])
        if self.checking.on("leaves_inputs_untouched"):
            options.check(where, self.who)
        self._observe(obs, where)
        if self.checking.on("masked_reset_keeps_the_others"):
            check_others_kept(self.single_space, last, obs, mask, where, self.who)
        self._started(obs, self.tracker.reset(mask).starts)

    def _call(
        self, where: str, method: Callable[..., Any], *args: Any, **kwargs: Any
    ) -> Any:
        """``method(*args, **kwargs)``, whose result is held; what it raises fails."""
        try:
            result = method(*args, **kwargs)
        except Exception as error:
            masked = "reset_mask" in (kwargs.get("options") or {})
            raise fail(
                "handles_every_call",
                self.who,
                where,
                f"raised {type(error).__name__}: {error}",
                PARTIAL_RESET_HINT if masked else "",
            ) from error
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
            raise fail(
                "returns_well_formed_results",
                self.who,
                where,
                f"the observations {show(obs)} are not in the wrapper's "
                f"observation_space {self.envs.observation_space}",
            )

    def _started(self, obs: Any, mask: np.ndarray) -> None:
        for i in np.flatnonzero(mask).tolist():
            row = copy.deepcopy(space_row(self.single_space, obs, i))
            self.result.events[i].append(Event("start", self.calls, row))

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
        return fail(
            "results_kept",
            self.who,
            f"{where}, field {part}",
            f"what was returned here ({part}) was changed by {later}",
            CHANGED_LATER_HINT,
        )

    def _wrote_below(self, written: Written) -> ConformanceError:
        when = "in this call" if written.by is not None else "in a later call"
        return fail(
            "no_writes_below",
            self.who,
            f"{written.where}, field {written.path}",
            f"the wrapper wrote into what the env below returned to it "
            f"({written.path}): {show(written.returned)} became "
            f"{show(written.found)} {when}",
            WROTE_BELOW_HINT,
        )
