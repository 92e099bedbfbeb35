"""vecmode.replay.compare: exact comparison, and the text of a difference."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium import spaces

from vecmode.replay.compare import (
    MISSING,
    Difference,
    arrays_in,
    as_numpy,
    describe,
    per_sub_env,
    raised,
    same,
    where_different,
)


def test_same_is_exact():
    assert same(np.array([1.0, np.nan]), np.array([1.0, np.nan]))
    assert not same(np.array([1.0], np.float32), np.array([1.0], np.float64))
    assert same(np.array([1.0], np.float32), np.array([1.0]), strict=False)
    assert not same({"a": 1}, {"a": 1, "b": 2})
    assert not same((1, 2), [1, 2])
    assert same((1, 2), [1, 2], strict=False)
    assert not same(np.float64(0.1), np.float32(0.1), strict=False)
    assert same(float("nan"), np.float64("nan"), strict=False)
    assert not same(np.zeros(2), np.zeros(3))


def test_object_arrays_are_compared_entry_by_entry():
    a, b = np.empty(2, dtype=object), np.empty(2, dtype=object)
    a[0], b[0] = np.zeros(2), np.zeros(2)
    assert same(a, b)
    b[1] = np.ones(1)
    assert not same(a, b)


def test_where_different_names_the_path():
    assert where_different({"a": (np.zeros(2), 3)}, {"a": (np.zeros(2), 4)}) == (
        "['a'][1]"
    )
    assert where_different({"a": 1}, {"b": 1}) == ""
    assert where_different([1, 2], [1, 2, 3]) == ""
    assert where_different(np.int64(1), 1) == ""  # strict: the types too
    assert where_different(np.int64(1), 1, strict=False) is None


def test_arrays_in_walks_dicts_sequences_and_object_arrays():
    finals = np.empty(2, dtype=object)
    finals[1] = (np.zeros(1), {"x": np.ones(2)})
    found = [path for path, _ in arrays_in({"final_obs": finals, "n": [np.zeros(1)]})]
    assert found == [
        "['final_obs']",
        "['final_obs'][1][0]",
        "['final_obs'][1][1]['x']",
        "['n'][0]",
    ]


def test_as_numpy_converts_arrays_of_other_libraries():
    class Tensor:  # stands for a torch tensor on a device
        def __array__(self, dtype=None, copy=None):
            raise AssertionError("read through cpu()")

        def cpu(self):
            return np.arange(2)

    out = as_numpy({"t": (Tensor(),), "n": 3})
    assert isinstance(out["t"][0], np.ndarray) and out["n"] == 3


def test_per_sub_env_splits_a_batch_or_says_why_not():
    space = spaces.Dict({"a": spaces.Box(0, 1, (2, 1))})
    items = per_sub_env(space, {"a": np.zeros((2, 1))}, 2)
    assert [item["a"].shape for item in items] == [(1,), (1,)]
    with pytest.raises(ValueError, match=r"one entry per sub-env \(3\), got 2"):
        per_sub_env(spaces.Box(0, 1, (2, 1)), np.zeros((2, 1)), 3)


def test_texts_for_messages():
    assert describe(np.float64(1.0)) == "1.0 (float64)"
    assert describe(MISSING) == "<no such key>"
    assert len(describe(np.arange(1000))) < 100
    assert describe("x" * 500).endswith("...")
    assert raised(ValueError("a\n  b")) == "ValueError: a b"
    assert raised(KeyError()) == "KeyError"
    diff = Difference(3, "reset(mask)", None, "obs", "1", "2", run="instance 2")
    assert str(diff) == "instance 2, call 3 (reset(mask)), obs: expected 1, got 2"
