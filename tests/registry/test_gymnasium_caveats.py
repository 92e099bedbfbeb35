"""Gymnasium's wrappers, continued: the verdict checks can fail (each tells a
broken wrapper), and the caveats of the "ok" verdicts are what the conformance kit
finds."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import gymnasium as gym
import gymnasium.wrappers.vector as gwv
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, VectorEnv

from tests.registry.gym_verdict_helpers import (
    DISABLED,
    NEXT_STEP,
    SAME_STEP,
)
from tests.registry.test_gymnasium_verdicts import (
    CASES,
    EPSILON,
    GAMMA,
    Case,
    ShownFrames,
    observe,
    scale_obs,
)
from vecmode._gymnasium import GYMNASIUM_VERDICTS

pytestmark = [
    pytest.mark.filterwarnings("ignore:.*Recorded episodes will not contain"),
    pytest.mark.filterwarnings("ignore:.*Overwriting existing videos"),
    # spaces the wrappers derive (RescaleObservation/Action, DtypeObservation)
    pytest.mark.filterwarnings("ignore:.*precision lowered by casting to float32"),
    pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning"),
]


# ------------------------------------------------------ the checks can fail
def _transform_obs_wrapper(final_too: bool) -> Callable[[VectorEnv, Any], VectorEnv]:
    class Scale(gym.vector.VectorWrapper):
        def reset(self, **kwargs: Any) -> Any:
            obs, info = self.env.reset(**kwargs)
            return scale_obs(obs), info

        def step(self, actions: Any) -> Any:
            obs, *rest, info = self.env.step(actions)
            if final_too and "final_obs" in info:
                for i in np.flatnonzero(info["_final_obs"]):
                    info["final_obs"][i] = scale_obs(info["final_obs"][i])
            return (scale_obs(obs), *rest, info)

    return lambda env, ctx: Scale(env)


class StatsAsIfNextStep(gwv.RecordEpisodeStatistics):
    def __init__(self, env: VectorEnv) -> None:
        super().__init__(env)
        self._autoreset_mode = NEXT_STEP


class NoFinalInfo(gwv.DictInfoToList):
    def _convert_info_to_list(self, vector_infos: dict) -> list:
        vector_infos = {k: v for k, v in vector_infos.items() if "final_info" not in k}
        return super()._convert_info_to_list(vector_infos)


class CountTwice(gwv.NormalizeObservation):
    def observations(self, observations: Any) -> Any:
        self.obs_rms.update(observations[:1])
        return super().observations(observations)


class RestartingReturns(gwv.NormalizeReward):
    def __init__(self, env: VectorEnv) -> None:
        super().__init__(env, gamma=GAMMA, epsilon=EPSILON)
        self._autoreset_mode = SAME_STEP


class NoFrameOnEnd(ShownFrames):
    def step(self, actions: Any) -> Any:
        result = self.env.step(actions)
        if not np.any(result[2] | result[3]):
            self._render_frame()
        return result


def _broken(name: str, wrap: Callable[[VectorEnv, Any], VectorEnv]) -> Case:
    return replace(CASES[name], wrap=wrap)


def _wrap_no_frame_on_end(env: VectorEnv, ctx: Any) -> VectorEnv:
    wrapped = NoFrameOnEnd(env)
    wrapped.shown = []
    return wrapped


BROKEN = {
    "obs transform forgetting final_obs": (
        _broken("TransformObservation", _transform_obs_wrapper(False)),
        SAME_STEP,
        "wrong",
    ),
    "obs transform minding final_obs": (
        _broken("TransformObservation", _transform_obs_wrapper(True)),
        SAME_STEP,
        "ok",
    ),
    "episode statistics ignoring SameStep": (
        _broken("RecordEpisodeStatistics", lambda env, ctx: StatsAsIfNextStep(env)),
        SAME_STEP,
        "wrong",
    ),
    "info list without final_info": (
        _broken("DictInfoToList", lambda env, ctx: NoFinalInfo(env)),
        SAME_STEP,
        "wrong",
    ),
    "observation statistics counting some twice": (
        _broken("NormalizeObservation", lambda env, ctx: CountTwice(env)),
        NEXT_STEP,
        "wrong",
    ),
    "normalised rewards with SameStep's restart": (
        _broken("NormalizeReward", lambda env, ctx: RestartingReturns(env)),
        NEXT_STEP,
        "wrong",
    ),
    "actions not clipped": (
        _broken("ClipAction", lambda env, ctx: env),
        DISABLED,
        "wrong",
    ),
    "rewards transformed twice": (
        _broken(
            "TransformReward",
            lambda env, ctx: gwv.TransformReward(
                gwv.TransformReward(env, lambda r: r * 2.0 - 1.0),
                lambda r: r * 2.0 - 1.0,
            ),
        ),
        SAME_STEP,
        "wrong",
    ),
    "display skipping last frames": (
        _broken("HumanRendering", _wrap_no_frame_on_end),
        NEXT_STEP,
        "wrong",
    ),
}


@pytest.mark.parametrize("label", BROKEN)
def test_checks_tell_broken_wrappers(label: str):
    """The checks behind "ok" verdicts do fail on wrappers with mode bugs."""
    case, mode, expected = BROKEN[label]
    observed, detail = observe(case, mode)
    assert observed == expected, f"{label}: observed {observed!r}: {detail}"


def test_record_episode_statistics_is_right_in_disabled_over_vecmode_core():
    """The Disabled verdict's caveat: the bug needs an env that pops reset_mask."""
    import vecmode
    from tests.helpers import scheduled_fns

    lengths = {}
    for name, base in {
        "vecmode": vecmode.SyncVectorEnv(scheduled_fns(2, lengths=[(2,), (3,)])),
        "gymnasium": gym.vector.SyncVectorEnv(
            scheduled_fns(2, lengths=[(2,), (3,)]), autoreset_mode="Disabled"
        ),
    }.items():
        envs = gwv.RecordEpisodeStatistics(base)
        envs.reset(seed=0)
        seen = []
        for _ in range(8):
            _, _, terminated, truncated, info = envs.step(np.zeros(2, dtype=int))
            if "episode" in info:
                seen += info["episode"]["l"][info["_episode"]].tolist()
            ended = terminated | truncated
            if ended.any():
                envs.reset(options={"reset_mask": ended})
        lengths[name] = seen
    assert lengths["vecmode"] == [2, 3, 2, 2, 3, 2]
    assert lengths["gymnasium"] != lengths["vecmode"]


#: Gymnasium's wrappers the conformance kit can build over its test envs, with the
#: kit's options: the partial-reset and write caveats are established over them.
_KIT_BUILT = {
    "vectorize_observation:TransformObservation": (
        lambda env: gwv.TransformObservation(env, lambda obs: obs * 2),
        {},
    ),
    "vectorize_observation:VectorizeTransformObservation": (
        lambda env: gwv.VectorizeTransformObservation(
            env,
            gym.wrappers.TransformObservation,
            func=lambda obs: obs * 2,
            observation_space=None,
        ),
        {},
    ),
    "vectorize_observation:FlattenObservation": (gwv.FlattenObservation, {}),
    "stateful_observation:NormalizeObservation": (gwv.NormalizeObservation, {}),
    "vectorize_action:ClipAction": (gwv.ClipAction, {"action_type": "box"}),
    "vectorize_reward:TransformReward": (
        lambda env: gwv.TransformReward(env, lambda r: r * 2),
        {},
    ),
    "vectorize_reward:ClipReward": (lambda env: gwv.ClipReward(env, 0, 1.2), {}),
    "vectorize_reward:VectorizeTransformReward": (
        lambda env: gwv.VectorizeTransformReward(
            env, gym.wrappers.TransformReward, func=lambda r: r * 2
        ),
        {},
    ),
    "common:RecordEpisodeStatistics": (gwv.RecordEpisodeStatistics, {"episode": True}),
    "dict_info_to_list:DictInfoToList": (gwv.DictInfoToList, {"env_infos": False}),
}


@pytest.mark.parametrize("short", sorted(_KIT_BUILT))
def test_the_partial_reset_caveats_are_what_the_kit_finds(short):
    """In NextStep, where the entries' own runs make no partial reset, the
    conformance kit cuts episodes by masked resets over Gymnasium's env: the
    classes with a partial-reset caveat fail there, at a masked reset or right
    after one; those with a write caveat fail at the first step, writing into
    the env's rewards; the others conform."""
    import vecmode
    from vecmode._gymnasium import (
        KEPT_ROWS_FAULTS,
        PARTIAL_RESET_CAVEATS,
        WRITES_BELOW_CAVEATS,
    )
    from vecmode.testing import check_wrapper, episode_statistics

    name = f"gymnasium.wrappers.vector.{short}"
    assert GYMNASIUM_VERDICTS[name]["NextStep"] == ("ok", "")
    factory, kit = _KIT_BUILT[short]
    kit = dict(kit)
    if kit.pop("episode", False):
        kit["compare_info"] = episode_statistics
    run = functools.partial(
        check_wrapper,
        factory,
        modes=["NextStep"],
        bases=["gymnasium.vector.SyncVectorEnv"],
        **kit,
    )
    with vecmode.guard():  # Gymnasium's classes refuse the modes they get wrong
        if name in {**WRITES_BELOW_CAVEATS, **KEPT_ROWS_FAULTS}:  # before any cut
            with pytest.raises(AssertionError, match=_WROTE_REWARDS):
                run()
            return
        if name not in PARTIAL_RESET_CAVEATS:
            run()
            return
        with pytest.raises(AssertionError) as caught:
            run()
    message = str(caught.value)
    assert (
        "truncated by the env where cut" in message
        or "reset with reset_mask" in message
    ), message


def test_normalize_reward_s_partial_reset_caveat():
    """NormalizeReward pools its statistics over the batch, so the kit compares
    its values only where episodes end together (not after cuts): its caveat is
    shown here. In NextStep, a partial reset of sub-env 1 zeroes sub-env 0's
    discounted return too, which the next step's scaling then lacks."""
    from tests.helpers import scheduled_fns
    from vecmode._gymnasium import PARTIAL_RESET_CAVEATS

    name = "gymnasium.wrappers.vector.stateful_reward:NormalizeReward"
    assert name in PARTIAL_RESET_CAVEATS
    assert GYMNASIUM_VERDICTS[name]["NextStep"] == ("ok", "")
    envs = gwv.NormalizeReward(gym.vector.SyncVectorEnv(scheduled_fns(2)))
    envs.reset(seed=0)
    envs.step(np.zeros(2, dtype=int))
    assert (envs.accumulated_reward != 0).all()
    envs.reset(options={"reset_mask": np.array([False, True])})
    assert envs.accumulated_reward[0] == 0  # sub-env 0 was not reset
    envs.close()


_WROTE_REWARDS = (
    r"call [01] \((step|reset)\), field (rewards|observations): the wrapper wrote "
    r"into what the env below returned to it"
)


class KeepsItsRewards(gym.vector.VectorWrapper):
    """A layer that keeps the rewards array it returned (as a logger or a buffer
    does), to read it after the step."""

    def step(self, actions: Any) -> Any:
        result = self.env.step(actions)
        self.kept = result[1]
        self.seen = result[1].copy()
        return result


@pytest.mark.parametrize("mode", list(AutoresetMode), ids=lambda m: m.value)
@pytest.mark.parametrize(
    "short",
    ["VectorizeTransformReward", "ClipReward"],
)
def test_the_reward_transforms_write_into_the_rewards_below(short, mode):
    """The caveat of Gymnasium's VectorizeTransformReward and ClipReward, in every
    mode: they write their rewards into the array the env below returned, so a
    layer below that keeps it holds their rewards, not its own; vecmode's
    classes of the same names leave it alone. The kit finds it (above)."""
    import vecmode
    from tests.helpers import scheduled_fns
    from vecmode._gymnasium import NEXT_STEP_CAVEATS, WRITES_BELOW_CAVEATS
    from vecmode.registry import Verdict

    name = f"gymnasium.wrappers.vector.vectorize_reward:{short}"
    next_step = mode is AutoresetMode.NEXT_STEP  # its reset step's caveat too
    args, kwargs = (
        ((gym.wrappers.TransformReward,), {"func": lambda r: r + 10.0})
        if short == "VectorizeTransformReward"
        else ((10.0, 20.0), {})
    )
    for module, writes in ((gwv, True), (vecmode.wrappers, False)):
        below = KeepsItsRewards(
            vecmode.with_autoreset(vecmode.SyncVectorEnv(scheduled_fns(2)), mode)
        )
        envs = getattr(module, short)(below, *args, **kwargs)
        envs.reset(seed=0)
        rewards = envs.step(np.zeros(2, dtype=int))[1]
        assert (rewards >= 10.0).all()
        assert (below.seen < 10.0).all()
        assert np.array_equal(below.kept, rewards if writes else below.seen), module
        assert (below.kept is rewards) == writes
        row = vecmode.check_stack(envs).rows[-1]
        assert row.verdict is Verdict.OK
        said = (WRITES_BELOW_CAVEATS[name], NEXT_STEP_CAVEATS.get(name, "") * next_step)
        assert row.note == (" ".join(filter(None, said)) if writes else ""), module
        envs.close()


@pytest.mark.parametrize("short", ["TransformReward", "VectorizeTransformReward"])
def test_the_reward_transforms_give_next_step_s_reset_step_a_reward(short):
    """Their NextStep caveat: the reset step's reward 0 becomes func(0); vecmode's
    classes of the same names keep 0 there."""
    import vecmode
    from tests.helpers import scheduled_fns
    from vecmode._gymnasium import NEXT_STEP_CAVEATS

    name = f"gymnasium.wrappers.vector.vectorize_reward:{short}"
    caveat = NEXT_STEP_CAVEATS[name]
    assert "reset step's reward 0 too" in caveat
    args, kwargs = (
        ((gym.wrappers.TransformReward,), {"func": lambda r: r + 1.0})
        if short == "VectorizeTransformReward"
        else ((lambda r: r + 1.0,), {})
    )
    for module, shifted in ((gwv, True), (vecmode.wrappers, False)):
        core = vecmode.SyncVectorEnv(scheduled_fns(2, lengths=[[1], [1]]))
        envs = getattr(module, short)(
            vecmode.with_autoreset(core, "NextStep"), *args, **kwargs
        )
        envs.reset(seed=0)
        _, _, terminations, truncations, _ = envs.step(np.zeros(2, dtype=int))
        assert (terminations | truncations).all()
        reset_step = envs.step(np.zeros(2, dtype=int))[1]  # every sub-env's
        assert reset_step.tolist() == ([1.0, 1.0] if shifted else [0.0, 0.0])
        note = vecmode.check_stack(envs).rows[-1].note
        assert (caveat in note) == shifted
        envs.close()


def test_every_partial_reset_caveat_is_established():
    """Each caveat is shown by a test here, and belongs to an entry that is ok in
    NextStep."""
    from vecmode._gymnasium import PARTIAL_RESET_CAVEATS

    shown = {f"gymnasium.wrappers.vector.{short}" for short in _KIT_BUILT} | {
        "gymnasium.wrappers.vector.stateful_reward:NormalizeReward"
    }
    assert set(PARTIAL_RESET_CAVEATS) <= shown
    for name in PARTIAL_RESET_CAVEATS:
        assert GYMNASIUM_VERDICTS[name]["NextStep"][0] == "ok", name


def test_every_write_caveat_is_established():
    """Each class with a write caveat is run by the kit (which finds it) and by
    a test above (which shows it), and is ok in NextStep; no class has both
    kinds of caveat (an entry holds one)."""
    from vecmode._gymnasium import (
        KEPT_ROWS_FAULTS,
        PARTIAL_RESET_CAVEATS,
        WRITES_BELOW_CAVEATS,
    )

    kit = {f"gymnasium.wrappers.vector.{short}" for short in _KIT_BUILT}
    writers = {**WRITES_BELOW_CAVEATS, **KEPT_ROWS_FAULTS}
    assert set(writers) <= kit
    assert not set(writers) & set(PARTIAL_RESET_CAVEATS)
    for name in writers:
        verdicts = {v for v, _ in GYMNASIUM_VERDICTS[name].values()}
        assert verdicts <= {"ok", "refuses"}, name
        assert GYMNASIUM_VERDICTS[name]["NextStep"][0] == "ok", name


_VTO = "vectorize_observation:VectorizeTransformObservation"


def _kept_after_a_masked_reset(envs: Any) -> np.ndarray:
    """Sub-env 1's observation as a masked reset of sub-env 0 returns it (after
    a step), over ``envs``."""
    envs.reset(seed=0)
    envs.step(np.ones(2, dtype=int))
    obs = envs.reset(options={"reset_mask": np.array([True, False])})[0]
    kept = np.array(obs[1])
    envs.close()
    return kept


@pytest.mark.parametrize("mode", ["NextStep", "Disabled"])
def test_vectorize_transform_observation_writes_into_the_batch_below(mode):
    """The caveat of Gymnasium's VectorizeTransformObservation: keeping the
    space, it writes its observations into the env's array, which an env built
    with copy=False hands out; Gymnasium's SyncVectorEnv refills that batch
    every call (and so does vecmode's sync core), but Gymnasium's AsyncVectorEnv
    keeps a sub-env's row there until it runs again, so after a masked reset
    the kept sub-env's observation comes back doubled twice (vecmode's async
    core as Gymnasium's; vecmode's class returns a new array)."""
    import vecmode
    from vecmode._gymnasium import KEPT_ROWS_FAULTS
    from vecmode.registry import Verdict

    def fns():
        return [lambda: gym.make("CartPole-v1")] * 2

    def gym_doubled(envs):
        return gwv.VectorizeTransformObservation(
            envs,
            gym.wrappers.TransformObservation,
            func=lambda obs: obs * 2,
            observation_space=None,
        )

    def ours_doubled(envs):
        return vecmode.wrappers.VectorizeTransformObservation(
            envs,
            gym.wrappers.TransformObservation,
            func=lambda obs: obs * 2,
            observation_space=None,
        )

    def vm(core):
        return vecmode.with_autoreset(core, mode)

    truth = _kept_after_a_masked_reset(vm(vecmode.SyncVectorEnv(fns())))
    gym_mode = vecmode.AutoresetMode(mode)
    cases = {
        "gymnasium sync": (
            gym_doubled,
            gym.vector.SyncVectorEnv(fns(), copy=False, autoreset_mode=gym_mode),
            2,
        ),
        "gymnasium async": (
            gym_doubled,
            gym.vector.AsyncVectorEnv(fns(), copy=False, autoreset_mode=gym_mode),
            4,
        ),
        "gymnasium async, no shared memory": (
            gym_doubled,
            gym.vector.AsyncVectorEnv(
                fns(), copy=False, shared_memory=False, autoreset_mode=gym_mode
            ),
            2,
        ),
        "a gymnasium sync subclass": (
            gym_doubled,
            type("Sync", (gym.vector.SyncVectorEnv,), {})(
                fns(), copy=False, autoreset_mode=gym_mode
            ),
            2,
        ),
        "vecmode sync": (gym_doubled, vm(vecmode.SyncVectorEnv(fns(), copy=False)), 2),
        "vecmode async, no shared memory": (
            gym_doubled,
            vm(vecmode.AsyncVectorEnv(fns(), copy=False, shared_memory=False)),
            4,
        ),
        "vecmode async": (
            gym_doubled,
            vm(vecmode.AsyncVectorEnv(fns(), copy=False)),
            4,
        ),
        "vecmode's class, async": (
            ours_doubled,
            vm(vecmode.AsyncVectorEnv(fns(), copy=False)),
            2,
        ),
    }
    caveat = KEPT_ROWS_FAULTS[f"gymnasium.wrappers.vector.{_VTO}"]
    for name, (wrap, envs, times) in cases.items():
        wrapped = wrap(envs)
        # the report says what happens: wrong in Disabled over an env that keeps
        # its rows, a caveat in NextStep there, nothing over the others
        row = vecmode.check_stack(wrapped).rows[-1]
        wrong = times == 4 and mode == "Disabled"
        assert row.verdict is (Verdict.KNOWN_WRONG if wrong else Verdict.OK), name
        assert (caveat in row.note) == (times == 4), (name, row.note)
        got = _kept_after_a_masked_reset(wrapped)
        np.testing.assert_allclose(got, times * truth, err_msg=name)
    # and a layer above that resets ended sub-envs by mask is refused over it
    gym_nextstep = gym.vector.AsyncVectorEnv(fns(), copy=False)
    with pytest.raises(vecmode.IncompatibleModeError, match="transformed twice"):
        vecmode.DisableAutoreset(gym_doubled(gym_nextstep))
    vecmode.DisableAutoreset(gym_doubled(gym.vector.AsyncVectorEnv(fns()))).close()
    gym_nextstep.close()


def test_record_episode_statistics_verdicts_follow_the_env_below():
    """Its Disabled verdict and its partial-reset caveat need an env that pops
    reset_mask (Gymnasium's): over vecmode's core, check_stack says ok in every
    mode with the caveat of its in-place info['_episode'] (shown happening) and
    guard() lets it be built; over Gymnasium's env, it is known-wrong in
    Disabled (refused under guard) and ok with the partial-reset caveat in
    NextStep."""
    import vecmode
    from tests.helpers import scheduled_fns
    from vecmode._gymnasium import CAVEATS_WHERE_OPTIONS_KEPT, PARTIAL_RESET_CAVEATS
    from vecmode.registry import Verdict

    name = "gymnasium.wrappers.vector.common:RecordEpisodeStatistics"
    caveat = PARTIAL_RESET_CAVEATS[name]
    for mode in AutoresetMode:
        ours = gwv.RecordEpisodeStatistics(
            vecmode.with_autoreset(vecmode.SyncVectorEnv(scheduled_fns(2)), mode)
        )
        row = vecmode.check_stack(ours).rows[-1]
        assert (row.verdict, row.note) == (
            Verdict.OK,
            CAVEATS_WHERE_OPTIONS_KEPT[name],
        ), mode
        # the caveat: the step's info["_episode"] is cleared by the reset after
        short = [lambda: gym.make("CartPole-v1", max_episode_steps=1)] * 2
        shown = gwv.RecordEpisodeStatistics(
            vecmode.with_autoreset(vecmode.SyncVectorEnv(short), mode)
        )
        shown.reset(seed=0)
        infos = shown.step(np.zeros(2, dtype=int))[-1]
        assert infos["_episode"].tolist() == [True, True]
        shown.reset(options={"reset_mask": np.array([True, False])})
        assert infos["_episode"].tolist() == [False, True], (
            "Gymnasium no longer clears it in place: drop the caveat"
        )
        shown.close()
        with vecmode.guard():
            gwv.RecordEpisodeStatistics(ours.env).close()
        theirs = gwv.RecordEpisodeStatistics(
            gym.vector.SyncVectorEnv(scheduled_fns(2), autoreset_mode=mode)
        )
        row = vecmode.check_stack(theirs).rows[-1]
        if mode is AutoresetMode.DISABLED:
            assert row.verdict is Verdict.KNOWN_WRONG
            with vecmode.guard(), pytest.raises(vecmode.IncompatibleModeError):
                gwv.RecordEpisodeStatistics(theirs.env)
        else:
            assert (row.verdict, row.note) == (Verdict.OK, caveat)
        ours.close()
        theirs.close()
