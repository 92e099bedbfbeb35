"""Stable-Baselines3 both ways: :func:`to_sb3` and :func:`from_sb3`.

Needs the ``sb3`` extra (``pip install "vecmode[sb3]"``); ``import vecmode`` never
imports SB3 or torch, only ``import vecmode.sb3`` does.

* :func:`to_sb3` gives any vector env that declares its mode to SB3 as a
  ``stable_baselines3.common.vec_env.VecEnv``, following SB3's contract as
  ``DummyVecEnv`` does: the env is converted to SAME_STEP with
  :func:`vecmode.with_autoreset` where that is exact (and refused, with the
  reason, where it is not); each step's infos are a list of dicts with
  ``"terminal_observation"`` and ``"TimeLimit.truncated"``.
* :func:`from_sb3` gives an SB3 ``VecEnv`` (``DummyVecEnv``, ``SubprocVecEnv``,
  any stack of SB3's wrappers) to Gymnasium as a SAME_STEP
  ``gymnasium.vector.VectorEnv`` in Gymnasium's layout, so vecmode's wrappers,
  :func:`vecmode.check_stack` and :class:`vecmode.TransitionCollector` work over it.

The one thing SB3's encoding cannot carry is a step that is both terminated and
truncated: SB3 reports ``TimeLimit.truncated = truncated and not terminated``, so
:func:`from_sb3` reads such a step as terminated only (Gymnasium's own env says
both); everything else comes through unchanged.

SB3's ``terminal_observation`` and ``TimeLimit.truncated`` are translated here,
at the edge, to and from SAME_STEP's layout with :mod:`vecmode.modes`' readers and
writers: nothing else in vecmode knows SB3's encoding.

>>> import gymnasium as gym, numpy as np, vecmode
>>> from vecmode.sb3 import from_sb3, to_sb3
>>> venv = to_sb3(vecmode.make_vec("CartPole-v1", num_envs=2,
...     vectorization_mode="sync", max_episode_steps=1))  # NextStep, converted
>>> _ = venv.seed(0)
>>> obs = venv.reset()
>>> obs, rewards, dones, infos = venv.step(np.array([1, 0]))
>>> dones, infos[0]["TimeLimit.truncated"], infos[0]["terminal_observation"].shape
(array([ True,  True]), True, (4,))
>>> envs = from_sb3(venv)  # and back: a SAME_STEP Gymnasium vector env
>>> envs.metadata["autoreset_mode"]
<AutoresetMode.SAME_STEP: 'SameStep'>
>>> envs.close()
"""

from __future__ import annotations

import contextlib
import copy
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import Space
from gymnasium.error import ClosedEnvironmentError
from gymnasium.spaces import Box, Dict, Discrete, MultiBinary, MultiDiscrete, Tuple
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space, concatenate, iterate

from vecmode import errors, sb3_subenv
from vecmode.autoreset import SameStepAutoreset, with_autoreset
from vecmode.core import (
    FORBIDDEN_CALLS,
    Command,
    Executed,
    StepResult,
    VectorCore,
    batch_problem,
    check_call,
    check_indices,
    copy_batch,
    env_closed,
    is_int,
    reuses_buffers,
)
from vecmode.errors import ActionBatchError, EpisodeEndedError, SeedError, SubEnvError
from vecmode.forwarding import reset_arguments
from vecmode.modes import same_step_infos, without_finals
from vecmode.wrappers.base import (
    check_infos,
    empty_batch,
    final_entries,
    iterate_batch,
)
from vecmode.wrappers.dict_info_to_list import infos_to_list

try:
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv
    from stable_baselines3.common.vec_env.base_vec_env import (
        VecEnvIndices,
        VecEnvObs,
        VecEnvStepReturn,
    )
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        errors.missing_extra("vecmode.sb3", "Stable-Baselines3", "sb3")
    ) from exc

__all__ = ["FromSB3VectorEnv", "ToSB3VecEnv", "from_sb3", "to_sb3"]

#: SB3's info keys: the ended episode's last observation, and whether the episode
#: was cut short rather than terminated (``truncated and not terminated``).
TERMINAL_OBSERVATION = "terminal_observation"
TIME_LIMIT_TRUNCATED = "TimeLimit.truncated"
_SB3_KEYS = frozenset((TERMINAL_OBSERVATION, TIME_LIMIT_TRUNCATED))

_TO = "vecmode.sb3.to_sb3"
_FROM = "vecmode.sb3.from_sb3"


def to_sb3(envs: VectorEnv) -> ToSB3VecEnv:
    """``envs`` as a Stable-Baselines3 ``VecEnv`` (a :class:`ToSB3VecEnv`).

    ``envs`` is any ``gymnasium.vector.VectorEnv`` that declares its mode in
    ``metadata["autoreset_mode"]``: a vecmode env in any mode, Gymnasium's sync
    and async envs, a stack of wrappers. It is converted to SAME_STEP with
    :func:`vecmode.with_autoreset`, which refuses (raising
    :class:`~vecmode.IncompatibleModeError` with the reason) where the conversion
    would not be exact.

    Raises:
        TypeError: ``envs`` is not a Gymnasium vector env.
        vecmode.IncompatibleModeError: ``envs`` declares no mode, or one that
            cannot be turned into SAME_STEP exactly.

    >>> import vecmode
    >>> from vecmode.sb3 import to_sb3
    >>> venv = to_sb3(vecmode.make_vec("CartPole-v1", num_envs=4,
    ...                                vectorization_mode="sync"))
    >>> venv.num_envs, venv.observation_space.shape
    (4, (4,))
    >>> venv.close()
    """
    return ToSB3VecEnv(envs)


def from_sb3(venv: VecEnv) -> FromSB3VectorEnv:
    """``venv``, a Stable-Baselines3 ``VecEnv``, as a SAME_STEP Gymnasium vector
    env (a :class:`FromSB3VectorEnv`).

    Raises:
        TypeError: ``venv`` is not an SB3 ``VecEnv``.

    >>> import gymnasium as gym, vecmode
    >>> from stable_baselines3.common.vec_env import DummyVecEnv
    >>> from vecmode.sb3 import from_sb3
    >>> envs = from_sb3(DummyVecEnv([lambda: gym.make("CartPole-v1")] * 2))
    >>> envs.metadata["autoreset_mode"], vecmode.check_stack(envs).ok
    (<AutoresetMode.SAME_STEP: 'SameStep'>, True)
    >>> envs.close()
    """
    return FromSB3VectorEnv(venv)


# ----------------------------------------------------------------- sub-envs
class _SubEnvs:
    """Runs a function on the sub-envs at some indices of a vector env, where it
    can reach them: vecmode's cores (``each``, in their workers too) and any env
    holding its sub-envs in ``envs`` (Gymnasium's ``SyncVectorEnv``). ``run`` is
    None for an env that offers neither (Gymnasium's ``AsyncVectorEnv``)."""

    def __init__(self, envs: VectorEnv) -> None:
        self.inner: Any = envs.unwrapped
        self.num_envs = envs.num_envs
        each = getattr(self.inner, "each", None)
        local = getattr(self.inner, "envs", None)
        #: the SB3 VecEnv under a from_sb3 env: SB3's calls go to it
        self.sb3: VecEnv | None = (
            self.inner.venv if isinstance(self.inner, FromSB3VectorEnv) else None
        )
        #: the sub-envs as objects in this process (the ``envs`` list of vecmode's
        #: and Gymnasium's sync cores, or of a ``DummyVecEnv`` under from_sb3)
        holder = self.inner if self.sb3 is None else self.sb3.unwrapped
        held = getattr(holder, "envs", None)
        self.local: list[gym.Env] | None = (
            held if isinstance(held, list) and self._all_envs(held) else None
        )
        #: no sub-envs as Python objects at all (EnvPool's and ALE's C++ envs)
        self.native = (
            not any(
                callable(getattr(self.inner, name, None))
                for name in ("each", "call", "get_attr")
            )
            and not isinstance(local, (list, tuple))
            and self.sb3 is None
        )
        self.run: Callable[..., tuple[Any, ...]] | None = None
        if callable(each):
            self.run = lambda fn, args, order: each(fn, *args, indices=order)
        elif isinstance(local, (list, tuple)) and self._all_envs(local):
            self.run = lambda fn, args, order: tuple(fn(local[i], *args) for i in order)

    def _all_envs(self, envs: Sequence[Any]) -> bool:
        """Whether ``envs`` holds the ``num_envs`` sub-envs as Gymnasium envs."""
        return len(envs) == self.num_envs and all(
            isinstance(env, gym.Env) for env in envs
        )

    def __call__(
        self, what: str, fn: Callable[..., Any], args: tuple[Any, ...], order: list[int]
    ) -> list[Any]:
        """``fn(sub_env, *args)`` for the sub-envs in ``order``; ``what`` names the
        SB3 call for the error when they are out of reach."""
        if self.native:
            raise AttributeError(no_python_sub_envs(what, self.inner))
        if self.run is None:
            raise AttributeError(out_of_reach(what, self.inner, order))
        try:
            return list(self.run(fn, args, order))
        except SubEnvError as exc:  # SB3 code catches AttributeError (has_attr...)
            if isinstance(exc.__cause__, AttributeError) or exc.exc_type == (
                "AttributeError"
            ):
                raise AttributeError(str(exc)) from exc
            raise

    def every(self, order: list[int]) -> bool:
        return sorted(order) == list(range(self.num_envs))


# ------------------------------------------------------------------ to SB3
class ToSB3VecEnv(VecEnv):
    """A Gymnasium vector env as a Stable-Baselines3 ``VecEnv``; see :func:`to_sb3`.

    It follows SB3's contract as ``DummyVecEnv`` does, call for call:

    * ``reset()`` returns the observations only; the sub-envs' reset infos are in
      ``reset_infos`` (a list of dicts, updated for the sub-envs that were reset
      within a step, too). The seeds of :meth:`seed` and the options of
      :meth:`set_options` apply at the next ``reset()`` and only to it.
    * ``step`` returns ``(observations, rewards, dones, infos)``: rewards as
      float32, ``dones = terminated or truncated``, ``infos`` a list of one dict
      per sub-env, each with ``"TimeLimit.truncated"`` (``truncated and not
      terminated``); for a sub-env whose episode ended, the dict is the ended
      step's info with ``"terminal_observation"`` (a copy of the episode's last
      observation), and the returned observation is the next episode's first.
      Dict observations are ``OrderedDict`` batches, as ``DummyVecEnv``'s.
    * ``step_async`` / ``step_wait`` use the vector env's own split API where it
      has one (vecmode's async core, and every vecmode layer over it), so the
      sub-envs step while the caller goes on.
    * ``get_attr``, ``set_attr``, ``env_method`` and ``env_is_wrapped`` act on
      the sub-envs at ``indices`` only (all by default), in their own processes
      for vecmode's async core, doing what ``DummyVecEnv`` does (``set_attr`` is
      a plain ``setattr`` on the sub-env). ``env_method("step")`` (``reset``,
      ``close``) is refused: it would run behind the vector env's back.
    * ``has_attr`` as SB3's, safe over every env: over :func:`from_sb3`'s env it
      is the SB3 ``VecEnv``'s own (``SubprocVecEnv``'s workers do not survive a
      ``get_attr`` of a missing attribute), over Gymnasium's ``AsyncVectorEnv``
      each sub-env's ``has_wrapper_attr`` (nor does it).
    * ``envs``, the list of sub-envs (``DummyVecEnv``'s), where they are objects
      in this process: over vecmode's and Gymnasium's sync cores and
      ``from_sb3(DummyVecEnv(...))``; elsewhere it raises ``AttributeError``
      (use ``get_attr`` / ``env_method``).
    * Dict and Tuple actions in SB3's layout, a list of ``num_envs`` actions (one
      per sub-env, as ``DummyVecEnv`` takes them), or in Gymnasium's (a dict of
      batches, a tuple of batches); anything else is an
      :class:`~vecmode.errors.ActionBatchError` naming both, raised before
      anything is stepped.
    * ``render`` / ``get_images`` and ``close``.

    Infos come through Gymnasium's batched dicts: a value a sub-env gives as a
    Python ``int``, ``float`` or ``bool`` comes back as the NumPy scalar of that
    type (equal to it), and where sub-envs report one key with different types in
    the same step, Gymnasium has cast them to the first sub-env's. Keys starting
    with ``_`` are the batches' masks, so a sub-env's own such keys are not
    passed on; arrays of one key with different shapes in one step are batched
    by Gymnasium into the first one's shape (broadcast, or an error). Over SAME_STEP's
    policy directly on a vecmode core (what ``to_sb3`` makes of a vecmode env in
    SameStep or Disabled) the bridge runs the core's commands itself, and the ended
    episodes' last infos are the sub-envs' own, from the core's record. In SAME_STEP
    the row of an ended sub-env at the top of a step's info is its reset info
    (it goes to ``reset_infos``), so keys that a vector wrapper adds there for the
    ended episode (``RecordEpisodeStatistics``'s ``"episode"``) end up in
    ``reset_infos``: for SB3's episode statistics, wrap the result in SB3's
    ``VecMonitor`` instead, or the sub-envs in ``Monitor``.

    Over an env whose sub-envs it cannot reach one by one (Gymnasium's
    ``AsyncVectorEnv``): ``get_attr`` asks every sub-env and keeps those asked
    for, ``env_method`` works for every sub-env at once, and ``set_attr`` and
    ``env_is_wrapped`` raise ``AttributeError`` saying why. Over an env with no
    sub-envs as Python objects (EnvPool's, ALE's ``AtariVectorEnv``),
    ``env_is_wrapped`` is False for each (nothing a ``gymnasium.Wrapper`` could
    wrap) and the other three raise ``AttributeError`` saying why. Over
    :func:`from_sb3`'s env, the four are the SB3 ``VecEnv``'s own.

    Attributes:
        vector_env: the SAME_STEP vector env it steps (``envs`` itself, or
            ``envs`` under the autoreset policy :func:`vecmode.with_autoreset`
            added).
    """

    def __init__(self, envs: VectorEnv) -> None:
        if not isinstance(envs, VectorEnv):
            raise TypeError(errors.not_a_vector_env(_TO, envs))
        same = with_autoreset(envs, AutoresetMode.SAME_STEP)
        self.vector_env = same
        self._sub_envs = _SubEnvs(same)
        self._copy_obs = reuses_buffers(same)
        space = same.single_observation_space
        self._dict_keys = list(space.spaces) if isinstance(space, Dict) else None
        # SAME_STEP's policy directly over a vecmode core: the bridge runs its
        # commands on the core itself and reads the core's record (the ended
        # sub-envs' last observations and infos as the sub-envs gave them),
        # instead of building SAME_STEP's info layout to read it back.
        core = getattr(same, "core", None)
        self._core: VectorCore | None = (
            core
            if type(same) is SameStepAutoreset and isinstance(core, VectorCore)
            else None
        )
        self._commands = [int(Command.STEP_THEN_RESET)] * same.num_envs
        # The split API where the stack offers it (a property that raises
        # AttributeError where the env below has none).
        below = same if self._core is None else self._core
        self._send = getattr(below, "step_async", None)
        self._wait = getattr(below, "step_wait", None)
        if self._core is not None and self._send is not None:
            self._send = getattr(self._core, "execute_async", None)
            self._wait = getattr(self._core, "execute_wait", None)
        self._actions: Any = None
        #: Dict and Tuple actions: SB3's per-env list is turned into a batch
        self._structured_actions = isinstance(same.single_action_space, (Dict, Tuple))
        super().__init__(same.num_envs, space, same.single_action_space)
        self.metadata = dict(same.metadata)

    # ------------------------------------------------------------- stepping
    def reset(self) -> VecEnvObs:
        """Reset every sub-env, with the seeds of :meth:`seed` and the options of
        :meth:`set_options` if given since the last reset; the observations (the
        reset infos are in ``reset_infos``)."""
        options = self._options[0] if self._options else None
        seed: Any = _as_vector_seed(self._seeds)
        obs, infos = self.vector_env.reset(seed=seed, options=options or None)
        self._reset_seeds()
        self._reset_options()
        check_infos(infos, _TO)
        self.reset_infos = _copied(infos_to_list(infos, self.num_envs))
        return self._sb3_obs(obs)

    def step_async(self, actions: np.ndarray) -> None:
        """Send the actions (to the vector env's ``step_async`` where it has one)."""
        if self._structured_actions:
            actions = self._gym_actions(actions)
        with _sb3_advice():
            if self._send is None:
                self._actions = actions
            elif self._core is None:
                self._send(actions)
            else:
                self._send(self._commands, actions, name="step")

    def _gym_actions(self, actions: Any) -> Any:
        """Dict or Tuple actions as Gymnasium's batch: SB3's list of one action per
        sub-env is concatenated, Gymnasium's batch passed on; anything else is an
        :class:`~vecmode.errors.ActionBatchError` naming both layouts."""
        space, n = self.action_space, self.num_envs
        if isinstance(actions, list):  # SB3's layout (a list is never a batch here)
            problem = _per_env_problem(space, actions, n)
            if problem is None:
                try:
                    return concatenate(space, actions, empty_batch(space, n))
                except (KeyError, IndexError, TypeError, ValueError) as exc:
                    problem = f"actions could not be batched ({exc})"
        else:
            problem = batch_problem(space, actions, n)
            if problem is None:
                return actions
        raise ActionBatchError(structured_actions(problem, space, n))

    def step_wait(self) -> VecEnvStepReturn:
        """The step sent by :meth:`step_async`, in SB3's layout."""
        with _sb3_advice():
            return self._step_wait()

    def _step_wait(self) -> VecEnvStepReturn:
        if self._wait is not None:
            result = self._wait() if self._core is None else self._wait(name="step")
        else:
            actions, self._actions = self._actions, None
            if actions is None:
                raise RuntimeError(no_step_sent())
            result = (
                self.vector_env.step(actions)
                if self._core is None
                else self._core.execute(self._commands, actions)
            )
        if self._core is not None:
            return self._sb3_record(result)
        return self._sb3_step(result)

    def _sb3_obs(self, obs: Any) -> Any:
        if self._copy_obs:
            obs = copy_batch(obs)
        if self._dict_keys is not None:
            return OrderedDict((key, obs[key]) for key in self._dict_keys)
        return obs

    def _sb3_step(self, result: StepResult) -> VecEnvStepReturn:
        obs, rewards, terminations, truncations, infos = result
        dones = np.logical_or(terminations, truncations)
        if not infos and not np.count_nonzero(dones):  # the common case, fast
            sb3_infos: list[dict[str, Any]] = [
                {TIME_LIMIT_TRUNCATED: False} for _ in range(self.num_envs)
            ]
        else:
            sb3_infos = self._sb3_infos(infos, dones)
            limit = np.logical_and(truncations, np.logical_not(terminations))
            for info, flag in zip(sb3_infos, limit.tolist(), strict=True):
                info[TIME_LIMIT_TRUNCATED] = flag
        # rewards as DummyVecEnv's float32 buffer holds them (a new array)
        return self._sb3_obs(obs), np.array(rewards, dtype=np.float32), dones, sb3_infos

    def _sb3_record(self, executed: Executed) -> VecEnvStepReturn:
        """SB3's step from a vecmode core's record of a SAME_STEP step."""
        obs, rewards, terminations, truncations, infos, _, finals = executed
        dones = np.logical_or(terminations, truncations)
        n = self.num_envs
        if not infos and not finals:  # the common case, fast
            sb3_infos: list[dict[str, Any]] = [
                {TIME_LIMIT_TRUNCATED: False} for _ in range(n)
            ]
        else:
            sb3_infos = (
                _copied(infos_to_list(infos, n)) if infos else [{} for _ in range(n)]
            )
            for i, final_obs, final_info in finals:
                self.reset_infos[i] = sb3_infos[i]
                info = copy.deepcopy(final_info) if final_info else {}
                info[TERMINAL_OBSERVATION] = copy_batch(final_obs)
                sb3_infos[i] = info
            limit = np.logical_and(truncations, np.logical_not(terminations))
            for info, flag in zip(sb3_infos, limit.tolist(), strict=True):
                info[TIME_LIMIT_TRUNCATED] = flag
        return self._sb3_obs(obs), np.array(rewards, dtype=np.float32), dones, sb3_infos

    def _sb3_infos(self, infos: Any, dones: np.ndarray) -> list[dict[str, Any]]:
        """One dict per sub-env: the step's info, or for the ended sub-envs the
        ended step's with the terminal observation (their reset infos go to
        ``reset_infos``)."""
        check_infos(infos, _TO)
        n = self.num_envs
        rest, final_info = without_finals(infos)
        out = _copied(infos_to_list(rest, n)) if rest else [{} for _ in range(n)]
        if not np.count_nonzero(dones):
            return out
        final_obs = final_entries(infos, dones, _TO)
        finals = _copied(infos_to_list(final_info, n)) if final_info else None
        for i in np.flatnonzero(dones).tolist():
            self.reset_infos[i] = out[i]
            info = {} if finals is None else finals[i]
            info[TERMINAL_OBSERVATION] = copy_batch(final_obs[i])
            out[i] = info
        return out

    # ------------------------------------------------------- seeds, options
    def set_options(self, options: list[dict] | dict | None = None) -> None:
        """Options for every sub-env at the next ``reset()``: one dict for all, or
        a list of one per sub-env that are all equal (a vector env's reset passes
        one options dict to every sub-env)."""
        super().set_options(options)
        if len(self._options) != self.num_envs or not all(
            _same_options(o, self._options[0]) for o in self._options
        ):
            got = self._options
            self._reset_options()
            raise ValueError(options_differ(got, self.num_envs))

    # ------------------------------------------------------------- sub-envs
    @property
    def envs(self) -> list[gym.Env]:
        """The sub-envs (``DummyVecEnv``'s ``envs``), where they are objects in this
        process: the ``envs`` list of vecmode's or Gymnasium's sync core, or of the
        ``DummyVecEnv`` under :func:`from_sb3`.

        Raises:
            AttributeError: the sub-envs run in other processes (or outside
                Python): use ``get_attr`` / ``set_attr`` / ``env_method``.
        """
        local = self._sub_envs.local
        if local is None:
            raise AttributeError(no_envs_list(self._sub_envs))
        return local

    def has_attr(self, attr_name: str) -> bool:
        """Whether every sub-env has the attribute (SB3's ``has_attr``): over
        :func:`from_sb3`'s env the SB3 ``VecEnv``'s own (a ``SubprocVecEnv``'s
        workers end at a ``get_attr`` of a missing attribute, not at its
        ``has_attr``), over an env whose sub-envs are out of reach (Gymnasium's
        ``AsyncVectorEnv``, broken for good by such a ``get_attr``) each
        sub-env's ``has_wrapper_attr``, elsewhere ``get_attr`` raising no
        ``AttributeError``, as SB3's base ``VecEnv``."""
        sub_envs = self._sub_envs
        if sub_envs.sb3 is not None:
            return bool(sub_envs.sb3.has_attr(attr_name))
        if sub_envs.run is None and not sub_envs.native:
            # Gymnasium's AsyncVectorEnv: a get_attr of a missing attribute leaves
            # it broken for good (it drops the pipe of the worker that raised)
            return all(sub_envs.inner.call("has_wrapper_attr", attr_name))
        try:
            self.get_attr(attr_name)
        except AttributeError:
            return False
        return True

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """The attribute of the sub-envs at ``indices`` (all by default)."""
        order = check_indices(indices, self.num_envs)
        if self._sub_envs.sb3 is not None:
            return list(self._sub_envs.sb3.get_attr(attr_name, order))
        if self._sub_envs.run is None and not self._sub_envs.native:
            # ask them all, keep those asked for
            values = self._sub_envs.inner.get_attr(attr_name)
            return [values[i] for i in order]
        return self._sub_envs("get_attr", sb3_subenv.get_attr, (attr_name,), order)

    def set_attr(
        self, attr_name: str, value: Any, indices: VecEnvIndices = None
    ) -> None:
        """Set the attribute of the sub-envs at ``indices`` (all by default) to
        ``value`` (a plain ``setattr`` on each, as ``DummyVecEnv``)."""
        order = check_indices(indices, self.num_envs)
        if self._sub_envs.sb3 is not None:
            self._sub_envs.sb3.set_attr(attr_name, value, order)
            return
        self._sub_envs("set_attr", setattr, (attr_name, value), order)

    def env_method(
        self,
        method_name: str,
        *method_args: Any,
        indices: VecEnvIndices = None,
        **method_kwargs: Any,
    ) -> list[Any]:
        """Call the method on the sub-envs at ``indices`` (all by default)."""
        if method_name in FORBIDDEN_CALLS:  # check_call's rule, in SB3's words
            raise ValueError(forbidden_env_method(method_name))
        check_call(method_name)
        order = check_indices(indices, self.num_envs)
        if self._sub_envs.sb3 is not None:
            return list(
                self._sub_envs.sb3.env_method(
                    method_name, *method_args, indices=order, **method_kwargs
                )
            )
        if (
            self._sub_envs.run is None
            and not self._sub_envs.native
            and self._sub_envs.every(order)
        ):
            results = self._sub_envs.inner.call(
                method_name, *method_args, **method_kwargs
            )
            return [results[i] for i in order]
        return self._sub_envs(
            "env_method",
            sb3_subenv.call_method,
            (method_name, method_args, method_kwargs),
            order,
        )

    def env_is_wrapped(
        self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None
    ) -> list[bool]:
        """Whether the sub-envs at ``indices`` (all by default) are wrapped with
        ``wrapper_class``: False for each over an env that has no sub-envs as
        Python objects (EnvPool, ALE: nothing a ``gymnasium.Wrapper`` could
        wrap)."""
        order = check_indices(indices, self.num_envs)
        if self._sub_envs.sb3 is not None:
            return list(self._sub_envs.sb3.env_is_wrapped(wrapper_class, order))
        if self._sub_envs.native:
            return [False] * len(order)
        return self._sub_envs(
            "env_is_wrapped", sb3_subenv.is_wrapped, (wrapper_class,), order
        )

    def get_images(self) -> Sequence[np.ndarray | None]:
        """Each sub-env's ``render()`` (``render_mode="rgb_array"``)."""
        if self.render_mode != "rgb_array":
            warnings.warn(
                f"The render mode is {self.render_mode}, but this method assumes it "
                f"is `rgb_array` to obtain images.",
                stacklevel=2,
            )
            return [None] * self.num_envs
        return self.env_method("render")

    def close(self) -> None:
        """Close the vector env."""
        self.vector_env.close()

    def __repr__(self) -> str:
        return f"ToSB3VecEnv({errors.describe(self.vector_env)})"


@contextlib.contextmanager
def _sb3_advice() -> Iterator[None]:
    """A sub-env's fault, with a note on what an SB3 caller can do about it (the
    message's advice names calls SB3's ``VecEnv`` does not have)."""
    try:
        yield
    except (SubEnvError, EpisodeEndedError) as error:
        add_note = getattr(error, "add_note", None)  # Python >= 3.11
        if add_note is not None:
            add_note(sb3_after_fault())
        raise


def _as_vector_seed(seeds: Sequence[int | None]) -> int | list[int | None] | None:
    """SB3's per-sub-env seeds as a vector env's ``reset(seed=...)`` takes them:
    None for none, ``s`` for ``s, s + 1, ...`` (what SB3's ``seed(s)`` sets), else
    the list."""
    if all(s is None for s in seeds):
        return None
    first = seeds[0]
    if first is not None and list(seeds) == [first + i for i in range(len(seeds))]:
        return int(first)
    return list(seeds)


def _per_env_problem(space: Space, actions: list[Any], num_envs: int) -> str | None:
    """What keeps ``actions`` from being SB3's list of ``num_envs`` Dict or Tuple
    actions (each structured as ``space``); None if nothing does."""
    if len(actions) != num_envs:
        return f"actions is a list of {len(actions)} actions, not {num_envs}"
    for i, action in enumerate(actions):
        problem = _sample_problem(space, action, f"actions[{i}]")
        if problem is not None:
            return problem
    return None


def _sample_problem(space: Space, sample: Any, where: str) -> str | None:
    """What keeps ``sample`` from being structured as one sample of ``space`` (its
    dicts' keys, its tuples' lengths; not its values); None if nothing does."""
    if isinstance(space, Dict):
        if not isinstance(sample, Mapping):
            return (
                f"{where} must be a dict with the keys {list(space.spaces)}, got "
                f"{type(sample).__name__}"
            )
        if sample.keys() != space.spaces.keys():
            return (
                f"{where} has the keys {list(sample)}, where the action space has "
                f"{list(space.spaces)}"
            )
        pairs = [(sub, sample[key], f"{where}[{key!r}]") for key, sub in space.items()]
    elif isinstance(space, Tuple):
        if not isinstance(sample, (tuple, list)) or len(sample) != len(space.spaces):
            return (
                f"{where} must be a tuple of {len(space.spaces)} actions (one per "
                f"subspace), got {type(sample).__name__}"
            )
        pairs = [
            (sub, part, f"{where}[{j}]")
            for j, (sub, part) in enumerate(zip(space.spaces, sample, strict=True))
        ]
    else:
        return None
    for sub, part, at in pairs:
        problem = _sample_problem(sub, part, at)
        if problem is not None:
            return problem
    return None


def _copied(infos: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Deep copies of the non-empty dicts (``DummyVecEnv`` hands out copies, so no
    info shares an object with a sub-env)."""
    return [copy.deepcopy(info) if info else info for info in infos]


def _same_options(a: Any, b: Any) -> bool:
    """Whether two options (dicts, sequences, arrays inside) are equal."""
    if a is b:
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_options(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and type(a) is type(b):
        return len(a) == len(b) and all(map(_same_options, a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.shape(a) == np.shape(b) and bool(np.array_equal(a, b))
    try:
        return bool(a == b)
    except (ValueError, TypeError):  # cannot tell: differ
        return False


# ---------------------------------------------------------------- from SB3
class FromSB3VectorEnv(VectorEnv):
    """A Stable-Baselines3 ``VecEnv`` as a SAME_STEP Gymnasium vector env; see
    :func:`from_sb3`.

    * ``step`` returns Gymnasium's five-tuple: ``terminations = done and not
      info["TimeLimit.truncated"]``, ``truncations = done and
      info["TimeLimit.truncated"]``, rewards as float64 (a ``DummyVecEnv`` has
      already rounded them to float32), and the info dict in SAME_STEP's layout:
      an ended sub-env's ``"terminal_observation"`` in ``info["final_obs"]``, the
      rest of its step info in ``info["final_info"]`` (both masked), its reset
      info (SB3's ``reset_infos``) at the top. ``"TimeLimit.truncated"`` is not
      kept in the info: the flags carry it.
    * A step that is both terminated and truncated reaches SB3 as
      ``TimeLimit.truncated = False``, so it comes back as terminated only:
      Gymnasium's own env reports it truncated too. That is the one difference.
    * ``reset(seed=...)`` seeds sub-env ``i`` with ``seed + i`` (SB3's
      ``seed()``, as Gymnasium's vector envs); a list of seeds other than
      ``[s, s + 1, ...]`` is refused (SB3's ``seed()`` takes one int).
      ``options`` go to every sub-env (SB3's ``set_options``).
    * ``reset(options={"reset_mask": mask})`` resets only the masked sub-envs
      where that is exact: over a bare ``DummyVecEnv`` or ``SubprocVecEnv``,
      which reset a sub-env by itself (``env_method("reset")``) and keep nothing
      else about it that a reset changes. Over SB3's wrappers (``VecNormalize``,
      ``VecFrameStack``, ``VecMonitor``...) it is refused: their state follows
      their own ``reset`` and ``step`` only. DISABLED and NEXT_STEP cannot be had
      at all: SB3 resets an ended sub-env within the step, without asking
      (``with_autoreset`` refuses, as for any SAME_STEP env).
    * Dict and Tuple actions are taken in Gymnasium's batch layout (a dict of
      batches, a tuple of batches) and handed to SB3 as its list of one action
      per sub-env; Box, Discrete, MultiDiscrete and MultiBinary batches as they
      are.
    * ``step_async`` / ``step_wait`` are SB3's own; ``call`` is SB3's
      ``env_method`` (a method is called), ``get_attr`` / ``set_attr`` SB3's.

    Attributes:
        venv: the SB3 ``VecEnv`` it steps.
    """

    def __init__(self, venv: VecEnv) -> None:
        if not isinstance(venv, VecEnv):
            raise TypeError(not_an_sb3_vec_env(venv))
        self.venv = venv
        self.num_envs = venv.num_envs
        self.single_observation_space = venv.observation_space
        self.single_action_space = venv.action_space
        self.observation_space = batch_space(venv.observation_space, self.num_envs)
        self.action_space = batch_space(venv.action_space, self.num_envs)
        self.metadata = {
            **(getattr(venv, "metadata", None) or {}),
            "autoreset_mode": AutoresetMode.SAME_STEP,
        }
        self.render_mode = venv.render_mode
        self._last_obs: Any = None
        #: Dict and Tuple actions: Gymnasium's batch is turned into SB3's list
        self._structured_actions = isinstance(venv.action_space, (Dict, Tuple))
        #: Why a masked reset cannot be exact over ``venv`` (None: it can).
        self._no_masked_reset = masked_reset_refused(venv)

    def _open(self) -> None:
        """Refuse a call on a closed env (SB3's own VecEnvs differ: a
        ``DummyVecEnv`` goes on, a ``SubprocVecEnv`` raises ``OSError``)."""
        if self.closed:
            raise ClosedEnvironmentError(env_closed(type(self).__name__))

    # ------------------------------------------------------------- stepping
    def reset(
        self, *, seed: Any = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset every sub-env, or those in ``options["reset_mask"]``."""
        self._open()
        seed, options, mask = reset_arguments(self, seed, options)
        seeds = self._seeds(seed)
        rest = {k: v for k, v in (options or {}).items() if k != "reset_mask"}
        if mask is not None:
            return self._masked_reset(seeds, rest, mask)
        if seeds is not None:
            self.venv.seed(seeds[0])
        if rest:
            self.venv.set_options(rest)
        obs = self._gym_obs(self.venv.reset())
        infos: dict[str, Any] = {}
        for i, info in enumerate(self.venv.unwrapped.reset_infos):
            if info:
                infos = self._add_info(infos, info, i)
        self._last_obs = obs
        return obs, infos

    def _seeds(self, seed: Any) -> list[int | None] | None:
        if seed is None:
            return None
        if (
            isinstance(seed, (list, tuple))
            and len(seed) == self.num_envs
            and all(s is None for s in seed)
        ):  # no seed for any sub-env (Gymnasium's envs take it)
            return None
        if is_int(seed):
            return [int(seed) + i for i in range(self.num_envs)]
        if isinstance(seed, (list, tuple)) and len(seed) and is_int(seed[0]):
            first = int(seed[0])
            if list(seed) == [first + i for i in range(self.num_envs)]:
                return list(seed)
        raise SeedError(one_seed(seed, self.num_envs))

    def _masked_reset(
        self, seeds: list[int | None] | None, rest: dict[str, Any], mask: np.ndarray
    ) -> tuple[Any, dict[str, Any]]:
        if self._no_masked_reset is not None:
            raise ValueError(self._no_masked_reset)
        if self._last_obs is None:
            raise gym.error.ResetNeeded(masked_reset_first())
        if not np.count_nonzero(mask):  # vecmode's convention: a no-op
            return copy_batch(self._last_obs), {}
        singles = list(iterate_batch(self.observation_space, self._last_obs))
        infos: dict[str, Any] = {}
        for i in np.flatnonzero(mask).tolist():
            ((singles[i], info),) = self.venv.env_method(
                "reset",
                seed=None if seeds is None else seeds[i],
                options=rest,
                indices=[i],
            )
            if info:
                infos = self._add_info(infos, info, i)
        space = self.single_observation_space
        obs = concatenate(space, singles, empty_batch(space, self.num_envs))
        self._last_obs = obs
        return obs, infos

    def step(self, actions: Any) -> StepResult:
        """Step every sub-env; SB3 resets those whose episode ends."""
        self._open()
        return self._gym_step(self.venv.step(self._sb3_actions(actions)))

    def step_async(self, actions: Any) -> None:
        """Send a step (SB3's ``step_async``)."""
        self._open()
        self.venv.step_async(self._sb3_actions(actions))

    def _sb3_actions(self, actions: Any) -> Any:
        """Gymnasium's batch of Dict or Tuple actions as SB3's list of one action
        per sub-env (Gymnasium's ``iterate``); array batches as they are."""
        if not self._structured_actions:
            return actions
        space = self.single_action_space
        problem = batch_problem(space, actions, self.num_envs)
        if problem is not None:
            raise ActionBatchError(gym_actions_only(problem, space, self.num_envs))
        return list(iterate(self.action_space, actions))

    def step_wait(self, timeout: float | None = None) -> StepResult:
        """The step sent by :meth:`step_async` (SB3's ``step_wait`` has no
        timeout: pass None)."""
        if timeout is not None:
            raise ValueError(no_timeout(timeout))
        return self._gym_step(self.venv.step_wait())

    def _gym_obs(self, obs: Any) -> Any:
        return _as_batch(self.observation_space, obs)

    def _gym_step(self, result: Any) -> StepResult:
        obs, rewards, dones, sb3_infos = result
        n = self.num_envs
        dones = np.asarray(dones, dtype=np.bool_)
        limit = np.fromiter(
            (bool(info.get(TIME_LIMIT_TRUNCATED, False)) for info in sb3_infos),
            dtype=np.bool_,
            count=n,
        )
        reset_infos = self.venv.unwrapped.reset_infos
        infos: dict[str, Any] = {}
        finals = []
        for i, sb3_info in enumerate(sb3_infos):
            info = {k: v for k, v in sb3_info.items() if k not in _SB3_KEYS}
            if dones[i]:
                if TERMINAL_OBSERVATION not in sb3_info:
                    raise ValueError(no_terminal_observation(i))
                finals.append((i, sb3_info[TERMINAL_OBSERVATION], info))
                info = reset_infos[i]
            if info:
                infos = self._add_info(infos, info, i)
        obs = self._gym_obs(obs)
        self._last_obs = obs
        return (
            obs,
            np.asarray(rewards, dtype=np.float64),
            dones & ~limit,
            dones & limit,
            same_step_infos(infos, finals, n, self._add_info),
        )

    # ------------------------------------------------------------- sub-envs
    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call method ``name`` of every sub-env (SB3's ``env_method``)."""
        self._open()
        check_call(name)
        return tuple(self.venv.env_method(name, *args, **kwargs))

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """The attribute ``name`` of every sub-env (SB3's ``get_attr``)."""
        self._open()
        return tuple(self.venv.get_attr(name))

    def set_attr(self, name: str, values: Any) -> None:
        """Set attribute ``name`` of every sub-env: one value for all, or a list or
        tuple of one per sub-env (as Gymnasium's)."""
        self._open()
        if not isinstance(values, (list, tuple)):
            self.venv.set_attr(name, values)
            return
        if len(values) != self.num_envs:
            raise ValueError(errors.set_attr_values(len(values), self.num_envs))
        for i, value in enumerate(values):
            self.venv.set_attr(name, value, indices=[i])

    def render(self) -> tuple[Any, ...] | None:
        """Each sub-env's frame (``render()`` on each)."""
        return self.call("render")

    def close_extras(self, **kwargs: Any) -> None:
        """Close the SB3 ``VecEnv``."""
        self.venv.close()

    def __repr__(self) -> str:
        return f"FromSB3VectorEnv({type(self.venv).__name__}, num_envs={self.num_envs})"


def _as_batch(space: Space, obs: Any) -> Any:
    """SB3's batch in Gymnasium's layout: plain dicts, the space's dtypes (a
    ``SubprocVecEnv`` stacks what the sub-envs return, as they return it)."""
    if isinstance(space, Dict):
        return {key: _as_batch(sub, obs[key]) for key, sub in space.spaces.items()}
    if isinstance(space, Tuple):
        return tuple(
            _as_batch(sub, part) for sub, part in zip(space.spaces, obs, strict=True)
        )
    if isinstance(space, (Box, Discrete, MultiBinary, MultiDiscrete)):
        return np.asarray(obs, dtype=space.dtype)
    return obs


def masked_reset_refused(venv: VecEnv) -> str | None:
    """Why ``reset(options={"reset_mask": ...})`` cannot be exact over ``venv``,
    or None: it can over a bare ``DummyVecEnv`` or ``SubprocVecEnv``."""
    if isinstance(venv, (DummyVecEnv, SubprocVecEnv)):
        return None
    return masked_reset_not_exact(type(venv).__name__)


# ------------------------------------------------------------------ messages
def out_of_reach(what: str, inner: Any, order: list[int]) -> str:
    return (
        f"ToSB3VecEnv.{what}() cannot reach sub-env(s) {order} of "
        f"{type(inner).__name__}: it offers no way to run a call on chosen sub-envs "
        f"(it only gets attributes and calls methods on every sub-env at once, as "
        f"Gymnasium's AsyncVectorEnv does). Build the env with "
        f"vecmode.AsyncVectorEnv (vecmode.make_vec(..., vectorization_mode="
        f"'async')), whose workers run SB3's calls on the sub-envs asked for."
    )


def no_python_sub_envs(what: str, inner: Any) -> str:
    return (
        f"ToSB3VecEnv.{what}() has no sub-env to reach in {type(inner).__name__}: "
        f"it runs its sub-envs outside Python (no gymnasium.Env objects, no "
        f"get_attr or call), so there is no attribute or method of a sub-env to "
        f"get, set or call. Ask the vector env itself instead."
    )


def no_envs_list(sub_envs: _SubEnvs) -> str:
    inner = type(sub_envs.inner).__name__
    if sub_envs.sb3 is not None:
        inner = f"from_sb3({type(sub_envs.sb3.unwrapped).__name__})"
    where = (
        "outside Python (no gymnasium.Env objects)"
        if sub_envs.native
        else "in other processes"
    )
    return (
        f"ToSB3VecEnv.envs (DummyVecEnv's list of sub-envs) is only there when the "
        f"sub-envs are objects in this process; {inner} runs its sub-envs {where}. "
        f"Use get_attr / set_attr / env_method (with indices=...) to reach them."
    )


def _layouts(space: Space, num_envs: int) -> str:
    """Gymnasium's batch layout of Dict or Tuple actions, in words."""
    if isinstance(space, Dict):
        return (
            f"a dict with the keys {list(space.spaces)}, each a batch of "
            f"{num_envs} (as env.action_space.sample() of the vector env)"
        )
    parts = len(space.spaces) if isinstance(space, Tuple) else "its"
    return (
        f"a tuple of {parts} batches of {num_envs}, one per subspace "
        f"(as env.action_space.sample() of the vector env)"
    )


def structured_actions(problem: str, space: Space, num_envs: int) -> str:
    return (
        f"{problem}; nothing was stepped. For the action space {space}, pass "
        f"either SB3's layout, a list of {num_envs} actions (one per sub-env, each "
        f"like venv.action_space.sample()), or Gymnasium's batch layout, "
        f"{_layouts(space, num_envs)}."
    )


def gym_actions_only(problem: str, space: Space, num_envs: int) -> str:
    return (
        f"{problem}; nothing was stepped. from_sb3's env is a Gymnasium vector "
        f"env: for the action space {space}, pass Gymnasium's batch layout, "
        f"{_layouts(space, num_envs)} (SB3's list of one action per sub-env is "
        f"for the SB3 VecEnv itself, envs.venv)."
    )


def sb3_after_fault() -> str:
    return (
        "Through to_sb3: call reset() on the VecEnv (it resets every sub-env; SB3's "
        "VecEnv has no masked reset), or close() it."
    )


def no_step_sent() -> str:
    return "step_wait() was called without step_async(actions) first."


def options_differ(got: Any, num_envs: int) -> str:
    return (
        f"set_options() got {got!r}: a vector env's reset passes one options dict to "
        f"every sub-env, so pass one dict (or a list of {num_envs} equal dicts)."
    )


def not_an_sb3_vec_env(got: Any) -> str:
    return (
        f"{_FROM} takes a stable_baselines3 VecEnv (DummyVecEnv, SubprocVecEnv, or "
        f"SB3's wrappers around one), got {type(got).__name__}; for a Gymnasium "
        f"vector env, use it as it is."
    )


def forbidden_env_method(name: str) -> str:
    instead = (
        "venv.step_async(actions) / venv.step_wait()"
        if name == "step"
        else f"venv.{name}() (all sub-envs: SB3's VecEnv has no {name} of some)"
    )
    return (
        f"env_method({name!r}) would run the sub-envs' {name} behind the VecEnv's "
        f"back (its record of ended sub-envs would be wrong); use {instead}."
    )


def one_seed(got: Any, num_envs: int) -> str:
    return (
        f"seed must be None or an int for an SB3 VecEnv (sub-env i gets seed + i: "
        f"SB3's seed() takes one), or the list of {num_envs} seeds that makes, got "
        f"{type(got).__name__} {got!r}."
    )


def masked_reset_first() -> str:
    return (
        'reset(options={"reset_mask": mask}) needs a full reset() first: until '
        "then the other sub-envs' observations are unknown."
    )


def masked_reset_not_exact(name: str) -> str:
    return (
        f'reset(options={{"reset_mask": ...}}) cannot be exact over {name}: SB3\'s '
        f"VecEnv API has no reset of some sub-envs, and resetting one behind an "
        f"SB3 wrapper (VecNormalize, VecFrameStack, VecMonitor, ...) would leave "
        f"the wrapper's state for it stale (statistics, the frame stack, episode "
        f"counters). Reset every sub-env with reset(), or do the masked reset over "
        f"from_sb3(DummyVecEnv(...)) or from_sb3(SubprocVecEnv(...)) and put the "
        f"wrappers on the vecmode side (vecmode.wrappers)."
    )


def no_timeout(got: Any) -> str:
    return (
        f"step_wait(timeout={got!r}): an SB3 VecEnv's step_wait() takes no timeout; "
        f"pass None."
    )


def no_terminal_observation(i: int) -> str:
    return (
        f"the SB3 VecEnv reported sub-env {i} done without "
        f"info['{TERMINAL_OBSERVATION}'] (SB3's VecEnvs put the ended episode's last "
        f"observation there), so its final observation is lost."
    )
