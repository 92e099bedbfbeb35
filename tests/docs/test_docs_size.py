"""The README and every docs page at the size of their content.

A page has at most 2,500 words, and its sentences average at most 22 words. The
rule: words are the whitespace-separated tokens outside fenced code blocks and
HTML comments (tables count). Sentences are read from the prose only (no code,
comments, tables or headings): each paragraph and list item ends a sentence, and
so does a ``.``, ``!`` or ``?`` followed by whitespace; an inline code span is one
word.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MAX_WORDS = 2500
MAX_SENTENCE = 22

FENCE = re.compile(r"^(```|~~~).*?^\1\s*$", re.S | re.M)
COMMENT = re.compile(r"<!--.*?-->", re.S)
#: Paragraphs are split at blank lines; list items start a block of their own.
BLOCK = re.compile(r"\n\s*\n|\n(?=\s*(?:[*+-]|\d+\.)\s)")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
CODE_SPAN = re.compile(r"`[^`]*`")


def measure(text: str) -> tuple[int, float]:
    """A Markdown page's word count and average sentence length, in words."""
    body = FENCE.sub(" ", COMMENT.sub(" ", text))
    sentences: list[str] = []
    for block in BLOCK.split(body):
        lines = [
            line
            for line in block.splitlines()
            if line.strip() and not line.lstrip().startswith(("|", "#"))
        ]
        prose = CODE_SPAN.sub("CODE", " ".join(lines))
        sentences += [part for part in SENTENCE_END.split(prose) if part.split()]
    words_in_sentences = sum(len(sentence.split()) for sentence in sentences)
    return len(body.split()), words_in_sentences / max(len(sentences), 1)


def test_the_counter_on_a_small_page():
    page = """# A heading of six words here

One two three. Four five six seven!

* a list item is a sentence
* `some code span` counts once

| a | table | row |
|---|---|---|

<!-- a comment of five words -->

```python
print("code is not counted")
```
"""
    # words: 7 (heading) + 7 + 7 + 6 (the span's three) + 7 + 1 (the table's
    # rows); sentences (no heading, table, comment or code): 3, 4, 7 and 4 words
    # (a list's "*" counts, a code span is one word)
    assert measure(page) == (35, 18 / 4)


def test_the_counter_flags_long_sentences_and_long_pages():
    long_sentence = " ".join(["word"] * 23) + "."
    assert measure(long_sentence)[1] == 23 > MAX_SENTENCE
    assert measure(" ".join(["word"] * 22) + ".")[1] == MAX_SENTENCE
    long_page = "\n\n".join(["Five words in a sentence."] * 501)
    assert measure(long_page) == (2505, 5)


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.relative_to(ROOT).name)
def test_the_page_is_at_the_size_of_its_content(page):
    words, sentence = measure(page.read_text(encoding="utf-8"))
    assert words <= MAX_WORDS, f"{page.name}: {words} words (at most {MAX_WORDS})"
    assert sentence <= MAX_SENTENCE, (
        f"{page.name}: sentences of {sentence:.1f} words on average "
        f"(at most {MAX_SENTENCE})"
    )


def test_the_readme_starts_with_what_it_is_how_to_run_it_and_an_example():
    """What vecmode is, the two commands and a first example, before word 250
    (counting the commands too)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    before = readme[: readme.index("```python")]
    assert before.count("```bash") == 2
    assert len(COMMENT.sub(" ", before).split()) < 250


def test_the_readme_types_no_benchmark_figure():
    """Speed-ups are stated once, on the performance page, and linked from the
    README: no ratio such as ``1.2x`` or ``2.3x`` in its prose."""
    readme = FENCE.sub(" ", (ROOT / "README.md").read_text(encoding="utf-8"))
    assert re.findall(r"\b\d+(?:\.\d+)?x\b", readme) == []
    assert "(docs/performance.md)" in readme
