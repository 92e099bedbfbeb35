"""vecmode's exceptions and every message it raises, built in one place.

Tests and docs refer to these builders (and the exception classes) rather than
copying message text, the way dm_env's test mixin names its failure messages.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterable
from typing import Any

from gymnasium.vector import AutoresetMode

__all__ = [
    "ActionBatchError",
    "EpisodeEndedError",
    "IncompatibleModeError",
    "InfoLayoutError",
    "SharedMemorySpaceError",
    "SubEnvError",
    "UndeclaredModeWarning",
    "WorkerError",
    "WorkerTimeoutError",
]


class IncompatibleModeError(ValueError):
    """An env's autoreset mode is not one that a wrapper (or a caller) can work with.

    Raised when the wrapper is built, never later: vecmode refuses a mode it cannot
    serve exactly instead of approximating it. The message names the wrapper, the
    mode it got, the modes it accepts and what to do instead.
    """


class ActionBatchError(ValueError, TypeError):
    """The actions passed to ``step`` are not a batch of ``num_envs`` actions
    structured like the batched action space.

    Raised before any sub-env is stepped, so the env is unchanged and usable. It is
    both a ``ValueError`` and a ``TypeError``: Gymnasium's vector envs raise one or
    the other for the same mistakes (a ``TypeError`` for a scalar, a ``ValueError``
    for a wrong count), and code that catches either keeps working.
    """


class SharedMemorySpaceError(ValueError, TypeError):
    """An observation space cannot be held in shared memory
    (``AsyncVectorEnv(..., shared_memory=True)``); pass ``shared_memory=False``.

    Both a ``ValueError`` (what Gymnasium raises for a custom space) and a
    ``TypeError`` (what it raises for a space of dynamic shape: Graph, Text,
    Sequence, OneOf), so code that catches Gymnasium's type keeps working.
    """


class InfoLayoutError(ValueError, AssertionError):
    """An info dict is not Gymnasium's batched layout (one entry per sub-env,
    ``_key`` masks of ``num_envs`` flags).

    Also an ``AssertionError``, what Gymnasium's ``DictInfoToList`` raises for the
    same input, so code that catches Gymnasium's type keeps working; unlike a bare
    ``assert``, vecmode raises it under ``python -O`` too.
    """


class UndeclaredModeWarning(UserWarning):
    """An env declares no ``metadata["autoreset_mode"]``; NEXT_STEP is assumed.

    Gymnasium assumes NEXT_STEP for such an env, and so do vecmode's checks, with
    this warning. Under :func:`vecmode.strict` it is an
    :class:`IncompatibleModeError` instead.
    """


class EpisodeEndedError(RuntimeError):
    """A sub-env whose episode ended was stepped before it was reset.

    In DISABLED mode the caller resets ended sub-envs with
    ``reset(options={"reset_mask": mask})``. The check runs before any sub-env is
    stepped, so the env is unchanged and usable after the error.

    Attributes:
        indices: the indices of the ended sub-envs that were asked to step.
    """

    def __init__(self, indices: Iterable[int]) -> None:
        self.indices: tuple[int, ...] = tuple(int(i) for i in indices)
        super().__init__(episode_ended(self.indices))


class SubEnvError(RuntimeError):
    """A sub-env raised inside a worker process of :class:`vecmode.AsyncVectorEnv`.

    Raised in the parent process, naming the sub-env and carrying the worker's
    traceback text. The original exception is chained as ``__cause__`` when it can
    be pickled. After a failed ``step``/``reset``/``execute`` every sub-env awaits
    a reset (the call's results are lost, so no episode can go on); the workers are
    alive and the env stays usable once reset. After a failed ``call``,
    ``get_attr`` or ``set_attr`` nothing changes.

    Attributes:
        index: the sub-env that raised.
        method: what it was doing (``"step"``, ``"reset"``, ``"env_fn"``, ...).
        exc_type: the name of the original exception's type.
        worker_traceback: the traceback text from the worker process.
    """

    def __init__(
        self,
        index: int,
        method: str,
        exc_type: str,
        message: str,
        worker_traceback: str,
        others: Iterable[int] = (),
    ) -> None:
        self.index = int(index)
        self.method = method
        self.exc_type = exc_type
        self.worker_traceback = worker_traceback
        self.others: tuple[int, ...] = tuple(others)
        super().__init__(
            sub_env_failed(
                self.index, method, exc_type, message, worker_traceback, self.others
            )
        )


class WorkerError(RuntimeError):
    """A worker process of :class:`vecmode.AsyncVectorEnv` died or cannot answer.

    The env cannot be used after it (its sub-envs are lost or out of step); every
    later call raises this error again. ``close()`` still works and leaves no
    process behind; build a new env to go on.
    """


class WorkerTimeoutError(WorkerError, multiprocessing.TimeoutError):
    """A call to :class:`vecmode.AsyncVectorEnv` did not finish within ``timeout``.

    Also a ``multiprocessing.TimeoutError``, what Gymnasium's ``AsyncVectorEnv``
    raises. Like every :class:`WorkerError` it leaves the env unusable (the workers
    may still be running the call): ``close()`` terminates them.
    """


def describe(env: Any) -> str:
    """``repr(env)`` for a message, or its class name if its ``repr`` fails (an env
    that is still being built, say, has no ``num_envs`` yet)."""
    try:
        return repr(env)
    except Exception:
        return f"{type(env).__name__} object"


def _mode_names(modes: Iterable[AutoresetMode]) -> str:
    wanted = set(modes)
    return ", ".join(mode.value for mode in AutoresetMode if mode in wanted)


def not_a_mode(value: Any) -> str:
    return (
        f"{value!r} is not an autoreset mode; use one of "
        + ", ".join(f"AutoresetMode.{mode.name}" for mode in AutoresetMode)
        + " or their values "
        + ", ".join(repr(mode.value) for mode in AutoresetMode)
        + "."
    )


def episode_ended(indices: tuple[int, ...]) -> str:
    which = ", ".join(str(i) for i in indices)
    return (
        f"sub-env(s) {which} ended their episode and must be reset before they are "
        f"stepped again; nothing was stepped. In DISABLED mode reset them with "
        f'env.reset(options={{"reset_mask": mask}}) where mask[i] is True for the '
        f"ended sub-envs (terminations | truncations), or wrap the env with "
        f"vecmode.NextStepAutoreset / vecmode.SameStepAutoreset to reset them "
        f"automatically."
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
    if got is not None and got in accepts:  # the mode is fine, the env is not
        head = f"{wrapper} cannot wrap this env, although it supports its {got_text}:"
    else:
        head = (
            f"{wrapper} cannot wrap an env in {got_text}: it supports "
            f"{_mode_names(accepts)}."
        )
    return " ".join(part for part in (head, why, instead) if part)


def mode_required(who: str, got: AutoresetMode, wanted: Iterable[AutoresetMode]) -> str:
    return (
        f"{who} needs a vector env in {_mode_names(wanted)}, got one in {got.value}. "
        f"{convert_to(wanted)}"
    )


def known_wrong(mode: AutoresetMode, what: str) -> str:
    return f"It accepts {mode.value} but is known to be wrong there: {what}"


def use_supported_modes(modes: Iterable[AutoresetMode]) -> str:
    names = _mode_names(modes)
    first = names.split(", ")[0]
    return (
        f"Build the vector env in {names} (e.g. vecmode.make_vec(..., "
        f"autoreset_mode={first!r}), or vecmode.with_autoreset(env, {first!r})), or "
        f"use a wrapper that supports the env's mode."
    )


def use_vecmode_wrapper(name: str, modes: Iterable[AutoresetMode]) -> str:
    return (
        f"Use vecmode.wrappers.{name} instead (same arguments, right in every mode), "
        f"or build the vector env in {_mode_names(modes)}."
    )


def convert_to(modes: Iterable[AutoresetMode]) -> str:
    first = _mode_names(modes).split(", ")[0]
    return (
        f"Convert the env first, e.g. vecmode.with_autoreset(env, {first!r}), or build "
        f"it with autoreset_mode={first!r}."
    )


def undeclared_mode(who: str, env: Any, strict: bool, assumed: AutoresetMode) -> str:
    consequence = (
        "vecmode.strict() is on, so this is an error"
        if strict
        else f"assuming {assumed.value} (Gymnasium's convention)"
    )
    return (
        f"{who}: {describe(env)} declares no metadata['autoreset_mode']; {consequence}. "
        f"Set metadata['autoreset_mode'] to the gymnasium.vector.AutoresetMode the "
        f"env really uses."
    )


def undeclared_policy(name: str) -> str:
    return (
        f"{name} is an autoreset policy but declares no output mode; decorate it with "
        f"@vecmode.supports(..., output=<the mode it produces>)."
    )


def no_modes_declared() -> str:
    return (
        "declare at least one mode: NextStep, SameStep or Disabled "
        "(AutoresetMode values or their strings)."
    )


def declared_both_ways(modes: Iterable[AutoresetMode]) -> str:
    return (
        f"{_mode_names(modes)} cannot be both supported and silently wrong; list each "
        f"mode in modes or in wrong, not both."
    )


def not_a_wrapper_class(caller: str, got: Any) -> str:
    return (
        f"{caller} takes a subclass of gymnasium.vector.VectorWrapper, got {got!r}; "
        f"declare the wrapper class itself (not an instance)."
    )


def not_a_vector_env(caller: str, got: Any) -> str:
    return (
        f"{caller} takes a gymnasium.vector.VectorEnv (or a stack of VectorWrappers "
        f"around one), got {type(got).__name__}."
    )


def class_path(got: str) -> str:
    return (
        f"{got!r} is not a class path; write 'package.module:ClassName' "
        f"(e.g. 'gymnasium.wrappers.vector:NormalizeReward')."
    )


def report_undeclared_env(assumed: AutoresetMode) -> str:
    return (
        f"declares no metadata['autoreset_mode']; {assumed.value} assumed "
        f"(Gymnasium's convention)"
    )


def report_undeclared_wrapper(name: str) -> str:
    return (
        f"no modes declared for {name}; declare them with @vecmode.supports or "
        f"vecmode.register"
    )


def report_refused(name: str) -> str:
    return f"{name} does not declare this mode"


def report_mismatch(declared: AutoresetMode, expected: AutoresetMode) -> str:
    return (
        f"its metadata['autoreset_mode'] is {declared.value}, but its declaration "
        f"and the layers below give {expected.value}"
    )


def stack_not_compatible(table: str) -> str:
    return f"this vector env stack is not compatible with its autoreset mode:\n{table}"


def seeds_length(got: int, num_envs: int) -> str:
    return (
        f"seed must be None, an int, or a list of {num_envs} seeds (one per sub-env), "
        f"got a list of {got}."
    )


def commands_shape(shape: tuple[int, ...], num_envs: int) -> str:
    return (
        f"commands must be a sequence of {num_envs} vecmode.Command values (one per "
        f"sub-env), got shape {shape}."
    )


def unknown_command(value: Any) -> str:
    return (
        f"{value!r} is not a vecmode.Command; use Command.KEEP, Command.STEP, "
        f"Command.RESET or Command.STEP_THEN_RESET."
    )


def infos_not_dict(who: str, got: Any) -> str:
    return (
        f"{who} needs the wrapped env's infos as Gymnasium's batched dict, got "
        f"{type(got).__name__}. A DictInfoToList wrapper (or similar) is probably "
        f"inside it: make DictInfoToList the outermost wrapper."
    )


def final_obs_missing(who: str, indices: list[int]) -> str:
    subs = ", ".join(str(i) for i in indices)
    return (
        f"{who}: sub-env(s) {subs} ended in a SAME_STEP env but info['final_obs'] / "
        f"info['_final_obs'] does not hold their final observation. The env (or a "
        f"wrapper under {who}) does not follow Gymnasium's SAME_STEP contract; check "
        f"it with vecmode.check(env) and declare its real mode."
    )


def opencv_missing() -> str:
    return (
        "ResizeObservation needs OpenCV, which is not installed: run "
        'pip install "vecmode[opencv]" (or pip install opencv-python-headless).'
    )


def needs_box(who: str, space: Any) -> str:
    return (
        f"{who} needs a Box single observation space, got {space}. Flatten the "
        f"observations first (vecmode.wrappers.FlattenObservation) or normalise "
        f"the Box parts yourself."
    )


def not_stackable(space: Any, leaf: Any) -> str:
    return (
        f"FrameStackObservation cannot stack observations of {space}: {leaf} is not "
        f"a Box, Discrete, MultiDiscrete or MultiBinary space (nor a Dict / Tuple of "
        f"them). Transform the observations into such a space first."
    )


def padding_type(value: Any, space: Any) -> str:
    return (
        f"Unexpected `padding_type` {value!r}: use 'reset', 'zero', or an "
        f"observation of the env's single observation space ({space})."
    )


def running_stats_batch(
    got: tuple[int, ...], shape: tuple[int, ...], var_shape: tuple[int, ...]
) -> str:
    if var_shape != shape:
        return (
            f"RunningMeanStd.update: mean has shape {shape} but var has shape "
            f"{var_shape}; set both to arrays of the statistic's shape."
        )
    wanted = "(n, " + ", ".join(map(str, shape)) + ")" if shape else "(n,)"
    return (
        f"RunningMeanStd.update takes a batch of values of shape {shape}: an array "
        f"of shape {wanted}, one value per row; got an array of shape {got}."
    )


def clip_bound(name: str, value: Any) -> str:
    return (
        f"`{name}` should be a number >= 0 (observations or rewards are clipped to "
        f"[-{name}, {name}]; inf for no clipping). Received {value!r}"
    )


def stats_key_taken(key: str, keys: list[str]) -> str:
    return (
        f"RecordEpisodeStatistics cannot add episode statistics under info[{key!r}]: "
        f"the key is already in the info ({keys}). Pass another stats_key."
    )


def info_length(key: str, got: Any, num_envs: int) -> str:
    return (
        f"info[{key!r}] has {got} entries where the env has {num_envs} sub-envs; "
        f"batched infos hold one entry per sub-env (Gymnasium's VectorEnv._add_info "
        f"builds them that way)."
    )


# ------------------------------------------------------------ the async core
def _sub_envs(indices: Iterable[int]) -> str:
    found = list(indices)
    if len(found) == 1:
        return f"sub-env {found[0]}"
    return f"sub-envs {found[0]}-{found[-1]}"


def sub_env_failed(
    index: int,
    method: str,
    exc_type: str,
    message: str,
    worker_traceback: str,
    others: tuple[int, ...] = (),
) -> str:
    if method == "env_fn":
        what = f"sub-env {index}'s env_fn raised {exc_type}: {message}"
        todo = "Fix the env_fn; no worker process was left running."
    elif method in ("step", "reset") or method.startswith("pickling"):
        call = f"{method}()" if method in ("step", "reset") else method
        what = f"sub-env {index} raised {exc_type} in {call}: {message}"
        todo = (
            "The call's results are lost, so every sub-env now awaits a reset: "
            "call reset() (or reset the sub-envs with a reset_mask) to go on, or "
            "close() the env."
        )
    else:
        what = f"sub-env {index} raised {exc_type} in {method}: {message}"
        todo = "The env is unchanged and usable."
    also = (
        f" Sub-env(s) {', '.join(map(str, others))} raised in the same call too."
        if others
        else ""
    )
    return f"{what}.{also} {todo}\nWorker traceback:\n{worker_traceback.rstrip()}"


def worker_died(
    worker: int, indices: Iterable[int], exitcode: int | None, during: str
) -> str:
    code = "" if exitcode is None else f" with exit code {exitcode}"
    signal_note = (
        f" (killed by signal {-exitcode})"
        if exitcode is not None and exitcode < 0
        else ""
    )
    return (
        f"worker process {worker} ({_sub_envs(indices)}) died{code}{signal_note} "
        f"during {during}. Its sub-envs are lost, so the env cannot be used any "
        f"more: close() it and build a new one."
    )


def call_timed_out(during: str, timeout: float, workers: Iterable[int]) -> str:
    return (
        f"{during} did not finish within timeout={timeout} s (worker(s) "
        f"{', '.join(map(str, workers))} had not answered). The workers may still be "
        f"running it, so the env cannot be used any more: close() it (which "
        f"terminates them) and build a new one, with a larger timeout if the "
        f"sub-envs are slow."
    )


def env_unusable(reason: str) -> str:
    return f"this AsyncVectorEnv cannot be used any more: {reason}"


def env_closed(name: str) -> str:
    return f"{name} was closed; build a new env to go on."


def already_pending(what: str, pending: str) -> str:
    # Gymnasium's wording first (code and tests match it), then what to do
    return (
        f"Calling `{what}` while waiting for a pending call to `{pending}` to "
        f"complete; call {pending}_wait() first."
    )


def nothing_pending(what: str, pending: str | None) -> str:
    had = f" (the pending call is {pending}_async())" if pending else ""
    return f"Calling `{what}_wait` without any prior call to `{what}_async`.{had}"


def forbidden_call(name: str) -> str:
    return (
        f"call({name!r}) would run {name} behind the vector env's back; use the "
        f"env's own {name}() instead."
    )


def num_workers(value: Any) -> str:
    return f"num_workers must be None or an int >= 1, got {value!r}."


def no_env_fns() -> str:
    return "env_fns must hold at least one function that creates a sub-env."


def set_attr_values(got: int, num_envs: int) -> str:
    return (
        f"values must be one value for every sub-env, or a list or tuple of "
        f"{num_envs} values (one per sub-env), got {got}."
    )


def unpicklable_env_fns(start: int, stop: int, method: str, exc: BaseException) -> str:
    return (
        f"could not start the worker of {_sub_envs(range(start, stop))} with the "
        f"{method!r} start method: {type(exc).__name__}: {exc}. With 'spawn' and "
        f"'forkserver' the env_fns are pickled (by cloudpickle): make them and the "
        f"env classes they use importable and picklable, or use context='fork'."
    )


def in_parent(got: Any, num_envs: int) -> str:
    return (
        f"in_parent must be an int from 0 to {num_envs - 1} (the number of sub-envs "
        f"the parent process steps itself; at least one sub-env runs in a worker), "
        f"got {got!r}."
    )


# ------ transition collector
def collector_not_reset() -> str:
    return (
        "TransitionCollector.step() was called before reset(): call "
        "collector.reset(seed=...) first, so that the collector knows the "
        "observations the first actions are taken in."
    )


def collector_masked_reset_first() -> str:
    return (
        'TransitionCollector.reset(options={"reset_mask": mask}) needs a full '
        "reset() first: until then the other sub-envs' observations are unknown. "
        "Call collector.reset(seed=...) without a mask."
    )


def collector_call_failed(call: str) -> str:
    return (
        f"the env raised during the TransitionCollector's last {call}(), after it "
        f"had started, so what the sub-envs hold now is unknown and stepping on "
        f"could lose or invent transitions; call collector.reset() to go on."
    )


# ------------------------------------------------- conformance kit (check_wrapper)
def conformance_factory(got: Any) -> str:
    return (
        f"check_wrapper needs a wrapper class or a callable env -> wrapped env, "
        f"got {got!r}; e.g. check_wrapper(MyWrapper) or "
        f"check_wrapper(lambda env: MyWrapper(env, k=3))"
    )


def conformance_not_a_vector_env(who: str, got: Any) -> str:
    return (
        f"check_wrapper({who}): the factory returned {type(got).__name__}, not a "
        f"gymnasium.vector.VectorEnv; it must return the wrapped vector env"
    )


def conformance_count(name: str, got: Any, least: int) -> str:
    return f"check_wrapper: {name} must be an int >= {least}, got {got!r}"


def conformance_undeclared(who: str) -> str:
    return (
        f"check_wrapper({who}): the wrapper declares no autoreset modes, so there "
        f"is nothing to prove; declare them with @vecmode.supports(...) (or "
        f"vecmode.register for a class you don't own), or pass modes=[...]"
    )


def conformance_no_modes(who: str) -> str:
    return (
        f"check_wrapper({who}): no mode to prove (modes=[] or a declaration with "
        f"no supported mode)"
    )


# ------ command line
_WRAP_FORMS = (
    "write NAME (a vecmode wrapper), gymnasium:NAME (one of "
    "gymnasium.wrappers.vector) or module:Class, each optionally followed by "
    ":key=value,... for its arguments"
)


def _did_you_mean(close: list[str]) -> str:
    return (
        f" Did you mean {' or '.join(repr(name) for name in close)}?" if close else ""
    )


def cli_cannot_make(env_id: str, error: BaseException, unregistered: bool) -> str:
    hint = (
        " List the registered ids with python -c 'import gymnasium; "
        "gymnasium.pprint_registry()'; write an id another package registers as "
        "'package.module:Name-v0'."
        if unregistered
        else ""
    )
    return f"cannot make {env_id!r}: {error}{hint}"


def cli_module_not_found(module: str, what: str, missing: str) -> str:
    return (
        f"cannot import module {module!r} for {what}: no module named {missing!r}. "
        f"Check the spelling, that it is installed in this Python, or run vecmode "
        f"from the directory that holds it (or add that directory to PYTHONPATH)."
    )


def cli_import_failed(module: str, what: str, error: BaseException) -> str:
    return (
        f"importing module {module!r} for {what} raised {type(error).__name__}: "
        f"{str(error).rstrip('.')}. Fix the module (python -c 'import {module}' shows where), or "
        f"rerun with --traceback."
    )


def cli_missing_attribute(module: str, name: str, close: list[str]) -> str:
    return (
        f"module {module!r} has no attribute {name!r}.{_did_you_mean(close)} Write "
        f"module:attribute with the attribute's exact (case-sensitive) name."
    )


def cli_unknown_wrapper(name: str, close: list[str], gymnasium_has_it: bool) -> str:
    also = (
        f" Gymnasium has one: write gymnasium:{name}."
        if gymnasium_has_it
        else f" vecmode table lists the wrappers vecmode knows; {_WRAP_FORMS}."
    )
    return f"{name!r} is not a vecmode wrapper.{_did_you_mean(close)}{also}"


def cli_unknown_gymnasium_wrapper(name: str, close: list[str]) -> str:
    prefixed = [f"gymnasium:{n}" for n in close]
    return (
        f"gymnasium.wrappers.vector has no wrapper {name!r}.{_did_you_mean(prefixed)}"
        f" vecmode table lists Gymnasium's vector wrappers."
    )


def cli_spec_syntax(option: str, spec: str, problem: str) -> str:
    return f"bad {option} {spec!r}: {problem}; {_WRAP_FORMS} (e.g. NormalizeReward:gamma=0.9)."


def cli_not_a_path(command: str, got: str, what: str) -> str:
    return (
        f"vecmode {command} takes module:name, the import path of {what}, got "
        f"{got!r}; e.g. vecmode {command} my_package.my_module:make_envs (for a "
        f"registered env id: vecmode {command} gymnasium:make_vec:id=CartPole-v1)."
    )


def cli_wrapper_arguments(spec: str, signature: str, error: BaseException) -> str:
    return (
        f"{spec!r}: its arguments do not fit {signature}: {error}. Give them as "
        f"NAME:key=value,... (values are Python literals; other text is a string)."
    )


def cli_single_env_wrapper(spec: str, cls: type) -> str:
    return (
        f"{spec!r} is {cls.__module__}.{cls.__qualname__}, a wrapper of a single "
        f"gymnasium.Env, not of a vector env; use a vector wrapper (vecmode's "
        f"wrappers, or gymnasium:NAME for gymnasium.wrappers.vector)."
    )


def cli_not_a_vector_env(spec: str, got: Any) -> str:
    return (
        f"{spec!r} returned {type(got).__name__}, not a gymnasium.vector.VectorEnv; "
        f"a --wrap must name a vector wrapper class, or a callable that takes the "
        f"vector env and returns the wrapped one."
    )


def cli_wrapper_refused(spec: str, mode: AutoresetMode | None, error: Exception) -> str:
    got = (
        "an env that declares no mode" if mode is None else f"the stack in {mode.value}"
    )
    if isinstance(error, IncompatibleModeError):
        return f"NOT OK: {spec!r} refused to wrap {got}: {error}"
    return (
        f"NOT OK: {spec!r} raised {type(error).__name__} when built on {got}: {error}"
    )


def cli_raised(what: str, error: BaseException) -> str:
    return (
        f"{what} raised {type(error).__name__}: {str(error).rstrip('.')} (rerun with "
        f"--traceback to see where)."
    )


def cli_not_callable(spec: str, got: Any) -> str:
    return (
        f"{spec!r} names {type(got).__name__} {got!r}, which cannot be called; name "
        f"a class or a function."
    )


def cli_make_refused(env_id: str, vectorization: str, error: Exception) -> str:
    return f"NOT OK: {env_id} ({vectorization}) cannot run in the mode asked: {error}"


def cli_undeclared_wrapper(spec: str) -> str:
    return (
        f"{spec!r} declares no autoreset modes, so there is nothing to prove: pass "
        f"the modes it should be right in (--modes NextStep SameStep ...), or "
        f"declare them (@vecmode.supports, or vecmode.register for a class you "
        f"don't own)."
    )


def timeline_action(action: Any, space: Any) -> str:
    return (
        f"action {action!r} is not in the env's action space {space}; give one it "
        f"holds (vecmode timeline --action A)."
    )


def cli_svg_directory(path: str, directory: str) -> str:
    return (
        f"cannot write {path!r}: the directory {directory!r} does not exist; create "
        f"it first, or give another --svg path."
    )


def cli_svg_not_written(path: str, error: OSError) -> str:
    return f"cannot write {path!r}: {error.strerror or error}; give another --svg path."


def cli_choice(option: str, got: str, choices: Iterable[str]) -> str:
    return f"{option} {got!r} is not one of {', '.join(choices)}; pick one of them."


def cli_unavailable(command: str, module: str, error: BaseException) -> str:
    return (
        f"vecmode {command} needs {module}, which cannot be imported here "
        f"({type(error).__name__}: {error}); reinstall vecmode."
    )


def empty_timeline() -> str:
    return (
        "timeline_svg needs at least one mode with rows, e.g. "
        "timeline_svg(vecmode.timeline.timeline('CartPole-v1'))."
    )


def conformance_bases(got: list[str], known: list[str]) -> str:
    return (
        f"check_wrapper: bases must name one or more of {', '.join(map(repr, known))}"
        f", got {got!r}"
    )


# ------ probe and check_vector_env
def _call_text(kind: str) -> str:
    return {
        "reset": "reset()",
        "step": "step()",
        "reset(mask)": "reset(options={'reset_mask': ...})",
    }.get(kind, kind)


def diff_missing() -> str:
    return "<no such key>"


def diff_instance(number: int) -> str:
    return f"instance {number}"


def diff_text(
    call: int,
    kind: str,
    sub_env: int | None,
    field: str,
    expected: str,
    got: str,
    note: str,
    run: str,
) -> str:
    where = f"{run}, call {call} ({kind})" if run else f"call {call} ({kind})"
    if sub_env is not None:
        where += f", sub-env {sub_env}"
    text = f"{where}, {field}: expected {expected}, got {got}"
    return f"{text} ({note})" if note else text


def diff_batch_entries(got: Any, num_envs: int) -> str:
    return f"expected one entry per sub-env ({num_envs}), got {got}"


def diff_a_result() -> str:
    return "a result"


def diff_raised(error: BaseException) -> str:
    text = " ".join(str(error).split())
    if len(text) > 200:
        text = text[:197] + "..."
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def diff_no_key() -> str:
    return "no such key"


def diff_key_present() -> str:
    return "present"


def diff_mask(shape: tuple[int, ...]) -> str:
    return f"a bool array of shape {shape}"


def diff_with_action(name: str, changed: str, base: str) -> str:
    return f"{name} with action {changed} instead of {base}"


def diff_no_autoreset() -> str:
    return "an error, or a step of the ended episode"


def diff_autoreset() -> str:
    return (
        "an autoreset step (reward 0, terminated and truncated False, action ignored)"
    )


def diff_array(num_envs: int, kinds: str) -> str:
    dtype = "bool" if kinds == "b" else "float or int"
    return f"an ndarray of shape ({num_envs},) and dtype {dtype}"


def diff_got_array(value: Any) -> str:
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return f"{type(value).__name__} of shape {value.shape} and dtype {value.dtype}"
    return type(value).__name__


def diff_dict() -> str:
    return "a dict"


def diff_element(space: Any) -> str:
    return f"an element of {space}"


def diff_object_array(shape: tuple[int, ...]) -> str:
    return f"a numpy object array of shape {shape}"


def diff_own_memory() -> str:
    return "an array of its own"


def diff_shared_memory() -> str:
    return "an array sharing memory with the returned observations"


def diff_final_not_reset() -> str:
    return "the ended episode's last observation"


def note_step_raised(mode: AutoresetMode) -> str:
    return (
        f"in {mode.value} mode no sub-env awaits a reset by the caller here, so "
        f"step() must work"
    )


def note_masked_reset(mode: AutoresetMode) -> str:
    return (
        f"in {mode.value} mode the caller resets ended sub-envs with "
        f"reset(options={{'reset_mask': mask}}), so that must work"
    )


def note_env_raised() -> str:
    return "the run makes only calls that the declared mode allows"


def note_final_obs_absent(mode: AutoresetMode, final_in_info: bool) -> str:
    if final_in_info:
        return (
            f"in {mode.value} mode info['final_obs'] / info['final_info'] are set only "
            f"at the calls where episodes end, with the masks True exactly for the "
            f"sub-envs whose episode ended"
        )
    return (
        f"in {mode.value} mode an ended episode's final observation and info are "
        f"the ones step() returns; info has no final_obs / final_info"
    )


def note_final_obs_present(mode: AutoresetMode) -> str:
    return (
        f"in {mode.value} mode a sub-env is reset within the step its episode ends, "
        f"and the episode's final observation / info go in info['final_obs'] / "
        f"info['final_info'], with info['_final_obs'] / info['_final_info'] True "
        f"for it"
    )


def note_reset_step(mode: AutoresetMode) -> str:
    return (
        f"in {mode.value} mode the step after an episode ends resets the sub-env: "
        f"its action is ignored, the reward is 0, terminated and truncated are False"
    )


def note_action_ignored(mode: AutoresetMode) -> str:
    return (
        f"in {mode.value} mode a reset step ignores its action, so another action "
        f"there must give the same result"
    )


def note_caller_resets(mode: AutoresetMode) -> str:
    return (
        f"in {mode.value} mode step() never resets a sub-env, the caller does with "
        f"reset(options={{'reset_mask': mask}}); this sub-env's episode had ended "
        f"and it was stepped without that reset, yet it was reset"
    )


def note_masked_keeps(mode: AutoresetMode) -> str:
    return (
        f"in {mode.value} mode reset(options={{'reset_mask': mask}}) resets only the "
        f"masked sub-envs; the others' observations come back unchanged"
    )


def note_masked_info(mode: AutoresetMode) -> str:
    return (
        f"in {mode.value} mode the info of reset(options={{'reset_mask': mask}}) "
        f"holds data only for the reset sub-envs"
    )


def note_replay() -> str:
    return "the same seed and actions"


def note_final_obs_overwritten(mode: AutoresetMode) -> str:
    return (
        f"in {mode.value} mode the final observation must outlive the reset; this "
        f"one is a view of the observation buffer, which the reset and later calls "
        f"overwrite"
    )


def note_final_obs_is_reset_obs(mode: AutoresetMode, count: int) -> str:
    return (
        f"at all {count} episode ends, info['final_obs'] equals the observation "
        f"step() returned, which in {mode.value} mode starts the next episode, "
        f"although the env's observations vary: the final observation was "
        f"overwritten by the reset's"
    )


def note_not_reproducible(seed: int) -> str:
    return (
        f"a second instance, reset with seed={seed} and given the same actions, "
        f"returned something else: the env must be deterministic under "
        f"reset(seed=...)"
    )


def note_reset_clears_autoreset(mode: AutoresetMode, call: int) -> str:
    return (
        f"in {mode.value} mode reset() ends every episode, clearing pending "
        f"autoresets: this sub-env's episode had ended before the reset at call "
        f"{call}, and this step looks like its autoreset (reward 0, flags False, "
        f"action ignored); a fresh instance, given the same reset and actions, "
        f"returns the expected value"
    )


def note_ignored_action_mattered(call: int, base: str, changed: str) -> str:
    return (
        f"the second instance got action {changed} instead of {base} at call {call}, "
        f"a reset step whose action is ignored, and that changed this"
    )


def probe_factory_not_callable(caller: str, got: Any) -> str:
    return (
        f"{caller} takes a function that builds a new vector env, e.g. "
        f"lambda: gym.make_vec('CartPole-v1', num_envs=4), got "
        f"{type(got).__name__}."
    )


def probe_factory_not_vector_env(caller: str, got: Any) -> str:
    return (
        f"{caller}: the factory must return a gymnasium.vector.VectorEnv, got "
        f"{type(got).__name__}; for a single env's id use e.g. "
        f"lambda: gym.make_vec(env_id, num_envs=2)."
    )


def probe_factory_reused(caller: str) -> str:
    return (
        f"{caller}: the factory returned an env it had returned before (and that "
        f"{caller} has closed); it must build a new env on each call, e.g. "
        f"lambda: gym.make_vec(...), not lambda: envs."
    )


def probe_unreadable_result(kind: str, error: BaseException) -> str:
    return f"the result of {_call_text(kind)} cannot be read: {error}"


def probe_result_tuple(size: int, got: Any) -> str:
    parts = (
        "(obs, infos)"
        if size == 2
        else "(obs, rewards, terminations, truncations, infos)"
    )
    return f"expected a tuple {parts}, got {type(got).__name__}"


def probe_max_steps(got: Any) -> str:
    return (
        f"max_steps must be an int >= 1 (the most steps to wait for an episode to "
        f"end), got {got!r}."
    )


def probe_seed(got: Any) -> str:
    return f"seed must be an int, got {got!r}."


def probe_env_raised(call: int, kind: str, error: BaseException) -> str:
    return (
        f"the env raised {diff_raised(error)} in call {call} ({_call_text(kind)}), "
        f"before any episode ended"
    )


def probe_no_end(max_steps: int, seed: int) -> str:
    return (
        f"no episode ended within {max_steps} steps (seed {seed}, random actions): "
        f"raise max_steps, or make the episodes shorter (e.g. max_episode_steps)"
    )


def probe_not_deterministic(seed: int, diff: str) -> str:
    return (
        f"the env is not deterministic under reset(seed={seed}) and the same "
        f"actions, and the probe compares instances: {diff}"
    )


def probe_found(mode: AutoresetMode) -> str:
    return f"only {mode.value}'s predictions hold."


def probe_no_mode(rejected: dict[str, str]) -> str:
    return "the env contradicts every mode's predictions: " + "; ".join(
        f"not {mode}: {text}" for mode, text in rejected.items()
    )


def probe_several(modes: Iterable[AutoresetMode]) -> str:
    return (
        f"the runs fit {_mode_names(modes)} alike (e.g. the action space has a "
        f"single action, so whether an action is ignored is unknown)"
    )


def probe_summary(
    mode: AutoresetMode | None,
    declared: AutoresetMode | None,
    reason: str,
    ended_at: int | None,
    ended: tuple[int, ...],
    rejected: dict[AutoresetMode, str],
) -> str:
    head = f"behaves as {mode.value}" if mode is not None else "cannot tell the mode"
    claim = f"declares {declared.value}" if declared is not None else "declares no mode"
    lines = [f"{head} ({claim}): {reason}"]
    if ended_at is not None:
        subs = ", ".join(str(i) for i in ended)
        lines.append(f"first episode end: call {ended_at}, sub-env(s) {subs}")
    if len(rejected) < len(AutoresetMode):  # else the reason lists them
        lines += [f"not {other.value}: {text}" for other, text in rejected.items()]
    return "\n".join(lines)


def check_env_positive_int(name: str, got: Any) -> str:
    return f"check_vector_env: {name} must be an int >= 1, got {got!r}."


def check_env_undeclared(env: str) -> str:
    return (
        f"{env} declares no metadata['autoreset_mode'], and check_vector_env checks "
        f"an env against the mode it declares. Set metadata['autoreset_mode'] to "
        f"the gymnasium.vector.AutoresetMode the env implements "
        f"(vecmode.probe_mode(factory) tells how it behaves)."
    )


def check_env_failed(env: str, mode: AutoresetMode, diff: str, diagnosis: str) -> str:
    text = f"{env} does not behave as {mode.value}, the mode it declares: {diff}."
    return f"{text} {diagnosis}" if diagnosis else text


def check_env_bad_declaration(env: str, problem: str) -> str:
    return f"{env} declares metadata['autoreset_mode'] that is not a mode: {problem}"


def check_env_diagnosis(found: AutoresetMode) -> str:
    return (
        f"vecmode.probe_mode finds that it behaves as {found.value}: declare that "
        f"mode, or fix the env."
    )


def check_env_few_ends(env: str, ends: int, steps: int, least: int) -> str:
    return (
        f"{env}: {ends} episode end(s) in {steps} steps, fewer than "
        f"min_episode_ends={least}, and a mode's contract is about episode ends: "
        f"raise steps, or make the episodes shorter."
    )


def check_env_probe_disagrees(env: str, mode: AutoresetMode, probe: str) -> str:
    return (
        f"{env} declares {mode.value}, but vecmode.probe_mode does not find it "
        f"behaving so: {probe}"
    )


def check_env_checks(
    mode: AutoresetMode, final_in_info: bool, reset_steps: bool, caller_resets: bool
) -> tuple[str, ...]:
    checks = [
        "observations in the observation space; rewards, terminations and "
        "truncations of shape (num_envs,) and the right dtypes; infos dicts",
    ]
    if final_in_info:
        checks.append(
            "final_obs / _final_obs and final_info / _final_info exactly at episode "
            "ends, True exactly for the ended sub-envs; final observations in the "
            "single observation space, not overwritten by the reset"
        )
    else:
        checks.append("no final_obs / final_info in info")
    if reset_steps:
        checks.append(
            "the step after an episode ends: reward 0, terminated and truncated "
            "False, action ignored; reset() clears pending autoresets"
        )
    if caller_resets:
        checks.append(
            "reset_mask resets exactly the masked sub-envs (others' observations "
            "unchanged, infos only for the masked ones); step does not reset an "
            "ended sub-env"
        )
    checks += [
        "the same seed and actions reproduce the run",
        f"vecmode.probe_mode finds {mode.value}",
    ]
    return tuple(checks)


def check_env_report(
    env: str, mode: AutoresetMode, steps: int, ends: int, checks: Iterable[str]
) -> str:
    lines = [f"{env} conforms to {mode.value}: {steps} steps, {ends} episode ends"]
    lines += [f"  - {check}" for check in checks]
    return "\n".join(lines)
