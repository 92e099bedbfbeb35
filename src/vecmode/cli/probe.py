"""``vecmode probe``: which autoreset mode a vector env really runs in."""

from __future__ import annotations

import argparse

from vecmode.cli.common import CommandError, RaisedError, print_json
from vecmode.cli.spec import bind, resolve
from vecmode.errors import NotAVectorEnvError

EXAMPLE = "gymnasium:make_vec:id=CartPole-v1,num_envs=2"
#: The fields of the ``probe`` document read from the probe's result as they are.
FIELDS = (
    "mode",
    "declared",
    "agrees",
    "reason",
    "ended_at",
    "read_through",
    "final_observation",
    "resets_to",
)


def built_no_vector_env(
    what: str, spec: str, error: Exception, also: str = ""
) -> CommandError:
    """The usage error for ``spec`` (``what``) returning no vector env."""
    got = str(error).partition(", got ")[2].partition(";")[0] or "something else"
    return CommandError(
        f"{what} must build a vector env, but {spec} returned {got}. Name a "
        f"function returning one, with its arguments, e.g. {EXAMPLE}{also}."
    )


def run(args: argparse.Namespace) -> bool:
    """Probe the env ``args.factory`` builds and print what the probe found."""
    spec = args.factory
    if ":" not in spec:
        raise CommandError(
            f"probe FACTORY is module:function, a callable returning a vector env, "
            f"got {spec!r}; for an env id: vecmode probe {EXAMPLE}."
        )
    target = resolve(spec, "probe FACTORY", names=False)
    from vecmode.probe import probe_mode  # looked up at each run (the tests' fake)

    factory = bind(target)
    try:
        result = probe_mode(factory, max_steps=args.max_steps, seed=args.seed)
    except NotAVectorEnvError as error:  # the FACTORY given is not one
        raise built_no_vector_env("probe FACTORY", spec, error) from error
    except Exception as error:
        raise RaisedError(f"probing {spec}", error) from error
    ok = result.mode is not None and result.declared in (None, result.mode)
    if not args.json:
        print(result)
        if ok and result.declared is not None:  # a yes to one episode end only
            print(
                f"(one episode end checked: vecmode conform {spec} proves every call)"
            )
        return ok
    document = {"ok": ok, "error": None, "factory": spec}
    document |= {field: getattr(result, field) for field in FIELDS}
    rejected = {mode.value: str(diff) for mode, diff in result.rejected.items()}
    document |= {"ended": result.ended, "rejected": rejected, "summary": str(result)}
    print_json("probe", document)
    return ok
