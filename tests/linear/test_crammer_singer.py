"""Crammer & Singer's multi-class SVM on the dual CD seam (_dcd_cs.pxd): the block step
against scipy's SLSQP on the block QP, the block gain against numpy's dual objective,
every strategy against the others and a zero duality gap, scikit-learn's liblinear
(-s 4) on coef and predictions, warm starts, sample weights, check_estimator, and the
refusal of bad parameters."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import LinearSVC as SkLinearSVC
from sklearn.utils.estimator_checks import check_estimator

from pybudget import LinearSVC, load, save, solve_crammer_singer
from pybudget.linear._dual_cd import SELECTIONS, DcdOptions, DcdState, dcd_solve
from pybudget.linear.crammer_singer import project_blocks


def _data(n=90, d=8, K=4, seed=0):
    X, y = make_classification(n_samples=n, n_features=d, n_informative=min(d, 6),
                               n_redundant=0, n_classes=K, n_clusters_per_class=1,
                               class_sep=1.5, random_state=seed)
    return X, y


def _block_qp(A, B, U):
    """min A/2 |a|^2 + B.a  s.t.  a <= U, sum a = 0, by SLSQP."""
    res = minimize(lambda a: 0.5 * A * a @ a + B @ a, np.zeros(B.size),
                   jac=lambda a: A * a + B, method="SLSQP",
                   bounds=[(None, u) for u in U],
                   constraints=[{"type": "eq", "fun": np.sum, "jac": np.ones_like}],
                   options={"ftol": 1e-15, "maxiter": 1000})
    return res.x


def _one_block(K, bias, seed, selection):
    """One step on one example whose other examples' contribution is a fixed W0 (the
    solver sees w = W0 + model(alpha0)), so B_m = W0_m.x + e_m is arbitrary.  Returns
    (alpha0, alpha1, A, B, U, dual objective before and after, dref)."""
    rng = np.random.default_rng(seed)
    d = 5
    x = rng.normal(size=d) * (rng.random(d) < 0.8)
    X = sp.csr_matrix(x[None, :])
    y = int(rng.integers(K))
    C = float(rng.uniform(0.1, 3.0))
    W0 = rng.normal(size=(K, d + 1))
    a0 = project_blocks(rng.normal(size=(1, K)), np.array([y]), np.array([C]))[0]
    xb = np.r_[x, bias]
    W = W0 + np.outer(a0, xb)
    a = a0.copy()
    w = W.T.reshape(-1).copy()          # the solver's layout: feature-major, (d + 1) x K
    e = np.ones(K)
    e[y] = 0.0

    def dual(W, a):      # the dual objective in its minimisation form
        return 0.5 * np.sum(W * W) + e @ a

    before = dual(W, a0)
    state = DcdState(a, w, np.ones(1), np.zeros(1, dtype=np.int32), 1)
    dcd_solve(X, np.array([float(y)]), np.array([C]), np.zeros(1), np.array([C]), bias, state,
              DcdOptions(selection=SELECTIONS[selection], tol=0.0, max_iter=1, seed=0,
                         problem="cs", n_classes=K))
    A = xb @ xb
    B = W0 @ xb + e
    U = np.where(np.arange(K) == y, C, 0.0)
    after = dual(w.reshape(d + 1, K).T, a)
    np.testing.assert_allclose(w.reshape(d + 1, K).T, W0 + np.outer(a, xb), atol=1e-12)
    return a0, a, A, B, U, before, after, state.dref


@pytest.mark.parametrize("selection", ["uniform", "shrinking", "avsf"])
def test_block_step_solves_the_block_qp(selection):
    for seed in range(40):
        K = (2, 3, 5, 8)[seed % 4]
        bias = 1.0 if seed % 3 else 0.0
        _, a, A, B, U, _, _, _ = _one_block(K, bias, seed, selection)
        assert np.all(a <= U + 1e-15) and abs(a.sum()) <= 1e-12
        ref = _block_qp(A, B, U)
        obj = lambda v: 0.5 * A * v @ v + B @ v       # noqa: E731
        assert obj(a) <= obj(ref) + 1e-10 * max(1.0, abs(obj(ref)))
        np.testing.assert_allclose(a, ref, atol=1e-6 * max(1.0, np.abs(ref).max()))


def test_block_gain_is_the_exact_dual_decrease():
    """AVSF's first sweep over one example learns its reference gain from that step's
    gain alone, so dref is the gain the hook computed."""
    moved = 0
    for seed in range(40):
        K = (2, 3, 5, 8)[seed % 4]
        a0, a, _, _, _, before, after, dref = _one_block(K, float(seed % 2), seed, "avsf")
        moved += not np.array_equal(a0, a)        # (a start can be optimal already)
        assert dref >= 0.0
        np.testing.assert_allclose(dref, before - after, rtol=1e-9, atol=1e-12)
    assert moved >= 30


def test_projection_matches_slsqp():
    rng = np.random.default_rng(3)
    for K in (2, 3, 6):
        v = rng.normal(size=(20, K)) * 2
        codes = rng.integers(K, size=20)
        cvec = rng.uniform(0.1, 2.0, size=20)
        P = project_blocks(v, codes, cvec)
        for i in range(20):
            U = np.where(np.arange(K) == codes[i], cvec[i], 0.0)
            np.testing.assert_allclose(P[i], _block_qp(1.0, -v[i], U), atol=1e-7)


def _objectives(X, codes, K, cvec, res, bias):
    """(primal, dual) by numpy from the returned model and alpha."""
    Xb = np.c_[X, np.full(X.shape[0], bias)]
    W = np.c_[res.coef, res.intercept / bias if bias else np.zeros(K)]
    S = Xb @ W.T + (np.arange(K)[None, :] != codes[:, None])
    rows = np.arange(X.shape[0])
    primal = 0.5 * np.sum(W * W) + np.sum(cvec * (S.max(axis=1) - S[rows, codes]))
    dual = res.alpha[rows, codes].sum() - 0.5 * np.sum(W * W)
    return primal, dual


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_every_strategy_reaches_the_same_optimum(fit_intercept):
    X, y = _data()
    X[7] = 0.0                                          # an all-zero row
    K, C, tol = 4, 0.8, 1e-7
    duals = {}
    for sel in SELECTIONS:
        res = solve_crammer_singer(sp.csr_matrix(X), y, C, selection=sel, tol=tol,
                                   max_iter=200000, fit_intercept=fit_intercept,
                                   random_state=1)
        assert res.converged and res.kkt_violation <= tol
        assert res.coef.shape == (K, X.shape[1]) and res.intercept.shape == (K,)
        rows = np.arange(X.shape[0])
        U = np.zeros_like(res.alpha)
        U[rows, y] = C
        assert np.all(res.alpha <= U + 1e-12)
        np.testing.assert_allclose(res.alpha.sum(axis=1), 0.0, atol=1e-12)
        np.testing.assert_allclose(res.coef, res.alpha.T @ X, atol=1e-10)
        primal, dual = _objectives(X, y, K, np.full(X.shape[0], C), res,
                                   1.0 if fit_intercept else 0.0)
        np.testing.assert_allclose([res.primal_objective, res.dual_objective],
                                   [primal, dual], rtol=1e-10)
        assert 0.0 <= primal - dual <= 1e-5 * abs(primal)
        duals[sel] = dual
    assert max(duals.values()) - min(duals.values()) <= 1e-6 * abs(dual)


def _sklearn_cs(X, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return SkLinearSVC(multi_class="crammer_singer", tol=1e-12, max_iter=200000,
                           **kw).fit(X, y)


def _untied(scores, gap=1e-5):
    """Rows whose two largest scores differ by more than gap (the optimum of the CS
    dual often ties two wrong classes, where predictions hinge on rounding)."""
    top = np.sort(scores, axis=1)
    return top[:, -1] - top[:, -2] > gap


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("K", [2, 3, 5])
def test_matches_sklearn_crammer_singer(fit_intercept, K):
    X, y = _data(n=120, d=6, K=K, seed=K)
    ours = LinearSVC(multi_class="crammer_singer", C=0.5, tol=1e-9, max_iter=200000,
                     fit_intercept=fit_intercept, random_state=0).fit(X, y)
    ref = _sklearn_cs(X, y, C=0.5, fit_intercept=fit_intercept)
    assert ours.coef_.shape == ref.coef_.shape == ((1 if K == 2 else K), X.shape[1])
    np.testing.assert_allclose(ours.coef_, ref.coef_, atol=1e-5)
    np.testing.assert_allclose(ours.intercept_, ref.intercept_, atol=1e-5)
    scores = ref.decision_function(X)
    keep = (np.abs(scores) > 1e-5 if K == 2 else _untied(scores))
    assert keep.mean() > 0.5
    np.testing.assert_array_equal(ours.predict(X)[keep], ref.predict(X)[keep])


def test_sample_weights_and_class_weights():
    X, y = _data(n=60, d=5, K=3, seed=2)
    rng = np.random.default_rng(0)
    sw = rng.integers(0, 3, size=60).astype(float)
    kw = dict(multi_class="crammer_singer", C=0.7, tol=1e-10, max_iter=200000,
              random_state=0)
    weighted = LinearSVC(**kw).fit(X, y, sample_weight=sw)
    rep = np.repeat(np.arange(60), sw.astype(int))
    repeated = LinearSVC(**kw).fit(X[rep], y[rep])
    np.testing.assert_allclose(weighted.coef_, repeated.coef_, atol=1e-6)
    np.testing.assert_allclose(weighted.intercept_, repeated.intercept_, atol=1e-6)
    cw = {0: 2.0, 1: 0.5, 2: 1.0}
    ours = LinearSVC(class_weight=cw, **kw).fit(X, y)
    ref = _sklearn_cs(X, y, C=0.7, class_weight=cw)
    np.testing.assert_allclose(ours.coef_, ref.coef_, atol=1e-5)


def test_warm_starts():
    X, y = _data(n=80, d=6, K=3, seed=4)
    cold = solve_crammer_singer(X, y, 1.0, tol=1e-9, max_iter=200000, random_state=0)
    warm = solve_crammer_singer(X, y, 1.0, tol=1e-9, max_iter=200000, random_state=0,
                                warm_start=cold)
    assert warm.n_iter < 10
    np.testing.assert_allclose(warm.coef, cold.coef, atol=1e-7)
    # a start from another C (infeasible here: alpha[i, y_i] up to 4 > 1) is projected
    other = solve_crammer_singer(X, y, 4.0, tol=1e-9, max_iter=200000, random_state=0)
    moved = solve_crammer_singer(X, y, 1.0, tol=1e-9, max_iter=200000, random_state=0,
                                 warm_start=other)
    np.testing.assert_allclose(moved.coef, cold.coef, atol=1e-6)
    # the estimator's warm start along C
    est = LinearSVC(multi_class="crammer_singer", tol=1e-9, max_iter=200000,
                    fit_intercept=False, random_state=0, warm_start=True)
    for C in (0.25, 0.5, 1.0):
        est.set_params(C=C).fit(X, y)
    np.testing.assert_allclose(est.coef_, cold.coef, atol=1e-6)


def test_check_estimator_tight_tolerance():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        check_estimator(LinearSVC(multi_class="crammer_singer", tol=1e-10, max_iter=100000,
                                  random_state=0))


def test_bad_parameters_are_refused():
    X, y = _data(n=30, d=4, K=3)
    with pytest.raises(ValueError, match="multi_class must be one of"):
        LinearSVC(multi_class="ovo").fit(X, y)
    with pytest.raises(ValueError, match="loss must be 'hinge'"):
        LinearSVC(multi_class="crammer_singer", loss="squared_hinge").fit(X, y)
    with pytest.raises(ValueError):
        solve_crammer_singer(X, np.zeros(30))                  # one class
    with pytest.raises(ValueError, match="C must be"):
        solve_crammer_singer(X, y, C=-1.0)
    with pytest.raises(ValueError, match="warm_start"):
        solve_crammer_singer(X, y, warm_start=solve_crammer_singer(X[:20], y[:20]))
    Xs, n, d = sp.csr_matrix(X), 30, 4
    args = (np.ones(n), np.zeros(n), np.ones(n), 0.0)

    def state(n_alpha, n_w):
        return DcdState(np.zeros(n_alpha), np.zeros(n_w), np.ones(n),
                        np.arange(n, dtype=np.int32), n)

    def opts(k):
        return DcdOptions(selection=0, tol=0.1, max_iter=10, seed=0, problem="cs",
                          n_classes=k)
    yf = y.astype(float)
    with pytest.raises(ValueError, match="n_classes >= 2"):
        dcd_solve(Xs, yf, *args, state(n, d + 1), opts(1))
    with pytest.raises(ValueError, match="alpha of size"):
        dcd_solve(Xs, yf, *args, state(n, 3 * (d + 1)), opts(3))
    with pytest.raises(ValueError, match="labels in 0..2"):
        dcd_solve(Xs, yf + 0.5, *args, state(3 * n, 3 * (d + 1)), opts(3))


def test_save_and_load(tmp_path):
    X, y = _data(n=60, d=5, K=3, seed=5)
    est = LinearSVC(multi_class="crammer_singer", random_state=0).fit(X, y)
    save(est, tmp_path / "cs.json")
    back = load(tmp_path / "cs.json")
    assert back.multi_class == "crammer_singer"
    np.testing.assert_array_equal(back.coef_, est.coef_)
    np.testing.assert_array_equal(back.predict(X), est.predict(X))
