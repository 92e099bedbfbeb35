"""The generated parts of the docs: kept current in the pages, checked by the build.

Some parts of the pages are what vecmode itself prints: the command line's output,
the compatibility table and the picture of the modes. They are committed, so that
the pages read on GitHub show them too, between a pair of markers (HTML comments,
each alone on its line) that name what generates them:

``<!-- vecmode:cli ARGS -->`` ... ``<!-- /vecmode:cli -->``
    the command ``vecmode ARGS`` and what it prints, as a ``console`` block;
``<!-- vecmode:registry-table -->`` ... ``<!-- /vecmode:registry-table -->``
    the compatibility table, what ``vecmode table --markdown`` prints, with
    vecmode's classes that are ok in every mode folded into one row and without
    the array-native list (``docs/batched.md`` has it): :func:`page_table`;
``<!-- vecmode:simulator-table -->`` ... ``<!-- /vecmode:simulator-table -->``
    the simulators, what ``vecmode table --simulators --markdown`` prints;
``<!-- vecmode:timeline-svg -->`` ... ``<!-- /vecmode:timeline-svg -->``
    a link to ``docs/assets/modes-timeline.svg``, the picture of the three modes
    that ``vecmode timeline --steps 5 --svg -`` draws (a generated file).

Everything is produced by a fresh interpreter (``python -m vecmode ...``), so it is
exactly what a user gets, whatever the build process has imported or declared.

* ``python docs/hooks.py`` rewrites every generated part (run it after changing
  what vecmode prints); ``python docs/hooks.py --check`` only reports the stale
  ones (exit status 1).
* As an mkdocs hook (``hooks:`` in ``mkdocs.yml``) it fails the build when a
  generated part is stale, an unknown marker is used or a marker is not closed,
  and it marks the compatibility table's ``refused`` and ``known-wrong`` cells with the
  classes ``vecmode-refused`` and ``vecmode-known-wrong`` (coloured by
  ``docs/stylesheets/extra.css``).

The benchmarks' numbers are not committed in the pages: they are rendered when the
site is built, from the results files the scripts write (``python
benchmarks/bench_sync.py --results benchmarks/results/bench_sync.json``), so a
figure is typed nowhere. Two forms, on any page:

``<!-- results: NAME -->`` (alone on its line), ``<!-- results: NAME/TABLE -->``
    the table of ``benchmarks/results/NAME.json`` (its first, or the one named
    ``TABLE``), then a line saying when and how it was measured;
    ``<!-- results: NAME | COLUMN, COLUMN -->`` keeps only those columns;
``{{ NAME: COLUMN }}``, ``{{ NAME/TABLE: COLUMN | KEY=VALUE, KEY=VALUE }}``
    one figure in a sentence: the cell of COLUMN in the row(s) whose cells match
    every ``KEY=VALUE``; ``LOW-HIGH`` when several rows match (``{{ bench_sync:
    vecmode/gym | mode=NextStep }}`` gives the range over every ``num_envs``).

A missing results file, table, column or row fails the build;
``tests/docs/test_results_tables.py`` fails on a benchmark table typed by hand.

``tests/docs/test_docs.py`` imports this file by path (``docs/`` is not a package and
is excluded from the site by ``exclude_docs``) and fails while anything is stale.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parent


class MarkerError(ValueError):
    """A marker that cannot be filled in (mkdocs reports it as a build error)."""


#: A generated region: the opening marker, the generated body, the closing marker.
REGION = re.compile(
    r"^<!-- vecmode:(?P<name>[\w-]+)(?P<args>[^\n]*?) -->\n"
    r"(?P<body>.*?)"
    r"^<!-- /vecmode:(?P=name) -->$",
    re.M | re.S,
)
#: Any opening marker (to find the ones that are not closed).
OPENING = re.compile(r"^<!-- vecmode:(?P<name>[\w-]+)[^\n]*? -->$", re.M)

#: The picture of the modes: an episode truncated after its third step (as in
#: Gymnasium's animation of the modes), then the next episode.
TIMELINE_ARGS = ("timeline", "--steps", "5", "--svg", "-")
TIMELINE_FILE = "assets/modes-timeline.svg"
TIMELINE_ALT = (
    "What each autoreset mode returns, call by call, for one CartPole-v1 sub-env "
    "whose episode is truncated after its third step"
)


def vecmode_cli(*args: str) -> str:
    """What ``vecmode ARGS`` prints, run in a fresh interpreter (trailing newline
    removed)."""
    done = subprocess.run(
        [sys.executable, "-m", "vecmode", *args],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise MarkerError(
            f"`vecmode {shlex.join(args)}` exited {done.returncode}: {done.stderr}"
        )
    return done.stdout.rstrip("\n")


def cli_block(*args: str) -> str:
    """A ``console`` block: the command ``vecmode ARGS`` and what it prints."""
    command = shlex.join(["vecmode", *args])
    return f"```console\n$ {command}\n{vecmode_cli(*args)}\n```"


def registry_table() -> str:
    """The registry as the compatibility page shows it (:func:`page_table`)."""
    return page_table(vecmode_cli("table", "--markdown"))


#: The row that stands for vecmode's classes that are ok in every mode.
FOLDED_ROW = (
    "| every other class of `vecmode` ({count}) | ok | ok | ok |  | {evidence} |"
)


def page_table(printed: str) -> str:
    """``vecmode table --markdown``'s output, shortened for the page: the rows of
    vecmode's classes that are ok in every mode and produce no mode become one row
    where the first of them stood, and the array-native paragraph is left out."""
    kept: list[str] = []
    folded: dict[str, list[str]] = {}  # evidence: the folded classes' short names
    at = None
    for line in printed.splitlines():
        if line.startswith("Array-native"):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("| `vecmode.") and cells[1:5] == ["ok", "ok", "ok", ""]:
            at = len(kept) if at is None else at
            folded.setdefault(cells[5], []).append(cells[0].strip("`").split(".")[-1])
            continue
        kept.append(line)
    if at is None:
        return printed
    common = max(folded, key=lambda proof: len(folded[proof]))
    others = "; ".join(
        f"{proof}: {', '.join(f'`{name}`' for name in names)}"
        for proof, names in folded.items()
        if proof != common
    )
    evidence = f"{common} ({others})" if others else common
    count = sum(map(len, folded.values()))
    kept.insert(at, FOLDED_ROW.format(count=count, evidence=evidence))
    while kept and not kept[-1].strip():
        kept.pop()
    return "\n".join(kept)


def timeline_svg() -> str:
    """The picture of the three modes (the content of :data:`TIMELINE_FILE`)."""
    return vecmode_cli(*TIMELINE_ARGS) + "\n"


def timeline_link() -> str:
    """The picture, as a Markdown image (GitHub and mkdocs both show it)."""
    return f"![{TIMELINE_ALT}]({TIMELINE_FILE})"


#: The generated files, relative to ``docs/``.
FILES: dict[str, Callable[[], str]] = {TIMELINE_FILE: timeline_svg}


def body(name: str, args: str, page: str) -> str:
    """What the region ``<!-- vecmode:NAME ARGS -->`` holds (no final newline)."""
    if name == "registry-table" and not args:
        return registry_table()
    if name == "simulator-table" and not args:  # docs/simulators.md
        return vecmode_cli("table", "--simulators", "--markdown")
    if name == "timeline-svg" and not args:
        return timeline_link()
    if name == "cli":
        return cli_block(*shlex.split(args))
    raise MarkerError(
        f"{page}: unknown marker <!-- vecmode:{name}{' ' + args if args else ''} -->"
    )


def _check_markers(markdown: str, page: str) -> None:
    closed = {match.start() for match in REGION.finditer(markdown)}
    for match in OPENING.finditer(markdown):
        if match.start() not in closed:
            raise MarkerError(
                f"{page}: {match[0]} has no closing <!-- /vecmode:{match['name']} --> "
                "on a line of its own"
            )


def render(markdown: str, page: str = "<page>") -> str:
    """``markdown`` with every generated region's body made current."""
    _check_markers(markdown, page)

    def current(match: re.Match[str]) -> str:
        name, args = match["name"], match["args"].strip()
        opening = match[0].partition("\n")[0]
        return f"{opening}\n{body(name, args, page)}\n<!-- /vecmode:{name} -->"

    return REGION.sub(current, markdown)


def stale(docs: Path = DOCS) -> list[str]:
    """The pages and generated files under ``docs`` that are not current."""
    found = []
    for page in sorted(docs.glob("**/*.md")):
        text = page.read_text(encoding="utf-8")
        if "<!-- vecmode:" in text and render(text, page.name) != text:
            found.append(str(page.relative_to(docs.parent)))
    for name, make in FILES.items():
        path = docs / name
        if not path.exists() or path.read_text(encoding="utf-8") != make():
            found.append(str(path.relative_to(docs.parent)))
    return found


def update(docs: Path = DOCS) -> list[str]:
    """Rewrite every stale page and generated file under ``docs``; what changed."""
    changed = []
    for page in sorted(docs.glob("**/*.md")):
        text = page.read_text(encoding="utf-8")
        if "<!-- vecmode:" in text:
            fresh = render(text, page.name)
            if fresh != text:
                page.write_text(fresh, encoding="utf-8", newline="\n")
                changed.append(str(page.relative_to(docs.parent)))
    for name, make in FILES.items():
        path = docs / name
        fresh = make()
        if not path.exists() or path.read_text(encoding="utf-8") != fresh:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(fresh, encoding="utf-8", newline="\n")
            changed.append(str(path.relative_to(docs.parent)))
    return changed


#: The compatibility table's cells that are not ok, and their classes.
_CELL = re.compile(r"<td>(refused|known-wrong)</td>")


def colour_cells(html: str) -> str:
    """``<td>refused</td>`` / ``<td>known-wrong</td>`` with a class the stylesheet
    colours."""
    return _CELL.sub(lambda m: f'<td class="vecmode-{m[1].lower()}">{m[1]}</td>', html)


# --- benchmark results ------------------------------------------------------------

#: Where the benchmark scripts write their results, relative to the repository.
RESULTS_DIR = "benchmarks/results"
#: ``<!-- results: NAME[/TABLE] [| COLUMN, ...] -->``, alone on its line.
RESULTS_TABLE = re.compile(
    r"^<!-- results: (?P<name>[\w-]+)(?:/(?P<table>\w+))?"
    r"(?: \| (?P<columns>[^\n]*?))? -->$",
    re.M,
)
#: ``{{ NAME[/TABLE]: COLUMN [| KEY=VALUE, ...] }}``, in a sentence.
RESULTS_FIGURE = re.compile(
    r"\{\{ (?P<name>[\w-]+)(?:/(?P<table>\w+))?: (?P<column>[^|}]+?)"
    r"(?: \| (?P<where>[^}]*?))? \}\}"
)


def results(name: str, root: Path = DOCS.parent) -> dict[str, Any]:
    """The results file ``benchmarks/results/NAME.json`` under ``root``."""
    path = root / RESULTS_DIR / f"{name}.json"
    if not path.is_file():
        raise MarkerError(
            f"no results file {RESULTS_DIR}/{name}.json: run `python "
            f"benchmarks/{name}.py --results {RESULTS_DIR}/{name}.json`"
        )
    return json.loads(path.read_text(encoding="utf-8"))


def _table(data: dict[str, Any], name: str, table: str | None) -> dict[str, Any]:
    tables = data["tables"]
    key = table or next(iter(tables))
    if key not in tables:
        raise MarkerError(f"{name}.json has no table {key!r}: it has {list(tables)}")
    return tables[key]


def _column(headers: list[str], column: str, name: str) -> int:
    if column not in headers:
        raise MarkerError(f"{name}.json has no column {column!r}: it has {headers}")
    return headers.index(column)


def measured_line(data: dict[str, Any]) -> str:
    """When, how and on what a results file was measured, as one sentence."""
    versions = ", ".join(f"{k} {v}" for k, v in data["versions"].items())
    run = ", ".join(
        f"{key} {' / '.join(f'{k} {v}' for k, v in value.items())}"
        if isinstance(value, dict)
        else f"{key} {value}"
        for key, value in data["run"].items()
    )
    load = " to ".join(f"{x:.1f}" for x in data["load_average"] if x is not None)
    return (
        f"*Measured {data['date']} by `{data['command']}` ({run}); {versions}; "
        f"{data['cpus']} CPUs, load average {load or 'unknown'}.*"
    )


def results_table(
    name: str, table: str | None, columns: str | None, root: Path = DOCS.parent
) -> str:
    """The Markdown of ``<!-- results: NAME/TABLE | COLUMNS -->``."""
    data = results(name, root)
    found = _table(data, name, table)
    headers = found["headers"]
    picked = [c.strip() for c in columns.split(",")] if columns else headers
    keep = [_column(headers, column, name) for column in picked]
    lines = [[row[i] for i in keep] for row in found["rows"]]
    align = ["---", *["---:"] * (len(keep) - 1)]
    return "\n".join(
        [
            "| " + " | ".join(picked) + " |",
            "| " + " | ".join(align) + " |",
            *("| " + " | ".join(line) + " |" for line in lines),
            "",
            measured_line(data),
        ]
    )


def results_figure(
    name: str,
    table: str | None,
    column: str,
    where: str | None,
    root: Path = DOCS.parent,
) -> str:
    """The figure ``{{ NAME/TABLE: COLUMN | WHERE }}``: a cell, or ``LOW-HIGH``."""
    found = _table(results(name, root), name, table)
    headers = found["headers"]
    # split at the commas before a ``key=`` (a value may hold one: ``4,096``)
    parts = re.split(r",\s*(?=[^,=]+=)", where or "")
    conditions = [part.split("=", 1) for part in parts if part.strip()]
    tests = [(_column(headers, k.strip(), name), v.strip()) for k, v in conditions]
    cells = [
        row[_column(headers, column, name)]
        for row in found["rows"]
        if all(row[i] == value for i, value in tests)
    ]
    if not cells:
        raise MarkerError(f"{name}.json: no row of {column!r} where {where!r}")
    if len(set(cells)) == 1:
        return cells[0]
    try:
        ordered = sorted(cells, key=lambda cell: float(cell.replace(",", "")))
    except ValueError:
        raise MarkerError(
            f"{name}.json: {column!r} where {where!r} matches rows that are not "
            f"numbers ({cells}): name one row"
        ) from None
    return f"{ordered[0]}-{ordered[-1]}"


def render_results(
    markdown: str, page: str = "<page>", root: Path = DOCS.parent
) -> str:
    """``markdown`` with every results table and figure filled in."""
    try:
        markdown = RESULTS_TABLE.sub(
            lambda m: results_table(m["name"], m["table"], m["columns"], root), markdown
        )
        return RESULTS_FIGURE.sub(
            lambda m: results_figure(
                m["name"], m["table"], m["column"], m["where"], root
            ),
            markdown,
        )
    except MarkerError as error:
        raise MarkerError(f"{page}: {error}") from None


# --- mkdocs events ----------------------------------------------------------------


#: Set to 1 by ``tests/docs/test_docs_site.py``, whose run of the test suite checks
#: the generated parts already (``tests/docs/test_docs.py``): the build skips it.
SKIP_CHECK = "VECMODE_DOCS_CURRENCY_CHECKED"


def on_pre_build(config: Any, **kwargs: Any) -> None:
    """Fail the build while a generated part is stale (or a marker is broken)."""
    from mkdocs.exceptions import PluginError  # only under mkdocs: tests import this

    if os.environ.get(SKIP_CHECK) == "1":
        return
    try:
        found = stale(Path(config["docs_dir"]))
    except MarkerError as error:
        raise PluginError(str(error)) from error
    if found:
        raise PluginError(
            f"generated parts are out of date in {', '.join(found)}: run "
            "`python docs/hooks.py` to update them"
        )


def on_page_markdown(markdown: str, page: Any, config: Any, **kwargs: Any) -> str:
    """Fill in the benchmarks' tables and figures from their results files."""
    from mkdocs.exceptions import PluginError

    try:
        return render_results(
            markdown, page.file.src_uri, Path(config["docs_dir"]).parent
        )
    except MarkerError as error:
        raise PluginError(str(error)) from error


def on_page_content(html: str, page: Any, **kwargs: Any) -> str:
    """Colour the compatibility table's refused and known-wrong cells."""
    if page.file.src_uri == "registry.md":
        return colour_cells(html)
    return html


def main(argv: list[str]) -> int:
    """``python docs/hooks.py [--check]``: update (or only check) the generated
    parts; exit status 1 if ``--check`` finds any stale."""
    if argv not in ([], ["--check"]):
        print("usage: python docs/hooks.py [--check]", file=sys.stderr)
        return 2
    if argv == ["--check"]:
        found = stale()
        for name in found:
            print(f"stale: {name}")
        return 1 if found else 0
    for name in update():
        print(f"updated: {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
