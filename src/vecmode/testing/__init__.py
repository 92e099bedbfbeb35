"""A conformance kit for wrapper and vector-env authors.

* :class:`ScheduledEnv` and :func:`scheduled_env_fns`: deterministic sub-envs whose
  observations encode sub-env, episode and step (Box, Dict, Tuple, Discrete and
  image variants), ended by termination or truncation on a schedule;
  :class:`DenseFinalObsVectorEnv`, Gymnasium's sync env reporting SAME_STEP's
  final observations in ALE's dense layout (a base for layout adapters);
* :func:`check_wrapper`: proves a vector wrapper right in every mode it declares
  (mode equivalence) and refusing the others; one line in a test, or
  :class:`WrapperConformance`, a test mixin; ``check_wrapper(W).record()``
  makes :func:`vecmode.check_stack` report ``W`` as verified;
* :func:`check_vector_env`: proves a custom vector env behaves as the mode its
  ``metadata["autoreset_mode"]`` declares; ``check_vector_env(factory).record()``
  makes :func:`vecmode.check_stack` report its class as verified in that mode.
"""

from vecmode.testing.conformance import (
    ConformanceError,
    WrapperConformance,
    WrapperReport,
    check_wrapper,
    episode_statistics,
)
from vecmode.testing.envs import (
    OBS_TYPES,
    DenseFinalObsVectorEnv,
    ScheduledEnv,
    decode,
    scheduled_env_fns,
)
from vecmode.testing.vector_env import VectorEnvReport, check_vector_env

__all__ = [
    "OBS_TYPES",
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
