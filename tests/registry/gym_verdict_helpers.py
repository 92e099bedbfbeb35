"""Test-only envs, a mode-aware driver and real-transition extraction.

Used by ``tests/registry/test_gymnasium_verdicts.py`` to run Gymnasium's own vector wrappers
in each autoreset mode and compare what they return with what they should return.

The driver resets, in DISABLED mode, only the ended sub-envs (with
``reset(options={"reset_mask": ended})``); the real transitions of a run are
read by :class:`vecmode.transitions.TransitionReader`, which follows each mode's
rules. Sub-envs get episodes of different lengths, so DISABLED's resets really
are partial.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
import sys
import tempfile
import types
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, SyncVectorEnv, VectorEnv

from tests.helpers import ScheduledEnv, assert_same
from vecmode.modes import Boundary
from vecmode.replay.compare import as_numpy
from vecmode.transitions import Reading, TransitionReader, read_run

NEXT_STEP = AutoresetMode.NEXT_STEP
SAME_STEP = AutoresetMode.SAME_STEP
DISABLED = AutoresetMode.DISABLED
MODES = (NEXT_STEP, SAME_STEP, DISABLED)

#: Sub-env 0: a truncated episode of 2 steps, then a terminated one of 3, ...;
#: sub-env 1: terminated episodes of 3 steps. Ends fall on different steps.
LENGTHS: tuple[tuple[int, ...], ...] = ((2, 3), (3,))
TRUNCATE: tuple[tuple[bool, ...], ...] = ((True, False), (False,))
STEPS = 9


# ---------------------------------------------------------------------- envs
class NumericEnv(ScheduledEnv):
    """A ScheduledEnv whose infos hold only numbers (array libraries convert them)
    and no ``"episode"`` key (RecordEpisodeStatistics writes that one)."""

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        obs, _ = super().reset(seed=seed, options=options)
        return obs, {"ep": self.episode}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, _ = super().step(action)
        return obs, reward, terminated, truncated, {"t": self.t}


class BoxActionEnv(NumericEnv):
    """Box actions in [-1, 1] that the env does not clip; the reward shows them."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.action_space = spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        return super().step(float(np.asarray(action).reshape(-1)[0]))


class ImageEnv(NumericEnv):
    """RGB image observations (4x4x3, uint8) encoding (sub-env, episode, step)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.observation_space = spaces.Box(0, 255, shape=(4, 4, 3), dtype=np.uint8)

    def _obs(self) -> Any:
        base = np.arange(48, dtype=np.int64).reshape(4, 4, 3) * 5
        shift = 60 * self.index + 17 * self.episode + 3 * self.t
        return ((base + shift) % 256).astype(np.uint8)


class RenderEnv(NumericEnv):
    """``render_mode="rgb_array"``: each frame's pixels are (sub-env, episode, step)."""

    metadata: dict[str, Any] = {"render_modes": ["rgb_array"], "render_fps": 30}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.render_mode = "rgb_array"

    def render(self) -> Any:  # type: ignore[override]
        code = [self.index, self.episode % 256, self.t % 256]
        return np.tile(np.array(code, dtype=np.uint8), (2, 2, 1))


def frame_code(frame: np.ndarray) -> tuple[int, int, int]:
    """(sub-env, episode, step) of a RenderEnv frame."""
    return tuple(int(v) for v in np.asarray(frame)[0, 0, :3])  # type: ignore[return-value]


class LogEnv(ScheduledEnv):
    """A ScheduledEnv (rich infos) that logs every (index, call, obs, info) it returns."""

    def __init__(self, *args: Any, log: list[tuple], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.log = log

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        obs, info = super().reset(seed=seed, options=options)
        self.log.append((self.index, "reset", obs, info))
        return obs, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = super().step(action)
        self.log.append((self.index, "step", obs, info))
        return obs, reward, terminated, truncated, info


class JaxEnv(NumericEnv):
    """A NumericEnv returning ``jax.numpy`` observations (for JaxToNumpy/JaxToTorch)."""

    def _obs(self) -> Any:
        import jax.numpy as jnp

        return jnp.asarray(super()._obs())


def sync(
    env_cls: Callable[..., gym.Env],
    mode: AutoresetMode,
    lengths: Sequence[Sequence[int]] = LENGTHS,
    truncate: Sequence[Sequence[bool]] = TRUNCATE,
    **kwargs: Any,
) -> SyncVectorEnv:
    """A SyncVectorEnv in ``mode`` of one ``env_cls`` per entry of ``lengths``."""
    make = functools.partial(env_cls, **kwargs)
    fns = [
        functools.partial(make, i, tuple(ls), tuple(ts))
        for i, (ls, ts) in enumerate(zip(lengths, truncate, strict=True))
    ]
    return SyncVectorEnv(fns, autoreset_mode=mode)


def pendulums(mode: AutoresetMode, max_steps: Sequence[int] = (3, 4)) -> SyncVectorEnv:
    """Pendulum-v1 sub-envs truncated after different numbers of steps."""
    fns = [
        functools.partial(gym.make, "Pendulum-v1", max_episode_steps=n)
        for n in max_steps
    ]
    return SyncVectorEnv(fns, autoreset_mode=mode)


# -------------------------------------------------------------------- driving
@dataclass
class Call:
    """One call of a run, its outputs converted to NumPy."""

    kind: str  # "reset" | "step" | "reset_mask"
    obs: Any
    info: Any
    rewards: np.ndarray | None = None
    terminations: np.ndarray | None = None
    truncations: np.ndarray | None = None
    mask: np.ndarray | None = None
    #: the step's observation before conversion (to check the array type)
    raw_obs: Any = None


def make_actions(space: spaces.Space, steps: int = STEPS, seed: int = 0) -> list:
    """A fixed action sequence for a batched action space (out of bounds for Box)."""
    rng = np.random.default_rng(seed)
    if isinstance(space, spaces.MultiDiscrete):
        return [rng.integers(0, space.nvec) for _ in range(steps)]
    assert isinstance(space, spaces.Box), space
    return [
        rng.uniform(-3.0, 3.0, size=space.shape).astype(space.dtype)
        for _ in range(steps)
    ]


def run(
    envs: VectorEnv,
    mode: AutoresetMode,
    actions: Sequence[Any],
    seed: int = 0,
    to_env: Callable[[Any], Any] = lambda a: a,
    on_call: Callable[[Call], None] | None = None,
) -> list[Call]:
    """Reset with ``seed``, then step ``actions``; in DISABLED, after each step,
    reset the ended sub-envs (only them) as the mode requires.

    ``to_env`` converts each NumPy action to what ``envs`` takes (e.g. a tensor).
    """
    calls: list[Call] = []
    reader = TransitionReader(mode, envs.num_envs)  # says when the caller resets

    def record(call: Call) -> None:
        calls.append(call)
        if on_call is not None:
            on_call(call)

    obs, info = envs.reset(seed=seed)
    record(Call("reset", as_numpy(obs), as_numpy(info), raw_obs=obs))
    reader.reset(calls[-1].obs)
    for action in actions:
        obs, rewards, terminations, truncations, info = envs.step(to_env(action))
        terms = np.asarray(as_numpy(terminations), dtype=bool)
        truncs = np.asarray(as_numpy(truncations), dtype=bool)
        record(
            Call(
                "step",
                as_numpy(obs),
                as_numpy(info),
                np.asarray(as_numpy(rewards)),
                terms,
                truncs,
                raw_obs=obs,
            )
        )
        step = calls[-1]
        reading = reader.step(None, step.obs, step.rewards, terms, truncs, step.info)
        ended = reading.boundary.needs_reset  # the caller's duty in DISABLED
        if ended.any():
            obs, info = envs.reset(options={"reset_mask": ended.copy()})
            record(Call("reset_mask", as_numpy(obs), as_numpy(info), mask=ended))
            reader.reset(calls[-1].obs, calls[-1].info, ended)
    return calls


def sub(batch: Any, i: int) -> Any:
    """Sub-env ``i``'s part of a batched (NumPy) observation."""
    if isinstance(batch, dict):
        return {k: sub(v, i) for k, v in batch.items()}
    if isinstance(batch, tuple):
        return tuple(sub(v, i) for v in batch)
    return batch[i]


@dataclass
class Event:
    """A sub-env's real event: an episode start, or a real transition."""

    kind: str  # "start" | "step"
    call: int  # index of the call that returned it
    obs: Any  # the start obs, or the transition's next obs
    reward: float = 0.0
    terminated: bool = False
    truncated: bool = False


def readings(
    calls: Sequence[Call], mode: AutoresetMode, n: int
) -> Iterator[tuple[int, Call, Reading]]:
    """Each call of a run with the reader's reading of it."""
    recorded = (
        ("step", None, c.obs, c.rewards, c.terminations, c.truncations, c.info)
        if c.kind == "step"
        else ("reset", c.obs, c.info, c.mask)
        for c in calls
    )
    read = read_run(TransitionReader(mode, n), recorded)
    yield from zip(range(len(calls)), calls, read, strict=True)


def boundaries(
    calls: Sequence[Call], mode: AutoresetMode, n: int
) -> Iterator[tuple[int, Call, Boundary | None]]:
    """Each call with what it means per sub-env; ``None`` for resets, whose
    ``mask`` (all sub-envs for a full reset) starts episodes."""
    for c, call, reading in readings(calls, mode, n):
        yield c, call, reading.boundary if call.kind == "step" else None


def real_events(
    calls: Sequence[Call], mode: AutoresetMode, n: int
) -> list[list[Event]]:
    """Per sub-env (``n`` of them), its real episode starts and transitions."""
    events: list[list[Event]] = [[] for _ in range(n)]
    for c, _, reading in readings(calls, mode, n):
        for t in reading.transitions():
            events[t.sub_env].append(
                Event("step", c, t.next_obs, float(t.reward), t.terminated, t.truncated)
            )
        for start in reading.starts():
            events[start.sub_env].append(Event("start", c, start.obs))
    return events


def first_difference(expected: Any, got: Any, where: str) -> str | None:
    """None if equal (NumPy scalars equal Python ones), else the first difference."""
    try:
        assert_same(expected, got, where, strict_types=False)
    except AssertionError as e:
        return str(e)
    return None


def assert_events(
    expected: list[list[Event]], got: list[list[Event]], what: str = ""
) -> None:
    """Assert the same real events, naming the first difference."""
    for i, (exp, act) in enumerate(zip(expected, got, strict=True)):
        for k, (e, g) in enumerate(zip(exp, act, strict=False)):
            where = f"sub-env {i}, real event {k} ({e.kind}, call {e.call})"
            assert (e.kind, e.call) == (g.kind, g.call), (
                f"{where}: got a {g.kind} at call {g.call}"
            )
            for name in ("obs", "reward", "terminated", "truncated"):
                diff = first_difference(
                    getattr(e, name), getattr(g, name), f"{where} {what}{name}"
                )
                assert diff is None, diff
        assert len(exp) == len(act), (
            f"sub-env {i}: {len(act)} real events, expected {len(exp)}"
        )


# ------------------------------------------------------------------ videos
#: The modules whose RecordVideo collects garbage after each video.
_RENDERING_MODULES = (
    "gymnasium.wrappers.rendering",
    "gymnasium.wrappers.vector.rendering",
    "vecmode.wrappers.rendering",
)


@contextlib.contextmanager
def fake_moviepy() -> Iterator[types.SimpleNamespace]:
    """A stand-in ``moviepy`` keeping each video's frames, and a video folder."""
    videos: list[tuple[str, list[np.ndarray]]] = []

    class ImageSequenceClip:
        def __init__(self, frames: list, fps: int) -> None:
            self.frames = [np.array(f) for f in frames]

        def with_duration(self, duration: float) -> ImageSequenceClip:
            return self

        def write_videofile(self, path: str, logger: Any = None) -> None:
            videos.append((os.path.basename(path), self.frames))

    modules = {
        name: types.ModuleType(name)
        for name in (
            "moviepy",
            "moviepy.video",
            "moviepy.video.io",
            "moviepy.video.io.ImageSequenceClip",
        )
    }
    modules["moviepy.video.io.ImageSequenceClip"].ImageSequenceClip = ImageSequenceClip  # type: ignore[attr-defined]
    with pytest.MonkeyPatch.context() as mp, tempfile.TemporaryDirectory() as tmp:
        for name, module in modules.items():
            mp.setitem(sys.modules, name, module)
        # RecordVideo runs a full gc.collect() after each video (gc_trigger): in a
        # test session holding torch and jax that is up to half a second a video
        no_gc = types.SimpleNamespace(collect=lambda *args: 0)
        for name in _RENDERING_MODULES:
            mp.setattr(importlib.import_module(name), "gc", no_gc)
        yield types.SimpleNamespace(videos=videos, folder=os.path.join(tmp, "videos"))
