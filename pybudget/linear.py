"""Linear SVMs by dual coordinate descent: the functional API and the estimator."""
import time
import warnings
from dataclasses import dataclass

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.extmath import safe_sparse_dot
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from pybudget import _validation as V
from pybudget._linear import SELECTIONS, dcd_solve

LOSSES = ("hinge", "squared_hinge")


@dataclass
class LinearResult:
    """Outcome of one binary dual CD run (``solve_linear``).

    ``coef``/``intercept`` give the decision function ``X @ coef + intercept`` whose
    positive side is ``classes[1]``; ``alpha`` are the dual variables (one per row);
    ``n_iter`` counts sweeps, ``n_steps`` coordinate visits; objectives are those of
    the (bias-augmented) problem; ``kkt_violation`` is the exact maximal projected
    gradient over all variables at the end; ``time`` the optimisation time in seconds.
    """
    coef: np.ndarray
    intercept: float
    alpha: np.ndarray
    n_iter: int
    n_steps: int
    dual_objective: float
    primal_objective: float
    kkt_violation: float
    converged: bool
    time: float
    classes: np.ndarray = None
    preferences: np.ndarray = None


def check_linear_params(C, loss, selection, tol, max_iter, fit_intercept, intercept_scaling):
    C = V.positive("C", C)
    V.choice("loss", loss, LOSSES)
    V.choice("selection", selection, SELECTIONS)
    tol = V.positive("tol", tol)
    max_iter = V.positive_int("max_iter", max_iter)
    bias = V.positive("intercept_scaling", intercept_scaling) if fit_intercept else 0.0
    return C, tol, max_iter, bias


def dual_cd(X, y, cvec, *, loss, selection, tol, max_iter, bias, seed,
            alpha0=None, prefs0=None):
    """One binary problem on validated data: X canonical CSR, y ±1 floats, cvec the
    per-sample C (> 0).  Warm start from alpha0 (clipped to the box) and AVSF
    preferences prefs0 when given.  Returns a LinearResult (classes unset)."""
    n, d = X.shape
    squared = loss == "squared_hinge"
    if squared:
        upper = np.full(n, np.inf)
        diag = 0.5 / cvec
    else:
        upper = cvec
        diag = np.zeros(n)
    alpha = np.zeros(n) if alpha0 is None else np.clip(np.asarray(alpha0, float), 0.0, upper)
    w = np.zeros(d + 1)
    if alpha0 is not None:
        ay = alpha * y
        w[:d] = safe_sparse_dot(ay, X)
        w[d] = bias * ay.sum()
    prefs = np.ones(n) if prefs0 is None else np.array(prefs0, dtype=np.float64)
    t0 = time.perf_counter()
    out = dcd_solve(X, y, upper, diag, cvec, bias, alpha, w, prefs, SELECTIONS[selection],
                    tol, max_iter, seed, squared)
    elapsed = time.perf_counter() - t0
    wsq = float(w @ w)
    dual = float(alpha.sum() - 0.5 * wsq - 0.5 * np.dot(diag, alpha * alpha))
    primal = 0.5 * wsq + out["loss_sum"]
    return LinearResult(coef=w[:d].copy(), intercept=float(w[d] * bias), alpha=alpha,
                        n_iter=out["n_iter"], n_steps=out["n_steps"], dual_objective=dual,
                        primal_objective=primal, kkt_violation=out["kkt_violation"],
                        converged=out["converged"], time=elapsed, preferences=prefs)


def _solve_weighted(X, y, cvec, **kw):
    """dual_cd on the rows with positive weight (zero-weight rows do not exist for the
    problem); alpha is reported for every row (0 where the weight is 0)."""
    keep = cvec > 0
    if keep.all():
        return dual_cd(X, y, cvec, **kw)
    res = dual_cd(X[keep], y[keep], cvec[keep], **kw)
    alpha = np.zeros(y.shape[0])
    alpha[keep] = res.alpha
    res.alpha = alpha
    return res


def solve_linear(X, y, C=1.0, *, loss="hinge", selection="avsf", tol=0.1, max_iter=1000,
                 fit_intercept=False, intercept_scaling=1.0, sample_weight=None,
                 random_state=None):
    """Train a binary L2-regularised linear SVM by dual coordinate descent.

    Minimises ``½‖w‖² + C Σ_i s_i loss(y_i (w·x_i + b))`` with ``loss`` "hinge" or
    "squared_hinge"; with ``fit_intercept`` the bias is a regularised extra weight on
    a constant feature of value ``intercept_scaling`` (liblinear's ``-B``).
    ``selection``: "uniform", "shrinking" (liblinear) or "avsf".  ``y`` takes any two
    label values; the positive side is the larger one (``result.classes[1]``).
    Returns a :class:`LinearResult`; warns with ConvergenceWarning when ``max_iter``
    sweeps did not reach ``tol``.
    """
    C, tol, max_iter, bias = check_linear_params(C, loss, selection, tol, max_iter,
                                                 fit_intercept, intercept_scaling)
    X = V.as_csr(X)
    classes, ypm = V.binary_labels(y, X.shape[0])
    cvec = C * V.sample_weights(sample_weight, X.shape[0])
    res = _solve_weighted(X, ypm, cvec, loss=loss, selection=selection, tol=tol,
                          max_iter=max_iter, bias=bias, seed=V.seed_from(random_state))
    res.classes = classes
    if not res.converged:
        warnings.warn(f"dual CD reached max_iter={max_iter} sweeps before tol={tol} "
                      f"(final KKT violation {res.kkt_violation:.3g})", ConvergenceWarning)
    return res


class LinearSVC(ClassifierMixin, BaseEstimator):
    """Linear support vector classifier trained by dual coordinate descent.

    Like scikit-learn's ``LinearSVC`` (liblinear), with a choice of coordinate
    selection: ``"avsf"`` (adaptive variable selection frequencies), ``"shrinking"``
    (liblinear's hard shrinking) or ``"uniform"``.  More than two classes are handled
    one-vs-rest.  ``C_i = C * class_weight[y_i] * sample_weight_i``.

    Attributes: ``classes_``, ``coef_`` (n_problems, n_features), ``intercept_``,
    ``n_iter_`` (largest sweep count), ``n_steps_`` (total coordinate steps),
    ``dual_objective_``, ``kkt_violation_`` and ``converged_`` (one per problem),
    ``fit_time_`` (optimisation seconds, summed).
    """

    def __init__(self, C=1.0, *, loss="hinge", selection="avsf", tol=0.1, max_iter=1000,
                 fit_intercept=True, intercept_scaling=1.0, class_weight=None,
                 random_state=None, verbose=0):
        self.C = C
        self.loss = loss
        self.selection = selection
        self.tol = tol
        self.max_iter = max_iter
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.class_weight = class_weight
        self.random_state = random_state
        self.verbose = verbose

    def fit(self, X, y, sample_weight=None):
        C, tol, max_iter, bias = check_linear_params(
            self.C, self.loss, self.selection, self.tol, self.max_iter,
            self.fit_intercept, self.intercept_scaling)
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=[np.float64, np.float32])
        check_classification_targets(y)
        X = V.canonical_csr(X)
        classes, codes = V.encode_labels(y, X.shape[0])
        cvec = C * V.sample_weights(sample_weight, X.shape[0]) * self._class_weights(classes, codes)[codes]
        seed = V.seed_from(self.random_state)
        problems = [1] if classes.shape[0] == 2 else range(classes.shape[0])
        results = []
        for k in problems:
            ypm = np.where(codes == k, 1.0, -1.0)
            res = _solve_weighted(X, ypm, cvec, loss=self.loss, selection=self.selection,
                                  tol=tol, max_iter=max_iter, bias=bias,
                                  seed=(seed + k) % 2**64)
            if self.verbose:
                print(f"[pybudget] class {classes[k]!r}: {res.n_iter} sweeps, "
                      f"{res.n_steps} steps, dual {res.dual_objective:.6g}, "
                      f"KKT {res.kkt_violation:.3g}, {res.time:.3f}s")
            results.append(res)
        self.classes_ = classes
        self.coef_ = np.vstack([r.coef for r in results])
        self.intercept_ = np.array([r.intercept for r in results])
        self.n_iter_ = max(r.n_iter for r in results)
        self.n_steps_ = sum(r.n_steps for r in results)
        self.dual_objective_ = np.array([r.dual_objective for r in results])
        self.kkt_violation_ = np.array([r.kkt_violation for r in results])
        self.converged_ = np.array([r.converged for r in results])
        self.fit_time_ = sum(r.time for r in results)
        if not self.converged_.all():
            warnings.warn(f"LinearSVC reached max_iter={max_iter} sweeps before tol={tol}; "
                          "increase max_iter", ConvergenceWarning)
        return self

    def _class_weights(self, classes, codes):
        """Weight per class (index-aligned with classes) from class_weight."""
        cw = self.class_weight
        if cw is None:
            return np.ones(classes.shape[0])
        if isinstance(cw, str):
            if cw != "balanced":
                raise ValueError(f"class_weight must be None, 'balanced' or a dict, got {cw!r}")
            counts = np.bincount(codes, minlength=classes.shape[0])
            return codes.shape[0] / (classes.shape[0] * counts)
        if not isinstance(cw, dict):
            raise TypeError(f"class_weight must be None, 'balanced' or a dict, got {cw!r}")
        out = np.ones(classes.shape[0])
        known = set(classes.tolist())
        for label, weight in cw.items():
            if label not in known:
                raise ValueError(f"class_weight has label {label!r}, not among the classes "
                                 f"{classes.tolist()}")
            out[np.searchsorted(classes, label)] = V.positive(f"class_weight[{label!r}]", weight)
        return out

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def decision_function(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", reset=False,
                          dtype=[np.float64, np.float32])
        scores = safe_sparse_dot(X, self.coef_.T, dense_output=True) + self.intercept_
        return scores.ravel() if scores.shape[1] == 1 else scores

    def predict(self, X):
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(np.intp)]
        return self.classes_[np.argmax(scores, axis=1)]
