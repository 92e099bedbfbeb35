"""ArrayConversion, NumpyToTorch, JaxToNumpy, JaxToTorch: right in every mode.

Reference: Gymnasium's own conversion (``gymnasium.wrappers.array_conversion``'s
``array_conversion``, what its single-env wrappers apply) of what the unwrapped env
returns, call by call, over the same script (partial resets included): each
observation, reward, flag and info converted; in SAME_STEP each final observation
converted on its own, in a NumPy object array, and both masks the env's NumPy bool
arrays. The jax cases run in a fresh interpreter (``tests/test_isolated.py``).
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.error import DependencyNotInstalled

import vecmode
from tests.helpers import array_layout, assert_same, make_script
from tests.wrappers.cases import BY_NAME, MODES, skip_unless_runnable, vecmode_base
from vecmode import AutoresetMode
from vecmode import wrappers as vw

NAMES = ("ArrayConversion", "NumpyToTorch", "JaxToNumpy", "JaxToTorch")
#: the library each returns, and the one it takes actions in
TARGET = {
    "ArrayConversion": "torch",
    "NumpyToTorch": "torch",
    "JaxToNumpy": "numpy",
    "JaxToTorch": "torch",
}
LAYOUT = ("final_obs", "_final_obs", "final_info", "_final_info")


def _xp(name: str) -> Any:
    return __import__(name)


def expected_step(raw: tuple, convert: Any) -> tuple:
    """Gymnasium's conversion of an unwrapped step, SAME_STEP's layout kept."""
    obs, rewards, terminations, truncations, infos = raw
    return (
        convert(obs),
        convert(rewards),
        convert(terminations),
        convert(truncations),
        expected_infos(infos, convert),
    )


def expected_infos(infos: dict, convert: Any) -> dict:
    out = convert({k: v for k, v in infos.items() if k not in LAYOUT})
    if "final_obs" in infos:
        finals = np.array(infos["final_obs"], dtype=object, copy=True)
        for i in np.flatnonzero(infos["_final_obs"]):
            finals[i] = convert(finals[i])
        out["final_obs"] = finals
        out["_final_obs"] = infos["_final_obs"]
        out["final_info"] = convert(infos["final_info"])
        out["_final_info"] = infos["_final_info"]
    return out


class Spy(gym.vector.VectorWrapper):
    """Keeps the options each reset got."""

    def __init__(self, env: gym.vector.VectorEnv) -> None:
        super().__init__(env)
        self.options: list[Any] = []

    def reset(self, **kwargs: Any) -> Any:
        # a copy: Gymnasium's vector envs pop reset_mask from the dict
        self.options.append(dict(kwargs.get("options") or {}))
        return self.env.reset(**kwargs)


def check_conversion(
    wrap: Any, kind: str, target_name: str, mode: AutoresetMode, base: str
) -> None:
    """The wrapper's outputs are the conversion of the unwrapped env's, over the
    same script; the env gets each reset_mask as a NumPy bool array."""
    from gymnasium.wrappers.array_conversion import array_conversion

    target = _xp(target_name)

    def convert(value: Any) -> Any:
        return array_conversion(value, xp=target)

    raw = vecmode_base(kind, mode, base)
    spy = Spy(vecmode_base(kind, mode, base))
    envs = wrap(spy)
    script = make_script(raw, 14, seed=2, mask_prob=0.5)
    assert_same(expected_infos(raw.reset(seed=0)[1], convert), envs.reset(seed=0)[1])
    final_obs_seen = 0
    for t, actions in enumerate(script.actions):
        raw_step = raw.step(actions)
        expected = expected_step(raw_step, convert)
        got = envs.step(convert(actions))  # actions in the caller's library
        assert_same(expected, got, f"step {t}")
        final_obs_seen += int(np.count_nonzero(got[-1].get("_final_obs", [])))
        ended = np.logical_or(raw_step[2], raw_step[3])
        extra = script.masks[t]
        mask = ended | (False if extra is None else extra)
        if mode is AutoresetMode.SAME_STEP or not mask.any():
            continue
        raw_obs, raw_infos = raw.reset(options={"reset_mask": mask})
        # the caller's mask in its own library, and another option to convert
        options = {"reset_mask": convert(mask), "other": convert(np.arange(2))}
        obs, infos = envs.reset(options=options)
        assert_same(convert(raw_obs), obs, f"reset after step {t}")
        assert_same(expected_infos(raw_infos, convert), infos)
        passed = spy.options[-1]
        assert type(passed["reset_mask"]) is np.ndarray
        assert passed["reset_mask"].dtype == np.bool_
        assert np.array_equal(passed["reset_mask"], mask)
        library = type(passed["other"]).__module__.split(".")[0]
        assert library == "numpy" if kind == "box" else library in ("jax", "jaxlib")
        assert set(options) == {"reset_mask", "other"}  # the caller's, untouched
    assert (final_obs_seen > 0) == (mode is AutoresetMode.SAME_STEP)
    raw.close()
    envs.close()


@pytest.mark.parametrize("base", ["vecmode", "gymnasium"])
@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
@pytest.mark.parametrize("name", NAMES)
def test_outputs_are_gymnasiums_conversion_of_the_envs(name, mode, base):
    case = BY_NAME[name]
    skip_unless_runnable(case)
    check_conversion(case.wrap, case.env, TARGET[name], mode, base)


def test_the_check_fails_gymnasiums_numpy_to_torch_in_same_step():
    """The check can fail: Gymnasium's own wrapper raises at the first episode end."""
    pytest.importorskip("torch")
    pytest.importorskip("array_api_compat")
    from gymnasium.wrappers.vector import NumpyToTorch

    check_conversion(NumpyToTorch, "box", "torch", AutoresetMode.NEXT_STEP, "vecmode")
    with pytest.raises(BufferError):
        check_conversion(
            NumpyToTorch, "box", "torch", AutoresetMode.SAME_STEP, "vecmode"
        )


@pytest.mark.parametrize("name", NAMES)
def test_final_observations_stay_an_object_array_with_numpy_masks(name):
    case = BY_NAME[name]
    skip_unless_runnable(case)
    envs = case.wrap(vecmode_base(case.env, AutoresetMode.SAME_STEP))
    envs.reset(seed=0)
    *_, infos = envs.step(np.zeros(3, dtype=np.int64))  # sub-env 2 ends
    assert infos["_final_obs"].tolist() == [False, False, True]
    assert type(infos["_final_obs"]) is np.ndarray
    assert type(infos["_final_info"]) is np.ndarray
    assert infos["final_obs"].dtype == object and infos["final_obs"][0] is None
    assert type(infos["final_obs"][2]).__module__.split(".")[0] == TARGET[name]
    envs.close()


def test_strings_and_objects_in_infos_stay_numpy_the_rest_converts():
    """Gymnasium's conversion raised BufferError on an info of strings (which no
    other library holds); the kit's torch runs over rich infos failed so, and
    RecordEpisodeStatistics over rich infos found 'episode' in the reset infos."""
    torch = pytest.importorskip("torch")
    from vecmode.testing import ScheduledEnv, check_wrapper

    fns = [lambda i=i: ScheduledEnv(index=i, lengths=(3,)) for i in range(2)]
    base = vecmode.with_autoreset(vecmode.SyncVectorEnv(fns), "SameStep")
    envs = vw.NumpyToTorch(base)
    envs.reset(seed=0)
    for _ in range(3):
        *_, infos = envs.step(torch.zeros(2, dtype=torch.int64))
    nested = infos["final_info"]["nested"]  # the ended step's, step 3
    assert type(nested["tag"]) is np.ndarray and nested["tag"].tolist() == ["e0s3"] * 2
    assert torch.is_tensor(nested["depth"]) and nested["depth"].tolist() == [1.0] * 2
    assert torch.is_tensor(infos["noise"]) and torch.is_tensor(infos["_noise"])
    kinds = {"array_library": "torch", "info_type": "rich", "modes": ["SameStep"]}
    check_wrapper(vw.RecordEpisodeStatistics, **kinds)  # (its key was in reset infos)


@pytest.mark.parametrize(
    ("name", "module", "install"),
    [
        (
            "NumpyToTorch",
            "torch",
            'pip install torch (or, in a vecmode checkout, pip install ".[torch]")',
        ),
        (
            "JaxToNumpy",
            "jax.numpy",
            'pip install jax (or, in a vecmode checkout, pip install ".[jax]")',
        ),
        (
            "JaxToTorch",
            "jax.numpy",
            'pip install jax (or, in a vecmode checkout, pip install ".[jax]")',
        ),
        (
            "NumpyToTorch",
            "array_api_compat",
            'pip install array-api-compat (or, in a vecmode checkout, pip install ".[torch]")',
        ),
        ("ArrayConversion", "array_api_compat", "pip install array-api-compat."),
    ],
)
def test_a_missing_library_names_the_extra(name, module, install, monkeypatch):
    """The extra for the wrapper's library, and the package's pip name (it said
    "pip install PyTorch", and sent jax users to the torch extra); vecmode is
    not on PyPI, so the extra is named as installed from a checkout."""
    if name == "NumpyToTorch" and module != "torch":
        # without torch the wrapper names torch first, whatever else is missing
        pytest.importorskip("torch")
    monkeypatch.setitem(sys.modules, module, None)
    envs = vecmode_base("box", AutoresetMode.NEXT_STEP)
    args = {"env_xp": np, "target_xp": np} if name == "ArrayConversion" else {}
    with pytest.raises(DependencyNotInstalled) as info:
        getattr(vw, name)(envs, **args)
    assert install in str(info.value), str(info.value)
    envs.close()


def test_a_jax_user_missing_array_api_compat_is_sent_to_the_jax_extra(monkeypatch):
    """(A stand-in jax.numpy: this process must not import jax.)"""
    monkeypatch.setitem(sys.modules, "jax.numpy", types.ModuleType("jax.numpy"))
    monkeypatch.setitem(sys.modules, "array_api_compat", None)
    envs = vecmode_base("box", AutoresetMode.NEXT_STEP)
    with pytest.raises(DependencyNotInstalled) as info:
        vw.JaxToNumpy(envs)
    assert str(info.value).endswith(
        "run pip install array-api-compat (or, in a vecmode checkout, pip install "
        '".[jax]").'
    )
    envs.close()


@pytest.mark.parametrize("conversion", ["vecmode", "gymnasium"])
def test_a_numpy_reading_wrapper_over_a_conversion_is_refused(conversion):
    """docs/wrappers.md: a wrapper that reads NumPy goes under a conversion. Over
    one, check_stack said ok and the first step failed deep inside (`returns +=
    rewards` on tensors). Array-native wrappers take the tensors, and step."""
    torch = pytest.importorskip("torch")
    from gymnasium.wrappers import vector as gv

    envs = vecmode_base("box", AutoresetMode.SAME_STEP)
    convert = vw.NumpyToTorch if conversion == "vecmode" else gv.NumpyToTorch
    torch_envs = convert(envs)
    with pytest.raises(vecmode.ArrayLibraryError) as info:
        vw.DictInfoToList(torch_envs)
    assert "DictInfoToList" in str(info.value)
    assert "torch" in str(info.value)
    native = (vw.RecordEpisodeStatistics, vw.NormalizeReward, vw.ClipReward)
    for wrapper in (*native, vw.FrameStackObservation):
        kwargs = {"min_reward": 0} if wrapper is vw.ClipReward else {}
        kwargs = {"stack_size": 2} if wrapper is vw.FrameStackObservation else kwargs
        wrapped = wrapper(torch_envs, **kwargs)
        if conversion == "vecmode":  # Gymnasium's cannot convert final_obs rows
            wrapped.reset(seed=0)
            actions = torch.zeros(wrapped.num_envs, dtype=torch.int64)
            assert isinstance(wrapped.step(actions)[1], torch.Tensor), wrapper
    # the right order, and a conversion over a conversion, are fine
    vw.NumpyToTorch(vw.RecordEpisodeStatistics(envs)).close()
    numpy_envs = vw.ArrayConversion(envs, env_xp=np, target_xp=np)
    vw.RecordEpisodeStatistics(numpy_envs)  # NumPy in, NumPy out
    vw.NumpyToTorch(numpy_envs).close()
    # a conversion from another library than the env's (it exported every
    # step's tensors to NumPy, and an env that needs tensors failed inside)
    with pytest.raises(vecmode.ArrayLibraryError, match="declares metadata"):
        vw.NumpyToTorch(vw.NumpyToTorch(envs))


def test_a_bad_reset_mask_is_refused_before_anything_resets():
    pytest.importorskip("torch")
    envs = vw.NumpyToTorch(vecmode_base("box", AutoresetMode.DISABLED))
    envs.reset(seed=0)
    import torch

    with pytest.raises(TypeError, match="reset_mask"):
        envs.reset(options={"reset_mask": torch.tensor([1, 0, 0])})
    with pytest.raises(ValueError, match="reset_mask"):
        envs.reset(options={"reset_mask": torch.tensor([True, False])})
    envs.step(torch.zeros(3, dtype=torch.int64))
    envs.close()


def _host(batch: Any) -> Any:
    """The batch's leaves as NumPy arrays."""
    if isinstance(batch, dict):
        return {key: _host(value) for key, value in batch.items()}
    if isinstance(batch, tuple):
        return tuple(_host(value) for value in batch)
    return np.asarray(batch)


def _row(batch: Any, i: int | None = None) -> Any:
    """Row ``i`` of a batch on the host (``None``: a whole single item), as lists."""
    if isinstance(batch, dict):
        return {key: _row(value, i) for key, value in batch.items()}
    if isinstance(batch, tuple):
        return tuple(_row(value, i) for value in batch)
    return np.asarray(batch if i is None else batch[i]).tolist()


@pytest.mark.parametrize("kind", ["box", "dict", "tuple", "discrete"])
@pytest.mark.parametrize("name", ["NumpyToTorch", "JaxToNumpy", "JaxToTorch"])
def test_final_observations_merge_into_a_batch_like_the_observations(name, kind):
    """merge_final_observations over a conversion: the ended rows hold their
    final observations, in a batch like the returned one (structure, library,
    dtype, device), the returned batch unchanged. For the jax wrappers, also over
    the env they wrap (ArrayConversion to jax). It wrote into the jax array
    (TypeError: JAX arrays are immutable), rebuilt Dict / Tuple / Discrete
    batches as NumPy arrays of the spaces' dtypes (int64 where jax gave int32)."""
    case = BY_NAME[name]
    skip_unless_runnable(case)
    from vecmode.wrappers.base import merge_final_observations

    envs = vecmode_base(kind, AutoresetMode.SAME_STEP)
    if name == "NumpyToTorch":
        stack = [vw.NumpyToTorch(envs)]
    else:
        jnp = importlib.import_module("jax.numpy")
        jax_envs = vw.ArrayConversion(envs, env_xp=np, target_xp=jnp)
        stack = [case.wrap(jax_envs), jax_envs]
    for env in stack:
        env.reset(seed=0)
        merges = 0
        for _ in range(6):  # ends on several steps, one sub-env or more
            obs, *_, infos = env.step(np.zeros(3, dtype=np.int64))
            if "_final_obs" not in infos or not infos["_final_obs"].any():
                continue
            rows = infos["_final_obs"]
            before = _host(obs)
            merged = merge_final_observations(env, obs, infos, rows)
            assert array_layout(merged) == array_layout(obs), (
                name,
                kind,
                type(env).__name__,
            )
            assert_same(before, _host(obs))  # not written into
            for i in range(3):
                want = _row(infos["final_obs"][i]) if rows[i] else _row(obs, i)
                assert _row(merged, i) == want, (name, kind, i)
            merges += 1
        assert merges >= 2
    envs.close()
