"""pybudget against scikit-learn (liblinear) side by side at tight tolerances: the same
coefficients (relative 1e-4) for the strictly convex problems, the same objective for the
hinge losses; the reported failing cases converge (tests/ grid: iris, digits, a9a)."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_digits, load_iris
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression as SkLR
from sklearn.svm import LinearSVC as SkSVC
from sklearn.svm import LinearSVR as SkSVR
from sklearn.svm._base import _fit_liblinear

from pybudget import LinearSVC, LinearSVR, LogisticRegression
from pybudget import solve_linear
from pybudget.linear.problem import class_weight_vector, problem_costs

TIGHT = dict(tol=1e-9, max_iter=100000, random_state=0)


def _iris():
    X, y = load_iris(return_X_y=True)
    return X, y


def _digits():
    X, y = load_digits(return_X_y=True)
    return X[:400] / 16.0, y[:400]


def _a9a():
    datasets = pytest.importorskip("pybudget.datasets")
    X, y = datasets.load("a9a")[:2]
    return X[:1500], y[:1500]


DATA = {"iris": _iris, "digits": _digits, "a9a": _a9a}


def _variant(X, kind):
    X = X.toarray() if sp.issparse(X) else np.asarray(X)
    if kind == "csr":
        return sp.csr_matrix(X)
    return X.astype(np.float32) if kind == "float32" else X


def _close(ours, theirs, rtol=1e-4):
    """Relative agreement, relative to the largest coefficient of the model."""
    scale = max(np.abs(theirs).max(), 1e-12)
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=rtol * scale)


def _quiet(fit, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return fit(*args, **kw)


def _ovr_objective(est, X, y, C, loss, cw, sw):
    """Sum over the one-vs-rest problems of liblinear's primal (bias regularised)."""
    X = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)
    classes = np.unique(y)
    codes = np.searchsorted(classes, y)
    counts = np.bincount(codes, weights=sw)
    weights = class_weight_vector(cw, classes, counts)
    B = est.intercept_scaling if est.fit_intercept else 0.0
    intercepts = np.broadcast_to(est.intercept_, (est.coef_.shape[0],))
    total = 0.0
    for row, k in enumerate([1] if len(classes) == 2 else range(len(classes))):
        w, b = est.coef_[row], intercepts[row]
        yy = np.where(codes == k, 1.0, -1.0)
        slack = np.maximum(0.0, 1.0 - yy * (X @ w + b))
        cost = problem_costs(C, weights, codes, k, sw)
        reg = 0.5 * (w @ w + (b / B) ** 2 if B else w @ w)
        total += reg + cost @ (slack ** 2 if loss == "squared_hinge" else slack)
    return total


# ---- LinearSVC, squared hinge: strictly convex, the same coefficients ---------------

SCALINGS = [1.0, 100.0, 1000.0, 1e4]


@pytest.mark.parametrize("scaling", SCALINGS)
@pytest.mark.parametrize("data", ["iris", "a9a"])
def test_squared_hinge_same_coef_at_every_scaling(data, scaling):
    X, y = DATA[data]()
    ours = LinearSVC(C=0.5, loss="squared_hinge", intercept_scaling=scaling, **TIGHT).fit(X, y)
    theirs = SkSVC(C=0.5, loss="squared_hinge", intercept_scaling=scaling, dual=False,
                   tol=1e-12, max_iter=100000).fit(X, y)
    assert ours.converged_.all()
    _close(ours.coef_, theirs.coef_)
    _close(ours.intercept_, theirs.intercept_)


@pytest.mark.parametrize("kind", ["dense", "csr", "float32"])
@pytest.mark.parametrize("class_weight", [None, {0: 2.0, 2: 0.5}, "balanced"])
def test_squared_hinge_ovr_class_and_sample_weights(class_weight, kind):
    X, y = _iris()
    sw = np.random.RandomState(0).uniform(0.5, 2, y.shape[0])
    Xv = _variant(X, kind)
    ours = LinearSVC(C=0.5, loss="squared_hinge", class_weight=class_weight, **TIGHT)
    ours.fit(Xv, y, sample_weight=sw)
    theirs = SkSVC(C=0.5, loss="squared_hinge", class_weight=class_weight, dual=False,
                   tol=1e-12, max_iter=100000).fit(X, y, sample_weight=sw)
    _close(ours.coef_, theirs.coef_, rtol=1e-4 if kind != "float32" else 1e-3)
    _close(ours.intercept_, theirs.intercept_, rtol=1e-4 if kind != "float32" else 1e-3)


def test_class_weight_ovr_known_coefficients():
    """A class weight on one-vs-rest: the hinge fit's class-1 row of coef_ is
    scikit-learn's known values (iris, weights {0: 2, 2: 0.5})."""
    X, y = _iris()
    sw = np.random.RandomState(0).uniform(0.5, 2, 150)
    for Xv in (X, sp.csr_matrix(X)):
        est = LinearSVC(C=0.5, class_weight={0: 2, 2: 0.5}, **TIGHT)
        est.fit(Xv, y, sample_weight=sw)
        np.testing.assert_allclose(est.coef_[1], [0.152, -0.740, 0.152, -0.512], atol=6e-4)


@pytest.mark.parametrize("class_weight", [{0: 2.0, 9: 0.25}, "balanced"])
def test_digits_ovr_class_weight_n_jobs(class_weight):
    X, y = _digits()
    theirs = SkSVC(C=0.1, loss="squared_hinge", class_weight=class_weight, dual=False,
                   tol=1e-12, max_iter=100000).fit(X, y)
    for n_jobs in (1, 2):
        ours = LinearSVC(C=0.1, loss="squared_hinge", class_weight=class_weight,
                         n_jobs=n_jobs, **TIGHT).fit(X, y)
        _close(ours.coef_, theirs.coef_)


def test_binary_class_weight_weighs_both_classes():
    """Two classes: liblinear weighs each row by its own class (C cw[+], C cw[-])."""
    X, y = _a9a()
    cw = {-1.0: 0.3, 1.0: 3.0} if -1.0 in set(np.unique(y)) else {0: 0.3, 1: 3.0}
    ours = LinearSVC(C=1.0, loss="squared_hinge", class_weight=cw, **TIGHT).fit(X, y)
    theirs = SkSVC(C=1.0, loss="squared_hinge", class_weight=cw, dual=False,
                   tol=1e-12, max_iter=100000).fit(X, y)
    _close(ours.coef_, theirs.coef_)


# ---- LinearSVC, hinge: not strictly convex, the same objective ----------------------

@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("class_weight", [None, {0: 2.0, 2: 0.5}, "balanced"])
def test_hinge_same_objective(class_weight, fit_intercept):
    X, y = _iris()
    sw = np.random.RandomState(1).uniform(0.5, 2, y.shape[0])
    kw = dict(C=0.5, loss="hinge", class_weight=class_weight, fit_intercept=fit_intercept)
    ours = LinearSVC(**kw, **TIGHT).fit(X, y, sample_weight=sw)
    # (liblinear's order seeded: unseeded, it once stopped at 74.680 in the full suite's
    # run where every seed tried reaches ours, 74.664, certified by our duality gap)
    theirs = _quiet(SkSVC(**kw, dual=True, tol=1e-12, max_iter=200000, random_state=0).fit,
                    X, y, sample_weight=sw)
    assert ours.converged_.all()
    f_ours = _ovr_objective(ours, X, y, 0.5, "hinge", class_weight, sw)
    f_theirs = _ovr_objective(theirs, X, y, 0.5, "hinge", class_weight, sw)
    assert f_ours == pytest.approx(f_theirs, rel=1e-4)


def test_hinge_converges_at_intercept_scaling_1000():
    X = np.array([[2, 1], [3, 1], [1, 3], [2, 3]], float)
    y = np.array([0, 0, 1, 1])
    est = LinearSVC(C=4, loss="hinge", intercept_scaling=1000, tol=1e-10, max_iter=100000,
                    random_state=0).fit(X, y)
    assert est.converged_.all() and est.selection_ == "pairs"
    assert est.kkt_violation_[0] <= 1e-10
    assert est.n_iter_ <= 20            # measured: 6 sweeps (liblinear: its cap of 300)
    assert _ovr_objective(est, X, y, 4.0, "hinge", None, None) == pytest.approx(
        est.dual_objective_[0], abs=1e-9)


def test_hinge_at_scaling_100_beats_liblinear():
    """Where liblinear's dual stops at primal 13.5 (its cap), pybudget reaches 0.50."""
    X = np.array([[2, 1], [3, 1], [1, 3], [2, 3]], float)
    y = np.array([0, 0, 1, 1])
    est = _quiet(LinearSVC(C=4, loss="hinge", intercept_scaling=100, tol=1e-10,
                           max_iter=100000, selection="avsf", random_state=0).fit, X, y)
    assert _ovr_objective(est, X, y, 4.0, "hinge", None, None) < 0.5003


# ---- LogisticRegression: binary and one-vs-rest ---------------------------------------

def _sk_lr(X, y, C, scaling, class_weight, sw, fit_intercept=True):
    coef, intercept, n_iter = _fit_liblinear(
        X, y, C, fit_intercept, scaling, class_weight, "l2", False, 0, 100000, 1e-12,
        np.random.RandomState(0), sample_weight=sw)
    return coef, intercept, n_iter


def _lr_objective(X, y, coef, intercept, scaling):
    X = X.toarray() if sp.issparse(X) else X
    m = np.where(y == np.max(y), 1.0, -1.0) * (X @ coef + intercept)
    return 0.5 * (coef @ coef + (intercept / scaling) ** 2) + np.logaddexp(0.0, -m).sum()


@pytest.mark.parametrize("scaling", SCALINGS)
@pytest.mark.parametrize("data", ["iris", "a9a"])
def test_logistic_same_coef_at_every_scaling(data, scaling):
    X, y = DATA[data]()
    ours = LogisticRegression(C=1.0, intercept_scaling=scaling, **TIGHT).fit(X, y)
    coef, intercept, _ = _sk_lr(X, y, 1.0, scaling, None, None)
    if data == "a9a" and scaling == 1e4:
        # Ill-conditioned (a9a's one-hot groups are nearly collinear with the bias
        # column): liblinear's primal stops 1e-8 above pybudget's objective, coefficients
        # 1e-3 apart.  The objective decides: pybudget's is not larger.
        assert _lr_objective(X, y, ours.coef_[0], ours.intercept_[0], scaling) <= (
            _lr_objective(X, y, coef[0], intercept[0], scaling))
        _close(ours.coef_, coef, rtol=1e-2)
        return
    _close(ours.coef_, coef)
    _close(ours.intercept_, intercept, rtol=1e-3 if scaling >= 1e3 else 1e-4)


@pytest.mark.parametrize("kind", ["dense", "csr", "float32"])
@pytest.mark.parametrize("class_weight", [None, {0: 2.0, 2: 0.5}, "balanced"])
def test_logistic_ovr_class_and_sample_weights(class_weight, kind):
    X, y = _iris()
    sw = np.random.RandomState(0).uniform(0.5, 2, y.shape[0])
    ours = LogisticRegression(C=0.5, class_weight=class_weight, n_jobs=2, **TIGHT)
    ours.fit(_variant(X, kind), y, sample_weight=sw)
    coef, intercept, _ = _sk_lr(X, y, 0.5, 1.0, class_weight, sw)
    rtol = 1e-4 if kind != "float32" else 1e-3
    _close(ours.coef_, coef, rtol)
    _close(ours.intercept_, intercept, rtol)
    assert ours.n_iter_.shape == (1,)


def test_logistic_binary_without_intercept_matches_sklearn_estimator():
    X, y = _a9a()
    ours = LogisticRegression(C=2.0, fit_intercept=False, **TIGHT).fit(X, y)
    theirs = SkLR(C=2.0, fit_intercept=False, solver="liblinear", tol=1e-12,
                  max_iter=100000).fit(X, y)
    _close(ours.coef_, theirs.coef_)


# ---- LinearSVR, Crammer-Singer --------------------------------------------------------

@pytest.mark.parametrize("scaling", [1.0, 1000.0])
@pytest.mark.parametrize("loss", ["epsilon_insensitive", "squared_epsilon_insensitive"])
def test_linear_svr(loss, scaling):
    X, _ = _iris()
    t = X[:, 3] * 2 - X[:, 0] + np.random.RandomState(0).normal(0, 0.1, X.shape[0])
    Xf = X[:, :3]
    kw = dict(C=1.0, loss=loss, epsilon=0.1, intercept_scaling=scaling)
    ours = _quiet(LinearSVR(**kw, **TIGHT).fit, Xf, t)
    theirs = _quiet(SkSVR(**kw, dual=loss == "epsilon_insensitive", tol=1e-12,
                          max_iter=200000).fit, Xf, t)
    if loss == "epsilon_insensitive":      # not strictly convex: compare objectives
        def obj(est):
            w = np.append(est.coef_, est.intercept_[0] / scaling)
            r = np.maximum(0.0, np.abs(t - Xf @ est.coef_ - est.intercept_[0]) - 0.1)
            return 0.5 * w @ w + r.sum()
        # (at 1000 liblinear's dual stops at its cap, 12 % above: _compare's second case)
        _compare(obj(ours), obj(theirs), scaling == 1.0, obj(ours) - ours.dual_objective_)
    else:
        _close(ours.coef_, theirs.coef_)


# ---- hinge and epsilon-insensitive losses at a large intercept_scaling ---------------
#
# Pair steps (selection_ "pairs") against scikit-learn's liblinear dual (-s 3, -s 13),
# which stalls there: where it converges the objectives agree, otherwise ours is not
# larger and our duality gap certifies it.

BIG_SCALINGS = [100.0, 1000.0, 1e4]
SK_SWEEPS = 3000


def _sk_converged(fit, *args, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        est = fit(*args, **kw)
    return est, not any(issubclass(w.category, ConvergenceWarning) for w in caught)


def _compare(f_ours, f_theirs, converged, gap):
    assert gap <= 1e-6 * f_ours
    if converged:
        assert f_ours == pytest.approx(f_theirs, rel=1e-4)
    else:
        assert f_ours <= f_theirs * (1 + 1e-9) + 1e-9


@pytest.mark.parametrize("scaling", BIG_SCALINGS)
@pytest.mark.parametrize("data", ["iris", "digits", "a9a"])
def test_hinge_at_large_scaling_against_sklearn(data, scaling):
    X, y = DATA[data]()
    kw = dict(C=0.5, loss="hinge", intercept_scaling=scaling)
    ours = LinearSVC(**kw, **TIGHT).fit(X, y)
    theirs, converged = _sk_converged(SkSVC(**kw, dual=True, tol=1e-12, random_state=0,
                                            max_iter=SK_SWEEPS).fit, X, y)
    assert ours.converged_.all() and ours.selection_ == "pairs"
    f_ours = _ovr_objective(ours, X, y, 0.5, "hinge", None, None)
    f_theirs = _ovr_objective(theirs, X, y, 0.5, "hinge", None, None)
    _compare(f_ours, f_theirs, converged, f_ours - ours.dual_objective_.sum())


def _regression(data):
    X, y = DATA[data]()
    if data == "iris":
        return X[:, :3], X[:, 3] * 2 - X[:, 0] + np.random.RandomState(0).normal(0, 0.1, 150)
    if data == "digits":
        return X, y.astype(float)           # the digit as a number
    return X, np.asarray(y, float)          # a9a's labels, +-1


@pytest.mark.parametrize("scaling", BIG_SCALINGS)
@pytest.mark.parametrize("data", ["iris", "digits", "a9a"])
def test_epsilon_insensitive_at_large_scaling_against_sklearn(data, scaling):
    X, t = _regression(data)
    kw = dict(C=0.5, loss="epsilon_insensitive", epsilon=0.1, intercept_scaling=scaling)
    ours = LinearSVR(**kw, **TIGHT).fit(X, t)
    theirs, converged = _sk_converged(SkSVR(**kw, dual=True, tol=1e-12, random_state=0,
                                            max_iter=SK_SWEEPS).fit, X, t)
    assert ours.converged_ and ours.selection_ == "pairs"

    def obj(est):
        Xd = X.toarray() if sp.issparse(X) else X
        w = np.append(est.coef_, est.intercept_[0] / scaling)
        r = np.maximum(0.0, np.abs(t - Xd @ est.coef_ - est.intercept_[0]) - 0.1)
        return 0.5 * w @ w + 0.5 * r.sum()
    f_ours = obj(ours)
    assert f_ours == pytest.approx(ours.primal_objective_, rel=1e-9)
    _compare(f_ours, obj(theirs), converged, f_ours - ours.dual_objective_)


def test_crammer_singer_same_objective():
    X, y = _iris()
    ours = LinearSVC(C=0.5, multi_class="crammer_singer", **TIGHT).fit(X, y)
    theirs = _quiet(SkSVC(C=0.5, multi_class="crammer_singer", tol=1e-12,
                          max_iter=200000).fit, X, y)
    codes = np.searchsorted(np.unique(y), y)

    def obj(est):
        W = np.column_stack([est.coef_, est.intercept_])
        s = np.column_stack([X, np.ones(len(y))]) @ W.T
        margin = s + (np.arange(3) != codes[:, None]) - s[np.arange(len(y)), codes][:, None]
        return 0.5 * np.sum(W * W) + 0.5 * margin.max(axis=1).sum()
    assert obj(ours) == pytest.approx(obj(theirs), rel=1e-4)


# ---- the reported failing cases: converged, in few iterations -----------------------

# liblinear-official 2.50 on both: its dual solver stops at its cap of 300 sweeps
# ("reaching max number of iterations") and switches to its primal Newton solver, which
# takes 6 (-s 0) and 2 (-s 2) iterations.  scikit-learn runs the primal solvers directly.
LIBLINEAR_LR = 300 + 6
LIBLINEAR_SQ = 300 + 2


def test_reproduction_logistic_intercept_scaling_1e4():
    rng = np.random.RandomState(42)
    X = np.concatenate((rng.randn(100, 2) + [1, 1], rng.randn(100, 2)))
    y = [1] * 100 + [-1] * 100
    for selection in ("shrinking", "avsf", "uniform"):
        est = LogisticRegression(C=1e3, tol=1e-6, intercept_scaling=1e4,
                                 selection=selection).fit(X, y)
        assert est.converged_.all()
        np.testing.assert_allclose(est.coef_[0], [0.9275, 1.1256], atol=1e-4)
        assert est.intercept_[0] == pytest.approx(-1.0375, abs=1e-4)
        sk = SkLR(C=1e3, tol=1e-6, intercept_scaling=1e4, solver="liblinear").fit(X, y)
        assert est.n_iter_[0] <= 2 * sk.n_iter_[0] <= 2 * LIBLINEAR_LR


@pytest.mark.parametrize("seed", [1, 4, 8, 9, 13, 16])
def test_newton_route_returns_its_iterate(seed):
    """The reproduction's data at other seeds: the Newton route's weights were w(alpha),
    whose bias weight cancels to ~1/B of its terms, and the intercept came out at +3.5
    or -577 where scikit-learn has -1.15 (seeds 4, 13)."""
    rng = np.random.RandomState(seed)
    X = np.concatenate((rng.randn(100, 2) + [1, 1], rng.randn(100, 2)))
    y = [1] * 100 + [-1] * 100
    for ours, theirs in [
            (LogisticRegression(C=1e3, tol=1e-6, intercept_scaling=1e4),
             SkLR(C=1e3, tol=1e-12, max_iter=10000, intercept_scaling=1e4, solver="liblinear")),
            (LinearSVC(C=1e3, loss="squared_hinge", tol=1e-6, intercept_scaling=1e4),
             SkSVC(C=1e3, dual=False, tol=1e-12, max_iter=10000, intercept_scaling=1e4))]:
        ours.fit(X, y)
        _quiet(theirs.fit, X, y)
        assert ours.selection_ == "newton"
        got = np.r_[ours.coef_.ravel(), ours.intercept_]
        want = np.r_[theirs.coef_.ravel(), theirs.intercept_]
        np.testing.assert_allclose(got, want, atol=5e-3)


@pytest.mark.parametrize("seed", [4, 13])
@pytest.mark.parametrize("loss", ["logistic", "squared_hinge"])
def test_newton_route_certifies_its_iterate(seed, loss):
    """The Newton route once said converged with its check taken at w(alpha) (KKT
    violation 4.6 and 88 on these seeds) and a dual above the primal.  Its weights are
    certified by their own gap now: the primal recomputed here, the dual not above it,
    the gap within tol, and kkt_violation the largest entry of the primal's gradient."""
    rng = np.random.RandomState(seed)
    X = np.concatenate((rng.randn(100, 2) + [1, 1], rng.randn(100, 2)))
    y = np.array([1.0] * 100 + [-1.0] * 100)
    B, C, tol = 1e4, 1e3, 1e-6
    res = solve_linear(X, y, C, loss=loss, tol=tol, fit_intercept=True, intercept_scaling=B)
    assert res.selection == "newton" and res.converged
    v = np.r_[res.coef, res.intercept / B]
    m = y * (X @ res.coef + res.intercept)
    A = np.column_stack([X, np.full(len(y), B)])
    if loss == "logistic":
        losses, dl = np.logaddexp(0, -m), -y / (1 + np.exp(m))
    else:
        s = np.maximum(0, 1 - m)
        losses, dl = s * s, -2 * y * s
    primal = 0.5 * v @ v + C * losses.sum()
    grad = v + A.T @ (C * dl)
    assert res.primal_objective == pytest.approx(primal, rel=1e-12)
    assert res.dual_objective <= res.primal_objective
    assert (res.primal_objective - res.dual_objective) / primal <= tol
    # (the gradient cancels: recomputed from the returned weights it agrees to ~1e-4,
    # and to ~1e-6 absolute)
    assert res.kkt_violation == pytest.approx(np.abs(grad).max(), rel=1e-2, abs=1e-5)


def test_newton_route_says_when_it_stops_short():
    rng = np.random.RandomState(13)
    X = np.concatenate((rng.randn(100, 2) + [1, 1], rng.randn(100, 2)))
    y = [1] * 100 + [-1] * 100
    with pytest.warns(ConvergenceWarning, match="Newton"):
        est = LogisticRegression(C=1e3, tol=1e-6, intercept_scaling=1e4, max_iter=1).fit(X, y)
    assert est.selection_ == "newton" and not est.converged_.any()


@pytest.mark.parametrize("scaling", [100, 1000, 1e4])
def test_reproduction_squared_hinge_intercept_scaling(scaling):
    X = np.array([[2, 1], [3, 1], [1, 3], [2, 3]], float)
    y = np.array([0, 0, 1, 1])
    est = LinearSVC(C=4, loss="squared_hinge", intercept_scaling=scaling, tol=1e-10,
                    max_iter=100000).fit(X, y)
    assert est.converged_.all()
    assert est.n_iter_ <= 2 * LIBLINEAR_SQ
    assert est.n_iter_ <= 12          # measured: 3, 10 and 5 Newton iterations
    expected = {100: 0.47229, 1000: 0.47213, 1e4: 0.47213}[scaling]
    assert _ovr_objective(est, X, y, 4.0, "squared_hinge", None, None) == pytest.approx(
        expected, abs=1e-5)
