"""The compatibility registry: checking a built stack, the evidence behind each
verdict, require_mode, and the table."""

from __future__ import annotations

import sys
import warnings
from importlib import import_module

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import VectorEnv, VectorWrapper
from gymnasium.wrappers import vector as gym_wrappers
from hypothesis import given
from hypothesis import strategies as st

import vecmode
from tests.helpers import scheduled_fns
from tests.registry.registry_helpers import (
    NS,
    SS,
    D,
    NoSameStep,
    core,
    gym_env,
    in_mode,
    undeclared_env,
)
from vecmode import registry
from vecmode.registry import Verdict


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


@pytest.mark.parametrize("reader", ["RecordEpisodeStatistics", "DictInfoToList"])
def test_gymnasium_s_info_readers_over_a_dict_info_to_list_are_known_wrong(reader):
    """Gymnasium's wrappers that assert dict infos crash at the first step over a
    DictInfoToList (anyone's): the report and guard() say so (they said ok)."""
    for lister in (gym_wrappers.DictInfoToList, vecmode.wrappers.DictInfoToList):
        base = vecmode.make_vec("CartPole-v1", 2, "sync", autoreset_mode="SameStep")
        envs = getattr(gym_wrappers, reader)(lister(base))
        report = vecmode.check_stack(envs)
        assert not report.ok and report[-1].verdict is Verdict.KNOWN_WRONG
        assert "Make DictInfoToList the outermost wrapper." in report[-1].note
        with pytest.raises(AssertionError):  # what the verdict stands for
            envs.reset(seed=0)
            envs.step(np.zeros(2, dtype=int))
        with vecmode.guard(), pytest.raises(vecmode.IncompatibleModeError) as caught:
            getattr(gym_wrappers, reader)(lister(base))
        assert str(caught.value).startswith(f"{reader} cannot wrap this env: ")
        assert vecmode.check_stack(getattr(gym_wrappers, reader)(base)).ok
        envs.close()


def test_gymnasium_s_dict_info_to_list_over_a_dense_layout_is_known_wrong():
    """ALE's dense final observations have no mask, so Gymnasium's DictInfoToList
    gives every sub-env's info a final observation, stale where it did not end:
    known-wrong there (it was ok), as guard() and vecmode's wrappers refuse it.
    Its RecordEpisodeStatistics reads no final observation: ok (it was refused)."""
    from vecmode.testing.envs import DenseFinalObsVectorEnv

    env = DenseFinalObsVectorEnv(scheduled_fns(2, lengths=[[1], [2]]))
    listed = gym_wrappers.DictInfoToList(env)
    row = vecmode.check_stack(listed)[-1]
    assert row.verdict is Verdict.KNOWN_WRONG, row
    assert "reports SameStep's final observations as one dense array" in row.note
    assert str(vecmode.check_stack(listed)).startswith(
        "NOT OK: layer 1 DictInfoToList is known-wrong over DenseFinalObsVectorEnv"
    )
    listed.reset(seed=0)
    infos = listed.step(np.zeros(2, dtype=int))[4]  # sub-env 0 alone ended
    assert ["final_obs" in info for info in infos] == [True, True]  # the verdict
    with vecmode.guard():
        with pytest.raises(vecmode.IncompatibleModeError, match="one dense array"):
            gym_wrappers.DictInfoToList(env)
        gym_wrappers.RecordEpisodeStatistics(env)
    assert vecmode.check_stack(gym_wrappers.RecordEpisodeStatistics(env)).ok
    # vecmode's that read no final observation are built too (and run); its
    # readers, whose hooks see the final observations, are not
    for blind in (
        lambda e: vecmode.wrappers.ClipReward(e, -1, 1),
        lambda e: vecmode.wrappers.RecordEpisodeStatistics(e, stats_key="stats"),
    ):
        wrapped = blind(env)
        assert vecmode.check_stack(wrapped).ok
        wrapped.reset(seed=0)
        for _ in range(3):
            wrapped.step(np.zeros(2, dtype=int))
    for reader in (
        lambda e: vecmode.wrappers.FrameStackObservation(e, 2),
        lambda e: vecmode.wrappers.TransformObservation(e, abs),
    ):
        with pytest.raises(vecmode.IncompatibleModeError, match="one dense array"):
            reader(env)
    env.close()


def test_a_wrapt_proxy_hides_no_layer():
    """A plain wrapt.ObjectProxy forwards everything, so it is no layer; a proxy
    subclass is an undeclared one. The layers they wrap are checked (a proxy
    around a known-wrong layer made it vanish from the report)."""
    import wrapt

    base = vecmode.make_vec("CartPole-v1", 2, "sync", autoreset_mode="SameStep")
    plain = [wrapt.ObjectProxy, *(getattr(wrapt, name, wrapt.ObjectProxy) for name in
             ("BaseObjectProxy", "AutoObjectProxy", "CallableObjectProxy"))]  # fmt: skip
    for proxy in plain:  # (wrapt 2's are not ObjectProxy's subclasses)
        report = vecmode.check_stack(proxy(gym_wrappers.NormalizeReward(base)))
        assert [r.name for r in report] == [
            "SyncVectorEnv", "SameStepAutoreset", "NormalizeReward"
        ], proxy  # fmt: skip
        assert report[-1].verdict is Verdict.KNOWN_WRONG
    with vecmode.guard(), pytest.raises(vecmode.IncompatibleModeError):
        gym_wrappers.NormalizeReward(wrapt.ObjectProxy(base))

    class Scale(wrapt.ObjectProxy):
        def step(self, actions):
            obs, *rest = self.__wrapped__.step(actions)
            return (obs * 10, *rest)

    report = vecmode.check_stack(Scale(base))
    assert [(r.name, r.verdict) for r in report][1:] == [
        ("SameStepAutoreset", Verdict.OK), ("Scale", Verdict.UNDECLARED)
    ]  # fmt: skip
    base.close()


def test_a_mode_that_is_no_mode_names_its_layer():
    envs = gym.vector.SyncVectorEnv(scheduled_fns(2))
    envs.metadata = {**envs.metadata, "autoreset_mode": "Bogus"}
    stack = gym_wrappers.ClipReward(envs, 0, 1)
    with pytest.raises(
        ValueError,
        match=r"^layer 0 SyncVectorEnv \(gymnasium\): SyncVectorEnv's "
        r"metadata\['autoreset_mode'\] is 'Bogus', not an autoreset mode",
    ):
        vecmode.check_stack(stack)
    envs.close()


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


def test_the_summary_names_each_failing_layer_where_two_report_alike():
    envs = gym_wrappers.NormalizeReward(gym_wrappers.NormalizeReward(in_mode(SS)))
    summary = str(vecmode.check_stack(envs)).splitlines()[0]
    assert summary == (
        "NOT OK: layer 2 NormalizeReward is known-wrong in SameStep; "
        "layer 3 NormalizeReward is known-wrong in SameStep"
    )


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
    assert notes[3].startswith("[2] NormalizeReward: ")
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
        "ok: the stack runs SameStep if its 1 undeclared layer behaves as assumed "
        "(see notes); not verified: "
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
        "its modes are StatefulWrapper's declaration, inherited: nothing proves "
        "this class's own code; run `vecmode conform "
        "tests.registry.test_stack:CountsEveryCall` to prove them, and record a "
        "passing run (check_wrapper(CountsEveryCall).record(), e.g. in your tests) "
        "to have it reported verified."
    )
    for row, base in zip(
        report[6:], ("NormalizeReward", "RecordEpisodeStatistics"), strict=True
    ):
        assert row.evidence_note.startswith(
            f"its modes are inherited from {base}, which is verified; nothing "
            f"proves this subclass's own code; run `vecmode conform "
        )
    for verified in report[:4]:
        assert verified.evidence_note == ""
    # an undeclared layer: how to check it (conform stops at the first property
    # broken, so it does not show which modes it is right in)
    assert report[4].evidence_note == (
        "`vecmode conform gymnasium.vector.vector_env:VectorWrapper --modes "
        "NextStep SameStep Disabled` checks it in every mode and names the first "
        "property it breaks."
    )
    envs.close()


def test_own_and_registered_declarations_are_declared(clean_registry):
    envs = NoSameStep(in_mode(NS))
    row = vecmode.check_stack(envs)[-1]
    assert row.evidence is vecmode.registry.Evidence.DECLARED
    assert "declared by NoSameStep itself (@vecmode.supports)" in row.evidence_note
    assert (
        "vecmode conform tests.registry.registry_helpers:NoSameStep"
        in row.evidence_note
    )

    class Theirs(VectorWrapper):
        pass

    vecmode.register(Theirs, [NS])
    row = vecmode.check_stack(Theirs(in_mode(NS)))[-1]
    assert row.evidence is vecmode.registry.Evidence.DECLARED
    assert "(vecmode.register)" in row.evidence_note
    # a local class has no import path: the function to run instead
    assert "run `vecmode.testing.check_wrapper(Theirs)`" in row.evidence_note
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


def test_a_custom_vector_env_is_declared_and_pointed_to_check_vector_env():
    from tests.custom_vector_envs import CounterVectorEnv

    row = vecmode.check_stack(CounterVectorEnv(2, "SameStep"))[0]
    assert (row.verdict, row.evidence) == (
        Verdict.OK,
        vecmode.registry.Evidence.DECLARED,
    )
    assert row.evidence_note == (
        "CounterVectorEnv's metadata['autoreset_mode'] declares its mode, and "
        "nothing here proved it: record a passing "
        "vecmode.testing.check_vector_env(factory).record() in the process that "
        "checks the stack (your tests, then vecmode.assert_compatible(envs, "
        "verified=True)); from the shell, `vecmode conform module:factory` "
        "proves it, but another command can't see that proof."
    )
    row = vecmode.check_stack(undeclared_env())[0]
    assert row.evidence is vecmode.registry.Evidence.NONE
    assert row.evidence_note == (
        "`vecmode probe module:factory` (vecmode.probe_mode) finds the mode "
        "SyncVectorEnv really behaves as."
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
    assert row.evidence_note == (
        f"verified: proven by check_vector_env in this process ({report.summary})"
    )
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
    assert (row.evidence, row.evidence_note) == (
        vecmode.registry.Evidence.VERIFIED,
        f"verified: proven by check_wrapper in this process ({report.summary})",
    )
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
    assert str(caught.value) == (
        "this vector env stack has layers whose modes nothing here proved "
        f"(assert_compatible(..., verified=True)):\n{vecmode.check_stack(envs)}"
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
    as_registry = {"ok": "ok", "refuses": "refused", "wrong": "known-wrong"}
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
    from vecmode.autoreset import AutoresetWrapper

    @vecmode.supports(D)
    class NoOutput(AutoresetWrapper):
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


class KeepsItsEnvElsewhere(VectorEnv):
    """Forwards to a vector env it keeps in ``_env``, not ``env``."""

    def __init__(self, env, copy_metadata=False):
        self._env = env
        if copy_metadata:
            self.metadata = env.metadata

    def __getattr__(self, name):
        return getattr(self._env, name)

    def reset(self, **kwargs):
        return self._env.reset(**kwargs)

    def step(self, actions):
        return self._env.step(actions)


@pytest.mark.parametrize("copy_metadata", [False, True])
def test_a_stack_kept_under_another_name_than_env_is_checked_too(copy_metadata):
    """Its known-wrong NormalizeReward was no row: the stack was ok, under
    strict() too where the holder copied the metadata."""
    inner = gym.wrappers.vector.NormalizeReward(in_mode(SS))
    report = vecmode.check_stack(KeepsItsEnvElsewhere(inner, copy_metadata))
    assert not report.ok and report.mode is SS
    (row,) = report
    assert row.verdict is Verdict.KNOWN_WRONG
    assert "keeps the vector env NormalizeReward in ._env, not .env" in row.note
    assert "NOT OK: layer 2 NormalizeReward is known-wrong" in row.note
    # over an ok stack it is judged as before: here its forwarded declaration
    fine = vecmode.check_stack(KeepsItsEnvElsewhere(in_mode(SS)), strict=True)
    assert fine.ok and fine.mode is SS and fine[0].verdict is Verdict.OK
    # declaring nothing, it is undeclared, in the mode of what it keeps
    holder = VectorEnv()
    holder.inner = in_mode(SS)
    (row,) = vecmode.check_stack(holder)
    assert (row.verdict, row.mode_out) == (Verdict.UNDECLARED, SS)


def test_gymnasium_s_wrappers_misread_a_mode_declared_as_a_string(tmp_path):
    """RecordVideo compares the mode with AutoresetMode members: over the string
    'NextStep' it saw no episode end, and was ok here."""
    envs = gym.make_vec("CartPole-v1", 2, "sync", render_mode="rgb_array")
    envs.metadata = {**envs.metadata, "autoreset_mode": "NextStep"}
    video = gym_wrappers.RecordVideo(envs, str(tmp_path / "s"), episode_trigger=bool)
    row = vecmode.check_stack(video)[-1]
    assert row.verdict is Verdict.KNOWN_WRONG, row
    assert "declares the string 'NextStep'" in row.note
    assert "AutoresetMode('NextStep')" in row.note
    assert vecmode.check_stack(gym_wrappers.ClipReward(envs, 0, 1)).ok  # reads none
    # NormalizeReward tests SameStep alone: over 'NextStep' it runs NextStep's way
    assert vecmode.check_stack(gym_wrappers.NormalizeReward(envs)).ok
    with vecmode.guard(), pytest.raises(vecmode.IncompatibleModeError, match="string"):
        gym_wrappers.RecordVideo(envs, str(tmp_path / "a"), episode_trigger=bool)
    # the data: over the string it counts no episode; over the member, each
    envs.metadata["autoreset_mode"] = vecmode.AutoresetMode.NEXT_STEP
    right = gym_wrappers.RecordVideo(envs, str(tmp_path / "b"), episode_trigger=bool)
    for wrapper in (video, right):
        wrapper.reset(seed=0)
        for _ in range(40):  # CartPole's episodes end within 40 steps of action 1
            wrapper.step(np.ones(2, dtype=np.int64))
    assert (video.episode_id, right.episode_id > 0) == (0, True)
    right.close()


def test_vector_envs_holding_each_other_are_checked_once():
    """A held env pointing back at its holder: check_stack recursed for ever."""

    class MySync(gym.vector.SyncVectorEnv):
        pass

    inner = MySync([lambda: gym.make("CartPole-v1")] * 2)
    holder = VectorEnv()
    holder.inner, inner.owner = inner, holder
    (row,) = vecmode.check_stack(holder)
    assert row.verdict is Verdict.UNDECLARED and "MySync in .inner" in row.note
    inner.close()
