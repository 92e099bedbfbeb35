"""Declared vector env classes, for vecmode's conversions between modes: what a
masked reset does, what it returns, how final observations come. A class is named
``"module:QualName"`` (declaring it imports nothing). See ``docs/core.md``."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import wrapt
from gymnasium.vector import VectorWrapper

from vecmode import _arrays
from vecmode.errors import IncompatibleModeError
from vecmode.modes import MODES, as_mode, mode_of, resets_on_next_step

#: What a masked reset does: resets the masked sub-envs and clears their pending
#: autoreset; resets them, but the next step resets them again; resets them all.
MASKED_RESETS = ("clears", "keeps-pending", "ignores")
#: What a masked reset returns: the whole batch (Gymnasium's), or the masked rows.
RESET_RETURNS = ("all", "masked")
#: How SAME_STEP final observations come: Gymnasium's layout, or one dense array
#: with a row for every sub-env, no mask and no final infos.
FINAL_OBS_LAYOUTS = ("gymnasium", "dense")

#: Where a simulator's final observation goes: in the info with a mask
#: (Gymnasium's, ManiSkill3's), a dense batch every step with no mask (gymnax),
#: only when turned on (``Semantics.remedy`` says how), nowhere, or nowhere but
#: approximated by the last observation seen (``ApproximateFinalObs``, opt-in).
FINAL_OBS = ("masked", "every-step", "opt-in", "lost", "approximated")
#: What an ended sub-env resets to: a fresh reset, the first state of the last
#: whole reset (Brax), or a state drawn from a small pool (Craftax).
RESETS_TO = ("fresh", "cached-first", "pool")
#: Whether the ending step's reward is computed before the reset or after it.
ENDING_REWARDS = ("before-reset", "after-reset")
#: How sub-envs reset alone: a bool ``reset_mask``, a list of indices, or not at all.
PARTIAL_RESETS = ("reset_mask", "indices", "none")
#: How truncation is told apart from termination: a flag, RSL-RL's ``time_outs``,
#: an info key (Brax's ``truncation``), the discount (Jumanji's), or not at all
#: (the adapter counts steps against the time limit: Craftax).
TRUNCATIONS = ("flag", "time_outs", "info", "discount", "step-count")


@dataclass(frozen=True)
class Semantics:
    """What an env does at an episode's end, beyond its autoreset mode.

    Args:
        final_observation: one of :data:`FINAL_OBS`.
        resets_to: one of :data:`RESETS_TO`.
        ending_reward: one of :data:`ENDING_REWARDS`.
        partial_reset: one of :data:`PARTIAL_RESETS`.
        truncation: one of :data:`TRUNCATIONS`.
        remedy: how to get the final observation where it is lost or opt-in.
        source: what it was read from (the simulator's file and commit).

    >>> Semantics(final_observation="lost", remedy="compute_final_obs=True").exact
    False
    """

    final_observation: str = "masked"
    resets_to: str = "fresh"
    ending_reward: str = "before-reset"
    partial_reset: str = "reset_mask"
    truncation: str = "flag"
    remedy: str = ""
    source: str = ""

    def __post_init__(self) -> None:
        for name, allowed in (
            ("final_observation", FINAL_OBS),
            ("resets_to", RESETS_TO),
            ("ending_reward", ENDING_REWARDS),
            ("partial_reset", PARTIAL_RESETS),
            ("truncation", TRUNCATIONS),
        ):
            value = getattr(self, name)
            if value not in allowed:
                raise ValueError(
                    f"Semantics({name}=...) must be one of "
                    f"{', '.join(map(repr, allowed))}, got {value!r}."
                )

    @property
    def approximated(self) -> bool:
        """Whether the final observations are the opt-in approximation."""
        return self.final_observation == "approximated"

    @property
    def exact(self) -> bool:
        """Whether every real transition can be read: the final observation is
        there, and the ending step's reward is the episode's."""
        return (
            self.final_observation in ("masked", "every-step")
            and self.ending_reward == "before-reset"
        )

    def lost(self) -> str:
        """What is lost, as a sentence ("" if nothing)."""
        parts = []
        final = self.final_observation
        if final in ("opt-in", "lost", "approximated"):
            off = {"opt-in": " unless it is turned on", "lost": ""}.get(final)
            parts.append(
                f"its final observation is lost{off}"
                if off is not None
                else "its final observations are approximated by the last "
                "observations seen"
            )
        if self.ending_reward == "after-reset":
            parts.append("the ending step's reward is computed after the reset")
        return "; ".join(parts)

    def describe(self) -> str:
        """One line for reports: ``final obs: lost (remedy); resets to: ...``."""
        final = self.final_observation + (f" ({self.remedy})" if self.remedy else "")
        return (
            f"final obs: {final}; resets to: {self.resets_to}; ending reward: "
            f"{self.ending_reward}; partial reset: {self.partial_reset}; "
            f"truncation: {self.truncation}"
        )


#: Gymnasium's: every vector env that declares nothing else.
GYMNASIUM_SEMANTICS = Semantics()


@dataclass(frozen=True)
class VectorEnvDeclaration:
    """How a vector env class behaves (the arguments of :func:`register_vector_env`;
    ``path`` is ``"module:QualName"``)."""

    path: str
    modes: frozenset[Any]
    masked_reset_of: str | Callable[[Any], str]
    reset_returns: str = "all"
    final_obs_layout: str = "gymnasium"
    batched_spaces: bool = True
    keeps_options: bool = False
    why: str = ""
    remedy: str = ""
    semantics: Semantics = GYMNASIUM_SEMANTICS

    def masked_reset(self, env: Any) -> str:
        """What a masked reset does for this instance."""
        found = self.masked_reset_of
        return found(env.unwrapped) if callable(found) else found

    def reason(self, env: Any) -> str:
        """Its ``why`` for ``env``'s class, then its ``remedy``."""
        why = self.why.format(name=type(env.unwrapped).__name__)
        return f"{why} {self.remedy}".rstrip()


_lock = threading.RLock()
_declared: dict[str, VectorEnvDeclaration] = {}


def class_path(cls: type | str) -> str:
    """``"module:QualName"`` of a class, or a path as it is (ValueError if none)."""
    if not isinstance(cls, str):
        return f"{cls.__module__}:{cls.__qualname__}"
    module, _, name = cls.partition(":")
    if not (module and name):
        raise ValueError(
            f"{cls!r} is not a class path; write 'package.module:ClassName' (e.g. "
            f"'gymnasium.wrappers.vector:NormalizeReward')."
        )
    return cls


def _checked_path(cls: Any) -> str:
    wrapper = isinstance(cls, type) and issubclass(cls, (gym.Wrapper, VectorWrapper))
    if isinstance(cls, str) or (isinstance(cls, type) and not wrapper):
        return class_path(cls)
    what = cls.__name__ if isinstance(cls, type) else f"{type(cls).__name__} {cls!r}"
    raise TypeError(
        f"register_vector_env takes a vector env class (or its path "
        f"'module:QualName'), got {what}; wrappers are declared with "
        f"vecmode.register or @vecmode.supports."
    )


def register_vector_env(
    cls: type | str,
    *,
    masked_reset: str | Callable[[Any], str],
    modes: Any = None,
    reset_returns: str = "all",
    final_obs_layout: str = "gymnasium",
    batched_spaces: bool = True,
    keeps_options: bool = False,
    why: str = "",
    remedy: str = "",
    semantics: Semantics = GYMNASIUM_SEMANTICS,
) -> VectorEnvDeclaration:
    """Declare how a vector env class behaves, for vecmode's conversions.

    Args:
        cls: the class, or ``"module:QualName"`` (subclasses match too).
        masked_reset: one of :data:`MASKED_RESETS`, or a function of the env.
        modes: the modes it can be built in (default: all three).
        reset_returns: one of :data:`RESET_RETURNS`.
        final_obs_layout: one of :data:`FINAL_OBS_LAYOUTS`.
        batched_spaces: False if its spaces are the single-env ones (EnvPool's).
        keeps_options: True if ``reset`` leaves the caller's options dict as it
            is (Gymnasium's pop ``reset_mask``).
        why: why its masked reset is so (shown when a conversion is refused).
        remedy: what to use instead.
        semantics: what else it does at an episode's end (:class:`Semantics`).
    """
    for name, value, allowed in (
        ("masked_reset", masked_reset, MASKED_RESETS),
        ("reset_returns", reset_returns, RESET_RETURNS),
        ("final_obs_layout", final_obs_layout, FINAL_OBS_LAYOUTS),
    ):
        if value not in allowed and not callable(value):
            raise ValueError(
                f"{name} must be one of {', '.join(map(repr, allowed))}, got {value!r}."
            )
    path = _checked_path(cls)
    given = MODES if modes is None else [modes] if isinstance(modes, str) else modes
    declared = frozenset(map(as_mode, given))
    if not declared:
        raise ValueError(
            f"register_vector_env({path.rpartition(':')[2]}, modes=...) needs at "
            f"least one mode the class can be built in (leave modes out for all three)."
        )
    found = VectorEnvDeclaration(
        path,
        declared,
        masked_reset,
        reset_returns,
        final_obs_layout,
        bool(batched_spaces),
        bool(keeps_options),
        why,
        remedy,
        semantics,
    )
    with _lock:
        _declared[found.path] = found
    return found


def declared_simulators() -> list[VectorEnvDeclaration]:
    """The declarations that say more than Gymnasium's semantics, by path."""
    with _lock:
        found = [d for d in _declared.values() if d.semantics != GYMNASIUM_SEMANTICS]
    return sorted(found, key=lambda d: d.path)


def unregister_vector_env(cls: type | str) -> None:
    """Remove the declaration of ``cls`` (nothing if there is none)."""
    with _lock:
        _declared.pop(class_path(cls), None)


def vector_env_declaration(env: Any) -> VectorEnvDeclaration | None:
    """The declaration nearest along the MRO of ``env``'s innermost class, or None."""
    inner = getattr(env, "unwrapped", env)
    with _lock:
        for cls in type(inner).__mro__:
            found = _declared.get(class_path(cls))
            if found is not None:
                return found
    return None


# ------------------------------------------------- the classes vecmode knows
def _async_masked_reset(env: Any) -> str:
    # without shared memory, the pending-autoreset flag lives in the workers
    return "clears" if getattr(env, "shared_memory", True) else "keeps-pending"


def _pool_config(env: Any) -> dict[str, Any]:
    """An EnvPool or ALE env's ``batch_size`` (fewer than ``num_envs``: async,
    some sub-envs per call) and EnvPool's ``episodic_life``."""
    inner = getattr(env, "unwrapped", env)
    config = getattr(inner, "config", None)
    config = config if isinstance(config, dict) else {}
    batch = config.get("batch_size", getattr(inner, "batch_size", inner.num_envs))
    return {"batch_size": batch, "episodic_life": config.get("episodic_life")}


def _pool_masked_reset(env: Any) -> str:
    # no masked reset does the same as an async pool or EnvPool's own reset
    # after a lost life, which goes on with the game
    config = _pool_config(env)
    whole = config["batch_size"] == env.num_envs and not config["episodic_life"]
    return "clears" if whole else "ignores"


_POOL_WHY = (
    "{name} resets only the masked sub-envs and clears their pending autoreset, "
    "but not built async (batch_size < num_envs: some sub-envs per call), nor "
    "EnvPool built with episodic_life=True (its own reset after a lost life goes "
    "on with the game)."
)
_POOL_REMEDY = (
    "Build it with batch_size=num_envs (and episodic_life=False: the lives are in "
    "info['lives']), or use it in its own NextStep mode, unconverted."
)
register_vector_env(
    "gymnasium.vector.sync_vector_env:SyncVectorEnv",
    masked_reset="clears",
    why="{name} resets only the masked sub-envs and clears their pending autoreset.",
)
register_vector_env(
    "gymnasium.vector.async_vector_env:AsyncVectorEnv",
    masked_reset=_async_masked_reset,
    why="{name}(shared_memory=False)'s workers keep their pending autoreset "
    "across reset(), so the step after a reset may reset a sub-env again.",
    remedy="Build it with shared_memory=True, or use vecmode's async core "
    "(vecmode.make_vec(..., vectorization_mode='async')), which runs every mode.",
)
register_vector_env(
    "gymnasium.envs.classic_control.cartpole:CartPoleVectorEnv",
    modes=["NextStep"],
    masked_reset="ignores",
    why="{name} resets every sub-env whatever the mask.",
    remedy="Use vecmode.make_vec('CartPole-v1', vectorization_mode='sync') (or "
    "'async'), whose cores run every mode.",
)
register_vector_env(
    "ale_py.vector_env:AtariVectorEnv",
    modes=["NextStep", "SameStep"],
    masked_reset=_pool_masked_reset,
    final_obs_layout="dense",
    why=_POOL_WHY,
    remedy="Build it in NextStep mode (its default) with batch_size=num_envs, "
    "which vecmode converts to SameStep and Disabled exactly.",
)
register_vector_env(
    "envpool.python.gymnasium_envpool:GymnasiumEnvPoolMixin",
    modes=["NextStep"],
    masked_reset=_pool_masked_reset,
    reset_returns="masked",
    batched_spaces=False,
    why=_POOL_WHY,
    remedy=_POOL_REMEDY,
)
register_vector_env(
    "vecmode.testing.envs:DenseFinalObsVectorEnv",
    masked_reset="clears",
    final_obs_layout="dense",
    why="{name} is Gymnasium's SyncVectorEnv with ALE's dense final observations.",
)
register_vector_env(
    "vecmode.core:VectorCore",
    modes=["Disabled"],
    masked_reset="clears",
    keeps_options=True,
    why="{name} is a vecmode core: a masked reset resets exactly the masked sub-envs.",
)


def semantics_of(env: Any) -> Semantics:
    """What ``env`` does at an episode's end: the outermost layer's own
    ``semantics`` (a simulator adapter's, set per instance, or the
    approximation's), else the innermost class's declaration, else Gymnasium's."""
    for layer in layers(env):
        own = getattr(layer, "__dict__", {}).get("semantics")
        if isinstance(own, Semantics):
            return own
    found = vector_env_declaration(env)
    return GYMNASIUM_SEMANTICS if found is None else found.semantics


def lost_message(env: Any, who: str, doing: str) -> str:
    """Why ``who`` cannot ``doing`` over ``env``, whose real transitions cannot
    all be read (:attr:`Semantics.exact`); "" if they can, or are approximated."""
    found = semantics_of(env)
    if found.exact or found.approximated:
        return ""
    name = type(getattr(env, "unwrapped", env)).__name__
    fix = (
        f"Turn it on in the simulator ({found.remedy}), which vecmode then reads "
        f"exactly; or"
        if found.remedy
        else "If an approximation will do,"
    )
    return (
        f"{who} cannot {doing} over {name}: {found.lost()}. {fix} wrap the "
        f"adapter in vecmode.simulators.ApproximateFinalObs, which gives the last "
        f"observation seen as the final one (as Sample Factory and TorchRL "
        f"bootstrap) and is marked approximated in every report."
    )


def refuse_lost(env: Any, who: str, doing: str) -> None:
    """Raise :class:`~vecmode.IncompatibleModeError` with :func:`lost_message`."""
    message = lost_message(env, who, doing)
    if message:
        raise IncompatibleModeError(message)


def async_pool_fault(env: Any, who: str, doing: str) -> str:
    """Why ``who`` cannot ``doing`` over ``env``, an EnvPool or ALE env built
    async (some sub-envs per call); "" for any other env."""
    found = vector_env_declaration(env)
    if found is None or found.masked_reset_of is not _pool_masked_reset:
        return ""
    batch = _pool_config(env)["batch_size"]
    return (
        f"{who} cannot {doing} over {type(env.unwrapped).__name__} built async "
        f"(batch_size={batch} < num_envs={env.num_envs}): each call returns "
        f"some sub-envs only. Build it with batch_size=num_envs."
        if batch != env.num_envs
        else ""
    )


def row_state_fault(cls: type, env: Any) -> str:
    """Why a ``cls`` layer that keeps a row per sub-env (its ``keeps_row_state``;
    Gymnasium's ``RecordEpisodeStatistics`` and ``NormalizeReward`` do) cannot
    run over ``env``: an async pool, or a reset that keeps pending autoresets."""
    vector = gym.wrappers.vector
    gymnasium = issubclass(cls, vector.RecordEpisodeStatistics | vector.NormalizeReward)
    if getattr(cls, "keeps_row_state", gymnasium) is not True:
        return ""
    who, doing = cls.__name__, "track each sub-env's episodes"
    return async_pool_fault(env, who, doing) or kept_pending_fault(env, who)


def kept_pending_fault(env: Any, who: str) -> str:
    """Why ``who`` cannot track episodes over ``env``, a NextStep env declared
    to keep its pending autoresets across ``reset()``; "" if it can."""
    found, inner = vector_env_declaration(env), getattr(env, "unwrapped", env)
    if found is None or found.masked_reset(inner) != "keeps-pending":
        return ""
    mode = mode_of(inner)
    if mode is None or not resets_on_next_step(mode):
        return ""
    name = type(inner).__name__
    return (
        f"{who} cannot track each sub-env's episodes over {name}: {found.reason(inner)}"
    )


def ignored_mask_fault(env: Any) -> str:
    """Why ``env``'s (the innermost's) reset cannot take ``reset_mask``: it
    resets every sub-env whatever the mask; "" if it can. (A pool's refusal is
    a conversion's: its own masked reset resets the masked sub-envs.)"""
    found = vector_env_declaration(env)
    if found is None or found.masked_reset_of is _pool_masked_reset:
        return ""
    if found.masked_reset(env) != "ignores":
        return ""
    name = type(env).__name__
    return f"{name}'s reset cannot take options['reset_mask']: {found.reason(env)}"


def reads_final_observations(cls: type) -> bool:
    """Whether a wrapper class reads or transforms final observations: its
    ``reads_final_observations`` attribute, else whether it is Gymnasium's
    vector observation wrapper."""
    said = getattr(cls, "reads_final_observations", None)
    if isinstance(said, bool):
        return said
    return issubclass(cls, gym.vector.VectorObservationWrapper)


def keeps_options(env: Any) -> bool:
    """Whether ``env.reset`` leaves the caller's options as they were: a layer
    that hands on a copy (vecmode's) comes before any that pops ``reset_mask``
    (Gymnasium's ``RecordEpisodeStatistics``), or else the innermost env is
    declared ``keeps_options``."""
    for layer in layers(env):
        if getattr(type(layer), "copies_options", False):
            return True
        if isinstance(layer, gym.wrappers.vector.RecordEpisodeStatistics):
            return False
    found = vector_env_declaration(env)
    return found is not None and found.keeps_options


#: wrapt's proxy base class (wrapt 2's BaseObjectProxy, 1's ObjectProxy).
_PROXY = getattr(wrapt, "BaseObjectProxy", wrapt.ObjectProxy)


def lists_infos(env: Any) -> bool:
    """Whether a ``DictInfoToList`` (anyone's) in ``env``'s stack makes its infos
    a list."""
    return any(type(layer).__name__ == "DictInfoToList" for layer in layers(env))


#: Wrapper classes (exact) that hand on their env's observation batch as it is:
#: vecmode's policies, each adding its own.
PASSES_BATCHES: set[type] = set()


def keeps_rows(env: Any) -> bool | None:
    """Whether ``env`` hands out its innermost env's own batch, which keeps a
    sub-env's row until the sub-env runs again (``copy=False`` over workers:
    vecmode's async and Ray cores, Gymnasium's AsyncVectorEnv with shared memory);
    None if unknown (a layer between may copy)."""
    inner = getattr(env, "unwrapped", env)
    copy = getattr(inner, "copy", None)
    sync = any(c.__name__ == "SyncVectorEnv" for c in type(inner).__mro__)
    no_shm = isinstance(inner, gym.vector.AsyncVectorEnv) and not inner.shared_memory
    if copy is True or sync or no_shm:
        return False  # (a copy, or every row written each call)
    between = [layer for layer in layers(env) if layer is not inner]
    if copy is False and all(type(layer) in PASSES_BATCHES for layer in between):
        return True
    return None


def final_obs_layout(env: Any) -> str:
    """How ``env`` reports SAME_STEP final observations (:data:`FINAL_OBS_LAYOUTS`):
    the outermost layer's ``final_obs_layout`` class attribute, else the innermost
    env's declaration, else Gymnasium's. An env of another array library's
    batches (torch, JAX: ``metadata["array_namespace"]``) is dense."""
    if _arrays.is_array_env(env):
        return "dense"
    for layer in layers(env):
        said = getattr(type(layer), "final_obs_layout", None)  # not forwarded
        if isinstance(said, str):
            return said
    found = vector_env_declaration(env)
    return "gymnasium" if found is None else found.final_obs_layout


def layers(env: Any, limit: int = 64) -> Iterator[Any]:
    """``env``, then each layer's own ``env`` (not a forwarded one), down to the
    innermost: at most ``limit`` layers. A ``wrapt`` proxy's is the object it
    wraps; wrapt's own proxy classes, which change nothing, are no layer."""
    for _ in range(limit):
        if env is None:
            return
        if isinstance(env, _PROXY):  # (its __dict__ is the wrapped one's)
            if type(env).__module__.partition(".")[0] not in ("wrapt", "_wrappers"):
                yield env  # a subclass: it may change what it forwards
            env = env.__wrapped__
            continue
        yield env
        inner = env.__dict__.get("env") if hasattr(env, "__dict__") else None
        env = None if inner is env else inner
