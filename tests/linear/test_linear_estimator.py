import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from helpers import make_problem
from pybudget import LinearSVC, solve_linear


def test_binary_matches_solve_linear():
    X, y = make_problem(n=80, d=12, seed=1)
    est = LinearSVC(C=0.7, tol=1e-6, random_state=0, fit_intercept=False).fit(X, y)
    res = solve_linear(X, y, 0.7, tol=1e-6, random_state=0)
    np.testing.assert_allclose(est.coef_[0], res.coef, atol=1e-5)
    assert est.coef_.shape == (1, 12) and est.intercept_.shape == (1,)
    assert est.decision_function(X).shape == (80,)
    assert est.dual_objective_[0] == pytest.approx(res.dual_objective, rel=1e-9)


def test_multiclass_one_vs_rest_and_labels():
    rng = np.random.default_rng(2)
    centers = rng.standard_normal((3, 5)) * 4
    y = rng.integers(0, 3, 150)
    X = centers[y] + rng.standard_normal((150, 5))
    names = np.array(["a", "b", "c"])[y]
    est = LinearSVC(tol=1e-7, max_iter=100000, random_state=0).fit(X, names)
    assert list(est.classes_) == ["a", "b", "c"]
    assert est.coef_.shape == (3, 5) and est.decision_function(X).shape == (150, 3)
    assert est.score(X, names) > 0.9
    # each row of coef_ is the binary "class k vs rest" problem
    res = solve_linear(X, (y == 1).astype(int), 1.0, fit_intercept=True, tol=1e-7,
                       max_iter=100000, random_state=1)
    assert est.dual_objective_[1] == pytest.approx(res.dual_objective, rel=1e-7)
    np.testing.assert_allclose(est.coef_[1], res.coef, atol=1e-5)


def test_sparse_dense_float32_same_model():
    X, y = make_problem(n=60, d=10, seed=3)
    a = LinearSVC(tol=1e-6, random_state=0).fit(X, y)
    b = LinearSVC(tol=1e-6, random_state=0).fit(X.toarray(), y)
    c = LinearSVC(tol=1e-6, random_state=0).fit(sp.csc_matrix(X, dtype=np.float32), y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_allclose(a.coef_, c.coef_, atol=1e-5)
    np.testing.assert_array_equal(a.predict(X), b.predict(X.toarray()))


def test_class_weight_equals_sample_weight():
    X, y = make_problem(n=60, d=10, seed=4)
    a = LinearSVC(class_weight={1.0: 3.0}, tol=1e-8, max_iter=100000, random_state=0).fit(X, y)
    b = LinearSVC(tol=1e-8, max_iter=100000, random_state=0).fit(
        X, y, sample_weight=np.where(y == 1, 3.0, 1.0))
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-6)
    bal = LinearSVC(class_weight="balanced", random_state=0).fit(X, y)
    assert bal.coef_.shape == (1, 10)
    with pytest.raises(ValueError, match="class_weight has label 7"):
        LinearSVC(class_weight={7: 1.0}).fit(X, y)
    with pytest.raises(ValueError, match="class_weight must be"):
        LinearSVC(class_weight="heavy").fit(X, y)


def test_pickle_clone_params():
    X, y = make_problem(n=60, d=10, seed=5)
    est = LinearSVC(C=3.0, selection="shrinking", random_state=0).fit(X, y)
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.decision_function(X), est.decision_function(X))
    c = clone(est)
    assert c.get_params() == est.get_params() and not hasattr(c, "coef_")
    assert est.n_iter_ >= 1 and est.n_steps_ >= 60 and est.converged_.all()


def test_convergence_warning_on_cap():
    X, y = make_problem(n=100, d=20, seed=6)
    with pytest.warns(ConvergenceWarning, match="max_iter=1"):
        est = LinearSVC(C=100.0, tol=1e-9, max_iter=1, random_state=0).fit(X, y)
    assert est.n_iter_ == 1 and not est.converged_.any()


def test_reproducible_random_state():
    X, y = make_problem(n=100, d=20, seed=7)
    a = LinearSVC(C=10.0, random_state=5).fit(X, y)
    b = LinearSVC(C=10.0, random_state=5).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)


def test_verbose_two_prints_the_per_sweep_trace(capsys):
    X, y = make_problem(n=60, d=8, seed=2)
    LinearSVC(verbose=2, tol=1e-3, random_state=0).fit(X, y)
    err = capsys.readouterr().err
    assert "sweep 1:" in err and "violation" in err
    LinearSVC(verbose=1, tol=1e-3, random_state=0).fit(X, y)
    assert "sweep 1:" not in capsys.readouterr().err
