"""vecmode.wrappers: the API, the registry, partial resets, and bad input."""

from __future__ import annotations

import ast
import copy
import importlib.util
import inspect
import pathlib
import subprocess
import sys
import textwrap
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.error import DependencyNotInstalled
from gymnasium.wrappers import vector as gym_vector
from hypothesis import given, settings
from hypothesis import strategies as st

import vecmode
from tests.helpers import assert_same_run, drive, make_script, without_box_warnings
from tests.registry.test_gymnasium_verdicts import gymnasium_key
from tests.wrappers.cases import (
    MODES,
    SINGLE_CASES,
    reference,
    vecmode_base,
)
from vecmode import AutoresetMode
from vecmode import wrappers as vw
from vecmode._gymnasium import VECMODE_EQUIVALENTS
from vecmode.modes import BoundaryTracker, boundary

#: the vector wrappers (vw.FinalFrameInfo, for sub-envs, is a single-env wrapper)
#: (``ppo_stack`` is a function building wrappers)
PUBLIC = [
    getattr(vw, name)
    for name in vw.__all__
    if isinstance(getattr(vw, name), type)
    and issubclass(getattr(vw, name), gym.vector.VectorWrapper)
]


def test_the_one_single_env_wrapper_is_final_frame_info():
    singles = [
        name
        for name in vw.__all__
        if isinstance(getattr(vw, name), type) and getattr(vw, name) not in PUBLIC
    ]
    assert singles == ["FinalFrameInfo"]
    assert issubclass(vw.FinalFrameInfo, gym.Wrapper)


# ------------------------------------------------------------------ the API
#: Gymnasium's wrappers that need torch or jax, which its package loads lazily
LAZY = frozenset(("ArrayConversion", "NumpyToTorch", "JaxToNumpy", "JaxToTorch"))


def gymnasium_parameters(name: str) -> list[tuple[str, inspect._ParameterKind, Any]]:
    """``(name, kind, default)`` of each parameter of Gymnasium's
    ``gymnasium.wrappers.vector.<name>.__init__``; for the lazily loaded ones read
    from the source, so neither torch nor jax is imported (jax must not be: see
    tests/test_isolated.py)."""
    if name not in LAZY:
        init = getattr(gym_vector, name).__init__
        return [
            (p.name, p.kind, p.default)
            for p in inspect.signature(init).parameters.values()
        ]
    spec = importlib.util.find_spec(gymnasium_key(name).partition(":")[0])
    assert spec is not None and spec.origin is not None
    tree = ast.parse(pathlib.Path(spec.origin).read_text(encoding="utf-8"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)
    init = next(
        n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"
    )
    args = init.args
    assert not (args.posonlyargs or args.kwonlyargs or args.vararg or args.kwarg)
    defaults = [inspect.Parameter.empty] * (len(args.args) - len(args.defaults))
    defaults += [ast.literal_eval(d) for d in args.defaults]
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    return [(a.arg, kind, d) for a, d in zip(args.args, defaults, strict=True)]


def test_every_mirrored_gymnasium_wrapper_is_here_with_its_arguments():
    mirrored = set(gym_vector.__all__) & set(vw.__all__)
    assert mirrored == VECMODE_EQUIVALENTS
    for name in sorted(mirrored):
        theirs = gymnasium_parameters(name)
        ours = inspect.signature(getattr(vw, name).__init__).parameters
        assert list(ours) == [key for key, _, _ in theirs], name
        for key, kind, default in theirs:
            assert ours[key].default == default, f"{name}({key}=...)"
            assert ours[key].kind == kind, f"{name}({key}=...)"


def test_the_registry_table_marks_ours_right_and_gymnasiums_as_measured():
    from vecmode._gymnasium import GYMNASIUM_VERDICTS
    from vecmode.registry import declarations

    rows = dict(declarations())
    for name in sorted(VECMODE_EQUIVALENTS):
        ours = rows[f"vecmode.wrappers.{name}"]
        assert ours.modes == frozenset(MODES) and not ours.wrong, name
        theirs = rows[f"gymnasium.wrappers.vector.{name}"]
        verdicts = GYMNASIUM_VERDICTS[gymnasium_key(name)]
        for mode in MODES:
            verdict = verdicts[mode.value][0]
            assert (mode in theirs.modes) == (verdict == "ok"), (name, mode)
            assert (mode in theirs.wrong) == (verdict == "wrong"), (name, mode)
        if len(theirs.modes) < len(MODES):
            assert f"vecmode.wrappers.{name}" in theirs.instead, name


def test_the_source_reading_agrees_with_inspect():
    """Where both work, reading Gymnasium's source gives what inspect does."""
    pytest.importorskip("torch")
    pytest.importorskip("array_api_compat")
    for name in ("ArrayConversion", "NumpyToTorch"):
        init = getattr(gym_vector, name).__init__
        expected = [
            (p.name, p.kind, p.default)
            for p in inspect.signature(init).parameters.values()
        ]
        assert gymnasium_parameters(name) == expected
        assert name in LAZY


def test_importing_the_wrappers_imports_no_optional_library():
    code = (
        "import sys, vecmode, vecmode.wrappers\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'torch', 'jax', 'jaxlib', 'array_api_compat', 'moviepy', 'pygame', 'cv2'}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("cls", PUBLIC, ids=lambda c: c.__name__)
def test_every_wrapper_declares_every_mode(cls):
    assert vecmode.supported_modes(cls) == frozenset(MODES)


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_a_stack_checks_ok_in_every_mode(mode):
    envs = vw.RecordEpisodeStatistics(
        vw.NormalizeReward(vw.FrameStackObservation(vecmode_base("box", mode), 2))
    )
    report = vecmode.check_stack(envs)
    assert report.ok and report.mode is mode, str(report)
    envs.close()


def test_gymnasiums_refusal_suggests_the_vecmode_wrapper():
    envs = vecmode_base("box", AutoresetMode.SAME_STEP)
    with vecmode.guard(), pytest.raises(vecmode.IncompatibleModeError) as info:
        gym_vector.NormalizeObservation(envs)
    assert "vecmode.wrappers.NormalizeObservation" in str(info.value)
    envs.close()


def test_an_undeclared_env_warns_and_strict_refuses():
    class Undeclared(gym.vector.VectorWrapper):
        @property
        def metadata(self):
            return {}

    envs = Undeclared(vecmode_base("box", AutoresetMode.NEXT_STEP))
    with pytest.warns(vecmode.UndeclaredModeWarning):
        wrapped = vw.FrameStackObservation(envs, 2)
    assert wrapped.boundaries.mode is AutoresetMode.NEXT_STEP
    with vecmode.strict(), pytest.raises(vecmode.IncompatibleModeError):
        vw.FrameStackObservation(envs, 2)
    envs.close()


def test_vecmode_is_switchable_by_import():
    """docs/wrappers.md's promise: the same call, vecmode's module instead of
    Gymnasium's."""
    for module in (gym_vector, vw):
        envs = module.NormalizeObservation(vecmode_base("box", AutoresetMode.NEXT_STEP))
        envs.reset(seed=0)
        envs.close()
    with pytest.raises(ValueError):  # Gymnasium's refuses SameStep by itself
        gym_vector.NormalizeObservation(vecmode_base("box", AutoresetMode.SAME_STEP))
    vw.NormalizeObservation(vecmode_base("box", AutoresetMode.SAME_STEP)).close()


# ----------------------------------------------------- the boundary tracker
@settings(max_examples=100)
@given(
    mode=st.sampled_from(MODES),
    calls=st.lists(
        st.tuples(st.booleans(), st.lists(st.booleans(), min_size=3, max_size=3)),
        min_size=1,
        max_size=25,
    ),
)
def test_tracker_agrees_with_the_boundary_of_each_step(mode, calls):
    """Steps (flags) and masked resets in any order: the tracker gives boundary()
    of each step with ``ended_before`` = ended on the previous step and not reset."""
    tracker = BoundaryTracker(mode, 3)
    assert tracker.reset(None).starts.all()
    ended_before = np.zeros(3, dtype=bool)
    for is_reset, flags in calls:
        flags = np.array(flags)
        if is_reset:
            b = tracker.reset(flags)
            assert (b.starts == flags).all() and not b.real.any()
            ended_before &= ~flags
            if mode is AutoresetMode.DISABLED:
                assert (b.needs_reset == ended_before).all()
            continue
        terms, truncs = (
            flags & np.array([True, False, True]),
            flags & np.array([False, True, False]),
        )
        got = tracker.step(terms, truncs)
        want = boundary(mode, terms, truncs, ended_before)
        for field in ("ended", "starts", "real", "final_in_info", "needs_reset"):
            assert (getattr(got, field) == getattr(want, field)).all(), field
        ended_before = want.ended


FIELDS = ("ended", "starts", "real", "final_in_info", "needs_reset")


@settings(max_examples=150)
@given(
    mode=st.sampled_from(MODES),
    calls=st.lists(
        st.tuples(
            st.sampled_from(["step", "reset", "full reset"]),
            st.lists(st.booleans(), min_size=6, max_size=6),
            st.sampled_from(
                [
                    "same",
                    "copy",
                    "changed",
                    "truncations changed",
                    "written into",
                    "source only",
                ]
            ),
        ),
        min_size=1,
        max_size=30,
    ),
)
def test_a_tracker_sharing_its_sources_boundaries_is_never_wrong(mode, calls):
    """A tracker over a source tracker (a wrapper over a wrapper) gives the
    boundaries of its own calls, whatever its source saw: the same objects
    (shared), copies of them, other flags (a layer between changed them), the
    same objects written into since (a layer between set flags in place), or
    calls it never saw (a layer between calling down on its own)."""
    source = BoundaryTracker(mode, 3)
    follower = BoundaryTracker(mode, 3, source=source)
    alone = BoundaryTracker(mode, 3)
    for tracker in (source, follower, alone):
        tracker.reset(None)
    shared = 0
    for kind, flags, how in calls:
        flags = np.array(flags)
        if kind == "step":
            args = (flags[:3], flags[3:])
        else:
            args = (None if kind == "full reset" else flags[:3],)
        got_source = getattr(source, "step" if kind == "step" else "reset")(*args)
        if how == "source only":
            continue
        if how == "copy":
            args = tuple(None if a is None else a.copy() for a in args)
        elif how == "changed":
            args = tuple(None if a is None else ~a for a in args)
        elif how == "truncations changed" and kind == "step":
            args = (args[0], ~args[1])
        elif how == "written into" and kind == "step":
            np.logical_not(args[1], out=args[1])  # the objects the source had
        call = "step" if kind == "step" else "reset"
        got = getattr(follower, call)(*args)
        want = getattr(alone, call)(*args)
        for field in FIELDS:
            assert (getattr(got, field) == getattr(want, field)).all(), (kind, field)
        assert (follower.awaiting_reset == alone.awaiting_reset).all()
        shared += got is got_source
    if all(how == "same" for _, _, how in calls):  # in step: always shared
        assert shared == len(calls)


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_stacked_wrappers_compute_each_boundary_once(mode):
    """In a stack of tracked wrappers every layer holds the same boundary object
    after each call (computed once); a layer between that hands up new flags
    makes the layer above compute its own, and right."""

    class Relabel(gym.vector.VectorWrapper):
        """Terminations become truncations: new flag arrays."""

        def step(self, actions):
            obs, rewards, terms, truncs, infos = self.env.step(actions)
            return obs, rewards, np.zeros_like(terms), terms | truncs, infos

    inner = vw.RecordEpisodeStatistics(vecmode_base("box", mode))
    middle = vw.NormalizeReward(vw.TransformObservation(inner, lambda o: o))
    outer = vw.ClipReward(Relabel(middle), 0.0, 1.0)
    layers = (inner, middle, outer)
    script = make_script(outer, 12, seed=1, mask_prob=0.5)
    disabled = mode is AutoresetMode.DISABLED
    same = 0  # the probe checks every call
    for kind, _ in drive(_Probe(outer, layers, mode), script, disabled):
        same += kind == "step"
    assert same == 12
    outer.close()


class _Probe(gym.vector.VectorWrapper):
    """After each call: the inner two layers share one boundary; the outer one
    (above a layer that relabels the flags) computes its own, right."""

    def __init__(self, env, layers, mode):
        super().__init__(env)
        self.layers, self.mode = layers, mode
        self.reference = BoundaryTracker(mode, env.num_envs)
        self.ended = np.zeros(env.num_envs, dtype=bool)

    def _check(self, want):
        inner, middle, outer = self.layers
        assert middle.boundary is inner.boundary
        for field in FIELDS:
            assert (getattr(outer.boundary, field) == getattr(want, field)).all(), field

    def reset(self, **kwargs):
        result = self.env.reset(**kwargs)
        mask = (kwargs.get("options") or {}).get("reset_mask")
        self._check(self.reference.reset(mask))
        return result

    def step(self, actions):
        result = self.env.step(actions)
        self._check(self.reference.step(result[2], result[3]))
        return result


# ----------------------------------------------------------- partial resets
@settings(max_examples=30)
@given(
    case=st.sampled_from(SINGLE_CASES),
    mode=st.sampled_from(MODES),
    lengths=st.lists(
        st.lists(st.integers(1, 4), min_size=1, max_size=3), min_size=2, max_size=2
    ),
    mask_prob=st.floats(0.0, 0.9),
    seed=st.integers(0, 50),
)
def test_random_partial_resets_match_the_single_env_reference(
    case, mode, lengths, mask_prob, seed
):
    truncate = [[i % 2 == 0, True] for i in range(2)]
    kw = {"lengths": lengths, "truncate": truncate}
    expected_envs = reference(case.env, mode, case, **kw)
    script = make_script(expected_envs, 10, seed=seed, mask_prob=mask_prob)
    disabled = mode is AutoresetMode.DISABLED
    expected = drive(expected_envs, script, disabled)
    got_envs = case.wrap(vecmode_base(case.env, mode, **kw))
    got = drive(got_envs, script, disabled)
    assert_same_run(expected, got)
    expected_envs.close()
    got_envs.close()


@settings(max_examples=30)
@given(
    mode=st.sampled_from(MODES),
    lengths=st.lists(
        st.lists(st.integers(1, 4), min_size=1, max_size=3), min_size=3, max_size=3
    ),
    mask_prob=st.floats(0.0, 0.9),
    seed=st.integers(0, 50),
)
def test_random_partial_resets_episode_statistics(mode, lengths, mask_prob, seed):
    """Against Gymnasium's RecordEpisodeStatistics directly over vecmode's core,
    which is right there in every mode (its reset sees the mask)."""
    kw = {"lengths": lengths, "truncate": [[False, True]] * 3}

    def run(wrapper):
        envs = wrapper(vecmode_base("box", mode, **kw))
        script = make_script(envs, 10, seed=seed, mask_prob=mask_prob)
        calls = drive(_Snapshot(envs), script, mode is AutoresetMode.DISABLED)
        envs.close()
        for _, result in calls:
            if "episode" in result[-1]:
                result[-1]["episode"].pop("t")
        return calls

    assert_same_run(
        run(gym_vector.RecordEpisodeStatistics), run(vw.RecordEpisodeStatistics)
    )


class _Snapshot(gym.vector.VectorWrapper):
    def reset(self, **kwargs):
        return copy.deepcopy(self.env.reset(**kwargs))

    def step(self, actions):
        return copy.deepcopy(self.env.step(actions))


@pytest.mark.parametrize("base", ["vecmode", "gymnasium"])
def test_the_mask_reaches_every_layer_and_options_are_not_mutated(base):
    inner = vecmode_base("box", AutoresetMode.DISABLED, base)
    envs = vw.RecordEpisodeStatistics(
        vw.FrameStackObservation(vw.NormalizeReward(inner), 2)
    )
    obs, _ = envs.reset(seed=0)
    obs, *_ = envs.step(np.zeros(3, dtype=np.int64))
    lengths_before = envs.episode_lengths.copy()
    mask = np.array([True, False, False])
    options = {"reset_mask": mask, "other": 1}
    reset_obs, _ = envs.reset(options=options)
    assert options.keys() == {"reset_mask", "other"} and options["reset_mask"] is mask
    assert mask.tolist() == [True, False, False]
    # only sub-env 0 was reset, at every layer
    np.testing.assert_array_equal(reset_obs[1:], obs[1:])
    assert (reset_obs[0] == reset_obs[0][-1]).all()  # a fresh stack
    assert envs.episode_lengths[0] == 0
    np.testing.assert_array_equal(envs.episode_lengths[1:], lengths_before[1:])
    envs.close()


def test_inner_arrays_and_caller_actions_are_not_written_into():
    class Keep(gym.vector.VectorWrapper):
        def step(self, actions):
            self.returned = self.env.step(actions)
            self.copied = copy.deepcopy(self.returned)
            return self.returned

    inner = Keep(vecmode_base("box_action", AutoresetMode.SAME_STEP))
    envs = vw.ClipReward(
        vw.NormalizeObservation(
            without_box_warnings(vw.DtypeObservation)(
                vw.ClipAction(
                    vw.VectorizeTransformAction(
                        inner,
                        gym.wrappers.TransformAction,
                        func=lambda a: a * 0.5,
                        action_space=spaces.Box(-1.0, 1.0, (1,), np.float32),
                    )
                ),
                np.float64,
            )
        ),
        0.0,
        1.0,
    )
    envs.reset(seed=0)
    for _ in range(5):
        actions = np.full((3, 1), 3.0, dtype=np.float32)
        envs.step(actions)
        assert (actions == np.float32(3.0)).all()  # clipped and scaled in copies
        assert_same_run([("step", inner.copied)], [("step", inner.returned)])
    envs.close()


# ---------------------------------------------------------------- bad input
def test_a_bad_reset_mask_is_refused_and_the_env_stays_usable():
    envs = vw.FrameStackObservation(vecmode_base("box", AutoresetMode.DISABLED), 2)
    envs.reset(seed=0)
    with pytest.raises(TypeError, match="reset_mask"):
        envs.reset(options={"reset_mask": np.array([1, 0, 0])})
    with pytest.raises(ValueError, match="reset_mask"):
        envs.reset(options={"reset_mask": np.array([True, False])})
    envs.step(np.zeros(3, dtype=np.int64))
    envs.close()


@pytest.mark.parametrize("mask", ["yes", 1, {0: True}], ids=["str", "int", "dict"])
def test_a_reset_mask_of_no_array_type_is_refused_saying_what_to_pass(mask):
    """Over Gymnasium's env (whose own refusal says nothing more), the wrapper
    refuses a mask that is no array, list or tuple, with Gymnasium's words and
    what to pass; nothing is reset, and the env goes on."""
    envs = vw.RecordEpisodeStatistics(
        vecmode_base("box", AutoresetMode.DISABLED, base="gymnasium")
    )
    obs, _ = envs.reset(seed=0)
    options = {"reset_mask": mask}
    with pytest.raises(TypeError) as refused:
        envs.reset(options=options)
    assert str(refused.value) == (
        f"`options['reset_mask']` must be a numpy array, got {type(mask)}: pass a "
        f"bool array of shape (3,) (or a list of 3 bools), e.g. "
        f"np.logical_or(terminations, truncations)."
    )
    assert options == {"reset_mask": mask}  # the caller's options untouched
    again, _ = envs.reset(options={"reset_mask": [False, True, False]})
    np.testing.assert_array_equal(again[[0, 2]], obs[[0, 2]])  # only 1 was reset
    envs.step(np.zeros(3, dtype=np.int64))
    envs.close()


@pytest.mark.parametrize("listing", [vw.DictInfoToList, gym_vector.DictInfoToList])
@pytest.mark.parametrize(
    "wrapper", [vw.RecordEpisodeStatistics, vw.ClipAction, vw.DictInfoToList]
)
def test_dict_info_to_list_inside_another_wrapper_is_refused_when_built(
    listing, wrapper
):
    """It was refused at the first reset (ClipAction's steps went on), so
    check_stack and assert_compatible passed a stack that could not reset."""
    envs = listing(vecmode_base("box", AutoresetMode.NEXT_STEP))
    with pytest.raises(TypeError, match=r"got a list \(DictInfoToList is below it\)"):
        wrapper(envs)
    with pytest.raises(AssertionError):  # what Gymnasium's wrappers raise
        wrapper(envs)
    assert envs.reset(seed=0)[0].shape == (3, 3)  # untouched


def test_normalize_observation_needs_a_box():
    with pytest.raises(TypeError, match="needs a Box"):
        vw.NormalizeObservation(vecmode_base("dict", AutoresetMode.NEXT_STEP))


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"stack_size": 0}, ValueError, "greater than zero"),
        ({"stack_size": "2"}, TypeError, "integer"),
        ({"stack_size": 2, "padding_type": "first"}, ValueError, "padding_type"),
        (
            {"stack_size": 2, "padding_type": np.full(3, 1e9, np.float32)},
            ValueError,
            "padding_type",
        ),
    ],
)
def test_frame_stack_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        vw.FrameStackObservation(vecmode_base("box", AutoresetMode.NEXT_STEP), **kwargs)


def test_frame_stack_refuses_spaces_it_cannot_stack():
    class TextEnv(gym.Env):
        observation_space = spaces.Text(5)
        action_space = spaces.Discrete(2)

    envs = vecmode.SyncVectorEnv([TextEnv])
    with pytest.raises(TypeError, match="cannot stack"):
        vw.FrameStackObservation(envs, 2)


def test_resize_without_opencv_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "cv2", None)
    said = r"opencv-python-headless \(or, in a vecmode checkout, pip install \"\.\[opencv\]\"\)"
    with pytest.raises(DependencyNotInstalled, match=said):
        vw.ResizeObservation(vecmode_base("image", AutoresetMode.NEXT_STEP), (2, 2))


def test_episode_statistics_key_already_in_the_info():
    class Episode(gym.vector.VectorWrapper):
        def step(self, actions):
            *head, infos = self.env.step(actions)
            return (*head, {**infos, "episode": 1})

    envs = vw.RecordEpisodeStatistics(
        Episode(vecmode_base("box", AutoresetMode.NEXT_STEP))
    )
    envs.reset(seed=0)
    with pytest.raises(ValueError, match="stats_key"):
        for _ in range(3):
            envs.step(np.zeros(3, dtype=np.int64))


def test_episode_statistics_over_a_sub_envs_own_name_the_likely_layer():
    envs = vw.RecordEpisodeStatistics(
        vecmode.make_vec(
            "CartPole-v1", 2, "sync", wrappers=[gym.wrappers.RecordEpisodeStatistics]
        )
    )
    envs.reset(seed=0)
    with pytest.raises(ValueError) as caught:
        for _ in range(100):
            envs.step(np.zeros(2, dtype=np.int64))
    assert "from a layer below (a sub-env's RecordEpisodeStatistics, say)" in str(
        caught.value
    )
    assert str(caught.value).endswith("Keep one of the two, or pass another stats_key.")


def test_a_same_step_env_without_final_obs_is_named():
    class Lying(gym.vector.VectorWrapper):
        """Claims SameStep but drops final_obs."""

        def __init__(self, env):
            super().__init__(env)
            self.metadata = {**env.metadata, "autoreset_mode": AutoresetMode.SAME_STEP}

        def step(self, actions):
            *head, infos = self.env.step(actions)
            return (*head, {k: v for k, v in infos.items() if "final_obs" not in k})

    for wrap in (lambda e: vw.FrameStackObservation(e, 2), vw.NormalizeObservation):
        envs = wrap(Lying(vecmode_base("box", AutoresetMode.SAME_STEP)))
        envs.reset(seed=0)
        with pytest.raises(ValueError, match=r"sub-env\(s\) 2 ended in a SAME_STEP"):
            for _ in range(3):
                envs.step(np.zeros(3, dtype=np.int64))


@pytest.mark.slow
def test_checks_run_under_python_dash_o():
    code = textwrap.dedent(
        """
        import numpy as np
        from tests.wrappers.cases import vecmode_base
        from vecmode import AutoresetMode, wrappers as vw
        envs = vw.NormalizeReward(vecmode_base("box", AutoresetMode.DISABLED))
        envs.reset(seed=0)
        for bad in (np.array([1, 0, 0]), [True]):
            try:
                envs.reset(options={"reset_mask": bad})
            except (TypeError, ValueError) as e:
                print(type(e).__name__)
        try:
            vw.FrameStackObservation(envs, 0)
        except ValueError:
            print("ValueError")
        """
    )
    out = subprocess.run(
        [sys.executable, "-O", "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["TypeError", "ValueError", "ValueError"]


# ------------------------------------------------------- performance shortcuts
def test_stateful_hooks_overridden_on_the_class_or_the_instance_are_called():
    class OnlyStarts(vw.StatefulWrapper):
        def __init__(self, env):
            super().__init__(env)
            self.starts = 0

        def episode_start(self, observations, mask):
            self.starts += int(mask.sum())

    for mode in MODES:
        envs = OnlyStarts(
            vecmode.make_vec(
                "CartPole-v1",
                num_envs=2,
                autoreset_mode=mode,
                max_episode_steps=2,
                vectorization_mode="sync",
            )
        )
        moves: list[np.ndarray] = []
        envs.transition = lambda obs, r, te, tr, mask, moves=moves: moves.append(
            mask.copy()
        )
        envs.reset(seed=0)
        starts, real = int(envs.boundary.starts.sum()), 0
        for _ in range(5):
            envs.step(np.array([0, 1]))
            starts += int(envs.boundary.starts.sum())
            real += int(envs.boundary.real.sum())
            if envs.boundary.needs_reset.any():
                envs.reset(options={"reset_mask": envs.boundary.needs_reset})
                starts += int(envs.boundary.starts.sum())
        assert envs.starts == starts > 2, mode
        assert sum(int(m.sum()) for m in moves) == real > 0, mode
        envs.close()


def test_a_transition_hook_of_its_own_gets_the_final_observations():
    """A hook of a subclass (of RecordEpisodeStatistics too, which reads none) or
    set on the instance gets SameStep's final observations, not the reset's."""

    class Keeps(vw.RecordEpisodeStatistics):
        def transition(self, observations, *rest):
            super().transition(observations, *rest)
            self.seen = np.array(observations, copy=True)

    for build in (Keeps, vw.StatefulWrapper):
        envs = build(
            vecmode.make_vec(
                "CartPole-v1", 2, "sync", autoreset_mode="SameStep", max_episode_steps=2
            )
        )
        if build is vw.StatefulWrapper:
            envs.transition = lambda o, *rest, envs=envs: setattr(
                envs, "seen", o.copy()
            )
        envs.reset(seed=0)
        envs.step(np.array([0, 1]))
        obs, *_, infos = envs.step(np.array([0, 1]))
        assert np.array_equal(envs.seen, np.stack(infos["final_obs"])), build
        assert not np.array_equal(envs.seen, obs)
        envs.close()


@pytest.mark.parametrize("base", ["vecmode", "gymnasium"])
def test_call_get_attr_set_attr_reach_the_sub_envs_through_a_stack(base):
    """Gymnasium's VectorWrapper does not forward them; every vecmode wrapper does."""
    envs = vw.DictInfoToList(
        vw.RecordEpisodeStatistics(
            vw.ClipReward(
                vw.TransformAction(
                    vw.FlattenObservation(
                        vecmode_base("dict", AutoresetMode.SAME_STEP, base)
                    ),
                    lambda a: a,
                ),
                0.0,
                1.0,
            )
        )
    )
    assert envs.get_attr("index") == (0, 1, 2)
    envs.set_attr("lengths", [[5], [5], [5]])
    assert envs.call("render") == (None, None, None)
    assert [env.lengths for env in envs.envs] == [[5], [5], [5]]
    envs.close()


@pytest.mark.parametrize("cls", [vw.NormalizeObservation, vw.NormalizeReward])
def test_normalisers_check_epsilon_and_can_be_frozen(cls):
    from gymnasium.error import InvalidBound

    with pytest.raises(InvalidBound, match="epsilon"):
        cls(vecmode_base("box", AutoresetMode.NEXT_STEP), epsilon=0.0)
    envs = cls(vecmode_base("box", AutoresetMode.SAME_STEP))
    rms = envs.obs_rms if cls is vw.NormalizeObservation else envs.return_rms
    envs.reset(seed=0)
    envs.step(np.zeros(3, dtype=np.int64))
    envs.update_running_mean = False
    count = rms.count
    for _ in range(4):
        envs.step(np.zeros(3, dtype=np.int64))
    assert rms.count == count and envs.update_running_mean is False
    envs.close()


def test_a_reward_transform_returning_a_read_only_array_still_zeroes_reset_steps():
    """NEXT_STEP's reset step keeps reward 0, written into a copy of what
    ``rewards`` returned (read-only, or a buffer the wrapper keeps)."""

    class ReadOnlyPlusOne(vw.RewardWrapper):
        def rewards(self, rewards):
            out = rewards + 1
            out.flags.writeable = False
            return out

    envs = ReadOnlyPlusOne(
        vecmode.make_vec(
            "CartPole-v1",
            num_envs=2,
            vectorization_mode="sync",
            autoreset_mode="NextStep",
            max_episode_steps=2,
        )
    )
    envs.reset(seed=0)
    got = [envs.step(np.array([0, 1]))[1].tolist() for _ in range(3)]
    assert got == [[2.0, 2.0], [2.0, 2.0], [0.0, 0.0]]  # the third: reset steps
    envs.close()


@pytest.mark.parametrize(
    ("wrap", "shape"),
    [
        (lambda e: vw.RescaleAction(e, -1.0, 1.0), (4, 1)),
        (lambda e: vw.RescaleAction(e, -1.0, 1.0), (3, 2)),
        (vw.ClipAction, (3,)),
        (lambda e: vw.TransformAction(e, lambda a: a * 2), (2, 1)),
    ],
)
def test_an_action_wrapper_refuses_a_wrong_batch_as_the_core_does(wrap, shape):
    """A wrong shape gave NumPy's "Output array is the wrong shape" or a
    broadcasting error from the transform; now the core's ActionBatchError,
    before the transform and before anything is stepped."""
    envs = without_box_warnings(wrap)(
        vecmode.make_vec("MountainCarContinuous-v0", 3, "sync")
    )
    envs.reset(seed=0)
    with pytest.raises(vecmode.errors.ActionBatchError, match="nothing was stepped"):
        envs.step(np.zeros(shape, dtype=np.float32))
    envs.step(np.zeros((3, 1), dtype=np.float32))  # the env goes on
    envs.close()
