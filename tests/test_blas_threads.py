"""The same bits whatever the BLAS thread count (issue 38, item 3): a dot product through
OpenBLAS is split over its threads on long vectors, so every sum that feeds an iterate
is taken in a fixed order (pybudget._core._reduce).  The problems are wide enough
(d >= 40,000) for OpenBLAS to split."""
import numpy as np
import pytest
import scipy.sparse as sp
from threadpoolctl import threadpool_info, threadpool_limits

import pybudget.dask as pbd
from pybudget._core._reduce import fixed_dot
from pybudget.linear.primal import primal_newton

pytestmark = pytest.mark.skipif(
    not any(i["user_api"] == "blas" for i in threadpool_info()),
    reason="no BLAS library whose threads threadpoolctl can set")


def wide_problem(n=3000, d=60000, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.002, format="csr", random_state=seed + 1)
    X.data[:] = rng.standard_normal(X.nnz)
    y = np.where(X @ rng.standard_normal(d) > 0, 1.0, -1.0)
    return X, y


def on_blas_threads(fit):
    """fit() run with 1 and with 2 BLAS threads."""
    out = []
    for t in (1, 2):
        with threadpool_limits(limits=t, user_api="blas"):
            out.append(fit())
    return out


def test_fixed_dot_is_the_pairwise_sum():
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal(100_003), rng.standard_normal(100_003)
    assert fixed_dot(a, b) == float(np.sum(a * b))
    assert fixed_dot(a, b) == pytest.approx(float(np.dot(a, b)), rel=1e-12)
    assert fixed_dot(a[:0], b[:0]) == 0.0


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_bda_fit_same_bits_for_1_and_2_blas_threads():
    # (np.dot in the combination's w'dw gave differences of ~1e-14 here)
    X, y = wide_problem(n=1500)

    def fit():
        m = pbd.LinearSVC(C=1.0, tol=1e-3, method="bda", n_partitions=4,
                          engine="threads", random_state=0, max_iter=6).fit(X, y)
        return np.r_[m.coef_.ravel(), m.intercept_]

    one, two = on_blas_threads(fit)
    np.testing.assert_array_equal(one, two)


def test_newton_route_same_bits_for_1_and_2_blas_threads():
    X, y = wide_problem(n=1000, seed=5)
    cvec = np.full(X.shape[0], 10.0)

    def fit():
        return primal_newton(X, y, cvec, loss="logistic", bias=100.0, tol=1e-10,
                             max_iter=8)["w"]

    one, two = on_blas_threads(fit)
    np.testing.assert_array_equal(one, two)
