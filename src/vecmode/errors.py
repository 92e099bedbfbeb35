"""vecmode's exceptions, and the messages several modules share."""

from __future__ import annotations

import contextlib
import copy
import functools
import multiprocessing
import pickle
import traceback
import types
import weakref
from collections.abc import Iterable
from typing import Any, ClassVar

from gymnasium import Env
from gymnasium.error import Error as GymnasiumError
from gymnasium.vector import AutoresetMode

__all__ = [
    "ActionBatchError",
    "ArrayLibraryError",
    "EnvIdError",
    "EpisodeEndedError",
    "IncompatibleModeError",
    "InfoBatchError",
    "InfoLayoutError",
    "NotAVectorEnvError",
    "NotAnEnvError",
    "NotPicklableError",
    "SeedError",
    "SharedMemorySpaceError",
    "SubEnvAttributeError",
    "SubEnvError",
    "UndeclaredModeWarning",
    "WorkerError",
    "WorkerTimeoutError",
]


class IncompatibleModeError(ValueError):
    """A wrapper (or a caller) cannot work with an env's autoreset mode."""


class ArrayLibraryError(TypeError):
    """A wrapper that reads NumPy was given torch or JAX batches (or the like)."""


class NotAVectorEnvError(TypeError):
    """A factory given to build a vector env returned something else."""


class NotAnEnvError(TypeError):
    """An ``env_fn`` returned no env (nothing with ``reset`` and ``step``)."""


class ActionBatchError(ValueError, TypeError):
    """The actions passed to ``step`` are not a batch of the action space."""


class SeedError(ValueError, TypeError, GymnasiumError):
    """``reset``'s ``seed`` is not an int >= 0, None, or ``num_envs`` of those."""


class EnvIdError(ValueError, GymnasiumError):
    """An env id that names no env the way Gymnasium writes them."""


class NotPicklableError(TypeError):
    """What a call sends to the sub-envs' processes does not pickle; none sent."""


class SharedMemorySpaceError(ValueError, TypeError):
    """An observation space cannot be held in shared memory."""


class InfoBatchError(ValueError, TypeError):
    """A sub-env's info cannot be batched with the others'."""


class InfoLayoutError(ValueError, TypeError, AssertionError):
    """Infos not in Gymnasium's batched layout (Gymnasium's wrappers assert it)."""


class UndeclaredModeWarning(UserWarning):
    """An env declares no ``metadata["autoreset_mode"]``; NEXT_STEP is assumed."""


class IncompatibleModeWarning(UserWarning):
    """A stack :func:`vecmode.check_stack` finds not ok was given to code that
    reads its transitions (``TransitionCollector``, ``to_sb3``)."""


class EpisodeEndedError(RuntimeError, AssertionError):
    """A sub-env whose episode ended (or whose state a failed call lost) was
    stepped before it was reset; nothing was stepped. Also an ``AssertionError``,
    as Gymnasium's sync env raises there.

    Attributes:
        indices: those sub-envs.
        lost: True when they lost their state in a failed call.
        unseen: True when they may await a reset step vecmode cannot see.
    """

    def __init__(
        self, indices: Iterable[int], *, lost: bool = False, unseen: bool = False
    ) -> None:
        self.indices: tuple[int, ...] = tuple(int(i) for i in indices)
        self.lost, self.unseen = lost, unseen
        which = ", ".join(str(i) for i in self.indices)
        super().__init__(
            f"sub-env(s) {which} lost their state in a call that failed (or was "
            f"interrupted) and must be reset before they are stepped again; nothing "
            f'was stepped. Reset them with env.reset(options={{"reset_mask": '
            f"env.unwrapped.awaiting_reset}})."
            if lost
            else f"sub-env(s) {which} may await the reset step of the NextStep env "
            f"they were converted from, which vecmode cannot see there (Gymnasium's "
            f"AsyncVectorEnv, ALE and EnvPool keep it inside), so they must be reset "
            f"before their first step; nothing was stepped. Call env.reset() first."
            if unseen
            else episode_ended(self.indices)
        )

    def __reduce__(self) -> tuple[Any, ...]:
        # rebuilt from its fields (the default would pass the message as indices)
        rebuild = functools.partial(
            EpisodeEndedError, lost=self.lost, unseen=self.unseen
        )
        return (rebuild, (self.indices,), self.__dict__)


class SubEnvError(RuntimeError):
    """A sub-env raised, in any vecmode core.

    Also an instance of the original exception's class where Python allows it
    (shown as ``SubEnvError[ValueError]``); the original is its ``__cause__``
    where it could cross the process. See docs/core.md.

    Attributes:
        index: the sub-env that raised.
        method: what it was doing (``"step"``, ``"reset"``, ``"env_fn"``, ...).
        exc_type: the name of the original exception's type.
        message: the original exception's message.
        worker_traceback: the traceback text.
        others: the other sub-envs that raised in the same call.
        lost: the sub-envs whose state the failed call lost.
    """

    #: The original exception's class this class also subclasses (None: plain).
    _original: ClassVar[type[Exception] | None] = None

    def __new__(cls, *args: Any, **kwargs: Any) -> SubEnvError:
        # an AttributeError known by name only still makes an AttributeError;
        # RuntimeError's __new__, never the original class's (later in the MRO)
        exc_type = args[2] if len(args) > 2 else kwargs.get("exc_type")
        if cls is SubEnvError and exc_type == "AttributeError":
            cls = SubEnvAttributeError
        return RuntimeError.__new__(cls, *args, **kwargs)

    def __init__(
        self,
        index: int,
        method: str,
        exc_type: str,
        message: str,
        worker_traceback: str,
        others: Iterable[int] = (),
        lost: Iterable[int] = (),
    ) -> None:
        self.lost: tuple[int, ...] = tuple(int(i) for i in lost)
        self.index = int(index)
        self.method = method
        self.exc_type = exc_type
        self.message = message
        self.worker_traceback = worker_traceback
        self.others: tuple[int, ...] = tuple(others)
        RuntimeError.__init__(self, sub_env_failed(*self._fields()))

    # defined here so that a dual class finds them before the original's own
    # (KeyError's __str__ quotes its argument)
    def __str__(self) -> str:
        return RuntimeError.__str__(self)

    def __repr__(self) -> str:
        return RuntimeError.__repr__(self)

    def _fields(self) -> tuple[Any, ...]:
        return (
            self.index,
            self.method,
            self.exc_type,
            self.message,
            self.worker_traceback,
            self.others,
            self.lost,
        )

    def __reduce__(self) -> tuple[Any, ...]:
        original = self._original
        try:  # pickling names the class (it cannot, for a class made in a function)
            pickle.dumps(original, pickle.HIGHEST_PROTOCOL)
        except Exception:
            original = None
        return (_unpickle_sub_env_error, (original, *self._fields()), self.__dict__)

    def __copy__(self) -> SubEnvError:
        error = _unpickle_sub_env_error(self._original, *self._fields())
        error.__dict__.update(self.__dict__)
        return error

    def __deepcopy__(self, memo: dict[int, Any]) -> SubEnvError:
        error = _unpickle_sub_env_error(self._original, *self._fields())
        memo[id(self)] = error
        error.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return error


class SubEnvAttributeError(SubEnvError, AttributeError):
    """A :class:`SubEnvError` whose sub-env raised ``AttributeError``: also one."""

    _original = AttributeError


#: The dual classes made so far, by original class (kept only while used).
_DUALS: weakref.WeakValueDictionary[type, type[SubEnvError]] = (
    weakref.WeakValueDictionary()
)
_DUALS[AttributeError] = SubEnvAttributeError
#: The original classes no dual class can be made for.
_NO_DUAL: weakref.WeakSet[type] = weakref.WeakSet()
#: The arguments each new dual class is tried with.
_PROBE = (7, "step", "ProbeError", "a probe", "Traceback: a probe\n", (8,), (7, 8))


def sub_env_error_class(original: type[BaseException] | None) -> type[SubEnvError]:
    """The :class:`SubEnvError` class for a sub-env's exception of class
    ``original``: a subclass of both where Python allows it, else SubEnvError."""
    if original is None or not issubclass(original, Exception):
        return SubEnvError  # (GeneratorExit, or a sub-env's KeyboardInterrupt)
    if issubclass(original, SubEnvError):  # a nested vecmode env's failure
        return sub_env_error_class(original._original)
    try:
        if issubclass(SubEnvError, original):  # RuntimeError, Exception: one already
            return SubEnvError
        found = _DUALS.get(original)
        if found is None and original not in _NO_DUAL:
            found = _DUALS.setdefault(original, _dual(original))
    except Exception:  # its dual cannot be made, or the class cannot be hashed
        with contextlib.suppress(Exception):
            _NO_DUAL.add(original)
        found = None
    return SubEnvError if found is None else found


def _dual(original: type[Exception]) -> type[SubEnvError]:
    """A subclass of SubEnvError and ``original`` that reads as a SubEnvError."""
    base = SubEnvAttributeError if issubclass(original, AttributeError) else SubEnvError
    name = base.__name__
    body = {
        "__module__": __name__,
        "__qualname__": f"{name}[{original.__name__}]",
        "__doc__": f"A {name} whose sub-env raised {original.__name__}: also one.",
        "_original": original,
    }
    dual = types.new_class(name, (base, original), exec_body=lambda ns: ns.update(body))
    error, plain = dual(*_PROBE), SubEnvError(*_PROBE)
    shown = "".join(traceback.format_exception_only(dual, error))
    same = (
        str(error) == str(plain)
        and error.args == plain.args
        and error._fields() == plain._fields()
        and isinstance(error, original)
        and shown.rstrip().endswith(str(plain).rstrip())
    )
    if not same:  # the original's properties in the way (a SyntaxError's, say)
        raise TypeError(f"{name}[{original.__name__}] does not read as a {name}")
    return dual


def sub_env_error(
    *fields: Any,
    cause: object = None,
    original_class: type[BaseException] | None = None,
) -> SubEnvError:
    """The :class:`SubEnvError` of ``fields`` (its arguments) for a sub-env's fault,
    of the class of ``cause`` (the original, also its ``__cause__``) or else
    ``original_class``."""
    original = type(cause) if isinstance(cause, BaseException) else original_class
    error = sub_env_error_class(original)(*fields)
    if isinstance(cause, BaseException):
        error.__cause__ = cause
    return error


def _unpickle_sub_env_error(
    original: type[BaseException] | None, *fields: Any
) -> SubEnvError:
    return sub_env_error_class(original)(*fields)


class WorkerError(RuntimeError):
    """A worker process (or Ray actor) died or cannot answer; only ``close()``
    still works.

    Attributes:
        lost: the sub-envs lost (empty when this only repeats it).
    """

    def __init__(self, message: str = "", lost: Iterable[int] = ()) -> None:
        self.lost: tuple[int, ...] = tuple(int(i) for i in lost)
        super().__init__(message)


class WorkerTimeoutError(WorkerError, multiprocessing.TimeoutError):
    """A call did not finish within ``timeout``; also a
    ``multiprocessing.TimeoutError``, as Gymnasium's ``AsyncVectorEnv`` raises."""


def describe(env: Any) -> str:
    """``repr(env)`` for a message, or its class name if its ``repr`` fails."""
    try:
        return repr(env)
    except Exception:
        return f"{type(env).__name__} object"


def short(value: Any) -> str:
    """``value``'s type and repr (cut at 80 characters) for a message."""
    text = describe(value)
    return f"{type(value).__name__} {text if len(text) <= 80 else text[:77] + '...'}"


#: What a sub-env's ``step`` / ``reset`` returns, for the error of one that does not.
RETURNS = {
    "step": "(obs, reward, terminated, truncated, info)",
    "reset": "(obs, info)",
}


def text_of(error: BaseException, method: str = "") -> str:
    """``str(error)`` (what Python's tracebacks show where that raises), saying
    what ``step`` / ``reset`` must return where its result could not be unpacked."""
    try:
        text = str(error)
    except Exception:
        return "<exception str() failed>"
    unpacked = isinstance(error, (TypeError, ValueError)) and "unpack" in text
    if method in RETURNS and unpacked:  # an old Gym API's env, say
        text += f": {method}() must return {RETURNS[method]}, Gymnasium's API"
    return text


def seeds_to_count(seed: Any, count: int, num_envs: int) -> str:
    """``reset``'s error for a list of ``count`` seeds, or an array not 1-d."""
    shape = getattr(seed, "shape", None)
    got = f"a {len(shape)}-d array {tuple(shape)}" if shape else f"a list of {count}"
    return (
        f"seed must be None, an int, or a list of {num_envs} seeds (one per "
        f"sub-env), got {got}."
    )


def mode_names(modes: Iterable[AutoresetMode]) -> str:
    wanted = set(modes)
    return ", ".join(mode.value for mode in AutoresetMode if mode in wanted)


def episode_ended(indices: tuple[int, ...]) -> str:
    which = ", ".join(str(i) for i in indices)
    return (
        f"sub-env(s) {which} ended their episode and must be reset before they are "
        f"stepped again; nothing was stepped. Reset them with "
        f'env.reset(options={{"reset_mask": mask}}) where mask[i] is True for the '
        f"ended sub-envs (terminations | truncations). To have episodes that end "
        f"from then on reset automatically, convert the env with "
        f"vecmode.with_autoreset(env, 'SameStep') (or 'NextStep', not over batched "
        f"envs)."
    )


def incompatible_mode(
    wrapper: str,
    got: AutoresetMode | None,
    accepts: Iterable[AutoresetMode],
    why: str,
    instead: str,
) -> str:
    got_text = "no declared mode" if got is None else f"mode {got.value}"
    accepts = list(accepts)
    if not accepts:  # (in no mode over this env)
        head = f"{wrapper} cannot wrap this env:"
    elif got is not None and got in accepts:  # the mode is fine, the env is not
        head = f"{wrapper} cannot wrap this env, although it supports its {got_text}:"
    else:
        head = (
            f"{wrapper} cannot wrap an env in {got_text}: it supports "
            f"{mode_names(accepts)}."
        )
    said = [
        p if p[-1] in ".!?" else f"{p}." for p in (why.strip(), instead.strip()) if p
    ]
    return " ".join([head, *said])  # a declaration's texts, as sentences


def not_array_native(wrapper: str, library: str, declared: bool, twin: str = "") -> str:
    """Why ``wrapper`` (array-native: not ``declared`` by the class itself, or
    not declared at all) may not take batches of ``library``, and what to do;
    ``twin``: vecmode's array-native wrapper of the same name, if any."""
    if library.startswith("jax"):
        convert = f"{wrapper}(vecmode.wrappers.JaxToNumpy(env))"
    else:
        root = library.partition(".")[0]
        convert = (
            f"{wrapper}(vecmode.wrappers.ArrayConversion(env, env_xp={root}, "
            f"target_xp=numpy))"
        )
    use = twin and f"{twin} instead (same arguments)"
    use = use or "an array-native wrapper instead (vecmode table lists them)"
    text = (
        f"its env returns {library} batches (metadata['array_namespace'] is "
        f"{library!r}) and {wrapper} is not array-native: it reads NumPy, so each "
        f"batch would be copied to the host, or fail. Use {use}, or convert the "
        f"batches first: {convert}."
    )
    if declared:
        return text
    return (
        f"{text} If {wrapper} does work on {library} arrays, on their device and "
        f"with no copy to NumPy, declare it: "
        f"@vecmode.supports(*vecmode.MODES, array_native=True) (the modes it "
        f"supports) or vecmode.register(..., array_native=True)."
    )


def convert_to(
    modes: Iterable[AutoresetMode], convertible: bool = True, wrapped: bool = False
) -> str:
    """What to do for an env in none of ``modes``; ``convertible``: whether its
    mode converts to another (not SameStep's, whose ended sub-envs are reset);
    ``wrapped``: they are reached from a vecmode core alone, and it is wrapped."""
    names = [repr(name) for name in mode_names(modes).split(", ")]
    first = names[0][1:-1]
    if convertible and wrapped:
        return (
            f"Build the env with autoreset_mode={first!r}, then wrap it: only a "
            f"vecmode core converts into {first}, and this env is wrapped."
        )
    if not convertible:
        return (
            f"Build the env with autoreset_mode={' or '.join(names)}: its mode "
            f"converts to no other (its ended sub-envs are already reset within "
            f"the step)."
        )
    return (
        f"Convert the env first, e.g. vecmode.with_autoreset(env, {first!r}), or build "
        f"it with autoreset_mode={first!r}."
    )


def timed_out_message(
    during: str,
    timeout: float | None,
    late: str,
    workers: str,
    ended: str,
    cause: str = "",
) -> str:
    """A remote call that timed out: ``late`` had not answered; ``ended``: what
    ``close()`` does to ``workers``; ``cause``: another reason at construction."""
    if during == "construction":
        remedy = (
            f"No env was built and {workers} were ended: {cause}if the sub-envs "
            f"build slowly, pass a larger timeout (building may take the larger of "
            f"timeout and 60 s)."
        )
    else:
        remedy = (
            f"{workers.capitalize()} may still be running it, so the env cannot be "
            f"used any more: close() it (which {ended} them) and build a new one, "
            f"with a larger timeout if the sub-envs are slow."
        )
    return (
        f"{during} did not finish within {timeout or 0.0:g} s ({late} had not "
        f"answered). {remedy}"
    )


def closed_during_message(during: str) -> str:
    return (
        f"the env was closed during {during} (from another thread, a signal "
        f"handler, or a sub-env stepped in this process); its results are lost"
    )


def set_attr_values(got: int, num_envs: int) -> str:
    return (
        f"values must be one value for every sub-env, or a list or tuple of "
        f"{num_envs} values (one per sub-env), got {got}."
    )


def action_batch_error(problem: str, num_envs: int) -> ActionBatchError:
    """What keeps actions from being a batch, and what to pass."""
    return ActionBatchError(
        f"{problem}; nothing was stepped. Pass one action per sub-env ({num_envs}), "
        f"structured like env.action_space (sample one with "
        f"env.action_space.sample())."
    )


def not_a_vector_env(caller: str, got: Any) -> str:
    what = type(got).__name__
    if isinstance(got, type):
        what = f"the class {got.__name__} (pass an instance)"
    elif isinstance(got, Env):
        what += ", one env (vecmode.make_vec(...) builds a vector env)"
    elif hasattr(got, "env_method") and hasattr(got, "step_wait"):
        what += (
            ", a Stable-Baselines3 VecEnv (SB3 takes it as it is; "
            "vecmode.sb3.from_sb3(venv) makes it a Gymnasium vector env)"
        )
    return (
        f"{caller} takes a gymnasium.vector.VectorEnv (or a stack of VectorWrappers "
        f"around one), got {what}."
    )


def sub_envs(indices: Iterable[int]) -> str:
    found = list(indices)
    if len(found) == 1:
        return f"sub-env {found[0]}"
    return f"sub-envs {found[0]}-{found[-1]}"


#: The ``method`` of a failed close of the sub-env built to read the spaces.
BUILDING_CLOSE = "close (at construction)"
UNCHANGED = "The env is unchanged and usable."
#: After a failed call, set_attr or each: how far it ran (by how it failed).
_RAN = {
    "get_attr": UNCHANGED,
    "unpickling": "Its worker's sub-envs ran none of it; nothing is undone, and "
    "the env is usable.",
    "": "The other sub-envs asked ran it; nothing is undone, and the env is usable.",
}
#: How :func:`sub_env_failed` names a call, and what to do ("": reset the lost).
_AFTER = {
    "env_fn": ("env_fn", "Fix the env_fn; nothing was left running."),
    BUILDING_CLOSE: (
        "close() of the copy built to read the spaces",
        "No env was built and nothing was left running; fix its close().",
    ),
    "close": ("close()", "The env is closed all the same, no process left."),
    "step": ("step()", ""),
    "reset": ("reset()", ""),
}


def sub_env_failed(
    index: int,
    method: str,
    exc_type: str,
    message: str,
    worker_traceback: str,
    others: tuple[int, ...] = (),
    lost: tuple[int, ...] = (),
) -> str:
    ran = _RAN[next(k for k in _RAN if method.startswith(k))]
    call, todo = _AFTER.get(method, (method, "" if lost else ran))
    said = f": {message}" if message else ""
    what = f"sub-env {index} raised {exc_type} in {call}{said}"
    if method == "env_fn":
        raised = "" if exc_type == NotAnEnvError.__name__ else f"raised {exc_type}: "
        what = f"sub-env {index}'s env_fn {raised}{message}"
    if not todo:  # the call's results are lost
        which = ", ".join(map(str, lost)) or "the sub-envs of the call"
        todo = (
            f"The call's results are lost: reset sub-env(s) {which} before they "
            f"are stepped again (reset(options={{'reset_mask': "
            f"envs.unwrapped.awaiting_reset}}))."
        )
    also = ""
    if others:
        also = f" Sub-env(s) {', '.join(map(str, others))} raised in the same call too."
    stop = "" if what.endswith((".", "!", "?")) else "."
    return f"{what}{stop}{also} {todo}\nSub-env traceback:\n{worker_traceback.rstrip()}"


def same_env_instance(groups: list[list[int]]) -> str:
    named = "; ".join(", ".join(map(str, group)) for group in groups)
    return (
        f"the env_fns returned the same env object for sub-envs {named}: a step "
        f"would step it once for each. Return a new env from each env_fn (e.g. lambda: "
        f"gym.make(...)); nothing was closed."
    )


WRAP_FORMS = (
    "write NAME (a vecmode wrapper), gymnasium:NAME (one of "
    "gymnasium.wrappers.vector) or module:Class, each optionally followed by "
    ":key=value,... for its arguments"
)


def did_you_mean(close: list[str]) -> str:
    names = " or ".join(repr(name) for name in close)
    return f" Did you mean {names}?" if close else ""


NO_ENV_FNS = "env_fns must hold at least one function that creates a sub-env."
