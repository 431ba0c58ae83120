"""Warm-started C paths, the "auto" strategy and cross-validated grids."""
import warnings

import joblib
import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from helpers import make_problem
from pybudget import LinearSVC, cv_grid, linear_path, solve_linear
from pybudget.linear.plan import Rows, resolve_selection
from pybudget._core._validation import as_csr

CS = [0.01, 0.1, 1.0, 10.0, 100.0]


@pytest.mark.parametrize("selection", ["shrinking", "avsf"])
@pytest.mark.parametrize("carry", ["none", "alpha", "all", "extrapolate"])
def test_path_matches_cold_solutions(selection, carry):
    X, y = make_problem(n=120, d=30, seed=3)
    path = linear_path(X, y, CS[::-1], selection=selection, tol=1e-6, max_iter=100000,
                       random_state=0, carry=carry)
    assert [r.C for r in path] == CS  # solved in increasing order
    for r in path:
        cold = solve_linear(X, y, r.C, selection=selection, tol=1e-6, max_iter=100000,
                            random_state=0)
        assert r.converged and r.kkt_violation <= 1e-6
        assert r.dual_objective == pytest.approx(cold.dual_objective, rel=1e-6)


def test_extrapolated_start_is_exact_on_a_linear_stretch_of_the_path():
    # with the free/bound partition unchanged between C1 < C2 < C3, alpha(C) is linear
    # in C, so the extrapolated start is already the solution at C3 (up to the tolerance)
    X, y = make_problem(n=120, d=30, seed=3)
    kw = dict(selection="shrinking", tol=1e-8, max_iter=100000, random_state=0)
    Cs = [1.0, 1.001, 1.002]
    path = linear_path(X, y, Cs, carry="extrapolate", **kw)
    rescaled = linear_path(X, y, Cs, carry="alpha", **kw)
    a1, a2, a3 = (r.state.alpha for r in path)
    assert np.array_equal(a1 > 0, a3 > 0) and np.array_equal(a1 >= 1.0 - 1e-12, a3 >= 1.002 - 1e-12)
    np.testing.assert_allclose(a2 + (a2 - a1), a3, atol=1e-6)   # the premise
    # so the extrapolated start is (nearly) optimal: a few sweeps confirm it
    assert path[2].n_steps <= 4 * X.shape[0] < rescaled[2].n_steps


def test_estimator_warm_start_extrapolates_after_two_fits():
    X, y = make_problem(n=120, d=30, seed=3)
    kw = dict(selection="shrinking", tol=1e-8, max_iter=100000, random_state=0,
              fit_intercept=False, warm_start=True)
    three = LinearSVC(C=1.0, **kw).fit(X, y)
    three.set_params(C=1.001).fit(X, y)
    three.set_params(C=1.002).fit(X, y)
    two = LinearSVC(C=1.001, **kw).fit(X, y)
    two.set_params(C=1.002).fit(X, y)            # rescaled start
    cold = solve_linear(X, y, 1.002, selection="shrinking", tol=1e-8, max_iter=100000)
    assert three.dual_objective_[0] == pytest.approx(cold.dual_objective, rel=1e-9)
    assert three.n_steps_ < two.n_steps_
    # a smaller C after a larger one falls back to rescaling (no extrapolation backwards)
    three.set_params(C=0.5).fit(X, y)
    assert three.dual_objective_[0] == pytest.approx(
        solve_linear(X, y, 0.5, selection="shrinking", tol=1e-8, max_iter=100000).dual_objective,
        rel=1e-9)


def test_warm_start_changes_the_start_not_the_answer():
    X, y = make_problem(n=150, d=40, seed=4)
    est = LinearSVC(C=1.0, tol=1e-6, max_iter=100000, warm_start=True, random_state=0,
                    fit_intercept=False).fit(X, y)
    first_steps = LinearSVC(C=1.1, tol=1e-6, max_iter=100000, random_state=0,
                            fit_intercept=False).fit(X, y).n_steps_
    est.set_params(C=1.1).fit(X, y)
    cold = solve_linear(X, y, 1.1, tol=1e-6, max_iter=100000, random_state=0)
    assert est.dual_objective_[0] == pytest.approx(cold.dual_objective, rel=1e-7)
    assert est.n_steps_ < first_steps  # a nearby C from a warm start needs fewer steps
    # different data: the stored state is not used
    X2, y2 = make_problem(n=151, d=40, seed=5)
    est.fit(X2, y2)
    assert est.dual_objective_[0] == pytest.approx(
        solve_linear(X2, y2, 1.1, tol=1e-6, max_iter=100000).dual_objective, rel=1e-7)


def test_warm_start_to_a_huge_C_never_returns_overflowed_weights():
    """Rescaling the previous solution to C = 1e308 overflows w; the solver then starts
    cold (as a cold fit at that C does) instead of reporting inf/NaN weights converged."""
    X, y = make_problem(n=60, d=8, seed=6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = LinearSVC(C=1.0, warm_start=True, random_state=0).fit(X, y)
        est.set_params(C=1e308).fit(X, y)
        cold = LinearSVC(C=1e308, random_state=0).fit(X, y)
        path = linear_path(X, y, [1.0, 1e308], random_state=0)
    assert np.isfinite(est.coef_).all() and np.isfinite(path[1].coef).all()
    np.testing.assert_array_equal(est.coef_, cold.coef_)
    assert est.converged_[0] == cold.converged_[0]


def test_warm_start_multiclass():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((90, 5))
    y = np.argmax(X[:, :3], axis=1)
    est = LinearSVC(warm_start=True, tol=1e-6, max_iter=100000, random_state=0)
    for C in (0.1, 1.0, 10.0):
        est.set_params(C=C).fit(X, y)
        cold = LinearSVC(C=C, tol=1e-6, max_iter=100000, random_state=0).fit(X, y)
        np.testing.assert_allclose(est.dual_objective_, cold.dual_objective_, rtol=1e-6)


def test_path_validation():
    X, y = make_problem(n=40, d=5, seed=6)
    with pytest.raises(ValueError, match="Cs must be"):
        linear_path(X, y, [])
    with pytest.raises(ValueError, match="C must be"):
        linear_path(X, y, [1.0, -2.0])
    with pytest.raises(ValueError, match="carry"):
        linear_path(X, y, [1.0], carry="some")
    with pytest.raises(TypeError, match="as Cs"):
        cv_grid(X, y, [1.0, 2.0], cv=2, C=5)


def test_auto_rule():
    # high-dimensional text-like data: shrinking at small C, AVSF at large C
    Xh, _ = make_problem(n=50, d=400, density=0.05, seed=7)
    Xh = as_csr(Xh)
    norms = np.asarray(Xh.multiply(Xh).sum(1)).ravel()
    Cbig = 10.0 / np.median(norms)
    assert resolve_selection("auto", Rows.canonical(Xh, 0.0), np.full(50, Cbig)) == "avsf"
    small = np.full(50, 0.01 / np.median(norms))
    assert resolve_selection("auto", Rows.canonical(Xh, 0.0), small) == "shrinking"
    # low-dimensional data: shrinking at every C
    Xl = as_csr(make_problem(n=400, d=10, seed=8)[0])
    assert resolve_selection("auto", Rows.canonical(Xl, 0.0), np.full(400, 1e6)) == "shrinking"
    assert resolve_selection("shrinking", Rows.canonical(Xh, 0.0), np.full(50, Cbig)) == "shrinking"
    X, y = make_problem(n=60, d=200, density=0.1, seed=9)
    res = solve_linear(X, y, 1000.0, selection="auto", tol=0.01, max_iter=100000)
    assert res.selection == "avsf" and res.converged


def test_cv_grid_local_and_parallel():
    X, y = make_problem(n=200, d=30, seed=10)
    kw = dict(tol=1e-3, max_iter=100000, selection="auto")
    r1 = cv_grid(X, y, CS, cv=4, n_jobs=1, **kw)
    r2 = cv_grid(X, y, CS, cv=4, n_jobs=2, **kw)
    assert r1.Cs == CS and r1.fold_accuracy.shape == (4, len(CS))
    np.testing.assert_allclose(r1.fold_accuracy, r2.fold_accuracy)
    assert r1.best_C in CS and r1.mean_accuracy.max() > 0.7
    # the fold accuracies are those of independent fits on the same folds
    from sklearn.model_selection import StratifiedKFold
    tr, te = next(StratifiedKFold(4, shuffle=True, random_state=0).split(X, y))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = LinearSVC(C=CS[2], random_state=0, **kw).fit(X[tr], y[tr])
    assert r1.fold_accuracy[0, 2] == pytest.approx(est.score(X[te], y[te]), abs=0.02)
    with pytest.raises(ValueError, match="cv"):
        cv_grid(X, y, CS, cv=1)


@pytest.mark.cluster
def test_cv_grid_on_a_local_dask_cluster():
    distributed = pytest.importorskip("dask.distributed")
    X, y = make_problem(n=120, d=20, seed=11)
    local = cv_grid(X, y, [0.1, 1.0, 10.0], cv=3, tol=1e-4, max_iter=100000)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        with joblib.parallel_config(backend="dask"):
            remote = cv_grid(X, y, [0.1, 1.0, 10.0], cv=3, tol=1e-4, max_iter=100000)
    np.testing.assert_allclose(remote.fold_accuracy, local.fold_accuracy)
    assert remote.best_C == local.best_C


def test_auto_rule_with_empty_rows():
    # Regression: empty rows (first, middle, last) broke the squared-norm statistic.
    import scipy.sparse as sp
    X = as_csr(sp.csr_matrix(np.array([[0, 0, 0], [1, 2, 0], [0, 0, 0], [3, 0, 1.0], [0, 0, 0]])))
    assert resolve_selection("auto", Rows.canonical(X, 0.0), np.full(5, 0.01)) == "shrinking"
    # median of C * ‖x‖² is 0 here (three empty rows), so still shrinking at large C
    assert resolve_selection("auto", Rows.canonical(X, 0.0), np.full(5, 1e6)) == "shrinking"
    assert resolve_selection("auto", Rows.canonical(X, 1.0), np.full(5, 1e6)) == "avsf"
    assert LinearSVC().fit([[1e-8], [0.0]], [-1, 1]).coef_.shape == (1, 1)


@pytest.mark.parametrize("loss", ["epsilon_insensitive", "squared_epsilon_insensitive",
                                  "logistic"])
def test_path_for_the_dual_family_matches_cold_solves(loss):
    from sklearn.datasets import make_regression
    if loss == "logistic":
        X, y = make_problem(n=80, d=30, seed=21)
    else:
        X, y = make_regression(80, 30, noise=1.0, random_state=21)
        y = y / 30.0
    Cs = [0.1, 1.0, 4.0]
    path = linear_path(X, y, Cs, loss=loss, epsilon=0.05, tol=1e-8, max_iter=100000,
                       random_state=0)
    for res, C in zip(path, Cs):
        cold = solve_linear(X, y, C, loss=loss, epsilon=0.05, tol=1e-8, max_iter=100000,
                            random_state=0)
        assert res.converged and res.C == C
        assert res.dual_objective == pytest.approx(cold.dual_objective, rel=1e-7)


def test_cv_grid_regression_and_logistic():
    from sklearn.datasets import make_regression
    X, y = make_regression(120, 10, noise=1.0, random_state=3)
    res = cv_grid(X, y / 30.0, [0.1, 10.0], cv=3, loss="squared_epsilon_insensitive")
    assert res.mean_accuracy.shape == (2,) and res.mean_accuracy[1] > 0.95   # R²
    Xc, yc = make_problem(n=90, d=10, seed=4)
    res = cv_grid(Xc, yc, [0.1, 1.0], cv=3, loss="logistic", tol=1e-4)
    assert np.all((0.5 < res.mean_accuracy) & (res.mean_accuracy <= 1.0))
