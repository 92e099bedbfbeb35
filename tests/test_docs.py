"""The Python examples in the README and docs/ run."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]
BLOCKS = [
    pytest.param(code, id=f"{page.relative_to(ROOT)}:{n}")
    for page in PAGES
    for n, code in enumerate(re.findall(r"```python\n(.*?)```", page.read_text(), re.S))
]


@pytest.mark.parametrize("code", BLOCKS)
def test_example_runs(code):
    exec(compile(code, "<example>", "exec"), {})


def test_readme_opens_with_the_two_commands_and_ci_runs_the_second():
    readme = (ROOT / "README.md").read_text()
    commands = re.findall(r"```bash\n(.*?)\n```", readme, re.S)[:2]
    assert commands[0].endswith("vecmode")
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert ci == commands[1]


SHOWN = [
    pytest.param(code, shown, id=f"{page.relative_to(ROOT)}:{n}")
    for page in PAGES
    for n, (code, shown) in enumerate(
        re.findall(
            r"```python\n((?:(?!```).)*)```\n\n(?:(?!```)[^\n]*:\n\n)?```text\n(.*?)```",
            page.read_text(),
            re.S,
        )
    )
]


@pytest.mark.parametrize(("code", "shown"), SHOWN)
def test_shown_output_is_what_the_example_prints(code, shown, capsys):
    """A python block followed by a text block prints exactly that text."""
    exec(compile(code, "<example>", "exec"), {})
    assert capsys.readouterr().out == shown


def test_readme_shows_a_checked_stack():
    assert any("vecmode.check(" in param.values[0] for param in SHOWN)


def test_registry_page_table_is_the_registry():
    """In a fresh process: the tests' own declarations are not in the table."""
    printed = subprocess.run(
        [sys.executable, "-m", "vecmode", "table", "--markdown", "--why"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    page = (ROOT / "docs" / "registry.md").read_text()
    assert printed in page


def test_performance_page_reports_every_benchmark():
    """Each script in benchmarks/ has its numbers on docs/performance.md."""
    page = (ROOT / "docs" / "performance.md").read_text()
    for script in sorted((ROOT / "benchmarks").glob("bench_*.py")):
        assert f"benchmarks/{script.name}" in page, script.name
