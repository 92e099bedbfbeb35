"""The registry as a table: every declaration against the three modes."""

from __future__ import annotations

import sys
import textwrap

from gymnasium.vector import AutoresetMode

from vecmode import errors
from vecmode.env_classes import declared_simulators
from vecmode.modes import MODES
from vecmode.registry import declare
from vecmode.registry.declare import ATTRIBUTE, Declaration, declaration
from vecmode.registry.proof import Evidence, evidence

#: A table cell: ok in that mode, with a caveat listed below the table.
OK_WITH_CAVEAT = "ok\u2020"

TABLE_LEGEND = (
    "NextStep, SameStep, Disabled: the mode of the env the wrapper is put on. "
    f"ok: correct in that mode ({OK_WITH_CAVEAT}: but for a caveat, which --why "
    "lists). refused: raises when built (IncompatibleModeError, or the class's "
    "own error). known-wrong: wrong (silently, or failing later); Gymnasium's "
    "classes accept it and vecmode.guard() refuses it, a class declared wrong "
    "there with vecmode.register always refuses it. produces: the mode a "
    "mode-changing wrapper "
    "outputs. evidence: "
    "verified (runs proved it: vecmode's, or your recorded check_wrapper), declared "
    "(the class says so: run vecmode conform) or inherited (from a base class)."
)


#: What the table's line listing the array-native wrappers starts with.
ARRAY_NATIVE = (
    "Array-native (take torch, JAX... batches on their device; the others read "
    "NumPy and are refused over them)"
)


def _public_path(cls: type) -> str:
    """The shortest ``package.module.Class`` path that gives ``cls``."""
    parts = cls.__module__.split(".")
    for end in range(1, len(parts)):
        module = ".".join(parts[:end])
        if getattr(sys.modules.get(module), cls.__qualname__, None) is cls:
            return f"{module}.{cls.__qualname__}"
    return f"{cls.__module__}.{cls.__qualname__}"


def _vecmode_heirs(cls: type) -> list[type]:
    """vecmode's public subclasses of ``cls`` that declare nothing themselves."""
    heirs: list[type] = []
    sub: type
    for sub in cls.__subclasses__():
        if ATTRIBUTE in sub.__dict__ or sub in declare.registered:
            continue
        if sub.__module__.startswith("vecmode.") and not sub.__name__.startswith("_"):
            heirs.append(sub)
        heirs.extend(_vecmode_heirs(sub))
    return heirs


def table_entries() -> list[tuple[str, Declaration, Evidence]]:
    """The rows of :func:`format_table`: ``(class path, declaration, evidence)``;
    vecmode's wrappers first, then Gymnasium's, then those registered here."""
    declare.resolve_pending()
    # a class defined again under one path (a re-run notebook cell) replaces it
    latest: dict[str, tuple[Declaration, Evidence]] = {}
    for ref in list(declare.decorated):
        cls = ref()
        if cls is None:
            continue
        latest[_public_path(cls)] = (cls.__dict__[ATTRIBUTE], evidence(cls))
        for heir in _vecmode_heirs(cls):
            found = declaration(heir)
            if found is not None:
                latest.setdefault(_public_path(heir), (found, evidence(heir)))
    # the autoreset policies first, then the wrappers (whatever the import order)
    order = sorted(latest, key=lambda name: name.startswith("vecmode.wrappers"))
    rows = [(name, *latest[name]) for name in order]
    for name, found in declare.gymnasium_entries().items():  # all in .wrappers.vector
        public = f"gymnasium.wrappers.vector.{name.rpartition(':')[2]}"
        rows.append((public, found, Evidence.VERIFIED))
    rows.extend(
        (_public_path(cls), found, evidence(cls))
        for cls, found in dict(declare.registered).items()
    )
    rows.extend(  # not imported yet (an imported one was warned about)
        (name.replace(":", "."), found, Evidence.DECLARED)
        for name, found in dict(declare.pending).items()
        if name.partition(":")[0] not in sys.modules
    )
    return rows


def declarations() -> list[tuple[str, Declaration]]:
    """Every declaration known here, ``(class path, declaration)``, in table order."""
    return [(name, found) for name, found, _ in table_entries()]


def _cell(found: Declaration, mode: AutoresetMode) -> str:
    """A cell: the verdict, :data:`OK_WITH_CAVEAT` for ok with a caveat."""
    if mode in found.caveats:  # only supported modes have one
        return OK_WITH_CAVEAT
    return found.behaviour(mode)


def aligned(
    header: tuple[str, ...], rows: list[tuple[str, ...]], markdown: bool = False
) -> list[str]:
    """Rows as left-aligned columns under a header and a rule of dashes, or as a
    Markdown table."""
    if markdown:
        lines = [f"| {' | '.join(row)} |" for row in (header, *rows)]
        return [lines[0], "|" + "---|" * len(header), *lines[1:]]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    rule = tuple("-" * width for width in widths)
    return [
        "  ".join(
            text.ljust(width) for text, width in zip(row, widths, strict=True)
        ).rstrip()
        for row in [header, rule, *rows]
    ]


SIMULATOR_LEGEND = (
    "exact: the modes vecmode gives exactly through the adapter "
    "(vecmode.with_autoreset); none where the final observation is lost, or "
    "opt-in and off (the remedy turns it on). vecmode.simulators.ApproximateFinalObs "
    "gives SameStep where it is lost, marked approximated. The other columns: what "
    "the simulator does at an episode's end (vecmode.env_classes.Semantics; "
    "docs/simulators.md)."
)


def format_simulators(*, markdown: bool = False) -> str:
    """The batched simulators vecmode declares, and what each does at an end
    (what ``vecmode table --simulators`` prints)."""
    quote = "`" if markdown else ""
    header: tuple[str, ...] = ("simulator", "exact", "final obs", "resets to")
    header += ("ending reward", "partial reset", "truncation", "remedy")
    rows: list[tuple[str, ...]] = []
    for found in declared_simulators():
        s = found.semantics
        exact = errors.mode_names(found.modes) if s.exact else "none"
        name = f"{quote}{found.path.replace(':', '.')}{quote}"
        semantics = (s.final_observation, s.resets_to, s.ending_reward)
        rows.append(
            (name, exact, *semantics, s.partial_reset, s.truncation, s.remedy or "-")
        )
    legend = [SIMULATOR_LEGEND] if markdown else textwrap.wrap(SIMULATOR_LEGEND, 88)
    return "\n".join([*aligned(header, rows, markdown), "", *legend])


def format_table(*, markdown: bool = False, why: bool = False) -> str:
    """The registry as a wrapper x mode matrix (what ``vecmode table`` prints).

    Args:
        markdown: a Markdown table instead of aligned text.
        why: add, below the matrix, what is recorded of every mode not plainly ok.
    """
    entries, quote = table_entries(), "`" if markdown else ""
    header = ("wrapper", *(mode.value for mode in MODES), "produces", "evidence")
    rows = [
        (
            f"{quote}{name}{quote}",
            *(_cell(found, mode) for mode in MODES),
            found.output.value if found.output else "",
            proof.value,
        )
        for name, found, proof in entries
    ]
    reasons = _reasons(entries if why else [], quote)
    native = [
        f"{quote}{name}{quote}" for name, found, _ in entries if found.array_native
    ]
    # the others read NumPy: refused over torch or JAX batches
    arrays = [f"{ARRAY_NATIVE}: {', '.join(native)}."] if native else []
    if markdown:
        # a blank line, or Markdown runs the list on into the paragraph above
        notes = [TABLE_LEGEND, *[""] * bool(reasons), *[f"* {r}" for r in reasons]]
    else:
        notes = [*textwrap.wrap(TABLE_LEGEND, 88), *([""] * bool(reasons)), *reasons]
    notes += [s for line in arrays for s in ("", line)]  # a paragraph of its own
    return "\n".join([*aligned(header, rows, markdown), "", *notes])


def _reasons(entries: list[tuple[str, Declaration, Evidence]], quote: str) -> list[str]:
    """One line per recorded reason: where it holds (wrappers, modes), its verdict."""
    where: dict[tuple[str, str], dict[str, list[str]]] = {}
    for name, found, _ in entries:
        for mode in MODES:
            if note := found.note(mode):
                modes = where.setdefault((note, _cell(found, mode)), {})
                modes.setdefault(f"{quote}{name}{quote}", []).append(mode.value)
    lines = []
    for (note, cell), modes in where.items():
        if len({tuple(m) for m in modes.values()}) == 1:  # the same modes for all
            places = f"{', '.join(modes)} in {', '.join(next(iter(modes.values())))}"
        else:
            places = "; ".join(f"{n} in {', '.join(m)}" for n, m in modes.items())
        lines.append(f"{places} ({cell}): {note}")
    return lines
