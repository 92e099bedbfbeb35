"""Real transitions out of any vector env, whatever its autoreset mode.

A training loop needs, for every sub-env and step, ``(obs, action, reward,
terminated, truncated, next_obs)`` where ``next_obs`` is the observation the
action led to: at an episode's end, the episode's final observation (the one to
bootstrap from when the episode was truncated). Where that is, and which steps
are not real transitions at all, depends on the autoreset mode.
:class:`TransitionCollector` hides the difference: the same loop gets the same
transitions from a vector env in NEXT_STEP, SAME_STEP or DISABLED mode.

>>> import numpy as np, vecmode
>>> from vecmode import TransitionCollector
>>> for mode in vecmode.MODES:
...     envs = vecmode.make_vec("CartPole-v1", num_envs=2, autoreset_mode=mode,
...                             max_episode_steps=2, vectorization_mode="sync")
...     with TransitionCollector(envs) as collector:
...         _ = collector.reset(seed=0)
...         valid = [collector.step(np.array([0, 1])).valid.tolist() for _ in range(4)]
...     print(f"{mode.value:9}", valid)
NextStep  [[True, True], [True, True], [False, False], [True, True]]
SameStep  [[True, True], [True, True], [True, True], [True, True]]
Disabled  [[True, True], [True, True], [True, True], [True, True]]

What each step means for each sub-env comes from :mod:`vecmode.modes`
(:class:`~vecmode.modes.BoundaryTracker`); nothing here branches on the mode.
"""

from __future__ import annotations

import copy as _copy
from typing import Any, NamedTuple

import numpy as np
from gymnasium.error import ResetNeeded
from gymnasium.vector import AutoresetMode, VectorEnv

from vecmode import errors
from vecmode._numpy import host_array
from vecmode.autoreset import gymnasium_layout
from vecmode.core import reuses_buffers, validate_reset_mask
from vecmode.modes import BoundaryTracker, mode_or_assumed
from vecmode.wrappers.base import check_infos, merge_final_observations

__all__ = ["Transition", "TransitionCollector"]

_WHO = "vecmode.TransitionCollector"


class Transition(NamedTuple):
    """One call of :meth:`TransitionCollector.step`: a transition per sub-env.

    Every field is batched like the env's own ``step`` results: row ``i`` (or
    ``[key][i]`` / ``[k][i]`` for Dict / Tuple observations) belongs to sub-env
    ``i``. The arrays are never changed by later calls of the collector (over an
    env that may reuse its buffers, the collector copies the observations: see
    its ``copy`` argument); don't write into them yourself, they may be shared
    with the next transition (``next_obs`` of one step is ``obs`` of the next)
    and some are read-only.

    Attributes:
        obs: the observations the actions were taken in (the collector's
            :attr:`~TransitionCollector.obs` before the call).
        actions: the actions passed to :meth:`~TransitionCollector.step`, as
            given (not copied).
        rewards: the rewards, shape ``(num_envs,)``.
        terminations: the episode terminated (no bootstrapping), ``(num_envs,)``.
        truncations: the episode was cut short (bootstrap from ``next_obs``),
            ``(num_envs,)``.
        next_obs: the observations the actions led to. For a sub-env whose
            episode ended at this step, its episode's final observation, in
            every mode (SAME_STEP's ``info["final_obs"]`` entries are put in
            their rows); the observation to act on next is the collector's
            :attr:`~TransitionCollector.obs`.
        valid: bool ``(num_envs,)``, True where the row is a real transition of
            the env. False only in NEXT_STEP mode, on the step after a sub-env's
            episode ended: the env ignored the action and reset the sub-env
            (reward 0, flags False, ``obs`` the ended episode's final
            observation, ``next_obs`` the new episode's first). Skip or mask
            those rows.
        infos: the info dict the env's ``step`` returned, unchanged, so laid out
            as the mode lays it out (in SAME_STEP the ended episodes' last infos
            are in ``infos["final_info"]`` and the rows of ended sub-envs hold
            their reset infos; in DISABLED the reset infos are in
            :attr:`~TransitionCollector.reset_infos`).
    """

    obs: Any
    actions: Any
    rewards: np.ndarray
    terminations: np.ndarray
    truncations: np.ndarray
    next_obs: Any
    valid: np.ndarray
    infos: dict[str, Any]


def _fresh(batch: Any) -> Any:
    """A copy of a batch of observations that shares no array with it."""
    if type(batch) is np.ndarray:
        return batch.copy()
    if isinstance(batch, dict):
        return type(batch)((key, _fresh(value)) for key, value in batch.items())
    if type(batch) is tuple:
        return tuple(_fresh(value) for value in batch)
    return _copy.deepcopy(batch)


def _unshared(infos: Any) -> Any:
    """``infos`` with every array (in nested dicts too) copied: what the step
    returned, whatever a later reset does to arrays a wrapper kept (Gymnasium's
    ``RecordEpisodeStatistics`` clears its ``info["_episode"]`` in place when
    the sub-envs are reset)."""
    if isinstance(infos, dict):
        return {key: _unshared(value) for key, value in infos.items()}
    if type(infos) is np.ndarray:
        return infos.copy()
    return infos


class TransitionCollector:
    """Steps a vector env and returns real transitions, the same in every mode.

    Wraps any vector env that declares its autoreset mode
    (``metadata["autoreset_mode"]``): vecmode's, Gymnasium's sync and async envs,
    a custom one. One loop, written once, then gets from every mode the same
    transitions for the same seeds and actions:

    * :meth:`step` returns a :class:`Transition` whose ``next_obs`` is the true
      next observation (the final one for sub-envs whose episode ended) and
      whose ``valid`` marks NEXT_STEP's reset steps (not real transitions) False;
    * :attr:`obs` is the observation to act on next: after a step, the returned
      observations (NEXT_STEP: an ended sub-env's final one, whose next step is
      its reset step; SAME_STEP: already the new episode's first); in DISABLED
      mode the collector resets ended sub-envs itself with
      ``reset(options={"reset_mask": mask})`` and :attr:`obs` holds their new
      first observations (that reset's infos are in :attr:`reset_infos`).

    An env that declares no mode is taken as NEXT_STEP (Gymnasium's
    convention), with an :class:`~vecmode.UndeclaredModeWarning`; under
    :func:`vecmode.strict` it is an :class:`~vecmode.IncompatibleModeError`.

    Args:
        envs: the vector env to step (closed by :meth:`close` and by leaving a
            ``with`` block).
        copy: copy the observations the env returns, so that later calls cannot
            change them. ``None`` (default): copy unless the env is known to
            return fresh arrays (Gymnasium's and vecmode's envs built with
            ``copy=True``, their default, bare or under vecmode's own wrappers;
            ``vecmode.core.reuses_buffers``).

    >>> import numpy as np, vecmode
    >>> from vecmode import TransitionCollector
    >>> envs = vecmode.make_vec("CartPole-v1", num_envs=2, autoreset_mode="SameStep",
    ...                         max_episode_steps=1, vectorization_mode="sync")
    >>> collector = TransitionCollector(envs)
    >>> obs, infos = collector.reset(seed=0)
    >>> t = collector.step(np.array([0, 1]))
    >>> t.truncations, t.valid
    (array([ True,  True]), array([ True,  True]))
    >>> np.array_equal(t.next_obs[0], t.infos["final_obs"][0])  # the final obs
    True
    >>> np.array_equal(collector.obs, t.next_obs)  # act next on the new episodes
    False
    >>> collector.close()
    """

    def __init__(self, envs: VectorEnv, *, copy: bool | None = None) -> None:
        if not isinstance(envs, VectorEnv):
            raise TypeError(errors.not_a_vector_env(_WHO, envs))
        #: The mode the collector steps ``envs`` in (NEXT_STEP if undeclared).
        self.mode: AutoresetMode = mode_or_assumed(envs, _WHO, None, stacklevel=1)
        #: The wrapped vector env: ``envs``, read through
        #: :class:`vecmode.autoreset.GymnasiumFinalObs` where its class reports
        #: SAME_STEP's final observations its own way (ALE's ``AtariVectorEnv``).
        self.envs = gymnasium_layout(envs)
        #: The number of sub-envs.
        self.num_envs: int = envs.num_envs
        #: Whether returned observations are copied (see the ``copy`` argument).
        self.copy: bool = reuses_buffers(envs) if copy is None else bool(copy)
        #: The infos of the last reset: those :meth:`reset` returned, then, after
        #: each :meth:`step`, those of the masked reset it made (DISABLED mode,
        #: when episodes ended), or ``{}`` when it made none.
        self.reset_infos: dict[str, Any] = {}
        self._boundaries = BoundaryTracker(self.mode, self.num_envs)
        self._obs: Any = None
        #: Why :meth:`step` cannot run: not reset yet, or a call failed midway.
        self._blocked: str = collector_not_reset()

    # ------------------------------------------------------------------ state
    @property
    def obs(self) -> Any:
        """The observations to act on next (batched like the env's)."""
        if self._obs is None:
            raise ResetNeeded(self._blocked)
        return self._obs

    @property
    def single_observation_space(self) -> Any:
        """The env's ``single_observation_space``."""
        return self.envs.single_observation_space

    @property
    def single_action_space(self) -> Any:
        """The env's ``single_action_space``."""
        return self.envs.single_action_space

    @property
    def observation_space(self) -> Any:
        """The env's batched ``observation_space``."""
        return self.envs.observation_space

    @property
    def action_space(self) -> Any:
        """The env's batched ``action_space``."""
        return self.envs.action_space

    # ---------------------------------------------------------------- calling
    def reset(
        self, *, seed: Any = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset the env; return ``(obs, infos)`` as its ``reset`` does.

        ``obs`` is also :attr:`obs`, ``infos`` also :attr:`reset_infos`.
        ``options["reset_mask"]`` resets only the masked sub-envs, which needs a
        full reset first and an env that honours the mask (vecmode's and
        Gymnasium's sync and async envs do; Gymnasium's vectorised CartPole resets
        every sub-env whatever the mask). ``options`` is passed on as a copy,
        never mutated; a wrong mask raises before anything is reset.
        """
        mask = None
        if options is not None:
            options = dict(options)
            if "reset_mask" in options:
                # another library's array (a torch tensor), as the env takes it
                mask = host_array(options["reset_mask"])
                mask = validate_reset_mask(mask, self.num_envs)
                if self._obs is None:
                    failed = self._blocked != collector_not_reset()
                    raise ResetNeeded(collector_masked_reset_first(failed))
                options["reset_mask"] = mask
        self._obs = None
        self._blocked = collector_call_failed("reset")
        obs, infos = self.envs.reset(seed=seed, options=options)
        self._boundaries.reset(mask)
        self._obs = _fresh(obs) if self.copy else obs
        self.reset_infos = infos
        return self._obs, infos

    def step(self, actions: Any) -> Transition:
        """Step every sub-env with ``actions``; return the :class:`Transition`.

        Afterwards :attr:`obs` is what to act on next; in DISABLED mode the
        sub-envs whose episode ended have been reset (with a fresh
        ``{"reset_mask": mask}`` options dict). Invalid actions are the env's to
        refuse; when it raises before stepping (as vecmode's envs do), the
        collector is unchanged.

        Raises:
            gymnasium.error.ResetNeeded: before the first :meth:`reset`, or after
                a call whose env step or reset raised midway.
        """
        obs = self._obs
        if obs is None:
            raise ResetNeeded(self._blocked)
        stepped, rewards, terminations, truncations, infos = self.envs.step(actions)
        # The env has moved on: if anything below raises, only a reset is safe.
        self._obs = None
        self._blocked = collector_call_failed("step")
        b = self._boundaries.step(terminations, truncations)
        following = _fresh(stepped) if self.copy else stepped
        moved_to = following
        reset_infos: dict[str, Any] = {}
        if b is not self._boundaries.quiet:
            rows = b.final_in_info
            if np.count_nonzero(rows):
                if not isinstance(infos, (dict, list, tuple)):
                    check_infos(infos, _WHO)
                moved_to = merge_final_observations(  # into the copy, if any
                    self.envs, following, infos, rows, _WHO
                )
            rows = b.needs_reset
            if np.count_nonzero(rows):
                infos = _unshared(infos)  # as the step returned them
                following, reset_infos = self.envs.reset(options={"reset_mask": rows})
                self._boundaries.reset(rows)
                if self.copy:
                    following = _fresh(following)
        self.reset_infos = reset_infos
        self._obs = following
        return Transition(
            obs, actions, rewards, terminations, truncations, moved_to, b.real, infos
        )

    # ---------------------------------------------------------------- closing
    def close(self) -> None:
        """Close the env."""
        self.envs.close()

    def __enter__(self) -> TransitionCollector:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"TransitionCollector({self.envs}, mode={self.mode.value})"


# ------------------------------------------------------------------ messages
def collector_not_reset() -> str:
    return (
        "TransitionCollector.step() was called before reset(): call "
        "collector.reset(seed=...) first, so that the collector knows the "
        "observations the first actions are taken in."
    )


def collector_masked_reset_first(after_failure: bool = False) -> str:
    if after_failure:  # the env's own error may have advised a masked reset
        return (
            'TransitionCollector.reset(options={"reset_mask": mask}) cannot follow '
            "a call of the collector that failed midway: the collector no longer "
            "knows the other sub-envs' observations. Call collector.reset(seed=...) "
            "without a mask (the env's advice to reset the sub-envs with a mask is "
            "for stepping the env itself)."
        )
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
