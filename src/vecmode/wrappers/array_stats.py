"""Running statistics in a batch's own array library and device (torch, JAX...),
for the wrappers' array path; NumPy batches keep :mod:`.running_stats`.

The statistics are float64 where the device has it (torch on the CPU: yes; JAX:
only with ``jax_enable_x64``, else float32; Apple's MPS: float32).
"""

from __future__ import annotations

import functools
import importlib
import math
from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from vecmode import _arrays
from vecmode.wrappers.running_stats import RunningMeanStd

__all__ = ["ArrayPath", "ArrayQueue", "ArrayRunningMeanStd", "float_dtype", "normalize"]

INF = math.inf


def float_dtype(xp: Any, device: Any, kind: str = "float") -> Any:
    """float64 where ``device`` has it, else float32 (``kind="int"``: int64/32)."""
    wide = f"{kind}64" in xp.__array_namespace_info__().dtypes(device=device)
    return getattr(xp, f"{kind}64" if wide else f"{kind}32")


def _merge(xp: Any, mean: Any, var: Any, count: Any, x: Any, w: Any, n: Any) -> Any:
    """Chan et al.'s parallel merge of the rows of ``x`` (those of the 0/1
    weights ``w``, all if None; ``n`` of them) into ``mean``/``var``/``count``,
    in one float64 copy of ``x`` (written into; folded, see :func:`_fold_of`)."""
    _, k, fold = _fold_of(x, mean) if w is None else (0, 0, 1)
    d = _folded(xp, xp.astype(x, mean.dtype), fold, k)  # (a copy: ours)
    if w is not None:
        w = xp.reshape(xp.astype(w, mean.dtype), (-1,) + (1,) * (len(x.shape) - 1))
        d = d * w
    batch_mean = _unfolded(xp, xp.sum(d, axis=0), fold, mean) / n
    d -= _tiled(xp, batch_mean, fold)
    if w is not None:
        d = d * w
    d *= d
    m2 = _unfolded(xp, xp.sum(d, axis=0), fold, mean)
    total = count + n
    delta = batch_mean - mean
    new_mean = mean + delta * (n / total)
    new_var = (var * count + m2 + xp.square(delta) * (count * n / total)) / total
    return new_mean, new_var


def _fold_of(x: Any, like: Any) -> tuple[int, int, int]:
    """``(rows, k, fold)``: a batch of ``rows`` values of ``k`` numbers (the
    size of ``like``) is read as rows of ``fold * k``: torch's elementwise
    ops over a small last axis are 2-4x slower than over 64 numbers (from
    32,768 numbers: the reshapes cost more in smaller batches)."""
    n, k = x.shape[0], math.prod(like.shape)
    big = n * k >= 32768 and 1 < k < 64 and n % (64 // k) == 0
    return n, k, 64 // k if big else 1


def _folded(xp: Any, x: Any, fold: int, k: int) -> Any:
    """``x`` as rows of ``fold * k`` numbers (as it is if ``fold`` is 1)."""
    return x if fold == 1 else xp.reshape(x, (x.shape[0] // fold, fold * k))


def _unfolded(xp: Any, sums: Any, fold: int, like: Any) -> Any:
    """Sums over folded rows as sums over the rows (shaped as ``like``)."""
    if fold == 1:
        return sums
    return xp.reshape(xp.sum(xp.reshape(sums, (fold, -1)), axis=0), like.shape)


def _tiled(xp: Any, value: Any, fold: int) -> Any:
    """``value`` flattened, repeated ``fold`` times (as it is if ``fold`` is 1)."""
    return value if fold == 1 else xp.concat([xp.reshape(value, (-1,))] * fold)


@functools.cache
def _jitted(function: Any, *static: int) -> Any:
    """``function`` of ``jax.numpy`` compiled by ``jax.jit`` (traced once per
    shape and dtype: ``jax.jit`` of the op-by-op update is 1.5-3x faster at
    1,024-4,096 rows)."""
    import jax
    import jax.numpy as jnp

    return jax.jit(functools.partial(function, jnp), static_argnums=static)


class ArrayRunningMeanStd:
    """Gymnasium's ``RunningMeanStd`` in the arrays of ``xp`` on ``device``:
    ``mean`` and ``var`` are arrays of that library, ``count`` a float;
    :meth:`to_numpy` gives Gymnasium's, for saving. JAX's update is compiled
    (``jax.jit``). Change ``mean`` and ``var`` in place with torch's own ops
    (``mean.copy_(saved)``; not through ``.data`` or ``.numpy()``, which torch
    does not count), or assign new arrays.

    Args:
        xp: the array module (``torch``, ``jax.numpy``) or its array-api-compat
            namespace.
        shape: the shape of one value.
        device: where the statistics live.
        epsilon: the starting count.

    >>> import array_api_compat.numpy as xp  # or torch, jax.numpy
    >>> rms = ArrayRunningMeanStd(xp, shape=())
    >>> rms.update(xp.asarray([1.0, 2.0, 3.0]))  # how many rows it merged
    3
    >>> float(rms.mean), rms.count
    (1.9999..., 3.0001)
    >>> type(rms.to_numpy()).__mro__[1]  # Gymnasium's, for saving
    <class 'gymnasium.wrappers.utils.RunningMeanStd'>
    """

    def __init__(
        self,
        xp: Any,
        shape: tuple[int, ...] = (),
        device: Any = None,
        epsilon: float = 1e-4,
    ) -> None:
        xp = _arrays.namespace(xp.asarray(0.0)) or xp  # array-api-compat's
        self.xp, self.device, self.shape = xp, device, tuple(shape)
        self.dtype = dtype = float_dtype(xp, device)
        self.mean = xp.zeros(self.shape, dtype=dtype, device=device)
        self.var = xp.ones(self.shape, dtype=dtype, device=device)
        self.count = float(epsilon)
        self._jax = _arrays.name_of(xp) == "jax.numpy"
        self._scale: tuple[Any, dict[Any, Any]] = (None, {})

    @classmethod
    def from_numpy(cls, rms: Any, xp: Any, device: Any = None) -> ArrayRunningMeanStd:
        """Statistics of ``xp`` on ``device`` holding the values of ``rms`` (a
        Gymnasium ``RunningMeanStd``, e.g. one loaded from a save)."""
        shape = tuple(np.shape(rms.mean))
        out = cls(xp, shape, device, float(rms.count))
        out.mean = xp.asarray(np.asarray(rms.mean), dtype=out.dtype, device=device)
        out.var = xp.asarray(np.asarray(rms.var), dtype=out.dtype, device=device)
        return out

    def to_numpy(self) -> RunningMeanStd:
        """A NumPy copy, as Gymnasium's ``RunningMeanStd`` (for saving)."""
        mean = _arrays.to_numpy(self.mean)
        out = RunningMeanStd(self.count, mean.shape, mean.dtype)
        out.mean, out.var = mean, _arrays.to_numpy(self.var)
        return out

    def __reduce__(self) -> Any:
        """Pickled as :meth:`to_numpy` and the library's name: loaded on the
        library's default device (``torch.load`` needs ``weights_only=False``)."""
        return _loaded, (self.to_numpy(), _arrays.name_of(self.xp))

    def __deepcopy__(self, memo: Any) -> ArrayRunningMeanStd:
        return self.from_numpy(self.to_numpy(), self.xp, self.device)

    def update(self, x: Any, mask: Any = None) -> int:
        """Merge the rows of ``x`` (those of the bool array ``mask``, all if
        None) into the statistics; return how many."""
        rows = x.shape[0]
        n = rows if mask is None else _arrays.count_true(mask)
        if not n:
            return 0
        w = None if n == rows else mask
        if w is not None and not self._jax:  # mutable: the chosen rows (a gather)
            x, w = x[mask], None
        merge = compiled(self.xp, _merge)
        self.mean, self.var = merge(self.mean, self.var, self.count, x, w, n)
        self.count += n
        return n

    def normalized(
        self, x: Any, mask: Any, epsilon: float, dtype: Any, bound: float = INF
    ) -> Any:
        """``x`` normalised as :func:`normalize` does: the rows of ``mask`` (all
        if None) after merging them into the statistics, the others before
        (one compiled call on JAX)."""
        rows = x.shape[0]
        n = rows if mask is None else _arrays.count_true(mask)
        if not n:
            return normalize(x, self, epsilon, dtype, bound)
        if self._jax:
            stats, w = (self.mean, self.var, self.count), None if n == rows else mask
            kernel = _jitted(_renormalized, 5, 6)
            out, self.mean, self.var = kernel(x, stats, w, n, epsilon, dtype, bound)
            self.count += n
            return out
        if n == rows:
            self.update(x)
            return normalize(x, self, epsilon, dtype, bound)
        out = normalize(x, self, epsilon, dtype, bound)
        chosen = x[mask]  # mutable arrays: the chosen rows alone (a gather)
        self.update(chosen)
        out[mask] = normalize(chosen, self, epsilon, dtype, bound)
        return out

    def scale(self, epsilon: float, dtype: Any, fold: int = 1) -> tuple[Any, Any]:
        """``(mean, sqrt(var + epsilon))`` as ``dtype``, flattened and tiled
        ``fold`` times, kept until the statistics change (a normalisation's
        operands)."""
        mean, var = self.mean, self.var
        # (torch counts a tensor's in-place writes: mean.copy_(saved) too)
        now = (mean, var, getattr(mean, "_version", 0), getattr(var, "_version", 0))
        of, kept = self._scale
        if of is None or of[0] is not mean or of[1] is not var or of[2:] != now[2:]:
            kept = {}
            self._scale = (now, kept)
        if (key := (epsilon, dtype, fold)) not in kept:
            xp, std = self.xp, self.xp.sqrt(var + epsilon)
            kept[key] = tuple(
                _tiled(xp, xp.astype(v, dtype), fold) for v in (mean, std)
            )
        return kept[key]  # type: ignore[no-any-return]


def normalize(
    x: Any, rms: ArrayRunningMeanStd, epsilon: float, dtype: Any, bound: float = INF
) -> Any:
    """``(x - mean) / sqrt(var + epsilon)`` as ``dtype``, clipped to
    ``[-bound, bound]`` (compiled on JAX)."""
    if rms._jax:
        return _jitted(_normalize, 4, 5)(x, rms.mean, rms.var, epsilon, dtype, bound)
    xp, shape = rms.xp, x.shape
    _, k, fold = _fold_of(x, rms.mean)
    mean, std = rms.scale(epsilon, dtype, fold)
    out = _folded(xp, x, fold, k) - mean
    out /= std  # (in place: ours)
    if out.dtype != dtype:
        out = xp.astype(out, dtype)
    out = clipped(xp, out, bound)
    return out if fold == 1 else xp.reshape(out, shape)


def _normalize(
    xp: Any, x: Any, mean: Any, var: Any, epsilon: Any, dtype: Any, bound: float
) -> Any:
    # in ``dtype`` as NumPy's path (float64 batches cost 8x at 65,536 rows)
    std = xp.astype(xp.sqrt(var + epsilon), dtype)
    out = xp.astype((x - xp.astype(mean, dtype)) / std, dtype, copy=False)
    return clipped(xp, out, bound)


def _renormalized(xp: Any, x: Any, stats: Any, w: Any, n: Any, *how: Any) -> Any:
    """JAX's :meth:`ArrayRunningMeanStd.normalized`: ``(out, mean, var)``;
    ``stats``: ``(mean, var, count)``; ``how``: ``(epsilon, dtype, bound)``."""
    (mean, var, count), (epsilon, dtype, bound) = stats, how
    new_mean, new_var = _merge(xp, mean, var, count, x, w, n)
    new = _normalize(xp, x, new_mean, new_var, epsilon, dtype, bound)
    if w is not None:
        old = _normalize(xp, x, mean, var, epsilon, dtype, bound)
        new = xp.where(xp.reshape(w, (-1,) + (1,) * (x.ndim - 1)), new, old)
    return new, new_mean, new_var


@functools.cache
def compiled(xp: Any, function: Any, *static: int) -> Any:
    """``function(xp, ...)`` for the arrays of ``xp``: compiled by ``jax.jit``
    on JAX (each op dispatched alone costs it 20-100 us), else op by op."""
    if _arrays.name_of(xp) == "jax.numpy":
        return _jitted(function, *static)
    return functools.partial(function, xp)


def discounted(
    xp: Any, sums: Any, rewards: Any, terminations: Any, real: Any, gamma: float
) -> Any:
    """Gymnasium's ``sums * gamma * (1 - terminated) + reward`` in ``sums``'s
    dtype (rounded as NumPy's), where ``real`` (all rows if None)."""
    moved = xp.where(_arrays.flags(terminations), 0.0, sums * gamma) + rewards
    moved = xp.astype(moved, sums.dtype, copy=False)
    return moved if real is None else xp.where(real, moved, sums)


def scaled(xp: Any, rewards: Any, var: Any, epsilon: float, bound: float) -> Any:
    """``rewards / sqrt(var + epsilon)`` in the rewards' float dtype (integer or
    bool rewards: the library's default float), clipped to ``[-bound, bound]``."""
    dtype = rewards.dtype
    if not xp.isdtype(dtype, "real floating"):
        dtype = xp.__array_namespace_info__().default_dtypes()["real floating"]
    out = xp.astype(rewards / xp.sqrt(var + epsilon), dtype, copy=False)
    return clipped(xp, out, bound)


def clipped(xp: Any, x: Any, bound: float) -> Any:
    """``x`` clipped to ``[-bound, bound]`` in its library (inf: as it is)."""
    return x if bound == INF else xp.clip(x, -bound, bound)


def advanced(
    xp: Any, returns: Any, lengths: Any, rewards: Any, mask: Any, ended: Any
) -> tuple[Any, Any, Any, Any]:
    """Episode returns and lengths after a step's ``rewards`` (where ``mask``;
    all rows if None), the episodes that ended there and how many (an array)."""
    moved, counted = returns + rewards, lengths + 1
    if mask is None:  # (the ended mask goes out in the info: a copy)
        ended = xp.asarray(ended, copy=True)
    else:
        moved, counted = (
            xp.where(mask, moved, returns),
            xp.where(mask, counted, lengths),
        )
        ended = ended & mask
    return moved, counted, ended, xp.count_nonzero(ended)


def episode_statistics(
    xp: Any, returns: Any, lengths: Any, starts: Any, dones: Any, now: float
) -> tuple[Any, Any, Any, Any]:
    """Gymnasium's ``np.where(dones, ..., 0)`` of the returns, the lengths and
    the seconds (rounded to 6 decimals), and the seconds."""
    seconds = xp.round((now - starts) * 1e6) / 1e6
    columns = (xp.where(dones, column, 0) for column in (returns, lengths, seconds))
    return (*columns, seconds)


def started(
    xp: Any, mask: Any, now: float, starts: Any, returns: Any, lengths: Any
) -> tuple[Any, Any, Any]:
    """The episode start times, returns and lengths once ``mask``'s start."""
    zeroed = ((now, starts), (0.0, returns), (0, lengths))
    return tuple(xp.where(mask, new, old) for new, old in zeroed)


class Statistics:
    """A wrapper's ``obs_rms`` or ``return_rms``: statistics assigned to it (say,
    loaded from a save) are checked, and held in its batches' library and device
    (NumPy: as given; Gymnasium's keeps its arithmetic). Reading costs no more."""

    if TYPE_CHECKING:  # (a read is the instance's own attribute, at full speed)

        def __get__(self, wrapper: Any, owner: Any) -> Any: ...

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __set__(self, wrapper: Any, rms: Any) -> None:
        if not all(hasattr(rms, name) for name in ("mean", "var", "count")):
            raise TypeError(
                f"{type(wrapper).__name__}.{self.name} must be running statistics "
                f"with mean, var and count (Gymnasium's RunningMeanStd), got "
                f"{type(rms).__name__}."
            )
        if isinstance(rms.mean, list | tuple) or isinstance(rms.var, list | tuple):
            raise TypeError(
                f"{type(wrapper).__name__}.{self.name}: its mean and var must be "
                f"arrays, got {type(rms.mean).__name__} and {type(rms.var).__name__}:"
                f" set them with np.asarray(...)."
            )
        old = wrapper.__dict__.get(self.name, rms)
        mean, var, kept = (tuple(np.shape(x)) for x in (rms.mean, rms.var, old.mean))
        if not mean == var == kept:
            raise ValueError(
                f"{type(wrapper).__name__}.{self.name}: its mean and var have shapes "
                f"{mean} and {var}, this wrapper's statistics {kept}."
            )
        xp, device = wrapper.array_xp, wrapper.array_device
        # kept as given until the first batch picks the path (NumPy's or xp's)
        chosen = not any(type(v) is _Dispatch for v in vars(wrapper).values())
        if isinstance(rms, ArrayRunningMeanStd) and chosen:
            here = None if xp is None else (_arrays.name_of(xp), device)
            if (_arrays.name_of(rms.xp), rms.device) != here:
                rms = rms.to_numpy()  # into this wrapper's library and device
        if xp is not None and not isinstance(rms, ArrayRunningMeanStd):
            rms = ArrayRunningMeanStd.from_numpy(rms, xp, device)
        wrapper.__dict__[self.name] = rms


def _loaded(rms: RunningMeanStd, library: str) -> ArrayRunningMeanStd:
    """Pickled statistics loaded (``ArrayRunningMeanStd.__reduce__``)."""
    return ArrayRunningMeanStd.from_numpy(rms, importlib.import_module(library))


class ArrayQueue:
    """A bounded queue of episode values filled from array batches: a step adds
    ``(values, mask)`` unread; reads as a ``deque``'s (``q[-1]``, ``np.mean(q)``,
    ``maxlen``...) read them to the host, as Python numbers (never in a step)."""

    def __init__(self, maxlen: int | None) -> None:
        self.maxlen = maxlen
        self._chunks: deque[tuple[Any, Any, int]] = deque()
        self._size = 0

    def add(self, values: Any, mask: Any, count: int) -> None:
        """Queue the ``count`` values of ``values`` in ``mask``, in row order."""
        self._chunks.append((values, mask, count))
        self._size += count
        cap = INF if self.maxlen is None else self.maxlen
        while self._size - self._chunks[0][2] >= cap:
            self._size -= self._chunks.popleft()[2]

    def __iter__(self) -> Iterator[Any]:  # (NumPy reads the values by it: once)
        return iter(self[:])

    def __getitem__(self, index: Any) -> Any:
        out: list[Any] = []
        for values, mask, _ in self._chunks:
            out.extend(_arrays.to_numpy(values)[_arrays.to_numpy(mask)].tolist())
        return (out if self.maxlen is None else out[-self.maxlen :])[index]

    def __len__(self) -> int:
        return min(self._size, self._size if self.maxlen is None else self.maxlen)


class ArrayPath:
    """Mixin of the array-native wrappers: the first call of an armed method
    (:meth:`_arm`) looks at its batch once; a batch of another library than
    NumPy installs the ``_array_<name>`` methods on the instance, after
    :meth:`_to_array_path` made the state. A NumPy batch leaves the class's
    methods as they are: no per-step cost."""

    #: The methods that have an ``_array_`` version on the array path.
    ARRAY_METHODS: tuple[str, ...] = ("_reset_result", "_step_result", "episode_start")
    ARRAY_METHODS += ("transition", "normalize", "rewards", "actions")
    ARRAY_METHODS += ("observations", "final_observations")
    #: The batches' array namespace and device (None: NumPy's path).
    array_xp: Any = None
    array_device: Any = None

    def _arm(self, name: str) -> None:
        """Look at the first batch given to ``self.<name>`` (its first argument)."""
        setattr(self, name, _Dispatch(self, name))

    def _to_array_path(self, xp: Any, leaf: Any) -> None:
        """Make the state in ``xp`` on ``leaf``'s device (extend, calling super)."""
        import array_api_compat

        self.array_xp, self.array_device = xp, array_api_compat.device(leaf)
        for name in self.ARRAY_METHODS:
            self.__dict__.pop(name, None)
            found = getattr(type(self), "_array_" + name.lstrip("_"), None)
            if found is not None and found not in (
                ArrayPath._array_reset_result,
                ArrayPath._array_step_result,
            ):
                setattr(self, name, found.__get__(self))

    def _array_reset_result(self, obs: Any, infos: Any, state: Any) -> Any:
        return super()._reset_result(obs, infos, state)  # type: ignore[misc]

    def _array_step_result(self, result: Any) -> Any:
        return super()._step_result(result)  # type: ignore[misc]


class RescalingPath(ArrayPath):
    """:class:`ArrayPath` of a Gymnasium ``rescale_box`` transform ``self._func``:
    its own ``gradient`` and ``intercept`` (the same rounding), on the device."""

    def _to_array_path(self, xp: Any, leaf: Any) -> None:
        super()._to_array_path(xp, leaf)
        f, on = self._func, self.array_device  # type: ignore[attr-defined]
        cells = dict(zip(f.__code__.co_freevars, f.__closure__ or (), strict=True))
        if not {"gradient", "intercept"} <= cells.keys():  # another Gymnasium's
            raise TypeError(
                f"{type(self).__name__} cannot read this Gymnasium's rescale_box "
                f"transform for torch/JAX batches: convert the batches to NumPy."
            )
        self._gradient = xp.asarray(cells["gradient"].cell_contents, device=on)
        self._intercept = xp.asarray(cells["intercept"].cell_contents, device=on)


class _Dispatch:
    """An :class:`ArrayPath`'s armed method: picks the path at its first call."""

    def __init__(self, owner: ArrayPath, name: str) -> None:
        self.owner, self.name = owner, name  # the method's name

    def __call__(self, batch: Any, *args: Any, **kwargs: Any) -> Any:
        owner = self.owner
        delattr(owner, self.name)  # not __dict__.pop: attribute loads stay fast
        if owner.array_xp is None:
            xp = _arrays.namespace(batch)
            if xp is not None:
                owner._to_array_path(xp, _arrays.leaf(batch))
        for cls in type(owner).__mro__:  # statistics into the path chosen
            for name in (n for n, v in vars(cls).items() if type(v) is Statistics):
                setattr(owner, name, getattr(owner, name))
        return getattr(owner, self.name)(batch, *args, **kwargs)
