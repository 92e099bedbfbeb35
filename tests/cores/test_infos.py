"""Splitting and merging batched infos == what Gymnasium's _add_info builds."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from tests.helpers import assert_same
from vecmode.infos import merge_infos, select_infos

leaf_kinds = {
    "int": st.integers(-5, 5),
    "float": st.floats(-2, 2, allow_nan=False),
    "bool": st.booleans(),
    "float32": st.integers(0, 9).map(np.float32),
    "text": st.text(max_size=2),
    "array": st.integers(0, 9).map(lambda n: np.array([n, n + 1])),
}


@st.composite
def schemas(draw, depth=0):
    """Key -> leaf kind or nested schema: one type per key, like real infos.

    (Where sub-envs disagree on a key's type, Gymnasium casts values into the
    first one's dtype and the split cannot be recovered; merging still is exact,
    see test_merge_types_the_array_after_the_lowest_sub_env.)
    """
    keys = draw(st.lists(st.sampled_from("abcd"), unique=True, max_size=3))
    choices = list(leaf_kinds) + (["nested"] if depth < 2 else [])
    return {
        k: (draw(schemas(depth + 1)) if kind == "nested" else kind)
        for k in keys
        for kind in [draw(st.sampled_from(choices))]
    }


@st.composite
def info_of(draw, schema):
    info = {}
    for key, kind in schema.items():
        if draw(st.booleans()):
            info[key] = (
                draw(info_of(kind))
                if isinstance(kind, dict)
                else draw(leaf_kinds[kind])
            )
    return info


def batch(per_env: list[dict], only: list[bool]) -> dict:
    """Gymnasium's own batching of the per-sub-env infos where ``only`` is True."""
    vec = gym.vector.VectorEnv()
    vec.num_envs = len(per_env)
    infos: dict = {}
    for i, info in enumerate(per_env):
        if only[i]:
            infos = vec._add_info(infos, info, i)
    return infos


@given(st.data())
def test_select_and_merge_agree_with_gymnasium(data):
    num_envs = data.draw(st.integers(1, 5))
    schema = data.draw(schemas())
    per_env = [data.draw(info_of(schema)) for _ in range(num_envs)]
    side = np.array(
        data.draw(st.lists(st.booleans(), min_size=num_envs, max_size=num_envs))
    )
    whole = batch(per_env, [True] * num_envs)
    first = batch(per_env, list(side))
    second = batch(per_env, list(~side))
    assert_same(first, select_infos(whole, side))
    assert_same(second, select_infos(whole, ~side))
    assert_same(whole, merge_infos(first, second))
    assert_same(whole, merge_infos(second, first))


def test_merge_types_the_array_after_the_lowest_sub_env():
    per_env = [{"x": 1.5}, {"x": 2}, {"x": True}]
    whole = batch(per_env, [True, True, True])
    assert whole["x"].dtype == np.float64
    merged = merge_infos(
        batch(per_env, [False, True, True]), batch(per_env, [True, False, False])
    )
    assert_same(whole, merged)


def test_merge_keeps_the_numbers_the_lowest_sub_env_s_dtype_would_cut():
    """Ints of the lowest sub-env, then a float: Gymnasium's batching cuts 0.5
    to 0; the merge (SameStepAutoreset over a foreign env) keeps it, as vecmode's
    cores batch (FrozenLake: reset prob 1, step prob 0.33)."""
    per_env = [{"prob": 1}, {"prob": 0.5}]
    merged = merge_infos(batch(per_env, [True, False]), batch(per_env, [False, True]))
    assert merged["prob"].tolist() == [1.0, 0.5]
    assert merged["prob"].dtype == np.float64


def test_merge_into_step_infos_without_masks_takes_the_masked_rows_only():
    """EnvPool's step infos have no masks; its masked reset's have. The running
    sub-envs keep their step values (numbers widened, nested dicts too); other
    kinds that differ are the reset's, as before (a str into ints raised)."""
    mask = np.array([True, False, False])
    step = {"x": np.array([1, 2, 3]), "d": {"y": np.array([1, 2, 3])}}
    reset = {"x": np.array([0.5, 0, 0]), "_x": mask, "d": {"y": np.array([9, 0, 0])}}
    out = merge_infos(step, {**reset, "_d": mask}, mask)
    assert out["x"].tolist() == [0.5, 2.0, 3.0] and "_x" not in out
    assert out["d"]["y"].tolist() == [9, 2, 3]
    text = {"x": np.array(["r", "", ""]), "_x": mask}
    assert merge_infos(step, text, mask)["x"] is text["x"]
    nested = {"d": {"y": np.array(["r", "", ""])}, "_d": mask}
    assert merge_infos(step, nested, mask)["d"]["y"] is nested["d"]["y"]
