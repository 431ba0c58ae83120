"""tol_rule="liblinear" of LinearSVR and solve_linear: liblinear's -s 11/12/13 stopping
rule (the sweep's L1 norm of the violations relative to the first sweep's), next to the
default "max" rule."""
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.datasets import make_regression

from pybudget import LinearSVC, LinearSVR, solve_linear
from pybudget.linear._dual_cd import SELECTIONS, TOL_RULES, DcdOptions, DcdState, dcd_solve

LOSSES = ["epsilon_insensitive", "squared_epsilon_insensitive"]
STRATEGIES = ["uniform", "shrinking", "avsf"]


def _data(n=2000, d=300, seed=7):
    X, y = make_regression(n, d, n_informative=10, noise=3.0, random_state=seed)
    rng = np.random.default_rng(seed)
    return sp.csr_matrix(X * (rng.random(X.shape) < 0.4)), y / 10.0


@pytest.mark.parametrize("selection", STRATEGIES)
def test_liblinear_rule_stops_earlier_than_max_at_the_same_tol(selection):
    X, y = _data()
    fits = {rule: solve_linear(X, y, 1.0, loss="epsilon_insensitive", epsilon=0.05,
                               selection=selection, tol=0.01, tol_rule=rule,
                               fit_intercept=True, max_iter=100000, random_state=0)
            for rule in ("max", "liblinear")}
    assert fits["max"].converged and fits["liblinear"].converged
    assert fits["liblinear"].n_iter < fits["max"].n_iter
    # an earlier stop: a somewhat worse, still reasonable solution
    assert fits["liblinear"].dual_objective <= fits["max"].dual_objective
    lib = fits["liblinear"]
    assert lib.primal_objective - lib.dual_objective <= 0.02 * lib.primal_objective


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("selection", STRATEGIES)
def test_liblinear_rule_gives_a_valid_solution(loss, selection):
    X, y = _data(n=300, d=40, seed=2)
    tight = solve_linear(X, y, 0.5, loss=loss, epsilon=0.05, selection=selection,
                         tol=1e-8, fit_intercept=True, max_iter=200000, random_state=1)
    res = solve_linear(X, y, 0.5, loss=loss, epsilon=0.05, selection=selection, tol=1e-5,
                       tol_rule="liblinear", fit_intercept=True, max_iter=200000,
                       random_state=1)
    assert res.converged
    assert res.primal_objective >= res.dual_objective
    assert res.primal_objective - res.dual_objective <= 1e-4 * res.primal_objective
    assert res.dual_objective == pytest.approx(tight.dual_objective, rel=1e-4)
    # kkt_violation stays the exact largest violation, in the units of the targets
    assert 0.0 < res.kkt_violation <= 1e-2 * (np.abs(y).max() - 0.05)


def _raw(X, y, C, selection, tol, max_iter, tol_rule):
    """dcd_solve on an SVR problem without bias, from zero (returns its outcome)."""
    n, d = X.shape
    state = DcdState(np.zeros(n), np.zeros(d + 1), np.ones(n), np.arange(n, dtype=np.int32),
                     n)
    return dcd_solve(X, y, np.full(n, C), np.zeros(n), np.full(n, C), 0.0, state,
                     DcdOptions(selection=SELECTIONS[selection], tol=tol, max_iter=max_iter,
                                seed=11, problem="svr", epsilon=0.05,
                                tol_rule=TOL_RULES[tol_rule]))


@pytest.mark.parametrize("selection", STRATEGIES)
def test_the_rule_fires_at_the_first_sweep_that_meets_it(selection):
    X, y = _data(n=500, d=60, seed=3)
    out = _raw(X, y, 1.0, selection, 0.01, 100000, "liblinear")
    assert out.converged and out.n_iter > 2
    assert 0.0 < out.l1 <= 0.01 * out.l1_init
    # the same run (same seed) cut one sweep short has not met it
    short = _raw(X, y, 1.0, selection, 0.01, out.n_iter - 1, "liblinear")
    assert not short.converged
    assert short.l1 > 0.01 * short.l1_init or selection != "uniform"
    assert short.l1_init == out.l1_init


def test_max_rule_is_the_default_and_unchanged():
    X, y = _data(n=300, d=40, seed=4)
    a = LinearSVR(C=1.0, epsilon=0.05, random_state=0).fit(X, y)
    b = LinearSVR(C=1.0, epsilon=0.05, tol_rule="max", random_state=0).fit(X, y)
    assert LinearSVR().get_params()["tol_rule"] == "max"
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert a.n_iter_ == b.n_iter_


def test_estimator_with_the_liblinear_rule():
    X, y = _data(n=300, d=40, seed=5)
    est = LinearSVR(C=1.0, epsilon=0.05, tol=1e-3, tol_rule="liblinear",
                    selection="shrinking", random_state=0, warm_start=True)
    est.fit(X, y)
    assert est.converged_ and clone(est).get_params()["tol_rule"] == "liblinear"
    ref = solve_linear(X, y, 1.0, loss="epsilon_insensitive", epsilon=0.05, tol=1e-3,
                       tol_rule="liblinear", selection="shrinking", fit_intercept=True,
                       random_state=0)
    np.testing.assert_array_equal(est.coef_, ref.coef)
    est.set_params(C=2.0).fit(X, y)     # a warm start: its own first sweep is the unit
    assert est.converged_


@pytest.mark.parametrize("value,error", [("L1", ValueError), ("Max", ValueError),
                                         (None, ValueError), (1, ValueError)])
def test_bad_tol_rule_is_refused(value, error):
    X, y = _data(n=20, d=5)
    with pytest.raises(error, match="tol_rule"):
        LinearSVR(tol_rule=value).fit(X, y)
    with pytest.raises(error, match="tol_rule"):
        solve_linear(X, y, loss="epsilon_insensitive", tol_rule=value)


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge", "logistic"])
def test_liblinear_rule_is_refused_for_classification(loss):
    X, y = _data(n=40, d=5)
    with pytest.raises(ValueError, match="regression loss"):
        solve_linear(X, y > 0, loss=loss, tol_rule="liblinear")
    assert "tol_rule" not in LinearSVC().get_params()
    n = X.shape[0]
    with pytest.raises(ValueError, match="tol_rule"):
        dcd_solve(X, np.where(y > 0, 1.0, -1.0), np.ones(n), np.zeros(n), np.ones(n), 0.0,
                  DcdState(np.zeros(n), np.zeros(X.shape[1] + 1), np.ones(n),
                           np.arange(n, dtype=np.int32), n),
                  DcdOptions(selection=0, tol=0.1, max_iter=10, seed=0, problem="svm",
                             tol_rule=TOL_RULES["liblinear"]))
