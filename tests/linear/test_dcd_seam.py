"""The dual CD seam: a second problem (support vector regression, _dcd_svr.pxd) runs
under every selection strategy without any strategy code of its own.  Each run is
checked against independent solutions: a zero duality gap, the strategies' agreement,
a numpy minimisation of the one-variable subproblem, and scipy's L-BFGS on the smooth
primal of the squared loss."""
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize

from pybudget.linear._dual_cd import SELECTIONS, DcdOptions, DcdState, dcd_solve


def _data(n=60, d=100, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * (rng.random((n, d)) < 0.6)
    X[3] = 0.0                                   # an all-zero row
    y = X @ rng.normal(size=d) + 0.3 * rng.normal(size=n)
    return sp.csr_matrix(X), y


def _svr(X, y, C, eps, squared, selection, tol=1e-10, seed=0, max_iter=100000):
    n, d = X.shape
    cvec = np.full(n, C)
    upper = np.full(n, np.inf) if squared else cvec.copy()
    diag = 0.5 / cvec if squared else np.zeros(n)
    beta, w = np.zeros(n), np.zeros(d + 1)
    out = dcd_solve(X, y, upper, diag, cvec, 0.0,
                    DcdState(beta, w, np.ones(n), np.arange(n, dtype=np.int32), n),
                    DcdOptions(selection=SELECTIONS[selection], tol=tol, max_iter=max_iter,
                               seed=seed, squared=squared, problem="svr", epsilon=eps))
    return beta, w[:d], out, diag


def _objectives(X, y, C, eps, squared, beta, w, diag):
    r = np.abs(X @ w - y) - eps
    loss = np.where(r > 0, r, 0.0)
    primal = 0.5 * w @ w + C * np.sum(loss ** 2 if squared else loss)
    dual = -(0.5 * w @ w - y @ beta + eps * np.abs(beta).sum()
             + 0.5 * np.sum(diag * beta ** 2))
    return primal, dual


@pytest.mark.parametrize("squared", [False, True])
@pytest.mark.parametrize("C", [0.05, 1.0, 20.0])
def test_every_strategy_closes_the_duality_gap(squared, C):
    X, y = _data()
    eps = 0.2
    duals = {}
    for sel in SELECTIONS:
        beta, w, out, diag = _svr(X, y, C, eps, squared, sel)
        assert out.converged and out.kkt_violation <= 1e-10
        np.testing.assert_allclose(w, X.T @ beta, atol=1e-10)   # w is the model of beta
        assert np.all(np.abs(beta) <= C + 1e-12) or squared
        primal, dual = _objectives(X, y, C, eps, squared, beta, w, diag)
        assert abs(primal - dual) <= 1e-7 * max(1.0, abs(primal))
        r = np.abs(X @ w - y) - eps
        np.testing.assert_allclose(out.loss_sum, C * np.sum(
            np.where(r > 0, r ** 2 if squared else r, 0.0)), rtol=1e-9)
        duals[sel] = dual
    assert max(duals.values()) - min(duals.values()) <= 1e-8 * max(1.0, abs(dual))


def test_squared_loss_matches_lbfgs_on_the_primal():
    X, y = _data(seed=1)
    C, eps = 2.0, 0.1
    _, w, _, _ = _svr(X, y, C, eps, True, "avsf")
    A = X.toarray()

    def f(v):
        r = np.abs(A @ v - y) - eps
        r = np.where(r > 0, r, 0.0)
        grad = v + 2 * C * A.T @ (r * np.sign(A @ v - y))
        return 0.5 * v @ v + C * np.sum(r ** 2), grad

    ref = minimize(f, np.zeros(X.shape[1]), jac=True, method="L-BFGS-B",
                   options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 10000}).x
    np.testing.assert_allclose(w, ref, atol=1e-6)


@pytest.mark.parametrize("squared", [False, True])
def test_one_step_solves_the_one_variable_subproblem(squared):
    """One uniform sweep over a single row from a nonzero start: the move equals the
    minimiser of the one-variable objective found by a fine numpy grid."""
    rng = np.random.default_rng(4)
    x = rng.normal(size=5)
    X = sp.csr_matrix(x[None, :])
    C, eps = 0.7, 0.15
    for y0 in (-2.0, -0.05, 0.0, 0.1, 3.0):
        y = np.array([y0])
        upper = np.array([np.inf if squared else C])
        diag = np.array([0.5 / C if squared else 0.0])
        b0 = 0.3
        beta, w = np.array([b0]), np.r_[b0 * x, 0.0]
        dcd_solve(X, y, upper, diag, np.array([C]), 0.0,
                  DcdState(beta, w, np.ones(1), np.zeros(1, dtype=np.int32), 1),
                  DcdOptions(selection=SELECTIONS["uniform"], tol=0.0, max_iter=1, seed=0,
                             squared=squared, problem="svr", epsilon=eps))
        lo, hi = (-upper[0], upper[0]) if not squared else (-50.0, 50.0)
        grid = np.linspace(lo, hi, 400001)
        obj = 0.5 * (x @ x + diag[0]) * grid ** 2 - y0 * grid + eps * np.abs(grid)
        assert abs(beta[0] - grid[np.argmin(obj)]) <= 2 * (hi - lo) / 400000


def test_gain_drives_avsf_preferences():
    """AVSF on the regression problem adapts its preferences (they spread) and still
    agrees with hard shrinking's solution."""
    X, y = _data(n=300, d=600, seed=2)
    n = X.shape[0]
    cvec = np.full(n, 10.0)
    prefs = np.ones(n)
    beta, w = np.zeros(n), np.zeros(X.shape[1] + 1)
    dcd_solve(X, y, cvec, np.zeros(n), cvec, 0.0,
              DcdState(beta, w, prefs, np.arange(n, dtype=np.int32), n),
              DcdOptions(selection=SELECTIONS["avsf"], tol=1e-3, max_iter=100000, seed=1,
                         problem="svr", epsilon=0.1))
    assert prefs.max() > 3 * prefs.min()
    b2, _, _, _ = _svr(X, y, 10.0, 0.1, False, "shrinking", tol=1e-3)
    np.testing.assert_allclose(beta, b2, atol=0.05 * np.abs(b2).max())


def test_unknown_problem_is_refused():
    X, y = _data(n=5)
    with pytest.raises(ValueError, match="problem must be one of"):
        dcd_solve(X, y, np.ones(5), np.zeros(5), np.ones(5), 0.0,
                  DcdState(np.zeros(5), np.zeros(9), np.ones(5),
                           np.arange(5, dtype=np.int32), 5),
                  DcdOptions(selection=0, tol=0.1, max_iter=10, seed=0, problem="logistic"))
