"""The jax wrappers' tests, in a fresh interpreter.

Once jax is imported, a later ``os.fork()`` in the same process (as the workers of
async vector envs are started) risks a deadlock, so no test of this session
imports jax: the jax cases of the catalogue (``tests/wrappers/cases.py``, marked
``isolated``) and the jax doctests are skipped here, and this test runs them, and
only them, in a new pytest process. Without jax (the ``jax`` extra)
it is skipped.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.wrappers.cases import FRESH

ROOT = Path(__file__).resolve().parent.parent
PYTEST = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
FILES = [
    "tests/testing/test_check_wrapper.py",
    "tests/wrappers/test_array_conversion.py",
    "tests/test_transitions.py",
    "tests/wrappers/test_fidelity.py",
    "tests/wrappers/test_equivalence.py",
    "src/vecmode/wrappers/array_conversion.py",
]


@pytest.mark.slow
def test_the_jax_wrappers_in_a_fresh_interpreter():
    missing = [
        m for m in ("jax", "array_api_compat") if not importlib.util.find_spec(m)
    ]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} (pip install '.[jax]')")
    out = subprocess.run(
        [*PYTEST, "-k", "JaxToNumpy or JaxToTorch or batched_like_obs and jax", *FILES],
        cwd=ROOT,
        env={**os.environ, FRESH: "1"},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-3000:]
    summary = out.stdout.strip().splitlines()[-1]
    passed = re.search(r"(\d+) passed", summary)
    # conformance, 6 conversion checks, 2 equivalence runs and Gymnasium's
    # NextStep per wrapper, and the two doctests; the collector's 3 modes x 4
    # observation spaces per jax conversion (JaxToTorch's only with torch)
    runnable = 2 + (importlib.util.find_spec("torch") is not None)
    expected = 2 * 10 + 2 + 12 * runnable
    assert passed is not None and int(passed.group(1)) >= expected, summary
