"""``vecmode conform``: prove a wrapper right in the modes it declares."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from gymnasium.vector import VectorEnv

from vecmode import testing
from vecmode.cli import common
from vecmode.cli.spec import Target, bind, resolve
from vecmode.errors import IncompatibleModeError
from vecmode.modes import MODES
from vecmode.registry import supported_modes

#: The options of the kit's test envs (None: the kit's default).
KINDS = ("obs_type", "action_type", "info_type")
#: The fields of a ``conform`` document that its report fills in.
REPORT_FIELDS = ("modes", "runs", "transitions", "batch_dependent", "limits")


def run(args: argparse.Namespace) -> bool:
    """Run ``check_wrapper`` on ``args.factory`` and print its report."""
    target = resolve(args.factory, "conform FACTORY")
    factory = _factory(target, args.modes)
    kinds = {k: getattr(args, k) for k in KINDS if getattr(args, k) is not None}
    unbuildable = _cannot_build(factory, kinds)
    if unbuildable is not None:
        message = common.cannot_build_message(target.spec, None, unbuildable)
        raise common.CommandError(message) from unbuildable
    compare = testing.episode_statistics if args.compare_info == "episode" else None
    proof = {"modes": args.modes, "bases": args.bases, "compare_info": compare}
    proof["env_infos"] = not args.no_env_infos
    if args.array_library is not None:
        proof["array_library"] = args.array_library
    try:
        report = testing.check_wrapper(factory, **kinds, **proof)
    except AssertionError as error:
        if args.json:
            common.print_json("conform", _document(target.spec, None, str(error)))
        else:
            print(f"NOT OK: {target.spec} does not conform\n\n{error}")
        return False
    except Exception as error:
        raise common.RaisedError(f"check_wrapper({target.spec})", error) from error
    if args.json:
        common.print_json("conform", _document(target.spec, report))
    else:
        print(report)
    return True


def _factory(target: Target, modes: list[Any] | None) -> Callable[[VectorEnv], Any]:
    """``env -> wrapped env``: the class, or a function ``Name(k=v, ...)``."""
    bind(target, None)  # an env comes first, then the key=values
    undeclared = isinstance(target.obj, type) and supported_modes(target.obj) is None
    if undeclared and not modes:  # (with key=values too: the class declares none)
        raise common.CommandError(
            f"{target.spec!r} declares no autoreset modes, so there is nothing "
            f"to prove: pass the modes to prove (--modes NextStep ...), or "
            f"declare them (@vecmode.supports, or vecmode.register)."
        )
    if not target.kwargs:
        return target.obj  # type: ignore[no-any-return]

    def factory(env: VectorEnv) -> Any:
        return target.obj(env, **target.kwargs)

    arguments = ", ".join(f"{key}={value!r}" for key, value in target.kwargs.items())
    name = f"{target.name.rpartition(':')[2]}({arguments})"
    factory.__name__ = factory.__qualname__ = name
    return factory


def _cannot_build(
    factory: Callable[[VectorEnv], Any], kinds: dict[str, Any]
) -> Exception | None:
    """What building ``factory`` on a test env raised if no mode builds, else None."""
    first: Exception | None = None
    base = testing.BASES["vecmode.SyncVectorEnv"]  # a class that cannot wrap refuses
    for mode in MODES:
        envs = base(testing.scheduled_env_fns(3, **kinds), mode)
        try:
            factory(envs).close()
            return None
        except IncompatibleModeError:
            pass
        except Exception as error:
            first = first or error
        envs.close()
    return first


def _document(spec: str, report: Any, failure: str | None = None) -> dict[str, Any]:
    """The ``conform`` document of a report, or (None) of a ``failure``."""
    document: dict[str, Any] = {
        "ok": report is not None,
        "error": None,
        "wrapper": spec,
    }
    document |= {"summary": getattr(report, "summary", None), "failure": failure}
    document |= {field: getattr(report, field, None) for field in REPORT_FIELDS}
    document["refused"] = None
    if report is not None:  # how: vecmode's refusal, or the class's own error
        how = report.refusals
        document["refused"] = {
            mode.value: how.get(mode, "IncompatibleModeError")
            for mode in report.refused
        }
    return document
