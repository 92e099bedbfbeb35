"""A conformance kit: :func:`check_wrapper` (or :class:`WrapperConformance`)
proves a vector wrapper right in the modes it declares, :func:`check_vector_env`
a vector env; :class:`ScheduledEnv` makes deterministic test sub-envs."""

from vecmode.testing.batched import BatchedCartPole
from vecmode.testing.envs import (
    OBS_TYPES,
    DenseFinalObsVectorEnv,
    ScheduledEnv,
    decode,
    scheduled_env_fns,
)
from vecmode.testing.vector_env import VectorEnvReport, check_vector_env
from vecmode.testing.wrapper import (
    BASES,
    DEFAULT_BASES,
    PROPERTIES,
    ConformanceError,
    WrapperConformance,
    WrapperReport,
    check_wrapper,
    episode_statistics,
)

__all__ = [
    "BASES",
    "DEFAULT_BASES",
    "OBS_TYPES",
    "PROPERTIES",
    "BatchedCartPole",
    "ConformanceError",
    "DenseFinalObsVectorEnv",
    "ScheduledEnv",
    "VectorEnvReport",
    "WrapperConformance",
    "WrapperReport",
    "check_vector_env",
    "check_wrapper",
    "decode",
    "episode_statistics",
    "scheduled_env_fns",
]
