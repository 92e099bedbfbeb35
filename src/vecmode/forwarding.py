"""The base of every vecmode wrapper: it forwards ``call``, ``get_attr``,
``set_attr`` and ``envs`` (Gymnasium 1.4's ``VectorWrapper`` does not), and its
``step`` and ``reset`` in two halves also serve the split async API."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from gymnasium.vector import VectorEnv, VectorWrapper

from vecmode import _arrays, _rows, core
from vecmode.core import ClosesOnExit, SeedLike, StepResult, validate_reset_mask
from vecmode.env_classes import ignored_mask_fault, layers
from vecmode.errors import IncompatibleModeError, describe


def valid_reset_mask(mask: Any, num_envs: int, like: Any = None) -> Any:
    """``options["reset_mask"]`` checked: a NumPy bool array (lists and tuples
    as NumPy), or another array library's bool array kept in its library;
    ``like``: an array env's batch, whose library and device the mask takes
    (before its first batch, its library's name: NumPy's mask goes as its).

    >>> valid_reset_mask([True, False], 2)
    array([ True, False])
    """
    if isinstance(like, str):  # (on the library's default device)
        module = _arrays.module_named(like)
        if module is None or _arrays.namespace(mask) is not None:
            return valid_reset_mask(mask, num_envs)
        return module.asarray(np.array(validate_reset_mask(mask, num_envs)))
    if like is not None:  # an array env's: its reset may take only its masks
        leaf = _arrays.leaf(like)
        host = (np.ndarray, list, tuple, type(leaf))
        if type(leaf) is not np.ndarray and type(mask) not in host:  # (checked first)
            xp = _arrays.namespace(mask)
            given = f"{_arrays.name_of(xp)} array" if xp else type(mask).__name__
            raise TypeError(
                f"`options['reset_mask']` is a {given}, and the env's batches are "
                f"{_arrays.name_of(_arrays.namespace(leaf))}: pass a bool array of "
                f"theirs, or NumPy's."
            )
        return _rows.in_library(valid_reset_mask(mask, num_envs), leaf)
    if type(mask) is np.ndarray or isinstance(mask, (list, tuple)):
        return validate_reset_mask(mask, num_envs)
    xp = _arrays.namespace(mask)
    if xp is None:
        return validate_reset_mask(mask, num_envs)
    shaped = tuple(mask.shape) == (num_envs,)
    if not shaped or mask.dtype != xp.bool:  # as NumPy: ValueError, TypeError
        raise (TypeError if shaped else ValueError)(
            f"`options['reset_mask']` must be a bool array of shape ({num_envs},), "
            f"got a {_arrays.name_of(xp)} array of dtype {mask.dtype} and shape "
            f"{tuple(mask.shape)}: pass one bool per sub-env, e.g. "
            f"(terminations | truncations) != 0."
        )
    return mask


def reset_arguments(
    env: VectorEnv, seed: Any, options: dict[str, Any] | None, like: Any = None
) -> tuple[Any, dict[str, Any] | None, Any]:
    """``(seed, options, mask)`` to reset ``env`` with; ``options`` copied; the
    mask a NumPy one or the array library's its caller gave (or ``like``'s)."""
    mask = None
    if options is not None:
        options = dict(core.check_options(options))
        if "reset_mask" in options:
            mask = valid_reset_mask(options["reset_mask"], env.num_envs, like)
            options["reset_mask"] = mask
            refuse_unhonoured_mask(env)
    return seed, options, mask


def refuse_unhonoured_mask(env: VectorEnv) -> None:
    """Raise where ``reset_mask`` reaches, through no vecmode layer, an env
    declared to reset every sub-env whatever the mask."""
    for inner in layers(env):
        if isinstance(inner, ForwardingWrapper):
            return  # (the nearest checks its own env)
    if why := ignored_mask_fault(inner):
        raise IncompatibleModeError(why)


def _overridden(cls: type, method: str, split: str) -> bool:
    """Whether a class below the one defining ``split`` overrides ``method``."""
    for klass in cls.__mro__:
        if split in vars(klass):
            return False
        if method in vars(klass):
            return True
    return False


_RESETS = ("reset", "reset_async")


class ForwardingWrapper(ClosesOnExit, VectorWrapper):
    """A ``VectorWrapper`` that forwards every call, with ``step`` / ``reset`` in
    halves. Subclasses override the halves, not ``step`` / ``reset``: the first
    halves must not change the wrapper's state; the second update it.

    >>> import gymnasium as gym, vecmode
    >>> from vecmode.wrappers import ClipReward
    >>> envs = ClipReward(vecmode.make_vec("CartPole-v1", num_envs=2,
    ...     vectorization_mode="sync"), 0.0, 1.0)
    >>> envs.get_attr("spec")[0].id
    'CartPole-v1'
    >>> hasattr(envs, "step_async")  # a sync core: no split API
    False
    >>> envs.close()
    """

    env: Any
    #: It hands :meth:`_reset_arguments` a copy of the caller's ``options`` (a
    #: subclass: if the classes its ``reset`` and ``reset_async`` come from say so).
    copies_options = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "copies_options" not in vars(cls):  # what the owners of reset say
            owners = [next(k for k in cls.__mro__ if n in vars(k)) for n in _RESETS]
            cls.copies_options = all(vars(k).get("copies_options") for k in owners)

    #: What :meth:`reset_async`'s first half handed to :meth:`reset_wait`.
    _reset_state: Any = None

    # ------------------------------------------------------------- the halves
    def _step_actions(self, actions: Any) -> Any:
        """The actions to step the wrapped env with."""
        return actions

    def _step_result(self, result: StepResult) -> StepResult:
        """This wrapper's step tuple from the wrapped env's."""
        return result

    def _reset_arguments(
        self, seed: Any, options: dict[str, Any] | None
    ) -> tuple[Any, dict[str, Any] | None, Any]:
        """The wrapped env's reset arguments, and a state for :meth:`_reset_result`."""
        return reset_arguments(self.env, seed, options)

    def _reset_result(
        self, obs: Any, infos: dict[str, Any], state: Any
    ) -> tuple[Any, dict[str, Any]]:
        """This wrapper's ``(obs, infos)`` from the wrapped env's."""
        return obs, infos

    # ------------------------------------------------------ Gymnasium's API
    def step(self, actions: Any) -> StepResult:
        """Step the wrapped env."""
        return self._step_result(self.env.step(self._step_actions(actions)))

    def reset(
        self, *, seed: SeedLike = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset the wrapped env."""
        options = None if options is None else dict(core.check_options(options))
        seed, options, state = self._reset_arguments(seed, options)
        obs, infos = self.env.reset(seed=seed, options=options)
        return self._reset_result(obs, infos, state)

    # ------------------------------------------------------ the split async API
    def _split(
        self, name: str, method: str, inner_name: str | None = None
    ) -> Callable[..., Any]:
        """The wrapped env's ``inner_name`` (default ``name``), or AttributeError."""
        inner = getattr(self.env, inner_name or name, None)
        if inner is None:
            raise AttributeError(
                f"{type(self).__name__} has no {name}(): the env it wraps, "
                f"{describe(self.env)}, has none (use an async vector env below, "
                f"e.g. vecmode.AsyncVectorEnv)."
            )
        if _overridden(type(self), method, name):
            raise AttributeError(
                f"{type(self).__name__} has no {name}(): it overrides {method}(), "
                f"which {name}() would skip. Override the halves (_step_actions / "
                f"_step_result, _reset_arguments / _reset_result) instead of "
                f"{method}() to have both."
            )
        return inner

    @property
    def step_async(self) -> Callable[[Any], None]:
        """Send a step; :attr:`step_wait` returns its result."""
        send = self._split("step_async", "step")

        def step_async(actions: Any) -> None:
            send(self._step_actions(actions))

        return step_async

    @property
    def step_wait(self) -> Callable[..., StepResult]:
        """Wait for the step sent by :attr:`step_async`."""
        wait = self._split("step_wait", "step")

        def step_wait(timeout: float | None = None, **kwargs: Any) -> StepResult:
            return self._step_result(wait(timeout=timeout, **kwargs))

        return step_wait

    @property
    def reset_async(self) -> Callable[..., None]:
        """Send a reset; :attr:`reset_wait` returns its result."""
        send = self._split("reset_async", "reset")

        def reset_async(
            seed: Any = None, options: dict[str, Any] | None = None
        ) -> None:
            options = None if options is None else dict(options)
            seed, options, state = self._reset_arguments(seed, options)
            send(seed=seed, options=options)
            self._reset_state = state

        return reset_async

    @property
    def reset_wait(self) -> Callable[..., tuple[Any, Any]]:
        """Wait for the reset sent by :attr:`reset_async`."""
        wait = self._split("reset_wait", "reset")

        def reset_wait(timeout: float | None = None, **kwargs: Any) -> tuple[Any, Any]:
            obs, infos = wait(timeout=timeout, **kwargs)
            state, self._reset_state = self._reset_state, None
            return self._reset_result(obs, infos, state)

        return reset_wait

    @property
    def call_async(self) -> Callable[..., None]:
        """Send a call to every sub-env; :attr:`call_wait` returns its results."""
        return self._split("call_async", "call")

    @property
    def call_wait(self) -> Callable[..., tuple[Any, ...]]:
        """Wait for the call sent by :attr:`call_async`."""
        return self._split("call_wait", "call")

    # -------------------------------------------------------------- forwarding
    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call ``name`` on every sub-env (see Gymnasium's ``SyncVectorEnv.call``)."""
        return self.env.call(name, *args, **kwargs)

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """Get attribute ``name`` of every sub-env."""
        return self.env.get_attr(name)

    def set_attr(self, name: str, values: Any) -> None:
        """Set attribute ``name`` of every sub-env."""
        self.env.set_attr(name, values)

    @property
    def envs(self) -> Any:
        """The sub-envs of the wrapped vector env (where it has them)."""
        return self.env.envs
