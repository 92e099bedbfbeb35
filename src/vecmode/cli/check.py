"""``vecmode check``: build a wrapper stack on an env and check it."""

from __future__ import annotations

import argparse
import functools
import re
import sys
import textwrap
import traceback
from typing import Any

from gymnasium.vector import VectorEnv

from vecmode.cli import common
from vecmode.cli.spec import Target, bind, resolve
from vecmode.errors import IncompatibleModeError, SharedMemorySpaceError
from vecmode.make import make_vec, registered_spec
from vecmode.modes import MODES, AutoresetMode, mode_of
from vecmode.registry import CompatibilityReport, check_stack, declaration


def run(args: argparse.Namespace) -> bool:
    """Make the env, wrap it with ``args.wrap`` and print the stack's report."""
    common.import_all(args.imports)
    targets = [resolve(spec, "--wrap") for spec in args.wrap]  # all, before building
    with common.env_errors(args.env_id, "making"):
        if args.vectorization is None:  # the cores, where they can build the env
            spec = registered_spec(args.env_id)
            only_its_own = spec.entry_point is None and spec.vector_entry_point
            args.vectorization = "vector_entry_point" if only_its_own else "sync"
        try:
            envs = _make(args)
        except IncompatibleModeError as error:  # no exact conversion to --mode
            refused = {"wrapper": None, "mode": args.mode, "message": str(error)}
            env = f"{args.env_id} ({args.vectorization})"
            message = f"NOT OK: {env} cannot run in the mode asked: {error}"
            return _show(args, None, refused, message)
    try:
        for target in targets:
            build = bind(target, envs)
            try:
                wrapped = build()
            except Exception as error:
                return _refusal(args, target, envs, error)
            if not isinstance(wrapped, VectorEnv):
                raise common.CommandError(
                    f"{target.spec!r} returned {type(wrapped).__name__}, not a "
                    f"gymnasium.vector.VectorEnv; a --wrap names a vector wrapper "
                    f"class, or a function env -> wrapped env."
                )
            envs = wrapped
        return _show(args, envs)
    finally:
        envs.close()


def _make(args: argparse.Namespace) -> VectorEnv:
    """``check``'s env (async over what shared memory cannot hold: without it)."""
    make = functools.partial(make_vec, args.env_id, args.num_envs, args.vectorization)
    try:
        return make(autoreset_mode=args.mode)
    except SharedMemorySpaceError:
        if args.vectorization != "async":  # only vecmode's async env raises it
            raise
        envs = make(vector_kwargs={"shared_memory": False}, autoreset_mode=args.mode)
        print(
            f"vecmode: note: the observation space {envs.single_observation_space} "
            f"cannot be held in shared memory, so the async env is made with "
            f"shared_memory=False (observations travel by pipe).",
            file=sys.stderr,
        )
        return envs


def _refusal(
    args: argparse.Namespace, target: Target, envs: VectorEnv, error: Exception
) -> bool:
    """Report ``target`` refusing the mode: by the registry, or by its own error."""
    got = mode_of(envs)
    if isinstance(error, IncompatibleModeError):
        on = f"the stack in {got.value}" if got else "an env that declares no mode"
        message = f"NOT OK: {target.spec!r} refused to wrap {on}: {error}"
        why = str(error)
    else:
        found = declaration(target.obj) if isinstance(target.obj, type) else None
        if (  # its own refusal names the mode, if anything (else: a bad argument)
            found is None
            or got is None
            or got in found.modes
            or got in found.wrong
            or not _names_the_mode(error, got)
        ):
            message = common.cannot_build_message(target.spec, got, error)
            raise common.CommandError(message) from error
        own = f"{type(error).__name__}: {str(error).rstrip('.')}."
        why = f"{target.spec!r} refuses {got.value}: its constructor raised {own}"
        why = " ".join(part for part in (why, found.why(got), found.instead) if part)
        message = f"NOT OK: {why}"
        if args.traceback:
            traceback.print_exception(error)
    refused = {"wrapper": target.spec, "mode": got, "message": why}
    return _show(args, envs, refused, message)


def _names_the_mode(error: Exception, mode: AutoresetMode) -> bool:
    """Whether ``error`` names ``mode`` (SameStep, SAME_STEP, same-step...) or
    the autoreset mode, or says nothing: what a class's own refusal says."""
    words = re.sub(r"(?<=[a-z])(?=[A-Z])", "[-_ ]?", mode.value)
    return bool(re.search(f"autoreset|{words}|^$", str(error), re.IGNORECASE))


def _show(
    args: argparse.Namespace,
    envs: VectorEnv | None,
    refused: dict[str, Any] | None = None,
    text: str = "",
) -> bool:
    """Print the report of ``envs``, or a refusal (``text``) and the stack before it."""
    report = None if envs is None else check_stack(envs, strict=args.strict)
    document = _document(report, refused, text)
    if args.json:
        common.print_json("check", document)
    elif refused is None:
        print(report)
    else:
        print(textwrap.fill(text, 88, subsequent_indent="  ", break_on_hyphens=False))
        if report is not None:
            print(f"\nThe stack built before it:\n{report}")
    return bool(document["ok"])


def _document(
    report: CompatibilityReport | None, refused: dict[str, Any] | None, text: str
) -> dict[str, Any]:
    """The ``check`` document of a report (None: no stack was built) or refusal."""
    layers = [
        {
            "index": position,
            "name": row.name,
            "origin": row.origin,
            "mode_in": row.mode_in,
            "supports": None
            if row.accepts is None
            else [mode for mode in MODES if mode in row.accepts],
            "mode_out": row.mode_out,
            "verdict": row.verdict,
            "note": row.note or None,
            "evidence": row.evidence,
            "evidence_note": row.evidence_note or None,
        }
        for position, row in enumerate(report or [])
    ]
    return {
        "ok": report is not None and report.ok and refused is None,
        "error": None,
        # what the verdicts rest on, not whether the stack is right (that is "ok");
        # after a refusal, not every layer asked for was built: not verified
        "evidence_verified": report is not None and report.verified and not refused,
        "mode": None if report is None else report.mode,
        "summary": text or (None if report is None else str(report).splitlines()[0]),
        "layers": layers,
        "refused": refused,
    }
