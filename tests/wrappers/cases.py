"""The catalogue of vecmode wrappers under test, with their references.

Each :class:`Case` builds one vecmode wrapper (or stack) on a vector env, and says
what it must agree with:

* ``single``: the single-env Gymnasium wrapper whose per-sub-env behaviour the
  vector wrapper must reproduce: ``SyncVectorEnv([single(env_i) ...], mode)``
  returns exactly what the vector wrapper returns, in every mode (``final_obs``
  included), which is Gymnasium's own definition of the right answer;
* ``gym_vector``: Gymnasium's vector counterpart, where Gymnasium's is right
  (NEXT_STEP): the vecmode wrapper returns exactly the same there. For the
  normalisers, Gymnasium's wrapper runs with vecmode's running statistics (same
  state, updated in float64, see :func:`with_vecmode_statistics`), so their own
  arithmetic is compared bit for bit; the statistics are held to Gymnasium's
  ``RunningMeanStd`` in ``tests/wrappers/test_running_stats.py``.

Wrappers that need an optional dependency name it (``requires``); the jax ones run
in a fresh interpreter (``isolated``: once jax is imported, a later ``os.fork()``
in the test session, as async envs' workers do, risks a deadlock), from
``tests/test_isolated.py``. :func:`skip_unless_runnable` skips them elsewhere.
"""

from __future__ import annotations

import functools
import importlib.util
import itertools
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium import wrappers as single_wrappers
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.wrappers import vector as gym_vector

import vecmode
from tests.helpers import ScheduledEnv, without_box_warnings
from tests.registry.gym_verdict_helpers import BoxActionEnv, ImageEnv, NumericEnv
from vecmode import wrappers as vw
from vecmode.testing import ScheduledEnv as KitEnv
from vecmode.wrappers.running_stats import RunningMeanStd

MODES = tuple(AutoresetMode)

#: Sub-env i's episode lengths and how they end (ends fall on different steps).
LENGTHS: tuple[tuple[int, ...], ...] = ((2, 3), (3,), (1, 4))
TRUNCATE: tuple[tuple[bool, ...], ...] = ((True, False), (False,), (False, True))


class DictEnv(NumericEnv):
    """Dict observations {"pos": Box(3), "step": Discrete}."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, obs_type="dict", **kwargs)


class DiscreteEnv(NumericEnv):
    """Discrete observations."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, obs_type="discrete", **kwargs)


class TupleEnv(NumericEnv):
    """Tuple observations (Box(3), Discrete)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, obs_type="tuple", **kwargs)


class ToOffset(gym.ObservationWrapper):
    """A sub-env's box observation ``[sub-env, episode, step]`` as a Dict in
    spaces that do not hold 0: each leaf's element closest to zero (what
    FrameStackObservation's "zero" pads with) is a bound or a start, and each
    leaf still says where it comes from."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.observation_space = spaces.Dict(
            {
                "above": spaces.Box(1.0, 100.0, shape=(3,), dtype=np.float32),
                "below": spaces.Box(-100.0, -1.0, shape=(3,), dtype=np.float32),
                "discrete": spaces.Discrete(40, start=3),
                "multi": spaces.MultiDiscrete([10, 10], start=[2, -4]),
            }
        )

    def observation(self, observation: Any) -> Any:
        code = np.asarray(observation, dtype=np.float32) % 90
        index, _, step = (int(v) for v in code)
        return {
            "above": 1.0 + code,
            "below": -1.0 - code,
            "discrete": 3 + (10 * index + step) % 40,
            "multi": np.array([2 + index % 10, -4 + step % 10], dtype=np.int64),
        }


def offset_env(index: int, lengths: Any, truncate: Any) -> gym.Env:
    return ToOffset(NumericEnv(index, lengths, truncate))


def rendered_env(index: int, lengths: Any, truncate: Any) -> gym.Env:
    """Numeric infos, frames that say (sub-env, episode, step), and the last frame
    of each episode in the info of the step that ends it (SAME_STEP needs it)."""
    env = KitEnv(index, lengths, truncate, info_type="numeric", render_mode="rgb_array")
    return vw.FinalFrameInfo(env)


def to_jax(env: gym.Env) -> gym.Env:
    """A sub-env returning jax array observations (its infos stay numbers)."""
    import jax.numpy as jnp

    return single_wrappers.TransformObservation(env, jnp.asarray, env.observation_space)


def jax_env(index: int, lengths: Any, truncate: Any) -> gym.Env:
    return to_jax(NumericEnv(index, lengths, truncate))


ENVS: dict[str, Callable[..., gym.Env]] = {
    "box": NumericEnv,
    "render": rendered_env,
    "jax": jax_env,
    "rich": ScheduledEnv,  # rich infos (nested dicts, keys on some steps)
    "dict": DictEnv,
    "tuple": TupleEnv,
    "discrete": DiscreteEnv,
    "offset": offset_env,
    "image": ImageEnv,
    "box_action": BoxActionEnv,
}


def env_fns(
    kind: str,
    lengths: Sequence[Sequence[int]] = LENGTHS,
    truncate: Sequence[Sequence[bool]] = TRUNCATE,
    single: Callable[[gym.Env], gym.Env] | None = None,
) -> list[Callable[[], gym.Env]]:
    """One factory per sub-env, each optionally wrapped by ``single``."""
    cls = ENVS[kind]

    def make(i: int, ls: tuple[int, ...], ts: tuple[bool, ...]) -> gym.Env:
        env = cls(i, ls, ts)
        return env if single is None else single(env)

    return [
        functools.partial(make, i, tuple(ls), tuple(ts))
        for i, (ls, ts) in enumerate(zip(lengths, truncate, strict=True))
    ]


def vecmode_base(
    kind: str, mode: AutoresetMode, base: str = "vecmode", **kwargs: Any
) -> VectorEnv:
    """A vector env in ``mode``: vecmode's core with its policy, or Gymnasium's."""
    fns = env_fns(kind, **kwargs)
    if base == "vecmode":
        return vecmode.with_autoreset(vecmode.SyncVectorEnv(fns), mode)
    if base == "gymnasium":
        return gym.vector.SyncVectorEnv(fns, autoreset_mode=mode)
    if base == "gymnasium-async":
        return gym.vector.AsyncVectorEnv(fns, autoreset_mode=mode, context="fork")
    raise ValueError(base)


def reference(kind: str, mode: AutoresetMode, case: Case, **kwargs: Any) -> VectorEnv:
    """Gymnasium's SyncVectorEnv in ``mode`` over the single-env wrapper per sub-env."""
    assert case.single is not None
    return gym.vector.SyncVectorEnv(
        env_fns(kind, single=case.single, **kwargs), autoreset_mode=mode
    )


def with_vecmode_statistics(
    wrapper: Callable[[VectorEnv], VectorEnv],
) -> Callable[[VectorEnv], VectorEnv]:
    """Gymnasium's normalising ``wrapper`` with its ``obs_rms`` / ``return_rms``
    replaced by vecmode's ``RunningMeanStd`` of the same shape and dtype."""

    def build(env: VectorEnv) -> VectorEnv:
        envs = wrapper(env)
        for name in ("obs_rms", "return_rms"):
            theirs = getattr(envs, name, None)
            if theirs is not None:
                ours = RunningMeanStd(shape=theirs.mean.shape, dtype=theirs.mean.dtype)
                setattr(envs, name, ours)
        return envs

    return build


def _double(x: Any) -> Any:
    return x * 2 + 1


_BIG = spaces.Box(-1e7, 1e7, shape=(3,), dtype=np.float32)


@dataclass(frozen=True)
class Case:
    """One vecmode wrapper under test."""

    name: str
    env: str
    wrap: Callable[[VectorEnv], VectorEnv]
    single: Callable[[gym.Env], gym.Env] | None = None
    gym_vector: Callable[[VectorEnv], VectorEnv] | None = None
    #: the wrapped env's per-step statistics depend on batch composition
    stateful: bool = False
    #: Gymnasium's vector counterpart takes partial resets (``reset_mask``)
    gym_vector_masks: bool = True
    #: modules it needs (optional dependencies)
    requires: tuple[str, ...] = ()
    #: it imports jax: run only in a fresh interpreter (tests/test_isolated.py)
    isolated: bool = False

    def __str__(self) -> str:
        return self.name


#: Set in the fresh interpreter that runs the isolated cases.
FRESH = "VECMODE_FRESH_INTERPRETER"


def why_not_runnable(case: Case) -> str | None:
    """Why ``case`` cannot run in this process (None: it can)."""
    missing = [m for m in case.requires if importlib.util.find_spec(m) is None]
    if missing:
        return f"needs {', '.join(missing)}"
    if case.isolated and not os.environ.get(FRESH):
        return "imports jax: runs in a fresh interpreter (tests/test_isolated.py)"
    return None


def skip_unless_runnable(case: Case) -> None:
    why = why_not_runnable(case)
    if why is not None:
        pytest.skip(f"{case}: {why}")


#: Every run writes its videos into a new folder here (removed at exit).
_VIDEOS = tempfile.TemporaryDirectory(prefix="vecmode-test-videos-")
_video_runs = itertools.count()


def video_folder() -> str:
    return os.path.join(_VIDEOS.name, str(next(_video_runs)))


def _record_video(env: VectorEnv) -> VectorEnv:
    # the second episode of sub-env 0: frames are captured from its start, and
    # the other tiles' frames queue across their own episode ends
    return vw.RecordVideo(env, video_folder(), episode_trigger=lambda e: e == 1)


def _torch() -> Any:
    import torch

    return torch


def _single_transform_action(env: gym.Env) -> gym.Env:
    return single_wrappers.TransformAction(env, lambda a: a * 0.5, env.action_space)


CASES: tuple[Case, ...] = (
    Case(
        "TransformObservation",
        "box",
        lambda e: vw.TransformObservation(e, _double, single_observation_space=_BIG),
        single=lambda e: single_wrappers.TransformObservation(e, _double, _BIG),
    ),
    Case(
        "VectorizeTransformObservation",
        "box",
        lambda e: vw.VectorizeTransformObservation(
            e,
            single_wrappers.TransformObservation,
            func=lambda o: o[:2],
            observation_space=spaces.Box(-1e6, 1e6, (2,), np.float32),
        ),
        single=lambda e: single_wrappers.TransformObservation(
            e, lambda o: o[:2], spaces.Box(-1e6, 1e6, (2,), np.float32)
        ),
    ),
    Case(
        "FilterObservation",
        "dict",
        lambda e: vw.FilterObservation(e, ["pos"]),
        single=lambda e: single_wrappers.FilterObservation(e, ["pos"]),
        gym_vector=lambda e: gym_vector.FilterObservation(e, ["pos"]),
    ),
    Case(
        "FlattenObservation",
        "dict",
        vw.FlattenObservation,
        single=single_wrappers.FlattenObservation,
        gym_vector=gym_vector.FlattenObservation,
    ),
    Case(
        "GrayscaleObservation",
        "image",
        lambda e: vw.GrayscaleObservation(e, keep_dim=True),
        single=lambda e: single_wrappers.GrayscaleObservation(e, keep_dim=True),
        gym_vector=lambda e: gym_vector.GrayscaleObservation(e, keep_dim=True),
    ),
    Case(
        "ResizeObservation",
        "image",
        lambda e: vw.ResizeObservation(e, (2, 3)),
        single=lambda e: single_wrappers.ResizeObservation(e, (2, 3)),
        gym_vector=lambda e: gym_vector.ResizeObservation(e, (2, 3)),
    ),
    Case(
        "ReshapeObservation",
        "box",
        lambda e: vw.ReshapeObservation(e, (3, 1)),
        single=lambda e: single_wrappers.ReshapeObservation(e, (3, 1)),
        gym_vector=lambda e: gym_vector.ReshapeObservation(e, (3, 1)),
    ),
    Case(
        "RescaleObservation",
        "image",
        lambda e: vw.RescaleObservation(e, 0.0, 1.0),
        single=lambda e: single_wrappers.RescaleObservation(e, 0.0, 1.0),
        gym_vector=lambda e: gym_vector.RescaleObservation(e, 0.0, 1.0),
    ),
    Case(  # Gymnasium's Box warns about the float64 space it derives: known
        "DtypeObservation",
        "box",
        without_box_warnings(lambda e: vw.DtypeObservation(e, np.float64)),
        single=without_box_warnings(
            lambda e: single_wrappers.DtypeObservation(e, np.float64)
        ),
        gym_vector=without_box_warnings(
            lambda e: gym_vector.DtypeObservation(e, np.float64)
        ),
    ),
    Case(
        "NormalizeObservation",
        "box",
        vw.NormalizeObservation,
        gym_vector=with_vecmode_statistics(gym_vector.NormalizeObservation),
        stateful=True,
    ),
    Case(
        "FrameStackObservation",
        "box",
        lambda e: vw.FrameStackObservation(e, 3),
        single=lambda e: single_wrappers.FrameStackObservation(e, 3),
    ),
    Case(
        "FrameStackObservation-zero-dict",
        "dict",
        lambda e: vw.FrameStackObservation(e, 2, padding_type="zero"),
        single=lambda e: single_wrappers.FrameStackObservation(
            e, 2, padding_type="zero"
        ),
    ),
    Case(  # "zero" pads with each space's element closest to zero, not 0
        "FrameStackObservation-zero-offset",
        "offset",
        lambda e: vw.FrameStackObservation(e, 3, padding_type="zero"),
        single=lambda e: single_wrappers.FrameStackObservation(
            e, 3, padding_type="zero"
        ),
    ),
    Case(
        "FrameStackObservation-custom-discrete",
        "discrete",
        lambda e: vw.FrameStackObservation(e, 4, padding_type=7),
        single=lambda e: single_wrappers.FrameStackObservation(e, 4, padding_type=7),
    ),
    Case(
        "FrameStackObservation-tuple",
        "tuple",
        lambda e: vw.FrameStackObservation(e, 2),
        single=lambda e: single_wrappers.FrameStackObservation(e, 2),
    ),
    Case(
        "TransformAction",
        "box_action",
        lambda e: vw.TransformAction(e, lambda a: a * 0.5),
        single=_single_transform_action,
        gym_vector=lambda e: gym_vector.TransformAction(e, lambda a: a * 0.5),
    ),
    Case(
        "VectorizeTransformAction",
        "box_action",
        lambda e: vw.VectorizeTransformAction(
            e,
            single_wrappers.TransformAction,
            func=lambda a: a * 0.5,
            action_space=spaces.Box(-1.0, 1.0, (1,), np.float32),
        ),
        single=_single_transform_action,
    ),
    Case(
        "ClipAction",
        "box_action",
        vw.ClipAction,
        single=single_wrappers.ClipAction,
        gym_vector=gym_vector.ClipAction,
    ),
    Case(  # Gymnasium's Box warns about the float64 bounds it is given: known
        "RescaleAction",
        "box_action",
        without_box_warnings(lambda e: vw.RescaleAction(e, -0.5, 0.5)),
        single=without_box_warnings(
            lambda e: single_wrappers.RescaleAction(e, -0.5, 0.5)
        ),
        gym_vector=without_box_warnings(
            lambda e: gym_vector.RescaleAction(e, -0.5, 0.5)
        ),
    ),
    Case(
        "TransformReward",
        "box",
        lambda e: vw.TransformReward(e, lambda r: r * 3 + 1),
        single=lambda e: single_wrappers.TransformReward(e, lambda r: r * 3 + 1),
    ),
    Case(
        "VectorizeTransformReward",
        "box",
        lambda e: vw.VectorizeTransformReward(
            e, single_wrappers.TransformReward, func=lambda r: r * 3 + 1
        ),
        single=lambda e: single_wrappers.TransformReward(e, lambda r: r * 3 + 1),
    ),
    Case(
        "ClipReward",
        "box",
        lambda e: vw.ClipReward(e, 0.5, 2.0),
        single=lambda e: single_wrappers.ClipReward(e, 0.5, 2.0),
    ),
    Case(
        "NormalizeReward",
        "box",
        lambda e: vw.NormalizeReward(e, gamma=0.9),
        gym_vector=with_vecmode_statistics(
            lambda e: gym_vector.NormalizeReward(e, gamma=0.9)
        ),
        stateful=True,
    ),
    Case(
        "RecordEpisodeStatistics",
        "box",
        vw.RecordEpisodeStatistics,
        gym_vector=gym_vector.RecordEpisodeStatistics,
        stateful=True,
    ),
    Case(
        "DictInfoToList",
        "rich",
        vw.DictInfoToList,
        gym_vector=gym_vector.DictInfoToList,
    ),
    Case("RecordVideo", "render", _record_video, requires=("moviepy",)),
    Case("HumanRendering", "render", vw.HumanRendering, requires=("pygame",)),
    Case(
        "ArrayConversion",
        "box",
        lambda e: vw.ArrayConversion(e, env_xp=np, target_xp=_torch()),
        gym_vector=lambda e: gym_vector.ArrayConversion(
            e, env_xp=np, target_xp=_torch()
        ),
        requires=("array_api_compat", "torch"),
    ),
    Case(
        "NumpyToTorch",
        "box",
        vw.NumpyToTorch,
        gym_vector=lambda e: gym_vector.NumpyToTorch(e),
        requires=("array_api_compat", "torch"),
    ),
    Case(
        "JaxToNumpy",
        "jax",
        vw.JaxToNumpy,
        gym_vector=lambda e: gym_vector.JaxToNumpy(e),
        # Gymnasium's makes reset_mask a jax array, which the envs reject
        gym_vector_masks=False,
        requires=("array_api_compat", "jax"),
        isolated=True,
    ),
    Case(
        "JaxToTorch",
        "jax",
        vw.JaxToTorch,
        gym_vector=lambda e: gym_vector.JaxToTorch(e),
        # Gymnasium's makes reset_mask a jax array, which the envs reject
        gym_vector_masks=False,
        requires=("array_api_compat", "jax", "torch"),
        isolated=True,
    ),
)

BY_NAME = {case.name: case for case in CASES}
SINGLE_CASES = tuple(case for case in CASES if case.single is not None)
GYM_CASES = tuple(case for case in CASES if case.gym_vector is not None)
