"""Every bad input is refused in Python with a message naming the problem."""
import numpy as np
import pytest
import scipy.sparse as sp

from helpers import make_problem
from pybudget import BudgetSVC, LinearSVC, linear_path, solve_budget, solve_linear
from pybudget._core._validation import as_csr


@pytest.fixture
def Xy():
    return make_problem(n=30, d=6, seed=0)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_X(Xy, bad):
    X, y = Xy
    Xd = X.toarray()
    Xd[3, 2] = bad
    with pytest.raises(ValueError, match="NaN|infinity"):
        solve_linear(Xd, y)
    Xs = X.copy()
    Xs.data[0] = bad
    with pytest.raises(ValueError, match="NaN|infinity"):
        solve_linear(Xs, y)
    with pytest.raises(ValueError, match="NaN|infinity"):
        LinearSVC().fit(Xs, y)


def test_empty_and_shape_errors(Xy):
    X, y = Xy
    with pytest.raises(ValueError, match="0 sample"):
        solve_linear(np.zeros((0, 3)), [])
    with pytest.raises(ValueError, match="0 feature"):
        solve_linear(np.zeros((5, 0)), [0, 1, 0, 1, 0])
    with pytest.raises(ValueError, match="30 rows"):
        solve_linear(X, y[:-1])
    with pytest.raises(ValueError, match="1-dimensional"):
        solve_linear(X, np.c_[y, y])
    with pytest.raises(ValueError, match="2D|2-d|Expected 2D"):
        solve_linear(np.ones(5), [0, 1, 0, 1, 0])
    with pytest.raises(TypeError, match="None"):
        solve_linear(None, y)


def test_labels(Xy):
    X, y = Xy
    with pytest.raises(ValueError, match="1 class"):
        solve_linear(X, np.ones(30))
    with pytest.raises(ValueError, match="exactly two classes"):
        solve_linear(X, np.arange(30) % 3)
    with pytest.raises(ValueError, match="NaN"):
        solve_linear(X, np.where(y > 0, np.nan, 1.0))
    res = solve_linear(X, np.where(y > 0, "yes", "no"))  # non-numeric labels are fine
    assert list(res.classes) == ["no", "yes"]


@pytest.mark.parametrize("name,value,err", [
    ("C", 0, ValueError), ("C", -1.0, ValueError), ("C", np.inf, ValueError),
    ("C", "1", TypeError), ("tol", 0.0, ValueError), ("tol", -1e-3, ValueError),
    ("intercept_scaling", 0.0, ValueError), ("max_iter", -1, ValueError),
    ("max_iter", 2.5, TypeError), ("loss", "log", ValueError),
    ("selection", "random", ValueError), ("random_state", -3, ValueError),
    ("random_state", "seed", TypeError),
])
def test_bad_parameters(Xy, name, value, err):
    X, y = Xy
    kw = {name: value}
    if name == "intercept_scaling":
        kw["fit_intercept"] = True
    with pytest.raises(err, match=name):
        solve_linear(X, y, **kw)
    with pytest.raises(err, match=name):
        LinearSVC(**kw).fit(X, y)


def test_sample_weight_errors(Xy):
    X, y = Xy
    with pytest.raises(ValueError, match="sample_weight must have shape"):
        solve_linear(X, y, sample_weight=np.ones(3))
    with pytest.raises(ValueError, match="non-negative"):
        solve_linear(X, y, sample_weight=-np.ones(30))
    with pytest.raises(ValueError, match="NaN"):
        solve_linear(X, y, sample_weight=np.full(30, np.nan))
    with pytest.raises(ValueError, match="zero for every"):
        solve_linear(X, y, sample_weight=np.zeros(30))


def test_int64_and_unsorted_indices_are_converted_without_touching_input(Xy):
    X, y = Xy
    ref = solve_linear(X, y, tol=1e-6, random_state=0)
    X64 = sp.csr_matrix((X.data, X.indices.astype(np.int64), X.indptr.astype(np.int64)),
                        shape=X.shape)
    np.testing.assert_array_equal(solve_linear(X64, y, tol=1e-6, random_state=0).coef, ref.coef)
    # reverse the index order inside every row
    rows = [slice(X.indptr[i], X.indptr[i + 1]) for i in range(X.shape[0])]
    ind = np.concatenate([X.indices[r][::-1] for r in rows])
    dat = np.concatenate([X.data[r][::-1] for r in rows])
    Xu = sp.csr_matrix((dat, ind, X.indptr.copy()), shape=X.shape)
    before = Xu.indices.copy()
    got = solve_linear(Xu, y, tol=1e-6, random_state=0)
    np.testing.assert_allclose(got.coef, ref.coef, atol=1e-12)
    np.testing.assert_array_equal(Xu.indices, before)  # the caller's matrix is untouched


def test_duplicate_entries_are_summed():
    X = sp.csr_matrix((np.array([1.0, 2.0, 5.0]), np.array([1, 1, 0]), np.array([0, 2, 3])),
                      shape=(2, 3))
    C = as_csr(X)
    np.testing.assert_array_equal(C.toarray(), [[0, 3, 0], [5, 0, 0]])


def test_malformed_csr_is_refused():
    X = sp.csr_matrix(np.eye(3))
    X.indices[1] = 7  # out of range: would be a wild write in an unchecked kernel
    with pytest.raises(ValueError):
        solve_linear(X, [0, 1, 0])


def _short_indptr(X):
    X = X.copy()
    X.indptr = X.indptr[:-2].copy()          # two rows short of what shape says
    return X


def _wrapped_int64_index(X):
    X = X.copy()
    X.indices, X.indptr = X.indices.astype(np.int64), X.indptr.astype(np.int64)
    X.indices[0] = 2**32 + 1                 # a cast to int32 would make this 1
    return X


def _past_the_end_indptr(X):
    X = X.copy()
    X.indptr[-1] = 10**6
    return X


FITTERS = {
    "LinearSVC": lambda X, y: LinearSVC().fit(X, y),
    "solve_linear": lambda X, y: solve_linear(X, y),
    "linear_path": lambda X, y: linear_path(X, y, [0.1, 1.0]),
    "BudgetSVC": lambda X, y: BudgetSVC(budget=5).fit(X, y),
    "solve_budget": lambda X, y: solve_budget(X, y, budget=5),
}


@pytest.mark.parametrize("breakage", [_short_indptr, _wrapped_int64_index, _past_the_end_indptr])
@pytest.mark.parametrize("fitter", sorted(FITTERS))
def test_broken_csr_is_refused_by_every_fit(breakage, fitter):
    X = sp.csr_matrix(np.random.RandomState(0).randn(40, 5))
    y = np.arange(40) % 2
    with pytest.raises(ValueError, match="indptr|outside|index pointer"):
        FITTERS[fitter](breakage(X), y)


@pytest.mark.parametrize("breakage", [_short_indptr, _wrapped_int64_index, _past_the_end_indptr])
@pytest.mark.parametrize("make", [LinearSVC, lambda: BudgetSVC(budget=5)])
def test_broken_csr_is_refused_by_predict(breakage, make):
    Xd = np.random.RandomState(0).randn(40, 5)
    y = np.arange(40) % 2
    est = make().fit(Xd, y)
    bad = breakage(sp.csr_matrix(Xd))
    for method in (est.predict, est.decision_function, lambda X: est.score(X, y)):
        with pytest.raises(ValueError, match="indptr|outside|index pointer"):
            method(bad)


def test_all_zero_rows_and_columns_are_fine():
    X = sp.csr_matrix(np.array([[0, 0, 0], [1, 0, 0], [0, 0, 0], [-1, 0, 0.0]]))
    res = solve_linear(X, [1, 1, 0, 0], tol=1e-6)
    assert np.isfinite(res.coef).all() and res.converged


@pytest.mark.parametrize("fit", [
    lambda X, y: LinearSVC().fit(X, y),
    lambda X, y: LinearSVC(fit_intercept=True, intercept_scaling=1e300).fit(X / 1e160, y),
    lambda X, y: BudgetSVC(budget=5).fit(X, y),
    lambda X, y: BudgetSVC(budget=5, gamma=1.0).partial_fit(X, y, classes=[0, 1]),
])
def test_values_whose_squares_overflow_are_refused(fit):
    """Squared row norms beyond float64 would end in a silently trivial model (zero
    weights, gamma 'scale' falling back to 1): refuse them by name instead."""
    X = np.random.RandomState(0).randn(40, 5) * 1e160
    y = np.arange(40) % 2
    with pytest.raises(ValueError, match="too large for float64"):
        fit(X, y)


def test_a_weight_vector_too_large_for_memory_is_refused():
    # two rows, but a column index near 2**31: w alone would need 16 GiB
    X = sp.csr_matrix((np.ones(2), np.array([0, 2**31 - 2], dtype=np.int32),
                       np.array([0, 1, 2], dtype=np.int32)), shape=(2, 2**31 - 1))
    with pytest.raises(ValueError, match="weight vector.* 16.0 GiB"):
        LinearSVC().fit(X, [0, 1])
    with pytest.raises(ValueError, match="weight vector.* 16.0 GiB"):
        linear_path(X, [0, 1], [1.0])


def test_flags_verbosity_and_weights_are_typed():
    X, y = make_problem(n=30, d=4, seed=2)
    for kw, match in ((dict(fit_intercept="False"), "fit_intercept"),
                      (dict(warm_start=1), "warm_start"),
                      (dict(verbose=None), "verbose"), (dict(verbose=-1), "verbose"),
                      (dict(verbose=float("nan")), "verbose")):
        with pytest.raises((TypeError, ValueError), match=match):
            LinearSVC(**kw).fit(X, y)
    LinearSVC(verbose=False).fit(X, y)
    for sw in (["a"] * 30, np.ones(30) * (1 + 1j), {"a": 1}):
        with pytest.raises(TypeError, match="sample_weight"):
            solve_linear(X, y, sample_weight=sw)


def test_mixed_label_types_are_named():
    X, _ = make_problem(n=30, d=4, seed=2)
    y = np.array([1, "a"] * 15, dtype=object)
    for fit in (lambda: solve_linear(X, y), lambda: solve_budget(X, y, budget=5)):
        with pytest.raises(TypeError, match="mixes label types"):
            fit()


def _blocks():
    rng = np.random.default_rng(0)
    A = sp.random(30, 12, density=0.3, format="csr", random_state=1)
    unsorted = A.copy()
    unsorted.indices[:2] = unsorted.indices[1::-1].copy()     # (row 0 holds > 2 entries)
    wide = sp.csr_matrix((A.data, A.indices.astype(np.int64), A.indptr.astype(np.int64)),
                         shape=A.shape)
    big = np.full((2, 3), 1e308)                # finite, but its sum overflows
    return {"csr": A, "csc": A.tocsc(), "coo": A.tocoo(), "unsorted": unsorted,
            "int64 indices": wide, "float32": A.astype(np.float32),
            "csr_array": sp.csr_array(A), "dense": A.toarray(),
            "fortran": np.asfortranarray(A.toarray()),
            "dense float32": A.toarray().astype(np.float32),
            "dense int": rng.integers(-3, 4, (5, 4)), "dense bool": rng.random((5, 4)) < .5,
            "overflowing sum": big, "overflowing sparse sum": sp.csr_matrix(big),
            "list": [[0.0, 1.0], [2.0, 0.0]], "object": np.array([[1, "a"]], dtype=object),
            "no columns": np.zeros((3, 0))}


def _reference_csr(X):
    """What as_csr gave before it checked arrays itself: scikit-learn's check_array,
    then canonical_csr."""
    from sklearn.utils import check_array

    from pybudget._core._validation import VALUE_TYPES, canonical_csr
    return canonical_csr(check_array(X, accept_sparse="csr", dtype=list(VALUE_TYPES),
                                     ensure_all_finite=True, input_name="X",
                                     accept_large_sparse=True))


@pytest.mark.parametrize("name", list(_blocks()))
def test_as_csr_equals_check_array_then_canonical_csr(name):
    """as_csr checks scipy sparse and numpy arrays without scikit-learn (as a Dask
    worker does its blocks): the same matrix, or the same error, as check_array."""
    X = _blocks()[name]
    try:
        want = _reference_csr(X)
    except (ValueError, TypeError) as exc:
        with pytest.raises(type(exc)) as got:
            as_csr(X)
        assert str(got.value).splitlines()[0] == str(exc).splitlines()[0]
        return
    got = as_csr(X)
    assert type(got) is type(want) and got.dtype == want.dtype and got.shape == want.shape
    for a in ("data", "indices", "indptr"):
        assert np.array_equal(getattr(got, a), getattr(want, a))
        assert getattr(got, a).dtype == getattr(want, a).dtype


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("kind", ["dense", "fortran", "csr", "csr_array", "float32"])
def test_as_csr_names_nan_and_infinity_as_check_array_does(value, kind):
    X = np.ones((4, 3), dtype=np.float32 if kind == "float32" else np.float64,
                order="F" if kind == "fortran" else "C")
    X[2, 1] = value
    X = {"csr": sp.csr_matrix, "csr_array": sp.csr_array, "float32": sp.csr_matrix}.get(
        kind, np.asarray)(X)
    with pytest.raises(ValueError) as want:
        _reference_csr(X)
    with pytest.raises(ValueError) as got:
        as_csr(X)
    assert str(got.value).splitlines()[0] == str(want.value).splitlines()[0]
