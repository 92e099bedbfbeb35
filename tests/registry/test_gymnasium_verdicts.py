"""What Gymnasium 1.4's own vector wrappers really do in each autoreset mode.

Every class in ``gymnasium.wrappers.vector.__all__`` is built over a
``SyncVectorEnv`` in each mode and run; the observed verdict must be the one
``vecmode._gymnasium.GYMNASIUM_VERDICTS`` declares:

* ``"refuses"``: the wrapper's constructor raises;
* ``"ok"``: it runs and its output matches the reference below;
* ``"wrong"``: it runs but its output differs from the reference (or it raises
  while running), for the reason ``EVIDENCE`` names.

The runs follow each mode's rules (see ``tests/registry/gym_verdict_helpers.py``): NEXT_STEP
skips the reset step, SAME_STEP takes an ended sub-env's next observation from
``info["final_obs"]``, DISABLED resets only the ended sub-envs with a ``reset_mask``
(episodes have different lengths, so those resets are partial). References:

* stateless observation/action/reward transforms: the transform applied to the real
  transitions of the unwrapped env, run with the same seed and actions;
* NormalizeObservation: running statistics fed each real observation exactly once;
* NormalizeReward: NEXT_STEP's semantics (Gymnasium's design mode, the same as the
  single-env NormalizeReward): per sub-env ``ret = ret * gamma * (1 - terminated)
  + reward`` over its real steps, the statistics updated each call with the returns
  of the sub-envs that made a real step;
* RecordEpisodeStatistics: the exact return and length of every ended episode;
* DictInfoToList: ``list_info[i]`` is what sub-env ``i`` itself returned;
* HumanRendering: every frame of every episode is shown, in order (a live view may
  show an unchanged frame again); RecordVideo: each video holds each sub-env's
  frames exactly once, in order, and one episode of sub-env 0, from its first
  frame to its last;
* array conversions: the converted outputs equal the unconverted ones.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import functools
import importlib
import importlib.util
import json
import os
import pkgutil
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import gymnasium as gym
import gymnasium.wrappers.vector as gwv
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.wrappers.utils import RunningMeanStd

from tests.registry.gym_verdict_helpers import (
    DISABLED,
    MODES,
    NEXT_STEP,
    SAME_STEP,
    BoxActionEnv,
    Call,
    ImageEnv,
    JaxEnv,
    LogEnv,
    NumericEnv,
    RenderEnv,
    assert_events,
    boundaries,
    fake_moviepy,
    first_difference,
    frame_code,
    make_actions,
    pendulums,
    real_events,
    run,
    sub,
    sync,
)
from vecmode._gymnasium import GYMNASIUM_VERDICTS

pytestmark = [
    pytest.mark.filterwarnings("ignore:.*Recorded episodes will not contain"),
    pytest.mark.filterwarnings("ignore:.*Overwriting existing videos"),
    # spaces the wrappers derive (RescaleObservation/Action, DtypeObservation)
    pytest.mark.filterwarnings("ignore:.*precision lowered by casting to float32"),
    pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning"),
]

N = 2  # sub-envs


def gymnasium_key(name: str) -> str:
    """``"module:QualName"`` of ``gymnasium.wrappers.vector.<name>``.

    The lazily imported wrappers (they need jax or torch) are found by reading the
    package's modules, so nothing optional is imported.
    """
    eager = vars(gwv).get(name)
    if isinstance(eager, type):
        return f"{eager.__module__}:{eager.__qualname__}"
    found = []
    for module in pkgutil.iter_modules(gwv.__path__):
        spec = importlib.util.find_spec(f"{gwv.__name__}.{module.name}")
        assert spec is not None and spec.origin is not None
        tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
        if any(isinstance(n, ast.ClassDef) and n.name == name for n in tree.body):
            found.append(spec.name)
    assert len(found) == 1, f"{name} is defined in {found}"
    return f"{found[0]}:{name}"


# --------------------------------------------------------------------- cases
@dataclass
class Case:
    """How to build one wrapper over a vector env in a mode, and check it."""

    base: Callable[[AutoresetMode], VectorEnv]
    wrap: Callable[[VectorEnv, Any], VectorEnv]
    check: Callable[[Case, VectorEnv, AutoresetMode, Any], None]
    requires: tuple[str, ...] = ()
    #: a context manager factory whose value is passed to wrap and check
    context: Callable[[], contextlib.AbstractContextManager[Any]] = field(
        default=contextlib.nullcontext
    )
    #: a NumPy action as the wrapper takes it
    to_env: Callable[[Any], Any] = lambda a: a
    #: observed in a fresh interpreter: once jax is imported, every later
    #: os.fork() in the test session (AsyncVectorEnv's workers) risks a deadlock
    isolated: bool = False


def observe(case: Case, mode: AutoresetMode) -> tuple[str, str]:
    """(verdict, detail): the construction error, or the first difference."""
    with case.context() as ctx:
        base = case.base(mode)
        try:
            wrapped = case.wrap(base, ctx)
        except Exception as e:
            return "refuses", f"{type(e).__name__}: {e}"
        try:
            case.check(case, wrapped, mode, ctx)
            wrapped.close()
        except AssertionError as e:
            return "wrong", str(e)
        except Exception as e:
            return "wrong", f"raises {type(e).__name__}: {e}"
    return "ok", ""


def both_runs(
    case: Case, envs: VectorEnv, mode: AutoresetMode, raw_actions: Any = None
) -> tuple[list[Call], list[Call]]:
    """The wrapper's run, and the unwrapped env's run with the same seed.

    ``raw_actions`` (default: the same actions) are what the unwrapped env gets.
    """
    actions = make_actions(envs.action_space)
    # fresh copies: VectorizeTransformAction writes into the caller's actions
    got = run(envs, mode, copy.deepcopy(actions), to_env=case.to_env)
    raw_env = case.base(mode)
    actions = copy.deepcopy(actions)
    raw = run(raw_env, mode, actions if raw_actions is None else raw_actions(actions))
    raw_env.close()
    return got, raw


# stateless transforms -------------------------------------------------------
def check_obs(f: Callable[[Any], Any]) -> Callable[..., None]:
    """Observations (reset, step, final) are ``f`` of the unwrapped ones."""

    def check(case: Case, envs: VectorEnv, mode: AutoresetMode, ctx: Any) -> None:
        got, raw = both_runs(case, envs, mode)
        expected = [
            [replace(e, obs=f(e.obs)) for e in events]
            for events in real_events(raw, mode, N)
        ]
        assert_events(expected, real_events(got, mode, N))

    return check


def check_actions(g: Callable[[Any], Any]) -> Callable[..., None]:
    """Real transitions equal the unwrapped env's given ``g`` of each action."""

    def check(case: Case, envs: VectorEnv, mode: AutoresetMode, ctx: Any) -> None:
        def env_actions(actions: list) -> list:
            return [np.stack([g(a) for a in batch]) for batch in actions]

        got, raw = both_runs(case, envs, mode, env_actions)
        assert_events(real_events(raw, mode, N), real_events(got, mode, N))

    return check


def check_rewards(h: Callable[[float], Any]) -> Callable[..., None]:
    """Real transitions' rewards are ``h`` of the unwrapped ones."""

    def check(case: Case, envs: VectorEnv, mode: AutoresetMode, ctx: Any) -> None:
        got, raw = both_runs(case, envs, mode)
        expected = [
            [
                replace(e, reward=float(h(e.reward))) if e.kind == "step" else e
                for e in events
            ]
            for events in real_events(raw, mode, N)
        ]
        assert_events(expected, real_events(got, mode, N))

    return check


def single(wrapper: Callable[..., Any], env: gym.Env, **kwargs: Any) -> Any:
    """The single-env wrapper's own transform (to compare the vector one with)."""
    w = wrapper(env, **kwargs)
    return getattr(w, "observation", None) or w.action


def scale_obs(obs: Any) -> Any:
    return obs * 2.0 + 1.0


# array conversions -----------------------------------------------------------
def check_conversion(target: str) -> Callable[..., None]:
    """Outputs are ``target`` arrays equal to the unconverted ones."""

    def check(case: Case, envs: VectorEnv, mode: AutoresetMode, ctx: Any) -> None:
        got, raw = both_runs(case, envs, mode)
        kinds = {
            type(c.raw_obs).__module__.split(".")[0]
            for c in got
            if c.raw_obs is not None
        }
        assert kinds == {target}, f"observations are {kinds} arrays, not {target}"
        assert_events(real_events(raw, mode, N), real_events(got, mode, N))

    return check


def torch_tensor(a: Any) -> Any:
    import torch

    return torch.as_tensor(a)


def array_conversion_np(env: VectorEnv, ctx: Any) -> VectorEnv:
    from gymnasium.wrappers.vector.array_conversion import ArrayConversion

    return ArrayConversion(env, env_xp=np, target_xp=np)


def lazy(name: str) -> Callable[[VectorEnv, Any], VectorEnv]:
    def wrap(env: VectorEnv, ctx: Any) -> VectorEnv:
        return getattr(gwv, name)(env)

    return wrap


# NormalizeObservation --------------------------------------------------------
def real_obs_batches(calls: list[Call], mode: AutoresetMode) -> Iterator[np.ndarray]:
    """Per call, the real observations it brought that were not seen before."""
    for _, call, b in boundaries(calls, mode, N):
        if call.mask is not None:
            rows = [sub(call.obs, i) for i in np.flatnonzero(call.mask)]
        else:
            rows = [sub(call.obs, i) for i in range(N)]
            if b is not None:
                final = call.info.get("final_obs")
                rows += [final[i] for i in np.flatnonzero(b.final_in_info)]
        yield np.stack(rows)


def check_normalize_observation(
    case: Case, envs: VectorEnv, mode: AutoresetMode, ctx: Any
) -> None:
    _, raw = both_runs(case, envs, mode)
    rms = envs.obs_rms  # type: ignore[attr-defined]
    ref = RunningMeanStd(shape=rms.mean.shape, dtype=rms.mean.dtype)
    for batch in real_obs_batches(raw, mode):
        ref.update(batch)
    assert abs(rms.count - ref.count) < 0.5, (
        f"obs_rms.count is {rms.count:g}, but {ref.count:g} real observations were seen"
    )
    for name in ("mean", "var"):
        a, b = getattr(rms, name), getattr(ref, name)
        assert np.allclose(a, b, rtol=1e-5), f"obs_rms.{name} {a} != {b} expected"


# NormalizeReward -------------------------------------------------------------
GAMMA, EPSILON = 0.9, 1e-8


def normalize_reward_oracle(
    calls: list[Call], mode: AutoresetMode, n: int
) -> dict[tuple[int, int], float]:
    """NEXT_STEP's semantics on a run: (call, sub-env) -> normalised reward."""
    ret = np.zeros(n)
    rms = RunningMeanStd(shape=())
    out: dict[tuple[int, int], float] = {}
    for c, call, b in boundaries(calls, mode, n):
        if b is None:
            continue
        assert call.rewards is not None and call.terminations is not None
        active = b.real
        for i in np.flatnonzero(active):
            ret[i] = ret[i] * GAMMA * (1 - call.terminations[i]) + call.rewards[i]
        if active.any():
            rms.update(ret[active])
        for i in np.flatnonzero(active):
            out[c, i] = call.rewards[i] / np.sqrt(rms.var + EPSILON)
    return out


def real_rewards(calls: list[Call], mode: AutoresetMode, n: int) -> dict:
    """(call, sub-env) -> reward, for the real transitions of a run."""
    return {
        (e.call, i): e.reward
        for i, events in enumerate(real_events(calls, mode, n))
        for e in events
        if e.kind == "step"
    }


def check_normalize_reward(
    case: Case, envs: VectorEnv, mode: AutoresetMode, ctx: Any
) -> None:
    got, raw = both_runs(case, envs, mode)
    expected = normalize_reward_oracle(raw, mode, N)
    rewards = real_rewards(got, mode, N)
    assert rewards.keys() == expected.keys()
    for (c, i), value in sorted(expected.items()):
        assert np.isclose(rewards[c, i], value, rtol=1e-5), (
            f"call {c} ({got[c].kind}), sub-env {i}: normalised reward "
            f"{rewards[c, i]:.6g} != {value:.6g} expected"
        )


# RecordEpisodeStatistics -----------------------------------------------------
def check_episode_statistics(
    case: Case, envs: VectorEnv, mode: AutoresetMode, ctx: Any
) -> None:
    got, raw = both_runs(case, envs, mode)
    expected: dict[tuple[int, int], tuple[float, int]] = {}
    for i, events in enumerate(real_events(raw, mode, N)):
        ret, length = 0.0, 0
        for e in events:
            if e.kind == "start":
                ret, length = 0.0, 0
                continue
            ret, length = ret + e.reward, length + 1
            if e.terminated or e.truncated:
                expected[e.call, i] = (ret, length)
    for c, call in enumerate(got):
        if call.kind != "step":
            continue
        assert call.terminations is not None and call.truncations is not None
        ended = call.terminations | call.truncations
        if not ended.any():
            continue
        assert "episode" in call.info, f"call {c}: an episode ended, no info['episode']"
        assert np.array_equal(call.info["_episode"], ended), (
            f"call {c}: info['_episode'] {call.info['_episode']} != {ended}"
        )
        for i in np.flatnonzero(ended):
            ret, length = expected[c, i]
            r, ln = call.info["episode"]["r"][i], call.info["episode"]["l"][i]
            assert np.isclose(r, ret) and ln == length, (
                f"call {c}: sub-env {i}'s episode reported return {r:g} and length "
                f"{ln}, but it had return {ret:g} and length {length}"
            )


# DictInfoToList --------------------------------------------------------------
def check_dict_info_to_list(
    case: Case, envs: VectorEnv, mode: AutoresetMode, ctx: Any
) -> None:
    log: list[tuple] = envs.unwrapped.envs[0].log  # type: ignore[attr-defined]
    marks = [0]
    actions = make_actions(envs.action_space)
    calls = run(envs, mode, actions, on_call=lambda call: marks.append(len(log)))
    for c, call in enumerate(calls):
        entries = log[marks[c] : marks[c + 1]]
        assert isinstance(call.info, list) and len(call.info) == N, call.info
        for i in range(N):
            mine = [(kind, obs, info) for j, kind, obs, info in entries if j == i]
            if not mine:
                expected: dict = {}
            elif len(mine) == 1:
                expected = mine[0][2]
            else:  # SAME_STEP: the final step, then the reset
                (_, final_obs, final_info), (_, _, reset_info) = mine
                expected = {
                    **reset_info,
                    "final_obs": final_obs,
                    "final_info": final_info,
                }
            diff = first_difference(
                expected, call.info[i], f"call {c} ({call.kind}) list_info[{i}]"
            )
            assert diff is None, diff


# rendering -------------------------------------------------------------------
def assert_same_sequence(expected: list, got: list, what: str) -> None:
    """Assert equal sequences, showing where they first differ."""
    for k, (e, g) in enumerate(zip(expected, got, strict=False)):
        assert e == g, (
            f"{what}: at #{k} got {g} where {e} was expected "
            f"(expected ...{expected[max(k - 2, 0) : k + 2]}, "
            f"got ...{got[max(k - 2, 0) : k + 2]})"
        )
    assert len(expected) == len(got), (
        f"{what}: {len(got)} frames, expected {len(expected)}"
    )


def obs_code(obs: Any) -> tuple[int, int, int]:
    return tuple(int(v) % 256 for v in np.asarray(obs)[:3])  # type: ignore[return-value]


def real_states(calls: list[Call], mode: AutoresetMode) -> list[list[tuple]]:
    """Per sub-env, the codes of the states it went through, in order."""
    return [[obs_code(e.obs) for e in events] for events in real_events(calls, mode, N)]


class ShownFrames(gwv.HumanRendering):
    """HumanRendering that records the frames it would show instead of drawing."""

    shown: list[tuple]

    def _render_frame(self) -> None:
        self.shown.append(tuple(frame_code(f) for f in self.env.render()))


def wrap_human(env: VectorEnv, ctx: Any) -> VectorEnv:
    wrapped = ShownFrames(env)
    wrapped.shown = []
    return wrapped


def check_human_rendering(
    case: Case, envs: VectorEnv, mode: AutoresetMode, ctx: Any
) -> None:
    calls = run(envs, mode, make_actions(envs.action_space))
    shown: list[tuple] = envs.shown  # type: ignore[attr-defined]
    for i, states in enumerate(real_states(calls, mode)):
        seen = [frames[i] for frames in shown]
        seen = [s for k, s in enumerate(seen) if k == 0 or s != seen[k - 1]]
        assert_same_sequence(states, seen, f"sub-env {i}'s shown frames")


def wrap_video(env: VectorEnv, ctx: Any) -> VectorEnv:
    return gwv.RecordVideo(env, ctx.folder, episode_trigger=lambda episode: True)


def check_record_video(
    case: Case, envs: VectorEnv, mode: AutoresetMode, ctx: Any
) -> None:
    calls = run(envs, mode, make_actions(envs.action_space))
    envs.close()  # saves the video of the episode in progress
    rows, cols = envs.frame_rows, envs.frame_cols  # type: ignore[attr-defined]
    tiles: list[list[list[tuple]]] = []  # video -> sub-env -> codes
    for _, frames in ctx.videos:
        h, w = frames[0].shape[0] // rows, frames[0].shape[1] // cols
        tiles.append(
            [
                [frame_code(f[(i // cols) * h :, (i % cols) * w :]) for f in frames]
                for i in range(N)
            ]
        )
    for i, states in enumerate(real_states(calls, mode)):
        recorded = [code for video in tiles for code in video[i]]
        assert_same_sequence(states, recorded, f"sub-env {i}'s recorded frames")
    for v, video in enumerate(tiles):
        episodes = {code[1] for code in video[0]}
        assert len(episodes) == 1 and video[0][0][2] == 0, (
            f"video {v} does not hold one whole episode of sub-env 0: {video[0]}"
        )


# ------------------------------------------------------------------ the cases
def numeric(mode: AutoresetMode) -> VectorEnv:
    return sync(NumericEnv, mode)


def numeric_dict(mode: AutoresetMode) -> VectorEnv:
    return sync(NumericEnv, mode, obs_type="dict")


def images(mode: AutoresetMode) -> VectorEnv:
    return sync(ImageEnv, mode)


def logged(mode: AutoresetMode) -> VectorEnv:
    return sync(functools.partial(LogEnv, log=[]), mode)


def rendered(mode: AutoresetMode) -> VectorEnv:
    return sync(RenderEnv, mode)


def box_actions(mode: AutoresetMode) -> VectorEnv:
    return sync(BoxActionEnv, mode)


def jax_envs(mode: AutoresetMode) -> VectorEnv:
    return sync(JaxEnv, mode)


def _obs_case(
    base: Callable[[AutoresetMode], VectorEnv],
    cls: Callable[..., VectorEnv],
    single_cls: Callable[..., Any],
    single_env: Callable[[], gym.Env],
    requires: tuple[str, ...] = (),
    **kwargs: Any,
) -> Case:
    """A vectorised single-env observation wrapper, checked against that wrapper."""
    transform = functools.cache(lambda: single(single_cls, single_env(), **kwargs))
    return Case(
        base,
        lambda env, ctx: cls(env, **kwargs),
        check_obs(lambda obs: transform()(obs)),
        requires,
    )


gw = gym.wrappers


@functools.cache
def pendulum_rescale() -> Callable[[Any], Any]:
    return single(
        gw.RescaleAction, gym.make("Pendulum-v1"), min_action=-1.0, max_action=1.0
    )


CASES: dict[str, Case] = {
    "TransformObservation": Case(
        numeric,
        lambda env, ctx: gwv.TransformObservation(env, scale_obs),
        check_obs(scale_obs),
    ),
    "VectorizeTransformObservation": Case(
        numeric,
        lambda env, ctx: gwv.VectorizeTransformObservation(
            env, gw.TransformObservation, func=scale_obs, observation_space=None
        ),
        check_obs(scale_obs),
    ),
    "FilterObservation": _obs_case(
        numeric_dict,
        gwv.FilterObservation,
        gw.FilterObservation,
        lambda: NumericEnv(0, obs_type="dict"),
        filter_keys=["pos"],
    ),
    "FlattenObservation": _obs_case(
        numeric_dict,
        gwv.FlattenObservation,
        gw.FlattenObservation,
        lambda: NumericEnv(0, obs_type="dict"),
    ),
    "GrayscaleObservation": _obs_case(
        images, gwv.GrayscaleObservation, gw.GrayscaleObservation, lambda: ImageEnv(0)
    ),
    "ResizeObservation": _obs_case(
        images,
        gwv.ResizeObservation,
        gw.ResizeObservation,
        lambda: ImageEnv(0),
        requires=("cv2",),
        shape=(2, 2),
    ),
    "ReshapeObservation": _obs_case(
        numeric,
        gwv.ReshapeObservation,
        gw.ReshapeObservation,
        lambda: NumericEnv(0),
        shape=(3, 1),
    ),
    "RescaleObservation": _obs_case(
        numeric,
        gwv.RescaleObservation,
        gw.RescaleObservation,
        lambda: NumericEnv(0),
        min_obs=-1.0,
        max_obs=1.0,
    ),
    "DtypeObservation": _obs_case(
        numeric,
        gwv.DtypeObservation,
        gw.DtypeObservation,
        lambda: NumericEnv(0),
        dtype=np.float64,
    ),
    "NormalizeObservation": Case(
        numeric,
        lambda env, ctx: gwv.NormalizeObservation(env),
        check_normalize_observation,
    ),
    # Pendulum-v1 for the action transforms; ClipAction gets an env that does not
    # clip actions itself (Pendulum does), so a missing clip would show.
    "TransformAction": Case(
        pendulums,
        lambda env, ctx: gwv.TransformAction(env, lambda a: a * 0.5),
        check_actions(lambda a: a * 0.5),
    ),
    "VectorizeTransformAction": Case(
        pendulums,
        lambda env, ctx: gwv.VectorizeTransformAction(
            env,
            gw.TransformAction,
            func=lambda a: a * 0.5 - 0.25,
            action_space=env.single_action_space,
        ),
        check_actions(lambda a: a * 0.5 - 0.25),
    ),
    "ClipAction": Case(
        box_actions,
        lambda env, ctx: gwv.ClipAction(env),
        check_actions(single(gw.ClipAction, BoxActionEnv(0))),
    ),
    "RescaleAction": Case(
        pendulums,
        lambda env, ctx: gwv.RescaleAction(env, -1.0, 1.0),
        check_actions(lambda a: pendulum_rescale()(a)),
    ),
    "TransformReward": Case(
        numeric,
        lambda env, ctx: gwv.TransformReward(env, lambda r: r * 2.0 - 1.0),
        check_rewards(lambda r: r * 2.0 - 1.0),
    ),
    "VectorizeTransformReward": Case(
        numeric,
        lambda env, ctx: gwv.VectorizeTransformReward(
            env, gw.TransformReward, func=lambda r: r * r
        ),
        check_rewards(lambda r: r * r),
    ),
    "ClipReward": Case(
        numeric,
        lambda env, ctx: gwv.ClipReward(env, 1.0, 2.0),
        check_rewards(lambda r: np.clip(r, 1.0, 2.0)),
    ),
    "NormalizeReward": Case(
        numeric,
        lambda env, ctx: gwv.NormalizeReward(env, gamma=GAMMA, epsilon=EPSILON),
        check_normalize_reward,
    ),
    "RecordEpisodeStatistics": Case(
        numeric,
        lambda env, ctx: gwv.RecordEpisodeStatistics(env),
        check_episode_statistics,
    ),
    "DictInfoToList": Case(
        logged, lambda env, ctx: gwv.DictInfoToList(env), check_dict_info_to_list
    ),
    "HumanRendering": Case(rendered, wrap_human, check_human_rendering),
    "RecordVideo": Case(rendered, wrap_video, check_record_video, context=fake_moviepy),
    "ArrayConversion": Case(
        numeric,
        array_conversion_np,
        check_conversion("numpy"),
        requires=("array_api_compat",),
    ),
    "NumpyToTorch": Case(
        numeric,
        lazy("NumpyToTorch"),
        check_conversion("torch"),
        requires=("array_api_compat", "torch"),
        to_env=torch_tensor,
    ),
    "JaxToNumpy": Case(
        jax_envs,
        lazy("JaxToNumpy"),
        check_conversion("numpy"),
        requires=("array_api_compat", "jax"),
        isolated=True,
    ),
    "JaxToTorch": Case(
        jax_envs,
        lazy("JaxToTorch"),
        check_conversion("torch"),
        requires=("array_api_compat", "jax", "torch"),
        to_env=torch_tensor,
        isolated=True,
    ),
}

#: For each verdict other than "ok": what the observed detail must say, so a
#: verdict is only confirmed for the reason the table gives.
_SS, _DIS = SAME_STEP.value, DISABLED.value
_BASE_REFUSES = r"ValueError: Expected autoreset_mode to be NEXT_STEP or DISABLED"
#: an episode's first frame where its predecessor's last one was expected
_LAST_FRAME_MISSING = r"frames: at #\d+ got \(\d+, \d+, 0\) where \(\d+, \d+, [1-9]"
_FINAL_OBS_BUFFER_ERROR = r"raises BufferError: DLPack only supports"
_JAX_RESET_MASK = r"raises TypeError: `options\['reset_mask'\]` must be a numpy array"
EVIDENCE: dict[tuple[str, str], str] = {
    **{
        (name, _SS): _BASE_REFUSES
        for name in (
            "TransformObservation",
            "VectorizeTransformObservation",
            "FilterObservation",
            "FlattenObservation",
            "GrayscaleObservation",
            "ResizeObservation",
            "ReshapeObservation",
            "RescaleObservation",
            "DtypeObservation",
            "NormalizeObservation",
        )
    },
    ("NormalizeObservation", _DIS): (
        r"ValueError: Expected env.metadata\['autoreset_mode'\] to be "
        r"AutoresetMode.NEXT_STEP, got AutoresetMode.DISABLED"
    ),
    ("NormalizeReward", _SS): r"sub-env \d: normalised reward .* expected",
    ("NormalizeReward", _DIS): r"sub-env \d: normalised reward .* expected",
    ("RecordEpisodeStatistics", _DIS): r"sub-env 1's episode reported return",
    ("HumanRendering", _SS): "shown " + _LAST_FRAME_MISSING,
    ("RecordVideo", _SS): "recorded " + _LAST_FRAME_MISSING,
    # a frame recorded twice in a row
    ("RecordVideo", _DIS): (
        r"recorded frames: at #\d+ got .*, got \.\.\.\[.*"
        r"(\(\d+, \d+, \d+\)), \1"
    ),
    ("ArrayConversion", _SS): _FINAL_OBS_BUFFER_ERROR,
    ("NumpyToTorch", _SS): _FINAL_OBS_BUFFER_ERROR,
    ("JaxToNumpy", _SS): _FINAL_OBS_BUFFER_ERROR,
    ("JaxToTorch", _SS): _FINAL_OBS_BUFFER_ERROR,
    ("JaxToNumpy", _DIS): _JAX_RESET_MASK,
    ("JaxToTorch", _DIS): _JAX_RESET_MASK,
}


# ------------------------------------------------------------------- the tests
def test_every_wrapper_has_one_entry_with_three_modes():
    keys = [gymnasium_key(name) for name in gwv.__all__]
    assert sorted(keys) == sorted(GYMNASIUM_VERDICTS), (
        f"missing {sorted(set(keys) - set(GYMNASIUM_VERDICTS))}, "
        f"extra {sorted(set(GYMNASIUM_VERDICTS) - set(keys))}"
    )
    assert sorted(CASES) == sorted(gwv.__all__)
    for key, verdicts in GYMNASIUM_VERDICTS.items():
        assert sorted(verdicts) == sorted(m.value for m in MODES), key
        for mode, (verdict, reason) in verdicts.items():
            assert verdict in ("ok", "refuses", "wrong"), (key, mode)
            assert (reason == "") == (verdict == "ok"), (key, mode, reason)
            assert not reason.lower().startswith(("ok", "refuse", "wrong")), reason


ROOT = Path(__file__).resolve().parents[2]
_ISOLATED_RUN = """
import json, sys, warnings
warnings.simplefilter("ignore")
import gymnasium.wrappers.vector as gwv
from tests.registry.test_gymnasium_verdicts import CASES, MODES, observe
keys, verdicts = {}, {}
for name in sys.argv[1:]:
    cls = getattr(gwv, name)
    keys[name] = f"{cls.__module__}:{cls.__qualname__}"
    for mode in MODES:
        verdicts[f"{name}:{mode.value}"] = observe(CASES[name], mode)
print(json.dumps({"keys": keys, "verdicts": verdicts}))
"""


def _installed(module: str) -> bool:
    """Whether ``module`` is installed (without importing it)."""
    return importlib.util.find_spec(module) is not None


@functools.cache
def isolated_observations() -> dict[str, Any]:
    """The isolated cases' keys and verdicts, observed in one fresh interpreter."""
    names = [
        name
        for name, case in CASES.items()
        if case.isolated and all(map(_installed, case.requires))
    ]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path])}
    out = subprocess.run(
        [sys.executable, "-c", _ISOLATED_RUN, *names],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])


def test_lazy_keys_name_the_defining_module():
    for name in ("ArrayConversion", "NumpyToTorch", "JaxToNumpy", "JaxToTorch"):
        key = gymnasium_key(name)
        if CASES[name].isolated:
            if not all(map(_installed, CASES[name].requires)):
                continue
            assert isolated_observations()["keys"][name] == key
            continue
        module, _, qualname = key.partition(":")
        try:
            cls = getattr(importlib.import_module(module), qualname)
        except ImportError:
            continue
        assert key == f"{cls.__module__}:{cls.__qualname__}"


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
@pytest.mark.parametrize("name", gwv.__all__)
def test_verdict(name: str, mode: AutoresetMode):
    case = CASES[name]
    if case.isolated:
        missing = [m for m in case.requires if not _installed(m)]
        if missing:
            pytest.skip(f"needs {', '.join(missing)}")
        observed, detail = isolated_observations()["verdicts"][f"{name}:{mode.value}"]
    else:
        for module in case.requires:
            pytest.importorskip(module)
        observed, detail = observe(case, mode)
    declared, reason = GYMNASIUM_VERDICTS[gymnasium_key(name)][mode.value]
    assert observed == declared, (
        f"{name} in {mode.value}: declared {declared!r}"
        + (f" ({reason})" if reason else "")
        + f", observed {observed!r}; first difference: {detail or '(none)'}"
    )
    pattern = EVIDENCE.get((name, mode.value))
    if declared != "ok":
        assert pattern is not None, f"{name} in {mode.value}: no EVIDENCE for {detail}"
        assert re.search(pattern, detail), (
            f"{name} in {mode.value}: {declared!r} as declared, but for another "
            f"reason than {pattern!r}: {detail}"
        )


# ------------------------------------------------- the evidence behind reasons
def test_vector_envs_pop_reset_mask_from_the_callers_options():
    """Why RecordEpisodeStatistics never sees a partial reset's mask."""
    envs = sync(NumericEnv, DISABLED)
    envs.reset(seed=0)
    for _ in range(2):
        *_, terminations, truncations, _ = envs.step(np.zeros(N, dtype=np.int64))
    options = {"reset_mask": terminations | truncations, "other": 1}
    envs.reset(options=options)
    assert options == {"other": 1}


def test_normalize_reward_partial_reset_zeroes_every_sub_env():
    envs = gwv.NormalizeReward(sync(NumericEnv, DISABLED))
    envs.reset(seed=0)
    for _ in range(2):
        *_, terminations, truncations, _ = envs.step(np.ones(N, dtype=np.int64))
    ended = terminations | truncations
    assert ended.tolist() == [True, False]  # sub-env 1 is mid-episode
    assert envs.accumulated_reward[1] != 0
    envs.reset(options={"reset_mask": ended})
    assert envs.accumulated_reward.tolist() == [0.0, 0.0]


def test_normalize_reward_agrees_with_next_step_and_single_env_only_where_ok():
    """With one sub-env (so no mode reorders the statistics' updates), the real
    transitions' normalised rewards are the same as NEXT_STEP's, and as the
    single-env NormalizeReward's (which carries the return across a truncation
    and a termination), exactly in the modes declared ok."""
    lengths, truncate = ((2, 3),), ((True, False),)
    # the same action on every step, as NEXT_STEP's reset steps use up actions
    actions = [np.array([1])] * 12
    env = gym.wrappers.NormalizeReward(
        NumericEnv(0, *lengths, *truncate), gamma=GAMMA, epsilon=EPSILON
    )
    env.reset(seed=0)
    single_rewards = []
    for action in actions:
        _, reward, terminated, truncated, _ = env.step(action[0])
        single_rewards.append(float(reward))
        if terminated or truncated:
            env.reset()
    rewards = {}
    for mode in MODES:
        envs = gwv.NormalizeReward(
            sync(NumericEnv, mode, lengths, truncate), gamma=GAMMA, epsilon=EPSILON
        )
        calls = run(envs, mode, actions)
        rewards[mode] = [r for _, r in sorted(real_rewards(calls, mode, 1).items())]
    n = min(len(r) for r in rewards.values())  # NEXT_STEP has the fewest
    assert n >= 8

    def same(a: list[float], b: list[float]) -> bool:
        return bool(np.allclose(a[:n], b[:n], rtol=1e-5))

    declared = GYMNASIUM_VERDICTS[gymnasium_key("NormalizeReward")]
    ok = {m.value: declared[m.value][0] == "ok" for m in MODES}
    as_next_step = {m.value: same(rewards[m], rewards[NEXT_STEP]) for m in MODES}
    as_single_env = {m.value: same(rewards[m], single_rewards) for m in MODES}
    assert as_next_step == ok, (as_next_step, ok)
    assert as_single_env == ok, (as_single_env, ok)
