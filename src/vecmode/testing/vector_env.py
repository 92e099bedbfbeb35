"""``check_vector_env``: prove that a vector env behaves as the mode it declares.

For authors of custom vector envs (a batched numpy or JAX env, a new backend):
:func:`check_vector_env` runs the env across several episode ends and checks,
call by call, the contract of the autoreset mode that its
``metadata["autoreset_mode"]`` declares, and that :func:`vecmode.probe_mode`
finds the env behaving as that mode. The first difference raises
``AssertionError`` naming the call, the sub-env, the field, what was expected and
what the env returned (so it reads well in any test runner); success returns a
:class:`VectorEnvReport`, which :meth:`VectorEnvReport.record` records for
:func:`vecmode.check_stack`.

>>> import gymnasium as gym
>>> from vecmode.testing.vector_env import check_vector_env
>>> report = check_vector_env(lambda: gym.make_vec("CartPole-v1", num_envs=3))
>>> print(report)  # doctest: +ELLIPSIS
CartPoleVectorEnv(CartPole-v1, num_envs=3) conforms to NextStep: ... steps, ... episode ends
  - observations in the observation space; rewards, terminations and truncations of shape (num_envs,) and the right dtypes; infos dicts
  - no final_obs / final_info in info
  - the step after an episode ends: reward 0, terminated and truncated False, action ignored; reset() clears pending autoresets
  - no masked reset made: its class declares that reset(options={'reset_mask': m}) resets every sub-env (masked_reset='ignores', vecmode.register_vector_env)
  - what a call returned is not changed by later calls
  - the same seed and actions reproduce the run
  - vecmode.probe_mode finds NextStep
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Container, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

import numpy as np
from gymnasium.spaces import Space
from gymnasium.vector import VectorEnv, VectorWrapper

# ``vecmode.probe`` imports this package's ``_compare``, so this module refers to
# the probe module (resolved at call time), never to names imported from it: that
# keeps ``import vecmode`` working whichever of the two is imported first.
from vecmode import errors, registry
from vecmode import probe as _probe
from vecmode.env_classes import layers, vector_env_declaration
from vecmode.modes import (
    FINAL_OBS,
    AutoresetMode,
    Boundary,
    BoundaryTracker,
    caller_resets,
    final_in_info,
    final_layout_problem,
    final_observations,
    mode_of,
    resets_on_next_step,
)
from vecmode.testing._compare import (
    MISSING,
    Difference,
    arrays_in,
    as_numpy,
    describe,
    per_sub_env,
    same,
    where_different,
)

__all__ = ["VectorEnvReport", "check_vector_env"]


@dataclass(frozen=True)
class VectorEnvReport:
    """What :func:`check_vector_env` proved. ``str(report)`` is a short summary;
    :meth:`record` makes :func:`vecmode.check_stack` report the env's class as
    verified.

    Attributes:
        env: the env's ``repr``.
        mode: the mode it declares (and behaves as).
        num_envs: its number of sub-envs.
        steps: the steps of the checked run.
        calls: the calls of the checked run (steps and resets).
        episode_ends: the episodes that ended in it (over all sub-envs).
        masked_resets: the ``reset(options={"reset_mask": ...})`` calls in it.
        checks: what was checked, one sentence each.
        probe: what :func:`vecmode.probe_mode` found.
        env_class: the class of the env the factory built, for :meth:`record`
            (None when it built wrappers over an env: ``stack`` names them).
        stack: the layers the factory built, outermost first, where it built
            wrappers over an env; else empty.
    """

    env: str
    mode: AutoresetMode
    num_envs: int
    steps: int
    calls: int
    episode_ends: int
    masked_resets: int
    checks: tuple[str, ...]
    probe: _probe.ProbeResult
    env_class: type | None = dataclasses.field(default=None, compare=False, repr=False)
    stack: tuple[str, ...] = dataclasses.field(default=(), compare=False, repr=False)

    @property
    def summary(self) -> str:
        """One line: the env, its mode and how much was run."""
        return check_env_summary(self.env, self.mode, self.steps, self.episode_ends)

    def record(self) -> VectorEnvReport:
        """Record this proof for :attr:`env_class`, in this process: from now on
        :func:`vecmode.check_stack` reports an innermost env of that class that
        declares :attr:`mode` as *verified* (instead of *declared*), and
        ``vecmode.assert_compatible(envs, verified=True)`` accepts it.

        The evidence belongs to that exact class (not to its subclasses) and to
        that mode (an instance built in another mode needs a proof in that mode).
        Record where the stack is checked, e.g. in your test suite before
        ``vecmode.assert_compatible(envs, verified=True)``.

        >>> import gymnasium as gym
        >>> import vecmode
        >>> from vecmode.testing import check_vector_env
        >>> class MyVectorEnv(gym.vector.SyncVectorEnv):  # your own class
        ...     pass
        >>> def factory():
        ...     return MyVectorEnv([lambda: gym.make("CartPole-v1")] * 2)
        >>> envs = factory()
        >>> vecmode.check_stack(envs)[0].evidence.value  # a verified class's subclass
        'inherited'
        >>> check_vector_env(factory).record().mode.value
        'NextStep'
        >>> vecmode.check_stack(envs)[0].evidence.value
        'verified'
        >>> envs.close()

        Returns:
            The report itself.

        Raises:
            ValueError: the factory built wrappers over the env (record a check
                of a factory that builds the env alone).
        """
        if self.env_class is None:
            raise ValueError(record_env_stack(self.env, self.stack))
        registry.record_env_verified(self.env_class, self.mode, self.summary)
        return self

    def __str__(self) -> str:
        return check_env_report(
            self.env, self.mode, self.steps, self.episode_ends, self.checks
        )


@dataclass(frozen=True)
class _Spaces:
    num_envs: int
    observation_space: Space
    single_observation_space: Space


def check_vector_env(
    factory: Callable[[], VectorEnv],
    *,
    steps: int = 300,
    seed: int = 0,
    min_episode_ends: int = 2,
) -> VectorEnvReport:
    """Check that the envs ``factory`` builds behave as the mode they declare.

    The env must declare its mode in ``metadata["autoreset_mode"]``. One instance
    is reset with ``seed`` and stepped ``steps`` times with seeded random actions,
    with masked resets (``reset(options={"reset_mask": mask})``, where there are
    two sub-envs or more): in DISABLED mode, the ended sub-envs after each step,
    and once a sub-env in the middle of its episode; in the other modes, where a
    caller may reset too, the sub-envs whose episode ended at the second step
    where one did (the first of them alone if all did), then one sub-env in the
    middle of its episode (none where the env's class declares that a masked
    reset resets every sub-env, ``vecmode.register_vector_env(cls,
    masked_reset="ignores")``, or returns only the masked rows). A second
    instance replays the same calls, and more replay parts of them. Checked,
    call by call:

    * in every mode: observations in the observation space; rewards,
      terminations and truncations arrays of shape ``(num_envs,)`` (numbers,
      bools); infos dicts; nothing raises; the second run returns the same
      (observations, rewards, flags, final observations, info keys); nothing a
      call returned is changed by a later call (the env returns new arrays; an
      env built with ``copy=False`` may reuse its observation buffer, as
      Gymnasium's do); a masked reset returns the other sub-envs' observations
      unchanged and infos only for the masked sub-envs, and does reset the
      masked ones (a sub-env reset in the middle of its episode that returns
      its observation unchanged and then exactly what a run without that reset
      returns, up to its episode's end, was not reset);
    * SAME_STEP: ``final_obs`` / ``_final_obs`` and ``final_info`` /
      ``_final_info`` exactly on the steps where episodes end, the masks True
      exactly for the ended sub-envs, each final observation in the single
      observation space and not the observation that starts the next episode;
    * NEXT_STEP: none of those keys; the step after an episode's end has
      reward 0, terminated and truncated False, and ignores its action (the
      second run sends another action there and must get the same), unless a
      masked reset came between: that clears the pending autoreset of the
      masked sub-envs (the step after it must not look like one: another
      instance sends another action there), not the others';
    * DISABLED: none of those keys;

    then at least ``min_episode_ends`` episodes must have ended, and
    :func:`vecmode.probe_mode` (which also tries stepping an ended sub-env without
    a reset) must find the declared mode.

    Raises:
        AssertionError: the env does not declare a mode, or breaks the contract;
            the message describes the first difference.
        TypeError: ``factory`` is not callable or does not build a vector env.
        ValueError: ``steps`` or ``min_episode_ends`` is not a positive int.

    >>> import gymnasium as gym
    >>> from vecmode.testing.vector_env import check_vector_env
    >>> def factory():
    ...     envs = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")] * 2)
    ...     del envs.metadata["autoreset_mode"]
    ...     return envs
    >>> check_vector_env(factory)
    Traceback (most recent call last):
    ...
    AssertionError: SyncVectorEnv(num_envs=2) declares no metadata['autoreset_mode']...
    """
    for name, value in (("steps", steps), ("min_episode_ends", min_episode_ends)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise ValueError(check_env_positive_int(name, value))
        if value < 1:
            raise ValueError(check_env_positive_int(name, value))
    returned = _Returned()
    with _probe.Instances(factory, "check_vector_env") as instances:
        env = instances.new()
        name = repr(env)
        mode = _declared_mode(env, name)
        built = _as_built(env, instances)
        returned.results.reuses_observations = _copies_no_observations(built)
        spaces = _Spaces(
            int(env.num_envs), env.observation_space, env.single_observation_space
        )
        first = _probe.Runner(env, seed, returned.inspect)
        optional = _optional_masked_resets(built, mode)
        plan = _drive(first, mode, steps, seed, optional)
        instances.close(env)
        runs = _other_runs(instances, first.calls, plan, seed)

    diff = _first_failure(mode, spaces, first.calls, runs, returned, seed, plan)
    if diff is not None:
        raise AssertionError(
            check_env_failed(
                name, mode, str(diff), _diagnosis(factory, steps, seed, mode)
            )
        )
    ends = sum(int(call.ended.sum()) for call in first.calls if call.kind == "step")
    if ends < min_episode_ends:
        raise AssertionError(check_env_few_ends(name, ends, steps, min_episode_ends))
    found = _probe.probe_mode(factory, max_steps=steps, seed=seed)
    if found.mode is not mode:
        raise AssertionError(check_env_probe_disagrees(name, mode, str(found)))
    wrapped = isinstance(built, VectorWrapper)
    return VectorEnvReport(
        env=name,
        mode=mode,
        num_envs=spaces.num_envs,
        steps=sum(call.kind == "step" for call in first.calls),
        calls=len(first.calls),
        episode_ends=ends,
        masked_resets=sum(call.kind == "reset(mask)" for call in first.calls),
        checks=check_env_checks(
            mode,
            final_in_info(mode),
            resets_on_next_step(mode),
            caller_resets(mode),
            optional,
            returned.results.reuses_observations,
        )
        + _read_through(found),
        probe=found,
        env_class=None if wrapped else type(built),
        stack=tuple(type(layer).__name__ for layer in layers(built)) if wrapped else (),
    )


def _declared_mode(env: VectorEnv, name: str) -> AutoresetMode:
    """The mode ``env`` declares (``AssertionError`` if none, or not a mode)."""
    try:
        mode = mode_of(env)
    except ValueError as exc:
        raise AssertionError(check_env_bad_declaration(name, str(exc))) from None
    if mode is None:
        raise AssertionError(check_env_undeclared(name))
    return mode


def _as_built(env: VectorEnv, instances: _probe.Instances) -> Any:
    """``env`` as the factory built it (under the layer that the check reads
    the final observations through, where its class reports them its own way)."""
    if instances.read_through is None:
        return env
    return env.__dict__.get("env", env)


def _copies_no_observations(env: Any) -> bool:
    """Whether ``env`` (or a layer of it) says it hands out its observation
    buffer, which later calls write into: ``copy=False``, as Gymnasium's and
    vecmode's vector envs take it."""
    return any(getattr(layer, "copy", None) is False for layer in layers(env))


def _optional_masked_resets(env: Any, mode: AutoresetMode) -> str:
    """What a masked reset is declared to do in a mode where the caller need not
    reset (``"clears"``, ``"keeps-pending"``; an undeclared class: ``"clears"``,
    as Gymnasium's envs do); ``"ignores"`` (it resets every sub-env) or
    ``"masked rows"`` (it returns the masked sub-envs' rows only): the run makes
    none. In DISABLED mode, ``"caller"``: the caller resets."""
    if caller_resets(mode):
        return "caller"
    found = vector_env_declaration(env)
    if found is None:
        return "clears"
    if found.reset_returns != "all":
        return "masked rows"
    return found.masked_reset(env)


def _read_through(found: _probe.ProbeResult) -> tuple[str, ...]:
    """The check line saying which layer the final observations were read
    through, where the env's class reports them its own way."""
    if found.read_through is None:
        return ()
    return (check_env_read_through(found.read_through),)


#: The parts of a result, by the size of its tuple (``reset``'s, ``step``'s).
RESULT_PARTS: dict[int, tuple[str, ...]] = {
    2: ("observations", "infos"),
    5: ("observations", "rewards", "terminations", "truncations", "infos"),
}


def changed_part(returned: Any, kept: Any, skip: Container[str] = ()) -> str | None:
    """The part of a call's result, as it was returned, that is no longer what it
    was: ``kept`` is a deep copy made when it was returned. Its name and where in
    it (e.g. ``"infos['_episode']"``), or None if none changed (or the result is
    not a ``reset`` / ``step`` tuple). A later call changed it: the result holds
    an array that the env (or wrapper) writes into again. Parts named in ``skip``
    are not compared. What :class:`HeldResults` compares.

    >>> import copy
    >>> import numpy as np
    >>> flags = np.array([True, False])
    >>> result = (np.zeros(2), np.ones(2), flags, np.zeros(2, bool), {"n": [1]})
    >>> kept = copy.deepcopy(result)
    >>> changed_part(result, kept) is None
    True
    >>> flags[0] = False  # the env clears its own array, which it returned
    >>> result[4]["n"].append(2)
    >>> changed_part(result, kept)
    'terminations'
    >>> changed_part(result, kept, skip=("terminations",))
    "infos['n']"
    """
    if not (isinstance(returned, tuple) and isinstance(kept, tuple)):
        return None
    if len(returned) != len(kept) or len(returned) not in RESULT_PARTS:
        return None
    parts = RESULT_PARTS[len(returned)]
    for name, now, then in zip(parts, returned, kept, strict=True):
        if name in skip:
            continue
        path = where_different(as_numpy(then), as_numpy(now))
        if path is not None:
            return name + path
    return None


#: What names a call in :class:`HeldResults` (a :class:`vecmode.probe.Call`, a
#: place in the conformance kit's run).
_Label = TypeVar("_Label")


class HeldResults(Generic[_Label]):
    """A run's results as the env (or wrapper) returned them, each beside a deep
    copy made then, to find one that a later call changed: the result holds an
    array that the env writes into again. Each result is compared with its copy
    when the next call has returned (that call changed it) and at the end of the
    run (some later call did), the observations excepted where
    ``reuses_observations`` (an env built with ``copy=False`` may reuse its
    observation buffer). Shared by :func:`check_vector_env` and
    :func:`vecmode.testing.check_wrapper`, which report what it finds their ways.

    >>> import numpy as np
    >>> flags = np.array([True, False])
    >>> held = HeldResults()
    >>> held.keep("call 0", (np.zeros(2), {}))
    >>> held.keep("call 1", (np.zeros(2), np.ones(2), flags, flags, {})) is None
    True
    >>> flags[0] = False  # the env clears its own array, which it returned
    >>> held.keep("call 2", (np.zeros(2), {}))
    ('call 1', 'terminations')
    >>> held.first_changed()
    ('call 1', 'terminations', 'call 2')
    """

    def __init__(self, reuses_observations: bool = False) -> None:
        #: whether the env says it reuses its observation buffer (``copy=False``):
        #: the observations may change then, nothing else
        self.reuses_observations = reuses_observations
        #: each call's label, its result as returned, and how to read the copy
        self._results: list[tuple[_Label, Any, Callable[[], Any]]] = []
        #: per result (by its place in ``_results``) that a later call changed:
        #: the part, and the label of the call that changed it (None where only
        #: the end of the run found it)
        self._changed: dict[int, tuple[str, _Label | None]] = {}

    def keep(
        self, label: _Label, result: Any, kept: Callable[[], Any] | None = None
    ) -> tuple[_Label, str] | None:
        """Keep ``result``, returned by the call ``label``, after comparing the
        result before it with its copy: that result's label and the part this
        call changed (see :func:`changed_part`), or None. ``kept`` reads the deep
        copy of ``result`` made when it was returned (it is read only when the
        next call has returned); by default a deep copy is made here."""
        found = None
        if self._results:
            part = self._check(len(self._results) - 1, by=label)
            if part is not None:
                found = (self._results[-1][0], part)
        if kept is None:
            copied = copy.deepcopy(result)

            def kept() -> Any:
                return copied

        self._results.append((label, result, kept))
        return found

    def first_changed(self) -> tuple[_Label, str, _Label | None] | None:
        """Compare every result kept with its copy: the first result that a later
        call changed, as its label, the part, and the label of the call that
        changed it (None where only now is it found); None if none changed."""
        for index in range(len(self._results)):
            self._check(index, by=None)
        for index, (label, _, _) in enumerate(self._results):
            if index in self._changed:
                part, by = self._changed[index]
                return label, part, by
        return None

    def _check(self, index: int, by: _Label | None) -> str | None:
        """The part of the result at ``index`` found changed now (recorded, with
        ``by``), or None (unchanged, or its change was found before)."""
        if index in self._changed:
            return None
        _, result, kept = self._results[index]
        skip = ("observations",) if self.reuses_observations else ()
        part = changed_part(result, kept(), skip)
        if part is not None:
            self._changed[index] = (part, by)
        return part


class _Returned:
    """The checked run's results as the env returned them (before the runner
    copied them), to find one that a later call changed; and, per call, the
    sub-envs whose final observation shares memory with the returned
    observations."""

    def __init__(self) -> None:
        #: compared with the runner's copies (``call.raw``)
        self.results: HeldResults[_probe.Call] = HeldResults()
        self.aliased: dict[int, list[int]] = {}

    def inspect(self, call: _probe.Call, result: Any) -> None:
        """What :class:`vecmode.probe.Runner` calls with each result (before it
        copies it into ``call.raw``)."""
        self.aliased[call.index] = _final_obs_sharing_memory(result)
        self.results.keep(call, result, lambda: call.raw)

    def differences(self) -> Iterator[Difference]:
        """The first result that a later call changed."""
        found = self.results.first_changed()
        if found is not None:
            call, part, by = found
            yield Difference(
                call.index,
                call.kind,
                None,
                part,
                diff_unchanged(),
                diff_changed_by(None if by is None else by.index),
                note_return_new_arrays(self.results.reuses_observations),
            )


@dataclass
class _Plan:
    """What the checked run did that its replays must know about.

    ``ignored``: per step whose action some sub-envs ignore (NEXT_STEP's reset
    steps), those sub-envs; the replay sends them other actions. ``reseeded``: the
    index of the ``reset(seed=seed + 1)`` made while ``pending`` sub-envs awaited
    their autoreset (modes with reset steps only); the run ends with one step
    after it, where the replay sends ``pending`` other actions too. ``cleared``:
    the step right after a masked reset of sub-envs whose autoreset was pending
    (NEXT_STEP), and those sub-envs. ``mid_episode``: a masked reset of one
    sub-env in the middle of its episode, and that sub-env.
    """

    ignored: dict[int, np.ndarray] = dataclasses.field(default_factory=dict)
    reseeded: int | None = None
    pending: np.ndarray | None = None
    cleared: tuple[int, np.ndarray] | None = None
    mid_episode: tuple[int, int] | None = None

    def change(self, call: _probe.Call) -> np.ndarray | None:
        """The sub-envs whose action the replay changes at ``call``."""
        if self.reseeded is not None and call.index == self.reseeded + 1:
            return self.pending
        return self.ignored.get(call.index)

    def masked(
        self, index: int, mask: np.ndarray, pending: np.ndarray, kind: str
    ) -> None:
        """Note the masked reset at call ``index``, of ``kind`` (see
        :class:`_MaskedResets`), which reset ``pending`` sub-envs that awaited
        their autoreset."""
        if kind == _MID_EPISODE and self.mid_episode is None:
            self.mid_episode = (index, int(np.argmax(mask)))
        if kind == _AFTER_END and pending.any() and self.cleared is None:
            self.cleared = (index + 1, pending)


#: The kinds of masked resets the checked run makes.
_AFTER_END, _MID_EPISODE, _BY_CALLER = "after an end", "mid-episode", "by the caller"


class _MaskedResets:
    """Which sub-envs the checked run resets with ``reset_mask`` after a step.

    Where the caller resets (DISABLED): the ended sub-envs after each step, and
    once, after the first step, a sub-env in the middle of its episode. In the
    other modes (where a masked reset is allowed but not needed; ``optional``
    says what it is declared to do, see :func:`_optional_masked_resets`): at the
    second step where episodes end, the sub-envs that ended there (or the first
    of them, if all did), then, at the next step where one is in the middle of
    its episode, that one. None with a single sub-env (a masked reset of every
    sub-env is a plain reset).
    """

    def __init__(self, mode: AutoresetMode, num_envs: int, optional: str) -> None:
        self.by_caller = caller_resets(mode)
        self.ends = 0
        makes = num_envs >= 2 and optional in ("clears", "keeps-pending")
        self.after_end_done = self.by_caller or not makes
        self.mid_episode_done = num_envs < 2 or not (self.by_caller or makes)
        #: whether a masked reset clears the masked sub-envs' pending autoreset
        self.clears = optional == "clears"

    def after(self, b: Boundary, awaiting: np.ndarray) -> tuple[np.ndarray | None, str]:
        """The mask to reset after a step of boundary ``b`` (None: no reset),
        and its kind."""
        self.ends += bool(b.ended.any())
        if self.by_caller and awaiting.any():
            return awaiting.copy(), _BY_CALLER
        if not self.after_end_done and b.ended.any() and self.ends >= 2:
            self.after_end_done = True
            return _strict_subset(b.ended), _AFTER_END
        running = ~(b.starts | b.ended | awaiting)
        if self.after_end_done and not self.mid_episode_done and running.any():
            self.mid_episode_done = True
            return _strict_subset(running, first=True), _MID_EPISODE
        return None, ""


def _strict_subset(mask: np.ndarray, *, first: bool = False) -> np.ndarray:
    """``mask`` itself, or its first True alone where it is all True (or
    ``first``)."""
    if mask.all() or first:
        out = np.zeros(mask.shape, dtype=np.bool_)
        out[int(np.argmax(mask))] = True
        return out
    return np.array(mask, dtype=np.bool_)


def _drive(
    runner: _probe.Runner,
    mode: AutoresetMode,
    steps: int,
    seed: int,
    optional: str = "clears",
) -> _Plan:
    """Run ``steps`` steps as training code in ``mode`` would, with the masked
    resets :class:`_MaskedResets` makes. In a mode with reset steps, then step
    on until an episode ends, reset everything with ``seed + 1`` and step once:
    the reset must have cleared the pending autoresets."""
    n = runner.num_envs
    tracker = BoundaryTracker(mode, n)
    masks = _MaskedResets(mode, n, optional)
    plan = _Plan()
    if runner.reset(seed).error is not None:
        return plan
    tracker.reset(None)

    def step() -> Boundary | None:
        call = runner.step(runner.sample())
        if call.error is not None:
            return None
        b = tracker.step(*call.flags)
        if not b.real.all():
            plan.ignored[call.index] = ~b.real
        return b

    for _ in range(steps):
        b = step()
        if b is None:
            return plan
        mask, kind = masks.after(b, tracker.awaiting_reset)
        if mask is None:
            continue
        pending = mask & tracker.awaiting_reset & masks.clears
        reset = runner.reset_mask(mask)
        if reset.error is not None:
            return plan
        tracker.reset(mask)
        plan.masked(reset.index, mask, pending, kind)
    if not resets_on_next_step(mode):
        return plan
    for _ in range(steps):
        if tracker.awaiting_reset.any():
            pending = tracker.awaiting_reset.copy()
            reset = runner.reset(seed + 1)
            if reset.error is None:
                tracker.reset(None)
                plan.reseeded, plan.pending = reset.index, pending
                runner.step(runner.sample())
            return plan
        if step() is None:
            return plan
    return plan


@dataclass
class _Runs:
    """The calls of the other instances, each replaying some of the checked run:

    ``second``: all of it, with other actions where :meth:`_Plan.change` says;
    ``fresh``: ``reset(seed=seed + 1)`` and the run's last step (after
    :attr:`_Plan.reseeded`); ``cleared``: up to the step after
    :attr:`_Plan.cleared`, with other actions there for its sub-envs;
    ``unmasked``: the run without the masked reset of :attr:`_Plan.mid_episode`,
    up to that sub-env's next episode end.
    """

    second: list[_probe.Call]
    fresh: list[_probe.Call] = dataclasses.field(default_factory=list)
    cleared: list[_probe.Call] = dataclasses.field(default_factory=list)
    unmasked: list[_probe.Call] = dataclasses.field(default_factory=list)


def _replayed(
    instances: _probe.Instances,
    seed: int,
    calls: Sequence[_probe.Call],
    change: Callable[[_probe.Call], np.ndarray | None] | None = None,
) -> list[_probe.Call]:
    runner = _probe.Runner(instances.new(), seed)
    _probe.replay(runner, calls, change)
    instances.close(runner.env)
    return runner.calls


def _other_runs(
    instances: _probe.Instances,
    calls: list[_probe.Call],
    plan: _Plan,
    seed: int,
) -> _Runs:
    """The other instances' runs (see :class:`_Runs`)."""
    runs = _Runs(_replayed(instances, seed, calls, plan.change))
    if plan.reseeded is not None:
        third = _probe.Runner(instances.new(), seed)
        if third.reset(seed + 1).error is None:
            third.step(calls[-1].actions or [])
        instances.close(third.env)
        runs.fresh = third.calls
    if (
        plan.cleared is not None
        and plan.cleared[0] < len(calls)
        and calls[plan.cleared[0]].kind == "step"
    ):
        index, which = plan.cleared
        runs.cleared = _replayed(
            instances,
            seed,
            calls[: index + 1],
            lambda call: which if call.index == index else None,
        )
    if plan.mid_episode is not None:
        index, i = plan.mid_episode
        end = next(
            (
                call.index
                for call in calls[index + 1 :]
                if call.kind == "step" and call.ended.size and call.ended[i]
            ),
            None,
        )
        if end is not None:
            kept = [call for call in calls[: end + 1] if call.index != index]
            runs.unmasked = _replayed(instances, seed, kept)
    return runs


def _final_obs_sharing_memory(result: Any) -> list[int]:
    """The sub-envs whose ``info["final_obs"]`` entry shares memory with the
    returned observations (so the next call may overwrite it)."""
    if not (isinstance(result, tuple) and len(result) == 5):
        return []
    found = final_observations(result[4])
    final = None if found is None else found[1]
    if not isinstance(final, np.ndarray) or final.dtype != object:
        return []
    returned = _leaves(result[0])
    return [
        i
        for i, entry in enumerate(final)
        if entry is not None
        and any(
            np.shares_memory(leaf, other)
            for leaf in _leaves(entry)
            for other in returned
        )
    ]


def _leaves(value: Any) -> list[np.ndarray]:
    return [array for _, array in arrays_in(value)]


def _first_failure(
    mode: AutoresetMode,
    spaces: _Spaces,
    first: Sequence[_probe.Call],
    runs: _Runs,
    returned: _Returned,
    seed: int,
    plan: _Plan,
) -> Difference | None:
    """The earliest difference of any kind (ties: structure, the mode's
    predictions, a masked reset's other sub-envs, the mode's details,
    reproducibility, results changed later, masked resets); then, if none, whether ``reset(seed=...)`` cleared the
    pending autoresets."""
    found = [
        next(_structure_differences(spaces, first), None),
        next(_probe.mode_differences(mode, first, spaces.num_envs, runs.second), None),
        next(_masked_keeps_differences(mode, first), None),
        next(_detail_differences(mode, spaces, first, returned.aliased), None),
        _reproducibility_difference(first, runs.second, seed, plan.reseeded),
        next(returned.differences(), None),
        next(_cleared_differences(mode, first, runs.cleared, plan), None),
        next(_unmasked_differences(mode, first, runs.unmasked, plan), None),
    ]
    diff = min(
        (diff for diff in found if diff is not None),
        key=lambda diff: diff.call,
        default=None,
    )
    if diff is None and plan.reseeded is not None:
        diff = next(
            _reseed_differences(mode, first, runs.second, runs.fresh, plan), None
        )
    return diff


def _structure_differences(
    spaces: _Spaces, calls: Sequence[_probe.Call]
) -> Iterator[Difference]:
    n = spaces.num_envs
    for call in calls:
        raw = call.raw
        if isinstance(raw, tuple) and len(raw) in (2, 5):
            yield from _observation_differences(spaces, call.index, call.kind, raw[0])
            if len(raw) == 5:
                for name, value, kinds in (
                    ("rewards", raw[1], "fiu"),
                    ("terminations", raw[2], "b"),
                    ("truncations", raw[3], "b"),
                ):
                    if not (
                        isinstance(value, np.ndarray)
                        and value.shape == (n,)
                        and value.dtype.kind in kinds
                    ):
                        yield Difference(
                            call.index,
                            call.kind,
                            None,
                            name,
                            diff_array(n, kinds),
                            diff_got_array(value),
                        )
            if not isinstance(raw[-1], dict):
                yield Difference(
                    call.index,
                    call.kind,
                    None,
                    "infos",
                    errors.diff_dict(),
                    type(raw[-1]).__name__,
                )
        if call.error is not None:
            yield Difference(
                call.index,
                call.kind,
                None,
                "result",
                errors.diff_a_result(),
                errors.diff_raised(call.error),
                note_env_raised(),
            )
            return


def _observation_differences(
    spaces: _Spaces, index: int, kind: str, batch: Any
) -> Iterator[Difference]:
    if _contains(spaces.observation_space, batch):
        return
    try:
        items = per_sub_env(spaces.observation_space, batch, spaces.num_envs)
    except (TypeError, ValueError, IndexError):
        items = []
    for i, item in enumerate(items):
        if not _contains(spaces.single_observation_space, item):
            yield Difference(
                index,
                kind,
                i,
                "obs",
                diff_element(spaces.single_observation_space),
                describe(item),
            )
            return
    yield Difference(
        index,
        kind,
        None,
        "obs",
        diff_element(spaces.observation_space),
        describe(batch),
    )


def _contains(space: Space, value: Any) -> bool:
    try:
        return bool(space.contains(value))
    except Exception:
        return False


def _detail_differences(
    mode: AutoresetMode,
    spaces: _Spaces,
    calls: Sequence[_probe.Call],
    aliased: dict[int, list[int]],
) -> Iterator[Difference]:
    """What the mode's contract says beyond the probe's predictions: the
    ``final_info`` keys, the final observations themselves, and the infos of a
    masked reset (in every mode)."""
    ends: list[tuple[_probe.Call, int]] = []
    for view in _probe.views(mode, calls, spaces.num_envs):
        call = view.call
        if call.error is not None or not isinstance(call.infos, dict):
            return
        if call.kind == "reset(mask)" and call.mask is not None:
            yield from _masked_info_differences(mode, call, call.mask)
        if view.boundary is None:
            continue
        final = view.boundary.final_in_info
        problem = final_layout_problem(call.infos, final)
        if problem is not None:
            absent = problem.expected in (errors.diff_no_key(), "False")
            yield Difference(
                call.index,
                call.kind,
                None if absent and problem.expected != "False" else problem.sub_env,
                problem.field,
                problem.expected,
                describe(problem.got if problem.present else MISSING),
                errors.note_final_obs_absent(mode, final_in_info(mode))
                if absent
                else errors.note_final_obs_present(mode),
            )
            return
        if not final.any():
            continue
        yield from _final_differences(mode, spaces, call, final, aliased)
        ends.extend((call, i) for i in np.flatnonzero(final).tolist())
    yield from _final_obs_overwritten(mode, calls, ends)


def _final_differences(
    mode: AutoresetMode,
    spaces: _Spaces,
    call: _probe.Call,
    final: np.ndarray,
    aliased: dict[int, list[int]],
) -> Iterator[Difference]:
    note = errors.note_final_obs_present(mode)
    obs = cast(tuple, final_observations(call.infos))[1]
    shared = set(aliased.get(call.index, ()))
    for i in np.flatnonzero(final).tolist():
        if not _contains(spaces.single_observation_space, obs[i]):
            yield Difference(
                call.index,
                call.kind,
                i,
                _FINAL_OBS_FIELD,
                diff_element(spaces.single_observation_space),
                describe(obs[i]),
                note,
            )
            return
        if i in shared:
            yield Difference(
                call.index,
                call.kind,
                i,
                _FINAL_OBS_FIELD,
                diff_own_memory(),
                diff_shared_memory(),
                note_final_obs_overwritten(mode),
            )
            return


#: How a difference in the final observations is labelled.
_FINAL_OBS_FIELD = f"info[{FINAL_OBS!r}]"


def _final_obs(call: _probe.Call) -> Any:
    """The final observations (object array) of a step whose layout was checked."""
    return cast(tuple, final_observations(call.infos))[1]


def _final_obs_overwritten(
    mode: AutoresetMode,
    calls: Sequence[_probe.Call],
    ends: list[tuple[_probe.Call, int]],
) -> Iterator[Difference]:
    """Every final observation equals the observation returned with it, which
    starts the next episode, although the env's observations vary: the final
    observation was overwritten by the reset's. (With fewer than three episode
    ends, or observations that never change, nothing is concluded.)"""
    if len(ends) < 3:
        return
    for call, i in ends:
        if call.obs is None or not same(_final_obs(call)[i], call.obs[i], strict=False):
            return
    seen = [obs for call in calls if call.obs is not None for obs in call.obs]
    if all(same(obs, seen[0], strict=False) for obs in seen):
        return
    call, i = ends[0]
    yield Difference(
        call.index,
        call.kind,
        i,
        _FINAL_OBS_FIELD,
        diff_final_not_reset(),
        describe(_final_obs(call)[i]),
        note_final_obs_is_reset_obs(mode, len(ends)),
    )


def _masked_info_differences(
    mode: AutoresetMode, call: _probe.Call, mask: np.ndarray
) -> Iterator[Difference]:
    """A masked reset's info holds data only for the masked sub-envs."""
    infos = call.infos
    for key, value in infos.items():
        if not key.startswith("_") or key[1:] not in infos:
            continue
        try:
            present = np.asarray(value, dtype=np.bool_)
        except (TypeError, ValueError):
            continue
        if present.shape != mask.shape:
            continue
        for j in np.flatnonzero(present & ~mask).tolist():
            yield Difference(
                call.index,
                call.kind,
                j,
                f"info[{key!r}]",
                "False",
                "True",
                note_masked_info(mode),
            )
            return


def _masked_keeps_differences(
    mode: AutoresetMode, calls: Sequence[_probe.Call]
) -> Iterator[Difference]:
    """A masked reset returns the observations last returned for the sub-envs
    it does not reset, in every mode (in DISABLED, a prediction of the probe's
    too)."""
    last: _probe.Call | None = None
    for call in calls:
        if call.error is not None:
            return
        if call.kind == "reset(mask)" and last is not None:
            if call.obs is None or last.obs is None or call.mask is None:
                return
            for j in np.flatnonzero(~call.mask).tolist():
                if not same(call.obs[j], last.obs[j]):
                    yield Difference(
                        call.index,
                        call.kind,
                        j,
                        "obs",
                        describe(last.obs[j]),
                        describe(call.obs[j]),
                        _probe.note_masked_keeps(mode)
                        if caller_resets(mode)
                        else note_masked_keeps_optional(mode),
                    )
                    return
        last = call


def _cleared_differences(
    mode: AutoresetMode,
    calls: Sequence[_probe.Call],
    cleared: Sequence[_probe.Call],
    plan: _Plan,
) -> Iterator[Difference]:
    """The step right after a masked reset of sub-envs whose autoreset was
    pending (NEXT_STEP) is no autoreset: where it looks like one (reward 0, flags
    False, and its action ignored: another instance, sent another action there,
    returned the same), the masked reset left it pending."""
    if plan.cleared is None:
        return
    index, which = plan.cleared
    if index >= len(cleared) or index >= len(calls):
        return
    step, other = calls[index], cleared[index]
    if step.kind != "step" or step.error is not None or other.error is not None:
        return
    for i in np.flatnonzero(which).tolist():
        if _probe.looks_reset(step, other, i):
            yield Difference(
                step.index,
                step.kind,
                i,
                "step()",
                diff_real_step(),
                _probe.diff_autoreset(),
                note_masked_reset_clears(mode, index - 1),
            )
            return


def _unmasked_differences(
    mode: AutoresetMode,
    calls: Sequence[_probe.Call],
    unmasked: Sequence[_probe.Call],
    plan: _Plan,
) -> Iterator[Difference]:
    """A masked reset resets the masked sub-env. One reset in the middle of its
    episode that came back with its observation unchanged, and then returned
    exactly what a run without that reset returns (``unmasked``: observations,
    rewards, flags), up to and including its episode's end, was not reset."""
    if plan.mid_episode is None or not unmasked:
        return
    index, i = plan.mid_episode
    reset, before = calls[index], calls[index - 1]
    if reset.obs is None or before.obs is None or not same(reset.obs[i], before.obs[i]):
        return
    for call in calls[index + 1 :]:
        if call.index - 1 >= len(unmasked):
            return
        other = unmasked[call.index - 1]
        if call.error is not None or other.error is not None or other.kind != call.kind:
            return
        if _probe.differs_at(call, other, i) is not None:
            return
        if call.kind == "step" and call.ended[i]:
            yield Difference(
                index,
                reset.kind,
                i,
                "obs",
                diff_new_episode(),
                describe(reset.obs[i]),
                note_masked_not_reset(mode, call.index),
            )
            return


def _reproducibility_difference(
    first: Sequence[_probe.Call],
    second: Sequence[_probe.Call],
    seed: int,
    upto: int | None,
) -> Difference | None:
    label = errors.diff_instance(2)
    diff = next(_probe.run_differences(first, second, upto=upto, run=label), None)
    if diff is None:
        return None
    note = note_not_reproducible(seed)
    if diff.sub_env is not None:
        for a, b in zip(first, second, strict=False):
            if a.index > diff.call:
                break
            actions_a, actions_b = a.actions, b.actions
            if actions_a is None or actions_b is None:
                continue
            if not same(actions_a[diff.sub_env], actions_b[diff.sub_env]):
                note = note_ignored_action_mattered(
                    a.index,
                    describe(actions_a[diff.sub_env]),
                    describe(actions_b[diff.sub_env]),
                )
                break
    return dataclasses.replace(diff, note=note)


def _reseed_differences(
    mode: AutoresetMode,
    first: Sequence[_probe.Call],
    second: Sequence[_probe.Call],
    fresh: Sequence[_probe.Call],
    plan: _Plan,
) -> Iterator[Difference]:
    """The step after ``reset(seed=seed + 1)``, made while some sub-envs awaited
    their autoreset, must not be that autoreset: where it looks like one (reward
    0, flags False, its action ignored: the replay sent another) and a fresh
    instance, given the same reset and actions, returns something else."""
    if plan.pending is None or plan.reseeded is None or len(fresh) != 2:
        return
    last, other, clean = first[-1], second[-1], fresh[-1]
    if last.index != plan.reseeded + 1 or other.index != last.index:
        return
    if any(call.error is not None for call in (last, other, clean)):
        return
    for i in np.flatnonzero(plan.pending).tolist():
        if not _probe.looks_reset(last, other, i):
            continue
        differs = _probe.differs_at(clean, last, i)
        if differs is not None:
            name, expected, got = differs
            yield Difference(
                last.index,
                last.kind,
                i,
                name,
                describe(expected),
                describe(got),
                note_reset_clears_autoreset(mode, plan.reseeded),
            )
            return


def _diagnosis(
    factory: Callable[[], VectorEnv], steps: int, seed: int, mode: AutoresetMode
) -> str:
    """What :func:`vecmode.probe_mode` finds, for a failure message ("" if it
    finds the declared mode, or cannot tell)."""
    try:
        found = _probe.probe_mode(factory, max_steps=steps, seed=seed)
    except Exception:
        return ""
    if found.mode is None or found.mode is mode:
        return ""
    return check_env_diagnosis(found.mode, caller_resets(found.mode))


# ------------------------------------------------------------------ messages
def diff_array(num_envs: int, kinds: str) -> str:
    dtype = "bool" if kinds == "b" else "float or int"
    return f"an ndarray of shape ({num_envs},) and dtype {dtype}"


def diff_got_array(value: Any) -> str:
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return f"{type(value).__name__} of shape {value.shape} and dtype {value.dtype}"
    return type(value).__name__


def diff_element(space: Any) -> str:
    return f"an element of {space}"


def diff_own_memory() -> str:
    return "an array of its own"


def diff_shared_memory() -> str:
    return "an array sharing memory with the returned observations"


def diff_final_not_reset() -> str:
    return "the ended episode's last observation"


def note_env_raised() -> str:
    return "the run makes only calls that the declared mode allows"


def note_masked_info(mode: AutoresetMode) -> str:
    return (
        f"in {mode.value} mode the info of reset(options={{'reset_mask': mask}}) "
        f"holds data only for the reset sub-envs"
    )


def note_final_obs_overwritten(mode: AutoresetMode) -> str:
    return (
        f"in {mode.value} mode the final observation must outlive the reset; this "
        f"one is a view of the observation buffer, which the reset and later calls "
        f"overwrite"
    )


def note_final_obs_is_reset_obs(mode: AutoresetMode, count: int) -> str:
    return (
        f"at all {count} episode ends, info['final_obs'] equals the observation "
        f"step() returned, which in {mode.value} mode starts the next episode, "
        f"although the env's observations vary: the final observation was "
        f"overwritten by the reset's"
    )


def note_not_reproducible(seed: int) -> str:
    return (
        f"a second instance, reset with seed={seed} and given the same actions, "
        f"returned something else: the env must be deterministic under "
        f"reset(seed=...)"
    )


def note_reset_clears_autoreset(mode: AutoresetMode, call: int) -> str:
    return (
        f"in {mode.value} mode reset() ends every episode, clearing pending "
        f"autoresets: this sub-env's episode had ended before the reset at call "
        f"{call}, and this step looks like its autoreset (reward 0, flags False, "
        f"action ignored); a fresh instance, given the same reset and actions, "
        f"returns the expected value"
    )


def note_ignored_action_mattered(call: int, base: str, changed: str) -> str:
    return (
        f"the second instance got action {changed} instead of {base} at call {call}, "
        f"a reset step whose action is ignored, and that changed this"
    )


def check_env_positive_int(name: str, got: Any) -> str:
    return f"check_vector_env: {name} must be an int >= 1, got {got!r}."


def check_env_undeclared(env: str) -> str:
    return (
        f"{env} declares no metadata['autoreset_mode'], and check_vector_env checks "
        f"an env against the mode it declares. Set metadata['autoreset_mode'] to "
        f"the gymnasium.vector.AutoresetMode the env implements "
        f"(vecmode.probe_mode(factory) tells how it behaves)."
    )


def check_env_failed(env: str, mode: AutoresetMode, diff: str, diagnosis: str) -> str:
    text = f"{env} does not behave as {mode.value}, the mode it declares: {diff}."
    return f"{text} {diagnosis}" if diagnosis else text


def check_env_bad_declaration(env: str, problem: str) -> str:
    return f"{env} declares metadata['autoreset_mode'] that is not a mode: {problem}"


def check_env_diagnosis(found: AutoresetMode, caller_resets: bool = False) -> str:
    text = (
        f"vecmode.probe_mode finds that it behaves as {found.value}: declare that "
        f"mode, or fix the env."
    )
    if not caller_resets:
        return text
    return (
        f"{text} But first make sure that its step() does not reset a sub-env "
        f"inside the step that ends its episode (returning the next episode's "
        f"first observation with terminated or truncated True): such an env "
        f"behaves as {found.value} to the probe, but loses every final "
        f"observation, and no mode describes it. It must report the ended "
        f"episode's last observation in info['final_obs'] (with "
        f"info['_final_obs'], and its info in info['final_info'] / "
        f"info['_final_info']) and declare SameStep."
    )


def check_env_few_ends(env: str, ends: int, steps: int, least: int) -> str:
    return (
        f"{env}: {ends} episode end(s) in {steps} steps, fewer than "
        f"min_episode_ends={least}, and a mode's contract is about episode ends: "
        f"raise steps, or make the episodes shorter."
    )


def check_env_probe_disagrees(env: str, mode: AutoresetMode, probe: str) -> str:
    return (
        f"{env} declares {mode.value}, but vecmode.probe_mode does not find it "
        f"behaving so: {probe}"
    )


def check_env_checks(
    mode: AutoresetMode,
    final_in_info: bool,
    reset_steps: bool,
    caller_resets: bool,
    masked: str = "caller",
    reuses_observations: bool = False,
) -> tuple[str, ...]:
    checks = [
        "observations in the observation space; rewards, terminations and "
        "truncations of shape (num_envs,) and the right dtypes; infos dicts",
    ]
    if final_in_info:
        checks.append(
            "final_obs / _final_obs and final_info / _final_info exactly at episode "
            "ends, True exactly for the ended sub-envs; final observations in the "
            "single observation space, not overwritten by the reset"
        )
    else:
        checks.append("no final_obs / final_info in info")
    if reset_steps:
        checks.append(
            "the step after an episode ends: reward 0, terminated and truncated "
            "False, action ignored; reset() clears pending autoresets"
        )
    if caller_resets:
        checks.append("step does not reset an ended sub-env")
    checks += [
        check_env_masked_resets(masked, reset_steps),
        check_env_returned_kept(reuses_observations),
        "the same seed and actions reproduce the run",
        f"vecmode.probe_mode finds {mode.value}",
    ]
    return tuple(checks)


def check_env_report(
    env: str, mode: AutoresetMode, steps: int, ends: int, checks: Iterable[str]
) -> str:
    lines = [f"{env} conforms to {mode.value}: {steps} steps, {ends} episode ends"]
    lines += [f"  - {check}" for check in checks]
    return "\n".join(lines)


def check_env_read_through(layer: str) -> str:
    return (
        f"final observations in the layout the env's class declares, read through "
        f"{layer} (as vecmode.with_autoreset reads them)"
    )


def check_env_summary(env: str, mode: AutoresetMode, steps: int, ends: int) -> str:
    return f"{env} conforms to {mode.value}: {steps} steps, {ends} episode ends"


def check_env_masked_resets(masked: str, reset_steps: bool) -> str:
    if masked == "ignores":
        return (
            "no masked reset made: its class declares that reset(options="
            "{'reset_mask': m}) resets every sub-env (masked_reset='ignores', "
            "vecmode.register_vector_env)"
        )
    if masked == "masked rows":
        return (
            "no masked reset made: its class declares that reset(options="
            "{'reset_mask': m}) returns the masked sub-envs' rows only "
            "(reset_returns='masked', vecmode.register_vector_env)"
        )
    when = (
        "after each episode end, and once in the middle of an episode"
        if masked == "caller"
        else "of a strict subset of the sub-envs, after an episode end and in the "
        "middle of one"
    )
    text = (
        f"reset(options={{'reset_mask': m}}) {when}, resets exactly the masked "
        f"sub-envs: the others' observations unchanged, infos only for the "
        f"masked ones, a masked sub-env not left as it was"
    )
    if reset_steps and masked == "clears":
        text += "; it clears the masked sub-envs' pending autoresets, not the others'"
    if reset_steps and masked == "keeps-pending":
        text += (
            "; the others' pending autoresets kept (its class declares that the "
            "masked ones' stay pending too: masked_reset='keeps-pending')"
        )
    return text


def check_env_returned_kept(reuses_observations: bool) -> str:
    if reuses_observations:
        return (
            "what a call returned is not changed by later calls, the observations "
            "excepted (the env is built with copy=False: it may reuse its "
            "observation buffer)"
        )
    return "what a call returned is not changed by later calls"


def record_env_stack(env: str, stack: tuple[str, ...]) -> str:
    return (
        f"check_vector_env proved {env}, which the factory built as a stack "
        f"({' over '.join(stack)}), not one vector env class; record a "
        f"check_vector_env run of a factory that builds the env alone."
    )


def diff_unchanged() -> str:
    return "to stay as returned"


def diff_changed_by(by: int | None) -> str:
    return "changed by a later call" if by is None else f"changed by call {by}"


def diff_real_step() -> str:
    return "a step of the episode that the masked reset started"


def diff_new_episode() -> str:
    return "a new episode's first observation"


def note_return_new_arrays(reuses_observations: bool) -> str:
    text = (
        "what a call returns must not change later: return new arrays (and a new "
        "info dict), not ones the env writes into again, since a caller keeps "
        "them (a rollout buffer, vecmode.TransitionCollector's transitions)"
    )
    if reuses_observations:
        text += (
            "; copy=False lets the env reuse its observation buffer, not its "
            "other arrays"
        )
    return text


def note_masked_keeps_optional(mode: AutoresetMode) -> str:
    return (
        f"in {mode.value} mode too, reset(options={{'reset_mask': mask}}) resets "
        f"only the masked sub-envs (as Gymnasium's vector envs do, and as "
        f"vecmode's conversions of the env rely on); the others' observations "
        f"come back unchanged. If the env resets every sub-env whatever the mask, "
        f"declare it: vecmode.register_vector_env(its class, "
        f"masked_reset='ignores'), and this check makes no masked reset"
    )


def note_masked_reset_clears(mode: AutoresetMode, call: int) -> str:
    return (
        f"in {mode.value} mode reset(options={{'reset_mask': mask}}) clears the "
        f"masked sub-envs' pending autoresets: this sub-env's episode had ended "
        f"before the masked reset at call {call}, and this step looks like its "
        f"autoreset (another instance, sent another action here, returned the "
        f"same). If the env keeps them pending, declare it: "
        f"vecmode.register_vector_env(its class, masked_reset='keeps-pending')"
    )


def note_masked_not_reset(mode: AutoresetMode, end: int) -> str:
    return (
        f"in {mode.value} mode reset(options={{'reset_mask': mask}}) resets the "
        f"masked sub-envs; this one, masked in the middle of its episode, came "
        f"back unchanged, and then returned exactly what an instance given the "
        f"same calls without this reset returned, up to its episode's end at "
        f"call {end}: it was not reset"
    )
