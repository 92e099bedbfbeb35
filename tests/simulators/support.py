"""Helpers of the simulators' tests: the actions of a run, the transitions a
``TransitionCollector`` reads as NumPy, and their comparison with a fake's true
transitions."""

from __future__ import annotations

from typing import Any

import numpy as np

import vecmode
from tests.batched.support import host, no_host_copies

FIELDS = ("obs", "action", "reward", "next_obs", "terminated", "truncated")


def action_batches(num_envs: int, steps: int, seed: int = 0) -> list[Any]:
    """``steps`` torch batches of 2-float actions in [-1, 1)."""
    import torch

    g = torch.Generator().manual_seed(seed)
    return [torch.rand((num_envs, 2), generator=g) * 2 - 1 for _ in range(steps)]


def collect(
    envs: Any,
    actions: list[Any],
    seed: int = 0,
    key: str | None = None,
    trap: bool = False,
) -> list[dict[str, np.ndarray]]:
    """The transitions a ``TransitionCollector`` over ``envs`` reads, per step,
    as NumPy (``key``: of that observation group); ``trap``: every call inside
    ``no_host_copies``."""
    collector = vecmode.TransitionCollector(envs)
    guard = no_host_copies if trap else _nothing
    with guard():
        collector.reset(seed=seed)
    out = []
    for batch in actions:
        with guard():
            t = collector.step(batch)
        obs, next_obs = (
            (t.obs, t.next_obs) if key is None else (t.obs[key], t.next_obs[key])
        )
        fields = (obs, t.actions, t.rewards, next_obs, t.terminations, t.truncations)
        out.append(
            {name: host(value) for name, value in zip(FIELDS, fields, strict=True)}
        )
    return out


def same_step_rows(adapter: Any, rows: list[list[int]], seed: int) -> list[Any]:
    """:func:`collect` over ``adapter`` in SameStep, each step in the trap, its
    actions the ``num_envs`` first of each row (JAX int32 batches)."""
    import jax.numpy as jnp

    n = adapter.num_envs
    actions = [jnp.asarray(row[:n], dtype=jnp.int32) for row in rows]
    return collect(
        vecmode.with_autoreset(adapter, "SameStep"), actions, seed, trap=True
    )


def assert_same(
    got: list[dict[str, np.ndarray]],
    truth: list[dict[str, np.ndarray]],
    atol: float = 1e-7,
) -> None:
    """Value for value, step by step."""
    assert len(got) == len(truth)
    for step, (ours, true) in enumerate(zip(got, truth, strict=True)):
        for name in FIELDS:
            np.testing.assert_allclose(
                ours[name],
                true[name],
                rtol=1e-6,
                atol=atol,
                err_msg=f"step {step}: {name}",
            )


def endings(truth: list[dict[str, np.ndarray]]) -> tuple[int, int]:
    """How many terminations and truncations the run had."""
    terminated = sum(int(step["terminated"].sum()) for step in truth)
    truncated = sum(int(step["truncated"].sum()) for step in truth)
    return terminated, truncated


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None
