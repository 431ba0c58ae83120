"""Dual logistic regression (_dcd_lr.pxd, LogisticRegression, solve_linear's "logistic"
loss): the one-variable Newton step and its gain against numpy, every strategy against
the others and a zero duality gap, scikit-learn's liblinear, check_estimator."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize_scalar
from scipy.special import xlogy
from sklearn.datasets import load_iris, make_classification
from sklearn.exceptions import ConvergenceWarning

from pybudget import LogisticRegression, solve_linear
from pybudget.linear._dual_cd import SELECTIONS, DcdOptions, DcdState, dcd_solve


def _subproblem(z, a0, b, q, C):
    """g(z) = (z - a0) b + q/2 (z - a0)^2 + z log z + (C - z) log(C - z)."""
    return (z - a0) * b + 0.5 * q * (z - a0) ** 2 + xlogy(z, z) + xlogy(C - z, C - z)


def _one_step(x, a0, w, C, selection):
    """One sweep on a single row (y = +1): returns the new a, the new w and the solver's
    state after it.  w need not be the model of a0: it stands for the other rows' part."""
    X = sp.csr_matrix(np.atleast_2d(x))
    alpha, w = np.array([a0]), np.array(w, dtype=float)
    state = DcdState(alpha, w, np.ones(1), np.zeros(1, dtype=np.int32), 1,
                     comp=np.array([C - a0]))
    dcd_solve(X, np.ones(1), np.array([C]), np.zeros(1), np.array([C]), 0.0, state,
              DcdOptions(selection=SELECTIONS[selection], tol=1e-12, max_iter=1, seed=0,
                         problem="lr"))
    return alpha[0], w, state


# (row, a0, w, C): minimiser in the middle, near 0, near C (worked on the complement),
# a start near C, and an all-zero row (no curvature from the quadratic part).
STEP_CASES = [
    ([1.0, 2.0], 0.3, [0.2, -0.1, 0.0], 1.0),
    ([1.0, 2.0], 1e-8, [3.0, 4.0, 0.0], 1.0),
    ([0.5, -1.0], 1e-8, [-6.0, 5.0, 0.0], 2.0),
    ([0.5, -1.0], 2.0 - 1e-9, [1.0, -1.0, 0.0], 2.0),
    ([0.0, 0.0], 0.7, [1.0, 1.0, 0.0], 1.0),
]


@pytest.mark.parametrize("x,a0,w,C", STEP_CASES)
def test_step_minimises_the_subproblem(x, a0, w, C):
    x = np.array(x)
    b, q = float(np.dot(w[:2], x)), float(x @ x)
    a1, w1, _ = _one_step(x, a0, w, C, "uniform")
    assert 0.0 < a1 < C
    ref = minimize_scalar(_subproblem, bounds=(0.0, C), args=(a0, b, q, C), method="bounded",
                          options={"xatol": 1e-14})
    # the stationarity condition at a1 (the step's own inner tolerance is 1e-12)
    assert abs(b + q * (a1 - a0) + np.log(a1 / (C - a1))) <= 1e-10
    assert _subproblem(a1, a0, b, q, C) <= ref.fun + 1e-12
    np.testing.assert_allclose(a1, ref.x, atol=1e-6)
    np.testing.assert_allclose(w1[:2], np.array(w[:2]) + (a1 - a0) * x, atol=1e-14)


@pytest.mark.parametrize("x,a0,w,C", STEP_CASES)
def test_gain_is_the_exact_decrease_of_the_subproblem(x, a0, w, C):
    # AVSF's reference gain after its first sweep over a single row is that step's gain.
    x = np.array(x)
    b, q = float(np.dot(w[:2], x)), float(x @ x)
    a1, _, state = _one_step(x, a0, w, C, "avsf")
    expected = _subproblem(a0, a0, b, q, C) - _subproblem(a1, a0, b, q, C)
    assert expected > 0.0
    assert state.dref == pytest.approx(expected, rel=1e-9, abs=1e-15)


def _data(n=150, d=40, seed=0, sparse=True):
    X, y = make_classification(n, d, n_informative=min(8, d // 2), n_redundant=0,
                               flip_y=0.05, random_state=seed)
    if sparse:
        rng = np.random.default_rng(seed)
        X = sp.csr_matrix(X * (rng.random(X.shape) < 0.5))
    return X, y


def _objectives(X, y, C, w, b, alpha):
    """Primal 1/2|w|^2 + C sum log(1 + exp(-m)) and the dual with the opposite sign of its
    minimisation form, both of the bias-augmented problem (b = bias weight * scaling)."""
    m = np.where(y == 1, 1.0, -1.0) * (X @ w + b)
    ww = w @ w + b * b
    primal = 0.5 * ww + C * np.sum(np.logaddexp(0.0, -m))
    dual = -(0.5 * ww + np.sum(xlogy(alpha, alpha / C) + xlogy(C - alpha, (C - alpha) / C)))
    return primal, dual


@pytest.mark.parametrize("C", [0.01, 1.0, 50.0])
def test_strategies_agree_and_close_the_gap(C):
    X, y = _data()
    duals = {}
    for sel in ["uniform", "shrinking", "avsf", "auto"]:
        res = solve_linear(X, y, C, loss="logistic", selection=sel, tol=1e-8,
                           max_iter=200000, fit_intercept=True, random_state=3)
        assert res.converged and res.kkt_violation <= 1e-8
        assert np.all(res.alpha > 0) and np.all(res.alpha < C)
        primal, dual = _objectives(X, y, C, res.coef, res.intercept, res.alpha)
        assert res.primal_objective == pytest.approx(primal, rel=1e-10)
        assert res.dual_objective == pytest.approx(dual, rel=1e-8)
        assert 0.0 <= primal - dual + 1e-9 * primal
        assert primal - dual <= 1e-6 * max(1.0, primal)
        duals[sel] = res.dual_objective
    spread = max(duals.values()) - min(duals.values())
    assert spread <= 1e-6 * max(1.0, abs(res.dual_objective))


@pytest.mark.parametrize("C", [0.1, 3.0])
def test_agrees_with_scikit_learn_liblinear(C):
    from sklearn.linear_model import LogisticRegression as SkLogisticRegression
    X, y = _data(seed=1, sparse=False)
    ours = LogisticRegression(C=C, tol=1e-9, max_iter=100000, random_state=0).fit(X, y)
    theirs = SkLogisticRegression(solver="liblinear", dual=True, C=C, tol=1e-10,
                                  max_iter=100000).fit(X, y)
    assert ours.converged_.all()
    np.testing.assert_allclose(ours.coef_, theirs.coef_, atol=1e-6)
    np.testing.assert_allclose(ours.intercept_, theirs.intercept_, atol=1e-6)
    np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), atol=1e-7)
    np.testing.assert_array_equal(ours.predict(X), theirs.predict(X))


def test_multiclass_probabilities():
    X, y = load_iris(return_X_y=True)
    est = LogisticRegression(C=2.0, tol=1e-8, max_iter=100000, random_state=0).fit(X, y)
    assert est.coef_.shape == (3, 4) and est.intercept_.shape == (3,)
    P = est.predict_proba(X)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=1e-12)
    assert np.all(P > 0)
    np.testing.assert_array_equal(est.classes_[P.argmax(axis=1)], est.predict(X))
    np.testing.assert_allclose(est.predict_log_proba(X), np.log(P))
    # one-vs-rest sigmoids, normalised (scikit-learn's liblinear OvR)
    s = 1.0 / (1.0 + np.exp(-est.decision_function(X)))
    np.testing.assert_allclose(P, s / s.sum(axis=1, keepdims=True), rtol=1e-12)
    assert est.score(X, y) > 0.9


def test_binary_probabilities_are_the_sigmoid():
    X, y = _data(n=60, d=5, seed=2, sparse=False)
    est = LogisticRegression(random_state=0).fit(X, y)
    P = est.predict_proba(X)
    np.testing.assert_allclose(P[:, 1], 1.0 / (1.0 + np.exp(-est.decision_function(X))))
    np.testing.assert_allclose(P.sum(axis=1), 1.0)


def test_matches_solve_linear():
    X, y = _data(n=80, d=12, seed=3)
    est = LogisticRegression(C=0.7, tol=1e-7, random_state=0, fit_intercept=False).fit(X, y)
    res = solve_linear(X, y, 0.7, loss="logistic", tol=1e-7, random_state=0)
    np.testing.assert_allclose(est.coef_[0], res.coef, atol=1e-6)
    assert est.dual_objective_[0] == pytest.approx(res.dual_objective, rel=1e-9)


def test_class_weight_equals_sample_weight():
    X, y = _data(n=80, d=10, seed=4)
    a = LogisticRegression(class_weight={0: 2.0, 1: 0.5}, tol=1e-9, max_iter=100000).fit(X, y)
    b = LogisticRegression(tol=1e-9, max_iter=100000).fit(
        X, y, sample_weight=np.where(y == 0, 2.0, 0.5))
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-7)


def test_warm_start_starts_from_the_previous_solution():
    X, y = _data(seed=5)
    kw = dict(tol=1e-6, max_iter=100000, selection="shrinking", random_state=0)
    est = LogisticRegression(C=1.0, warm_start=True, **kw).fit(X, y)
    cold_sweeps = est.n_iter_
    assert est.fit(X, y).n_iter_ < cold_sweeps      # same C: starts at the optimum
    for C in (2.0, 8.0, 0.5):                        # rescaled, extrapolated, shrunk
        est.set_params(C=C).fit(X, y)
        cold = LogisticRegression(C=C, **kw).fit(X, y)
        assert est.converged_.all()
        assert est.dual_objective_ == pytest.approx(cold.dual_objective_, rel=1e-6)


def test_extreme_margins_stay_finite():
    # Separable data at a large C: most a_i end near 0, a few near C; the logs and the
    # dual objective must stay finite.
    X, y = _data(n=60, d=80, seed=6)
    res = solve_linear(X, y, 1e4, loss="logistic", tol=1e-6, max_iter=100000,
                       selection="shrinking", random_state=0)
    assert res.converged and np.isfinite(res.dual_objective)
    assert np.all(res.alpha > 0) and np.all(res.alpha < 1e4)
    assert res.primal_objective - res.dual_objective <= 1e-6 * res.primal_objective


def test_convergence_warning_at_the_cap():
    X, y = _data(seed=7)
    with pytest.warns(ConvergenceWarning, match="LogisticRegression"):
        LogisticRegression(C=100.0, tol=1e-9, max_iter=2).fit(X, y)


@pytest.mark.parametrize("params,error", [
    (dict(C=0.0), ValueError), (dict(C=-1.0), ValueError), (dict(C=np.nan), ValueError),
    (dict(tol=-1.0), ValueError), (dict(max_iter=-1), ValueError),
    (dict(selection="best"), ValueError), (dict(intercept_scaling=0.0), ValueError),
    (dict(class_weight="weird"), ValueError), (dict(class_weight={7: 1.0}), ValueError),
    (dict(warm_start="yes"), TypeError),
])
def test_bad_parameters_are_refused(params, error):
    X, y = _data(n=20)
    with pytest.raises(error):
        LogisticRegression(**params).fit(X, y)


def test_solve_linear_needs_two_classes():
    X, y = _data(n=30)
    with pytest.raises(ValueError):
        solve_linear(X, np.arange(30) % 3, loss="logistic")
    with pytest.raises(ValueError):
        solve_linear(X, y, loss="logistic", C=0.0)


def test_model_file_round_trip(tmp_path):
    from sklearn.datasets import load_iris

    from pybudget import load, save
    X, y = load_iris(return_X_y=True)
    est = LogisticRegression(C=2.0, random_state=0).fit(X, y)
    save(est, tmp_path / "lr.pbm")
    back = load(tmp_path / "lr.pbm")
    assert isinstance(back, LogisticRegression)
    assert back.predict_proba(X).tobytes() == est.predict_proba(X).tobytes()
    assert (back.predict(X) == est.predict(X)).all()
