"""BudgetSVC(refit=...): the final exact solve of the coefficients on the budget's own
support vectors, with the squared hinge (refit=True) and the smoothed hinge
(refit="hinge"), against independent solutions of the same Nystroem problem
(scikit-learn's LinearSVC and scipy's L-BFGS on the whitened features phi(x) =
k(x, S) K_SS^(-1/2)) and its optimality conditions written in numpy; the parameter's
validation, clone, pickle and model files."""
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.svm import LinearSVC as SkLinearSVC

from pybudget import BudgetSVC, load, save, solve_budget
from pybudget.budget._decision import center_kernel, kernel_matrix
from pybudget.budget._refit import HUBER, refit_binary

C, GAMMA = 4.0, 0.2


@pytest.fixture(scope="module")
def binary():
    X, y = make_classification(n_samples=400, n_features=6, n_informative=4,
                               flip_y=0.05, random_state=0)
    return X, y


@pytest.fixture(scope="module")
def multi():
    X, y = make_classification(n_samples=450, n_features=6, n_informative=4, n_classes=3,
                               n_clusters_per_class=1, random_state=1)
    return X, y


def _features(X, S):
    """phi(x) = k(x, S) K_SS^(-1/2), computed here with numpy's own kernel."""
    def k(A, B):
        d2 = ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)
        return np.exp(-GAMMA * d2)
    s, U = np.linalg.eigh(k(S, S))
    assert s.min() > 1e-8 * s.max()          # (well conditioned: no clipping needed)
    return k(X, S) @ (U / np.sqrt(s)) @ U.T, (U / np.sqrt(s)) @ U.T


LOSSES = [True, "hinge"]          # refit's values: the squared hinge, the smoothed hinge


def _loss(m, refit):
    """The refit's loss at margins m and its derivative (numpy, from the formulas)."""
    if refit is True:
        r = np.maximum(0.0, 1.0 - m)
        return r * r, -2.0 * r
    h = HUBER
    value = np.where(m > 1 + h, 0.0, np.where(m < 1 - h, 1.0 - m, (1 + h - m) ** 2 / (4 * h)))
    slope = np.where(m > 1 + h, 0.0, np.where(m < 1 - h, -1.0, -(1 + h - m) / (2 * h)))
    return value, slope


def _objective(a, b, K, Kss, y, refit=True):
    return 0.5 * a @ Kss @ a + C * _loss(y * (K @ a + b), refit)[0].sum()


def _lbfgs(F, y, refit, offset=True):
    """The same problem in phi coordinates, (w, b, objective), by scipy's L-BFGS."""
    def fun(v):
        w, b = v[:-1], (v[-1] if offset else 0.0)
        value, slope = _loss(y * (F @ w + b), refit)
        g = y * slope
        return (0.5 * w @ w + C * value.sum(),
                np.append(w + C * F.T @ g, C * g.sum() if offset else 0.0))

    opt = minimize(fun, np.zeros(F.shape[1] + 1), jac=True, method="L-BFGS-B",
                   options={"maxiter": 20000, "ftol": 1e-15, "gtol": 1e-10})
    return opt.x[:-1], (opt.x[-1] if offset else 0.0), opt.fun


def _gradient(a, b, K, Kss, ys, refit):
    """(the objective's gradient in a, in b, the scale of its loss part) in numpy."""
    g = ys * _loss(ys * (K @ a + b), refit)[1]
    return Kss @ a + C * K.T @ g, C * g.sum(), C * np.abs(K.T @ g).max()


def test_refit_matches_liblinear_without_offset(binary):
    """offset=False: the problem is exactly liblinear's -s 2 on phi without a bias."""
    X, y = binary
    clf = BudgetSVC(C=C, gamma=GAMMA, budget=40, offset=False, refit=True,
                    random_state=0).fit(X, y)
    S = clf.support_vectors_
    F, Kmhalf = _features(X, S)
    ref = SkLinearSVC(C=C, loss="squared_hinge", dual=False, fit_intercept=False,
                      tol=1e-12, max_iter=10000).fit(F, y)
    # the refit's coefficients mapped into phi coordinates: w = K_SS^(1/2) a
    a_ref = Kmhalf @ ref.coef_.ravel()
    np.testing.assert_allclose(clf.dual_coef_.ravel(), a_ref, rtol=1e-5,
                               atol=1e-5 * np.abs(a_ref).max())
    assert np.all(clf.intercept_ == 0.0)
    np.testing.assert_allclose(clf.decision_function(X), ref.decision_function(F),
                               rtol=1e-6, atol=1e-6)


def test_refit_hinge_matches_lbfgs_without_offset(binary):
    """offset=False, the smoothed hinge: the coefficients mapped into phi coordinates
    (w = K_SS^(1/2) a) are L-BFGS's."""
    X, y = binary
    ys = np.where(y == 1, 1.0, -1.0)
    clf = BudgetSVC(C=C, gamma=GAMMA, budget=40, offset=False, refit="hinge",
                    random_state=0).fit(X, y)
    F, Kmhalf = _features(X, clf.support_vectors_)
    w, _, _ = _lbfgs(F, ys, "hinge", offset=False)
    a_ref = Kmhalf @ w
    np.testing.assert_allclose(clf.dual_coef_.ravel(), a_ref, rtol=1e-4,
                               atol=1e-4 * np.abs(a_ref).max())
    assert np.all(clf.intercept_ == 0.0)
    np.testing.assert_allclose(clf.decision_function(X), F @ w, atol=1e-4)


@pytest.mark.parametrize("refit", LOSSES)
def test_refit_matches_lbfgs_with_offset(binary, refit):
    """offset=True: an unregularised offset; scipy's L-BFGS on (w, b) in phi
    coordinates reaches the same objective and decision values."""
    X, y = binary
    ys = np.where(y == 1, 1.0, -1.0)
    clf = BudgetSVC(C=C, gamma=GAMMA, budget=40, refit=refit, random_state=1).fit(X, y)
    S = clf.support_vectors_
    F, _ = _features(X, S)
    w, b, best = _lbfgs(F, ys, refit)
    K = kernel_matrix(X, S, GAMMA)
    Kss = center_kernel(S, GAMMA)
    ours = _objective(clf.dual_coef_.ravel(), clf.intercept_[0], K, Kss, ys, refit)
    assert ours <= best * (1 + 1e-9)
    assert ours == pytest.approx(best, rel=1e-7)
    np.testing.assert_allclose(clf.decision_function(X), F @ w + b, atol=1e-4)


@pytest.mark.parametrize("refit", LOSSES)
def test_kkt_conditions(binary, refit):
    """The returned (a, b) zero the gradient of the objective (numpy)."""
    X, y = binary
    ys = np.where(y == 1, 1.0, -1.0)
    clf = BudgetSVC(C=C, gamma=GAMMA, budget=30, solver="bsca", refit=refit,
                    random_state=2).fit(X, y)
    a, b = clf.dual_coef_.ravel(), clf.intercept_[0]
    S = clf.support_vectors_
    g_a, g_b, scale = _gradient(a, b, kernel_matrix(X, S, GAMMA), center_kernel(S, GAMMA),
                                ys, refit)
    assert np.abs(g_a).max() <= 1e-7 * scale
    assert abs(g_b) <= 1e-7 * C * len(ys)


@pytest.mark.parametrize("refit", LOSSES)
def test_refit_improves_objective_from_any_start(binary, refit):
    """refit_binary from zero and from the stochastic coefficients: the same optimum."""
    X, y = binary
    ys = np.where(y == 1, 1.0, -1.0)
    clf = BudgetSVC(C=C, gamma=GAMMA, budget=30, random_state=3).fit(X, y)
    S = clf.support_vectors_
    K, Kss = kernel_matrix(X, S, GAMMA), center_kernel(S, GAMMA)
    a0, b0 = clf.dual_coef_.ravel(), clf.intercept_[0]
    loss = "squared_hinge" if refit is True else refit
    a1, b1, i1 = refit_binary(K, Kss, ys, C, a0, b0, loss=loss)
    a2, b2, i2 = refit_binary(K, Kss, ys, C, np.zeros_like(a0), 0.0, loss=loss)
    assert i1.converged and i2.converged
    f1 = _objective(a1, b1, K, Kss, ys, refit)
    assert f1 <= _objective(a0, b0, K, Kss, ys, refit)
    assert f1 == pytest.approx(_objective(a2, b2, K, Kss, ys, refit), rel=1e-9)
    np.testing.assert_allclose(K @ a1 + b1, K @ a2 + b2, atol=1e-6)


def test_coincident_centres():
    """A singular K_SS (two equal centres) still gives a finite optimum."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    ys = np.where(X[:, 0] + 0.3 * rng.normal(size=120) > 0, 1.0, -1.0)
    S = np.vstack([X[:10], X[:1]])
    K, Kss = kernel_matrix(X, S, GAMMA), center_kernel(S, GAMMA)
    a, b, info = refit_binary(K, Kss, ys, C, np.zeros(11), 0.0)
    assert np.all(np.isfinite(a)) and np.isfinite(b)
    F, _ = _features(X, S[:10])
    ref = SkLinearSVC(C=C, dual=False, fit_intercept=True, intercept_scaling=1e3,
                      tol=1e-12, max_iter=10000).fit(F, ys)
    np.testing.assert_allclose(K @ a + b, ref.decision_function(F), atol=1e-3)


@pytest.mark.parametrize("refit", LOSSES)
@pytest.mark.parametrize("solver", ["bsgd", "bsca"])
def test_multiclass_sparse_and_dense(multi, solver, refit):
    X, y = multi
    kw = dict(C=C, gamma=GAMMA, budget=30, solver=solver, refit=refit, random_state=0)
    dense = BudgetSVC(**kw).fit(X, y)
    sparse = BudgetSVC(**kw).fit(sp.csr_matrix(X), y)
    plain = BudgetSVC(**dict(kw, refit=False)).fit(X, y)
    np.testing.assert_array_equal(dense.support_vectors_, plain.support_vectors_)
    np.testing.assert_allclose(dense.dual_coef_, sparse.dual_coef_, rtol=1e-8, atol=1e-8)
    assert dense.dual_coef_.shape == plain.dual_coef_.shape == (3, dense.support_vectors_.shape[0])
    if solver == "bsca":     # each one-vs-rest problem keeps its own support vectors
        np.testing.assert_array_equal(dense.dual_coef_ != 0, plain.dual_coef_ != 0)
    # every problem k is class k against the rest, at its optimum (gradient in numpy)
    S = dense.support_vectors_
    K = kernel_matrix(X, S, GAMMA)
    for k in range(3):
        cols = np.flatnonzero(plain.dual_coef_[k]) if solver == "bsca" else slice(None)
        Kk = K[:, cols]
        Kss = center_kernel(S[cols], GAMMA)
        ys = np.where(y == dense.classes_[k], 1.0, -1.0)
        a, b = dense.dual_coef_[k, cols], dense.intercept_[k]
        g, _, scale = _gradient(a, b, Kk, Kss, ys, refit)
        assert np.abs(g).max() <= 1e-7 * scale
    assert dense.score(X, y) >= plain.score(X, y) - 0.05


def test_functional_api(binary):
    X, y = binary
    res = solve_budget(X, y, C=C, gamma=GAMMA, budget=25, refit=True, random_state=0)
    clf = BudgetSVC(C=C, gamma=GAMMA, budget=25, refit=True, random_state=0).fit(X, y)
    np.testing.assert_array_equal(res.dual_coef, clf.dual_coef_)
    np.testing.assert_array_equal(res.intercept, clf.intercept_)


def test_default_unchanged(binary):
    X, y = binary
    a = BudgetSVC(budget=25, random_state=0).fit(X, y)
    b = BudgetSVC(budget=25, refit=False, random_state=0).fit(X, y)
    assert BudgetSVC().refit is False
    np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)
    np.testing.assert_array_equal(a.intercept_, b.intercept_)


@pytest.mark.parametrize("bad", ["yes", 1, 0, None, "True", "logistic"])
def test_invalid_values_rejected(binary, bad):
    X, y = binary
    error = ValueError if isinstance(bad, str) else TypeError
    with pytest.raises(error, match="refit must be True, False or one of"):
        BudgetSVC(budget=10, refit=bad).fit(X, y)
    with pytest.raises(error, match="refit must be True, False or one of"):
        solve_budget(X, y, budget=10, refit=bad)


def test_refit_true_is_the_squared_hinge(binary):
    X, y = binary
    kw = dict(C=C, gamma=GAMMA, budget=25, random_state=0)
    a = BudgetSVC(refit=True, **kw).fit(X, y)
    b = BudgetSVC(refit="squared_hinge", **kw).fit(X, y)
    c = BudgetSVC(refit="hinge", **kw).fit(X, y)
    np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)
    assert not np.array_equal(a.dual_coef_, c.dual_coef_)


def test_clone_pickle_and_model_file(binary, tmp_path):
    X, y = binary
    clf = BudgetSVC(C=C, gamma=GAMMA, budget=25, refit="hinge", random_state=0)
    assert clf.get_params()["refit"] == "hinge"
    assert clone(clf).get_params() == clf.get_params()
    clf.fit(X, y)
    back = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(back.decision_function(X), clf.decision_function(X))
    path = tmp_path / "refit.pbm"
    save(clf, path)
    loaded = load(path)
    assert loaded.refit == "hinge"
    np.testing.assert_array_equal(loaded.decision_function(X), clf.decision_function(X))
    np.testing.assert_array_equal(loaded.dual_coef_, clf.dual_coef_)


def test_partial_fit_ignores_refit(binary):
    X, y = binary
    a = BudgetSVC(budget=25, refit=True, random_state=0).partial_fit(X, y, classes=[0, 1])
    b = BudgetSVC(budget=25, random_state=0).partial_fit(X, y, classes=[0, 1])
    np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)


@pytest.mark.parametrize("solver", ["bsgd", "bsca"])
def test_check_estimator(solver):
    from sklearn.utils.estimator_checks import check_estimator
    check_estimator(BudgetSVC(C=10.0, epochs=5, budget=50, solver=solver, refit=True,
                              random_state=0))

