"""vecmode: Gymnasium's vector autoreset modes, made safe.

* :class:`SyncVectorEnv`: a thin core with no autoreset policy (DISABLED mode) and
  one batched primitive, :meth:`vecmode.core.VectorCore.execute`.
* :class:`AsyncVectorEnv`: the same core with its sub-envs in worker processes,
  one round trip per call; :class:`SubEnvError`, :class:`WorkerError` and
  :class:`WorkerTimeoutError` report its faults.
* :class:`RayVectorEnv`: the same core with its sub-envs in Ray actors, on one
  machine or a cluster (``pip install "vecmode[ray]"``; Ray is imported only when
  one is built).
* :class:`NextStepAutoreset`, :class:`SameStepAutoreset`, :class:`DisableAutoreset`
  and :func:`with_autoreset`: the autoreset policy as wrappers.
* :func:`make_vec`: core + policy, mirroring ``gymnasium.make_vec``.
* :func:`as_mode`, :func:`mode_of`: read and parse modes.
* :mod:`vecmode.wrappers`: Gymnasium's vector wrappers (same names and
  arguments) right in every mode, base classes for new ones, and a vector
  ``FrameStackObservation``.
* the registry's verbs: :func:`supports`, :func:`register`,
  :func:`supported_modes`, :func:`check_stack` (a whole stack, as a report),
  :func:`assert_compatible`, :func:`require_mode`, :func:`guard`, :func:`strict`;
  :mod:`vecmode.registry` holds the rest (the report's classes,
  ``declaration``, ``evidence``); :func:`register_vector_env` declares a vector
  env class (:mod:`vecmode.env_classes`).
* :class:`TransitionCollector`: one training loop for every mode; each step gives
  a :class:`Transition` with the true next observation and a ``valid`` mask.
* :func:`probe_mode`: the mode a vector env really behaves as
  (:class:`vecmode.probe.ProbeResult`).
* :mod:`vecmode.core`: the core's primitive (``VectorCore``, ``Command``) for
  backends and policies.
* :mod:`vecmode.testing`: the conformance kit (``check_wrapper``,
  ``check_vector_env``, deterministic test envs).
"""

import typing as _typing
from typing import Any as _Any

from gymnasium.vector import AutoresetMode

from vecmode import wrappers
from vecmode.async_vector_env import AsyncVectorEnv
from vecmode.autoreset import (
    DisableAutoreset,
    NextStepAutoreset,
    SameStepAutoreset,
    with_autoreset,
)
from vecmode.env_classes import register_vector_env, unregister_vector_env
from vecmode.errors import (
    EpisodeEndedError,
    IncompatibleModeError,
    SubEnvError,
    UndeclaredModeWarning,
    WorkerError,
    WorkerTimeoutError,
)
from vecmode.make import make_vec
from vecmode.modes import MODES, ModeLike, as_mode, mode_of
from vecmode.probe import probe_mode
from vecmode.ray_vector_env import RayVectorEnv
from vecmode.registry import (
    assert_compatible,
    check_stack,
    guard,
    register,
    require_mode,
    strict,
    supported_modes,
    supports,
    unregister,
)
from vecmode.sync_vector_env import SyncVectorEnv
from vecmode.transitions import Transition, TransitionCollector

__version__ = "0.1.0.dev0"

__all__ = [
    "MODES",
    "AsyncVectorEnv",
    "AutoresetMode",
    "DisableAutoreset",
    "EpisodeEndedError",
    "IncompatibleModeError",
    "ModeLike",
    "NextStepAutoreset",
    "RayVectorEnv",
    "SameStepAutoreset",
    "SubEnvError",
    "SyncVectorEnv",
    "Transition",
    "TransitionCollector",
    "UndeclaredModeWarning",
    "WorkerError",
    "WorkerTimeoutError",
    "__version__",
    "as_mode",
    "assert_compatible",
    "check_stack",
    "guard",
    "make_vec",
    "mode_of",
    "probe_mode",
    "register",
    "register_vector_env",
    "require_mode",
    "strict",
    "supported_modes",
    "supports",
    "unregister",
    "unregister_vector_env",
    "with_autoreset",
    "wrappers",
]

#: The modules a name missing at the top level may live in (for the error).
_SUBMODULES = ("vecmode.wrappers", "vecmode.testing", "vecmode.modes", "vecmode.errors")


# Hidden from type checkers: with a module-level __getattr__ in sight they take
# any name (a typo included) as an attribute of vecmode, typed Any.
if not _typing.TYPE_CHECKING:

    def __getattr__(name: str) -> _Any:
        """A name of a submodule is an AttributeError naming where it lives."""
        import importlib

        where = [
            module
            for module in _SUBMODULES
            if name in getattr(importlib.import_module(module), "__all__", ())
        ]
        hint = f"; it is {where[0]}.{name}" if where else ""
        raise AttributeError(f"module 'vecmode' has no attribute {name!r}{hint}")
