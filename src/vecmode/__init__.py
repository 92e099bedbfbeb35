"""vecmode: Gymnasium's vector autoreset modes, made safe.

* :class:`SyncVectorEnv`: a thin core with no autoreset policy (DISABLED mode) and
  one batched primitive, :meth:`VectorCore.execute`.
* :class:`AsyncVectorEnv`: the same core with its sub-envs in worker processes,
  one round trip per call; :class:`SubEnvError`, :class:`WorkerError` and
  :class:`WorkerTimeoutError` report its faults.
* :class:`NextStepAutoreset`, :class:`SameStepAutoreset`, :class:`DisableAutoreset`
  and :func:`with_autoreset`: the autoreset policy as wrappers.
* :func:`make_vec`: core + policy, mirroring ``gymnasium.make_vec``.
* :func:`as_mode`, :func:`mode_of`: read and parse modes.
* :mod:`vecmode.wrappers`: Gymnasium's vector wrappers (same names and
  arguments) right in every mode, base classes for new ones, and a vector
  ``FrameStackObservation``.
* the registry: :func:`supports`, :func:`register`, :func:`supported_modes`,
  :func:`check`, :func:`assert_compatible`, :func:`require_mode`, :func:`guard`;
  :func:`evidence` (:class:`Evidence`): what a class's declared modes rest on.
* :class:`TransitionCollector`: one training loop for every mode; each step gives
  a :class:`Transition` with the true next observation and a ``valid`` mask.
* :func:`probe_mode`: the mode a vector env really behaves as (:class:`ProbeResult`).
* :mod:`vecmode.testing`: the conformance kit (``check_wrapper``,
  ``check_vector_env``, deterministic test envs).
"""

from gymnasium.vector import AutoresetMode

from vecmode import wrappers
from vecmode.async_vector_env import AsyncVectorEnv
from vecmode.autoreset import (
    DisableAutoreset,
    NextStepAutoreset,
    SameStepAutoreset,
    honours_reset_mask,
    with_autoreset,
)
from vecmode.core import Command, VectorCore
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
from vecmode.probe import ProbeResult, probe_mode
from vecmode.registry import (
    CompatibilityReport,
    Declaration,
    Evidence,
    Guard,
    LayerReport,
    Verdict,
    assert_compatible,
    check,
    declaration,
    evidence,
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
    "Command",
    "CompatibilityReport",
    "Declaration",
    "DisableAutoreset",
    "EpisodeEndedError",
    "Evidence",
    "Guard",
    "IncompatibleModeError",
    "LayerReport",
    "ModeLike",
    "NextStepAutoreset",
    "ProbeResult",
    "SameStepAutoreset",
    "SubEnvError",
    "SyncVectorEnv",
    "Transition",
    "TransitionCollector",
    "UndeclaredModeWarning",
    "VectorCore",
    "Verdict",
    "WorkerError",
    "WorkerTimeoutError",
    "__version__",
    "as_mode",
    "assert_compatible",
    "check",
    "declaration",
    "evidence",
    "guard",
    "honours_reset_mask",
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
