"""Linear support vector regression by dual coordinate descent: the estimator."""
import time
import warnings

import numpy as np
from sklearn.base import RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.extmath import safe_sparse_dot

from pybudget._core import _validation as V
from pybudget._core._estimator import SVMBase
from pybudget._core._progress import report
from pybudget.linear.plan import Rows, plan_for
from pybudget.linear.problem import (REGRESSION_LOSSES, check_linear_params, check_tol_rule,
                                     next_start, solve_binary, unconverged)


class LinearSVR(RegressorMixin, SVMBase):
    """Linear support vector regression trained by dual coordinate descent.

    Minimises ``½‖w‖² + C Σ_i s_i loss(y_i - w·x_i - b)`` (liblinear ``-s 13`` for
    ``loss="epsilon_insensitive"``, ``max(0, |r| - ε)``; ``-s 12`` for
    ``"squared_epsilon_insensitive"``, its square) with the same coordinate selection
    strategies as :class:`pybudget.LinearSVC`.  Like scikit-learn's ``LinearSVR``
    (liblinear), the intercept is a regularised weight on a constant feature of value
    ``intercept_scaling``.

    Parameters
    ----------
    C : float, default=1.0
        Cost of the loss; > 0.
    epsilon : float, default=0.0
        Half-width of the insensitive zone (liblinear's ``-p``); >= 0.
    loss : {"epsilon_insensitive", "squared_epsilon_insensitive"}
    selection : {"auto", "avsf", "shrinking", "uniform"}, default="auto"
        Coordinate selection, as in :class:`pybudget.LinearSVC` (``"shrinking"`` is
        liblinear's rule for this problem: variables at 0 or at a bound are dropped).
    tol : float, default=0.1
        Stop when the largest violation of the optimality conditions (the distance of
        0 from the subdifferential of the dual objective, over all variables) is below
        ``tol`` times its value at the zero start, ``max_i |y_i| - epsilon``: rescaling
        the targets does not change when the fit stops (liblinear's ``-s 12/13``
        tolerance is relative too, to the first sweep's violations).
        ``kkt_violation_`` is reported in the units of the targets.  With
        ``tol_rule="liblinear"``, ``tol`` is relative to the first sweep's L1 norm of
        the violations instead, see there.  On the primal Newton route
        (``selection_ == "newton"``) ``tol`` is the relative duality gap, unscaled.
    tol_rule : {"max", "liblinear"}, default="max"
        The stopping rule.  "max": the largest violation as described under ``tol``,
        confirmed by an exact pass over all variables.  "liblinear": liblinear's own
        rule for ``-s 11/12/13`` -- stop when a sweep's L1 norm of the violations of the
        variables it visits is at most ``tol`` times the first sweep's, without an exact
        confirmation (``kkt_violation_`` is still the exact largest violation at the
        end).  Per ``selection``: "shrinking" is liblinear's solver exactly (the sum
        over the active set; when it is met on a shrunk set, every variable comes back
        and the rule must hold again on a sweep over all of them); "uniform" sums over
        every variable of each sweep; "avsf" over the sweep's schedule, and as with
        "max" a sweep that meets the rule is confirmed by one with uniform preferences.
        A sum over a sweep tolerates many small violations where "max" tolerates none
        above ``tol``: at the same ``tol`` the two stop at different points
        (docs/benchmarks.md section 8 compares both with liblinear).
        The first sweep is the first of each fit (of a warm start too).  When
        ``max_iter`` stops the run first, ``converged_`` is False.
    max_iter : int, default=1000
        Cap on sweeps; a ConvergenceWarning says when it was reached.
    fit_intercept : bool, default=True
    intercept_scaling : float, default=1.0
    random_state : int, RandomState or None
        Seeds the sweep order and AVSF's schedules.
    warm_start : bool, default=False
        Refit on the same data from the previous solution, rescaled to the new C.
    n_jobs : int or None, default=None
        Threads the problem may use (None: 1, -1: every core), as in
        :class:`pybudget.LinearSVC`: a team where one is measured to pay, else one
        thread.
    verbose : int, default=0

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : ndarray of shape (1,)
    n_iter_ : int
        Sweeps.
    n_steps_ : int
        Coordinate steps.
    dual_objective_, primal_objective_, kkt_violation_ : float
    converged_ : bool
    selection_ : str
        The strategy that ran ("auto" resolved; "pairs" or "newton" for a dominant bias
        column, whatever ``selection`` says, see
        :func:`~pybudget.linear.plan.bias_dominated`).
    fit_time_ : float
        Optimisation seconds.
    """

    def __init__(self, C=1.0, *, epsilon=0.0, loss="epsilon_insensitive", selection="auto",
                 tol=0.1, tol_rule="max", max_iter=1000, fit_intercept=True,
                 intercept_scaling=1.0, random_state=None, warm_start=False, n_jobs=None,
                 verbose=0):
        self.C = C
        self.epsilon = epsilon
        self.loss = loss
        self.selection = selection
        self.tol = tol
        self.tol_rule = tol_rule
        self.max_iter = max_iter
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.random_state = random_state
        self.warm_start = warm_start
        self.n_jobs = n_jobs
        self.verbose = verbose

    def fit(self, X, y, sample_weight=None):
        C, tol, max_iter, bias = check_linear_params(
            self.C, self.loss, self.selection, self.tol, self.max_iter,
            self.fit_intercept, self.intercept_scaling, REGRESSION_LOSSES)
        epsilon = V.nonnegative("epsilon", self.epsilon)
        tol_rule = check_tol_rule(self.tol_rule, self.loss)
        verbose = V.verbosity(self.verbose)
        V.boolean("warm_start", self.warm_start)
        n_jobs = V.n_jobs(self.n_jobs)
        t_fit = time.perf_counter()
        X, y = self._training_data(X, y)
        y = V.regression_targets(y, X.shape[0])
        cvec = C * V.sample_weights(sample_weight, X.shape[0])
        prev = getattr(self, "_warm", None) if self.warm_start else None
        start = None
        if (prev is not None and prev["shape"] == X.shape
                and np.array_equal(prev["zero_weight"], cvec == 0)):
            start = next_start(prev["state"], prev["earlier"], C, "extrapolate")
        rows = Rows.canonical(X, bias)
        how = plan_for(rows, cvec, self.loss, self.selection, n_jobs, tol_rule)
        res = solve_binary(rows, y, cvec, C, how, loss=self.loss, tol=tol, max_iter=max_iter,
                           seed=V.seed_from(self.random_state), start=start,
                           verbose=verbose, epsilon=epsilon, tol_rule=tol_rule)
        if verbose:
            report(f"{res.n_iter} sweeps, {res.n_steps} steps, dual "
                   f"{res.dual_objective:.6g}, KKT {res.kkt_violation:.3g}, "
                   f"{res.time:.3f}s", time.perf_counter() - t_fit)
        self.intercept_ = np.array([res.intercept])
        self.n_iter_ = res.n_iter
        self.n_steps_ = res.n_steps
        self.dual_objective_ = res.dual_objective
        self.primal_objective_ = res.primal_objective
        self.kkt_violation_ = res.kkt_violation
        self.converged_ = res.converged
        self.selection_ = res.selection
        self.fit_time_ = res.time
        self._warm = {"state": res.state, "shape": X.shape, "zero_weight": cvec == 0,
                      "earlier": prev["state"] if start is not None else None}
        self.coef_ = res.coef
        if not res.converged:
            warnings.warn(unconverged("LinearSVR", res.selection, max_iter, tol),
                          ConvergenceWarning)
        return self

    def predict(self, X):
        X = self._prediction_data(X)
        return safe_sparse_dot(X, self.coef_, dense_output=True) + self.intercept_[0]
