"""The compatibility registry: declarations, checks at construction, stack reports."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import warnings
from importlib import import_module

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, VectorWrapper
from gymnasium.wrappers import vector as gym_wrappers
from hypothesis import given
from hypothesis import strategies as st

import vecmode
import vecmode.registry
from tests.helpers import scheduled_fns
from vecmode import errors, modes, registry
from vecmode.registry import Verdict

NS, SS, D = AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP, AutoresetMode.DISABLED


def core(num_envs: int = 2) -> vecmode.SyncVectorEnv:
    return vecmode.SyncVectorEnv(scheduled_fns(num_envs, lengths=[(2,), (3,)]))


def in_mode(mode, num_envs: int = 2):
    return vecmode.with_autoreset(core(num_envs), mode)


def gym_env(mode, num_envs: int = 2):
    return gym.vector.SyncVectorEnv(
        scheduled_fns(num_envs, lengths=[(2,), (3,)]), autoreset_mode=mode
    )


def undeclared_env(num_envs: int = 2):
    envs = gym_env(NS, num_envs)
    envs.metadata = {k: v for k, v in envs.metadata.items() if k != "autoreset_mode"}
    return envs


def usable(envs) -> None:
    """The env still resets and steps (a refused wrapper left it untouched)."""
    envs.reset(seed=0)
    envs.step(np.zeros(envs.num_envs, dtype=int))


@pytest.fixture
def clean_registry():
    """Undo what a test registers, so tests don't leak declarations."""
    before = (dict(registry._registered), dict(registry._registered_by_name))
    yield
    for cls in list(registry._registered):
        if cls not in before[0]:
            registry.unregister(cls)
    for name in list(registry._registered_by_name):
        if name not in before[1]:
            registry.unregister(name)


class Recorder(VectorWrapper):
    """A wrapper we "don't own": it records that its __init__ ran."""

    built = 0

    def __init__(self, env, scale: float = 1.0) -> None:
        type(self).built += 1
        super().__init__(env)
        self.scale = scale


# ------------------------------------------------------------------ @supports
@vecmode.supports(NS, "Disabled", why={SS: "It ignores info['final_obs']."})
class NoSameStep(VectorWrapper):
    built = 0

    def __init__(self, env) -> None:
        type(self).built += 1
        super().__init__(env)


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
        "with_autoreset",
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
        vecmode.registry.use_supported_modes({NS, D}),
    )
    assert str(info.value) == expected
    envs.close()


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
    assert [found.behaviour(m) for m in (NS, SS, D)] == ["ok", "wrong", "refused"]
    with pytest.raises(vecmode.IncompatibleModeError) as info:
        Recorder(in_mode(SS))
    assert "known to be wrong there: it counts the reset step." in str(info.value)


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "text"),
    [
        ((Recorder, []), {}, ValueError, "at least one mode"),
        ((Recorder, ["NextStep"]), {"wrong": {"NextStep": "x"}}, ValueError, "both"),
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


@pytest.mark.parametrize("forget_by", ["name", "class"])
def test_register_by_name_checks_the_class_once_its_module_is_imported(
    forget_by, tmp_path, monkeypatch, clean_registry
):
    module = f"vm_later_{forget_by}"
    (tmp_path / f"{module}.py").write_text(
        textwrap.dedent(
            """
            import gymnasium as gym

            class Later(gym.vector.VectorWrapper):
                pass

            NOT_A_CLASS = 3
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    vecmode.register(f"{module}:Later", [NS])
    vecmode.register(f"{module}:NOT_A_CLASS", [NS])
    assert module not in sys.modules, "registering by name imports nothing"
    with pytest.warns(RuntimeWarning, match="NOT_A_CLASS"):
        later = import_module(module).Later
    monkeypatch.delitem(sys.modules, module)

    assert later in registry.instrumented()
    assert vecmode.supported_modes(later) == frozenset({NS})
    with pytest.raises(vecmode.IncompatibleModeError, match="Later cannot"):
        later(in_mode(SS))
    target = f"{module}:Later" if forget_by == "name" else later
    assert vecmode.unregister(target) is True
    assert "__init__" not in later.__dict__
    assert vecmode.supported_modes(later) is None
    assert f"{module}:Later" not in registry._registered_by_name
    later(in_mode(SS)).close()


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
    assert "gymnasium.vector:AutoresetMode" not in registry._registered_by_name
    with pytest.raises(
        AttributeError, match=r"module 'json' has no attribute 'Nope'; name the class"
    ):
        vecmode.register("json:Nope", [NS])
    assert "json:Nope" not in registry._registered_by_name


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


def test_gymnasium_s_record_episode_statistics_over_another_is_known_wrong():
    """Over vecmode's core (which keeps the caller's options) Gymnasium's
    RecordEpisodeStatistics is right in Disabled, but it pops reset_mask after
    its reset: one above it finds no mask and clears every sub-env's statistics.
    check_stack said ok for both (it looked at the innermost env only)."""
    base = vecmode.make_vec(
        "CartPole-v1", 2, vectorization_mode="sync", autoreset_mode="Disabled"
    )
    inner = gym_wrappers.RecordEpisodeStatistics(base)
    outer = gym_wrappers.RecordEpisodeStatistics(inner)
    report = vecmode.check_stack(outer)
    assert [row.verdict for row in report][1:] == [Verdict.OK, Verdict.KNOWN_WRONG]
    # what the verdict stands for
    outer.reset(seed=0)
    for _ in range(3):
        outer.step(np.array([0, 0]))
    outer.reset(options={"reset_mask": np.array([True, False])})
    assert inner.episode_lengths.tolist() == [0, 3]  # right
    assert outer.episode_lengths.tolist() == [0, 0]  # sub-env 1's count lost
    outer.close()


def test_a_mode_that_is_no_mode_names_its_layer():
    envs = gym.vector.SyncVectorEnv(scheduled_fns(2))
    envs.metadata = {**envs.metadata, "autoreset_mode": "Bogus"}
    stack = gym_wrappers.ClipReward(envs, 0, 1)
    with pytest.raises(
        ValueError, match=r"^layer 0 SyncVectorEnv \(gymnasium\): 'Bogus'"
    ):
        vecmode.check_stack(stack)
    envs.close()


def test_a_registered_name_its_module_lacks_is_warned_about_and_not_listed(
    tmp_path, monkeypatch
):
    """Registered before its module is imported: listed as declared until then;
    once imported without the name, warned about, and no longer listed (the
    table went on listing it as "declared")."""
    (tmp_path / "late_registry_mod.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    name = "late_registry_mod:NoSuchWrapperHere"
    vecmode.register(name, [NS])
    try:
        assert "late_registry_mod.NoSuchWrapperHere" in registry.format_table()
        with pytest.warns(RuntimeWarning, match="has no attribute 'NoSuchWrapperHere'"):
            import_module("late_registry_mod")
        assert "NoSuchWrapperHere" not in registry.format_table()
    finally:
        vecmode.unregister(name)
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
    import threading

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
        "mode holds in the thread or task that turns it on): release it there."
    ]
    assert modes.is_strict()  # still on here
    handle.release()
    assert not modes.is_strict()


# ------------------------------------------------------------------ check()
def test_check_walks_a_stack_with_a_mode_changing_layer():
    envs = gym_wrappers.RecordEpisodeStatistics(vecmode.SameStepAutoreset(core()))
    report = vecmode.check_stack(envs)
    assert report.ok and report.mode is SS
    assert len(report) == 3
    assert [row.name for row in report] == [
        "SyncVectorEnv",
        "SameStepAutoreset",
        "RecordEpisodeStatistics",
    ]
    assert [(r.mode_in, r.mode_out) for r in report] == [(None, D), (D, SS), (SS, SS)]
    assert [r.verdict for r in report] == [Verdict.OK] * 3
    assert report[1].accepts == frozenset({D})
    assert report[2].layer is envs
    envs.close()


def test_check_propagates_the_mode_through_a_foreign_conversion():
    envs = NoSameStep(vecmode.DisableAutoreset(gym_env(NS)))
    report = vecmode.check_stack(envs)
    assert [(r.mode_in, r.mode_out) for r in report] == [(None, NS), (NS, D), (D, D)]
    assert report.ok
    assert [r.origin for r in report] == ["gymnasium", "vecmode", "tests"]


def test_report_prints_an_aligned_table_with_notes():
    envs = gym_wrappers.NormalizeReward(gym_wrappers.ClipReward(in_mode(SS), 0, 1))
    report = vecmode.check_stack(envs)
    text = str(report)
    lines = text.splitlines()
    assert lines[0].startswith("NOT OK: layer 3 NormalizeReward is known-wrong")
    table = lines[2:8]
    header, rule, *rows = table
    assert header.split()[:3] == ["#", "layer", "mode"]
    # every column starts where its header starts
    starts = [
        i for i, ch in enumerate(rule) if ch == "-" and (i == 0 or rule[i - 1] == " ")
    ]
    for row in rows:
        for start in starts[1:]:
            assert row[start - 1] == " " and row[start] != " ", (row, start)
    assert "ok [1]" in rows[-2]  # Gymnasium's ClipReward: its caveat
    assert "known-wrong [2]" in rows[-1]
    notes = lines[lines.index("", 3) + 1 :]
    assert notes[0].startswith("[1] ClipReward: It writes its rewards into the array")
    assert [n[:4] for n in notes if not n.startswith(" ")] == ["[1] ", "[2] "]
    assert notes[4].startswith("[2] NormalizeReward: ")
    assert all(
        len(line) <= 88 and line.startswith(("    ", "[2] ")) for line in notes[1:]
    )
    envs.close()


def test_known_wrong_refused_undeclared_and_mismatch_rows(clean_registry):
    class Plain(VectorWrapper):
        pass

    envs = Plain(in_mode(SS))  # no declaration
    report = vecmode.check_stack(envs)
    assert report[-1].verdict is Verdict.UNDECLARED and report.ok
    assert "vecmode.register" in report[-1].note
    assert not vecmode.check_stack(envs, strict=True).ok

    vecmode.register(Plain, [NS])  # declared after it was built: refused
    report = vecmode.check_stack(envs)
    assert report[-1].verdict is Verdict.REFUSED and not report.ok
    # the note names the mode, as sentences ("does not declare this mode. its ...")
    assert "[1] Plain: Plain does not declare SameStep. Its modes are" in str(report)

    class Liar(VectorWrapper):
        """Claims to produce NextStep but leaves the metadata at SameStep."""

    vecmode.register(Liar, [SS], output=NS)
    report = vecmode.check_stack(Liar(in_mode(SS)))
    assert report[-1].verdict is Verdict.MISMATCH
    assert "SameStep" in report[-1].note and "NextStep" in report[-1].note
    assert str(report).startswith("NOT OK: layer 2 Liar is mismatched in SameStep")


def test_undeclared_base_env_is_reported_and_strict_fails_it():
    envs = gym_wrappers.ClipReward(undeclared_env(), 0, 1)
    report = vecmode.check_stack(envs)
    assert report[0].verdict is Verdict.UNDECLARED
    assert report[0].mode_out is NS and report[1].mode_in is NS
    assert report.ok and "1 undeclared" in str(report).splitlines()[0]
    assert not vecmode.check_stack(envs, strict=True).ok
    with vecmode.strict():
        assert not vecmode.check_stack(envs).ok


def test_assert_compatible_raises_with_the_table():
    good = gym_wrappers.ClipReward(in_mode(SS), 0, 1)
    assert vecmode.assert_compatible(good).ok
    bad = gym_wrappers.NormalizeReward(in_mode(SS))
    with pytest.raises(vecmode.IncompatibleModeError) as info:
        vecmode.assert_compatible(bad)
    assert str(vecmode.check_stack(bad)) in str(info.value)
    assert "NormalizeReward" in str(info.value)


# ------------------------------------------------------------------ evidence
class CountsEveryCall(vecmode.wrappers.StatefulWrapper):
    """Scales rewards by the mean reward of every call's sub-envs, NEXT_STEP's
    reset steps (reward 0) included: a real bug in every mode but NEXT_STEP-free
    ones, hidden by StatefulWrapper's all-modes declaration, which it inherits."""

    def __init__(self, env) -> None:
        super().__init__(env)
        self.total, self.count = 0.0, 0

    def step(self, actions):
        obs, rewards, terms, truncs, infos = super().step(actions)
        self.total += float(np.sum(rewards))
        self.count += len(rewards)
        return obs, rewards / (self.total / self.count), terms, truncs, infos


class MyNormalizeReward(vecmode.wrappers.NormalizeReward):
    """A user's subclass of a verified vecmode wrapper."""


class MyRecordEpisodeStatistics(gym_wrappers.RecordEpisodeStatistics):
    """A user's subclass of a Gymnasium wrapper vecmode has an entry for."""


def test_report_shows_the_evidence_behind_each_verdict():
    envs = in_mode(SS)
    envs = vecmode.wrappers.NormalizeReward(envs)
    envs = gym_wrappers.ClipReward(envs, 0, 1)
    envs = NoSameStep.__mro__[1](envs)  # VectorWrapper: undeclared
    envs = CountsEveryCall(envs)
    envs = MyNormalizeReward(envs)
    envs = MyRecordEpisodeStatistics(envs)
    report = vecmode.check_stack(envs)
    assert report.ok and not report.verified
    assert [row.evidence.value for row in report] == [
        "verified",  # vecmode's core
        "verified",  # SameStepAutoreset: vecmode's conformance tests
        "verified",  # NormalizeReward: vecmode's conformance tests
        "verified",  # Gymnasium's ClipReward: vecmode's runs of it
        "none",  # undeclared
        "inherited",  # StatefulWrapper's declaration
        "inherited",  # a verified class's subclass is not verified
        "inherited",  # nor is a subclass of Gymnasium's
    ]
    assert report.unverified == report.rows[4:]
    text = str(report)
    assert text.splitlines()[0] == (
        "ok: the stack runs SameStep, 1 undeclared (see notes); not verified: "
        "layer 5 CountsEveryCall (inherited), layer 6 MyNormalizeReward (inherited), "
        "layer 7 MyRecordEpisodeStatistics (inherited) (see notes)"
    )
    assert text.splitlines()[2].split()[-1] == "evidence"
    assert [line.split()[-1] for line in text.splitlines()[4:12]] == [
        "verified",
        "verified",
        "verified",
        "verified",
        "none",
        "inherited",
        "inherited",
        "inherited",
    ]
    row = report[5]
    assert row.evidence_note == (
        f"{vecmode.registry.evidence_inherited('StatefulWrapper', False)}; "
        + vecmode.registry.how_to_verify(
            "CountsEveryCall", "tests.registry.test_registry:CountsEveryCall"
        )
    )
    assert (
        "run `vecmode conform tests.registry.test_registry:CountsEveryCall`"
        in row.evidence_note
    )
    assert report[6].evidence_note.startswith(
        vecmode.registry.evidence_inherited("NormalizeReward", True)
    )
    assert report[7].evidence_note.startswith(
        vecmode.registry.evidence_inherited("RecordEpisodeStatistics", True)
    )
    for verified in report[:4]:
        assert verified.evidence_note == ""
    # an undeclared layer: how to find the modes it is right in
    assert report[4].evidence_note == vecmode.registry.how_to_find_modes(
        "VectorWrapper", "gymnasium.vector.vector_env:VectorWrapper"
    )
    envs.close()


def test_own_and_registered_declarations_are_declared(clean_registry):
    envs = NoSameStep(in_mode(NS))
    row = vecmode.check_stack(envs)[-1]
    assert row.evidence is vecmode.registry.Evidence.DECLARED
    assert "declared by NoSameStep itself (@vecmode.supports)" in row.evidence_note
    assert (
        "vecmode conform tests.registry.test_registry:NoSameStep" in row.evidence_note
    )

    class Theirs(VectorWrapper):
        pass

    vecmode.register(Theirs, [NS])
    row = vecmode.check_stack(Theirs(in_mode(NS)))[-1]
    assert row.evidence is vecmode.registry.Evidence.DECLARED
    assert "(vecmode.register)" in row.evidence_note
    # a local class has no import path: the function to run instead
    assert "run vecmode.testing.check_wrapper(Theirs)" in row.evidence_note
    # registering one of vecmode's verified wrappers anew: only declared now
    vecmode.register(vecmode.wrappers.ClipReward, [NS])
    assert (
        vecmode.registry.evidence(vecmode.wrappers.ClipReward)
        is vecmode.registry.Evidence.DECLARED
    )
    vecmode.unregister(vecmode.wrappers.ClipReward)
    assert (
        vecmode.registry.evidence(vecmode.wrappers.ClipReward)
        is vecmode.registry.Evidence.VERIFIED
    )


def test_a_custom_vector_env_is_declared_and_pointed_to_probe():
    from tests.custom_vector_envs import CounterVectorEnv

    row = vecmode.check_stack(CounterVectorEnv(2, "SameStep"))[0]
    assert (row.verdict, row.evidence) == (
        Verdict.OK,
        vecmode.registry.Evidence.DECLARED,
    )
    assert row.evidence_note == vecmode.registry.evidence_env_declared(
        "CounterVectorEnv"
    )
    assert "vecmode probe" in row.evidence_note
    assert "check_vector_env(factory).record()" in row.evidence_note
    row = vecmode.check_stack(undeclared_env())[0]
    assert row.evidence is vecmode.registry.Evidence.NONE
    assert row.evidence_note == vecmode.registry.evidence_env_undeclared(
        "SyncVectorEnv"
    )
    for env in (gym_env(SS), core()):
        assert (
            vecmode.check_stack(env)[0].evidence is vecmode.registry.Evidence.VERIFIED
        )
        env.close()


def test_a_recorded_check_vector_env_run_makes_the_env_class_verified():
    """check_stack's note pointed a custom env's author to check_vector_env, but
    its result changed nothing: now recording it makes the innermost env verified
    (in the mode proved, for that exact class), and assert_compatible(verified=
    True) passes."""
    from tests.custom_vector_envs import CounterVectorEnv
    from vecmode.testing import check_vector_env

    class Recorded(CounterVectorEnv):
        pass

    envs = vecmode.wrappers.ClipReward(Recorded(2, "SameStep"), 0.0, 1.0)
    with pytest.raises(vecmode.IncompatibleModeError):
        vecmode.assert_compatible(envs, verified=True)
    report = check_vector_env(lambda: Recorded(2, "SameStep"), steps=30).record()
    row = vecmode.check_stack(envs)[0]
    assert row.evidence is vecmode.registry.Evidence.VERIFIED
    assert row.evidence_note == vecmode.registry.evidence_env_recorded(report.summary)
    assert vecmode.assert_compatible(envs, verified=True).verified
    row = vecmode.check_stack(Recorded(2, "NextStep"))[0]  # not proved in NextStep
    assert row.evidence is vecmode.registry.Evidence.DECLARED


def test_a_recorded_check_wrapper_run_makes_exactly_that_class_verified(
    clean_registry,
):
    from vecmode.testing import check_wrapper

    @vecmode.supports(NS, SS, D)
    class Scale(vecmode.wrappers.RewardWrapper):
        def rewards(self, rewards):
            return rewards * 2

    class SubScale(Scale):
        pass

    assert vecmode.registry.evidence(Scale) is vecmode.registry.Evidence.DECLARED
    report = check_wrapper(Scale)
    assert report.wrapper_class is Scale
    assert (
        vecmode.registry.evidence(Scale) is vecmode.registry.Evidence.DECLARED
    )  # not yet recorded
    assert report.record() is report
    assert vecmode.registry.evidence(Scale) is vecmode.registry.Evidence.VERIFIED
    row = vecmode.check_stack(Scale(in_mode(SS)))[-1]
    assert (row.evidence, row.evidence_note) == (vecmode.registry.Evidence.VERIFIED, "")
    assert vecmode.check_stack(Scale(in_mode(SS))).verified
    # not inherited by subclasses
    assert vecmode.registry.evidence(SubScale) is vecmode.registry.Evidence.INHERITED
    # a changed declaration lapses the evidence
    vecmode.register(Scale, [NS])
    assert vecmode.registry.evidence(Scale) is vecmode.registry.Evidence.DECLARED
    vecmode.unregister(Scale)
    assert vecmode.registry.evidence(Scale) is vecmode.registry.Evidence.VERIFIED


def test_a_partial_proof_verifies_only_its_modes():
    from vecmode.testing import check_wrapper

    @vecmode.supports(NS, SS, D)
    class Halve(vecmode.wrappers.RewardWrapper):
        def rewards(self, rewards):
            return rewards / 2

    check_wrapper(Halve, modes=["Disabled"]).record()  # SameStep, NextStep unproven
    assert (
        vecmode.registry.evidence(Halve, "Disabled")
        is vecmode.registry.Evidence.VERIFIED
    )
    assert (
        vecmode.registry.evidence(Halve, "SameStep")
        is vecmode.registry.Evidence.DECLARED
    )
    assert vecmode.registry.evidence(Halve) is vecmode.registry.Evidence.DECLARED
    assert (
        vecmode.check_stack(Halve(in_mode(D)))[-1].evidence
        is vecmode.registry.Evidence.VERIFIED
    )
    assert (
        vecmode.check_stack(Halve(in_mode(SS)))[-1].evidence
        is vecmode.registry.Evidence.DECLARED
    )


def test_a_check_of_a_stack_cannot_be_recorded_for_one_class():
    from vecmode.testing import check_wrapper

    report = check_wrapper(
        lambda env: vecmode.wrappers.ClipReward(
            vecmode.wrappers.TransformReward(env, lambda r: r + 1), 0, 2
        )
    )
    assert (report.wrapper_class, report.layers) == (None, 2)
    with pytest.raises(ValueError, match=r"proved a stack of 2 wrappers"):
        report.record()


def test_the_inherited_bug_is_found_by_the_kit_and_cannot_be_recorded():
    """The issue's case: the report says ok (inherited, not verified); the
    conformance kit finds the bug, so there is no passing run to record."""
    from vecmode.testing import check_wrapper

    report = vecmode.check_stack(CountsEveryCall(in_mode(SS)))
    assert report.ok and report[-1].evidence is vecmode.registry.Evidence.INHERITED
    with pytest.raises(AssertionError, match="field reward"):
        check_wrapper(CountsEveryCall)
    assert (
        vecmode.registry.evidence(CountsEveryCall)
        is vecmode.registry.Evidence.INHERITED
    )


def test_assert_compatible_can_require_every_layer_verified():
    from vecmode.testing import check_wrapper

    @vecmode.supports(NS, SS, D)
    class Plus(vecmode.wrappers.RewardWrapper):
        def rewards(self, rewards):
            return rewards + 1

    envs = Plus(in_mode(SS))
    vecmode.assert_compatible(envs)  # ok, declared
    with pytest.raises(vecmode.IncompatibleModeError) as caught:
        vecmode.assert_compatible(envs, verified=True)
    assert str(caught.value) == vecmode.registry.stack_not_verified(
        str(vecmode.check_stack(envs))
    )
    check_wrapper(Plus).record()
    assert vecmode.assert_compatible(envs, verified=True).verified
    envs.close()


def test_check_refuses_what_is_not_a_vector_env():
    with pytest.raises(TypeError, match=r"gymnasium\.vector\.VectorEnv"):
        vecmode.check_stack(gym.make("CartPole-v1"))


# ------------------------------------------------------------------ require_mode
def test_require_mode():
    envs = in_mode(D)
    assert vecmode.require_mode(envs, "Disabled", NS) is D
    with pytest.raises(vecmode.IncompatibleModeError) as info:
        vecmode.require_mode(envs, NS, SS, who="my_dqn")
    message = str(info.value)
    for needed in ("my_dqn", "NextStep, SameStep", "Disabled", "with_autoreset"):
        assert needed in message
    with pytest.warns(vecmode.UndeclaredModeWarning) as rec:
        assert vecmode.require_mode(undeclared_env(), NS) is NS
    assert rec[0].filename == __file__
    with pytest.raises(vecmode.IncompatibleModeError):
        vecmode.require_mode(undeclared_env(), NS, strict=True)
    with pytest.raises(ValueError, match="at least one mode"):
        vecmode.require_mode(envs)
    # not a vector env: an error, as check_stack's (it assumed NextStep)
    for not_one in (None, gym.make("CartPole-v1")):
        with pytest.raises(TypeError, match=r"takes a gymnasium\.vector\.VectorEnv"):
            vecmode.require_mode(not_one, NS, who="my_dqn")


# ------------------------------------------------------------------ guard()
def test_gymnasium_wrappers_are_unchecked_unless_guarded():
    envs = in_mode(SS)
    gym_wrappers.NormalizeReward(envs)  # Gymnasium accepts it, silently wrong
    with vecmode.guard() as handle:
        assert handle.active
        assert gym_wrappers.NormalizeReward in registry.instrumented()
        with pytest.raises(vecmode.IncompatibleModeError) as info:
            gym_wrappers.NormalizeReward(envs)
        assert "known to be wrong there" in str(info.value)
        gym_wrappers.NormalizeReward(in_mode(NS))  # its supported mode
        # a class Gymnasium itself refuses gets vecmode's message, not Gymnasium's
        with pytest.raises(vecmode.IncompatibleModeError, match="TransformObservation"):
            gym_wrappers.TransformObservation(envs, lambda o: o)
    assert not handle.active
    assert not registry.instrumented() & {gym_wrappers.NormalizeReward}
    gym_wrappers.NormalizeReward(envs)
    usable(envs)


def test_guard_as_a_function_nests_and_restores_gymnasiums_classes():
    classes = [
        getattr(gym_wrappers, n)
        for n in ("NormalizeReward", "ClipReward", "RecordEpisodeStatistics")
    ]
    before = [cls.__dict__.get("__init__") for cls in classes]
    outer = vecmode.guard()
    inner = vecmode.guard()
    inner.release()
    with pytest.raises(vecmode.IncompatibleModeError):
        gym_wrappers.NormalizeReward(in_mode(SS))  # outer still active
    outer.release()
    outer.release()  # idempotent
    assert [cls.__dict__.get("__init__") for cls in classes] == before
    gym_wrappers.NormalizeReward(in_mode(SS)).close()


def test_guard_checks_user_subclasses_of_gymnasium_wrappers():
    class MyNorm(gym_wrappers.NormalizeReward):
        pass

    with vecmode.guard(), pytest.raises(vecmode.IncompatibleModeError, match="MyNorm"):
        MyNorm(in_mode(SS))


def test_guard_also_covers_modules_imported_later(tmp_path, monkeypatch):
    """Gymnasium's optional modules are checked from when they are imported."""
    name = "gymnasium.wrappers.vector.stateful_reward"
    monkeypatch.delitem(sys.modules, name)
    with vecmode.guard():
        assert gym_wrappers.NormalizeReward not in registry.instrumented()
        import importlib

        module = importlib.import_module(name)
        assert module.NormalizeReward in registry.instrumented()
        with pytest.raises(vecmode.IncompatibleModeError):
            module.NormalizeReward(in_mode(SS))
    assert "__init__" in module.NormalizeReward.__dict__
    assert module.NormalizeReward not in registry.instrumented()


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


def test_table_lists_every_declaration():
    names = [name for name, _ in registry.declarations()]
    for expected in (
        "vecmode.NextStepAutoreset",
        "vecmode.SameStepAutoreset",
        "vecmode.DisableAutoreset",
        "gymnasium.wrappers.vector.NormalizeReward",
    ):
        assert expected in names
    assert len(names) == len(set(names))


def test_gymnasium_entries_are_the_established_verdicts():
    """The registry reads tests/registry/test_gymnasium_verdicts.py's table, nothing else."""
    from vecmode._gymnasium import GYMNASIUM_VERDICTS

    import_module("gymnasium.wrappers.vector.array_conversion")  # a test extra
    names = {name.rpartition(":")[2] for name in GYMNASIUM_VERDICTS}
    assert names == set(gym_wrappers.__all__)
    as_registry = {"ok": "ok", "refuses": "refused", "wrong": "wrong"}
    for name, verdicts in GYMNASIUM_VERDICTS.items():
        module, _, qualname = name.partition(":")
        if module not in sys.modules:
            continue  # an optional module (torch, jax) that is not imported
        found = vecmode.registry.declaration(getattr(sys.modules[module], qualname))
        assert found.source == "gymnasium"
        for mode, (verdict, reason) in verdicts.items():
            assert found.behaviour(mode) == as_registry[verdict], (name, mode)
            if verdict != "ok":
                assert reason in found.why(vecmode.as_mode(mode)), (name, mode)


def test_an_autoreset_policy_without_an_output_mode_is_a_clear_error():
    from vecmode.autoreset import _AutoresetWrapper

    @vecmode.supports(D)
    class NoOutput(_AutoresetWrapper):
        pass

    with pytest.raises(TypeError, match=r"NoOutput .* output="):
        NoOutput(core())


# ------------------------------------------------------------------ properties
class _Bare(gym.vector.VectorEnv):
    """The cheapest vector env: only metadata and num_envs (nothing is stepped)."""

    def __init__(self, mode) -> None:
        self.num_envs = 1
        self.metadata = {} if mode is None else {"autoreset_mode": mode}


_MODE_SETS = st.sets(st.sampled_from(list(vecmode.MODES)), min_size=1)


@st.composite
def layer_specs(draw):
    declared = draw(st.booleans())
    accepts = draw(_MODE_SETS)
    others = [m for m in vecmode.MODES if m not in accepts]
    return {
        "declared": declared,
        "accepts": accepts,
        "wrong": draw(st.sets(st.sampled_from(others))) if others else set(),
        "output": draw(st.none() | st.sampled_from(list(vecmode.MODES))),
        "honest": draw(st.booleans()),  # sets its metadata to its output
    }


def _layer_class(spec):
    class Layer(VectorWrapper):
        def __init__(self, env) -> None:
            super().__init__(env)
            if spec["output"] is not None and spec["honest"]:
                self.metadata = {**env.metadata, "autoreset_mode": spec["output"]}

    return Layer


@given(
    base=st.none() | st.sampled_from(list(vecmode.MODES)),
    specs=st.lists(layer_specs(), min_size=1, max_size=5),
)
def test_check_agrees_with_a_model_of_declarations(base, specs):
    """Built unchecked, then declared: check() propagates modes as the model does."""
    envs = _Bare(base)
    classes = []
    for spec in specs:
        classes.append(_layer_class(spec))
        envs = classes[-1](envs)
    try:
        for cls, spec in zip(classes, specs, strict=True):
            if spec["declared"]:
                vecmode.register(
                    cls,
                    spec["accepts"],
                    output=spec["output"],
                    wrong={m: "x" for m in spec["wrong"]},
                )
        report = vecmode.check_stack(envs)
    finally:
        for cls in classes:
            vecmode.unregister(cls)

    # the model
    mode = NS if base is None else base
    meta = base
    expected = [(None, mode, Verdict.UNDECLARED if base is None else Verdict.OK)]
    for spec in specs:
        if spec["output"] is not None and spec["honest"]:
            meta = spec["output"]
        mode_in = mode
        if not spec["declared"]:
            mode = meta or mode_in
            expected.append((mode_in, mode, Verdict.UNDECLARED))
            continue
        mode = spec["output"] or mode_in
        if mode_in in spec["wrong"]:
            verdict = Verdict.KNOWN_WRONG
        elif mode_in not in spec["accepts"]:
            verdict = Verdict.REFUSED
        elif meta is not None and meta is not mode:
            verdict = Verdict.MISMATCH
        else:
            verdict = Verdict.OK
        expected.append((mode_in, mode, verdict))
    assert [(r.mode_in, r.mode_out, r.verdict) for r in report] == expected
    assert report.ok == all(v in (Verdict.OK, Verdict.UNDECLARED) for *_, v in expected)


@given(
    base=st.none() | st.sampled_from(list(vecmode.MODES)),
    specs=st.lists(layer_specs(), min_size=1, max_size=4),
)
def test_construction_is_refused_exactly_when_the_mode_is_not_declared(base, specs):
    envs = _Bare(base)
    classes = [_layer_class(spec) for spec in specs]
    try:
        for cls, spec in zip(classes, specs, strict=True):
            if spec["declared"]:
                vecmode.register(cls, spec["accepts"], output=spec["output"])
        for cls, spec in zip(classes, specs, strict=True):
            mode = vecmode.mode_of(envs)
            refused = spec["declared"] and (mode or NS) not in spec["accepts"]
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    envs = cls(envs)
                    built = True
                except vecmode.IncompatibleModeError:
                    built = False
            assert built is not refused, (mode, spec)
            undeclared = [
                w for w in caught if w.category is vecmode.UndeclaredModeWarning
            ]
            assert len(undeclared) == int(spec["declared"] and mode is None)
            if not built:
                break
    finally:
        for cls in classes:
            vecmode.unregister(cls)


def test_a_class_declared_again_under_the_same_path_replaces_the_old_row():
    """As when a notebook cell defining a wrapper is run twice."""
    kept = []
    for declared in ([NS], [SS]):

        @vecmode.supports(*declared)
        class Twice(VectorWrapper):
            pass

        kept.append(Twice)
    rows = [found for name, found in registry.declarations() if name.endswith(".Twice")]
    assert [found.modes for found in rows] == [frozenset({SS})]
