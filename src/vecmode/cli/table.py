"""``vecmode table``: which autoreset modes each wrapper supports."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from vecmode.cli.common import import_all, print_json
from vecmode.env_classes import declared_simulators
from vecmode.modes import MODES
from vecmode.registry import TABLE_LEGEND, format_table, table_entries
from vecmode.registry.table import SIMULATOR_LEGEND, format_simulators


def run(args: argparse.Namespace) -> bool:
    """Print the registry (``--simulators``: the batched simulators vecmode
    declares), after importing the modules of ``--import``."""
    import_all(args.imports)
    if args.simulators:
        import vecmode.simulators  # noqa: F401  (the adapters declare them)
    if args.json:
        print_json("table", {"ok": True, "error": None, **_document(args.simulators)})
    elif args.simulators:
        print(format_simulators(markdown=args.markdown))
    else:
        print(format_table(markdown=args.markdown, why=args.why))
    return True


def _document(simulators: bool) -> dict[str, Any]:
    """The ``table`` document: of the registry, or of the batched simulators."""
    if simulators:
        rows = [
            {
                "simulator": found.path,
                "exact": [
                    m.value for m in MODES if m in found.modes and found.semantics.exact
                ],
            }
            | dataclasses.asdict(found.semantics)
            for found in declared_simulators()
        ]
        return {"simulators": rows, "legend": SIMULATOR_LEGEND}
    wrappers = [
        {
            "name": name,
            "modes": {
                mode.value: {
                    "verdict": found.behaviour(mode),
                    "why": found.note(mode) or None,
                }
                for mode in MODES
            },
            "produces": found.output,
            "evidence": proof,
            "array_native": found.array_native,
        }
        for name, found, proof in table_entries()
    ]
    return {"modes": MODES, "wrappers": wrappers, "legend": TABLE_LEGEND}
