"""vecmode.make_vec mirrors gymnasium.make_vec, in the mode asked for."""

from __future__ import annotations

import inspect
import re
import warnings

import gymnasium as gym
import numpy as np
import pytest

import vecmode
from tests.helpers import ScheduledEnv, assert_same_run, drive, make_script
from vecmode import AutoresetMode, IncompatibleModeError, SameStepAutoreset


@pytest.mark.parametrize("vectorization", ["sync", "async"])
@pytest.mark.parametrize("mode", list(AutoresetMode), ids=lambda m: m.value)
def test_make_vec_equals_gymnasium_make_vec(mode, vectorization):
    """vecmode's sync or async core + policy, equal to Gymnasium's sync env."""
    kwargs = {"num_envs": 3, "max_episode_steps": 8}
    reference = gym.make_vec(
        "CartPole-v1",
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": mode},
        **kwargs,
    )
    ours = vecmode.make_vec(
        "CartPole-v1",
        vectorization_mode=vectorization,
        autoreset_mode=mode.value,
        **kwargs,
    )
    assert vecmode.mode_of(ours) is mode
    assert ours.unwrapped.spec.id == "CartPole-v1"
    assert ours.unwrapped.spec.kwargs["max_episode_steps"] == 8
    # the mode as given (a string here), as Gymnasium's spec keeps it
    assert ours.unwrapped.spec.kwargs["vector_kwargs"] == {"autoreset_mode": mode.value}
    core = vecmode.SyncVectorEnv if vectorization == "sync" else vecmode.AsyncVectorEnv
    assert isinstance(ours.unwrapped, core)
    script = make_script(reference, 30)
    disabled = mode is AutoresetMode.DISABLED
    assert_same_run(drive(reference, script, disabled), drive(ours, script, disabled))
    reference.close()
    ours.close()


def test_default_mode_is_next_step_and_vector_kwargs_may_give_it():
    envs = vecmode.make_vec("CartPole-v1", num_envs=2, vectorization_mode="sync")
    assert vecmode.mode_of(envs) is AutoresetMode.NEXT_STEP
    envs.close()
    envs = vecmode.make_vec(
        "CartPole-v1",
        num_envs=2,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": "SameStep", "copy": False},
    )
    assert vecmode.mode_of(envs) is AutoresetMode.SAME_STEP
    assert envs.unwrapped.copy is False
    envs.close()
    with pytest.raises(ValueError, match="disagree"):
        vecmode.make_vec(
            "CartPole-v1",
            autoreset_mode="Disabled",
            vector_kwargs={"autoreset_mode": "SameStep"},
        )


def test_callable_and_wrappers():
    envs = vecmode.make_vec(
        ScheduledEnv,
        num_envs=2,
        autoreset_mode="SameStep",
        wrappers=[lambda env: gym.wrappers.TransformReward(env, lambda r: 2 * r)],
        lengths=(2,),
    )
    envs.reset(seed=0)
    _, rewards, *_ = envs.step(np.array([1, 1]))
    assert rewards.tolist() == [3.0, 3.0]
    envs.close()


@pytest.mark.parametrize(
    ("wrappers", "got"),
    [
        (
            gym.wrappers.NormalizeReward,
            "NormalizeReward: pass wrappers=[NormalizeReward]",
        ),
        (3, "int 3"),
    ],
)
def test_wrappers_that_are_not_a_sequence_are_refused_saying_so(wrappers, got):
    """A class for the list was "'type' object is not iterable" (Gymnasium's:
    "object of type 'type' has no len()", a TypeError too)."""
    with pytest.raises(TypeError) as caught:
        vecmode.make_vec("CartPole-v1", 2, "sync", wrappers=wrappers)
    assert str(caught.value) == (
        f"wrappers must be a sequence of callables (each wraps an env), got {got}."
    )


def test_vector_entry_point_keeps_its_own_mode():
    envs = vecmode.make_vec("CartPole-v1", num_envs=3, vectorization_mode=None)
    assert type(envs).__name__ == "CartPoleVectorEnv"
    assert vecmode.mode_of(envs) is AutoresetMode.NEXT_STEP
    envs.close()
    envs = vecmode.make_vec(
        "CartPole-v1",
        num_envs=3,
        vectorization_mode="vector_entry_point",
        autoreset_mode="NextStep",
    )
    assert type(envs).__name__ == "CartPoleVectorEnv"
    envs.close()


@pytest.mark.parametrize("mode", ["SameStep", "Disabled"])
def test_vector_entry_point_cannot_be_converted_when_it_ignores_masks(mode):
    """Asked for explicitly, the entry point refuses in the user's terms: what was
    asked, why this env can't, and the one call that works, the mode kept."""
    with pytest.raises(IncompatibleModeError) as info:
        vecmode.make_vec(
            "CartPole-v1",
            num_envs=3,
            vectorization_mode="vector_entry_point",
            autoreset_mode=mode,
        )
    message = str(info.value)
    assert message.startswith(
        f"make_vec('CartPole-v1', vectorization_mode='vector_entry_point') can't "
        f"give autoreset_mode='{mode}': CartPole-v1's vector entry point builds "
        f"CartPoleVectorEnv, which runs NextStep, and CartPoleVectorEnv resets "
        f"every sub-env whatever the mask."
    )
    call = (
        f"vecmode.make_vec('CartPole-v1', num_envs=3, vectorization_mode='sync', "
        f"autoreset_mode='{mode}')"
    )
    assert call in message
    eval(call).close()  # and it works


@pytest.mark.parametrize("mode", ["SameStep", "Disabled"])
def test_a_mode_the_vector_entry_point_cant_give_gets_the_sync_core(mode):
    """``vectorization_mode`` left out: vecmode's sync core, recorded in the spec."""
    envs = vecmode.make_vec("CartPole-v1", num_envs=3, autoreset_mode=mode)
    try:
        assert isinstance(envs.unwrapped, vecmode.SyncVectorEnv)
        assert vecmode.mode_of(envs) is AutoresetMode(mode)
        assert envs.unwrapped.spec.kwargs["vectorization_mode"] == "sync"
        envs.reset(seed=0)
        envs.step(np.zeros(3, dtype=int))
        again = vecmode.make_vec(envs.unwrapped.spec)  # the spec makes it again
        assert isinstance(again.unwrapped, vecmode.SyncVectorEnv)
        assert vecmode.mode_of(again) is AutoresetMode(mode)
        again.close()
    finally:
        envs.close()


def test_vector_entry_point_is_converted_where_exact():
    """An entry point that builds a mask-honouring NEXT_STEP env gets SAME_STEP."""
    gym.register(
        "VecmodeTest-Scheduled-v0",
        entry_point=ScheduledEnv,
        vector_entry_point=lambda num_envs, **kw: gym.vector.SyncVectorEnv(
            [lambda: ScheduledEnv(**kw)] * num_envs
        ),
    )
    try:
        envs = vecmode.make_vec(
            "VecmodeTest-Scheduled-v0",
            num_envs=2,
            vectorization_mode="vector_entry_point",
            autoreset_mode="SameStep",
        )
        assert isinstance(envs, SameStepAutoreset)
        envs.close()
    finally:
        del gym.registry["VecmodeTest-Scheduled-v0"]


def test_an_id_with_only_a_vector_entry_point_gets_advice_that_works():
    """The cores were advised ("This call works: ... 'sync'"), or chosen for the
    user, for an id they cannot build; sync gave Gymnasium's bare error."""
    gym.register(
        "VecmodeTest-VectorOnly-v0",
        vector_entry_point="gymnasium.envs.classic_control.cartpole:CartPoleVectorEnv",
    )
    try:
        with pytest.raises(gym.error.Error, match="It has a vector entry point: "):
            vecmode.make_vec("VecmodeTest-VectorOnly-v0", 2, "sync")
        for vectorization in (None, "vector_entry_point"):
            with pytest.raises(IncompatibleModeError) as info:
                vecmode.make_vec(
                    "VecmodeTest-VectorOnly-v0",
                    2,
                    vectorization_mode=vectorization,
                    autoreset_mode="Disabled",
                )
            message = str(info.value)
            assert "resets every sub-env whatever the mask" in message
            assert "This call works" not in message
        envs = vecmode.make_vec("VecmodeTest-VectorOnly-v0", 2)  # its own mode
        assert vecmode.mode_of(envs) is AutoresetMode.NEXT_STEP
        envs.close()
    finally:
        del gym.registry["VecmodeTest-VectorOnly-v0"]


def test_an_id_with_only_a_same_step_entry_point_is_not_sent_to_the_cores():
    """The policy's refusal advised vecmode.make_vec(..., 'sync') or wrapping
    vecmode.SyncVectorEnv, neither of which can build the env."""
    gym.register(
        "VecmodeTest-SameStepOnly-v0",
        vector_entry_point=lambda num_envs, **kw: gym.vector.SyncVectorEnv(
            [lambda: ScheduledEnv(**kw)] * num_envs, autoreset_mode="SameStep"
        ),
    )
    try:
        for mode, policy, supports in (
            ("Disabled", "DisableAutoreset", "NextStep, Disabled"),
            ("NextStep", "NextStepAutoreset", "Disabled"),
        ):
            with pytest.raises(IncompatibleModeError) as info:
                vecmode.make_vec("VecmodeTest-SameStepOnly-v0", 2, autoreset_mode=mode)
            assert str(info.value) == (
                "make_vec('VecmodeTest-SameStepOnly-v0', vectorization_mode="
                f"'vector_entry_point') can't give autoreset_mode={mode!r}: "
                "VecmodeTest-SameStepOnly-v0's vector entry point builds "
                f"SyncVectorEnv, which runs SameStep, and {policy} cannot wrap an "
                f"env in mode SameStep: it supports {supports} (it has no other "
                f"entry point). Ask for SameStep, or build SyncVectorEnv in {mode} "
                "itself."
            )
    finally:
        del gym.registry["VecmodeTest-SameStepOnly-v0"]


def test_bad_arguments():
    with pytest.raises(
        ValueError,
        match=r"Invalid vectorization mode: 'threads'.*'vector_entry_point', 'ray'\]",
    ):
        vecmode.make_vec("CartPole-v1", vectorization_mode="threads")
    with pytest.raises(ValueError, match="not an autoreset mode"):
        vecmode.make_vec("CartPole-v1", autoreset_mode="Later")
    with pytest.raises(TypeError, match="Invalid id type") as info:
        vecmode.make_vec(42)
    assert isinstance(info.value, gym.error.Error)  # what Gymnasium raises
    with pytest.raises(ValueError, match="needs a registered env id"):
        vecmode.make_vec(ScheduledEnv, vectorization_mode="vector_entry_point")
    with pytest.raises(gym.error.Error):
        vecmode.make_vec("NoSuchEnv-v0")
    # num_envs: Gymnasium's were an IndexError, or a message about env_fns
    for bad, error in ((0, ValueError), (-1, ValueError), (2.0, TypeError)):
        for vectorization in ("sync", "async", "vector_entry_point"):
            with pytest.raises(error, match=r"^num_envs must be"):
                vecmode.make_vec(
                    "CartPole-v1", num_envs=bad, vectorization_mode=vectorization
                )
    # no vector entry point: the id (not the whole spec), and what to use
    with pytest.raises(gym.error.Error) as info:
        vecmode.make_vec("Pendulum-v1", vectorization_mode="vector_entry_point")
    assert str(info.value) == (
        "Cannot create vectorized environment for Pendulum-v1 because it doesn't "
        "have a vector entry point defined. Use vectorization_mode='sync' or "
        "'async' (vecmode's cores, which run every mode)."
    )
    # Gymnasium's AsyncVectorEnv arguments vecmode's has no use for: what instead
    for name, says in (
        ("worker", "takes no worker="),
        ("max_concurrency", "num_workers=2"),
    ):
        with pytest.raises(TypeError, match=re.escape(says)):
            vecmode.make_vec(
                "CartPole-v1",
                vectorization_mode="async",
                vector_kwargs={name: 2 if name == "max_concurrency" else print},
            )


@pytest.mark.parametrize(
    "given", ["SameStep", AutoresetMode.SAME_STEP], ids=["string", "enum"]
)
def test_the_spec_keeps_the_mode_as_given_as_gymnasium_s_does(given):
    """The spec recorded the enum where Gymnasium's keeps the string given."""
    ours, theirs = (
        make(
            "CartPole-v1",
            2,
            vectorization_mode="sync",
            vector_kwargs={"autoreset_mode": given},
        )
        for make in (vecmode.make_vec, gym.make_vec)
    )
    try:
        assert ours.spec.kwargs == theirs.spec.kwargs
        assert type(ours.spec.kwargs["vector_kwargs"]["autoreset_mode"]) is type(given)
    finally:
        ours.close()
        theirs.close()


def test_spec_records_how_the_env_was_made():
    envs = vecmode.make_vec("FrozenLake-v1", num_envs=2, is_slippery=False)
    spec = envs.unwrapped.spec
    assert spec.kwargs["map_name"] == "4x4"  # the registered kwargs are kept
    assert spec.kwargs["is_slippery"] is False
    assert spec.kwargs["num_envs"] == 2 and "vector_kwargs" not in spec.kwargs
    assert gym.spec("FrozenLake-v1").kwargs == {"map_name": "4x4"}  # not mutated
    envs.close()


# ------------------------------------------------- gymnasium.make_vec's contract
def test_signature_is_gymnasiums_plus_autoreset_mode():
    ours = inspect.signature(vecmode.make_vec).parameters
    theirs = inspect.signature(gym.make_vec).parameters
    shared = [name for name in theirs if name != "kwargs"]
    assert list(ours)[: len(shared)] == shared
    for name in shared:
        assert ours[name].kind == theirs[name].kind, name
        assert ours[name].default == theirs[name].default, name
    assert ours["autoreset_mode"].kind is inspect.Parameter.KEYWORD_ONLY
    assert ours["autoreset_mode"].default is None
    assert list(ours)[-1] == "kwargs"


@pytest.mark.parametrize(
    ("env_id", "kwargs"),
    [
        ("CartPole-v1", {}),  # a vector entry point: Gymnasium's default uses it
        ("CartPole-v1", {"vectorization_mode": "sync"}),
        ("FrozenLake-v1", {"is_slippery": False}),  # none: sync
        ("FrozenLake-v1", {"vectorization_mode": "async"}),
        ("Pendulum-v1", {"vector_kwargs": {"autoreset_mode": AutoresetMode.SAME_STEP}}),
        (
            "CartPole-v1",
            {
                "vectorization_mode": "sync",
                "vector_kwargs": {"autoreset_mode": AutoresetMode.DISABLED},
                "max_episode_steps": 5,
            },
        ),
    ],
)
def test_same_env_and_spec_as_gymnasium_make_vec(env_id, kwargs):
    """The same call, keyword for keyword (id= included), makes the same kind of
    env: same class where Gymnasium's own is used, same mode, spaces and spec."""
    reference = gym.make_vec(id=env_id, num_envs=2, **kwargs)
    ours = vecmode.make_vec(id=env_id, num_envs=2, **kwargs)
    try:
        if kwargs.get("vectorization_mode") is None and env_id == "CartPole-v1":
            assert type(ours) is type(reference)  # the entry point, untouched
        else:
            assert isinstance(
                ours.unwrapped, (vecmode.SyncVectorEnv, vecmode.AsyncVectorEnv)
            )
        assert vecmode.mode_of(ours) is vecmode.mode_of(reference)
        assert ours.observation_space == reference.observation_space
        assert ours.action_space == reference.action_space
        assert ours.unwrapped.spec == reference.unwrapped.spec
    finally:
        reference.close()
        ours.close()


@pytest.mark.parametrize("vectorization", ["sync", "async"])
def test_a_vector_envs_spec_makes_it_again(vectorization):
    first = vecmode.make_vec(
        "CartPole-v1",
        num_envs=3,
        vectorization_mode=vectorization,
        autoreset_mode="SameStep",
        max_episode_steps=4,
    )
    again = vecmode.make_vec(first.unwrapped.spec)
    try:
        assert type(again) is type(first) and type(again.unwrapped) is type(
            first.unwrapped
        )
        assert again.num_envs == 3 and vecmode.mode_of(again) is AutoresetMode.SAME_STEP
        assert again.unwrapped.spec == first.unwrapped.spec
        script = make_script(first, 12)
        assert_same_run(drive(first, script, False), drive(again, script, False))
    finally:
        first.close()
        again.close()


# ------------------------------------------------------------- ids, as Gymnasium
def _outcome(make, env_id):
    """What ``make(env_id, ...)`` gives: the spec's id and the warnings, or the
    error's type and message."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            envs = make(env_id, num_envs=1, vectorization_mode="sync")
        except Exception as error:
            return type(error), str(error)
        envs.close()
    said = sorted((w.category.__name__, str(w.message)) for w in caught)
    return envs.unwrapped.spec.id, [s for s in said if "WARN: " in s[1]]


@pytest.mark.parametrize(
    "env_id",
    [
        "CartPole",  # unversioned: a warning, and the latest version
        "CartPole-v0",  # out of date: a deprecation warning
        "CartPole-v9",  # no such version
        "NoSuchEnv-v0",
        "Bad Id!",
        "no_such_module_of_vecmode:CartPole-v1",
        "gymnasium.envs:CartPole-v1",
    ],
)
def test_an_env_id_is_found_as_gymnasium_finds_it(env_id):
    ours, theirs = _outcome(vecmode.make_vec, env_id), _outcome(gym.make_vec, env_id)
    assert ours == theirs
    if env_id == "CartPole":
        assert ours[0] == "CartPole-v1" and "Using the latest" in ours[1][0][1]


def test_a_module_prefix_imports_the_module_that_registers_the_env(
    tmp_path, monkeypatch
):
    (tmp_path / "vecmode_registers_on_import.py").write_text(
        "import gymnasium as gym\n"
        "gym.register('VecmodeImported-v3', entry_point="
        "'gymnasium.envs.classic_control:CartPoleEnv')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        with pytest.warns(UserWarning, match="latest versioned environment"):
            envs = vecmode.make_vec(
                "vecmode_registers_on_import:VecmodeImported",
                num_envs=2,
                vectorization_mode="sync",
            )
        assert envs.unwrapped.spec.id == "VecmodeImported-v3"
        envs.close()
    finally:
        gym.registry.pop("VecmodeImported-v3", None)
    with pytest.raises(ValueError, match="one colon"):
        vecmode.make_vec("a:b:CartPole-v1")


# ------------------------------------------------------ an episode seed schedule
@pytest.mark.parametrize("mode", ["NextStep", "SameStep", "Disabled"])
def test_make_vec_passes_a_seed_schedule_to_the_policy(mode):
    def lengths(envs, steps=60):
        envs.reset()
        out, t = [], np.zeros(2, int)
        for _ in range(steps):
            _, _, terminated, truncated, _ = envs.step(np.array([0, 1]))
            ended = terminated | truncated
            out += [(i, int(t[i])) for i in np.flatnonzero(ended)]
            t = np.where(ended, 0, t + 1)
            if mode == "Disabled" and ended.any():
                envs.reset(options={"reset_mask": ended})
        return out

    def made(seed):
        return vecmode.make_vec(
            "CartPole-v1", 2, "sync", autoreset_mode=mode, episode_seeds=seed
        )

    with made(3) as a, made(3) as b, made(4) as c:
        assert a.schedule is not None
        first = lengths(a)
        assert first == lengths(b) != lengths(c)


def test_make_vec_refuses_a_schedule_over_a_vector_entry_point_asked_for():
    """Chosen for the user, the entry point gives way to a core, which seeds each
    episode; asked for, it is refused. Options alone are refused, not dropped."""
    with pytest.raises(IncompatibleModeError, match="episode_seeds"):
        vecmode.make_vec("CartPole-v1", 2, "vector_entry_point", episode_seeds=0)
    with vecmode.make_vec("CartPole-v1", 2, episode_seeds=0) as envs:
        assert type(envs.unwrapped) is vecmode.SyncVectorEnv and envs.schedule
        assert vecmode.mode_of(envs) is AutoresetMode.NEXT_STEP
    with pytest.raises(TypeError, match="episode_options needs episode_seeds"):
        vecmode.make_vec("CartPole-v1", 2, episode_options=lambda i, k: {})
