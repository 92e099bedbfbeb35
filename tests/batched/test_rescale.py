"""RescaleAction and RescaleObservation over torch and JAX batches: Gymnasium's
values (NumPy's path), in the batch's library, the final observations too, with
no host copy."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from gymnasium.spaces import Box
from gymnasium.vector.utils import batch_space
from hypothesis import given, settings
from hypothesis import strategies as st

import vecmode
from tests.batched.support import host, make_batched, no_host_copies, xp_of
from tests.batched.test_wrappers import (
    ARRAYS,
    MODES,
    STACKS,
    _assert_same,
    _continuous,
    _run,
)
from vecmode.wrappers import RescaleAction, RescaleObservation

INF = np.inf
ZERO, ONE = np.float32(0), np.float32(1)
#: CartPole's bounds are [-4.8, -inf, -0.42, -inf] to [4.8, inf, 0.42, inf].
LOW = np.array([-1.0, -INF, -3.0, -INF], np.float32)
HIGH = np.array([2.0, INF, 0.5, INF], np.float32)

RESCALES = {
    "RescaleObservation": lambda env: RescaleObservation(env, LOW, HIGH),
    # [-1, 1] -> [0, 1]: the runner's actions 0 and 1 push left and right
    "RescaleAction": lambda env: RescaleAction(_continuous(env), ZERO, ONE),
    "RescaleObservation+RescaleAction": lambda env: RescaleObservation(
        RescaleAction(_continuous(env), ZERO, ONE), LOW, HIGH
    ),
}


@pytest.mark.parametrize("name", ARRAYS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("stack", sorted(RESCALES))
def test_the_rescales_give_numpys_values(name, mode, stack) -> None:
    resets = [np.array([i % 3 == k for i in range(6)]) for k in range(3)]
    with mock.patch.dict(STACKS, RESCALES):
        _, got = _run(name, stack, mode, steps=14, resets=resets)
        _, want = _run("numpy", stack, mode, steps=14, resets=resets)
    _assert_same(got, want)
    steps = [step for step in want if len(step) == 7]
    if "Observation" in stack and mode == "SameStep":  # the finals rescaled too
        finals = [obs for step in steps for obs in step[6].values()]
        assert finals and all(0.3 < obs[0] < 0.7 for obs in finals)  # x: ~0.5
    if mode == "Disabled":
        assert any(step[0] == "reset" for step in want if len(step) == 2)


@pytest.mark.parametrize("name", ARRAYS)
@given(
    values=st.lists(st.floats(-1e6, 1e6, width=32), min_size=3, max_size=24),
    wide=st.booleans(),
)
@settings(max_examples=25, deadline=None)
def test_a_rescaled_action_batch_is_numpys(name, values, wide) -> None:
    """Box actions of shape (3,), bounds in arrays and scalars, float32 or
    float64 batches: the env gets NumPy's actions, in the env's dtype."""
    xp = xp_of(name)
    low, high = np.array([-2.0, 0.0, 1.0], np.float32), np.float32(7.5)
    batch = np.array(values[: len(values) // 3 * 3]).reshape(-1, 3)
    batch = batch.astype(np.float64 if wide else np.float32)
    envs = {}
    for lib in ("numpy", name):
        env = make_batched(lib, len(batch))
        env.single_action_space = Box(-1, np.array([1, 3, 5], np.float32), (3,))
        env.action_space = batch_space(env.single_action_space, len(batch))
        envs[lib] = RescaleAction(env, low, high)
    _assert_numpys(xp, envs["numpy"].actions, envs[name].actions, batch)


@pytest.mark.parametrize("name", ARRAYS)
@given(values=st.lists(st.floats(-0.375, 0.375, width=32), min_size=4, max_size=40))
@settings(max_examples=25, deadline=None)
def test_a_rescaled_observation_batch_is_numpys(name, values) -> None:
    xp = xp_of(name)
    batch = np.array(values[: len(values) // 4 * 4], np.float32).reshape(-1, 4)
    envs = {
        lib: RescaleObservation(make_batched(lib, len(batch)), LOW, HIGH)
        for lib in ("numpy", name)
    }
    _assert_numpys(xp, envs["numpy"].observations, envs[name].observations, batch)


def _assert_numpys(xp, numpys, ours, batch) -> None:
    """``ours`` of ``batch`` in ``xp`` is ``numpys`` of it: float32, in ``xp``,
    with no host copy."""
    want = numpys(batch)
    with no_host_copies():
        got = ours(xp.asarray(batch))
    assert type(got) is type(xp.asarray(0.0))
    assert host(got).dtype == want.dtype == np.float32
    # (XLA on the CPU flushes float32 subnormals to zero: a result below tiny is 0)
    tiny = float(np.finfo(np.float32).tiny)
    np.testing.assert_allclose(host(got), want, rtol=1e-6, atol=tiny)


def test_a_transform_it_cannot_read_is_refused_saying_what_to_do() -> None:
    """Another Gymnasium's rescale_box (no gradient/intercept to read)."""
    xp_of("torch")
    base = make_batched("torch", 2)
    envs = RescaleObservation(vecmode.with_autoreset(base, "SameStep"), LOW, HIGH)
    envs._func = lambda obs: obs * 2.0
    with pytest.raises(TypeError, match="convert the batches to NumPy"):
        envs.reset(seed=0)
