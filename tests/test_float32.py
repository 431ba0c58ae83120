"""float32 end to end: float32 input (CSR or dense) trains without a float64 copy of X,
and every product is taken in double, so a float32 fit gives, bit for bit, the model of
a float64 fit of the same float32-rounded data (X.astype(float32).astype(float64))."""
import tracemalloc
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from pybudget import (BudgetSVC, LinearSVC, LinearSVR, LogisticRegression, linear_path,
                      solve_budget, solve_crammer_singer, solve_linear)
from pybudget._core import _validation as V
from pybudget.budget.svm import scale_gamma
from pybudget.linear._dcd_types import DcdOptions, DcdState
from pybudget.datasets import load_svmlight
from pybudget.stream import iter_svmlight_chunks, scan_svmlight, stream_fit

LOSSES = ("hinge", "squared_hinge", "logistic", "epsilon_insensitive",
          "squared_epsilon_insensitive")


def problem(n=240, d=30, density=0.25, seed=0, classes=2):
    """Sparse rows with full-mantissa values (float32 rounding changes them), two
    all-zero rows, labels with a linear signal; also the rows' targets for SVR."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, format="csr", random_state=rng)
    X.data = rng.standard_normal(X.nnz) * 3.0
    X = sp.vstack([X, sp.csr_matrix((2, d))]).tocsr()
    score = X @ rng.standard_normal(d) + 0.3 * rng.standard_normal(n + 2)
    cuts = np.quantile(score, np.linspace(0, 1, classes + 1)[1:-1])
    return X, np.searchsorted(cuts, score), score


def pair(X, dense=False):
    """(float32 X, its float64 copy): the inputs whose fits must agree bit for bit."""
    X32 = X.astype(np.float32)
    X64 = X32.astype(np.float64)
    assert not np.array_equal(X64.data, X.data)      # the rounding did change values
    return (X32.toarray(), X64.toarray()) if dense else (X32, X64)


def fit_quietly(f, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # convergence warnings of short runs
        return f(*args, **kw)


@pytest.mark.parametrize("dense", [False, True])
@pytest.mark.parametrize("selection", ["uniform", "shrinking", "avsf"])
@pytest.mark.parametrize("loss", LOSSES)
def test_solve_linear_equals_float64_of_rounded(loss, selection, dense):
    X, codes, score = problem()
    X32, X64 = pair(X, dense)
    y = score if "epsilon" in loss else codes
    runs = [fit_quietly(solve_linear, Xi, y, 2.0, loss=loss, selection=selection, tol=1e-3,
                        max_iter=50, fit_intercept=True, random_state=4,
                        epsilon=0.1 if "epsilon" in loss else 0.0)
            for Xi in (X32, X64)]
    a, b = runs
    np.testing.assert_array_equal(a.coef, b.coef)
    np.testing.assert_array_equal(a.alpha, b.alpha)
    assert (a.intercept, a.dual_objective, a.primal_objective, a.kkt_violation,
            a.n_steps) == (b.intercept, b.dual_objective, b.primal_objective,
                           b.kkt_violation, b.n_steps)


@pytest.mark.parametrize("dense", [False, True])
def test_crammer_singer_equals_float64_of_rounded(dense):
    X, codes, _ = problem(classes=4)
    X32, X64 = pair(X, dense)
    a, b = (fit_quietly(solve_crammer_singer, Xi, codes, 3.0, tol=1e-3, max_iter=50,
                        fit_intercept=True, random_state=2) for Xi in (X32, X64))
    np.testing.assert_array_equal(a.coef, b.coef)
    np.testing.assert_array_equal(a.alpha, b.alpha)
    assert (a.dual_objective, a.primal_objective, a.n_steps) == (
        b.dual_objective, b.primal_objective, b.n_steps)


@pytest.mark.parametrize("make", [
    lambda: LinearSVC(random_state=0, warm_start=True),
    lambda: LinearSVC(multi_class="crammer_singer", random_state=0, warm_start=True),
    lambda: LogisticRegression(random_state=0, warm_start=True),
    lambda: LinearSVR(epsilon=0.1, random_state=0, warm_start=True),
])
def test_estimators_and_warm_starts_equal(make):
    """Two fits at increasing C then a third: the warm starts build w = X.T a from the
    float32 rows (rows_combination), as scipy would from the float64 copy."""
    X, codes, score = problem(classes=3)
    X32, X64 = pair(X)
    est = [make(), make()]
    y = score if isinstance(est[0], LinearSVR) else codes
    for C in (0.5, 1.0, 4.0):
        for e, Xi in zip(est, (X32, X64)):
            fit_quietly(e.set_params(C=C).fit, Xi, y)
        np.testing.assert_array_equal(est[0].coef_, est[1].coef_)
        np.testing.assert_array_equal(est[0].intercept_, est[1].intercept_)
        np.testing.assert_array_equal(est[0].dual_objective_, est[1].dual_objective_)
    score = "predict" if isinstance(est[0], LinearSVR) else "decision_function"
    for Xa, Xb in ((X32, X64), (X32.toarray(), X64.toarray())):
        np.testing.assert_array_equal(getattr(est[0], score)(Xa), getattr(est[1], score)(Xb))


def test_linear_path_equal():
    X, codes, _ = problem()
    a, b = (fit_quietly(linear_path, Xi, codes, [0.1, 1.0, 10.0], selection="avsf",
                        random_state=1) for Xi in pair(X))
    for ra, rb in zip(a, b):
        np.testing.assert_array_equal(ra.coef, rb.coef)
        assert ra.n_steps == rb.n_steps


BUDGET_CASES = {
    "bsgd": dict(solver="bsgd"),
    "bsgd_multi_merge": dict(solver="bsgd", merge_size=3, averaging="none"),
    "bsgd_checkpoints": dict(solver="bsgd", checkpoints=3),
    "bsca": dict(solver="bsca"),
    "bsca_remove": dict(solver="bsca", maintenance="remove"),
}


@pytest.mark.parametrize("dense", [False, True])
@pytest.mark.parametrize("case", sorted(BUDGET_CASES))
def test_solve_budget_equals_float64_of_rounded(case, dense):
    X, codes, _ = problem(classes=3 if case == "bsgd" else 2)
    a, b = (solve_budget(Xi, codes, C=4.0, gamma=0.05, budget=25, epochs=2,
                         random_state=3, **BUDGET_CASES[case])
            for Xi in pair(X, dense))
    np.testing.assert_array_equal(a.support_vectors, b.support_vectors)
    np.testing.assert_array_equal(a.dual_coef, b.dual_coef)
    np.testing.assert_array_equal(a.intercept, b.intercept)
    assert (a.n_steps, a.n_merges) == (b.n_steps, b.n_merges)


def test_budget_estimator_partial_fit_and_prediction_equal():
    X, codes, _ = problem(classes=3)
    X32, X64 = pair(X)
    est = [BudgetSVC(gamma=0.05, budget=20, random_state=0) for _ in range(2)]
    for e, Xi in zip(est, (X32, X64)):
        e.partial_fit(Xi[:120], codes[:120], classes=[0, 1, 2])
        e.partial_fit(Xi[120:], codes[120:])
    np.testing.assert_array_equal(est[0].support_vectors_, est[1].support_vectors_)
    np.testing.assert_array_equal(est[0].dual_coef_, est[1].dual_coef_)
    np.testing.assert_array_equal(est[0].intercept_, est[1].intercept_)
    np.testing.assert_array_equal(est[0].decision_function(X32),
                                  est[1].decision_function(X64))
    np.testing.assert_array_equal(est[0].decision_function(X32.toarray()),
                                  est[1].decision_function(X64.toarray()))


def test_gamma_scale_from_float32():
    """gamma="scale" sums the float32 values in float64, by blocks: equal to the float64
    copy's value up to the order of the additions."""
    X32, X64 = pair(problem(n=3000)[0])
    assert scale_gamma(X32) == pytest.approx(scale_gamma(X64), rel=1e-12)
    a, b = (BudgetSVC(budget=20, random_state=0).fit(Xi, problem(n=3000)[1])
            for Xi in (X32, X64))
    assert a.gamma_ == pytest.approx(b.gamma_, rel=1e-12)


def test_stream_fit_float32(tmp_path):
    """A LIBSVM file of float32-representable values: float32 chunks train the model of
    float64 chunks, and the scan's sums (gamma="scale") agree too."""
    X, codes, _ = problem(n=300)
    X32 = X.astype(np.float32)
    path = tmp_path / "f.txt"
    with open(path, "w") as f:
        for i in range(X32.shape[0]):
            row = X32[i]
            feats = " ".join(f"{j + 1}:{float(v)!r}" for j, v in zip(row.indices, row.data))
            f.write(f"{codes[i]} {feats}\n")
    chunks = list(iter_svmlight_chunks(path, 100, X.shape[1], dtype=np.float32))
    assert all(c.dtype == np.float32 for c, _ in chunks)
    s32, s64 = scan_svmlight(path, dtype=np.float32), scan_svmlight(path)
    assert (s32["sum"], s32["sumsq"], s32["nnz"]) == (s64["sum"], s64["sumsq"], s64["nnz"])
    est = [stream_fit(BudgetSVC(budget=20, random_state=0), path, 100, dtype=dt)
           for dt in (np.float32, np.float64)]
    assert est[0].gamma_ == est[1].gamma_
    np.testing.assert_array_equal(est[0].support_vectors_, est[1].support_vectors_)
    np.testing.assert_array_equal(est[0].dual_coef_, est[1].dual_coef_)
    np.testing.assert_array_equal(est[0].intercept_, est[1].intercept_)
    Xa, ya = load_svmlight(path, dtype=np.float32)
    Xb, yb = load_svmlight(path)
    assert Xa.dtype == np.float32 and Xa.indices.dtype == np.int32
    np.testing.assert_array_equal(Xa.toarray(), Xb.toarray().astype(np.float32))
    with pytest.raises(ValueError, match="dtype must be"):
        load_svmlight(path, dtype=np.int32)
    with pytest.raises(ValueError, match="dtype must be"):
        stream_fit(BudgetSVC(), path, dtype=np.float16)


def test_canonical_csr_keeps_float32_in_place():
    X32 = problem()[0].astype(np.float32)
    X32.indices = X32.indices.astype(np.int32)
    X32.indptr = X32.indptr.astype(np.int32)
    Xc = V.as_csr(X32)
    assert Xc.dtype == np.float32 and np.shares_memory(Xc.data, X32.data)
    assert np.shares_memory(Xc.indices, X32.indices)
    # int64 indices: the index arrays are narrowed (a copy), the values are not
    X64i = sp.csr_matrix((X32.data, X32.indices.astype(np.int64),
                          X32.indptr.astype(np.int64)), shape=X32.shape)
    Xc = V.canonical_csr(X64i)
    assert Xc.indices.dtype == np.int32 and np.shares_memory(Xc.data, X32.data)
    # dense float32 becomes float32 CSR; other value types become float64
    assert V.as_csr(X32.toarray()).dtype == np.float32
    for dt in (np.float16, np.int32, np.int64, bool):
        assert V.as_csr(X32.toarray().astype(dt)).dtype == np.float64
        if dt is not np.float16:     # (scipy.sparse has no float16)
            assert V.as_csr(sp.csr_matrix(X32.toarray().astype(dt))).dtype == np.float64


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_float32_refused(bad):
    X, codes, _ = problem()
    X32 = X.astype(np.float32)
    X32.data[5] = bad
    for fit in (lambda: LinearSVC().fit(X32, codes), lambda: solve_linear(X32, codes > 0),
                lambda: BudgetSVC().fit(X32, codes),
                lambda: LinearSVC().fit(X32.toarray(), codes)):
        with pytest.raises(ValueError, match="NaN|infinity"):
            fit()


def test_solver_modules_one_value_type_each():
    """The dual CD strategies are compiled once per value type: each module reads one
    type only and refuses the other before its sweeps (no pointer it does not read
    reaches its kernels); _dual_cd routes each dtype to its module."""
    from pybudget.linear import _dcd32, _dcd64, _dual_cd
    assert _dcd64.VALUE_TYPE == np.float64 and _dcd32.VALUE_TYPE == np.float32
    X, codes, _ = problem()
    X32, X64 = pair(V.as_csr(X))
    assert _dual_cd.module_for(X32) is _dcd32 and _dual_cd.module_for(X64) is _dcd64
    n, y = X.shape[0], np.where(codes > 0, 1.0, -1.0)
    for mod, X_other in ((_dcd64, X32), (_dcd32, X64)):
        w, alpha = np.zeros(X.shape[1] + 1), np.zeros(n)
        with pytest.raises(TypeError, match=f"float{mod.VALUE_TYPE.itemsize * 8} values only"):
            mod.dcd_solve(X_other, y, np.ones(n), np.zeros(n), np.ones(n), 1.0,
                          DcdState(alpha, w, np.ones(n), np.arange(n, dtype=np.int32), n),
                          DcdOptions(selection=1, tol=0.1, max_iter=10, seed=0))
        assert not w.any() and not alpha.any()


def test_row_sqnorms_blocks_and_float32(monkeypatch):
    """Squared norms by blocks of rows equal those of the whole array, bit for bit (the
    float64 path is unchanged), and float32 rows give their float64 copy's."""
    X = problem(n=500, density=0.6)[0]
    X = V.as_csr(sp.vstack([X, sp.csr_matrix(np.arange(1.0, 31.0))]).tocsr())
    whole = np.full(X.shape[0], 4.0)
    nonempty = np.diff(X.indptr) > 0
    whole[nonempty] += np.add.reduceat(X.data * X.data, X.indptr[:-1][nonempty])
    for size in (1, 7, 100, None):
        monkeypatch.setattr(V, "CHUNK_VALUES", size or 1 << 16)
        np.testing.assert_array_equal(V.row_sqnorms(X, 2.0), whole)
        X32, X64 = pair(X)
        np.testing.assert_array_equal(V.row_sqnorms(X32, 2.0), V.row_sqnorms(X64, 2.0))
    with pytest.raises(ValueError, match="too large"):
        V.check_squares(X32, 1e200)


def test_fit_makes_no_copy_of_float32_X():
    """The largest allocation a fit makes on float32 CSR input stays far below the size
    of X's values (a float64 copy would be twice that)."""
    rng = np.random.default_rng(0)
    n, d = 4000, 3000
    X = sp.random(n, d, density=0.1, format="csr", random_state=rng, dtype=np.float32)
    X.indices, X.indptr = X.indices.astype(np.int32), X.indptr.astype(np.int32)
    y = np.where(rng.random(n) < 0.3, 1, 0)
    y3 = y + (rng.random(n) < 0.3)
    fits = {
        "LinearSVC": lambda: LinearSVC(tol=1.0, max_iter=3, random_state=0).fit(X, y),
        "logistic": lambda: LogisticRegression(tol=1.0, max_iter=3).fit(X, y),
        "crammer_singer warm": lambda: LinearSVC(
            multi_class="crammer_singer", tol=1.0, max_iter=2, warm_start=True).fit(
                X, y3).set_params(C=2.0).fit(X, y3),
        "BudgetSVC": lambda: BudgetSVC(budget=10, random_state=0).fit(X[:, :50], y),
    }
    for name, fit in fits.items():
        tracemalloc.start()
        try:
            fit_quietly(fit)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < X.data.nbytes / 2, (name, peak, X.data.nbytes)
