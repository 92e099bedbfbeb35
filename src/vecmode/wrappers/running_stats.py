"""Gymnasium's ``RunningMeanStd`` at a fraction of its cost, and normalising with it.

``update`` merges a batch in float64 on few NumPy calls (Chan et al.'s parallel
variance; a small scalar batch in Python floats) and rounds once into the state's
dtype: Gymnasium's formulas, to float64 rounding.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np
from gymnasium.wrappers import utils as gym_utils
from numpy.typing import ArrayLike, DTypeLike

__all__ = ["RunningMeanStd", "normalize", "scale_by_std"]

# up to these sizes Python floats beat NumPy calls: a scalar statistic, a merge's tail
_PYTHON_MAX = 64
_PYTHON_TAIL = 16
# rows are folded into rows of at least this many values (see _fold), in
# batches of at least _LARGE values (smaller ones gain nothing)
_FOLDED = 64
_LARGE = 2048
_F64 = np.dtype(np.float64)
# the dtypes whose values convert to Python floats exactly, and back
_EXACT_IN_FLOATS = frozenset({np.dtype(np.float32), _F64})


def _moment_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype of ``np.mean`` of a batch of ``dtype``."""
    return dtype if dtype.kind == "f" else _F64


Dtypes = tuple[np.dtype, np.dtype]  # of the mean and the var
_DTYPES: dict[tuple[Any, ...], Dtypes] = {}
_IN_PLACE: dict[tuple[Any, ...], bool] = {}


def _result_dtypes(mean: Any, var: Any, count: Any, batch: np.dtype) -> Dtypes:
    """The ``mean`` and ``var`` dtypes that Gymnasium's update gives (NumPy's rules)."""
    try:  # arrays or NumPy scalars: the cache
        key: tuple[Any, ...] | None = (mean.dtype, var.dtype, batch, type(count))
        dtypes = _DTYPES.get(key)  # type: ignore[arg-type]
    except AttributeError:  # Python scalars or lists: no cache
        key = dtypes = None
    if dtypes is None:
        moment = _moment_dtype(batch)
        strong = (count.dtype,) if isinstance(count, np.generic) else ()
        mean_dtype = np.result_type(moment, _operand(mean), *strong)
        var_term = _operand(var)  # var * count
        if isinstance(var_term, np.dtype):
            var_term = _moment_dtype(var_term)
        var_dtype = np.result_type(var_term, moment, mean_dtype, *strong)
        dtypes = (mean_dtype, var_dtype)
        if key is not None and len(_DTYPES) < 256:
            _DTYPES[key] = dtypes
    return dtypes


def _shape(value: Any) -> tuple[int, ...]:
    """``np.shape(value)``, without its dispatch for arrays."""
    shape = getattr(value, "shape", None)
    return shape if type(shape) is tuple else np.shape(value)


def _operand(value: Any) -> Any:
    """``value`` as NumPy's promotion sees it: its dtype, or a Python scalar."""
    if isinstance(value, (bool, int, float)):
        return value
    dtype = getattr(value, "dtype", None)
    return dtype if isinstance(dtype, np.dtype) else np.asarray(value).dtype


class _Scratch:
    """The float64 work buffers of a statistic of ``k`` values, for ``rows`` rows."""

    def __init__(self, shape: tuple[int, ...], rows: int) -> None:
        self.shape = shape
        self.rows = rows
        self.k = k = math.prod(shape)
        self.both = np.empty((2, rows, k), _F64)
        self.deviations = self.both[0]
        self.squares = self.both[1]
        self.ones = np.ones(rows, _F64)
        self.sums = np.empty((2, k), _F64)
        self.s1 = self.sums[0]
        self.s2 = self.sums[1]
        self.step = np.empty(k, _F64)

    def columns_of(self, n: int) -> np.ndarray:
        """A ``(k, n)`` buffer: the deviations of a column-major batch."""
        found = getattr(self, "_columns", None)
        if found is None or found.shape[1] != n:
            found = self._columns = np.empty((self.k, n), _F64)
        return found

    def rows_of(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """The deviations and squares buffers of a batch of ``n`` rows."""
        if n == self.rows:
            return self.deviations, self.squares
        return self.deviations[:n], self.squares[:n]


class RunningMeanStd(gym_utils.RunningMeanStd):
    """Gymnasium's ``RunningMeanStd`` (a subclass: same attributes and types),
    updated in float64 on few NumPy calls. An empty batch leaves the statistics
    as they are (Gymnasium's turns them into NaN). Its pickles name this class:
    to load statistics without vecmode, save ``mean``, ``var`` and ``count``.

    >>> import numpy as np, pickle
    >>> from vecmode.wrappers.running_stats import RunningMeanStd
    >>> rms = RunningMeanStd(shape=(), dtype=np.float64)
    >>> rms.update(np.array([1.0, 2.0, 3.0], dtype=np.float32))
    >>> rms.mean, rms.var, rms.count  # numpy scalars, as Gymnasium's
    (np.float64(1.99993333...), np.float64(0.66681110...), 3.0001)
    >>> pickle.loads(pickle.dumps(rms)).mean == rms.mean
    np.True_
    """

    def __init__(
        self,
        epsilon: float = 1e-4,
        shape: tuple[int, ...] = (),
        dtype: DTypeLike = np.float64,
    ) -> None:
        super().__init__(epsilon=epsilon, shape=shape, dtype=dtype)
        self._scratch: _Scratch | None = None

    def to_numpy(self) -> RunningMeanStd:
        """A copy, as the torch and JAX paths' ``obs_rms.to_numpy()`` (to save)."""
        return copy.deepcopy(self)

    # pickles and copies carry no work buffers
    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_scratch", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._scratch = None

    def update(self, x: ArrayLike) -> None:
        """Update the mean, var and count from a batch of samples (first axis)."""
        batch = x if type(x) is np.ndarray else np.asarray(x)
        mean, var = self.mean, self.var
        shape = _shape(mean)
        if batch.shape[1:] != shape or batch.ndim == 0 or _shape(var) != shape:
            if _shape(var) != shape:
                raise ValueError(
                    f"RunningMeanStd.update: mean has shape {shape} but var has "
                    f"shape {_shape(var)}; give both the statistic's shape."
                )
            wanted = "(n, " + ", ".join(map(str, shape)) + ")" if shape else "(n,)"
            raise ValueError(
                f"RunningMeanStd.update takes a batch of values of shape {shape}: an "
                f"array of shape {wanted}, one value per row; got an array of shape "
                f"{batch.shape}."
            )
        n = batch.shape[0]
        if n == 0:
            return
        dtypes = _result_dtypes(mean, var, self.count, batch.dtype)
        if shape or not self._merged_scalars(batch, n, dtypes):
            self._merge_array(batch, n, shape, dtypes)

    def _merged_scalars(self, batch: np.ndarray, n: int, dtypes: Dtypes) -> bool:
        """Merge a scalar statistic in Python floats (a small batch) or its sums
        by two NumPy calls (a large one); False: the general merge must."""
        mean, var, count = self.mean, self.var, self.count
        if n <= _PYTHON_MAX:
            try:
                mean, var = _merge_scalar(
                    float(mean), float(var), count, batch.tolist(), n
                )
            except (OverflowError, ValueError):  # fsum: inf - inf, or overflow
                return False
        elif count >= n and _exact(mean) and _exact(var):
            mean, var = _merge_sums(batch, float(mean), float(var), count, n)
        else:
            return False
        self.mean, self.var = dtypes[0].type(mean), dtypes[1].type(var)
        self.count = count + n
        return True

    def _merge_array(
        self, batch: np.ndarray, n: int, shape: tuple[int, ...], dtypes: Dtypes
    ) -> None:
        """Chan et al.'s parallel merge of ``batch`` into the statistics, in float64."""
        work = self._scratch
        if work is None or work.shape != shape or work.rows < n:
            work = self._scratch = _Scratch(shape, n)
        k = work.k
        mean, var, count = self.mean, self.var, self.count
        if len(shape) != 1:  # all in flat views: (n, k) and (k,)
            batch = batch.reshape(n, k)
            mean, var = np.reshape(mean, k), np.reshape(var, k)
        total = count + n
        if count < n:  # about the batch's own mean, against cancellation
            new_mean = _spread_about_batch(work, batch, mean, count, n, total)
        else:
            _sums_about(work, batch, mean, n)
            if (
                k <= _PYTHON_TAIL
                and shape
                and mean.dtype in _EXACT_IN_FLOATS
                and var.dtype in _EXACT_IN_FLOATS
            ):
                self._merge_tail(work, mean, var, total, dtypes)
                return
            s1, s2, step = work.s1, work.s2, work.step
            np.multiply(s1, 1.0 / total, out=step)  # S1 / tot
            new_mean = np.add(mean, step)
            np.multiply(s1, step, out=s1)  # S1^2 / tot
            np.subtract(s2, s1, out=s2)
        s1 = np.multiply(var, count, out=work.s1, dtype=_F64)
        np.add(s1, work.s2, out=s1)
        new_var = np.divide(s1, total)
        if len(shape) > 1:
            new_mean, new_var = new_mean.reshape(shape), new_var.reshape(shape)
        mean_dtype, var_dtype = dtypes
        if shape:
            self.mean = new_mean.astype(mean_dtype, copy=False)
            self.var = new_var.astype(var_dtype, copy=False)
        else:  # numpy scalars, as Gymnasium's 0-d arithmetic gives
            self.mean = mean_dtype.type(new_mean[0])
            self.var = var_dtype.type(new_var[0])
        self.count = total

    def _merge_tail(
        self,
        work: _Scratch,
        mean: np.ndarray,
        var: np.ndarray,
        total: Any,
        dtypes: Dtypes,
    ) -> None:
        """The merge's last steps in Python floats, in the NumPy path's order
        (``mean`` and ``var``: the statistics, flat)."""
        first, second = work.sums.tolist()
        inverse = 1.0 / total
        count = float(self.count)
        new_mean, new_var = [], []
        for m, v, s1, s2 in zip(
            mean.tolist(), var.tolist(), first, second, strict=True
        ):
            step = s1 * inverse  # S1 / tot
            new_mean.append(m + step)
            new_var.append((v * count + (s2 - s1 * step)) / total)
        mean_out, var_out = np.array(new_mean, dtypes[0]), np.array(new_var, dtypes[1])
        if len(work.shape) > 1:
            mean_out, var_out = (
                mean_out.reshape(work.shape),
                var_out.reshape(work.shape),
            )
        self.mean, self.var, self.count = mean_out, var_out, total


def _exact(value: Any) -> bool:
    """Whether ``value`` (a statistic) converts to a Python float exactly."""
    return getattr(value, "dtype", None) in _EXACT_IN_FLOATS


def _fold(x: Any, k: int) -> int:
    """How many rows of ``x`` (``(n, k)``, C-contiguous) to fold into one: NumPy
    loops over a short last axis slowly, so ``(n, 4)`` is worked as ``(n/16, 64)``."""
    n = x.shape[0]
    r = 1
    while r * k < _FOLDED and not n % (2 * r):
        r *= 2
    return r if r > 1 and x.flags.c_contiguous else 1


def _tiled(v: np.ndarray, r: int) -> np.ndarray:
    """``v`` repeated ``r`` times, flat (a statistic for folded rows)."""
    out = np.empty((r, *v.shape), v.dtype)
    out[...] = v
    return out.reshape(-1)


def _sums_about(work: _Scratch, batch: np.ndarray, mean: Any, n: int) -> None:
    """``work.s1``, ``work.s2``: the sums of ``batch - mean`` and of its squares."""
    large = n * work.k >= _LARGE
    if large and batch.flags.f_contiguous and not batch.flags.c_contiguous:
        # column-major (Gymnasium's CartPoleVectorEnv): reduce along its columns
        deviations = work.columns_of(n)  # one buffer: less memory to pass over
        np.subtract(batch.T, np.reshape(mean, (-1, 1)), out=deviations, dtype=_F64)
        np.add.reduce(deviations, axis=1, out=work.s1)
        np.multiply(deviations, deviations, out=deviations)
        np.add.reduce(deviations, axis=1, out=work.s2)
        return
    deviations, squares = work.rows_of(n)
    r = _fold(batch, work.k) if large and work.k < _FOLDED else 1
    if r == 1:
        np.subtract(batch, mean, out=deviations, dtype=_F64)
    else:
        m, w = n // r, r * work.k
        folded = deviations.reshape(m, w)
        np.subtract(batch.reshape(m, w), _tiled(mean, r), out=folded, dtype=_F64)
    np.multiply(deviations, deviations, out=squares)
    if n == work.rows:
        np.matmul(work.ones, work.both, out=work.sums)
    else:
        np.matmul(work.ones[:n], work.both[:, :n], out=work.sums)


def _spread_about_batch(
    work: _Scratch, batch: np.ndarray, mean: Any, count: Any, n: int, total: Any
) -> np.ndarray:
    """The new mean; in ``work.s2`` the batch's spread about its own mean, to merge."""
    deviations, squares = work.rows_of(n)
    s1, s2, step = work.s1, work.s2, work.step
    np.add.reduce(batch, 0, _F64, out=s1)
    np.divide(s1, n, out=s1)  # the batch mean
    np.subtract(batch, s1, out=deviations)
    np.multiply(deviations, deviations, out=squares)
    np.add.reduce(squares, 0, out=s2)  # m2
    delta = np.subtract(s1, mean, out=s1)
    np.multiply(delta, n / total, out=step)
    new_mean = np.add(mean, step)
    np.multiply(delta, step, out=delta)  # delta^2 n / tot
    np.multiply(delta, count, out=delta)
    np.add(s2, delta, out=s2)
    return new_mean


def _merge_sums(
    batch: np.ndarray, mean: float, var: float, count: float, n: int
) -> tuple[float, float]:
    """``(mean, var)`` merged with a large ``batch`` (a scalar statistic): its
    sums about the old mean by two NumPy calls, the rest in floats."""
    deviations = np.subtract(batch, mean, dtype=_F64)
    s1 = float(np.add.reduce(deviations))
    s2 = float(np.dot(deviations, deviations))
    total = count + n
    step = s1 / total
    return mean + step, (var * count + (s2 - s1 * step)) / total


def _merge_scalar(
    mean: float, var: float, count: float, values: list[Any], n: int
) -> tuple[float, float]:
    """``(mean, var)`` merged with ``values`` (a scalar statistic), in floats."""
    batch_mean = math.fsum(values) / n
    m2 = math.fsum([(v - batch_mean) * (v - batch_mean) for v in values])
    total = count + n
    delta = batch_mean - mean
    step = delta * (n / total)
    return mean + step, ((var + delta * step) * count + m2) / total


def normalize(
    x: np.ndarray, mean: Any, var: Any, epsilon: float, dtype: DTypeLike = np.float32
) -> np.ndarray:
    """``((x - mean) / np.sqrt(var + epsilon)).astype(dtype)``, bit for bit, into
    one new array."""
    std = np.sqrt(var + epsilon)
    try:
        key: tuple[Any, ...] | None = (x.dtype, mean.dtype, std.dtype, dtype)
        in_place = _IN_PLACE.get(key)  # type: ignore[arg-type]
    except AttributeError:
        key = in_place = None
    if in_place is None:
        in_place = np.result_type(x, mean, std) == np.dtype(dtype)
        if key is not None and len(_IN_PLACE) < 256:
            _IN_PLACE[key] = in_place
    laid = None
    if type(x) is np.ndarray and x.size >= _LARGE:  # along the batch's long axis
        laid = _laid_out(x, mean, std, dtype)
    if laid is None:
        result = out = np.empty(_shape(x), dtype)
    else:
        result, x, out, mean, std = laid
    if in_place:
        np.subtract(x, mean, out)
        np.divide(out, std, out)
    else:
        np.divide(np.subtract(x, mean), std, out, casting="unsafe")
    return result


def _laid_out(x: np.ndarray, mean: Any, std: Any, dtype: DTypeLike) -> Any:
    """``(result, x, out, mean, std)`` to normalise ``(n, k)`` rows along a long
    axis (NumPy loops over a short last axis slowly): a column-major batch by its
    columns, into a column-major result as NumPy gives; a row-major one folded.
    None: as they are."""
    k = _shape(mean)
    if not (
        x.ndim == 2
        and isinstance(mean, np.ndarray)
        and len(k) == 1
        and _shape(std) == k
    ):
        return None
    if x.flags.f_contiguous and not x.flags.c_contiguous:
        result = np.empty(x.shape, dtype, order="F")
        column = (-1, 1)
        return result, x.T, result.T, mean.reshape(column), std.reshape(column)
    r = _fold(x, k[0])
    if r == 1:
        return None
    out = np.empty(x.shape, dtype)
    m, w = x.shape[0] // r, r * k[0]
    return out, x.reshape(m, w), out.reshape(m, w), _tiled(mean, r), _tiled(std, r)


def scale_by_std(x: np.ndarray, var: Any, epsilon: float) -> np.ndarray:
    """``x / np.sqrt(var + epsilon)``, bit for bit (a float64 root by
    :func:`math.sqrt`, cheaper on one number)."""
    if type(var) is np.float64:
        return np.divide(x, np.float64(math.sqrt(var + epsilon)))
    return np.divide(x, np.sqrt(var + epsilon))
