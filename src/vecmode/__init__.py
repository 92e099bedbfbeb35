"""vecmode: Gymnasium's vector autoreset modes, made safe.

* :class:`SyncVectorEnv`: a thin core with no autoreset policy (DISABLED mode) and
  one batched primitive, :meth:`VectorCore.execute`.
* :class:`NextStepAutoreset`, :class:`SameStepAutoreset`, :class:`DisableAutoreset`
  and :func:`with_autoreset`: the autoreset policy as wrappers.
* :func:`make_vec`: core + policy, mirroring ``gymnasium.make_vec``.
* :func:`as_mode`, :func:`mode_of`: read and parse modes.
"""

from gymnasium.vector import AutoresetMode

from vecmode.autoreset import (
    DisableAutoreset,
    NextStepAutoreset,
    SameStepAutoreset,
    honours_reset_mask,
    with_autoreset,
)
from vecmode.core import Command, VectorCore
from vecmode.errors import EpisodeEndedError, IncompatibleModeError
from vecmode.make import make_vec
from vecmode.modes import MODES, ModeLike, as_mode, mode_of
from vecmode.sync_vector_env import SyncVectorEnv

__version__ = "0.1.0.dev0"

__all__ = [
    "MODES",
    "AutoresetMode",
    "Command",
    "DisableAutoreset",
    "EpisodeEndedError",
    "IncompatibleModeError",
    "ModeLike",
    "NextStepAutoreset",
    "SameStepAutoreset",
    "SyncVectorEnv",
    "VectorCore",
    "__version__",
    "as_mode",
    "honours_reset_mask",
    "make_vec",
    "mode_of",
    "with_autoreset",
]
