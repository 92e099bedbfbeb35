"""The names of wrappers and factories on the command line: ``NAME`` (a vecmode
wrapper), ``gymnasium:NAME`` (one of ``gymnasium.wrappers.vector``) or
``module:attr``, each optionally followed by ``:key=value,...``, keyword arguments
as Python literals (other text is a string)."""

from __future__ import annotations

import ast
import difflib
import functools
import inspect
import re
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import gymnasium.wrappers.vector as vector
from gymnasium.vector import VectorEnv, VectorWrapper

import vecmode
from vecmode.cli.common import CommandError, import_error, import_module
from vecmode.errors import WRAP_FORMS, did_you_mean

#: What :func:`pieces` looks at: a quoted string (to its end), a bracket, a comma.
TOKENS = re.compile(r"""'(?:\\.|[^'\\])*'?|"(?:\\.|[^"\\])*"?|[][(){},]""")


class SpecError(ValueError):
    """A spec that does not parse; the message says what is wrong in it."""


def pieces(text: str) -> list[str]:
    """``text`` split at its commas outside brackets and quotes."""
    found, depth, start = [], 0, 0
    for token in TOKENS.finditer(text):
        if token[0] == "," and depth == 0:
            found.append(text[start : token.start()])
            start = token.end()
        elif token[0] in "([{":
            depth += 1
        elif token[0] in ")]}":
            depth -= 1
    return [*found, text[start:]]


def literal(text: str) -> Any:
    """A Python literal, ``inf`` / ``nan`` as floats, else the text itself."""
    if text.lower() in ("inf", "+inf", "-inf", "nan"):
        return float(text)
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def parse(spec: str) -> tuple[list[str], dict[str, Any]]:
    """A spec's names (one, or module and attribute) and keyword arguments."""
    parts = spec.split(":")
    first = next((i for i, part in enumerate(parts) if "=" in part), len(parts))
    names, arguments = parts[:first], ":".join(parts[first:])
    if not names or not all(name.strip() for name in names):
        raise SpecError("a name is empty")
    if len(names) > 2:
        raise SpecError("more than module:Class before the arguments")
    if len(names) == 2:
        _check_module(*names)
    if not all(part.isidentifier() for part in names[-1].split(".")):
        raise SpecError(f"{names[-1]!r} is not a name")
    return names, _keywords(arguments) if arguments else {}


def _check_module(module: str, name: str) -> None:
    if module.endswith(".py") or "/" in module:
        dotted = module.removesuffix(".py").lstrip("./").replace("/", ".")
        raise SpecError(
            f"{module!r} is a file path; name its module: {dotted}:{name} "
            f"(vecmode imports modules from the current directory too)"
        )
    if not all(part.isidentifier() for part in module.split(".")):
        raise SpecError(f"{module!r} is not a module path")


def _keywords(text: str) -> dict[str, Any]:
    kwargs: dict[str, Any] = {}
    for piece in pieces(text):
        key, equals, value = (part.strip() for part in piece.partition("="))
        if not equals:
            raise SpecError(f"{piece!r} is not key=value")
        if not key.isidentifier():
            raise SpecError(f"{key!r} is not an argument name")
        if key in kwargs:
            raise SpecError(f"{key!r} given twice")
        if not value:  # '' would reach the class as a value
            raise SpecError(f"{key!r} has no value (write {key}='' for '')")
        kwargs[key] = literal(value)
        if kwargs[key] == value:  # neither a literal nor quoted: text, unless
            _meant_otherwise(key, value)
    return kwargs


def _meant_otherwise(key: str, value: str) -> None:
    """Refuse text that was likely meant as more arguments or as a literal."""
    if re.search(r":[A-Za-z_]\w*=", value):
        fixed = re.sub(r":(?=[A-Za-z_]\w*=)", ",", f"{key}={value}")
        raise SpecError(f"separate the arguments with commas: {fixed}")
    if re.fullmatch(r"(?i:true|false|none|null)|[+-]?\.?\d[\w.+-]*|[\[({'\"].*", value):
        raise SpecError(
            f"{key}={value} is not a Python literal: write it as Python does "
            f"(True, False, None, 3, 0.5), or quote it for text ({key}='{value}')"
        )


def close_names(name: str, candidates: list[str]) -> list[str]:
    """Up to three of ``candidates`` close to ``name``, ignoring case."""
    by_lower = {candidate.lower(): candidate for candidate in candidates}
    found = difflib.get_close_matches(name.lower(), list(by_lower), n=3, cutoff=0.6)
    return [by_lower[match] for match in found]


@dataclass(frozen=True)
class Target:
    """What a spec names: ``obj`` to call with ``kwargs``; ``name``: the spec's."""

    spec: str
    obj: Any
    kwargs: dict[str, Any]
    name: str


def vecmode_wrappers() -> dict[str, type]:
    """vecmode's wrapper classes by name: ``vecmode.wrappers``, then the policies."""
    found: dict[str, type] = {}
    for module in (vecmode.wrappers, vecmode):
        for name in module.__all__:
            obj = getattr(module, name, None)
            if isinstance(obj, type) and issubclass(obj, VectorWrapper):
                found.setdefault(name, obj)
    return found


def resolve(spec: str, option: str, *, names: bool = True, also: str = "") -> Target:
    """What ``spec``, given as ``option``, names, or a :class:`CommandError`;
    ``names``: ``NAME`` and ``gymnasium:NAME`` name wrappers; ``also``: the other
    forms ``option`` takes, for its syntax error."""
    known = vecmode_wrappers()
    try:
        parts, kwargs = parse(spec)
        if names and len(parts) == 2 and parts[0] in known:  # NAME:args, no "="
            raise SpecError(f"{parts[1]!r} is not key=value")
    except SpecError as error:
        forms = (
            f"{WRAP_FORMS} (e.g. NormalizeReward:gamma=0.9)"
            if names
            else "write module:function, then :key=value,... (e.g. "
            "gymnasium:make_vec:id=CartPole-v1,num_envs=2)"
        )
        raise CommandError(f"bad {option} {spec!r}: {error}; {forms}{also}.") from None
    if len(parts) == 1:
        obj = _vecmode_wrapper(parts[0], known)
    elif names and parts[0] == "gymnasium" and not callable(getattr(gym, parts[1], 0)):
        obj = _gymnasium_wrapper(parts[1], spec)
    else:
        obj = _attribute(parts[0], parts[1], f"{option} {spec!r}")
    return Target(spec, obj, kwargs, ":".join(parts))


def _vecmode_wrapper(name: str, known: dict[str, type]) -> type:
    if name in known:
        return known[name]
    also = (
        f" Gymnasium has one: write gymnasium:{name}."
        if name in vector.__all__
        else f" vecmode table lists the wrappers vecmode knows; {WRAP_FORMS}."
    )
    close = did_you_mean(close_names(name, list(known)))
    raise CommandError(f"{name!r} is not a vecmode wrapper.{close}{also}")


def _gymnasium_wrapper(name: str, spec: str) -> Any:
    known = [n for n in vector.__all__ if n[:1].isupper()]
    if name not in known:
        close = did_you_mean([f"gymnasium:{n}" for n in close_names(name, known)])
        if name in vecmode_wrappers():
            close = f" vecmode has one: write {name}."
        raise CommandError(
            f"gymnasium.wrappers.vector has no wrapper {name!r}.{close} vecmode "
            f"table lists Gymnasium's vector wrappers."
        )
    try:
        return getattr(vector, name)
    except (ImportError, gym.error.Error) as error:  # optional dependencies
        raise import_error(vector.__name__, repr(spec), error) from error


def _attribute(module: str, qualname: str, what: str) -> Any:
    target = import_module(module, what)
    for part in qualname.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            public = [  # what could be meant: not a module imported there
                n
                for n in dir(target)
                if not n.startswith("_")
                and not isinstance(getattr(target, n, None), types.ModuleType)
            ]
            close = did_you_mean(close_names(part, public))
            raise CommandError(
                f"module {module!r} has no attribute {qualname!r}.{close} Write "
                f"module:attribute with the attribute's exact (case-sensitive) name."
            ) from None
    return target


def bind(target: Target, *args: Any) -> Callable[..., Any]:
    """``target.obj(*args, **target.kwargs)``, once the arguments fit, as a thunk."""
    obj, spec = target.obj, target.spec
    if isinstance(obj, type) and issubclass(obj, gym.Wrapper):
        raise CommandError(
            f"{spec!r} is {obj.__module__}.{obj.__qualname__}, a wrapper of a single "
            f"gymnasium.Env, not of a vector env; use a vector wrapper (a vecmode "
            f"one, or gymnasium:NAME)."
        )
    if not callable(obj):
        raise CommandError(
            f"{spec!r} names {type(obj).__name__} {obj!r}, which cannot be called; "
            f"name a class or a function."
        )
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):  # builtins without one: let the call decide
        return functools.partial(obj, *args, **target.kwargs)
    try:
        signature.bind(*args, **target.kwargs)
    except TypeError as error:
        if args and _binds(signature, target.kwargs):  # no room for the env
            raise CommandError(
                f"{spec!r} takes no argument, but it is given the vector env to "
                f"wrap. Name a wrapper class or a function env -> wrapped env "
                f"(vecmode probe and conform take a factory of a vector env)."
            ) from None
        if not args and isinstance(obj, type) and issubclass(obj, VectorWrapper):
            raise CommandError(
                f"{spec!r} is a wrapper class, not a probe FACTORY: a function that "
                f"returns a vector env, given its key=value arguments only."
            ) from None
        raise CommandError(
            f"{spec!r}: its arguments do not fit {target.name}{signature}: "
            f"{_unfit(signature, target.kwargs, error)}. Give them as NAME:key=value,..."
        ) from None
    return functools.partial(obj, *args, **target.kwargs)


def _unfit(
    signature: inspect.Signature, kwargs: dict[str, Any], error: Exception
) -> str:
    """Python's message, naming an unknown key too where a missing one came first."""
    params, why = signature.parameters, str(error)
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        unknown = [key for key in kwargs if key not in params]
        if unknown and repr(unknown[0]) not in why:
            why += f"; and it has no argument {unknown[0]!r}"
    return why


def builds_vector_env(target: Target) -> bool:
    """Whether ``target`` builds a vector env rather than wrapping one: a vector
    env class that is no wrapper, or a function its key=values leave no argument."""
    obj, kwargs = target.obj, target.kwargs
    if isinstance(obj, type):
        return issubclass(obj, VectorEnv) and not issubclass(obj, VectorWrapper)
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):  # not callable, or no signature
        return False
    takes = signature.parameters  # (a misspelt key=value is told when bound)
    if all(p.kind is not p.VAR_KEYWORD for p in takes.values()):
        kwargs = {key: value for key, value in kwargs.items() if key in takes}
    return _binds(signature, kwargs)


def _binds(signature: inspect.Signature, kwargs: dict[str, Any]) -> bool:
    try:
        signature.bind(**kwargs)
    except TypeError:
        return False
    return True
