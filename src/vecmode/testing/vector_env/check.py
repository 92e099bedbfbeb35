"""``check_vector_env``: prove that a vector env behaves as the mode it declares.

>>> import gymnasium as gym
>>> from vecmode.testing import check_vector_env
>>> report = check_vector_env(lambda: gym.make_vec("CartPole-v1", num_envs=3))
>>> print(report.summary)  # doctest: +ELLIPSIS
CartPoleVectorEnv(CartPole-v1, num_envs=3) conforms to NextStep: ... steps, ... episode ends
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from gymnasium.vector import VectorEnv, VectorWrapper

from vecmode import modes, registry
from vecmode.core import is_int
from vecmode.env_classes import layers
from vecmode.probe import LOSES_FINALS, ProbeResult, probe_mode
from vecmode.replay.record import is_count
from vecmode.testing.vector_env.differences import first_failure
from vecmode.testing.vector_env.run import CheckedRun


@dataclass(frozen=True)
class VectorEnvReport:
    """What :func:`check_vector_env` proved (``env``: the env's ``repr``;
    ``checks``: one sentence each); ``str(report)`` shows it. ``env_class`` is
    None for a stack of wrappers, whose layers ``stack`` names."""

    env: str
    mode: modes.AutoresetMode
    num_envs: int
    steps: int
    calls: int
    episode_ends: int
    masked_resets: int
    checks: tuple[str, ...]
    probe: ProbeResult
    env_class: type | None = dataclasses.field(default=None, compare=False, repr=False)
    stack: tuple[str, ...] = dataclasses.field(default=(), compare=False, repr=False)

    @property
    def summary(self) -> str:
        """One line: the env, its mode and how much was run."""
        return (
            f"{self.env} conforms to {self.mode.value}: {self.steps} steps, "
            f"{self.episode_ends} episode ends"
        )

    def record(self) -> VectorEnvReport:
        """Record this proof in this process: :func:`vecmode.check_stack` then
        reports an innermost env of exactly :attr:`env_class` in :attr:`mode` as
        *verified*. Returns the report; ``ValueError`` for a stack."""
        if self.env_class is None:
            raise ValueError(
                f"check_vector_env proved {self.env}, which the factory built as a "
                f"stack ({' over '.join(self.stack)}), not one vector env class; "
                f"record a check of a factory of the env alone."
            )
        registry.record_env_verified(self.env_class, self.mode, self.summary)
        return self

    def __str__(self) -> str:
        return "\n".join([self.summary, *(f"  - {check}" for check in self.checks)])


def check_vector_env(
    factory: Callable[[], VectorEnv],
    *,
    steps: int = 300,
    seed: int = 0,
    min_episode_ends: int = 2,
) -> VectorEnvReport:
    """Check that the envs ``factory`` builds behave as the mode they declare in
    ``metadata["autoreset_mode"]``: every call of a run and its replays against
    the mode's contract (``docs/authors.md``), and :func:`vecmode.probe_mode`.

    Args:
        factory: builds a new vector env on each call.
        seed: the reset seed and the seed of the random actions.

    Raises:
        AssertionError: no mode declared, or its contract broken (the message
            names the call, the sub-env and the field).
    """
    for name, value in (("steps", steps), ("min_episode_ends", min_episode_ends)):
        if not is_count(value):
            raise ValueError(
                f"check_vector_env: {name} must be an int >= 1, got {value!r}."
            )
    if not is_int(seed):
        raise TypeError(f"check_vector_env: seed must be an int, got {seed!r}.")
    run = CheckedRun(factory, steps, seed)
    name, mode, first = run.name, run.mode, run.first
    diff = first_failure(run, seed)
    if diff is not None:
        text = f"{name} does not behave as {mode.value}, the mode it declares: {diff}."
        diagnosis = _diagnosis(factory, run.steps + 1, seed, mode)
        raise AssertionError(f"{text} {diagnosis}" if diagnosis else text)
    ends = sum(int(call.ended.sum()) for call in first.calls if call.kind == "step")
    if ends < min_episode_ends:
        raise AssertionError(
            f"{name}: {ends} episode end(s) in {steps} steps, fewer than "
            f"min_episode_ends={min_episode_ends}: raise steps, or make the "
            f"episodes shorter."
        )
    if run.unmade:  # its checks would claim what was not run
        raise AssertionError(
            f"{name}: the run ended before making its masked reset(s) "
            f"{' and '.join(run.unmade)} ({ends} episode end(s) in {steps} steps): "
            f"raise steps, or make the episodes shorter, but not all one step long "
            f"(a mid-episode reset needs an episode that goes on)."
        )
    found = probe_mode(factory, max_steps=run.steps + 1, seed=seed)
    if found.mode is not mode:
        raise AssertionError(
            f"{name} declares {mode.value}, but vecmode.probe_mode does not find it "
            f"behaving so: {found}"
        )
    return _report(run, ends, found)


def _report(run: CheckedRun, ends: int, found: ProbeResult) -> VectorEnvReport:
    """The report of a check that passed."""
    built, calls = run.built, run.first.calls
    wrapped = isinstance(built, VectorWrapper)
    return VectorEnvReport(
        run.name,
        run.mode,
        int(built.num_envs),
        run.steps,
        len(calls),
        ends,
        sum(call.kind == "reset(mask)" for call in calls),
        _checks(run, found),
        found,
        None if wrapped else type(built),
        tuple(type(layer).__name__ for layer in layers(built)) if wrapped else (),
    )


def _diagnosis(
    factory: Callable[[], VectorEnv], steps: int, seed: int, mode: modes.AutoresetMode
) -> str:
    """What :func:`vecmode.probe_mode` finds, if another mode."""
    try:
        probed = probe_mode(factory, max_steps=steps, seed=seed)
    except Exception:
        return ""
    found = probed.mode
    if probed.resets_to == "fresh":  # a reset inside the ending step, no final obs
        disabled = probed.rejected[modes.AutoresetMode.DISABLED]
        return f"vecmode.probe_mode finds that {disabled.note}."
    if found is None or found is mode:
        return ""
    fix = ", or fix the env"
    if modes.resets_on_next_step(mode) and modes.caller_resets(found):
        fix = (  # (the probe knows NextStep's reset step by these alone)
            " if it does not reset on the step after an episode's end; if it does, "
            "fix that step's reward and flags"
        )
    text = (
        f"vecmode.probe_mode finds that it behaves as {found.value}: declare that "
        f"mode{fix}."
    )
    return f"{text} {LOSES_FINALS}" if modes.caller_resets(found) else text


def _checks(run: CheckedRun, probe: ProbeResult) -> tuple[str, ...]:
    """What ``run`` checked, one line each, for the report."""
    mode, masked, num_envs = run.mode, run.optional, int(run.built.num_envs)
    checks = [
        "observations in the observation space; rewards and flags of shape "
        "(num_envs,) and the right dtypes; infos dicts",
        "final_obs, final_info and their masks exactly at episode ends; final "
        "observations in the single space, not overwritten by the reset"
        if modes.final_in_info(mode)
        else "no final_obs / final_info in info",
    ]
    if modes.resets_on_next_step(mode):
        checks.append(
            "the step after an episode ends: reward 0, flags False, action "
            "ignored; reset() clears pending autoresets"
        )
    if modes.caller_resets(mode):
        checks.append("the step that ends an episode returns its last observation")
    declared = {
        "ignores": "its class declares masked_reset='ignores'",
        "masked rows": "its class declares reset_returns='masked'",
        "none": "it has no partial reset",
    }
    if masked in declared:
        checks.append(f"no masked reset made: {declared[masked]}")
    elif num_envs < 2 and masked != "caller":  # (a mask of all: a full reset)
        checks.append("no masked reset made: one sub-env")
    else:
        when = "after each episode end" if masked == "caller" else "after an end"
        line = (
            f"masked resets ({when}, and mid-episode) reset exactly the masked sub-envs"
        )
        if modes.resets_on_next_step(mode):
            kept = "clearing" if masked == "clears" else "keeping"
            line += f", {kept} their pending autoresets"
        checks.append(line)
    reused = run.results.reuses_observations
    copied = ", the observations excepted (copy=False)" if reused else ""
    checks += [
        f"what a call returned is not changed by later calls{copied}",
        "the same seed and actions reproduce the run",
        f"vecmode.probe_mode finds {mode.value}",
    ]
    if probe.read_through is not None:
        checks.append(f"final observations read through {probe.read_through}")
    return tuple(checks)
