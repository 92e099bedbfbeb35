"""The autoreset policies over a DISABLED env of torch or JAX batches: the same
episodes as over NumPy, step for step, in the batch's library, no host copy."""

from __future__ import annotations

import functools
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vecmode
from tests.batched.support import (
    LIBRARIES,
    as_dict_obs,
    host,
    make_batched,
    no_host_copies,
    xp_of,
)
from vecmode import _arrays, _rows, modes
from vecmode.errors import EpisodeEndedError, IncompatibleModeError

ARRAYS = [name for name in LIBRARIES if name != "numpy"]


def finals(infos: dict[str, Any], n: int) -> tuple[list[bool], dict[int, Any]]:
    """The final observations of a step, either layout, as NumPy rows by sub-env."""
    found = modes.final_observations(infos)
    if found is None:
        return [False] * n, {}
    mask, final = host(found[0]), found[1]
    if not (isinstance(final, np.ndarray) and final.dtype == object):
        final = host(final)
    rows = {i: _rows.row_of(final, i) for i in np.flatnonzero(mask).tolist()}
    return mask.tolist(), {
        i: row if isinstance(row, dict) else np.asarray(row) for i, row in rows.items()
    }


def run_same_step(
    name: str, n: int, steps: int, actions: list, limit: int, wrap: Any = None
) -> list:
    """Every step of SAME_STEP over a batched CartPole in library ``name``
    (``wrap``ped)."""
    envs = make_batched(name, n, max_episode_steps=limit)
    xp = envs.xp
    envs = vecmode.with_autoreset(wrap(envs) if wrap else envs, "SameStep")
    record = []
    with no_host_copies():
        obs, _ = envs.reset(seed=3)
    record.append(host(obs))
    for t in range(steps):
        with no_host_copies():
            step = envs.step(xp.asarray(actions[t % len(actions)]))
        obs, rewards, terms, truncs, infos = step
        assert type(terms) is type(_arrays.leaf(obs))  # the batch's library
        record.append(
            (host(obs), host(rewards), host(terms), host(truncs), finals(infos, n))
        )
    return record


def same(first: Any, second: Any) -> None:
    """Equal, to float rounding, whatever the nesting."""
    if isinstance(first, (list, tuple)):
        assert len(first) == len(second)
        for a, b in zip(first, second, strict=True):
            same(a, b)
    elif isinstance(first, dict):
        assert first.keys() == second.keys()
        for key in first:
            same(first[key], second[key])
    else:
        np.testing.assert_allclose(first, second, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", ARRAYS)
@given(
    n=st.integers(1, 5),
    limit=st.integers(1, 12),
    actions=st.lists(
        st.lists(st.integers(0, 1), min_size=5, max_size=5), min_size=1, max_size=6
    ),
)
@settings(max_examples=25)
def test_same_step_is_numpys_in_every_library(name, n, limit, actions) -> None:
    actions = [a[:n] for a in actions]
    got = run_same_step(name, n, 20, actions, limit)
    same(got, run_same_step("numpy", n, 20, actions, limit))


def flags_as(dtype: str) -> Any:
    """A wrap making a batched env's flags 0/1 numbers of ``dtype``, as
    IsaacGym's and Genesis's."""

    class NumberFlags(gym.vector.VectorWrapper):
        def step(self, actions: Any) -> Any:
            obs, rewards, terms, truncs, infos = self.env.step(actions)
            xp = self.env.unwrapped.xp
            number = getattr(xp, dtype)
            return (
                obs,
                rewards,
                xp.astype(terms, number),
                xp.astype(truncs, number),
                infos,
            )

    return NumberFlags


@pytest.mark.parametrize("name", ARRAYS)
@pytest.mark.parametrize("dtype", ["int64", "float32"])
def test_number_flags_are_read_as_bools(name, dtype) -> None:
    """0/1 flags of any number type: the same steps as bool flags, in SameStep,
    in Disabled and under the PPO stack."""
    actions = [[0, 1, 1], [1, 1, 0]]
    wrap = flags_as(dtype)
    same(
        run_same_step(name, 3, 12, actions, 4, wrap=wrap),
        run_same_step(name, 3, 12, actions, 4),
    )
    stacked = functools.partial(vecmode.wrappers.ppo_stack, gamma=0.9)
    same(
        run_same_step(name, 3, 12, actions, 4, wrap=lambda e: stacked(wrap(e))),
        run_same_step(name, 3, 12, actions, 4, wrap=stacked),
    )
    envs = vecmode.DisableAutoreset(wrap(make_batched(name, 3, max_episode_steps=2)))
    xp = envs.unwrapped.xp
    envs.reset(seed=0)
    for _ in range(2):
        *_, terms, truncs, _ = envs.step(xp.asarray([0, 1, 0]))
    assert str(terms.dtype).endswith(dtype) and str(truncs.dtype).endswith(dtype)
    with pytest.raises(EpisodeEndedError, match="0, 1, 2"):
        envs.step(xp.asarray([0, 1, 0]))
    envs.reset(options={"reset_mask": xp.asarray([True, True, True])})
    envs.step(xp.asarray([0, 1, 0]))


@pytest.mark.parametrize("name", LIBRARIES)
def test_same_step_over_dict_observations_is_over_their_arrays(name) -> None:
    """Each key of a Dict observation (IsaacLab's), final observations included,
    as the array it holds; a masked reset keeps the other rows of every key."""
    actions = [[0, 1, 1], [1, 1, 0], [1, 0, 1]]
    got = run_same_step(name, 3, 12, actions, 3, wrap=as_dict_obs)
    plain = run_same_step(name, 3, 12, actions, 3)
    assert any(any(step[4][0]) for step in plain[1:])  # episodes ended
    same([got[0]["policy"], got[0]["pos"]], [plain[0], plain[0][:, :2]])
    for step, want in zip(got[1:], plain[1:], strict=True):
        same([step[0]["policy"], step[0]["pos"]], [want[0], want[0][:, :2]])
        same(step[1:4], want[1:4])
        (mask, finals), (want_mask, want_finals) = step[4], want[4]
        assert mask == want_mask
        same({i: f["policy"] for i, f in finals.items()}, want_finals)
        same(
            {i: f["pos"] for i, f in finals.items()},
            {i: f[:2] for i, f in want_finals.items()},
        )
    envs = vecmode.with_autoreset(
        as_dict_obs(make_batched(name, 3, max_episode_steps=3)), "SameStep"
    )
    obs, _ = envs.reset(seed=0)
    mask = envs.unwrapped.xp.asarray([False, True, False])
    again, _ = envs.reset(options={"reset_mask": mask})
    for key in ("policy", "pos"):
        np.testing.assert_array_equal(host(again[key])[[0, 2]], host(obs[key])[[0, 2]])
    envs.close()


@pytest.mark.parametrize("name", ARRAYS)
def test_same_steps_finals_are_dense_in_the_batch_library(name) -> None:
    envs = vecmode.with_autoreset(
        make_batched(name, 3, max_episode_steps=2), "SameStep"
    )
    xp = envs.env.xp
    envs.reset(seed=0)
    with no_host_copies():
        envs.step(xp.asarray([0, 1, 0]))
        obs, _, _, _, infos = envs.step(xp.asarray([0, 1, 0]))
    assert (
        type(infos["final_obs"]) is type(obs) and infos["final_obs"].shape == obs.shape
    )
    assert type(infos["_final_obs"]) is type(obs) and host(infos["_final_obs"]).all()
    assert infos["final_info"] == {}
    assert vecmode.env_classes.final_obs_layout(envs) == "dense"
    assert not np.allclose(host(infos["final_obs"]), host(obs))  # reset: new starts


def run_disabled(name: str, n: int, limit: int, actions: list, extra: list) -> list:
    """DISABLED through DisableAutoreset, resetting the ended sub-envs and the
    ``extra`` ones after each step."""
    envs = vecmode.DisableAutoreset(make_batched(name, n, max_episode_steps=limit))
    xp = envs.env.xp
    record = []
    with no_host_copies():
        obs, _ = envs.reset(seed=5)
    record.append(host(obs))
    for t, more in enumerate(extra):
        with no_host_copies():
            obs, rewards, terms, truncs, _ = envs.step(
                xp.asarray(actions[t % len(actions)])
            )
            mask = terms | truncs | xp.asarray(more[:n])
            reset_obs, _ = envs.reset(options={"reset_mask": mask})
            assert type(envs.awaiting_reset) is type(obs)
        record.append(
            (host(obs), host(rewards), host(terms), host(truncs), host(reset_obs))
        )
    return record


@pytest.mark.parametrize("name", ARRAYS)
@given(
    n=st.integers(1, 5),
    limit=st.integers(1, 9),
    actions=st.lists(
        st.lists(st.integers(0, 1), min_size=5, max_size=5), min_size=1, max_size=4
    ),
    extra=st.lists(
        st.lists(st.booleans(), min_size=5, max_size=5), min_size=1, max_size=15
    ),
)
@settings(max_examples=25)
def test_disabled_is_numpys_in_every_library(name, n, limit, actions, extra) -> None:
    actions = [a[:n] for a in actions]
    got = run_disabled(name, n, limit, actions, extra)
    same(got, run_disabled("numpy", n, limit, actions, extra))


@pytest.mark.parametrize("name", ARRAYS)
def test_disabled_refuses_to_step_an_ended_sub_env(name) -> None:
    envs = vecmode.with_autoreset(
        make_batched(name, 3, max_episode_steps=1), "Disabled"
    )
    policy = vecmode.DisableAutoreset(envs)
    xp = policy.env.xp
    policy.reset(seed=0)
    with no_host_copies():
        policy.step(xp.asarray([0, 1, 0]))
        policy.reset(options={"reset_mask": xp.asarray([True, False, False])})
    with pytest.raises(EpisodeEndedError, match="1, 2") as raised:
        policy.step(xp.asarray([0, 1, 0]))
    assert raised.value.indices == (1, 2)
    with no_host_copies():
        obs, _ = policy.reset(
            options={"reset_mask": xp.zeros(3, dtype=xp.bool)}
        )  # no-op
        policy.reset(options={"reset_mask": xp.asarray([False, True, True])})
        policy.step(xp.asarray([0, 1, 0]))
    assert type(obs) is type(policy.awaiting_reset)


@pytest.mark.parametrize("name", ARRAYS)
@pytest.mark.parametrize("layer", ["env", "policy", "wrapper"])
def test_a_mask_of_another_array_library_is_refused_naming_both(name, layer):
    """A JAX mask for torch batches failed in torch's asarray ("buffer length");
    a torch mask for JAX batches was taken, by a copy through the host."""
    other = xp_of("jax" if name == "torch" else "torch")
    envs = make_batched(name, 3)
    if layer != "env":
        envs = vecmode.DisableAutoreset(envs)
    if layer == "wrapper":
        envs = vecmode.wrappers.NormalizeObservation(envs)
    envs.reset(seed=0)
    libraries = {"torch": "torch", "jax": "jax.numpy"}
    theirs, ours = libraries[name], libraries["jax" if name == "torch" else "torch"]
    for mask, what in ((other.asarray([1.0, 0.0, 1.0]), f"{ours} array"),
                        (other.asarray([True, False, True]), f"{ours} array"),
                        (True, "bool")):  # fmt: skip
        with pytest.raises(TypeError) as refused:  # the library first, then dtype
            envs.reset(options={"reset_mask": mask})
        assert str(refused.value) == (
            f"`options['reset_mask']` is a {what}, and the env's batches are "
            f"{theirs}: pass a bool array of theirs, or NumPy's."
        )
    obs, _ = envs.reset(options={"reset_mask": np.array([True, False, True])})
    assert type(obs) is type(envs.unwrapped.state)  # NumPy's is taken


@pytest.mark.parametrize("name", ARRAYS)
@pytest.mark.parametrize("layer", ["policy", "wrapper", "stack"])
def test_a_numpy_mask_reaches_the_env_in_its_library_before_a_batch_too(name, layer):
    """Before the first reset no batch shows the library: a NumPy mask reached
    the env as NumPy (a simulator taking its own masks only then failed)."""
    envs, seen = make_batched(name, 3), []
    own_reset = envs.reset

    def reset(**kwargs):
        seen.append((kwargs.get("options") or {}).get("reset_mask"))
        return own_reset(**kwargs)

    envs.reset = reset
    stack = {
        "policy": lambda: vecmode.with_autoreset(envs, "SameStep"),
        "wrapper": lambda: vecmode.wrappers.RecordEpisodeStatistics(envs),
        "stack": lambda: vecmode.wrappers.ppo_stack(
            vecmode.DisableAutoreset(envs), gamma=0.9
        ),
    }[layer]()
    xp = envs.xp
    if layer != "wrapper":  # a no-op before any batch: the env's to answer, not None
        obs, _ = stack.reset(options={"reset_mask": np.zeros(3, dtype=bool)})
        assert type(obs) is type(xp.asarray([0.0]))
        seen.clear()
    for mask in (np.array([True, False, True]), [True, True, False]):
        stack.reset(options={"reset_mask": mask})
        stack.reset(options={"reset_mask": xp.asarray([False, True, False])})
    assert [type(mask) for mask in seen] == [type(xp.asarray([True]))] * 4
    assert [host(mask).tolist() for mask in seen[:2]] == [
        [True, False, True],
        [False, True, False],
    ]


@pytest.mark.parametrize("name", ARRAYS)
def test_a_bad_array_mask_is_refused_with_what_to_pass(name) -> None:
    policy = vecmode.DisableAutoreset(make_batched(name, 3))
    xp = policy.env.xp
    policy.reset(seed=0)
    with pytest.raises(TypeError, match=r"bool array of shape \(3,\).*terminations"):
        policy.reset(options={"reset_mask": xp.asarray([1, 0, 1])})  # as NumPy's
    with pytest.raises(ValueError, match=r"bool array of shape \(3,\).*terminations"):
        policy.reset(options={"reset_mask": xp.asarray([True, False])})
    options = {"reset_mask": xp.asarray([True, False, True])}
    policy.reset(options=options)
    assert list(options) == ["reset_mask"]  # the caller's options untouched


@pytest.mark.parametrize("name", ARRAYS)
@pytest.mark.parametrize("layer", ["policy", "wrapper"])
def test_a_mask_given_as_the_options_is_refused_naming_the_dict(name, layer):
    envs = vecmode.DisableAutoreset(make_batched(name, 2))
    envs = envs if layer == "policy" else vecmode.wrappers.RecordEpisodeStatistics(envs)
    envs.reset(seed=0)
    mask = envs.unwrapped.xp.asarray([True, False])
    with pytest.raises(TypeError, match="options must be a dict or None, got ") as e:
        envs.reset(options=mask)
    assert 'pass e.g. options={"reset_mask": mask}' in str(e.value)
    envs.reset(options={"reset_mask": mask})  # usable


@pytest.mark.parametrize("name", ARRAYS)
def test_next_step_over_an_array_env_stays_refused(name) -> None:
    library = "jax.numpy" if name == "jax" else name
    with pytest.raises(IncompatibleModeError, match="NEXT_STEP must reset") as raised:
        vecmode.with_autoreset(make_batched(name, 2), "NextStep")
    assert f"(Disabled, {library} batches) into NextStep" in str(raised.value)
    assert "with_autoreset(env, 'SameStep') or 'Disabled'" in str(raised.value)
    same_step = vecmode.with_autoreset(make_batched(name, 2), "SameStep")
    with pytest.raises(IncompatibleModeError, match="NEXT_STEP must reset") as raised:
        vecmode.with_autoreset(same_step, "NextStep")
    assert str(raised.value).endswith("Use it in SameStep mode as it is.")


@pytest.mark.parametrize("name", ARRAYS)
def test_a_policy_built_directly_gives_with_autoresets_reason(name) -> None:
    from vecmode.autoreset import DisableAutoreset, NextStepAutoreset

    with pytest.raises(IncompatibleModeError, match="NEXT_STEP must reset") as raised:
        NextStepAutoreset(make_batched(name, 2))  # not "convert it to NumPy"
    assert str(raised.value).startswith("NextStepAutoreset cannot turn Batched")
    assert "with_autoreset(env, 'SameStep') or 'Disabled'" in str(raised.value)
    same_step = vecmode.with_autoreset(make_batched(name, 2), "SameStep")
    with pytest.raises(IncompatibleModeError, match="inside its step") as raised:
        DisableAutoreset(same_step)
    assert "Pass the BatchedCartPole it wraps (Disabled) instead" in str(raised.value)


@pytest.mark.parametrize("name", ARRAYS)
def test_disabled_from_same_step_names_the_env_below(name) -> None:
    same_step = vecmode.with_autoreset(make_batched(name, 2), "SameStep")
    with pytest.raises(IncompatibleModeError, match="inside its step") as raised:
        vecmode.with_autoreset(same_step, "Disabled")
    assert "Pass the BatchedCartPole it wraps (Disabled) instead" in str(raised.value)


@pytest.mark.parametrize("name", ARRAYS)
@pytest.mark.parametrize("given_as", [np.asarray, list])
def test_a_host_mask_keeps_the_record_a_bool_mask_of_the_library(
    name, given_as
) -> None:
    policy = vecmode.DisableAutoreset(make_batched(name, 4, max_episode_steps=1))
    xp = policy.env.xp
    policy.reset(seed=0)
    policy.step(xp.ones(4, dtype=xp.int64))  # every sub-env ends
    policy.reset(options={"reset_mask": given_as([True, True, False, False])})
    awaiting = policy.awaiting_reset
    assert type(awaiting) is type(policy._last_obs) and awaiting.dtype == xp.bool
    assert host(awaiting).tolist() == [False, False, True, True]
    policy.reset(options={"reset_mask": awaiting})  # passed back as a mask
    assert not host(policy.awaiting_reset).any()


@pytest.mark.parametrize("name", ARRAYS)
def test_the_ended_record_clears_a_host_mask_in_its_library(name) -> None:
    xp = xp_of(name)
    tracker = _rows.EndedTracker(3)
    tracker.set(xp.asarray([True, True, False]))
    tracker.update(cleared=np.array([True, False, False]))
    assert type(tracker.mask) is type(xp.asarray([True]))
    assert tracker.mask.dtype == xp.bool and tracker.indices() == [1]


@pytest.mark.parametrize("name", ARRAYS)
def test_the_ended_record_carries_its_pending_resets_into_another_library(name):
    """Switched to another library's masks with sub-envs awaiting a reset, the
    record keeps them, in that library; and back."""
    xp = xp_of(name)
    none = xp.zeros(3, dtype=xp.bool)
    tracker = _rows.EndedTracker(3)
    tracker.update(ended=np.array([True, False, True]))
    tracker.adopt(none)
    assert type(tracker.mask) is type(none) and tracker.mask.dtype == xp.bool
    assert tracker.indices() == [0, 2] and tracker.count == 2
    tracker.update(cleared=xp.asarray([True, False, False]))
    assert tracker.indices() == [2]
    tracker.adopt(_rows.constant_masks(3)[0])
    assert type(tracker.mask) is np.ndarray and tracker.indices() == [2]
    assert tracker.count == 1
    tracker.update(cleared=np.array([False, False, True]))
    tracker.adopt(none)  # nothing pending: the all-False mask itself
    assert tracker.mask is none and tracker.count == 0


@pytest.mark.parametrize("name", ARRAYS)
def test_a_switch_of_library_keeps_the_boundaries_pending_resets(name):
    """A tracker fed NumPy flags, then a torch/JAX reset of sub-env 1 while
    sub-envs 0 and 2 await theirs: they still do, in the new library; a NumPy
    reset of sub-env 0 then leaves 2 awaiting, as in a tracker fed one library."""
    xp = xp_of(name)
    tracker = modes.BoundaryTracker("Disabled", 3)
    tracker.reset(None)
    tracker.step(np.array([True, False, True]), np.zeros(3, dtype=bool))
    tracker.reset(xp.asarray([False, True, False]), like=xp.zeros(3))
    awaiting = tracker.awaiting_reset
    assert type(awaiting) is type(xp.zeros(3))
    assert host(awaiting).tolist() == [True, False, True]
    tracker.reset(np.array([True, False, False]))
    assert tracker.awaiting_reset.tolist() == [False, False, True]


def own_masks_only(name: str, n: int) -> Any:
    """A batched CartPole whose reset refuses masks of another library."""
    from vecmode.testing import BatchedCartPole

    class OwnMasksOnly(BatchedCartPole):
        def reset(self, *, seed: Any = None, options: Any = None) -> Any:
            mask = (options or {}).get("reset_mask")
            if mask is not None and type(mask) is not type(self.state):
                raise TypeError(f"got a {type(mask).__name__} mask")
            return super().reset(seed=seed, options=options)

    return OwnMasksOnly(n, xp=xp_of(name))


HOST_MASK_TAKERS = {
    "DisableAutoreset": vecmode.DisableAutoreset,
    "TransitionCollector": vecmode.TransitionCollector,
    "ClipReward": lambda e: vecmode.wrappers.ClipReward(e, -1, 1),
    "TransformObservation": lambda e: vecmode.wrappers.TransformObservation(
        e, lambda obs: obs * 2
    ),
    "ppo_stack": lambda e: vecmode.wrappers.ppo_stack(e, gamma=0.99),
}


@pytest.mark.parametrize("name", ARRAYS)
@pytest.mark.parametrize("wrap", sorted(HOST_MASK_TAKERS))
@pytest.mark.parametrize("given_as", [np.asarray, list])
def test_a_callers_host_mask_reaches_the_env_in_its_library(name, wrap, given_as):
    """A policy or a wrapper right over a Disabled array env (with_autoreset's
    'Disabled' returns it as it is) hands the env a caller's NumPy or list mask
    in the env's library (the wrappers handed it on as given)."""
    envs = HOST_MASK_TAKERS[wrap](own_masks_only(name, 4))
    first, _ = envs.reset(seed=0)
    mask = given_as(np.array([True, False, True, False]))
    obs, _ = envs.reset(options={"reset_mask": mask})
    assert type(obs) is type(first)


def test_an_array_env_declaring_no_library_is_told_to_declare_it() -> None:
    """Read as NumPy, its flags would make a torch mask the env refuses at the
    first episode end: the first step names the missing metadata key."""
    torch = pytest.importorskip("torch")
    env = make_batched("torch", 4, max_episode_steps=2)
    del env.metadata["array_namespace"]
    envs = vecmode.with_autoreset(env, "SameStep")
    envs.reset(seed=0)
    with pytest.raises(vecmode.ArrayLibraryError) as caught:
        envs.step(torch.ones(4, dtype=torch.int64))
    assert "declares no metadata['array_namespace']" in str(caught.value)
    assert "metadata['array_namespace'] = 'torch'" in str(caught.value)


def test_an_array_env_declaring_numpy_is_told_what_it_declares() -> None:
    torch = pytest.importorskip("torch")
    env = make_batched("torch", 4, max_episode_steps=2)
    env.metadata = {**env.metadata, "array_namespace": "numpy"}
    envs = vecmode.with_autoreset(env, "SameStep")
    envs.reset(seed=0)
    with pytest.raises(vecmode.ArrayLibraryError) as caught:
        envs.step(torch.ones(4, dtype=torch.int64))
    message = str(caught.value)
    assert "returns torch batches but declares 'numpy' in its metadata" in message
    assert "Declare metadata['array_namespace'] = 'torch'" in message


@pytest.mark.parametrize("name", ARRAYS)
def test_numpy_flags_from_an_array_env_are_named(name) -> None:
    """An env of torch or JAX observations returning NumPy flags: a clear error
    (an AttributeError from deep inside before)."""
    env = make_batched(name, 2)
    step = env.step

    def numpy_flags(actions: Any) -> Any:
        obs, rewards, terms, truncs, _ = step(actions)
        return obs, rewards, host(terms), host(truncs), {}

    env.step = numpy_flags
    envs = vecmode.with_autoreset(env, "SameStep")
    envs.reset(seed=0)
    with pytest.raises(
        vecmode.ArrayLibraryError, match="return every batch in the declared library"
    ):
        envs.step(env.xp.asarray([0, 1]))


def _ends_first(name: str) -> Any:
    """A BatchedCartPole whose sub-env 0 alone ends at the second step, with
    ManiSkill's infos: ``success`` masked by an all-True ``_success``."""
    base = make_batched(name, 3, max_episode_steps=99)
    xp, step = base.xp, base.step

    def ending_step(actions: Any) -> Any:
        obs, rewards, terms, _, _ = step(actions)
        truncs = base.steps == xp.asarray([2, 0, 0], dtype=base.steps.dtype)
        everyone = xp.ones(3, dtype=xp.bool)
        episode = {"r": xp.astype(base.steps, xp.float32), "_r": everyone}
        infos = {"success": xp.astype(base.steps, xp.float32), "_success": everyone}
        infos.update(episode=episode, _episode=everyone)
        return obs, rewards, terms & False, truncs, infos

    base.step = ending_step
    return base


@pytest.mark.parametrize("converted", [False, True], ids=["dense", "to-numpy"])
@pytest.mark.parametrize("name", ARRAYS)
def test_final_info_masks_hold_the_ended_rows_alone_as_numpys(name, converted):
    """They were the step's all-True masks over torch/JAX, converted or not."""

    def final_info(library: str, convert: bool = False) -> dict[str, Any]:
        envs = vecmode.with_autoreset(_ends_first(library), "SameStep")
        xp = envs.env.xp
        if convert:
            envs = vecmode.wrappers.ArrayConversion(envs, env_xp=xp, target_xp=np)
            xp = np
        envs.reset(seed=0)
        envs.step(xp.asarray([1, 1, 1]))
        infos = envs.step(xp.asarray([1, 1, 1]))[4]
        return {k: host(v) for k, v in infos["final_info"].items()}

    want, got = final_info("numpy"), final_info(name, converted)
    assert want["_success"].tolist() == [True, False, False]
    for info, key in ((got, "success"), (got["episode"], "r")):
        assert host(info[f"_{key}"]).tolist() == [True, False, False], key
    assert got["success"][0] == want["success"][0] == 2
    assert got["episode"]["r"][0] == want["episode"]["r"][0] == 2


@pytest.mark.parametrize("name", LIBRARIES)
def test_same_step_merges_infos_with_no_mask_row_by_row(name) -> None:
    """Batched simulators' infos have no `_key` masks (ManiSkill's `success`): in
    SameStep, the rows of the sub-envs that ended take the reset's value and the
    others keep the step's (every row was the reset's); a value that is not
    one row per sub-env is the reset's, as before."""
    xp = xp_of(name)
    env = make_batched(name, 3, max_episode_steps=2)
    step0, reset0 = env.step, env.reset

    def step(actions: Any) -> Any:
        x = xp.asarray([1.0, 2.0, 3.0])
        return (*step0(actions)[:4], {"x": x, "g": 1, "log": {"x": x}})

    def reset(**kwargs: Any) -> Any:
        x = xp.asarray([-1.0, -2.0, -3.0])
        return reset0(**kwargs)[0], {"x": x, "g": 2, "log": {"x": x}}

    env.step, env.reset = step, reset
    envs = vecmode.with_autoreset(env, "SameStep")
    envs.reset(seed=0)
    envs.step(xp.asarray([0, 0, 0]))
    envs.reset(options={"reset_mask": np.array([True, False, False])})
    *_, terms, truncs, infos = envs.step(xp.asarray([0, 0, 0]))
    assert host(terms | truncs).tolist() == [False, True, True]
    assert host(infos["x"]).tolist() == [1.0, -2.0, -3.0]
    assert host(infos["log"]["x"]).tolist() == [1.0, -2.0, -3.0]  # nested too
    assert infos["g"] == 2
    assert host(infos["final_info"]["x"])[1:].tolist() == [2.0, 3.0]  # the step's
