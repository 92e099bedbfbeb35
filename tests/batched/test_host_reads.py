"""Reading the array path's statistics on the host, as over NumPy: the episode
queues as Gymnasium's deques (read after the steps, never in them), and
``obs_rms``/``return_rms`` saved through ``to_numpy()`` (pickling them says so)."""

from __future__ import annotations

import contextlib
import copy
import io
import pickle
from collections import deque

import numpy as np
import pytest

import vecmode
from tests.batched.support import (
    HostCopyError,
    host,
    make_batched,
    no_host_copies,
    xp_of,
)
from vecmode.wrappers import RecordEpisodeStatistics, ppo_stack

ARRAYS = ("torch", "jax")
STACKS = {
    "RecordEpisodeStatistics": lambda env: RecordEpisodeStatistics(env, 3),
    "ppo_stack": lambda env: ppo_stack(env, gamma=0.9),
}
QUEUES = ("return_queue", "length_queue", "time_queue")


def _stepped(name, stack, steps, envs=None, n=4):
    """``envs`` (new if None: ``stack`` over a BatchedCartPole in library ``name``)
    after ``steps`` more steps, the array ones in the no-host-copy trap."""
    if envs is None:
        base = make_batched(name, n, max_episode_steps=3)
        envs = STACKS[stack](vecmode.with_autoreset(base, "SameStep"))
        envs.reset(seed=0)
    xp, rng = xp_of(name), np.random.default_rng(steps)
    trap = contextlib.nullcontext if name == "numpy" else no_host_copies
    for _ in range(steps):
        actions = xp.asarray(rng.integers(0, 2, n))
        with trap():
            envs.step(actions)
    return envs


def _assert_read_as(queue, want: deque, same_values: bool) -> None:
    """``queue`` reads as the deque ``want`` (its values too if ``same_values``)."""
    assert (len(queue), queue.maxlen) == (len(want), want.maxlen)
    values = list(queue)
    assert len(values) == len(want) and all(
        isinstance(v, (int, float, np.number)) for v in values
    )
    assert [queue[0], queue[-1]] == [values[0], values[-1]]
    with pytest.raises(IndexError):
        queue[len(want)]
    array = np.array(queue)
    assert array.shape == (len(want),) and array.dtype != object
    np.testing.assert_array_equal(array, values)
    assert np.mean(queue) == pytest.approx(np.mean(values))
    assert np.asarray(queue, dtype=np.float32).dtype == np.float32
    if same_values:
        assert values == list(want)
        assert np.mean(queue) == pytest.approx(np.mean(want))
        np.testing.assert_array_equal(np.array(queue), np.array(want))


@pytest.mark.parametrize("stack", list(STACKS))
@pytest.mark.parametrize("name", ARRAYS)
def test_the_queues_read_as_gymnasiums_deques(name, stack) -> None:
    got, want = _stepped(name, stack, 9), _stepped("numpy", stack, 9)
    for _ in range(2):  # reads, more steps (in the trap), reads again
        for attr in QUEUES:
            assert isinstance(getattr(want, attr), deque)
            _assert_read_as(getattr(got, attr), getattr(want, attr), attr != QUEUES[2])
        got, want = _stepped(name, stack, 5, got), _stepped("numpy", stack, 5, want)
    with no_host_copies(), pytest.raises(HostCopyError):  # a read: on the host
        np.mean(got.return_queue)


@pytest.mark.parametrize("name", ARRAYS)
def test_the_statistics_pickle_and_copy_in_their_library(name) -> None:
    """pickle and torch.save keep the values (loaded on the default device);
    deepcopy keeps the device; the copies are independent."""
    envs = _stepped(name, "ppo_stack", 6)
    torch = pytest.importorskip("torch")
    for rms in (envs.obs_rms, envs.return_rms):
        buffer = io.BytesIO()
        torch.save({"rms": rms}, buffer)
        buffer.seek(0)
        for copied in (
            pickle.loads(pickle.dumps(rms)),
            torch.load(buffer, weights_only=False)["rms"],
            copy.deepcopy(rms),
        ):
            assert type(copied.mean) is type(rms.mean)
            np.testing.assert_array_equal(host(copied.mean), host(rms.mean))
            np.testing.assert_array_equal(host(copied.var), host(rms.var))
            assert copied.count == rms.count
            assert copied.mean is not rms.mean
