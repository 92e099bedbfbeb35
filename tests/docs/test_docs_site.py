"""The documentation site as built: ``mkdocs build --strict``, then its HTML.

``--strict`` catches broken links and stale generated parts, not Markdown that
renders wrong: a list without a blank line before it becomes one run-on paragraph
with literal ``*``; a table row that breaks leaves literal ``|``. These tests read
the rendered pages.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow

#: Elements whose text is code or markup, not prose.
CODE = {"code", "pre", "kbd", "samp", "script", "style", "svg", "textarea"}
#: Elements that have no end tag.
VOID = {"area", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source"}


def build(out: Path) -> None:
    """``mkdocs build --strict`` into ``out``."""
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        # tests/docs/test_docs.py checks that the generated parts are current
        env={
            **os.environ,
            "NO_MKDOCS_2_WARNING": "1",
            "VECMODE_DOCS_CURRENCY_CHECKED": "1",
        },
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built once per test run: under pytest-xdist the first worker to
    get here builds it into the run's shared temporary directory, the others
    wait for it."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        out = tmp_path_factory.mktemp("site")
        build(out)
        return out
    shared = tmp_path_factory.getbasetemp().parent  # this run's, all workers'
    out, done = shared / "docs-site", shared / "docs-site.done"
    try:
        (shared / "docs-site.lock").mkdir()
    except FileExistsError:  # another worker builds it
        deadline = time.monotonic() + 300
        while not done.exists():
            assert time.monotonic() < deadline, "the docs site was not built"
            time.sleep(0.1)
        failure = done.read_text(encoding="utf-8")
        assert failure == "", failure
        return out
    try:
        build(out)
    except AssertionError as error:
        done.write_text(str(error) or "mkdocs build failed", encoding="utf-8")
        raise
    done.write_text("", encoding="utf-8")
    return out


class Page(HTMLParser):
    """A page's prose (text outside code), its lists and its table cells."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.open: list[tuple[str, dict[str, str | None]]] = []
        self.prose: list[tuple[str, str]] = []  # (enclosing tags, text)
        self.lists: list[list[str]] = []  # each <ul>/<ol>: its items' text
        self.cells: list[tuple[str | None, str]] = []  # (class, text) of each <td>
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in VOID:
            return
        self.open.append((tag, dict(attrs)))
        if tag in ("ul", "ol"):
            self.lists.append([])
        elif tag == "li" and self.lists:
            self.lists[-1].append("")
        elif tag == "td":
            self.cells.append((dict(attrs).get("class"), ""))

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.open) - 1, -1, -1):
            if self.open[i][0] == tag:
                del self.open[i:]
                return

    def handle_data(self, data: str) -> None:
        tags = [tag for tag, _ in self.open]
        if "li" in tags and self.lists and self.lists[-1]:
            self.lists[-1][-1] += data
        if "td" in tags and self.cells:
            klass, text = self.cells[-1]
            self.cells[-1] = (klass, text + data)
        if not CODE & set(tags) and data.strip():
            self.prose.append(("/".join(tags[-3:]), data.strip()))


def pages(site: Path) -> list[Path]:
    return sorted(site.glob("**/index.html"))


def read(site: Path, page: str) -> Page:
    return Page((site / page / "index.html").read_text(encoding="utf-8"))


def test_every_page_is_built(site):
    names = {path.parent.relative_to(site).as_posix() for path in pages(site)}
    for md in (ROOT / "docs").glob("*.md"):
        assert (md.stem if md.stem != "index" else ".") in names, md.name


def test_no_markdown_leaks_into_the_text(site):
    """No literal ``*`` (a list run on into a paragraph, unclosed emphasis) or
    ``|`` (a broken table) outside code, on any page."""
    leaks = [
        f"{path.relative_to(site)} <{tags}>: {text[:100]!r}"
        for path in pages(site)
        for tags, text in Page(path.read_text(encoding="utf-8")).prose
        if "*" in text or "|" in text
    ]
    assert leaks == []


def test_the_compatibility_table_renders(site):
    body = (ROOT / "docs" / "registry.md").read_text(encoding="utf-8")
    region = body[body.index("<!-- vecmode:registry-table -->") :]
    region = region[: region.index("<!-- /vecmode:registry-table -->")]
    rows = [line for line in region.splitlines() if line.startswith("| `")]
    assert len(rows) > 25
    page = read(site, "registry")
    # the table: one row of cells per wrapper, refused and known-wrong cells coloured
    cells = [text for _, text in page.cells]
    assert any(text.startswith("every other class of vecmode (") for text in cells)
    for row in rows:
        name = row.split("`")[1]
        assert name in cells, name
    classes = {
        text: klass
        for klass, text in page.cells
        if text in ("ok", "refused", "known-wrong")
    }
    assert classes == {
        "ok": None,
        "refused": "vecmode-refused",
        "known-wrong": "vecmode-known-wrong",
    }
    # (the verdicts' table above names known-wrong too, uncoloured)
    coloured = [text for klass, text in page.cells if klass == "vecmode-known-wrong"]
    assert len(coloured) == sum(row.count("| known-wrong ") for row in rows) > 5


def test_the_stylesheet_colours_the_cells_and_lets_wide_blocks_scroll(site):
    css = (site / "stylesheets" / "extra.css").read_text(encoding="utf-8")
    for selector in ("td.vecmode-refused", "td.vecmode-known-wrong", "pre > code"):
        assert selector in css
    assert "overflow-x: auto" in css
    assert 'href="../stylesheets/extra.css"' in (
        site / "registry" / "index.html"
    ).read_text(encoding="utf-8")


def test_the_timeline_picture_is_shown(site):
    html = (site / "modes" / "index.html").read_text(encoding="utf-8")
    (src,) = re.findall(r'<img alt="What each autoreset mode[^"]*" src="([^"]+)"', html)
    assert (
        (site / "modes" / src).resolve().read_text(encoding="utf-8").startswith("<svg ")
    )


def test_api_signatures_are_formatted(site):
    """One parameter per line (mkdocstrings formats them with ruff, which the
    ``docs`` extra installs), not one long line clipped by the page."""
    html = (site / "api" / "index.html").read_text(encoding="utf-8")
    start = html.index("doc-signature", html.index('id="vecmode.make_vec"'))
    signature = html[start : html.index("</code>", start)]
    text = re.sub(r"<[^>]+>", "", signature)
    lines = [line for line in text.splitlines() if line.strip()]
    assert any(line.startswith("    id: ") for line in lines), text
    assert max(len(line) for line in lines) <= 80, text
