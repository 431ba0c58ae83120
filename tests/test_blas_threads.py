"""The same bits whatever the BLAS thread count: a dot product through OpenBLAS is split
over its threads on long vectors, so every sum that feeds an iterate is taken in a fixed
order (pybudget._core._reduce).  The problems are wide enough (d >= 40,000) for OpenBLAS
to split, which each test checks first (``blas_splits``): where BLAS does not split,
the same bits would prove nothing."""
import numpy as np
import pytest
import scipy.sparse as sp
from threadpoolctl import threadpool_info, threadpool_limits

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


def blas_splits(n):
    """Skip unless np.dot of two vectors of length n gives other bits on 2 BLAS threads
    than on 1 (a machine with one CPU, or a BLAS that does not split)."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(n), rng.standard_normal(n)
    dots = []
    for t in (1, 2):
        with threadpool_limits(limits=t, user_api="blas"):
            dots.append(float(np.dot(a, b)))
    if dots[0] == dots[1]:
        pytest.skip(f"BLAS gives the same bits on 1 and 2 threads at length {n}")


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


def test_newton_route_same_bits_for_1_and_2_blas_threads():
    X, y = wide_problem(n=1000, seed=5)
    blas_splits(X.shape[1] + 1)
    cvec = np.full(X.shape[0], 10.0)

    def fit():
        return primal_newton(X, y, cvec, loss="logistic", bias=100.0, tol=1e-10,
                             max_iter=8)["w"]

    one, two = on_blas_threads(fit)
    np.testing.assert_array_equal(one, two)


def test_ring_fit_same_bits_for_1_and_2_blas_threads():
    """The ring's checks sum |w|^2 over d + 1 weights: the round a fit stops at, and so
    its weights, would follow BLAS's split."""
    import pybudget.dask as pbd
    X, y = wide_problem(n=1500)
    blas_splits(X.shape[1] + 1)

    def fit():
        m = pbd.LinearSVC(C=1.0, tol=1e-3, method="ring", n_partitions=4,
                          engine="threads", random_state=0).fit(X, y)
        return np.r_[m.coef_.ravel(), m.intercept_, m.duality_gap_]

    one, two = on_blas_threads(fit)
    np.testing.assert_array_equal(one, two)
