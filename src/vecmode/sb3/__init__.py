"""Stable-Baselines3 both ways: :func:`to_sb3` gives a vector env to SB3 as a
``VecEnv``, :func:`from_sb3` an SB3 ``VecEnv`` to Gymnasium as a SAME_STEP vector
env (the ``sb3`` extra; see docs/integrations.md)."""

try:
    import stable_baselines3  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        "vecmode.sb3 needs Stable-Baselines3, which is not installed: pip install "
        'stable-baselines3 (or, in a vecmode checkout, pip install ".[sb3]"; in a '
        "fresh env, install a CPU build of torch first if you don't want CUDA's "
        "wheels)."
    ) from exc

from vecmode.sb3.from_vec_env import FromSB3VectorEnv, from_sb3
from vecmode.sb3.to_vec_env import ToSB3VecEnv, to_sb3

__all__ = ["FromSB3VectorEnv", "ToSB3VecEnv", "from_sb3", "to_sb3"]
