"""The event driver: one run of a wrapped env, each call checked on its own and
read into per-sub-env events."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from vecmode import _arrays, modes
from vecmode._numpy import true_indices
from vecmode.core import space_row
from vecmode.replay.compare import as_numpy, where_different
from vecmode.testing.wrapper import events, schedules
from vecmode.testing.wrapper.events import Event, fail, show
from vecmode.testing.wrapper.schedules import Schedule
from vecmode.testing.writes import RESULT_PARTS, HeldResults, WritesBelow
from vecmode.transitions import Reading, RealTransition, TransitionReader
from vecmode.wrappers.dict_info_to_list import infos_to_list

PARTIAL_RESET_HINT = (
    "Handle reset(options={'reset_mask': mask}) in every declared mode (DISABLED "
    "relies on it): clear only the masked sub-envs' state."
)
CHANGED_LATER_HINT = (
    "Return new arrays and a new info dict, not a buffer a later call writes into: "
    "the caller keeps what step() and reset() return."
)
WROTE_BELOW_HINT = (
    "Transform into a new array (np.clip(x, lo, hi), x * 2), never into the one "
    "the env below returned (x *= 2, x[i] = ..., out=x): it may keep it."
)
OPTIONS_HINT = (
    "Pass a copy down, options = dict(options), and never write into "
    "options['reset_mask']: the caller keeps them."
)
FINAL_LAYOUT_HINT = (
    "Keep the layout of the env below: Gymnasium's entries transformed into a new "
    "object array (vecmode.modes.with_final_observations), a dense batch as one."
)
LIBRARY_HINT = (
    "Compute in the batch's library (its arrays' methods, array_api_compat."
    "array_namespace(x)): np.asarray and NumPy's functions make NumPy arrays."
)


@dataclass(frozen=True)
class RunPlan:
    """One run: what it runs, who is checked and for what (``only``: the
    properties; None: all), and what the base env below does."""

    label: str
    mode: AutoresetMode
    schedule: Schedule
    queues: list[list[Any]]
    wanted: int
    seed: int
    who: str
    compare_info: Callable[[dict], Any] | None
    only: frozenset[str] | None = None
    #: Whether the base's ended steps' infos reach the wrapper.
    final_infos: bool = True
    #: The layout of the final observations below: ``"gymnasium"`` or ``"dense"``.
    final_layout: str = "gymnasium"
    base_keeps_options: bool = True
    #: The wrapper says ``copy = False``.
    reuses_observations: bool = False
    below: WritesBelow | None = None
    #: The array library the env returns (None: NumPy): actions and masks too.
    array_library: str | None = None
    #: The key each sub-env's reset info holds (None: reset infos not checked).
    reset_info_key: str | None = None

    def on(self, prop: str) -> bool:
        """Whether ``prop``'s per-call checks are made."""
        return self.only is None or prop in self.only


_SPACES = ("observation", "single_observation", "action", "single_action")
_INFOS_HINT = (
    "Pass the env's infos on from reset() and step() in every mode (SAME_STEP's "
    "ended step's in info['final_info']); to drop them on purpose: "
    "check_wrapper(..., env_infos=False) (vecmode conform --no-env-infos)."
)


class Driver:
    """Drives the wrapped ``envs`` through a :class:`RunPlan`, checking each call;
    sub-env ``i``'s ``k``-th real transition takes its queue's ``k``-th action."""

    def __init__(self, envs: VectorEnv, plan: RunPlan) -> None:
        self.envs, self.plan = envs, plan
        self.num_envs = envs.num_envs
        self.single_space = envs.single_observation_space
        # the spaces alone: the kit reads the mode it runs in, whatever the
        # wrapper declares (keeps_the_autoreset_mode checks that)
        spaces = SimpleNamespace(
            **{f"{k}_space": getattr(envs, f"{k}_space") for k in _SPACES}
        )
        self.reader = TransitionReader(plan.mode, self.num_envs, spaces, plan.who)
        self._ale_layout = plan.final_layout == "dense" and not plan.array_library
        self.result = events.Run(plan.label, [[] for _ in range(self.num_envs)])
        self.held: HeldResults[str] = HeldResults(plan.reuses_observations)
        self.taken = [0] * self.num_envs
        self.calls = 0
        self._in_turn = False  # (ended and cut sub-envs: reset in turn, or at once)
        library = plan.array_library
        self.xp = None if library is None else schedules.library_module(library)
        self.library = _arrays.declared_namespace(envs) or _arrays.name_of(self.xp)

    def ours(self, batch: np.ndarray) -> Any:
        """A NumPy batch (actions, a mask) in the env's library, sharing no memory
        with ``batch`` (what the kit compares it with after the call)."""
        return batch.copy() if self.xp is None else self.xp.asarray(batch.copy())

    def fail(
        self, prop: str, where: str, what: str, hint: str = ""
    ) -> events.ConformanceError:
        """The failure of ``prop`` at ``where``."""
        return fail(prop, self.plan.who, where, what, hint)

    def run(self) -> events.Run:
        """Make the run; raise a ``ConformanceError`` at the first failure."""
        plan, found = self.plan, modes.mode_of(self.envs)
        if found is not plan.mode:
            raise self.fail(
                "keeps_the_autoreset_mode",
                plan.label,
                f"metadata['autoreset_mode'] is {found}, expected {plan.mode}",
                "Keep the wrapped env's mode, or declare the one you put there "
                "(@vecmode.supports(..., output=...)).",
            )
        if plan.on("returns_well_formed_results"):
            self._check_spaces()
        self._reset(plan.seed)
        while min(self.taken) < plan.wanted:
            if self.calls >= 8 * plan.wanted + 16:
                what = (
                    f"after {self.calls + 1} calls some sub-envs made fewer than "
                    f"{plan.wanted} real transitions ({self.taken})"
                )
                raise self.fail("handles_every_call", plan.label, what)
            obs, ended, cut, everyone = self._step()
            if everyone:
                self.calls += 1
                self._reset(None)
                continue
            both = bool(ended.any() and cut.any())
            self._in_turn ^= both  # where both: in turn two resets in a row, or one
            for mask in (ended, cut) if both and self._in_turn else (ended | cut,):
                if mask.any():
                    obs = self._masked_reset(mask, obs)
        self._check_writes(None)
        below = plan.below.info_keys if plan.below else set()  # the env's keys
        added = self.result.info_keys - {*below, *modes.FINAL_KEYS}
        self.result.info_keys = {k for k in added if str(k)[:1] != "_"}  # (masks)
        return self.result

    def _reset(self, seed: int | None) -> None:
        """A full reset, checked and read."""
        where = f"{self.plan.label}, call {self.calls} (reset)"
        obs, infos = as_numpy(self._call(where, self.envs.reset, seed=seed))
        self._observe(obs, where)
        self._check_reset_infos(infos, np.ones(self.num_envs, np.bool_), where)
        self._started(self.reader.reset(obs))

    def _step(self) -> tuple[Any, np.ndarray, np.ndarray, bool]:
        """One step, checked and read; its observations, the sub-envs to reset
        (ended in DISABLED; cut by the schedule), whether to reset them all."""
        self.calls += 1
        where = f"{self.plan.label}, call {self.calls} (step)"
        queues = zip(self.plan.queues, self.taken, strict=True)
        actions = np.stack([np.asarray(q[t % len(q)]) for q, t in queues])
        given, actions = actions, self.ours(actions)
        result = self._call(where, self.envs.step, actions)
        if self.plan.on("leaves_inputs_untouched") and not np.array_equal(
            given, as_numpy(actions)
        ):
            raise self.fail(
                "leaves_inputs_untouched",
                f"{where}, field actions",
                f"step() wrote into the caller's actions: {show(given)} became "
                f"{show(as_numpy(actions))}",
                "Transform a copy of the actions; never write into them.",
            )
        # what an array-converting wrapper returns (torch, jax) is read as NumPy
        obs, rewards, terms, truncs, infos = as_numpy(result)
        self._observe(obs, where)
        self._check_step_arrays(
            where, rewards=rewards, terminations=terms, truncations=truncs
        )
        ale = self._ale_layout and isinstance(infos, dict)
        ale = ale and f"_{modes.FINAL_OBS}" not in infos
        read = infos  # ALE's layout (no masks) read as Gymnasium's: its ended rows
        if ale:
            read = modes.from_dense_finals(infos, np.logical_or(terms, truncs))
        reading = self.reader.step(actions, obs, rewards, terms, truncs, read)
        b = reading.boundary
        if ale:
            self._check_ale_layout(infos, b.final_in_info, where, obs)
        else:
            self._check_final_layout(infos, b.final_in_info, where, obs)
        found = reading.transitions()
        for t in found:
            if b.final_in_info[t.sub_env] and not self.single_space.contains(
                t.next_obs
            ):
                raise self.fail(
                    "returns_well_formed_results",
                    f"{where}, sub-env {t.sub_env}, field final_obs",
                    f"{show(t.next_obs)} is not in the wrapper's "
                    f"single_observation_space {self.single_space}",
                    "Transform the final observations like the returned ones.",
                )
        if self.plan.on("reset_step_stays_empty"):
            self._check_reset_steps(b.real, rewards, terms, truncs, infos, where)
        picked = self._picked_infos(reading, where)
        for t in found:
            self.taken[t.sub_env] += 1
        everyone = bool(found) and self._resets_everyone(b)
        cut = self._record(found, picked, everyone)
        self._started(reading)
        return copy.deepcopy(obs), b.needs_reset, cut, everyone

    def _resets_everyone(self, b: modes.Boundary) -> bool:
        """Whether every sub-env just reached one of the schedule's ``resets``
        (not SAME_STEP's ends: the env reset those already, in this step)."""
        at, resets = self.taken[0], self.plan.schedule.resets
        together = len(set(self.taken)) == 1
        return together and at in resets and not b.final_in_info.any()

    def _record(
        self, found: list[RealTransition], picked: list[Any], everyone: bool
    ) -> np.ndarray:
        """Record the real transitions; the sub-envs whose episode is cut here."""
        cut = np.zeros(self.num_envs, dtype=np.bool_)
        for t in found:
            i = t.sub_env
            self.result.transitions += 1
            ended = t.terminated or t.truncated
            cut[i] = (
                everyone or self.taken[i] in self.plan.schedule.cuts[i]
            ) and not ended
            event = Event(
                "step",
                self.calls,
                copy.deepcopy(t.next_obs),
                np.asarray(t.action).tolist(),
                float(t.reward),
                t.terminated,
                t.truncated or bool(cut[i]),
                events.SKIP if cut[i] else picked[i],
                bool(cut[i]),
            )
            self.result.events[i].append(event)
        return cut

    def _picked_infos(self, reading: Reading, where: str) -> list[Any]:
        """What is compared of each sub-env's info, each step count checked."""
        pick, b, infos = self.plan.compare_info, reading.boundary, reading.infos
        rows = b.final_in_info
        picked = self._pick(pick, infos, rows)
        if not self.plan.final_infos:  # the base dropped the ended steps' infos
            picked = [
                events.SKIP if e else p for p, e in zip(picked, rows, strict=True)
            ]
        if not self.plan.on("passes_env_infos_on"):
            return picked
        for i in np.flatnonzero(b.real).tolist():
            found = picked[i] if isinstance(picked[i], dict) else {}
            for name, value in found.items():
                if isinstance(value, str) and value == events.NO_STEP_INFO:
                    at, what = f"{where}, sub-env {i}, field info", f"{name} is missing"
                    what += f": {events.NOT_REACHED}"
                    raise self.fail("passes_env_infos_on", at, what, _INFOS_HINT)
        return picked

    def _check_reset_infos(self, infos: Any, rows: np.ndarray, where: str) -> None:
        """Reset infos in Gymnasium's layout, where each sub-env of ``rows`` (those
        reset) finds its own reset info's key."""
        try:
            views = (
                infos if isinstance(infos, list) else infos_to_list(infos, len(rows))
            )
        except (ValueError, AttributeError) as error:
            if not self.plan.on("returns_well_formed_results"):
                return
            what = f"reset() returned infos not in Gymnasium's layout: {error}"
            raise self.fail("returns_well_formed_results", where, what) from None
        key = self.plan.reset_info_key
        if key is None or not self.plan.on("passes_env_infos_on"):
            return
        for i in np.flatnonzero(rows).tolist():
            if i >= len(views) or not isinstance(views[i], dict) or key not in views[i]:
                at = f"{where}, sub-env {i}, field info"
                what = f"the sub-env's reset info[{key!r}] is missing: {events.NOT_REACHED}"
                raise self.fail("passes_env_infos_on", at, what, _INFOS_HINT)

    def _pick(self, pick: Callable[[dict], Any] | None, infos: Any, rows: Any) -> Any:
        """What ``pick`` takes of each sub-env's info (over its final info where
        ``rows`` says), the keys of the infos noted."""
        listed = isinstance(infos, list)
        if pick is None:
            self.result.info_keys.update(*(infos if listed else [infos]))
            return [events.SKIP] * self.num_envs
        picked = []
        for i, view in enumerate(infos if listed else infos_to_list(infos, len(rows))):
            view, final = modes.without_finals(view)
            view = {**view, **final} if rows[i] and isinstance(final, dict) else view
            picked.append(pick(view))
            self._note_keys(view, pick, picked[i])
        return picked

    def _note_keys(self, info: dict, pick: Callable[[dict], Any], picked: Any) -> None:
        """Note ``info``'s keys, and those ``pick`` reads: without them, it differs."""
        for key in info.keys() - self.result.read:
            self.result.info_keys.add(key)
            try:
                rest = pick({k: v for k, v in info.items() if k != key})
            except Exception:  # (it needs the key)
                rest = events.NOT_REACHED
            if events.difference(picked, rest) is not None:
                self.result.read.add(key)

    def _masked_reset(self, mask: np.ndarray, last: Any) -> Any:
        """Reset the sub-envs of ``mask``; ``last``: the observations before;
        the observations after."""
        self.calls += 1
        where = f"{self.plan.label}, call {self.calls} "
        where += f"(reset with reset_mask={mask.tolist()})"
        given = {"reset_mask": self.ours(mask)}
        kept, array = copy.deepcopy(given), given["reset_mask"]
        obs, infos = as_numpy(self._call(where, self.envs.reset, options=given))
        self._check_reset_infos(infos, mask, where)
        if self.plan.on("leaves_inputs_untouched"):
            self._check_options(given, array, kept, where)
        self._observe(obs, where)
        if self.plan.on("masked_reset_keeps_the_others"):
            for i in np.flatnonzero(~mask).tolist():
                row = space_row(self.single_space, obs, i)
                why = events.difference(space_row(self.single_space, last, i), row)
                if why is not None:
                    raise self.fail(
                        "masked_reset_keeps_the_others",
                        f"{where}, sub-env {i} (not reset), field obs",
                        f"{why}: here the masked reset's, there the call before's",
                        "Transform every row a masked reset returns, giving the "
                        "sub-envs it did not reset the values the call before gave.",
                    )
        self._started(self.reader.reset(obs, None, mask))
        return copy.deepcopy(obs)

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
        self._check_writes(where, result)
        self._check_library(where, result)
        return result

    def _check_spaces(self) -> None:
        """Fail where a batched space is not its single space batched."""
        for kind in ("observation", "action"):
            single = getattr(self.envs, f"single_{kind}_space")
            batched = batch_space(single, self.num_envs)
            if batched != batch_space(single, self.num_envs):
                continue  # (a space with no __eq__: it cannot be told)
            if getattr(self.envs, f"{kind}_space") != batched:
                raise self.fail(
                    "returns_well_formed_results",
                    f"{self.plan.label}, field {kind}_space",
                    f"{getattr(self.envs, f'{kind}_space')} is not single_{kind}_"
                    f"space {single} batched ({batched})",
                    f"Set both spaces: single_{kind}_space, and {kind}_space = "
                    f"gymnasium.vector.utils.batch_space(single_{kind}_space, "
                    f"num_envs) (vecmode.wrappers.base.set_spaces(self, {kind!r}, "
                    f"None, single_space=...) does).",
                )

    def _observe(self, obs: Any, where: str) -> None:
        space = self.envs.observation_space
        if not space.contains(obs):
            kind = f"{getattr(obs, 'dtype', type(obs).__name__)}, shape"
            what = (
                f"the observations {show(obs)} ({kind} {np.shape(obs)}) are not in "
                f"the wrapper's observation_space {space}"
            )
            hint = (
                "Return observations of the space's dtype and shape, within its "
                "bounds, or set observation_space (and single_observation_space) "
                "to what it returns."
            )
            raise self.fail("returns_well_formed_results", where, what, hint)

    def _started(self, reading: Reading) -> None:
        for start in reading.starts():
            event = Event("start", self.calls, copy.deepcopy(start.obs))
            self.result.events[start.sub_env].append(event)

    def _check_final_layout(self, infos: Any, rows: Any, where: str, obs: Any) -> None:
        """Fail where the final observations are not where SAME_STEP puts them."""
        prop = "returns_well_formed_results"
        if isinstance(infos, list):  # DictInfoToList: one dict per sub-env
            for i, info in enumerate(infos):
                found = modes.final_of(info)[0]
                if found != bool(rows[i]):
                    what = (
                        f"info has {'a' if found else 'no'} final observation, but "
                        f"the mode puts {'one' if rows[i] else 'none'} there"
                    )
                    raise self.fail(prop, f"{where}, sub-env {i}", what)
            return
        # the final infos too where they are there; in the dense layout of
        # array batches, the masks and the batch only
        finals = modes.final_observations(infos)
        dense = finals is not None and getattr(finals[1], "dtype", object) != np.dtype(
            object
        )
        complete = not dense and (
            modes.FINAL_INFO in infos or f"_{modes.FINAL_INFO}" in infos
        )
        problem = modes.final_layout_problem(infos, rows, complete=complete)
        if problem is not None:
            sub_env = "" if problem.sub_env is None else f", sub-env {problem.sub_env}"
            got = show(problem.got) if problem.present else "nothing"
            raise self.fail(
                prop,
                f"{where}, field {problem.field}{sub_env}",
                f"expected {problem.expected}, got {got}",
                "Keep SAME_STEP's final observations (transformed like the "
                "observations) and their mask, marking exactly the sub-envs whose "
                "episode ended.",
            )
        if finals is not None:
            self._check_final_obs(finals[1], rows, where, obs)

    def _check_ale_layout(self, infos: Any, rows: Any, where: str, obs: Any) -> None:
        """ALE's layout: one batch where an episode ended (stale rows), no masks."""
        if bool(rows.any()) != (modes.FINAL_OBS in infos):
            at = f"{where}, field info['final_obs']"
            what = "the batch of final observations" if rows.any() else "no such key"
            got = "nothing" if rows.any() else _described(infos[modes.FINAL_OBS])
            what = f"expected {what}, got {got}"
            raise self.fail("returns_well_formed_results", at, what, FINAL_LAYOUT_HINT)
        if modes.FINAL_OBS in infos:
            self._check_final_obs(infos[modes.FINAL_OBS], rows, where, obs)

    def _check_final_obs(self, final: Any, rows: Any, where: str, obs: Any) -> None:
        """Fail where ``info["final_obs"]`` leaves the layout of the env below:
        Gymnasium's object array, None where no episode ended; or one batch."""
        n, sub_env = self.num_envs, None
        if self.plan.final_layout == "gymnasium":
            layout = (
                f"Gymnasium's layout, the env below's: a NumPy object array of shape "
                f"({n},), None where info['_final_obs'] is False"
            )
            wrong = not (type(final) is np.ndarray and final.shape == (n,))
            wrong = wrong or final.dtype != object
            rest = [] if wrong else true_indices(~rows)
            sub_env = next((i for i in rest if final[i] is not None), None)
        else:
            layout = (
                f"the dense layout, the env below's: a batch like {_described(obs)}"
            )
            wrong = _shapes(final) != _shapes(obs)
        if wrong or sub_env is not None:
            at = f"{where}, field info['final_obs']"
            at += "" if sub_env is None else f", sub-env {sub_env}"
            got = _described(final) if sub_env is None else show(final[sub_env])
            what = f"expected {layout if sub_env is None else f'None ({layout})'}"
            what += f"; got {got}"
            prop = "returns_well_formed_results"
            raise self.fail(prop, at, what, FINAL_LAYOUT_HINT)

    def _check_library(self, where: str, result: Any) -> None:
        """Fail where a result leaves the library of array batches (torch, JAX)."""
        if self.xp is None or not isinstance(result, tuple):
            return
        parts = dict(zip(RESULT_PARTS.get(len(result), ()), result, strict=False))
        infos = parts.pop("infos", None)
        if isinstance(infos, dict) and modes.FINAL_OBS in infos:
            parts["info['final_obs']"] = infos[modes.FINAL_OBS]
        for name, value in parts.items():
            found = _arrays.name_of(_arrays.namespace(value))
            entries = isinstance(value, np.ndarray) and value.dtype == object
            if found != self.library and not entries:
                what = (
                    f"{found} {name} over {self.library} batches, a result leaving "
                    f"the batch's library: expected {self.library} arrays "
                    f"(metadata['array_namespace'])"
                )
                at = f"{where}, field {name}"
                raise self.fail("returns_well_formed_results", at, what, LIBRARY_HINT)

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
        self, real: Any, rewards: Any, terms: Any, truncs: Any, infos: Any, where: str
    ) -> None:
        """Fail where NEXT_STEP's reset step (no transition) has a reward, a flag
        or episode statistics."""
        for i in np.flatnonzero(~real).tolist():
            if _reports_episode(infos, i):
                raise self.fail(
                    "reset_step_stays_empty",
                    f"{where}, sub-env {i}, field info['episode']",
                    "NEXT_STEP's reset step reports an episode, but none ended there",
                    "Report an episode at its last real transition only, never on "
                    "NEXT_STEP's reset step (vecmode.modes.BoundaryTracker tells "
                    "which rows those are).",
                )
            if rewards[i] != 0 or terms[i] or truncs[i]:
                what = (
                    f"NEXT_STEP's reset step returned reward {rewards[i]}, "
                    f"terminated {bool(terms[i])}, truncated {bool(truncs[i])}: "
                    f"expected reward 0 and both flags False"
                )
                raise self.fail(
                    "reset_step_stays_empty",
                    f"{where}, sub-env {i}",
                    what,
                    "Keep NEXT_STEP's reset step empty (reward 0, flags False): "
                    "vecmode.wrappers.RewardWrapper leaves those rows alone, and "
                    "vecmode.modes.BoundaryTracker tells which they are.",
                )

    def _check_options(
        self, given: dict[str, Any], array: Any, kept: dict[str, Any], where: str
    ) -> None:
        """Fail where ``reset`` changed the caller's options (``kept``: a copy)."""
        if not np.array_equal(as_numpy(array), as_numpy(kept["reset_mask"])):
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
        if not self.plan.base_keeps_options and "reset_mask" not in given:
            del expected["reset_mask"]  # the base env popped it
        if where_different(as_numpy(expected), as_numpy(given)) is not None:
            what = f"reset() changed the caller's options: {show(kept)} became "
            what += show(given)
            raise self.fail(
                "leaves_inputs_untouched", f"{where}, field options", what, OPTIONS_HINT
            )

    def _check_writes(self, where: str | None, result: Any = None) -> None:
        """Fail on writes below, or on results changed later (``where`` None: all)."""
        below, on = self.plan.below, self.plan.on
        if below is not None and on("no_writes_below"):
            written = below.check_all() if where is None else below.check_call(where)
            if written is not None:
                when = "in this call" if written.by is not None else "in a later call"
                what = (
                    f"the wrapper wrote into what the env below returned to it "
                    f"({written.path}): {show(written.returned)} became "
                    f"{show(written.found)} {when}"
                )
                at = f"{written.where}, field {written.path}"
                raise self.fail("no_writes_below", at, what, WROTE_BELOW_HINT)
        if not on("results_kept"):
            return
        if where is None:
            found = self.held.first_changed()
        else:
            kept = self.held.keep(where, result)
            found = None if kept is None else (*kept, where)
        if found is not None:
            at, part, by = found
            later = "a later call" if by is None else f"a later call ({by})"
            what = f"what was returned here ({part}) was changed by {later}"
            at = f"{at}, field {part}"
            raise self.fail("results_kept", at, what, CHANGED_LATER_HINT)


def _reports_episode(infos: Any, i: int) -> bool:
    """Whether sub-env ``i``'s info has episode statistics (``info["episode"]``
    with ``"r"`` and ``"l"``, which ``episode_statistics`` reads)."""
    listed = isinstance(infos, list)
    info = infos[i] if listed else infos
    episode, mask = info.get("episode"), info.get("_episode")
    stats = isinstance(episode, dict) and "r" in episode and "l" in episode
    return stats and (listed or mask is None or bool(mask[i]))


def _shapes(batch: Any) -> Any:
    """The shapes of a batch's arrays (of a dict or tuple of them: theirs)."""
    if isinstance(batch, (dict, tuple)):
        items = batch.items() if isinstance(batch, dict) else enumerate(batch)
        return {key: _shapes(value) for key, value in items}
    return np.shape(batch) if isinstance(batch, np.ndarray) else type(batch).__name__


def _described(batch: Any) -> str:
    """A batch's type, dtype and shape, for messages."""
    if isinstance(batch, np.ndarray):
        return f"a NumPy {batch.dtype} array of shape {batch.shape}"
    return f"a {type(batch).__name__} of shapes {_shapes(batch)}"
