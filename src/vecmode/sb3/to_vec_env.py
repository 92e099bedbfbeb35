"""A Gymnasium vector env as an SB3 ``VecEnv`` (:func:`to_sb3`): SAME_STEP's layout
written in SB3's ``terminal_observation`` and ``TimeLimit.truncated``."""

from __future__ import annotations

import contextlib
import copy
import functools
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import Space
from gymnasium.spaces import Dict, Tuple
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import concatenate
from stable_baselines3.common.preprocessing import check_for_nested_spaces
from stable_baselines3.common.vec_env import VecEnv
from stable_baselines3.common.vec_env.base_vec_env import (
    VecEnvIndices,
    VecEnvObs,
    VecEnvStepReturn,
)

from vecmode import core, errors, sb3_subenv
from vecmode.autoreset import SameStepAutoreset, with_autoreset
from vecmode.env_classes import layers
from vecmode.modes import final_entries, final_in_info, mode_of, without_finals
from vecmode.registry.stack import check_stack, warn_if_incompatible
from vecmode.sb3 import from_vec_env
from vecmode.wrappers.base import check_infos, empty_batch, lists_infos
from vecmode.wrappers.common import RecordEpisodeStatistics
from vecmode.wrappers.dict_info_to_list import infos_to_list

_TO = "vecmode.sb3.to_sb3"

#: The note a sub-env's fault gets on its way to an SB3 caller.
AFTER_A_FAULT = (
    "Through to_sb3 (SB3's VecEnv has no masked reset): call reset() on the "
    "VecEnv, which resets every sub-env, or close() it."
)


def to_sb3(envs: VectorEnv) -> ToSB3VecEnv:
    """``envs`` as a Stable-Baselines3 ``VecEnv`` (a :class:`ToSB3VecEnv`).

    >>> import numpy as np, vecmode
    >>> from vecmode.sb3 import to_sb3
    >>> venv = to_sb3(vecmode.make_vec("CartPole-v1", 2, "sync", max_episode_steps=1))
    >>> obs = venv.reset()
    >>> obs, rewards, dones, infos = venv.step(np.array([1, 0]))
    >>> dones, infos[0]["TimeLimit.truncated"], infos[0]["terminal_observation"].shape
    (array([ True,  True]), True, (4,))
    >>> venv.close()
    """
    return ToSB3VecEnv(envs)


class ToSB3VecEnv(VecEnv):
    """A Gymnasium vector env as a Stable-Baselines3 ``VecEnv`` that answers as
    ``DummyVecEnv`` does over the same sub-envs (see ``docs/integrations.md``).
    ``envs`` declares its mode: :func:`vecmode.with_autoreset` converts it to
    SAME_STEP (``vector_env``), or refuses where that would not be exact."""

    def __init__(self, envs: VectorEnv) -> None:
        if not isinstance(envs, VectorEnv):
            raise TypeError(errors.not_a_vector_env(_TO, envs))
        try:  # as DummyVecEnv: SB3's buffers hold one level of Dict or Tuple
            check_for_nested_spaces(envs.single_observation_space)
        except NotImplementedError as exc:
            raise NotImplementedError(
                f"{_TO} cannot take the observation space "
                f"{envs.single_observation_space}: it has a Dict or Tuple inside a "
                f"Dict or Tuple, which SB3's VecEnvs and buffers cannot hold "
                f"(DummyVecEnv raises NotImplementedError too). Flatten the inner "
                f"spaces, e.g. with gymnasium.wrappers.FlattenObservation on each "
                f"sub-env."
            ) from exc
        if lists_infos(envs):
            raise TypeError(
                f"{_TO} reads Gymnasium's batched dict infos and makes SB3's list "
                f"of infos itself: leave DictInfoToList out."
            )
        same = with_autoreset(envs, AutoresetMode.SAME_STEP)
        warn_if_incompatible(same, _TO, stacklevel=4)  # (to_sb3's caller)
        self.vector_env = same
        self._reach_sub_envs(same)
        self._copy_obs = core.reuses_buffers(same)
        space = same.single_observation_space
        self._dict_keys = list(space.spaces) if isinstance(space, Dict) else None
        self._structured_actions = isinstance(same.single_action_space, (Dict, Tuple))
        self._actions: Any = None
        self._split_api(same)
        # the keys where RecordEpisodeStatistics in SameStep puts an ended
        # episode's statistics: in the infos, beside the next one's reset info
        recorders = (
            RecordEpisodeStatistics,
            gym.wrappers.vector.RecordEpisodeStatistics,
        )
        found = [layer for layer in layers(same) if isinstance(layer, recorders)]
        self._stats_keys = {
            layer._stats_key
            for layer in found
            if (mode := mode_of(layer)) is not None and final_in_info(mode)
        }
        # whether masked resets work now (vecmode's cores: before a first reset too)
        self._masked_resets = isinstance(self._inner, core.VectorCore)
        with warnings.catch_warnings():  # (sub-envs out of reach: the env's own)
            warnings.filterwarnings("ignore", "The `render_mode` attribute is not")
            super().__init__(same.num_envs, space, same.single_action_space)
        self.render_mode = self.render_mode or getattr(same, "render_mode", None)
        self.metadata = dict(same.metadata)

    def _reach_sub_envs(self, same: VectorEnv) -> None:
        """How SB3's calls reach the sub-envs: from_sb3's VecEnv, objects, ``each``."""
        self._inner: Any = same.unwrapped
        inner = self._inner
        self._sb3 = (
            inner.venv if isinstance(inner, from_vec_env.FromSB3VectorEnv) else None
        )
        held = getattr(inner if self._sb3 is None else self._sb3.unwrapped, "envs", ())
        local = isinstance(held, (list, tuple)) and len(held) == same.num_envs
        local = local and all(isinstance(env, gym.Env) for env in held)
        self._local: Sequence[gym.Env] | None = held if local else None
        self._each = getattr(inner, "each", None)
        unreachable = (
            self._sb3 is None and self._local is None and not callable(self._each)
        )
        # calls on every sub-env at once only (Gymnasium's AsyncVectorEnv)
        self._all_at_once = unreachable and any(
            callable(getattr(inner, name, None)) for name in ("call", "get_attr")
        )
        # no sub-envs as Python objects (EnvPool's and ALE's C++ envs)
        self._native = unreachable and not self._all_at_once

    def _split_api(self, same: VectorEnv) -> None:
        """A step as ``_step``, or ``_send`` then ``_wait``; on a core, the core's."""
        inner = getattr(same, "core", None)
        self._send: Callable[[Any], Any] | None = None
        self._wait: Callable[[], Any] | None = None
        fast = type(same) is SameStepAutoreset and same.schedule is None
        if fast and isinstance(inner, core.VectorCore):  # (a schedule: its seeds)
            commands = [int(core.Command.STEP_THEN_RESET)] * same.num_envs
            self._step: Callable[[Any], Any] = functools.partial(
                inner.execute, commands
            )
            self._read: Callable[[Any], VecEnvStepReturn] = self._from_record
            send = getattr(inner, "execute_async", None)
            wait = getattr(inner, "execute_wait", None)
            if send is not None and wait is not None:
                self._send = functools.partial(send, commands, name="step")
                self._wait = functools.partial(wait, name="step")
        else:
            self._step, self._read = same.step, self._from_layout
            self._send = getattr(same, "step_async", None)
            if self._send is not None:
                self._wait = same.step_wait  # type: ignore[attr-defined]

    # ------------------------------------------------------------- stepping
    def reset(self) -> VecEnvObs:
        """Reset every sub-env with the pending seeds and options; sub-envs given
        different options are reset by masked resets, one per distinct dict."""
        # SB3's seed(s) sets s, s + 1, ...
        seed: Any = from_vec_env.first_of_run(self._seeds)
        if seed is None and any(s is not None for s in self._seeds):
            seed = list(self._seeds)
        groups = _option_groups(self._options)
        if seed is not None and len(groups) > 1 and check_stack(self.vector_env).seeded:
            self._reset_seeds()
            self._reset_options()
            raise errors.SeedError(
                f"{_TO}: under an episode seed schedule, seed() restarts the "
                f"schedule with a full reset, while different options per sub-env "
                f"take a masked reset each, with scheduled seeds: not both in one "
                f"reset(). Both were dropped; call seed() and reset(), then "
                f"set_options() and reset()."
            )
        reset_infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        for options, indices in groups:
            if len(groups) > 1:
                mask = np.isin(np.arange(self.num_envs), indices)
                options = {**options, "reset_mask": mask}
            obs, infos = self.vector_env.reset(seed=seed, options=options or None)
            check_infos(infos, _TO)
            listed = infos_to_list(infos, self.num_envs)
            for i in indices:
                reset_infos[i] = listed[i]
        self._masked_resets = True
        self._reset_seeds()
        self._reset_options()
        # DummyVecEnv hands out copies: no info shares an object with a sub-env
        self.reset_infos = copy.deepcopy(reset_infos)
        return self._sb3_obs(obs)

    def step_async(self, actions: np.ndarray) -> None:
        """Send the actions (to the vector env's ``step_async`` where it has one)."""
        if self._structured_actions:
            actions = self._gym_actions(actions)
        if self._send is None:
            self._actions = actions
            return
        with _sb3_advice():
            self._send(actions)

    def step_wait(self) -> VecEnvStepReturn:
        """The step sent by :meth:`step_async`, in SB3's layout."""
        with _sb3_advice():
            if self._wait is not None:
                return self._read(self._wait())
            actions, self._actions = self._actions, None
            if actions is None:
                raise RuntimeError(
                    "step_wait() was called without step_async(actions) first."
                )
            return self._read(self._step(actions))

    def _gym_actions(self, actions: Any) -> Any:
        """Dict or Tuple actions (SB3's list, or Gymnasium's batch) as a batch."""
        space, n = self.action_space, self.num_envs
        if not isinstance(actions, list):  # Gymnasium's batch (a list is never one)
            problem = core.batch_problem(space, actions, n)
            if problem is None:
                return actions
        elif len(actions) != n:
            problem = f"actions is a list of {len(actions)} actions, not {n}"
        else:  # SB3's layout
            found = (
                _sample_problem(space, a, f"actions[{i}]")
                for i, a in enumerate(actions)
            )
            problem = next(filter(None, found), None)
            if problem is None:
                try:
                    return concatenate(space, actions, empty_batch(space, n))
                except (KeyError, IndexError, TypeError, ValueError) as exc:
                    problem = f"actions could not be batched ({exc})"
        sb3 = (
            f"or SB3's layout, a list of {n} actions (one per sub-env, each like "
            f"venv.action_space.sample())"
        )
        raise errors.ActionBatchError(
            from_vec_env.action_batch_message(problem, space, n, sb3)
        )

    def _from_layout(self, result: core.StepResult) -> VecEnvStepReturn:
        """SB3's step from a step in SAME_STEP's layout."""
        obs, rewards, terminations, truncations, infos = result
        check_infos(infos, _TO)
        rest, final_info = without_finals(infos)
        ended = np.logical_or(terminations, truncations)
        finals = []
        if np.count_nonzero(ended):
            final_obs = final_entries(infos, ended, _TO)
            final_infos = infos_to_list(final_info or {}, self.num_envs)
            rows = np.flatnonzero(ended).tolist()
            finals = [(i, final_obs[i], final_infos[i]) for i in rows]
        return self._sb3_step((obs, rewards, terminations, truncations, rest), finals)

    def _from_record(self, executed: core.Executed) -> VecEnvStepReturn:
        """SB3's step from a vecmode core's record of a SAME_STEP step."""
        return self._sb3_step(executed[:5], executed.finals)

    def _sb3_step(
        self, result: Sequence[Any], finals: Sequence[tuple[int, Any, dict[str, Any]]]
    ) -> VecEnvStepReturn:
        """SB3's step; an ended sub-env's reset info goes to ``reset_infos``."""
        obs, rewards, terminations, truncations, infos = result
        n = self.num_envs
        if not infos and not finals:  # the common case, fast
            sb3_infos = [{from_vec_env.TIME_LIMIT_TRUNCATED: False} for _ in range(n)]
        else:
            sb3_infos = copy.deepcopy(infos_to_list(infos or {}, n))
            for i, final_obs, final_info in finals:
                self.reset_infos[i] = reset_info = sb3_infos[i]
                sb3_infos[i] = copy.deepcopy(final_info) if final_info else {}
                for key in self._stats_keys & reset_info.keys() - sb3_infos[i].keys():
                    sb3_infos[i][key] = reset_info.pop(key)  # (a sub-env's own kept)
                sb3_infos[i][from_vec_env.TERMINAL_OBSERVATION] = core.copy_batch(
                    final_obs
                )
            limit = np.logical_and(truncations, np.logical_not(terminations))
            for info, flag in zip(sb3_infos, limit.tolist(), strict=True):
                info[from_vec_env.TIME_LIMIT_TRUNCATED] = flag
        # rewards as DummyVecEnv's float32 buffer holds them (a new array)
        rewards = np.array(rewards, dtype=np.float32)
        dones = np.logical_or(terminations, truncations)
        return self._sb3_obs(obs), rewards, dones, sb3_infos

    def _sb3_obs(self, obs: Any) -> Any:
        if self._copy_obs:
            obs = core.copy_batch(obs)
        if self._dict_keys is not None:
            return OrderedDict((key, obs[key]) for key in self._dict_keys)
        return obs

    def set_options(self, options: list[dict] | dict | None = None) -> None:
        """Options for the sub-envs' next ``reset()``: one dict for all, or a list
        of one dict per sub-env."""
        if isinstance(options, (list, tuple)) and len(options) != self.num_envs:
            raise ValueError(
                f"set_options() got a list of {len(options)} options; pass one "
                f"dict for every sub-env, or a list of {self.num_envs} (one each)."
            )
        super().set_options(options)
        if not self._masked_resets and len(_option_groups(self._options)) > 1:
            self._reset_options()
            raise ValueError(
                f"set_options() got different options for the sub-envs, which reach "
                f"them through masked resets, and {errors.describe(self._inner)} "
                f"takes none before its first reset. Call reset() once first, or "
                f"build the env on vecmode's cores."
            )

    # ------------------------------------------------------------- sub-envs
    @property
    def envs(self) -> Sequence[gym.Env]:
        """The sub-envs, where they are objects in this process."""
        if self._local is not None:
            return self._local
        inner = type(self._inner).__name__
        if self._sb3 is not None:
            inner = f"from_sb3({type(self._sb3.unwrapped).__name__})"
        where = "outside Python" if self._native else "in other processes"
        raise AttributeError(
            f"ToSB3VecEnv.envs is only there when the sub-envs are objects in this "
            f"process; {inner} runs them {where}. Use get_attr / set_attr / "
            f"env_method (with indices=...) instead."
        )

    def has_attr(self, attr_name: str) -> bool:
        """Whether every sub-env has the attribute (no worker dies of a missing one)."""
        if self._sb3 is not None:
            return bool(self._sb3.has_attr(attr_name))
        if self._all_at_once:  # a get_attr of a missing attribute breaks it for good
            return all(self._inner.call("has_wrapper_attr", attr_name))
        return super().has_attr(attr_name)

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """The attribute of the sub-envs at ``indices`` (all by default)."""
        order = core.check_indices(indices, self.num_envs)
        if self._all_at_once:  # ask them all, keep those asked for
            if not self.has_attr(attr_name):  # (else its workers die)
                raise AttributeError(f"a sub-env has no attribute {attr_name!r}")
            values = self._inner.get_attr(attr_name)
            return [values[i] for i in order]
        return self._on("get_attr", sb3_subenv.get_attr, (attr_name,), order)

    def set_attr(
        self, attr_name: str, value: Any, indices: VecEnvIndices = None
    ) -> None:
        """Set the attribute of the sub-envs at ``indices`` (all by default)."""
        order = core.check_indices(indices, self.num_envs)
        self._on("set_attr", setattr, (attr_name, value), order)

    def env_method(
        self,
        method_name: str,
        *method_args: Any,
        indices: VecEnvIndices = None,
        **method_kwargs: Any,
    ) -> list[Any]:
        """Call the method on the sub-envs at ``indices`` (all by default)."""
        if method_name in core.FORBIDDEN_CALLS:  # check_call's rule, in SB3's words
            instead = (
                "venv.step_async(actions) / venv.step_wait()"
                if method_name == "step"
                else f"venv.{method_name}() (all sub-envs: SB3's VecEnv has no "
                f"{method_name} of some)"
            )
            raise ValueError(
                f"env_method({method_name!r}) would run the sub-envs' {method_name} "
                f"behind the VecEnv's back; use {instead}."
            )
        order = core.check_indices(indices, self.num_envs)
        args, kwargs = method_args, method_kwargs
        if self._sb3 is not None:
            return list(
                self._sb3.env_method(method_name, *args, indices=order, **kwargs)
            )
        if self._all_at_once and sorted(order) == list(range(self.num_envs)):
            results = self._inner.call(method_name, *args, **kwargs)
            return [results[i] for i in order]
        call = (method_name, args, kwargs)
        return self._on("env_method", sb3_subenv.call_method, call, order)

    def env_is_wrapped(
        self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None
    ) -> list[bool]:
        """Whether the sub-envs at ``indices`` are wrapped with ``wrapper_class``."""
        order = core.check_indices(indices, self.num_envs)
        if self._native:
            return [False] * len(order)
        what = (wrapper_class,)
        return self._on("env_is_wrapped", sb3_subenv.is_wrapped, what, order)

    def _on(
        self, what: str, fn: Callable[..., Any], args: tuple[Any, ...], order: list[int]
    ) -> Any:
        """``fn(sub_env, *args)`` on the sub-envs in ``order``; from_sb3's ``what``."""
        if self._sb3 is not None:
            return getattr(self._sb3, what)(*args, indices=order)
        name = type(self._inner).__name__
        if self._native:
            raise AttributeError(
                f"ToSB3VecEnv.{what}() has no sub-env to reach in {name}: it runs its "
                f"sub-envs outside Python. Ask the vector env itself instead."
            )
        each, local = self._each, self._local
        try:
            if callable(each):
                return list(each(fn, *args, indices=order))
            if local is not None:
                return [fn(local[i], *args) for i in order]
        except errors.SubEnvError as exc:  # SB3's code catches AttributeError
            missing = exc.exc_type == "AttributeError"
            if missing or isinstance(exc.__cause__, AttributeError):
                raise AttributeError(str(exc)) from exc
            raise
        raise AttributeError(
            f"ToSB3VecEnv.{what}() cannot reach sub-env(s) {order} of {name}: it runs "
            f"only Gymnasium's calls on its sub-envs, on all at once, and SB3's "
            f"{what} is not one of them. Build the env with "
            f"vecmode.AsyncVectorEnv (make_vec(..., vectorization_mode='async')), "
            f"whose workers run SB3's calls on the sub-envs asked for."
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
    """A sub-env's fault, with a note on what an SB3 caller can do about it."""
    try:
        yield
    except (errors.SubEnvError, errors.EpisodeEndedError) as error:
        add_note = getattr(error, "add_note", None)  # Python >= 3.11
        if add_note is not None:
            add_note(AFTER_A_FAULT)
        elif len(error.args) == 1 and isinstance(error.args[0], str):
            error.args = (f"{error.args[0]}\n{AFTER_A_FAULT}",)
        raise


def _sample_problem(space: Space, sample: Any, where: str) -> str | None:
    """What keeps ``sample`` from having ``space``'s keys and lengths, or None."""
    if isinstance(space, Dict):
        keys = list(space.spaces)
        if not isinstance(sample, Mapping):
            kind = type(sample).__name__
            return f"{where} must be a dict with the keys {keys}, got {kind}"
        if sample.keys() != space.spaces.keys():
            got = list(sample)
            return f"{where} has the keys {got}, where the action space has {keys}"
        parts = [(space[key], sample[key], f"{where}[{key!r}]") for key in keys]
    elif isinstance(space, Tuple):
        size = len(space.spaces)
        if not isinstance(sample, (tuple, list)) or len(sample) != size:
            return (
                f"{where} must be a tuple of {size} actions (one per subspace), "
                f"got {type(sample).__name__}"
            )
        parts = [
            (sub, sample[j], f"{where}[{j}]") for j, sub in enumerate(space.spaces)
        ]
    else:
        return None
    return next(filter(None, (_sample_problem(*part) for part in parts)), None)


def _option_groups(options: Sequence[dict]) -> list[tuple[dict, list[int]]]:
    """The sub-envs' indices grouped by equal options (SB3's one dict each)."""
    groups: list[tuple[dict, list[int]]] = []
    for i, option in enumerate(options):
        group = next((g for g in groups if _same_options(g[0], option or {})), None)
        if group is None:
            groups.append((option or {}, [i]))
        else:
            group[1].append(i)
    return groups


def _same_options(a: Any, b: Any) -> bool:
    """Whether two options (dicts, sequences, arrays inside) are equal."""
    if a is b:
        return True
    if type(a) is not type(b):  # (True == 1, but a sub-env is given what it was)
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same_options(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(map(_same_options, a, b))
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)
    try:
        return bool(a == b)
    except (ValueError, TypeError):  # cannot tell: differ
        return False
