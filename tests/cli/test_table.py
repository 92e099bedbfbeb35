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
        cells = [found.behaviour(m).replace("wrong", "WRONG") for m in MODES]
        for i, mode in enumerate(MODES):  # ok with a caveat (a partial reset)
            if cells[i] == "ok" and mode in found.caveats:
                cells[i] = vecmode.registry.OK_WITH_CAVEAT
        assert rows[name][:3] == cells, name
    assert rows["gymnasium.wrappers.vector.RecordEpisodeStatistics"][:3] == [
        "ok\u2020",
        "ok\u2020",
        "WRONG",
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
