"""bench_batched.py's simulator table: each ``vecmode.simulators`` adapter's
step against its simulator's own, over the fakes of ``tests/simulators/fakes``
(and gymnax itself where it is installed).

Each contestant is a pair of step functions over fresh, equally seeded
simulators: the simulator's own step (its native API, jitted where it is JAX)
and the adapter's ``step``. A pair's calls are interleaved, round by round; the
ratio is the median over rounds of adapter time / own time. A timed run lasts
at least ``MIN_SECONDS`` (the actions repeated).
"""

from __future__ import annotations

import gc
import importlib.util
import math
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.simulators

#: A contestant: ``(own step, adapter step)`` given an action batch, and the
#: action batches (in the simulator's library).
Pair = tuple[Callable[[Any], Any], Callable[[Any], Any], list[Any]]

#: The shortest timed run, in seconds.
MIN_SECONDS = 0.1

SIMULATOR_HEADERS = ("simulator", "sub-envs", "own us", "adapter us", "adapter/own")


def _torch_pair(name: str, n: int, steps: int) -> Pair:
    from tests.simulators.fakes import isaaclab, maniskill, rsl_rl
    from tests.simulators.support import action_batches

    from vecmode import simulators

    build, adapter_of = {
        "ManiSkill3": (
            lambda: maniskill.ManiSkillVectorEnv(n, max_episode_steps=20),
            simulators.ManiSkillAdapter,
        ),
        "IsaacLab": (
            lambda: isaaclab.DirectRLEnv(n, 20, compute_final_obs=True),
            simulators.IsaacLabAdapter,
        ),
        "Genesis (RSL-RL)": (
            lambda: rsl_rl.Go2Env(n, 20),
            simulators.RslRlAdapter,
        ),
    }[name]
    own, adapter = build(), adapter_of(build())
    own.reset()
    adapter.reset(seed=0)
    return own.step, adapter.step, action_batches(n, steps)


def _brax_pair(n: int, steps: int) -> Pair:
    import jax
    import jax.numpy as jnp
    from tests.simulators.fakes import brax

    from vecmode.simulators import BraxAdapter

    env = brax.wrap(brax.Slide(), 20)
    adapter = BraxAdapter(brax.wrap(brax.Slide(), 20), n, seed=0)
    adapter.reset()
    step = jax.jit(env.step)
    box = [jax.jit(env.reset)(jax.random.split(jax.random.PRNGKey(0), n))]

    def own(actions: Any) -> Any:
        box[0] = step(box[0], actions)
        return box[0].obs

    keys = jax.random.split(jax.random.PRNGKey(1), steps)
    actions = [jax.random.uniform(k, (n, 1), jnp.float32, -1.0, 1.0) for k in keys]
    return own, lambda a: adapter.step(a)[0], [jnp.asarray(a) for a in actions]


def _craftax_pair(n: int, steps: int) -> Pair:
    import jax
    import jax.numpy as jnp
    from tests.simulators.fakes import craftax

    from vecmode.simulators import CraftaxAdapter

    def build() -> Any:
        return craftax.OptimisticResetVecEnvWrapper(craftax.Walker(), n, 16)

    env, params = build(), craftax.EnvParams(max_timesteps=20)
    adapter = CraftaxAdapter(build(), params, seed=0)
    adapter.reset()
    _, state = env.reset(jax.random.PRNGKey(0), params)

    @jax.jit
    def step(key: Any, state: Any, actions: Any) -> Any:
        key, sub = jax.random.split(key)
        return key, env.step(sub, state, actions, params)  # all it returns

    box = [jax.random.PRNGKey(1), state]

    def own(actions: Any) -> Any:
        box[0], out = step(box[0], box[1], actions)
        box[1] = out[1]
        return out[0]

    keys = jax.random.split(jax.random.PRNGKey(2), steps)
    actions = [jax.random.randint(k, (n,), 0, 3, jnp.int32) for k in keys]
    return own, lambda a: adapter.step(a)[0], actions


def _gymnax_pair(n: int, steps: int, real: bool = False) -> Pair:
    import jax
    import jax.numpy as jnp

    from vecmode.simulators import GymnaxAdapter

    if real:
        import gymnax

        env, params = gymnax.make("CartPole-v1")
        params = params.replace(max_steps_in_episode=20)
    else:
        from tests.simulators.fakes import gymnax as fake

        env, params = fake.FakeGymnaxEnv(), fake.Params(20, 30)
    adapter = GymnaxAdapter(env, params, num_envs=n, seed=0)
    adapter.reset()

    @jax.jit
    def step(key: Any, state: Any, actions: Any) -> Any:  # gymnax's own, vmapped
        key, sub = jax.random.split(key)
        keys = jax.random.split(sub, n)
        out = jax.vmap(lambda *a: env.step(*a, params))(keys, state, actions)
        return key, out  # all that gymnax's step returns

    keys = jax.random.split(jax.random.PRNGKey(0), n)
    _, state = jax.vmap(lambda k: env.reset(k, params))(keys)
    box = [jax.random.PRNGKey(1), state]

    def own(actions: Any) -> Any:
        box[0], out = step(box[0], box[1], actions)
        box[1] = out[1]
        return out[0]

    keys = jax.random.split(jax.random.PRNGKey(2), steps)
    actions = [jax.random.randint(k, (n,), 0, 2, jnp.int32) for k in keys]
    return own, lambda a: adapter.step(a)[0], actions


def _jumanji_pair(n: int, steps: int) -> Pair:
    import jax
    import jax.numpy as jnp
    from tests.simulators.fakes import jumanji as fake

    from vecmode.simulators import JumanjiAdapter

    def build() -> Any:
        return fake.VmapAutoResetWrapper(fake.FakeJumanjiEnv(20, 30), True)

    env, adapter = build(), JumanjiAdapter(build(), num_envs=n, seed=0)
    adapter.reset()
    step = jax.jit(env.step)
    box = [jax.jit(env.reset)(jax.random.split(jax.random.PRNGKey(0), n))[0]]

    def own(actions: Any) -> Any:
        box[0], timestep = step(box[0], actions)
        return timestep.observation

    keys = jax.random.split(jax.random.PRNGKey(2), steps)
    actions = [jax.random.randint(k, (n,), 0, 2, jnp.int32) for k in keys]
    return own, lambda a: adapter.step(a)[0], actions


#: The contestants: name -> builder of its pair for ``(num_envs, steps)``.
PAIRS: dict[str, Callable[[int, int], Pair]] = {
    "ManiSkill3": lambda n, s: _torch_pair("ManiSkill3", n, s),
    "IsaacLab": lambda n, s: _torch_pair("IsaacLab", n, s),
    "Genesis (RSL-RL)": lambda n, s: _torch_pair("Genesis (RSL-RL)", n, s),
    "Brax": _brax_pair,
    "Craftax": _craftax_pair,
    "gymnax": _gymnax_pair,
    "Jumanji": _jumanji_pair,
    "gymnax CartPole-v1 (real)": lambda n, s: _gymnax_pair(n, s, real=True),
}


_NEEDS = {"Brax": "jax", "Craftax": "jax", "gymnax": "jax", "Jumanji": "jax"}


def _installed(name: str) -> bool:
    module = "gymnax" if "(real)" in name else _NEEDS.get(name, "torch")
    return importlib.util.find_spec(module) is not None


def _block(result: Any) -> None:
    getattr(result, "block_until_ready", lambda: None)()  # JAX dispatches async


def _timed(step: Callable[[Any], Any], actions: list[Any]) -> float:
    gc.collect()
    gc.freeze()  # the survivors: later collections skip them
    start = time.perf_counter()
    result = None
    for a in actions:
        result = step(a)
    _block(result[0] if isinstance(result, tuple) else result)
    return (time.perf_counter() - start) / len(actions)


def simulator_rows(n: int, steps: int, rounds: int) -> list[list[str]]:
    """One row per installed simulator of ``n`` sub-envs: own and adapter
    microseconds per step (medians), and adapter/own."""
    rows = []
    for name, pair in PAIRS.items():
        if not _installed(name):
            continue
        own, adapter, actions = pair(n, steps)
        _timed(own, actions[:20])  # compile, warm up
        _timed(adapter, actions[:20])
        # a timed run of at least MIN_SECONDS: a fast step (Brax's fake, ~45 us)
        # is otherwise timed over a few ms, where the machine's noise is larger
        run = _timed(own, actions) * len(actions)  # (seconds per step * steps)
        actions *= max(1, math.ceil(MIN_SECONDS / (run or 1e-9)))
        times: dict[str, list[float]] = {"own": [], "adapter": []}
        for r in range(rounds):
            order = [("own", own), ("adapter", adapter)][:: 1 if r % 2 else -1]
            for label, step in order:
                times[label].append(_timed(step, actions))
        ratio = statistics.median(
            a / o for a, o in zip(times["adapter"], times["own"], strict=True)
        )
        us = [f"{1e6 * statistics.median(times[k]):.1f}" for k in ("own", "adapter")]
        rows.append([name, f"{n:,}", *us, f"{ratio:.2f}x"])
        gc.unfreeze()  # (_timed froze this pair: now it can go)
        print(f"  {name}, {n} sub-envs done", file=sys.stderr, flush=True)
    return rows
