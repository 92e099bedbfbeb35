"""The rendered site in a real headless browser: nothing wider than the window.

Every page of the built site is loaded in Chromium (driven by Playwright) at a
desktop width (1,280 px) and a phone width (390 px). A page fails when it scrolls
sideways, when an element reaches past the window's right edge outside a box that
scrolls (a wide table or code block must scroll inside its own box), or when a
code block's copy button covers a shell command's text. A screenshot of each page
at each width is left in the test's temporary directory (the whole page where
something overflows).

Needs ``chromium`` (Debian's package; ``.ci/run`` installs it) and the
``playwright`` package (the ``test`` extra); without them the tests skip, except
under ``CI=true``, where they fail.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docs.test_docs_site import build

pytestmark = pytest.mark.slow

WIDTHS = {"desktop": (1280, 800), "phone": (390, 844)}
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

#: What overflows on the page shown: a list of one-line descriptions (JavaScript
#: run in the page). An element counts when its right edge is past the window and
#: no ancestor scrolls or clips it sideways, or when its text is cut short with an
#: ellipsis (the side navigation's long headings; the header's one-line title
#: may be cut); a copy button counts when it
#: covers the text of a shell command's block.
OVERFLOW_JS = """() => {
  const width = window.innerWidth;
  const found = [];
  const root = document.documentElement;
  if (root.scrollWidth > width) {
    found.push(`the page scrolls sideways: ${root.scrollWidth} px in ${width} px`);
  }
  const name = (el) => {
    const text = (el.textContent || "").trim().replace(/\\s+/g, " ").slice(0, 50);
    const cls = typeof el.className === "string" && el.className
      ? "." + el.className.trim().split(/\\s+/).join(".") : "";
    return `<${el.tagName.toLowerCase()}${cls}> ${JSON.stringify(text)}`;
  };
  const contained = (el) => {  // the root's overflow is the window's: not a box
    for (let up = el.parentElement; up && up !== document.body; up = up.parentElement) {
      if (getComputedStyle(up).overflowX !== "visible") return true;
    }
    return false;
  };
  for (const el of document.body.querySelectorAll("*")) {
    const style = getComputedStyle(el);
    if (style.display === "none" || style.visibility === "hidden") continue;
    const box = el.getBoundingClientRect();
    if (box.width === 0 || box.height === 0) continue;
    if (box.right > width + 0.5 && !contained(el)) {
      found.push(`${name(el)} reaches ${Math.round(box.right)} px`);
    }
    if (style.textOverflow === "ellipsis" && el.scrollWidth > el.clientWidth
        && !el.closest(".md-header")) {
      found.push(`${name(el)} is cut short with an ellipsis`);
    }
  }
  for (const code of document.querySelectorAll(".language-bash pre > code")) {
    const button = code.parentElement.querySelector(".md-code__nav, .md-clipboard");
    if (!button) continue;
    const b = button.getBoundingClientRect();
    const range = document.createRange();
    range.selectNodeContents(code);
    for (const r of range.getClientRects()) {
      if (r.width > 0 && r.left < b.right && r.right > b.left
          && r.top < b.bottom && r.bottom > b.top) {
        found.push(`the copy button covers ${name(code)}`);
        break;
      }
    }
  }
  return found;
}"""


def _browser_or_skip():
    """Playwright's sync API and Chromium's path, or a skip (a failure in CI)."""
    chromium = shutil.which("chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
    missing = [
        what
        for what, there in (
            ("the chromium browser (apt-get install chromium)", chromium),
            ("the playwright package (pip install playwright)", sync_playwright),
        )
        if not there
    ]
    if missing:
        reason = f"the layout test needs {' and '.join(missing)}"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}: .ci/run installs both")
        pytest.skip(reason)
    return sync_playwright, chromium


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


class QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        pass  # the browser hung up (a page closed while loading)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The site, built and served on localhost: its base URL and its directory."""
    site = tmp_path_factory.mktemp("layout-site")
    build(site)
    handler = functools.partial(Quiet, directory=str(site))
    server = QuietServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", site
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def browser():
    sync_playwright, chromium = _browser_or_skip()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=chromium, args=CHROMIUM_ARGS
        )
        try:
            yield launched
        finally:
            launched.close()


def overflow(browser, url: str, width: int, height: int, shot: Path) -> list[str]:
    """What overflows on the page at ``url`` in a window ``width`` px wide, with a
    screenshot saved to ``shot``: the first screen, or the whole page if something
    overflows (a whole long page takes seconds). Requests that leave localhost
    (web fonts) are refused: the test needs no network."""
    page = browser.new_page(viewport={"width": width, "height": height})
    try:
        page.route(
            "**/*",
            lambda route: (
                route.continue_()
                if route.request.url.startswith("http://127.0.0.1")
                else route.abort()
            ),
        )
        page.goto(url, wait_until="load")
        found = page.evaluate(OVERFLOW_JS)
        page.screenshot(path=str(shot), full_page=bool(found))
        return found
    finally:
        page.close()


def page_urls(base: str, site: Path) -> dict[str, str]:
    """Every page of the site: its name (``home`` for the front page) and URL."""
    names = [
        index.parent.relative_to(site).as_posix()
        for index in sorted(site.glob("**/index.html"))
    ]
    return {
        "home" if name == "." else name: base + ("" if name == "." else f"{name}/")
        for name in names
        if name != "planted"  # test_the_check_finds_what_is_planted's page
    }


@pytest.mark.parametrize("size", WIDTHS)
def test_no_page_is_wider_than_the_window(browser, served, size, tmp_path):
    base, site = served
    width, height = WIDTHS[size]
    pages = page_urls(base, site)
    assert len(pages) > 10
    problems = {
        name: found
        for name, url in pages.items()
        if (found := overflow(browser, url, width, height, tmp_path / f"{name}.png"))
    }
    assert problems == {}, f"at {width} px (screenshots in {tmp_path}): {problems}"


#: Planted in a copy of the quickstart page: an element wider than any window, a
#: heading cut short, and the stylesheet's rule for shell commands undone (on a
#: phone the copy button then covers the install command).
PLANTED = (
    '<div style="width: 2000px">too wide</div>'
    '<div style="width: 5em; overflow: hidden; text-overflow: ellipsis;'
    ' white-space: nowrap">a heading cut short</div>'
    "<style>.md-typeset div.language-bash pre > code"
    " { white-space: pre; padding-right: 0 }</style>"
)


def test_the_check_finds_what_is_planted(browser, served, tmp_path):
    """The check can fail: each planted fault is found, at both widths (the copy
    button covers the command on a phone only)."""
    base, site = served
    page = (site / "quickstart" / "index.html").read_text(encoding="utf-8")
    assert "<article" in page and "language-bash" in page
    (site / "planted").mkdir(exist_ok=True)
    (site / "planted" / "index.html").write_text(
        page.replace("<article", PLANTED + "<article", 1), encoding="utf-8"
    )
    for size, (width, height) in WIDTHS.items():
        found = overflow(
            browser, f"{base}planted/", width, height, tmp_path / f"{size}.png"
        )
        assert found[0].startswith("the page scrolls sideways: "), found
        assert any('"too wide" reaches ' in line for line in found), found
        assert any('"a heading cut short" is cut short' in line for line in found)
        covered = [line for line in found if "the copy button covers" in line]
        assert len(covered) == (size == "phone"), found
