"""Deterministic test environments: episodes of scheduled lengths, whose every
observation says which sub-env, episode and step it comes from."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from types import MappingProxyType
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from vecmode.modes import to_dense_finals

#: The choices of :class:`ScheduledEnv`'s arguments.
OBS_TYPES = ("box", "dict", "tuple", "discrete", "image")
ACTION_TYPES = ("discrete", "box")
RENDER_MODES = (None, "rgb_array")
INFO_TYPES = ("rich", "numeric")
#: The key of the step count in its step infos, by info type.
STEP_INFO_KEYS = MappingProxyType({"rich": "step", "numeric": "t"})
#: A key each reset info holds, by ``info_type``.
RESET_INFO_KEYS = MappingProxyType({"rich": "noise", "numeric": "ep"})

_IMAGE_SHAPE = (6, 8, 3)
_SIGNED = np.array([-1, 1, -1], dtype=np.float32), np.float32(100.5)


class ScheduledEnv(gym.Env):
    """Episodes of scheduled lengths; observations encode (sub-env, episode, step).

    Episode ``k`` lasts ``lengths[k % len(lengths)]`` steps and ends by truncation
    if ``truncate[k % len(truncate)]``, else by termination. The reward is
    ``action + 0.5 * step + 0.01 * index``.

    Args:
        obs_type: ``"box"`` (``float32[index, episode, step]``), ``"dict"``
            (``{"pos": box, "step": code}``, ``code = index * 1000 + (episode %
            10) * 100 + step``), ``"tuple"`` (``(box, code)``), ``"discrete"``
            (``code``) or ``"image"``; :func:`decode` reads them all.
        info_type: ``"rich"`` (nested dicts, keys on some steps only) or
            ``"numeric"`` (``{"ep": episode}``, ``{"t": step}``).
        render_mode: None, or ``"rgb_array"``: frames like the image observation.
        signed: box values ``[-(100.5 + index), 100.5 + episode, -(100.5 +
            step)]``, which ``abs``, rounding or a clip change (the kit's).
        first_episode: the number of its first episode, whose schedule it follows.

    >>> env = ScheduledEnv(index=2, lengths=(2,), truncate=(True,))
    >>> env.reset(seed=0)[0].tolist()  # [sub-env, episode, step]
    [2.0, 0.0, 0.0]
    >>> _ = env.step(1)
    >>> obs, reward, terminated, truncated, _ = env.step(1)
    >>> obs.tolist(), terminated, truncated
    ([2.0, 0.0, 2.0], False, True)
    """

    metadata: dict[str, Any] = {"render_modes": ["rgb_array"], "render_fps": 1000}

    def __init__(
        self,
        index: int = 0,
        lengths: Sequence[int] = (3,),
        truncate: Sequence[bool] = (False,),
        obs_type: str = "box",
        *,
        action_type: str = "discrete",
        info_type: str = "rich",
        render_mode: str | None = None,
        signed: bool = False,
        first_episode: int = 0,
    ) -> None:
        for name, value, allowed in (
            ("obs_type", obs_type, OBS_TYPES),
            ("action_type", action_type, ACTION_TYPES),
            ("info_type", info_type, INFO_TYPES),
            ("render_mode", render_mode, RENDER_MODES),
        ):
            if value not in allowed:
                raise ValueError(
                    f"{name} must be one of {', '.join(map(repr, allowed))}, "
                    f"not {value!r}"
                )
        if not lengths or any(int(n) < 1 for n in lengths):
            raise ValueError(
                f"lengths must be a non-empty sequence of episode lengths >= 1, "
                f"got {lengths!r}"
            )
        if not truncate:
            raise ValueError("truncate must be a non-empty sequence of bools")
        self.index, self.obs_type, self.info_type = index, obs_type, info_type
        self.lengths = [int(n) for n in lengths]
        self.truncate = [bool(t) for t in truncate]
        self.render_mode, self.signed = render_mode, bool(signed)
        self.action_space: spaces.Space = (
            spaces.Discrete(3)
            if action_type == "discrete"
            else spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)
        )
        box = spaces.Box(-1e6, 1e6, shape=(3,), dtype=np.float32)
        self.observation_space = {
            "box": box,
            "dict": spaces.Dict({"pos": box, "step": spaces.Discrete(10_000)}),
            "tuple": spaces.Tuple((box, spaces.Discrete(10_000))),
            "discrete": spaces.Discrete(10_000),
            "image": spaces.Box(0, 255, shape=_IMAGE_SHAPE, dtype=np.uint8),
        }[obs_type]
        self.episode, self.t, self.resets = first_episode - 1, 0, 0

    def _image(self) -> np.ndarray:
        rows, cols, _ = _IMAGE_SHAPE
        grid = np.add.outer(np.arange(rows), np.arange(cols))[..., None]
        values = np.array([self.index, self.episode, self.t]) + 16 * grid
        return (values % 256).astype(np.uint8)

    def _obs(self) -> Any:
        vec = np.array([self.index, self.episode, self.t], dtype=np.float32)
        if self.signed:
            vec = _SIGNED[0] * (vec + _SIGNED[1])
        code = int(self.index * 1000 + (self.episode % 10) * 100 + self.t) % 10_000
        if self.obs_type == "box":
            return vec
        if self.obs_type == "dict":
            return {"pos": vec, "step": code}
        if self.obs_type == "tuple":
            return (vec, code)
        if self.obs_type == "image":
            return self._image()
        return code

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        self.episode += 1
        self.resets += 1
        self.t = 0
        noise = float(self.np_random.random())
        if self.info_type == "numeric":
            return self._obs(), {"ep": self.episode}
        info: dict[str, Any] = {"episode_index": self.episode, "noise": noise}
        if options:
            info["options"] = dict(options)
        return self._obs(), info

    def render(self) -> np.ndarray | None:  # type: ignore[override]
        """The current state as an image (``render_mode="rgb_array"``), else None."""
        return None if self.render_mode is None else self._image()

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self.t += 1
        k = self.episode
        ended = self.t >= self.lengths[k % len(self.lengths)]
        truncated = ended and self.truncate[k % len(self.truncate)]
        terminated = ended and not truncated
        value = float(np.asarray(action).reshape(-1)[0])
        reward = value + 0.5 * self.t + 0.01 * self.index
        info: dict[str, Any] = {STEP_INFO_KEYS[self.info_type]: self.t}
        if self.info_type == "numeric":
            return self._obs(), reward, terminated, truncated, info
        info["vec"] = np.array([self.t, k])
        if self.t % 2 == 0:
            info["even"] = True
        if self.t % 3 == 0:
            info["nested"] = {"depth": np.float32(self.t / 3), "tag": f"e{k}s{self.t}"}
        return self._obs(), reward, terminated, truncated, info


def decode(obs: Any) -> tuple[int, int, int]:
    """``(index, episode, step)`` of one :class:`ScheduledEnv` observation (the
    episode mod 10 for ``"dict"``, ``"tuple"`` and ``"discrete"`` ones)."""
    if isinstance(obs, dict):
        obs = obs["pos"]
    elif isinstance(obs, tuple):
        obs = obs[0]
    array = np.asarray(obs)
    if array.ndim == 0:
        code = int(array)
        return code // 1000, (code // 100) % 10, code % 100
    if array.ndim == 3:
        array = array[0, 0]
    values = array[:3].astype(np.float64)
    if np.any(values % 1 != 0):  # ``signed`` values
        values = np.abs(values) - _SIGNED[1]
    index, episode, step = (round(float(v)) for v in values)
    return index, episode, step


def scheduled_env_fns(
    num_envs: int,
    lengths: Sequence[Sequence[int]] | None = None,
    truncate: Sequence[Sequence[bool]] | None = None,
    obs_type: str = "box",
    wrappers: Sequence[Callable[[gym.Env], gym.Env]] = (),
    **kwargs: Any,
) -> list[Callable[[], gym.Env]]:
    """One picklable :class:`ScheduledEnv` factory per sub-env, sub-env ``i``
    with ``lengths[i]`` and ``truncate[i]`` (default: episodes of ``2 + i % 3``
    then 4 steps, the first truncated where ``i`` is even), ``kwargs`` and
    ``wrappers`` (single-env wrappers, innermost first)."""
    fns: list[Callable[[], gym.Env]] = []
    for i in range(num_envs):
        ls = lengths[i] if lengths is not None else (2 + i % 3, 4)
        ts = truncate[i] if truncate is not None else (i % 2 == 0, False)
        args = (i, tuple(ls), tuple(ts), obs_type)
        fns.append(functools.partial(_build, args, dict(kwargs), tuple(wrappers)))
    return fns


def _build(args: tuple, kwargs: dict[str, Any], wrappers: tuple) -> gym.Env:
    env: gym.Env = ScheduledEnv(*args, **kwargs)
    for wrapper in wrappers:
        env = wrapper(env)
    return env


class DenseFinalObsVectorEnv(SyncVectorEnv):
    """Gymnasium's ``SyncVectorEnv``, reporting SAME_STEP's final observations as
    ALE's ``AtariVectorEnv`` does: one dense ``info["final_obs"]`` array (stale
    rows where no episode ended), no masks, no final infos. A test base for
    adapters of that layout; observations must be a Box."""

    def __init__(
        self,
        env_fns: Sequence[Callable[[], gym.Env]],
        *,
        autoreset_mode: AutoresetMode | str = AutoresetMode.SAME_STEP,
        **kwargs: Any,
    ) -> None:
        super().__init__(env_fns, autoreset_mode=autoreset_mode, **kwargs)
        space = self.single_observation_space
        if not isinstance(space, spaces.Box):
            self.close()
            raise TypeError(
                f"DenseFinalObsVectorEnv needs sub-envs with Box observations, not "
                f"{space} (with scheduled_env_fns: obs_type 'box' or 'image')."
            )
        self._dense = np.zeros((self.num_envs, *space.shape), space.dtype)

    def step(self, actions: Any) -> Any:
        obs, rewards, terminations, truncations, infos = super().step(actions)
        infos = to_dense_finals(infos, self._dense)
        return obs, rewards, terminations, truncations, infos
