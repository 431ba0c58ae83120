"""scikit-learn's check_estimator for every linear estimator and selection strategy."""
import warnings

import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import check_estimator

from pybudget import LinearSVC, LinearSVR, LogisticRegression

ESTIMATORS = [LinearSVC, LinearSVR, LogisticRegression]

# Weighting a sample by k equals repeating it k times only at the exact optimum, so the
# defaults (tol=0.1) cannot pass sklearn's sample-weight equivalence checks (sklearn's
# own LinearSVC declares them as expected failures).  A tight tolerance passes all.
LOOSE_TOL_FAILS = {
    "check_sample_weight_equivalence_on_dense_data": "tol=0.1 is far from the optimum",
    "check_sample_weight_equivalence_on_sparse_data": "tol=0.1 is far from the optimum",
}


@pytest.mark.parametrize("selection", ["uniform", "shrinking", "avsf"])
@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_check_estimator_tight_tolerance(cls, selection):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        check_estimator(cls(selection=selection, tol=1e-10, max_iter=100000, random_state=0))


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_check_estimator_defaults(cls):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        check_estimator(cls(random_state=0), expected_failed_checks=LOOSE_TOL_FAILS)
