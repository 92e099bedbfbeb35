"""The NextStep reset-step trap of a CleanRL loop, counted (docs/integrations.md).

CleanRL's PPO rollout stores one row per call: ``obs[step] = next_obs``,
``dones[step] = next_done``, then the action, the reward, and ``next_done =
terminations | truncations``. Written for an autoreset within the step, on a
NEXT_STEP env it also stores the reset steps, whose action the env ignored. Here
the loop runs with a deterministic policy over CartPole (every real step pays 1,
a reset step 0), for 50 000 sub-env steps, and the rows are counted against the
ground truth: the episode ends the env reported.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import numpy as np
import pytest

import vecmode

NUM_ENVS, NUM_STEPS = 4, 12_500  # 50 000 sub-env steps


def policy(obs: np.ndarray) -> np.ndarray:
    """Push towards the side the pole leans to: deterministic, so every mode plays
    the same episodes, and they end (by termination) every 40-odd steps."""
    return (obs[:, 2] > 0).astype(np.int64)


def cleanrl_rollout(envs, num_steps: int, seed: int) -> dict[str, np.ndarray]:
    """CleanRL's ppo.py storage and loop, in NumPy (the agent replaced by
    ``policy``)."""
    num_envs = envs.num_envs
    obs = np.zeros((num_steps, num_envs, *envs.single_observation_space.shape))
    actions = np.zeros((num_steps, num_envs), dtype=np.int64)
    rewards = np.zeros((num_steps, num_envs))
    dones = np.zeros((num_steps, num_envs), dtype=bool)
    next_obs, _ = envs.reset(seed=seed)
    next_done = np.zeros(num_envs, dtype=bool)
    for step in range(num_steps):
        obs[step] = next_obs
        dones[step] = next_done
        actions[step] = policy(next_obs)
        next_obs, reward, terminations, truncations, _ = envs.step(actions[step])
        next_done = np.logical_or(terminations, truncations)
        rewards[step] = reward
    return {"obs": obs, "actions": actions, "rewards": rewards, "dones": dones}


def collector_rollout(envs, num_steps: int, seed: int) -> list[list[tuple]]:
    """The same loop on vecmode.TransitionCollector: each sub-env's valid rows."""
    rows: list[list[tuple]] = [[] for _ in range(envs.num_envs)]
    with vecmode.TransitionCollector(envs) as collector:
        collector.reset(seed=seed)
        for _ in range(num_steps):
            t = collector.step(policy(collector.obs))
            for i in np.flatnonzero(t.valid):
                rows[i].append(
                    (
                        t.obs[i].tolist(),
                        int(t.actions[i]),
                        float(t.rewards[i]),
                        bool(t.terminations[i]),
                        bool(t.truncations[i]),
                        t.next_obs[i].tolist(),
                    )
                )
    return rows


def make(mode: str):
    return vecmode.make_vec(
        "CartPole-v1", num_envs=NUM_ENVS, vectorization_mode="sync", autoreset_mode=mode
    )


def test_cleanrl_on_next_step_stores_every_reset_step_as_a_transition():
    envs = make("NextStep")
    run = cleanrl_rollout(envs, NUM_STEPS, seed=1)
    envs.close()
    bad = run["rewards"] == 0  # CartPole pays 1 for every real step
    # ground truth: the row after each episode end (dones marks it) is the reset
    # step; the first row's done is the initial reset, not an episode end
    reset_steps = run["dones"].copy()
    reset_steps[0] = False
    assert np.array_equal(bad, reset_steps)
    assert bad.sum() > 1000, bad.sum()  # 1155 in 50 000 sub-env steps
    # each bad row acts on the ended episode's final observation, a state no real
    # CartPole step starts from (|angle| > 12 degrees or |x| > 2.4; the rare
    # exception: an episode cut by its time limit)
    final = np.abs(run["obs"][bad][:, 2]) > 0.2095
    final |= np.abs(run["obs"][bad][:, 0]) > 2.4
    assert final.mean() > 0.9
    print(f"NextStep: {int(bad.sum())} of {bad.size} rows are reset steps")


@pytest.mark.parametrize("mode", ["SameStep", "Disabled"])
def test_same_step_and_the_collector_store_none(mode):
    if mode == "SameStep":  # the CleanRL loop itself is right on SameStep
        envs = make(mode)
        run = cleanrl_rollout(envs, NUM_STEPS, seed=1)
        envs.close()
        assert not (run["rewards"] == 0).any()
    steps = 2_000
    reference = collector_rollout(make("SameStep"), steps, seed=1)
    assert sum(map(len, reference)) == steps * NUM_ENVS  # every call is real
    # the modes other than the reference's (SameStep against itself proves nothing)
    for other in [m for m in ("NextStep", mode) if m != "SameStep"]:
        got = collector_rollout(make(other), steps, seed=1)
        for rows, expected in zip(got, reference, strict=True):
            assert all(row[2] == 1.0 for row in rows)  # no reset step kept
            n = min(len(rows), len(expected))
            assert n > steps * 0.9
            assert rows[:n] == expected[:n]  # the same transitions in every mode


# ------------------------------------------------------------ the docs' diff
PAGE = Path(__file__).resolve().parents[2] / "docs" / "integrations.md"

# CleanRL's ppo.py rollout, unchanged but for the sizes (the agent is CleanRL's,
# with smaller layers): the script the docs' diff is written against
BEFORE = '''\
import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
from torch.distributions.categorical import Categorical


def layer_init(layer, std=np.sqrt(2), bias_const=0.0):
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    def __init__(self, envs):
        super().__init__()
        n = int(np.array(envs.single_observation_space.shape).prod())
        self.critic = nn.Sequential(
            layer_init(nn.Linear(n, 16)),
            nn.Tanh(),
            layer_init(nn.Linear(16, 1), std=1.0),
        )
        self.actor = nn.Sequential(
            layer_init(nn.Linear(n, 16)),
            nn.Tanh(),
            layer_init(nn.Linear(16, envs.single_action_space.n), std=0.01),
        )

    def get_value(self, x):
        return self.critic(x)

    def get_action_and_value(self, x, action=None):
        probs = Categorical(logits=self.actor(x))
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action), probs.entropy(), self.critic(x)


def rollout(envs, agent, num_steps, seed):
    """CleanRL's ppo.py rollout: the storage and the loop."""
    num_envs = envs.num_envs
    obs = torch.zeros((num_steps, num_envs) + envs.single_observation_space.shape)
    actions = torch.zeros((num_steps, num_envs) + envs.single_action_space.shape)
    logprobs = torch.zeros((num_steps, num_envs))
    rewards = torch.zeros((num_steps, num_envs))
    dones = torch.zeros((num_steps, num_envs))
    values = torch.zeros((num_steps, num_envs))

    next_obs, _ = envs.reset(seed=seed)
    next_obs = torch.Tensor(next_obs)
    next_done = torch.zeros(num_envs)
    for step in range(0, num_steps):
        obs[step] = next_obs
        dones[step] = next_done
        with torch.no_grad():
            action, logprob, _, value = agent.get_action_and_value(next_obs)
            values[step] = value.flatten()
        actions[step] = action
        logprobs[step] = logprob
        next_obs, reward, terminations, truncations, infos = envs.step(action.numpy())
        next_done = np.logical_or(terminations, truncations)
        rewards[step] = torch.tensor(reward).view(-1)
        next_obs, next_done = torch.Tensor(next_obs), torch.Tensor(next_done)
    return obs, actions, logprobs, rewards, dones, values


torch.manual_seed(1)
envs = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")] * 4)  # NextStep
agent = Agent(envs)
obs, actions, logprobs, rewards, dones, values = rollout(envs, agent, 256, seed=1)
# every real CartPole step pays 1: a row with reward 0 is a NextStep reset step
print(f"{int((rewards == 0).sum())} of {rewards.numel()} rows are reset steps")
envs.close()
'''


def apply_diff(code: str, diff: str) -> str:
    """Apply a diff written for a reader: ``" "`` lines are context to find,
    ``"-"`` lines are removed, ``"+"`` lines inserted there, ``...`` skips."""
    lines = code.splitlines()
    at = 0
    for line in diff.splitlines():
        kind, text = line[:1], line[1:]
        if text.strip() == "...":
            continue
        if kind == "+":
            lines.insert(at, text)
            at += 1
            continue
        at = lines.index(text, at)  # a context or removed line must be there
        if kind == "-":
            del lines[at]
        else:
            at += 1
    return "\n".join(lines) + "\n"


def printed(code: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "<rollout>", "exec"), {})
    return out.getvalue()


def test_the_docs_diff_gives_what_the_docs_show():
    """docs/integrations.md shows a one-statement diff to SameStep for CleanRL's
    rollout, and the count of reset steps before and after: the rollout prints
    the first, and with the diff applied, the second."""
    section = PAGE.read_text().split("## Porting a CleanRL loop", 1)[1]
    diff, was, shown = re.search(
        r"```diff\n(.*?)```.*?where it stored `(.*?)`.*?```text\n(.*?)```",
        section,
        re.S,
    ).groups()
    pytest.importorskip("torch")
    assert printed(BEFORE).startswith(f"{was} rows are reset steps")
    assert printed(apply_diff(BEFORE, diff)) == shown
    assert shown.startswith("0 of ")
