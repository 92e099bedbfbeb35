"""Runner.run: each command, what a call returns, how a failing sub-env stops it."""

from __future__ import annotations

import asyncio
import copy
import functools
import pickle

import gymnasium as gym
import numpy as np
import pytest

import vecmode
from vecmode.core import Command
from vecmode.runner import Runner, row_writer

KEEP, STEP, RESET, STEP_THEN_RESET = (int(c) for c in Command)


class Scripted(gym.Env):
    """Observation ``[index, t, resets]``; the episode ends after ``length``
    steps (terminated); every call is recorded in ``calls``."""

    observation_space = gym.spaces.Box(-1e6, 1e6, (3,), np.float32)
    action_space = gym.spaces.Discrete(5)

    def __init__(self, index=0, length=2, fault=None, obs=None, reward=1.0):
        self.index, self.length, self.fault = index, length, fault
        self.odd_obs, self.reward = obs, reward
        self.t = self.resets = 0
        self.calls = []

    def _obs(self):
        return np.array([self.index, self.t, self.resets], dtype=np.float32)

    def reset(self, *, seed=None, options=None):
        self.calls.append(("reset", seed, options))
        if self.fault == "reset":
            raise KeyError("no reset today")
        if options is not None:
            options["touched"] = True  # a sub-env may write into its copy
        self.t, self.resets = 0, self.resets + 1
        return self._obs(), {"reset": self.resets}

    def step(self, action):
        self.calls.append(("step", action))
        if self.fault == "step":
            raise ValueError(f"sub-env {self.index} broke")
        self.t += 1
        obs = self._obs() if self.odd_obs is None else self.odd_obs
        info = {"t": self.t} if self.t % 2 else {}
        return obs, self.reward, self.t >= self.length, False, info


def runner(n=3, first=0, rows=None, **kwargs):
    envs = [Scripted(first + k, **kwargs) for k in range(n)]
    if rows is None:
        rows = np.zeros((n, 3), np.float32)
    return Runner(envs, first, rows=rows), envs, rows


def names(env):
    return [call[0] for call in env.calls]


# ------------------------------------------------------------------ commands
def test_each_command_does_what_it_says_and_nothing_else():
    run, envs, rows = runner(4, first=10)
    options = {"level": 3}
    out = run.run([RESET] * 4, None, [5, 6, 7, 8], options)
    assert [env.calls for env in envs] == [
        [("reset", 5 + k, {"level": 3, "touched": True})] for k in range(4)
    ]
    assert options == {"level": 3}  # each sub-env wrote into a copy of its own
    rows[:] = -1
    out = run.run([KEEP, STEP, RESET, STEP_THEN_RESET], iter([0, 1, 2, 3]))
    assert names(envs[0]) == ["reset"]  # KEEP: untouched, and its row too
    assert rows[0].tolist() == [-1, -1, -1]
    assert envs[1].calls[-1] == ("step", 1)  # its own action
    assert rows[1].tolist() == [11, 1, 1]
    assert envs[2].calls[-1] == ("reset", None, None)  # action 2 skipped
    assert rows[2].tolist() == [12, 0, 2]
    assert envs[3].calls[-1] == ("step", 3)  # not ended: no reset
    assert rows[3].tolist() == [13, 1, 1]
    assert out.rewards == [0.0, 1.0, 0.0, 1.0]
    assert out.terminations == out.truncations == [False] * 4
    assert out.ended == out.finals == []
    assert out.infos == [(11, {"t": 1}), (12, {"reset": 2}), (13, {"t": 1})]
    assert out.failure is None and out.ran == []


def test_a_step_that_ends_the_episode():
    run, envs, rows = runner(3, first=4)
    run.run([RESET] * 3, None, None, None)
    run.run([STEP] * 3, iter([0, 0, 0]))
    out = run.run([STEP, KEEP, STEP_THEN_RESET], iter([1, 1, 1]))
    assert out.ended == [4, 6]  # indices of the vector env
    assert out.terminations == [True, False, True]
    assert out.truncations == [False] * 3
    assert out.rewards == [1.0, 0.0, 1.0]
    # STEP: the last observation stays; STEP_THEN_RESET: reset within the call
    assert rows[0].tolist() == [4, 2, 1]
    assert rows[2].tolist() == [6, 0, 2]
    assert names(envs[2])[-2:] == ["step", "reset"]
    [(index, final_obs, final_info)] = out.finals
    assert (index, final_obs.tolist(), final_info) == (6, [6, 2, 1], {})
    assert out.infos == [(6, {"reset": 2})]  # the reset's info, not the step's


# ------------------------------------------------------------- observations
def test_observations_of_the_rows_kind_are_copied_at_once_and_others_checked():
    run, envs, rows = runner(2)
    out = run.run([RESET, RESET], None, None, None)
    assert rows.tolist() == [[0, 0, 1], [1, 0, 1]]
    envs[1].odd_obs = np.array([7, 8, 9], dtype=np.float64)  # same kind: cast
    out = run.run([STEP, STEP], iter([0, 0]))
    assert out.failure is None
    assert rows.tolist() == [[0, 1, 1], [7, 8, 9]]
    envs[1].odd_obs = np.arange(6, dtype=np.float32)[::2]  # not contiguous
    run.run([STEP, STEP], iter([0, 0]))
    assert rows.tolist() == [[0, 2, 1], [0, 2, 4]]
    envs[1].odd_obs = [3.0, 2.0, 1.0]  # a list: checked, then written
    run.run([STEP, STEP], iter([0, 0]))
    assert rows[1].tolist() == [3, 2, 1]


def test_the_rows_may_go_on_past_the_slice():
    """A worker's rows are the batch from its first sub-env on."""
    batch = np.full((5, 3), -1, np.float32)
    run, _, _ = runner(2, first=1, rows=batch[1:])
    run.run([RESET, RESET], None, None, None)
    assert batch.tolist() == [[-1] * 3, [1, 0, 1], [2, 0, 1], [-1] * 3, [-1] * 3]


@pytest.mark.parametrize(
    ("obs", "error", "says"),
    [
        (np.zeros(4, np.float32), ValueError, "of shape (4,) does not fit"),
        (np.zeros(3, np.complex64), TypeError, "of dtype complex64 does not fit"),
    ],
)
def test_an_observation_that_does_not_fit_is_the_sub_env_s_failure(obs, error, says):
    run, envs, rows = runner(3)
    run.run([RESET] * 3, None, None, None)
    envs[1].odd_obs = obs
    out = run.run([STEP] * 3, iter([0, 0, 0]))
    failure = out.failure
    assert (failure.index, failure.method) == (1, "writing its observation")
    assert isinstance(failure.error, error) and says in str(failure.error)
    assert out.ran == [0]
    assert names(envs[2]) == ["reset"]  # the slice stopped at the fault
    assert rows[0].tolist() == [0, 1, 1]  # what ran before it is written


def test_a_writer_instead_of_rows_gets_every_observation():
    envs = [Scripted(k) for k in range(2)]
    kept = {}
    out = Runner(envs, 0, kept.__setitem__).run([RESET, KEEP], None, None, None)
    assert list(kept) == [0] and kept[0].tolist() == [0, 0, 1]
    assert out.failure is None
    with pytest.raises(TypeError, match="takes write, or rows"):
        Runner(envs, 0)


# ------------------------------------------------------------------ failures
@pytest.mark.parametrize("method", ["step", "reset"])
def test_a_sub_env_that_raises_stops_the_slice_there(method):
    run, envs, _ = runner(4, first=2)
    run.run([RESET] * 4, None, None, None)
    envs[2].fault = method
    out = run.run(
        [STEP, KEEP, STEP if method == "step" else RESET, STEP], iter([0] * 4)
    )
    failure = out.failure
    assert (failure.index, failure.method) == (4, method)
    assert type(failure.error) is (ValueError if method == "step" else KeyError)
    assert f"in {method}" in failure.traceback  # the sub-env's own frame
    assert out.ran == [2]  # KEEP did not run
    assert names(envs[3]) == ["reset"]
    error = failure.as_error(lost=[*out.ran, failure.index])
    assert isinstance(error, vecmode.SubEnvError) and error.lost == (2, 4)


@pytest.mark.parametrize("reward", [np.array([1.5]), "abc", None], ids=repr)
def test_a_reward_that_is_not_one_number_is_a_failure(reward):
    run, envs, _ = runner(2)
    run.run([RESET] * 2, None, None, None)
    envs[0].reward = reward
    out = run.run([STEP, STEP], iter([0, 0]))
    assert (out.failure.index, out.failure.method) == (0, "step")
    assert "a reward is one number" in str(out.failure.error)
    assert names(envs[1]) == ["reset"]


class _RaisesBase(Scripted):
    def step(self, action):
        raise self.fault


@pytest.mark.parametrize(
    "error", [GeneratorExit(), asyncio.CancelledError(), KeyboardInterrupt()], ids=repr
)
@pytest.mark.parametrize("passes", [vecmode.runner.IN_PARENT, vecmode.runner.IN_WORKER])
def test_a_base_exception_is_the_sub_env_s_failure_but_ctrl_c_in_the_parent(
    error, passes
):
    """GeneratorExit and the like went up as raised from the sync core and killed
    a worker; KeyboardInterrupt and SystemExit reach the user from the parent."""
    envs = [Scripted(0), _RaisesBase(1, fault=error)]
    run = Runner(envs, 0, rows=np.zeros((2, 3), np.float32), passes=passes)
    run.run([RESET] * 2, None, None, None)
    for call in (
        lambda: run.run([STEP, STEP], iter([0, 0])).failure,
        lambda: run.each("poke", lambda env: env.step(0))[1][0],
    ):
        if isinstance(error, passes):
            with pytest.raises(type(error)):
                call()
            continue
        failure = call()
        assert failure.index == 1 and failure.error is error


class _FlagsOf(Scripted):
    """A Scripted env whose step returns ``flags`` as (terminated, truncated)."""

    def __init__(self, index, flags):
        super().__init__(index, length=100)
        self.flags = flags

    def step(self, action):
        obs, reward, _, _, info = super().step(action)
        return obs, reward, *self.flags, info


#: Flags that are not a plain bool, each read as Gymnasium's sync env stores it
#: (into a bool array): a one-element array (or list) as its element.
ODD_FLAGS = [np.array([True]), [1], [0], np.array([[0]]), 2, None, "", np.array(1.0)]


@pytest.mark.parametrize("flag", ODD_FLAGS, ids=repr)
def test_a_flag_is_read_as_gymnasium_s_sync_env_reads_it(flag):
    """A one-element array broke every core but the sync one (a worker died)."""
    stored = np.zeros(1, np.bool_)
    stored[0] = flag  # what gymnasium.vector.SyncVectorEnv does
    run, _, _ = runner(2)
    run.envs = [_FlagsOf(0, (flag, False)), _FlagsOf(1, (False, flag))]
    run.run([RESET] * 2, None, None, None)
    out = run.run([STEP, STEP], iter([0, 0]))
    assert out.failure is None
    assert out.terminations == [stored[0], False]
    assert out.truncations == [False, stored[0]]
    assert out.ended == ([0, 1] if stored[0] else [])
    assert {type(f) for f in out.terminations + out.truncations} == {bool}


@pytest.mark.parametrize("flag", [np.array([True, True]), np.array([])], ids=repr)
def test_a_flag_that_is_not_one_bool_is_a_failure(flag):
    """(True, np.array([True, True])) was a bare ValueError from the sync core."""
    run, envs, _ = runner(2)
    run.envs = [envs[0], _FlagsOf(1, (True, flag))]
    run.run([RESET] * 2, None, None, None)
    out = run.run([STEP, STEP], iter([0, 0]))
    assert (out.failure.index, out.failure.method) == (1, "step")
    assert str(out.failure.error) == (
        f"step() returned a truncated flag that is not one bool: ndarray {flag!r}; "
        f"truncated is one bool (a Python or NumPy bool): return bool(truncated)"
    )


class _InfoOf(Scripted):
    """A Scripted env whose step (or reset) returns ``info`` as its info."""

    def __init__(self, index, info, method="step", length=2):
        super().__init__(index, length)
        self.bad, self.method = info, method

    def reset(self, *, seed=None, options=None):
        obs, info = super().reset(seed=seed, options=options)
        return obs, self.bad if self.method == "reset" else info

    def step(self, action):
        *result, _ = super().step(action)
        return (*result, self.bad)


@pytest.mark.parametrize(
    "info, shown",
    [
        (["x"], "list ['x']"),
        (None, "NoneType None"),
        ((), "tuple ()"),
        (np.ones(2), "ndarray array([1., 1.])"),
        ("a" * 200, "str '" + "a" * 76 + "..."),  # cut at 80
    ],
    ids=["list", "None", "empty-tuple", "array", "long-str"],
)
@pytest.mark.parametrize("method", ["step", "reset", "step then reset"])
def test_an_info_that_is_not_a_dict_is_the_sub_env_s_failure(info, shown, method):
    """Row 5 of issue 34: named, with the method and what the info was (it was
    a bare AttributeError from Gymnasium's info batching, naming no sub-env; a
    falsy one, None or (), was dropped, and None broke SameStep's final_info)."""
    envs = [Scripted(0), _InfoOf(1, info, method.split()[-1], length=1), Scripted(2)]
    run = Runner(envs, 0, rows=np.zeros((3, 3), np.float32))
    run.run([RESET, RESET if method == "step" else KEEP, RESET])
    command = {"step": STEP, "reset": RESET, "step then reset": STEP_THEN_RESET}
    out = run.run([STEP, command[method], STEP], iter([0, 0, 0]))
    failure = out.failure
    where = "step" if method == "step then reset" else method  # the info's call
    assert (failure.index, failure.method, out.ran) == (1, where, [0])
    assert type(failure.error) is TypeError
    assert str(failure.error) == (
        f"{where}() returned an info that is not a dict: {shown}; it must return "
        f"{vecmode.errors.RETURNS[where]}, Gymnasium's API, its info a dict (return "
        f"{{}} for none)"
    )
    assert out.finals == [] and names(envs[2]) == ["reset"]  # stopped there
    error = failure.as_error(lost=[0, 1])
    assert isinstance(error, vecmode.SubEnvError) and isinstance(error, TypeError)
    assert f"sub-env 1 raised TypeError in {where}()" in str(error)


def test_a_reset_that_returns_only_an_observation_says_what_it_must_return():
    """Its two elements were unpacked as (obs, info): "reset() returned an info
    that is not a dict: float32 np.float32(1.0)" named no API."""
    envs = [Scripted(0)]
    envs[0].reset = lambda: np.ones(2, np.float32)
    out = Runner(envs, 0, rows=np.zeros((1, 3), np.float32)).run([RESET])
    assert "; it must return (obs, info), Gymnasium's API" in str(out.failure.error)


def test_an_info_that_is_a_mapping_is_taken():
    """Gymnasium's batching reads an info's items: any mapping does."""
    from types import MappingProxyType

    envs = [_InfoOf(0, MappingProxyType({"k": 1})), Scripted(1)]
    run = Runner(envs, 0, rows=np.zeros((2, 3), np.float32))
    run.run([RESET, RESET])
    out = run.run([STEP, STEP], iter([0, 0]))
    assert out.failure is None and out.infos[0] == (0, {"k": 1})


class _BadInfoOnce(Scripted):
    """Its ``method``'s second call (step or reset) returns the info ``["x"]``."""

    def __init__(self, index, method):
        super().__init__(index, length=100)
        self.method, self.calls_of = method, 0

    def _info(self, method, info):
        self.calls_of += method == self.method
        return ["x"] if method == self.method and self.calls_of == 2 else info

    def reset(self, *, seed=None, options=None):
        obs, info = super().reset(seed=seed, options=options)
        return obs, self._info("reset", info)

    def step(self, action):
        *result, info = super().step(action)
        return (*result, self._info("step", info))


@pytest.mark.parametrize("layout", ["sync", "async", "async-parent"])
@pytest.mark.parametrize("method", ["step", "reset"])
def test_an_info_that_is_not_a_dict_is_a_sub_env_error_in_every_layout(layout, method):
    """Every layout runs the runner's check: a SubEnvError (and a TypeError)
    naming the sub-env, the call and the info; the sub-env must be reset before
    it steps again, then the env goes on."""
    bad = 3 if layout == "async-parent" else 1  # (sub-envs 2, 3 in the parent)
    fns = [functools.partial(Scripted, k, 100) for k in range(4)]
    fns[bad] = functools.partial(_BadInfoOnce, bad, method)
    if layout == "sync":
        envs = vecmode.SyncVectorEnv(fns)
    else:
        in_parent = 2 if layout == "async-parent" else 0
        envs = vecmode.AsyncVectorEnv(fns, context="fork", in_parent=in_parent)
    actions = np.zeros(4, int)
    envs.reset(seed=0)
    with pytest.raises(vecmode.SubEnvError) as info:
        envs.step(actions)  # its first step (and the first reset) pass
        if method == "reset":
            envs.reset(seed=1)
        else:
            envs.step(actions)
    error = info.value
    assert isinstance(error, TypeError) and (error.index, error.method) == (bad, method)
    assert f"{method}() returned an info that is not a dict: list ['x']" in str(error)
    assert envs.awaiting_reset[bad]
    with pytest.raises(vecmode.EpisodeEndedError):
        envs.step(actions)
    envs.reset(options={"reset_mask": envs.awaiting_reset})
    for _ in range(2):
        envs.step(actions)
    envs.close()


def test_keyboard_interrupt_is_not_a_failure():
    run, envs, _ = runner(2)

    def interrupted(action):
        raise KeyboardInterrupt

    envs[0].step = interrupted
    with pytest.raises(KeyboardInterrupt):
        run.run([STEP, STEP], iter([0, 0]))


# ------------------------------------------------------------------- copies
@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_a_copied_runner_writes_into_its_own_rows(how):
    run, _, rows = runner(2)
    twin = copy.deepcopy(run) if how == "deepcopy" else pickle.loads(pickle.dumps(run))
    twin.run([RESET, RESET], None, None, None)
    assert not rows.any()
    assert twin.rows.tolist() == [[0, 0, 1], [1, 0, 1]]
    twin.envs[0].odd_obs = np.zeros(4, np.float32)  # the copy still checks
    twin.run([RESET, RESET], None, None, None)
    out = twin.run([STEP, STEP], iter([0, 0]))
    assert out.failure is not None and out.failure.index == 0


def test_row_writer_checks_then_writes_a_row():
    rows = np.zeros((3, 2), np.uint8)
    write = row_writer(rows, first=5)
    write(6, np.array([3, 4], np.uint8))
    assert rows.tolist() == [[0, 0], [3, 4], [0, 0]]
    with pytest.raises(TypeError, match="dtype int64 does not fit"):
        write(7, np.array([300, 1]))
    with pytest.raises(ValueError, match=r"shape \(1, 2\) does not fit"):
        write(7, np.zeros((1, 2), np.uint8))


# --------------------------------------------- the core's record of ended episodes
def test_the_core_tracks_the_episodes_each_command_ends_or_clears():
    envs = vecmode.SyncVectorEnv([lambda k=k: Scripted(k, length=1) for k in range(4)])
    envs.reset(seed=0)
    executed = envs.execute([STEP, STEP, STEP_THEN_RESET, KEEP], np.zeros(4, int))
    assert executed.ended == [0, 1, 2]
    # a STEP's end awaits a reset; a STEP_THEN_RESET's was reset within the call
    assert envs.awaiting_reset.tolist() == [True, True, False, False]
    assert envs.ended.count == 2
    with pytest.raises(vecmode.EpisodeEndedError, match=r"sub-env\(s\) 1 "):
        envs.execute([RESET, STEP, STEP, STEP], np.zeros(4, int))
    assert envs.awaiting_reset.tolist() == [True, True, False, False]  # unchanged
    # RESET clears one, KEEP keeps the other; a STEP ends one more
    envs.execute([RESET, KEEP, STEP, KEEP], np.zeros(4, int))
    assert envs.awaiting_reset.tolist() == [False, True, True, False]
    envs.reset(options={"reset_mask": np.array([False, True, True, False])})
    assert not envs.awaiting_reset.any() and envs.ended.count == 0
    envs.close()


def test_a_failed_call_loses_the_sub_envs_it_ran_until_they_are_reset():
    fns = [lambda k=k: Scripted(k, length=9) for k in range(3)]
    envs = vecmode.SyncVectorEnv(fns)
    envs.reset(seed=0)
    envs.envs[1].fault = "step"
    with pytest.raises(vecmode.SubEnvError) as caught:
        envs.step(np.zeros(3, int))
    assert caught.value.lost == (0, 1)
    assert envs.awaiting_reset.tolist() == [True, True, False]
    with pytest.raises(vecmode.EpisodeEndedError, match="state"):
        envs.execute([STEP, RESET, STEP], np.zeros(3, int))
    envs.envs[1].fault = None
    envs.execute([RESET, RESET, STEP], np.zeros(3, int))
    assert not envs.awaiting_reset.any()
    envs.step(np.zeros(3, int))
    envs.close()


class NoOptions(gym.Env):
    """A sub-env whose ``reset`` takes no ``options`` (SB3 supports such envs)."""

    observation_space = gym.spaces.Box(-1, 1, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self):
        self.seeds = []

    def reset(self, seed=None):
        self.seeds.append(seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        return np.zeros(1, np.float32), 1.0, True, False, {}


@pytest.mark.parametrize("mode", ["NextStep", "SameStep", "Disabled"])
def test_seed_and_options_reach_a_sub_env_only_when_given(mode):
    envs = vecmode.with_autoreset(vecmode.SyncVectorEnv([NoOptions] * 2), mode)
    envs.reset()
    envs.reset(seed=3)
    for _ in range(2):  # autoresets (or masked resets) take neither
        _, _, terminations, _, _ = envs.step(np.array([0, 1]))
        if mode == "Disabled":
            envs.reset(options={"reset_mask": terminations})
    subs = envs.unwrapped.envs
    assert subs[0].seeds[:2] == [None, 3] and subs[1].seeds[:2] == [None, 4]
    assert set(subs[0].seeds[2:]) == {None}
    with pytest.raises(TypeError, match="options"):
        envs.reset(options={"level": 1})  # given: passed, and this env refuses it
    envs.close()
