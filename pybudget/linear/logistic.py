"""L2-regularised logistic regression by dual coordinate descent: the estimator."""
import numpy as np
from scipy.special import expit

from pybudget.linear.problem import LOGISTIC_LOSSES
from pybudget.linear.svm import LinearClassifierBase


class LogisticRegression(LinearClassifierBase):
    """Logistic regression trained by dual coordinate descent (liblinear ``-s 7``).

    Minimises ``½‖w‖² + Σ_i C_i log(1 + exp(-y_i (w·x_i + b)))`` through its dual
    (Yu, Huang & Lin 2011), with the coordinate selection strategies of
    :class:`pybudget.LinearSVC`.  Like scikit-learn's ``LogisticRegression(
    solver="liblinear")``, the intercept is a regularised weight on a constant feature
    of value ``intercept_scaling`` and more than two classes are handled one-vs-rest.
    Each row's ``C_i = C * class_weight[y_i] * sample_weight_i``.

    Parameters
    ----------
    C : float, default=1.0
        Inverse regularisation strength, > 0.
    selection : {"auto", "avsf", "shrinking", "uniform"}, default="auto"
        Coordinate selection.  No dual variable of this problem ever reaches a bound, so
        "shrinking" drops nothing: it is liblinear's plain loop, whose one-variable
        Newton solves start loose and tighten as the sweeps get cheap; "uniform" and
        "avsf" solve every subproblem tightly.  "auto" as in :class:`pybudget.LinearSVC`:
        the primal Newton solver on rows that outnumber the columns 100 times.
    tol : float, default=0.1
        Stop when the largest absolute dual gradient, over all variables, is below
        ``tol`` (liblinear's ``-e`` for ``-s 7``).
    max_iter : int, default=1000
        Maximum number of sweeps per binary problem.
    fit_intercept : bool, default=True
        Whether to fit a bias, as a regularised extra weight on a constant feature.
    intercept_scaling : float, default=1.0
        Value of that constant feature (liblinear's ``-B``).
    class_weight : dict, "balanced" or None, default=None
        Weight per class label multiplying C.
    random_state : None, int, numpy.random.RandomState or numpy.random.Generator
        Seed of the solvers' random order.
    warm_start : bool, default=False
        Refit on the same data from the previous solution, as in
        :class:`pybudget.LinearSVC` (kept strictly inside the new box).
    n_jobs : int or None, default=None
        Threads solving the one-vs-rest problems at once (None: 1, -1: every core), as
        in :class:`pybudget.LinearSVC`; the results are the same for every ``n_jobs``.
        One logistic problem on the primal Newton route (``selection_ == "newton"``)
        uses the threads left over on blocks of rows (data of at least 1,000,000
        non-zeros; same bits run to run for a fixed ``n_jobs``, other bits within the
        tolerance for another); on dual CD it runs on one thread (no team yet: the
        dual's inner Newton steps keep per-solver state).
    verbose : int or bool, default=0
        Progress on stderr: one line per binary problem (with the elapsed time and the
        peak memory), per-sweep detail from 2 on.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (n_problems, n_features)
        Weights; one problem for two classes, else one per class.
    intercept_ : ndarray of shape (n_problems,)
    n_iter_ : ndarray of shape (1,)
        Largest sweep count over the problems (an array, as scikit-learn's liblinear
        solver reports it).
    n_steps_ : int
        Total coordinate steps.
    dual_objective_, kkt_violation_, converged_ : ndarray of shape (n_problems,)
        Final dual objective (maximised; equals the primal objective at the optimum),
        largest dual gradient and convergence flag per problem.
    selection_ : str
        The strategy used ("auto" resolved; "newton": the primal Newton solver, whose
        ``n_iter_`` counts Newton iterations).
    fit_time_ : float
        Optimisation seconds, summed over problems (more than the wall time with
        ``n_jobs > 1``).
    n_features_in_ : int

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from pybudget import LogisticRegression
    >>> X, y = make_classification(n_samples=200, n_features=5, random_state=0)
    >>> clf = LogisticRegression(C=1.0, random_state=0).fit(X, y)
    >>> clf.predict_proba(X[:3]).shape
    (3, 2)
    """

    def __init__(self, C=1.0, *, selection="auto", tol=0.1, max_iter=1000,
                 fit_intercept=True, intercept_scaling=1.0, class_weight=None,
                 random_state=None, warm_start=False, n_jobs=None, verbose=0):
        self.C = C
        self.selection = selection
        self.tol = tol
        self.max_iter = max_iter
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.class_weight = class_weight
        self.random_state = random_state
        self.warm_start = warm_start
        self.n_jobs = n_jobs
        self.verbose = verbose

    def fit(self, X, y, sample_weight=None):
        self._fit(X, y, sample_weight, "logistic", LOGISTIC_LOSSES)
        # scikit-learn's liblinear path reports an array of shape (1,)
        self.n_iter_ = np.array([self.n_iter_], dtype=np.int32)
        return self

    def predict_proba(self, X):
        """Class probabilities: the sigmoid of the decision for two classes; for more,
        each one-vs-rest sigmoid divided by their sum (as scikit-learn's liblinear
        one-vs-rest does).  Columns follow ``classes_``."""
        prob = expit(self.decision_function(X))
        if prob.ndim == 1:
            return np.column_stack([1.0 - prob, prob])
        return prob / prob.sum(axis=1, keepdims=True)

    def predict_log_proba(self, X):
        return np.log(self.predict_proba(X))
