"""Test environments, a strict comparator and a driver shared by the tests."""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

OBS_TYPES = ("box", "dict", "tuple", "discrete")


class ScheduledEnv(gym.Env):
    """Episodes of scheduled lengths; observations encode (sub-env, episode, step).

    Episode ``k`` lasts ``lengths[k % len(lengths)]`` steps and ends by truncation
    if ``truncate[k % len(truncate)]`` else by termination. Infos carry keys that
    appear only on some steps, nested dicts, and several scalar types; reset infos
    echo the reset options.
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(
        self,
        index: int = 0,
        lengths: Sequence[int] = (3,),
        truncate: Sequence[bool] = (False,),
        obs_type: str = "box",
    ) -> None:
        self.index = index
        self.lengths = list(lengths)
        self.truncate = list(truncate)
        self.obs_type = obs_type
        self.action_space = spaces.Discrete(3)
        box = spaces.Box(-1e6, 1e6, shape=(3,), dtype=np.float32)
        self.observation_space = {
            "box": box,
            "dict": spaces.Dict({"pos": box, "step": spaces.Discrete(10_000)}),
            "tuple": spaces.Tuple((box, spaces.Discrete(10_000))),
            "discrete": spaces.Discrete(10_000),
        }[obs_type]
        self.episode = -1
        self.t = 0
        self.resets = 0

    def _obs(self) -> Any:
        vec = np.array([self.index, self.episode, self.t], dtype=np.float32)
        code = int(self.index * 1000 + (self.episode % 10) * 100 + self.t) % 10_000
        if self.obs_type == "box":
            return vec
        if self.obs_type == "dict":
            return {"pos": vec, "step": code}
        if self.obs_type == "tuple":
            return (vec, code)
        return code

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        self.episode += 1
        self.resets += 1
        self.t = 0
        noise = float(self.np_random.random())
        info: dict[str, Any] = {"episode": self.episode, "noise": noise}
        if options:
            info["options"] = dict(options)
        return self._obs(), info

    def render(self) -> None:
        return None

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self.t += 1
        k = self.episode
        ended = self.t >= self.lengths[k % len(self.lengths)]
        truncated = ended and self.truncate[k % len(self.truncate)]
        terminated = ended and not truncated
        info: dict[str, Any] = {"step": self.t, "vec": np.array([self.t, k])}
        if self.t % 2 == 0:
            info["even"] = True
        if self.t % 3 == 0:
            info["nested"] = {"depth": np.float32(self.t / 3), "tag": f"e{k}s{self.t}"}
        reward = float(action) + 0.5 * self.t + 0.01 * self.index
        return self._obs(), reward, terminated, truncated, info


def scheduled_fns(
    num_envs: int,
    lengths: Sequence[Sequence[int]] | None = None,
    truncate: Sequence[Sequence[bool]] | None = None,
    obs_type: str = "box",
) -> list[Callable[[], gym.Env]]:
    """One factory per sub-env; sub-env ``i`` gets ``lengths[i]`` and ``truncate[i]``."""
    fns = []
    for i in range(num_envs):
        ls = lengths[i] if lengths is not None else (2 + i % 3, 4)
        ts = truncate[i] if truncate is not None else (i % 2 == 0, False)
        fns.append(lambda i=i, ls=ls, ts=ts: ScheduledEnv(i, ls, ts, obs_type))
    return fns


# ---------------------------------------------------------------- comparison
def assert_same(expected: Any, got: Any, path: str = "", strict_types: bool = True):
    """Assert two step/reset results are identical: values, dtypes, keys, masks.

    With ``strict_types=False`` a NumPy scalar equals the Python scalar of the same
    value (and a tuple of them), the one difference allowed where vecmode recovers
    a final observation from a batched one.
    """
    where = path or "<root>"
    if isinstance(expected, np.ndarray) or isinstance(got, np.ndarray):
        assert isinstance(expected, np.ndarray) and isinstance(got, np.ndarray), (
            f"{where}: expected {type(expected).__name__}, got {type(got).__name__}"
        )
        assert expected.dtype == got.dtype, (
            f"{where}: dtype {expected.dtype} != {got.dtype}"
        )
        assert expected.shape == got.shape, (
            f"{where}: shape {expected.shape} != {got.shape}"
        )
        if expected.dtype == object:
            for i, (e, g) in enumerate(zip(expected.ravel(), got.ravel(), strict=True)):
                assert_same(e, g, f"{where}[{i}]", strict_types)
        else:
            assert np.array_equal(
                expected, got, equal_nan=expected.dtype.kind == "f"
            ), f"{where}: {expected!r} != {got!r}"
        return
    if isinstance(expected, dict):
        assert isinstance(got, dict), f"{where}: expected dict, got {type(got)}"
        assert set(expected) == set(got), (
            f"{where}: keys {sorted(expected)} != {sorted(got)}"
        )
        for key in expected:
            assert_same(expected[key], got[key], f"{where}.{key}", strict_types)
        return
    if isinstance(expected, (tuple, list)):
        assert isinstance(got, (tuple, list)), (
            f"{where}: expected sequence, got {got!r}"
        )
        if strict_types:
            assert type(expected) is type(got), (
                f"{where}: {type(expected)} != {type(got)}"
            )
        assert len(expected) == len(got), (
            f"{where}: length {len(expected)} != {len(got)}"
        )
        for i, (e, g) in enumerate(zip(expected, got, strict=True)):
            assert_same(e, g, f"{where}[{i}]", strict_types)
        return
    if strict_types or not (
        isinstance(expected, (int, float, bool, np.generic))
        and isinstance(got, (int, float, bool, np.generic))
    ):
        assert type(expected) is type(got), (
            f"{where}: type {type(expected).__name__} != {type(got).__name__}"
        )
    assert expected == got, f"{where}: {expected!r} != {got!r}"


# ------------------------------------------------------------------- driving
@dataclass
class Script:
    """A deterministic sequence of calls: seeds, actions and extra reset masks."""

    seed: int
    actions: list[Any]
    #: per step, an extra mask of sub-envs to reset after it (None: none)
    masks: list[np.ndarray | None] = field(default_factory=list)
    options: dict[str, Any] | None = None


def make_script(
    envs: gym.vector.VectorEnv, steps: int, seed: int = 0, mask_prob: float = 0.0
) -> Script:
    rng = np.random.default_rng(seed)
    envs.action_space.seed(seed)
    actions = [envs.action_space.sample() for _ in range(steps)]
    masks: list[np.ndarray | None] = []
    for _ in range(steps):
        if mask_prob and rng.random() < 0.5:
            masks.append(rng.random(envs.num_envs) < mask_prob)
        else:
            masks.append(None)
    return Script(seed=seed, actions=actions, masks=masks)


def drive(envs: gym.vector.VectorEnv, script: Script, disabled: bool) -> list[tuple]:
    """Run ``script`` and return every call's result.

    ``disabled``: reset ended sub-envs after each step (as DISABLED training code
    must). The extra masks of the script are reset in every mode. Masks are only
    passed when they have a True entry (Gymnasium raises otherwise), and always in
    a fresh dict (Gymnasium pops the key).
    """
    records: list[tuple] = [
        ("reset", envs.reset(seed=script.seed, options=script.options))
    ]
    for t, actions in enumerate(script.actions):
        result = envs.step(actions)
        records.append(("step", result))
        mask = np.zeros(envs.num_envs, dtype=bool)
        if disabled:
            mask |= np.logical_or(result[2], result[3])
        extra = script.masks[t] if t < len(script.masks) else None
        if extra is not None:
            mask |= extra
        if mask.any():
            opts = {"reset_mask": mask.copy()}
            if script.options:
                opts.update(script.options)
            records.append(("reset_mask", envs.reset(options=opts)))
    return records


def assert_same_run(expected: list[tuple], got: list[tuple], strict_types=True):
    assert len(expected) == len(got), f"{len(expected)} calls != {len(got)} calls"
    for n, ((kind_e, e), (kind_g, g)) in enumerate(zip(expected, got, strict=True)):
        assert kind_e == kind_g, f"call {n}: {kind_e} != {kind_g}"
        names = (
            ("obs", "infos")
            if kind_e != "step"
            else ("obs", "rewards", "terminations", "truncations", "infos")
        )
        for name, a, b in zip(names, e, g, strict=True):
            assert_same(a, b, f"call {n} ({kind_e}) {name}", strict_types)


# ------------------------------------------------- faulty envs (importable, so
# they work with the spawn and forkserver start methods too)
class FaultyEnv(ScheduledEnv):
    """A ScheduledEnv that raises ``ValueError`` in its ``fail_step``-th call to
    ``step`` or its ``fail_reset``-th call to ``reset`` (counted over its life)."""

    def __init__(
        self,
        index: int = 0,
        fail_step: int | None = None,
        fail_reset: int | None = None,
        lengths: Sequence[int] = (3,),
    ) -> None:
        super().__init__(index, lengths)
        self.fail_step = fail_step
        self.fail_reset = fail_reset
        self.steps_taken = 0

    def reset(self, *, seed=None, options=None):
        if self.resets + 1 == self.fail_reset:
            self.resets += 1
            raise ValueError(f"reset of sub-env {self.index} failed on purpose")
        return super().reset(seed=seed, options=options)

    def step(self, action):
        self.steps_taken += 1
        if self.steps_taken == self.fail_step:
            raise ValueError(f"step of sub-env {self.index} failed on purpose")
        return super().step(action)

    def explode(self) -> None:
        raise KeyError(f"explode() of sub-env {self.index}")


class SlowEnv(ScheduledEnv):
    """A ScheduledEnv whose ``step`` sleeps ``delay`` seconds."""

    def __init__(self, index: int = 0, delay: float = 0.0) -> None:
        super().__init__(index, lengths=(1000,))
        self.delay = delay

    def step(self, action):
        time.sleep(self.delay)
        return super().step(action)


def env_fn_that_raises() -> gym.Env:
    raise ValueError("this env_fn cannot build its env")


def env_fn_that_exits_in_a_worker() -> gym.Env:
    """Builds an env in the parent process, kills its process in a worker."""
    if multiprocessing.parent_process() is not None:
        os._exit(3)
    return ScheduledEnv(0)
