"""``--json``: every document the commands print matches the schema that
docs/cli.md documents, field for field and type for type, and the exit codes
are those of the text output."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from vecmode import MODES
from vecmode.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE, JSON_SCHEMA_VERSION, main

ROOT = Path(__file__).resolve().parents[2]
TARGETS = "tests.cli.targets"
MODE_NAMES = {mode.value for mode in MODES}

#: The runs whose documents are checked, per command: (argv, exit code); they
#: cover every field (ok and not ok, refusals, errors).
RUNS: dict[str, list[tuple[list[str], int]]] = {
    "table": [(["table"], EXIT_OK)],
    "check": [
        (["check", "CartPole-v1", "--mode", "SameStep"], EXIT_OK),
        (
            ["check", "CartPole-v1", "--mode", "SameStep",
             "--wrap", "gymnasium:NormalizeReward"],
            EXIT_FAILED,
        ),
        (
            ["check", "CartPole-v1", "--mode", "SameStep",
             "--wrap", "gymnasium:NormalizeObservation"],
            EXIT_FAILED,
        ),
        (
            ["check", "CartPole-v1", "--vectorization", "vector_entry_point",
             "--mode", "Disabled"],
            EXIT_FAILED,
        ),
        (["check", "CartPole-v1", "--wrap", f"{TARGETS}:Undeclared"], EXIT_OK),
        (
            ["check", f"{TARGETS}:ForeignVec-v0", "--vectorization",
             "vector_entry_point"],
            EXIT_OK,
        ),
    ],
    "conform": [
        (["conform", f"{TARGETS}:NextStepOnly"], EXIT_OK),
        (["conform", f"{TARGETS}:ShiftObservation"], EXIT_FAILED),
        (["conform", f"{TARGETS}:cartpole"], EXIT_OK),
        (["conform", f"{TARGETS}:stale_final_obs"], EXIT_FAILED),
        (["conform", f"{TARGETS}:raises"], EXIT_FAILED),
    ],
    "probe": [
        (["probe", f"{TARGETS}:cartpole:mode=SameStep"], EXIT_OK),
        (["probe", f"{TARGETS}:never_ending", "--max-steps", "5"], EXIT_FAILED),
        (["probe", f"{TARGETS}:raises"], EXIT_FAILED),
    ],
}  # fmt: skip

#: The JSON types of the docs' "type" column.
TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "boolean": (bool,),
    "object": (dict,),
    "null": (type(None),),
    "array of strings": (list,),
    "array of integers": (list,),
    "array of objects": (list,),
}
ITEM_TYPES = {
    "array of strings": str,
    "array of integers": int,
    "array of objects": dict,
}


def documented(command: str) -> dict[str, str]:
    """The fields docs/cli.md documents for ``command``: path -> type."""
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    json_part = page[page.index("## JSON output") :]
    common = json_part[: json_part.index("### ")]
    own = json_part[json_part.index(f"### `vecmode {command} --json`") :]
    own = own[: own.index("\n### ")] if "\n### " in own else own
    fields = {}
    for table in (common, own):
        for path, kind in re.findall(r"^\| `([^`]+)` \| ([^|]+?) \|", table, re.M):
            fields[path] = kind
    return fields


def fields(document: Any, prefix: str = "") -> dict[str, list[Any]]:
    """Every field of ``document``, by path (``a[].b`` in arrays of objects,
    ``a.*.b`` in objects keyed by mode), with the values found there."""
    found: dict[str, list[Any]] = {}
    for key, value in document.items():
        path = f"{prefix}{key}"
        found.setdefault(path, []).append(value)
        if isinstance(value, dict) and value and set(value) <= MODE_NAMES:
            for item in value.values():
                found.setdefault(f"{path}.*", []).append(item)
                if isinstance(item, dict):
                    for sub, values in fields(item, f"{path}.*.").items():
                        found.setdefault(sub, []).extend(values)
        elif isinstance(value, dict):
            for sub, values in fields(value, f"{path}.").items():
                found.setdefault(sub, []).extend(values)
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            for item in value:
                for sub, values in fields(item, f"{path}[].").items():
                    found.setdefault(sub, []).extend(values)
    return found


def fits(value: Any, kind: str) -> bool:
    """Whether ``value`` is of the documented type (``X or null``, ...)."""
    for option in kind.split(" or "):
        option = option.strip()
        allowed = TYPES[option]
        if isinstance(value, bool) and bool not in allowed:
            continue  # a bool is not an integer here
        if isinstance(value, allowed):
            item = ITEM_TYPES.get(option)
            if item is None or all(isinstance(v, item) for v in value):
                return True
    return False


def run_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, Any]:
    code = main([*argv, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out)


@pytest.mark.parametrize("command", sorted(RUNS))
def test_documents_match_the_documented_schema(command, capsys):
    schema = documented(command)
    assert {"command", "schema_version", "ok", "error"} <= set(schema)
    seen: dict[str, list[Any]] = {}
    for argv, code in RUNS[command]:
        got, document = run_json(argv, capsys)
        assert got == code, argv
        assert document["command"] == command
        assert document["schema_version"] == JSON_SCHEMA_VERSION
        assert document["ok"] is (code == EXIT_OK)
        if document["error"] is not None:  # the user's code raised
            assert set(document) == {"command", "schema_version", "ok", "error"}
            continue
        found = fields(document)
        undocumented = set(found) - set(schema)
        assert not undocumented, f"{argv}: not in docs/cli.md: {undocumented}"
        top = {path for path in schema if "." not in path and "[" not in path}
        assert top <= set(document), f"{argv}: missing {top - set(document)}"
        for path, values in found.items():
            for value in values:
                assert fits(value, schema[path]), (argv, path, value, schema[path])
        for path, values in found.items():
            seen.setdefault(path, []).extend(values)
    # every documented field shows up in some run: the docs hold no stale field
    assert set(schema) - {"error"} <= set(seen) | {"error"}


def test_the_json_matches_the_text_output(capsys):
    import vecmode

    code, document = run_json(
        ["check", "CartPole-v1", "--mode", "SameStep", "--wrap", "NormalizeReward"],
        capsys,
    )
    assert code == EXIT_OK
    envs = vecmode.wrappers.NormalizeReward(
        vecmode.make_vec(
            "CartPole-v1",
            num_envs=2,
            vectorization_mode="sync",
            autoreset_mode="SameStep",
        )
    )
    report = vecmode.check_stack(envs)
    envs.close()
    assert document["summary"] == str(report).splitlines()[0]
    assert [row["name"] for row in document["layers"]] == [row.name for row in report]
    assert [row["evidence"] for row in document["layers"]] == ["verified"] * 3
    _, broken = run_json(["conform", f"{TARGETS}:ShiftObservation"], capsys)
    from vecmode.testing import PROPERTIES

    assert broken["failed_property"] in PROPERTIES, broken
    assert broken["failure"].startswith(
        f"ShiftObservation breaks {broken['failed_property']}"
    )
    _, broken = run_json(["conform", f"{TARGETS}:stale_final_obs"], capsys)
    assert broken["failure"] and broken["failed_property"] is None  # a vector env
    code, document = run_json(["conform", f"{TARGETS}:NextStepOnly"], capsys)
    assert document["failed_property"] is None
    assert document["refused"] == {
        "SameStep": "IncompatibleModeError",
        "Disabled": "IncompatibleModeError",
    }
    code, document = run_json(["table"], capsys)
    from vecmode.registry import declarations

    assert [row["name"] for row in document["wrappers"]] == [
        name for name, _ in declarations()
    ]
    native = {row["name"]: row["array_native"] for row in document["wrappers"]}
    assert native["vecmode.wrappers.NormalizeObservation"] is True
    assert native["vecmode.wrappers.FrameStackObservation"] is True
    assert native["vecmode.wrappers.DictInfoToList"] is False


def test_check_keeps_ok_apart_from_the_evidence(capsys):
    """``ok`` is the verdict CI trusts; ``evidence_verified`` (once ``verified``)
    only says what the verdicts rest on, and a layer that is not verified says
    how to prove it."""
    wrong = ["check", "CartPole-v1", "--mode", "SameStep", "--wrap"]
    _, document = run_json([*wrong, "gymnasium:NormalizeReward"], capsys)
    assert "verified" not in document
    assert (document["ok"], document["evidence_verified"]) == (False, True)
    foreign = ["check", f"{TARGETS}:ForeignVec-v0", "--vectorization"]
    _, document = run_json([*foreign, "vector_entry_point"], capsys)
    assert (document["ok"], document["evidence_verified"]) == (True, False)
    assert document["layers"][0]["evidence"] == "declared"
    how = "vecmode.testing.check_vector_env(factory).record()"
    assert how in document["layers"][0]["evidence_note"]


def test_check_s_evidence_is_not_verified_after_a_refusal(capsys):
    """A wrapper refusing the mode leaves the stack unbuilt: the layers built
    before it are verified, but the stack asked for is not."""
    argv = ["check", "CartPole-v1", "--mode", "SameStep", "--wrap"]
    code, document = run_json([*argv, f"{TARGETS}:NextStepOnly"], capsys)
    assert code == EXIT_FAILED and document["refused"]["mode"] == "SameStep"
    assert {row["evidence"] for row in document["layers"]} == {"verified"}
    assert (document["ok"], document["evidence_verified"]) == (False, False)


@pytest.mark.parametrize(
    "argv",
    [
        ["check", "NoSuchEnv-v0"],
        ["check", "CartPole-v1", "--wrap", "ClipReward"],  # cannot be built
        ["conform", "NoSuchWrapper"],
        ["probe", "nomodule:factory"],
    ],
)
def test_usage_errors_print_no_document(argv, capsys):
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert (code, out) == (EXIT_USAGE, "")
    assert err.startswith("vecmode: ")
