"""Crammer & Singer's multi-class linear SVM (liblinear ``-s 4``) by dual coordinate
descent on blocks: one block of K dual variables per example, on the same seam and with
the same selection strategies as the binary problems (``_dcd_cs.pxd``)."""
import time
import warnings
from dataclasses import dataclass

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from pybudget._core import _validation as V
from pybudget._core._csr import rows_combination
from pybudget.linear._dual_cd import SELECTIONS, DcdOptions, DcdState, dcd_solve, sum_of_squares
from pybudget.linear.plan import Rows, resolve_selection
from pybudget.linear.problem import LinearResult, SolverState, check_linear_params


@dataclass
class CrammerSingerResult(LinearResult):
    """Outcome of one Crammer–Singer dual coordinate descent run.

    The decision function of class ``classes[m]`` is ``X @ coef[m] + intercept[m]``.

    Attributes
    ----------
    coef : ndarray of shape (n_classes, n_features)
        One weight vector per class.
    intercept : ndarray of shape (n_classes,)
        Biases (zeros without ``fit_intercept``).
    alpha : ndarray of shape (n_samples, n_classes)
        Dual variables: ``alpha[i, m] <= C_i [m == y_i]``, each row sums to 0.
    n_iter : int
        Number of sweeps.
    n_steps : int
        Number of block visits.
    dual_objective, primal_objective : float
        Objectives of the (bias-augmented) problem; the dual in its maximisation form
        ``Σ_i alpha[i, y_i] - ½ Σ_m ‖w_m‖²``, so the duality gap is primal - dual.
    kkt_violation : float
        Exact largest block violation ``max_m G_m - min_{m below its bound} G_m``.
    converged : bool
        Whether the run reached ``tol`` within ``max_iter`` sweeps.
    time : float
        Optimisation time in seconds.
    classes : ndarray of shape (n_classes,)
        The labels, in the order of the rows of ``coef``.
    state : SolverState
        What a warm start from this solution carries.
    selection : str
        The strategy that ran ("auto" resolved).
    C : float
        The C of this run.
    """


def project_blocks(alpha, codes, cvec):
    """Euclidean projection of each row of alpha (n, K) onto its block's feasible set
    {a_m <= C_i [m == y_i], Σ_m a_m = 0}.

    In u = a - U the set is {u <= 0, Σ u = -C_i}, whose projection is
    u = min(0, v - tau) with tau = (Σ of the r smallest v + C_i) / r for the largest r
    with v_(r) < tau (the simplex projection's argument)."""
    n, K = alpha.shape
    upper = np.zeros((n, K))
    upper[np.arange(n), codes] = cvec
    v = alpha - upper
    z = np.sort(v, axis=1)
    r = np.arange(1, K + 1)
    tau = (np.cumsum(z, axis=1) + cvec[:, None]) / r
    rstar = np.max(np.where(z < tau, r, 1), axis=1)
    t = tau[np.arange(n), rstar - 1]
    return upper + np.minimum(0.0, v - t[:, None])


def cs_dual_cd(rows, codes, n_classes, cvec, *, selection, tol, max_iter, seed,
               start=None, verbose=0, C=1.0):
    """One Crammer–Singer problem on checked rows (``linear.plan.Rows``), codes the
    class index of each row (0..n_classes-1), cvec the per-sample C (> 0).  ``start`` is
    a SolverState whose alpha (n, n_classes) is projected onto the constraints.  Returns
    a CrammerSingerResult (classes unset)."""
    X, bias = rows.X, rows.bias
    n, d = X.shape
    K = n_classes
    V.linear_weights_fit(K, d)
    W = np.zeros((d + 1, K))       # feature-major, as the solver keeps it (liblinear's)
    if start is not None:
        with np.errstate(over="ignore", invalid="ignore"):   # checked just below
            alpha = project_blocks(np.asarray(start.alpha, dtype=float), codes, cvec)
            rows_combination(X, alpha, W[:d])
            W[d] = bias * alpha.sum(axis=0)
        if not (np.isfinite(W).all() and np.isfinite(alpha).all()):
            start = None           # a start rescaled to a far larger C can overflow
            W[:] = 0.0
    if start is None:
        start = SolverState.fresh(np.zeros((n, K)), C)
        alpha = np.zeros((n, K))
    alpha = np.ascontiguousarray(alpha)
    w = W.reshape(-1)              # a view: the solver updates W in place
    a = alpha.reshape(-1)
    prefs, perm = start.prefs.copy(), start.perm.copy()
    y = codes.astype(np.float64)
    t0 = time.perf_counter()
    st = DcdState(a, w, prefs, perm, start.n_active, start.dref)
    out = dcd_solve(X, y, cvec, np.zeros(n), cvec, bias, st, DcdOptions(
        selection=SELECTIONS[selection], tol=tol, max_iter=max_iter, seed=seed,
        problem="cs", n_classes=K, verbose=verbose))
    elapsed = time.perf_counter() - t0
    if not np.isfinite(W).all():
        raise ValueError(f"C={C:g} is too large for this data: the weights overflowed")
    with np.errstate(over="ignore", invalid="ignore"):
        wsq = sum_of_squares(w)      # np.sum(W * W) without its temporary
        dual = float(alpha[np.arange(n), codes].sum() - 0.5 * wsq)
        primal = 0.5 * wsq + out.loss_sum
    state = SolverState(alpha, prefs, perm, st.n_active, st.dref, C)
    return CrammerSingerResult(
        coef=W[:d].T.copy(), intercept=W[d] * bias, alpha=alpha, n_iter=out.n_iter,
        n_steps=out.n_steps, dual_objective=dual, primal_objective=primal,
        kkt_violation=out.kkt_violation, converged=out.converged and max_iter > 0,
        time=elapsed,
        state=state)


def solve_cs_rows(rows, codes, n_classes, cvec, C, *, selection, start=None, **kw):
    """cs_dual_cd on the rows of positive weight (``start`` refers to those rows only)
    after resolving "auto" (``linear.plan.resolve_selection``: hard shrinking or AVSF);
    alpha is reported for every row (0 where the weight is 0)."""
    keep = cvec > 0
    if not keep.all():
        rows, codes, cvec = rows.take(keep), codes[keep], cvec[keep]
    used = resolve_selection(selection, rows, cvec)
    res = cs_dual_cd(rows, codes, n_classes, cvec, selection=used, start=start, C=C, **kw)
    res.selection, res.C = used, C
    if not keep.all():
        alpha = np.zeros((keep.shape[0], n_classes))
        alpha[keep] = res.alpha
        res.alpha = alpha
    return res


def solve_crammer_singer(X, y, C=1.0, *, selection="auto", tol=0.1, max_iter=1000,
                         fit_intercept=False, intercept_scaling=1.0, sample_weight=None,
                         random_state=None, warm_start=None):
    """Train Crammer & Singer's multi-class linear SVM by dual coordinate descent.

    Minimises ``½ Σ_m ‖w_m‖² + C Σ_i s_i (max_m (w_m·x_i + [m ≠ y_i]) - w_{y_i}·x_i)``
    (the multi-class hinge, >= 0 as m = y_i is in the max) jointly over the K classes
    (liblinear ``-s 4``); the dual has one block of K variables per example, which each
    step solves exactly.  With ``fit_intercept`` each class's bias is a regularised
    extra weight on a constant feature of value ``intercept_scaling``.

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Training data.
    y : array-like of shape (n_samples,)
        Labels, at least two classes.
    C : float, default=1.0
        Regularisation parameter, > 0.
    selection : {"auto", "uniform", "shrinking", "avsf"}, default="auto"
        Block selection, as for :func:`~pybudget.solve_linear` ("shrinking" is
        liblinear's two-level shrinking of examples and of classes inside a block).
    tol : float, default=0.1
        Stopping tolerance on the largest block violation.
    max_iter : int, default=1000
        Maximum number of sweeps.
    fit_intercept : bool, default=False
        Whether to fit (regularised) biases.
    intercept_scaling : float, default=1.0
        Value of the constant bias feature; used only with ``fit_intercept``.
    sample_weight : array-like of shape (n_samples,), optional
        Weights s_i >= 0 per row; rows of weight 0 are not part of the problem.
    random_state : None, int, numpy.random.RandomState or numpy.random.Generator
        Seed of the solver's random order.
    warm_start : CrammerSingerResult or SolverState, optional
        A previous solution on the same rows and classes to start from; its dual
        variables are projected onto this problem's constraints.

    Returns
    -------
    CrammerSingerResult
        Solution and run statistics.

    Warns
    -----
    ConvergenceWarning
        When ``max_iter`` sweeps did not reach ``tol``.

    See Also
    --------
    LinearSVC : ``multi_class="crammer_singer"`` fits this problem.
    """
    C, tol, max_iter, bias = check_linear_params(C, "hinge", selection, tol, max_iter,
                                                 fit_intercept, intercept_scaling)
    X = V.as_csr(X)
    classes, codes = V.encode_labels(y, X.shape[0])
    K = classes.shape[0]
    cvec = C * V.sample_weights(sample_weight, X.shape[0])
    start = getattr(warm_start, "state", warm_start)
    if start is not None:
        keep = int(np.count_nonzero(cvec > 0))
        if not isinstance(start, SolverState) or np.shape(start.alpha) != (keep, K):
            raise ValueError(f"warm_start must be a result or state of a run on the same "
                             f"{keep} rows (of positive weight) and {K} classes")
    res = solve_cs_rows(Rows.canonical(X, bias), codes, K, cvec, C, selection=selection,
                        tol=tol, max_iter=max_iter, seed=V.seed_from(random_state),
                        start=start)
    res.classes = classes
    if not res.converged:
        warnings.warn(f"dual CD reached max_iter={max_iter} sweeps before tol={tol} "
                      f"(final KKT violation {res.kkt_violation:.3g})", ConvergenceWarning)
    return res
