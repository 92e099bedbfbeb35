"""``vecmode.probe_mode``: find out which autoreset mode a vector env behaves as,
whatever its ``metadata["autoreset_mode"]`` claims."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

import numpy as np
from gymnasium.vector import VectorEnv

from vecmode import modes
from vecmode.errors import mode_names
from vecmode.modes import MODES, AutoresetMode, caller_resets, mode_of
from vecmode.replay.compare import Difference, raised, same
from vecmode.replay.predictions import (
    AUTORESET_STEP,
    action_changed,
    looks_reset,
    mode_differences,
    overwritten_finals,
    run_differences,
)
from vecmode.replay.record import CALL_TEXT, Call, Instances, Recorder, is_count

__all__ = ["ProbeResult", "probe_mode"]

#: What an env that looks as if the caller resets may really do.
LOSES_FINALS = (
    "An env whose step() resets a sub-env inside the step that ends its episode "
    "looks the same, but loses every final observation: it must report them in "
    "info['final_obs'] and declare SameStep."
)

#: What the probe says of the final observations and resets it saw.
_SEEN = {
    "masked": "final observations: in the infos, with a mask",
    "every-step": (
        "final observations: under info['final_observation'] on every step, with "
        "no mask (gymnax's layout): read it through a vecmode.simulators adapter"
    ),
    "lost": (
        "final observations: lost (none in the infos where the episode ended); "
        "see docs/simulators.md for the refusals and the opt-in approximation"
    ),
    "cached-first": (
        "resets to: the first state of the last reset(), cached (Brax's "
        "AutoResetWrapper), not a fresh reset"
    ),
}
#: Where SameStep's final observations at the first end are what the step returned.
OVERWRITTEN = (
    "But its info['final_obs'] at the first end is what the step returned, the next "
    "episode's first observation: unless the episode ended in its first state, the "
    "reset overwrote it (vecmode.testing.check_vector_env runs more ends)."
)
#: Where an ending step returned what a masked reset there returns.
_MASKED_RESET_RETURNS = "what a masked reset returns there"
#: Keys other libraries put final observations under (Gymnasium 0.29, ManiSkill3).
_FOREIGN_FINAL = "final_observation"


@dataclass(frozen=True)
class ProbeResult:
    """What :func:`probe_mode` found: the ``mode`` the env behaves as (None: it
    cannot tell, ``reason`` says why), the one it ``declared``, the call where
    the first episode ended (``ended_at``) and its sub-envs, the first prediction
    each ``rejected`` mode contradicted, and the layer the final observations
    were ``read_through`` where the env's class reports them its own way."""

    mode: AutoresetMode | None
    declared: AutoresetMode | None
    reason: str
    ended_at: int | None = None
    ended: tuple[int, ...] = ()
    rejected: Mapping[AutoresetMode, Difference] = field(
        default_factory=lambda: MappingProxyType({})
    )
    read_through: str | None = None
    #: Where the first episode end's final observations were (``Semantics``'
    #: values: ``"masked"``, ``"every-step"``, ``"lost"``), and what its ended
    #: sub-envs reset to where the probe can tell (``"cached-first"``; ``"fresh"``:
    #: the ending step reset them itself, then they went on as a new episode).
    final_observation: str | None = None
    resets_to: str | None = None

    @property
    def agrees(self) -> bool:
        """The probe found a mode and it is the declared one."""
        return self.mode is not None and self.mode is self.declared

    def __str__(self) -> str:
        head = "cannot tell the mode" if self.mode is None else "behaves as "
        head += "" if self.mode is None else self.mode.value
        claim = "no mode" if self.declared is None else self.declared.value
        lines = [f"{head} (declares {claim}): {self.reason}"]
        if self.read_through is not None:
            lines.append(f"final observations read through {self.read_through}")
        if self.final_observation is not None:
            lines.append(_SEEN[self.final_observation])
        if self.resets_to == "cached-first":
            lines.append(_SEEN[self.resets_to])
        if self.ended_at is not None:
            subs = ", ".join(str(i) for i in self.ended)
            lines.append(f"first episode end: call {self.ended_at}, sub-env(s) {subs}")
        if len(self.rejected) < len(AutoresetMode):  # else the reason lists them
            lines += [f"not {m.value}: {diff}" for m, diff in self.rejected.items()]
        return "\n".join(
            textwrap.fill(line, 100, subsequent_indent="  ", break_on_hyphens=False)
            for line in lines
        )


def probe_mode(
    env_factory: Callable[[], VectorEnv], *, max_steps: int = 1000, seed: int = 0
) -> ProbeResult:
    """The autoreset mode a vector env behaves as, whatever it declares.

    Four to six throwaway instances run and replay an episode end
    (``docs/authors.md`` says how); the mode whose predictions all hold is the
    answer.

    Args:
        env_factory: builds a new vector env on each call.
        max_steps: the most steps to wait for an episode to end.
        seed: the reset seed and the seed of the random actions.

    >>> import gymnasium as gym
    >>> result = probe_mode(lambda: gym.make_vec("CartPole-v1", num_envs=4))
    >>> print(result)  # doctest: +ELLIPSIS +NORMALIZE_WHITESPACE
    behaves as NextStep (declares NextStep): only NextStep's predictions hold.
    first episode end: call ..., sub-env(s) ...
    not SameStep: call ... (step), sub-env ..., info['_final_obs']: expected True,
      got <no such key> (...)
    not Disabled: call ... (step), sub-env ..., step(): expected ..., got an autoreset step ...
    """
    seed = _checked_seed(max_steps, seed)
    with Instances(env_factory, "vecmode.probe_mode") as instances:
        env = instances.new()
        through = instances.read_through
        try:
            declared = mode_of(env)
        except ValueError as error:  # (check_stack and require_mode raise too)
            raise ValueError(f"vecmode.probe_mode: {error}") from None
        first = Recorder(env, seed)
        end = _until_an_end(first, seed, int(max_steps))
        if end is None or end.error is not None:
            reason = _no_end_reason(first.calls[-1], int(max_steps), seed)
            return ProbeResult(None, declared, reason, read_through=through)
        ended = end.ended.copy()
        seen = _seen(first.calls, end)
        first.step(first.sample())  # step the ended sub-envs without a reset
        instances.close(env)
        changed, masked, again = _replays(instances, seed, first.calls, ended)
        in_step = _reset_in_step(first.calls, changed, instances, seed, seen)
    ended_subs = tuple(np.flatnonzero(ended).tolist())
    result = ProbeResult(
        None, declared, "", end.index, ended_subs, read_through=through
    )
    resets_to = "fresh" if in_step else seen[1]
    result = replace(result, final_observation=seen[0], resets_to=resets_to)
    replays = ((changed, end.index), (masked, end.index), (again, None))
    for number, (other, upto) in enumerate(replays, start=2):
        label = f"instance {number}"
        diff = next(run_differences(first.calls, other, upto=upto, run=label), None)
        if diff is not None:
            reason = (
                f"the env is not deterministic under reset(seed={seed}) and the same "
                f"actions: {diff}"
            )  # (what it does at an episode's end is unknown then)
            return replace(result, reason=reason, final_observation=None)
    return _cautioned(_fit(result, first, changed, masked, in_step), first.calls, end)


def _cautioned(result: ProbeResult, calls: list[Call], end: Call) -> ProbeResult:
    """``result``, cautioned where SameStep's final observations at the first end
    are what the step returned (one end: it may have ended in its first state)."""
    if not (result.mode and modes.final_in_info(result.mode)):
        return result
    ends = [(end, i) for i in result.ended]
    if overwritten_finals(result.mode, calls, ends, least=1) is None:
        return result
    return replace(result, reason=f"{result.reason} {OVERWRITTEN}")


def _checked_seed(max_steps: Any, seed: Any) -> int:
    """``seed`` as an int, once both arguments are checked."""
    if not is_count(max_steps):
        raise ValueError(f"max_steps must be an int >= 1, got {max_steps!r}.")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int, got {seed!r}.")
    return int(seed)


def _until_an_end(recorder: Recorder, seed: int, max_steps: int) -> Call | None:
    """Reset, step until an episode ends: that call, or one that raised, or None."""
    call = recorder.reset(seed)
    for _ in range(max_steps):
        if call.error is not None:
            return call
        call = recorder.step(recorder.sample())
        if call.error is None and call.ended.any():
            return call
    return call if call.error is not None else None


def _seen(calls: list[Call], end: Call) -> tuple[str | None, str | None]:
    """Where the first episode end's final observations were (None: in the
    infos, not in Gymnasium's layout), and ``"cached-first"`` if each ended
    sub-env came back to its first observation."""
    steps = [c for c in calls if c.kind == "step" and isinstance(c.infos, dict)]
    if any(_FOREIGN_FINAL in c.infos for c in steps if c is not end):
        return "every-step", None
    infos = end.infos if isinstance(end.infos, dict) else {}
    if modes.final_observations(infos) is not None or _FOREIGN_FINAL in infos:
        return "masked", None
    if modes.FINAL_OBS in infos:  # without its mask: the mode checks say so
        return None, None
    first, rows = calls[0].obs, np.flatnonzero(end.ended)
    cached = (
        first is not None
        and end.obs is not None
        and all(same(end.obs[i], first[i], strict=False) for i in rows)
    )
    # without final observations, an end the step reset shows only if cached
    return ("lost", "cached-first") if cached else ("lost", None)


def _no_end_reason(last: Call, max_steps: int, seed: int) -> str:
    if last.error is None:
        return (
            f"no episode ended within {max_steps} steps (seed {seed}, random "
            f"actions): raise max_steps, or make the episodes shorter"
        )
    return (
        f"call {last.index} ({CALL_TEXT[last.kind]}), with no episode ended "
        f"before it, raised {raised(last.error)}"
    )


def _replays(
    instances: Instances, seed: int, calls: list[Call], ended: np.ndarray
) -> tuple[list[Call], list[Call], list[Call]]:
    """The first run replayed with other actions, with a masked reset, exactly."""
    *before, last = calls
    changed = instances.replay(
        seed, calls, lambda call: ended if call is last else None
    )
    reset = Call(last.index, "reset(mask)", mask=ended)
    masked = instances.replay(seed, [*before, reset, last])
    return changed, masked, instances.replay(seed, calls)


def _reset_in_step(
    calls: list[Call],
    changed: list[Call],
    instances: Instances,
    seed: int,
    seen: tuple[Any, Any],
) -> Difference | None:
    """Where the ending step ``calls[-2]``, with no final observation in
    Gymnasium's keys (``seen``), reset its ended sub-envs itself: the next step,
    with no reset, went on as a new episode (not NextStep's reset step, by
    ``changed``), and each returned what a masked reset made instead returns, or
    the same with other actions (so may a Disabled env stepped past its end)."""
    end, after = calls[-2], calls[-1]
    if seen not in (("lost", None), ("masked", None)) or end.obs is None:
        return None
    if modes.final_observations(end.infos) is not None:  # SameStep's own
        return None
    rows = np.flatnonzero(end.ended).tolist()
    if after.error or after.ended is None or after.ended[rows].any():
        return None
    if all(looks_reset(after, changed[-1], i) for i in rows):  # NextStep's
        return None
    made = Call(end.index, "reset(mask)", mask=end.ended)
    reset = instances.replay(seed, [*calls[: end.index], made])[-1]
    got = _MASKED_RESET_RETURNS
    if reset.kind != "reset(mask)" or not _same_rows(end, reset, rows):
        change = calls[: end.index + 1]  # the ending step with other actions
        other = instances.replay(
            seed, change, lambda call: end.ended if call is end else None
        )[-1]
        if other.index != end.index or not _same_rows(end, other, rows, ended=True):
            return None
        got = "the same with other actions"
    note = (
        f"step() reset the sub-env itself: it returned {got}, then went on as a new "
        f"episode. An env that resets inside the ending step must report final "
        f"observations in info['final_obs'] and declare SameStep"
    )
    if got != _MASKED_RESET_RETURNS:  # (or a Disabled env's last observation)
        note += (
            ". A Disabled env whose last observation ignores the action looks the "
            "same when stepped on past its end: raise there (Gymnasium's sync env "
            "does), and the probe can tell"
        )
    return Difference.at(end, rows[0], "obs", "its last observation", got, note)


def _late_reset(
    calls: list[Call], changed: list[Call], masked: list[Call]
) -> Difference | None:
    """Where the ending step ``calls[-2]`` returned its final observations, in
    SameStep's keys too, and the next step reset those sub-envs: NextStep's
    reset step (what the masked reset of ``masked`` there returns, whatever the
    action), not SameStep's new episode."""
    end, after = calls[-2], calls[-1]
    reset = next((call for call in masked if call.kind == "reset(mask)"), None)
    found = modes.final_observations(end.infos)
    if found is None or reset is None or reset.error:
        return None
    (mask, finals), was, now = found, end.obs or [], after.obs or []
    for i in np.flatnonzero(mask).tolist():
        if (
            looks_reset(after, changed[-1], i)
            and same(finals[i], was[i], strict=False)
            and not same(now[i], was[i], strict=False)
            and same(now[i], (reset.obs or [])[i], strict=False)
        ):
            note = (
                "in SameStep mode the ending step resets the sub-env and returns the "
                "next episode's first observation; this env resets it on the next "
                "step, as NextStep does (which has no info['final_obs']): declare "
                "NextStep and drop those keys, or reset within the ending step"
            )
            got = f"its final observation, then {AUTORESET_STEP}"
            expected = "the next episode's first observation"
            return Difference.at(end, i, "obs", expected, got, note)
    return None


def _same_rows(call: Call, other: Call, rows: list[int], ended: bool = False) -> bool:
    """Whether ``other`` returned ``call``'s observations in ``rows`` (``ended``:
    with other actions there, and their episodes ended too)."""
    if other.error or other.obs is None or call.obs is None:
        return False
    if ended and (other.ended is None or not other.ended[rows].all()):
        return False
    if ended and not all(action_changed(call, other, i) for i in rows):
        return False
    return all(same(call.obs[i], other.obs[i], strict=False) for i in rows)


def _fit(
    result: ProbeResult,
    first: Recorder,
    changed: list[Call],
    masked: list[Call],
    in_step: Difference | None,
) -> ProbeResult:
    """``result`` with the mode whose predictions all hold, if exactly one does
    (``in_step``: the ending step reset its sub-envs, as no caller-reset mode;
    ``late``: the next step did, as SameStep's never)."""
    rejected: dict[AutoresetMode, Difference] = {}
    late = _late_reset(first.calls, changed, masked)
    for mode in MODES:
        contradiction = (
            (in_step if caller_resets(mode) else None)
            or (late if modes.final_in_info(mode) else None)
            or next(mode_differences(mode, first.calls, first.num_envs, changed), None)
            or next(mode_differences(mode, masked, first.num_envs), None)
        )
        if contradiction is not None:
            rejected[mode] = contradiction
    fitting = [mode for mode in MODES if mode not in rejected]
    found = fitting[0] if len(fitting) == 1 else None
    if found is not None and result.final_observation == "lost":
        # its caller resets: an end back at the first observation lost nothing
        result = replace(result, final_observation=None, resets_to=None)
    return replace(
        result,
        mode=found,
        reason=_reason(found, fitting, rejected),
        rejected=MappingProxyType(rejected),
    )


def _reason(
    found: AutoresetMode | None,
    fitting: list[AutoresetMode],
    rejected: dict[AutoresetMode, Difference],
) -> str:
    """Why the probe found ``found``, of the ``fitting`` modes, or found none."""
    if found is not None:
        refused = rejected.get(AutoresetMode.NEXT_STEP)  # a step after an end raised:
        refused_step = refused is not None and refused.expected == "a result"
        loses = caller_resets(found) and not refused_step  # (it resets none in it)
        return f"only {found.value}'s predictions hold.{' ' + LOSES_FINALS if loses else ''}"
    if not fitting:
        return "the env contradicts every mode's predictions: " + "; ".join(
            f"not {mode.value}: {diff}" for mode, diff in rejected.items()
        )
    return (
        f"the runs fit {mode_names(fitting)} alike (e.g. a single action: whether "
        f"it is ignored is unknown)"
    )
