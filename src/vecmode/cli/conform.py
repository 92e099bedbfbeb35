"""``vecmode conform``: prove a wrapper, or a vector env, right in the modes it
declares."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from gymnasium.vector import VectorEnv

from vecmode import errors, testing
from vecmode.cli import common
from vecmode.cli.probe import built_no_vector_env
from vecmode.cli.spec import Target, bind, builds_vector_env, resolve
from vecmode.errors import IncompatibleModeError, NotAVectorEnvError
from vecmode.modes import MODES
from vecmode.registry import supported_modes
from vecmode.testing.wrapper import schedules
from vecmode.testing.wrapper.events import ProofArgumentError

#: The options of the kit's test envs (None: the kit's default).
KINDS = ("obs_type", "action_type", "info_type")
#: The options of ``conform`` that only a wrapper takes.
WRAPPER_ONLY = (
    *KINDS,
    "modes",
    "compare_info",
    "bases",
    "no_env_infos",
    "array_library",
    "episodic",
)
#: How a function FACTORY was read, where that may be why it failed.
READ_AS_WRAPPER = (
    " conform took FACTORY for a wrapper, as its key=values leave it an argument "
    "(the env); a vector env's factory takes them all as key=values."
)
READ_AS_ENV = (
    " conform took FACTORY for a vector env's factory, as its key=values leave it "
    "no argument; a wrapper takes the env first, with no default."
)
#: The fields of a ``conform`` document read from the report (None: it has none).
REPORT_FIELDS = ("modes", "runs", "transitions", "batch_dependent", "limits", "checks")


def run(args: argparse.Namespace) -> bool:
    """Prove the wrapper or vector env ``args.factory`` names; print the report."""
    common.import_all(args.imports)
    also = "; a vector env's factory is module:function (or module:Class)"
    target = resolve(args.factory, "conform FACTORY", also=also)
    if builds_vector_env(target):
        _refuse(args, WRAPPER_ONLY, "builds a vector env", "a wrapper")
        return _prove_vector_env(target, args.steps or 300, args.json)
    _refuse(args, ("steps",), "is a wrapper", "a vector env")
    factory = _factory(target, args.modes)
    kinds = {k: getattr(args, k) for k in KINDS if getattr(args, k) is not None}
    unbuildable = _cannot_build(factory, kinds, args)
    if unbuildable is not None:
        message = common.cannot_build_message(target.spec, None, unbuildable)
        function = not isinstance(target.obj, type)
        raise common.CommandError(message + READ_AS_WRAPPER * function) from unbuildable
    compare = _compared(args.compare_info)
    proof = {"modes": args.modes, "bases": args.bases, "compare_info": compare}
    proof |= {"env_infos": not args.no_env_infos, "array_library": args.array_library}
    proof["episodic"] = args.episodic or None  # (None: its class attribute says)
    try:
        report = testing.check_wrapper(factory, **kinds, **proof)
    except ProofArgumentError as error:  # an option that does not fit it
        raise common.CommandError(str(error)) from error
    except Exception as error:
        if _verdict(error):
            return _show(args.json, target.spec, None, error)
        raise common.RaisedError(f"check_wrapper({target.spec})", error) from error
    if isinstance(compare, _InfoKey) and not compare.seen:
        raise common.CommandError(
            f"--compare-info {compare.key}: no info of the wrapper's had that key, "
            f"so nothing was compared. Check its spelling."
        )
    return _show(args.json, target.spec, report)


def _refuse(
    args: argparse.Namespace, options: tuple[str, ...], it: str, of: str
) -> None:
    """A usage error if any of ``options`` is given: FACTORY ``it`` (is a
    wrapper, builds a vector env), and those are for ``of`` only."""
    given = [f"--{name}".replace("_", "-") for name in options if vars(args)[name]]
    if given:
        many = len(given) > 1
        raise common.CommandError(
            f"{args.factory!r} {it}: {' and '.join(given)} "
            f"{'are' if many else 'is'} for {of} only; drop "
            f"{'them' if many else 'it'}."
        )


def _prove_vector_env(target: Target, steps: int, json: bool) -> bool:
    """Run ``check_vector_env`` on the env ``target`` builds and print its report."""
    factory, spec = bind(target), target.spec
    try:
        report = testing.check_vector_env(factory, steps=steps)
    except NotAVectorEnvError as error:
        what = "conform FACTORY, taking no env to wrap,"
        also = ", or a wrapper taking the env"
        raise built_no_vector_env(what, spec, error, also) from error
    except Exception as error:
        if _verdict(error):
            return _show(json, spec, None, error, env=True)
        read_as = READ_AS_ENV * (not isinstance(target.obj, type))  # a function
        raise common.RaisedError(f"check_vector_env({spec})", error, read_as) from error
    return _show(json, spec, report, env=True)


def _verdict(error: Exception) -> bool:
    """Whether ``error`` is a failed check, not vecmode refusing the stack (its
    EpisodeEndedError and InfoLayoutError are AssertionErrors too)."""
    refusals = (errors.EpisodeEndedError, errors.InfoLayoutError)
    return isinstance(error, AssertionError) and not isinstance(error, refusals)


def _show(
    json: bool,
    spec: str,
    report: Any,
    failure: Exception | None = None,
    env: bool = False,
) -> bool:
    """Print ``report``, or (None) ``failure``, of a wrapper or (``env``) of a
    vector env; whether it conforms."""
    if not json:
        print(report or f"NOT OK: {spec} does not conform\n\n{failure}")
        return report is not None
    document: dict[str, Any] = {"ok": report is not None, "error": None}
    document |= {"wrapper": None if env else spec, "env": spec if env else None}
    document["summary"] = getattr(report, "summary", None)
    document["failure"] = None if failure is None else str(failure)
    document["failed_property"] = getattr(failure, "property", None) or None
    document |= {field: getattr(report, field, None) for field in REPORT_FIELDS}
    document["refused"] = None
    if env and report is not None:
        document["modes"] = [report.mode]
    elif report is not None:  # how: vecmode's refusal, or the class's own error
        how = report.refusals
        document["refused"] = {
            mode.value: how.get(mode, "IncompatibleModeError")
            for mode in report.refused
        }
    common.print_json("conform", document)
    return report is not None


def _factory(target: Target, modes: list[Any] | None) -> Callable[[VectorEnv], Any]:
    """``env -> wrapped env``: the class, or a function ``Name(k=v, ...)``."""
    bind(target, None)  # an env comes first, then the key=values
    undeclared = isinstance(target.obj, type) and supported_modes(target.obj) is None
    if undeclared and not modes:  # (with key=values too: the class declares none)
        raise common.CommandError(
            f"{target.spec!r} declares no autoreset modes, so there is nothing "
            f"to prove: pass the modes to prove (--modes NextStep ...), or "
            f"declare them (@vecmode.supports, or vecmode.register: --import the "
            f"module that registers it)."
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
    factory: Callable[[VectorEnv], Any], kinds: dict[str, Any], args: argparse.Namespace
) -> Exception | None:
    """What building ``factory`` on a test env (the first of ``--bases``, or of
    ``--array-library``'s batches) raised if no mode builds, else None."""
    first: Exception | None = None
    kinds = {"num_envs": 3, "obs_type": "box", **kinds}
    kinds["array_library"] = args.array_library
    base = (args.bases or schedules.DEFAULT_BASES)[0]
    for mode in MODES:
        envs = schedules.base_env(base, mode, kinds)  # a class that cannot wrap refuses
        try:
            factory(envs).close()
            return None
        except (IncompatibleModeError, errors.ArrayLibraryError):
            pass  # (check_wrapper says why)
        except Exception as error:
            first = first or error
        envs.close()
    return first


def _compared(what: str | None) -> Callable[[dict[str, Any]], Any] | None:
    """``--compare-info``: the episode statistics (default), none, or a key's value."""
    if what is None or what == "episode":
        return testing.episode_statistics
    return None if what == "none" else _InfoKey(what)


class _InfoKey:
    """``--compare-info KEY``: ``info[KEY]``, noting whether any info had it."""

    def __init__(self, key: str) -> None:
        self.key, self.seen, self.label = key, False, f"info[{key!r}]"

    def __call__(self, info: dict[str, Any]) -> Any:
        self.seen = self.seen or self.key in info
        return info.get(self.key)
