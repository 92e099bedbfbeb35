"""vecmode.replay.record: recording calls, replaying them, closing instances."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from tests.custom_vector_envs import CounterVectorEnv
from vecmode.errors import NotAVectorEnvError
from vecmode.replay.compare import same
from vecmode.replay.record import Call, Instances, Recorder


def test_a_recorder_keeps_copies_of_what_each_call_returned():
    env = CounterVectorEnv(2, "SameStep")
    recorder = Recorder(env, seed=0)
    reset = recorder.reset(seed=0)
    step = recorder.step(recorder.sample())
    masked = recorder.reset_mask(np.array([True, False]))
    assert [call.kind for call in recorder.calls] == ["reset", "step", "reset(mask)"]
    assert [call.index for call in recorder.calls] == [0, 1, 2]
    assert reset.obs[1].tolist() == [1.0, 0.0, 0.0]
    assert step.rewards.shape == (2,) and step.ended.tolist() == [False, False]
    assert masked.mask.tolist() == [True, False] and masked.flags[0].size == 0
    assert step.raw[0] is not env.buffer  # a deep copy, not the env's buffer


def test_what_a_call_raises_or_returns_unreadably_is_recorded():
    class Broken(CounterVectorEnv):
        def step(self, actions):
            raise RuntimeError("boom")

        def reset(self, *, seed=None, options=None):
            return "not a tuple"

    recorder = Recorder(Broken(2), seed=0)
    reset, step = recorder.reset(), recorder.step(recorder.sample())
    assert isinstance(step.error, RuntimeError)
    assert str(reset.error) == (
        "the result of reset() cannot be read: expected a tuple (obs, infos), got str"
    )


def test_a_replay_makes_the_same_calls_with_actions_changed_where_asked():
    calls = [Call(0, "reset", seed=3), Call(1, "step", actions=[0, 1])]
    calls.append(Call(2, "reset(mask)", mask=np.array([False, True])))
    calls.append(Call(3, "step", actions=[2, 2]))
    recorder = Recorder(CounterVectorEnv(2), seed=0)
    made = recorder.replay(calls, lambda call: np.array([call.index == 3, False]))
    assert [call.kind for call in made] == ["reset", "step", "reset(mask)", "step"]
    assert made[0].seed == 3 and made[2].mask.tolist() == [False, True]
    assert made[1].actions == [0, 1]
    assert made[3].actions[1] == 2 and made[3].actions[0] != 2


def test_a_replay_stops_after_a_call_that_raised():
    class FailsSecondStep(CounterVectorEnv):
        steps = 0

        def step(self, actions):
            self.steps += 1
            if self.steps == 2:
                raise RuntimeError("boom")
            return super().step(actions)

    calls = [Call(0, "reset")] + [Call(i, "step", actions=[0, 0]) for i in (1, 2, 3)]
    made = Recorder(FailsSecondStep(2), seed=0).replay(calls)
    assert len(made) == 3 and made[-1].error is not None


def test_the_alternative_action_is_another_one():
    recorder = Recorder(CounterVectorEnv(2, num_actions=3), seed=0)
    assert all(recorder.alternative(1) != 1 for _ in range(20))
    assert Recorder(CounterVectorEnv(2, num_actions=1), seed=0).alternative(0) is None


def test_instances_close_everything_they_built():
    made: list[CounterVectorEnv] = []

    def factory():
        made.append(CounterVectorEnv(2))
        return made[-1]

    with pytest.raises(RuntimeError), Instances(factory, "demo") as instances:
        first = instances.new()
        instances.new()
        instances.close(first)
        raise RuntimeError("the caller fails")
    assert [env.closed_count for env in made] == [1, 1]


def test_instances_refuse_what_is_no_fresh_vector_env():
    with pytest.raises(TypeError, match="demo takes a function that builds"):
        Instances(CounterVectorEnv(2), "demo")  # type: ignore[arg-type]
    with (
        pytest.raises(NotAVectorEnvError, match="demo: the factory must return"),
        Instances(lambda: gym.make("CartPole-v1"), "demo") as instances,
    ):
        instances.new()
    env = CounterVectorEnv(2)
    with (
        pytest.raises(ValueError, match="an env it had returned before"),
        Instances(lambda: env, "demo") as instances,
    ):
        instances.new()
        instances.new()


def test_an_env_in_the_dense_layout_is_read_through_gymnasium_s():
    from vecmode.testing import DenseFinalObsVectorEnv, scheduled_env_fns

    with Instances(lambda: DenseFinalObsVectorEnv(scheduled_env_fns(2)), "d") as made:
        env = made.new()
        assert made.read_through == "vecmode.autoreset.GymnasiumFinalObs"
        assert made.read_through.endswith(type(env).__qualname__)
        recorder = Recorder(env, seed=0)
        recorder.reset(seed=0)
        calls = [recorder.step([0, 0]) for _ in range(2)]
    assert same(calls[-1].infos["_final_obs"], np.array([True, False]))
