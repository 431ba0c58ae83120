"""One problem's primal Newton route on several threads (n_jobs): row blocks, each
block's sums on its own thread, added in block order.  The same bits run to run for a
fixed n_jobs, the same optimum within the tolerance for another, one thread on small
data, and any thread count works (the blocks do not need a core each)."""
import numpy as np
import pytest
import scipy.sparse as sp

import pybudget
from pybudget._core import _validation as V
from pybudget.linear import primal
from pybudget.linear.plan import Plan, Rows
from pybudget.linear.problem import solve_binary


def tall(n=6000, d=12, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.6, format="csr", random_state=seed)
    X.data = rng.normal(size=X.data.shape)
    y = np.where(X @ rng.normal(size=d) + rng.logistic(size=n) > 0, 3, 8)
    return X, y


def on_blocks(X, y, threads, loss, C=3.0, tol=1e-6):
    """The binary problem (bias 1) on the Newton route with ``threads`` blocks of rows,
    whatever its size: a plan handed to the solver (the production rule,
    ``primal.newton_threads``, keeps such small data on one thread)."""
    rows = Rows.check(X, 1.0)
    target = V.binary_labels(y, X.shape[0])[1]
    return solve_binary(rows, target, np.full(X.shape[0], C), C, Plan("newton", threads),
                        loss=loss, tol=tol, max_iter=1000, seed=0)


def objective(res, X, y, C, loss):
    w, b = res.coef, res.intercept
    s = np.where(y == 8, 1.0, -1.0) * (X @ w + b)
    lo = np.logaddexp(0.0, -s) if loss == "logistic" else np.maximum(0.0, 1.0 - s) ** 2
    return 0.5 * (w @ w + b * b) + C * lo.sum()


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge"])
def test_threads_give_their_own_bits_at_the_same_optimum(loss):
    X, y = tall()
    one = on_blocks(X, y, 1, loss)
    assert one.selection == "newton" and one.threads == 1
    f1 = objective(one, X, y, 3.0, loss)
    for jobs in (2, 4, 8):
        a, b = on_blocks(X, y, jobs, loss), on_blocks(X, y, jobs, loss)
        assert a.threads == jobs
        np.testing.assert_array_equal(a.coef, b.coef)        # run to run
        assert a.intercept == b.intercept
        assert not np.array_equal(a.coef, one.coef)          # (it did run on blocks)
        assert abs(objective(a, X, y, 3.0, loss) - f1) <= 1e-6 * f1


def test_the_rule_and_small_data_on_one_thread():
    X, y = tall()
    target = np.where(y == 8, 1.0, -1.0)
    kw = dict(loss="logistic", C=1.0, tol=1e-6)          # ("auto": Newton here)
    ref = pybudget.solve_linear(X, target, n_jobs=1, **kw)
    assert ref.selection == "newton"
    same = pybudget.solve_linear(X, target, n_jobs=4, **kw)      # (< NEWTON_MIN_NNZ)
    assert same.threads == 1
    np.testing.assert_array_equal(same.coef, ref.coef)
    # the rule: up to the cores from NEWTON_MIN_NNZ non-zeros on
    assert primal.newton_threads(X, 4, cpus=8) == 1
    big = sp.random(primal.NEWTON_MIN_NNZ // 10, 20, density=0.5, format="csr",
                    random_state=0)
    assert big.nnz >= primal.NEWTON_MIN_NNZ
    assert primal.newton_threads(big, 4, cpus=8) == 4
    assert primal.newton_threads(big, 4, cpus=2) == 2
    assert primal.newton_threads(big, 4, cpus=1) == 1
    assert primal.newton_threads(big, 1, cpus=8) == 1


def test_blocks_cover_every_row_once_with_empty_rows_and_more_blocks_than_rows():
    X, y = tall(n=40)
    X = sp.vstack([X, sp.csr_matrix((5, X.shape[1]))], format="csr")   # empty rows last
    t = np.where(np.append(y, [3] * 5) == 8, 1.0, -1.0)
    c = np.ones(X.shape[0])
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(2) as pool:
        for blocks in (2, 7, 64):
            P = primal._RowBlocks(X, t, c, "logistic", 1.0, 0.0, blocks, pool)
            assert sum(b.X.shape[0] for b in P.blocks) == X.shape[0]
            assert sum(b.X.nnz for b in P.blocks) == X.nnz
            one = primal._Primal(X, t, c, "logistic", 1.0, 0.0)
            v = np.random.default_rng(blocks).normal(size=X.shape[1] + 1)
            f, g, d1, h = P.at(v)
            f1, g1, d11, h1 = one.at(v)
            assert f == pytest.approx(f1, rel=1e-13)
            np.testing.assert_allclose(g, g1, rtol=1e-12, atol=1e-12)
            np.testing.assert_array_equal(d1, d11)
            np.testing.assert_allclose(P.hessp(h, v), one.hessp(h1, v), rtol=1e-12)
            np.testing.assert_allclose(P.hdiag(h), one.hdiag(h1), rtol=1e-12)


def test_blas_threads_neither_change_the_bits_nor_are_changed():
    """The Newton route's sums are fixed-order (no BLAS): the same bits with 1 and 2
    BLAS threads on weights long enough for BLAS to split (d > 40,000; the large
    intercept_scaling sends the problem to Newton), and a fit leaves the process's BLAS
    threads as they were (a BLAS limit per run, taken by overlapping one-vs-rest runs,
    had left them at 1)."""
    from threadpoolctl import threadpool_info, threadpool_limits

    def blas():
        return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

    rng = np.random.default_rng(0)
    X = sp.random(300, 45000, density=0.002, format="csr", random_state=0)
    y = np.where(X @ rng.normal(size=45000) + 0.1 * rng.normal(size=300) > 0, 1, 0)
    kw = dict(C=10.0, tol=1e-8, intercept_scaling=1e3)
    with threadpool_limits(limits=1, user_api="blas"):
        one = pybudget.LogisticRegression(**kw).fit(X, y)
    with threadpool_limits(limits=2, user_api="blas"):
        two = pybudget.LogisticRegression(**kw).fit(X, y)
    assert one.selection_ == "newton"
    np.testing.assert_array_equal(one.coef_, two.coef_)
    np.testing.assert_array_equal(one.intercept_, two.intercept_)
    before = blas()
    Xt, yt = tall(n=3000)
    pybudget.LogisticRegression(n_jobs=2).fit(Xt, np.where(np.arange(3000) % 3 == 0, 1, yt))
    assert blas() == before
