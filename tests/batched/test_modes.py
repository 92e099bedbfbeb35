"""vecmode.modes over array batches: the boundary view and the final-observation
layouts in the batch's own library, with no host copy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.batched.support import (
    LIBRARIES,
    HostCopyError,
    make_batched,
    no_host_copies,
    xp_of,
)


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
