"""``vecmode table``: the registry as a matrix."""

from __future__ import annotations

import vecmode
from tests.cli.helpers import run
from vecmode import MODES
from vecmode.cli import EXIT_OK


def test_table_prints_the_registry_as_a_matrix(capsys):
    from vecmode.registry import declarations

    code, out, _ = run(["table"], capsys)
    assert code == EXIT_OK
    lines = out.splitlines()
    assert lines[0].split() == [
        "wrapper",
        "NextStep",
        "SameStep",
        "Disabled",
        "produces",
        "evidence",
    ]
    rows = {line.split()[0]: line.split()[1:] for line in lines[2:] if line.strip()}
    assert rows["vecmode.SameStepAutoreset"] == [
        "refused",
        "refused",
        "ok",
        "SameStep",
        "verified",
    ]
    assert rows["vecmode.DisableAutoreset"] == [
        "ok",
        "refused",
        "ok",
        "Disabled",
        "verified",
    ]
    assert rows["vecmode.wrappers.StatefulWrapper"] == ["ok", "ok", "ok", "declared"]
    assert rows["gymnasium.wrappers.vector.NormalizeReward"][-1] == "verified"
    for name, found in declarations():
        cells = [found.behaviour(m) for m in MODES]
        for i, mode in enumerate(MODES):  # ok with a caveat (a partial reset)
            if cells[i] == "ok" and mode in found.caveats:
                cells[i] = vecmode.registry.OK_WITH_CAVEAT
        assert rows[name][:3] == cells, name
    assert rows["gymnasium.wrappers.vector.RecordEpisodeStatistics"][:3] == [
        "ok\u2020",
        "ok\u2020",
        "known-wrong",
    ]
    assert (
        "gymnasium.wrappers.vector.RecordEpisodeStatistics in NextStep, SameStep "
        "(ok\u2020): "
        "after a partial reset"
    ) in run(["table", "--why"], capsys)[1]


def test_table_why_and_markdown(capsys):
    code, out, _ = run(["table", "--why"], capsys)
    assert code == EXIT_OK
    assert (
        "vecmode.NextStepAutoreset, vecmode.DisableAutoreset in SameStep (refused)"
        in out
    )
    # a reason that holds in several places is printed once, with where it holds
    assert out.count("for SameStep, so its own code for info['final_obs']") == 1
    assert "vecmode.autoreset.GymnasiumFinalObs in NextStep, Disabled (refused)" in out
    code, out, _ = run(["table", "--markdown"], capsys)
    lines = out.splitlines()
    assert lines[0] == (
        "| wrapper | NextStep | SameStep | Disabled | produces | evidence |"
    )
    assert lines[2] == (
        "| `vecmode.NextStepAutoreset` | refused | refused | ok | NextStep | verified |"
    )


def test_table_of_simulators_says_what_each_does_at_an_end(capsys):
    code, out, _ = run(["table", "--simulators"], capsys)
    assert code == EXIT_OK
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["simulator", "exact", "final"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[2:] if "  " in line}
    brax = "brax.envs.wrappers.training.AutoResetWrapper"
    assert rows[brax][:6] == [
        "none",
        "lost",
        "cached-first",
        "before-reset",
        "none",
        "info",
    ]
    maniskill = rows["mani_skill.vector.wrappers.gymnasium.ManiSkillVectorEnv"]
    assert maniskill[:3] == ["SameStep,", "Disabled", "masked"]
    jumanji = rows["jumanji.wrappers.AutoResetWrapper"]
    assert (
        jumanji[:2] == ["none", "opt-in"] and jumanji[-1] == "next_obs_in_extras=True"
    )
    assert "ApproximateFinalObs" in out


def test_table_of_simulators_as_json(capsys):
    import json

    code, out, _ = run(["table", "--simulators", "--json"], capsys)
    assert code == EXIT_OK
    found = {s["simulator"]: s for s in json.loads(out)["simulators"]}
    gymnax = found["gymnax.environments.environment:Environment"]
    assert (
        gymnax["exact"] == ["SameStep"] and gymnax["final_observation"] == "every-step"
    )
    craftax = found["wrappers:OptimisticResetVecEnvWrapper"]
    assert craftax["exact"] == [] and craftax["resets_to"] == "pool"
    assert craftax["source"].startswith("MichaelTMatthews/Craftax_Baselines")


def test_a_raw_simulator_given_to_with_autoreset_names_its_adapter():
    from vecmode.env_classes import vector_env_declaration

    class AutoResetWrapper:  # Brax's, by its path
        metadata = {"autoreset_mode": "SameStep"}

    AutoResetWrapper.__module__ = "brax.envs.wrappers.training"
    AutoResetWrapper.__qualname__ = "AutoResetWrapper"
    import vecmode.simulators  # noqa: F401  (declares the simulators)

    found = vector_env_declaration(AutoResetWrapper())
    assert found is not None and found.semantics.final_observation == "lost"
    assert found.remedy == "Wrap it in vecmode.simulators.BraxAdapter."
