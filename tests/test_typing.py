"""User code type-checks against vecmode's public API (``py.typed``): ``mypy
--strict`` on the calls the docs show, and a misspelt name is an error; the
package itself type-checks under its own configuration."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("mypy")

USER_CODE = """
from __future__ import annotations

import numpy as np
from gymnasium.vector import VectorEnv, VectorWrapper

import vecmode
from vecmode.wrappers import DictInfoToList, PPOStack, ClipReward, ppo_stack


# a wrapper declared with its modes as one list, reasons in a dict of names
reasons: dict[str, str] = {"SameStep": "it reads the returned observations"}


@vecmode.supports(["NextStep", "Disabled"], why=reasons)
class MyWrapper(VectorWrapper):
    pass


vecmode.register("some.module:Other", ["NextStep"], wrong=reasons)


@vecmode.supports(mode for mode in ("NextStep", "SameStep"))
class FromAGenerator(VectorWrapper):
    pass


def train(envs: VectorEnv) -> None:
    fused: PPOStack = ppo_stack(envs, gamma=0.99)
    fused.update_running_mean = False
    layered: ClipReward = ppo_stack(envs, gamma=0.99, fused=False)
    report = vecmode.check_stack(fused)
    first, rest = report[0], report[1:]
    print(first.verdict, len(rest))
    listed = DictInfoToList(envs)
    obs, infos = listed.reset(seed=[0, None])
    obs, infos = listed.reset(seed=np.arange(envs.num_envs))
    obs, infos = listed.reset(seed=np.int64(3))
    print(infos[0].get("final_obs"), layered.num_envs)
    collector = vecmode.TransitionCollector(envs)
    collector.reset(seed=0)
    t = collector.step(np.zeros(envs.num_envs, dtype=np.int64))
    print(t.infos.get("final_obs"), collector.reset_infos.keys())
"""


TYPO = """
import vecmode
from vecmode import chek_stack
vecmode.chek_stak
"""


@pytest.mark.slow
def test_user_code_type_checks_and_a_misspelt_name_does_not(tmp_path):
    """One mypy run (it takes a minute: it reads gymnasium and numpy too) over
    both files: the user's code is clean, each misspelt name an error."""
    (tmp_path / "user.py").write_text(textwrap.dedent(USER_CODE))
    (tmp_path / "typo.py").write_text(TYPO)
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path)]
        + [str(tmp_path / name) for name in ("user.py", "typo.py")],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    assert all(line.startswith(str(tmp_path / "typo.py")) for line in errors), (
        result.stdout
    )
    assert any('Module "vecmode" has no attribute "chek_stack"' in e for e in errors)
    assert any('Module has no attribute "chek_stak"' in e for e in errors)
    assert len(errors) == 2, result.stdout


@pytest.mark.slow
def test_the_package_type_checks_under_its_own_config(tmp_path):
    """``mypy`` with the project's configuration (``[tool.mypy]``: the package's
    own code) finds nothing: the hints ``py.typed`` ships say what the code does."""
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path)],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
