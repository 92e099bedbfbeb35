"""The vecmode command line."""

from __future__ import annotations

import subprocess
import sys

import pytest

from vecmode import MODES
from vecmode.cli import main


def test_python_m_vecmode_prints_the_modes_side_by_side():
    out = subprocess.run(
        [sys.executable, "-m", "vecmode"], capture_output=True, text=True, check=True
    ).stdout
    lines = out.splitlines()
    header = next(line for line in lines if line.startswith("call"))
    assert header.split() == ["call", "NextStep", "SameStep", "Disabled"]
    step3 = next(line for line in lines if line.startswith("step 3"))
    # the episode ends on step 3: NEXT_STEP returns s3, SAME_STEP the reset obs
    # with s3 in final_obs, DISABLED s3 and the caller's reset_mask
    assert step3.split()[2:6] == ["s3", "r=1", "trunc", "s0'"]
    assert "final_obs=s3" in step3 and "reset(mask) -> s0'" in step3
    step4 = next(line for line in lines if line.startswith("step 4"))
    assert "r=0" in step4 and "reset step" in step4


def test_timeline_options(capsys):
    assert (
        main(["timeline", "CartPole-v1", "--steps", "4", "--max-episode-steps", "2"])
        == 0
    )
    out = capsys.readouterr().out
    assert "truncated after 2 steps" in out
    step2 = next(line for line in out.splitlines() if line.startswith("step 2"))
    assert "final_obs=s2" in step2


def test_unknown_env_is_exit_code_2(capsys):
    assert main(["timeline", "NoSuchEnv-v0"]) == 2
    assert "cannot make 'NoSuchEnv-v0'" in capsys.readouterr().err


@pytest.mark.parametrize(
    "env_id", ["CartPole-v1", "FrozenLake-v1", "Blackjack-v1", "Pendulum-v1"]
)
def test_timeline_labels_are_confirmed_by_the_values(env_id, capsys):
    """Labels follow the modes' rules; ``!`` would flag a value that differs."""
    assert main(["timeline", env_id, "--steps", "8", "--action", "0"]) == 0
    out = capsys.readouterr().out
    assert "!" not in out
    assert out.count("final_obs=") >= 1


def test_version(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.startswith("vecmode 0.")


def test_table_prints_the_registry_as_a_matrix(capsys):
    from vecmode.registry import declarations

    assert main(["table"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == [
        "wrapper",
        "NextStep",
        "SameStep",
        "Disabled",
        "produces",
    ]
    rows = {line.split()[0]: line.split()[1:] for line in lines[2:] if line.strip()}
    assert rows["vecmode.SameStepAutoreset"] == ["refused", "refused", "ok", "SameStep"]
    assert rows["vecmode.DisableAutoreset"] == ["ok", "refused", "ok", "Disabled"]
    for name, found in declarations():
        cells = [found.behaviour(m).replace("wrong", "WRONG") for m in MODES]
        assert rows[name][:3] == cells, name


def test_table_why_and_markdown(capsys):
    assert main(["table", "--why"]) == 0
    out = capsys.readouterr().out
    assert "vecmode.DisableAutoreset in SameStep (refused): A SAME_STEP env" in out
    assert main(["table", "--markdown"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "| wrapper | NextStep | SameStep | Disabled | produces |"
    assert (
        out[2] == "| `vecmode.NextStepAutoreset` | refused | refused | ok | NextStep |"
    )
