"""``check_vector_env``: prove that a vector env behaves as the mode it declares.

For authors of custom vector envs (a batched numpy or JAX env, a new backend):
:func:`check_vector_env` runs the env across several episode ends and checks,
call by call, the contract of the autoreset mode that its
``metadata["autoreset_mode"]`` declares, and that :func:`vecmode.probe_mode`
finds the env behaving as that mode. The first difference raises
``AssertionError`` naming the call, the sub-env, the field, what was expected and
what the env returned (so it reads well in any test runner); success returns a
:class:`VectorEnvReport`.

>>> import gymnasium as gym
>>> from vecmode.testing.vector_env import check_vector_env
>>> report = check_vector_env(lambda: gym.make_vec("CartPole-v1", num_envs=3))
>>> print(report)  # doctest: +ELLIPSIS
CartPoleVectorEnv(CartPole-v1, num_envs=3) conforms to NextStep: ... steps, ... episode ends
  - observations in the observation space; rewards, terminations and truncations of shape (num_envs,) and the right dtypes; infos dicts
  - no final_obs / final_info in info
  - the step after an episode ends: reward 0, terminated and truncated False, action ignored; reset() clears pending autoresets
  - the same seed and actions reproduce the run
  - vecmode.probe_mode finds NextStep
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
from gymnasium.spaces import Space
from gymnasium.vector import VectorEnv

# ``vecmode.probe`` imports this package's ``_compare``, so this module refers to
# the probe module (resolved at call time), never to names imported from it: that
# keeps ``import vecmode`` working whichever of the two is imported first.
from vecmode import errors
from vecmode import probe as _probe
from vecmode.modes import (
    FINAL_OBS,
    AutoresetMode,
    BoundaryTracker,
    caller_resets,
    final_in_info,
    final_layout_problem,
    final_observations,
    mode_of,
    resets_on_next_step,
)
from vecmode.testing._compare import MISSING, Difference, describe, per_sub_env, same

__all__ = ["VectorEnvReport", "check_vector_env"]


@dataclass(frozen=True)
class VectorEnvReport:
    """What :func:`check_vector_env` proved. ``str(report)`` is a short summary.

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
    is reset with ``seed`` and stepped ``steps`` times with seeded random actions
    (in DISABLED mode, ended sub-envs are reset with ``reset_mask``, and once a
    running sub-env too); a second instance replays the same calls. Checked, call
    by call:

    * in every mode: observations in the observation space; rewards,
      terminations and truncations arrays of shape ``(num_envs,)`` (numbers,
      bools); infos dicts; nothing raises; the second run returns the same
      (observations, rewards, flags, final observations, info keys);
    * SAME_STEP: ``final_obs`` / ``_final_obs`` and ``final_info`` /
      ``_final_info`` exactly on the steps where episodes end, the masks True
      exactly for the ended sub-envs, each final observation in the single
      observation space and not the observation that starts the next episode;
    * NEXT_STEP: none of those keys; the step after an episode's end has
      reward 0, terminated and truncated False, and ignores its action (the
      second run sends another action there and must get the same);
    * DISABLED: none of those keys; a masked reset returns the other sub-envs'
      observations unchanged and infos only for the masked sub-envs;

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
    aliased: dict[int, list[int]] = {}

    def inspect(call: _probe.Call, result: Any) -> None:
        aliased[call.index] = _final_obs_sharing_memory(result)

    with _probe.Instances(factory, "check_vector_env") as instances:
        env = instances.new()
        name = repr(env)
        try:
            mode = mode_of(env)
        except ValueError as exc:
            raise AssertionError(check_env_bad_declaration(name, str(exc))) from None
        if mode is None:
            raise AssertionError(check_env_undeclared(name))
        spaces = _Spaces(
            int(env.num_envs), env.observation_space, env.single_observation_space
        )
        first = _probe.Runner(env, seed, inspect)
        plan = _drive(first, mode, steps, seed)
        instances.close(env)
        second = _probe.Runner(instances.new(), seed)
        _probe.replay(second, first.calls, plan.change)
        instances.close(second.env)
        fresh: list[_probe.Call] = []
        if plan.reseeded is not None:
            third = _probe.Runner(instances.new(), seed)
            if third.reset(seed + 1).error is None:
                third.step(first.calls[-1].actions or [])
            fresh = third.calls

    diff = _first_failure(mode, spaces, first.calls, second.calls, aliased, seed, plan)
    if diff is None and plan.reseeded is not None:
        diff = next(
            _reseed_differences(mode, first.calls, second.calls, fresh, plan), None
        )
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
        )
        + _read_through(found),
        probe=found,
    )


def _read_through(found: _probe.ProbeResult) -> tuple[str, ...]:
    """The check line saying which layer the final observations were read
    through, where the env's class reports them its own way."""
    if found.read_through is None:
        return ()
    return (check_env_read_through(found.read_through),)


@dataclass
class _Plan:
    """What the checked run did that its replay must know about.

    ``ignored``: per step whose action some sub-envs ignore (NEXT_STEP's reset
    steps), those sub-envs; the replay sends them other actions. ``reseeded``: the
    index of the ``reset(seed=seed + 1)`` made while ``pending`` sub-envs awaited
    their autoreset (modes with reset steps only); the run ends with one step
    after it, where the replay sends ``pending`` other actions too.
    """

    ignored: dict[int, np.ndarray] = dataclasses.field(default_factory=dict)
    reseeded: int | None = None
    pending: np.ndarray | None = None

    def change(self, call: _probe.Call) -> np.ndarray | None:
        """The sub-envs whose action the replay changes at ``call``."""
        if self.reseeded is not None and call.index == self.reseeded + 1:
            return self.pending
        return self.ignored.get(call.index)


def _drive(runner: _probe.Runner, mode: AutoresetMode, steps: int, seed: int) -> _Plan:
    """Run ``steps`` steps as training code in ``mode`` would: in DISABLED mode,
    reset ended sub-envs with ``reset_mask`` (and once a sub-env in the middle of
    its episode). In a mode with reset steps, then step on until an episode ends,
    reset everything with ``seed + 1`` and step once: the reset must have
    cleared the pending autoresets."""
    n = runner.num_envs
    tracker = BoundaryTracker(mode, n)
    plan = _Plan()
    extra_reset_done = not caller_resets(mode) or n < 2
    if runner.reset(seed).error is not None:
        return plan
    tracker.reset(None)

    def step() -> bool:
        call = runner.step(runner.sample())
        if call.error is not None:
            return False
        b = tracker.step(*call.flags)
        if not b.real.all():
            plan.ignored[call.index] = ~b.real
        return True

    for _ in range(steps):
        if not step():
            return plan
        mask = tracker.awaiting_reset if caller_resets(mode) else np.zeros(n, bool)
        if not mask.any() and not extra_reset_done:
            # once, reset a sub-env in the middle of its episode
            mask = np.zeros(n, dtype=np.bool_)
            mask[0] = True
            extra_reset_done = True
        if mask.any():
            if runner.reset_mask(mask).error is not None:
                return plan
            tracker.reset(mask)
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
        if not step():
            return plan
    return plan


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
    if isinstance(value, np.ndarray):
        return [value]
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _leaves(item)]
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in _leaves(item)]
    return []


def _first_failure(
    mode: AutoresetMode,
    spaces: _Spaces,
    first: Sequence[_probe.Call],
    second: Sequence[_probe.Call],
    aliased: dict[int, list[int]],
    seed: int,
    plan: _Plan,
) -> Difference | None:
    """The earliest difference of any kind (ties: structure, the mode's
    predictions, the mode's details, reproducibility)."""
    found = [
        next(_structure_differences(spaces, first), None),
        next(_probe.mode_differences(mode, first, spaces.num_envs, second), None),
        next(_detail_differences(mode, spaces, first, aliased), None),
        _reproducibility_difference(first, second, seed, plan.reseeded),
    ]
    return min(
        (diff for diff in found if diff is not None),
        key=lambda diff: diff.call,
        default=None,
    )


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
    masked reset."""
    by_caller = caller_resets(mode)
    ends: list[tuple[_probe.Call, int]] = []
    for view in _probe.views(mode, calls, spaces.num_envs):
        call = view.call
        if call.error is not None or not isinstance(call.infos, dict):
            return
        if call.kind == "reset(mask)" and by_caller and call.mask is not None:
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
    return check_env_diagnosis(found.mode)


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


def check_env_diagnosis(found: AutoresetMode) -> str:
    return (
        f"vecmode.probe_mode finds that it behaves as {found.value}: declare that "
        f"mode, or fix the env."
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
    mode: AutoresetMode, final_in_info: bool, reset_steps: bool, caller_resets: bool
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
        checks.append(
            "reset_mask resets exactly the masked sub-envs (others' observations "
            "unchanged, infos only for the masked ones); step does not reset an "
            "ended sub-env"
        )
    checks += [
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
