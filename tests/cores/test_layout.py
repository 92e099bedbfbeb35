"""vecmode.layout: which sub-envs each worker (or actor) runs, how many workers,
and where processes spin."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from vecmode import layout as layout_module
from vecmode.layout import (
    actor_count,
    default_layout,
    default_num_workers,
    positive_count,
    slices,
)


def assert_a_partition(parts: list[tuple[int, int]], num_envs: int) -> None:
    """``parts`` cover ``0 .. num_envs - 1`` in contiguous, non-empty slices
    whose sizes differ by one at most."""
    assert parts[0][0] == 0 and parts[-1][1] == num_envs
    assert all(a[1] == b[0] for a, b in itertools.pairwise(parts))
    sizes = [stop - start for start, stop in parts]
    assert min(sizes) >= 1 and max(sizes) - min(sizes) <= 1


def test_the_partition_check_catches_a_wrong_split():
    assert_a_partition([(0, 3), (3, 5)], 5)
    for wrong in (
        [(0, 3), (4, 5)],
        [(0, 4), (4, 5)],
        [(0, 2), (2, 4)],
        [(0, 0), (0, 2)],
    ):
        with pytest.raises(AssertionError):
            assert_a_partition(wrong, 5)


@given(st.integers(1, 300), st.integers(1, 64))
def test_slices_share_the_sub_envs_out_evenly(num_envs, num_workers):
    parts = slices(num_envs, min(num_envs, num_workers))
    assert len(parts) == min(num_envs, num_workers)
    assert_a_partition(parts, num_envs)
    # the larger slices come first
    sizes = [stop - start for start, stop in parts]
    assert sizes == sorted(sizes, reverse=True)


def test_default_layout(monkeypatch):
    monkeypatch.setattr(layout_module, "usable_cpus", lambda: 4)
    assert default_num_workers(100) == 4 and default_num_workers(2) == 2
    assert default_layout(8, None, None) == (4, 0)  # a worker per CPU
    assert default_layout(3, None, 0) == (3, 0)  # at most one per sub-env
    assert default_layout(8, 6, None) == (6, 0)
    assert default_layout(8, None, 2) == (3, 2)  # one per CPU but one
    assert default_layout(4, None, 3) == (1, 3)  # one sub-env left to a worker
    assert default_layout(8, 9, 2) == (6, 2)
    monkeypatch.setattr(layout_module, "usable_cpus", lambda: 1)
    assert default_layout(8, None, 2) == (1, 2)  # always one worker


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_a_count_must_be_a_positive_int(bad):
    with pytest.raises(
        ValueError, match=rf"^num_workers must be None or an int >= 1, got {bad!r}\.$"
    ):
        positive_count("num_workers", bad)
    assert positive_count("num_workers", None) is None
    assert type(positive_count("x", np.int64(3))) is int


def test_actor_count():
    assert actor_count(10, None, None, cpus=4) == 4
    assert actor_count(10, None, None, cpus=64) == 10
    assert actor_count(10, 3, None, cpus=1) == 3
    assert actor_count(3, 8, None, cpus=1) == 3
    assert actor_count(10, None, 4, cpus=1) == 3  # at most 4 each: 4, 3, 3
    assert actor_count(10, None, 10, cpus=8) == 1


def test_processes_spin_only_where_each_has_a_cpu(monkeypatch):
    monkeypatch.setattr(layout_module, "usable_cpus", lambda: 4)
    assert layout_module.spin_seconds(3) == layout_module.SPIN  # 3 workers + parent
    assert layout_module.spin_seconds(4) == 0.0  # a worker per CPU: none to spare
    assert layout_module.worker_spin_seconds() == layout_module.SPIN
    monkeypatch.setattr(layout_module, "usable_cpus", lambda: 2)
    assert layout_module.worker_spin_seconds() == layout_module.SPIN  # they yield
    monkeypatch.setattr(layout_module, "usable_cpus", lambda: 1)
    assert layout_module.spin_seconds(1) == 0.0
    assert layout_module.worker_spin_seconds() == 0.0
