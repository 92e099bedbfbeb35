"""Machine instructions per step of the PPO stack, counted, not timed.

Timed ratios on a shared machine move with its load; the number of instructions a
step executes does not. This script counts them with valgrind's callgrind for the
PPO stack of ``bench_wrappers.py`` (``vecmode.wrappers.ppo_stack`` and the five
layers it fuses) over a *replay*: a run of vecmode's 16-sub-env CartPole-v1 env in
the given mode, recorded first and then replayed without its physics, so what is
counted is the stack's own work. Each contestant runs twice under callgrind, for
``--short`` and ``--long`` steps after the same recording and warm-up; the
difference, divided by the difference in steps, is the count per vector step
(everything else, imports and recording included, cancels out).

Needs ``valgrind`` on the PATH (a few minutes per contestant: callgrind runs
Python about 50x slower). The numbers depend on the Python, NumPy and CPU
instruction set; compare counts from one machine.

Run::

    python benchmarks/instructions_stack.py                  # NextStep and SameStep
    python benchmarks/instructions_stack.py --modes NextStep --stacks ppo_stack
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from typing import Any

import numpy as np
from gymnasium.vector import VectorEnv
from gymnasium.vector.utils import batch_space

NUM_ENVS = 16
RECORDED = 2000
STACKS = ("bare", "ppo_stack", "five")


class Replay(VectorEnv):
    """Replays a recorded run (observations and rewards copied, infos new dicts)."""

    def __init__(self, recording: tuple[Any, ...]) -> None:
        obs_space, act_space, metadata, self._first, self._steps = recording
        self.num_envs = NUM_ENVS
        self.single_observation_space = obs_space
        self.single_action_space = act_space
        self.observation_space = batch_space(obs_space, NUM_ENVS)
        self.action_space = batch_space(act_space, NUM_ENVS)
        self.metadata = dict(metadata)
        self._next = iter(self._steps)

    def reset(self, *, seed: Any = None, options: Any = None) -> tuple[Any, Any]:
        self._next = iter(self._steps)
        obs, infos = self._first
        return obs.copy(), dict(infos)

    def step(self, actions: Any) -> Any:
        obs, rewards, terminations, truncations, infos = next(self._next)
        return obs.copy(), rewards.copy(), terminations, truncations, dict(infos)


def record(mode: str) -> tuple[Any, ...]:
    """A run of vecmode's CartPole-v1 env in ``mode`` (NextStep or SameStep)."""
    import vecmode

    env = vecmode.make_vec(
        "CartPole-v1", NUM_ENVS, vectorization_mode="sync", autoreset_mode=mode
    )
    first = env.reset(seed=0)
    actions = np.random.default_rng(0).integers(0, 2, size=(RECORDED, NUM_ENVS))
    steps = [env.step(row) for row in actions]
    recording = (
        env.single_observation_space,
        env.single_action_space,
        env.metadata,
        first,
        steps,
    )
    env.close()
    return recording


def run(mode: str, stack: str, steps: int) -> None:
    """The child: record, build the stack, warm up, step ``steps`` times."""
    from vecmode.wrappers import ppo_stack

    env: Any = Replay(record(mode))
    if stack != "bare":
        env = ppo_stack(env, gamma=0.99, fused=stack == "ppo_stack")
    actions = np.zeros(NUM_ENVS, dtype=np.int64)
    env.reset(seed=0)
    for _ in range(100):
        env.step(actions)
    env.reset(seed=0)
    for _ in range(steps):
        env.step(actions)


def count(mode: str, stack: str, steps: int) -> int:
    """Instructions callgrind counts for a child run of ``steps`` steps."""
    out = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            sys.executable,
            __file__,
            "--child",
            mode,
            stack,
            str(steps),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    found = re.search(r"Collected : (\d+)", out.stderr)
    if found is None:
        raise RuntimeError(f"no count in valgrind's output:\n{out.stderr[-2000:]}")
    return int(found.group(1))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", nargs="+", default=["NextStep", "SameStep"])
    parser.add_argument("--stacks", nargs="+", default=list(STACKS), choices=STACKS)
    parser.add_argument("--short", type=int, default=500)
    parser.add_argument("--long", type=int, default=1500)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        mode, stack, steps = args.child
        run(mode, stack, int(steps))
        return
    if args.long > RECORDED - 100 or args.short >= args.long:
        parser.error(f"need --short < --long <= {RECORDED - 100}")
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not on the PATH (apt-get install valgrind)")
    print(f"instructions per vector step ({NUM_ENVS} sub-envs, replayed CartPole-v1)")
    print("| mode | stack | instructions per step |")
    print("| --- | --- | ---: |")
    for mode in args.modes:
        for stack in args.stacks:
            short = count(mode, stack, args.short)
            long = count(mode, stack, args.long)
            per_step = (long - short) / (args.long - args.short)
            print(f"| {mode} | {stack} | {per_step / 1000:,.1f}k |", flush=True)


if __name__ == "__main__":
    main()
