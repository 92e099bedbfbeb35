"""Test environments, a strict comparator and a driver shared by the tests."""

from __future__ import annotations

import contextlib
import functools
import multiprocessing
import os
import signal
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import strategies as st

from vecmode.modes import mode_of
from vecmode.replay.compare import as_numpy
from vecmode.testing.envs import ScheduledEnv, scheduled_env_fns
from vecmode.transitions import RealTransition, TransitionReader

OBS_TYPES = ("box", "dict", "tuple", "discrete")

#: the sub-env factories of vecmode's own test kit, under the tests' old name
scheduled_fns = scheduled_env_fns


# ------------------------------------------------ Gymnasium's known warnings
@contextlib.contextmanager
def gymnasium_box_warnings_ignored() -> Iterator[None]:
    """Silence the warnings Gymnasium's ``Box`` gives when a wrapper derives a
    space of another dtype from the env's (``DtypeObservation(env, np.float64)``
    over a float32 Box): its bounds check casts the bounds ("overflow encountered
    in cast") and it warns that their precision is lowered. Known and harmless;
    every other warning still shows."""
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", "overflow encountered in cast", RuntimeWarning
        )
        warnings.filterwarnings("ignore", ".*precision lowered by casting", UserWarning)
        yield


@contextlib.contextmanager
def vector_env_metadata_kept() -> Iterator[None]:
    """Leave ``gymnasium.vector.VectorEnv.metadata`` as it was: ALE's
    ``AtariVectorEnv`` writes its mode into that dict, which every VectorEnv class
    without a metadata of its own shares (an ALE bug), so a test that builds one
    would change what later tests' envs declare."""
    shared = dict(gym.vector.VectorEnv.metadata)
    try:
        yield
    finally:
        gym.vector.VectorEnv.metadata.clear()
        gym.vector.VectorEnv.metadata.update(shared)


#: EnvPool's own warnings, known here: its spaces' float64 bounds (Gymnasium
#: casts them), and ``reset(seed=...)``, which the measurements call on purpose.
envpool_warnings = pytest.mark.filterwarnings(
    "ignore:EnvPool seeds are fixed:UserWarning",
    "ignore:.*Box (low|high)'s precision lowered by casting to float32:UserWarning",
)


def without_box_warnings(build: Callable[..., Any]) -> Callable[..., Any]:
    """``build`` (a wrapper class or factory), called under
    :func:`gymnasium_box_warnings_ignored`."""

    def quiet(*args: Any, **kwargs: Any) -> Any:
        with gymnasium_box_warnings_ignored():
            return build(*args, **kwargs)

    quiet.__name__ = getattr(build, "__name__", type(build).__name__)
    return quiet


# ---------------------------------------------------------------- comparison
def assert_same(
    expected: Any,
    got: Any,
    path: str = "",
    strict_types: bool = True,
    batched_scalars: bool = False,
):
    """Assert two step/reset results are identical: values, dtypes, keys, masks.

    With ``strict_types=False`` a NumPy scalar equals the Python scalar of the same
    value (and a tuple of them), the one difference allowed where vecmode recovers
    a final observation from a batched one. With ``batched_scalars``, where
    ``expected`` is a Python ``int``, ``float`` or ``bool``, ``got`` may be exactly
    the NumPy scalar Gymnasium's info batching makes of it (``np.int64``,
    ``np.float64``, ``np.bool_``), of the same value; nothing else differs.
    """
    if batched_scalars and type(expected) in (int, float, bool):
        batched = np.dtype(type(expected)).type
        assert type(got) in (type(expected), batched), (
            f"{path or '<root>'}: type {type(got).__name__} is neither "
            f"{type(expected).__name__} nor {batched.__name__}"
        )
        assert expected == got, f"{path or '<root>'}: {expected!r} != {got!r}"
        return
    where = path or "<root>"
    if _library_array(expected) or _library_array(got):
        assert type(expected) is type(got), (
            f"{where}: expected {type(expected).__name__}, got {type(got).__name__}"
        )
        assert str(expected.dtype) == str(got.dtype), (
            f"{where}: dtype {expected.dtype} != {got.dtype}"
        )
        assert_same(as_numpy(expected), as_numpy(got), where, strict_types)
        return
    if isinstance(expected, np.ndarray) or isinstance(got, np.ndarray):
        assert isinstance(expected, np.ndarray) and isinstance(got, np.ndarray), (
            f"{where}: expected {type(expected).__name__}, got {type(got).__name__}"
        )
        assert expected.dtype == got.dtype, (
            f"{where}: dtype {expected.dtype} != {got.dtype}"
        )
        assert expected.shape == got.shape, (
            f"{where}: shape {expected.shape} != {got.shape}"
        )
        if expected.dtype == object:
            for i, (e, g) in enumerate(zip(expected.ravel(), got.ravel(), strict=True)):
                assert_same(e, g, f"{where}[{i}]", strict_types, batched_scalars)
        else:
            assert np.array_equal(
                expected, got, equal_nan=expected.dtype.kind == "f"
            ), f"{where}: {expected!r} != {got!r}"
        return
    if isinstance(expected, dict):
        assert isinstance(got, dict), f"{where}: expected dict, got {type(got)}"
        assert set(expected) == set(got), (
            f"{where}: keys {sorted(expected)} != {sorted(got)}"
        )
        for key in expected:
            assert_same(
                expected[key], got[key], f"{where}.{key}", strict_types, batched_scalars
            )
        return
    if isinstance(expected, (tuple, list)):
        assert isinstance(got, (tuple, list)), (
            f"{where}: expected sequence, got {got!r}"
        )
        if strict_types:
            assert type(expected) is type(got), (
                f"{where}: {type(expected)} != {type(got)}"
            )
        assert len(expected) == len(got), (
            f"{where}: length {len(expected)} != {len(got)}"
        )
        for i, (e, g) in enumerate(zip(expected, got, strict=True)):
            assert_same(e, g, f"{where}[{i}]", strict_types, batched_scalars)
        return
    if strict_types or not (
        isinstance(expected, (int, float, bool, np.generic))
        and isinstance(got, (int, float, bool, np.generic))
    ):
        assert type(expected) is type(got), (
            f"{where}: type {type(expected).__name__} != {type(got).__name__}"
        )
    assert expected == got, f"{where}: {expected!r} != {got!r}"


def _library_array(value: Any) -> bool:
    """A torch tensor or a jax array."""
    return type(value).__module__.split(".")[0] in ("torch", "jax", "jaxlib")


# ------------------------------------------------------------------- driving
@dataclass
class Script:
    """A deterministic sequence of calls: seeds, actions and extra reset masks."""

    seed: int
    actions: list[Any]
    #: per step, an extra mask of sub-envs to reset after it (None: none)
    masks: list[np.ndarray | None] = field(default_factory=list)
    options: dict[str, Any] | None = None


def make_script(
    envs: gym.vector.VectorEnv, steps: int, seed: int = 0, mask_prob: float = 0.0
) -> Script:
    rng = np.random.default_rng(seed)
    envs.action_space.seed(seed)
    actions = [envs.action_space.sample() for _ in range(steps)]
    masks: list[np.ndarray | None] = []
    for _ in range(steps):
        if mask_prob and rng.random() < 0.5:
            masks.append(rng.random(envs.num_envs) < mask_prob)
        else:
            masks.append(None)
    return Script(seed=seed, actions=actions, masks=masks)


#: The numbers of sub-envs :func:`scenarios` draws by default.
NUM_ENVS = st.integers(1, 5)


@st.composite
def scenarios(
    draw: Any,
    num_envs: st.SearchStrategy[int] = NUM_ENVS,
    obs_types: Sequence[str] = OBS_TYPES,
    max_steps: int = 25,
) -> dict[str, Any]:
    """A random run of :func:`scheduled_fns` sub-envs: episode lengths and
    endings per sub-env, the observation type, the mode, and a :class:`Script`
    (seed, actions, extra reset masks, reset options)."""
    n = draw(num_envs)
    lengths = [
        draw(st.lists(st.integers(1, 6), min_size=1, max_size=4)) for _ in range(n)
    ]
    truncate = [draw(st.lists(st.booleans(), min_size=1, max_size=3)) for _ in range(n)]
    steps = draw(st.integers(1, max_steps))
    actions = [
        np.array(draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)))
        for _ in range(steps)
    ]
    masks = [
        draw(
            st.none()
            | st.lists(st.booleans(), min_size=n, max_size=n).map(
                lambda m: np.array(m, dtype=bool)
            )
        )
        for _ in range(steps)
    ]
    return {
        "num_envs": n,
        "lengths": lengths,
        "truncate": truncate,
        "obs_type": draw(st.sampled_from(list(obs_types))),
        "mode": draw(st.sampled_from(list(gym.vector.AutoresetMode))),
        "script": Script(
            seed=draw(st.integers(0, 2**16)),
            actions=actions,
            masks=masks,
            options=draw(st.none() | st.just({"tag": "x"})),
        ),
    }


def drive(envs: gym.vector.VectorEnv, script: Script, disabled: bool) -> list[tuple]:
    """Run ``script`` and return every call's result.

    ``disabled``: reset ended sub-envs after each step (as DISABLED training code
    must). The extra masks of the script are reset in every mode. Masks are only
    passed when they have a True entry (Gymnasium raises otherwise), and always in
    a fresh dict (Gymnasium pops the key).
    """
    records: list[tuple] = [
        ("reset", envs.reset(seed=script.seed, options=script.options))
    ]
    for t, actions in enumerate(script.actions):
        result = envs.step(actions)
        records.append(("step", result))
        mask = np.zeros(envs.num_envs, dtype=bool)
        if disabled:
            mask |= np.logical_or(result[2], result[3])
        extra = script.masks[t] if t < len(script.masks) else None
        if extra is not None:
            mask |= extra
        if mask.any():
            opts = {"reset_mask": mask.copy()}
            if script.options:
                opts.update(script.options)
            records.append(("reset_mask", envs.reset(options=opts)))
    return records


def real_transitions(
    envs: gym.vector.VectorEnv,
    queues: Sequence[Sequence[Any]],
    seed: int = 0,
    wanted: int = 12,
    cuts: Sequence[Sequence[int]] | None = None,
) -> list[list[RealTransition]]:
    """Per sub-env, its first ``wanted`` real transitions, read by
    :class:`~vecmode.transitions.TransitionReader`.

    Sub-env ``i`` takes its k-th transition with ``queues[i][k % len]``, so
    every mode runs the same episodes. ``cuts[i]``: after which of its
    transitions (counted from 1) the caller resets sub-env ``i`` with a mask,
    unless its episode just ended. The masked reset also resets what the mode
    leaves to the caller.
    """
    n = envs.num_envs
    reader = TransitionReader(mode_of(envs), n, envs)
    reader.reset(*envs.reset(seed=seed))
    taken: list[list[RealTransition]] = [[] for _ in range(n)]
    for _ in range(10 * wanted + 10):
        if min(len(t) for t in taken) >= wanted:
            break
        actions = np.array(
            [queues[i][len(taken[i]) % len(queues[i])] for i in range(n)]
        )
        reading = reader.step(actions, *envs.step(actions))
        cut = np.zeros(n, dtype=bool)
        for t in reading.transitions():
            i = t.sub_env
            taken[i].append(t)
            ended = t.terminated or t.truncated
            cut[i] = cuts is not None and len(taken[i]) in cuts[i] and not ended
        mask = reading.boundary.needs_reset | cut
        if mask.any():
            reader.reset(*envs.reset(options={"reset_mask": mask}), mask)
    assert min(len(t) for t in taken) >= wanted, "ran out of calls"
    return [t[:wanted] for t in taken]


def assert_same_run(expected: list[tuple], got: list[tuple], strict_types=True):
    assert len(expected) == len(got), f"{len(expected)} calls != {len(got)} calls"
    for n, ((kind_e, e), (kind_g, g)) in enumerate(zip(expected, got, strict=True)):
        assert kind_e == kind_g, f"call {n}: {kind_e} != {kind_g}"
        names = (
            ("obs", "infos")
            if kind_e != "step"
            else ("obs", "rewards", "terminations", "truncations", "infos")
        )
        for name, a, b in zip(names, e, g, strict=True):
            assert_same(a, b, f"call {n} ({kind_e}) {name}", strict_types)


def requires_sigint() -> None:
    """Skip the calling test when this process ignores SIGINT, as a test run
    launched with ``nohup ... &`` does: a Ctrl-C the test sends would never arrive."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        pytest.skip(
            "SIGINT is ignored in this process (inherited from a `nohup ... &` "
            "launch), so a Ctrl-C can't reach the test: run pytest in the "
            "foreground, or in a shell where SIGINT is not ignored"
        )


def alive_in_session(sid: int) -> list[int]:
    """Processes of session ``sid`` that still run (zombies excluded)."""
    alive = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        state, session = fields[0], int(fields[3])
        if session == sid and state != "Z":
            alive.append(int(entry))
    return alive


# ------------------------------------------------- faulty envs (importable, so
# they work with the spawn and forkserver start methods too)
class FaultyEnv(ScheduledEnv):
    """A ScheduledEnv that raises ``ValueError`` in its ``fail_step``-th call to
    ``step`` or its ``fail_reset``-th call to ``reset`` (counted over its life)."""

    def __init__(
        self,
        index: int = 0,
        fail_step: int | None = None,
        fail_reset: int | None = None,
        lengths: Sequence[int] = (3,),
    ) -> None:
        super().__init__(index, lengths)
        self.fail_step = fail_step
        self.fail_reset = fail_reset
        self.steps_taken = 0

    def reset(self, *, seed=None, options=None):
        if self.resets + 1 == self.fail_reset:
            self.resets += 1
            raise ValueError(f"reset of sub-env {self.index} failed on purpose")
        return super().reset(seed=seed, options=options)

    def step(self, action):
        self.steps_taken += 1
        if self.steps_taken == self.fail_step:
            raise ValueError(f"step of sub-env {self.index} failed on purpose")
        return super().step(action)

    def explode(self) -> None:
        raise KeyError(f"explode() of sub-env {self.index}")


def faulty_fns(n: int = 4, faults: dict[int, dict[str, Any]] | None = None) -> list:
    """``faults[i]``: the :class:`FaultyEnv` arguments of sub-env ``i``."""
    faults = faults or {}
    return [functools.partial(FaultyEnv, i, **faults.get(i, {})) for i in range(n)]


class SlowEnv(ScheduledEnv):
    """A ScheduledEnv whose ``step`` sleeps ``delay`` seconds."""

    def __init__(self, index: int = 0, delay: float = 0.0) -> None:
        super().__init__(index, lengths=(1000,))
        self.delay = delay

    def step(self, action):
        time.sleep(self.delay)
        return super().step(action)


class UserFault(Exception):
    """A user's own exception class (importable: a worker's pickle names it)."""


class CodedFault(ValueError):
    """A user's exception whose ``__init__`` takes other args than it passes to
    ``Exception``: its instances pickle, but do not unpickle."""

    def __init__(self, code: int, detail: str) -> None:
        super().__init__(f"fault {code}: {detail}")
        self.code = code


class LockedFault(LookupError):
    """A user's exception holding a lock: its instances do not pickle."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.lock = threading.Lock()


class RaisesIn(gym.Env):
    """A sub-env that raises ``error`` (None: never) in ``where``: its ``step``,
    its ``reset``, or ``"call"``: its ``poke()`` (``call("poke")``)."""

    observation_space = gym.spaces.Box(-1, 1, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, error: Exception | None = None, where: str = "step") -> None:
        self.error, self.where = error, where

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._fail("reset")
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self._fail("step")
        return np.zeros(2, np.float32), 0.0, False, False, {}

    def poke(self) -> str:
        self._fail("call")
        return "poked"

    def _fail(self, where: str) -> None:
        if self.error is not None and self.where == where:
            raise self.error


class InPlaceActionEnv(gym.Env):
    """Adds 1 to its (Box) action in place, then observes it: an action array
    must be the sub-env's own and writable."""

    observation_space = gym.spaces.Box(-100, 100, (2, 2), np.float32)
    action_space = gym.spaces.Box(-10, 10, (2, 2), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros((2, 2), np.float32), {}

    def step(self, action):
        action += 1
        return np.asarray(action, np.float32), 0.0, False, False, {}


def env_fn_that_raises() -> gym.Env:
    raise ValueError("this env_fn cannot build its env")


def env_fn_that_exits_in_a_worker() -> gym.Env:
    """Builds an env in the parent process, kills its process in a worker."""
    if multiprocessing.parent_process() is not None:
        os._exit(3)
    return ScheduledEnv(0)


# ------------------------------------------- every space of gymnasium.spaces
class StringSpace(gym.Space):
    """A custom space (no batching of its own): short strings of digits."""

    def __init__(self, seed: int | None = None) -> None:
        super().__init__(shape=None, dtype=None, seed=seed)

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        return "s" + "".join(str(d) for d in self.np_random.integers(0, 10, 3))

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and x.startswith("s")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StringSpace)


def every_space() -> dict[str, gym.Space]:
    """One space of each type of ``gymnasium.spaces`` (and a custom one), plain
    and nested, as observation and action spaces of :class:`SpaceEnv`."""
    from gymnasium import spaces

    box = spaces.Box(-1.0, 1.0, (2,), np.float32)
    return {
        "box": box,
        "discrete": spaces.Discrete(5, start=-2),
        "multidiscrete": spaces.MultiDiscrete([3, 4]),
        "multibinary": spaces.MultiBinary(3),
        "tuple": spaces.Tuple((spaces.Discrete(3), box)),
        "dict": spaces.Dict({"a": spaces.Discrete(3), "b": box}),
        "text": spaces.Text(5, min_length=1),
        "graph": spaces.Graph(box, spaces.Discrete(3)),
        "sequence": spaces.Sequence(spaces.Discrete(4)),
        "sequence-stacked": spaces.Sequence(box, stack=True),
        "oneof": spaces.OneOf((spaces.Discrete(3), box)),
        "custom": StringSpace(),
        "dict-of-graph-and-text": spaces.Dict(
            {"g": spaces.Graph(box, None), "t": spaces.Text(4)}
        ),
        "tuple-of-text-and-box": spaces.Tuple((spaces.Text(3), box)),
    }


#: the spaces that gymnasium's shared memory can hold
SHARED_MEMORY_SPACES = frozenset(
    (
        "box",
        "discrete",
        "multidiscrete",
        "multibinary",
        "tuple",
        "dict",
        "text",
        "oneof",
        "tuple-of-text-and-box",
    )
)


class SpaceEnv(gym.Env):
    """Observations and actions of any space; episodes of ``length`` steps.

    Observations are samples of the observation space, whose generator is seeded
    by ``reset(seed=...)``, so the same seeds give the same observations (final
    ones included) in every vector env. ``step`` checks that its action belongs to
    the action space, so a batch split wrongly fails loudly. The reward says which
    step it is; infos carry the step (and, on reset, the episode).
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, space: str, index: int = 0, length: int = 3) -> None:
        self.observation_space = every_space()[space]
        self.action_space = every_space()[space]
        self.index, self.length = index, length
        self.t, self.episode = 0, -1

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if seed is not None:
            self.observation_space.seed(seed)
        self.t, self.episode = 0, self.episode + 1
        return self.observation_space.sample(), {"episode": self.episode}

    def step(self, action: Any):
        if action not in self.action_space:
            raise ValueError(f"sub-env {self.index} got {action!r}, not an action")
        self.t += 1
        ended = self.t >= self.length
        return (
            self.observation_space.sample(),
            float(self.t + self.index / 10),
            ended and self.episode % 2 == 0,
            ended and self.episode % 2 == 1,
            {"t": self.t},
        )


def space_fns(space: str, lengths: Sequence[int] = (2, 3, 4)) -> list:
    return [
        functools.partial(SpaceEnv, space, i, length)
        for i, length in enumerate(lengths)
    ]


def array_layout(batch: Any) -> Any:
    """A batch's structure, and each leaf's library, dtype, device and shape."""
    if isinstance(batch, dict):
        return {key: array_layout(value) for key, value in batch.items()}
    if isinstance(batch, tuple):
        return tuple(array_layout(value) for value in batch)
    return (
        type(batch).__module__.split(".")[0],
        str(batch.dtype),
        str(getattr(batch, "device", None)),
        tuple(batch.shape),
    )
