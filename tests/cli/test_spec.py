"""The names of wrappers and factories (``vecmode.cli.spec``), in-process: how a
spec parses, its literal values, its errors, and the suggestions for a name
that is not there."""

from __future__ import annotations

import functools

import gymnasium as gym
import pytest

import vecmode
from tests.cli.helpers import TARGETS, module_not_found
from vecmode.cli.common import EXIT_USAGE, CommandError
from vecmode.cli.spec import SpecError, Target, bind, literal, parse, pieces, resolve
from vecmode.errors import WRAP_FORMS


def test_wrapper_argument_values_are_python_literals_or_strings():
    names, kwargs = parse(
        "pkg.mod:Cls:a=0.9,b=(1, 2),c=CartPole-v1,d=None,e=-inf,f='x,y:z',g=[1,2],h=''"
    )
    assert parse("m:f:m=SameStep,k='03',u=rgb_array,t='true'")[1] == {
        "m": "SameStep",
        "k": "03",
        "u": "rgb_array",
        "t": "true",
    }
    assert names == ["pkg.mod", "Cls"]
    assert kwargs == {
        "a": 0.9,
        "b": (1, 2),
        "c": "CartPole-v1",
        "d": None,
        "e": float("-inf"),
        "f": "x,y:z",
        "g": [1, 2],
        "h": "",
    }


@pytest.mark.parametrize(
    ("spec", "names", "kwargs"),
    [
        ("ClipReward", ["ClipReward"], {}),
        ("gymnasium:NormalizeReward", ["gymnasium", "NormalizeReward"], {}),
        ("a.b:C.D", ["a.b", "C.D"], {}),
        ("NormalizeReward:gamma=0.9", ["NormalizeReward"], {"gamma": 0.9}),
        ("m:f:id=ns:Name-v0,n=2", ["m", "f"], {"id": "ns:Name-v0", "n": 2}),
        ("m:f: k = 1 ", ["m", "f"], {"k": 1}),
    ],
)
def test_a_spec_is_names_then_keyword_arguments(spec, names, kwargs):
    assert parse(spec) == (names, kwargs)


def test_pieces_split_at_commas_outside_brackets_and_quotes():
    assert pieces("a=1,b={'x': (1, 2)},c=[3, 4]") == [
        "a=1",
        "b={'x': (1, 2)}",
        "c=[3, 4]",
    ]
    assert pieces(r"a='it\'s, here',b=2") == [r"a='it\'s, here'", "b=2"]
    assert pieces('a="x]",b=1') == ['a="x]"', "b=1"]
    assert pieces("") == [""]


@pytest.mark.parametrize(
    ("text", "value"),
    [("1", 1), ("-2.5", -2.5), ("inf", float("inf")), ("+inf", float("inf")),
     ("True", True), ("'1'", "1"), ("x y", "x y"), ("(1,", "(1,"),
     ("{'k': [1]}", {"k": [1]}), ("1e-8", 1e-8)],
)  # fmt: skip
def test_literal_values_or_the_text_itself(text, value):
    assert literal(text) == value


def test_nan_is_a_float():
    value = literal("nan")
    assert isinstance(value, float) and value != value


LITERAL = (
    "is not a Python literal: write it as Python does (True, False, None, 3, 0.5), "
    "or quote it for text"
)


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ("ClipReward:min_reward=0,max_reward", "'max_reward' is not key=value"),
        ("ClipReward:1min=0", "'1min' is not an argument name"),
        ("NormalizeReward:gamma=0.9,gamma=0.5", "'gamma' given twice"),
        ("NormalizeReward:gamma=", "'gamma' has no value (write gamma='' for '')"),
        ("a.b:C:D:k=1", "more than module:Class before the arguments"),
        (":ClipReward", "a name is empty"),
        ("", "a name is empty"),
        ("my-module:Wrapper", "'my-module' is not a module path"),
        ("gymnasium:Clip-Reward", "'Clip-Reward' is not a name"),
        # text, where something else was meant: a string reached the wrapper
        (
            "NormalizeReward:gamma=0.9:epsilon=1e-8",
            "separate the arguments with commas: gamma=0.9,epsilon=1e-8",
        ),
        (
            "m:f:flag=false",
            "flag=false is not a Python literal: write it as Python does (True, "
            "False, None, 3, 0.5), or quote it for text (flag='false')",
        ),
        ("m:f:n=03", f"n=03 {LITERAL} (n='03')"),
        (
            "./my/envs.py:make:n=2",
            "'./my/envs.py' is a file path; name its module: my.envs:make (vecmode "
            "imports modules from the current directory too)",
        ),
        ("m:f:v=1.2.3", f"v=1.2.3 {LITERAL} (v='1.2.3')"),
        # an unclosed bracket or quote: passed on as text, the wrapper was blamed
        ("m:f:gamma=[0.9", f"gamma=[0.9 {LITERAL} (gamma='[0.9')"),
        ("m:f:shape=(3", f"shape=(3 {LITERAL} (shape='(3')"),
    ],
)
def test_a_spec_that_does_not_parse_says_what_is_wrong(spec, problem):
    with pytest.raises(SpecError) as caught:
        parse(spec)
    assert str(caught.value) == problem


def resolve_error(spec: str, option: str = "--wrap", **kwargs) -> str:
    """The usage error that resolving ``spec`` raises."""
    with pytest.raises(CommandError) as caught:
        resolve(spec, option, **kwargs)
    assert caught.value.code == EXIT_USAGE
    return str(caught.value)


def test_resolve_finds_what_each_form_names():
    assert resolve("ClipReward:min_reward=0", "--wrap") == Target(
        "ClipReward:min_reward=0",
        vecmode.wrappers.ClipReward,
        {"min_reward": 0},
        "ClipReward",
    )
    assert resolve("SameStepAutoreset", "--wrap").obj is vecmode.SameStepAutoreset
    found = resolve("gymnasium:NormalizeReward", "--wrap")
    assert found.obj is gym.wrappers.vector.NormalizeReward
    assert found.name == "gymnasium:NormalizeReward"
    found = resolve(f"{TARGETS}:clipped:high=2", "--wrap")
    assert (found.name, found.kwargs) == (f"{TARGETS}:clipped", {"high": 2})
    # a factory: gymnasium is a module, not the wrappers' namespace
    assert resolve("gymnasium:make_vec", "probe FACTORY", names=False).obj is (
        gym.make_vec
    )


def test_a_syntax_error_names_the_option_and_the_forms():
    assert resolve_error("NormalizeReward:gamma") == (
        f"bad --wrap 'NormalizeReward:gamma': 'gamma' is not key=value; "
        f"{WRAP_FORMS} (e.g. NormalizeReward:gamma=0.9)."
    )
    assert resolve_error("x-y:Z", "conform FACTORY").startswith(
        "bad conform FACTORY 'x-y:Z': 'x-y' is not a module path; write NAME"
    )
    also = "; a vector env's factory is module:function"
    assert resolve_error("x-y:Z", "conform FACTORY", also=also).endswith(
        f"(e.g. NormalizeReward:gamma=0.9){also}."
    )
    assert resolve_error("m:f:a=1:b=2", "probe FACTORY", names=False) == (
        "bad probe FACTORY 'm:f:a=1:b=2': separate the arguments with commas: "
        "a=1,b=2; write module:function, then :key=value,... (e.g. "
        "gymnasium:make_vec:id=CartPole-v1,num_envs=2)."
    )  # (not the wrappers' forms: a probe FACTORY names no wrapper)


def test_unknown_names_get_close_suggestions():
    assert resolve_error("NormaliseReward") == (
        "'NormaliseReward' is not a vecmode wrapper. Did you mean "
        "'NormalizeReward' or 'TransformReward' or 'ClipReward'? vecmode table lists the wrappers vecmode knows; "
        f"{WRAP_FORMS}."
    )
    assert "Did you mean 'ClipReward' or" in resolve_error("cliprewards")
    assert resolve_error("gymnasium:NormaliseReward") == (
        "gymnasium.wrappers.vector has no wrapper 'NormaliseReward'. Did you mean "
        "'gymnasium:NormalizeReward' or 'gymnasium:TransformReward' or "
        "'gymnasium:ClipReward'? vecmode table lists Gymnasium's vector "
        "wrappers."
    )
    assert resolve_error("gymnasium:FrameStackObservation") == (
        "gymnasium.wrappers.vector has no wrapper 'FrameStackObservation'. vecmode "
        "has one: write FrameStackObservation. vecmode table lists Gymnasium's "
        "vector wrappers."
    )
    assert resolve_error("vecmode.wrappers:NormalizeRewards") == (
        "module 'vecmode.wrappers' has no attribute 'NormalizeRewards'. Did you "
        "mean 'NormalizeReward' or 'TransformReward' or 'ClipReward'? Write "
        "module:attribute with the attribute's exact (case-sensitive) name."
    )


def test_nothing_close_is_no_suggestion():
    assert "Did you mean" not in resolve_error("Zzzzzz")
    # a module imported there ('np') is no suggestion for 'nop'
    assert resolve_error(f"{TARGETS}:nop") == (
        f"module {TARGETS!r} has no attribute 'nop'. Write module:attribute with "
        "the attribute's exact (case-sensitive) name."
    )


def test_a_module_that_is_not_there():
    assert resolve_error("no_such_mod_xyz.sub:W") == module_not_found(
        "no_such_mod_xyz.sub", "--wrap 'no_such_mod_xyz.sub:W'", "no_such_mod_xyz"
    )


def test_bind_checks_the_arguments_before_calling():
    target = resolve(f"{TARGETS}:clipped:high=2.5", "--wrap")
    thunk = bind(target, "env")
    assert isinstance(thunk, functools.partial)
    assert (thunk.func, thunk.args, thunk.keywords) == (
        target.obj,
        ("env",),
        {"high": 2.5},
    )
    target = resolve(f"{TARGETS}:clipped:low=0", "--wrap")
    with pytest.raises(CommandError, match=r"its arguments do not fit .*clipped\(env"):
        bind(target, "env")
    target = resolve(f"{TARGETS}:no_arguments", "--wrap")
    with pytest.raises(CommandError, match="takes no argument, but it is given the "):
        bind(target, "env")
    target = resolve(f"{TARGETS}:NOT_CALLABLE", "--wrap")
    with pytest.raises(CommandError, match="names int 3, which cannot be called"):
        bind(target, "env")
    target = resolve("gymnasium.wrappers:ClipReward", "--wrap")
    with pytest.raises(CommandError, match=r"a wrapper of a single gymnasium\.Env"):
        bind(target, "env")
