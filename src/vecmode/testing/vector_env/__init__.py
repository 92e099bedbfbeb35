"""The vector-env kit: :func:`check_vector_env` and its :class:`VectorEnvReport`."""

from vecmode.testing.vector_env.check import VectorEnvReport, check_vector_env

__all__ = ["VectorEnvReport", "check_vector_env"]
