"""Linear SVMs by dual coordinate descent, the problem and solver layer: the losses' names
(their duals: ``linear.losses``), the parameters' checks, the start state of a
warm start, the choice of strategy ("auto", the dominant-bias routes), the per-row costs
(class and sample weights) and the solvers of one binary problem (``dual_cd``,
``solve_linear``).  The estimators (``svm``, ``svr``, ``logistic``) and the cluster
(``pybudget.dask``) are built on it; it imports none of them."""
import time
import warnings
from dataclasses import dataclass

import numpy as np

from pybudget._core import _validation as V
from pybudget._core._csr import rows_combination, used_columns
from pybudget.linear._dual_cd import PAIRS, SELECTIONS, TOL_RULES, dcd_solve, sum_of_squares
from pybudget.linear._team import team_size
from pybudget.linear.losses import LOSS, PROBLEM_OF
from pybudget.linear.primal import SMOOTH_LOSSES, primal_newton

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


def dual_cd(X, y, cvec, *, loss, selection, tol, max_iter, bias, seed, start=None,
            verbose=0, C=1.0, checked=False, epsilon=0.0, tol_rule="max", n_threads=1):
    """One problem on validated data: X canonical CSR, y ±1 floats (classification
    losses) or targets (regression losses, with ``epsilon`` the insensitive zone), cvec
    the per-sample C (> 0) derived from the scalar ``C`` (kept in the returned state).
    ``start`` is a SolverState to warm-start from (its alpha is clipped to the box;
    for the logistic loss strictly inside it).
    ``checked``: the caller has refused overflowing squares already (V.row_sqnorms).
    ``tol_rule``: "max" or, for the regression losses, "liblinear" (checked by the
    caller, check_tol_rule).
    Returns a LinearResult whose ``state`` continues the run."""
    n, d = X.shape
    V.linear_weights_fit(1, d)
    if not checked:
        V.check_squares(X, bias)
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
    if problem == "svr" and tol_rule == "max":
        # (the liblinear rule is relative to the first sweep already)
        tol = tol * regression_tol_scale(y, epsilon)
    if selection == "pairs":
        # A step on z_i moves the bias term of every margin by bias^2 dz_i, and dz_i is
        # a multiple of z_i's ulp: below about bias^2 ulp(max C_i) the violation is
        # round-off that no step can reduce.
        tol = max(tol, 2.0 * np.finfo(np.float64).eps * bias * bias * float(cvec.max()))
    threads = 1
    t0 = time.perf_counter()
    if selection == "newton":
        out = primal_newton(X, y, cvec, loss=loss, bias=bias, tol=tol, max_iter=max_iter,
                            epsilon=epsilon, n_threads=n_threads)
        alpha, comp, w, threads = out["alpha"], out["comp"], out["w"], out["threads"]
        prefs, perm, n_active = np.ones(n), np.arange(n, dtype=np.int32), n
        out["n_steps"], out["n_active"], out["dref"] = 0, n, 0.0
    else:
        code = PAIRS if selection == "pairs" else SELECTIONS[selection]
        threads, chunk = team_size(X, n_threads, problem, selection)
        out = dcd_solve(X, y, upper, diag, cvec, bias, alpha, w, prefs, perm, n_active, dref,
                        code, tol, max_iter, seed, squared, verbose,
                        problem, epsilon, comp, tol_rule=TOL_RULES[tol_rule],
                        n_threads=threads, chunk=chunk)
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
        primal = 0.5 * wsq + out["loss_sum"]
    if selection == "newton":        # (the iterate's own pair: primal_newton's docstring)
        dual, primal = out["dual"], out["primal"]
    state = SolverState(alpha, prefs, perm, out["n_active"], out["dref"], C)
    return LinearResult(coef=w[:d], intercept=float(w[d] * bias), alpha=alpha,
                        n_iter=out["n_iter"], n_steps=out["n_steps"], dual_objective=dual,
                        primal_objective=primal, kkt_violation=out["kkt_violation"],
                        converged=out["converged"] and max_iter > 0, time=elapsed,
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


def resolve_selection(selection, X, cvec, bias, sqnorms=None, loss=None):
    """Resolve ``selection="auto"`` to the strategy it stands for.

    The choice uses cheap statistics of the data and C.  For the smooth classification
    losses (squared hinge, logistic) on rows that outnumber the columns in use
    ``PRIMAL_ROWS_PER_COLUMN`` times, the primal Newton solver (``"newton"``,
    :mod:`pybudget.linear.primal`): there dual CD needed 1.05-49 times its time, and
    often stopped at its sweep cap far from the optimum (the measurement is described at
    ``PRIMAL_ROWS_PER_COLUMN``).  Otherwise dual CD.  Hard shrinking wins unless the
    problem has many free dual variables that need far more updates than the rest,
    which is when AVSF's soft shrinking pays off: data of high dimension relative to the
    number of rows (text), at C large enough that the box constraints stop binding
    (median C_i (‖x_i‖² + bias²) >= 1).  On low-dimensional data at most about d + 1
    variables are free at the optimum, so hard shrinking can drop nearly everything and
    stays ahead at every C (AVSF paper, §5; measured in docs/benchmarks.md, section 1).

    Parameters
    ----------
    selection : str
        "uniform", "shrinking", "avsf" or "auto"; anything but "auto" is returned
        unchanged.
    X : scipy.sparse.csr_matrix of shape (n_samples, n_features)
        Training data.
    cvec : ndarray of shape (n_samples,)
        Per-sample C_i.
    bias : float
        Value of the constant bias feature (``intercept_scaling``), 0.0 without an
        intercept.
    sqnorms : ndarray of shape (n_samples,), optional
        The rows' ``V.row_sqnorms(X, bias)`` when the caller has them; computed
        otherwise.
    loss : str, optional
        The loss; None: the choice among the dual CD strategies alone.

    Returns
    -------
    str
        For ``selection="auto"``: "newton" where ``primal_pays``; else "shrinking" or
        "avsf" ("shrinking" when X has no entries or uses fewer than
        ``AUTO_MIN_DIM_RATIO * n_samples`` columns, "avsf" when the median of
        C_i (‖x_i‖² + bias²) is at least ``AUTO_MIN_SCALE``).  Otherwise ``selection``.
    """
    if selection != "auto":
        return selection
    if X.nnz == 0:
        return "shrinking"
    d_used = used_columns(X)    # columns in use
    if primal_pays(loss, X.shape[0], d_used):
        return "newton"
    if d_used < AUTO_MIN_DIM_RATIO * X.shape[0]:
        return "shrinking"
    if sqnorms is None:
        sqnorms = V.row_sqnorms(X, bias)
    return auto_selection(X.shape[0], d_used, cvec * sqnorms)


def auto_selection(n, d_used, scales):
    """The rule of ``selection="auto"`` from its statistics: the rows n, the columns in
    use and every row's C_i (|x_i|^2 + bias^2) (also used by pybudget.dask, which
    gathers them from its partitions)."""
    if d_used == 0 or d_used < AUTO_MIN_DIM_RATIO * n:
        return "shrinking"
    return "avsf" if float(np.median(scales)) >= AUTO_MIN_SCALE else "shrinking"


def primal_pays(loss, n, d_used):
    """Whether "auto" sends a problem of n rows using d_used columns to the primal
    Newton solver: a smooth classification loss (``PRIMAL_AUTO_LOSSES``) and at least
    ``PRIMAL_ROWS_PER_COLUMN`` rows per column in use, the bias's included."""
    return loss in PRIMAL_AUTO_LOSSES and n >= PRIMAL_ROWS_PER_COLUMN * (d_used + 1)


AUTO_MIN_DIM_RATIO = 0.5
AUTO_MIN_SCALE = 1.0
# Rows per column in use from which "auto" takes the primal Newton solver.  Measured on
# a 2-core machine, medians of 3, solve_linear at tol 0.1 with a bias against
# primal_newton at tol 0.1, C = 1 and 100, on the binary problems of the benchmark data
# (multi-class sets: the first class against the rest): from 166 rows per column up
# (a9a, ijcnn1, w8a, pendigits, svmguide1, a dense 200,000 x 50 set) the primal Newton
# solver beat dual CD in every cell (1.05-49 times faster; the dual often stopped at its
# cap of 1000 sweeps far from the optimum); below 100 the dual won on mushrooms and on
# dna.scale at C = 1 and lost on german.numer and splice; on text (debian-lib, fewer
# rows than columns) the dual won by 3-64 times.  Checked afterwards on synthetic sets
# of 120-500 rows per column: 6.4-158 times faster than hard shrinking.
PRIMAL_ROWS_PER_COLUMN = 100
PRIMAL_AUTO_LOSSES = ("squared_hinge", "logistic")   # (regression: not measured)
# bias^2 over the median squared row norm from which dual CD stalls: the bias column adds
# bias^2 y y' to the dual's Q (measured on a9a: every loss converges at intercept_scaling
# 10, ratio 7, none at 100, ratio 700; liblinear's dual solvers stall there too).
PRIMAL_BIAS_RATIO = 100.0
# The same for the hinge and epsilon-insensitive losses, whose pair steps cost little
# more than plain dual CD: at intercept_scaling 10 (a9a: ratio 7; ijcnn1: 69) hard
# shrinking needs about 1000 sweeps at C = 1 (liblinear stops at its cap of 300), the
# pair steps about 200 and 60.
PAIRS_BIAS_RATIO = 5.0


def bias_dominated(loss, X, bias, sqnorms=None, tol_rule="max"):
    """Whether the bias column dominates the dual, so that single-coordinate dual CD
    cannot converge: the bias adds ``bias**2 y y'`` to the dual's Q, and coordinate
    steps, of curvature about ``bias**2``, crawl along the directions that keep
    ``sum_i y_i alpha_i`` fixed.

    That is when ``bias**2`` is at least ``PRIMAL_BIAS_RATIO`` (100) times the median
    squared norm of the rows (without the bias) for the smooth losses (squared hinge,
    logistic, squared epsilon-insensitive), which then go to the primal Newton solver
    (:mod:`pybudget.linear.primal`, ``selection_ == "newton"``), and ``PAIRS_BIAS_RATIO``
    (5) times for the hinge and epsilon-insensitive losses, which have no smooth primal
    and go to dual CD with pair steps that keep the bias fixed (``selection_ ==
    "pairs"``, see ``_dcd.pxi``).  Whatever ``selection`` says; never without a bias,
    nor with the regression rule ``tol_rule="liblinear"`` (liblinear's own solver)."""
    if bias == 0.0 or tol_rule == "liblinear":
        return False
    ratio = PRIMAL_BIAS_RATIO if loss in SMOOTH_LOSSES else PAIRS_BIAS_RATIO
    norms = V.row_sqnorms(X, 0.0) if sqnorms is None else sqnorms - bias * bias
    return bias * bias >= ratio * float(np.median(norms))


def _resolve_once(selection, X, cvec, bias, sqnorms, loss=None):
    """resolve_selection on the rows _solve_binary solves (positive weight): the same for
    every problem of a one-vs-rest fit, so a fit resolves it once, not once per class."""
    keep = cvec > 0
    if selection == "auto" and not keep.all():
        X, cvec, sqnorms = X[keep], cvec[keep], sqnorms[keep]
    return resolve_selection(selection, X, cvec, bias, sqnorms, loss)


def _solve_binary(X, y, cvec, C, *, sqnorms, selection, start=None, **kw):
    """dual_cd on the rows with positive weight (zero-weight rows are not part of the
    problem; ``start`` refers to those rows only) after resolving "auto".  ``sqnorms``
    are V.row_sqnorms(X, bias), computed (and checked) once per data set by the caller,
    or None (then computed for "auto", and the squares checked by dual_cd).
    alpha is reported for every row (0 where the weight is 0)."""
    keep = cvec > 0
    if not keep.all():
        X, y, cvec = X[keep], y[keep], cvec[keep]
        sqnorms = None if sqnorms is None else sqnorms[keep]
    used = resolve_selection(selection, X, cvec, kw.get("bias", 0.0), sqnorms, kw["loss"])
    if bias_dominated(kw["loss"], X, kw.get("bias", 0.0), sqnorms, kw.get("tol_rule")):
        used = "newton" if kw["loss"] in SMOOTH_LOSSES else "pairs"
    res = dual_cd(X, y, cvec, selection=used, start=start, C=C, checked=sqnorms is not None,
                  **kw)
    res.selection, res.C = used, C
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
        extra = {"epsilon": V.nonnegative("epsilon", epsilon), "tol_rule": tol_rule}
    else:
        classes, target = V.binary_labels(y, X.shape[0])
        extra = {}
    cvec = C * V.sample_weights(sample_weight, X.shape[0])
    # the rows' norms serve "auto" only (otherwise dual_cd checks the squares, cheaper)
    sqnorms = V.row_sqnorms(X, bias) if selection == "auto" else None
    res = _solve_binary(X, target, cvec, C, sqnorms=sqnorms, loss=loss,
                        selection=selection, tol=tol, max_iter=max_iter, bias=bias,
                        seed=V.seed_from(random_state), n_threads=n_jobs, **extra)
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


