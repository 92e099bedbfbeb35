"""The benchmarks' numbers in the docs come from one source: their results files.

A benchmark table typed into a page, a ratio typed into the performance page's
prose, or a page that names a results file that does not exist, fails here.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]
PERFORMANCE = "performance.md"

#: Column names that tables other than the benchmarks' use too.
GENERIC = {
    "mode",
    "num_envs",
    "env",
    "wrapper",
    "stack",
    "base",
    "what",
    "ratio",
    "simulator",
}
#: A table's header line and the delimiter line under it.
TABLE = re.compile(r"^(\|.*\|)\n\|?\s*:?-{3,}", re.M)
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
#: A ratio typed as a figure: ``1.08x``, ``1.08-1.17x``.
RATIO = re.compile(r"\b\d+(?:\.\d+)?(?:-\d+(?:\.\d+)?)?x\b")


def hooks():
    """docs/hooks.py, imported by path (docs/ is not a package)."""
    spec = importlib.util.spec_from_file_location(
        "vecmode_docs_hooks", ROOT / "docs" / "hooks.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def benchmark_columns(root: Path = ROOT) -> set[str]:
    """Every column name of every results table, but the generic ones."""
    columns = set()
    for path in (root / "benchmarks" / "results").glob("*.json"):
        for table in json.loads(path.read_text(encoding="utf-8"))["tables"].values():
            columns.update(table["headers"])
    return columns - GENERIC


def hand_typed_tables(text: str, page: str, columns: set[str]) -> list[str]:
    """The tables typed into ``text`` that are a benchmark's: every table of the
    performance page, and elsewhere a table with a benchmark's column."""
    found = []
    for match in TABLE.finditer(FENCE.sub("", text)):
        headers = {cell.strip() for cell in match[1].strip("|").split("|")}
        if page == PERFORMANCE or headers & columns:
            found.append(f"{page}: {match[1][:80]}")
    return found


def hand_typed_ratios(text: str) -> list[str]:
    """Ratios typed into prose (code blocks and the hook's figures left out)."""
    prose = hooks().RESULTS_FIGURE.sub("", FENCE.sub("", text))
    return RATIO.findall(prose)


def test_results_files_exist_for_every_script_and_hold_tables():
    for script in sorted((ROOT / "benchmarks").glob("bench_*.py")):
        path = ROOT / "benchmarks" / "results" / f"{script.stem}.json"
        saved = f"benchmarks/results/{script.stem}.json"
        assert path.is_file(), (
            f"run `python benchmarks/{script.name} --results {saved}`"
        )
        data = json.loads(path.read_text(encoding="utf-8"))
        assert data["tables"] and data["date"] and data["versions"], path.name
        for table in data["tables"].values():
            assert table["rows"], path.name
            assert {len(row) for row in table["rows"]} == {len(table["headers"])}


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_results_marker_and_figure_renders(page):
    """Every table and figure a page takes from a results file is there (a
    missing file, table, column or row raises)."""
    hooks().render_results(page.read_text(encoding="utf-8"), page.name)


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_no_benchmark_table_is_typed_by_hand(page):
    text = page.read_text(encoding="utf-8")
    assert hand_typed_tables(text, page.name, benchmark_columns()) == []


def test_the_performance_page_takes_every_table_and_ratio_from_results():
    text = (ROOT / "docs" / PERFORMANCE).read_text(encoding="utf-8")
    names = {m["name"] for m in hooks().RESULTS_TABLE.finditer(text)}
    scripts = {script.stem for script in (ROOT / "benchmarks").glob("bench_*.py")}
    assert names == scripts
    assert hand_typed_ratios(text) == []


def test_the_checks_catch_a_hand_typed_table_a_ratio_and_a_missing_file(tmp_path):
    hook = hooks()
    data = json.loads((ROOT / "benchmarks/results/bench_sync.json").read_text())
    rendered = hook.results_table("bench_sync", None, None)
    assert rendered.startswith("| " + " | ".join(data["tables"]["main"]["headers"]))
    page = f"# A page\n\nTyped by hand:\n\n{rendered}\n"
    columns = benchmark_columns()
    assert len(hand_typed_tables(page, "other.md", columns)) == 1
    assert len(hand_typed_tables(page, PERFORMANCE, columns)) == 1
    generated = "# A page\n\n<!-- results: bench_sync -->\n"
    assert hand_typed_tables(generated, PERFORMANCE, columns) == []
    assert hand_typed_tables("| a | b |\n| --- | --- |\n", "other.md", columns) == []

    assert hand_typed_ratios("It is 1.08-1.17x as fast, or 2.3x.") == [
        "1.08-1.17x",
        "2.3x",
    ]
    assert hand_typed_ratios("It is {{ bench_sync: vecmode/gym }}x as fast.") == []

    with pytest.raises(hook.MarkerError, match="no results file"):
        hook.render_results("<!-- results: bench_none -->\n", "p.md", tmp_path)
    with pytest.raises(hook.MarkerError, match="no column"):
        hook.render_results("{{ bench_sync: no such column }}", "p.md")
    with pytest.raises(hook.MarkerError, match="no row"):
        hook.render_results("{{ bench_sync: vecmode/gym | mode=Never }}", "p.md")


def test_a_figure_is_a_cell_or_the_range_of_the_rows_it_names():
    hook = hooks()
    rows = json.loads((ROOT / "benchmarks/results/bench_sync.json").read_text())[
        "tables"
    ]["main"]["rows"]
    one = next(row for row in rows if row[:2] == ["NextStep", "16"])
    assert hook.render_results(
        "{{ bench_sync: vecmode/gym | mode=NextStep, num_envs=16 }}x"
    ) == (one[5] + "x")
    ratios = sorted(float(row[5]) for row in rows if row[0] == "Disabled")
    low, high = hook.render_results(
        "{{ bench_sync: vecmode/gym | mode=Disabled }}"
    ).split("-")
    assert (float(low), float(high)) == (ratios[0], ratios[-1])


def test_a_figure_names_a_row_whose_value_holds_a_comma():
    hook = hooks()
    rows = json.loads((ROOT / "benchmarks/results/bench_batched.json").read_text())[
        "tables"
    ]["arrays"]["rows"]
    one = next(row for row in rows if row[:3] == ["torch", "4,096", "ppo_stack"])
    assert (
        hook.render_results(
            "{{ bench_batched/arrays: time/bare | library=torch, sub-envs=4,096, "
            "contestant=ppo_stack }}"
        )
        == one[4]
    )
