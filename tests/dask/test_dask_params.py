"""The Dask estimators are the one-machine estimators with a cluster's parameters
added: the same parameters, defaults and meanings, one machine's model where the method
can give it, and one line for what a cluster does not do."""
import inspect
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

import pybudget

pytest.importorskip("distributed")
import pybudget.dask as pbd  # noqa: E402
from helpers import make_data, tall  # noqa: E402

PAIRS = [(pbd.LinearSVC, pybudget.LinearSVC),
         (pbd.LogisticRegression, pybudget.LogisticRegression),
         (pbd.LinearSVR, pybudget.LinearSVR)]
CLUSTER = {"method", "client", "n_partitions", "local_sweeps", "laps", "checkpoint_every",
           "engine", "timeout", "rules"}


@pytest.mark.parametrize("cls,local", PAIRS)
def test_the_one_machine_parameters_with_their_defaults(cls, local):
    ours = inspect.signature(cls).parameters
    theirs = inspect.signature(local).parameters
    assert set(ours) == set(theirs) | CLUSTER
    for name, p in theirs.items():
        assert ours[name].default == p.default, name
    assert issubclass(cls, local)
    assert set(cls().get_params()) == set(theirs) | CLUSTER


@pytest.mark.parametrize("tol", [0.1, 1e-3])
def test_the_ring_stops_on_one_machines_test(tol):
    """The ring stops at its first check whose exact largest KKT violation is at most
    tol: every check before it was above tol for the problem, the last one at most."""
    X, y = make_data(n=1200, d=40, seed=8)
    m = pbd.LinearSVC(tol=tol, method="ring", engine="threads", random_state=0,
                      max_iter=5000).fit(X, y)
    assert m.converged_.all() and (m.kkt_violation_ <= tol).all()
    assert all(e["kkt"] > tol for e in m.rounds_log_[:-1])
    assert m.rounds_log_[-1]["kkt"] <= tol and m.rounds_log_[-1]["round"] == m.n_rounds_
    one = pybudget.LinearSVC(tol=tol, random_state=0, max_iter=5000).fit(X, y)
    assert one.kkt_violation_.max() <= tol


def test_regression_tol_is_relative_to_the_targets_on_the_ring():
    """As on one machine, a regression tol is relative to max|y| - epsilon: the ring
    stops at a violation (in the targets' units) far above tol, below tol times that."""
    X, _ = make_data(n=600, d=20, seed=9)
    t = 1000 * (X @ np.random.default_rng(0).normal(size=X.shape[1]))
    m = pbd.LinearSVR(method="ring", engine="threads", random_state=0, tol=1e-3,
                      epsilon=1.0, max_iter=5000).fit(X, t)
    unit = np.abs(t).max() - 1.0
    assert m.converged_ and 1e-3 < m.kkt_violation_ <= 1e-3 * unit
    assert all(e["kkt"] > 1e-3 for e in m.rounds_log_[:-1])


def test_newton_is_one_machines_newton_route_for_regression():
    """Method "newton" and one machine's Newton route (here a dominant bias column
    sends it there) stop at the same relative gap, unscaled by the targets on both:
    the same iterations, the same model to round-off (sums in partition order)."""
    X, _ = tall(n=3000, d=6)
    X = X / np.linalg.norm(X, axis=1, keepdims=True)
    t = 500 * (X @ np.linspace(-1, 1, X.shape[1])) + 300
    kw = dict(C=0.01, loss="squared_epsilon_insensitive", intercept_scaling=100.0,
              random_state=0)
    one = pybudget.LinearSVR(**kw).fit(X, t)
    assert one.selection_ == "newton"
    m = pbd.LinearSVR(method="newton", engine="threads", **kw).fit(X, t)
    assert m.n_iter_ == one.n_iter_ and m.converged_
    np.testing.assert_allclose(m.coef_, one.coef_, rtol=1e-8)
    np.testing.assert_allclose(m.intercept_, one.intercept_, rtol=1e-8)


@pytest.mark.parametrize("kw,match", [
    ({"warm_start": True}, "warm_start=True is one machine's only"),
    ({"multi_class": "crammer_singer"}, "multi_class='ovr' only"),
])
def test_what_a_cluster_does_not_do_is_refused_in_one_line(kw, match):
    X, y = make_data(n=200, classes=3)
    with pytest.raises(ValueError, match=match):
        pbd.LinearSVC(engine="threads", **kw).fit(X, y)


@pytest.mark.parametrize("scaling", [1.0, 100.0])
def test_liblinears_regression_rule_runs_on_method_whole_only(scaling):
    """With tol_rule="liblinear" one machine keeps dual CD even for a dominant bias
    (intercept_scaling 100 here); "whole" plans as it does."""
    X, _ = make_data(n=300, d=10, seed=3)
    t = X @ np.ones(X.shape[1]) + 5
    local = dict(tol_rule="liblinear", random_state=0, intercept_scaling=scaling,
                 loss="squared_epsilon_insensitive")
    kw = dict(local, engine="threads")
    whole = pbd.LinearSVR(method="whole", **kw).fit(X, t)
    one = pybudget.LinearSVR(**local).fit(X, t)
    assert whole.selection_ == one.selection_
    np.testing.assert_array_equal(whole.coef_, one.coef_)
    with pytest.raises(ValueError, match="tol_rule='liblinear' is one machine's"):
        pbd.LinearSVR(method="ring", **kw).fit(X, t)


def test_max_iter_caps_the_rings_rounds_as_sweeps():
    X, y = make_data(n=600, d=30, seed=4)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        m = pbd.LinearSVC(tol=1e-9, max_iter=7, method="ring", engine="threads",
                          random_state=0).fit(X, y)
    assert m.n_rounds_ == m.n_iter_ == 7 and not m.converged_.any()
    assert any(issubclass(w.category, ConvergenceWarning) and "max_iter=7 rounds"
               in str(w.message) for w in got)


@pytest.mark.parametrize("cls,local", PAIRS)
def test_a_model_file_holds_the_one_machine_model(cls, local, tmp_path):
    """pybudget.save writes a cluster's estimator as its one-machine model (its
    cluster parameters are not the model's): load gives the local class back."""
    X, y = make_data(n=300, d=10, classes=3, seed=6)
    if cls is pbd.LinearSVR:
        y = X @ np.linspace(-1, 1, X.shape[1])
    m = cls(engine="threads", random_state=0).fit(X, y)
    pybudget.save(m, tmp_path / "m.pbm")
    back = pybudget.load(tmp_path / "m.pbm")
    assert type(back) is local and back.get_params() == m.to_local().get_params()
    np.testing.assert_array_equal(back.predict(X), m.predict(X))
