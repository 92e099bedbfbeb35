"""vecmode.modes over array batches: the boundary view and the final-observation
layouts in the batch's own library, with no host copy."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vecmode
from tests.batched.support import (
    LIBRARIES,
    HostCopyError,
    array_native,
    host,
    make_batched,
    no_host_copies,
    xp_of,
)
from tests.helpers import assert_same
from vecmode import _arrays, modes
from vecmode.wrappers import ObservationWrapper, RewardWrapper, StatefulWrapper


@pytest.mark.parametrize("name", ["torch", "jax"])
def test_the_trap_raises_on_every_host_copy(name: str) -> None:
    xp = xp_of(name)
    x = xp.arange(3.0)
    conversions = [
        lambda v: np.asarray(v),  # looked up at the call, as vecmode does
        lambda v: np.array(v),
        lambda v: v.tolist(),
        lambda v: np.add(v, 1),
        lambda v: np.concatenate([v, v]),
        lambda v: [row for row in v],
        lambda v: np.zeros(3) + v,
    ]
    if name == "torch":
        conversions.append(lambda v: v.numpy())
    with no_host_copies():
        for convert in conversions:
            with pytest.raises(HostCopyError, match="inside a step"):
                convert(x)
        assert bool(xp.any(x > 1)) and int(xp.count_nonzero(x)) == 2  # syncs: fine
        assert float(xp.sum(x)) == 3.0
    assert np.asarray(x).tolist() == [0.0, 1.0, 2.0]  # restored after the block


@pytest.mark.parametrize("name", LIBRARIES)
def test_the_batched_env_steps_inside_the_trap(name: str) -> None:
    envs = make_batched(name, 4, max_episode_steps=3)
    xp = envs.xp
    with no_host_copies():
        envs.reset(seed=0)
        for _ in range(4):
            *_, terms, truncs, _ = envs.step(xp.ones(4, dtype=xp.int64))
            envs.reset(options={"reset_mask": terms | truncs})
    assert envs.metadata["array_namespace"] in ("numpy", "torch", "jax.numpy")
    from vecmode.testing import BatchedCartPole

    named = BatchedCartPole(4, xp=envs.metadata["array_namespace"])  # by its name
    assert named.metadata == envs.metadata and named.xp is xp


@pytest.mark.parametrize("shape", [(4, 1), (3,), ()])
@pytest.mark.parametrize("name", LIBRARIES)
def test_the_batched_env_names_actions_of_another_shape(name, shape) -> None:
    """They failed inside the library (torch: "stack expects each tensor to be
    equal size"), or broadcast silently."""
    envs = make_batched(name, 4)
    envs.reset(seed=0)
    with pytest.raises(ValueError, match=re.escape(f"(4,); got shape {shape}")):
        envs.step(envs.xp.ones(shape, dtype=envs.xp.int64))
    envs.step(envs.xp.ones(4, dtype=envs.xp.int64))  # still usable


def _replay(xp, mode, calls, num_envs):
    """The boundaries a tracker gives for ``calls`` in library ``xp``, as NumPy."""
    from tests.batched.support import host
    from vecmode import modes

    tracker = modes.BoundaryTracker(mode, num_envs)
    out = []
    for kind, first, second in calls:
        with no_host_copies():
            if kind == "reset":
                mask = None if first is None else xp.asarray(first)
                b = tracker.reset(mask, like=xp.zeros((num_envs, 2)))
            else:
                b = tracker.step(xp.asarray(first), xp.asarray(second))
            quiet = b is tracker.quiet
            fields = (b.ended, b.starts, b.real, b.final_in_info, b.needs_reset)
            for field in fields:
                assert type(field) is type(xp.asarray(first or [True]))
                assert tuple(field.shape) == (num_envs,)
        out.append((quiet, [host(f).tolist() for f in fields]))
        out.append(host(tracker.awaiting_reset).tolist())
    return out


flags = st.lists(st.booleans(), min_size=3, max_size=3)
call = st.one_of(
    st.tuples(st.just("step"), flags, flags),
    st.tuples(st.just("reset"), st.one_of(st.none(), flags), st.none()),
)


@pytest.mark.parametrize("name", ["torch", "jax"])
@pytest.mark.parametrize("mode", ["NextStep", "SameStep", "Disabled"])
@given(calls=st.lists(call, min_size=1, max_size=12))
@settings(max_examples=40)
def test_boundaries_are_numpys_in_the_batch_library(name, mode, calls) -> None:
    calls = [("reset", None, None), *calls]
    assert _replay(xp_of(name), mode, calls, 3) == _replay(np, mode, calls, 3)


# --------------------------------------- the base wrappers over array batches
@array_native
class Double(ObservationWrapper):
    # the layout of whatever it wraps (the construction check refuses a dense
    # SameStep env to a wrapper declaring none: the registry's to lift for
    # array-native wrappers, which read both layouts through vecmode.modes)
    final_obs_layout = "dense"

    def observations(self, observations):
        return observations * 2


@array_native
class Negate(RewardWrapper):
    final_obs_layout = "dense"  # as Double's

    def rewards(self, rewards):
        return -rewards


@array_native
class Record(StatefulWrapper):
    """Episode starts, returns and the sum of the observations moved to, per
    sub-env, kept in the batch's library."""

    final_obs_layout = "dense"  # as Double's

    def __init__(self, env):
        super().__init__(env)
        self.starts = self.returns = self.moved = None

    def episode_start(self, observations, mask):
        xp = _arrays.namespace(mask) or np
        add = xp.astype(mask, xp.int64)
        self.starts = add if self.starts is None else self.starts + add

    def transition(self, observations, rewards, terminations, truncations, mask):
        xp = _arrays.namespace(mask) or np
        assert type(mask) is type(rewards) is type(observations)
        real = xp.astype(mask, rewards.dtype)
        moved = xp.sum(observations, axis=1) * real
        self.returns = rewards * real + (0 if self.returns is None else self.returns)
        self.moved = moved + (0 if self.moved is None else self.moved)


def run_stack(name: str, mode: str, n: int, limit: int, steps: int) -> list:
    """Each step's host values through Record(Negate(Double(policy env)))."""
    inner = vecmode.with_autoreset(make_batched(name, n, max_episode_steps=limit), mode)
    envs = Record(Negate(Double(inner)))
    xp = inner.unwrapped.xp
    record = []
    with no_host_copies():
        obs, _ = envs.reset(seed=1)
    for t in range(steps):
        with no_host_copies():
            obs, rewards, terms, truncs, infos = envs.step(xp.asarray([t % 2] * n))
            if mode == "Disabled":
                envs.reset(options={"reset_mask": terms | truncs})
        found = modes.final_observations(infos)
        final = None if found is None else host(found[1])
        if final is not None and final.dtype == object:  # Gymnasium's layout
            final = np.stack([final[i] for i in np.flatnonzero(host(found[0]))])
        elif final is not None:
            final = final[host(found[0])]
        record.append((host(obs), host(rewards), final, host(envs.returns)))
    record.append((host(envs.starts), host(envs.moved)))
    return record


@pytest.mark.parametrize("name", ["torch", "jax"])
@pytest.mark.parametrize("mode", ["SameStep", "Disabled"])
def test_the_base_wrappers_are_numpys_over_array_batches(name, mode) -> None:
    got, expected = run_stack(name, mode, 3, 4, 12), run_stack("numpy", mode, 3, 4, 12)
    for a, b in zip(got, expected, strict=True):
        for x, y in zip(a, b, strict=True):
            if x is None or y is None:
                assert x is y
            else:
                np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-6)
    assert expected[-1][0].tolist() == [4, 4, 4]  # episodes started: 1 + 12 / 4


# ------------------------------------------------ the dense layout's functions
@pytest.mark.parametrize("name", ["torch", "jax"])
def test_the_dense_layout_is_read_merged_and_rewritten_in_the_library(name) -> None:
    xp = xp_of(name)
    obs = xp.reshape(xp.arange(6.0), (3, 2))
    final = obs + 100
    mask = xp.asarray([False, True, True])
    infos = modes.with_finals({}, mask, final, {})
    with no_host_copies():
        found_mask, found = modes.final_observations(infos)
        merged = modes.merge_final_observations(None, obs, infos, mask, "test")
        rewritten = modes.with_final_batch(infos, mask, merged * 2)
        assert (
            modes.final_observations(
                {**infos, "_final_obs": ~xp.ones(3, dtype=xp.bool)}
            )
            is None
        )
    assert found is final and host(found_mask).tolist() == [False, True, True]
    assert host(merged).tolist() == [[0, 1], [102, 103], [104, 105]]
    assert host(rewritten["final_obs"]).tolist() == [[0, 2], [204, 206], [208, 210]]
    assert rewritten["_final_obs"] is mask and "final_obs" in infos  # a new dict
    with pytest.raises(ValueError, match=r"sub-env\(s\) 0, 2 ended .* test"):
        modes.merge_final_observations(
            None, obs, infos, xp.asarray([True, False, True]), "test"
        )


def test_with_final_batch_keeps_gymnasiums_layout_for_numpy() -> None:
    final = np.full(3, None, dtype=object)
    final[1] = np.array([1.0, 2.0])
    infos = modes.with_finals({}, np.array([False, True, False]), final, {})
    out = modes.with_final_batch(
        infos, infos["_final_obs"], np.arange(6.0).reshape(3, 2)
    )
    assert out["final_obs"].dtype == object and out["final_obs"][0] is None
    assert out["final_obs"][1].tolist() == [2.0, 3.0] and final[1].tolist() == [
        1.0,
        2.0,
    ]


@pytest.mark.parametrize("name", ["torch", "jax"])
def test_with_final_batch_writes_dict_and_tuple_rows_into_gymnasiums_layout(name):
    """Gymnasium's object array of final observations under a mask of the
    batch's library: each ended row of a Dict (Tuple) batch becomes a dict
    (tuple) of that row of each part, a copy; the other entries stay None."""
    xp = xp_of(name)
    mask = xp.asarray([False, True, True])
    infos = modes.with_finals({}, mask, np.full(3, None, dtype=object), {})
    for structure in (dict, tuple):
        pos = xp.asarray(np.arange(6.0).reshape(3, 2))
        code = xp.asarray(np.array([7, 8, 9]))
        parts = {"pos": pos, "code": code}
        batch = parts if structure is dict else (pos, code)
        out = modes.with_final_batch(infos, mask, batch)
        assert out["_final_obs"] is mask and out["final_obs"][0] is None
        for i in (1, 2):
            row = {key: part[i] for key, part in parts.items()}
            want = row if structure is dict else (row["pos"], row["code"])
            assert_same(want, out["final_obs"][i], f"final_obs[{i}]")
        if name == "torch":  # copies: the batch written into after leaves them
            pos += 100
            final = out["final_obs"][2]
            final_pos = final["pos"] if structure is dict else final[0]
            assert host(final_pos).tolist() == [4.0, 5.0]


@pytest.mark.parametrize("name", ["torch", "jax"])
def test_a_same_step_policys_infos_merge_the_resets_in_the_ended_rows(name) -> None:
    from vecmode.autoreset.batched import merged_infos

    xp = xp_of(name)
    ended = xp.asarray([True, False, True])
    step = {"t": xp.asarray([1, 2, 3]), "_t": xp.asarray([True, True, False]), "s": 1}
    reset = {"t": xp.asarray([7, 8, 9]), "_t": xp.asarray([True, False, True])}
    with no_host_copies():
        out = merged_infos(step, reset, ended)
    assert host(out["t"]).tolist() == [7, 2, 9]
    assert host(out["_t"]).tolist() == [True, True, True]
    assert out["s"] == 1 and "_s" not in out  # unmasked: as it is
    only = {"u": xp.asarray([5, 5, 5]), "_u": xp.asarray([True, True, True])}
    with no_host_copies():
        out = merged_infos(only, {"r": 4}, ended)
    assert host(out["_u"]).tolist() == [False, True, False] and out["r"] == 4
    assert merged_infos({}, {}, ended) == {}
    keyed = merged_infos({1: xp.asarray([1, 2, 3]), "_1": ended}, {2: 0}, ended)
    assert host(keyed["_1"]).tolist() == [False] * 3 and keyed[2] == 0  # int keys


@pytest.mark.parametrize("name", ["torch", "jax"])
def test_map_infos_converts_the_dense_layout_as_one_batch(name) -> None:
    xp = xp_of(name)
    mask = xp.asarray([True, False])
    infos = modes.with_finals({"k": xp.asarray([1, 2])}, mask, xp.ones((2, 3)), {})
    out = modes.map_infos(
        infos,
        others=lambda d: {k: host(v) for k, v in d.items()},
        observation=host,
        final_info=lambda d: d,
    )
    assert type(out["final_obs"]) is np.ndarray and out["final_obs"].shape == (2, 3)
    for key in ("_final_obs", "_final_info"):
        assert out[key].tolist() == [True, False]
    assert out["k"].tolist() == [1, 2] and out["final_info"] == {}
    back = modes.final_observations(out)
    assert back is not None and back[0].tolist() == [True, False]


@pytest.mark.parametrize("name", LIBRARIES)
def test_the_layout_check_takes_both_layouts_and_no_other(name) -> None:
    xp = xp_of(name)
    expected = np.array([True, False, True])
    dense = modes.with_finals({}, expected, host(xp.ones((3, 2))), {})
    assert modes.final_layout_problem(dense, expected) is None
    rows = np.full(3, None, dtype=object)
    rows[0], rows[2] = np.ones(2), np.ones(2)
    assert modes.final_layout_problem({**dense, "final_obs": rows}, expected) is None
    for wrong in (np.ones((2, 2)), np.full((3, 2), None, dtype=object), 5):
        problem = modes.final_layout_problem({**dense, "final_obs": wrong}, expected)
        assert problem is not None and problem.key == "final_obs"
        assert "or a dense batch" in problem.expected
