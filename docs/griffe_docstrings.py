"""Griffe extension for the API reference: vecmode's docstrings as Markdown.

Loaded by mkdocstrings (``extensions:`` in ``mkdocs.yml``). vecmode's docstrings are
written for ``help()`` and doctest, the way Gymnasium's are; before mkdocstrings
renders them as Markdown, this

* puts every doctest example (a ``>>>`` line up to the next blank line) in a
  ``pycon`` code block, so its output is shown as it is and not read as Markdown
  (``infos["final_obs"][0]`` would be a reference link);
* turns Sphinx roles (``:class:`~vecmode.check_stack```, ``:func:`x```) into inline code
  (``check``, ``x``), the name shortened where the role says ``~``.

The docstrings themselves are not changed. This file lives in ``docs/``, outside
the paths pytest collects, and is excluded from the site.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?[a-z]+:`(?P<tilde>~?)(?P<target>[^`]+)`")


def _role(match: re.Match[str]) -> str:
    target = match["target"]
    if match["tilde"]:
        target = target.rpartition(".")[2]
    return f"`{target}`"


def markdown_docstring(text: str) -> str:
    """``text`` with doctest examples fenced and Sphinx roles as inline code."""
    out: list[str] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.lstrip()
        if stripped.startswith(">>>"):
            indent = line[: len(line) - len(stripped)]
            block = []
            while i < len(lines) and lines[i].strip():
                block.append(lines[i])
                i += 1
            out.extend([f"{indent}```pycon", *block, f"{indent}```"])
            continue
        out.append(_ROLE.sub(_role, line))
        i += 1
    return "\n".join(out)


class DocstringsAsMarkdown(griffe.Extension):
    """Rewrites each object's docstring as :func:`markdown_docstring` says."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown_docstring(obj.docstring.value)
