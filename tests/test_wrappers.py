"""vecmode.wrappers: the API, the registry, partial resets, and bad input."""

from __future__ import annotations

import copy
import inspect
import subprocess
import sys
import textwrap

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
from tests.wrapper_cases import (
    MODES,
    SINGLE_CASES,
    reference,
    vecmode_base,
)
from vecmode import AutoresetMode
from vecmode import wrappers as vw
from vecmode._gymnasium import VECMODE_EQUIVALENTS
from vecmode.modes import BoundaryTracker, boundary

PUBLIC = [getattr(vw, name) for name in vw.__all__]


# ------------------------------------------------------------------ the API
def test_every_mirrored_gymnasium_wrapper_is_here_with_its_arguments():
    mirrored = set(gym_vector.__all__) & set(vw.__all__)
    assert mirrored == VECMODE_EQUIVALENTS
    for name in sorted(mirrored):
        theirs = inspect.signature(getattr(gym_vector, name).__init__).parameters
        ours = inspect.signature(getattr(vw, name).__init__).parameters
        assert list(ours) == list(theirs), name
        for key, param in theirs.items():
            assert ours[key].default == param.default, f"{name}({key}=...)"
            assert ours[key].kind == param.kind, f"{name}({key}=...)"


@pytest.mark.parametrize("cls", PUBLIC, ids=lambda c: c.__name__)
def test_every_wrapper_declares_every_mode(cls):
    assert vecmode.supported_modes(cls) == frozenset(MODES)


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_a_stack_checks_ok_in_every_mode(mode):
    envs = vw.RecordEpisodeStatistics(
        vw.NormalizeReward(vw.FrameStackObservation(vecmode_base("box", mode), 2))
    )
    report = vecmode.check(envs)
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
    """The README's promise: the same call, vecmode's module instead of Gymnasium's."""
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


def test_dict_info_to_list_inside_another_wrapper_says_to_put_it_outermost():
    envs = vw.RecordEpisodeStatistics(
        vw.DictInfoToList(vecmode_base("box", AutoresetMode.NEXT_STEP))
    )
    with pytest.raises(TypeError, match="outermost"):
        envs.reset(seed=0)


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
    with pytest.raises(DependencyNotInstalled, match=r"vecmode\[opencv\]"):
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
        from tests.wrapper_cases import vecmode_base
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
