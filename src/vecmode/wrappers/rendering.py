"""Rendering, right in every mode: ``RecordVideo``, ``HumanRendering``, and the
single-env ``FinalFrameInfo`` they need in SAME_STEP (docs/wrappers.md says why).
"""

from __future__ import annotations

import gc
import os
from collections import deque
from collections.abc import Callable, Sequence
from copy import deepcopy
from inspect import signature
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import logger
from gymnasium.error import DependencyNotInstalled
from gymnasium.vector import VectorEnv
from gymnasium.wrappers.vector import rendering as gymnasium_rendering

from vecmode.core import StepResult
from vecmode.errors import IncompatibleModeError, incompatible_mode
from vecmode.modes import final_frames, final_in_info
from vecmode.wrappers.base import Infos, Mask, StatefulWrapper

FINAL_FRAME = "final_frame"
_ONE_FRAME = ("rgb_array", "depth_array")

MOVIEPY_MISSING = (
    "RecordVideo needs MoviePy, which is not installed: run pip install moviepy "
    '(or, in a vecmode checkout, pip install ".[video]").'
)
PYGAME_MISSING = (
    "HumanRendering needs pygame, which is not installed: run pip install pygame "
    '(or, in a vecmode checkout, pip install ".[video]").'
)


def _check_render_mode(who: str, render_mode: Any) -> None:
    if render_mode not in _ONE_FRAME:
        raise ValueError(
            f"{who} needs envs that render one frame per render() call, render_mode "
            f"'rgb_array' or 'depth_array'; got {render_mode!r}. Build the env with "
            f'render_mode="rgb_array".'
        )


class FinalFrameInfo(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Put the frame an episode ends on in the info of the step that ends it,
    under ``key``. A single-env wrapper (of an env rendering ``"rgb_array"`` or
    ``"depth_array"``) for the sub-envs of a SAME_STEP vector env, where
    :class:`RecordVideo` and :class:`HumanRendering` find the last frame in
    ``info["final_info"][key]``.

    >>> import numpy as np, vecmode
    >>> from vecmode.wrappers import FinalFrameInfo
    >>> envs = vecmode.make_vec("CartPole-v1", 2, "sync", wrappers=[FinalFrameInfo],
    ...     autoreset_mode="SameStep", max_episode_steps=1, render_mode="rgb_array")
    >>> _ = envs.reset(seed=0)
    >>> envs.step(np.array([0, 1]))[4]["final_info"]["final_frame"].shape
    (2, 400, 600, 3)
    >>> envs.close()
    """

    def __init__(self, env: gym.Env, key: str = FINAL_FRAME) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, key=key)
        gym.Wrapper.__init__(self, env)
        _check_render_mode("FinalFrameInfo", env.render_mode)
        self.final_frame_key = key

    def step(self, action: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        """Step; at an episode's end, add its last frame to the info."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        if terminated or truncated:
            info = {**info, self.final_frame_key: self.env.render()}
        return obs, reward, terminated, truncated, info


# per sub-env, the frames a call added; and every sub-env's frame now
Frames = tuple[list[list[np.ndarray]], list[np.ndarray]]


class _Rendering(StatefulWrapper):
    """The frames each call added, per sub-env, in every mode (docs/wrappers.md)."""

    def __init__(self, env: VectorEnv) -> None:
        super().__init__(env)
        # the key of the final frames in final_info (None: not needed)
        needed = final_in_info(self.boundaries.mode)
        self._final_key = self._final_frame_key() if needed else None

    def _final_frame_key(self) -> str:
        """The key :class:`FinalFrameInfo` writes under, asked of every sub-env."""
        get_attr = getattr(self.env, "get_attr", None) or getattr(
            self.env.unwrapped, "get_attr", None
        )
        if get_attr is None:  # nothing to ask: the frames are checked as they come
            return FINAL_FRAME
        try:
            keys = set(get_attr("final_frame_key"))
        except Exception:  # a sub-env without the attribute (in any backend)
            keys = set()
        if len(keys) != 1:
            mode = self.boundaries.mode
            why = (
                "each sub-env's last frame must come from a "
                "vecmode.wrappers.FinalFrameInfo around it, and not all have one."
            )
            instead = (
                "Build the env with wrappers=[vecmode.wrappers.FinalFrameInfo], or "
                "in NextStep or Disabled mode."
            )
            raise IncompatibleModeError(
                incompatible_mode(type(self).__name__, mode, [mode], why, instead)
            )
        return str(keys.pop())

    def _render(self) -> list[np.ndarray]:
        """Every sub-env's frame now (checked: one image array each)."""
        frames = self.env.render()
        if (
            frames is None
            or len(frames) != self.num_envs
            or any(not isinstance(f, np.ndarray) or f.ndim != 3 for f in frames)
        ):
            types = (
                "" if frames is None else f" of {[type(f).__name__ for f in frames]}"
            )
            raise ValueError(
                f"{type(self).__name__} needs env.render() to return "
                f"{self.num_envs} frames, one image array (height, width, channels) "
                f"per sub-env; got {type(frames).__name__}{types}."
            )
        return [np.array(frame, copy=True) for frame in frames]

    def _step_frames(self, infos: Any) -> Frames:
        """The frames a step added: the ended episode's last one, then the frame now."""
        now = self._render()
        frames: list[list[np.ndarray]] = [[frame] for frame in now]
        ended = np.flatnonzero(self.boundary.final_in_info).tolist()
        if self._final_key is None or not ended:
            return frames, now
        found = final_frames(infos, self._final_key)
        missing = [i for i in ended if found is None or not found[0][i]]
        if found is None or missing:
            raise ValueError(
                f"{type(self).__name__}: sub-env(s) {', '.join(map(str, missing))} "
                f"ended, but their final info has no last frame. Wrap each sub-env "
                f"in vecmode.wrappers.FinalFrameInfo."
            )
        for i in ended:
            frames[i].insert(0, np.asarray(found[1][i]))
        return frames, now

    def _reset_frames(self) -> Frames:
        """The frames a reset added: the reset sub-envs' first."""
        starts = self.boundary.starts
        if not np.count_nonzero(starts):
            return [[] for _ in range(self.num_envs)], []
        now = self._render()
        return [[now[i]] if starts[i] else [] for i in range(self.num_envs)], now


# Gymnasium's default gc_trigger (the same object, so the signatures agree)
_GC_TRIGGER = (
    signature(gymnasium_rendering.RecordVideo.__init__).parameters["gc_trigger"].default
)


class RecordVideo(_Rendering):
    """Gymnasium's ``RecordVideo``, each frame once, in every mode; same arguments
    and files. An episode's last frame is included (in SAME_STEP from
    :class:`FinalFrameInfo`); a partial reset adds the reset sub-envs' frames only.

    >>> import os, tempfile, numpy as np, vecmode
    >>> from vecmode.wrappers import FinalFrameInfo, RecordVideo
    >>> folder = tempfile.TemporaryDirectory()
    >>> envs = vecmode.make_vec("CartPole-v1", 2, "sync", wrappers=[FinalFrameInfo],
    ...     autoreset_mode="SameStep", max_episode_steps=3, render_mode="rgb_array")
    >>> envs = RecordVideo(envs, os.path.join(folder.name, "videos"),
    ...     episode_trigger=lambda e: e == 0)
    >>> _ = envs.reset(seed=0)
    >>> for _ in range(4):
    ...     _ = envs.step(np.array([0, 1]))
    >>> os.listdir(envs.video_folder), envs.frames_per_video  # first frame, 3 steps
    (['rl-video-episode-0.mp4'], [4])
    >>> envs.close()
    >>> folder.cleanup()
    """

    def __init__(
        self,
        env: VectorEnv,
        video_folder: str,
        video_aspect_ratio: tuple[int, int] = (1, 1),
        record_first_only: bool = False,
        episode_trigger: Callable[[int], bool] | None = None,
        step_trigger: Callable[[int], bool] | None = None,
        video_length: int = 0,
        name_prefix: str = "rl-video",
        fps: int | None = None,
        disable_logger: bool = True,
        gc_trigger: Callable[[int], bool] | None = _GC_TRIGGER,
    ) -> None:
        _check_render_mode(type(self).__name__, env.render_mode)
        try:
            import moviepy  # noqa: F401
        except ImportError as error:
            raise DependencyNotInstalled(MOVIEPY_MISSING) from error
        super().__init__(env)
        if episode_trigger is None and step_trigger is None:
            from gymnasium.utils.save_video import capped_cubic_video_schedule

            episode_trigger = capped_cubic_video_schedule
        self.episode_trigger = episode_trigger
        self.step_trigger = step_trigger
        self.disable_logger = disable_logger
        self.gc_trigger = gc_trigger
        self.record_first_only = record_first_only
        self.video_aspect_ratio = video_aspect_ratio
        self.frame_cols = -1
        self.frame_rows = -1
        self.video_folder = _video_folder(video_folder)
        self.frames_per_sec = (
            self.metadata.get("render_fps", 30) if fps is None else fps
        )
        self.name_prefix = name_prefix
        self.video_length = video_length if video_length != 0 else float("inf")
        self._video_name: str | None = None
        self.recording = False
        self.recorded_frames: list[np.ndarray] = []
        self.frames_per_video: list[int] = []
        self.step_id = -1
        self.episode_id = -1
        # the sub-envs in the grid; the first one's episodes are counted
        self._tiles = [0] if self.record_first_only else list(range(self.num_envs))
        # while recording, for each tile after the first: its frames not yet in a
        # video frame, and the frame it showed last
        self._queues: list[deque[np.ndarray]] = [deque() for _ in self._tiles[1:]]
        self._shown: list[np.ndarray] = []
        # a video started: its first video frame shows every tile's frame now
        self._fresh = False

    def _reset_result(self, obs: Any, infos: Infos, state: Mask) -> tuple[Any, Any]:
        obs, infos = super()._reset_result(obs, infos, state)
        starts = self.boundary.starts
        events: list[tuple[bool, int | None]] = [(True, None)] if starts[0] else []
        self._advance(events, self._reset_frames)
        return obs, infos

    def _step_result(self, result: StepResult) -> StepResult:
        result = super()._step_result(result)
        self.step_id += 1
        b = self.boundary
        # sub-env 0's frames: the ended episode's last (SAME_STEP), then the one now
        events: list[tuple[bool, int | None]] = []
        if self._final_key is not None and b.final_in_info[0]:
            events.append((False, None))
        events.append((bool(b.starts[0]), self.step_id))
        self._advance(events, lambda: self._step_frames(result[4]))
        return result

    def _advance(
        self, events: list[tuple[bool, int | None]], frames: Callable[[], Frames]
    ) -> None:
        """Take a call's events (one per frame of sub-env 0) into the videos."""
        added: Frames | None = frames() if self.recording else None
        if added is not None:
            self._enqueue(added[0])
        for k, event in enumerate(events):
            self._on_event(*event)
            if not self.recording:
                continue
            if added is None:  # a recording starts: the frames of this call
                added = frames()
                self._enqueue(added[0])
            self._add_row(added[0][0][k], added[1])
        if not self.recording:  # nothing waits for a video that is not recorded
            self._clear()

    def _enqueue(self, added: list[list[np.ndarray]]) -> None:
        """Queue the other tiles' new frames for the next video frames."""
        for queue, i in zip(self._queues, self._tiles[1:], strict=True):
            queue.extend(added[i])

    def _on_event(self, starts: bool, step: int | None) -> None:
        """Gymnasium's triggers, at one frame of sub-env 0."""
        if starts:
            self.episode_id += 1
            if self.recording and self.video_length == float("inf"):
                self.stop_recording()
            if self.episode_trigger and self.episode_trigger(self.episode_id):
                self.start_recording(f"{self.name_prefix}-episode-{self.episode_id}")
        if step is not None and self.step_trigger and self.step_trigger(step):
            self.start_recording(f"{self.name_prefix}-step-{step}")

    def _add_row(self, first: np.ndarray, now: list[np.ndarray]) -> None:
        """Add a video frame: sub-env 0's ``first``, and each other tile's next one."""
        if self._fresh or len(self._shown) != len(self._queues):
            self._fresh = False
            self._clear()
            self._shown = [now[i] for i in self._tiles[1:]]
        else:
            self._shown = [
                queue.popleft() if queue else shown
                for queue, shown in zip(self._queues, self._shown, strict=True)
            ]
        self.recorded_frames.append(self._concat_frames([first, *self._shown]))
        if len(self.recorded_frames) > self.video_length:
            self.stop_recording()

    def _clear(self) -> None:
        """Keep no frame of the other tiles."""
        for queue in self._queues:
            queue.clear()
        self._shown = []

    def _concat_frames(self, frames: Sequence[np.ndarray]) -> np.ndarray:
        """The grid of the tiles' frames (its shape chosen on the first one)."""
        array = np.array(frames)
        n, h, w, c = array.shape
        if self.frame_cols == -1 or self.frame_rows == -1:
            self.frame_rows, self.frame_cols = _grid_shape(
                n, h, w, self.video_aspect_ratio
            )
        grid = np.zeros((self.frame_rows * h, self.frame_cols * w, c), array.dtype)
        for idx in range(n):
            r, col = divmod(idx, self.frame_cols)
            grid[r * h : (r + 1) * h, col * w : (col + 1) * w] = array[idx]
        return grid

    def start_recording(self, video_name: str) -> None:
        """Start a video (stopping the one being recorded, if any)."""
        if self.recording:
            self.stop_recording()
        self.recording = True
        self._video_name = video_name
        self._fresh = True

    def stop_recording(self) -> None:
        """Stop the video being recorded and save it."""
        if not self.recording:
            raise RuntimeError(
                "stop_recording was called, but no recording was started"
            )
        if not self.recorded_frames:
            logger.warn("Ignored saving a video as there were zero frames to save.")
        else:
            from moviepy.video.io.ImageSequenceClip import ImageSequenceClip

            frames, fps = self.recorded_frames, self.frames_per_sec
            clip = ImageSequenceClip(frames, fps=fps)
            # moviepy writes int(duration * fps) frames, and its duration can fall
            # just short (6 frames at 30 fps make 5): half a frame more
            set_duration = getattr(clip, "with_duration", None) or clip.set_duration
            clip = set_duration((len(frames) + 0.5) / fps)
            path = os.path.join(self.video_folder, f"{self._video_name}.mp4")
            clip.write_videofile(path, logger=None if self.disable_logger else "bar")
            self.frames_per_video.append(len(self.recorded_frames))
            del clip
        self.recorded_frames = []
        self.recording = False
        self._video_name = None
        if self.gc_trigger and self.gc_trigger(self.episode_id):
            gc.collect()

    def close(self, **kwargs: Any) -> None:
        """Close the env, then save the video being recorded (as Gymnasium's)."""
        super().close(**kwargs)
        if self.recording:
            self.stop_recording()
        self._clear()

    def __del__(self) -> None:
        """Warn if the last video was not saved."""
        if getattr(self, "recorded_frames", None):
            logger.warn("Unable to save last video! Did you call close()?")


def _video_folder(path: str) -> str:
    """``path`` made absolute and created (a warning if it exists, as Gymnasium's)."""
    folder = os.path.abspath(path)
    if os.path.isdir(folder):
        logger.warn(
            f"Overwriting existing videos at {folder} folder (try specifying a "
            f"different `video_folder` for the `RecordVideo` wrapper if this is not "
            f"desired)"
        )
    os.makedirs(folder, exist_ok=True)
    return folder


def _grid_shape(
    n: int, h: int, w: int, aspect_ratio: tuple[int, int]
) -> tuple[int, int]:
    """Gymnasium's grid ``(rows, cols)`` of ``n`` frames nearest the aspect ratio."""
    target = aspect_ratio[0] / aspect_ratio[1]
    best, best_diff = (1, n), np.inf
    for rows in range(1, int(n**0.5) + 1):
        if n % rows == 0:
            cols = n // rows
            diff = abs(cols * w / (rows * h) - target)
            if diff < best_diff:
                best, best_diff = (rows, cols), diff
    return best


class HumanRendering(_Rendering):
    """Gymnasium's ``HumanRendering``, every frame, in every mode; same arguments.
    An episode's last frame is shown too (in SAME_STEP from :class:`FinalFrameInfo`).
    Needs pygame; override :meth:`show` to draw elsewhere.

    >>> import numpy as np, vecmode
    >>> from vecmode.wrappers import HumanRendering
    >>> class Count(HumanRendering):
    ...     shown = 0
    ...     def show(self, frames):
    ...         self.shown += 1
    >>> envs = Count(vecmode.make_vec("CartPole-v1", 2, "sync",
    ...     autoreset_mode="Disabled", render_mode="rgb_array"))
    >>> _ = envs.reset(seed=0)
    >>> _ = envs.step(np.array([0, 1]))
    >>> envs.shown
    2
    >>> envs.close()
    """

    ACCEPTED_RENDER_MODES = list(_ONE_FRAME)

    def __init__(
        self, env: VectorEnv, screen_size: tuple[int, int] | None = None
    ) -> None:
        _check_render_mode(type(self).__name__, env.render_mode)
        if "render_fps" not in env.metadata:
            raise ValueError(
                "The base environment must specify 'render_fps' to be used with "
                "the HumanRendering wrapper"
            )
        super().__init__(env)
        self.screen_size = screen_size
        self.window: Any = None
        self.clock: Any = None
        self._last: list[np.ndarray | None] = [None] * self.num_envs
        if "human" not in self.metadata.get("render_modes", []):
            self.metadata = deepcopy(self.metadata)
            self.metadata["render_modes"] = [*self.metadata["render_modes"], "human"]

    @property
    def render_mode(self) -> str:  # type: ignore[override]
        """Always ``"human"``."""
        return "human"

    def _reset_result(self, obs: Any, infos: Infos, state: Mask) -> tuple[Any, Any]:
        obs, infos = super()._reset_result(obs, infos, state)
        self._show_all(self._reset_frames()[0])
        return obs, infos

    def _step_result(self, result: StepResult) -> StepResult:
        result = super()._step_result(result)
        self._show_all(self._step_frames(result[4])[0])
        return result

    def _show_all(self, frames: list[list[np.ndarray]]) -> None:
        """Show each new frame in turn; sub-envs with no new one keep theirs."""
        for k in range(max(len(new) for new in frames)):
            for i, new in enumerate(frames):
                if new:
                    self._last[i] = new[min(k, len(new) - 1)]
            self.show([frame for frame in self._last if frame is not None])

    def show(self, frames: Sequence[np.ndarray]) -> None:
        """Draw one grid of the sub-envs' frames in the window."""
        try:
            import pygame
        except ImportError as error:
            raise DependencyNotInstalled(PYGAME_MISSING) from error
        height, width = frames[0].shape[:2]
        if self.screen_size is None:
            self.screen_size = (width, height)
        if self.window is None:
            pygame.display.init()
            self.window = pygame.display.set_mode(self.screen_size)
            self.clock = pygame.time.Clock()
        rows, cols = _grid_shape(len(frames), height, width, self.screen_size)
        scale = min(
            self.screen_size[0] / (cols * width), self.screen_size[1] / (rows * height)
        )
        tile = (max(int(width * scale), 1), max(int(height * scale), 1))
        self.window.fill((0, 0, 0))
        for i, frame in enumerate(frames):
            r, c = divmod(i, cols)
            rgb = np.ascontiguousarray(np.asarray(frame, dtype=np.uint8)[..., :3])
            surface = pygame.surfarray.make_surface(rgb.transpose(1, 0, 2))
            self.window.blit(
                pygame.transform.scale(surface, tile), (c * tile[0], r * tile[1])
            )
        pygame.event.pump()
        self.clock.tick(self.metadata["render_fps"])
        pygame.display.flip()

    def close(self, **kwargs: Any) -> None:
        """Close the window, then the env."""
        if self.window is not None:
            import pygame

            pygame.display.quit()
            pygame.quit()
            self.window = None
        super().close(**kwargs)
