"""``reset(options={"reset_mask": m})`` over the adapters whose simulator has no
partial reset (gymnax, Brax, Craftax, Jumanji, IsaacLab, RSL-RL; over the fakes
and the real gymnax): a mask of no sub-env is a no-op, as over vecmode's cores
(the current observations, ``{}``, the simulator untouched, no host copy), a
mask of every sub-env a whole reset, any other mask refused."""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
torch = pytest.importorskip("torch")
jnp = jax.numpy

from tests.batched.support import host, no_host_copies  # noqa: E402
from vecmode.simulators import (  # noqa: E402
    BraxAdapter,
    CraftaxAdapter,
    GymnaxAdapter,
    IsaacLabAdapter,
    JumanjiAdapter,
    RslRlAdapter,
)

N = 4
STEPS = 8  # episodes end (and the simulators reset inside their step) on the way


def _gymnax() -> Any:
    from tests.simulators.fakes.gymnax import FakeGymnaxEnv, Params

    return GymnaxAdapter(FakeGymnaxEnv(), Params(3, 5), num_envs=N, seed=0)


def _gymnax_real() -> Any:
    gymnax = pytest.importorskip("gymnax")
    env, params = gymnax.make("CartPole-v1")
    params = params.replace(max_steps_in_episode=5)  # episodes end in the run
    return GymnaxAdapter(env, params, num_envs=N, seed=0)


def _brax() -> Any:
    from tests.simulators.fakes import brax as fake

    return BraxAdapter(fake.wrap(fake.Slide(1.0), 3, record=False), N, seed=0)


def _craftax() -> Any:
    from tests.simulators.fakes import craftax as fake

    wrapper = fake.OptimisticResetVecEnvWrapper(fake.Walker(), N, 2, record=False)
    return CraftaxAdapter(wrapper, fake.EnvParams(3, 2), seed=0)


def _jumanji() -> Any:
    from tests.simulators.fakes import jumanji as fake

    env = fake.FakeJumanjiEnv(time_limit=3, max_length=5)
    return JumanjiAdapter(fake.AutoResetWrapper(env, True), num_envs=N, seed=0)


def _isaaclab() -> Any:
    from tests.simulators.fakes.isaaclab import DirectRLEnv

    return IsaacLabAdapter(DirectRLEnv(N, 3, compute_final_obs=True, critic=True))


def _rsl_rl() -> Any:
    from tests.simulators.fakes.rsl_rl import Go2Env

    return RslRlAdapter(Go2Env(N, 3))


def _ints(step: int) -> Any:
    return jnp.asarray(np.roll([1, 0, 1, 1], step), dtype=jnp.int32)


def _moves(step: int) -> Any:
    return jnp.asarray(np.roll([0, 1, 2, 1], step), dtype=jnp.int32)


def _pushes(step: int) -> Any:
    return jnp.full((N, 1), 0.9 if step % 3 else -0.4, dtype=jnp.float32)


def _torques(step: int) -> Any:
    return torch.linspace(-1.0, 1.0, 2 * N).reshape(N, 2) * (step % 3 - 1)


#: Each adapter: its builder, its action of a step, its array library.
ADAPTERS: dict[str, tuple[Callable[[], Any], Callable[[int], Any], str]] = {
    "gymnax": (_gymnax, _ints, "jax"),
    "gymnax-real": (_gymnax_real, _ints, "jax"),
    "brax": (_brax, _pushes, "jax"),
    "craftax": (_craftax, _moves, "jax"),
    "jumanji": (_jumanji, _ints, "jax"),
    "isaaclab": (_isaaclab, _torques, "torch"),
    "rsl_rl": (_rsl_rl, _torques, "torch"),
}


def mask_of(rows: list[bool], library: str) -> Any:
    """A reset mask in ``library`` (``"numpy"``, or the batch's own)."""
    if library == "torch":
        return torch.tensor(rows, dtype=torch.bool)
    if library == "jax":
        return jnp.asarray(rows, dtype=bool)
    return np.array(rows, dtype=bool)


def assert_same(got: Any, want: Any) -> None:
    """Batches (dicts of groups too) equal, value for value, on the host."""
    got, want = host(got), host(want)
    if isinstance(want, dict):
        assert set(got) == set(want)
        for key in want:
            assert_same(got[key], want[key])
    else:
        np.testing.assert_array_equal(got, want)


@functools.cache
def _compiled(name: str) -> Any:
    """A JAX adapter never reset, to copy (its jitted functions compiled once)."""
    return ADAPTERS[name][0]()


def twins(name: str) -> tuple[Any, Any, Callable[[int], Any], str]:
    """Two adapters built alike (and reset alike: the same runs), the action of
    a step, the batches' library. A JAX adapter's state is its immutable
    ``state`` and ``key``, replaced by each call: shallow copies of one are
    two; a torch simulator has its own state: built twice."""
    build, action, library = ADAPTERS[name]
    if library == "jax":
        return copy.copy(_compiled(name)), copy.copy(_compiled(name)), action, library
    return build(), build(), action, library


def step_both(adapter: Any, twin: Any, actions: Any) -> tuple[Any, ...]:
    """A step of both, its observations, rewards and flags equal."""
    result = adapter.step(actions)
    for got, want in zip(result[:4], twin.step(actions)[:4], strict=True):
        assert_same(got, want)
    return result


@pytest.mark.parametrize("numpy_mask", [False, True], ids=["native", "numpy"])
@pytest.mark.parametrize("name", ADAPTERS)
def test_a_mask_of_no_sub_env_is_a_no_op(name: str, numpy_mask: bool) -> None:
    """The current observations (a copy) and ``{}``; the simulator untouched: the
    run goes on as its twin's, which was never given the mask (a seed given
    with it is not used either); no batch copied to the host."""
    adapter, twin, action, library = twins(name)
    none = mask_of([False] * N, "numpy" if numpy_mask else library)
    obs, _ = adapter.reset(seed=3)
    twin.reset(seed=3)
    with no_host_copies():
        kept, infos = adapter.reset(options={"reset_mask": none})
    assert_same(kept, obs)
    assert infos == {}
    ended = 0
    for step in range(STEPS):
        obs, _, terminated, truncated, _ = step_both(adapter, twin, action(step))
        ended += int((terminated | truncated).sum())
        with no_host_copies():
            kept, infos = adapter.reset(
                seed=None if step % 2 else 11, options={"reset_mask": none}
            )
        assert_same(kept, obs)
        assert infos == {}
        if library == "torch":  # a copy: the caller's batch, not the env's
            leaves = kept.values() if isinstance(kept, dict) else [kept]
            sources = obs.values() if isinstance(obs, dict) else [obs]
            for leaf, source in zip(leaves, sources, strict=True):
                assert leaf is not source
                assert leaf.data_ptr() != source.data_ptr()
    assert ended > 0  # the no-op was tried after the simulator's own resets
    step_both(adapter, twin, action(STEPS))


@pytest.mark.parametrize("name", ADAPTERS)
def test_a_mask_of_no_sub_env_before_a_reset_is_refused(name: str) -> None:
    """There are no observations to keep yet: say to reset first."""
    adapter, _, _, library = twins(name)
    with pytest.raises(RuntimeError, match=r"call reset\(\) before a reset"):
        adapter.reset(options={"reset_mask": mask_of([False] * N, library)})
    adapter.reset(options={"reset_mask": mask_of([True] * N, library)})


@pytest.mark.parametrize("numpy_mask", [False, True], ids=["native", "numpy"])
@pytest.mark.parametrize("name", ADAPTERS)
def test_a_mask_of_every_sub_env_is_a_whole_reset(name: str, numpy_mask: bool) -> None:
    """As ``reset()``, with its seed; no batch copied to the host."""
    adapter, twin, action, library = twins(name)
    every = mask_of([True] * N, "numpy" if numpy_mask else library)
    adapter.reset(seed=3)
    twin.reset(seed=3)
    for step in range(2):
        step_both(adapter, twin, action(step))
    with no_host_copies():
        obs, _ = adapter.reset(seed=5, options={"reset_mask": every})
    assert_same(obs, twin.reset(seed=5)[0])
    for step in range(STEPS):
        step_both(adapter, twin, action(step))


@pytest.mark.parametrize("numpy_mask", [False, True], ids=["native", "numpy"])
@pytest.mark.parametrize("name", ADAPTERS)
def test_a_mask_of_some_sub_envs_is_refused(name: str, numpy_mask: bool) -> None:
    """Refused, naming the simulator, and nothing reset."""
    adapter, twin, action, library = twins(name)
    some = mask_of([False, True, False, False], "numpy" if numpy_mask else library)
    adapter.reset(seed=3)
    twin.reset(seed=3)
    step_both(adapter, twin, action(0))
    with no_host_copies(), pytest.raises(ValueError) as error:
        adapter.reset(options={"reset_mask": some})
    message = str(error.value)
    assert f"{type(adapter).__name__} cannot reset some sub-envs alone" in message
    assert "reset() without reset_mask" in message
    for step in range(1, STEPS):
        step_both(adapter, twin, action(step))


@pytest.mark.parametrize("name", ADAPTERS)
def test_a_mask_of_another_array_library_is_refused(name: str) -> None:
    """batched.md's rule, as over vecmode's policies and wrappers: it was taken
    (ManiSkill's copied it through the host)."""
    adapter, twin, action, library = twins(name)
    other = mask_of([True] * N, "torch" if library == "jax" else "jax")
    adapter.reset(seed=3)
    twin.reset(seed=3)
    with pytest.raises(TypeError, match=f"the env's batches are {library}"):
        adapter.reset(options={"reset_mask": other})
    for step in range(STEPS):
        step_both(adapter, twin, action(step))


def test_a_collector_steps_on_after_an_adapter_refused_its_mask() -> None:
    """The adapter counts the calls that ran: a refused one blocked the collector
    as a reset failed midway (a seed not an int failed inside the simulator's
    key, or, 2.5, was taken)."""
    import vecmode

    adapter, twin, action, _ = twins("gymnax")
    collector = vecmode.TransitionCollector(adapter)
    collector.reset(seed=3)
    twin.reset(seed=3)
    with pytest.raises(ValueError, match="cannot reset some sub-envs alone"):
        collector.reset(options={"reset_mask": np.array([True, False, False, False])})
    for seed in ("abc", 2.5, True):
        with pytest.raises(vecmode.errors.SeedError, match="seed must be None or an"):
            collector.reset(seed=seed)
    for step in range(3):
        t = collector.step(action(step))
        assert_same(t.rewards, twin.step(action(step))[1])
