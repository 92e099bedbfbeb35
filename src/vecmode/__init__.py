"""vecmode: Gymnasium's vector autoreset modes, made safe.

Thin vector envs with no autoreset policy (:class:`SyncVectorEnv`,
:class:`AsyncVectorEnv`, :class:`RayVectorEnv`), the policy as wrappers
(:class:`NextStepAutoreset`, :class:`SameStepAutoreset`) composed by :func:`make_vec`,
wrappers right in every mode (:mod:`vecmode.wrappers`), the registry that checks a
stack (:func:`check_stack`), one training loop for every mode
(:class:`TransitionCollector`) and the conformance kit (:mod:`vecmode.testing`).
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
    ArrayLibraryError,
    EpisodeEndedError,
    IncompatibleModeError,
    IncompatibleModeWarning,
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
    "ArrayLibraryError",
    "AsyncVectorEnv",
    "AutoresetMode",
    "DisableAutoreset",
    "EpisodeEndedError",
    "IncompatibleModeError",
    "IncompatibleModeWarning",
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

#: Where a name missing at the top level may live (for the error).
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
