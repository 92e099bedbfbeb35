"""examples/cleanrl_ppo.py, CleanRL's PPO on vecmode: it learns CartPole, runs in
every mode, masks NextStep's reset steps, and trains SameStep and Disabled bit for
bit alike from one seed (docs/training.md)."""

from __future__ import annotations

import dataclasses
import importlib.util
import subprocess
import sys
from collections import deque
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "cleanrl_ppo.py"


def load():
    spec = importlib.util.spec_from_file_location("cleanrl_ppo", SCRIPT)
    module = sys.modules["cleanrl_ppo"] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # a dataclass needs its module registered
    return module


ppo = load()
SHORT = ppo.Args(num_envs=2, num_steps=64, total_timesteps=3 * 2 * 64)  # 3 updates


def train(args):
    """Every iteration's (global_step, returns, stats), and the final weights."""
    iterations, weights = [], None
    for step, returns, stats, agent in ppo.train(args):
        iterations.append((step, returns, stats))
        weights = {k: v.clone() for k, v in agent.state_dict().items()}
    return iterations, weights


def same_weights(a, b):
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_same_step_and_disabled_train_bit_for_bit_alike():
    runs = {
        mode: train(dataclasses.replace(SHORT, autoreset_mode=mode))
        for mode in ("SameStep", "Disabled", "NextStep")
    }
    (same, same_weights_), (disabled, disabled_weights) = (
        runs["SameStep"],
        runs["Disabled"],
    )
    assert same_weights(same_weights_, disabled_weights)
    assert repr(same) == repr(disabled)  # returns and losses, nan included
    assert all(s["real_transitions"] == 128 for *_, s in same)
    # NextStep spends a call on each reset step: fewer real transitions in the
    # batch, other minibatches and random draws, other weights
    next_step, next_weights = runs["NextStep"]
    assert any(s["real_transitions"] < 128 for *_, s in next_step)
    assert not same_weights(next_weights, disabled_weights)


@pytest.mark.parametrize("mode", ["NextStep", "Disabled"])
def test_runs_in_every_mode_with_reset_steps_masked(mode):
    """A small rollout (one sub-env, 16 calls, 4 minibatches), whose real rows
    vary in NextStep: every minibatch has 2 rows or more, nothing is NaN."""
    args = ppo.Args(
        autoreset_mode=mode, num_envs=1, num_steps=16, total_timesteps=16 * 30
    )
    iterations, weights = train(args)
    real = [stats["real_transitions"] for *_, stats in iterations]
    if mode == "NextStep":
        assert min(real) < 16  # reset steps left out of the batch
    else:
        assert real == [16] * 30
    for *_, stats in iterations:
        assert np.isfinite([stats["value_loss"], stats["policy_loss"]]).all()
    assert all(torch.isfinite(w).all() for w in weights.values())
    assert sum(len(returns) for _, returns, _ in iterations) > 5


def test_a_rollout_too_small_for_its_minibatches_is_refused():
    with pytest.raises(ValueError, match="raise num_steps"):
        next(ppo.train(ppo.Args(num_envs=1, num_steps=7, num_minibatches=4)))


# RL Zoo's PPO hyperparameters for CartPole (CleanRL's defaults learn too, in
# 200 000-odd steps). Seed 1, one torch thread: the run is deterministic on the
# CPU. The last 20 episodes' mean return reaches 400 at 29 184 steps in SameStep,
# 41 216 in NextStep (seeds 1-6: 17 000 to 57 000): the budget leaves 2x.
CARTPOLE = {
    "num_envs": 8,
    "num_steps": 32,
    "gamma": 0.98,
    "gae_lambda": 0.8,
    "update_epochs": 20,
    "num_minibatches": 1,
    "ent_coef": 0.0,
    "learning_rate": 1e-3,
}
BUDGET, TARGET = 100_000, 400


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["NextStep", "SameStep"])  # Disabled: SameStep's
def test_learns_cartpole(mode):
    args = ppo.Args(autoreset_mode=mode, seed=1, total_timesteps=BUDGET, **CARTPOLE)
    recent, best, global_step = deque(maxlen=20), 0.0, 0
    for global_step, returns, _, _ in ppo.train(args):  # noqa: B007
        recent.extend(returns)
        if len(recent) == recent.maxlen:
            best = max(best, float(np.mean(recent)))
        if best >= TARGET:
            break
    print(f"{mode}: mean return {best:.0f} at {global_step} steps")
    assert best >= TARGET, f"{best:.0f} after {global_step} steps"


@pytest.mark.slow
def test_the_script_runs_quietly_from_the_command_line():
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--num-envs", "2", "--total-timesteps", "512"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert done.stderr == ""
    lines = done.stdout.splitlines()
    assert len(lines) == 2  # one line per iteration, NextStep by default
    assert lines[-1].startswith("global_step=512 ")
