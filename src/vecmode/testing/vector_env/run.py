"""The checked run of :func:`~vecmode.testing.check_vector_env`, driven as
training code in the declared mode would drive it, and its replays."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium.spaces import Discrete
from gymnasium.vector import VectorEnv

from vecmode import _arrays, modes
from vecmode.env_classes import layers, semantics_of, vector_env_declaration
from vecmode.modes import AutoresetMode, Boundary, caller_resets
from vecmode.replay import predictions
from vecmode.replay.compare import arrays_in
from vecmode.replay.predictions import Walker
from vecmode.replay.record import Call, Instances, Recorder
from vecmode.testing.writes import HeldResults

#: The kinds of masked resets the checked run makes.
AFTER_END, MID_EPISODE, BY_CALLER = "after an end", "mid-episode", "by the caller"


@dataclass
class Plan:
    """What the checked run did that its replays must know."""

    ignored: dict[int, np.ndarray] = dataclasses.field(default_factory=dict)
    reseeded: int | None = None
    pending: np.ndarray | None = None
    cleared: tuple[int, np.ndarray] | None = None
    mid_episode: tuple[int, int] | None = None

    def change(self, call: Call) -> np.ndarray | None:
        """The sub-envs whose action the replay changes at ``call``."""
        if self.reseeded is not None and call.index == self.reseeded + 1:
            return self.pending
        return self.ignored.get(call.index)

    def masked(self, index: int, mask: np.ndarray, pending: Any, kind: str) -> None:
        """Note the masked reset at call ``index``."""
        if kind == MID_EPISODE and self.mid_episode is None:
            self.mid_episode = (index, int(np.argmax(mask)))
        if kind == AFTER_END and pending.any() and self.cleared is None:
            self.cleared = (index + 1, pending)


class MaskedResets:
    """Which sub-envs the checked run resets with a mask after a step: where the
    caller resets, the ended ones; elsewhere, once after an episode end (as
    ``optional``, the declaration, allows); then once, one mid-episode."""

    def __init__(self, mode: AutoresetMode, num_envs: int, optional: str) -> None:
        self.by_caller = caller_resets(mode)
        self.ends = 0
        makes = num_envs >= 2 and optional in ("clears", "keeps-pending")
        self.after_end_done = self.by_caller or not makes
        self.mid_episode_done = num_envs < 2 or not (self.by_caller or makes)

    def after(self, b: Boundary, awaiting: np.ndarray) -> list[tuple[np.ndarray, str]]:
        """The masks (and kinds) to reset in turn after a step of boundary ``b``."""
        self.ends += bool(b.ended.any())
        masks = []
        if self.by_caller and awaiting.any():  # (a mid-episode one may follow)
            masks.append((awaiting.copy(), BY_CALLER))
        elif not self.after_end_done and b.ended.any() and self.ends >= 2:
            self.after_end_done = True
            return [(_strict_subset(b.ended), AFTER_END)]
        running = ~(b.starts | b.ended | awaiting)
        if self.after_end_done and not self.mid_episode_done and running.any():
            self.mid_episode_done = True
            masks.append((_strict_subset(running, first=True), MID_EPISODE))
        return masks


def _strict_subset(mask: np.ndarray, *, first: bool = False) -> np.ndarray:
    """``mask``, or its first True alone where it is all True (or ``first``)."""
    if mask.all() or first:
        out = np.zeros(mask.shape, dtype=np.bool_)
        out[int(np.argmax(mask))] = True
        return out
    return np.array(mask, dtype=np.bool_)


class CheckedRun:
    """The checked run of a new instance of ``factory``, and its replays."""

    def __init__(self, factory: Callable[[], VectorEnv], steps: int, seed: int) -> None:
        self.factory, self.seed = factory, seed
        self.results: HeldResults[Call] = HeldResults()
        #: per call, the sub-envs whose final observation shares memory
        self.aliased: dict[int, list[int]] = {}
        #: per call, its first batch not in the declared library: (field, library)
        self.libraries: dict[int, tuple[str, str]] = {}
        with Instances(factory, "check_vector_env") as instances:
            env = instances.new()
            self.name, self.mode = repr(env), _declared_mode(env)
            #: as the factory built it (under a layer it is read through)
            self.built = env.__dict__.get("env", env) if instances.read_through else env
            self.results.reuses_observations = any(
                getattr(layer, "copy", None) is False for layer in layers(self.built)
            )
            self.env = env
            self.first = Recorder(env, seed, self._inspect)
            self.optional = _optional_masked_resets(self.built, self.mode)
            self.masks = MaskedResets(self.mode, env.num_envs, self.optional)
            self.plan = self._drive(steps, seed)
            instances.close(env)
            self._replay(instances, seed)

    def _inspect(self, call: Call, result: Any) -> None:
        """Sees each result before the recorder copies it into ``call.raw``."""
        self.aliased[call.index] = _final_obs_sharing_memory(result)
        if found := _foreign_batch(self.env, result):
            self.libraries[call.index] = found
        self.results.keep(call, result, lambda: call.raw)

    def _drive(self, steps: int, seed: int) -> Plan:
        """The checked run's calls (see :class:`MaskedResets`); what replays need."""
        recorder, mode, plan = self.first, self.mode, Plan()
        walker = Walker(mode, recorder.num_envs)
        tracker = walker.tracker
        masks = self.masks
        if walker.see(recorder.reset(seed)).call.error is not None:
            return plan

        def step() -> Boundary | None:
            view = walker.see(recorder.step(recorder.sample()))
            b = view.boundary
            if b is not None and not b.real.all():
                plan.ignored[view.call.index] = ~b.real
            return b

        for _ in range(steps):
            b = step()
            if b is None:
                return plan
            for mask, kind in masks.after(b, tracker.awaiting_reset):
                pending = mask & tracker.awaiting_reset & (self.optional == "clears")
                reset = walker.see(recorder.reset_mask(mask)).call
                if reset.error is not None:
                    return plan
                plan.masked(reset.index, mask, pending, kind)
        for _ in range(steps if modes.resets_on_next_step(mode) else 0):
            if tracker.awaiting_reset.any():
                pending = tracker.awaiting_reset.copy()
                if recorder.reset(seed + 1).error is None:
                    plan.reseeded, plan.pending = recorder.calls[-1].index, pending
                    recorder.step(recorder.sample())
                return plan
            if step() is None:
                return plan
        return plan

    def ignores_action(self, index: int, i: int) -> bool:
        """Whether sub-env ``i``'s step at call ``index`` gives the same result
        with each other action of a Discrete space of up to 32: a step that only
        looks like an autoreset step (Pong's NOOP and FIRE give the same frames)
        is told apart by the others."""
        *before, call = self.first.calls[: index + 1]
        space, actions = self.env.single_action_space, list(call.actions or ())
        if not isinstance(space, Discrete) or space.n > 32:
            return True  # (the replay's one other action decided)
        with Instances(self.factory, "check_vector_env") as instances:
            for other in range(int(space.start), int(space.start + space.n)):
                if other == actions[i]:
                    continue
                changed = dataclasses.replace(call, actions=actions.copy())
                changed.actions[i] = other  # type: ignore[index]
                replay = instances.replay(self.seed, [*before, changed])
                if len(replay) <= index:  # an earlier call raised: no answer
                    continue
                got = replay[index]  # (raising for this action: not ignored)
                if got.error is not None or predictions.differs_at(call, got, i):
                    return False
        return True

    @property
    def steps(self) -> int:
        """The steps the run made (NextStep's reset steps count)."""
        return sum(call.kind == "step" for call in self.first.calls)

    @property
    def unmade(self) -> list[str]:
        """The kinds of masked resets the run was to make and check, and did not
        (a mid-episode one is checked at its sub-env's next episode end)."""
        masks, mid = self.masks, self.plan.mid_episode
        checked = masks.mid_episode_done and (mid is None or bool(self.unmasked))
        made = (masks.after_end_done, AFTER_END), (checked, MID_EPISODE)
        return [kind for done, kind in made if not done]

    def _replay(self, instances: Instances, seed: int) -> None:
        """Replay the run on other instances (``differences`` reads them)."""
        calls, plan = self.first.calls, self.plan
        self.second = instances.replay(seed, calls, plan.change)
        self.fresh: list[Call] = []
        self.cleared: list[Call] = []
        self.unmasked: list[Call] = []
        if plan.reseeded is not None:
            reseed = Call(0, "reset", seed=seed + 1)
            self.fresh = instances.replay(seed, [reseed, calls[-1]])
        if plan.cleared is not None and plan.cleared[0] < len(calls):
            index, which = plan.cleared
            if calls[index].kind == "step":
                self.cleared = instances.replay(
                    seed,
                    calls[: index + 1],
                    lambda call: which if call.index == index else None,
                )
        kept = _unmasked(calls, plan.mid_episode)
        if kept:
            self.unmasked = instances.replay(seed, kept)


def _unmasked(calls: list[Call], masked: tuple[int, int] | None) -> list[Call]:
    """The calls without the masked reset ``masked``, up to its sub-env's end."""
    if masked is None:
        return []
    index, i = masked
    for call in calls[index + 1 :]:
        if call.kind == "step" and call.ended.size and call.ended[i]:
            return [other for other in calls[: call.index + 1] if other.index != index]
    return []


def _declared_mode(env: VectorEnv) -> AutoresetMode:
    """The mode ``env`` declares (``AssertionError`` if none, or not a mode)."""
    try:
        mode = modes.mode_of(env)
    except ValueError as exc:
        raise AssertionError(str(exc)) from None
    if mode is None:
        raise AssertionError(
            f"{env!r} declares no metadata['autoreset_mode']: set it to the mode "
            f"the env implements (vecmode.probe_mode(factory) finds it)."
        )
    return mode


def _optional_masked_resets(env: Any, mode: AutoresetMode) -> str:
    """What a masked reset is declared to do (``"caller"``: the caller resets)."""
    if caller_resets(mode):
        return "caller"
    if semantics_of(env).partial_reset == "none":  # (a simulator's, GymnaxAdapter)
        return "none"
    found = vector_env_declaration(env)
    if found is None:
        return "clears"
    if found.reset_returns != "all":
        return "masked rows"
    return found.masked_reset(env)


def _foreign_batch(env: Any, result: Any) -> tuple[str, str] | None:
    """A result's first batch not in the library ``env`` declares (or NumPy):
    its field and its library."""
    declared = _arrays.declared_namespace(env) or "numpy"
    if not (isinstance(result, tuple) and len(result) in (2, 5)):
        return None
    fields = ("obs", "rewards", "terminations", "truncations")
    for field, batch in zip(fields, result[:-1], strict=False):
        got = _arrays.name_of(_arrays.namespace(_arrays.leaf(batch)))
        if got != declared:
            return field, got
    return None


def _final_obs_sharing_memory(result: Any) -> list[int]:
    """The sub-envs whose final observation shares the observations' memory."""
    if not (isinstance(result, tuple) and len(result) == 5):
        return []
    found = modes.final_observations(result[4])
    final = None if found is None else found[1]
    if not isinstance(final, np.ndarray) or final.dtype != object:
        return []
    returned = [array for _, array in arrays_in(result[0])]
    return [
        i
        for i, entry in enumerate(final)
        if entry is not None
        and any(
            np.shares_memory(leaf, other)
            for _, leaf in arrays_in(entry)
            for other in returned
        )
    ]
