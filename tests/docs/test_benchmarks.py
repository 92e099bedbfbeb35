"""The benchmark scripts run (numbers are never asserted: machines are noisy)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: every test here runs a benchmark script in a subprocess
pytestmark = pytest.mark.slow


def run_benchmark(script: str, *flags: str, timeout: int = 120) -> str:
    """Run ``benchmarks/<script>`` with ``flags``; its standard output."""
    return subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), *flags],
        capture_output=True,
        text=True,
        check=True,
        timeout=timeout,
    ).stdout


def test_bench_sync_quick_runs_and_reports_ratios():
    out = run_benchmark("bench_sync.py", "--quick", "--markdown")
    assert "vecmode/gym" in out
    rows = [
        line
        for line in out.splitlines()
        if line.startswith(("| NextStep", "| SameStep", "| Disabled"))
    ]
    assert len(rows) == 6, out


def test_bench_registry_quick_runs_and_reports_ratios():
    out = run_benchmark("bench_registry.py", "--quick")
    assert "guarded/unguarded:" in out and "vecmode.check_stack()" in out


def test_bench_wrappers_quick_runs_and_reports_every_wrapper():
    # one round of a few steps: the smoke test is about the report, not speed
    out = run_benchmark(
        "bench_wrappers.py",
        "--quick",
        "--markdown",
        "--steps",
        "10",
        "--rounds",
        "1",
        timeout=300,
    )
    lines = out.splitlines()
    headers = [line for line in lines if line.startswith("| wrapper |")]
    assert len(headers) == 1, out
    assert "vecmode/gym" in headers[0] and "overhead us" in headers[0]
    rows = {
        line.split("|")[1].strip(): line
        for line in lines
        if line.startswith("| ") and not line.startswith(("| wrapper", "| stack |"))
    }
    for name in (
        "TransformObservation",
        "NormalizeObservation",
        "FrameStackObservation",
        "TransformAction",
        "ClipAction",
        "TransformReward",
        "NormalizeReward",
        "RecordEpisodeStatistics",
        "DictInfoToList",
        "stack of 5",
    ):
        assert name in rows, out
        assert rows[name].count("|") == 9, rows[name]  # 8 columns
    # the stack table: every mode over both bases, Gymnasium's stack in NextStep
    assert sum(line.startswith("| base | mode | stack |") for line in lines) == 1
    stacks = [
        [cell.strip() for cell in line.split("|")[1:-1]]
        for line in lines
        if line.startswith(("| vecmode |", "| gymnasium |"))
    ]
    assert all(len(cells) == 8 for cells in stacks), out
    assert sorted((base, mode, name) for base, mode, name, *_ in stacks) == sorted(
        (base, mode, name)
        for base in ("vecmode", "gymnasium")
        for mode in ("NextStep", "SameStep", "Disabled")
        for name in (
            "vecmode's 5 wrappers",
            "vecmode.wrappers.ppo_stack",
            "Gymnasium's 5 wrappers",
        )
        if mode == "NextStep" or name.startswith("vecmode")
    ), out


def test_bench_batched_quick_runs_and_reports_every_wrapper():
    out = run_benchmark("bench_batched.py", "--quick", "--markdown", timeout=300)
    lines = out.splitlines()
    rows = [line for line in lines if line.startswith("| 16 |")]
    assert len(rows) == 7 and all(r.count("|") == 8 for r in rows), out  # 7 columns
    assert "bare env:" in rows[0] and "ppo_stack" in rows[-1]
    five = [r.split("|") for r in rows if "| five layers |" in r]
    assert len(five) == 1 and five[0][-2].strip().endswith("x"), out  # by hand
    found = ("torch", "jax")
    for name in found:
        if importlib.util.find_spec(name) is not None:
            arrays = [line for line in lines if line.startswith(f"| {name} | 64 |")]
            assert len(arrays) == 4 and "bare env" in arrays[0], out
            assert "by hand" in arrays[-1] and arrays[-1].split("|")[5].strip(), out
    cells = [line.split("|") for line in lines if "| 64 |" in line]
    simulators = {c[1].strip(): c[-2] for c in cells if c[1].strip() not in found}
    if importlib.util.find_spec("torch") is not None:
        assert "ManiSkill3" in simulators and "IsaacLab" in simulators, out
    if importlib.util.find_spec("jax") is not None:
        assert {"Brax", "Craftax", "gymnax", "Jumanji"} <= set(simulators), out
        assert all(ratio.strip().endswith("x") for ratio in simulators.values()), out


def test_bench_async_quick_runs_and_reports_ratios_and_crossover():
    out = run_benchmark("bench_async.py", "--quick", "--markdown")
    assert "vm async/gym async" in out and "vm async/vm sync" in out
    rows = [
        line for line in out.splitlines() if line.startswith(("| CartPole", "| heavy"))
    ]
    assert len(rows) == 2, out
    crossovers = [
        line
        for line in out.splitlines()
        if line.startswith(("- CartPole-v1:", "- heavy:"))
    ]
    assert len(crossovers) == 2 and all("vm sync" in line for line in crossovers), out


def test_bench_transitions_quick_runs_and_reports_ratios():
    out = run_benchmark("bench_transitions.py", "--quick", "--markdown")
    assert "collector/raw" in out and "collector/by hand" in out
    rows = [
        line
        for line in out.splitlines()
        if line.startswith(("| vecmode |", "| gymnasium |"))
    ]
    assert len(rows) == 6, out
    assert all(line.count("|") == 13 for line in rows), out  # 12 columns


def test_profile_stack_runs_and_reports_areas():
    # every function listed (--top): on a loaded machine, cProfile's timings of
    # 60 steps may leave the running statistics out of a short top list
    out = run_benchmark(
        "profile_stack.py", "--stack", "ppo_stack", "--steps", "60", "--top", "1000"
    )
    assert "running statistics" in out and "| total" not in out
    lines = out.splitlines()
    assert any(line.startswith("total") and "100.0 %" in line for line in lines), out
    assert any("running_stats.py" in line for line in lines), out


def test_bench_ray_quick_runs_and_reports_the_floor_ratios_and_the_computed_table():
    pytest.importorskip("ray")
    out = run_benchmark("bench_ray.py", "--quick", "--markdown", timeout=300)
    lines = out.splitlines()
    headers = [line for line in lines if line.startswith("| env |")]
    assert len(headers) == 1, out
    for column in (
        "ray/async",
        "floor us",
        "overhead/floor",
        "floor per actor us",
        "floor+data us",
        "overhead/floor+data",
        "lean overhead/floor",
    ):
        assert column in headers[0], headers[0]
    rows = [line for line in lines if line.startswith(("| CartPole", "| heavy"))]
    assert len(rows) == 4 and all(r.count("|") == 19 for r in rows), out  # 18 columns
    assert any(line.startswith("- goal overhead/floor <= 1.5:") for line in lines)
    assert any("COMPUTED (not measured)" in line for line in lines)
    nodes = [line.split("|")[1].strip() for line in lines if line.startswith("| 1")]
    assert nodes == ["1", "10", "100"], out
    assert "10,000 us env, 8/actor" in out


def test_bench_interop_quick_runs_and_reports_ratios():
    pytest.importorskip("stable_baselines3")
    out = run_benchmark("bench_interop.py", "--quick", "--markdown", timeout=300)
    assert "bridge sync/dummy" in out and "subproc/bridge async" in out
    assert "stable-baselines3" in out and "load average" in out
    rows = [line for line in out.splitlines() if line.startswith("| 2 |")]
    assert len(rows) == 1 and rows[0].count("|") == 14, out  # 13 columns


@pytest.mark.parametrize("stack", ["ppo_stack", "five", "bare"])
def test_instructions_stack_child_runs_each_stack(stack):
    """What callgrind counts: the child run (the count itself needs valgrind and
    minutes, so it is not run here)."""
    run_benchmark("instructions_stack.py", "--child", "SameStep", stack, "30")


def test_instructions_stack_says_when_valgrind_is_missing():
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "instructions_stack.py")],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": ""},
    )
    assert done.returncode != 0
    assert "valgrind is not on the PATH" in done.stderr
