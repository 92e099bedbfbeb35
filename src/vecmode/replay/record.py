"""Recording the calls made to a vector env, and replaying them on another."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium.vector import VectorEnv
from gymnasium.vector.utils import concatenate, create_empty_array

from vecmode import _arrays, core
from vecmode.autoreset import gymnasium_layout
from vecmode.errors import NotAVectorEnvError
from vecmode.replay.compare import as_numpy, per_sub_env, same

#: The call each :attr:`Call.kind` stands for, for messages.
CALL_TEXT = {
    "reset": "reset()",
    "step": "step()",
    "reset(mask)": "reset(options={'reset_mask': ...})",
}


#: Which sub-envs' actions a replay changes at a call (None: none).
Change = Callable[["Call"], Any] | None


@dataclass
class Call:
    """One call to a vector env (``kind``: a key of :data:`CALL_TEXT`), and deep
    copies of what it returned (``obs``: one per sub-env), or its ``error``."""

    index: int
    kind: str
    seed: int | None = None
    mask: np.ndarray | None = None
    actions: list[Any] | None = None
    raw: Any = None
    obs: list[Any] | None = None
    rewards: np.ndarray | None = None
    terminations: np.ndarray | None = None
    truncations: np.ndarray | None = None
    infos: Any = None
    error: Exception | None = None

    @property
    def flags(self) -> tuple[np.ndarray, np.ndarray]:
        """``(terminations, truncations)`` of a step (empty arrays otherwise)."""
        if self.terminations is None or self.truncations is None:
            empty = np.zeros(0, dtype=np.bool_)
            return empty, empty
        return self.terminations, self.truncations

    @property
    def ended(self) -> np.ndarray:
        """terminated | truncated (empty where not a step read)."""
        return np.logical_or(*self.flags)


class Recorder:
    """Drives one vector env and records every call as a :class:`Call`;
    ``inspect`` sees each result before it is copied."""

    def __init__(
        self,
        env: VectorEnv,
        seed: int,
        inspect: Callable[[Call, Any], None] | None = None,
    ) -> None:
        self.env = env
        self.inspect = inspect
        self.num_envs = int(env.num_envs)
        self.calls: list[Call] = []
        self._single = env.single_action_space
        self._sampler = copy.deepcopy(self._single)
        self._sampler.seed(seed)
        self._others = copy.deepcopy(self._single)
        self._others.seed(seed + 1)
        #: An array of the env's last observations where they are torch, JAX...
        self._like: Any = None

    def sample(self) -> list[Any]:
        """One random action per sub-env."""
        return [self._sampler.sample() for _ in range(self.num_envs)]

    def alternative(self, action: Any) -> Any:
        """A random action other than ``action``, or None if none is found."""
        for _ in range(100):
            other = self._others.sample()
            if not same(other, action, strict=False):
                return other
        return None

    def reset(self, seed: int | None = None) -> Call:
        """``env.reset(seed=seed)``."""
        call = Call(len(self.calls), "reset", seed=seed)
        return self._record(call, lambda: self.env.reset(seed=seed), 2)

    def reset_mask(self, mask: np.ndarray) -> Call:
        """``env.reset(options={"reset_mask": mask})``, with a fresh dict."""
        mask = np.array(mask, dtype=np.bool_)
        call = Call(len(self.calls), "reset(mask)", mask=mask)
        return self._record(
            call, lambda: self.env.reset(options={"reset_mask": self._ours(mask)}), 2
        )

    def step(self, actions: Sequence[Any]) -> Call:
        """``env.step`` with ``actions`` (one per sub-env), batched."""
        call = Call(len(self.calls), "step", actions=list(actions))
        return self._record(call, lambda: self.env.step(self._batch(actions)), 5)

    def _batch(self, actions: Sequence[Any]) -> Any:
        out: Any = create_empty_array(self._single, self.num_envs)
        return self._ours(concatenate(self._single, actions, out))

    def _ours(self, batch: Any) -> Any:
        """A new copy of a NumPy batch, in the env's array library and on its
        device where its observations are torch, JAX..."""
        if self._like is None:
            return copy.deepcopy(batch)
        if isinstance(batch, dict):
            return {key: self._ours(value) for key, value in batch.items()}
        if isinstance(batch, tuple):
            return tuple(self._ours(value) for value in batch)
        from array_api_compat import device

        xp: Any = _arrays.namespace(self._like)
        return xp.asarray(np.array(batch), device=device(self._like))

    def replay(self, calls: Sequence[Call], change: Change = None) -> list[Call]:
        """Make the calls ``calls`` made, until one raises; ``change(call)`` masks
        the sub-envs whose action is replaced with :meth:`alternative`."""
        for call in calls:
            if call.kind == "reset":
                made = self.reset(call.seed)
            elif call.kind == "reset(mask)":
                made = self.reset_mask(
                    call.mask if call.mask is not None else np.zeros(0, np.bool_)
                )
            else:
                made = self.step(self._changed(call, change))
            if made.error is not None:
                break
        return self.calls

    def _changed(self, call: Call, change: Change) -> list[Any]:
        actions = list(call.actions or [])
        which = None if change is None else change(call)
        for i in [] if which is None else np.flatnonzero(which).tolist():
            other = self.alternative(actions[i])
            if other is not None:
                actions[i] = other
        return actions

    def _record(self, call: Call, run: Callable[[], Any], size: int) -> Call:
        self.calls.append(call)
        try:
            result = run()
            if self.inspect is not None:
                self.inspect(call, result)
            result = copy.deepcopy(result)
            if isinstance(result, tuple) and result:  # the kit reads NumPy
                first = _arrays.leaf(result[0])
                self._like = None if _arrays.namespace(first) is None else first
                result = result if self._like is None else as_numpy(result)
        except Exception as exc:
            call.error = exc
            return call
        call.raw = result
        try:
            self._read(call, result, size)
        except (TypeError, ValueError, IndexError) as exc:
            call.error = ValueError(
                f"the result of {CALL_TEXT[call.kind]} cannot be read: {exc}"
            )
        return call

    def _read(self, call: Call, result: Any, size: int) -> None:
        if not isinstance(result, tuple) or len(result) != size:
            parts = "(obs, infos)" if size == 2 else "(obs, rewards, terminations, "
            parts += "" if size == 2 else "truncations, infos)"
            raise TypeError(f"expected a tuple {parts}, got {type(result).__name__}")
        n = self.num_envs
        call.infos = result[-1]
        call.obs = per_sub_env(self.env.observation_space, result[0], n)
        if size == 5:
            call.rewards = np.asarray(result[1])
            call.terminations = np.asarray(result[2], dtype=np.bool_)
            call.truncations = np.asarray(result[3], dtype=np.bool_)
            for array in (call.rewards, call.terminations, call.truncations):
                if array.shape != (n,):
                    raise ValueError(
                        f"expected one entry per sub-env ({n}), got {array.shape}"
                    )


def is_count(value: Any, least: int = 1) -> bool:
    """Whether ``value`` is an int (not a bool) of at least ``least``."""
    return core.is_int(value) and bool(value >= least)


class Instances:
    """Builds envs with ``factory`` and closes every one it built, also on
    errors; ``caller`` names the function the factory was given to."""

    def __init__(self, factory: Callable[[], VectorEnv], caller: str) -> None:
        if not callable(factory):
            raise TypeError(
                f"{caller} takes a function that builds a new vector env, e.g. "
                f"lambda: gym.make_vec('CartPole-v1', num_envs=4), got "
                f"{type(factory).__name__}."
            )
        self.factory = factory
        self.caller = caller
        self._built: list[VectorEnv] = []
        self._open: list[VectorEnv] = []
        #: The qualified name of the layer the envs are read through, if any.
        self.read_through: str | None = None

    def new(self) -> VectorEnv:
        """A new env from the factory, read in Gymnasium's layout."""
        env = self.factory()
        if not isinstance(env, VectorEnv):
            close = getattr(env, "close", None)
            if callable(close):
                close()
            raise NotAVectorEnvError(
                f"{self.caller}: the factory must return a gymnasium.vector."
                f"VectorEnv, got {type(env).__name__}; for a single env's id use "
                f"e.g. lambda: gym.make_vec(env_id, num_envs=2)."
            )
        if any(env is built for built in self._built):
            raise ValueError(
                f"{self.caller}: the factory returned an env it had returned before; "
                f"build a new env on each call, e.g. lambda: gym.make_vec(...), not "
                f"lambda: envs."
            )
        self._built.append(env)
        try:
            readable = gymnasium_layout(env)
        except ValueError:  # no mode in its metadata: the callers say so
            readable = env
        if readable is not env:
            cls = type(readable)
            self.read_through = f"{cls.__module__}.{cls.__qualname__}"
        self._open.append(readable)
        return readable

    def replay(
        self, seed: int, calls: Sequence[Call], change: Change = None
    ) -> list[Call]:
        """The calls of a new instance given ``calls`` (see :meth:`Recorder.replay`)."""
        recorder = Recorder(self.new(), seed)
        recorder.replay(calls, change)
        self.close(recorder.env)
        return recorder.calls

    def close(self, env: VectorEnv) -> None:
        """Close ``env`` now (it must come from :meth:`new`)."""
        self._open = [other for other in self._open if other is not env]
        env.close()

    def __enter__(self) -> Instances:
        return self

    def __exit__(self, exc_type: type | None, *rest: object) -> None:
        failure: Exception | None = None
        for env in self._open:
            try:
                env.close()
            except Exception as problem:
                failure = failure or problem
        self._open = []
        if failure is not None and exc_type is None:
            raise failure
