"""An SB3 ``VecEnv`` as a SAME_STEP Gymnasium vector env (:func:`from_sb3`): SB3's
``terminal_observation`` and ``TimeLimit.truncated`` read into SAME_STEP's layout."""

from __future__ import annotations

import contextlib
import multiprocessing.connection
import time
import traceback
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import Space
from gymnasium.spaces import Box, Dict, Discrete, MultiBinary, MultiDiscrete, Tuple
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space, concatenate, iterate
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv

from vecmode import core, errors
from vecmode.forwarding import reset_arguments
from vecmode.infos import add_infos
from vecmode.modes import same_step_infos
from vecmode.wrappers.base import empty_batch, iterate_batch

#: SB3's info keys: an ended episode's last observation; truncated and not terminated.
TERMINAL_OBSERVATION = "terminal_observation"
TIME_LIMIT_TRUNCATED = "TimeLimit.truncated"
_SB3_KEYS = frozenset((TERMINAL_OBSERVATION, TIME_LIMIT_TRUNCATED))

#: DummyVecEnv's loops over the sub-envs (``env_idx``: the one running).
_DUMMY_LOOPS = (DummyVecEnv.step_wait.__code__, DummyVecEnv.reset.__code__)

MASKED_RESET_FIRST = (
    'reset(options={"reset_mask": mask}) needs a full reset() first: until then '
    "the other sub-envs' observations are unknown."
)


def from_sb3(venv: VecEnv) -> FromSB3VectorEnv:
    """``venv``, a Stable-Baselines3 ``VecEnv``, as a SAME_STEP Gymnasium vector env.

    >>> import gymnasium as gym, vecmode
    >>> from stable_baselines3.common.vec_env import DummyVecEnv
    >>> envs = vecmode.sb3.from_sb3(DummyVecEnv([lambda: gym.make("CartPole-v1")] * 2))
    >>> envs.metadata["autoreset_mode"], vecmode.check_stack(envs).ok
    (<AutoresetMode.SAME_STEP: 'SameStep'>, True)
    >>> envs.close()
    """
    return FromSB3VectorEnv(venv)


class FromSB3VectorEnv(VectorEnv):
    """A Stable-Baselines3 ``VecEnv`` as a SAME_STEP Gymnasium vector env (a step
    both terminated and truncated comes back terminated only)."""

    autoreset_mode = AutoresetMode.SAME_STEP  # (as Gymnasium's envs; TorchRL reads it)

    def __init__(self, venv: VecEnv) -> None:
        if not isinstance(venv, VecEnv):
            vector = isinstance(venv, VectorEnv)
            raise TypeError(
                f"vecmode.sb3.from_sb3 takes a stable_baselines3 VecEnv, got "
                f"{type(venv).__name__}; "
                + (
                    "use a Gymnasium vector env as it is."
                    if vector
                    else "to vectorize Gymnasium envs, use vecmode.make_vec(...)."
                )
            )
        self.venv = venv
        self.num_envs = venv.num_envs
        self.single_observation_space = _observation_space(venv)
        self.single_action_space = venv.action_space
        self.observation_space = batch_space(
            self.single_observation_space, self.num_envs
        )
        self.action_space = batch_space(venv.action_space, self.num_envs)
        self.metadata = {
            **(getattr(venv, "metadata", None) or {}),
            "autoreset_mode": self.autoreset_mode,
        }
        self.render_mode = venv.render_mode
        self._last_obs: Any = None
        #: Calls that ran (TransitionCollector: none made behind its back).
        self.calls_run = 0
        self._structured_actions = isinstance(venv.action_space, (Dict, Tuple))
        self._batch_shape = self.action_space.shape  # (None for Dict, Tuple)
        self._lost: set[int] = set()
        self._dead: str | None = None  # why a SubprocVecEnv's worker died

    def _open(self, stepping: bool = False) -> None:
        """Refuse a call on a closed or broken env (SB3's own VecEnvs differ), and
        a step while a sub-env's state is lost."""
        if self.closed:
            raise gym.error.ClosedEnvironmentError(
                core.env_closed_message(type(self).__name__)
            )
        if self._dead is not None:
            raise errors.WorkerError(self._dead)
        if stepping and self._lost:
            raise errors.EpisodeEndedError(sorted(self._lost), lost=True)

    @property
    def awaiting_reset(self) -> np.ndarray:
        """Bool mask of the sub-envs that must be reset before the next step (a
        failed call lost their state)."""
        mask = np.zeros(self.num_envs, dtype=np.bool_)
        mask[sorted(self._lost)] = True
        return mask

    @contextlib.contextmanager
    def _faults(
        self, method: str, order: Iterable[int], index: int | None = None
    ) -> Iterator[None]:
        """A sub-env's exception as the sync core's SubEnvError: the sub-envs of
        ``order`` up to ``index`` (DummyVecEnv's, where not given) lose their
        state; all of them where it is unknown. A dead worker: WorkerError."""
        order = list(order)
        try:
            yield
        except Exception as exc:
            dead = self._dead_workers(exc)
            if dead:
                which = ", ".join(map(str, dead))
                self._dead = (
                    f"the SubprocVecEnv worker of sub-env(s) {which} died in "
                    f"{method}; SB3 sends no exception (the traceback is on the "
                    f"worker's stderr), and the VecEnv cannot go on: close() it."
                )
                raise errors.WorkerError(self._dead, lost=dead) from exc
            index = _running_sub_env(exc) if index is None else index
            if index not in order:
                self._lost.update(order)
                raise
            lost = order[: order.index(index) + 1]
            self._lost.update(lost)
            text = traceback.format_exc()
            name = type(exc).__name__
            raise errors.sub_env_error(
                index, method, name, str(exc), text, (), lost, cause=exc
            ) from exc
        except BaseException:
            self._lost.update(order)
            raise

    def _dead_workers(self, exc: Exception) -> list[int]:
        """The sub-envs whose SubprocVecEnv worker died (``exc``: a broken pipe),
        those that die within a second of the first too (a fault all share)."""
        venv = self.venv.unwrapped
        if not isinstance(venv, SubprocVecEnv) or not isinstance(
            exc, EOFError | OSError
        ):
            return []
        sentinels = [process.sentinel for process in venv.processes]
        deadline, ended = time.monotonic() + 1.0, set[Any]()
        while len(ended) < len(sentinels) and (left := deadline - time.monotonic()) > 0:
            waiting = [sentinel for sentinel in sentinels if sentinel not in ended]
            more = multiprocessing.connection.wait(waiting, timeout=left)
            if not more:
                break
            ended.update(more)
        return [i for i, sentinel in enumerate(sentinels) if sentinel in ended]

    def _batched(self, infos: Any) -> dict[str, Any]:
        """Gymnasium's batched info dict of ``(index, info)`` pairs."""
        return add_infos(self._add_info, {}, ((i, info) for i, info in infos if info))

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
        self.calls_run += 1
        if seeds is not None:
            self.venv.seed(seeds[0])
        if rest:
            self.venv.set_options(rest)
        with self._faults("reset", range(self.num_envs)):
            self._last_obs = _as_batch(self.observation_space, self.venv.reset())
        self._lost.clear()
        return self._last_obs, self._batched(enumerate(self.venv.unwrapped.reset_infos))

    def _seeds(self, seed: Any) -> list[int | None] | None:
        """One seed per sub-env, ``s, s + 1, ...`` (SB3's ``seed(s)``), or None."""
        n = self.num_envs
        listed = isinstance(seed, (list, tuple)) and len(seed) == n
        if seed is None or (listed and all(s is None for s in seed)):
            return None  # no seed for any sub-env (Gymnasium's envs take it)
        if core.is_int(seed):
            return [int(seed) + i for i in range(n)]
        if listed and first_of_run(seed) is not None:
            return list(seed)
        raise errors.SeedError(
            f"seed must be None, an int s (sub-env i gets s + i: SB3's seed() takes "
            f"one) or the list of {n} seeds that makes, got {type(seed).__name__} "
            f"{seed!r}."
        )

    def _masked_reset(
        self, seeds: list[int | None] | None, rest: dict[str, Any], mask: np.ndarray
    ) -> tuple[Any, dict[str, Any]]:
        """Reset each masked sub-env by itself (``env_method("reset")``)."""
        if not isinstance(self.venv, (DummyVecEnv, SubprocVecEnv)):
            raise ValueError(
                f"a masked reset cannot be exact over {type(self.venv).__name__}: it "
                f"would leave the SB3 wrapper's state (statistics, frame stack) stale. "
                f"Reset every sub-env, or put the wrappers on the vecmode side, over "
                f"from_sb3(DummyVecEnv(...)) or from_sb3(SubprocVecEnv(...))."
            )
        if self._last_obs is None:
            raise gym.error.ResetNeeded(MASKED_RESET_FIRST)
        self.calls_run += 1
        if not np.count_nonzero(mask):  # vecmode's convention: a no-op
            return core.copy_batch(self._last_obs), {}
        singles = list(iterate_batch(self.observation_space, self._last_obs))
        infos, order = [], np.flatnonzero(mask).tolist()
        for i in order:
            seed = None if seeds is None else seeds[i]
            with self._faults("reset", order, i):
                ((singles[i], info),) = self.venv.env_method(
                    "reset", seed=seed, options=rest, indices=[i]
                )
            infos.append((i, info))
        self._lost.difference_update(order)
        space = self.single_observation_space
        self._last_obs = concatenate(space, singles, empty_batch(space, self.num_envs))
        return self._last_obs, self._batched(infos)

    def step(self, actions: Any) -> core.StepResult:
        """Step every sub-env; SB3 resets those whose episode ends."""
        self.step_async(actions)
        return self.step_wait()

    def step_async(self, actions: Any) -> None:
        """Send a step (SB3's ``step_async``)."""
        self._open(stepping=True)
        if self._last_obs is None:  # (a masked reset needs a full one first)
            raise gym.error.ResetNeeded("step() before reset(): call reset() first.")
        actions = self._sb3_actions(actions)
        self.calls_run += 1
        with self._faults("step", range(self.num_envs)):
            self.venv.step_async(actions)

    def step_wait(self, timeout: float | None = None) -> core.StepResult:
        """The step sent by :meth:`step_async` (``timeout`` must be None)."""
        if timeout is not None:
            raise ValueError(
                f"step_wait(timeout={timeout!r}): an SB3 VecEnv's step_wait() takes "
                f"no timeout; pass None."
            )
        with self._faults("step", range(self.num_envs)):
            self._await_workers()
            result = self.venv.step_wait()
        return self._gym_step(result)

    def _await_workers(self) -> None:
        """Wait for a SubprocVecEnv's answers or a worker's end (forked workers hold
        each other's pipes open: SB3's wait for a dead one's answer never ends)."""
        venv = self.venv.unwrapped
        if not isinstance(venv, SubprocVecEnv) or not venv.waiting:
            return
        ends, pending = {p.sentinel for p in venv.processes}, set(venv.remotes)
        while pending:
            ready = multiprocessing.connection.wait([*pending, *ends])
            if ends.intersection(ready):
                raise EOFError("a SubprocVecEnv worker ended")
            pending.difference_update(ready)

    def _sb3_actions(self, actions: Any) -> Any:
        """A batch of Dict or Tuple actions as SB3's list; others as they are.
        A batch of the wrong structure is refused before any sub-env steps (a
        SubprocVecEnv sends some, then its answers come a call late)."""
        space, n = self.single_action_space, self.num_envs
        if not self._structured_actions:
            if type(actions) is not np.ndarray or actions.shape != self._batch_shape:
                core.check_action_batch(space, actions, n)
            return actions
        problem = core.batch_problem(space, actions, n)
        if problem is not None:
            instead = "not SB3's list of one action per sub-env (that is for envs.venv)"
            raise errors.ActionBatchError(
                action_batch_message(problem, space, n, instead)
            )
        return list(iterate(self.action_space, actions))

    def _gym_step(self, result: Any) -> core.StepResult:
        """SB3's step in SAME_STEP's layout."""
        obs, rewards, dones, sb3_infos = result
        dones = np.asarray(dones, dtype=np.bool_)
        limit = np.array([bool(i.get(TIME_LIMIT_TRUNCATED)) for i in sb3_infos])
        reset_infos = self.venv.unwrapped.reset_infos
        infos, finals = [], []
        for i, sb3_info in enumerate(sb3_infos):
            info = {k: v for k, v in sb3_info.items() if k not in _SB3_KEYS}
            if dones[i]:
                if TERMINAL_OBSERVATION not in sb3_info:
                    raise ValueError(
                        f"the SB3 VecEnv reported sub-env {i} done without info"
                        f"['{TERMINAL_OBSERVATION}']: its final observation is lost."
                    )
                finals.append((i, sb3_info[TERMINAL_OBSERVATION], info))
                info = reset_infos[i]
            infos.append((i, info))
        self._last_obs = _as_batch(self.observation_space, obs)
        merged = self._batched(infos)
        merged = same_step_infos(merged, finals, self.num_envs, self._add_info)
        rewards = np.asarray(rewards, dtype=np.float64)
        return self._last_obs, rewards, dones & ~limit, dones & limit, merged

    # ------------------------------------------------------------- sub-envs
    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call method ``name`` of every sub-env (SB3's ``env_method``)."""
        self._open()
        core.check_call(name)
        return tuple(self.venv.env_method(name, *args, **kwargs))

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """The attribute ``name`` of every sub-env (SB3's ``get_attr``)."""
        self._open()
        return tuple(self.venv.get_attr(name))

    def set_attr(self, name: str, values: Any) -> None:
        """Set attribute ``name`` of every sub-env: one value, or one per sub-env."""
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
        """Close the SB3 ``VecEnv`` (or end its workers, where one died)."""
        if self._dead is None:
            self.venv.close()
            return
        for process in self.venv.unwrapped.processes:  # type: ignore[attr-defined]
            process.terminate()
            process.join()
        self.venv.unwrapped.closed = True  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        return f"FromSB3VectorEnv({type(self.venv).__name__}, num_envs={self.num_envs})"


def _running_sub_env(exc: BaseException) -> int | None:
    """The sub-env DummyVecEnv's loop was running when ``exc`` was raised, or None."""
    index, tb = None, exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code in _DUMMY_LOOPS:
            index = tb.tb_frame.f_locals.get("env_idx")
        tb = tb.tb_next
    return index


def _observation_space(venv: VecEnv) -> Space:
    """``venv``'s observation space; a ``VecNormalize``'s normalised Boxes (the
    space, or its ``norm_obs_keys``) as what it returns: bounded by ``clip_obs``,
    float32 where they were integers (SB3 changes them for images only)."""
    space = venv.observation_space
    if not getattr(venv, "norm_obs", False):
        return space
    clip = float(venv.clip_obs)  # type: ignore[attr-defined]

    def as_returned(box: Space) -> Space:
        if not isinstance(box, Box):
            return box
        integers = np.dtype(box.dtype).kind in "iu"
        return Box(-clip, clip, box.shape, np.float32 if integers else box.dtype)

    if isinstance(space, Dict):
        keys = venv.norm_obs_keys or list(space.spaces)  # type: ignore[attr-defined]
        return Dict({k: as_returned(s) if k in keys else s for k, s in space.items()})
    return as_returned(space)


def _as_batch(space: Space, obs: Any) -> Any:
    """SB3's batch in Gymnasium's layout: plain dicts, the space's dtypes (where
    that loses nothing: a float batch in an integer space stays float)."""
    if isinstance(space, Dict):
        return {key: _as_batch(sub, obs[key]) for key, sub in space.spaces.items()}
    if isinstance(space, Tuple):
        return tuple(
            _as_batch(sub, part) for sub, part in zip(space.spaces, obs, strict=True)
        )
    if isinstance(space, (Box, Discrete, MultiBinary, MultiDiscrete)):
        obs = np.asarray(obs)
        if np.can_cast(obs.dtype, space.dtype, "same_kind"):  # type: ignore[arg-type]
            return obs.astype(space.dtype, copy=False)
    return obs


def action_batch_message(problem: str, space: Space, num_envs: int, also: str) -> str:
    """The refusal of a batch of Dict or Tuple actions: ``problem``, Gymnasium's
    batch layout in words, and ``also`` (what else the caller may pass)."""
    if isinstance(space, Dict):
        keys = list(space.spaces)
        layout = f"a dict with the keys {keys}, each a batch of {num_envs}"
    else:
        parts = len(space.spaces) if isinstance(space, Tuple) else "its"
        layout = f"a tuple of {parts} batches of {num_envs}, one per subspace"
    return (
        f"{problem}; nothing was stepped. For the action space {space}, pass "
        f"Gymnasium's batch layout, {layout} (as the vector env's "
        f"action_space.sample()), {also}."
    )


def first_of_run(seeds: Sequence[Any]) -> int | None:
    """``s`` where ``seeds`` is ``[s, s + 1, ...]`` (SB3's ``seed(s)``), else None."""
    if not len(seeds) or not core.is_int(seeds[0]):
        return None
    first = int(seeds[0])
    return first if list(seeds) == [first + i for i in range(len(seeds))] else None
