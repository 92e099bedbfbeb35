"""Vector wrappers that are right in every autoreset mode, with the names and
arguments of :mod:`gymnasium.wrappers.vector`, so switching is an import change::

    from gymnasium.wrappers.vector import NormalizeObservation   # before
    from vecmode.wrappers import NormalizeObservation            # after

New: :class:`FrameStackObservation`, :func:`ppo_stack`, and the bases for your own.
"""

from vecmode.core import FRESH_OBSERVATION_WRAPPERS
from vecmode.wrappers.array_conversion import (
    ArrayConversion,
    JaxToNumpy,
    JaxToTorch,
    NumpyToTorch,
)
from vecmode.wrappers.base import (
    ActionWrapper,
    ObservationWrapper,
    RewardWrapper,
    StatefulWrapper,
)
from vecmode.wrappers.common import RecordEpisodeStatistics
from vecmode.wrappers.dict_info_to_list import DictInfoToList
from vecmode.wrappers.ppo_stack import PPOStack, ppo_stack
from vecmode.wrappers.rendering import FinalFrameInfo, HumanRendering, RecordVideo
from vecmode.wrappers.stateful_observation import (
    FrameStackObservation,
    NormalizeObservation,
)
from vecmode.wrappers.stateful_reward import NormalizeReward
from vecmode.wrappers.vectorize_action import (
    ClipAction,
    RescaleAction,
    TransformAction,
    VectorizeTransformAction,
)
from vecmode.wrappers.vectorize_observation import (
    DtypeObservation,
    FilterObservation,
    FlattenObservation,
    GrayscaleObservation,
    RescaleObservation,
    ReshapeObservation,
    ResizeObservation,
    TransformObservation,
    VectorizeTransformObservation,
)
from vecmode.wrappers.vectorize_reward import (
    ClipReward,
    TransformReward,
    VectorizeTransformReward,
)

__all__ = [
    "ActionWrapper",
    "ArrayConversion",
    "ClipAction",
    "ClipReward",
    "DictInfoToList",
    "DtypeObservation",
    "FilterObservation",
    "FinalFrameInfo",
    "FlattenObservation",
    "FrameStackObservation",
    "GrayscaleObservation",
    "HumanRendering",
    "JaxToNumpy",
    "JaxToTorch",
    "NormalizeObservation",
    "NormalizeReward",
    "NumpyToTorch",
    "ObservationWrapper",
    "PPOStack",
    "RecordEpisodeStatistics",
    "RecordVideo",
    "RescaleAction",
    "RescaleObservation",
    "ReshapeObservation",
    "ResizeObservation",
    "RewardWrapper",
    "StatefulWrapper",
    "TransformAction",
    "TransformObservation",
    "TransformReward",
    "VectorizeTransformAction",
    "VectorizeTransformObservation",
    "VectorizeTransformReward",
    "ppo_stack",
]

# The others return the wrapped env's observations or new arrays, never a buffer
# they write again (tests/test_transitions.py checks), so a collector need not copy.
_NOT_FRESH = {
    "ActionWrapper",
    "FinalFrameInfo",
    "ObservationWrapper",
    "RewardWrapper",
    "StatefulWrapper",
    "TransformObservation",
    "ppo_stack",
}
FRESH_OBSERVATION_WRAPPERS.update(
    globals()[name] for name in __all__ if name not in _NOT_FRESH
)
