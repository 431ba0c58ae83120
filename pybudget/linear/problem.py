"""Linear SVMs by dual coordinate descent, the problem and solver layer: the losses' names
(their duals: ``linear.losses``), the parameters' checks, the start state of a
warm start, the per-row costs (class and sample weights) and the solvers of one binary
problem (``solve_binary``, which follows a ``linear.plan.Plan``, and the public
``solve_linear``).  The estimators (``svm``, ``svr``, ``logistic``) and the cluster
(``pybudget.dask``) are built on it; it imports none of them."""
import time
import warnings
from dataclasses import dataclass

import numpy as np

from pybudget._core import _validation as V
from pybudget._core._csr import rows_combination
from pybudget.linear._dual_cd import (PAIRS, SELECTIONS, TOL_RULES, DcdOptions, DcdOutcome,
                                      DcdState, dcd_solve, sum_of_squares)
from pybudget.linear.losses import LOSS, PROBLEM_OF
from pybudget.linear.plan import Rows, plan_for
from pybudget.linear.primal import primal_newton

SELECTION_CHOICES = (*SELECTIONS, "auto")
MULTI_CLASS = ("ovr", "crammer_singer")

LOSSES = ("hinge", "squared_hinge")                                   # classification
REGRESSION_LOSSES = ("epsilon_insensitive", "squared_epsilon_insensitive")
LOGISTIC_LOSSES = ("logistic",)                                       # probabilistic
TOL_RULE_CHOICES = tuple(TOL_RULES)    # ("max", "liblinear")


@dataclass
class LinearResult:
    """Outcome of one binary dual coordinate descent run.

    Returned by :func:`solve_linear` and, one per C, by :func:`~pybudget.linear_path`.
    The decision function is ``X @ coef + intercept``; its positive side is
    ``classes[1]``.

    Attributes
    ----------
    coef : ndarray of shape (n_features,)
        Weight vector.
    intercept : float
        Bias (0.0 without ``fit_intercept``).
    alpha : ndarray of shape (n_samples,)
        Dual variables, one per row.
    n_iter : int
        Number of sweeps.
    n_steps : int
        Number of coordinate visits.
    dual_objective, primal_objective : float
        Objectives of the (bias-augmented) problem.
    kkt_violation : float
        Exact maximal projected gradient over all variables at the end.
    converged : bool
        Whether the run reached ``tol`` within ``max_iter`` sweeps.
    time : float
        Optimisation time in seconds.
    classes : ndarray of shape (2,)
        The two labels; ``classes[1]`` is the positive side.
    state : SolverState
        What a warm start from this solution carries (used by ``linear_path``).
    selection : str
        The strategy that ran ("auto" resolved).
    C : float
        The C of this run.
    threads : int
        Threads that solved it (a team where ``n_jobs`` allowed one and it pays, else 1).

    See Also
    --------
    solve_linear, linear_path
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
    state: "SolverState" = None
    selection: str = None  # the strategy that ran ("auto" resolved)
    C: float = None
    threads: int = 1


def check_linear_params(C, loss, selection, tol, max_iter, fit_intercept, intercept_scaling,
                        losses=LOSSES):
    C = V.positive("C", C)
    V.choice("loss", loss, losses)
    V.choice("selection", selection, SELECTION_CHOICES)
    tol = V.positive("tol", tol)
    # 0 is accepted, as scikit-learn does: no sweep, the start returned with a warning
    max_iter = V.positive_int("max_iter", max_iter, minimum=0)
    fit_intercept = V.boolean("fit_intercept", fit_intercept)
    bias = V.positive("intercept_scaling", intercept_scaling) if fit_intercept else 0.0
    return C, tol, max_iter, bias


def check_tol_rule(tol_rule, loss):
    """The stopping rule: "max" for every loss, "liblinear" (L1 norm of the sweep's
    violations relative to the first sweep's) for the regression losses only."""
    V.choice("tol_rule", tol_rule, TOL_RULE_CHOICES)
    if tol_rule != "max" and loss not in REGRESSION_LOSSES:
        raise ValueError(f"tol_rule={tol_rule!r} is liblinear's rule for regression "
                         f"(-s 11/12/13): it needs a regression loss "
                         f"{REGRESSION_LOSSES}, got loss={loss!r}; use tol_rule='max'")
    return tol_rule


@dataclass
class SolverState:
    """What a warm start carries from one C to the next: dual variables, AVSF
    preferences and reference gain, and the hard-shrinking partition (rows that
    shrinking would drop are at the end of perm, after the first n_active)."""
    alpha: np.ndarray
    prefs: np.ndarray
    perm: np.ndarray
    n_active: int
    dref: float
    C: float

    @classmethod
    def fresh(cls, alpha, C):
        """alpha with a fresh strategy state (uniform preferences, everything active)."""
        n = alpha.shape[0]
        return cls(alpha, np.ones(n), np.arange(n, dtype=np.int32), n, 0.0, C)

    def rescaled(self, C_new, carry="alpha"):
        """Start for C_new: alpha scaled by C_new/C (clipped later to the new box);
        with carry="alpha" the strategy state starts fresh, with "all" it is kept."""
        alpha = self.alpha * (C_new / self.C)
        if carry == "alpha":
            return SolverState.fresh(alpha, C_new)
        # The reference gain scales with the step sizes, i.e. with C squared.
        return SolverState(alpha, self.prefs.copy(), self.perm.copy(), self.n_active,
                           self.dref * (C_new / self.C) ** 2, C_new)

    def extrapolated(self, earlier, C_new):
        """Start for C_new on the line through the solutions at earlier.C and self.C
        (the dual solution path is piecewise linear in C); fresh strategy state."""
        alpha = self.alpha + (self.alpha - earlier.alpha) * ((C_new - self.C)
                                                            / (self.C - earlier.C))
        return SolverState.fresh(alpha, C_new)


def next_start(state, earlier, C, carry):
    """The warm start for C after the solution `state` (and `earlier`, the one before
    it, or None): None for carry="none"; "extrapolate" extrapolates when
    earlier.C < state.C < C and otherwise rescales like "alpha"."""
    if state is None or carry == "none":
        return None
    if carry == "extrapolate":
        if earlier is not None and earlier.C < state.C < C:
            return state.extrapolated(earlier, C)
        carry = "alpha"
    return state.rescaled(C, carry)


def dual_cd(rows, y, cvec, plan, *, loss, tol, max_iter, seed, start=None, verbose=0,
            C=1.0, epsilon=0.0, tol_rule="max"):
    """One problem on checked rows (``solve_binary``'s arguments), every cost C_i > 0
    (kept in the returned state with the scalar ``C``).  ``start`` is a SolverState to
    warm-start from (its alpha is clipped to the box; for the logistic loss strictly
    inside it).  Returns a LinearResult whose ``state`` continues the run."""
    X, bias = rows.X, rows.bias
    n, d = X.shape
    V.linear_weights_fit(1, d)
    selection = plan.selection
    problem, squared = PROBLEM_OF[loss]
    table = LOSS[loss]
    if squared:
        upper = np.full(n, np.inf)
        diag = 0.5 / cvec
    else:
        upper = cvec
        diag = np.zeros(n)
    # svm: alpha in [0, U], w = sum alpha_i y_i x_i; svr: beta in [-U, U], w = sum beta_i x_i;
    # lr: alpha in (0, U) strictly (the entropy's logs), w as for svm
    lower = table.lower(upper)
    if problem == "lr":
        # liblinear's start doubles as the margin that keeps a warm start strictly
        # inside the box.
        lower = table.start_inside(upper)
        upper = upper - lower
    w = np.zeros(d + 1)
    if start is not None:
        with np.errstate(over="ignore", invalid="ignore"):   # checked just below
            ay = np.clip(start.alpha, lower, upper) * (1.0 if problem == "svr" else y)
            rows_combination(X, ay[:, None], w[:d, None])
            w[d] = bias * ay.sum()
        if not np.isfinite(w).all():
            # A start rescaled to a far larger C can overflow: start cold instead.
            start = None
            w[:] = 0.0
    fresh = start is None
    if fresh:
        start = SolverState.fresh(np.zeros(n), C)
        if problem == "lr":
            rows_combination(X, (lower * y)[:, None], w[:d, None])
            w[d] = bias * np.sum(lower * y)
    # A fresh state's arrays are this run's own: clipped and updated in place, not copied.
    alpha = np.clip(start.alpha, lower, upper, out=start.alpha if fresh else None)
    comp = None
    if problem == "lr":
        upper = cvec
        comp = upper - alpha     # C_i - alpha_i, kept exact by the solver from here
    prefs, perm = ((start.prefs, start.perm) if fresh
                   else (start.prefs.copy(), start.perm.copy()))
    n_active, dref = start.n_active, start.dref
    if problem == "svr" and tol_rule == "max" and selection != "newton":
        # (the liblinear rule is relative to the first sweep already, and the Newton
        # route's tol is a relative gap)
        tol = tol * regression_tol_scale(y, epsilon)
    if selection == "pairs":
        # A step on z_i moves the bias term of every margin by bias^2 dz_i, and dz_i is
        # a multiple of z_i's ulp: below about bias^2 ulp(max C_i) the violation is
        # round-off that no step can reduce.
        tol = max(tol, 2.0 * np.finfo(np.float64).eps * bias * bias * float(cvec.max()))
    t0 = time.perf_counter()
    if selection == "newton":
        newton = primal_newton(X, y, cvec, loss=loss, bias=bias, tol=tol,
                               max_iter=max_iter, epsilon=epsilon, n_threads=plan.threads)
        alpha, comp, w = newton["alpha"], newton["comp"], newton["w"]
        threads = newton["threads"]
        prefs, perm, n_active, dref = np.ones(n), np.arange(n, dtype=np.int32), n, 0.0
        out = DcdOutcome(n_iter=newton["n_iter"], n_steps=0, converged=newton["converged"],
                         kkt_violation=newton["kkt_violation"],
                         loss_sum=newton["loss_sum"])
    else:
        code = PAIRS if selection == "pairs" else SELECTIONS[selection]
        st = DcdState(alpha, w, prefs, perm, n_active, dref, comp)
        out = dcd_solve(X, y, upper, diag, cvec, bias, st, DcdOptions(
            selection=code, tol=tol, max_iter=max_iter, seed=seed, squared=squared,
            problem=problem, epsilon=epsilon, tol_rule=TOL_RULES[tol_rule],
            n_threads=plan.threads, chunk=plan.chunk, verbose=verbose))
        n_active, dref = st.n_active, st.dref
        threads = plan.threads if out.combines is not None else 1     # (a team ran)
    elapsed = time.perf_counter() - t0
    if not np.isfinite(w).all():
        raise ValueError(f"C={C:g} is too large for this data: the weights overflowed")
    # Plain reductions, not BLAS: a BLAS call can wake (multi-threaded) OpenBLAS workers
    # that spin for a while and slow the next solve on a busy machine.
    with np.errstate(over="ignore", invalid="ignore"):   # inf at absurd C, e.g. 1e308
        wsq = sum_of_squares(w)      # np.sum(w * w) without its temporary
        if problem == "lr":
            # the maximised dual, equal to the primal at the optimum (linear.losses)
            dual = -float(0.5 * wsq + table.entropy(alpha, comp, cvec))
        else:
            linear = table.linear_term(y, alpha, epsilon)
            dual = float(linear - 0.5 * wsq - 0.5 * np.sum(diag * alpha * alpha))
        primal = 0.5 * wsq + out.loss_sum
    if selection == "newton":        # (the iterate's own pair: primal_newton's docstring)
        dual, primal = newton["dual"], newton["primal"]
    state = SolverState(alpha, prefs, perm, n_active, dref, C)
    return LinearResult(coef=w[:d], intercept=float(w[d] * bias), alpha=alpha,
                        n_iter=out.n_iter, n_steps=out.n_steps, dual_objective=dual,
                        primal_objective=primal, kkt_violation=out.kkt_violation,
                        converged=out.converged and max_iter > 0, time=elapsed,
                        state=state, threads=threads)


def unconverged(name, selection, max_iter, tol):
    """The ConvergenceWarning's text for a fit that stopped above ``tol``."""
    if selection == "newton":
        return (f"{name}'s primal Newton solver stopped with a relative duality gap above "
                f"tol={tol} (max_iter={max_iter} iterations, or no further progress)")
    return f"{name} reached max_iter={max_iter} sweeps before tol={tol}; increase max_iter"


def regression_tol_scale(y, epsilon):
    """The unit of regression's ``tol``: the largest violation at beta = 0,
    max_i |y_i| - epsilon (1.0 when beta = 0 is optimal).  A tolerance relative to it
    does not depend on the units of the targets, as liblinear's -s 11/12/13 tolerance
    (relative to its first sweep) does not."""
    ref = float(np.max(np.abs(y))) - epsilon if y.size else 0.0
    return ref if ref > 0 else 1.0


def solve_binary(rows, y, cvec, C, plan, *, loss, tol, max_iter, seed, start=None,
                 verbose=0, epsilon=0.0, tol_rule="max"):
    """Solve one binary problem (or one linear SVR) as ``plan`` says.

    The one-problem solver every estimator, grid and cluster worker calls, below the
    public checks: ``rows`` a :class:`~pybudget.linear.plan.Rows` (checked), ``y`` ±1
    floats (classification losses) or finite targets (regression losses, with
    ``epsilon`` the insensitive zone), ``cvec`` the per-row costs C_i >= 0 derived from
    the scalar ``C`` (rows of cost 0 are not part of the problem: ``start`` refers to
    the others, and their ``alpha`` is reported as 0), ``plan`` a
    :class:`~pybudget.linear.plan.Plan` (``pybudget.linear.plan.plan_for`` decides one from
    the data), ``seed`` the generator's 64-bit seed, ``start`` a SolverState to
    warm-start from, ``tol_rule`` "max" or, for the regression losses, "liblinear".
    Returns a LinearResult (``selection`` the plan's, ``state`` the run's end, from
    which a next fit may start)."""
    keep = cvec > 0
    if not keep.all():
        rows, y, cvec = rows.take(keep), y[keep], cvec[keep]
    res = dual_cd(rows, y, cvec, plan, loss=loss, tol=tol, max_iter=max_iter, seed=seed,
                  start=start, verbose=verbose, C=C, epsilon=epsilon, tol_rule=tol_rule)
    res.selection, res.C = plan.selection, C
    if not keep.all():
        alpha = np.zeros(keep.shape[0])
        alpha[keep] = res.alpha
        res.alpha = alpha
    return res


def solve_linear(X, y, C=1.0, *, loss="hinge", selection="auto", tol=0.1, max_iter=1000,
                 fit_intercept=False, intercept_scaling=1.0, sample_weight=None,
                 random_state=None, epsilon=0.0, tol_rule="max", n_jobs=None):
    """Train a binary linear SVM, logistic regression or a linear SVR by dual coordinate
    descent.

    Minimises ``½‖w‖² + C Σ_i s_i loss(y_i (w·x_i + b))`` for the classification
    losses and ``½‖w‖² + C Σ_i s_i loss(y_i - w·x_i - b)`` for the regression losses.
    With ``fit_intercept`` the bias is a regularised extra weight on a constant feature
    of value ``intercept_scaling`` (liblinear's ``-B``).

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Training data.
    y : array-like of shape (n_samples,)
        Classification: labels, any two values; the positive side is the larger one
        (``result.classes[1]``).  Regression: finite targets (``result.classes`` is
        None and ``alpha`` holds the signed dual variables beta).
    C : float, default=1.0
        Regularisation parameter, > 0.
    loss : {"hinge", "squared_hinge", "logistic", "epsilon_insensitive", \
"squared_epsilon_insensitive"}, default="hinge"
        Loss function: the SVM losses (liblinear ``-s 3``, ``-s 1``), the logistic
        loss ``log(1 + exp(-m))`` (``-s 7``, dual logistic regression) or the support
        vector regression losses ``max(0, |r| - epsilon)`` and its square (``-s 13``,
        ``-s 12``).
    selection : {"auto", "uniform", "shrinking", "avsf"}, default="auto"
        Coordinate selection: "uniform", "shrinking" (liblinear's hard shrinking),
        "avsf" (adaptive variable selection frequencies) or "auto" (shrinking or AVSF
        chosen from the data and C, or the primal Newton solver for the squared hinge
        and logistic losses on rows that outnumber the columns 100 times; see
        :func:`resolve_selection`).
    tol : float, default=0.1
        Stopping tolerance on the maximal projected gradient (KKT violation); for the
        logistic loss, whose dual variables stay strictly inside their box, the maximal
        absolute dual gradient.  For the regression losses it is relative to the largest
        violation at the zero start, ``max_i |y_i| - epsilon`` (``kkt_violation`` stays
        in the units of the targets).
    max_iter : int, default=1000
        Maximum number of sweeps.
    fit_intercept : bool, default=False
        Whether to fit a (regularised) bias.
    intercept_scaling : float, default=1.0
        Value of the constant bias feature; used only with ``fit_intercept``.
    sample_weight : array-like of shape (n_samples,), optional
        Weights s_i >= 0 per row (ones when None); rows of weight 0 are not part of the
        problem (their ``alpha`` is 0).
    random_state : None, int, numpy.random.RandomState or numpy.random.Generator
        Seed of the solver's random order.
    epsilon : float, default=0.0
        Half-width of the insensitive zone of the regression losses (liblinear's
        ``-p``), >= 0; ignored by the classification losses.
    tol_rule : {"max", "liblinear"}, default="max"
        How ``tol`` stops the run.  "max": the largest violation, confirmed by an exact
        pass, as described under ``tol``.  "liblinear" (regression losses only; a
        ValueError otherwise): liblinear's ``-s 11/12/13`` rule, stop when a sweep's
        sum of the violations of the variables it visits is at most ``tol`` times the
        first sweep's; see :class:`LinearSVR` for how it combines with each
        ``selection``.
    n_jobs : int or None, default=None
        Threads the problem may use (None: 1, -1: every core), as in
        :class:`LinearSVC`: a team where one is measured to pay, blocks of rows on the
        primal Newton route, else one thread.

    Returns
    -------
    LinearResult
        Solution and run statistics.

    Raises
    ------
    ValueError, TypeError
        For invalid parameters, ``y`` without exactly two classes (classification) or
        with non-finite targets (regression).
    ValueError
        When C is so large for the data that the weights overflow.

    Warns
    -----
    ConvergenceWarning
        When ``max_iter`` sweeps did not reach ``tol``.

    See Also
    --------
    LinearSVC : The estimator, with one-vs-rest for more than two classes.
    LinearSVR : The regression estimator.
    linear_path : A warm-started grid of C.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from pybudget import solve_linear
    >>> X, y = make_classification(n_samples=200, n_features=5, random_state=0)
    >>> res = solve_linear(X, y, C=1.0, random_state=0)
    >>> res.coef.shape, res.classes.tolist()
    ((5,), [0, 1])
    """
    C, tol, max_iter, bias = check_linear_params(C, loss, selection, tol, max_iter,
                                                 fit_intercept, intercept_scaling,
                                                 LOSSES + LOGISTIC_LOSSES
                                                 + REGRESSION_LOSSES)
    check_tol_rule(tol_rule, loss)
    n_jobs = V.n_jobs(n_jobs)
    X = V.as_csr(X)
    if loss in REGRESSION_LOSSES:
        classes, target = None, V.regression_targets(y, X.shape[0])
        extra = {"epsilon": V.nonnegative("epsilon", epsilon)}
    else:
        classes, target = V.binary_labels(y, X.shape[0])
        extra = {}
    cvec = C * V.sample_weights(sample_weight, X.shape[0])
    rows = Rows.canonical(X, bias)
    how = plan_for(rows, cvec, loss, selection, n_jobs, tol_rule)
    res = solve_binary(rows, target, cvec, C, how, loss=loss, tol=tol, max_iter=max_iter,
                       seed=V.seed_from(random_state), tol_rule=tol_rule, **extra)
    res.classes = classes
    if not res.converged:
        from sklearn.exceptions import ConvergenceWarning    # (not at import: _lazy.py)
        warnings.warn(f"{unconverged('dual CD', res.selection, max_iter, tol)} "
                      f"(final KKT violation {res.kkt_violation:.3g})", ConvergenceWarning)
    return res


def class_weight_vector(class_weight, classes, counts):
    """The weight of each class, index-aligned with ``classes``, from an estimator's
    ``class_weight`` parameter.

    Parameters
    ----------
    class_weight : dict, "balanced" or None
        None: all ones.  "balanced": ``sum(counts) / (n_classes * counts)``, as
        scikit-learn's ``compute_class_weight``.  A dict maps class labels (each among
        ``classes``) to weights > 0; classes it leaves out weigh 1.
    classes : ndarray of shape (n_classes,)
        The sorted class labels.
    counts : array-like of shape (n_classes,)
        The summed sample weights of each class's rows (the row counts without sample
        weights), as scikit-learn's ``compute_class_weight(..., sample_weight=...)``;
        used by "balanced" only.

    Returns
    -------
    ndarray of shape (n_classes,)
    """
    K = classes.shape[0]
    if class_weight is None:
        return np.ones(K)
    if isinstance(class_weight, str):
        if class_weight != "balanced":
            raise ValueError("class_weight must be None, 'balanced' or a dict, "
                             f"got {class_weight!r}")
        counts = np.asarray(counts, dtype=np.float64)
        if not (counts > 0).all():
            raise ValueError("class_weight='balanced' needs a positive weight in every "
                             f"class, got per-class weights {counts.tolist()}")
        return counts.sum() / (K * counts)
    if not isinstance(class_weight, dict):
        raise TypeError(f"class_weight must be None, 'balanced' or a dict, got {class_weight!r}")
    out = np.ones(K)
    known = set(classes.tolist())
    for label, weight in class_weight.items():
        if label not in known:
            raise ValueError(f"class_weight has label {label!r}, not among the classes "
                             f"{classes.tolist()}")
        out[np.searchsorted(classes, label)] = V.positive(f"class_weight[{label!r}]", weight)
    return out


def problem_costs(C, class_weights, codes, positive, sample_weight=None):
    """The per-row costs C_i of one binary problem of a one-vs-rest fit, as liblinear
    (and so scikit-learn) sets them.

    Two classes (one problem): every row weighs ``C * class_weights[codes_i]``, its own
    class's weight.  More classes: the problem of class ``positive`` weighs that class's
    rows ``C * class_weights[positive]`` and every other row plain ``C`` (liblinear's
    ``train_one(..., weighted_C[k], C)``).  Both times ``* sample_weight_i``.

    Parameters
    ----------
    C : float
        Regularisation parameter.
    class_weights : ndarray of shape (n_classes,)
        Weight per class (:func:`class_weight_vector`).
    codes : ndarray of shape (n_samples,)
        Class index 0..n_classes-1 of each row.
    positive : int
        Index of the problem's positive class (``binary_problems``: 1 for two classes).
    sample_weight : ndarray of shape (n_samples,), optional
        Weights per row (ones when None).

    Returns
    -------
    ndarray of shape (n_samples,)
    """
    if class_weights.shape[0] == 2:
        weight = class_weights[codes]
    else:
        weight = np.where(codes == positive, class_weights[positive], 1.0)
    cost = C * weight
    return cost if sample_weight is None else cost * sample_weight


