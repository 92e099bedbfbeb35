"""The architecture keeps its promises.

* Mode knowledge lives in ONE module, ``vecmode.modes``: no other module names
  SAME_STEP's info keys (``final_obs``, ``_final_obs``, ``final_info``,
  ``_final_info``) in code, or compares anything with an ``AutoresetMode`` member.
  Docstrings may mention them; the CLI's and the timeline's presentation text is
  allowed by name.
* No function in ``src/`` is more complex than cyclomatic complexity 20 (radon's
  measure).
"""

from __future__ import annotations

import ast
import pathlib

import pytest

SRC = pathlib.Path(__file__).resolve().parent.parent / "src" / "vecmode"
KEYS = frozenset({"final_obs", "_final_obs", "final_info", "_final_info"})
MEMBERS = frozenset({"NEXT_STEP", "SAME_STEP", "DISABLED"})
BOUNDARY_MODULE = SRC / "modes.py"
#: presentation text: what the CLI prints and the timeline draws
PRESENTATION = {SRC / "cli.py", SRC / "timeline.py"}
MAX_COMPLEXITY = 20


def mode_knowledge(source: str) -> list[str]:
    """Where ``source`` names a SAME_STEP key in code or compares with a mode."""
    tree = ast.parse(source)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(
            node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
        )
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and node.value in KEYS
            and id(node) not in docstrings
        ):
            found.append(f"line {node.lineno}: names {node.value!r}")
        if isinstance(node, ast.Compare):
            for sub in ast.walk(node):
                if isinstance(sub, ast.Attribute) and sub.attr in MEMBERS:
                    found.append(f"line {node.lineno}: compares with {sub.attr}")
    return found


def test_the_scan_sees_what_it_must():
    """The check itself can fail."""
    assert mode_knowledge('"""final_obs in a docstring"""\nx = 1\n') == []
    assert mode_knowledge('y = infos["final_obs"]\n') == ["line 1: names 'final_obs'"]
    assert mode_knowledge("b = m is AutoresetMode.SAME_STEP\n") == [
        "line 1: compares with SAME_STEP"
    ]
    assert mode_knowledge("b = mode != modes.DISABLED\n") == [
        "line 1: compares with DISABLED"
    ]


@pytest.mark.parametrize(
    "path",
    sorted(
        p for p in SRC.rglob("*.py") if p != BOUNDARY_MODULE and p not in PRESENTATION
    ),
    ids=lambda p: str(p.relative_to(SRC)),
)
def test_only_the_boundary_module_knows_the_modes(path):
    found = mode_knowledge(path.read_text())
    assert not found, (
        f"{path.relative_to(SRC)} knows the modes ({'; '.join(found)}): ask "
        f"vecmode.modes (its readers, writers and predicates) instead."
    )


def test_no_function_is_too_complex():
    from radon import complexity as radon

    too_complex = []
    for path in sorted(SRC.rglob("*.py")):
        for block in radon.cc_visit(path.read_text()):
            if block.complexity > MAX_COMPLEXITY:
                too_complex.append(
                    f"{path.relative_to(SRC)}:{block.lineno} {block.name} "
                    f"({block.complexity})"
                )
    assert not too_complex, (
        f"cyclomatic complexity above {MAX_COMPLEXITY}: {', '.join(too_complex)}; "
        f"split it into named steps."
    )


# ------------------------------------------------------------- the public API
#: What a user types every day; the rest lives in named submodules.
TOP_LEVEL = {
    # the envs, make_vec, the policies
    "SyncVectorEnv", "AsyncVectorEnv", "RayVectorEnv", "make_vec",
    "NextStepAutoreset", "SameStepAutoreset", "DisableAutoreset", "with_autoreset",
    # the modes
    "MODES", "AutoresetMode", "ModeLike", "as_mode", "mode_of", "probe_mode",
    # the registry's verbs
    "supports", "register", "unregister", "supported_modes", "check_stack",
    "assert_compatible", "require_mode", "guard", "strict",
    "register_vector_env", "unregister_vector_env",
    # the training loop
    "TransitionCollector", "Transition",
    # the exceptions and the warning
    "IncompatibleModeError", "EpisodeEndedError", "SubEnvError", "WorkerError",
    "WorkerTimeoutError", "UndeclaredModeWarning",
    "wrappers", "__version__",
}  # fmt: skip


def test_the_top_level_is_what_users_type_every_day():
    import vecmode

    assert set(vecmode.__all__) == TOP_LEVEL
    for name in vecmode.__all__:
        assert getattr(vecmode, name) is not None, name


def test_a_submodule_name_at_the_top_level_says_where_it_lives():
    import vecmode

    with pytest.raises(
        AttributeError, match=r"; it is vecmode\.testing\.check_wrapper$"
    ):
        vecmode.check_wrapper  # noqa: B018
    with pytest.raises(AttributeError) as caught:
        vecmode.no_such_name  # noqa: B018
    assert str(caught.value) == "module 'vecmode' has no attribute 'no_such_name'"
