"""Decision values on threads (``BudgetModel.decision_rows``, behind
``BudgetSVC.decision_function`` and the offset's scoring): the values of the solvers'
own kernel loop (``decision_stream``), against the numpy formula, with the same bits for
every number of threads, and a proof that a team ran."""
import numpy as np
import pytest
import scipy.sparse as sp

from pybudget import BudgetSVC
from pybudget._core import _validation as V
from pybudget.budget._budget import THREADS, BudgetModel
from pybudget.budget._decision import decision_values
from pybudget.budget._decision import kernel_decision

from helpers import make_problem


def model(d=30, n_sv=40, n_coef=1, seed=0):
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((n_sv, d)) * (rng.random((n_sv, d)) < 0.3)
    beta = rng.standard_normal((n_sv, n_coef))
    return Z, beta


@pytest.mark.parametrize("n_coef", [1, 4])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_rows_on_threads_are_decision_streams_bits(n_coef, dtype):
    Z, beta = model(n_coef=n_coef)
    X = sp.random(1001, 30, density=0.2, format="csr", random_state=1, dtype=dtype)
    xsq = V.row_sqnorms(X)
    mdl = BudgetModel(30, n_coef, 50, 0.3)
    mdl.load(Z, beta)
    ref = mdl.decision_stream(X, xsq).reshape(-1, n_coef)   # (one thread)
    for threads in (1, 2, 3, 8):
        got, ran = mdl.decision_rows(X, xsq, threads)
        np.testing.assert_array_equal(got, ref)
        assert ran == (threads if THREADS else 1)     # (a team ran: 1001 rows each time)
    # the numpy formula, in another order: equal to rounding
    want = kernel_decision(X, Z, beta.T, 0.3)
    np.testing.assert_allclose(ref, want, rtol=1e-12, atol=1e-15)


def test_fewer_rows_than_threads_and_no_rows():
    Z, beta = model()
    mdl = BudgetModel(30, 1, 40, 0.5)
    mdl.load(Z, beta)
    X = sp.random(2, 30, density=0.5, format="csr", random_state=2)
    got, ran = mdl.decision_rows(X, V.row_sqnorms(X), 4)
    np.testing.assert_array_equal(got[:, 0], mdl.decision_stream(X, V.row_sqnorms(X)))
    assert ran <= 2
    empty = sp.csr_matrix((0, 30))
    got, ran = mdl.decision_rows(empty, np.zeros(0), 4)
    assert got.shape == (0, 1) and ran == 0


def test_bad_arguments_are_refused():
    Z, beta = model()
    mdl = BudgetModel(30, 1, 40, 0.5)
    mdl.load(Z, beta)
    X = sp.random(5, 30, density=0.5, format="csr", random_state=2)
    with pytest.raises(ValueError, match="n_threads"):
        mdl.decision_rows(X, V.row_sqnorms(X), 0)
    with pytest.raises(ValueError, match="matching"):
        mdl.decision_rows(X, np.zeros(4), 2)
    with pytest.raises(ValueError, match="matching"):
        mdl.decision_rows(X.toarray(), V.row_sqnorms(X), 2)


def test_an_empty_model_decides_zero():
    X = sp.random(5, 30, density=0.5, format="csr", random_state=2)
    out = decision_values(np.zeros((0, 30)), np.zeros((0, 3)), 0.5, X, n_threads=2)
    np.testing.assert_array_equal(out, np.zeros((5, 3)))


@pytest.mark.parametrize("solver", ["bsgd", "bsca"])
@pytest.mark.parametrize("classes", [2, 3])
def test_estimator_predicts_the_same_bits_for_every_n_jobs(solver, classes):
    X, y = make_problem(n=300, d=20, density=0.4, seed=3)
    if classes == 3:
        y = np.arange(300) % 3
    clf = BudgetSVC(budget=30, solver=solver, random_state=0).fit(X, y)
    ref = clf.decision_function(X)
    dense = clf.decision_function(X.toarray())
    np.testing.assert_array_equal(dense, ref)
    for n_jobs in (2, -1):
        clf.set_params(n_jobs=n_jobs)
        np.testing.assert_array_equal(clf.decision_function(X), ref)
        np.testing.assert_array_equal(clf.predict(X), clf.classes_[
            (ref > 0).astype(int) if ref.ndim == 1 else ref.argmax(axis=1)])
    want = kernel_decision(X, clf.support_vectors_, clf.dual_coef_, clf.gamma_)
    want = want + clf.intercept_
    np.testing.assert_allclose(ref, want.reshape(ref.shape), rtol=1e-11, atol=1e-13)


def test_fit_with_threads_is_the_same_model():
    """The offset's scoring on threads: the same offset, so the same model."""
    X, y = make_problem(n=400, d=20, density=0.4, seed=5)
    a = BudgetSVC(budget=30, random_state=1).fit(X, y)
    b = BudgetSVC(budget=30, random_state=1, n_jobs=2).fit(X, y)
    np.testing.assert_array_equal(a.intercept_, b.intercept_)
    np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)


def test_a_model_too_large_for_the_buffer_is_scored_by_numpy(monkeypatch):
    """Above BUFFER_MAX_VALUES SV values the model is not copied into a buffer: numpy's
    formula scores it (equal to rounding)."""
    from pybudget.budget import _decision
    Z, beta = model(n_coef=2)
    X = sp.random(50, 30, density=0.3, format="csr", random_state=3)
    loop = decision_values(Z, beta, 0.3, X)
    monkeypatch.setattr(_decision, "BUFFER_MAX_VALUES", Z.size - 1)
    big = decision_values(Z, beta, 0.3, X, n_threads=2)
    np.testing.assert_array_equal(big, kernel_decision(X, Z, beta.T, 0.3))
    np.testing.assert_allclose(big, loop, rtol=1e-12, atol=1e-15)
