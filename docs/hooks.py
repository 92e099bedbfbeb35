"""mkdocs hook: fills in the generated parts of the pages at build time.

Registered in ``mkdocs.yml`` (``hooks:``). A page holds a marker, an HTML comment
alone on its line, where generated content goes; nothing generated is typed into
the pages by hand:

``<!-- vecmode:registry-table -->``
    the compatibility table, ``vecmode.registry.format_table(markdown=True,
    why=True)`` (what ``vecmode table --markdown --why`` prints);
``<!-- vecmode:timeline-svg -->``
    the picture of the three modes, ``vecmode.timeline.timeline_svg`` of
    ``vecmode.timeline.timeline("CartPole-v1", ...)``, inlined as SVG;
``<!-- vecmode:cli ARGS -->``
    the command ``vecmode ARGS`` and what it prints, as a ``console`` block.

The registry table and the command line's output come from a fresh interpreter
(``python -m vecmode ...``), so they show exactly what a user gets, whatever the
build process has imported or declared. An unknown ``vecmode:`` marker fails the
build.

This file lives in ``docs/`` (excluded from the site by ``exclude_docs``), outside
the paths pytest collects; ``tests/test_docs.py`` imports it by path.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from typing import Any


class MarkerError(ValueError):
    """A marker that cannot be filled in (mkdocs reports it as a build error)."""


REGISTRY_MARKER = "<!-- vecmode:registry-table -->"
TIMELINE_MARKER = "<!-- vecmode:timeline-svg -->"
#: Any vecmode marker: a comment alone on its line.
MARKER = re.compile(r"^<!-- vecmode:(?P<name>[\w-]+)(?P<args>[^\n]*?) -->$", re.M)

#: The run the picture of the modes shows: an episode truncated after its third
#: step (as in Gymnasium's animation of the modes), then the next episode.
TIMELINE_ENV = "CartPole-v1"
TIMELINE_STEPS = 5
TIMELINE_MAX_EPISODE_STEPS = 3


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
    """The registry as a Markdown table with the reasons below it."""
    return vecmode_cli("table", "--markdown", "--why")


def timeline_picture() -> str:
    """The timeline of the three modes as an inline SVG figure."""
    from vecmode.timeline import timeline, timeline_svg

    table = timeline(
        TIMELINE_ENV,
        steps=TIMELINE_STEPS,
        max_episode_steps=TIMELINE_MAX_EPISODE_STEPS,
    )
    title = (
        f"{TIMELINE_ENV}, one sub-env, episodes truncated after "
        f"{TIMELINE_MAX_EPISODE_STEPS} steps"
    )
    svg = timeline_svg(table, title=title)
    # inline: drop an XML declaration / doctype, and blank lines, which would end
    # Markdown's raw HTML block
    svg = re.sub(r"<\?xml[^>]*\?>|<!DOCTYPE[^>]*>", "", svg)
    svg = "\n".join(line for line in svg.splitlines() if line.strip())
    return f'<figure class="vecmode-timeline" markdown="0">\n{svg}\n</figure>'


def _replacement(match: re.Match[str], page: str) -> str:
    name, args = match["name"], match["args"].strip()
    if name == "registry-table" and not args:
        return registry_table()
    if name == "timeline-svg" and not args:
        return timeline_picture()
    if name == "cli":
        return cli_block(*shlex.split(args))
    raise MarkerError(f"{page}: unknown marker {match[0]!r}")


def render(markdown: str, page: str = "<page>") -> str:
    """``markdown`` with every vecmode marker replaced by what it stands for."""
    return MARKER.sub(lambda match: _replacement(match, page), markdown)


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    """mkdocs event: fill in the page's markers."""
    from mkdocs.exceptions import PluginError  # only under mkdocs: tests import this

    try:
        return render(markdown, page.file.src_uri)
    except MarkerError as error:
        raise PluginError(str(error)) from error
