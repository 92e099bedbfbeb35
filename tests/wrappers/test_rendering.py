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
import warnings
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.error import DependencyNotInstalled
from gymnasium.wrappers import vector as gym_vector

import vecmode
from tests.registry.gym_verdict_helpers import fake_moviepy
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
    for i in range(1, len(videos[0])):
        codes = [(i, e, t) for e, t in logs[i]]
        assert_tile_in_order([[decode(f) for f in video[i]] for video in videos], codes)


def assert_tile_in_order(videos: list[list], stream: list) -> None:
    """A tile after the first, video by video: its sub-env's frames (``stream``,
    each one unique) in order, none skipped, a frame repeated where the sub-env
    had no new one; each video from where the previous one ended, or later."""
    start = 0
    for k, shown in enumerate(videos):
        run = [f for j, f in enumerate(shown) if j == 0 or f != shown[j - 1]]
        assert run[0] in stream[start:], (k, run[0], start)
        at = stream.index(run[0], start)
        assert run == stream[at : at + len(run)], (k, run, stream[at : at + len(run)])
        start = at + len(run) - 1


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
        if i == 0:  # sub-env 0's episodes are the videos: the same, one by one
            got = [frame for video in videos for frame in video[0]]
            assert len(got) >= complete > 10
            for k in range(complete):
                assert np.array_equal(got[k], expected[k]), (k, decode(got[k]))
            for video, frames in zip(videos[:-1], theirs, strict=False):
                assert len(video[0]) == len(frames)
        else:  # the others: its frames in order, a frame shown again at most
            stream = [decode(frame) for frame in expected]
            assert len(set(stream)) == len(stream) > 10
            assert_tile_in_order([[decode(f) for f in v[i]] for v in videos], stream)


def test_sub_env_0s_videos_are_the_same_in_every_mode():
    """NEXT_STEP spends a call on each reset (the reset step), SAME_STEP and
    DISABLED do not, yet each episode's video is the same, frame by frame, in every
    mode (sub-env 0's tile: the other tiles show what their sub-envs show then,
    and the modes do not reset them at the same calls)."""
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
            # sub-env 0's tile: the first of the grid's row of 3
            assert all(
                np.array_equal(f[:H, :W], r[:H, :W])
                for f, r in zip(frames, ref, strict=True)
            )


@pytest.mark.parametrize(
    "kwargs",
    [
        {"episode_trigger": lambda e: e % 2 == 1},
        {"step_trigger": lambda s: s % 7 == 2, "video_length": 4},
        {"step_trigger": lambda s: s == 3},
        {"episode_trigger": lambda e: True, "step_trigger": lambda s: s in (4, 10)},
        {"record_first_only": True, "video_aspect_ratio": (16, 9)},
        {},  # Gymnasium's schedule
    ],
    ids=[
        "episodes",
        "steps",
        "step-then-episode-end",
        "step-while-recording",
        "first-only",
        "default",
    ],
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


def test_stop_and_close_save_a_video_only_where_one_has_frames(monkeypatch):
    """As Gymnasium's: stop_recording without a recording is refused (here a
    RuntimeError), a video of no frames is not saved (a warning), close()
    saves the one being recorded; a wrapper that goes with frames unsaved says
    so. gc_trigger=None: no gc.collect()."""
    from vecmode.wrappers import rendering

    with fake_moviepy() as ctx:
        collected: list[int] = []
        monkeypatch.setattr(rendering.gc, "collect", lambda: collected.append(1))
        envs = RecordVideo(
            make_base(AutoresetMode.NEXT_STEP, "vecmode", make_fns()),
            ctx.folder,
            episode_trigger=lambda episode: False,
            gc_trigger=None,
        )
        envs.reset(seed=0)
        with pytest.raises(RuntimeError, match=r"^stop_recording was called, but no"):
            envs.stop_recording()
        envs.start_recording("empty")
        with pytest.warns(UserWarning, match="zero frames to save"):
            envs.stop_recording()
        assert (envs.recording, envs.recorded_frames, ctx.videos) == (False, [], [])
        envs.start_recording("cut")
        for _ in range(2):
            envs.step(np.zeros(3, int))
        with pytest.warns(UserWarning, match=r"Unable to save last video! Did you"):
            envs.__del__()  # (as when it is collected)
        envs.close()
        assert [(name, len(frames)) for name, frames in ctx.videos] == [("cut.mp4", 2)]
        assert envs.frames_per_video == [2] and not envs.recording
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            envs.__del__()  # saved: nothing to say
    assert collected == []


# ------------------------------------------- sub-envs whose episodes end apart
def uneven_fns(lengths: tuple[int, ...], single: Any = None) -> list:
    """Sub-envs of one episode length each, with FinalFrameInfo (and ``single``)."""

    def make(i: int) -> gym.Env:
        env: gym.Env = FinalFrameInfo(LoggedEnv(i, (lengths[i],), []))
        return env if single is None else single(i, env)

    return [functools.partial(make, i) for i in range(len(lengths))]


def play(envs: gym.vector.VectorEnv, mode: AutoresetMode, steps: int) -> None:
    """Reset, step; reset the ended sub-envs where the mode leaves it to us."""
    envs.reset(seed=0)
    for _ in range(steps):
        *_, terminations, truncations, _ = envs.step(np.zeros(envs.num_envs, int))
        ended = vecmode.modes.boundary(
            mode, terminations, truncations, np.zeros(envs.num_envs, bool)
        ).needs_reset
        if ended.any():
            envs.reset(options={"reset_mask": ended})


@pytest.mark.parametrize("first_only", [False, True], ids=["grid", "first-only"])
@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_every_triggered_episode_is_recorded_whatever_the_other_tiles(mode, first_only):
    """Sub-env 0's episodes end every step, sub-env 1's never: the grid's videos
    are sub-env 0's episodes all the same, as Gymnasium's single-env RecordVideo
    on sub-env 0 records them, the last one cut by close() included (sub-env 0's
    frames used to wait for sub-env 1's, and its last triggers never came)."""
    with fake_moviepy() as ctx:

        def single(i: int, env: gym.Env) -> gym.Env:
            if i:
                return env
            return gym.wrappers.RecordVideo(
                env,
                ctx.folder,
                name_prefix="single",
                episode_trigger=lambda e: e % 2 == 0,
            )

        envs = RecordVideo(
            vecmode.with_autoreset(
                vecmode.SyncVectorEnv(uneven_fns((1, 100), single)), mode
            ),
            ctx.folder,
            record_first_only=first_only,
            episode_trigger=lambda e: e % 2 == 0,
        )
        play(envs, mode, 10)
        envs.close()
    theirs = [(n, f) for n, f in ctx.videos if n.startswith("single")]
    ours = [(n, f) for n, f in ctx.videos if not n.startswith("single")]
    n = 1 if first_only else 2
    videos = tiles(ours, envs.frame_rows, envs.frame_cols, n)
    assert [name[6:] for name, _ in theirs] == [name[8:] for name, _ in ours]
    for (name, frames), video in zip(theirs, videos, strict=True):
        assert [decode(f) for f in video[0]] == [decode(f) for f in frames], name
    assert envs.frames_per_video == [len(frames) for _, frames in theirs]
    if mode != AutoresetMode.NEXT_STEP:  # episodes 0, 2, ..., 8 and 10 begun
        assert envs.frames_per_video == [2, 2, 2, 2, 2, 1]
    if not first_only:  # sub-env 1 beside each: its frames at that time
        assert_tile_in_order(
            [[decode(f) for f in video[1]] for video in videos],
            [(1, 0, t) for t in range(11)],
        )


@pytest.mark.parametrize("lengths", [(1, 10**6), (5, 1)], ids=["0-faster", "1-faster"])
@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_nothing_accumulates(mode, lengths, monkeypatch):
    """Frames wait only for the video being recorded: after the one video (of
    episode 0), nothing is rendered nor kept, however often sub-env 0's episodes
    end; and while every episode is recorded, a sub-env whose episodes end more
    often than sub-env 0's does not pile frames up from video to video."""
    with fake_moviepy() as ctx:
        renders = []
        trigger = (lambda e: e == 0) if lengths[0] == 1 else (lambda e: True)
        envs = RecordVideo(
            vecmode.with_autoreset(vecmode.SyncVectorEnv(uneven_fns(lengths)), mode),
            ctx.folder,
            episode_trigger=trigger,
        )
        render = envs.env.render
        monkeypatch.setattr(envs.env, "render", lambda: renders.append(1) or render())
        envs.reset(seed=0)
        most = 0
        for _ in range(300):
            envs.step(np.zeros(2, int))
            ended = envs.boundary.needs_reset
            if ended.any():
                envs.reset(options={"reset_mask": ended})
            most = max(most, sum(map(len, envs._queues)))
        envs.close()
    if lengths[0] == 1:
        assert envs.frames_per_video == [2]
        assert len(renders) <= 3 and most == 0
    else:  # videos of 6 frames, sub-env 1 adding up to 2 a step: 5 wait at most
        assert len(envs.frames_per_video) > 40
        assert envs.frames_per_video[:-1] == [6] * (len(envs.frames_per_video) - 1)
        assert most <= 5


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


class WithoutFrameMask(gym.vector.VectorWrapper):
    """Final infos without the ``_final_frame`` mask (a foreign env's batching)."""

    def step(self, actions: Any) -> Any:
        *head, infos = self.env.step(actions)
        if "final_info" in infos:
            final_info = dict(infos["final_info"])
            del final_info["_final_frame"]
            infos = {**infos, "final_info": final_info}
        return (*head, infos)


def test_final_frames_without_their_mask_are_every_ended_sub_env_s():
    """A final info holding the frames with no ``_final_frame`` mask: RecordVideo
    takes each ended sub-env's frame from it, the same videos as with the mask."""
    recorded = []
    for strip in (False, True):
        with fake_moviepy() as ctx:
            base = make_base(SAME_STEP, "vecmode", make_fns())
            envs = RecordVideo(
                WithoutFrameMask(base) if strip else base,
                ctx.folder,
                episode_trigger=lambda episode: True,
            )
            drive(envs, SAME_STEP, steps=8)
            envs.close()
        recorded.append(ctx.videos)
    with_mask, without = recorded
    assert [name for name, _ in without] == [name for name, _ in with_mask]
    assert len(with_mask) >= 3
    for (name, a), (_, b) in zip(with_mask, without, strict=True):
        assert len(a) == len(b) and all(map(np.array_equal, a, b)), name


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


def _first(step: int) -> bool:
    return step == 0


def test_without_render_fps_videos_are_30_fps_and_human_rendering_refuses():
    """Sub-envs whose metadata has no render_fps, as Gymnasium's wrappers: a
    video at 30 frames per second (or the fps given), and HumanRendering
    refused with Gymnasium's words."""

    class NoFps(LoggedEnv):
        metadata = {"render_modes": ["rgb_array"]}

    fns = [functools.partial(NoFps, i, (3,), []) for i in range(2)]
    envs, theirs = vecmode.SyncVectorEnv(fns), gym.vector.SyncVectorEnv(fns)
    assert "render_fps" not in envs.metadata
    with fake_moviepy() as ctx:
        module = sys.modules["moviepy.video.io.ImageSequenceClip"]
        clip, rates = module.ImageSequenceClip, []
        module.ImageSequenceClip = lambda frames, fps: (
            rates.append(fps) or clip(frames, fps)
        )
        for fps in (None, 12):
            video = RecordVideo(
                vecmode.SyncVectorEnv(fns), ctx.folder, fps=fps, step_trigger=_first
            )
            video.reset(seed=0)
            video.step(np.zeros(2, int))
            video.close()
        assert gym_vector.RecordVideo(theirs, ctx.folder).frames_per_sec == 30
    assert rates == [30, 12] and len(ctx.videos) == 2
    for cls, env in ((HumanRendering, envs), (gym_vector.HumanRendering, theirs)):
        with pytest.raises(ValueError) as refused:
            cls(env)
        assert str(refused.value) == (
            "The base environment must specify 'render_fps' to be used with the "
            "HumanRendering wrapper"
        )
        env.close()


def test_missing_moviepy_or_pygame_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "moviepy", None)
    envs = make_base(DISABLED, "vecmode", make_fns())
    with pytest.raises(
        DependencyNotInstalled,
        match=r"in a vecmode checkout, pip install \"\.\[video\]\"",
    ):
        RecordVideo(envs, str(tmp_path))
    monkeypatch.setitem(sys.modules, "pygame", None)
    shown = HumanRendering(envs)
    with pytest.raises(
        DependencyNotInstalled,
        match=r"in a vecmode checkout, pip install \"\.\[video\]\"",
    ):
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
