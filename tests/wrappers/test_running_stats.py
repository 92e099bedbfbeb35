"""vecmode.wrappers.running_stats: Gymnasium's RunningMeanStd, to float64 rounding
(and NormalizeReward's discounted sums, bit for bit).

Each update is checked against the exact value of Gymnasium's formulas (rational
arithmetic on the same floats), within a bound of float64 rounding that
Gymnasium's own float64 arithmetic also meets, and against Gymnasium's
``RunningMeanStd`` itself; the types, dtypes and shapes users see are
Gymnasium's, and it pickles, copies and loads like Gymnasium's.
"""

from __future__ import annotations

import copy
import pickle
from fractions import Fraction

import numpy as np
import pytest
from gymnasium.wrappers.utils import RunningMeanStd as GymRunningMeanStd
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from vecmode.wrappers import running_stats
from vecmode.wrappers.running_stats import RunningMeanStd, normalize, scale_by_std
from vecmode.wrappers.stateful_reward import discount

EPS = float(np.finfo(np.float64).eps)
#: The spacing of float64 numbers below the normal range (gradual underflow).
TINY = float(np.finfo(np.float64).smallest_subnormal)

# (3, 7): more values than the merge finishes in Python floats (the NumPy path)
SHAPES = [(), (1,), (3,), (2, 2), (3, 7)]


def exact_update(mean, var, count, batch):
    """Gymnasium's update, in rational arithmetic: flat lists of Fractions."""
    batch = np.asarray(batch)
    n = batch.shape[0]
    columns = batch.reshape(n, -1).astype(np.float64).T
    mean = np.broadcast_to(np.asarray(mean, np.float64), batch.shape[1:]).ravel()
    var = np.broadcast_to(np.asarray(var, np.float64), batch.shape[1:]).ravel()
    count, total = Fraction(count), Fraction(count) + n
    means, variances = [], []
    for j, column in enumerate(columns):
        xs = [Fraction(float(v)) for v in column]
        batch_mean = sum(xs) / n
        batch_var = sum((v - batch_mean) ** 2 for v in xs) / n
        m, v = Fraction(float(mean[j])), Fraction(float(var[j]))
        delta = batch_mean - m
        means.append(m + delta * n / total)
        variances.append(
            (v * count + batch_var * n + delta**2 * count * n / total) / total
        )
    return means, variances


def rounding_bounds(mean, batch, count, exact_var):
    """How far a float64 evaluation of the update may be from the exact one:
    ``8 eps M`` for the mean and ``4 eps (var' + M^2 n / (count + n))`` for the
    variance, M the largest magnitude among the old mean and the batch (per
    component), each plus ``8 TINY``: below the normal range an operation's error
    is up to half the subnormal spacing, not relative (a variance of 2e-311 is
    off by 5e-324). The variance's also ``(n - 1) eps D^2 n / (count + n)``, D the
    largest deviation from the old mean: the error of summing n squares one by one
    (NumPy along the first axis), which vecmode does about the old mean (a
    constant batch of 73 zeros against a mean of count 73 was off by 4.1 eps).
    Gymnasium's own float64 arithmetic stays within them."""
    batch = np.asarray(batch, np.float64)
    n = batch.shape[0]
    old = np.broadcast_to(np.abs(np.asarray(mean, np.float64)), batch.shape[1:])
    m = np.maximum(old, np.abs(batch).max(axis=0)).ravel()
    d = np.abs(batch - np.asarray(mean, np.float64)).max(axis=0).ravel()
    var = np.array([float(v) for v in exact_var])
    summed = (n - 1) * EPS * d**2 * n / (count + n)
    var_bound = 4 * EPS * (var + m**2 * n / (count + n)) + summed + 8 * TINY
    return 8 * EPS * m + 8 * TINY, var_bound


def errors_from(exact, got):
    got = np.asarray(got, np.float64).ravel()
    return np.array(
        [abs(float(Fraction(float(g)) - e)) for g, e in zip(got, exact, strict=True)]
    )


def started(cls, shape, mean, var, count, dtype=np.float64):
    rms = cls(shape=shape, dtype=dtype)
    rms.mean = np.asarray(mean, dtype).reshape(shape)
    rms.var = np.asarray(var, dtype).reshape(shape)
    rms.count = count
    return rms


# ------------------------------------------------------------------ strategies
def _values(dtype, scale):
    if dtype == np.float32:
        bound = float(np.float32(scale))
        return st.floats(-bound, bound, width=32)
    return st.floats(-scale, scale)


@st.composite
def updates(draw, dtypes=(np.float64, np.float32, np.int64)):
    """A statistic's state (mean, var, count) and a batch to update it with."""
    shape = draw(st.sampled_from(SHAPES))
    n = draw(st.one_of(st.just(1), st.integers(1, 80)))
    dtype = draw(st.sampled_from(dtypes))
    scale = draw(st.sampled_from([1e-3, 1.0, 1e3, 1e6]))
    ints = st.integers(-1000, 1000)
    elements = ints if dtype == np.int64 else _values(dtype, scale)
    batch = draw(hnp.arrays(dtype, (n, *shape), elements=elements))
    mean = draw(hnp.arrays(np.float64, shape, elements=_values(np.float64, scale)))
    var = draw(
        hnp.arrays(np.float64, shape, elements=st.floats(0, scale**2, allow_nan=False))
    )
    count = draw(
        st.one_of(
            st.just(1e-4),  # Gymnasium's initial count
            st.floats(1e-4, 1e4),
            st.floats(1e9, 1e18),  # huge counts
        )
    )
    return shape, mean, var, count, batch


# ------------------------------------------------------------ one update
@given(updates())
@example(  # a subnormal variance, found on Python 3.10 with numpy 2.2
    update=((), np.array(0.0), np.array(2.22507386e-311), 1e-4, np.array([0.0]))
)
@example(  # n squares summed about the old mean (found with numpy 2.4)
    update=(
        (3, 7),
        np.full((3, 7), 2.675818238008254e-68),
        np.zeros((3, 7)),
        73.0,
        np.zeros((73, 3, 7)),
    )
)
def test_one_update_is_gymnasiums_formula_to_float64_rounding(update):
    shape, mean, var, count, batch = update
    want_mean, want_var = exact_update(mean, var, count, batch)
    mean_bound, var_bound = rounding_bounds(mean, batch, count, want_var)
    ours = started(RunningMeanStd, shape, mean, var, count)
    ours.update(batch)
    gym = started(GymRunningMeanStd, shape, mean, var, count)
    gym.update(batch.astype(np.float64))  # Gymnasium's arithmetic in float64
    for name, rms in (("vecmode", ours), ("gymnasium", gym)):
        mean_errors = errors_from(want_mean, rms.mean)
        var_errors = errors_from(want_var, rms.var)
        assert (mean_errors <= mean_bound).all(), (name, mean_errors / mean_bound)
        assert (var_errors <= var_bound).all(), (name, var_errors / var_bound)
    assert ours.count == gym.count == count + len(batch)
    # so the two agree with each other within both bounds
    np.testing.assert_array_less(
        np.abs(np.asarray(ours.mean) - np.asarray(gym.mean)).ravel(),
        2 * mean_bound + 1e-300,
    )
    np.testing.assert_array_less(
        np.abs(np.asarray(ours.var) - np.asarray(gym.var)).ravel(),
        2 * var_bound + 1e-300,
    )


@pytest.mark.parametrize("n", [65, 1024])
@pytest.mark.parametrize("count", [1e4, 1e12])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_large_scalar_batch_is_gymnasiums_formula_to_float64_rounding(
    n, count, dtype
):
    """NormalizeReward's case: a scalar statistic, a batch of many values."""
    rng = np.random.default_rng(n)
    batch = (5 + rng.normal(size=n) * 3).astype(dtype)
    mean, var = np.float64(4.5), np.float64(8.0)
    want_mean, want_var = exact_update(mean, var, count, batch)
    mean_bound, var_bound = rounding_bounds(mean, batch, count, want_var)
    ours = started(RunningMeanStd, (), mean, var, count)
    ours.update(batch)
    assert (errors_from(want_mean, ours.mean) <= mean_bound).all()
    assert (errors_from(want_var, ours.var) <= var_bound).all()
    assert type(ours.mean) is type(ours.var) is np.float64
    assert ours.count == count + n


@given(updates(dtypes=(np.float64,)))
def test_float64_updates_match_gymnasium_directly(update):
    """Float64 batch and state: Gymnasium's own update, unchanged, to rounding."""
    shape, mean, var, count, batch = update
    ours = started(RunningMeanStd, shape, mean, var, count)
    gym = started(GymRunningMeanStd, shape, mean, var, count)
    ours.update(batch)
    gym.update(batch)
    scale = max(np.abs(batch).max(), np.abs(mean).max(), 1e-300)
    np.testing.assert_allclose(
        ours.mean, gym.mean, rtol=16 * EPS, atol=16 * EPS * scale
    )
    np.testing.assert_allclose(
        ours.var,
        gym.var,
        rtol=16 * EPS,
        atol=16 * EPS * scale**2 * len(batch) / (count + len(batch)),
    )


@given(
    shape=st.sampled_from(SHAPES),
    batches=st.lists(st.integers(1, 40), min_size=1, max_size=30),
    seed=st.integers(0, 2**32 - 1),
    offset=st.sampled_from([0.0, 5.0, -300.0]),
)
def test_a_sequence_of_updates_stays_with_gymnasium(shape, batches, seed, offset):
    """Many updates from Gymnasium's initial state (count 1e-4, mean 0, var 1)."""
    rng = np.random.default_rng(seed)
    ours, gym = RunningMeanStd(shape=shape), GymRunningMeanStd(shape=shape)
    for n in batches:
        batch = offset + rng.normal(size=(n, *shape)) * rng.uniform(0.1, 10)
        ours.update(batch)
        gym.update(batch)
        np.testing.assert_allclose(ours.mean, gym.mean, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(ours.var, gym.var, rtol=1e-12)
        assert ours.count == gym.count


@given(
    shape=st.sampled_from([(1,), (4,), (2, 3), (16,)]),
    state=st.sampled_from([np.float32, np.float64]),
    batches=st.lists(st.integers(1, 40), min_size=1, max_size=12),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_python_float_merge_is_the_numpy_merge_bit_for_bit(
    shape, state, batches, seed
):
    """A statistic of few values finishes its merge in Python floats: the very
    operations of the NumPy path, so the very same bits."""
    rng = np.random.default_rng(seed)
    python, numpy = (RunningMeanStd(shape=shape, dtype=state) for _ in range(2))
    for n in batches:
        batch = (rng.normal(size=(n, *shape)) * rng.uniform(0.1, 1e3)).astype(state)
        python.update(batch)
        tail, running_stats._PYTHON_TAIL = running_stats._PYTHON_TAIL, 0
        try:
            numpy.update(batch)
        finally:
            running_stats._PYTHON_TAIL = tail
        for field in ("mean", "var"):
            a, b = getattr(python, field), getattr(numpy, field)
            assert a.dtype == b.dtype and a.shape == b.shape == shape, field
            assert a.tobytes() == b.tobytes(), (field, a, b)
        assert python.count == numpy.count


# ------------------------------------------------------- what users see
DTYPES = [np.float64, np.float32, np.float16, np.int64, np.uint8, np.bool_]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("state", [np.float64, np.float32, np.uint8], ids=str)
@pytest.mark.parametrize("batch_dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_types_dtypes_and_shapes_are_gymnasiums(shape, state, batch_dtype):
    rng = np.random.default_rng(0)
    ours = RunningMeanStd(shape=shape, dtype=state)
    gym = GymRunningMeanStd(shape=shape, dtype=state)
    for n in (16, 1, 5):  # the small-batch and NumPy paths for scalars
        batch = (rng.uniform(0, 3, size=(n, *shape))).astype(batch_dtype)
        for rms in (ours, gym):
            rms.update(batch)
        for field in ("mean", "var"):
            a, b = getattr(ours, field), getattr(gym, field)
            assert type(a) is type(b), (field, type(a), type(b))
            assert np.asarray(a).dtype == np.asarray(b).dtype, field
            assert np.shape(a) == np.shape(b) == shape, field
        assert type(ours.count) is type(gym.count) is float
        # and the values, to the precision Gymnasium computes in: that of its
        # state, and of np.mean / np.var of the batch (float16 for float16)
        half = np.float16 in (np.asarray(gym.mean).dtype, batch.dtype)
        rtol = 1e-2 if half else 1e-5
        np.testing.assert_allclose(ours.mean, gym.mean, rtol=rtol, atol=rtol)
        np.testing.assert_allclose(ours.var, gym.var, rtol=rtol, atol=rtol)


def test_float32_statistics_are_the_float32_rounding_of_float64_arithmetic():
    """A float32 state stays float32; each update is the exact update rounded to
    float32, within 1 ulp. Gymnasium's, computed in float32, strays further."""
    rng = np.random.default_rng(3)
    ours = RunningMeanStd(shape=(4,), dtype=np.float32)
    gym = GymRunningMeanStd(shape=(4,), dtype=np.float32)
    worst = {"ours": 0, "gym": 0}
    for _ in range(200):
        batch = (7.0 + 3.0 * rng.normal(size=(16, 4))).astype(np.float32)
        for name, rms in (("ours", ours), ("gym", gym)):
            want_mean, want_var = exact_update(rms.mean, rms.var, rms.count, batch)
            rms.update(batch)
            assert rms.mean.dtype == rms.var.dtype == np.float32
            for got, want in ((rms.mean, want_mean), (rms.var, want_var)):
                want32 = np.array([float(w) for w in want], np.float32)
                ulps = np.abs(got.view(np.int32) - want32.view(np.int32)).max()
                worst[name] = max(worst[name], int(ulps))
    assert worst["ours"] <= 1 < worst["gym"], worst
    np.testing.assert_allclose(ours.mean, gym.mean, rtol=1e-5)
    np.testing.assert_allclose(ours.var, gym.var, rtol=1e-4)


def test_references_taken_before_an_update_keep_their_values():
    rms = RunningMeanStd(shape=(2,))
    rms.update(np.ones((3, 2)))
    mean, var = rms.mean, rms.var
    held = mean.copy(), var.copy()
    rms.update(np.zeros((3, 2)))
    assert rms.mean is not mean and rms.var is not var
    np.testing.assert_array_equal(mean, held[0])
    np.testing.assert_array_equal(var, held[1])


def test_an_empty_batch_changes_nothing():
    rms = RunningMeanStd(shape=(2,))
    rms.update(np.arange(6.0).reshape(3, 2))
    before = rms.mean, rms.var, rms.count
    rms.update(np.empty((0, 2)))
    assert (rms.mean, rms.var, rms.count) == before


def test_non_finite_values_propagate_as_in_gymnasium():
    for batch in (
        np.array([1.0, np.inf]),
        np.array([np.inf, -np.inf]),
        np.array([np.nan, 1.0]),
        np.array([1e308, 1e308, -1e308]),
    ):
        ours, gym = RunningMeanStd(), GymRunningMeanStd()
        with np.errstate(all="ignore"):
            ours.update(batch)
            gym.update(batch)
        np.testing.assert_array_equal(np.isnan(ours.mean), np.isnan(gym.mean))
        np.testing.assert_array_equal(np.isnan(ours.var), np.isnan(gym.var))


def test_non_finite_values_in_a_large_scalar_batch_propagate_as_in_gymnasium():
    for batch in ([1.0, np.inf], [np.inf, -np.inf], [np.nan, 1.0]):
        ours, gym = RunningMeanStd(), GymRunningMeanStd()
        ours.count = gym.count = 1e4
        with np.errstate(all="ignore"):
            ours.update(np.array(batch * 40))
            gym.update(np.array(batch * 40))
        assert np.isnan(ours.mean) == np.isnan(gym.mean), batch
        assert np.isnan(ours.var) == np.isnan(gym.var), batch


@pytest.mark.parametrize(
    ("shape", "batch"),
    [
        ((), np.float64(1.0)),
        ((), np.zeros((3, 2))),
        ((2,), np.zeros(3)),
        ((2,), np.zeros((3, 3))),
    ],
)
def test_a_batch_of_the_wrong_shape_is_refused(shape, batch):
    rms = RunningMeanStd(shape=shape)
    with pytest.raises(ValueError, match=r"RunningMeanStd\.update takes a batch"):
        rms.update(batch)
    assert rms.count == 1e-4  # unchanged


def test_a_var_of_another_shape_than_mean_is_refused():
    rms = RunningMeanStd(shape=(2,))
    rms.var = np.ones(3)
    with pytest.raises(ValueError, match="var has shape"):
        rms.update(np.zeros((1, 2)))


# ------------------------------------------------------- saving and loading
def test_it_is_gymnasiums_class_and_pickles_without_its_buffers():
    rms = RunningMeanStd(shape=(3,), dtype=np.float32)
    assert isinstance(rms, GymRunningMeanStd)
    rms.update(np.arange(12.0, dtype=np.float32).reshape(4, 3))
    fresh = RunningMeanStd(shape=(3,), dtype=np.float32)
    fresh.update(np.arange(12.0, dtype=np.float32).reshape(4, 3))
    assert len(pickle.dumps(rms)) == len(pickle.dumps(fresh))
    for clone in (pickle.loads(pickle.dumps(rms)), copy.deepcopy(rms), copy.copy(rms)):
        assert type(clone) is RunningMeanStd
        assert set(vars(clone)) == set(vars(rms))
        np.testing.assert_array_equal(clone.mean, rms.mean)
        np.testing.assert_array_equal(clone.var, rms.var)
        assert clone.count == rms.count
        batch = np.ones((2, 3), np.float32)
        clone.update(batch)
        twin = pickle.loads(pickle.dumps(rms))
        twin.update(batch)
        np.testing.assert_array_equal(clone.mean, twin.mean)
    # the original is not disturbed by its copies' updates
    np.testing.assert_array_equal(rms.mean, fresh.mean)


def test_gymnasiums_state_loads_into_it_and_back():
    gym = GymRunningMeanStd(shape=(2,))
    gym.update(np.array([[1.0, 2.0], [3.0, 5.0]]))
    ours = RunningMeanStd(shape=(2,))
    ours.mean, ours.var, ours.count = gym.mean, gym.var, gym.count
    back = GymRunningMeanStd(shape=(2,))
    back.mean, back.var, back.count = ours.mean, ours.var, ours.count
    batch = np.array([[0.5, -1.0]])
    ours.update(batch)
    back.update(batch)
    np.testing.assert_allclose(ours.mean, back.mean, rtol=4 * EPS)
    np.testing.assert_allclose(ours.var, back.var, rtol=4 * EPS)


def test_update_from_moments_is_gymnasiums():
    ours, gym = RunningMeanStd(shape=(2,)), GymRunningMeanStd(shape=(2,))
    for rms in (ours, gym):
        rms.update_from_moments(np.array([1.0, 2.0]), np.array([0.5, 0.25]), 7)
    np.testing.assert_array_equal(ours.mean, gym.mean)
    np.testing.assert_array_equal(ours.var, gym.var)
    assert ours.count == gym.count


# batches of 2,048+ values go along their long axis: column-major ones by
# columns, row-major ones folded into longer rows (or not, when n is odd)
LARGE = [((512, 4), "C"), ((512, 4), "F"), ((513, 4), "C"), ((1024, 2), "F")]
LARGE += [((64, 64), "C"), ((300, 3, 3), "C")]


@pytest.mark.parametrize(("shape", "order"), LARGE, ids=str)
@pytest.mark.parametrize("count", [1e-4, 1e6])
def test_a_large_batch_is_gymnasiums_formula_to_float64_rounding(shape, order, count):
    rng = np.random.default_rng(sum(shape))
    batch = (-30 + rng.normal(size=shape) * 4).astype(np.float32)
    batch = np.asarray(batch, order=order)
    mean = rng.normal(size=shape[1:]) - 29
    var = rng.uniform(1, 20, size=shape[1:])
    want_mean, want_var = exact_update(mean, var, count, batch)
    mean_bound, var_bound = rounding_bounds(mean, batch, count, want_var)
    ours = started(RunningMeanStd, shape[1:], mean, var, count)
    ours.update(batch)
    assert (errors_from(want_mean, ours.mean) <= mean_bound).all()
    assert (errors_from(want_var, ours.var) <= var_bound).all()
    assert ours.mean.shape == ours.var.shape == shape[1:]


@pytest.mark.parametrize(("shape", "order"), LARGE, ids=str)
@pytest.mark.parametrize("stats", [np.float32, np.float64])
def test_a_large_batch_normalises_bit_for_bit_in_numpys_layout(shape, order, stats):
    rng = np.random.default_rng(len(shape))
    x = np.asarray(rng.normal(size=shape).astype(np.float32) * 3, order=order)
    mean = rng.normal(size=shape[1:]).astype(stats)
    var = rng.uniform(0, 4, size=shape[1:]).astype(stats)
    want = ((x - mean) / np.sqrt(var + 1e-8)).astype(np.float32)
    got = normalize(x, mean, var, 1e-8)
    assert got.tobytes(order="A") == want.tobytes(order="A")
    assert got.flags.f_contiguous == want.flags.f_contiguous
    assert got.flags.c_contiguous == want.flags.c_contiguous


# ------------------------------------------------------------ normalising
@given(
    x=hnp.arrays(
        st.sampled_from([np.float32, np.float64, np.uint8]),
        st.tuples(st.integers(1, 5), st.integers(1, 4)),
        elements=st.integers(0, 255),
    ),
    stats=st.sampled_from([np.float32, np.float64]),
    epsilon=st.sampled_from([1e-8, 1e-2]),
    seed=st.integers(0, 1000),
)
def test_normalize_is_gymnasiums_expression_bit_for_bit(x, stats, epsilon, seed):
    rng = np.random.default_rng(seed)
    x = (x * rng.uniform(0.01, 3)).astype(x.dtype) if x.dtype != np.uint8 else x
    mean = rng.normal(size=x.shape[1:]).astype(stats)
    var = rng.uniform(0, 4, size=x.shape[1:]).astype(stats)
    want = ((x - mean) / np.sqrt(var + epsilon)).astype(np.float32)
    got = normalize(x, mean, var, epsilon)
    assert got.dtype == np.float32 and got.shape == x.shape
    np.testing.assert_array_equal(got, want)
    assert got is not x


@given(
    x=hnp.arrays(np.float64, st.integers(1, 8), elements=st.floats(-1e6, 1e6)),
    var=st.one_of(
        st.floats(2**-20, 1e6).map(np.float64),
        st.floats(2**-20, 1e6, width=32).map(np.float32),
    ),
    epsilon=st.sampled_from([0.0, 1e-8]),
)
def test_scale_by_std_is_gymnasiums_expression_bit_for_bit(x, var, epsilon):
    want = x / np.sqrt(var + epsilon)
    got = scale_by_std(x, var, epsilon)
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


# ------------------------------------------------------------ discounted sums
@given(
    n=st.integers(1, 20),
    seed=st.integers(0, 2**32 - 1),
    gamma=st.sampled_from([0.0, 0.5, 0.99, 1.0]),
    sums_dtype=st.sampled_from([np.float32, np.float64]),
    rewards_dtype=st.sampled_from([np.float64, np.float32, np.int64]),
    moved=st.sampled_from([0.0, 0.5, 1.0]),
    terminated=st.sampled_from([0.0, 0.3]),
)
def test_discount_is_the_row_formula_bit_for_bit(
    n, seed, gamma, sums_dtype, rewards_dtype, moved, terminated
):
    """``sums[i] = sums[i] * gamma * (1 - terminated[i]) + reward[i]`` for the
    sub-envs in the mask, others untouched, whichever path computes it; the
    returned sums are those of the masked sub-envs."""
    rng = np.random.default_rng(seed)
    sums = (rng.normal(size=n) * 100).astype(sums_dtype)
    rewards = (rng.normal(size=n) * 10).astype(rewards_dtype)
    terminations = rng.random(n) < terminated
    mask = rng.random(n) < moved if moved < 1 else np.ones(n, dtype=bool)
    want = sums.copy()
    want[mask] = want[mask] * gamma * (1 - terminations[mask]) + rewards[mask]
    got = discount(sums, gamma, rewards, terminations, mask)
    assert sums.dtype == want.dtype and sums.tobytes() == want.tobytes()
    assert got.tobytes() == want[mask].tobytes()
