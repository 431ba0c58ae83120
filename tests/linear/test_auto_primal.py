"""selection="auto" and the primal Newton solver: the smooth classification
losses on rows that outnumber the columns in use PRIMAL_ROWS_PER_COLUMN times go to the
primal Newton solver, where dual CD stopped at its sweep cap far from the optimum
(docs/benchmarks.md, section 8); everything else stays on dual CD."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression as SkLR

import pybudget
from pybudget.linear.plan import PRIMAL_ROWS_PER_COLUMN, Rows, primal_pays, resolve_selection


def unscaled(n=4000, d=5, seed=0):
    """Few columns on scales from 1 to 10,000 (as svmguide1's): dual CD crawls."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * np.logspace(0, 4, d)
    y = np.where(X @ (rng.normal(size=d) / np.logspace(0, 4, d)) + rng.logistic(size=n) > 0,
                 1, -1)
    return X, y


def primal(X, y, coef, intercept, C, loss):
    m = y * (X @ coef + intercept)
    lo = np.logaddexp(0, -m) if loss == "logistic" else np.maximum(0, 1 - m) ** 2
    return 0.5 * (coef @ coef + intercept ** 2) + C * lo.sum()


def test_the_rule_counts_rows_per_column_with_the_bias():
    assert primal_pays("logistic", 100 * 6, 5)
    assert not primal_pays("logistic", 100 * 6 - 1, 5)
    assert primal_pays("squared_hinge", 10 ** 6, 10)
    for loss in ("hinge", "epsilon_insensitive", "squared_epsilon_insensitive", None):
        assert not primal_pays(loss, 10 ** 6, 10)


@pytest.mark.parametrize("make", [
    lambda: pybudget.LogisticRegression(),
    lambda: pybudget.LinearSVC(loss="squared_hinge")])
def test_auto_converges_by_newton_where_dual_cd_stops_at_its_cap(make):
    X, y = unscaled()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est = make().fit(X, y)
    assert est.selection_ == "newton" and est.converged_.all()
    loss = "logistic" if isinstance(est, pybudget.LogisticRegression) else "squared_hinge"
    ours = primal(X, y, est.coef_[0], est.intercept_[0], 1.0, loss)
    # the dual strategy that "auto" chose before stops at its cap well above it
    with pytest.warns(ConvergenceWarning):
        dual = make().set_params(selection="shrinking").fit(X, y)
    assert primal(X, y, dual.coef_[0], dual.intercept_[0], 1.0, loss) > 1.01 * ours
    if loss == "logistic":       # and scikit-learn's primal solver agrees with it
        sk = SkLR(C=1.0, solver="liblinear", tol=1e-10, max_iter=1000).fit(X, y)
        theirs = primal(X, y, sk.coef_[0], sk.intercept_[0], 1.0, loss)
        assert ours == pytest.approx(theirs, rel=1e-3)


def test_auto_stays_on_dual_cd_elsewhere():
    X, y = unscaled()
    # rows per column just below the rule (dense columns: all in use)
    n = PRIMAL_ROWS_PER_COLUMN * 6 - 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        assert pybudget.LinearSVC().fit(X, y).selection_ != "newton"   # hinge
        assert pybudget.LogisticRegression().fit(X[:n], y[:n]).selection_ != "newton"
        assert pybudget.LogisticRegression().fit(X[:n + 1], y[:n + 1]).selection_ == "newton"
    # text: more columns than rows
    rng = np.random.default_rng(1)
    T = sp.random(300, 2000, density=0.02, format="csr", random_state=1)
    labels = np.where(rng.random(300) > 0.5, 1, -1)
    assert pybudget.LogisticRegression().fit(T, labels).selection_ in ("shrinking", "avsf")


def test_columns_without_entries_do_not_count():
    X, y = unscaled(n=700)
    wide = sp.hstack([sp.csr_matrix(X), sp.csr_matrix((700, 50))]).tocsr()
    assert resolve_selection("auto", Rows.canonical(wide, 1.0), np.ones(700),
                             loss="logistic") == "newton"
