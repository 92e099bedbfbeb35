"""What a simulator does at an episode's end (``Semantics``), and what vecmode
refuses where its final observation is lost: with_autoreset, the wrappers that
read final observations, TransitionCollector; the opt-in approximation."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import vecmode
from vecmode.env_classes import Semantics, semantics_of
from vecmode.simulators import ApproximateFinalObs, SimulatorAdapter
from vecmode.wrappers import (
    FrameStackObservation,
    NormalizeObservation,
    NormalizeReward,
    RecordEpisodeStatistics,
)

torch = pytest.importorskip("torch")
pytest.importorskip("array_api_compat")

LOST = Semantics(
    final_observation="lost",
    partial_reset="none",
    remedy="keep_final=True",
    source="a test's simulator",
)


class LossyCartPole(SimulatorAdapter):
    """vecmode's torch BatchedCartPole resetting inside its step, as Brax or
    IsaacLab do: the final observation is lost (``keep_final``: kept, masked)."""

    def __init__(self, num_envs: int = 4, semantics: Semantics = LOST, **kw: Any):
        from vecmode.testing import BatchedCartPole

        cartpole = BatchedCartPole(num_envs, xp=torch, **kw)
        super().__init__(
            cartpole,
            num_envs=num_envs,
            single_observation_space=cartpole.single_observation_space,
            single_action_space=cartpole.single_action_space,
            mode="SameStep",
            namespace="torch",
            semantics=semantics,
        )
        self.last_final: Any = None  # the true final observations, for the tests

    def _reset(self, seed, mask):
        return self.simulator.reset(seed=seed)

    def _step(self, actions):
        obs, rewards, terminated, truncated, infos = self.simulator.step(actions)
        ended = terminated | truncated
        self.last_final = obs.clone()
        if bool(ended.any()):
            fresh, _ = self.simulator.reset(options={"reset_mask": ended})
            obs = torch.where(ended[:, None], fresh, obs)
        return obs, rewards, terminated, truncated, infos


def test_semantics_refuse_a_value_they_do_not_know():
    with pytest.raises(ValueError, match=r"final_observation=.*'lost'.*got 'gone'"):
        Semantics(final_observation="gone")
    with pytest.raises(ValueError, match=r"resets_to=.*'pool'.*got 'cached'"):
        Semantics(resets_to="cached")


@pytest.mark.parametrize(
    ("semantics", "exact", "lost"),
    [
        (Semantics(), True, ""),
        (Semantics(final_observation="every-step"), True, ""),
        (Semantics(final_observation="lost"), False, "final observation is lost"),
        (Semantics(final_observation="opt-in"), False, "unless it is turned on"),
        (Semantics(ending_reward="after-reset"), False, "computed after the reset"),
    ],
)
def test_exact_means_every_real_transition_can_be_read(semantics, exact, lost):
    assert semantics.exact is exact
    assert (lost in semantics.lost()) and (bool(semantics.lost()) is not exact)


def test_an_env_declares_nothing_else_is_gymnasium_s():
    envs = vecmode.make_vec("CartPole-v1", 2, "sync")
    try:
        assert semantics_of(envs) == Semantics()
    finally:
        envs.close()


def test_register_vector_env_records_the_semantics_of_a_class():
    from vecmode.env_classes import register_vector_env, unregister_vector_env
    from vecmode.testing import BatchedCartPole

    said = Semantics(resets_to="pool", truncation="discount")
    register_vector_env(BatchedCartPole, masked_reset="clears", semantics=said)
    try:
        assert semantics_of(BatchedCartPole(2)) == said
    finally:
        unregister_vector_env(BatchedCartPole)
    assert semantics_of(BatchedCartPole(2)) == Semantics()


@pytest.mark.parametrize("mode", vecmode.MODES)
def test_with_autoreset_refuses_a_lost_final_observation_naming_the_remedy(mode):
    with pytest.raises(vecmode.IncompatibleModeError) as error:
        vecmode.with_autoreset(LossyCartPole(), mode)
    message = str(error.value)
    assert f"with_autoreset cannot give {mode.value}'s real transitions" in message
    assert "LossyCartPole: its final observation is lost" in message
    assert "(keep_final=True)" in message and "ApproximateFinalObs" in message


def test_an_exact_simulator_is_not_refused():
    exact = LossyCartPole(semantics=Semantics(partial_reset="none"))
    assert vecmode.with_autoreset(exact, "SameStep") is exact
    with pytest.raises(vecmode.IncompatibleModeError, match="inside its step") as e:
        vecmode.with_autoreset(exact, "Disabled")  # it has already reset them
    assert str(e.value).endswith("as it is: it cannot step without its own autoreset.")


class NoPartialReset(SimulatorAdapter):
    """The torch BatchedCartPole presented in Disabled, with no partial reset: it
    resets every sub-env or none."""

    def __init__(self) -> None:
        from vecmode.testing import BatchedCartPole

        cartpole = BatchedCartPole(3, xp=torch, max_episode_steps=4)
        super().__init__(
            cartpole,
            num_envs=3,
            single_observation_space=cartpole.single_observation_space,
            single_action_space=cartpole.single_action_space,
            mode="Disabled",
            namespace="torch",
            semantics=Semantics("masked", partial_reset="none"),
        )

    def _reset(self, seed, mask):
        return self.simulator.reset(seed=seed)

    def _step(self, actions):
        return self.simulator.step(actions)


def test_a_disabled_simulator_with_no_partial_reset_is_not_made_same_step():
    """It cannot reset the ended sub-envs alone: refused when built (it was
    taken, and raised at the first episodes that ended apart)."""
    assert vecmode.with_autoreset(envs := NoPartialReset(), "Disabled") is envs
    with pytest.raises(vecmode.IncompatibleModeError) as error:
        vecmode.with_autoreset(NoPartialReset(), "SameStep")
    message = str(error.value)
    assert "NoPartialReset has no partial reset (semantics.partial_reset 'none')" in (
        message
    )
    assert "Present it in SameStep (the simulator's own autoreset)" in message


def test_disabled_from_an_array_env_that_resets_by_itself_says_how_to_get_it():
    class Settable(LossyCartPole):  # "auto_reset=False" builds it in Disabled
        without_autoreset = "auto_reset=False"

    class Foreign(LossyCartPole):  # not an adapter: says nothing of its build
        without_autoreset = None

    exact = Semantics(partial_reset="none")
    for cls, end in (
        (
            Settable,
            "build it without its own autoreset (auto_reset=False): it is "
            "then Disabled.",
        ),
        (Foreign, "or build it in Disabled mode."),
    ):
        with pytest.raises(vecmode.IncompatibleModeError) as e:
            vecmode.with_autoreset(cls(semantics=exact), "Disabled")
        assert str(e.value).endswith(end)


@pytest.mark.parametrize("wrapper", [NormalizeObservation, FrameStackObservation])
def test_a_wrapper_reading_final_observations_is_refused_where_they_are_lost(wrapper):
    args = {"stack_size": 2} if wrapper is FrameStackObservation else {}
    with pytest.raises(
        vecmode.IncompatibleModeError, match="final observation is lost"
    ):
        wrapper(LossyCartPole(), **args)
    # the approximation is the opt-in way through
    wrapper(ApproximateFinalObs(LossyCartPole()), **args)


def test_wrappers_that_do_not_read_final_observations_run_through_episode_ends():
    """RecordEpisodeStatistics raised at the first episode end here (its base
    merged final observations it never reads), though check_stack said ok."""
    stats = RecordEpisodeStatistics(LossyCartPole(max_episode_steps=3))
    envs = NormalizeReward(stats, gamma=0.99)
    assert vecmode.check_stack(envs).ok
    envs.reset(seed=0)
    lengths, ended = np.zeros(4, dtype=int), 0
    for _ in range(10):
        _, _, terms, truncs, infos = envs.step(torch.ones(4, dtype=torch.int64))
        lengths += 1
        done = (terms | truncs).numpy()
        if done.any():
            assert infos["_episode"].tolist() == done.tolist()
            assert infos["episode"]["l"][done].tolist() == lengths[done].tolist()
            ended, lengths[done] = ended + int(done.sum()), 0
    assert ended >= 8 and stats.episode_count == ended


@vecmode.supports(*vecmode.MODES, array_native=True)
class _Hook(vecmode.wrappers.StatefulWrapper):
    def transition(self, observations, *rest):
        self.seen = observations


def test_a_stateful_wrapper_s_own_transition_hook_reads_final_observations():
    """A hook of its own gets final observations: refused where they are lost,
    unless the class says it reads none (then the hook gets the step's batch)."""
    with pytest.raises(vecmode.IncompatibleModeError, match="ApproximateFinalObs"):
        _Hook(LossyCartPole())
    blind = type("Blind", (_Hook,), {"reads_final_observations": False})
    blind = vecmode.supports(*vecmode.MODES, array_native=True)(blind)
    envs = blind(LossyCartPole(max_episode_steps=2))
    assert vecmode.check_stack(envs).ok
    obs, _ = envs.reset(seed=0)
    for _ in range(3):
        obs, *_ = envs.step(torch.ones(4, dtype=torch.int64))
        assert envs.seen is obs


def test_the_collector_refuses_a_lost_final_observation():
    with pytest.raises(vecmode.IncompatibleModeError) as error:
        vecmode.TransitionCollector(LossyCartPole())
    assert "TransitionCollector cannot read real transitions" in str(error.value)


def test_the_approximation_gives_the_last_observation_seen_and_says_so():
    env = LossyCartPole(num_envs=8, max_episode_steps=5)
    collector = vecmode.TransitionCollector(ApproximateFinalObs(env))
    assert collector.approximated
    obs, _ = collector.reset(seed=3)
    ended_seen = 0
    for _ in range(12):
        before = obs.clone()
        t = collector.step(torch.ones(8, dtype=torch.int64))
        ended = (t.terminations | t.truncations).numpy()
        for i in np.flatnonzero(ended):  # the final obs: the last one seen
            assert torch.equal(t.next_obs[i], before[i])
            assert not torch.equal(t.next_obs[i], env.last_final[i])
        for i in np.flatnonzero(~ended):  # the others: the true next obs
            assert torch.equal(t.next_obs[i], env.last_final[i])
        ended_seen += int(ended.sum())
        obs = collector.obs
    assert ended_seen >= 8  # truncations at 5 steps, at least


def test_the_approximation_is_only_for_a_lost_final_observation():
    exact = LossyCartPole(semantics=Semantics(partial_reset="none"))
    with pytest.raises(ValueError, match="drop the approximation") as error:
        ApproximateFinalObs(exact)
    assert "register_vector_env" not in str(error.value)  # (it says its semantics)
    from vecmode.testing import BatchedCartPole

    undeclared = vecmode.with_autoreset(BatchedCartPole(2, xp=torch), "SameStep")
    with pytest.raises(ValueError, match="drop the approximation") as error:
        ApproximateFinalObs(undeclared)
    assert str(error.value).endswith(
        "If it is lost, declare so: vecmode.register_vector_env(BatchedCartPole, "
        "masked_reset=..., semantics=vecmode.env_classes.Semantics('lost'))."
    )


def test_check_stack_says_what_is_lost_and_what_is_approximated():
    lossy = check = vecmode.check_stack(LossyCartPole())
    assert check.ok and "final obs: lost (keep_final=True)" in check.rows[0].note
    assert "its final observation is lost" in str(lossy).splitlines()[0]
    refused = vecmode.check_stack(
        NormalizeObservation(ApproximateFinalObs(LossyCartPole()))
    )
    assert refused.ok
    assert "approximated" in str(refused).splitlines()[0]
    assert "approximated" in refused.rows[1].note


def test_check_stack_says_nothing_can_verify_a_lost_or_approximated_layer():
    """Its notes said how to verify them: check_vector_env fails a lost final
    observation, and check_wrapper refuses the approximation over exact bases."""
    report = vecmode.check_stack(ApproximateFinalObs(LossyCartPole()))
    lossy, approximation = (row.evidence_note for row in report.rows)
    assert (
        "no check can prove LossyCartPole exact: its final observations are lost "
        "(or keep_final=True: then check_vector_env proves it)."
    ) in lossy
    assert (
        "no check can prove ApproximateFinalObs exact: its final observations are "
        "approximated. A stack with it is never verified"
    ) in approximation
    assert "check_wrapper(" not in approximation and "record()" not in lossy
    with pytest.raises(vecmode.IncompatibleModeError):
        vecmode.assert_compatible(report.rows[-1].layer, verified=True)


def test_a_masked_reset_the_simulator_cannot_do_is_refused():
    env = LossyCartPole()
    env.reset(seed=0)
    some = torch.tensor([True, False, False, False])
    with pytest.raises(ValueError) as error:
        env.reset(options={"reset_mask": some})
    assert "LossyCartPole cannot reset some sub-envs alone" in str(error.value)
    assert "never resets the whole batch" in str(error.value)
    env.reset(options={"reset_mask": torch.ones(4, dtype=torch.bool)})  # all: fine


class CachedCartPole(LossyCartPole):
    """LossyCartPole resetting each ended sub-env to its first state of the last
    ``reset()``, as Brax's AutoResetWrapper does."""

    def _reset(self, seed, mask):
        obs, infos = super()._reset(seed, mask)
        self.first = obs.clone()
        return obs, infos

    def _step(self, actions):
        cartpole = self.simulator
        obs, rewards, terminated, truncated, infos = cartpole.step(actions)
        ended = terminated | truncated
        cartpole.state = torch.where(
            ended[:, None], self.first.double(), cartpole.state
        )
        cartpole.steps = torch.where(ended, 0, cartpole.steps)
        return (
            torch.where(ended[:, None], self.first, obs),
            rewards,
            terminated,
            truncated,
            infos,
        )


class EveryStepFinals(SimulatorAdapter):
    """gymnax's layout as a Gymnasium vector env: ``info["final_observation"]``
    on every step, with no mask."""

    def __init__(self):
        self.inner = LossyCartPole()
        super().__init__(
            self.inner,
            num_envs=4,
            single_observation_space=self.inner.single_observation_space,
            single_action_space=self.inner.single_action_space,
            mode="SameStep",
            namespace="torch",
            semantics=Semantics(final_observation="every-step", partial_reset="none"),
        )

    def _reset(self, seed, mask):
        return self.inner.reset(seed=seed)

    def _step(self, actions):
        obs, rewards, terminated, truncated, _ = self.inner.step(actions)
        return (
            obs,
            rewards,
            terminated,
            truncated,
            {"final_observation": self.inner.last_final},
        )


@pytest.mark.parametrize(
    ("factory", "final", "resets_to"),
    [
        (LossyCartPole, "lost", "fresh"),
        (CachedCartPole, "lost", "cached-first"),
        (EveryStepFinals, "every-step", None),
    ],
)
def test_probe_mode_tells_where_a_simulator_puts_its_final_observations(
    factory, final, resets_to
):
    result = vecmode.probe_mode(factory, max_steps=200)
    assert (result.final_observation, result.resets_to) == (final, resets_to)
    said = {
        "lost": "final observations: lost",
        "every-step": "on every step, with no mask",
    }
    assert said[final] in str(result)
    cached = resets_to == "cached-first"
    assert ("the first state of the last reset()" in str(result)) is cached


@pytest.mark.parametrize(
    ("mode", "final"), [("NextStep", None), ("SameStep", "masked")]
)
def test_probe_mode_says_nothing_is_lost_in_gymnasium_s_modes(mode, final):
    def factory():
        return vecmode.make_vec("CartPole-v1", 4, "sync", autoreset_mode=mode)

    result = vecmode.probe_mode(factory)
    assert result.mode is vecmode.as_mode(mode)
    assert result.final_observation == final and result.resets_to is None
    assert "lost" not in str(result)


def test_actions_not_of_the_batch_s_shape_step_nothing_and_the_collector_goes_on():
    """As the cores do: an ActionBatchError before the simulator runs."""
    env = LossyCartPole(semantics=Semantics(source="a test's simulator"))
    collector = vecmode.TransitionCollector(env)
    obs, _ = collector.reset(seed=0)
    for wrong in (torch.zeros(3, dtype=torch.int64), torch.zeros((4, 1)), [0] * 4):
        with pytest.raises(
            vecmode.errors.ActionBatchError, match=r"expected an array of shape \(4,\)"
        ):
            collector.step(wrong)
    assert collector.obs is obs  # nothing stepped
    assert collector.step(torch.zeros(4, dtype=torch.int64)).obs is obs


def test_an_adapter_is_not_presented_in_next_step():
    """It was taken, and check_stack then advised building it in NextStep."""
    from gymnasium import spaces

    with pytest.raises(ValueError) as error:
        SimulatorAdapter(
            None,
            num_envs=2,
            single_observation_space=spaces.Box(-1, 1, (1,)),
            single_action_space=spaces.Discrete(2),
            mode="NextStep",
            namespace="torch",
            semantics=Semantics(),
        )
    assert "presented in SameStep (it resets inside its step) or Disabled" in str(
        error.value
    )


def test_the_approximation_steps_numpy_batches_too():
    """A NumPy env registered as losing its final observation (it raised
    AttributeError at its first episode end)."""
    from vecmode.testing import BatchedCartPole

    class LosesItsFinals(BatchedCartPole):
        """BatchedCartPole (NumPy) resetting inside its step, losing the finals."""

        metadata = {**BatchedCartPole.metadata, "autoreset_mode": "SameStep"}

        def step(self, actions):
            obs, rewards, terms, truncs, infos = super().step(actions)
            if (ended := terms | truncs).any():
                fresh, _ = self.reset(options={"reset_mask": ended})
                obs = np.where(ended[:, None], fresh, obs)
            return obs, rewards, terms, truncs, infos

    vecmode.register_vector_env(
        LosesItsFinals, masked_reset="clears", semantics=Semantics("lost")
    )
    try:
        envs = ApproximateFinalObs(LosesItsFinals(3, max_episode_steps=2))
        envs.reset(seed=0)
        seen = envs.step(np.zeros(3, dtype=np.int64))[0]
        *_, truncated, infos = envs.step(np.zeros(3, dtype=np.int64))
        assert truncated.all()
        assert infos["_final_obs"].all()
        assert np.array_equal(infos["final_obs"], seen)  # the last seen
    finally:
        vecmode.unregister_vector_env(LosesItsFinals)
