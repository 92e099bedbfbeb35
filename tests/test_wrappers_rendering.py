"""RecordVideo and HumanRendering: every frame of every episode, in every mode.

The sub-envs render frames that say which sub-env, episode and step they show
(``vecmode.testing.ScheduledEnv(render_mode="rgb_array")``), so a frame missing,
repeated or out of order shows as a wrong code. References:

* the episode's real length, from a log the sub-env itself keeps: a video of an
  episode holds its first frame and one frame per step, the last one included;
* per sub-env, Gymnasium's single-env ``RecordVideo`` / ``HumanRendering`` on that
  sub-env, in the same vector env: they see its ``step`` and ``reset`` directly,
  so they record (show) each of its frames exactly once, in every mode;
* Gymnasium's vector ``RecordVideo`` in NEXT_STEP, where it is right.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.error import DependencyNotInstalled
from gymnasium.wrappers import vector as gym_vector

import vecmode
from tests.gym_verdict_helpers import fake_moviepy
from vecmode import AutoresetMode
from vecmode.testing import ScheduledEnv, decode, scheduled_env_fns
from vecmode.wrappers import FinalFrameInfo, HumanRendering, RecordVideo

MODES = tuple(AutoresetMode)
SAME_STEP, DISABLED = AutoresetMode.SAME_STEP, AutoresetMode.DISABLED
#: sub-env i's episode lengths: ends at different calls, sub-env 2's more often
LENGTHS = ((2, 3), (3, 4), (1, 2))
H, W = 6, 8  # ScheduledEnv's frames

pytestmark = [
    pytest.mark.filterwarnings("ignore:.*Overwriting existing videos"),
    pytest.mark.filterwarnings("ignore:.*Recorded episodes will not contain"),
]


class LoggedEnv(ScheduledEnv):
    """Logs every state it enters, ``(episode, step)``."""

    def __init__(self, index: int, lengths: Any, log: list) -> None:
        super().__init__(
            index, lengths, (False, True), info_type="numeric", render_mode="rgb_array"
        )
        self.log = log

    def reset(self, **kwargs: Any) -> Any:
        out = super().reset(**kwargs)
        self.log.append((self.episode, self.t))
        return out

    def step(self, action: Any) -> Any:
        out = super().step(action)
        self.log.append((self.episode, self.t))
        return out


def make_fns(
    logs: list[list] | None = None,
    single: Callable[[int, gym.Env], gym.Env] | None = None,
    final_frames: bool = True,
) -> list[Callable[[], gym.Env]]:
    """One sub-env per entry of LENGTHS, with FinalFrameInfo, logging its states."""

    def make(i: int) -> gym.Env:
        env: gym.Env = LoggedEnv(i, LENGTHS[i], [] if logs is None else logs[i])
        if final_frames:
            env = FinalFrameInfo(env)
        return env if single is None else single(i, env)

    return [functools.partial(make, i) for i in range(len(LENGTHS))]


def make_base(mode: AutoresetMode, base: str, fns: list) -> gym.vector.VectorEnv:
    if base == "vecmode":
        return vecmode.with_autoreset(vecmode.SyncVectorEnv(fns), mode)
    if base == "vecmode-async":
        return vecmode.with_autoreset(vecmode.AsyncVectorEnv(fns), mode)
    return gym.vector.SyncVectorEnv(fns, autoreset_mode=mode)


#: extra partial resets, in every mode: (after step, mask); sub-env 0's episode is
#: cut in the middle at step 9, the others' at steps 5 and 12
MASKS = {5: [False, True, False], 9: [True, False, False], 12: [False, True, True]}


def drive(envs: gym.vector.VectorEnv, mode: AutoresetMode, steps: int = 16) -> None:
    """Reset, step; reset the ended sub-envs where the mode leaves it to the caller
    (and the extra MASKS in every mode)."""
    envs.reset(seed=0)
    for t in range(steps):
        *_, terminations, truncations, _ = envs.step(np.zeros(len(LENGTHS), int))
        ended = vecmode.modes.boundary(
            mode, terminations, truncations, np.zeros(len(LENGTHS), bool)
        ).needs_reset
        mask = ended | np.array(MASKS.get(t, [False] * len(LENGTHS)))
        if mask.any():
            envs.reset(options={"reset_mask": mask})


def tiles(videos: list, rows: int, cols: int, n: int) -> list[list[list[np.ndarray]]]:
    """video -> tile -> its frames."""
    return [
        [
            [
                f[(i // cols) * H : (i // cols + 1) * H, (i % cols) * W :][:, :W]
                for f in frames
            ]
            for i in range(n)
        ]
        for _, frames in videos
    ]


def episodes(log: list[tuple[int, int]]) -> list[list[tuple[int, int]]]:
    """A sub-env's states, by episode."""
    out: list[list[tuple[int, int]]] = []
    for episode, t in log:
        if t == 0:
            out.append([])
        out[-1].append((episode, t))
    return out


# --------------------------------------------------------------- RecordVideo
def record(
    cls: Any, mode: AutoresetMode, base: str, first_only: bool
) -> tuple[list, list[list]]:
    """Every episode recorded: (video -> tile -> frames, each sub-env's log)."""
    logs: list[list] = [[] for _ in LENGTHS]
    with fake_moviepy() as ctx:
        envs = cls(
            make_base(mode, base, make_fns(logs)),
            ctx.folder,
            record_first_only=first_only,
            episode_trigger=lambda episode: True,
        )
        drive(envs, mode)
        envs.close()
    n = 1 if first_only else len(LENGTHS)
    return tiles(ctx.videos, envs.frame_rows, envs.frame_cols, n), logs


def check_videos(videos: list, logs: list[list]) -> None:
    """A video of an episode holds 1 + its real length frames, its first to its
    last; each tile holds its sub-env's frames once each, in order."""
    real = episodes(logs[0])
    assert len(videos) == len(real) >= 6, f"{len(videos)} videos"
    for k, (video, states) in enumerate(zip(videos, real, strict=True)):
        recorded = [decode(frame) for frame in video[0]]
        assert recorded == [(0, e, t) for e, t in states], f"video {k}"
        # the count: the first frame and one per step, the last one included
        assert len(recorded) == 1 + states[-1][1]
    # each tile: its sub-env's states in order, each once, up to where the last
    # video was cut by close() (there, tiles that wait show their last frame)
    complete = sum(len(video[0]) for video in videos[:-1])
    for i in range(1, len(videos[0])):
        shown = [decode(frame) for video in videos for frame in video[i]]
        assert shown[:complete] == [(i, e, t) for e, t in logs[i][:complete]], i


@pytest.mark.parametrize("first_only", [False, True], ids=["grid", "first-only"])
@pytest.mark.parametrize("base", ["vecmode", "gymnasium"])
@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_each_video_is_one_episode_with_each_frame_once(mode, base, first_only):
    """The count, against each episode's real length, with partial resets."""
    videos, logs = record(RecordVideo, mode, base, first_only)
    check_videos(videos, logs)


@pytest.mark.parametrize("mode", [SAME_STEP, DISABLED], ids=lambda m: m.value)
def test_the_count_fails_gymnasiums_record_video(mode):
    """The check can fail: Gymnasium's misses each last frame in SameStep and
    repeats frames at partial resets."""
    videos, logs = record(gym_vector.RecordVideo, mode, "gymnasium", False)
    with pytest.raises(AssertionError):
        check_videos(videos, logs)
    videos, logs = record(RecordVideo, mode, "gymnasium", False)
    check_videos(videos, logs)


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_each_tile_is_what_gymnasiums_single_env_wrapper_records(mode):
    """Per sub-env reference: Gymnasium's single-env RecordVideo on each sub-env,
    inside the same vector env, records each of its episodes; the vector
    RecordVideo's tile of that sub-env holds the very same frames."""
    with fake_moviepy() as ctx:

        def single(i: int, env: gym.Env) -> gym.Env:
            return gym.wrappers.RecordVideo(
                env,
                ctx.folder,
                name_prefix=f"single-{i}",
                episode_trigger=lambda episode: True,
            )

        envs = RecordVideo(
            make_base(mode, "gymnasium", make_fns(single=single)),
            ctx.folder,
            episode_trigger=lambda episode: True,
        )
        drive(envs, mode)
        envs.close()
    ours = [(name, f) for name, f in ctx.videos if not name.startswith("single")]
    videos = tiles(ours, envs.frame_rows, envs.frame_cols, len(LENGTHS))
    complete = sum(len(video[0]) for video in videos[:-1])
    for i in range(len(LENGTHS)):
        theirs = [
            frames
            for name, frames in ctx.videos
            if name.startswith(f"single-{i}-episode-")
        ]
        expected = [frame for frames in theirs for frame in frames]
        got = [frame for video in videos for frame in video[i]]
        assert len(got) >= complete > 10
        for k in range(complete):
            assert np.array_equal(got[k], expected[k]), (i, k, decode(got[k]))
        if i == 0:  # sub-env 0's episodes are the videos: the same, one by one
            for video, frames in zip(videos[:-1], theirs, strict=False):
                assert len(video[0]) == len(frames)


def test_videos_are_the_same_in_every_mode():
    """NEXT_STEP spends a call on each reset (the reset step), SAME_STEP and
    DISABLED do not, yet each episode's video is the same grid in every mode."""
    recorded = {}
    for mode in MODES:
        with fake_moviepy() as ctx:
            envs = RecordVideo(
                make_base(mode, "vecmode", make_fns()),
                ctx.folder,
                episode_trigger=lambda episode: True,
            )
            envs.reset(seed=0)
            for _ in range(30):
                envs.step(np.zeros(3, int))
                if envs.boundary.needs_reset.any():
                    envs.reset(options={"reset_mask": envs.boundary.needs_reset})
            envs.close()
        recorded[mode] = ctx.videos[:-1]  # the last one is cut by close()
    k = min(len(videos) for videos in recorded.values())
    assert k >= 4
    for mode, videos in recorded.items():
        for (name, frames), (ref_name, ref) in zip(
            videos[:k], recorded[AutoresetMode.NEXT_STEP][:k], strict=True
        ):
            assert name == ref_name, mode
            assert len(frames) == len(ref), (mode, name)
            assert all(map(np.array_equal, frames, ref)), (mode, name)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"episode_trigger": lambda e: e % 2 == 1},
        {"step_trigger": lambda s: s % 7 == 2, "video_length": 4},
        {"step_trigger": lambda s: s == 3},
        {"record_first_only": True, "video_aspect_ratio": (16, 9)},
        {},  # Gymnasium's schedule
    ],
    ids=["episodes", "steps", "step-then-episode-end", "first-only", "default"],
)
def test_same_videos_as_gymnasiums_in_next_step(kwargs):
    """Where Gymnasium's is right (NEXT_STEP, no partial reset), the same files with
    the same frames, whatever the triggers."""
    recorded = []
    for cls in (gym_vector.RecordVideo, RecordVideo):
        with fake_moviepy() as ctx:
            envs = cls(gym.vector.SyncVectorEnv(make_fns()), ctx.folder, **kwargs)
            envs.reset(seed=0)
            for _ in range(25):
                envs.step(np.zeros(3, int))
            envs.close()
        recorded.append(ctx.videos)
    theirs, ours = recorded
    assert [name for name, _ in ours] == [name for name, _ in theirs]
    assert ours  # something to compare
    for (name, a), (_, b) in zip(theirs, ours, strict=True):
        assert len(a) == len(b) and all(map(np.array_equal, a, b)), name


def test_over_an_async_env_the_same_videos():
    fns = scheduled_env_fns(  # picklable, for the workers
        3,
        LENGTHS,
        [(True, False)] * 3,
        info_type="numeric",
        render_mode="rgb_array",
        wrappers=[FinalFrameInfo],
    )
    with fake_moviepy() as ctx:
        for base in ("vecmode", "vecmode-async"):
            envs = RecordVideo(
                make_base(SAME_STEP, base, fns),
                os.path.join(ctx.folder, base),
                episode_trigger=lambda episode: True,
            )
            drive(envs, SAME_STEP, steps=10)
            envs.close()
    half = len(ctx.videos) // 2
    sync, in_workers = ctx.videos[:half], ctx.videos[half:]
    assert len(sync) == len(in_workers) >= 4
    for (_, a), (_, b) in zip(sync, in_workers, strict=True):
        assert len(a) == len(b) and all(map(np.array_equal, a, b))


def test_the_video_files_hold_every_frame(tmp_path):
    """With moviepy itself: each file has one frame per state of its episode
    (moviepy alone drops the last one of 6 at 30 fps; vecmode's keeps it)."""
    imageio_ffmpeg = pytest.importorskip("imageio_ffmpeg")
    logs: list[list] = [[] for _ in LENGTHS]
    envs = RecordVideo(
        make_base(SAME_STEP, "vecmode", make_fns(logs)),
        str(tmp_path / "videos"),
        record_first_only=True,
        episode_trigger=lambda episode: True,
        fps=30,
    )
    drive(envs, SAME_STEP, steps=12)
    envs.close()
    real = episodes(logs[0])
    names = sorted(os.listdir(envs.video_folder), key=lambda n: int(n[17:-4]))
    assert names == [f"rl-video-episode-{k}.mp4" for k in range(len(real))]
    for name, states in zip(names, real, strict=True):
        path = os.path.join(envs.video_folder, name)
        frames, _ = imageio_ffmpeg.count_frames_and_secs(path)
        assert frames == len(states) == 1 + states[-1][1], name


# ---------------------------------------------------- SAME_STEP's last frame
@pytest.mark.parametrize("cls", [RecordVideo, HumanRendering])
@pytest.mark.parametrize("base", ["vecmode", "gymnasium"])
def test_same_step_needs_final_frame_info_and_says_so(cls, base, tmp_path):
    args = (str(tmp_path),) if cls is RecordVideo else ()
    envs = make_base(SAME_STEP, base, make_fns(final_frames=False))
    with pytest.raises(vecmode.IncompatibleModeError, match="FinalFrameInfo") as info:
        cls(envs, *args)
    assert "SameStep" in str(info.value) and "wrappers=" in str(info.value)
    for mode in (AutoresetMode.NEXT_STEP, DISABLED):  # they need nothing
        other = cls(make_base(mode, base, make_fns(final_frames=False)), *args)
        drive(other, mode, steps=4)
        other.close()
    envs.close()


def test_a_missing_final_frame_is_named():
    class Forgetful(FinalFrameInfo):
        def step(self, action: Any) -> Any:
            return self.env.step(action)

    fns = make_fns(
        final_frames=False,
        single=lambda i, env: Forgetful(env) if i == 2 else FinalFrameInfo(env),
    )
    with fake_moviepy() as ctx:
        envs = RecordVideo(make_base(SAME_STEP, "vecmode", fns), ctx.folder)
        envs.reset(seed=0)
        with pytest.raises(ValueError, match=r"sub-env\(s\) 2 ended"):
            envs.step(np.zeros(3, int))
        envs.close()


def test_final_frame_info_puts_the_last_frame_in_the_info():
    env = FinalFrameInfo(LoggedEnv(1, (2,), []), key="last")
    env.reset(seed=0)
    assert "last" not in env.step(0)[-1]
    _, _, terminated, _, info = env.step(0)
    assert terminated and decode(info["last"]) == (1, 0, 2)
    with pytest.raises(ValueError, match="render_mode"):
        FinalFrameInfo(ScheduledEnv(0))


@pytest.mark.parametrize("render_mode", [None, "rgb_array_list", "human"])
@pytest.mark.parametrize("cls", [RecordVideo, HumanRendering])
def test_render_modes_without_one_frame_are_refused(cls, render_mode, tmp_path):
    class Env(ScheduledEnv):
        metadata = {"render_modes": [render_mode], "render_fps": 30}

    envs = vecmode.SyncVectorEnv([lambda: Env(0)])
    envs.unwrapped.render_mode = render_mode
    args = (str(tmp_path),) if cls is RecordVideo else ()
    with pytest.raises(ValueError, match="rgb_array"):
        cls(envs, *args)


def test_missing_moviepy_or_pygame_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "moviepy", None)
    envs = make_base(DISABLED, "vecmode", make_fns())
    with pytest.raises(DependencyNotInstalled, match=r"vecmode\[video\]"):
        RecordVideo(envs, str(tmp_path))
    monkeypatch.setitem(sys.modules, "pygame", None)
    shown = HumanRendering(envs)
    with pytest.raises(DependencyNotInstalled, match=r"vecmode\[video\]"):
        shown.reset(seed=0)
    envs.close()


# ------------------------------------------------------------ HumanRendering
class Shown(HumanRendering):
    """Keeps what it would draw."""

    def __init__(self, env: gym.vector.VectorEnv) -> None:
        super().__init__(env)
        self.shown: list[list[tuple[int, int, int]]] = []

    def show(self, frames: Any) -> None:
        self.shown.append([decode(frame) for frame in frames])


class SingleShown(gym.wrappers.HumanRendering):
    """Gymnasium's single-env HumanRendering, keeping what it would draw."""

    def __init__(self, env: gym.Env, log: list) -> None:
        super().__init__(env)
        self.log = log

    def _render_frame(self) -> None:
        self.log.append(decode(self.env.render()))


@pytest.mark.parametrize("base", ["vecmode", "gymnasium"])
@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_every_frame_is_shown_as_the_single_env_wrapper_shows_it(mode, base):
    """Per sub-env reference: what Gymnasium's single-env HumanRendering shows of
    that sub-env, in order; a live view may show a frame again while the others
    move, never skip one."""
    expected: list[list] = [[] for _ in LENGTHS]
    reference = make_base(
        mode,
        "gymnasium",
        make_fns(single=lambda i, env: SingleShown(env, expected[i])),
    )
    drive(reference, mode)
    reference.close()
    envs = Shown(make_base(mode, base, make_fns()))
    drive(envs, mode)
    envs.close()
    for i in range(len(LENGTHS)):
        tile = [grid[i] for grid in envs.shown]
        collapsed = [f for k, f in enumerate(tile) if k == 0 or f != tile[k - 1]]
        assert collapsed == expected[i], i
        assert len(expected[i]) > 16


def test_the_window_shows_the_grid():
    pygame = pytest.importorskip("pygame")

    class Colors(ScheduledEnv):
        def render(self) -> np.ndarray:
            frame = np.zeros((10, 10, 3), np.uint8)
            frame[..., self.index] = 200  # red, then green
            return frame

    fns = [functools.partial(Colors, i, render_mode="rgb_array") for i in range(2)]
    envs = HumanRendering(vecmode.SyncVectorEnv(fns), screen_size=(40, 20))
    envs.reset(seed=0)
    surface = pygame.surfarray.array3d(pygame.display.get_surface())  # (x, y, rgb)
    assert surface.shape == (40, 20, 3)
    assert (surface[:20, :, 0] == 200).all() and (surface[:20, :, 1] == 0).all()
    assert (surface[20:, :, 1] == 200).all() and (surface[20:, :, 0] == 0).all()
    assert envs.render_mode == "human" and "human" in envs.metadata["render_modes"]
    envs.close()
    assert envs.window is None


def test_refusals_hold_under_python_dash_o(tmp_path):
    code = (
        "import numpy as np, vecmode\n"
        "from vecmode.testing import scheduled_env_fns\n"
        "from vecmode.wrappers import HumanRendering, RecordVideo\n"
        "fns = scheduled_env_fns(2, render_mode='rgb_array')\n"
        "for make in (lambda e: RecordVideo(e, 'never-made'), HumanRendering):\n"
        "    envs = vecmode.with_autoreset(vecmode.SyncVectorEnv(fns), 'SameStep')\n"
        "    try:\n"
        "        make(envs)\n"
        "    except vecmode.IncompatibleModeError as error:\n"
        "        print('FinalFrameInfo' in str(error))\n"
    )
    out = subprocess.run(
        [sys.executable, "-O", "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    assert out.stdout.split() == ["True", "True"], out.stderr
    assert not (tmp_path / "never-made").exists()
