"""Benchmark vecmode's vector wrappers against Gymnasium's, one wrapper at a time.

What is measured
----------------
For each wrapper that exists in both :mod:`gymnasium.wrappers.vector` and
:mod:`vecmode.wrappers`, the time per vector step of that wrapper over a vector
env, with Gymnasium's wrapper and with vecmode's, and the time of the same env
bare. Three contestants per wrapper, each over its own, fresh base env:

* ``bare``: the base env alone;
* ``gymnasium``: ``gymnasium.wrappers.vector.<Wrapper>(base, ...)``;
* ``vecmode``: ``vecmode.wrappers.<Wrapper>(base, ...)``, same arguments.

The base env (``--base gymnasium``, the default) is
``gymnasium.vector.SyncVectorEnv([lambda: gym.make(ENV)] * 16,
autoreset_mode="NextStep")``: NEXT_STEP, the one mode where Gymnasium's wrappers
are right, so both do the same job. ``--base vecmode`` uses
``vecmode.make_vec(ENV, 16, vectorization_mode="sync", autoreset_mode="NextStep")``
instead (a faster core, so the wrappers' overhead is a larger share of the step). ENV is ``CartPole-v1`` (Box(4) observations,
Discrete actions) except:

* ``ClipAction``, ``RescaleAction`` and ``RescaleObservation``: ``Pendulum-v1``
  (Box actions; finite observation bounds, which ``RescaleObservation`` needs);
* ``FilterObservation``: CartPole-v1 whose sub-envs return Dict observations
  ``{"cart": obs[:2], "pole": obs[2:]}`` (a single-env ``TransformObservation``
  inside each sub-env); ``GrayscaleObservation`` and ``ResizeObservation``:
  CartPole-v1 whose sub-envs return a 32x32 RGB image (a constant image, so the
  image making is cheap): the same CartPole episodes, observations of the kind
  the wrapper needs. ``ResizeObservation`` needs OpenCV and is skipped without it.
* ``FrameStackObservation`` (stack of 4): Gymnasium has no vector frame stack, so
  its contestant is Gymnasium's per-sub-env way,
  ``SyncVectorEnv([lambda: gymnasium.wrappers.FrameStackObservation(
  gym.make("CartPole-v1"), 4)] * 16, autoreset_mode="NextStep")``.

``--base replay`` replaces the base env by a replay of a recorded run of
Gymnasium's (the same steps, returned as copies, the actions ignored): stepping it
costs about a microsecond, so the overheads are the wrappers' own cost, free of
the physics' noise (the ratios then compare wrapper costs alone and are not the
goal's ratio). FrameStackObservation is left out there (Gymnasium's stack would be
inside the replayed sub-envs).

And a training stack of five wrappers (CleanRL's PPO recipe)::

    ClipReward(NormalizeReward(TransformObservation(NormalizeObservation(
        RecordEpisodeStatistics(env)), clip10), gamma=0.99), -10, 10)

built from vecmode's wrappers and from Gymnasium's: a row of the per-wrapper
table (vecmode/gym over the chosen base, NEXT_STEP), and a table of its own, the
stack against the bare env under it in every mode (``--modes``) over vecmode's
and Gymnasium's sync envs (``--stack-bases``): ``stack/bare`` says what the stack
adds to a step. Gymnasium's stack runs in NEXT_STEP only (its
``NormalizeObservation`` refuses the other modes); Gymnasium's shows how much of
the cost is the wrappers' own work (running statistics, ...) rather than vecmode's
mode machinery. ``vecmode.wrappers.ppo_stack(env, gamma=0.99)``, the same five as
one layer, runs beside them. In Disabled mode every contestant, the bare env included, is
given ``reset(options={"reset_mask": ended})`` after a step where episodes ended.

Reported per wrapper: steps/s (sub-env steps per second, vector steps x 16 / s,
medians) of each side, the ratio ``vecmode time / gymnasium time`` (goal: <= 1.05)
and each side's overhead over the bare env in microseconds per vector step. Per
stack and mode: steps/s of the bare env and of the stack, ``stack/bare`` (goal:
<= 1.5 over vecmode's env), the overhead in microseconds per vector step, and the
spread of the per-round ``stack/bare``.

How
---
Actions are generated up front from a fixed seed (CartPole: 0/1; Pendulum: uniform
in [-1, 1]) and are the same for every contestant; every timed repeat starts with
``reset(seed=SEED)`` (untimed), so every contestant replays the same episodes in
every round. Building the envs and a short warm-up are not timed.

Contestants are interleaved: each round runs, for every wrapper, one timed repeat
of bare, gymnasium and vecmode back to back (for the stack table: the bare env
and the stacks over it, per base and mode), in an order rotated from round to
round. Ratios and overheads are medians of the per-round values (each from
repeats run back to back); steps/s are medians over rounds.

Run
---
::

    python benchmarks/bench_wrappers.py              # full run (several minutes)
    python benchmarks/bench_wrappers.py --quick      # smoke test, a few seconds
    python benchmarks/bench_wrappers.py --markdown   # tables for docs/performance.md
    python benchmarks/bench_wrappers.py --only NormalizeObservation stack --rounds 9
    python benchmarks/bench_wrappers.py --base vecmode   # over vecmode.make_vec
    python benchmarks/bench_wrappers.py --base replay    # wrapper overheads alone
    python benchmarks/bench_wrappers.py --only stack --modes NextStep \
        --stack-bases vecmode                        # the stack's goal, quickly
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium import wrappers as single
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.wrappers import vector as gv

import vecmode
from harness import (
    add_run_arguments,
    fill_run_defaults,
    interleaved,
    markdown_table,
    mode_arg,
    round_done,
    run_defaults_help,
    save_results,
    text_table,
    versions,
)
from vecmode import wrappers as vw

NUM_ENVS = 16
MODE = AutoresetMode.NEXT_STEP
DEFAULT_STEPS = 2000
DEFAULT_ROUNDS = 15
QUICK_STEPS = 50
QUICK_ROUNDS = 2
WARMUP_STEPS = 50
STACK = "stack of 5"

GYMNASIUM_BASE, VECMODE_BASE, REPLAY_BASE = "gymnasium", "vecmode", "replay"

EnvFn = Callable[[], gym.Env]
Wrap = Callable[[VectorEnv], VectorEnv]


# ------------------------------------------------------------------------ sub-envs
def cartpole() -> gym.Env:
    return gym.make("CartPole-v1")


def pendulum() -> gym.Env:
    return gym.make("Pendulum-v1")


_IMAGE_SPACE = spaces.Box(0, 255, (32, 32, 3), np.uint8)
_IMAGE = np.full((32, 32, 3), 128, dtype=np.uint8)
_DICT_SPACE = spaces.Dict(
    {
        "cart": spaces.Box(-np.inf, np.inf, (2,), np.float32),
        "pole": spaces.Box(-np.inf, np.inf, (2,), np.float32),
    }
)


def cartpole_dict() -> gym.Env:
    """CartPole-v1 with Dict observations (same episodes)."""
    return single.TransformObservation(
        cartpole(), lambda obs: {"cart": obs[:2], "pole": obs[2:]}, _DICT_SPACE
    )


def cartpole_image() -> gym.Env:
    """CartPole-v1 returning a (constant) 32x32 RGB image (same episodes)."""
    return single.TransformObservation(cartpole(), lambda obs: _IMAGE, _IMAGE_SPACE)


def frame_stack_cartpole() -> gym.Env:
    return single.FrameStackObservation(cartpole(), 4)


SUB_ENVS: dict[str, EnvFn] = {
    "CartPole-v1": cartpole,
    "Pendulum-v1": pendulum,
    "CartPole-v1 (Dict obs)": cartpole_dict,
    "CartPole-v1 (32x32 RGB obs)": cartpole_image,
}


class ReplayVectorEnv(VectorEnv):
    """Replays a recorded run of a NEXT_STEP vector env, ignoring the actions.

    ``--base replay``: stepping it costs almost nothing, so a wrapper's time over it
    is the wrapper's own overhead, without the noise of the env's physics.
    ``reset`` restarts the recording (the timed runs always replay from the
    start). It returns copies (Gymnasium's wrappers write into the arrays and
    info dicts they get).
    """

    def __init__(self, recording: tuple[Any, ...]) -> None:
        single_obs, single_act, metadata, self._first, self._steps = recording
        self.num_envs = NUM_ENVS
        self.single_observation_space = single_obs
        self.single_action_space = single_act
        self.observation_space = gym.vector.utils.batch_space(single_obs, NUM_ENVS)
        self.action_space = gym.vector.utils.batch_space(single_act, NUM_ENVS)
        self.metadata = dict(metadata)
        self._next = iter(self._steps)

    def reset(
        self, *, seed: Any = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        self._next = iter(self._steps)
        obs, infos = self._first
        return _copy(obs), dict(infos)

    def step(self, actions: Any) -> Any:
        obs, rewards, terminations, truncations, infos = next(self._next)
        return _copy(obs), rewards.copy(), terminations, truncations, dict(infos)


def _copy(obs: Any) -> Any:
    if isinstance(obs, dict):
        return {key: value.copy() for key, value in obs.items()}
    return obs.copy()


_RECORDINGS: dict[tuple[str, int, int], tuple[Any, ...]] = {}


def recording(env_name: str, steps: int, seed: int) -> tuple[Any, ...]:
    """A run of Gymnasium's NEXT_STEP env over the benchmark's actions."""
    key = (env_name, steps, seed)
    if key not in _RECORDINGS:
        envs = make_base(env_name, GYMNASIUM_BASE)
        first = envs.reset(seed=seed)
        run = [envs.step(row) for row in make_actions(env_name, steps, seed)]
        _RECORDINGS[key] = (
            envs.single_observation_space,
            envs.single_action_space,
            envs.metadata,
            first,
            run,
        )
        envs.close()
    return _RECORDINGS[key]


def make_base(env_name: str, base: str, steps: int = 0, seed: int = 0) -> VectorEnv:
    """A fresh base vector env of 16 sub-envs in NEXT_STEP mode."""
    fn = SUB_ENVS[env_name]
    if base == REPLAY_BASE:
        return ReplayVectorEnv(recording(env_name, steps, seed))
    if base == VECMODE_BASE:
        if fn is cartpole or fn is pendulum:
            # "sync": without it CartPole gets Gymnasium's numpy CartPoleVectorEnv
            return vecmode.make_vec(
                env_name, NUM_ENVS, vectorization_mode="sync", autoreset_mode=MODE
            )
        return vecmode.with_autoreset(vecmode.SyncVectorEnv([fn] * NUM_ENVS), MODE)
    return gym.vector.SyncVectorEnv([fn] * NUM_ENVS, autoreset_mode=MODE)


# ---------------------------------------------------------------------- the cases
def clip10(obs: np.ndarray) -> np.ndarray:
    return np.clip(obs, -10, 10)


def double(obs: np.ndarray) -> np.ndarray:
    return obs * 2


def identity(x: Any) -> Any:
    return x


def reward_plus_one(reward: Any) -> Any:
    return reward + 1


def make_stack(w: Any) -> Wrap:
    """The five-wrapper training stack out of the wrapper module ``w``."""

    def build(env: VectorEnv) -> VectorEnv:
        env = w.RecordEpisodeStatistics(env)
        env = w.NormalizeObservation(env)
        env = w.TransformObservation(env, clip10)
        env = w.NormalizeReward(env, gamma=0.99)
        return w.ClipReward(env, -10.0, 10.0)

    return build


@dataclass
class Case:
    """One wrapper: how each side builds it, over which sub-envs."""

    name: str
    env: str
    gym: Wrap
    vm: Wrap
    #: Gymnasium's contestant is a whole env of its own (FrameStackObservation).
    gym_env: Callable[[str], VectorEnv] | None = None
    needs: str | None = None  # an optional module the case needs


def _both(name: str, env: str = "CartPole-v1", **kwargs: Any) -> Case:
    return Case(
        name,
        env,
        lambda e: getattr(gv, name)(e, **kwargs),
        lambda e: getattr(vw, name)(e, **kwargs),
    )


def _gym_frame_stack(base: str) -> VectorEnv:
    if base == VECMODE_BASE:
        return vecmode.with_autoreset(
            vecmode.SyncVectorEnv([frame_stack_cartpole] * NUM_ENVS), MODE
        )
    return gym.vector.SyncVectorEnv(
        [frame_stack_cartpole] * NUM_ENVS, autoreset_mode=MODE
    )


CASES: list[Case] = [
    _both("TransformObservation", func=double),
    _both(
        "VectorizeTransformObservation",
        wrapper=single.TransformObservation,
        func=double,
        observation_space=None,
    ),
    _both("FlattenObservation"),
    _both("ReshapeObservation", shape=(2, 2)),
    _both("DtypeObservation", dtype=np.float64),
    _both(
        "RescaleObservation",
        "Pendulum-v1",
        min_obs=np.float32(0.0),
        max_obs=np.float32(1.0),
    ),
    _both("FilterObservation", "CartPole-v1 (Dict obs)", filter_keys=["pole"]),
    _both("GrayscaleObservation", "CartPole-v1 (32x32 RGB obs)"),
    Case(
        "ResizeObservation",
        "CartPole-v1 (32x32 RGB obs)",
        lambda e: gv.ResizeObservation(e, (16, 16)),
        lambda e: vw.ResizeObservation(e, (16, 16)),
        needs="cv2",
    ),
    _both("NormalizeObservation"),
    Case(
        "FrameStackObservation",
        "CartPole-v1",
        identity,
        lambda e: vw.FrameStackObservation(e, 4),
        gym_env=_gym_frame_stack,
    ),
    _both("TransformAction", func=identity),
    _both(
        "VectorizeTransformAction",
        wrapper=single.TransformAction,
        func=identity,
        action_space=None,
    ),
    _both("ClipAction", "Pendulum-v1"),
    _both(
        "RescaleAction",
        "Pendulum-v1",
        min_action=np.float32(-1.0),
        max_action=np.float32(1.0),
    ),
    _both("TransformReward", func=reward_plus_one),
    _both(
        "VectorizeTransformReward",
        wrapper=single.TransformReward,
        func=reward_plus_one,
    ),
    _both("ClipReward", min_reward=0.0, max_reward=0.5),
    _both("NormalizeReward"),
    _both("RecordEpisodeStatistics"),
    _both("DictInfoToList"),
    Case(STACK, "CartPole-v1", make_stack(gv), make_stack(vw)),
]


def available(case: Case) -> bool:
    if case.needs is None:
        return True
    try:
        __import__(case.needs)
    except ImportError:
        return False
    return True


# --------------------------------------------------------------------- contestants
def make_actions(env_name: str, steps: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if env_name == "Pendulum-v1":
        return rng.uniform(-1.0, 1.0, size=(steps, NUM_ENVS, 1)).astype(np.float32)
    return rng.integers(0, 2, size=(steps, NUM_ENVS), dtype=np.int64)


def run(
    envs: VectorEnv, actions: np.ndarray, seed: int, disabled: bool = False
) -> float:
    """Seconds per vector step over ``actions`` (after an untimed reset); with
    ``disabled``, ended sub-envs are reset with a mask after the step (timed)."""
    envs.reset(seed=seed)
    step = envs.step
    gc.collect()
    start = time.perf_counter()
    if not disabled:
        for row in actions:
            step(row)
    else:
        reset, logical_or = envs.reset, np.logical_or
        for row in actions:
            _, _, terminations, truncations, _ = step(row)
            ended = logical_or(terminations, truncations)
            if ended.any():
                reset(options={"reset_mask": ended})
    return (time.perf_counter() - start) / len(actions)


BARE, GYM, VM = "bare", "gymnasium", "vecmode"


@dataclass
class Group:
    """Contestants timed back to back (a case's three, or a stack table's row
    group), and their times per round."""

    envs: dict[str, VectorEnv]
    actions: np.ndarray
    case: Case | None = None
    disabled: bool = False  # the timed loop resets ended sub-envs
    times: dict[str, list[float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.times = {name: [] for name in self.envs}


def build_group(case: Case, base: str, steps: int, seed: int) -> Group:
    bare = make_base(case.env, base, steps, seed)
    if case.gym_env is not None:
        theirs = case.gym_env(base)
    else:
        theirs = case.gym(make_base(case.env, base, steps, seed))
    ours = case.vm(make_base(case.env, base, steps, seed))
    envs = {BARE: bare, GYM: theirs, VM: ours}
    for name, env in envs.items():
        declared = env.metadata.get("autoreset_mode")
        if declared is not MODE:
            raise RuntimeError(f"{case.name} {name} declares {declared!r}")
    return Group(envs, make_actions(case.env, steps, seed), case)


# ------------------------------------------------------------ the stack per mode
MODES = tuple(AutoresetMode)
STACK_BASES = (VECMODE_BASE, GYMNASIUM_BASE)
GYM_STACK, VM_STACK = "Gymnasium's 5 wrappers", "vecmode's 5 wrappers"
FUSED = "vecmode.wrappers.ppo_stack"


def fused_stack(env: VectorEnv) -> VectorEnv:
    """The same five as one layer (clips of 10, gamma 0.99)."""
    return vw.ppo_stack(env, gamma=0.99)


def stack_contestants(mode: AutoresetMode) -> dict[str, Wrap]:
    """The stacks timed in ``mode`` (Gymnasium's refuses all but NEXT_STEP)."""
    out = {VM_STACK: make_stack(vw), FUSED: fused_stack}
    if mode is AutoresetMode.NEXT_STEP:
        out = {GYM_STACK: make_stack(gv), **out}
    return out


def mode_base(base: str, mode: AutoresetMode) -> VectorEnv:
    """A fresh CartPole-v1 sync env of 16 sub-envs in ``mode``."""
    if base == VECMODE_BASE:
        return vecmode.make_vec(
            "CartPole-v1", NUM_ENVS, vectorization_mode="sync", autoreset_mode=mode
        )
    return gym.vector.SyncVectorEnv([cartpole] * NUM_ENVS, autoreset_mode=mode)


@dataclass
class StackGroup(Group):
    """The bare env and the stacks over it, in one mode, over one base."""

    base: str = VECMODE_BASE
    mode: AutoresetMode = MODE


def build_stack_group(
    base: str, mode: AutoresetMode, steps: int, seed: int
) -> StackGroup:
    envs = {BARE: mode_base(base, mode)}
    for name, wrap in stack_contestants(mode).items():
        envs[name] = wrap(mode_base(base, mode))
    for name, env in envs.items():
        declared = env.metadata.get("autoreset_mode")
        if declared is not mode:
            raise RuntimeError(f"{name} over {base} declares {declared!r}")
    return StackGroup(
        envs,
        make_actions("CartPole-v1", steps, seed),
        disabled=mode is AutoresetMode.DISABLED,
        base=base,
        mode=mode,
    )


# ------------------------------------------------------------------------- running
@dataclass
class Row:
    name: str
    env: str
    rate: dict[str, float]  # sub-env steps per second, median
    vm_gym: float  # median per-round vecmode time / gymnasium time
    vm_gym_min: float
    vm_gym_max: float
    over_bare: dict[str, float]  # median per-round time / bare time
    overhead_us: dict[str, float]  # median per-round (time - bare time), us


@dataclass
class StackRow:
    base: str
    mode: AutoresetMode
    name: str
    rate: float  # sub-env steps per second, median
    bare_rate: float
    over_bare: float  # median per-round stack time / bare time
    over_bare_min: float
    over_bare_max: float
    overhead_us: float  # median per-round (time - bare time), us


def time_groups(
    groups: Sequence[Group], steps: int, rounds: int, seed: int, progress: bool
) -> None:
    """Time every group's contestants in interleaved rounds (into ``times``)."""
    try:
        for group in groups:  # warm-up: first-call checks, caches
            for env in group.envs.values():
                run(env, group.actions[:WARMUP_STEPS], seed, group.disabled)
        for r in range(rounds):
            started = time.perf_counter()
            for group, name in interleaved(
                ([(group, name) for name in group.envs] for group in groups), r
            ):
                group.times[name].append(
                    run(group.envs[name], group.actions, seed, group.disabled)
                )
            round_done(r, rounds, started, progress)
    finally:
        for group in groups:
            for env in group.envs.values():
                env.close()


def benchmark(
    cases: Sequence[Case],
    base: str,
    steps: int,
    rounds: int,
    seed: int,
    progress: bool,
    stack_bases: Sequence[str] = (),
    modes: Sequence[AutoresetMode] = (),
) -> tuple[list[Row], list[StackRow]]:
    """The per-wrapper rows (``cases`` over ``base``) and the stack table's rows
    (every mode in ``modes`` over every base in ``stack_bases``)."""
    groups = [build_group(case, base, steps, seed) for case in cases]
    stack_groups = [
        build_stack_group(b, mode, steps, seed) for b in stack_bases for mode in modes
    ]
    time_groups([*groups, *stack_groups], steps, rounds, seed, progress)
    return case_rows(groups), stack_rows(stack_groups)


def stack_rows(groups: Sequence[StackGroup]) -> list[StackRow]:
    rows = []
    for group in groups:
        t = group.times
        for name in group.envs:
            if name == BARE:
                continue
            ratios = [a / b for a, b in zip(t[name], t[BARE], strict=True)]
            rows.append(
                StackRow(
                    base=group.base,
                    mode=group.mode,
                    name=name,
                    rate=NUM_ENVS / statistics.median(t[name]),
                    bare_rate=NUM_ENVS / statistics.median(t[BARE]),
                    over_bare=statistics.median(ratios),
                    over_bare_min=min(ratios),
                    over_bare_max=max(ratios),
                    overhead_us=statistics.median(
                        1e6 * (a - b) for a, b in zip(t[name], t[BARE], strict=True)
                    ),
                )
            )
    return rows


def case_rows(groups: Sequence[Group]) -> list[Row]:
    rows = []
    for group in groups:
        case = group.case
        if case is None:
            raise TypeError("a case group without its case")
        t = group.times
        vm_gym = [a / b for a, b in zip(t[VM], t[GYM], strict=True)]
        rows.append(
            Row(
                name=case.name,
                env=case.env,
                rate={k: NUM_ENVS / statistics.median(v) for k, v in t.items()},
                vm_gym=statistics.median(vm_gym),
                vm_gym_min=min(vm_gym),
                vm_gym_max=max(vm_gym),
                over_bare={
                    k: statistics.median(
                        a / b for a, b in zip(t[k], t[BARE], strict=True)
                    )
                    for k in (GYM, VM)
                },
                overhead_us={
                    k: statistics.median(
                        1e6 * (a - b) for a, b in zip(t[k], t[BARE], strict=True)
                    )
                    for k in (GYM, VM)
                },
            )
        )
    return rows


# -------------------------------------------------------------------------- output
def environment_lines(base: str, steps: int, rounds: int, seed: int) -> list[str]:
    base_text = {
        GYMNASIUM_BASE: "gymnasium.vector.SyncVectorEnv([make ENV] * 16, "
        'autoreset_mode="NextStep")',
        VECMODE_BASE: 'vecmode.make_vec(ENV, 16, vectorization_mode="sync", '
        'autoreset_mode="NextStep")',
        REPLAY_BASE: "a replay of a recorded run of Gymnasium's SyncVectorEnv "
        "(16 sub-envs, NextStep): times are the wrappers' own",
    }[base]
    return [
        versions(),
        f"os.cpu_count() = {os.cpu_count()}, {platform.system()} {platform.machine()}",
        f"base env: {base_text}, a fresh one per contestant",
        f"{steps} vector steps per timed repeat, {rounds} interleaved rounds, "
        f"action/reset seed {seed}",
        "steps/s = sub-env steps per second (medians); vecmode/gym = vecmode time / "
        "Gymnasium time per step (goal <= 1.05); overhead = time per vector step "
        "minus the bare env's, in us (medians of per-round values)",
    ]


HEADERS = (
    "wrapper",
    "env",
    "gym steps/s",
    "vecmode steps/s",
    "vecmode/gym",
    "gym overhead us",
    "vecmode overhead us",
    "vecmode/gym min-max",
)

STACK_HEADERS = (
    "base",
    "mode",
    "stack",
    "bare steps/s",
    "stack steps/s",
    "stack/bare",
    "overhead us",
    "stack/bare min-max",
)


def cells(row: Row) -> list[str]:
    return [
        row.name,
        row.env,
        f"{row.rate[GYM]:,.0f}",
        f"{row.rate[VM]:,.0f}",
        f"{row.vm_gym:.2f}",
        f"{row.overhead_us[GYM]:.1f}",
        f"{row.overhead_us[VM]:.1f}",
        f"{row.vm_gym_min:.2f}-{row.vm_gym_max:.2f}",
    ]


def stack_cells(row: StackRow) -> list[str]:
    return [
        row.base,
        row.mode.value,
        row.name,
        f"{row.bare_rate:,.0f}",
        f"{row.rate:,.0f}",
        f"{row.over_bare:.2f}",
        f"{row.overhead_us:.1f}",
        f"{row.over_bare_min:.2f}-{row.over_bare_max:.2f}",
    ]


STACK_LINE = (
    "stack table: the five-wrapper stack over a fresh CartPole-v1 sync env of 16 "
    "sub-envs per contestant (vecmode: vecmode.make_vec(..., "
    'vectorization_mode="sync"); gymnasium: gymnasium.vector.SyncVectorEnv), in '
    "each mode; stack/bare = stack time / bare time per step (goal <= 1.5 over "
    "vecmode's env), medians of per-round values"
)


def report(
    rows: Sequence[Row],
    stacks: Sequence[StackRow],
    header: Sequence[str],
    markdown: bool,
) -> str:
    per_wrapper = [cells(row) for row in rows]
    stack_lines = [stack_cells(row) for row in stacks]
    table = markdown_table if markdown else text_table
    lines = [*header, STACK_LINE] if stacks else list(header)
    out = [f"- {line}" for line in lines] if markdown else lines
    if per_wrapper:
        out += ["", *table(HEADERS, per_wrapper)]
    if stack_lines:
        out += ["", *table(STACK_HEADERS, stack_lines)]
    return "\n".join(out)


# ---------------------------------------------------------------------------- CLI
def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    names = [case.name for case in CASES]
    parser = argparse.ArgumentParser(
        description="Time per step of vecmode.wrappers vs gymnasium.wrappers.vector "
        "(NEXT_STEP, 16 sub-envs), and of a five-wrapper stack vs the bare env.",
    )
    parser.add_argument(
        "--base",
        choices=(GYMNASIUM_BASE, VECMODE_BASE, REPLAY_BASE),
        default=GYMNASIUM_BASE,
        help="the base vector env: Gymnasium's SyncVectorEnv (default), "
        "vecmode.make_vec, or a replay of a recorded run (the wrappers' own cost)",
    )
    parser.add_argument(
        "--only",
        nargs="+",
        metavar="WRAPPER",
        choices=[*names, "stack"],
        default=None,
        help="run only these wrappers ('stack' for the five-wrapper stack)",
    )
    parser.add_argument(
        "--modes",
        nargs="+",
        type=mode_arg,
        default=list(MODES),
        metavar="MODE",
        help="the stack table's modes (default NextStep SameStep Disabled)",
    )
    parser.add_argument(
        "--stack-bases",
        nargs="*",
        choices=STACK_BASES,
        default=list(STACK_BASES),
        metavar="BASE",
        help="the stack table's base envs: vecmode and/or gymnasium (default "
        "both; none: no stack table)",
    )
    defaults = (DEFAULT_STEPS, QUICK_STEPS, DEFAULT_ROUNDS, QUICK_ROUNDS)
    add_run_arguments(parser, **run_defaults_help(*defaults))
    args = parser.parse_args(argv)
    fill_run_defaults(args, *defaults)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    wanted = (
        None if args.only is None else {STACK if n == "stack" else n for n in args.only}
    )
    cases = [
        case
        for case in CASES
        if (wanted is None or case.name in wanted) and available(case)
    ]
    skipped = [case.name for case in CASES if not available(case)]
    if skipped:
        print(f"skipped (missing module): {', '.join(skipped)}", file=sys.stderr)
    if args.base == REPLAY_BASE:  # Gymnasium's frame stack is inside the sub-envs
        cases = [case for case in cases if case.gym_env is None]
        print("skipped over a replay: FrameStackObservation", file=sys.stderr)
    print(
        f"benchmarking {len(cases)} cases over a {args.base} base: {args.rounds} "
        f"rounds of {args.steps} vector steps ...",
        file=sys.stderr,
        flush=True,
    )
    stack_bases = args.stack_bases if wanted is None or STACK in wanted else []
    rows, stacks = benchmark(
        cases,
        args.base,
        steps=args.steps,
        rounds=args.rounds,
        seed=args.seed,
        progress=True,
        stack_bases=stack_bases,
        modes=args.modes,
    )
    header = environment_lines(args.base, args.steps, args.rounds, args.seed)
    print(report(rows, stacks, header, args.markdown))
    tables = {
        "wrappers": (HEADERS, [cells(row) for row in rows]),
        "stacks": (STACK_HEADERS, [stack_cells(row) for row in stacks]),
    }
    save_results(
        args.results,
        __file__,
        [*header, STACK_LINE],
        tables,
        rounds=args.rounds,
        steps=args.steps,
        base=args.base,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
