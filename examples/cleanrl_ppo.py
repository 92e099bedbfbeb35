"""CleanRL's PPO (``ppo.py``, discrete actions) on vecmode, in any autoreset mode.

A single-file port of CleanRL's ``ppo.py``: the same arguments, agent, rollout,
GAE and clipped update. What changes:

* the env is ``vecmode.make_vec(..., autoreset_mode=--autoreset-mode)`` and the
  rollout runs on ``vecmode.TransitionCollector``, which gives the same
  transitions in NextStep, SameStep and Disabled;
* NextStep's reset steps (``t.valid`` False: the env ignored the action) are
  masked out of GAE, the advantages' normalisation and the loss, so its batches
  vary in size; they are split into ``--num-minibatches`` near-equal minibatches
  (never a last one of one row, whose advantage std is NaN);
* a truncated episode bootstraps from V(its final observation), ``t.next_obs``;
* no TensorBoard, W&B or video: one line per iteration.

From one seed, SameStep and Disabled train bit for bit alike. NextStep spends a
call on each reset step, so its batches and random draws differ.

CleanRL's defaults learn CartPole in about 200,000 steps, RL Zoo's in 40,000:

    python examples/cleanrl_ppo.py --autoreset-mode NextStep --total-timesteps 100000 \
        --num-envs 8 --num-steps 32 --gamma 0.98 --gae-lambda 0.8 \
        --update-epochs 20 --num-minibatches 1 --ent-coef 0 --learning-rate 1e-3
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import time
from collections import deque
from dataclasses import dataclass

import numpy as np

try:
    import torch
    import torch.nn as nn
    import torch.optim as optim
    from torch.distributions.categorical import Categorical
except ModuleNotFoundError:  # the example's one dependency beyond vecmode's
    raise SystemExit('cleanrl_ppo.py needs torch: pip install ".[torch]"') from None

import vecmode
from vecmode.wrappers import RecordEpisodeStatistics


@dataclass
class Args:
    seed: int = 1  # seed of the experiment
    torch_deterministic: bool = True  # torch.backends.cudnn.deterministic
    env_id: str = "CartPole-v1"
    autoreset_mode: str = "NextStep"  # NextStep, SameStep or Disabled
    total_timesteps: int = 500_000  # sub-env steps, reset steps included
    learning_rate: float = 2.5e-4
    num_envs: int = 4
    num_steps: int = 128  # calls per rollout
    anneal_lr: bool = True
    gamma: float = 0.99
    gae_lambda: float = 0.95
    num_minibatches: int = 4
    update_epochs: int = 4
    norm_adv: bool = True
    clip_coef: float = 0.2
    clip_vloss: bool = True
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    target_kl: float | None = None


def parse_args(argv: list[str] | None = None) -> Args:
    """``Args`` from the command line (``--num-envs 8``), as CleanRL's tyro does."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for field in dataclasses.fields(Args):
        kind = type(field.default)
        if kind is bool:
            kind = lambda text: text.lower() in ("1", "true", "yes")  # noqa: E731
        elif field.default is None:
            kind = float
        parser.add_argument(
            "--" + field.name.replace("_", "-"), type=kind, default=field.default
        )
    return Args(**vars(parser.parse_args(argv)))


def layer_init(layer, std=2**0.5, bias_const=0.0):
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    def __init__(self, envs):
        super().__init__()
        n = int(np.array(envs.single_observation_space.shape).prod())
        self.critic = nn.Sequential(
            layer_init(nn.Linear(n, 64)),
            nn.Tanh(),
            layer_init(nn.Linear(64, 64)),
            nn.Tanh(),
            layer_init(nn.Linear(64, 1), std=1.0),
        )
        self.actor = nn.Sequential(
            layer_init(nn.Linear(n, 64)),
            nn.Tanh(),
            layer_init(nn.Linear(64, 64)),
            nn.Tanh(),
            layer_init(nn.Linear(64, envs.single_action_space.n), std=0.01),
        )

    def get_value(self, x):
        return self.critic(x)

    def get_action_and_value(self, x, action=None):
        probs = Categorical(logits=self.actor(x))
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action), probs.entropy(), self.critic(x)


def train(args: Args):
    """Train; after each iteration, yield ``global_step``, the returns of the
    episodes that ended in it, CleanRL's logged scalars and the agent."""
    batch_size = args.num_envs * args.num_steps
    num_iterations = args.total_timesteps // batch_size
    # at most every other call of a sub-env is a reset step: >= 2 rows a minibatch
    if args.num_envs * (args.num_steps // 2) < 2 * args.num_minibatches:
        raise ValueError(
            f"num_envs * (num_steps // 2) = {args.num_envs * (args.num_steps // 2)}"
            f" real transitions may be all a rollout holds in NextStep, fewer than 2"
            f" for each of {args.num_minibatches} minibatches: raise num_steps"
        )

    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.backends.cudnn.deterministic = args.torch_deterministic
    torch.set_num_threads(1)  # a small network runs fastest on one CPU thread

    envs = vecmode.make_vec(
        args.env_id,
        num_envs=args.num_envs,
        vectorization_mode="sync",
        autoreset_mode=args.autoreset_mode,
    )
    envs = RecordEpisodeStatistics(envs)  # infos["episode"] where an episode ends
    agent = Agent(envs)
    optimizer = optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)

    shape = (args.num_steps, args.num_envs)
    obs = torch.zeros(shape + envs.single_observation_space.shape)
    next_obs = torch.zeros_like(obs)  # what the action led to (final obs at an end)
    actions = torch.zeros(shape + envs.single_action_space.shape)
    logprobs = torch.zeros(shape)
    rewards = torch.zeros(shape)
    terminations = torch.zeros(shape)
    dones = torch.zeros(shape)  # the transition ended its episode
    values = torch.zeros(shape)
    valid = torch.zeros(shape, dtype=torch.bool)  # False: a NextStep reset step

    global_step = 0
    with vecmode.TransitionCollector(envs) as collector:
        collector.reset(seed=args.seed)
        for iteration in range(1, num_iterations + 1):
            if args.anneal_lr:
                frac = 1.0 - (iteration - 1.0) / num_iterations
                optimizer.param_groups[0]["lr"] = frac * args.learning_rate

            episodic_returns = []
            for step in range(args.num_steps):
                global_step += args.num_envs
                obs[step] = torch.Tensor(collector.obs)
                with torch.no_grad():
                    action, logprob, _, value = agent.get_action_and_value(obs[step])
                    values[step] = value.flatten()
                actions[step] = action
                logprobs[step] = logprob
                t = collector.step(action.numpy())
                rewards[step] = torch.tensor(t.rewards).view(-1)
                next_obs[step] = torch.Tensor(t.next_obs)
                terminations[step] = torch.Tensor(t.terminations)
                dones[step] = torch.Tensor(t.terminations | t.truncations)
                valid[step] = torch.tensor(t.valid)
                if "_episode" in t.infos:
                    ended = t.infos["_episode"]
                    episodic_returns += t.infos["episode"]["r"][ended].tolist()

            # GAE over each transition's own next_obs: bootstrap unless terminated
            # (a truncated episode's final obs has a value); the sum stops at an
            # episode's end, so a reset step (the row after one) feeds no real row
            with torch.no_grad():
                next_values = agent.get_value(next_obs).reshape(shape)
                advantages = torch.zeros_like(rewards)
                lastgaelam = 0
                for t in reversed(range(args.num_steps)):
                    nextvalues = next_values[t] * (1.0 - terminations[t])
                    delta = rewards[t] + args.gamma * nextvalues - values[t]
                    advantages[t] = lastgaelam = (
                        delta
                        + args.gamma * args.gae_lambda * (1.0 - dones[t]) * lastgaelam
                    )
                returns = advantages + values

            # flatten the batch
            b_obs = obs.reshape((-1, *envs.single_observation_space.shape))
            b_logprobs = logprobs.reshape(-1)
            b_actions = actions.reshape((-1, *envs.single_action_space.shape))
            b_advantages = advantages.reshape(-1)
            b_returns = returns.reshape(-1)
            b_values = values.reshape(-1)
            b_inds = np.flatnonzero(valid.reshape(-1).numpy())  # real rows only

            # Optimizing the policy and value network
            clipfracs = []
            for _epoch in range(args.update_epochs):
                np.random.shuffle(b_inds)
                # near-equal minibatches of a batch whose size varies in NextStep
                for mb_inds in np.array_split(b_inds, args.num_minibatches):
                    _, newlogprob, entropy, newvalue = agent.get_action_and_value(
                        b_obs[mb_inds], b_actions.long()[mb_inds]
                    )
                    logratio = newlogprob - b_logprobs[mb_inds]
                    ratio = logratio.exp()

                    with torch.no_grad():
                        approx_kl = ((ratio - 1) - logratio).mean()
                        clipfracs += [
                            ((ratio - 1.0).abs() > args.clip_coef).float().mean().item()
                        ]

                    mb_advantages = b_advantages[mb_inds]
                    if args.norm_adv:
                        mb_advantages = (mb_advantages - mb_advantages.mean()) / (
                            mb_advantages.std() + 1e-8
                        )

                    # Policy loss
                    pg_loss1 = -mb_advantages * ratio
                    pg_loss2 = -mb_advantages * torch.clamp(
                        ratio, 1 - args.clip_coef, 1 + args.clip_coef
                    )
                    pg_loss = torch.max(pg_loss1, pg_loss2).mean()

                    # Value loss
                    newvalue = newvalue.view(-1)
                    if args.clip_vloss:
                        v_loss_unclipped = (newvalue - b_returns[mb_inds]) ** 2
                        v_clipped = b_values[mb_inds] + torch.clamp(
                            newvalue - b_values[mb_inds],
                            -args.clip_coef,
                            args.clip_coef,
                        )
                        v_loss_clipped = (v_clipped - b_returns[mb_inds]) ** 2
                        v_loss_max = torch.max(v_loss_unclipped, v_loss_clipped)
                        v_loss = 0.5 * v_loss_max.mean()
                    else:
                        v_loss = 0.5 * ((newvalue - b_returns[mb_inds]) ** 2).mean()

                    entropy_loss = entropy.mean()
                    loss = (
                        pg_loss - args.ent_coef * entropy_loss + v_loss * args.vf_coef
                    )

                    optimizer.zero_grad()
                    loss.backward()
                    nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                    optimizer.step()

                if args.target_kl is not None and approx_kl > args.target_kl:
                    break

            y_pred, y_true = b_values[b_inds].numpy(), b_returns[b_inds].numpy()
            var_y = np.var(y_true)
            explained_var = (
                np.nan if var_y == 0 else 1 - np.var(y_true - y_pred) / var_y
            )
            stats = {
                "learning_rate": optimizer.param_groups[0]["lr"],
                "value_loss": v_loss.item(),
                "policy_loss": pg_loss.item(),
                "entropy": entropy_loss.item(),
                "approx_kl": approx_kl.item(),
                "clipfrac": np.mean(clipfracs),
                "explained_variance": explained_var,
                "real_transitions": len(b_inds),  # < batch_size: reset steps masked
            }
            yield global_step, episodic_returns, stats, agent
    envs.close()


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    start_time, recent = time.time(), deque(maxlen=20)
    for global_step, episodic_returns, _, _ in train(args):
        recent.extend(episodic_returns)
        sps = int(global_step / (time.time() - start_time))
        mean = f"{np.mean(recent):.1f}" if recent else "-"
        print(f"global_step={global_step} episodic_return(last 20)={mean} SPS={sps}")


if __name__ == "__main__":
    main()
