"""``vecmode conform``: prove a wrapper right in the modes it declares."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Collection, Mapping
from typing import Any

from gymnasium.vector import VectorEnv

from vecmode.autoreset import with_autoreset
from vecmode.cli.common import (
    WRAP_HELP,
    Command,
    CommandError,
    RaisedError,
    arg,
    cannot_build_message,
    mode_option,
    print_json,
)
from vecmode.cli.spec import Target, bind, resolve
from vecmode.errors import IncompatibleModeError
from vecmode.modes import MODES
from vecmode.registry import supported_modes
from vecmode.sync_vector_env import SyncVectorEnv

#: The fields of the ``conform`` document, in order.
FIELDS = ("ok", "error", "wrapper", "summary", "failure", "modes", "refused", "runs",
          "transitions", "batch_dependent", "limits")  # fmt: skip


def run(args: argparse.Namespace) -> bool:
    """Run ``check_wrapper`` on ``args.factory`` and print its report."""
    target = resolve(args.factory, "conform FACTORY")
    from vecmode.testing import (
        BASES,
        OBS_TYPES,
        check_wrapper,
        episode_statistics,
        scheduled_env_fns,
    )
    from vecmode.testing.envs import ACTION_TYPES, INFO_TYPES

    kinds = {"bases": BASES, "obs_type": OBS_TYPES, "action_type": ACTION_TYPES,
             "info_type": INFO_TYPES}  # fmt: skip
    options = _kit_options(args, kinds)
    factory = _factory(target, args.modes)
    unbuildable = _cannot_build(factory, options, scheduled_env_fns)
    if unbuildable is not None:
        message = cannot_build_message(target.spec, None, unbuildable)
        raise CommandError(message) from unbuildable
    if args.modes:
        options["modes"] = args.modes
    if args.compare_info == "episode":
        options["compare_info"] = episode_statistics
    if args.no_env_infos:
        options["env_infos"] = False
    try:
        report = check_wrapper(factory, **options)
    except AssertionError as error:
        if args.json:
            failure = {"ok": False, "wrapper": target.spec, "failure": str(error)}
            print_json("conform", {**dict.fromkeys(FIELDS), **failure})
        else:
            print(f"NOT OK: {target.spec} does not conform\n\n{error}")
        return False
    except Exception as error:
        raise RaisedError(f"check_wrapper({target.spec})", error) from error
    if args.json:
        print_json("conform", _document(target.spec, report))
    else:
        print(report)
    return True


def _kit_options(
    args: argparse.Namespace, kinds: Mapping[str, Collection[str]]
) -> dict[str, Any]:
    """``check_wrapper``'s bases and test envs, as given: each one of its kind's."""
    options = {k: getattr(args, k) for k in kinds if getattr(args, k) is not None}
    for kind, given in options.items():
        for value in given if kind == "bases" else [given]:
            if value not in kinds[kind]:
                raise CommandError(
                    f"--{kind.replace('_', '-')} {value!r} is not one of "
                    f"{', '.join(kinds[kind])}; pick one of them."
                )
    return options


def _factory(target: Target, modes: list[Any] | None) -> Callable[[VectorEnv], Any]:
    """``env -> wrapped env``: the class itself, or a function named
    ``Name(k=v, ...)`` that passes the arguments."""
    bind(target, None)  # an env comes first, then the key=values
    if not target.kwargs:
        if (
            not modes
            and isinstance(target.obj, type)
            and supported_modes(target.obj) is None
        ):
            raise CommandError(
                f"{target.spec!r} declares no autoreset modes, so there is nothing "
                f"to prove: pass the modes it should be right in (--modes NextStep "
                f"SameStep ...), or declare them (@vecmode.supports, or "
                f"vecmode.register for a class you don't own)."
            )
        return target.obj  # type: ignore[no-any-return]

    def factory(env: VectorEnv) -> Any:
        return target.obj(env, **target.kwargs)

    arguments = ", ".join(f"{key}={value!r}" for key, value in target.kwargs.items())
    name = f"{target.name.rpartition(':')[2]}({arguments})"
    factory.__name__ = factory.__qualname__ = name
    return factory


def _cannot_build(
    factory: Callable[[VectorEnv], Any],
    options: Mapping[str, Any],
    env_fns: Callable[..., Any],
) -> Exception | None:
    """What building ``factory`` over the kit's test env raises in each mode,
    if it builds in none (a bad argument, an env it cannot wrap); None if it
    builds in one, or only vecmode's registry refuses it."""
    kinds = {k: v for k, v in options.items() if k != "bases"}  # the test envs'
    first: Exception | None = None
    for mode in MODES:  # over vecmode's base: one it cannot be built over refuses
        envs = with_autoreset(SyncVectorEnv(env_fns(3, **kinds)), mode)
        try:
            factory(envs).close()
            return None
        except IncompatibleModeError:
            pass
        except Exception as error:
            first = first or error
        envs.close()
    return first


def _document(spec: str, report: Any) -> dict[str, Any]:
    """The ``conform`` document of a report."""
    return {
        "ok": True,
        "error": None,
        "wrapper": spec,
        "summary": report.summary,
        "failure": None,
        "modes": list(report.modes),
        "refused": {
            mode.value: report.refusals.get(mode, "IncompatibleModeError")
            for mode in report.refused
        },
        "runs": list(report.runs),
        "transitions": report.transitions,
        "batch_dependent": report.batch_dependent,
        "limits": list(report.limits),
    }


COMMAND = Command(
    "conform",
    "prove a wrapper right in the modes it declares (check_wrapper)",
    "Run vecmode.testing.check_wrapper on a wrapper: mode equivalence over "
    "deterministic test envs in every mode it declares, and refusal of the "
    "others.\n\n"
    "examples: vecmode conform NormalizeReward:gamma=0.9\n"
    "          vecmode conform my_package.wrappers:MyWrapper",
    (
        arg(
            "factory",
            metavar="FACTORY",
            help=WRAP_HELP + "; or module:function, a callable env -> wrapped env",
        ),
        arg(
            "--modes",
            type=mode_option,
            nargs="+",
            metavar="MODE",
            help="the modes to prove (default: the modes the wrapper declares)",
        ),
        arg(
            "--obs-type",
            help="the test envs' observations: box (default), dict, tuple, "
            "discrete, image",
        ),
        arg("--action-type", help="the test envs' actions: discrete (default), box"),
        arg("--info-type", help="the test envs' infos: numeric (default), rich"),
        arg(
            "--compare-info",
            choices=["episode", "none"],
            default="episode",
            help="what of the infos must agree across modes: episode, the episode "
            "statistics (info['episode'] return and length) where the wrapper "
            "writes them (default); none. The sub-envs' own infos are compared "
            "too, unless --no-env-infos",
        ),
        arg(
            "--bases",
            nargs="+",
            metavar="BASE",
            help="the base vector envs to run over (default: vecmode.SyncVectorEnv "
            "gymnasium.vector.SyncVectorEnv); vecmode.SyncVectorEnv alone for a "
            "wrapper that needs vecmode's core (NextStepAutoreset); "
            "vecmode.testing.DenseFinalObsVectorEnv, ALE's dense final "
            "observations, for an adapter of that layout",
        ),
        arg(
            "--no-env-infos",
            action="store_true",
            help="do not require the sub-envs' own infos to reach the caller (for "
            "a wrapper that removes or rewrites them on purpose)",
        ),
    ),
    run,
)
