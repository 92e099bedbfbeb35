"""TransitionCollector: its resets in DISABLED mode, its errors and attributes."""

from __future__ import annotations

import re
import subprocess
import sys
import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.error import ClosedEnvironmentError, ResetNeeded
from hypothesis import given, settings
from hypothesis import strategies as st

import vecmode
import vecmode.transitions
from tests.helpers import assert_same
from tests.transition_runs import (
    LENGTHS,
    TRUNCATE,
    N,
    Run,
    assert_ground_truth,
    make_envs,
    queues_for,
)
from vecmode.modes import MODES, AutoresetMode
from vecmode.testing.envs import decode, scheduled_env_fns
from vecmode.transitions import TransitionCollector


# ------------------------------------------------------------- DISABLED resets
class RecordResets(gym.vector.VectorWrapper):
    """Records the options of every reset, and can make the next masked one fail."""

    def __init__(self, env):
        super().__init__(env)
        self.options: list[Any] = []  # copies: Gymnasium pops from them
        self.given: list[Any] = []  # the dicts themselves
        self.fail_masked = False

    def reset(self, *, seed=None, options=None):
        self.options.append(None if options is None else dict(options))
        self.given.append(options)
        if self.fail_masked and options and "reset_mask" in options:
            raise RuntimeError("reset failed")
        result = self.env.reset(seed=seed, options=options)
        if self.fail_after:
            raise RuntimeError("reset failed after the env's")
        return result

    fail_after = False


@pytest.mark.parametrize("base", ["vecmode", "gymnasium"])
def test_disabled_resets_ended_sub_envs_with_a_fresh_mask(base):
    envs = RecordResets(make_envs(base, AutoresetMode.DISABLED))
    collector = TransitionCollector(envs)
    _, infos = collector.reset(seed=0)
    assert collector.reset_infos is infos
    assert list(infos["episode_index"]) == [0] * N
    resets = 0
    for _ in range(10):
        t = collector.step(np.ones(N, dtype=np.int64))
        ended = np.logical_or(t.terminations, t.truncations)
        if ended.any():
            resets += 1
            options = envs.options[-1]
            assert set(options) == {"reset_mask"}
            np.testing.assert_array_equal(options["reset_mask"], ended)
            assert all(envs.given[-1] is not o for o in envs.given[:-1])
            np.testing.assert_array_equal(
                collector.reset_infos["_episode_index"], ended
            )
            for i in np.flatnonzero(ended):
                episode = decode(t.next_obs[i])[1]
                assert decode(collector.obs[i]) == (i, episode + 1, 0)
                assert collector.reset_infos["episode_index"][i] == episode + 1
            for i in np.flatnonzero(~ended):
                assert decode(collector.obs[i]) == decode(t.next_obs[i])
        else:
            assert collector.reset_infos == {}
            assert_same(t.next_obs, collector.obs)
    assert resets == len(envs.options) - 1 > 3
    collector.close()


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_the_step_s_infos_as_returned_whatever_the_collector_s_reset_does(mode):
    """Gymnasium's RecordEpisodeStatistics returns its own array as
    info["_episode"] and clears it in place when the sub-envs are reset: in
    DISABLED the collector's reset dropped every episode's statistics."""
    fns = [lambda: gym.make("CartPole-v1", max_episode_steps=2)] * 2
    envs = gym.wrappers.vector.RecordEpisodeStatistics(
        vecmode.with_autoreset(vecmode.SyncVectorEnv(fns), mode)
    )
    with TransitionCollector(envs) as collector:
        collector.reset(seed=0)
        ended = [collector.step(np.array([1, 0])) for _ in range(2)][-1]
        assert ended.truncations.tolist() == [True, True]
        assert ended.infos["_episode"].tolist() == [True, True]
        assert ended.infos["episode"]["l"].tolist() == [2, 2]


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
@pytest.mark.filterwarnings("ignore::vecmode.IncompatibleModeWarning")  # RecordResets
def test_autoreset_modes_make_no_reset_calls(mode):
    envs = RecordResets(make_envs("vecmode", mode))
    collector = TransitionCollector(envs)
    collector.reset(seed=0)
    for _ in range(10):
        collector.step(np.ones(N, dtype=np.int64))
        assert collector.reset_infos == {}
    assert len(envs.options) == 1


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_masked_reset_mid_episode_starts_a_new_episode(mode):
    """collector.reset with a reset_mask: the masked sub-env's next transition
    starts a new episode, the others go on, the caller's options untouched."""
    lengths, truncate = ((5,), (5,)), ((False,), (False,))
    for base in ("vecmode", "gymnasium"):
        collector = TransitionCollector(make_envs(base, mode, lengths, truncate))
        collector.reset(seed=0)
        collector.step(np.zeros(2, dtype=np.int64))
        options = {"reset_mask": np.array([True, False])}
        obs, _ = collector.reset(options=options)
        assert set(options) == {"reset_mask"}
        assert obs is collector.obs
        t = collector.step(np.zeros(2, dtype=np.int64))
        assert t.valid.all()
        assert [decode(o) for o in t.obs] == [(0, 1, 0), (1, 0, 1)]
        assert [decode(o) for o in t.next_obs] == [(0, 1, 1), (1, 0, 2)]
        collector.close()


@pytest.mark.parametrize("mode", MODES)
def test_an_all_false_reset_mask_does_nothing_over_any_env(mode):
    """Gymnasium's envs refuse an all-False mask: the collector passed it on,
    and then needed a full reset. It resets nothing, over every env."""
    lengths, truncate = ((5,), (5,)), ((False,), (False,))
    for base in ("vecmode", "gymnasium"):
        collector = TransitionCollector(make_envs(base, mode, lengths, truncate))
        collector.reset(seed=0)
        collector.step(np.zeros(2, dtype=np.int64))
        obs, infos = collector.reset(options={"reset_mask": [False, False]})
        assert obs is collector.obs and infos == {} == collector.reset_infos
        assert collector.cut.tolist() == [False, False]
        t = collector.step(np.zeros(2, dtype=np.int64))
        assert t.valid.all(), base
        assert [decode(o) for o in t.next_obs] == [(0, 0, 2), (1, 0, 2)], base
        collector.close()


@pytest.mark.parametrize("base", ["vecmode", "gymnasium"])
@pytest.mark.parametrize("mask", [True, False], ids=["masked", "full"])
def test_a_reset_after_an_end_clears_next_step_s_pending_reset(base, mask):
    """NEXT_STEP: a sub-env that ended and is then reset by the caller (with a
    mask or fully) makes a real transition on the next step, not a reset step."""
    collector = TransitionCollector(
        make_envs(base, AutoresetMode.NEXT_STEP, ((1,), (5,)), ((False,), (False,)))
    )
    collector.reset(seed=0)
    t = collector.step(np.zeros(2, dtype=np.int64))
    assert t.terminations.tolist() == [True, False]
    options = {"reset_mask": np.array([True, False])} if mask else None
    collector.reset(options=options)
    t = collector.step(np.zeros(2, dtype=np.int64))
    assert t.valid.tolist() == [True, True]
    assert decode(t.obs[0]) == (0, 1, 0) and decode(t.next_obs[0]) == (0, 1, 1)
    collector.close()


def test_invalid_rows_are_only_next_step_reset_steps():
    """The Boundary rows the collector marks: NEXT_STEP's step after an end."""
    for mode in MODES:
        collector = TransitionCollector(
            make_envs("vecmode", mode, ((1,),), ((False,),))
        )
        collector.reset(seed=0)
        valid = [bool(collector.step(np.zeros(1, np.int64)).valid[0]) for _ in range(4)]
        assert valid == (
            [True, False, True, False]
            if mode is AutoresetMode.NEXT_STEP
            else [True] * 4
        )


# --------------------------------------------------------------------- errors
def test_step_before_reset_is_a_clear_error_and_changes_nothing():
    envs = make_envs("vecmode", AutoresetMode.DISABLED)
    collector = TransitionCollector(envs)
    with pytest.raises(ResetNeeded, match="before reset") as caught:
        collector.step(np.zeros(N, dtype=np.int64))
    assert str(caught.value) == vecmode.transitions.NOT_RESET
    with pytest.raises(ResetNeeded) as caught:
        collector.obs  # noqa: B018
    assert str(caught.value) == vecmode.transitions.NOT_RESET
    with pytest.raises(ResetNeeded, match="full"):
        collector.reset(options={"reset_mask": np.ones(N, dtype=bool)})
    collector.reset(seed=0)
    with pytest.raises(TypeError, match=re.escape("`dtype=np.bool_`")):
        collector.reset(options={"reset_mask": np.ones(N, dtype=int)})
    with pytest.raises(ValueError, match="shape"):
        collector.reset(options={"reset_mask": np.ones(N + 1, dtype=bool)})
    t = collector.step(np.zeros(N, dtype=np.int64))
    assert [decode(o) for o in t.next_obs] == [(i, 0, 1) for i in range(N)]
    collector.close()


@pytest.mark.slow
def test_checks_raise_under_python_O():
    code = (
        "import numpy as np, vecmode\n"
        "from gymnasium.error import ResetNeeded\n"
        "from vecmode.transitions import TransitionCollector\n"
        "c = TransitionCollector(vecmode.make_vec('CartPole-v1', num_envs=2, "
        "vectorization_mode='sync'))\n"
        "try:\n"
        "    c.step(np.zeros(2, dtype=np.int64))\n"
        "except ResetNeeded:\n"
        "    print('raised')\n"
    )
    out = subprocess.run(
        [sys.executable, "-O", "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out == "raised\n"


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_bad_actions_are_the_env_s_error_and_the_collector_goes_on(mode):
    collector = TransitionCollector(make_envs("vecmode", mode, ((5,),) * N))
    collector.reset(seed=0)
    collector.step(np.zeros(N, dtype=np.int64))
    before = collector.obs
    with pytest.raises(ValueError, match="batch of 4"):
        collector.step(np.zeros(N + 1, dtype=np.int64))
    assert collector.obs is before
    t = collector.step(np.zeros(N, dtype=np.int64))
    assert t.obs is before
    assert [decode(o) for o in t.next_obs] == [(i, 0, 2) for i in range(N)]
    collector.close()


class _ScalesItsAction(gym.Env):
    observation_space = action_space = gym.spaces.Box(-9, 9, (1,), np.float32)

    def reset(self, *, seed=None, options=None):
        return np.zeros(1, np.float32), {}

    def step(self, action):
        action *= 10  # in place: a view of its row on a sync core
        return np.zeros(1, np.float32), float(action[0]), False, False, {}


@pytest.mark.parametrize("core", ["SyncVectorEnv", "AsyncVectorEnv"])
def test_the_actions_kept_are_those_given_whatever_a_sub_env_writes(core):
    """On the sync core, a sub-env that scaled its action in place rewrote the
    stored ``actions`` (the collector stepped with its own copy); now neither
    they nor the caller's change."""
    envs = vecmode.with_autoreset(
        getattr(vecmode, core)([_ScalesItsAction] * 2), "SameStep"
    )
    with TransitionCollector(envs) as collector:
        collector.reset(seed=0)
        given = np.array([[0.5], [0.25]], np.float32)
        t = collector.step(given)
        assert t.actions.ravel().tolist() == given.ravel().tolist() == [0.5, 0.25]
        assert t.rewards.tolist() == [5.0, 2.5]


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_a_failed_step_of_an_env_that_tracks_no_loss_needs_a_reset(mode):
    """Gymnasium's sync env steps its sub-envs one by one: when it raises (here at
    the actions, after sub-envs 0-2 stepped), what they hold is unknown. The
    collector used to go on and return a transition that never happened."""
    collector = TransitionCollector(make_envs("gymnasium", mode, ((5,),) * N))
    collector.reset(seed=0)
    collector.step(np.zeros(N, dtype=np.int64))
    with pytest.raises(ValueError):
        collector.step(np.zeros(N + 1, dtype=np.int64))
    with pytest.raises(ResetNeeded) as caught:
        collector.step(np.zeros(N, dtype=np.int64))
    assert str(caught.value) == vecmode.transitions.call_failed_message("step")
    collector.reset(seed=1)  # (each sub-env's second episode)
    t = collector.step(np.zeros(N, dtype=np.int64))
    assert [decode(o) for o in t.next_obs] == [(i, 1, 1) for i in range(N)]
    collector.close()


class FailSecondReset(gym.Wrapper):
    """A sub-env whose second reset raises."""

    def __init__(self, env):
        super().__init__(env)
        self.resets = 0

    def reset(self, **kwargs):
        self.resets += 1
        if self.resets == 2:
            raise RuntimeError("reset failed")
        return self.env.reset(**kwargs)


@pytest.mark.parametrize("where", ["a layer", "a sub-env"])
def test_a_failed_reset_inside_step_keeps_the_stepped_observations(where):
    """DISABLED's own reset of the ended sub-envs raising (a layer refusing, or a
    sub-env's reset raising): the step's observations are kept, the core refuses
    to step what is not reset, and a masked reset of those goes on. The collector
    used to refuse everything but a full reset, cutting every other episode."""
    lengths = ((2, 3), (5,), (5,), (5,))
    wrappers = (FailSecondReset,) if where == "a sub-env" else ()
    fns = scheduled_env_fns(N, lengths, ((False,),) * N, wrappers=wrappers)
    core = vecmode.SyncVectorEnv(fns)
    envs = RecordResets(vecmode.with_autoreset(core, AutoresetMode.DISABLED))
    collector = TransitionCollector(envs)
    collector.reset(seed=0)
    collector.step(np.zeros(N, dtype=np.int64))
    envs.fail_masked = where == "a layer"
    with pytest.raises(RuntimeError, match="reset failed"):
        collector.step(np.zeros(N, dtype=np.int64))  # sub-env 0's episode ends
    assert [decode(o) for o in collector.obs] == [(i, 0, 2) for i in range(N)]
    with pytest.raises(vecmode.EpisodeEndedError, match=r"sub-env\(s\) 0 "):
        collector.step(np.zeros(N, dtype=np.int64))
    assert [decode(o) for o in collector.obs] == [(i, 0, 2) for i in range(N)]
    envs.fail_masked = False
    collector.reset(options={"reset_mask": core.awaiting_reset})
    assert not collector.cut.any()  # (sub-env 0's episode ended: nothing cut)
    t = collector.step(np.zeros(N, dtype=np.int64))
    assert [decode(o) for o in t.next_obs] == [(0, 1, 1)] + [
        (i, 0, 3) for i in (1, 2, 3)
    ]
    assert t.valid.all()


def test_a_layer_failing_after_the_env_s_reset_needs_a_full_reset():
    """The env did reset the ended sub-env: the step's observation of it is no
    longer what it holds (kept, the next transition would join two episodes)."""
    fns = scheduled_env_fns(N, ((2, 3), (5,), (5,), (5,)), ((False,),) * N)
    envs = RecordResets(vecmode.with_autoreset(vecmode.SyncVectorEnv(fns), "Disabled"))
    collector = TransitionCollector(envs)
    collector.reset(seed=0)
    collector.step(np.zeros(N, dtype=np.int64))
    envs.fail_after = True
    with pytest.raises(RuntimeError, match="after the env's"):
        collector.step(np.zeros(N, dtype=np.int64))
    with pytest.raises(ResetNeeded, match=r"last step\(\)"):
        collector.step(np.zeros(N, dtype=np.int64))
    with pytest.raises(RuntimeError, match="after the env's"):
        collector.reset(seed=1)  # (a reset that ran: the collector is blocked)
    envs.fail_after = False
    with pytest.raises(ResetNeeded, match=r"last reset\(\)"):
        collector.step(np.zeros(N, dtype=np.int64))


class FailAfterStep(gym.vector.VectorWrapper):
    """Raises after the env below stepped."""

    def step(self, actions):
        self.env.step(actions)
        raise RuntimeError("failed after the env's step")


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_a_layer_failing_after_the_env_s_step_needs_a_reset(mode):
    """The env stepped every sub-env: kept, the old observations would join the
    transition before to the one after (over vecmode's cores it went on)."""
    core = vecmode.SyncVectorEnv(scheduled_env_fns(N, ((9,),) * N, ((False,),) * N))
    envs = vecmode.with_autoreset(core, mode)
    collector = TransitionCollector(envs)
    collector.reset(seed=0)
    collector.envs = FailAfterStep(envs)  # (built under it: no undeclared layer)
    with pytest.raises(RuntimeError, match="after the env's step"):
        collector.step(np.zeros(N, dtype=np.int64))
    collector.envs = envs
    with pytest.raises(ResetNeeded, match=r"last step\(\)"):
        collector.step(np.zeros(N, dtype=np.int64))


def test_a_reset_failing_midway_says_so():
    """A sub-env raising in a full reset over vecmode's core: the collector is
    blocked, saying the reset raised (it said calls were made behind its back)."""
    fns = scheduled_env_fns(N, wrappers=(FailSecondReset,))
    envs = vecmode.with_autoreset(vecmode.SyncVectorEnv(fns), "Disabled")
    collector = TransitionCollector(envs)
    collector.reset(seed=0)
    with pytest.raises(RuntimeError, match="reset failed"):
        collector.reset(seed=1)
    with pytest.raises(ResetNeeded, match=r"raised during the TransitionCollector's"):
        collector.step(np.zeros(N, dtype=np.int64))


@pytest.mark.parametrize("core", ["sync", "async"])
@pytest.mark.parametrize("seed", [-5, "abc", [1, 2]])
def test_a_reset_refused_before_it_ran_keeps_the_collector(core, seed):
    """A wrong seed is refused before any sub-env is reset: the collector steps
    on from where it was (it used to take the refusal for a failure midway)."""
    envs = make_envs("vecmode" if core == "sync" else "vecmode-async", MODES[2])
    with TransitionCollector(envs) as collector:
        collector.reset(seed=0)
        before = collector.obs
        with pytest.raises(vecmode.errors.SeedError):
            collector.reset(seed=seed)
        assert collector.obs is before
        t = collector.step(np.zeros(N, dtype=np.int64))
        assert [decode(o) for o in t.next_obs] == [(i, 0, 1) for i in range(N)]


class Undeclared(gym.vector.VectorWrapper):
    """Hides the mode of a NEXT_STEP env."""

    def __init__(self, env):
        super().__init__(env)
        self.metadata = {k: v for k, v in env.metadata.items() if k != "autoreset_mode"}


def test_undeclared_mode_warns_and_assumes_next_step():
    envs = Undeclared(make_envs("gymnasium", AutoresetMode.NEXT_STEP))
    with pytest.warns(vecmode.UndeclaredModeWarning, match="TransitionCollector") as w:
        collector = TransitionCollector(envs)
    assert w[0].filename == __file__
    assert collector.mode is AutoresetMode.NEXT_STEP
    queues = queues_for(N)
    run = Run(collector, queues)
    assert_ground_truth(run, LENGTHS, TRUNCATE, queues)
    collector.close()


def test_undeclared_mode_is_an_error_under_strict():
    envs = Undeclared(make_envs("gymnasium", AutoresetMode.NEXT_STEP))
    with vecmode.strict(), pytest.raises(vecmode.IncompatibleModeError, match="strict"):
        TransitionCollector(envs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with vecmode.strict(False), pytest.raises(vecmode.UndeclaredModeWarning):
            TransitionCollector(envs)
    envs.close()


def test_not_a_vector_env():
    with pytest.raises(TypeError, match="VectorEnv"):
        TransitionCollector(gym.make("CartPole-v1"))


# ----------------------------------------------------------------- attributes
def test_attributes_and_closing():
    envs = make_envs("vecmode", AutoresetMode.SAME_STEP)
    with TransitionCollector(envs) as collector:
        assert collector.envs is envs
        assert collector.num_envs == N
        assert collector.mode is AutoresetMode.SAME_STEP
        assert collector.single_observation_space == envs.single_observation_space
        assert collector.single_action_space == envs.single_action_space
        assert collector.observation_space == envs.observation_space
        assert collector.action_space == envs.action_space
        assert repr(collector).startswith("TransitionCollector(<SameStepAutoreset")
        assert repr(collector).endswith("mode=SameStep)")
    assert envs.unwrapped.closed


def test_same_step_infos_are_returned_unchanged():
    collector = TransitionCollector(make_envs("vecmode", AutoresetMode.SAME_STEP))
    collector.reset(seed=0)
    for _ in range(4):
        t = collector.step(np.zeros(N, dtype=np.int64))
        if "final_obs" in t.infos:
            break
    rows = np.flatnonzero(t.infos["_final_obs"])
    assert len(rows)
    for i in rows:
        # the env's final_obs entry is untouched and equals next_obs's row
        np.testing.assert_array_equal(t.infos["final_obs"][i], t.next_obs[i])
        assert decode(t.obs[i])[1] == decode(t.next_obs[i])[1]
        assert decode(collector.obs[i]) == (i, decode(t.next_obs[i])[1] + 1, 0)


def test_a_stack_that_is_not_ok_warns_and_one_that_is_does_not():
    """The collector reads transitions: over a stack check_stack finds wrong
    (Gymnasium's NormalizeReward in SameStep), it says so with the report."""
    import gymnasium.wrappers.vector as gwv

    envs = make_envs("vecmode", AutoresetMode.SAME_STEP)
    with pytest.warns(vecmode.IncompatibleModeWarning, match="NormalizeReward"):
        TransitionCollector(gwv.NormalizeReward(envs)).close()
    with warnings.catch_warnings():
        warnings.simplefilter("error", vecmode.IncompatibleModeWarning)
        envs = make_envs("vecmode", AutoresetMode.SAME_STEP)
        TransitionCollector(vecmode.wrappers.NormalizeReward(envs)).close()


class _Scale(gym.vector.VectorWrapper):
    """An undeclared layer that scales the observations but not final_obs."""

    def reset(self, **kwargs: Any) -> Any:
        obs, infos = self.env.reset(**kwargs)
        return obs * 100, infos

    def step(self, actions: Any) -> Any:
        obs, *rest = self.env.step(actions)
        return (obs * 100, *rest)


def test_an_undeclared_layer_over_same_step_warns_that_next_obs_may_be_wrong():
    """SameStep's final observations are in the infos, which an undeclared layer
    may leave alone: the collector's next_obs then mixes scaled and unscaled
    observations. It said nothing (check_stack's report is ok)."""
    envs = make_envs("vecmode", AutoresetMode.SAME_STEP)
    with pytest.warns(vecmode.IncompatibleModeWarning) as got:
        collector = TransitionCollector(_Scale(envs))
    text = " ".join(str(got[0].message).split())
    assert "undeclared layers over a SameStep env (layer 2 _Scale)" in text
    assert "info['final_obs']" in text
    assert "`vecmode conform tests.test_transition_collector:_Scale --modes" in text
    collector.reset(seed=0)
    t = collector.step(np.zeros(N, dtype=np.int64))
    while not t.infos.get("_final_obs", np.zeros(N)).any():
        t = collector.step(np.zeros(N, dtype=np.int64))
    # what the warning is about: the ended row's next_obs unscaled, obs scaled
    ended = np.flatnonzero(t.infos["_final_obs"])[-1]
    index, episode, step = decode(t.next_obs[ended])
    assert index == ended
    assert decode(t.obs[ended] / 100) == (ended, episode, step - 1)
    collector.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error", vecmode.IncompatibleModeWarning)
        for mode in (AutoresetMode.NEXT_STEP, AutoresetMode.DISABLED):
            TransitionCollector(_Scale(make_envs("vecmode", mode))).close()
        # under the SameStep policy, it wraps the Disabled core
        base = vecmode.SyncVectorEnv(scheduled_env_fns(N))
        over = vecmode.with_autoreset(_Scale(base), "SameStep")
        TransitionCollector(over).close()
        # Gymnasium's reward and action wrappers change no observation
        reward = type("Tenth", (gym.vector.VectorRewardWrapper,), {"rewards": abs})
        TransitionCollector(reward(make_envs("vecmode", "SameStep"))).close()
        vecmode.register(_Scale, vecmode.MODES)  # declared: the user vouches
        try:
            TransitionCollector(_Scale(make_envs("vecmode", "SameStep"))).close()
        finally:
            vecmode.unregister(_Scale)


def test_a_stack_refused_for_its_array_library_says_so():
    """A NumPy-only wrapper over torch batches: the warning named only the mode."""
    import gymnasium.wrappers.vector as gwv

    torch = pytest.importorskip("torch")
    base = vecmode.testing.BatchedCartPole(2, xp=torch)
    envs = gwv.RecordEpisodeStatistics(vecmode.with_autoreset(base, "SameStep"))
    library = "autoreset mode or its batches' array library"
    with pytest.warns(vecmode.IncompatibleModeWarning, match=library) as got:
        TransitionCollector(envs).close()
    assert "refused over torch batches" in str(got[0].message)
    with pytest.raises(vecmode.IncompatibleModeError, match=library):
        vecmode.assert_compatible(envs)


def test_a_closed_collector_steps_no_more():
    """Over Gymnasium's env it went on stepping the closed env."""
    collector = TransitionCollector(make_envs("gymnasium", AutoresetMode.SAME_STEP))
    collector.reset(seed=0)
    collector.close()
    with pytest.raises(ClosedEnvironmentError, match="TransitionCollector is closed"):
        collector.step(np.zeros(N, dtype=np.int64))  # (ResetNeeded; reset()'s is this)
    with pytest.raises(ClosedEnvironmentError):
        collector.reset(seed=0)


@pytest.mark.parametrize("base", ["vecmode", "gymnasium"])
@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_cut_names_the_episodes_a_reset_cut_short(base, mode):
    """A reset of sub-envs mid-episode leaves no flag on their last transition;
    ``cut`` names them (the docs' GAE summed advantages across the cut). A
    sub-env whose episode ended, or that made no real transition since its
    start, is not cut; nor is any after a full reset with nothing stepped."""
    envs = make_envs(base, mode, lengths=[(2,), (50,), (50,)])
    actions = np.zeros(3, dtype=np.int64)
    with TransitionCollector(envs) as collector:
        collector.reset(seed=0)
        assert collector.cut.tolist() == [False] * 3
        for _ in range(2):  # sub-env 0's episode ends at the 2nd step
            t = collector.step(actions)
        assert (t.terminations | t.truncations).tolist() == [True, False, False]
        # sub-env 0: ended (NextStep: pending) or started anew; 1: mid-episode
        collector.reset(options={"reset_mask": np.array([True, True, False])})
        assert collector.cut.tolist() == [False, True, False]
        collector.step(actions)  # sub-env 0: one step into its 2-step episode
        collector.reset(seed=1)  # everyone with a transition since its start
        assert collector.cut.tolist() == [True, True, True]
        collector.reset(seed=2)
        assert collector.cut.tolist() == [False] * 3


@given(
    mode=st.sampled_from(MODES),
    calls=st.lists(
        st.one_of(st.just("step"), st.lists(st.booleans(), min_size=N, max_size=N)),
        min_size=1,
        max_size=25,
    ),
)
@settings(max_examples=30)
def test_cut_follows_the_transitions_under_random_resets(mode, calls):
    """``cut`` after any reset is what the transitions say: the masked sub-envs
    whose last valid transition since their episode began did not end it."""
    with TransitionCollector(make_envs("vecmode", mode)) as collector:
        collector.reset(seed=0)
        open_ = np.zeros(N, dtype=bool)  # a valid transition, the episode going on
        for call in calls:
            if call == "step":
                t = collector.step(np.zeros(N, dtype=np.int64))
                ended = t.terminations | t.truncations
                open_ = np.where(t.valid, ~ended, open_ & ~ended)
                continue
            mask = np.array(call)
            if not mask.any():
                continue
            collector.reset(options={"reset_mask": mask})
            assert collector.cut.tolist() == (open_ & mask).tolist()
            open_ &= ~mask
        collector.reset(seed=1)
        assert collector.cut.tolist() == open_.tolist()


@pytest.mark.parametrize("library", ["numpy", "torch"])
@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_a_transition_is_not_changed_through_the_caller_s_buffers(mode, library):
    """An action buffer refilled, or a valid mask written into (torch's cannot
    be read-only), changes no other transition."""
    envs = vecmode.make_vec(
        "CartPole-v1", 3, "sync", autoreset_mode=mode, max_episode_steps=2
    )
    if library == "torch":
        torch = pytest.importorskip("torch")
        envs = vecmode.wrappers.NumpyToTorch(envs)
        buffer = torch.zeros(3, dtype=torch.int64)
    else:
        buffer = np.zeros(3, dtype=np.int64)
    with TransitionCollector(envs) as collector:
        collector.reset(seed=0)
        ts = []
        for k in range(5):
            buffer[:] = k % 2
            ts.append(collector.step(buffer))
            if library == "torch" and k == 0:
                ts[0].valid[1] = False  # (NumPy's valid is read-only)
    assert [np.asarray(t.actions).tolist() for t in ts] == [
        [k % 2] * 3 for k in range(5)
    ]
    first = [True, library == "numpy", True]
    reset_step = mode is AutoresetMode.NEXT_STEP  # the third call, after the ends
    assert [np.asarray(t.valid).tolist() for t in ts] == [first] + [
        [not (reset_step and k == 2)] * 3 for k in range(1, 5)
    ]


@pytest.mark.parametrize("core", ["sync", "async"])
@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_calls_behind_the_collector_s_back_are_refused(mode, core):
    """An evaluation on the training env (a reset or step not through the
    collector) leaves the collector's observations stale: a full reset goes on."""
    envs = vecmode.make_vec(
        "CartPole-v1", 2, core, autoreset_mode=mode, max_episode_steps=2
    )
    with TransitionCollector(envs) as collector:
        collector.reset(seed=0)
        envs.call("get_wrapper_attr", "spec")  # (neither steps nor resets)
        envs.get_attr("np_random")
        for _ in range(3):  # (Disabled: the collector's own masked resets)
            collector.step(np.array([1, 1]))
        for behind in (lambda: envs.reset(seed=1), lambda: envs.step([0, 0])):
            behind()
            with pytest.raises(ResetNeeded, match="without the TransitionCollector"):
                collector.step(np.array([1, 1]))
            with pytest.raises(ResetNeeded, match="cannot follow calls made without"):
                collector.reset(options={"reset_mask": np.array([True, False])})
            obs, _ = collector.reset(seed=2)
            assert collector.step(np.array([0, 0])).obs is obs


def test_an_async_env_broken_midway_is_named_not_a_reset():
    """Ctrl-C inside the collector's masked reset breaks the async core: the
    collector says so, rather than send the user to collector.reset()."""
    envs = vecmode.make_vec(
        "CartPole-v1", 2, "async", autoreset_mode="Disabled", max_episode_steps=1
    )
    with TransitionCollector(envs) as collector:
        collector.reset(seed=0)
        core = envs.unwrapped

        def interrupted(**kwargs):
            core._pool.broken = "reset was interrupted by KeyboardInterrupt"
            raise KeyboardInterrupt

        collector.envs.reset = interrupted
        with pytest.raises(KeyboardInterrupt):
            collector.step(np.array([0, 1]))  # (both ended: a masked reset)
        with pytest.raises(vecmode.errors.WorkerError, match="cannot be used any"):
            collector.step(np.array([0, 1]))
