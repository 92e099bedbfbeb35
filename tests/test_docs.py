"""The Python examples in the README and docs/ run."""

from __future__ import annotations

import importlib.util
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


def _needs_extras(code: str) -> None:
    """Skip an example that uses an optional extra which is not installed."""
    if "vecmode.sb3" in code or "stable_baselines3" in code:
        pytest.importorskip("stable_baselines3")
    if "import torch" in code:
        pytest.importorskip("torch")


@pytest.mark.parametrize("code", BLOCKS)
def test_example_runs(code):
    _needs_extras(code)
    exec(compile(code, "<example>", "exec"), {})


def test_readme_opens_with_the_two_commands_and_ci_runs_the_second():
    readme = (ROOT / "README.md").read_text()
    commands = re.findall(r"```bash\n(.*?)\n```", readme, re.S)[:2]
    assert commands[0].endswith("vecmode")
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert commands[1] in ci


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
    _needs_extras(code)
    exec(compile(code, "<example>", "exec"), {})
    assert capsys.readouterr().out == shown


def test_readme_shows_a_checked_stack():
    assert any("vecmode.check(" in param.values[0] for param in SHOWN)


def _hooks():
    """docs/hooks.py, the mkdocs hook that fills in the generated parts of the site
    (imported by path: docs/ is not a package, and pytest does not collect it)."""
    spec = importlib.util.spec_from_file_location(
        "vecmode_docs_hooks", ROOT / "docs" / "hooks.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _vecmode(*args):
    """What the command line prints, in a fresh process (the tests' own
    declarations are not in the registry there)."""
    return subprocess.run(
        [sys.executable, "-m", "vecmode", *args],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def test_registry_page_table_is_generated_from_the_registry():
    """docs/registry.md holds the marker, and the site has the registry's table there."""
    hooks = _hooks()
    page = (ROOT / "docs" / "registry.md").read_text()
    assert page.count(hooks.REGISTRY_MARKER) == 1
    assert "| `vecmode.NextStepAutoreset` |" not in page  # no table typed by hand
    built = hooks.render(page)
    printed = _vecmode("table", "--markdown", "--why")
    assert printed in built + "\n"
    assert hooks.registry_table() == printed.rstrip("\n")
    assert "<!-- vecmode:" not in built


def test_every_marker_in_the_docs_is_filled_in():
    """An unknown marker fails the build; every known one is replaced."""
    hooks = _hooks()
    for page in sorted((ROOT / "docs").glob("**/*.md")):
        text = page.read_text()
        if "<!-- vecmode:" in text:
            built = hooks.render(text, page.name)
            assert "<!-- vecmode:" not in built, page.name
    with pytest.raises(ValueError, match="unknown marker"):
        hooks.render("<!-- vecmode:no-such-thing -->")


def test_modes_page_has_the_timeline_picture():
    hooks = _hooks()
    page = (ROOT / "docs" / "modes.md").read_text()
    assert page.count(hooks.TIMELINE_MARKER) == 1
    picture = hooks.timeline_picture()
    assert picture.startswith('<figure class="vecmode-timeline"')
    assert "<svg " in picture and "final_obs=s3" in picture
    assert "\n\n" not in picture  # a blank line would end Markdown's raw HTML block


def test_cli_marker_shows_the_command_and_what_it_prints():
    hooks = _hooks()
    built = hooks.render("before\n<!-- vecmode:cli timeline --steps 4 -->\nafter")
    printed = _vecmode("timeline", "--steps", "4").rstrip("\n")
    assert built == (
        f"before\n```console\n$ vecmode timeline --steps 4\n{printed}\n```\nafter"
    )


def test_readme_shows_what_vecmode_prints():
    """The README's copy of the output of ``vecmode``, cut at ``...``, is its start."""
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## What `vecmode` prints") :]
    shown = re.search(r"```text\n(.*?)```", section, re.S)[1].splitlines()
    assert shown[-1] == "..."
    assert _vecmode().splitlines()[: len(shown) - 1] == shown[:-1]


def test_performance_page_reports_every_benchmark():
    """Each script in benchmarks/ has its numbers on docs/performance.md."""
    page = (ROOT / "docs" / "performance.md").read_text()
    for script in sorted((ROOT / "benchmarks").glob("bench_*.py")):
        assert f"benchmarks/{script.name}" in page, script.name
