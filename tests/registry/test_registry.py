"""The compatibility registry: declaring modes, and the checks at construction."""

from __future__ import annotations

import asyncio
import re
import sys
import threading
import types
import warnings
from importlib import import_module

import gymnasium as gym
import pytest
import wrapt
from gymnasium.vector import VectorWrapper
from gymnasium.wrappers import vector as gym_wrappers

import vecmode
from tests.registry.registry_helpers import (
    NS,
    SS,
    D,
    NoSameStep,
    Recorder,
    core,
    gym_env,
    in_mode,
    undeclared_env,
    usable,
)
from vecmode import errors, modes, registry
from vecmode.forwarding import ForwardingWrapper


# ------------------------------------------------------------------ @supports
def test_supports_declares_and_checks_before_init_runs():
    assert vecmode.supported_modes(NoSameStep) == frozenset({NS, D})
    envs = in_mode(SS)
    NoSameStep.built = 0
    with pytest.raises(vecmode.IncompatibleModeError) as info:
        NoSameStep(envs)
    assert NoSameStep.built == 0, "the check runs before the wrapper's __init__"
    assert isinstance(info.value, ValueError)
    message = str(info.value)
    for needed in (
        "NoSameStep",
        "mode SameStep",
        "NextStep, Disabled",
        "It ignores info['final_obs'].",
        "autoreset_mode='NextStep'",
    ):
        assert needed in message, (needed, message)
    usable(envs)
    for mode in (NS, D):
        wrapped = NoSameStep(in_mode(mode))
        assert vecmode.supported_modes(wrapped) == frozenset({NS, D})
        wrapped.close()
    envs.close()


def test_the_message_is_the_one_built_in_errors():
    envs = in_mode(SS)
    with pytest.raises(vecmode.IncompatibleModeError) as info:
        NoSameStep(envs)
    expected = errors.incompatible_mode(
        "NoSameStep",
        SS,
        {NS, D},
        "It ignores info['final_obs'].",
        "Build the env with autoreset_mode='NextStep' or 'Disabled': its mode "
        "converts to no other (its ended sub-envs are already reset within the "
        "step).",
    )
    assert str(info.value) == expected
    envs.close()
    # a declaration's texts read as sentences, whether they end in a full stop
    assert errors.incompatible_mode("W", SS, {NS}, "it forgets x", "Use Y ") == (
        "W cannot wrap an env in mode SameStep: it supports NextStep. it forgets x. "
        "Use Y."
    )


def test_the_advice_converts_only_a_mode_that_converts():
    """From SameStep no conversion exists (with_autoreset would refuse it); from
    NextStep, with_autoreset reaches Disabled and SameStep."""
    for mode, wanted, advice in (
        (SS, NS, "Build the env with autoreset_mode='NextStep'"),
        (NS, SS, "Convert the env first, e.g. vecmode.with_autoreset(env, 'SameStep')"),
    ):
        envs = in_mode(mode)
        with pytest.raises(vecmode.IncompatibleModeError) as info:
            vecmode.require_mode(envs, wanted)
        assert advice in str(info.value), str(info.value)
        if advice.startswith("Convert"):
            vecmode.require_mode(vecmode.with_autoreset(envs, wanted), wanted)
        envs.close()


@pytest.mark.parametrize("wrapped", [False, True], ids=["core", "wrapped"])
@pytest.mark.parametrize("wanted", [(NS,), (NS, SS)], ids=["NextStep", "either"])
def test_the_advice_converts_into_next_step_only_a_core(wrapped, wanted):
    """with_autoreset makes NextStep of a vecmode core alone: over a wrapped
    Disabled stack the advice was a conversion that raised."""
    envs = in_mode(D)
    envs = vecmode.wrappers.RecordEpisodeStatistics(envs) if wrapped else envs
    with pytest.raises(vecmode.IncompatibleModeError) as info:
        vecmode.require_mode(envs, *wanted)
    message = str(info.value)
    if wrapped and wanted == (NS,):
        assert message.endswith(
            "Build the env with autoreset_mode='NextStep', then wrap it: only a "
            "vecmode core converts into NextStep, and this env is wrapped."
        )
        return
    target = SS if wrapped else NS
    assert f"vecmode.with_autoreset(env, {target.value!r})" in message
    vecmode.require_mode(vecmode.with_autoreset(envs, target), *wanted)  # it works


def test_supports_accepts_only_vector_wrapper_classes_and_real_modes():
    with pytest.raises(
        TypeError, match=r"subclass of gymnasium\.vector\.VectorWrapper"
    ):
        vecmode.supports(NS)(object)
    with pytest.raises(ValueError, match="not an autoreset mode"):
        vecmode.supports("Sometimes")
    with pytest.raises(ValueError, match="at least one mode"):
        vecmode.supports()
    with pytest.raises(TypeError, match=r"without its modes on Bare: write @vecmode"):

        @vecmode.supports  # no parentheses, no modes
        class Bare(VectorWrapper):
            pass

    @vecmode.supports([NS, "Disabled"])  # one list of modes, as register takes
    class Listed(VectorWrapper):
        pass

    assert vecmode.supported_modes(Listed) == frozenset({NS, D})

    @vecmode.supports(mode for mode in (NS, "SameStep"))  # any one iterable
    class Generated(VectorWrapper):
        pass

    assert vecmode.supported_modes(Generated) == frozenset({NS, SS})


def test_vecmode_policies_declare_through_supports():
    assert vecmode.registry.declaration(vecmode.SameStepAutoreset).output is SS
    assert vecmode.registry.declaration(vecmode.NextStepAutoreset).output is NS
    assert vecmode.supported_modes(vecmode.DisableAutoreset) == frozenset({NS, D})
    with pytest.raises(vecmode.IncompatibleModeError, match="SameStepAutoreset cannot"):
        vecmode.SameStepAutoreset(gym_env(SS))


# ------------------------------------------------------------------ inheritance
def test_subclasses_inherit_a_declaration_and_can_override_it():
    class Child(NoSameStep):
        pass

    @vecmode.supports(SS)
    class OnlySameStep(NoSameStep):
        pass

    assert vecmode.supported_modes(Child) == frozenset({NS, D})
    with pytest.raises(vecmode.IncompatibleModeError, match="Child cannot"):
        Child(in_mode(SS))
    assert vecmode.supported_modes(OnlySameStep) == frozenset({SS})
    OnlySameStep(in_mode(SS)).close()
    with pytest.raises(vecmode.IncompatibleModeError, match="OnlySameStep cannot"):
        OnlySameStep(in_mode(NS))


def test_a_subclass_is_checked_once_with_its_own_declaration():
    """Its __init__ calls the checked base __init__: one check, one warning."""

    @vecmode.supports(NS)
    class Outer(NoSameStep):
        def __init__(self, env) -> None:
            super().__init__(env)

    with pytest.warns(vecmode.UndeclaredModeWarning) as record:
        Outer(undeclared_env()).close()
    assert len(record) == 1
    # the base would accept Disabled, the subclass does not: the subclass decides
    with pytest.raises(vecmode.IncompatibleModeError, match="Outer cannot"):
        Outer(in_mode(D))


# ------------------------------------------------------------------ register
def test_register_checks_a_class_we_dont_own_and_unregister_removes_it(clean_registry):
    own_init = Recorder.__dict__["__init__"]
    vecmode.register(Recorder, [NS, SS])
    assert vecmode.supported_modes(Recorder) == frozenset({NS, SS})
    assert Recorder in registry.instrumented()
    Recorder.built = 0
    with pytest.raises(vecmode.IncompatibleModeError, match="Recorder cannot wrap"):
        Recorder(in_mode(D))
    assert Recorder.built == 0
    wrapped = Recorder(in_mode(SS), scale=2.0)  # arguments pass through
    assert wrapped.scale == 2.0 and Recorder.built == 1
    wrapped = Recorder(env=in_mode(NS))  # env as a keyword is checked too
    with pytest.raises(vecmode.IncompatibleModeError):
        Recorder(env=in_mode(D))

    assert vecmode.unregister(Recorder) is True
    assert Recorder.__dict__["__init__"] is own_init
    assert Recorder not in registry.instrumented()
    assert vecmode.supported_modes(Recorder) is None
    Recorder(in_mode(D)).close()
    assert vecmode.unregister(Recorder) is False


def test_register_is_idempotent_and_replaces_the_declaration(clean_registry):
    own_init = Recorder.__dict__["__init__"]
    vecmode.register(Recorder, NS)
    wrapper = Recorder.__dict__["__init__"]
    vecmode.register(Recorder, [NS, D])
    assert Recorder.__dict__["__init__"] is wrapper, "wrapped once, not twice"
    assert wrapper.__wrapped__ is own_init
    assert vecmode.supported_modes(Recorder) == frozenset({NS, D})
    Recorder(in_mode(D)).close()
    vecmode.unregister(Recorder)
    assert Recorder.__dict__["__init__"] is own_init


def test_unregister_restores_an_inherited_init(clean_registry):
    class NoInit(Recorder):
        pass

    vecmode.register(NoInit, SS)
    assert "__init__" in NoInit.__dict__
    vecmode.unregister(NoInit)
    assert "__init__" not in NoInit.__dict__
    assert NoInit.__init__ is Recorder.__init__


def test_register_overrides_the_decorator_until_unregistered(clean_registry):
    vecmode.register(NoSameStep, [SS])
    assert vecmode.supported_modes(NoSameStep) == frozenset({SS})
    NoSameStep(in_mode(SS)).close()
    with pytest.raises(vecmode.IncompatibleModeError):
        NoSameStep(in_mode(NS))
    vecmode.unregister(NoSameStep)
    assert vecmode.supported_modes(NoSameStep) == frozenset({NS, D})
    assert NoSameStep in registry.instrumented(), "its own declaration still checks"
    with pytest.raises(vecmode.IncompatibleModeError):
        NoSameStep(in_mode(SS))


def test_register_records_known_wrong_modes(clean_registry):
    vecmode.register(Recorder, NS, wrong={SS: "it counts the reset step."})
    found = vecmode.registry.declaration(Recorder)
    assert [found.behaviour(m) for m in (NS, SS, D)] == ["ok", "known-wrong", "refused"]
    with pytest.raises(vecmode.IncompatibleModeError) as info:
        Recorder(in_mode(SS))
    assert "known to be wrong in SameStep: it counts the reset step." in str(info.value)


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "text"),
    [
        ((Recorder, []), {}, ValueError, "at least one mode"),
        ((Recorder, ["NextStep"]), {"wrong": {"NextStep": "x"}}, ValueError, "both"),
        ((Recorder, [NS]), {"why": {"NextStep": "x"}}, ValueError, "NextStep is sup"),
        ((Recorder, [NS]), {"why": "x"}, TypeError, "why must be a dict of mode"),
        ((Recorder, [NS]), {"wrong": [SS]}, TypeError, "wrong must be a dict of"),
        ((Recorder, [NS]), {"why": {SS: 3}}, TypeError, "got {"),
        ((Recorder, [NS]), {"instead": 5}, TypeError, "instead must be a str"),
        ((Recorder, ["Often"]), {}, ValueError, "'Often' is not an autoreset mode"),
        ((Recorder(core()), [NS]), {}, TypeError, "not an instance"),
        ((gym.Wrapper, [NS]), {}, TypeError, "VectorWrapper"),
        (("no_colon", [NS]), {}, ValueError, "'package.module:ClassName'"),
        ((Recorder, [NS]), {"output": "Later"}, ValueError, "'Later'"),
    ],
)
def test_register_rejects_bad_declarations_clearly(args, kwargs, error, text):
    with pytest.raises(error, match=re.escape(text)):
        vecmode.register(*args, **kwargs)
    assert Recorder not in registry.instrumented()


LATER = """
import gymnasium as gym

class Later(gym.vector.VectorWrapper):
    built = 0

    def __init__(self, env):
        type(self).built += 1
        super().__init__(env)

NOT_A_CLASS = 3
"""


def import_hooks() -> tuple[list, dict]:
    """What an import hook would change: sys.meta_path and wrapt's hook registry."""
    return list(sys.meta_path), dict(wrapt.importer._post_import_hooks)


@pytest.mark.parametrize("first_met", ["construction", "lookup"])
@pytest.mark.parametrize("forget_by", ["name", "class"])
def test_register_by_name_checks_the_class_once_vecmode_meets_it(
    forget_by, first_met, tmp_path, monkeypatch, clean_registry
):
    """No import hook: the class is resolved when vecmode first meets it after
    its module is imported (a lookup, or a construction), and checked from then."""
    module = f"vm_later_{forget_by}_{first_met}"
    (tmp_path / f"{module}.py").write_text(LATER)
    monkeypatch.syspath_prepend(str(tmp_path))
    hooks = import_hooks()
    own_init = VectorWrapper.__dict__["__init__"]
    vecmode.register(f"{module}:Later", [NS])
    vecmode.register(f"{module}:NOT_A_CLASS", [NS])
    assert module not in sys.modules, "registering by name imports nothing"
    assert import_hooks() == hooks, "and installs no import hook"
    try:
        later = import_module(module).Later
        later_init = later.__dict__["__init__"]
        assert later not in registry.instrumented()
        with pytest.warns(RuntimeWarning, match="NOT_A_CLASS"):
            if first_met == "lookup":
                assert vecmode.supported_modes(later) == frozenset({NS})
            with pytest.raises(vecmode.IncompatibleModeError, match="Later cannot"):
                later(in_mode(SS))
        # the first construction is checked in VectorWrapper.__init__, after the
        # code Later runs before super().__init__; from then on, before it
        assert later.built == 1 and later in registry.instrumented()
        with pytest.raises(vecmode.IncompatibleModeError, match="Later cannot"):
            later(in_mode(SS))
        assert later.built == 1
        assert vecmode.supported_modes(later) == frozenset({NS})
        assert vecmode.unregister(f"{module}:NOT_A_CLASS") is True
        assert VectorWrapper.__dict__["__init__"] is own_init, "nothing waits now"
        target = f"{module}:Later" if forget_by == "name" else later
        assert vecmode.unregister(target) is True
        assert later.__dict__["__init__"] is later_init
        assert vecmode.supported_modes(later) is None
        assert vecmode.unregister(f"{module}:Later") is False
        later(in_mode(SS)).close()
        assert import_hooks() == hooks
    finally:
        sys.modules.pop(module, None)


def test_a_name_registered_after_its_import_is_checked_at_once(
    tmp_path, monkeypatch, clean_registry
):
    (tmp_path / "vm_imported.py").write_text(LATER)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        later = import_module("vm_imported").Later
        vecmode.register("vm_imported:Later", [NS])
        assert later in registry.instrumented()
        assert VectorWrapper not in registry.instrumented()
        later.built = 0
        with pytest.raises(vecmode.IncompatibleModeError, match="Later cannot"):
            later(in_mode(SS))
        assert later.built == 0
    finally:
        sys.modules.pop("vm_imported", None)


def test_register_by_a_public_path_that_is_not_the_defining_module(clean_registry):
    """Users write gymnasium.wrappers.vector:ClipReward, where the class is exported."""
    own_init = gym_wrappers.ClipReward.__dict__["__init__"]
    vecmode.register("gymnasium.wrappers.vector:ClipReward", [NS])
    assert vecmode.registry.declaration(gym_wrappers.ClipReward).source == "register"
    with pytest.raises(vecmode.IncompatibleModeError, match="ClipReward cannot"):
        gym_wrappers.ClipReward(in_mode(SS), 0, 1)
    names = [name for name, _ in registry.declarations()]
    assert names.count("gymnasium.wrappers.vector.stateful_reward.ClipReward") == 0
    assert vecmode.unregister("gymnasium.wrappers.vector:ClipReward") is True
    assert gym_wrappers.ClipReward.__dict__["__init__"] is own_init
    assert vecmode.registry.declaration(gym_wrappers.ClipReward).source == "gymnasium"
    gym_wrappers.ClipReward(in_mode(SS), 0, 1).close()


def test_register_by_name_of_something_that_is_not_a_wrapper():
    with pytest.raises(TypeError, match="VectorWrapper"):
        vecmode.register("gymnasium.vector:AutoresetMode", [NS])
    assert vecmode.unregister("gymnasium.vector:AutoresetMode") is False
    with pytest.raises(
        AttributeError, match=r"module 'json' has no attribute 'Nope'; name the class"
    ):
        vecmode.register("json:Nope", [NS])
    assert vecmode.unregister("json:Nope") is False


# ------------------------------------------------------------------ undeclared
def test_undeclared_env_warns_and_assumes_next_step():
    envs = undeclared_env()
    with pytest.warns(vecmode.UndeclaredModeWarning, match="assuming NextStep") as rec:
        wrapped = NoSameStep(envs)
    assert rec[0].filename == __file__, "the warning points at the user's line"
    wrapped.close()

    @vecmode.supports(D)
    class DisabledOnly(VectorWrapper):
        pass

    with (
        pytest.warns(vecmode.UndeclaredModeWarning),
        pytest.raises(vecmode.IncompatibleModeError, match="mode NextStep"),
    ):
        DisabledOnly(undeclared_env())


def test_vecmode_policies_warn_on_an_undeclared_env_and_assume_next_step():
    with (
        pytest.warns(vecmode.UndeclaredModeWarning, match="SameStepAutoreset"),
        pytest.raises(vecmode.IncompatibleModeError, match="in mode NextStep"),
    ):
        vecmode.SameStepAutoreset(undeclared_env())
    with (
        pytest.warns(vecmode.UndeclaredModeWarning, match="DisableAutoreset"),
        pytest.raises(vecmode.IncompatibleModeError, match="declares no mode"),
    ):
        vecmode.DisableAutoreset(undeclared_env())


def test_strict_turns_an_undeclared_mode_into_an_error():
    with vecmode.strict(), warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(vecmode.IncompatibleModeError, match="strict"):
            NoSameStep(undeclared_env())
    with pytest.warns(vecmode.UndeclaredModeWarning):
        NoSameStep(undeclared_env())  # back to a warning after the block
    handle = vecmode.strict()
    try:
        with pytest.raises(vecmode.IncompatibleModeError):
            NoSameStep(undeclared_env())
    finally:
        handle.restore()
    assert not modes.is_strict()
    vecmode.strict().release()  # a guard's handle's name, too
    assert not modes.is_strict()


def test_a_declared_wrapper_is_checked_wherever_its_env_argument_is():
    """The env was looked for as the first argument (or the second parameter's
    keyword) only: a wrapper taking it second, or through **kwargs, was built
    in a mode it does not support, silently."""

    @vecmode.supports("NextStep")
    class EnvSecond(VectorWrapper):
        def __init__(self, scale: float, env: gym.vector.VectorEnv) -> None:
            super().__init__(env)

    @vecmode.supports("NextStep")
    class Passthrough(VectorWrapper):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)

    envs = in_mode(SS)
    for build in (
        lambda: EnvSecond(2.0, envs),
        lambda: EnvSecond(scale=2.0, env=envs),
        lambda: Passthrough(env=envs),
        lambda: Passthrough(envs),
    ):
        with pytest.raises(vecmode.IncompatibleModeError, match="supports NextStep"):
            build()
    envs.close()


def test_a_registered_name_its_module_lacks_is_warned_about_and_not_listed(
    tmp_path, monkeypatch
):
    """Registered before its module is imported: listed as declared until then;
    once imported without the name, warned about when vecmode first meets it
    (here, the table), and no longer listed."""
    (tmp_path / "late_registry_mod.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    name = "late_registry_mod:NoSuchWrapperHere"
    vecmode.register(name, [NS])
    try:
        assert "late_registry_mod.NoSuchWrapperHere" in registry.format_table()
        import_module("late_registry_mod")
        with pytest.warns(RuntimeWarning, match="has no attribute 'NoSuchWrapperHere'"):
            assert "NoSuchWrapperHere" not in registry.format_table()
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # warned once
            assert "NoSuchWrapperHere" not in registry.format_table()
    finally:
        assert vecmode.unregister(name) is True
        sys.modules.pop("late_registry_mod", None)


def test_strict_handles_may_be_released_in_any_order():
    """A session fixture's strict() released before a test's strict(False): the
    last released restored what it had seen, leaving strict on for good."""
    first = vecmode.strict()
    second = vecmode.strict(False)  # the newer handle decides while held
    assert not modes.is_strict()
    first.release()
    assert not modes.is_strict()
    second.release()
    assert not modes.is_strict()  # strict was on before neither
    outer = vecmode.strict()
    inner = vecmode.strict(False)
    inner.release()
    assert modes.is_strict()  # the outer one holds again
    outer.release()
    outer.release()  # a second release does nothing
    assert not modes.is_strict()


def test_a_strict_handle_is_released_in_its_own_thread():
    """Strict mode holds in the thread that turns it on: releasing its handle
    elsewhere was contextvars' bare "created in a different Context"."""

    handle = vecmode.strict()
    caught: list[BaseException] = []

    def release() -> None:
        try:
            handle.release()
        except RuntimeError as error:
            caught.append(error)

    thread = threading.Thread(target=release)
    thread.start()
    thread.join()
    assert [str(e) for e in caught] == [
        "this vecmode.strict() handle was made in another thread or task (strict "
        "holds in the thread or task that makes it): release it there."
    ]
    assert modes.is_strict()  # still on here
    handle.release()
    assert not modes.is_strict()


def test_a_strict_handle_released_in_a_child_task_is_refused_there():
    """The child's copy of the context let it release the handle: the parent's
    release then did nothing, and the parent stayed strict for good."""

    async def parent() -> list[str]:
        handle = vecmode.strict()

        async def child() -> None:
            handle.release()

        with pytest.raises(RuntimeError, match="made in another thread or task"):
            await asyncio.create_task(child())
        assert modes.is_strict()
        handle.release()
        return [str(modes.is_strict())]

    assert asyncio.run(parent()) == ["False"]


def test_strict_as_a_decorator_is_refused_and_leaves_nothing_held():
    with pytest.raises(TypeError, match=r"no decorator: .* 'with vecmode\.strict"):

        @vecmode.strict()
        def train() -> None:
            pass

    with pytest.raises(TypeError, match="no decorator"):

        @vecmode.strict  # type: ignore[arg-type]
        def train_too() -> None:
            pass

    assert not modes.is_strict()


# ------------------------------------------------------------------ arrays
class Converts(VectorWrapper):
    """Keeps the array library it returns as Gymnasium's ArrayConversion does."""

    def __init__(self, env, library: str) -> None:
        super().__init__(env)
        self._target_xp = types.ModuleType(library)


@vecmode.supports(*vecmode.MODES)
class MyForwarding(ForwardingWrapper):
    """A ForwardingWrapper defined outside vecmode.forwarding."""


@vecmode.supports(*vecmode.MODES)
class Impostor(VectorWrapper):
    """Says it comes from vecmode.forwarding, but is no ForwardingWrapper."""


Impostor.__module__ = "vecmode.forwarding"


def test_a_forwarding_wrapper_anywhere_is_refused_over_a_conversion():
    """vecmode's wrappers read NumPy: over a layer returning another library, a
    ForwardingWrapper subclass is refused, wherever it is defined (the check
    looked for the module name vecmode.forwarding along the MRO)."""
    for cls in (MyForwarding, vecmode.wrappers.DictInfoToList):
        with pytest.raises(TypeError, match=f"^{cls.__name__} reads NumPy arrays, "):
            cls(Converts(in_mode(SS), "torch"))
        cls(Converts(in_mode(SS), "numpy")).close()
    Impostor(Converts(in_mode(SS), "torch")).close()
    # an array-native wrapper takes the converted batches
    vecmode.wrappers.RecordEpisodeStatistics(Converts(in_mode(SS), "torch")).close()


def test_register_of_a_vector_env_class_points_to_register_vector_env():
    with pytest.raises(TypeError, match=r"with vecmode\.register_vector_env"):
        vecmode.register(vecmode.SyncVectorEnv, ["Disabled"])
    with pytest.raises(TypeError, match=r"wrapper class itself \(not an instance"):
        vecmode.register(42, ["Disabled"])  # type: ignore[arg-type]
