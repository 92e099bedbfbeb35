"""The base of vecmode's simulator adapters: Gymnasium's vector API over a
batched simulator that steps every sub-env in one call, its batches left in
their library (torch, JAX) and on their device."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from vecmode import _arrays, _rows, errors, modes
from vecmode.core import StepResult, is_int
from vecmode.env_classes import Semantics
from vecmode.forwarding import valid_reset_mask


class SimulatorAdapter(VectorEnv):
    """A batched simulator as a Gymnasium vector env. Subclasses implement
    :meth:`_reset` and :meth:`_step` in the simulator's library, and set
    :attr:`semantics` (what the simulator does at an episode's end).

    A simulator that resets inside its step is presented in SAME_STEP mode:
    its final observations, where it has them, in the dense layout (one batch,
    with the ``_final_obs`` mask). One the caller resets is presented in
    DISABLED mode, honouring ``reset(options={"reset_mask": m})``.
    ``vecmode.with_autoreset`` converts from there where it is exact.

    Where the simulator has no partial reset (``semantics.partial_reset`` is
    ``"none"``), a mask of every sub-env is a whole reset, a mask of none is a
    no-op (the current observations and ``{}``, as vecmode's cores return;
    the simulator is not called), and any other mask is refused.

    Args:
        simulator: the simulator's own env object.
        num_envs: the number of sub-envs.
        single_observation_space: one sub-env's observation space.
        single_action_space: one sub-env's action space.
        mode: the mode it is presented in (SAME_STEP, the default, or DISABLED).
        namespace: the array library of its batches (``"torch"``, ``"jax.numpy"``).
        semantics: what it does at an episode's end.
    """

    #: What the simulator does at an episode's end (per instance: it can
    #: depend on the simulator's configuration).
    semantics: Semantics
    #: How to build the simulator without its own autoreset ("": it can't).
    without_autoreset: str = ""
    #: The observations of the last reset or step (None before a reset).
    _obs: Any = None
    #: The calls that reached the simulator: TransitionCollector reads it.
    calls_run: int = 0

    def __init__(
        self,
        simulator: Any,
        *,
        num_envs: int,
        single_observation_space: spaces.Space[Any],
        single_action_space: spaces.Space[Any],
        mode: AutoresetMode = AutoresetMode.SAME_STEP,
        namespace: str,
        semantics: Semantics,
    ) -> None:
        self.simulator = simulator
        self.num_envs = num_envs
        self.single_observation_space = single_observation_space
        self.single_action_space = single_action_space
        self.observation_space = batch_space(single_observation_space, num_envs)
        self.action_space = batch_space(single_action_space, num_envs)
        #: Its mode, also in ``metadata`` (as Gymnasium's envs; TorchRL reads it).
        self.autoreset_mode = modes.as_mode(mode)
        if modes.resets_on_next_step(self.autoreset_mode):
            raise ValueError(
                f"{type(self).__name__}: a simulator adapter is presented in SameStep "
                f"(it resets inside its step) or Disabled (its caller resets), not "
                f"NextStep, which must reset a sub-env without stepping it."
            )
        self.metadata = {
            **type(self).metadata,
            "autoreset_mode": self.autoreset_mode,
            _arrays.ARRAY_NAMESPACE: namespace,
        }
        self.semantics = semantics

    # ----------------------------------------------------- what subclasses write
    def _reset(self, seed: int | None, mask: Any | None) -> tuple[Any, dict[str, Any]]:
        """Reset every sub-env (``mask`` None, or all True where
        ``semantics.partial_reset`` is ``"none"``), or those of ``mask`` (a bool
        array of the batch's library): the whole batch of observations and the
        infos."""
        raise NotImplementedError

    def _step(self, actions: Any) -> StepResult:
        """Step every sub-env: Gymnasium's five batches."""
        raise NotImplementedError

    # ------------------------------------------------------ Gymnasium's API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset the sub-envs: all, or those of ``options["reset_mask"]`` (a
        mask of none: the current observations and ``{}``, nothing reset). A
        mask of another array library than the batches' is refused."""
        if seed is not None and not is_int(seed):
            raise errors.SeedError(
                f"{self.name}: seed must be None or an int, the simulator's seed for "
                f"the batch, got {type(seed).__name__} {seed!r}; nothing was reset."
            )
        mask = None
        if options and options.get("reset_mask") is not None:
            mask = valid_reset_mask(options["reset_mask"], self.num_envs, self._obs)
            if not self._masks_some(mask):
                return self._unchanged()
        self.calls_run += 1
        obs, infos = self._reset(seed, mask)
        self._obs = obs
        return obs, infos

    def step(self, actions: Any) -> StepResult:
        """Step every sub-env (:class:`~vecmode.errors.ActionBatchError`, nothing
        stepped, for actions not of the batch's shape)."""
        shape, expected = getattr(actions, "shape", None), self.action_space.shape
        if expected is not None and (shape is None or tuple(shape) != expected):
            got = type(actions).__name__ if shape is None else f"shape {shape}"
            problem = f"actions of {got}, expected an array of shape {expected}"
            raise errors.action_batch_error(problem, self.num_envs)
        library = _arrays.name_of(_arrays.namespace(actions))
        own = _arrays.declared_namespace(self)
        if library not in ("numpy", own):  # (torch's to a JAX simulator: its error)
            problem = f"{library} actions, expected {own} (or NumPy) arrays"
            raise errors.action_batch_error(problem, self.num_envs)
        self.calls_run += 1
        result = self._step(actions)
        self._obs = result[0]
        return result

    def _masks_some(self, mask: Any) -> bool:
        """Whether ``mask`` masks any sub-env; refused if it masks some but not
        all, for a simulator with no partial reset. One scalar to the host (the
        count), the mask left in its library."""
        count = _arrays.count_true(mask)
        if self.semantics.partial_reset == "none" and 0 < count < self.num_envs:
            raise ValueError(
                f"{self.name} cannot reset some sub-envs alone (it has no "
                f"partial reset), and vecmode never resets the whole batch in "
                f"place of a masked reset. Reset every sub-env "
                f"(reset() without reset_mask), or use the simulator's own "
                f"autoreset (this adapter in SameStep mode)."
            )
        return count > 0

    def _unchanged(self) -> tuple[Any, dict[str, Any]]:
        """A masked reset of no sub-env: a copy of the current observations
        (on their device) and no infos, the simulator left as it is."""
        if self._obs is None:
            raise RuntimeError(
                f"{self.name}: call reset() before a reset with a reset_mask of "
                f"no sub-env (there are no observations to keep yet)."
            )
        return _rows.copied(self._obs), {}

    @property
    def name(self) -> str:
        """The simulator's name, for messages."""
        return type(self).__name__

    def __repr__(self) -> str:
        return f"{type(self).__name__}({type(self.simulator).__name__}, num_envs={self.num_envs})"


def gym_space(space: Any) -> spaces.Space[Any]:
    """Gymnasium's space for a gymnax or Jumanji one (a discrete one or a box).

    >>> import numpy as np
    >>> class Box: low, high, shape, dtype = -1.0, 1.0, (2,), np.float32
    >>> gym_space(Box())
    Box(-1.0, 1.0, (2,), float32)
    """
    import numpy as np  # building a space is not a step: NumPy is fine here

    n = getattr(space, "n", getattr(space, "num_values", None))
    if n is not None and np.ndim(n) == 0:
        return spaces.Discrete(int(n))
    if n is not None:
        return spaces.MultiDiscrete(np.asarray(n))
    low = getattr(space, "low", getattr(space, "minimum", None))
    high = getattr(space, "high", getattr(space, "maximum", None))
    if low is None and hasattr(space, "dtype"):
        low, high = -np.inf, np.inf  # Jumanji's unbounded specs.Array
    if low is None:
        raise TypeError(
            f"vecmode's simulator adapters take discrete and box spaces (one "
            f"array), not {type(space).__name__}."
        )
    dtype, shape = np.dtype(space.dtype), tuple(space.shape)
    cast = dtype if dtype.kind == "f" else None  # Gymnasium bounds ints' infinities
    low, high = (
        np.broadcast_to(np.asarray(b, cast), shape).copy() for b in (low, high)
    )
    return spaces.Box(low, high, shape, dtype)


def key_of(seed: int) -> Any:
    """A JAX key (raw uint32, as Brax's reset takes), put on the device explicitly."""
    import jax

    return jax.random.PRNGKey(jax.device_put(np.uint32(seed % 2**32)))


class JaxAdapter(SimulatorAdapter):
    """The JAX adapters' reset and step: :attr:`key` and :attr:`state` (the
    batch of the simulator's states) through ``_reset_fn(key) -> (key, state,
    obs)`` and ``_step_fn(key, state, actions) -> (key, state, *result)``, jitted
    once by the subclass (``_reset_fn`` may add the reset's infos; ``result`` is
    Gymnasium's five batches)."""

    #: The batch of the simulator's states (None before a reset).
    state: Any = None
    #: The key of the next reset or step.
    key: Any
    _reset_fn: Any
    _step_fn: Any

    def _reset(self, seed: int | None, mask: Any | None) -> tuple[Any, dict[str, Any]]:
        if seed is not None:
            self.key = key_of(seed)
        self.key, self.state, obs, *infos = self._reset_fn(self.key)
        return obs, infos[0] if infos else {}

    def _step(self, actions: Any) -> StepResult:
        if self.state is None:
            raise RuntimeError(f"{self.name}: call reset() before step().")
        self.key, self.state, *result = self._step_fn(self.key, self.state, actions)
        return tuple(result)  # type: ignore[return-value]
