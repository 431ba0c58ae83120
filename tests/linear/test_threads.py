"""One problem on a team of threads (n_jobs on a binary problem, linear/_dcd_team.pxi):
the optimum against one thread's and numpy's KKT conditions, the same bits run to run,
team sizes beyond the cores, and the rule that decides when a team runs."""
import numpy as np
import pytest
import scipy.sparse as sp

import pybudget
from helpers import make_problem
from pybudget.datasets import load
from pybudget._core import _validation as V
from pybudget.linear import _team
from pybudget.linear.plan import Plan, Rows
from pybudget.linear.problem import solve_binary
from pybudget.linear._dcd64 import THREADS

needs_openmp = pytest.mark.skipif(not THREADS, reason="built without OpenMP: no teams")


def on_team(X, y, threads, *, C, loss, selection, tol, max_iter, epsilon=0.0, chunk=16):
    """solve_linear's problem (a bias of 1, seed 0) on a team of ``threads`` with small
    chunks, whatever its size: a plan handed to the solver (the production rule,
    ``_team.team_size``, sends such small data to one thread)."""
    rows = Rows.check(X, 1.0)
    if loss in ("epsilon_insensitive", "squared_epsilon_insensitive"):
        target = V.regression_targets(y, X.shape[0])
    else:
        target = V.binary_labels(y, X.shape[0])[1]
    return solve_binary(rows, target, np.full(X.shape[0], C), C,
                        Plan(selection, threads, chunk), loss=loss, tol=tol,
                        max_iter=max_iter, seed=V.seed_from(0), epsilon=epsilon)


def numpy_kkt(X, y, res, C, loss, bias):
    """Largest projected gradient of the SVM dual from alpha alone, and w = X'(alpha y)."""
    Xb = np.hstack([X.toarray(), np.full((X.shape[0], 1), bias)])
    w = Xb.T @ (res.alpha * y)
    D = 0.0 if loss == "hinge" else 0.5 / C
    U = C if loss == "hinge" else np.inf
    G = y * (Xb @ w) - 1 + D * res.alpha
    pg = np.where(res.alpha <= 0, np.minimum(G, 0),
                  np.where(res.alpha >= U, np.maximum(G, 0), G))
    return np.abs(pg).max(), w


@needs_openmp
@pytest.mark.parametrize("threads", [2, 3, 4, 8])
@pytest.mark.parametrize("selection", ["uniform", "shrinking", "avsf"])
@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
def test_team_reaches_the_one_thread_optimum(threads, selection, loss):
    # 4 and 8 threads on a 2-core machine too: the design has no limit at the cores
    X, y = make_problem(n=400, d=30, density=0.2, seed=3)
    one = pybudget.solve_linear(X, y, C=2.0, loss=loss, selection=selection, tol=1e-9,
                                max_iter=100000, fit_intercept=True, random_state=0)
    res = on_team(X, y, threads, C=2.0, loss=loss, selection=selection, tol=1e-9,
                  max_iter=100000)
    assert res.threads == threads and res.converged
    viol, w = numpy_kkt(X, y, res, 2.0, loss, 1.0)
    assert viol <= 1e-8
    # the team's w is the model of its alpha (the combines keep them together)
    np.testing.assert_allclose(res.coef, w[:-1], rtol=0, atol=1e-9)
    assert res.intercept == pytest.approx(w[-1], abs=1e-9)
    assert res.dual_objective == pytest.approx(one.dual_objective, rel=1e-9)
    assert res.primal_objective == pytest.approx(one.primal_objective, rel=1e-7)


@needs_openmp
@pytest.mark.parametrize("loss", ["epsilon_insensitive", "squared_epsilon_insensitive"])
@pytest.mark.parametrize("selection", ["uniform", "shrinking", "avsf"])
def test_team_svr_reaches_the_one_thread_optimum(loss, selection):
    rng = np.random.default_rng(7)
    X = sp.random(300, 25, density=0.3, format="csr", random_state=rng)
    y = X @ rng.standard_normal(25) + 0.1 * rng.standard_normal(300)
    # (the plain loss has no curvature of its own: this small dense problem takes one
    # thread over 20,000 sweeps to 1e-6, so it is compared at a looser tolerance)
    tol = 1e-3 if loss == "epsilon_insensitive" else 1e-8
    kw = dict(C=1.0, loss=loss, selection=selection, tol=tol, max_iter=100000,
              fit_intercept=True, epsilon=0.05, random_state=0)
    one = pybudget.solve_linear(X, y, **kw)
    res = on_team(X, y, 3, C=1.0, loss=loss, selection=selection, tol=tol, max_iter=100000,
                  epsilon=0.05)
    assert res.threads == 3 and res.converged and one.converged
    gap = max(one.primal_objective - one.dual_objective,
              res.primal_objective - res.dual_objective)
    # (plus round-off: at 1e-8 both gaps are near the objectives' last bits)
    assert abs(res.dual_objective - one.dual_objective) <= gap + 1e-12 * one.dual_objective
    if loss == "squared_epsilon_insensitive":
        np.testing.assert_allclose(res.coef, one.coef, atol=1e-5)


@needs_openmp
def test_same_bits_run_to_run_and_the_rule_picks_a_team_on_a9a():
    X, y, _, _ = load("a9a")
    if _team.cpu_count() < 2:
        pytest.skip("one CPU: the rule keeps every problem on one thread")
    fits = [pybudget.LinearSVC(n_jobs=2, random_state=3).fit(X, y) for _ in range(2)]
    one = pybudget.LinearSVC(n_jobs=1, random_state=3).fit(X, y)
    res = pybudget.solve_linear(X, y, C=1.0, fit_intercept=True, n_jobs=2, random_state=3)
    assert res.threads == 2
    # the estimator ran a team too: a team's replicas give other bits than one thread
    assert not np.array_equal(fits[0].coef_, one.coef_)
    np.testing.assert_array_equal(fits[0].coef_, fits[1].coef_)
    assert fits[0].intercept_[0] == fits[1].intercept_[0]
    assert fits[0].n_iter_ == fits[1].n_iter_
    # the same optimum as one thread within the tolerance's duality gap
    ref = pybudget.solve_linear(X, y, C=1.0, fit_intercept=True, random_state=3)
    gap = max(ref.primal_objective - ref.dual_objective,
              res.primal_objective - res.dual_objective)
    assert abs(res.primal_objective - ref.primal_objective) <= gap
    assert fits[0].score(X, y) == pytest.approx(one.score(X, y), abs=2e-3)


def test_the_rule_keeps_small_data_text_and_logistic_on_one_thread():
    X, y, _, _ = load("a9a")
    small = X[:2000]
    assert _team.team_size(small, 8, "svm", "shrinking") == (1, 0)
    assert _team.team_size(X, 8, "lr", "shrinking") == (1, 0)          # no logistic teams
    assert _team.team_size(X, 8, "svm", "pairs") == (1, 0)
    assert _team.team_size(X, 1, "svm", "shrinking") == (1, 0)
    # wide sparse text: a combine's pass over d + 1 weights outweighs a chunk
    rng = np.random.default_rng(0)
    cols = rng.integers(0, 300000, size=20000 * 12).astype(np.int32)
    wide = sp.csr_matrix((np.ones(cols.size), cols, np.arange(0, cols.size + 1, 12)),
                         shape=(20000, 300000))
    assert _team.team_size(wide, 8, "svm", "shrinking") == (1, 0)
    threads, chunk = _team.team_size(X, 8, "svm", "avsf")
    assert chunk == _team.MIN_CHUNK
    assert threads == (min(8, _team.cpu_count()) if THREADS and _team.cpu_count() > 1 else 1)
    # up to the cores, and within a sweep's chunks (a9a: 32,561 rows, 4 chunks a thread)
    assert _team.team_size(X, 8, "svm", "avsf", cpus=3) == (3, _team.MIN_CHUNK)
    assert _team.team_size(X, 8, "svm", "avsf", cpus=64) == (7, _team.MIN_CHUNK)
    assert _team.team_size(X, 8, "svm", "avsf", cpus=1) == (1, 0)


def test_logistic_and_one_vs_rest_accept_any_n_jobs():
    X, y = make_problem(n=200, d=10, seed=1)
    a = pybudget.LogisticRegression(n_jobs=4, random_state=0).fit(X, y)
    b = pybudget.LogisticRegression(n_jobs=1, random_state=0).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)       # one thread either way
    y3 = np.arange(200) % 3
    c = pybudget.LinearSVC(n_jobs=8, random_state=0).fit(X, y3)
    d = pybudget.LinearSVC(n_jobs=1, random_state=0).fit(X, y3)
    np.testing.assert_array_equal(c.coef_, d.coef_)       # small data: no team
    r = pybudget.LinearSVR(n_jobs=-1, random_state=0).fit(X, y3.astype(float))
    assert r.get_params()["n_jobs"] == -1 and np.isfinite(r.coef_).all()
    with pytest.raises(ValueError, match="n_jobs"):
        pybudget.LinearSVR(n_jobs=0).fit(X, y3.astype(float))
    with pytest.raises(ValueError, match="n_jobs"):
        pybudget.solve_linear(X, y, n_jobs=0)
