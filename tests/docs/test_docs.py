"""The Python examples in the README and docs/ run."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.helpers import vector_env_metadata_kept

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]
BLOCKS = [
    pytest.param(code, id=f"{page.relative_to(ROOT)}:{n}")
    for page in PAGES
    for n, code in enumerate(re.findall(r"```python\n(.*?)```", page.read_text(), re.S))
]


def run_example(code: str) -> None:
    """Run an example; one that needs a missing optional library (SB3, torch,
    moviepy, pygame...) is skipped, saying which."""
    from gymnasium.error import DependencyNotInstalled

    if "vecmode.sb3" in code:
        pytest.importorskip("stable_baselines3")
    for module in (
        "torch",
        "torchrl",
        "stable_baselines3",
        "ale_py",
        "envpool",
        "gymnax",
        "jumanji",
    ):
        if re.search(rf"^\s*(import|from) {module}\b", code, re.M):
            pytest.importorskip(module)
    try:
        with vector_env_metadata_kept(), warnings.catch_warnings():
            if "envpool" in code:  # its float64 space bounds, cast by Gymnasium
                warnings.filterwarnings(
                    "ignore", r".*Box (low|high)'s precision lowered", UserWarning
                )
            exec(compile(code, "<example>", "exec"), {})
    except DependencyNotInstalled as missing:
        pytest.skip(str(missing))


@pytest.mark.parametrize("code", BLOCKS)
def test_example_runs(code):
    run_example(code)


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
    run_example(code)
    assert capsys.readouterr().out == shown


def test_readme_shows_a_checked_stack():
    assert any("vecmode.check_stack(" in param.values[0] for param in SHOWN)


def _hooks():
    """docs/hooks.py, which keeps the generated parts of the pages current (and,
    as an mkdocs hook, fails the build while one is stale); imported by path:
    docs/ is not a package, and pytest does not collect it."""
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


def _region(page: str, name: str) -> tuple[str, str]:
    """The one generated region ``name`` on ``docs/<page>``: (its args, its body)."""
    hooks = _hooks()
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    found = [m for m in hooks.REGION.finditer(text) if m["name"] == name]
    assert len(found) == 1, f"{page}: {len(found)} {name} regions"
    return found[0]["args"].strip(), found[0]["body"]


@pytest.mark.slow
def test_generated_parts_of_the_docs_are_current():
    """What the pages show of vecmode's output is what it prints now (they are
    committed so that GitHub shows them; the docs build fails while stale)."""
    stale = _hooks().stale()
    assert stale == [], f"run `python docs/hooks.py` to update {stale}"


@pytest.mark.slow
def test_registry_page_holds_the_registry_table():
    """What ``vecmode table --markdown`` prints, but for vecmode's classes that are
    ok in every mode, one row for all, and the array-native list."""
    args, body = _region("registry.md", "registry-table")
    assert args == ""
    printed = _vecmode("table", "--markdown")
    assert body == _hooks().page_table(printed) + "\n"
    assert "| `vecmode.NextStepAutoreset` | refused | refused | ok | NextStep |" in body
    rows = {
        line.split("`")[1]: line
        for line in printed.splitlines()
        if line.startswith("| `")
    }
    shown = [line.split("`")[1] for line in body.splitlines() if line.startswith("| `")]
    folded = [name for name in rows if name not in shown]
    assert len(folded) > 20
    for name in folded:
        assert name.startswith("vecmode."), name
        assert "| ok | ok | ok |  |" in rows[name], rows[name]
    assert f"| every other class of `vecmode` ({len(folded)}) | ok | ok | ok |" in body
    assert "Array-native" in printed and "Array-native" not in body
    assert all(
        line in printed for line in body.splitlines() if "every other" not in line
    )


def test_the_page_table_folds_the_all_ok_rows_of_vecmode():
    printed = "\n".join(
        [
            "| wrapper | NextStep | SameStep | Disabled | produces | evidence |",
            "|---|---|---|---|---|---|",
            "| `vecmode.A` | refused | ok | ok | SameStep | verified |",
            "| `vecmode.B` | ok | ok | ok |  | verified |",
            "| `vecmode.wrappers.C` | ok | ok | ok |  | declared |",
            "| `vecmode.D` | ok | ok | ok |  | verified |",
            "| `gymnasium.E` | ok | ok | ok |  | verified |",
            "",
            "the legend.",
            "",
            "Array-native (...): `vecmode.B`.",
        ]
    )
    assert _hooks().page_table(printed).splitlines() == [
        "| wrapper | NextStep | SameStep | Disabled | produces | evidence |",
        "|---|---|---|---|---|---|",
        "| `vecmode.A` | refused | ok | ok | SameStep | verified |",
        "| every other class of `vecmode` (3) | ok | ok | ok |  | "
        "verified (declared: `C`) |",
        "| `gymnasium.E` | ok | ok | ok |  | verified |",
        "",
        "the legend.",
    ]


def test_the_markdown_table_has_a_blank_line_before_its_reasons():
    """Markdown runs a list on into the paragraph above it without one."""
    from vecmode.registry import format_table

    lines = format_table(markdown=True, why=True).splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("* "))
    assert lines[first - 1] == "" and lines[first - 2].startswith(
        "NextStep, SameStep, Disabled: the mode"
    )
    assert lines[first].startswith("* `vecmode.")


def test_modes_page_shows_the_timeline_picture():
    hooks = _hooks()
    args, body = _region("modes.md", "timeline-svg")
    assert (args, body) == ("", hooks.timeline_link() + "\n")
    picture = (ROOT / "docs" / hooks.TIMELINE_FILE).read_text(encoding="utf-8")
    root = ET.fromstring(picture)
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert "final_obs=s3" in picture and "reset(mask) \u2192 s0'" in picture


@pytest.mark.slow
def test_cli_region_shows_the_command_and_what_it_prints():
    hooks = _hooks()
    page = "before\n<!-- vecmode:cli timeline --steps 4 -->\nold\n<!-- /vecmode:cli -->\nafter"
    printed = _vecmode("timeline", "--steps", "4").rstrip("\n")
    assert hooks.render(page) == (
        "before\n<!-- vecmode:cli timeline --steps 4 -->\n```console\n"
        f"$ vecmode timeline --steps 4\n{printed}\n```\n<!-- /vecmode:cli -->\nafter"
    )


@pytest.mark.slow
def test_the_docs_build_fails_while_a_generated_part_is_stale(tmp_path, monkeypatch):
    from mkdocs.exceptions import PluginError

    hooks = _hooks()
    docs = tmp_path / "docs"
    (docs / "assets").mkdir(parents=True)
    svg = (ROOT / "docs" / hooks.TIMELINE_FILE).read_text(encoding="utf-8")
    (docs / hooks.TIMELINE_FILE).write_text(svg, encoding="utf-8")
    page = "<!-- vecmode:cli table -->\nan old table\n<!-- /vecmode:cli -->\n"
    (docs / "page.md").write_text(page, encoding="utf-8")
    with pytest.raises(PluginError, match=r"out of date in docs/page\.md: run"):
        hooks.on_pre_build({"docs_dir": str(docs)})
    assert hooks.update(docs) == ["docs/page.md"]
    hooks.on_pre_build({"docs_dir": str(docs)})  # current now
    (docs / "page.md").write_text(page, encoding="utf-8")
    monkeypatch.setenv(hooks.SKIP_CHECK, "1")  # what tests/docs/test_docs_site.py does
    hooks.on_pre_build({"docs_dir": str(docs)})


def test_broken_markers_are_errors():
    hooks = _hooks()
    with pytest.raises(hooks.MarkerError, match="unknown marker"):
        hooks.render("<!-- vecmode:no-such-thing -->\n<!-- /vecmode:no-such-thing -->")
    with pytest.raises(hooks.MarkerError, match="has no closing"):
        hooks.render("<!-- vecmode:registry-table -->\n| a |\n")
    with pytest.raises(hooks.MarkerError, match="has no closing"):  # another's end
        hooks.render("<!-- vecmode:cli -->\nx\n<!-- /vecmode:registry-table -->\n")


def test_performance_page_reports_every_benchmark():
    """Each script in benchmarks/ has its numbers on docs/performance.md."""
    page = (ROOT / "docs" / "performance.md").read_text()
    for script in sorted((ROOT / "benchmarks").glob("bench_*.py")):
        assert f"benchmarks/{script.name}" in page, script.name


def test_the_rerun_list_runs_every_benchmark():
    """The performance page's "Rerun it" block has a command for each script."""
    page = (ROOT / "docs" / "performance.md").read_text()
    block = page[page.index("## Rerun it") :]
    block = block[: block.index("```", block.index("```bash") + 3)]
    for script in sorted((ROOT / "benchmarks").glob("bench_*.py")):
        assert f"python benchmarks/{script.name}" in block, script.name


def test_the_home_page_links_every_page_of_the_site():
    """A newcomer finds every page from the home page's list, not only the nav."""
    home = (ROOT / "docs" / "index.md").read_text()
    nav = re.findall(
        r"^\s*- [^:]+: (\S+\.md)$", (ROOT / "mkdocs.yml").read_text(), re.M
    )
    assert len(nav) > 10, nav
    missing = [page for page in nav if page != "index.md" and f"]({page})" not in home]
    assert not missing, f"docs/index.md does not link {missing}"


def test_performance_page_speaks_to_users():
    """What was measured, how to rerun it, what it means; no project-internal
    goals or estimates."""
    page = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    for heading in ("## In short", "## Rerun it"):
        assert heading in page
    assert page.count("What it means") == page.count("\n## ") - 2
    for internal in ("the issue", "target", "goal", "Goal"):
        assert internal not in page, internal
