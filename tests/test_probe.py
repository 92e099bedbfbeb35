"""vecmode.probe.probe_mode: the mode a vector env behaves as, whatever it declares.

Each test builds the env through a factory (the probe makes several instances),
and checks what the probe found against what the env is known to do.
"""

from __future__ import annotations

import functools

import gymnasium as gym
import numpy as np
import pytest

import vecmode
from tests.custom_vector_envs import CounterVectorEnv
from tests.helpers import envpool_warnings, vector_env_metadata_kept
from vecmode import AutoresetMode
from vecmode.probe import OVERWRITTEN, ProbeResult, probe_mode
from vecmode.replay.compare import Difference
from vecmode.replay.predictions import AUTORESET_STEP, masked_keeps_message
from vecmode.testing import DenseFinalObsVectorEnv, scheduled_env_fns

MODES = list(AutoresetMode)
NEXT, SAME, DISABLED = MODES
FORK = "fork"


def _cartpoles(num_envs: int = 3, steps: int = 6) -> list:
    return [
        functools.partial(gym.make, "CartPole-v1", max_episode_steps=steps + i)
        for i in range(num_envs)
    ]


def _gym_sync(mode: AutoresetMode) -> gym.vector.VectorEnv:
    return gym.vector.SyncVectorEnv(_cartpoles(), autoreset_mode=mode)


def _gym_async(mode: AutoresetMode) -> gym.vector.VectorEnv:
    return gym.vector.AsyncVectorEnv(_cartpoles(2), autoreset_mode=mode, context=FORK)


def _vecmode_sync(mode: AutoresetMode) -> gym.vector.VectorEnv:
    return vecmode.with_autoreset(vecmode.SyncVectorEnv(scheduled_env_fns(3)), mode)


def _vecmode_make_vec(mode: AutoresetMode) -> gym.vector.VectorEnv:
    return vecmode.make_vec(
        "CartPole-v1",
        num_envs=3,
        autoreset_mode=mode,
        max_episode_steps=5,
        vectorization_mode="sync",
    )


def _vecmode_async(mode: AutoresetMode) -> gym.vector.VectorEnv:
    return vecmode.with_autoreset(
        vecmode.AsyncVectorEnv(scheduled_env_fns(3), num_workers=2, context=FORK),
        mode,
    )


def _custom(mode: AutoresetMode) -> gym.vector.VectorEnv:
    return CounterVectorEnv(3, mode)


ENVS = {
    "gymnasium-sync": _gym_sync,
    "gymnasium-async": _gym_async,
    "vecmode-sync": _vecmode_sync,
    "vecmode-make_vec": _vecmode_make_vec,
    "vecmode-async": _vecmode_async,
    "custom-numpy": _custom,
}


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
@pytest.mark.parametrize("name", sorted(ENVS))
def test_probe_finds_the_mode(name, mode):
    result = probe_mode(functools.partial(ENVS[name], mode))
    assert result.mode is mode, str(result)
    assert result.declared is mode
    assert result.agrees
    assert result.reason.startswith(f"only {mode.value}'s predictions hold.")
    assert set(result.rejected) == set(MODES) - {mode}
    assert str(result).startswith(f"behaves as {mode.value} (declares {mode.value})")


# ------------------------------------------------- other libraries' vector envs
def _cartpole_vector_env(mode: AutoresetMode) -> gym.vector.VectorEnv:
    return gym.make_vec("CartPole-v1", num_envs=3, max_episode_steps=5)


def _ale(mode: AutoresetMode) -> gym.vector.VectorEnv:
    from ale_py.vector_env import AtariVectorEnv

    return AtariVectorEnv(
        game="pong",
        num_envs=2,
        autoreset_mode=mode.value,
        max_num_frames_per_episode=40,
        noop_max=0,
        repeat_action_probability=0.0,
    )


def _envpool(mode: AutoresetMode) -> gym.vector.VectorEnv:
    import envpool

    return envpool.make(
        "CartPole-v1", env_type="gymnasium", num_envs=3, seed=0, max_episode_steps=4
    )


#: Vector env classes of other libraries, probed in every mode they can be built
#: in: name -> (the class as "module:QualName" (EnvPool's envs are subclasses it
#: builds per task, of this one), the library, those modes, a factory).
LIBRARY_ENVS = {
    "gymnasium-CartPoleVectorEnv": (
        "gymnasium.envs.classic_control.cartpole:CartPoleVectorEnv",
        "gymnasium",
        (NEXT,),
        _cartpole_vector_env,
    ),
    "ale_py-AtariVectorEnv": (
        "ale_py.vector_env:AtariVectorEnv",
        "ale_py",
        (NEXT, SAME),
        _ale,
    ),
    "envpool": (
        "envpool.python.gymnasium_envpool:GymnasiumEnvPoolMixin",
        "envpool",
        (NEXT,),
        _envpool,
    ),
}

#: Verified env classes whose probe runs in another module (it needs that module's
#: Ray session, or SB3's envs): the file and the test that runs it.
PROBED_ELSEWHERE = {
    "vecmode.ray_vector_env:RayVectorEnv": (
        "cores/test_ray.py",
        "test_probe_finds_the_mode_it_declares",
    ),
    "vecmode.sb3.from_vec_env:FromSB3VectorEnv": (
        "integrations/sb3/test_from_sb3.py",
        "test_from_sb3_behaves_as_the_mode_it_declares",
    ),
}


@pytest.mark.parametrize(
    ("name", "mode"),
    [(name, mode) for name, case in LIBRARY_ENVS.items() for mode in case[2]],
    ids=str,
)
@envpool_warnings
def test_probe_finds_the_mode_of_other_libraries_envs(name, mode):
    """ALE reports SameStep's final observations in a dense array of its own: the
    probe reads them as vecmode.with_autoreset does, and says so."""
    key, library, _, make = LIBRARY_ENVS[name]
    pytest.importorskip(library)
    with vector_env_metadata_kept():
        envs = make(mode)
        assert key in {_key(cls) for cls in type(envs.unwrapped).__mro__}
        envs.close()
        result = probe_mode(functools.partial(make, mode))
    assert result.mode is mode and result.agrees, str(result)
    dense = library == "ale_py" and mode is SAME
    through = "vecmode.autoreset.GymnasiumFinalObs" if dense else None
    assert result.read_through == through
    assert ("read through vecmode.autoreset.GymnasiumFinalObs" in str(result)) is dense


def test_the_verified_env_classes_are_the_ones_probed_here():
    """vecmode.check_stack reports these env classes' modes as verified because
    test_probe_finds_the_mode and test_probe_finds_the_mode_of_other_libraries_envs
    prove them in every mode they are built in (and the tests named in
    PROBED_ELSEWHERE, the Ray core's and the SB3 bridge's)."""
    import ast
    from pathlib import Path

    from vecmode._evidence import VERIFIED_ENVS

    probed = set()
    for name, make in ENVS.items():
        if name.startswith("custom"):
            continue
        envs = make(AutoresetMode.NEXT_STEP)
        probed.add(_key(type(envs.unwrapped)))
        envs.close()
    probed |= {case[0] for case in LIBRARY_ENVS.values()}
    for key, (module, test) in PROBED_ELSEWHERE.items():
        source = (Path(__file__).parent / module).read_text()
        defined = {
            node.name
            for node in ast.parse(source).body
            if isinstance(node, ast.FunctionDef)
        }
        assert test in defined, f"{key}: no {test} in {module}"
        probed.add(key)
    assert probed == VERIFIED_ENVS


def _key(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def test_an_env_class_reporting_final_observations_its_own_way_is_read_as_declared():
    """A class declared (vecmode.register_vector_env; vecmode declares its test
    env DenseFinalObsVectorEnv) to report SameStep's final observations in one
    dense array is probed and checked through GymnasiumFinalObs, as with_autoreset
    reads it; undeclared, its layout is a contradiction the probe names."""
    from vecmode.testing import check_vector_env

    factory = functools.partial(DenseFinalObsVectorEnv, _cartpoles(3, 4))
    result = probe_mode(factory)
    assert result.mode is SAME and result.agrees, str(result)
    assert result.read_through == "vecmode.autoreset.GymnasiumFinalObs"
    report = check_vector_env(factory)
    assert report.mode is SAME
    assert report.probe.read_through == result.read_through
    assert any(
        "read through vecmode.autoreset.GymnasiumFinalObs" in c for c in report.checks
    )
    declared = vecmode.env_classes.vector_env_declaration(factory())
    assert declared is not None and declared.final_obs_layout == "dense"
    vecmode.unregister_vector_env(declared.path)
    try:
        undeclared = probe_mode(factory)
        assert undeclared.mode is None and undeclared.read_through is None
        assert "info['_final_obs']: expected True, got <no such key>" in str(undeclared)
    finally:
        vecmode.register_vector_env(
            declared.path,
            masked_reset=declared.masked_reset_of,
            modes=declared.modes,
            final_obs_layout=declared.final_obs_layout,
            why=declared.why,
        )
    assert vecmode.env_classes.vector_env_declaration(factory()) == declared


def test_probe_gymnasium_custom_cartpole_vector_env():
    """gym.make_vec("CartPole-v1") uses the numpy CartPoleVectorEnv, which resets
    every sub-env whatever reset_mask says; it is NEXT_STEP."""
    factory = functools.partial(gym.make_vec, "CartPole-v1", num_envs=4)
    envs = factory()
    assert type(envs.unwrapped).__name__ == "CartPoleVectorEnv"
    envs.close()
    result = probe_mode(factory)
    assert result.mode is AutoresetMode.NEXT_STEP, str(result)
    assert result.agrees
    # ruled out: SAME_STEP (no final_obs), DISABLED (the step after the end resets)
    not_same = result.rejected[AutoresetMode.SAME_STEP]
    assert (not_same.field, not_same.got) == ("info['_final_obs']", "<no such key>")
    not_disabled = result.rejected[AutoresetMode.DISABLED]
    assert not_disabled.call == result.ended_at + 1
    assert not_disabled.got == AUTORESET_STEP
    assert not_disabled.got.startswith("an autoreset step (reward 0")


def test_evidence_names_the_first_end():
    """ScheduledEnv sub-env 0's first episode lasts 2 steps, sub-env 1's 3."""
    result = probe_mode(functools.partial(_vecmode_sync, AutoresetMode.DISABLED))
    assert (result.ended_at, result.ended) == (2, (0,))
    assert "first episode end: call 2, sub-env(s) 0" in str(result)
    # Disabled's core refuses to step the ended sub-env: NEXT_STEP is ruled out there
    not_next = result.rejected[AutoresetMode.NEXT_STEP]
    assert (not_next.call, not_next.field) == (3, "step()")
    assert not_next.got.startswith("EpisodeEndedError")


def test_gymnasium_sync_disabled_raises_assertion_error_and_async_steps_on():
    """What Gymnasium's envs do when an ended sub-env is stepped without a reset in
    DISABLED mode, as the probe records it: SyncVectorEnv raises AssertionError,
    AsyncVectorEnv steps the ended episode on (TimeLimit truncates it again)."""
    sync = probe_mode(functools.partial(_gym_sync, AutoresetMode.DISABLED))
    assert sync.rejected[AutoresetMode.NEXT_STEP].got.startswith("AssertionError")
    asynchronous = probe_mode(functools.partial(_gym_async, AutoresetMode.DISABLED))
    not_next = asynchronous.rejected[AutoresetMode.NEXT_STEP]
    assert (not_next.field, not_next.expected) == ("reward", "0.0")


def test_undeclared_mode_is_found():
    def factory():
        envs = gym.vector.SyncVectorEnv(_cartpoles(), autoreset_mode="SameStep")
        del envs.metadata["autoreset_mode"]
        return envs

    result = probe_mode(factory)
    assert result.mode is AutoresetMode.SAME_STEP
    assert result.declared is None
    assert not result.agrees
    assert "(declares no mode)" in str(result)


@pytest.mark.parametrize(
    ("behaves", "declares"),
    [
        (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP),
        (AutoresetMode.SAME_STEP, AutoresetMode.DISABLED),
        (AutoresetMode.DISABLED, AutoresetMode.NEXT_STEP),
    ],
    ids=lambda m: m.value,
)
def test_wrong_declaration_probe_tells_the_truth(behaves, declares):
    result = probe_mode(lambda: CounterVectorEnv(3, behaves, declared=declares))
    assert (result.mode, result.declared, result.agrees) == (behaves, declares, False)
    assert f"behaves as {behaves.value} (declares {declares.value})" in str(result)


def test_no_episode_end_within_max_steps():
    factory = functools.partial(CounterVectorEnv, 2, lengths=[50, 60])
    result = probe_mode(factory, max_steps=20)
    assert result.mode is None and not result.agrees
    assert result.reason.startswith("no episode ended within 20 steps (seed 0, random")
    assert "no episode ended within 20 steps" in result.reason
    assert "raise max_steps" in result.reason
    assert result.ended_at is None
    # with enough steps it can tell
    assert probe_mode(factory, max_steps=50).mode is AutoresetMode.NEXT_STEP


def test_nondeterministic_env_cannot_tell():
    """The probe compares instances, so an env that ignores reset(seed=...) cannot
    be probed; the reason says so and names the difference."""
    result = probe_mode(lambda: CounterVectorEnv(2, "SameStep", bug="unseeded"))
    assert result.mode is None
    assert result.reason.startswith("the env is not deterministic under reset(seed=0)")
    assert "instance 2, call 0 (reset), sub-env 0, obs" in result.reason


def test_env_raising_before_an_end_cannot_tell():
    class Failing(CounterVectorEnv):
        def step(self, actions):
            raise RuntimeError("boom")

    made: list[CounterVectorEnv] = []

    def factory():
        made.append(Failing(2))
        return made[-1]

    result = probe_mode(factory)
    assert result.mode is None
    assert result.reason == (
        "call 1 (step()), with no episode ended before it, raised RuntimeError: boom"
    )
    assert [env.closed_count for env in made] == [1]


def test_single_action_cannot_tell_next_step_from_disabled():
    """With one action, whether the step after an end ignored its action is
    unknown: reward 0 and flags False fit NEXT_STEP's reset step and a DISABLED
    env stepped past its end alike."""
    result = probe_mode(lambda: CounterVectorEnv(2, "NextStep", num_actions=1))
    assert result.mode is None
    assert result.reason == (
        "the runs fit NextStep, Disabled alike (e.g. a single action: whether it is "
        "ignored is unknown)"
    )
    assert set(result.rejected) == {AutoresetMode.SAME_STEP}


def test_env_fitting_no_mode():
    """final_obs without its _final_obs mask fits no mode."""
    result = probe_mode(
        lambda: CounterVectorEnv(2, "SameStep", bug="no_final_obs_mask")
    )
    assert result.mode is None
    assert set(result.rejected) == set(MODES)
    assert result.reason.startswith("the env contradicts every mode's predictions")
    assert str(result).count("not ") >= 3  # the reason lists every mode


def test_disabled_env_whose_masked_reset_resets_everyone_fits_no_mode():
    """DISABLED's prediction: reset_mask leaves the other sub-envs alone."""
    result = probe_mode(
        lambda: CounterVectorEnv(3, DISABLED, bug="reset_mask_resets_all")
    )
    assert result.mode is None
    not_disabled = result.rejected[DISABLED]
    assert (not_disabled.kind, not_disabled.field) == ("reset(mask)", "obs")
    assert not_disabled.note == masked_keeps_message(DISABLED)


def test_disabled_env_that_raises_on_ended_sub_envs():
    """Like vecmode's cores: stepping an ended sub-env raises, a masked reset
    clears it."""
    result = probe_mode(lambda: CounterVectorEnv(3, DISABLED, raise_on_ended=True))
    assert result.mode is DISABLED
    assert result.rejected[NEXT].got.startswith("RuntimeError")


def test_disabled_env_whose_masked_reset_does_nothing_fits_no_mode():
    """After the masked reset no sub-env awaits a reset, so the step that follows
    must work; this env still refuses it."""
    result = probe_mode(
        lambda: CounterVectorEnv(
            3, DISABLED, bug="reset_mask_ignored", raise_on_ended=True
        )
    )
    assert result.mode is None
    not_disabled = result.rejected[DISABLED]
    assert result.ended_at is not None
    assert (not_disabled.call, not_disabled.field) == (result.ended_at + 2, "step()")
    assert not_disabled.got.startswith("RuntimeError")
    assert not_disabled.note == (
        "in Disabled mode no sub-env awaits a reset by the caller here, so step() "
        "must work"
    )


def test_nondeterministic_autoreset_cannot_tell():
    """Deterministic up to the first end, but the reset step's observation is not:
    the fourth instance (an exact replay) shows that a changed observation there
    does not mean the action mattered."""
    result = probe_mode(lambda: CounterVectorEnv(3, NEXT, bug="unseeded_autoreset"))
    assert result.mode is None
    assert result.ended_at == 2
    assert result.reason.startswith("the env is not deterministic")
    assert "instance 4, call 3 (step), sub-env 0, obs" in result.reason


def test_final_obs_overwritten_by_the_reset_is_said_so():
    """It was found SameStep with no word of it (check_vector_env failed it):
    info['final_obs'] held the next episode's first observation, what the step
    returned. One end can't tell it from an episode that ended in its first
    state (ThereAndBack, below): said, not refused."""
    result = probe_mode(lambda: CounterVectorEnv(3, SAME, bug="final_obs_is_reset_obs"))
    assert result.mode is SAME, str(result)
    assert result.reason.endswith(OVERWRITTEN)
    assert "the reset overwrote it" in str(result)
    assert OVERWRITTEN not in probe_mode(lambda: CounterVectorEnv(3, SAME)).reason


def test_wrong_final_obs_mask_fits_no_mode():
    result = probe_mode(lambda: CounterVectorEnv(3, SAME, bug="final_obs_mask_all"))
    assert result.mode is None
    not_same = result.rejected[SAME]
    assert (not_same.call, not_same.sub_env, not_same.field) == (
        2,
        1,
        "info['_final_obs']",
    )
    assert (not_same.expected, not_same.got) == ("False", "True")


def test_dict_observations():
    for mode in MODES:

        def factory(mode=mode):
            fns = scheduled_env_fns(3, obs_type="dict")
            return gym.vector.SyncVectorEnv(fns, autoreset_mode=mode)

        assert probe_mode(factory).mode is mode


def test_continuous_actions():
    """Pendulum: Box actions, episodes ended by a TimeLimit of 4 steps."""
    for mode in MODES:

        def factory(mode=mode):
            fns = [functools.partial(gym.make, "Pendulum-v1", max_episode_steps=4)] * 2
            return gym.vector.SyncVectorEnv(fns, autoreset_mode=mode)

        result = probe_mode(factory)
        assert result.mode is mode, str(result)
        assert result.ended_at == 4


def test_a_declared_mode_that_is_not_one_is_refused():
    """It was probed as undeclared, so `vecmode probe` passed an env whose
    metadata check_stack and require_mode refuse."""
    made = []

    def factory():
        made.append(CounterVectorEnv(3, NEXT, declared="NextStp"))
        return made[-1]

    with pytest.raises(
        ValueError,
        match=r"^vecmode.probe_mode: CounterVectorEnv's metadata\['autoreset_mode'\] "
        r"is 'NextStp', not an autoreset mode",
    ):
        probe_mode(factory)
    assert [env.closed_count for env in made] == [1]


def test_every_instance_is_closed_and_fresh():
    made: list[CounterVectorEnv] = []

    def factory():
        made.append(CounterVectorEnv(3, "Disabled"))
        return made[-1]

    probe_mode(factory)  # (its ended sub-envs end again: no reset in the step)
    assert len(made) == 4
    assert len({id(env) for env in made}) == 4
    assert [env.closed_count for env in made] == [1, 1, 1, 1]


def test_instances_closed_when_the_factory_fails_later():
    made: list[CounterVectorEnv] = []

    def factory():
        if len(made) == 2:
            raise OSError("no more envs")
        made.append(CounterVectorEnv(3, "Disabled"))
        return made[-1]

    with pytest.raises(OSError, match="no more envs"):
        probe_mode(factory)
    assert [env.closed_count for env in made] == [1, 1]


def test_bad_arguments():
    with pytest.raises(
        TypeError, match="takes a function that builds a new vector env"
    ):
        probe_mode(gym.vector.SyncVectorEnv(_cartpoles()))  # an env, not a factory
    with pytest.raises(TypeError, match=r"must return a gymnasium\.vector\.VectorEnv"):
        probe_mode(lambda: gym.make("CartPole-v1"))
    with pytest.raises(ValueError, match="max_steps must be an int >= 1"):
        probe_mode(CounterVectorEnv, max_steps=0)
    with pytest.raises(ValueError, match="max_steps must be an int >= 1"):
        probe_mode(CounterVectorEnv, max_steps=2.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="seed must be an int"):
        probe_mode(CounterVectorEnv, seed="0")  # type: ignore[arg-type]


def test_factory_returning_the_same_env_is_refused():
    env = CounterVectorEnv(2)
    with pytest.raises(ValueError, match="build a new env on each call"):
        probe_mode(lambda: env)


def test_the_callers_options_and_env_are_not_used():
    """The probe only touches the instances it builds."""
    caller_env = CounterVectorEnv(2, "Disabled")
    caller_env.reset(seed=5)
    before = caller_env.buffer.copy()
    probe_mode(functools.partial(CounterVectorEnv, 2, "Disabled"))
    assert caller_env.closed_count == 0
    np.testing.assert_array_equal(caller_env.buffer, before)


def test_result_is_frozen_and_printable():
    result = probe_mode(functools.partial(CounterVectorEnv, 2, "SameStep"))
    assert isinstance(result, ProbeResult)
    with pytest.raises(AttributeError):
        result.mode = None  # type: ignore[misc]
    text = str(result)
    for mode, diff in result.rejected.items():
        assert isinstance(diff, Difference)  # in full, over lines of 100 at most
        assert " ".join(f"not {mode.value}: {diff}".split()) in " ".join(text.split())
    assert max(len(line) for line in text.splitlines()) <= 100
    longest = max(len(f"not {m.value}: {d}") for m, d in result.rejected.items())
    assert longest > 100  # what the lines are cut from


class SilentAutoreset(CounterVectorEnv):
    """Resets a sub-env inside the step that ends its episode (SameStep) and
    reports no final observation."""

    def step(self, actions):
        obs, rewards, terminations, truncations, _ = super().step(actions)
        return obs, rewards, terminations, truncations, {}


def test_an_env_resetting_inside_the_ending_step_fits_no_mode():
    """It fitted Disabled's predictions, so check_vector_env passed it declared
    Disabled, while every final observation was lost: the ending step returned
    what a masked reset returns there, and the step after went on as a new
    episode."""
    result = probe_mode(lambda: SilentAutoreset(3, SAME, declared=DISABLED))
    assert result.mode is None, str(result)
    assert (result.final_observation, result.resets_to) == ("lost", "fresh")
    found = result.rejected[DISABLED]
    assert (found.call, found.kind, found.field) == (result.ended_at, "step", "obs")
    assert found.sub_env in result.ended
    assert found.got == "what a masked reset returns there"
    assert "declare SameStep" in found.note and "info['final_obs']" in found.note
    # the same env stepping on without its reset is Disabled's, as before
    assert probe_mode(lambda: CounterVectorEnv(3, DISABLED)).mode is DISABLED


class DelayedBandit(gym.Env):
    """Blank observations; the first step of an episode ignores its action and
    pays 0 (a start delay); two steps later, truncated."""

    observation_space = gym.spaces.Box(0, 1, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.t += 1
        reward = 0.0 if self.t == 1 else float(action)
        return np.zeros(1, np.float32), reward, False, self.t >= 3, {}


def test_same_step_whose_next_step_only_looks_like_a_reset_step_is_same_step():
    """The final observation equals the reset's, and the next step pays 0 and
    ignores its action: Gymnasium's own SameStep env was refused SameStep."""
    result = probe_mode(
        lambda: gym.vector.SyncVectorEnv([DelayedBandit] * 2, autoreset_mode=SAME)
    )
    assert result.mode is SAME, str(result)


class OldKeysAutoreset(CounterVectorEnv):
    """SameStep with Gymnasium 0.29's keys: info['final_observation']."""

    def step(self, actions):
        obs, rewards, terminations, truncations, infos = super().step(actions)
        if "final_obs" in infos:
            infos = {"final_observation": infos["final_obs"]}
            infos["_final_observation"] = terminations | truncations
        return obs, rewards, terminations, truncations, infos


def test_an_env_resetting_inside_the_ending_step_is_found_under_old_keys():
    """Final observations under 0.29's keys fitted Disabled; the ending step
    returned what a masked reset returns there, the step after went on."""
    result = probe_mode(lambda: OldKeysAutoreset(3, SAME, declared=None), seed=2)
    assert result.mode is None and result.resets_to == "fresh", str(result)
    found = result.rejected[DISABLED]
    assert (found.got, found.field) == ("what a masked reset returns there", "obs")
    assert result.final_observation == "masked"


class NextStepWithFinalKeys(CounterVectorEnv):
    """NextStep that also copies an ending step's observation into SameStep's
    keys: the probe called it SameStep, whose reader takes its reset step for a
    real transition."""

    def step(self, actions):
        obs, rewards, terminations, truncations, infos = super().step(actions)
        ended = terminations | truncations
        if ended.any():
            final = np.full(self.num_envs, None, dtype=object)
            for i in np.flatnonzero(ended):
                final[i] = obs[i].copy()
            infos = {"final_obs": final, "_final_obs": ended}
            infos.update(final_info={}, _final_info=ended.copy())
        return obs, rewards, terminations, truncations, infos


def test_next_step_with_same_step_s_keys_fits_no_mode():
    result = probe_mode(lambda: NextStepWithFinalKeys(3, NEXT))
    assert result.mode is None, str(result)
    found = result.rejected[SAME]
    assert (found.call, found.field) == (result.ended_at, "obs")
    assert found.got.startswith("its final observation, then an autoreset step")
    assert "declare NextStep and drop those keys" in found.note


class GoesOnPastItsEnd(CounterVectorEnv):
    """Disabled, stepped past an episode's end it goes on without ending again
    (as over Gymnasium's AsyncVectorEnv); no observation depends on the action."""

    def step(self, actions):
        obs, rewards, terminations, truncations, infos = super().step(actions)
        first = self.t == self.lengths
        return obs, rewards, terminations & first, truncations & first, infos


@pytest.mark.parametrize("raises", [False, True])
def test_a_disabled_env_stepped_past_its_end_is_told_how_to_be_told_apart(raises):
    """Its ending observation, the same with other actions, then going on, is
    also what an env resetting inside the ending step (drawing other numbers
    than a masked reset) gives: the probe cannot tell, and says so; raising on
    that step (Gymnasium's sync env does), it is Disabled."""
    result = probe_mode(lambda: GoesOnPastItsEnd(3, DISABLED, raise_on_ended=raises))
    assert result.mode is (DISABLED if raises else None), str(result)
    if not raises:
        note = result.rejected[DISABLED].note
        assert "resets inside the ending step must report final" in note
        assert "A Disabled env whose last observation ignores the action" in note
        assert "raise there (Gymnasium's sync env does)" in note


class RandomBeforeReset(SilentAutoreset):
    """Starts its new episode where the ending action sends it: neither what a
    masked reset returns, nor the same with another action."""

    def step(self, actions):
        obs, rewards, terminations, truncations, infos = super().step(actions)
        ended = terminations | truncations
        obs[ended, 0] += np.asarray(actions)[ended] + 0.5
        return obs, rewards, terminations, truncations, infos


def test_an_env_resetting_unlike_a_masked_reset_is_found_disabled_with_a_warning():
    """What the probe cannot see (a reset drawing other numbers than a masked
    reset looks like GoesOnPastItsEnd): the reason says it loses every final
    observation, and what to do, rather than only the mode."""
    result = probe_mode(lambda: RandomBeforeReset(3, SAME, declared=DISABLED))
    assert result.mode is DISABLED, str(result)
    assert result.reason.startswith("only Disabled's predictions hold. An env whose")
    assert "loses every final observation" in result.reason
    assert "info['final_obs']" in result.reason and "declare SameStep" in result.reason
    # the other modes' reason is only that
    found = probe_mode(lambda: SilentAutoreset(3, NEXT, declared=NEXT))
    assert found.reason == "only NextStep's predictions hold."


class ContextBandits(gym.vector.VectorEnv):
    """One-step episodes whose observation is a fresh random context on every
    call, stepped after their end without complaint: an ending step returns what
    a masked reset there returns, but is no reset."""

    def __init__(self, num_envs=2):
        self.num_envs = num_envs
        self.single_observation_space = gym.spaces.Box(0, 1, (2,))
        self.observation_space = gym.vector.utils.batch_space(
            self.single_observation_space, num_envs
        )
        self.single_action_space = gym.spaces.Discrete(2)
        self.action_space = gym.spaces.MultiDiscrete([2] * num_envs)
        self.metadata = {"autoreset_mode": DISABLED}

    def _contexts(self):
        return self.np_random.random((self.num_envs, 2)).astype(np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        obs = self._contexts()
        mask = (options or {}).get("reset_mask")
        if mask is not None:
            obs = np.where(mask[:, None], obs, self.obs)
        self.obs = obs
        return obs.copy(), {}

    def step(self, actions):
        self.obs = self._contexts()
        ones = np.ones(self.num_envs, dtype=np.bool_)
        return self.obs.copy(), np.asarray(actions, float), ones, ~ones, {}


def test_an_env_whose_ended_sub_envs_end_again_is_not_said_to_reset_them():
    """A Disabled env stepped after its end ends again: the guard against an
    observation that only looks like a reset."""
    result = probe_mode(ContextBandits)
    assert result.mode is DISABLED and result.resets_to is None, str(result)


class ThereAndBack(gym.Env):
    """Two-step episodes that end where they started (a walk there and back)."""

    observation_space = gym.spaces.Discrete(2)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return 0, {}

    def step(self, action):
        self.t += 1
        return self.t % 2, float(action), self.t >= 2, False, {}


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
@pytest.mark.parametrize("core", ["gymnasium", "vecmode"])
def test_an_episode_ending_in_its_first_state_is_not_said_cached(core, mode):
    """An ended sub-env back at its first observation, in a mode whose caller
    resets, ended there: no final observation lost, no cached reset."""

    def factory():
        if core == "gymnasium":
            return gym.vector.SyncVectorEnv([ThereAndBack] * 2, autoreset_mode=mode)
        return vecmode.with_autoreset(vecmode.SyncVectorEnv([ThereAndBack] * 2), mode)

    result = probe_mode(factory)
    assert result.mode is mode, str(result)
    assert result.resets_to is None, str(result)
    assert result.final_observation == ("masked" if mode is SAME else None)
    assert "lost" not in str(result) and "cached" not in str(result)
    assert result.reason.endswith(OVERWRITTEN) == (mode is SAME)  # (one end alone)


class CachedFirstDictEnv(gym.vector.VectorEnv):
    """Brax's autoreset with Dict observations (MuJoCo Playground's): an ended
    sub-env comes back to its first observation of the last reset(), and its
    final observation is lost."""

    def __init__(self):
        self.num_envs = 2
        self.single_observation_space = gym.spaces.Dict(
            {"state": gym.spaces.Box(-np.inf, np.inf, (2,))}
        )
        self.observation_space = gym.vector.utils.batch_space(
            self.single_observation_space, 2
        )
        self.single_action_space = gym.spaces.Discrete(2)
        self.action_space = gym.spaces.MultiDiscrete([2, 2])
        self.metadata = {"autoreset_mode": SAME}

    def reset(self, *, seed=None, options=None):
        self.t = np.zeros(2, dtype=int)
        self.x = np.array([[0.5, 1.5], [2.5, 3.5]], dtype=np.float32)
        self.first = self.x.copy()
        return {"state": self.x.copy()}, {}

    def step(self, actions):
        self.t += 1
        self.x = self.x + 1
        ended = self.t >= np.array([3, 4])
        self.x[ended], self.t[ended] = self.first[ended], 0
        return {"state": self.x.copy()}, np.ones(2), ended, np.zeros(2, bool), {}


def test_dict_observations_that_come_back_to_the_first_are_found_cached():
    """Observations compared as the structures they are (a Dict's entries
    compared as dicts were always unequal)."""
    result = probe_mode(CachedFirstDictEnv)
    assert (result.final_observation, result.resets_to) == ("lost", "cached-first")


@pytest.mark.parametrize(
    ("mode", "bug"),
    [(SAME, "no_final_obs_mask"), (NEXT, "unseeded"), (SAME, "unseeded")],
)
def test_final_observations_are_not_said_lost_when_the_probe_cannot_know(mode, bug):
    """Final observations in the infos without their mask, or an env that is not
    deterministic: the probe said "final observations: lost" and pointed to the
    simulators page, for the wrong problem."""
    result = probe_mode(functools.partial(CounterVectorEnv, 3, mode, bug=bug))
    assert result.mode is None and result.final_observation is None, result
    assert "lost" not in str(result)


def test_the_lost_final_observations_caveat_only_where_it_may_hold():
    """A Disabled env that refuses to step an ended sub-env resets none inside
    its step: the caveat that it may lose final observations is not said of it
    (it was, of every Disabled env); of one that steps on, it is."""
    from vecmode.probe import LOSES_FINALS

    refuses = probe_mode(
        lambda: vecmode.make_vec("CartPole-v1", 2, "sync", autoreset_mode="Disabled")
    )
    steps_on = probe_mode(lambda: CounterVectorEnv(3, AutoresetMode.DISABLED))
    assert refuses.mode is steps_on.mode is AutoresetMode.DISABLED
    assert LOSES_FINALS not in refuses.reason
    assert LOSES_FINALS in steps_on.reason
