"""``vecmode table``: which autoreset modes each wrapper supports."""

from __future__ import annotations

import argparse

from vecmode.cli.common import import_module, print_json
from vecmode.modes import MODES
from vecmode.registry import TABLE_LEGEND, format_table, table_entries


def run(args: argparse.Namespace) -> bool:
    """Print the registry, after importing the modules of ``--import``."""
    for module in args.imports:
        import_module(module, f"--import {module}")
    if not args.json:
        print(format_table(markdown=args.markdown, why=args.why))
        return True
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
    document = {"modes": MODES, "wrappers": wrappers, "legend": TABLE_LEGEND}
    print_json("table", {"ok": True, "error": None, **document})
    return True
