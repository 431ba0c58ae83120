"""LinearSVC and the base it shares with LogisticRegression: one-vs-rest (or one joint
Crammer-Singer problem), class weights, warm starts, the linear decision function.  The
problems and their solvers are in ``linear.problem``."""
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model._base import SparseCoefMixin
from sklearn.utils.extmath import safe_sparse_dot

from pybudget._core import _validation as V
from pybudget._core._estimator import SVMClassifierBase, binary_problems, one_vs_rest
from pybudget._core._progress import report
from pybudget.linear.crammer_singer import solve_cs_rows
from pybudget.linear.plan import Rows, plan_for
from pybudget.linear.problem import (LOSSES, MULTI_CLASS, check_linear_params,
                                     class_weight_vector, next_start, problem_costs,
                                     solve_binary, unconverged)
# (pickles made before the split name these classes in this module)
from pybudget.linear.problem import LinearResult, SolverState  # noqa: F401


class LinearClassifierBase(SparseCoefMixin, SVMClassifierBase):
    """What LinearSVC and LogisticRegression share: one binary dual CD problem per class
    (one-vs-rest), class weights, warm starts, the linear decision function and
    scikit-learn's ``sparsify()`` / ``densify()`` of ``coef_``."""

    def _fit(self, X, y, sample_weight, loss, losses, joint=False):
        """Fit with the given loss (checked against losses); sets the attributes.
        ``joint``: one multi-class problem (``_fit_crammer_singer``), not one-vs-rest."""
        C, tol, max_iter, bias = check_linear_params(
            self.C, loss, self.selection, self.tol, self.max_iter,
            self.fit_intercept, self.intercept_scaling, losses)
        verbose = V.verbosity(self.verbose)
        V.boolean("warm_start", self.warm_start)
        n_jobs = V.n_jobs(self.n_jobs)
        t_fit = time.perf_counter()
        X, y = self._training_data(X, y)
        classes, codes = V.encode_labels(y, X.shape[0])
        sw = V.sample_weights(sample_weight, X.shape[0])
        # "balanced" counts the rows' sample weights, as scikit-learn >= 1.6 does
        cw = class_weight_vector(self.class_weight, classes,
                                 np.bincount(codes, weights=sw, minlength=classes.shape[0]))
        # each row weighted by its own class: Crammer-Singer's costs (liblinear -s 4), and
        # what decides "auto" and recognises a warm start's data
        cvec = C * sw * cw[codes]
        K = classes.shape[0]
        if joint:
            self._fit_crammer_singer(X, classes, codes, cvec, C, tol, max_iter, bias, verbose,
                                     t_fit)
            return self
        V.linear_weights_fit(len(binary_problems(K)), X.shape[1])
        rows = Rows.canonical(X, bias)
        # threads left over when there are fewer problems than threads: a team each;
        # one plan for every problem, decided on the rows of positive cost
        how = plan_for(rows, cvec, loss, self.selection, max(1, n_jobs // len(binary_problems(K))))
        starts = dict(zip(binary_problems(K),
                          self._warm_starts(X, classes, cvec, C, len(binary_problems(K)))))

        # One problem's weights are coef_ as they are; more are copied into coef_ row by
        # row as the problems finish (no stacking at the end: with many classes coef_
        # is by far the largest array of the fit).
        coef = np.empty((K, X.shape[1])) if K > 2 else None

        def solve(k, seed):
            # per class the label vector and the costs: the rest is shared, read-only
            res = solve_binary(rows, np.where(codes == k, 1.0, -1.0),
                               problem_costs(C, cw, codes, k, sw), C, how, loss=loss,
                               tol=tol, max_iter=max_iter, seed=seed, start=starts[k],
                               verbose=verbose)
            if coef is not None:
                coef[k] = res.coef
                res.coef = coef[k]
            if verbose:
                report(f"class {classes[k]}: {res.n_iter} sweeps, {res.n_steps} steps, "
                       f"dual {res.dual_objective:.6g}, KKT {res.kkt_violation:.3g}, "
                       f"{res.time:.3f}s", time.perf_counter() - t_fit)
            return res

        results = one_vs_rest(K, V.seed_from(self.random_state), solve, n_jobs)
        self.classes_ = classes
        self.coef_ = coef if coef is not None else results[0].coef[None, :]
        self.intercept_ = np.array([r.intercept for r in results])
        self.n_iter_ = max(r.n_iter for r in results)
        self.n_steps_ = sum(r.n_steps for r in results)
        self.dual_objective_ = np.array([r.dual_objective for r in results])
        self.kkt_violation_ = np.array([r.kkt_violation for r in results])
        self.converged_ = np.array([r.converged for r in results])
        self.fit_time_ = sum(r.time for r in results)
        self.selection_ = results[0].selection
        same = starts[binary_problems(K)[0]] is not None   # the previous fit was on these data
        self._remember(results, X, classes, cvec, same, max_iter, tol)
        return self

    def _remember(self, results, X, classes, cvec, same, max_iter, tol):
        """Keep what the next warm-started fit needs (and how to recognise the data);
        warn when a problem did not converge."""
        self._warm = {"states": [r.state for r in results], "shape": X.shape,
                      "classes": classes, "zero_weight": cvec == 0,
                      "multi_class": getattr(self, "multi_class", "ovr"),
                      "earlier": self._warm["states"] if same else None}
        if not self.converged_.all():
            warnings.warn(unconverged(type(self).__name__, self.selection_, max_iter, tol),
                          ConvergenceWarning)

    def _warm_starts(self, X, classes, cvec, C, n_problems):
        """Per-problem start states for a warm-started fit, or Nones."""
        prev = getattr(self, "_warm", None) if self.warm_start else None
        if (prev is None or prev["shape"] != X.shape
                or prev.get("multi_class") != getattr(self, "multi_class", "ovr")
                or not np.array_equal(prev["classes"], classes)
                or not np.array_equal(prev["zero_weight"], cvec == 0)
                or len(prev["states"]) != n_problems):
            return [None] * n_problems
        earlier = prev.get("earlier") or [None] * n_problems
        return [next_start(st, e, C, "extrapolate") for st, e in zip(prev["states"], earlier)]

    def decision_function(self, X):
        X = self._prediction_data(X)
        scores = safe_sparse_dot(X, self.coef_.T, dense_output=True) + self.intercept_
        return scores.ravel() if scores.shape[1] == 1 else scores


class LinearSVC(LinearClassifierBase):
    """Linear support vector classifier trained by dual coordinate descent.

    Like scikit-learn's ``LinearSVC`` (liblinear), with a choice of coordinate
    selection.  More than two classes are handled one-vs-rest or, with
    ``multi_class="crammer_singer"``, jointly.  Each row's box bound is
    ``C_i = C * class_weight[y_i] * sample_weight_i``.

    Parameters
    ----------
    C : float, default=1.0
        Regularisation parameter, > 0.
    loss : {"hinge", "squared_hinge", "epsilon_insensitive", \
"squared_epsilon_insensitive"}, default="hinge"
        Loss function: the SVM losses (liblinear ``-s 3``, ``-s 1``) or the support
        vector regression losses ``max(0, |r| - epsilon)`` and its square (``-s 13``,
        ``-s 12``).
    multi_class : {"ovr", "crammer_singer"}, default="ovr"
        "ovr": one binary problem per class (one for two classes); "crammer_singer":
        Crammer & Singer's joint multi-class hinge (liblinear ``-s 4``, see
        :func:`~pybudget.linear.crammer_singer.solve_crammer_singer`), which needs
        ``loss="hinge"``.  As in scikit-learn, two classes then give one weight vector,
        ``coef_[1] - coef_[0]`` of the two fitted ones.
    selection : {"auto", "avsf", "shrinking", "uniform"}, default="auto"
        Coordinate selection: "auto" (hard shrinking or AVSF chosen from the data and C;
        the primal Newton solver for the squared hinge on rows that outnumber the
        columns 100 times; see :func:`~pybudget.linear.plan.resolve_selection`), "avsf"
        (adaptive variable selection frequencies), "shrinking" (liblinear's hard
        shrinking) or "uniform".
    tol : float, default=0.1
        Stopping tolerance on the maximal projected gradient (KKT violation); relative
        to ``max_i |y_i| - epsilon`` for the regression losses, as in
        :func:`solve_linear`.
    max_iter : int, default=1000
        Maximum number of sweeps per binary problem.
    fit_intercept : bool, default=True
        Whether to fit a bias, as a regularised extra weight on a constant feature.
    intercept_scaling : float, default=1.0
        Value of that constant feature (liblinear's ``-B``).
    class_weight : dict, "balanced" or None, default=None
        Weight per class label multiplying C; "balanced" uses
        ``n_samples / (n_classes * count(class))``.
    warm_start : bool, default=False
        With True a refit on the same data with a new C starts from the previous
        solution: after two fits at increasing C, a third, larger C starts on the line
        through their solutions (``linear_path``'s default ``carry="extrapolate"``),
        otherwise from the dual variables rescaled by C_new/C_old; clipped to the new
        box either way (:func:`linear_path` documents the choices; what they gain is
        measured in docs/benchmarks.md, section 2).
    random_state : None, int, numpy.random.RandomState or numpy.random.Generator
        Seed of the solvers' random order.
    n_jobs : int or None, default=None
        Threads: None is 1, -1 every core, -2 all but one.  One-vs-rest problems are
        solved at once on that many threads, with the same results for every
        ``n_jobs`` (each problem's seed is fixed by its class).  When there are more
        threads than problems (two classes: one problem), each problem gets a team of
        ``n_jobs // n_problems`` threads where a team is measured to pay (hinge and
        squared hinge, data of at least 200,000 non-zeros in few columns;
        :func:`~pybudget.linear._team.team_size`), otherwise one thread; the primal
        Newton route (``selection_ == "newton"``) splits the rows into blocks, one per
        thread, on data of at least 1,000,000 non-zeros.  A team's (or the blocks')
        result is the same bits run to run for a fixed ``n_jobs`` and ``random_state``,
        and within the tolerance of the one-thread result (other bits).
        crammer_singer runs on one thread.
    verbose : int or bool, default=0
        Progress on stderr: one line per binary problem (with the elapsed time and the
        peak memory), per-sweep detail from 2 on.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    coef_ : ndarray of shape (n_problems, n_features)
        Weights; one row for two classes, else one per class (one-vs-rest: one binary
        problem per row; crammer_singer: one joint problem).
    intercept_ : ndarray of shape (n_problems,)
        Biases.
    n_iter_ : int
        Largest sweep count over the problems.
    n_steps_ : int
        Total coordinate steps.
    dual_objective_, kkt_violation_, converged_ : ndarray of shape (n_problems,)
        Final dual objective, KKT violation and convergence flag per problem (one entry
        with crammer_singer).
    selection_ : str
        The strategy used ("auto" resolved, "newton" included; "newton" or "pairs"
        for a dominant bias column, whatever ``selection`` says, see
        :func:`~pybudget.linear.plan.bias_dominated`).
    fit_time_ : float
        Optimisation seconds, summed over problems (more than the wall time with
        ``n_jobs > 1``).
    n_features_in_ : int
        Number of features seen in ``fit``.

    Warns
    -----
    ConvergenceWarning
        From ``fit`` when a problem reached ``max_iter`` sweeps before ``tol``.

    See Also
    --------
    solve_linear : The functional interface for one binary problem.
    cv_grid : Cross-validated accuracy over a grid of C.
    pybudget.save, pybudget.load : Model files.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from pybudget import LinearSVC
    >>> X, y = make_classification(n_samples=200, n_features=5, random_state=0)
    >>> clf = LinearSVC(C=1.0, random_state=0).fit(X, y)
    >>> clf.coef_.shape, clf.predict(X[:3]).shape
    ((1, 5), (3,))
    """

    def __init__(self, C=1.0, *, loss="hinge", multi_class="ovr", selection="auto", tol=0.1,
                 max_iter=1000, fit_intercept=True, intercept_scaling=1.0,
                 class_weight=None, warm_start=False, random_state=None, n_jobs=None,
                 verbose=0):
        self.C = C
        self.loss = loss
        self.multi_class = multi_class
        self.selection = selection
        self.tol = tol
        self.max_iter = max_iter
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.class_weight = class_weight
        self.warm_start = warm_start
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    def fit(self, X, y, sample_weight=None):
        joint = V.choice("multi_class", self.multi_class, MULTI_CLASS) == "crammer_singer"
        if joint and self.loss != "hinge":
            raise ValueError("multi_class='crammer_singer' uses the multi-class hinge loss: "
                             f"loss must be 'hinge', got {self.loss!r}")
        return self._fit(X, y, sample_weight, self.loss, LOSSES, joint=joint)

    def _fit_crammer_singer(self, X, classes, codes, cvec, C, tol, max_iter, bias, verbose,
                            t_fit):
        """The K classes as one Crammer-Singer problem (one problem for the warm start)."""

        K = classes.shape[0]
        V.linear_weights_fit(K, X.shape[1])
        start = self._warm_starts(X, classes, cvec, C, 1)[0]
        res = solve_cs_rows(Rows.canonical(X, bias), codes, K, cvec, C,
                            selection=self.selection, tol=tol, max_iter=max_iter,
                            seed=V.seed_from(self.random_state), start=start,
                            verbose=verbose)
        if verbose:
            report(f"crammer_singer: {res.n_iter} sweeps, {res.n_steps} steps, "
                   f"dual {res.dual_objective:.6g}, KKT {res.kkt_violation:.3g}, "
                   f"{res.time:.3f}s", time.perf_counter() - t_fit)
        self.classes_ = classes
        if K == 2:
            # scikit-learn's convention: one vector, positive side classes_[1]
            self.coef_ = (res.coef[1] - res.coef[0])[None, :]
            self.intercept_ = np.array([res.intercept[1] - res.intercept[0]])
        else:
            self.coef_, self.intercept_ = res.coef, res.intercept
        self.n_iter_ = res.n_iter
        self.n_steps_ = res.n_steps
        self.dual_objective_ = np.array([res.dual_objective])
        self.kkt_violation_ = np.array([res.kkt_violation])
        self.converged_ = np.array([res.converged])
        self.fit_time_ = res.time
        self.selection_ = res.selection
        self._remember([res], X, classes, cvec, start is not None, max_iter, tol)
