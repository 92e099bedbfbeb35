"""The benchmark scripts run (numbers are never asserted: machines are noisy)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_bench_sync_quick_runs_and_reports_ratios():
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "bench_sync.py"),
            "--quick",
            "--markdown",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    assert "vecmode/gym" in out
    rows = [
        line
        for line in out.splitlines()
        if line.startswith(("| NextStep", "| SameStep", "| Disabled"))
    ]
    assert len(rows) == 6, out


def test_bench_registry_quick_runs_and_reports_ratios():
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_registry.py"), "--quick"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    assert "guarded/unguarded:" in out and "vecmode.check()" in out


def test_bench_async_quick_runs_and_reports_ratios_and_crossover():
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "bench_async.py"),
            "--quick",
            "--markdown",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
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
