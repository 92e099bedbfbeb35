"""Vector wrappers that are right in every autoreset mode.

Same names and arguments as :mod:`gymnasium.wrappers.vector`, so switching is an
import change::

    from gymnasium.wrappers.vector import NormalizeObservation   # before
    from vecmode.wrappers import NormalizeObservation            # after

Each one declares all three modes, transforms ``info["final_obs"]`` like the
observations and keeps per-sub-env state right across partial resets. New:
:class:`FrameStackObservation`, :func:`ppo_stack` (CleanRL's PPO stack in one
layer), and the bases :class:`ObservationWrapper`, :class:`ActionWrapper`,
:class:`RewardWrapper` and :class:`StatefulWrapper` for your own wrappers.
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

# Each of the others returns the wrapped env's observations or new arrays, never a
# buffer it writes again (tests/test_transitions.py holds them to it): a collector
# over them need not copy what a copying core returns. Not FinalFrameInfo (a
# single-env wrapper), TransformObservation (it returns what its function
# returns), the bases (a subclass may keep a buffer), nor ppo_stack (a function).
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
