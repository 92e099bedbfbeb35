"""The autoreset policies over vecmode's core and over foreign vector envs."""

from __future__ import annotations

import functools
import pickle

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vecmode
from tests.helpers import (
    OBS_TYPES,
    Script,
    assert_same,
    assert_same_run,
    drive,
    make_script,
    scheduled_fns,
)
from vecmode import (
    AutoresetMode,
    DisableAutoreset,
    EpisodeEndedError,
    IncompatibleModeError,
    NextStepAutoreset,
    SameStepAutoreset,
)

NEXT, SAME, DISABLED = (
    AutoresetMode.NEXT_STEP,
    AutoresetMode.SAME_STEP,
    AutoresetMode.DISABLED,
)


def gym_sync(mode, fns=None, **kwargs):
    return gym.vector.SyncVectorEnv(
        fns or scheduled_fns(4), autoreset_mode=mode, **kwargs
    )


def test_policies_set_the_mode_and_keep_the_rest_of_the_metadata():
    core = vecmode.SyncVectorEnv([lambda: gym.make("CartPole-v1")] * 2)
    for policy, mode in ((NextStepAutoreset, NEXT), (SameStepAutoreset, SAME)):
        envs = policy(core)
        assert envs.metadata["autoreset_mode"] is mode
        assert envs.autoreset_mode is mode  # as on Gymnasium's vector envs
        assert envs.metadata["render_fps"] == core.metadata["render_fps"]
        assert core.metadata["autoreset_mode"] is DISABLED
    core.close()


@pytest.mark.parametrize("vectorization", ["sync", "async"])
@pytest.mark.parametrize("mode", [NEXT, SAME, DISABLED], ids=lambda m: m.value)
def test_cores_policies_and_wrappers_close_on_leaving_a_with_block(mode, vectorization):
    """Only the async core was a context manager: `with make_vec(...) as envs`
    raised TypeError for the sync core and for every policy or wrapper on top."""
    envs = vecmode.make_vec(
        "CartPole-v1", 2, vectorization_mode=vectorization, autoreset_mode=mode
    )
    with vecmode.wrappers.RecordEpisodeStatistics(envs) as stack:
        assert stack.env is envs
        stack.reset(seed=0)
    assert envs.unwrapped.closed
    with (
        pytest.raises(RuntimeError, match="goes on up"),  # not swallowed
        vecmode.make_vec(
            "CartPole-v1", 2, vectorization_mode=vectorization, autoreset_mode=mode
        ) as envs,
    ):
        raise RuntimeError("goes on up")
    assert envs.unwrapped.closed


@pytest.mark.parametrize("mode", [NEXT, SAME, DISABLED], ids=lambda m: m.value)
def test_with_autoreset_accepts_strings_and_enums(mode):
    for spelling in (mode, mode.value, mode.name.lower()):
        envs = vecmode.with_autoreset(vecmode.SyncVectorEnv(scheduled_fns(2)), spelling)
        assert vecmode.mode_of(envs) is mode
        envs.close()
    with pytest.raises(ValueError, match="not an autoreset mode"):
        vecmode.with_autoreset(vecmode.SyncVectorEnv(scheduled_fns(2)), "Soon")


# ------------------------------------------------ exact conversions, foreign envs
def _foreign_run(mode, build_foreign, fns_factory, mask_prob=0.3, steps=40, seed=1):
    reference = gym.vector.SyncVectorEnv(fns_factory(), autoreset_mode=mode)
    converted = build_foreign(fns_factory)
    assert vecmode.mode_of(converted) is mode
    script = make_script(reference, steps, seed=seed, mask_prob=mask_prob)
    disabled = mode is DISABLED
    try:
        return drive(reference, script, disabled), drive(converted, script, disabled)
    finally:
        reference.close()
        converted.close()


FOREIGN_ENVS = {
    **{
        f"scheduled-{t}": functools.partial(scheduled_fns, 4, obs_type=t)
        for t in OBS_TYPES
    },
    "cartpole": lambda: (
        [functools.partial(gym.make, "CartPole-v1", max_episode_steps=9)] * 3
    ),
    "blackjack": lambda: [functools.partial(gym.make, "Blackjack-v1")] * 4,
}


#: foreign env's own mode -> the mode vecmode converts it to
CONVERSIONS = [(DISABLED, SAME), (NEXT, SAME), (NEXT, DISABLED)]


@pytest.mark.parametrize(
    ("inner", "target"), CONVERSIONS, ids=lambda m: m.value if m else ""
)
@pytest.mark.parametrize("name", sorted(FOREIGN_ENVS))
def test_converted_gymnasium_env_is_gymnasiums_own_in_that_mode(name, inner, target):
    expected, got = _foreign_run(
        target,
        lambda fns: vecmode.with_autoreset(
            gym.vector.SyncVectorEnv(fns(), autoreset_mode=inner), target
        ),
        FOREIGN_ENVS[name],
    )
    # SAME_STEP's final observations come from the batched observation: a Discrete
    # entry is a NumPy integer where Gymnasium keeps the sub-env's Python int
    scalar_obs = name.endswith(("discrete", "tuple", "dict", "blackjack"))
    assert_same_run(expected, got, strict_types=target is DISABLED or not scalar_obs)


def test_same_step_over_a_disabled_env_keeps_info_numbers_whole():
    """FrozenLake's reset info has prob 1 (an int), its step's 1/3: merging a
    reset sub-env's info with a stepped one's cut 1/3 to 0 (as Gymnasium's
    SameStep does); vecmode's core in SameStep keeps it, and so does this."""
    fns = [
        functools.partial(gym.make, "FrozenLake-v1", max_episode_steps=1),
        functools.partial(gym.make, "FrozenLake-v1"),
    ]
    ours = vecmode.with_autoreset(vecmode.SyncVectorEnv(fns), SAME)
    converted = vecmode.with_autoreset(
        gym.vector.SyncVectorEnv(fns, autoreset_mode=DISABLED), SAME
    )
    for envs in (ours, converted):
        envs.reset(seed=0)
        infos = envs.step(np.array([1, 1]))[4]
        assert infos["prob"].tolist() == [1.0, pytest.approx(1 / 3)], infos
        envs.close()


def test_same_step_over_a_disabled_env_is_one_wrapper():
    envs = vecmode.with_autoreset(gym_sync(DISABLED), SAME)
    assert type(envs) is SameStepAutoreset and envs.core is None
    envs.close()


@pytest.mark.parametrize(
    ("inner", "target"), CONVERSIONS, ids=lambda m: m.value if m else ""
)
def test_converted_gymnasium_async_env_with_shared_memory(inner, target):
    expected, got = _foreign_run(
        target,
        lambda fns: vecmode.with_autoreset(
            gym.vector.AsyncVectorEnv(fns(), autoreset_mode=inner, shared_memory=True),
            target,
        ),
        FOREIGN_ENVS["scheduled-box"],
        steps=25,
    )
    assert_same_run(expected, got)


@pytest.mark.parametrize("target", [SAME, DISABLED], ids=lambda m: m.value)
@pytest.mark.parametrize("vectorization_mode", ["sync", "async"])
def test_a_vecmode_next_step_stack_converts_exactly(vectorization_mode, target):
    """NextStepAutoreset resets exactly the core's ended sub-envs, which a masked
    reset clears: a NEXT_STEP stack over a vecmode core (here with a wrapper on
    top, so it is not the bare policy) honours reset_mask, in both cores."""

    def build(fns):
        core = (
            vecmode.SyncVectorEnv(fns())
            if vectorization_mode == "sync"
            else vecmode.AsyncVectorEnv(fns(), num_workers=1, context="fork")
        )
        stack = vecmode.wrappers.ClipReward(NextStepAutoreset(core), -100, 100)
        assert vecmode.autoreset.honours_reset_mask(stack)
        return vecmode.with_autoreset(stack, target)

    expected, got = _foreign_run(target, build, FOREIGN_ENVS["scheduled-box"])
    assert_same_run(expected, got)


@given(
    num_envs=st.integers(1, 4),
    lengths=st.lists(
        st.lists(st.integers(1, 5), min_size=1, max_size=3), min_size=4, max_size=4
    ),
    obs_type=st.sampled_from(["box", "dict"]),
    inner=st.sampled_from([NEXT, DISABLED]),
    target=st.sampled_from([SAME, DISABLED]),
    seed=st.integers(0, 1000),
    mask_prob=st.sampled_from([0.0, 0.3, 0.7]),
)
@settings(max_examples=30)
def test_foreign_conversions_property(
    num_envs, lengths, obs_type, inner, target, seed, mask_prob
):
    def fns():
        return scheduled_fns(num_envs, lengths[:num_envs], obs_type=obs_type)

    expected, got = _foreign_run(
        target,
        lambda f: vecmode.with_autoreset(
            gym.vector.SyncVectorEnv(f(), autoreset_mode=inner), target
        ),
        fns,
        mask_prob=mask_prob,
        steps=20,
        seed=seed,
    )
    assert_same_run(expected, got, strict_types=obs_type == "box")


def test_converted_foreign_env_checks_ended_sub_envs():
    """Gymnasium's AsyncVectorEnv in DISABLED mode does not check; vecmode does."""
    envs = DisableAutoreset(
        gym.vector.AsyncVectorEnv(
            scheduled_fns(2, lengths=[(1, 5), (9,)]), autoreset_mode=DISABLED
        )
    )
    envs.reset(seed=0)
    assert envs.awaiting_reset.tolist() == [False, False]
    envs.step(np.zeros(2, dtype=int))
    # the mask to reset with, as on vecmode's cores (it had none)
    assert envs.awaiting_reset.tolist() == [True, False]
    with pytest.raises(EpisodeEndedError) as info:
        envs.step(np.zeros(2, dtype=int))
    assert info.value.indices == (0,)
    obs, _ = envs.reset(options={"reset_mask": envs.awaiting_reset})
    assert envs.awaiting_reset.tolist() == [False, False]
    envs.step(np.zeros(2, dtype=int))
    # all-False mask: a no-op (Gymnasium would raise)
    last = envs.step(np.zeros(2, dtype=int))[0]
    obs, infos = envs.reset(options={"reset_mask": np.array([False, False])})
    assert infos == {}
    np.testing.assert_array_equal(obs, last)
    envs.close()


def test_converted_foreign_env_keeps_the_ended_sub_envs_a_masked_reset_left():
    """A masked reset clears only the masked sub-envs' episode ends, a full
    reset every one (a mutant that swapped the two went unseen: the test above
    resets with the whole mask)."""
    envs = DisableAutoreset(
        gym.vector.SyncVectorEnv(scheduled_fns(2, lengths=[(2,), (2,)]))
    )
    envs.reset(seed=0)
    envs.step(np.zeros(2, dtype=int))
    envs.step(np.zeros(2, dtype=int))  # both end
    assert envs.awaiting_reset.tolist() == [True, True]
    envs.reset(options={"reset_mask": np.array([True, False])})
    assert envs.awaiting_reset.tolist() == [False, True]
    with pytest.raises(EpisodeEndedError) as info:  # not autoreset silently
        envs.step(np.zeros(2, dtype=int))
    assert info.value.indices == (1,)
    envs.reset()
    assert envs.awaiting_reset.tolist() == [False, False]
    envs.step(np.zeros(2, dtype=int))  # a full reset cleared both
    envs.close()


def test_same_step_reads_the_ending_infos_before_the_masked_reset():
    """Gymnasium's RecordEpisodeStatistics returns its own state as the
    "_episode" mask, and its reset(mask) clears it: read after the reset,
    final_info lost the statistics. They are Gymnasium's own in SameStep."""
    record = gym.wrappers.vector.RecordEpisodeStatistics
    make = functools.partial(gym.make, "CartPole-v1", max_episode_steps=3)
    ours = SameStepAutoreset(record(vecmode.SyncVectorEnv([make] * 2)))
    theirs = record(gym.vector.SyncVectorEnv([make] * 2, autoreset_mode=SAME))
    for envs in (ours, theirs):
        envs.reset(seed=0)
        *_, infos = [envs.step(np.array([0, 1])) for _ in range(3)][-1]
        stats = infos["episode"] if envs is theirs else infos["final_info"]["episode"]
        assert (stats["r"].tolist(), stats["l"].tolist()) == ([3.0, 3.0], [3, 3])
        envs.close()


@pytest.mark.parametrize("mode", [NEXT, SAME], ids=lambda m: m.value)
def test_split_reset_over_the_async_core_equals_reset(mode):
    """``reset_async`` / ``reset_wait`` of a policy over vecmode's async core."""

    def make():
        return vecmode.with_autoreset(
            vecmode.AsyncVectorEnv(scheduled_fns(2), context="fork"), mode
        )

    split, blocking = make(), make()
    split.reset_async(seed=0)
    assert_same(blocking.reset(seed=0), split.reset_wait())
    split.close()
    blocking.close()


def test_foreign_policies_do_not_mutate_options():
    envs = vecmode.with_autoreset(gym_sync(NEXT), SAME)
    envs.reset(seed=0)
    mask = np.array([True, False, False, True])
    options = {"reset_mask": mask, "tag": 1}
    _, infos = envs.reset(options=options)
    assert options == {"reset_mask": mask, "tag": 1}
    assert infos["_options"].tolist() == mask.tolist()
    envs.close()


# ---------------------------------------------------------------- refusals
def test_next_step_over_a_foreign_env_is_refused_with_the_reason():
    with pytest.raises(IncompatibleModeError) as info:
        NextStepAutoreset(gym_sync(DISABLED))
    message = str(info.value)
    assert "NextStepAutoreset" in message and "Disabled" in message
    assert "without stepping" in message and "SyncVectorEnv" in message
    assert "SameStepAutoreset" in message


def test_next_step_must_sit_directly_on_the_core():
    core = vecmode.SyncVectorEnv(scheduled_fns(2))
    with pytest.raises(IncompatibleModeError, match="NextStepAutoreset directly"):
        NextStepAutoreset(DisableAutoreset(core))
    core.close()


def test_same_step_over_next_step_is_refused_but_with_autoreset_converts():
    envs = gym_sync(NEXT)
    with pytest.raises(IncompatibleModeError, match="with_autoreset"):
        SameStepAutoreset(envs)
    converted = vecmode.with_autoreset(envs, SAME)
    assert isinstance(converted, SameStepAutoreset)
    assert isinstance(converted.env, DisableAutoreset)
    converted.close()


@pytest.mark.parametrize("target", [NEXT, DISABLED], ids=lambda m: m.value)
def test_a_same_step_env_cannot_be_converted(target):
    envs = gym_sync(SAME)
    with pytest.raises(IncompatibleModeError) as info:
        vecmode.with_autoreset(envs, target)
    assert "SameStep" in str(info.value)
    envs.close()


def test_envs_that_ignore_reset_mask_are_refused():
    """Gymnasium's numpy CartPoleVectorEnv resets every sub-env on a masked reset."""
    envs = gym.make_vec(
        "CartPole-v1", num_envs=3, vectorization_mode="vector_entry_point"
    )
    assert not vecmode.autoreset.honours_reset_mask(envs)
    with pytest.raises(IncompatibleModeError) as info:
        vecmode.with_autoreset(envs, SAME)
    assert "CartPoleVectorEnv" in str(info.value)
    envs.close()


def test_async_without_shared_memory_keeps_a_pending_autoreset_and_is_refused():
    fns = scheduled_fns(2, lengths=[(1,), (3,)])
    envs = gym.vector.AsyncVectorEnv(fns, autoreset_mode=NEXT, shared_memory=False)
    # the reason, shown on Gymnasium itself: after a masked reset of an ended
    # sub-env, its next step is still an autoreset (reward 0, action ignored)
    envs.reset(seed=0)
    envs.step(np.ones(2, dtype=int))
    envs.reset(options={"reset_mask": np.array([True, False])})
    _, rewards, *_ = envs.step(np.ones(2, dtype=int))
    assert rewards[0] == 0.0
    assert not vecmode.autoreset.honours_reset_mask(envs)
    with pytest.raises(IncompatibleModeError, match="AsyncVectorEnv"):
        DisableAutoreset(envs)
    envs.close()


@pytest.mark.parametrize("target", [NEXT, SAME, DISABLED], ids=lambda m: m.value)
@pytest.mark.parametrize("policy", [NextStepAutoreset, SameStepAutoreset])
def test_with_autoreset_of_a_policy_on_a_core_replaces_it(policy, target):
    """make_vec's NextStep to SameStep (as to_sb3 does) was three layers, with
    the final observations read back from the batch: one policy on the core
    gives the same transitions."""

    def build(fns):
        envs = vecmode.with_autoreset(policy(vecmode.SyncVectorEnv(fns())), target)
        core = envs if target is DISABLED else envs.env
        assert isinstance(core, vecmode.SyncVectorEnv), envs
        return envs

    expected, got = _foreign_run(target, build, lambda: scheduled_fns(3))
    assert_same_run(expected, got)


def test_with_autoreset_keeps_a_policy_with_sub_envs_awaiting_their_reset():
    """A NextStep policy whose sub-env ended has its reset pending: replacing
    it would lose that, so the conversion goes on top, exactly."""
    ours = NextStepAutoreset(vecmode.SyncVectorEnv(scheduled_fns(3)))
    theirs = gym_sync(NEXT, scheduled_fns(3))
    script = make_script(theirs, 30, seed=1)
    for envs in (ours, theirs):
        envs.reset(seed=1)
    for actions in script.actions:
        assert_same(ours.step(actions), theirs.step(actions), "step")
        if ours.unwrapped.awaiting_reset.any():
            break
    ended = ours.unwrapped.awaiting_reset
    disabled = vecmode.with_autoreset(ours, DISABLED)
    assert disabled.env is ours  # DisableAutoreset on top
    assert_same(
        disabled.reset(options={"reset_mask": ended}),
        theirs.reset(options={"reset_mask": ended}),
        "masked reset",
    )
    actions = disabled.action_space.sample()
    assert_same(disabled.step(actions), theirs.step(actions), "step after it")


@pytest.mark.parametrize("target", [SAME, DISABLED], ids=lambda m: m.value)
@pytest.mark.parametrize("base", ["vecmode", "gymnasium"])
def test_converting_next_step_with_a_reset_step_pending_gives_no_false_step(
    base, target
):
    """Converted right after an episode ended, the first step was NextStep's
    hidden reset step: reward 0, no flag, the action ignored, a transition the
    collector took as real. SameStep is refused; Disabled makes the caller reset
    them, as after any end."""
    fns = functools.partial(scheduled_fns, 3, lengths=[(1,), (3,), (1,)])
    envs = (
        NextStepAutoreset(vecmode.SyncVectorEnv(fns()))
        if base == "vecmode"
        else gym.vector.SyncVectorEnv(fns(), autoreset_mode=NEXT)
    )
    envs.reset(seed=0)
    envs.step(np.ones(3, dtype=int))  # sub-envs 0 and 2 end
    if target is SAME:
        with pytest.raises(IncompatibleModeError, match=r"sub-env\(s\) \[0, 2\] ended"):
            vecmode.with_autoreset(envs, target)
    else:
        converted = vecmode.with_autoreset(envs, target)
        with pytest.raises(vecmode.EpisodeEndedError, match="0, 2"):
            converted.step(np.ones(3, dtype=int))
    envs.reset(options={"reset_mask": np.array([True, False, True])})
    converted = vecmode.with_autoreset(envs, target)
    rewards = converted.step(np.ones(3, dtype=int))[1]
    assert rewards.tolist() == pytest.approx([1.5, 2.01, 1.52])  # steps 1, 2, 1
    envs.close()


def test_a_sub_env_that_ended_before_the_conversion_must_be_reset_and_says_so():
    """Converted to SameStep while a sub-env awaited its masked reset, a step
    refused it, advising the very conversion made (an outside review)."""
    fns = functools.partial(scheduled_fns, 3, lengths=[(1,), (3,), (1,)])
    core = vecmode.SyncVectorEnv(fns())
    core.reset(seed=0)
    core.step(np.ones(3, dtype=int))  # sub-envs 0 and 2 end
    envs = vecmode.with_autoreset(core, SAME)  # (a reset may come next: built)
    with pytest.raises(vecmode.EpisodeEndedError, match=r"Reset them .* from then on"):
        envs.step(np.ones(3, dtype=int))
    envs.reset(options={"reset_mask": np.array([True, False, True])})
    rewards = envs.step(np.ones(3, dtype=int))[1]
    assert rewards.tolist() == pytest.approx([1.5, 2.01, 1.52])  # steps 1, 2, 1
    envs.close()


@pytest.mark.parametrize("target", [SAME, DISABLED], ids=lambda m: m.value)
def test_converting_an_env_whose_pending_reset_steps_are_unseen_needs_a_reset(target):
    """Gymnasium's AsyncVectorEnv keeps its pending reset steps in its workers:
    converted after a step, its hidden reset step came out as a real
    transition. Every sub-env is refused (nothing stepped) until reset, and the
    steps after are those of the same calls over Gymnasium's SyncVectorEnv."""
    fns = functools.partial(scheduled_fns, 3, lengths=[(1,), (3,), (1,)])
    theirs = gym.vector.AsyncVectorEnv(fns(), autoreset_mode=NEXT)
    known = gym.vector.SyncVectorEnv(fns(), autoreset_mode=NEXT)
    for envs in (theirs, known):
        envs.reset(seed=0)
        envs.step(np.ones(3, dtype=int))  # sub-envs 0 and 2 end
    converted = vecmode.with_autoreset(theirs, target)
    with pytest.raises(vecmode.EpisodeEndedError, match="cannot see") as info:
        converted.step(np.ones(3, dtype=int))
    assert info.value.indices == (0, 1, 2) and info.value.unseen
    assert pickle.loads(pickle.dumps(info.value)).unseen
    first, rest = np.array([True, False, True]), np.array([False, True, False])
    converted.reset(options={"reset_mask": first})
    with pytest.raises(vecmode.EpisodeEndedError, match=r"sub-env\(s\) 1 may await"):
        converted.step(np.ones(3, dtype=int))
    converted.reset(options={"reset_mask": rest})
    known.reset(options={"reset_mask": first | rest})
    reference = vecmode.with_autoreset(known, target)
    for _ in range(4):
        assert_same(
            converted.step(np.ones(3, dtype=int)),
            reference.step(np.ones(3, dtype=int)),
            "step",
        )
        if target is DISABLED:
            ended = converted.awaiting_reset
            assert_same(
                converted.reset(options={"reset_mask": ended}),
                reference.reset(options={"reset_mask": ended}),
                "reset",
            )
    theirs.close()
    known.close()


def test_undeclared_mode_is_refused_by_with_autoreset():
    envs = gym_sync(NEXT)
    envs.metadata.pop("autoreset_mode")
    with pytest.raises(IncompatibleModeError, match="no metadata"):
        vecmode.with_autoreset(envs, SAME)
    envs.close()


def test_same_mode_is_returned_unchanged():
    envs = gym_sync(SAME)
    assert vecmode.with_autoreset(envs, "SameStep") is envs
    envs.close()


def test_next_step_masked_reset_clears_the_pending_autoreset():
    """As Gymnasium: a masked reset of an ended sub-env cancels its reset step."""

    def run(envs):
        envs.reset(seed=0)
        envs.step(np.ones(2, dtype=int))
        envs.reset(options={"reset_mask": np.array([True, False])})
        return envs.step(np.ones(2, dtype=int))

    fns = functools.partial(scheduled_fns, 2, lengths=[(1,), (3,)])
    reference = gym.vector.SyncVectorEnv(fns(), autoreset_mode=NEXT)
    ours = NextStepAutoreset(vecmode.SyncVectorEnv(fns()))
    expected, got = run(reference), run(ours)
    assert got[1][0] == expected[1][0] == 1.5
    assert_same_run([("step", expected)], [("step", got)])
    reference.close()
    ours.close()


def test_script_is_shared():
    # guard for the helpers: a script drives both envs with the same calls
    script = Script(seed=0, actions=[np.zeros(2, dtype=int)] * 3)
    envs = vecmode.with_autoreset(vecmode.SyncVectorEnv(scheduled_fns(2)), DISABLED)
    calls = drive(envs, script, disabled=True)
    assert [kind for kind, _ in calls][:3] == ["reset", "step", "step"]
    envs.close()


def test_with_autoreset_of_what_is_no_vector_env_says_so():
    """It said to declare the mode in the env's metadata."""
    single = gym.make("CartPole-v1")
    with pytest.raises(TypeError, match=r"got TimeLimit, one env \(vecmode.make_vec"):
        vecmode.with_autoreset(single, "SameStep")
    with pytest.raises(
        TypeError, match=r"got the class SyncVectorEnv \(pass an instance"
    ):
        vecmode.with_autoreset(vecmode.SyncVectorEnv, "SameStep")
