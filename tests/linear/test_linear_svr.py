"""LinearSVR and solve_linear's regression losses: against scikit-learn, liblinear-official
(-s 12 / 13), a zero duality gap, every strategy, warm starts, bad input."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_regression
from sklearn.exceptions import ConvergenceWarning

from pybudget import LinearSVR, solve_linear

LOSSES = ["epsilon_insensitive", "squared_epsilon_insensitive"]


def _data(n=200, d=30, seed=0, sparse=True):
    X, y = make_regression(n, d, n_informative=10, noise=3.0, random_state=seed)
    if sparse:
        rng = np.random.default_rng(seed)
        X = sp.csr_matrix(X * (rng.random(X.shape) < 0.4))
    return X, y / 10.0


@pytest.mark.parametrize("loss", LOSSES)
def test_agrees_with_scikit_learn(loss):
    from sklearn.svm import LinearSVR as SkLinearSVR
    X, y = _data(sparse=False)
    ours = LinearSVR(C=0.5, epsilon=0.1, loss=loss, tol=1e-6, max_iter=1000000,
                     random_state=0).fit(X, y)
    theirs = SkLinearSVR(C=0.5, epsilon=0.1, loss=loss, tol=1e-9, max_iter=100000,
                         dual=True, random_state=0).fit(X, y)
    assert ours.converged_
    np.testing.assert_allclose(ours.coef_, theirs.coef_, atol=1e-4)
    np.testing.assert_allclose(ours.intercept_, theirs.intercept_, atol=1e-4)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), atol=1e-3)


@pytest.mark.parametrize("loss,s", [("epsilon_insensitive", 13),
                                    ("squared_epsilon_insensitive", 12)])
def test_primal_matches_liblinear(loss, s):
    ll = pytest.importorskip("liblinear.liblinearutil")
    X, y = _data(seed=1)
    C, eps = 0.3, 0.05
    res = solve_linear(X, y, C, loss=loss, epsilon=eps, selection="shrinking", tol=1e-7,
                       max_iter=100000, random_state=0)
    m = ll.train(ll.problem(y, X), f"-s {s} -c {C} -p {eps} -e 0.00001 -q")
    w = np.array([m.get_decfun_coef(j + 1) for j in range(X.shape[1])])
    r = np.maximum(np.abs(X @ w - y) - eps, 0.0)
    primal_ll = 0.5 * w @ w + C * np.sum(r ** 2 if s == 12 else r)
    assert res.primal_objective == pytest.approx(primal_ll, rel=1e-4)
    assert res.primal_objective <= primal_ll * (1 + 1e-9)


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("C", [0.01, 1.0, 30.0])
def test_strategies_agree_and_close_the_gap(loss, C):
    X, y = _data(seed=2)
    duals = {}
    for sel in ["uniform", "shrinking", "avsf", "auto"]:
        res = solve_linear(X, y, C, loss=loss, epsilon=0.05, selection=sel, tol=1e-6,
                           max_iter=200000, fit_intercept=True, random_state=3)
        assert res.converged and res.kkt_violation <= 1e-6 * (np.abs(y).max() - 0.05)
        assert res.classes is None
        assert res.primal_objective - res.dual_objective <= 1e-5 * max(1.0, res.primal_objective)
        duals[sel] = res.dual_objective
    spread = max(duals.values()) - min(duals.values())
    assert spread <= 1e-6 * max(1.0, abs(res.dual_objective))


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("selection", ["uniform", "shrinking", "avsf"])
def test_tolerance_does_not_depend_on_the_units_of_the_targets(loss, selection):
    # Targets (and epsilon) times s = 2**-10, exact in floating point, give the same
    # problem in other units (the hinge-like loss with C times s): the same sweeps and
    # coefficients times s.  With an absolute tolerance the small-unit fit stopped early.
    X, y = _data(seed=4)
    s = 2.0 ** -10
    fits = [solve_linear(X, y * f, 0.5 * (f if loss == "epsilon_insensitive" else 1.0),
                         loss=loss, epsilon=0.05 * f, selection=selection, tol=1e-3,
                         max_iter=100000, fit_intercept=True, random_state=5)
            for f in (1.0, s)]
    assert fits[0].converged and fits[1].converged
    assert fits[1].n_iter == fits[0].n_iter > 1
    np.testing.assert_allclose(fits[1].coef, fits[0].coef * s, rtol=1e-9, atol=1e-15)
    ref = np.abs(y).max() - 0.05
    assert fits[0].kkt_violation <= 1e-3 * ref
    assert fits[1].kkt_violation <= 1e-3 * ref * s


def test_warm_start_starts_from_the_previous_solution():
    X, y = _data(seed=4)
    est = LinearSVR(C=1.0, epsilon=0.05, tol=1e-5, max_iter=100000, warm_start=True,
                    selection="shrinking", random_state=0).fit(X, y)
    cold_sweeps = est.n_iter_
    assert est.fit(X, y).n_iter_ <= 2 < cold_sweeps     # same C: starts at the optimum
    est.set_params(C=2.0).fit(X, y)
    cold = LinearSVR(C=2.0, epsilon=0.05, tol=1e-5, max_iter=100000,
                     selection="shrinking", random_state=0).fit(X, y)
    assert est.dual_objective_ == pytest.approx(cold.dual_objective_, rel=1e-6)


def test_sample_weight_zero_equals_dropping_rows():
    X, y = _data(seed=5)
    w = np.ones(X.shape[0])
    w[::3] = 0.0
    a = LinearSVR(C=1.0, epsilon=0.05, tol=1e-8, max_iter=100000).fit(X, y, sample_weight=w)
    b = LinearSVR(C=1.0, epsilon=0.05, tol=1e-8, max_iter=100000).fit(X[w > 0], y[w > 0])
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-6)


def test_convergence_warning_at_the_cap():
    X, y = _data(seed=6)
    with pytest.warns(ConvergenceWarning):
        LinearSVR(C=100.0, tol=1e-9, max_iter=2).fit(X, y)


@pytest.mark.parametrize("params,error", [
    (dict(epsilon=-0.1), ValueError), (dict(epsilon=np.nan), ValueError),
    (dict(epsilon="1"), TypeError), (dict(loss="hinge"), ValueError),
    (dict(C=0.0), ValueError), (dict(tol=-1.0), ValueError),
])
def test_bad_parameters_are_refused(params, error):
    X, y = _data(n=20)
    with pytest.raises(error):
        LinearSVR(**params).fit(X, y)


def test_bad_targets_are_refused():
    X, y = _data(n=20)
    y_nan = y.copy()
    y_nan[3] = np.nan
    with pytest.raises(ValueError):
        LinearSVR().fit(X, y_nan)
    with pytest.raises(ValueError):
        solve_linear(X, y[:-1], loss="epsilon_insensitive")
    with pytest.raises(ValueError):
        solve_linear(X, np.c_[y, y], loss="epsilon_insensitive")


def test_all_zero_rows_and_single_row():
    X, y = _data(n=30)
    X = sp.vstack([X, sp.csr_matrix((3, X.shape[1]))]).tocsr()
    y = np.r_[y, [5.0, -5.0, 0.0]]
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        for fit_intercept in (False, True):
            est = LinearSVR(C=1.0, tol=1e-6, max_iter=100000,
                            fit_intercept=fit_intercept).fit(X, y)
            assert np.isfinite(est.coef_).all() and est.converged_
    one = LinearSVR().fit(np.array([[1.0, 2.0]]), [3.0])
    assert np.isfinite(one.predict([[1.0, 2.0]])).all()


def test_model_file_round_trip(tmp_path):
    from pybudget import load, save
    X, y = _data(seed=7)
    est = LinearSVR(C=0.5, epsilon=0.05, loss="squared_epsilon_insensitive",
                    random_state=0).fit(X, y)
    save(est, tmp_path / "svr.pbm")
    back = load(tmp_path / "svr.pbm")
    assert isinstance(back, LinearSVR) and not hasattr(back, "classes_")
    assert back.get_params() == est.get_params()
    assert back.predict(X).tobytes() == est.predict(X).tobytes()
    assert back.converged_ is est.converged_ and back.n_iter_ == est.n_iter_
    with pytest.raises(ValueError, match="not fitted"):
        save(LinearSVR(), tmp_path / "unfitted.pbm")
