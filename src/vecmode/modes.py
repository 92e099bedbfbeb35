"""The autoreset modes: parsing them and reading them off an env.

This is the one module that knows what the three
:class:`gymnasium.vector.AutoresetMode` values are called and where an env records
its mode (``metadata["autoreset_mode"]``). Everything else in vecmode asks here.

>>> from vecmode import as_mode
>>> as_mode("SameStep")
<AutoresetMode.SAME_STEP: 'SameStep'>
>>> as_mode("next_step")
<AutoresetMode.NEXT_STEP: 'NextStep'>
"""

from __future__ import annotations

from typing import Any

from gymnasium.vector import AutoresetMode

from vecmode import errors

__all__ = ["MODES", "AutoresetMode", "ModeLike", "as_mode", "mode_of"]

#: A mode as an :class:`~gymnasium.vector.AutoresetMode` or its string value.
ModeLike = AutoresetMode | str

#: The three modes, in the order the reference presents them.
MODES: tuple[AutoresetMode, ...] = (
    AutoresetMode.NEXT_STEP,
    AutoresetMode.SAME_STEP,
    AutoresetMode.DISABLED,
)


def _normalise(text: str) -> str:
    return text.replace("_", "").replace("-", "").replace(" ", "").lower()


_BY_SPELLING: dict[str, AutoresetMode] = {}
for _mode in AutoresetMode:
    _BY_SPELLING[_normalise(_mode.value)] = _mode
    _BY_SPELLING[_normalise(_mode.name)] = _mode


def as_mode(value: ModeLike) -> AutoresetMode:
    """Return ``value`` as an :class:`~gymnasium.vector.AutoresetMode`.

    Accepts the enum itself, its string value (``"NextStep"``, ``"SameStep"``,
    ``"Disabled"``, the spelling Gymnasium uses), and the same words written
    ``"next_step"``, ``"NEXT_STEP"`` or ``"next-step"``.

    Raises:
        ValueError: ``value`` is not a mode; the message lists the valid ones.

    >>> as_mode("Disabled")
    <AutoresetMode.DISABLED: 'Disabled'>
    >>> as_mode("sometimes")
    Traceback (most recent call last):
    ...
    ValueError: 'sometimes' is not an autoreset mode; use one of AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP, AutoresetMode.DISABLED or their values 'NextStep', 'SameStep', 'Disabled'.
    """
    if isinstance(value, AutoresetMode):
        return value
    if isinstance(value, str):
        mode = _BY_SPELLING.get(_normalise(value))
        if mode is not None:
            return mode
    raise ValueError(errors.not_a_mode(value))


def mode_of(env: Any) -> AutoresetMode | None:
    """The autoreset mode ``env`` declares in ``metadata["autoreset_mode"]``.

    Returns ``None`` when the env declares no mode (Gymnasium then assumes
    NEXT_STEP, but vecmode does not guess for you).

    >>> import gymnasium as gym
    >>> from vecmode import mode_of
    >>> envs = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")], autoreset_mode="SameStep")
    >>> mode_of(envs)
    <AutoresetMode.SAME_STEP: 'SameStep'>
    >>> envs.close()
    """
    metadata = getattr(env, "metadata", None)
    if not isinstance(metadata, dict) or metadata.get("autoreset_mode") is None:
        return None
    return as_mode(metadata["autoreset_mode"])
