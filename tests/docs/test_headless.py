"""The examples that render run quietly on a headless machine, as a user who
copies one runs it: in a fresh process, with no display and none of the
test session's settings for pygame (tests/conftest.py sets them)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

from tests.docs.test_docs import BLOCKS, ROOT

RENDERING = [block for block in BLOCKS if "render_mode=" in block.values[0]]
#: What a headless machine lacks, and what the session sets for pygame.
UNSET = ("DISPLAY", "WAYLAND_DISPLAY", "XDG_RUNTIME_DIR", "SDL_VIDEODRIVER")
UNSET += ("SDL_AUDIODRIVER", "PYGAME_HIDE_SUPPORT_PROMPT")


@pytest.mark.parametrize("code", RENDERING)
def test_a_rendering_example_prints_nothing_on_stderr(code):
    for module in ("pygame", "moviepy"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"needs {module}")
    env = {k: v for k, v in os.environ.items() if k not in UNSET}
    env["PYTHONPATH"] = str(ROOT / "src")
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == "", done.stderr


def test_the_rendering_examples_are_found():
    assert RENDERING, "no docs example renders: this test checks nothing"
