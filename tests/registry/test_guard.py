"""The compatibility registry's guard(), and what importing vecmode leaves alone."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading

import pytest
from gymnasium.vector import VectorWrapper
from gymnasium.wrappers import vector as gym_wrappers

import vecmode
from tests.registry.registry_helpers import NS, SS, in_mode, usable
from vecmode import registry

# ------------------------------------------------------------------ guard()
GYM_CLASSES = [
    getattr(gym_wrappers, name)
    for name in ("NormalizeReward", "ClipReward", "RecordEpisodeStatistics")
]
#: Each class's own __init__, and VectorWrapper's, before any guard.
OWN_INITS = [cls.__dict__.get("__init__") for cls in [*GYM_CLASSES, VectorWrapper]]


def no_trace() -> None:
    """Nothing is instrumented for a guard, and every __init__ is the original."""
    assert not registry.instrumented() & {*GYM_CLASSES, VectorWrapper}
    now = [cls.__dict__.get("__init__") for cls in [*GYM_CLASSES, VectorWrapper]]
    assert all(a is b for a, b in zip(now, OWN_INITS, strict=True))


def test_gymnasium_wrappers_are_unchecked_unless_guarded():
    envs = in_mode(SS)
    gym_wrappers.NormalizeReward(envs)  # Gymnasium accepts it, silently wrong
    with vecmode.guard() as handle:
        assert handle.active
        # checked where every vector wrapper's __init__ goes
        assert VectorWrapper in registry.instrumented()
        with pytest.raises(vecmode.IncompatibleModeError) as info:
            gym_wrappers.NormalizeReward(envs)
        assert "known to be wrong in SameStep" in str(info.value)
        gym_wrappers.NormalizeReward(in_mode(NS))  # its supported mode
        # a class Gymnasium itself refuses gets vecmode's message, not Gymnasium's
        with pytest.raises(vecmode.IncompatibleModeError, match="TransformObservation"):
            gym_wrappers.TransformObservation(envs, lambda o: o)
    assert not handle.active
    no_trace()
    gym_wrappers.NormalizeReward(envs)
    usable(envs)


def test_guards_nest_are_released_in_any_order_and_leave_no_trace():
    outer = vecmode.guard()
    inner = vecmode.guard()
    outer.release()
    with pytest.raises(vecmode.IncompatibleModeError):
        gym_wrappers.NormalizeReward(in_mode(SS))  # inner still held
    inner.release()
    inner.release()  # idempotent
    no_trace()
    gym_wrappers.NormalizeReward(in_mode(SS)).close()


def test_guard_checks_user_subclasses_of_gymnasium_wrappers():
    class MyNorm(gym_wrappers.NormalizeReward):
        pass

    with vecmode.guard(), pytest.raises(vecmode.IncompatibleModeError, match="MyNorm"):
        MyNorm(in_mode(SS))


def test_guard_also_covers_modules_imported_later(monkeypatch):
    """Gymnasium's optional modules are checked once imported, with no hook."""
    name = "gymnasium.wrappers.vector.stateful_reward"
    monkeypatch.delitem(sys.modules, name)
    with vecmode.guard():
        import importlib

        module = importlib.import_module(name)
        with pytest.raises(vecmode.IncompatibleModeError):
            module.NormalizeReward(in_mode(SS))
    assert "__init__" in module.NormalizeReward.__dict__
    no_trace()


def in_thread(build) -> list[BaseException]:
    """What ``build()`` raises in a new thread."""
    caught: list[BaseException] = []

    def run() -> None:
        try:
            build()
        except Exception as error:
            caught.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    return caught


def test_a_guard_holds_in_its_own_thread_only():
    envs = in_mode(SS)
    with vecmode.guard() as handle:
        assert in_thread(lambda: gym_wrappers.NormalizeReward(envs)) == []
        with pytest.raises(vecmode.IncompatibleModeError):
            gym_wrappers.NormalizeReward(envs)
        # it is released where it was taken
        (error,) = in_thread(handle.release)
        assert str(error) == (
            "this vecmode.guard() handle was made in another thread or task (guard "
            "holds in the thread or task that makes it): release it there."
        )
        assert handle.active
    no_trace()

    async def parent() -> None:  # a child task's copy of the context, too
        handle = vecmode.guard()

        async def child() -> None:
            handle.release()

        with pytest.raises(RuntimeError, match="made in another thread or task"):
            await asyncio.create_task(child())
        assert handle.active
        handle.release()

    asyncio.run(parent())
    gym_wrappers.NormalizeReward(envs)  # nothing left held
    with pytest.raises(TypeError, match="no decorator"):
        vecmode.guard()(lambda: None)
    gym_wrappers.NormalizeReward(envs)
    no_trace()

    # a guard taken in another thread checks there, not here
    def guarded() -> None:
        with vecmode.guard():
            gym_wrappers.NormalizeReward(envs)

    (error,) = in_thread(guarded)
    assert isinstance(error, vecmode.IncompatibleModeError)
    gym_wrappers.NormalizeReward(envs)
    no_trace()


# ------------------------------------------------------------------ isolation
@pytest.mark.slow
def test_importing_vecmode_patches_nothing():
    code = textwrap.dedent(
        """
        import importlib, pkgutil, sys
        import gymnasium, gymnasium.vector, gymnasium.wrappers, gymnasium.wrappers.vector

        def snapshot():
            seen = {}
            for name, module in list(sys.modules.items()):
                if not name.startswith(("gymnasium", "numpy", "wrapt")):
                    continue
                for attr, value in list(vars(module).items()):
                    if isinstance(value, type):
                        seen[(name, attr)] = (id(value), dict(vars(value)))
            return seen

        before = snapshot()
        meta_path = list(sys.meta_path)
        import vecmode, vecmode.cli, vecmode.registry
        after = snapshot()
        changed = [key for key in before if after.get(key) != before[key]]
        print("changed", changed)
        print("meta_path", sys.meta_path == meta_path)
        print("instrumented", sorted(c.__module__ for c in vecmode.registry.instrumented()))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out[0] == "changed []"
    assert out[1] == "meta_path True"
    # only vecmode's own classes are checked at construction
    modules = set(eval(out[2].partition(" ")[2]))
    assert {"vecmode.autoreset", "vecmode.wrappers.base"} <= modules
    assert all(m.startswith("vecmode.") for m in modules), modules


@pytest.mark.slow
def test_checks_run_under_python_dash_o():
    code = textwrap.dedent(
        """
        import gymnasium as gym, vecmode
        envs = vecmode.make_vec(
            "CartPole-v1",
            vectorization_mode="sync",
            num_envs=2,
            autoreset_mode="SameStep",
        )
        try:
            vecmode.DisableAutoreset(envs)
        except vecmode.IncompatibleModeError:
            print("refused")
        with vecmode.guard():
            try:
                gym.wrappers.vector.NormalizeReward(envs)
            except vecmode.IncompatibleModeError:
                print("guarded")
        """
    )
    out = subprocess.run(
        [sys.executable, "-O", "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["refused", "guarded"], out.stderr
