"""TorchRL's GymWrapper over vecmode: the conversions and wrappers it needs.

TorchRL takes a Gymnasium vector env in SameStep or Disabled (reading its
``autoreset_mode`` attribute) and refuses NextStep. ``with_autoreset(env,
"Disabled")`` gets there from Gymnasium's default; TorchRL's rollouts over it must
be exactly those over Gymnasium's own Disabled env.
"""

from __future__ import annotations

import warnings

import gymnasium as gym
import pytest
from gymnasium.vector import AutoresetMode

import vecmode

torch = pytest.importorskip("torch")
pytest.importorskip("torchrl")
from torchrl.envs.libs.gym import GymWrapper  # noqa: E402

KEYS = ("observation", ("next", "observation"), ("next", "done"), ("next", "reward"))


def fns() -> list:
    return [lambda: gym.make("CartPole-v1", max_episode_steps=7)] * 3


def rollout(envs: gym.vector.VectorEnv, steps: int = 40):
    """TorchRL's rollout with a fixed sequence of actions."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TorchRL's and Gymnasium's own notices
        env = GymWrapper(envs)
        env.set_seed(0)
        calls = [0]

        def policy(td):
            action = env.action_spec.zero()
            action[..., (calls[0] % 3) % 2] = 1
            calls[0] += 1
            return td.set("action", action)

        out = env.rollout(steps, policy=policy, break_when_any_done=False)
        env.close()
    return out


def test_torchrl_refuses_next_step_and_takes_it_converted():
    with pytest.raises(RuntimeError, match="SAME_STEP or DISABLED"):
        GymWrapper(gym.vector.SyncVectorEnv(fns()))
    reference = rollout(
        gym.vector.SyncVectorEnv(fns(), autoreset_mode=AutoresetMode.DISABLED)
    )
    assert int(reference["next", "done"].sum()) >= 10  # episodes did end
    for envs in (
        vecmode.with_autoreset(gym.vector.SyncVectorEnv(fns()), "Disabled"),
        vecmode.make_vec(
            lambda: gym.make("CartPole-v1", max_episode_steps=7),
            num_envs=3,
            vectorization_mode="sync",
            autoreset_mode="Disabled",
        ),
    ):
        got = rollout(envs)
        for key in KEYS:
            assert torch.equal(got[key], reference[key]), key


def test_a_stack_of_vecmode_wrappers_is_accepted_and_exact():
    """Every vecmode wrapper has the ``autoreset_mode`` attribute TorchRL reads."""
    base = vecmode.with_autoreset(gym.vector.SyncVectorEnv(fns()), "Disabled")
    envs = vecmode.wrappers.TransformObservation(
        vecmode.wrappers.ClipReward(base, 0.0, 0.5), lambda obs: obs * 2.0
    )
    assert envs.autoreset_mode is AutoresetMode.DISABLED
    got = rollout(envs)
    reference = rollout(
        gym.vector.SyncVectorEnv(fns(), autoreset_mode=AutoresetMode.DISABLED)
    )
    assert torch.equal(got["observation"], reference["observation"] * 2)
    assert torch.equal(got["next", "done"], reference["next", "done"])
    assert torch.equal(got["next", "reward"], reference["next", "reward"].clamp(0, 0.5))
    gymnasium_stack = gym.wrappers.vector.ClipReward(
        gym.vector.SyncVectorEnv(fns(), autoreset_mode=AutoresetMode.DISABLED), 0, 1
    )
    assert not hasattr(gymnasium_stack, "autoreset_mode")  # why TorchRL fails on it
    gymnasium_stack.close()


def test_every_vecmode_layer_reports_its_mode_as_an_attribute():
    for mode in vecmode.MODES:
        envs = vecmode.make_vec(
            "CartPole-v1", num_envs=2, vectorization_mode="sync", autoreset_mode=mode
        )
        stack = vecmode.wrappers.RecordEpisodeStatistics(
            vecmode.wrappers.NormalizeReward(envs)
        )
        assert stack.autoreset_mode is envs.autoreset_mode is mode
        assert stack.autoreset_mode is vecmode.mode_of(stack)
        stack.close()


def test_vecmode_s_own_vector_envs_have_the_attribute_torchrl_reads():
    """with_autoreset(env, "Disabled") of an env already Disabled returns it as
    it is: vecmode's batched CartPole, the simulator adapters and from_sb3 had
    the mode in metadata only, and TorchRL's GymWrapper raised AttributeError."""
    from tests.simulators.fakes.maniskill import ManiSkillVectorEnv
    from vecmode.simulators import ManiSkillAdapter
    from vecmode.testing import BatchedCartPole

    batched = BatchedCartPole(3, "torch")
    adapter = ManiSkillAdapter(ManiSkillVectorEnv(2, False, max_episode_steps=4))
    for envs in (batched, adapter):
        assert envs.autoreset_mode is envs.metadata["autoreset_mode"]
    assert vecmode.with_autoreset(batched, "Disabled") is batched
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env = GymWrapper(batched, device="cpu")
        out = env.rollout(30, break_when_any_done=False)
    assert out["next", "observation"].shape == (3, 30, 4)
    assert int(out["next", "done"].sum()) > 0  # episodes ended, and went on
    env.close()
