"""The thin core: the batched primitive, DISABLED checks, input validation."""

from __future__ import annotations

import copy
import functools
import pathlib
import pickle
import re
import subprocess
import sys
import textwrap
import traceback
import typing

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vecmode
from tests.helpers import (
    RaisesIn,
    ScheduledEnv,
    UserFault,
    assert_same,
    faulty_fns,
    scheduled_fns,
    space_fns,
)
from vecmode import (
    AutoresetMode,
    EpisodeEndedError,
    IncompatibleModeError,
    errors,
)
from vecmode.core import Command
from vecmode.modes import same_step_infos

ROOT = pathlib.Path(__file__).resolve().parents[2]


def core(num_envs=3, **kwargs):
    lengths = [(2,), (3,), (5,)][:num_envs] + [(4,)] * max(0, num_envs - 3)
    return vecmode.SyncVectorEnv(scheduled_fns(num_envs, lengths=lengths), **kwargs)


def test_core_is_a_disabled_gymnasium_sync_vector_env():
    envs = core()
    assert isinstance(envs, gym.vector.SyncVectorEnv)
    assert isinstance(envs, vecmode.core.VectorCore)
    assert envs.metadata["autoreset_mode"] is AutoresetMode.DISABLED
    assert vecmode.mode_of(envs) is AutoresetMode.DISABLED
    assert len(envs.envs) == 3
    envs.close()


def test_core_refuses_another_mode_and_says_how_to_get_it():
    with pytest.raises(IncompatibleModeError) as info:
        vecmode.SyncVectorEnv(scheduled_fns(2), autoreset_mode="SameStep")
    message = str(info.value)
    assert "SyncVectorEnv" in message and "SameStep" in message
    assert "with_autoreset" in message and "make_vec" in message
    assert isinstance(info.value, ValueError)
    vecmode.SyncVectorEnv(scheduled_fns(2), autoreset_mode="Disabled").close()


def test_bad_observation_mode():
    with pytest.raises(ValueError, match="observation_mode"):
        vecmode.SyncVectorEnv(scheduled_fns(2), observation_mode="mixed")


# ------------------------------------------------------------- the primitive
def test_execute_runs_one_command_per_sub_env():
    envs = core()
    obs0, _ = envs.reset(seed=0)
    obs, rewards, terminations, truncations, infos, ended, finals = envs.execute(
        [Command.STEP, Command.KEEP, Command.RESET], np.array([2, 2, 2])
    )
    assert ended == [] and finals == []
    # sub-env 0 stepped: t=1, reward = action + 0.5 * t
    assert obs[0].tolist() == [0, 0, 1] and rewards[0] == 2.5
    # sub-env 1 kept: same observation as before, reward 0, no info
    assert obs[1].tolist() == obs0[1].tolist() and rewards[1] == 0.0
    # sub-env 2 reset: episode 1, step 0
    assert obs[2].tolist() == [2, 1, 0] and rewards[2] == 0.0
    assert infos["_step"].tolist() == [True, False, False]
    assert infos["_episode_index"].tolist() == [False, False, True]
    assert not terminations.any() and not truncations.any()
    envs.close()


def test_execute_step_then_reset_matches_same_step_output():
    envs = core()
    envs.reset(seed=0)
    envs.execute([Command.STEP] * 3, np.zeros(3, dtype=int))
    executed = envs.execute(np.full(3, Command.STEP_THEN_RESET), np.zeros(3, dtype=int))
    # sub-env 0 has episodes of 2 steps (the first truncated): it ended and was
    # reset in the same call; its last observation and info are in the record
    assert executed.truncations.tolist() == [True, False, False]
    assert not executed.terminations.any()
    assert executed.ended == [0] and [i for i, _, _ in executed.finals] == [0]
    _, final_obs, final_info = executed.finals[0]
    assert final_obs.tolist() == [0, 0, 2] and final_info["step"] == 2
    assert executed.observations[0].tolist() == [0, 1, 0]
    assert "final_obs" not in executed.infos  # no mode's layout: the record's
    assert envs.awaiting_reset.tolist() == [False, False, False]
    # SAME_STEP's layout is built from the record, by the boundary module
    infos = same_step_infos(executed.infos, executed.finals, 3, envs._add_info)
    assert infos["_final_obs"].tolist() == [True, False, False]
    assert infos["final_obs"][0].tolist() == [0, 0, 2]
    assert infos["final_info"]["step"][0] == 2
    envs.close()


@pytest.mark.parametrize(
    ("commands", "message"),
    [
        ([Command.STEP, Command.STEP], "commands must be a sequence of 3"),
        ([1, 1, 7], "not a vecmode.core.Command"),
        (np.ones((3, 1), dtype=int), "got shape (3, 1)"),
    ],
)
def test_execute_rejects_bad_commands(commands, message):
    envs = core()
    envs.reset(seed=0)
    with pytest.raises(ValueError) as info:
        envs.execute(commands, np.zeros(3, dtype=int))
    assert message in str(info.value)
    envs.close()


# ------------------------------------------------------------- DISABLED checks
def test_stepping_an_ended_sub_env_raises_before_anything_is_stepped():
    envs = core()
    envs.reset(seed=0)
    actions = np.zeros(3, dtype=int)
    envs.step(actions)
    _, _, terminations, truncations, _ = envs.step(actions)  # sub-env 0 ends (len 2)
    assert np.logical_or(terminations, truncations).tolist() == [True, False, False]
    assert envs.awaiting_reset.tolist() == [True, False, False]
    steps_before = [env.t for env in envs.envs]
    with pytest.raises(AssertionError) as info:  # Gymnasium's sync env asserts
        envs.step(actions)
    assert isinstance(info.value, EpisodeEndedError) and info.value.indices == (0,)
    assert "sub-env(s) 0 " in str(info.value) and "reset_mask" in str(info.value)
    assert [env.t for env in envs.envs] == steps_before, "something was stepped"
    # the env is still usable: reset the ended one and go on
    obs, _ = envs.reset(options={"reset_mask": np.array([True, False, False])})
    assert obs[0].tolist() == [0, 1, 0]
    envs.step(actions)
    envs.close()


def test_episode_ended_error_names_every_ended_sub_env():
    envs = vecmode.SyncVectorEnv(scheduled_fns(4, lengths=[(1,)] * 4))
    envs.reset(seed=0)
    envs.step(np.zeros(4, dtype=int))
    with pytest.raises(EpisodeEndedError) as info:
        envs.execute(
            [Command.STEP, Command.RESET, Command.STEP_THEN_RESET, Command.KEEP],
            np.zeros(4, dtype=int),
        )
    assert info.value.indices == (0, 2)
    envs.close()


@pytest.mark.slow
def test_episode_ended_error_is_raised_under_python_O():
    code = textwrap.dedent(
        """
        import numpy as np, gymnasium as gym, vecmode
        envs = vecmode.SyncVectorEnv([lambda: gym.make("CartPole-v1", max_episode_steps=1)])
        envs.reset(seed=0)
        envs.step(np.array([0]))
        try:
            envs.step(np.array([0]))
        except vecmode.EpisodeEndedError as error:
            print("raised", error.indices)
        try:
            envs.reset(options={"reset_mask": np.array([1])})
        except TypeError:
            print("mask checked")
        """
    )
    out = subprocess.run(
        [sys.executable, "-O", "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.split("\n")[:2] == ["raised (0,)", "mask checked"], out.stderr


# ------------------------------------------------------------------ reset_mask
@pytest.mark.parametrize(
    ("mask", "error", "text"),
    [
        (np.array([1, 0, 1]), TypeError, "must have `dtype=np.bool_`, got int64"),
        (np.array([True, False]), ValueError, "must have shape `(3,)`, got (2,)"),
        (np.ones((3, 1), dtype=bool), ValueError, "shape `(3,)`, got (3, 1)"),
        ("yes", TypeError, "must be a numpy array, got <class 'str'>"),
        ([1, 0, 0], TypeError, "`dtype=np.bool_`"),
    ],
)
def test_bad_reset_mask_is_a_clear_error_and_leaves_the_env_usable(mask, error, text):
    envs = core()
    envs.reset(seed=0)
    envs.step(np.zeros(3, dtype=int))
    with pytest.raises(error) as info:
        envs.reset(options={"reset_mask": mask})
    assert text in str(info.value) and "reset_mask" in str(info.value)
    envs.step(np.zeros(3, dtype=int))
    envs.close()


def test_reset_mask_as_a_list_of_bools_is_accepted():
    envs = core()
    envs.reset(seed=0)
    _, infos = envs.reset(options={"reset_mask": [False, True, False]})
    assert infos["_episode_index"].tolist() == [False, True, False]
    envs.close()


def test_all_false_mask_is_a_no_op():
    envs = core()
    obs, _ = envs.reset(seed=0)
    envs.step(np.zeros(3, dtype=int))
    before = [(env.t, env.resets) for env in envs.envs]
    last_obs = envs.execute([Command.KEEP] * 3)[0]
    obs, infos = envs.reset(options={"reset_mask": np.zeros(3, dtype=bool)})
    assert infos == {}
    np.testing.assert_array_equal(obs, last_obs)
    assert [(env.t, env.resets) for env in envs.envs] == before
    envs.close()


def test_options_are_not_mutated_and_reach_the_masked_sub_envs():
    envs = core()
    envs.reset(seed=0)
    mask = np.array([True, False, True])
    options = {"reset_mask": mask, "tag": "x"}
    snapshot = dict(options)
    _, infos = envs.reset(options=options)
    assert options.keys() == snapshot.keys() and options["reset_mask"] is mask
    assert infos["_options"].tolist() == [True, False, True]
    assert infos["options"]["tag"][0] == "x"
    assert infos["options"]["_tag"].tolist() == [True, False, True]
    # a full reset passes each sub-env its own copy of the options
    options = {"tag": "y"}
    envs.reset(options=options)
    assert options == {"tag": "y"}
    envs.close()


@pytest.mark.parametrize("core_class", [vecmode.SyncVectorEnv, vecmode.AsyncVectorEnv])
def test_a_masked_reset_with_nothing_but_the_mask_passes_no_options(core_class):
    """Gymnasium passes what is left of the caller's dict, {}; vecmode passes
    None, as an autoreset does (documented): a sub-env whose reset takes no
    options works (tests/cores/test_runner.py)."""

    class Options(gym.Env):
        observation_space = gym.spaces.Box(-1, 1, (1,), np.float32)
        action_space = gym.spaces.Discrete(2)

        def reset(self, *, seed=None, options=None):
            return np.zeros(1, np.float32), {"got": repr(options)}

    def got(envs):
        envs.reset(seed=0)
        return envs.reset(options={"reset_mask": np.array([True, False])})[1]["got"]

    theirs = gym.vector.SyncVectorEnv([Options] * 2, autoreset_mode="Disabled")
    ours = core_class([Options] * 2)
    assert got(theirs).tolist() == ["{}", None]
    assert got(ours).tolist() == ["None", None]
    theirs.close()
    ours.close()


def test_sub_envs_cannot_mutate_the_callers_options():
    class Popper(ScheduledEnv):
        def reset(self, *, seed=None, options=None):
            if options:
                options.pop("tag", None)
            return super().reset(seed=seed, options=options)

    envs = vecmode.SyncVectorEnv([lambda: Popper(0), lambda: Popper(1)])
    options = {"tag": "z"}
    envs.reset(options=options)
    assert options == {"tag": "z"}
    envs.close()


# -------------------------------------------------------------- actions, seeds
@pytest.mark.parametrize(
    "actions",
    [np.zeros(2, dtype=int), np.zeros(4, dtype=int), np.int64(0), [0, 0], None],
    ids=["short", "long", "scalar", "short-list", "none"],
)
def test_wrong_action_batch_is_a_clear_value_error(actions):
    envs = core()
    envs.reset(seed=0)
    before = [env.t for env in envs.envs]
    with pytest.raises(ValueError) as info:
        envs.step(actions)
    assert "batch of 3 actions" in str(info.value)
    assert [env.t for env in envs.envs] == before
    envs.step(np.zeros(3, dtype=int))
    envs.close()


def test_wrong_dict_action_batch_is_a_clear_value_error():
    class DictActions(ScheduledEnv):
        def __init__(self, index=0):
            super().__init__(index)
            self.action_space = gym.spaces.Dict(
                {"a": gym.spaces.Discrete(2), "b": gym.spaces.Box(-1, 1, (2,))}
            )

        def step(self, action):
            return super().step(action["a"])

    envs = vecmode.SyncVectorEnv([lambda: DictActions(0), lambda: DictActions(1)])
    envs.reset(seed=0)
    with pytest.raises(ValueError, match="batch of 2 actions"):
        envs.step({"a": np.zeros(2, dtype=int), "b": np.zeros((3, 2))})
    envs.step({"a": np.zeros(2, dtype=int), "b": np.zeros((2, 2))})
    envs.close()


class TupleEcho(gym.Env):
    """Actions of ``Tuple((Discrete(50),) * subspaces)``; a step's observation is
    the action it got; ``steps`` counts them."""

    metadata: typing.ClassVar[dict] = {"render_modes": []}

    def __init__(self, subspaces=2):
        self.action_space = gym.spaces.Tuple([gym.spaces.Discrete(50)] * subspaces)
        self.observation_space = gym.spaces.Box(0, 50, (subspaces,), np.float32)
        self.steps = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(self.observation_space.shape, np.float32), {}

    def step(self, action):
        if action not in self.action_space:
            raise ValueError(f"{action!r} is no action")
        self.steps += 1
        return np.array(action, np.float32), 0.0, False, False, {}


def _tuple_core(layout, num_envs, subspaces):
    fns = [functools.partial(TupleEcho, subspaces)] * num_envs
    if layout == "sync":
        return vecmode.SyncVectorEnv(fns)
    in_parent = num_envs // 2 if layout == "async-parent" else 0
    return vecmode.AsyncVectorEnv(fns, context="fork", in_parent=in_parent)


def _actions(num_envs, subspaces):
    """One action per sub-env, all different: sub-env i's is (i*k, ..., i*k+k-1)."""
    return [tuple(range(i * subspaces, (i + 1) * subspaces)) for i in range(num_envs)]


@pytest.mark.parametrize("layout", ["sync", "async", "async-parent"])
@pytest.mark.parametrize("num_envs", [2, 3], ids=["2 subspaces, 2 envs", "3 envs"])
def test_a_list_for_a_tuple_action_space_is_refused_in_every_core(layout, num_envs):
    """Row 2 of issue 34: a list of one action per sub-env, with as many sub-envs
    as subspaces, stepped sub-env 0 with (1, 3) and sub-env 1 with (2, 4) (as
    Gymnasium does). Every core refuses it before anything steps, naming what
    was given and the batched form; the form it gives steps each sub-env right."""
    envs = _tuple_core(layout, num_envs, 2)
    envs.reset(seed=0)
    per_sub_env = _actions(num_envs, 2)
    with pytest.raises(errors.ActionBatchError) as info:
        envs.step(per_sub_env)
    message = str(info.value)
    space = envs.single_action_space
    assert (
        f"actions must be a tuple of 2 batches, one per subspace of {space}, as "
        f"env.action_space.sample() returns, got list {per_sub_env!r} (a list is "
        f"refused: one of actions, one per sub-env, would step them transposed"
    ) in message
    assert "nothing was stepped" in message
    assert "tuple(np.array(part) for part in zip(*actions))" in message
    assert list(envs.get_attr("steps")) == [0] * num_envs
    actions = tuple(np.array(part) for part in zip(*per_sub_env, strict=True))
    assert envs.action_space.contains(actions)
    assert envs.step(actions)[0].tolist() == [list(a) for a in per_sub_env]
    envs.close()


@given(st.integers(1, 4), st.integers(1, 4))
@settings(max_examples=40, deadline=None)
def test_a_tuple_spaces_batch_is_a_tuple_of_per_subspace_batches(num_envs, subspaces):
    """Over sub-env and subspace counts (equal ones too): a list is refused,
    whether it holds one action per sub-env or one batch per subspace, with
    nothing stepped; the tuple of per-subspace batches steps each sub-env with
    its own action."""
    envs = vecmode.SyncVectorEnv([functools.partial(TupleEcho, subspaces)] * num_envs)
    envs.reset(seed=0)
    per_sub_env = _actions(num_envs, subspaces)
    per_subspace = [np.array(part) for part in zip(*per_sub_env, strict=True)]
    for given_list in (per_sub_env, per_subspace):
        with pytest.raises(errors.ActionBatchError, match="a list is refused"):
            envs.step(given_list)
    if num_envs != subspaces:  # (equal counts: the batched form's very shape)
        with pytest.raises(errors.ActionBatchError, match=f"{subspaces} batches"):
            envs.step(tuple(per_sub_env))
    assert list(envs.get_attr("steps")) == [0] * num_envs
    assert envs.step(tuple(per_subspace))[0].tolist() == [list(a) for a in per_sub_env]
    envs.close()


def test_a_list_in_a_nested_tuple_space_is_named_where_it_is():
    from vecmode.core import batch_problem

    pair = gym.spaces.Tuple((gym.spaces.Discrete(5), gym.spaces.Discrete(5)))
    space = gym.spaces.Dict(pair=pair, n=gym.spaces.Discrete(5))
    problem = batch_problem(space, {"pair": [(1, 2), (3, 4)], "n": [0, 0]}, 2)
    assert problem.startswith("actions['pair'] must be a tuple of 2 batches")
    assert "got list [(1, 2), (3, 4)] (a list is refused" in problem
    assert "zip(*actions['pair'])" in problem
    fine = {"pair": (np.array([1, 3]), np.array([2, 4])), "n": [0, 0]}
    assert batch_problem(space, fine, 2) is None


def test_seeds():
    envs = core()
    with pytest.raises(ValueError, match="list of 3 seeds"):
        envs.reset(seed=[1, 2])
    envs.reset(seed=[5, None, 7])
    envs.close()
    one = vecmode.SyncVectorEnv([lambda: gym.make("CartPole-v1")] * 2)
    two = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")] * 2)
    assert_same(two.reset(seed=11), one.reset(seed=11))
    assert_same(two.reset(seed=[3, 4]), one.reset(seed=[3, 4]))
    one.close()
    two.close()


# --------------------------------------------------------- the rest of the API
def test_call_get_attr_set_attr_render_close():
    envs = core()
    assert envs.get_attr("index") == (0, 1, 2)
    envs.set_attr("index", [7, 8, 9])
    assert envs.call("_obs")[0].tolist()[0] == 7
    envs.set_attr("index", 4)
    assert envs.get_attr("index") == (4, 4, 4)
    wrapped = vecmode.with_autoreset(envs, "NextStep")
    assert wrapped.get_attr("index") == (4, 4, 4)
    wrapped.set_attr("index", [1, 2, 3])
    assert wrapped.call("_obs")[2].tolist()[0] == 3
    assert wrapped.envs is envs.envs
    assert envs.render() == (None, None, None)
    wrapped.close()
    assert envs.closed
    envs.close()  # idempotent


def test_awaiting_reset_after_full_reset():
    envs = vecmode.SyncVectorEnv(scheduled_fns(2, lengths=[(1,), (1,)]))
    envs.reset(seed=0)
    envs.step(np.zeros(2, dtype=int))
    assert envs.awaiting_reset.all()
    envs.reset()
    assert not envs.awaiting_reset.any()
    envs.close()


def test_no_env_fns_is_a_clear_error_as_in_the_async_core():
    """Gymnasium's SyncVectorEnv([]) fails with an IndexError."""
    with pytest.raises(ValueError, match="at least one function"):
        vecmode.SyncVectorEnv([])


def test_the_same_env_object_from_two_env_fns_is_refused():
    """SB3's DummyVecEnv refuses it (its issue #1151); Gymnasium's SyncVectorEnv
    takes it and steps the one env once per sub-env each step. Nothing the user
    owns is closed."""
    shared = ScheduledEnv(0, (5,))
    closed = []
    shared.close = lambda: closed.append("shared")  # type: ignore[method-assign]
    wrapped = gym.wrappers.TimeLimit(shared, max_episode_steps=9)
    fns = [
        lambda: ScheduledEnv(1),
        lambda: shared,
        lambda: wrapped,  # another wrapper around the same env: the same env
        lambda: ScheduledEnv(3),
        lambda: shared,
    ]
    with pytest.raises(ValueError, match=r"sub-envs 1, 2, 4: ") as info:
        vecmode.SyncVectorEnv(fns)
    assert "Return a new env from each env_fn (e.g. lambda: gym.make(" in str(
        info.value
    )
    assert closed == []
    shared.reset(seed=0)  # still the user's to use
    other = ScheduledEnv(5)
    with pytest.raises(ValueError, match=r"sub-envs 0, 1; 2, 3: "):
        vecmode.SyncVectorEnv([lambda: other] * 2 + [lambda: shared] * 2)
    # a new env from each env_fn: fine
    vecmode.SyncVectorEnv([lambda: ScheduledEnv(0)] * 2).close()


def test_error_messages_are_built_in_one_place():
    assert errors.episode_ended((1, 3)).startswith("sub-env(s) 1, 3 ")


# ----------------------------------------------- input checks, closed envs, faults
@pytest.mark.parametrize("backend", ["sync", "async"])
@pytest.mark.parametrize(
    ("kwargs", "error", "says"),
    [
        ({"options": "foo"}, TypeError, "options must be a dict or None, got str"),
        ({"options": 5}, TypeError, "options must be a dict or None, got int"),
        ({"seed": 1.5}, TypeError, "seed must be an int or None, got float 1.5"),
        ({"seed": "7"}, TypeError, "seed must be an int or None, got str"),
        ({"seed": True}, TypeError, "seed must be an int or None, got bool"),
        ({"seed": [1, 2.5, 3]}, TypeError, "each seed in the list must be an int"),
        (
            {"seed": [1, 2]},
            ValueError,
            "list of 3 seeds (one per sub-env), got a list of 2.",
        ),
        # it said "got a list of 1", and of 3 rows, "each seed ... got ndarray"
        ({"seed": np.array([[1, 2, 3]])}, ValueError, "got a 2-d array (1, 3)."),
        ({"seed": np.ones((3, 1), int)}, ValueError, "got a 2-d array (3, 1)."),
        # Gymnasium's seeding refused them in the sub-envs (all lost)
        ({"seed": -1}, ValueError, "seed must be >= 0"),
        # a 0-d array (or tensor) was "iteration over a 0-d array"
        ({"seed": np.array(3)}, TypeError, "seed must be an int or None, got ndarray"),
        ({"seed": [0, None, -3]}, ValueError, "each seed in the list must be >= 0"),
        # a set has no order: which sub-env got which seed was left to chance
        ({"seed": {3, 1, 2}}, TypeError, "seed must be an int or None, got set"),
    ],
)
def test_bad_seeds_and_options_are_clear_errors_before_anything_runs(
    backend, kwargs, error, says
):
    envs = (
        core()
        if backend == "sync"
        else vecmode.AsyncVectorEnv(scheduled_fns(3), context="fork", num_workers=1)
    )
    envs.reset(seed=0)
    envs.step(np.zeros(3, dtype=int))
    with pytest.raises(error, match=re.escape(says)) as caught:
        envs.reset(**kwargs)
    if "seed" in kwargs:  # every type Gymnasium raises for bad seeds
        for kind in (errors.SeedError, ValueError, TypeError, gym.error.Error):
            assert isinstance(caught.value, kind), kind
    obs, _, *_ = envs.step(np.zeros(3, dtype=int))  # nothing was reset: step 2
    assert obs[:, 2].tolist() == [2, 2, 2]
    envs.close()


def test_numpy_integer_seeds_reach_the_sub_envs_as_ints():
    envs = core()
    seeds = []
    for env in envs.envs:
        original = env.reset

        def reset(*, seed=None, options=None, original=original):
            seeds.append(seed)
            return original(seed=seed, options=options)

        env.reset = reset
    envs.reset(seed=np.arange(3))
    envs.reset(seed=np.int64(10))
    assert seeds == [0, 1, 2, 10, 11, 12]
    assert all(type(seed) is int for seed in seeds)
    envs.close()


def test_a_closed_sync_core_refuses_every_call():
    envs = core()
    envs.reset(seed=0)
    envs.close()
    for call in (
        lambda: envs.step(np.zeros(3, dtype=int)),
        lambda: envs.reset(),
        lambda: envs.execute([Command.STEP] * 3, np.zeros(3, dtype=int)),
        lambda: envs.call("_obs"),
        lambda: envs.get_attr("index"),
        lambda: envs.set_attr("index", 1),
    ):
        with pytest.raises(gym.error.ClosedEnvironmentError, match="was closed"):
            call()
    envs.close()  # idempotent


@pytest.mark.parametrize("name", ["step", "reset", "close"])
def test_call_refuses_what_would_bypass_the_core(name):
    envs = core()
    envs.reset(seed=0)
    with pytest.raises(ValueError, match=f"use the env's own {name}"):
        envs.call(name)
    envs.step(np.zeros(3, dtype=int))  # unchanged, usable
    envs.close()


def test_a_sync_sub_env_fault_names_it_and_its_lost_state_must_be_reset():
    """As in the async core: SubEnvError with the index, method and cause; the
    sub-envs the failed call ran must be reset (the others go on)."""
    envs = vecmode.with_autoreset(
        vecmode.SyncVectorEnv(faulty_fns(4, {2: {"fail_step": 2}})), "NextStep"
    )
    envs.reset(seed=0)
    envs.step(np.zeros(4, dtype=int))
    with pytest.raises(vecmode.SubEnvError) as info:
        envs.step(np.zeros(4, dtype=int))
    error = info.value
    assert (error.index, error.method, error.lost) == (2, "step", (0, 1, 2))
    assert isinstance(error.__cause__, ValueError)
    with pytest.raises(vecmode.EpisodeEndedError, match="lost their state") as ended:
        envs.step(np.zeros(4, dtype=int))
    assert ended.value.indices == (0, 1, 2)
    assert envs.unwrapped.awaiting_reset.tolist() == [True, True, True, False]
    obs, _ = envs.reset(options={"reset_mask": envs.unwrapped.awaiting_reset})
    assert obs[:, 1].tolist() == [1, 1, 1, 0] and obs[3, 2] == 1  # 3 went on
    obs, *_ = envs.step(np.zeros(4, dtype=int))
    assert obs[:, 2].tolist() == [1, 1, 1, 2]
    envs.close()


@pytest.mark.parametrize("backend", ["sync", "async"])
@pytest.mark.parametrize("first", [None, [True, False, False]])
def test_a_step_before_the_first_reset_names_every_sub_env_to_reset(backend, first):
    """Gymnasium's sub-envs raise ResetNeeded (its sync env raises it as it is).
    The sync core said "reset sub-env(s) 0", then 1, then 2, one masked reset at
    a time; now every core names all that need a reset, as ResetNeeded still."""
    fns = [lambda: gym.make("CartPole-v1")] * 3
    if backend == "sync":
        envs = vecmode.SyncVectorEnv(fns)
    else:
        envs = vecmode.AsyncVectorEnv(fns, context="fork", num_workers=2)
    if first is not None:  # a masked reset first: the others still need one
        envs.reset(seed=0, options={"reset_mask": np.array(first)})
    with pytest.raises(gym.error.ResetNeeded) as caught:
        envs.step(np.zeros(3, dtype=int))
    assert caught.value.lost == (0, 1, 2)
    assert "reset sub-env(s) 0, 1, 2 before they are stepped again" in str(caught.value)
    envs.reset(seed=1, options={"reset_mask": envs.awaiting_reset})
    envs.step(np.zeros(3, dtype=int))
    envs.close()


def test_a_failing_close_closes_every_sub_env_and_names_each_failure():
    class CloseFails(ScheduledEnv):
        closed_here = []

        def close(self):
            CloseFails.closed_here.append(self.index)
            if self.index in (0, 2):
                raise RuntimeError(f"close {self.index} failed")

    envs = vecmode.SyncVectorEnv([lambda i=i: CloseFails(i) for i in range(3)])
    with pytest.raises(vecmode.SubEnvError) as info:
        envs.close()
    assert CloseFails.closed_here == [0, 1, 2]
    assert (info.value.index, info.value.method, info.value.others) == (
        0,
        "close",
        (2,),
    )
    assert envs.closed
    with pytest.raises(gym.error.ClosedEnvironmentError):
        envs.reset()
    envs.close()  # no second error


def test_a_ctrl_c_in_a_sub_env_s_close_goes_up_once_the_others_are_closed():
    """The sub-envs after it were left unclosed, the core closed all the same."""

    class Interrupted(ScheduledEnv):
        closed_here = []

        def close(self):
            Interrupted.closed_here.append(self.index)
            if self.index == 1:
                raise KeyboardInterrupt

    envs = vecmode.SyncVectorEnv([lambda i=i: Interrupted(i) for i in range(4)])
    with pytest.raises(KeyboardInterrupt):
        envs.close()
    assert Interrupted.closed_here == [0, 1, 2, 3]
    assert envs.closed
    envs.close()  # nothing left to close
    assert Interrupted.closed_here == [0, 1, 2, 3]


# ------------------------------------------ a sub-env's error, of the original's class
class _QuotedKey(KeyError):
    """A class with its own __new__, __init__, __str__ and __repr__."""

    def __new__(cls, a, b):
        return super().__new__(cls, a)

    def __init__(self, a, b):
        super().__init__(a)
        self.b = b

    def __str__(self):
        return "its own text"

    def __repr__(self):
        return "its own repr"


class _Meta(type):
    """A metaclass of an exception class."""


class _WithMeta(ValueError, metaclass=_Meta):
    pass


class _Refuses(ValueError):
    """A class that refuses subclasses."""

    def __init_subclass__(cls, **kwargs):
        raise TypeError("no subclass of _Refuses")


class _Shadows(ValueError):
    """A class whose property has the name of a SubEnvError attribute."""

    @property
    def index(self):
        return -1


@typing.final
class _Final(ValueError):
    """Final to type checkers only (a subclass made at run time is no error)."""


class _MissingAttribute(AttributeError):
    pass


#: The original classes whose SubEnvError is an instance of them too.
DUAL = [
    ValueError,
    KeyError,
    LookupError,
    gym.error.ResetNeeded,
    gym.error.Error,
    UserFault,
    NotImplementedError,
    RecursionError,
    StopIteration,
    ImportError,
    UnicodeDecodeError,
    _QuotedKey,
    _WithMeta,
    _Final,
]
#: Those whose SubEnvError is a plain one (a RuntimeError, Exception already; an
#: OSError's instances are built by OSError's own __new__; a SyntaxError's
#: traceback shows its own fields, not the message; what cannot be subclassed or
#: shadows an attribute; what the cores never wrap).
PLAIN = [
    RuntimeError,
    Exception,
    OSError,
    FileNotFoundError,
    TimeoutError,
    SyntaxError,
    IndentationError,
    _Refuses,
    _Shadows,
    KeyboardInterrupt,
    SystemExit,
    BaseException,
    errors.SubEnvError,
]
FIELDS = ("index", "method", "exc_type", "message", "worker_traceback", "others")


def _fields(error):
    return [getattr(error, name) for name in (*FIELDS, "lost")]


@pytest.mark.parametrize("original", DUAL + PLAIN, ids=lambda cls: cls.__name__)
def test_a_sub_env_error_is_of_the_original_class_wherever_python_allows(original):
    """Else a plain SubEnvError; either way its message, attributes and repr are
    a plain SubEnvError's (KeyError's __str__ would quote the message)."""
    args = (
        3,
        "step",
        original.__name__,
        "it failed",
        "Traceback (...)\n",
        (4,),
        (3, 4),
    )
    error = errors.sub_env_error_class(original)(*args)
    plain = errors.SubEnvError(*args)
    assert isinstance(error, errors.SubEnvError) and isinstance(error, RuntimeError)
    if original in DUAL:
        assert isinstance(error, original) and type(error) is not errors.SubEnvError
        assert type(error).__qualname__ == f"SubEnvError[{original.__name__}]"
        assert errors.sub_env_error_class(original) is type(error)  # made once
    else:
        assert type(error) is errors.SubEnvError
    assert str(error) == str(plain) == errors.sub_env_failed(*args)
    assert repr(error) == repr(plain) and error.args == plain.args
    assert _fields(error) == _fields(plain)
    shown = traceback.format_exception_only(type(error), error)[-1]
    assert shown.endswith(f"{str(plain).splitlines()[-1]}\n")


def test_a_sub_env_attribute_error_stays_one():
    """By class (a subclass too), or by name alone (a worker's AttributeError that
    could not be unpickled)."""
    by_name = errors.SubEnvError(0, "get_attr('x')", "AttributeError", "no x", "")
    assert type(by_name) is errors.SubEnvAttributeError
    assert errors.sub_env_error_class(AttributeError) is errors.SubEnvAttributeError
    sub = errors.sub_env_error_class(_MissingAttribute)(0, "call", "_M", "", "")
    assert isinstance(sub, errors.SubEnvAttributeError)
    assert isinstance(sub, _MissingAttribute)
    assert type(errors.SubEnvError(0, "call", "ValueError", "", "")) is (
        errors.SubEnvError
    )  # a name alone makes no other class


def _sync_fault(original):
    """The SubEnvError of a sync core whose sub-env 1 raises ``original`` in step."""
    envs = vecmode.SyncVectorEnv([RaisesIn, functools.partial(RaisesIn, original)])
    envs.reset(seed=0)
    with pytest.raises(errors.SubEnvError) as info:
        envs.step(np.zeros(2, dtype=int))
    envs.close()
    return info.value


def test_every_kind_of_sub_env_error_pickles_and_copies_as_it_was():
    """Pickling (every protocol), copy and deepcopy keep the class, the attributes,
    the message and what was added to the error (a note); a class pickling
    cannot name (defined in a function) is pickled as a plain SubEnvError (copies
    keep it). Before, unpickling or copying any SubEnvError raised TypeError."""

    class LocalFault(ValueError):
        pass

    value_error = _sync_fault(ValueError("a bad value"))
    kinds = {
        "plain": _sync_fault(OSError(28, "No space left on device")),
        "attribute": _sync_fault(AttributeError("no such attribute")),
        "attribute, by name": errors.SubEnvError(
            0, "get_attr('x')", "AttributeError", "no x", "Traceback\n", (1,)
        ),
        "ValueError": value_error,
        "KeyError": _sync_fault(KeyError("a key")),
        "ResetNeeded": _sync_fault(gym.error.ResetNeeded("reset first")),
        "UserFault": _sync_fault(UserFault("the user's own")),
        "NotImplementedError": _sync_fault(NotImplementedError("not yet")),
        "nested": _sync_fault(value_error),  # a vecmode env's error, in a sub-env
        "local": _sync_fault(LocalFault("local")),
    }
    assert type(kinds["plain"]) is errors.SubEnvError
    assert type(kinds["attribute"]) is errors.SubEnvAttributeError
    assert type(kinds["nested"]) is type(value_error)  # the same class
    assert type(_sync_fault(ValueError("again"))) is type(value_error)
    assert isinstance(kinds["local"], LocalFault)
    for kind, error in kinds.items():
        if hasattr(error, "add_note"):
            error.add_note("a note")
        else:  # Python 3.10: what add_note stores
            error.__notes__ = ["a note"]
        error.extra = {"nested": [1]}
        clones = [("copy", copy.copy(error)), ("deepcopy", copy.deepcopy(error))]
        for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
            data = pickle.dumps(error, protocol)
            clones.append((f"pickle {protocol}", pickle.loads(data)))
        for how, clone in clones:
            local_pickle = kind == "local" and how.startswith("pickle")
            expected = errors.SubEnvError if local_pickle else type(error)
            assert type(clone) is expected, (kind, how)
            assert _fields(clone) == _fields(error), (kind, how)
            assert str(clone) == str(error) and repr(clone) == repr(error), (kind, how)
            assert clone.args == error.args, (kind, how)
            assert clone.__notes__ == ["a note"], (kind, how)
            assert clone.extra == {"nested": [1]}, (kind, how)
        assert copy.copy(error).extra is error.extra
        assert copy.deepcopy(error).extra is not error.extra


def test_every_vecmode_error_pickles_with_its_fields():
    """The errors with fields of their own (the others take one message) pickle
    and copy back to an equal error: an error crosses processes (Ray, a pool of
    evaluation workers) and is deep-copied with what holds it. Before,
    unpickling an EpisodeEndedError raised ValueError."""
    made = [
        errors.EpisodeEndedError([1, 3]),
        errors.EpisodeEndedError([0], lost=True),
        errors.WorkerError("worker 0 died", lost=[0, 1]),
        errors.WorkerTimeoutError("too slow", lost=[2]),
        errors.InfoBatchError("bad info"),
    ]
    for error in made:
        for clone in (
            pickle.loads(pickle.dumps(error)),
            copy.copy(error),
            copy.deepcopy(error),
        ):
            assert type(clone) is type(error)
            assert str(clone) == str(error) and clone.args == error.args
            assert vars(clone) == vars(error)


def test_a_pickled_sub_env_error_is_of_its_class_in_another_process():
    """The class is made again there (it is no module attribute to import)."""
    error = _sync_fault(KeyError("a key"))
    code = textwrap.dedent(
        """
        import pickle, sys
        import gymnasium, vecmode
        from tests.helpers import UserFault
        for error, kind in zip(pickle.load(sys.stdin.buffer), (KeyError, UserFault)):
            assert isinstance(error, kind) and isinstance(error, vecmode.SubEnvError)
            print(error.index, error.exc_type, error.message)
        """
    )
    both = [error, _sync_fault(UserFault("the user's own"))]
    out = subprocess.run(
        [sys.executable, "-c", code],
        input=pickle.dumps(both),
        capture_output=True,
        cwd=ROOT,
        check=False,
    )
    assert out.stdout.decode().splitlines() == [
        "1 KeyError 'a key'",
        "1 UserFault the user's own",
    ], out.stderr.decode()


# ------------------------------------------------------- one sub-env's row of a batch
class _Custom(gym.spaces.Space):
    """A space Gymnasium knows nothing of: batched as a tuple of samples."""

    def __init__(self) -> None:
        super().__init__(None, None, seed=0)

    def sample(self, mask=None, probability=None):
        return {"id": int(self.np_random.integers(9)), "word": "x" * 2}

    def contains(self, x) -> bool:
        return isinstance(x, dict)


_TEXT = gym.spaces.Text(6, min_length=1, charset="abc")
_ROW_SPACES = {
    "Box": gym.spaces.Box(-1, 1, (2, 3), np.float32),
    "Discrete": gym.spaces.Discrete(4, start=2),
    "MultiDiscrete": gym.spaces.MultiDiscrete([3, 4]),
    "MultiBinary": gym.spaces.MultiBinary((2, 2)),
    "Text": _TEXT,
    "Graph": gym.spaces.Graph(gym.spaces.Box(0, 1, (2,)), gym.spaces.Discrete(3)),
    "Sequence": gym.spaces.Sequence(gym.spaces.Discrete(5)),
    "Sequence(stack)": gym.spaces.Sequence(gym.spaces.Box(0, 1, (2,)), stack=True),
    "OneOf": gym.spaces.OneOf([gym.spaces.Discrete(2), _TEXT]),
    "custom": _Custom(),
    # as many Text subspaces as sub-envs: a tuple of 3 strings either way
    "Tuple(Text x3)": gym.spaces.Tuple((_TEXT, _TEXT, _TEXT)),
    "Tuple(Box, Text)": gym.spaces.Tuple((gym.spaces.Box(0, 1, (2,)), _TEXT)),
    "Dict(Text, Tuple(Discrete, Graph))": gym.spaces.Dict(
        word=_TEXT,
        pair=gym.spaces.Tuple(
            (
                gym.spaces.Discrete(3),
                gym.spaces.Graph(gym.spaces.Box(0, 1, (1,)), None),
            )
        ),
    ),
    "Dict(Dict(Text), Sequence)": gym.spaces.Dict(
        inner=gym.spaces.Dict(word=_TEXT, n=gym.spaces.Discrete(2)),
        seq=gym.spaces.Sequence(_TEXT),
    ),
}


@pytest.mark.parametrize("name", list(_ROW_SPACES))
def test_space_row_is_each_sub_envs_sample_for_every_kind_of_space(name):
    """space_row(space, batch, i) is the i-th sample batched (Gymnasium's
    concatenate): Text, Graph, Sequence and OneOf batches are tuples of samples,
    a Tuple space's batch a tuple of batches, told apart by the space."""
    from gymnasium.vector.utils import concatenate, create_empty_array

    from vecmode.core import space_row
    from vecmode.replay.compare import same

    space = _ROW_SPACES[name]
    space.seed(1)
    samples = [space.sample() for _ in range(3)]
    batch = concatenate(space, samples, create_empty_array(space, 3))
    for i, sample in enumerate(samples):
        row = space_row(space, batch, i)
        assert same(row, sample, strict=False), (i, row, sample)
        assert space.contains(row)


class _SpaceEnv(gym.Env):
    """Observations of ``space``: a seeded sample at every reset."""

    action_space = gym.spaces.Discrete(2)

    def __init__(self, space):
        self.observation_space = space

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.observation_space.seed(seed)
        return self.observation_space.sample(), {}


@pytest.mark.parametrize("core", ["sync", "async"])
@pytest.mark.parametrize("name", list(_ROW_SPACES))
def test_a_masked_reset_before_the_first_reset_batches_every_space(name, core):
    """The rows it leaves out hold the empty batch's row, as a Box batch's
    zeros: a non-Box batch raised Gymnasium's TypeError or ValueError (so
    to_sb3's first reset with options per sub-env failed)."""
    from gymnasium.vector.utils import create_empty_array

    from vecmode.core import space_row
    from vecmode.replay.compare import same

    space = _ROW_SPACES[name]
    fns = [functools.partial(_SpaceEnv, space)] * 3
    envs = (
        vecmode.SyncVectorEnv(fns)
        if core == "sync"
        else vecmode.AsyncVectorEnv(fns, context="fork", shared_memory=False)
    )
    with envs:
        mask = np.array([True, False, True])
        obs, _ = envs.reset(seed=[4, None, 6], options={"reset_mask": mask})
        empty = create_empty_array(space, 3)
        for i, seed in ((0, 4), (2, 6)):
            space.seed(seed)
            assert same(space_row(space, obs, i), space.sample(), strict=False)
        unreset = None if empty is None else space_row(space, empty, 1)  # (custom)
        assert same(space_row(space, obs, 1), unreset, strict=False)
        obs, _ = envs.reset(seed=1)  # then every row its own: sub-env 1 seeded 2
        space.seed(2)
        assert same(space_row(space, obs, 1), space.sample(), strict=False)


def _advance(envs, actions):
    """A step, and in Disabled a masked reset of the sub-envs it ended."""
    result = envs.step(actions)
    ended = np.logical_or(result[2], result[3])
    if vecmode.mode_of(envs) is AutoresetMode.DISABLED and ended.any():
        return result, envs.reset(options={"reset_mask": ended})
    return result, None


@pytest.mark.parametrize("space", ["box", "dict", "discrete", "text"])
@pytest.mark.parametrize("mode", list(AutoresetMode), ids=lambda m: m.value)
@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_a_copied_sync_env_steps_on_its_own_as_gymnasiums_does(space, mode, how):
    """copy.deepcopy (an evaluation env, a checkpoint) or a pickle round trip of
    the sync core: the copy steps as the original would, and neither writes
    into the other's batch (the copy's writer wrote into the original's rows,
    and the copy returned one stale observation every step; pickling failed)."""
    import copy
    import pickle

    def make():
        return vecmode.with_autoreset(vecmode.SyncVectorEnv(space_fns(space)), mode)

    envs, twin = make(), make()
    envs.action_space.seed(0)
    actions = [envs.action_space.sample() for _ in range(9)]
    for each in (envs, twin):
        each.reset(seed=0)
        for k in range(2):
            _advance(each, actions[k])
    clone = (
        copy.deepcopy(envs) if how == "deepcopy" else pickle.loads(pickle.dumps(envs))
    )
    for k in range(2, 9):
        cloned = _advance(clone, actions[k])
        original = _advance(envs, actions[k])
        expected = _advance(twin, actions[k])
        assert_same(expected, cloned, f"the copy, step {k}")
        assert_same(expected, original, f"the original, step {k}")
    for each in (envs, twin, clone):
        each.close()


class _RewardOf(gym.Env):
    """Steps with the reward ``make()`` builds (a number of some type)."""

    observation_space = gym.spaces.Box(-1, 1, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, make):
        self.make = make

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2, np.float32), {}

    def step(self, action):
        return np.zeros(2, np.float32), self.make(), False, False, {}


def _torch_scalar():
    torch = pytest.importorskip("torch")
    return torch.tensor(2.5)


@pytest.mark.parametrize(
    "make",
    [
        lambda: np.int32(3),
        lambda: np.float16(1.5),
        lambda: np.array(0.25),
        _torch_scalar,
    ],
    ids=["np.int32", "np.float16", "0-d array", "0-d tensor"],
)
@pytest.mark.parametrize("core", ["sync", "async"])
def test_a_reward_that_is_one_number_of_any_type_is_accepted(make, core):
    """As Gymnasium's envs accept them (only rewards that are no single number
    are refused)."""
    import functools

    expected = float(make())
    fns = [functools.partial(_RewardOf, make)] * 2
    envs = (
        vecmode.SyncVectorEnv(fns)
        if core == "sync"
        else vecmode.AsyncVectorEnv(fns, context="fork")
    )
    envs.reset(seed=0)
    rewards = envs.step(np.zeros(2, np.int64))[1]
    assert rewards.tolist() == [expected, expected]
    envs.close()


class _Unprintable(ValueError):
    def __str__(self) -> str:
        raise RuntimeError("this __str__ fails on purpose")


@pytest.mark.parametrize("in_worker", [False, True])
def test_an_error_whose_str_raises_is_a_sub_env_error_and_the_env_lives(in_worker):
    """Before, the sync core raised the __str__'s RuntimeError and the async
    worker died: the env was lost."""
    from tests.cores.async_support import make_async

    fns = [RaisesIn, functools.partial(RaisesIn, _Unprintable())]
    envs = make_async(fns) if in_worker else vecmode.SyncVectorEnv(fns)
    envs.reset(seed=0)
    with pytest.raises(errors.SubEnvError) as info:
        envs.step(np.zeros(2, dtype=int))
    assert isinstance(info.value, ValueError) and info.value.index == 1
    assert "raised _Unprintable in step(): <exception str() failed>" in str(info.value)
    envs.reset(seed=0)  # still usable
    envs.close()


class _Built(ScheduledEnv):
    closed: typing.ClassVar[list[int]] = []

    def __init__(self, index: int) -> None:
        if index == 2:
            raise ValueError("this env_fn fails on purpose")
        super().__init__(index)

    def close(self) -> None:
        type(self).closed.append(self.index)


def test_an_env_fn_that_fails_names_its_sub_env_and_closes_those_built():
    """As in the async core; before, the env_fn's own error, and sub-envs 0 and
    1 were left open."""
    with pytest.raises(errors.SubEnvError) as info:
        vecmode.SyncVectorEnv([functools.partial(_Built, i) for i in range(4)])
    assert (info.value.index, info.value.method) == (2, "env_fn")
    assert isinstance(info.value, ValueError)
    assert _Built.closed == [0, 1]
    fns = [functools.partial(_Built, 0)]
    assert vecmode.SyncVectorEnv(fns).env_fns == fns  # the caller's, kept


class _OldGymStep(RaisesIn):
    def step(self, action):  # gym < 0.26: (obs, reward, done, info)
        return np.zeros(2, np.float32), 0.0, False, {}


@pytest.mark.parametrize("in_worker", [False, True])
def test_a_step_of_the_old_gym_api_says_what_step_must_return(in_worker):
    from tests.cores.async_support import make_async

    fns = [RaisesIn, _OldGymStep]
    envs = make_async(fns) if in_worker else vecmode.SyncVectorEnv(fns)
    envs.reset(seed=0)
    with pytest.raises(errors.SubEnvError) as info:
        envs.step(np.zeros(2, dtype=int))
    assert isinstance(info.value, ValueError) and info.value.index == 1
    assert (
        "not enough values to unpack (expected 5, got 4): step() must return (obs, "
        "reward, terminated, truncated, info), Gymnasium's API"
    ) in str(info.value)
    envs.close()
