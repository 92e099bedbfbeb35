"""``vecmode.probe_mode``: find out which autoreset mode a vector env behaves as.

An env's ``metadata["autoreset_mode"]`` is a claim; :func:`probe_mode` tests it.
It builds throwaway instances of the env, drives them with seeded random actions
until an episode ends, and checks what they did against the predictions each mode
makes (:func:`vecmode.modes.boundary`). The mode whose predictions all hold is the
answer; the predictions are:

* where ``final_in_info``: the ended episode's final observation is in
  ``info["final_obs"]`` with ``info["_final_obs"]`` True, and nowhere else;
* where a step is not ``real`` (NEXT_STEP's reset step): reward 0, terminated and
  truncated False, and the action is ignored: another instance, replayed with the
  same seed and actions but a different action there, returns the same;
* where ``needs_reset`` (DISABLED): the caller resets the ended sub-envs with
  ``reset(options={"reset_mask": mask})``, which must leave the other sub-envs as
  they were; stepping an ended sub-env without that reset may raise (vecmode's
  cores and Gymnasium's ``SyncVectorEnv`` do) but must not reset it.

The machinery here (:class:`Runner` records calls, :func:`replay` repeats them on
another instance, :func:`mode_differences` checks a mode's predictions,
:func:`run_differences` compares two runs, :class:`Instances` builds and closes
instances) is also what :func:`vecmode.testing.check_vector_env` proves a declared
mode with.

>>> import gymnasium as gym
>>> from vecmode.probe import probe_mode
>>> result = probe_mode(lambda: gym.vector.SyncVectorEnv(
...     [lambda: gym.make("CartPole-v1", max_episode_steps=5)] * 2,
...     autoreset_mode="SameStep"))
>>> result.mode, result.agrees
(<AutoresetMode.SAME_STEP: 'SameStep'>, True)
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType, TracebackType
from typing import Any

import numpy as np
from gymnasium.vector import VectorEnv
from gymnasium.vector.utils import concatenate, create_empty_array

from vecmode import errors
from vecmode.autoreset import gymnasium_layout
from vecmode.errors import call_text, diff_raised, mode_names
from vecmode.modes import (
    MODES,
    AutoresetMode,
    Boundary,
    BoundaryTracker,
    caller_resets,
    final_entries_of,
    final_in_info,
    final_layout_problem,
    mode_of,
)
from vecmode.testing._compare import (
    MISSING,
    Difference,
    describe,
    per_sub_env,
    same,
)

__all__ = ["ProbeResult", "probe_mode"]

#: How many samples :meth:`Runner.alternative` draws looking for a different action.
_ALTERNATIVE_TRIES = 100


# ------------------------------------------------------------- recording calls
@dataclass
class Call:
    """One call to a vector env and what it returned (deep copies), or raised.

    ``index`` counts calls from 0 (the first ``reset``); ``kind`` is ``"reset"``,
    ``"step"`` or ``"reset(mask)"``. For a step, ``actions`` holds one action per
    sub-env. ``raw`` is the returned tuple as it came; ``obs`` (one observation per
    sub-env), ``rewards``, ``terminations`` and ``truncations`` are its parts as
    arrays. ``error`` is what the call raised, or why its result could not be
    read.
    """

    index: int
    kind: str
    seed: int | None = None
    mask: np.ndarray | None = None
    actions: list[Any] | None = None
    raw: Any = None
    obs: list[Any] | None = None
    rewards: np.ndarray | None = None
    terminations: np.ndarray | None = None
    truncations: np.ndarray | None = None
    infos: Any = None
    error: Exception | None = None

    @property
    def flags(self) -> tuple[np.ndarray, np.ndarray]:
        """``(terminations, truncations)`` of a step (empty arrays otherwise)."""
        if self.terminations is None or self.truncations is None:
            empty = np.zeros(0, dtype=np.bool_)
            return empty, empty
        return self.terminations, self.truncations

    @property
    def ended(self) -> np.ndarray:
        """terminated | truncated, per sub-env (empty for a call that is not a
        step, or whose result could not be read)."""
        return np.logical_or(*self.flags)


class Runner:
    """Drives one vector env and records every call as a :class:`Call`.

    Actions are sampled per sub-env from a seeded copy of
    ``env.single_action_space`` (the env's own spaces are not touched) and batched
    with Gymnasium's ``concatenate``, so any action space works. Nothing a call
    raises escapes: it is recorded in :attr:`Call.error`. ``inspect(call, result)``,
    if given, sees each result as the env returned it, before it is copied (to
    find out, say, which arrays share memory).
    """

    def __init__(
        self,
        env: VectorEnv,
        seed: int,
        inspect: Callable[[Call, Any], None] | None = None,
    ) -> None:
        self.env = env
        self.inspect = inspect
        self.num_envs = int(env.num_envs)
        self.calls: list[Call] = []
        self._single = env.single_action_space
        self._sampler = copy.deepcopy(self._single)
        self._sampler.seed(seed)
        self._others = copy.deepcopy(self._single)
        self._others.seed(seed + 1)

    def sample(self) -> list[Any]:
        """One random action per sub-env."""
        return [self._sampler.sample() for _ in range(self.num_envs)]

    def alternative(self, action: Any) -> Any:
        """A random action different from ``action``, or None if none is found."""
        for _ in range(_ALTERNATIVE_TRIES):
            other = self._others.sample()
            if not same(other, action, strict=False):
                return other
        return None

    def _batch(self, actions: Sequence[Any]) -> Any:
        out: Any = create_empty_array(self._single, self.num_envs)
        return concatenate(self._single, actions, out)

    def reset(self, seed: int | None = None) -> Call:
        """``env.reset(seed=seed)``."""
        call = Call(len(self.calls), "reset", seed=seed)
        return self._record(call, lambda: self.env.reset(seed=seed), 2)

    def reset_mask(self, mask: np.ndarray) -> Call:
        """``env.reset(options={"reset_mask": mask})``, always with a fresh dict
        (Gymnasium pops the key out of the caller's options)."""
        mask = np.array(mask, dtype=np.bool_)
        call = Call(len(self.calls), "reset(mask)", mask=mask)
        return self._record(
            call, lambda: self.env.reset(options={"reset_mask": mask.copy()}), 2
        )

    def step(self, actions: Sequence[Any]) -> Call:
        """``env.step`` with ``actions`` (one per sub-env), batched."""
        call = Call(len(self.calls), "step", actions=list(actions))
        return self._record(call, lambda: self.env.step(self._batch(actions)), 5)

    def _record(self, call: Call, run: Callable[[], Any], size: int) -> Call:
        self.calls.append(call)
        try:
            result = run()
            if self.inspect is not None:
                self.inspect(call, result)
            result = copy.deepcopy(result)
        except Exception as exc:
            call.error = exc
            return call
        call.raw = result
        try:
            self._read(call, result, size)
        except (TypeError, ValueError, IndexError) as exc:
            call.error = ValueError(probe_unreadable_result(call.kind, exc))
        return call

    def _read(self, call: Call, result: Any, size: int) -> None:
        if not isinstance(result, tuple) or len(result) != size:
            raise TypeError(probe_result_tuple(size, result))
        n = self.num_envs
        call.infos = result[-1]
        call.obs = per_sub_env(self.env.observation_space, result[0], n)
        if size == 5:
            call.rewards = np.asarray(result[1])
            call.terminations = np.asarray(result[2], dtype=np.bool_)
            call.truncations = np.asarray(result[3], dtype=np.bool_)
            for array in (call.rewards, call.terminations, call.truncations):
                if array.shape != (n,):
                    raise ValueError(errors.diff_batch_entries(array.shape, n))


def replay(
    runner: Runner,
    calls: Sequence[Call],
    change: Callable[[Call], np.ndarray | None] | None = None,
) -> list[Call]:
    """Make the same calls as ``calls`` (seeds, masks, actions) on another env.

    ``change(call)``: the sub-envs (a bool mask, or None) whose action to replace
    with :meth:`Runner.alternative` at that step; the replay's calls record the
    actions actually sent. Stops after a call that raised.
    """
    for call in calls:
        if call.kind == "reset":
            made = runner.reset(call.seed)
        elif call.kind == "reset(mask)":
            mask = call.mask if call.mask is not None else np.zeros(0, np.bool_)
            made = runner.reset_mask(mask)
        else:
            actions = list(call.actions or [])
            which = None if change is None else change(call)
            if which is not None:
                for i in np.flatnonzero(which).tolist():
                    other = runner.alternative(actions[i])
                    if other is not None:
                        actions[i] = other
            made = runner.step(actions)
        if made.error is not None:
            break
    return runner.calls


class Instances:
    """Builds envs with a factory, and closes every one it built (also on errors).

    >>> import gymnasium as gym
    >>> def factory():
    ...     return gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")])
    >>> with Instances(factory, "demo") as made:
    ...     env = made.new()
    >>> env.closed
    True
    """

    def __init__(self, factory: Callable[[], VectorEnv], caller: str) -> None:
        if not callable(factory):
            raise TypeError(probe_factory_not_callable(caller, factory))
        self.factory = factory
        self.caller = caller
        self._built: list[VectorEnv] = []
        self._open: list[VectorEnv] = []
        #: The layer the envs are read through where their class reports SAME_STEP
        #: final observations its own way (:func:`vecmode.autoreset.
        #: gymnasium_layout`): its class, else None.
        self.read_through: type | None = None

    def new(self) -> VectorEnv:
        """A new env from the factory (``TypeError`` if it is not a vector env,
        ``ValueError`` if the factory returned an env it returned before), in
        Gymnasium's layout of final observations (see :attr:`read_through`)."""
        env = self.factory()
        if not isinstance(env, VectorEnv):
            close = getattr(env, "close", None)
            if callable(close):
                close()
            raise errors.NotAVectorEnvError(
                probe_factory_not_vector_env(self.caller, env)
            )
        if any(env is built for built in self._built):
            raise ValueError(probe_factory_reused(self.caller))
        self._built.append(env)
        try:
            readable = gymnasium_layout(env)
        except ValueError:  # no mode in its metadata: the callers say so
            readable = env
        if readable is not env:
            self.read_through = type(readable)
        self._open.append(readable)
        return readable

    def close(self, env: VectorEnv) -> None:
        """Close ``env`` now (it must come from :meth:`new`)."""
        self._open = [other for other in self._open if other is not env]
        env.close()

    def __enter__(self) -> Instances:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        failure: Exception | None = None
        for env in self._open:
            try:
                env.close()
            except Exception as problem:
                failure = failure or problem
        self._open = []
        if failure is not None and exc_type is None:
            raise failure


# ------------------------------------------------------------ a mode's predictions
@dataclass(frozen=True)
class View:
    """One call seen through one mode: its boundary (steps only) and the sub-envs
    that awaited the caller's reset when it was made."""

    call: Call
    boundary: Boundary | None
    pending: np.ndarray


def views(mode: AutoresetMode, calls: Sequence[Call], num_envs: int) -> Iterator[View]:
    """The calls of a run, each with its :class:`View` in ``mode``; stops after a
    call that raised."""
    tracker = BoundaryTracker(mode, num_envs)
    pending = np.zeros(num_envs, dtype=np.bool_)
    for call in calls:
        if call.error is not None:
            yield View(call, None, pending)
            return
        if call.kind == "step":
            b = tracker.step(*call.flags)
            yield View(call, b, pending)
            pending = b.needs_reset
        else:
            yield View(call, None, pending)
            pending = tracker.reset(call.mask).needs_reset


def differs_at(first: Call, second: Call, i: int) -> tuple[str, Any, Any] | None:
    """The first of obs / reward / terminated / truncated that differs for sub-env
    ``i`` between two calls: ``(field, first's, second's)``."""
    pairs: list[tuple[str, Any, Any]] = []
    if first.obs is not None and second.obs is not None:
        pairs.append(("obs", first.obs[i], second.obs[i]))
    for name, a, b in (
        ("reward", first.rewards, second.rewards),
        ("terminated", first.terminations, second.terminations),
        ("truncated", first.truncations, second.truncations),
    ):
        if a is not None and b is not None:
            pairs.append((name, a[i], b[i]))
    for name, a, b in pairs:
        if not same(a, b):
            return name, a, b
    return None


def looks_reset(call: Call, other: Call, i: int) -> bool:
    """Whether sub-env ``i``'s step in ``call`` looks like an autoreset step:
    reward 0, flags False, and its action ignored (``other``, the same step with
    another action for it, returned the same)."""
    if call.rewards is None or call.terminations is None or call.truncations is None:
        return False
    return bool(
        call.rewards[i] == 0
        and not call.terminations[i]
        and not call.truncations[i]
        and other.error is None
        and _action_changed(call, other, i)
        and differs_at(call, other, i) is None
    )


def _action_changed(first: Call, second: Call, i: int) -> bool:
    return (
        first.actions is not None
        and second.actions is not None
        and not same(first.actions[i], second.actions[i])
    )


def mode_differences(
    mode: AutoresetMode,
    calls: Sequence[Call],
    num_envs: int,
    replay: Sequence[Call] | None = None,
) -> Iterator[Difference]:
    """Where a run contradicts ``mode``'s predictions, in call order.

    ``replay``: the same calls made on another instance, with some actions
    changed (see :func:`replay`); where a prediction says an action is ignored,
    the two runs must agree there.
    """
    others = {call.index: call for call in replay or ()}
    by_caller = caller_resets(mode)
    last_obs: list[Any] | None = None
    for view in views(mode, calls, num_envs):
        call = view.call
        if call.error is not None:
            if call.kind == "step" and not view.pending.any():
                yield Difference(
                    call.index,
                    call.kind,
                    None,
                    "step()",
                    errors.diff_a_result(),
                    errors.diff_raised(call.error),
                    note_step_raised(mode),
                )
            elif call.kind == "reset(mask)" and by_caller:
                yield Difference(
                    call.index,
                    call.kind,
                    None,
                    "reset(options={'reset_mask': ...})",
                    errors.diff_a_result(),
                    errors.diff_raised(call.error),
                    note_masked_reset(mode),
                )
            return
        if call.kind == "reset(mask)" and by_caller and last_obs is not None:
            yield from _masked_reset_differences(mode, call, last_obs)
        if view.boundary is not None:
            other = others.get(call.index)
            yield from _final_obs_differences(mode, call, view.boundary)
            yield from _reset_step_differences(mode, call, view, other)
            yield from _caller_reset_differences(mode, call, view, other)
        last_obs = call.obs


def _final_obs_differences(
    mode: AutoresetMode, call: Call, b: Boundary
) -> Iterator[Difference]:
    """``final_in_info``: the final observations and their mask mark exactly those
    sub-envs; elsewhere neither key (SAME_STEP's layout, per ``vecmode.modes``)."""
    infos = call.infos if isinstance(call.infos, dict) else {}
    problem = final_layout_problem(infos, b.final_in_info, complete=False)
    if problem is None:
        return
    absent = problem.expected in (errors.diff_no_key(), "False")
    yield Difference(
        call.index,
        call.kind,
        problem.sub_env,
        problem.field,
        problem.expected,
        describe(problem.got) if problem.present else repr(MISSING),
        errors.note_final_obs_absent(mode, final_in_info(mode))
        if absent
        else errors.note_final_obs_present(mode),
    )


def _reset_step_differences(
    mode: AutoresetMode, call: Call, view: View, other: Call | None
) -> Iterator[Difference]:
    """Not ``real`` (and not awaiting the caller): a reset step, reward 0, flags
    False, the action ignored."""
    b = view.boundary
    if b is None or call.rewards is None:
        return
    for i in np.flatnonzero(~b.real & ~view.pending).tolist():
        note = note_reset_step(mode)
        for name, array, wanted in (
            ("reward", call.rewards, 0),
            ("terminated", call.terminations, False),
            ("truncated", call.truncations, False),
        ):
            if array is not None and array[i] != wanted:
                yield Difference(
                    call.index,
                    call.kind,
                    i,
                    name,
                    repr(wanted if name != "reward" else 0.0),
                    describe(array[i]),
                    note,
                )
                return
        if other is None or not _action_changed(call, other, i):
            continue
        base = (call.actions or [])[i]
        changed = (other.actions or [])[i]
        if other.error is not None:
            yield Difference(
                call.index,
                call.kind,
                i,
                diff_with_action("step()", changed, base),
                errors.diff_a_result(),
                errors.diff_raised(other.error),
                note_action_ignored(mode),
            )
            return
        differs = differs_at(call, other, i)
        if differs is not None:
            name, expected, got = differs
            yield Difference(
                call.index,
                call.kind,
                i,
                diff_with_action(name, changed, base),
                describe(expected),
                describe(got),
                note_action_ignored(mode),
            )
            return


def _caller_reset_differences(
    mode: AutoresetMode, call: Call, view: View, other: Call | None
) -> Iterator[Difference]:
    """Stepped while awaiting the caller's reset (and it did not raise): the step
    must not have reset the sub-env by itself."""
    if call.rewards is None or call.terminations is None or call.truncations is None:
        return
    for i in np.flatnonzero(view.pending).tolist():
        if other is not None and looks_reset(call, other, i):
            yield Difference(
                call.index,
                call.kind,
                i,
                "step()",
                diff_no_autoreset(),
                diff_autoreset(),
                note_caller_resets(mode),
            )
            return


def _masked_reset_differences(
    mode: AutoresetMode, call: Call, last_obs: list[Any]
) -> Iterator[Difference]:
    """A masked reset leaves the sub-envs outside the mask as they were."""
    if call.obs is None or call.mask is None:
        return
    for j in np.flatnonzero(~call.mask).tolist():
        if not same(call.obs[j], last_obs[j]):
            yield Difference(
                call.index,
                call.kind,
                j,
                "obs",
                describe(last_obs[j]),
                describe(call.obs[j]),
                note_masked_keeps(mode),
            )
            return


# ----------------------------------------------------------------- two runs
def run_differences(
    first: Sequence[Call],
    second: Sequence[Call],
    *,
    upto: int | None = None,
    run: str = "",
) -> Iterator[Difference]:
    """Where ``second`` (a replay of ``first``) returned something else, in call
    order, up to call ``upto`` (inclusive; None: to the end of the shorter).

    Compared: whether the call raised; per sub-env the observation, reward and
    flags, and ``info["_final_obs"]`` / ``info["final_obs"]``; the info's keys.
    Info values are not compared (some wrappers put wall-clock times there).
    """
    for a, b in zip(first, second, strict=False):
        if upto is not None and a.index > upto:
            return
        if (a.error is None) != (b.error is None):
            yield Difference(
                a.index,
                a.kind,
                None,
                "result",
                errors.diff_raised(a.error) if a.error else errors.diff_a_result(),
                errors.diff_raised(b.error) if b.error else errors.diff_a_result(),
                note_replay(),
                run,
            )
            return
        if a.error is not None:
            return
        for i in range(len(a.obs or ())):
            differs = differs_at(a, b, i) or _finaldiffers_at(a, b, i)
            if differs is not None:
                name, x, y = differs
                yield Difference(
                    a.index, a.kind, i, name, describe(x), describe(y), "", run
                )
        keys_a = sorted(a.infos) if isinstance(a.infos, dict) else a.infos
        keys_b = sorted(b.infos) if isinstance(b.infos, dict) else b.infos
        if keys_a != keys_b:
            yield Difference(
                a.index, a.kind, None, "info keys", str(keys_a), str(keys_b), "", run
            )


def _finaldiffers_at(first: Call, second: Call, i: int) -> tuple[str, Any, Any] | None:
    a = final_entries_of(first.infos, i)
    b = final_entries_of(second.infos, i)
    for key in a:
        if not same(a[key], b[key]):
            return f"info[{key!r}]", a[key], b[key]
    return None


# ------------------------------------------------------------------ the probe
@dataclass(frozen=True)
class ProbeResult:
    """What :func:`probe_mode` found.

    Attributes:
        mode: the mode the env behaves as; None when the probe cannot tell.
        declared: the mode the env declares in ``metadata["autoreset_mode"]``
            (None: none, or not a mode).
        reason: why this mode, or why the probe cannot tell.
        ended_at: the call (0 is the first ``reset``, each ``step`` counts one)
            where the first episode ended; None if none did.
        ended: the sub-envs whose episode ended there.
        rejected: for each mode ruled out, the first of its predictions that the
            env contradicted.
        read_through: where the env's class reports SAME_STEP final
            observations its own way (ALE's ``AtariVectorEnv``: one dense array),
            the layer they were read through, as :func:`vecmode.with_autoreset`
            reads them (``vecmode.autoreset.GymnasiumFinalObs``); else None.
    """

    mode: AutoresetMode | None
    declared: AutoresetMode | None
    reason: str
    ended_at: int | None = None
    ended: tuple[int, ...] = ()
    rejected: Mapping[AutoresetMode, Difference] = field(
        default_factory=lambda: MappingProxyType({})
    )
    read_through: str | None = None

    @property
    def agrees(self) -> bool:
        """The probe found a mode and it is the declared one."""
        return self.mode is not None and self.mode is self.declared

    def __str__(self) -> str:
        return probe_summary(
            self.mode,
            self.declared,
            self.reason,
            self.ended_at,
            self.ended,
            {mode: str(diff) for mode, diff in self.rejected.items()},
            self.read_through,
        )


def _declared(env: VectorEnv) -> AutoresetMode | None:
    try:
        return mode_of(env)
    except ValueError:
        return None


def _until_an_end(runner: Runner, seed: int, max_steps: int) -> Call | None:
    """Reset, then step until an episode ends; the call where one ended (or the
    call that raised), None if none ended within ``max_steps`` steps."""
    call = runner.reset(seed)
    for _ in range(max_steps):
        if call.error is not None:
            return call
        call = runner.step(runner.sample())
        if call.error is None and call.ended.any():
            return call
    return call if call.error is not None else None


def _replays(
    instances: Instances, seed: int, calls: list[Call], ended: np.ndarray
) -> tuple[list[Call], list[Call], list[Call]]:
    """The three replays of the probe's first run (which ends with a step of the
    ``ended`` sub-envs without a reset), each on a new instance:

    * the same, but with other actions for the ended sub-envs at that last step;
    * up to the end, then ``reset(options={"reset_mask": ended})`` and that step;
    * the same calls exactly (the env must be deterministic up to there, or an
      ignored action could not be told from chance).
    """
    last = calls[-1]
    changed = Runner(instances.new(), seed)
    replay(changed, calls, lambda call: ended if call is last else None)
    instances.close(changed.env)
    masked = Runner(instances.new(), seed)
    if (
        replay(masked, calls[:-1])[-1].error is None
        and masked.reset_mask(ended).error is None
    ):
        masked.step(last.actions or [])
    instances.close(masked.env)
    again = Runner(instances.new(), seed)
    replay(again, calls)
    instances.close(again.env)
    return changed.calls, masked.calls, again.calls


def probe_mode(
    env_factory: Callable[[], VectorEnv], *, max_steps: int = 1000, seed: int = 0
) -> ProbeResult:
    """The autoreset mode a vector env behaves as, whatever it declares.

    ``env_factory`` builds a new instance of the env each time it is called; the
    probe calls it up to four times and closes every instance it built (also
    when something fails); it never touches any other env. The first instance is
    reset with ``seed`` and stepped with seeded random actions until an episode
    ends (at most ``max_steps`` steps), then stepped once more without a reset.
    Three more instances replay those calls:

    1. with other actions for the ended sub-envs at that last step;
    2. up to the end, then ``reset(options={"reset_mask": ended})`` and the last
       step;
    3. exactly.

    The runs must agree where their calls do (the env must be deterministic under
    ``reset(seed=...)``); then every mode's predictions
    (:func:`vecmode.modes.boundary`) are checked against them, and the mode whose
    predictions all hold is the answer. The result's ``mode`` is None, and its
    ``reason`` says why, when no episode ends within ``max_steps`` steps, the env
    raises before one does, the runs disagree, or not exactly one mode fits (say,
    with a single action, whether an action is ignored is unknown).

    Raises:
        TypeError: ``env_factory`` is not callable or does not return a
            ``gymnasium.vector.VectorEnv``.
        ValueError: ``max_steps`` is not a positive int, or the factory returned
            the same env twice (it must build a new one each call).

    >>> import gymnasium as gym
    >>> from vecmode.probe import probe_mode
    >>> result = probe_mode(lambda: gym.make_vec("CartPole-v1", num_envs=4))
    >>> result.mode, result.declared
    (<AutoresetMode.NEXT_STEP: 'NextStep'>, <AutoresetMode.NEXT_STEP: 'NextStep'>)
    >>> print(result)  # doctest: +ELLIPSIS
    behaves as NextStep (declares NextStep): only NextStep's predictions hold.
    first episode end: call ..., sub-env(s) ...
    not SameStep: call ... (step), sub-env ..., info['_final_obs']: expected True, got <no such key> (...)
    not Disabled: call ... (step), sub-env ..., step(): expected ..., got an autoreset step ...
    """
    if isinstance(max_steps, bool) or not isinstance(max_steps, (int, np.integer)):
        raise ValueError(probe_max_steps(max_steps))
    if max_steps < 1:
        raise ValueError(probe_max_steps(max_steps))
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(probe_seed(seed))
    seed = int(seed)
    with Instances(env_factory, "vecmode.probe_mode") as instances:
        env = instances.new()
        declared = _declared(env)
        first = Runner(env, seed)
        end = _until_an_end(first, seed, int(max_steps))
        if end is None or end.error is not None:
            last = first.calls[-1]
            reason = (
                probe_no_end(max_steps, seed)
                if last.error is None
                else probe_env_raised(last.index, last.kind, last.error)
            )
            return ProbeResult(None, declared, reason, read_through=_through(instances))
        ended = end.ended.copy()
        first.step(first.sample())  # step the ended sub-envs without a reset
        instances.close(env)
        runs = _replays(instances, seed, first.calls, ended)

    ended_at, ended_subs = end.index, tuple(np.flatnonzero(ended).tolist())
    changed, masked, same_again = runs
    replays = ((changed, end.index), (masked, end.index), (same_again, None))
    for number, (other, upto) in enumerate(replays, start=2):
        label = errors.diff_instance(number)
        diff = next(run_differences(first.calls, other, upto=upto, run=label), None)
        if diff is not None:
            reason = probe_not_deterministic(seed, str(diff))
            return ProbeResult(
                None,
                declared,
                reason,
                ended_at,
                ended_subs,
                read_through=_through(instances),
            )

    rejected: dict[AutoresetMode, Difference] = {}
    for mode in MODES:
        contradiction = next(
            mode_differences(mode, first.calls, first.num_envs, changed), None
        ) or next(mode_differences(mode, masked, first.num_envs), None)
        if contradiction is not None:
            rejected[mode] = contradiction
    fitting = [mode for mode in MODES if mode not in rejected]
    texts = {mode.value: str(diff) for mode, diff in rejected.items()}
    found: AutoresetMode | None = fitting[0] if len(fitting) == 1 else None
    if found is not None:
        reason = probe_found(found)
    elif not fitting:
        reason = probe_no_mode(texts)
    else:
        reason = probe_several(fitting)
    return ProbeResult(
        found,
        declared,
        reason,
        ended_at,
        ended_subs,
        MappingProxyType(rejected),
        _through(instances),
    )


def _through(instances: Instances) -> str | None:
    """The qualified name of the layer ``instances`` read the envs through."""
    cls = instances.read_through
    return None if cls is None else f"{cls.__module__}.{cls.__qualname__}"


# ------------------------------------------------------------------ messages
def diff_with_action(name: str, changed: str, base: str) -> str:
    return f"{name} with action {changed} instead of {base}"


def diff_no_autoreset() -> str:
    return "an error, or a step of the ended episode"


def diff_autoreset() -> str:
    return (
        "an autoreset step (reward 0, terminated and truncated False, action ignored)"
    )


def note_step_raised(mode: AutoresetMode) -> str:
    return (
        f"in {mode.value} mode no sub-env awaits a reset by the caller here, so "
        f"step() must work"
    )


def note_masked_reset(mode: AutoresetMode) -> str:
    return (
        f"in {mode.value} mode the caller resets ended sub-envs with "
        f"reset(options={{'reset_mask': mask}}), so that must work"
    )


def note_reset_step(mode: AutoresetMode) -> str:
    return (
        f"in {mode.value} mode the step after an episode ends resets the sub-env: "
        f"its action is ignored, the reward is 0, terminated and truncated are False"
    )


def note_action_ignored(mode: AutoresetMode) -> str:
    return (
        f"in {mode.value} mode a reset step ignores its action, so another action "
        f"there must give the same result"
    )


def note_caller_resets(mode: AutoresetMode) -> str:
    return (
        f"in {mode.value} mode step() never resets a sub-env, the caller does with "
        f"reset(options={{'reset_mask': mask}}); this sub-env's episode had ended "
        f"and it was stepped without that reset, yet it was reset"
    )


def note_masked_keeps(mode: AutoresetMode) -> str:
    return (
        f"in {mode.value} mode reset(options={{'reset_mask': mask}}) resets only the "
        f"masked sub-envs; the others' observations come back unchanged"
    )


def note_replay() -> str:
    return "the same seed and actions"


def probe_factory_not_callable(caller: str, got: Any) -> str:
    return (
        f"{caller} takes a function that builds a new vector env, e.g. "
        f"lambda: gym.make_vec('CartPole-v1', num_envs=4), got "
        f"{type(got).__name__}."
    )


def probe_factory_not_vector_env(caller: str, got: Any) -> str:
    return (
        f"{caller}: the factory must return a gymnasium.vector.VectorEnv, got "
        f"{type(got).__name__}; for a single env's id use e.g. "
        f"lambda: gym.make_vec(env_id, num_envs=2)."
    )


def probe_factory_reused(caller: str) -> str:
    return (
        f"{caller}: the factory returned an env it had returned before (and that "
        f"{caller} has closed); it must build a new env on each call, e.g. "
        f"lambda: gym.make_vec(...), not lambda: envs."
    )


def probe_unreadable_result(kind: str, error: BaseException) -> str:
    return f"the result of {call_text(kind)} cannot be read: {error}"


def probe_result_tuple(size: int, got: Any) -> str:
    parts = (
        "(obs, infos)"
        if size == 2
        else "(obs, rewards, terminations, truncations, infos)"
    )
    return f"expected a tuple {parts}, got {type(got).__name__}"


def probe_max_steps(got: Any) -> str:
    return (
        f"max_steps must be an int >= 1 (the most steps to wait for an episode to "
        f"end), got {got!r}."
    )


def probe_seed(got: Any) -> str:
    return f"seed must be an int, got {got!r}."


def probe_env_raised(call: int, kind: str, error: BaseException) -> str:
    return (
        f"the env raised {diff_raised(error)} in call {call} ({call_text(kind)}), "
        f"before any episode ended"
    )


def probe_no_end(max_steps: int, seed: int) -> str:
    return (
        f"no episode ended within {max_steps} steps (seed {seed}, random actions): "
        f"raise max_steps, or make the episodes shorter (e.g. max_episode_steps)"
    )


def probe_not_deterministic(seed: int, diff: str) -> str:
    return (
        f"the env is not deterministic under reset(seed={seed}) and the same "
        f"actions, and the probe compares instances: {diff}"
    )


def probe_found(mode: AutoresetMode) -> str:
    text = f"only {mode.value}'s predictions hold."
    if not caller_resets(mode):
        return text
    return (
        f"{text} (An env whose step() resets a sub-env inside the step that ends "
        f"its episode, and reports no info['final_obs'], looks the same to the "
        f"probe, but loses every final observation: no mode describes it; it must "
        f"report them in info['final_obs'] / info['_final_obs'] and declare "
        f"SameStep.)"
    )


def probe_no_mode(rejected: dict[str, str]) -> str:
    return "the env contradicts every mode's predictions: " + "; ".join(
        f"not {mode}: {text}" for mode, text in rejected.items()
    )


def probe_several(modes: Iterable[AutoresetMode]) -> str:
    return (
        f"the runs fit {mode_names(modes)} alike (e.g. the action space has a "
        f"single action, so whether an action is ignored is unknown)"
    )


def probe_summary(
    mode: AutoresetMode | None,
    declared: AutoresetMode | None,
    reason: str,
    ended_at: int | None,
    ended: tuple[int, ...],
    rejected: dict[AutoresetMode, str],
    read_through: str | None = None,
) -> str:
    head = f"behaves as {mode.value}" if mode is not None else "cannot tell the mode"
    claim = f"declares {declared.value}" if declared is not None else "declares no mode"
    lines = [f"{head} ({claim}): {reason}"]
    if read_through is not None:
        lines.append(
            f"final observations: the env's class reports them its own way; read "
            f"through {read_through}, as vecmode.with_autoreset reads them"
        )
    if ended_at is not None:
        subs = ", ".join(str(i) for i in ended)
        lines.append(f"first episode end: call {ended_at}, sub-env(s) {subs}")
    if len(rejected) < len(AutoresetMode):  # else the reason lists them
        lines += [f"not {other.value}: {text}" for other, text in rejected.items()]
    return "\n".join(lines)
