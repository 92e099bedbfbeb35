"""The autoreset policies' base: a policy over a vecmode core steps by one
``execute`` of its commands; over a foreign env it takes the wrapper halves."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from vecmode import _arrays, _rows, core, errors, modes
from vecmode.autoreset import batched
from vecmode.autoreset.schedule import EpisodeSchedule, started_by
from vecmode.core import Executed, StepResult, VectorCore
from vecmode.env_classes import vector_env_declaration
from vecmode.errors import IncompatibleModeError
from vecmode.forwarding import ForwardingWrapper, reset_arguments, valid_reset_mask
from vecmode.infos import expand_infos
from vecmode.registry import declaration

STEP, RESET, STEP_THEN_RESET = (
    int(core.Command[c]) for c in ("STEP", "RESET", "STEP_THEN_RESET")
)


#: The attributes of Gymnasium's vector envs that vecmode's cores have, and theirs.
_ENV_ATTRIBUTES = frozenset(
    {"copy", "env_fns", "observation_mode", "shared_memory", "context", "daemon"}
    | {"num_workers", "in_parent", "timeout"}
)


class AutoresetWrapper(ForwardingWrapper):
    """The policies' base: over a vecmode core (:attr:`core`) a ``step`` is one
    ``execute`` of :meth:`_commands`; over a foreign env, the wrapper halves."""

    final_obs_layout = "gymnasium"
    copies_options = True  # (its reset: the core's, which keeps them, or the base's)
    core: VectorCore | None = None
    #: The episode seed schedule over a core (:func:`with_autoreset`), or None.
    schedule: EpisodeSchedule | None = None
    #: The last observations returned (for a masked reset of a foreign env).
    _last_obs: Any = None

    def __init__(self, env: VectorEnv) -> None:
        super().__init__(env)
        self.metadata = {**env.metadata, "autoreset_mode": self.autoreset_mode}
        #: Whether the env's batches are torch's, JAX's... (the array path).
        self._array = _arrays.is_array_env(env)
        found = vector_env_declaration(env)
        if found is not None and not found.batched_spaces and env.unwrapped is env:
            # the env's spaces are the single-env ones (EnvPool)
            n = env.num_envs
            self.observation_space = batch_space(env.single_observation_space, n)
            self.action_space = batch_space(env.single_action_space, n)

    def __getattr__(self, name: str) -> Any:
        """The vector env's own attributes (``env_fns``, ``copy``...), read from
        the env below: ``make_vec`` returns a policy, Gymnasium's the env."""
        env = self.__dict__.get("env")
        if name in _ENV_ATTRIBUTES and env is not None:
            return getattr(env, name)
        return object.__getattribute__(self, name)  # its own AttributeError

    @classmethod
    def refuse_first(cls, env: VectorEnv) -> None:
        """Called by the registry before its checks: over torch or JAX batches,
        why no policy can give this one's mode, which says more than its own."""
        output = declaration(cls).output  # type: ignore[union-attr]
        if output is not None:  # (GymnasiumBatch keeps the env's mode)
            batched.refuse_unreachable(env, modes.mode_of(env), output, cls.__name__)

    @property
    def _declared(self) -> tuple[frozenset[AutoresetMode], AutoresetMode]:
        """The modes this policy accepts, and the mode it produces."""
        found = declaration(self)
        if found is None or found.output is None:
            raise TypeError(
                f"{type(self).__name__} is an autoreset policy but declares no "
                f"output mode; decorate it with @vecmode.supports(..., "
                f"output=<the mode it produces>)."
            )
        return found.modes, found.output

    def _refuse(self, why: str, instead: str) -> IncompatibleModeError:
        name, got = type(self).__name__, modes.mode_of(self.env)
        error = IncompatibleModeError(
            errors.incompatible_mode(name, got, self._declared[0], why, instead)
        )
        error.why, error.instead = why, instead  # type: ignore[attr-defined]
        return error

    @property
    def autoreset_mode(self) -> AutoresetMode:
        """The mode this policy produces (also in ``metadata``)."""
        return self._declared[1]

    def _commands(self) -> list[int]:
        raise NotImplementedError

    def _result(self, executed: Executed) -> StepResult:
        """The step tuple of this mode from the core's record."""
        return executed[:5]  # type: ignore[return-value]

    # ------------------------------------------------------------------ step
    def step(self, actions: Any) -> StepResult:
        """Step every sub-env, resetting where the policy says."""
        if self.core is None:
            return super().step(actions)
        if self.schedule is None:
            return self._result(self.core.execute(self._commands(), actions))
        cmds, scheduled = self._step_call()
        executed = self.core.execute(cmds, actions, **scheduled)
        return self._result(self._started(cmds, executed))

    def _step_call(self) -> tuple[list[int], dict[str, Any]]:
        """A step's commands, and the seeds and options of the next episodes."""
        cmds, s = self._commands(), self.schedule
        if s is None or (RESET not in cmds and STEP_THEN_RESET not in cmds):
            return cmds, {}  # nothing can reset: no seeds to check
        return cmds, {"seed": s.seeds, "options": s.options}

    def _started(
        self, cmds: list[int], executed: Executed, schedule: Any = None
    ) -> Executed:
        """Count the episodes a call started in the schedule (a new one, if given)."""
        self.schedule = schedule or self.schedule
        if self.schedule is not None:
            self.schedule.started(started_by(cmds, executed))
        return executed

    @property
    def step_async(self) -> Callable[[Any], None]:
        """Send a step (where the env below has the split async API)."""
        if self.core is None:
            return super().step_async
        send = self._split("step_async", "step", "execute_async")

        def step_async(actions: Any) -> None:
            self._sent, scheduled = self._step_call()
            send(self._sent, actions, name="step", **scheduled)

        return step_async

    @property
    def step_wait(self) -> Callable[..., StepResult]:
        """Wait for the step sent by :attr:`step_async`."""
        if self.core is None:
            return super().step_wait
        wait = self._split("step_wait", "step", "execute_wait")

        def step_wait(timeout: float | None = None) -> StepResult:
            executed = wait(timeout, name="step")  # (raises if nothing was sent)
            return self._result(self._started(self._sent, executed))

        return step_wait

    # ----------------------------------------------------------------- reset
    def _noop(self, options: dict[str, Any] | None) -> bool:
        """Whether ``options`` asks for a masked reset of no sub-env."""
        if options is None or "reset_mask" not in core.check_options(options):
            return False
        if self._last_obs is None:
            return False  # (before the first batch: the env's to answer)
        mask = valid_reset_mask(options["reset_mask"], self.num_envs, self._like)
        return not _arrays.any_true(mask)

    def reset(
        self, *, seed: Any = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset all sub-envs, or those in ``options["reset_mask"]``."""
        if self.core is not None and self.schedule is not None:
            cmds, scheduled, schedule = self.schedule.reset_call(
                self.core, seed, options
            )
            executed = self.core.execute(cmds, **scheduled)
            return self._started(cmds, executed, schedule)[::4]  # (obs, infos)
        if self.core is not None:
            return self.core.reset(seed=seed, options=options)
        if self._noop(options):
            return core.copy_batch(self._last_obs), {}
        return super().reset(seed=seed, options=options)

    @property
    def reset_async(self) -> Callable[..., None]:
        """Send a reset (where the env below has the split async API)."""
        if self.core is not None and self.schedule is not None:
            send_scheduled = self._split("reset_async", "reset", "execute_async")

            def scheduled(seed: Any = None, options: dict | None = None) -> None:
                call = cast(Any, self.schedule).reset_call(self.core, seed, options)
                send_scheduled(call[0], name="reset", **call[1])
                self._reset_state = (call[0], call[2])

            return scheduled
        if self.core is not None:
            return self._split("reset_async", "reset")
        send = super().reset_async

        def reset_async(
            seed: Any = None, options: dict[str, Any] | None = None
        ) -> None:
            if self._noop(options):
                self._reset_state = _NOTHING_SENT
            else:
                send(seed=seed, options=options)

        return reset_async

    @property
    def reset_wait(self) -> Callable[..., tuple[Any, dict[str, Any]]]:
        """Wait for the reset sent by :attr:`reset_async`."""
        if self.core is not None and self.schedule is not None:
            wait_scheduled = self._split("reset_wait", "reset", "execute_wait")

            def scheduled(timeout: float | None = None) -> tuple[Any, Any]:
                executed = wait_scheduled(timeout, name="reset")
                (cmds, schedule), self._reset_state = self._reset_state, None
                return self._started(cmds, executed, schedule)[::4]

            return scheduled
        if self.core is not None:
            return self._split("reset_wait", "reset")
        wait = super().reset_wait

        def reset_wait(
            timeout: float | None = None, **kwargs: Any
        ) -> tuple[Any, dict[str, Any]]:
            if self._reset_state is _NOTHING_SENT:
                self._reset_state = None
                return core.copy_batch(self._last_obs), {}
            return wait(timeout=timeout, **kwargs)

        return reset_wait

    # ------------------------------------------- halves, over a foreign env
    @property
    def _like(self) -> Any:
        """What a caller's ``reset_mask`` takes the library of: an array env's
        last batch (its library's name before the first)."""
        if not self._array:
            return None
        if self._last_obs is not None:
            return self._last_obs
        return _arrays.declared_namespace(self.env)

    def _reset_arguments(
        self, seed: Any, options: dict[str, Any] | None
    ) -> tuple[Any, dict[str, Any] | None, Any]:
        """The env's reset arguments; an array env's mask in its batches' library."""
        return reset_arguments(self.env, seed, options, self._like)

    def _reset_result(
        self, obs: Any, infos: dict[str, Any], state: np.ndarray | None
    ) -> tuple[Any, Any]:
        if state is not None:
            obs, infos = self._whole_batch(obs, infos, state)
        self._last_obs = obs
        return obs, infos

    def _masked_reset(self, mask: np.ndarray) -> tuple[Any, dict[str, Any]]:
        """Reset the masked sub-envs of the foreign env; the whole batch."""
        obs, infos = self.env.reset(options={"reset_mask": mask})
        return self._whole_batch(obs, infos, mask)

    def _whole_batch(
        self, obs: Any, infos: dict[str, Any], mask: np.ndarray
    ) -> tuple[Any, dict[str, Any]]:
        """A masked reset's result as the whole batch (EnvPool returns the rows)."""
        # only directly over the declared env: a vecmode layer between returns all
        found = (
            vector_env_declaration(self.env) if self.env.unwrapped is self.env else None
        )
        if found is None or found.reset_returns == "all" or self._last_obs is None:
            return obs, infos
        whole = core.copy_batch(self._last_obs)
        _rows.place_rows(whole, np.flatnonzero(mask), obs)
        return whole, expand_infos(infos, mask, self.num_envs)


#: The state of a ``reset_async`` that sent nothing (an all-False mask).
_NOTHING_SENT = object()
