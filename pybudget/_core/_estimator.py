"""What pybudget's classifiers share on top of scikit-learn's mixins: input checks of
fit and predict, prediction from decision values, and the one-vs-rest loop."""
import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from pybudget._core import _validation as V
from pybudget._core._parallel import map_threads, problem_seed


def binary_problems(n_classes):
    """The positive class of each binary problem a fit on n_classes solves: [1] for two
    classes (class 1 against class 0), else every class against the rest."""
    return [1] if n_classes == 2 else list(range(n_classes))


def one_vs_rest(n_classes, seed, solve, n_jobs=1):
    """[solve(k, seed_k) for every binary problem k], seed_k = problem_seed(seed, k), on
    n_jobs threads (a count, V.n_jobs).  Each problem has its own seed and buffers, so
    the results do not depend on n_jobs; solve must not write to anything shared."""
    return map_threads(solve, [(k, problem_seed(seed, k)) for k in binary_problems(n_classes)],
                       n_jobs)


# Weighting a row by k equals repeating it k times only at the exact optimum, so a loose
# tol cannot pass scikit-learn's sample-weight equivalence checks (scikit-learn declares
# them expected failures for its own LinearSVC, LinearSVR and LogisticRegression).
LOOSE_TOL_FAILS = {
    "check_sample_weight_equivalence_on_dense_data":
        "sample_weight equals repeating rows only at the optimum; tol is too loose for it",
    "check_sample_weight_equivalence_on_sparse_data":
        "sample_weight equals repeating rows only at the optimum; tol is too loose for it",
}
# The tolerance up to which those checks (rtol 1e-7) pass for every linear estimator:
# measured, LinearSVC fails at 1e-8 and passes at 1e-9
# (tests/linear/test_linear_estimator_checks.py).
EQUIVALENCE_TOL = 1e-9


def expected_failed_checks(estimator):
    """scikit-learn's estimator checks that ``estimator``, as configured, is expected to
    fail, with the reason: ``check_estimator(est, expected_failed_checks=
    expected_failed_checks(est))``.  scikit-learn 1.9 keeps its own list outside the
    estimators (``PER_ESTIMATOR_XFAIL_CHECKS``) and has no tag for it, so pybudget's
    estimators declare theirs in a method, ``_expected_failed_checks``."""
    method = getattr(estimator, "_expected_failed_checks", None)
    return dict(method()) if method is not None else {}


class SVMBase(BaseEstimator):
    """Input checks of fit and predict (sparse input accepted, made canonical)."""

    _fitted_attr = "coef_"   # set last, once a fit has succeeded

    def __sklearn_is_fitted__(self):
        # (a refused fit may already have recorded n_features_in_)
        return hasattr(self, self._fitted_attr)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def _expected_failed_checks(self):
        """The checks this configuration is expected to fail (see expected_failed_checks):
        the sample-weight equivalence checks of the dual CD estimators above
        EQUIVALENCE_TOL; none otherwise."""
        tol = getattr(self, "tol", None)
        if isinstance(tol, (int, float)) and tol > EQUIVALENCE_TOL:
            return dict(LOOSE_TOL_FAILS)
        return {}

    def _training_data(self, X, y, reset=True):
        """(canonical CSR X, y) for fit and partial_fit, with scikit-learn's checks."""
        is_classifier = isinstance(self, ClassifierMixin)
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=[np.float64, np.float32],
                             reset=reset, y_numeric=not is_classifier)
        if is_classifier:
            check_classification_targets(y)
        return V.canonical_csr(X), y

    def _prediction_data(self, X):
        """X checked against the fitted estimator; sparse input made canonical (scipy's
        products trust the structure)."""
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", reset=False,
                          dtype=[np.float64, np.float32])
        return V.canonical_csr(X) if sp.issparse(X) else X


class SVMClassifierBase(ClassifierMixin, SVMBase):
    """``predict`` from ``decision_function`` (1-d scores for two classes, positive side
    ``classes_[1]``; one column per class otherwise)."""

    _fitted_attr = "classes_"

    def predict(self, X):
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(np.intp)]
        return self.classes_[np.argmax(scores, axis=1)]
