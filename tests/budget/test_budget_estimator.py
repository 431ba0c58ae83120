"""BudgetSVC / solve_budget: scikit-learn compliance and every bad input it rejects."""
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.utils.estimator_checks import check_estimator

from pybudget import BudgetSVC, solve_budget
from pybudget.budget.svm import scale_gamma


@pytest.mark.parametrize("solver", ["bsgd", "bsca"])
def test_check_estimator(solver):
    check_estimator(BudgetSVC(C=10.0, epochs=5, budget=50, solver=solver, random_state=0))


def data(n=120, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = np.where(X[:, 0] * X[:, 1] > 0, "a", "b")
    return X, y


BAD = [
    (dict(budget=1), ValueError, "budget must be an integer >= 2"),
    (dict(budget=2.5), TypeError, "budget must be an integer"),
    (dict(merge_size=1), ValueError, "merge_size must be an integer >= 2"),
    (dict(budget=5, merge_size=6), ValueError, "merge_size=6 must not exceed budget=5"),
    (dict(gamma=0.0), ValueError, "gamma must be a positive finite number"),
    (dict(gamma=-1.0), ValueError, "gamma must be a positive finite number"),
    (dict(gamma="auto"), ValueError, "gamma must be a positive number or 'scale'"),
    (dict(C=0.0), ValueError, "C must be a positive finite number"),
    (dict(C=-2), ValueError, "C must be a positive finite number"),
    (dict(epochs=0), ValueError, "epochs must be an integer >= 1"),
    (dict(solver="smo"), ValueError, "solver must be one of"),
    (dict(maintenance="drop"), ValueError, "maintenance must be one of"),
    (dict(merge_search="bisect"), ValueError, "merge_search must be one of"),
    (dict(multi_merge="tree"), ValueError, "multi_merge must be one of"),
    (dict(merge_tol=0.0), ValueError, "merge_tol must be a positive finite number"),
    (dict(maintenance="remove", merge_size=3), ValueError,
     r"merge_size=3 only apply to maintenance='merge'"),
    (dict(maintenance="project", merge_search="lookup-wd"), ValueError,
     r"merge_search='lookup-wd' only apply to maintenance='merge'"),
    (dict(maintenance="remove", multi_merge="gradient"), ValueError,
     r"multi_merge='gradient' only apply to maintenance='merge'"),
    (dict(averaging="mean"), ValueError, "averaging must be one of"),
    (dict(averaging="all", solver="bsca"), ValueError,
     r"averaging='all' applies to solver='bsgd' only"),
]


@pytest.mark.parametrize("params,exc,msg", BAD)
def test_bad_parameters(params, exc, msg):
    X, y = data()
    with pytest.raises(exc, match=msg):
        BudgetSVC(**params).fit(X, y)
    with pytest.raises(exc, match=msg):
        solve_budget(X, y, **params)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_inf_rejected(bad):
    X, y = data()
    X[3, 2] = bad
    with pytest.raises(ValueError, match="NaN|infinity"):
        BudgetSVC().fit(X, y)
    with pytest.raises(ValueError, match="NaN|infinity"):
        solve_budget(sp.csr_matrix(X), y)


def test_single_class_rejected():
    X, _ = data()
    with pytest.raises(ValueError, match="class"):
        BudgetSVC().fit(X, np.ones(X.shape[0]))
    with pytest.raises(ValueError, match="1 class"):
        solve_budget(X, np.ones(X.shape[0]))


def test_partial_fit_errors():
    X, y = data()
    with pytest.raises(ValueError, match="classes must be passed on the first call"):
        BudgetSVC().partial_fit(X, y)
    with pytest.raises(ValueError, match="classes has 1 class"):
        BudgetSVC().partial_fit(X, y, classes=1)
    clf = BudgetSVC(random_state=0).partial_fit(X[:50], y[:50], classes=["a", "b"])
    with pytest.raises(ValueError, match=r"labels \['c'\] not in classes"):
        clf.partial_fit(X[:3], ["a", "c", "b"])
    with pytest.raises(ValueError, match=r"labels \['c'\] not in classes"):
        BudgetSVC().partial_fit(X[:3], ["a", "c", "b"], classes=["a", "b"])
    with pytest.raises(ValueError, match="differ from the classes"):
        clf.partial_fit(X[:3], y[:3], classes=["a", "b", "z"])
    with pytest.raises(AttributeError, match="partial_fit"):
        BudgetSVC(solver="bsca").partial_fit(X, y, classes=["a", "b"])
    with pytest.raises(ValueError, match="features"):
        clf.partial_fit(X[:5, :3], y[:5])
    full = BudgetSVC(budget=20, random_state=0).fit(X, y)
    full.set_params(budget=5)
    with pytest.raises(ValueError, match="20 support vectors, more than budget=5"):
        full.partial_fit(X, y)
    # a refused call leaves a partial_fit model exactly as it was
    part = BudgetSVC(budget=20, random_state=0).partial_fit(X[:60], y[:60], classes=["a", "b"])
    before = (part._n_seen, part._t, part.dual_coef_.copy(), part.gamma_)
    part.set_params(budget=5)
    with pytest.raises(ValueError, match="more than budget=5"):
        part.partial_fit(X[60:], y[60:])
    assert (part._n_seen, part._t, part.gamma_) == (before[0], before[1], before[3])
    np.testing.assert_array_equal(part.dual_coef_, before[2])
    fresh = BudgetSVC(budget=10**6)
    with pytest.raises(ValueError, match="GiB"):
        fresh.partial_fit(np.ones((3, 1000)), [0, 1, 0], classes=[0, 1])
    assert not hasattr(fresh, "gamma_") and not hasattr(fresh, "classes_")
    from sklearn.exceptions import NotFittedError
    with pytest.raises(NotFittedError):
        fresh.predict(np.ones((1, 1000)))
    with pytest.raises(TypeError, match="verbose"):
        BudgetSVC(verbose="1").fit(X, y)
    # averaging and checkpoints apply to fit only: partial_fit continues the last iterate
    plain = BudgetSVC(random_state=0).partial_fit(X, y, classes=["a", "b"])
    for kw in (dict(averaging="last-half"), dict(checkpoints=4)):
        other = BudgetSVC(random_state=0, **kw).partial_fit(X, y, classes=["a", "b"])
        np.testing.assert_array_equal(other.dual_coef_, plain.dual_coef_)
    # a chunk with a single (known) class is fine
    clf.partial_fit(X[y == "a"][:10], np.array(["a"] * 10))


def test_budget_capped_at_n_and_said_in_verbose(capsys):
    X, y = data(n=30)
    clf = BudgetSVC(budget=500, verbose=1, random_state=0).fit(X, y)
    assert "budget=500 exceeds the 30 training rows; using 30" in capsys.readouterr().err
    assert clf.support_vectors_.shape[0] <= 30


def test_dense_and_sparse_give_the_same_model():
    X, y = data()
    X[np.abs(X) < 0.5] = 0.0
    a = BudgetSVC(budget=20, epochs=2, random_state=3).fit(X, y)
    b = BudgetSVC(budget=20, epochs=2, random_state=3).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(a.support_vectors_, b.support_vectors_, rtol=1e-12)
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(sp.csr_matrix(X)),
                               rtol=1e-10, atol=1e-12)
    assert a.gamma_ == pytest.approx(b.gamma_, rel=1e-12)


def test_gamma_scale_matches_sklearn_convention():
    X, _ = data()
    assert scale_gamma(X) == pytest.approx(1.0 / (X.shape[1] * X.var()))
    Xs = sp.random(50, 8, density=0.3, random_state=0, format="csr")
    assert scale_gamma(Xs) == pytest.approx(1.0 / (8 * Xs.toarray().var()))


def test_solve_budget_result_and_estimator_agree():
    X, y = data()
    res = solve_budget(X, y, C=5.0, gamma=0.5, budget=15, epochs=2, random_state=1)
    clf = BudgetSVC(C=5.0, gamma=0.5, budget=15, epochs=2, random_state=1).fit(X, y)
    np.testing.assert_array_equal(res.support_vectors, clf.support_vectors_)
    assert res.n_iter == clf.n_iter_ == 2 and res.n_merges == clf.n_merges_ > 0
    assert res.time > 0 and 0 <= res.merge_time <= res.time
    assert list(res.classes) == ["a", "b"]
    # decision function from the arrays: k(X, SV) @ dual_coef.T + intercept
    K = np.exp(-0.5 * ((X[:, None] - res.support_vectors[None]) ** 2).sum(-1))
    np.testing.assert_array_equal(res.intercept, clf.intercept_)
    assert res.intercept.shape == (1,)
    np.testing.assert_allclose(clf.decision_function(X),
                               (K @ res.dual_coef.T).ravel() + res.intercept,
                               rtol=1e-10, atol=1e-12)


def test_pickle_round_trip_and_continue():
    X, y = data()
    clf = BudgetSVC(budget=15, random_state=0).partial_fit(X[:60], y[:60], classes=["a", "b"])
    clone = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(clf.predict(X), clone.predict(X))
    clone.partial_fit(X[60:], y[60:])
    assert clone._t == 120 and clone.support_vectors_.shape[0] <= 15


def test_averaging_returns_the_mean_iterate_on_the_same_svs():
    X, y = data()
    last = solve_budget(X, y, C=10, gamma=0.5, budget=15, epochs=2, random_state=0)
    for averaging in ("all", "last-half"):
        avg = solve_budget(X, y, C=10, gamma=0.5, budget=15, epochs=2, random_state=0,
                           averaging=averaging)
        # same trajectory (same SVs), different coefficients
        np.testing.assert_array_equal(avg.support_vectors, last.support_vectors)
        assert not np.allclose(avg.dual_coef, last.dual_coef)
        clf = BudgetSVC(C=10, gamma=0.5, budget=15, epochs=2, random_state=0,
                        averaging=averaging).fit(X, y)
        np.testing.assert_allclose(clf.dual_coef_, avg.dual_coef, rtol=1e-12)
        assert clf.score(X, y) > 0.8


def test_verbose_reports_epochs_with_eta(capsys):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 4))
    y = (X[:, 0] > 0).astype(int)
    for solver in ("bsgd", "bsca"):
        BudgetSVC(budget=20, epochs=3, solver=solver, verbose=1, random_state=0).fit(X, y)
        err = capsys.readouterr().err
        assert "epoch 1/3" in err and "epoch 3/3" in err and "ETA" in err


def _run_recording(solver, X, y, budget, epochs, seed, **avg):
    """bsgd_run / bsca_run on (X, y): with check_every=1 the model after every step is
    recorded (no averaging), otherwise the run averages as `avg` says."""
    from pybudget._core import _validation as Vd
    from pybudget.budget._bsca import bsca_run
    from pybudget.budget._bsgd import bsgd_run
    from pybudget.budget._budget import BudgetModel
    from pybudget.budget._maintain import Maintainer
    Xc = Vd.canonical_csr(sp.csr_matrix(X))
    n, d = X.shape
    xsq = np.asarray(Xc.multiply(Xc).sum(1)).ravel()
    mdl = BudgetModel(d, 1, budget + 1, 0.5, n if solver == "bsca" else 0)
    mt = Maintainer(mdl, "merge", "gss", "cascade", 2, 0.01)
    models = []

    def record(m):
        Z, beta, _ = m.arrays()
        models.append((Z, beta))

    every = 0 if avg else 1
    if solver == "bsgd":
        codes = (y > 0).astype(np.int32)
        out = bsgd_run(Xc, xsq, codes, mdl, mt, budget, 2, 1.0 / (n * 10.0), epochs, 0,
                       seed, avg.get("avg_start", 0), None, every, record if every else None)
    else:
        out = bsca_run(Xc, xsq, y.astype(float), 10.0, np.zeros(n), mdl, mt, budget, 2,
                       epochs, seed, None, every, record if every else None,
                       avg.get("avg_start", 0))
    record(mdl)
    return out, mdl, models


@pytest.mark.parametrize("solver", ["bsgd", "bsca"])
def test_tail_average_is_the_mean_of_the_iterates(solver):
    # budget above n: no maintenance, so the SVs stay put and the averaged model must be
    # exactly the numpy mean of the recorded models after each step of the window
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 3))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=40) > 0, 1, -1)
    _, _, models = _run_recording(solver, X, y, 60, 2, 5)
    start = 57                                    # steps 57 .. 80 of 2 x 40
    out, mdl, _ = _run_recording(solver, X, y, 60, 2, 5, avg_start=start)
    assert out["n_avg"] == 80 - start + 1
    Z, _ = models[-1]
    ref = np.zeros((Z.shape[0], 1))
    for Zs, beta in models[start - 1:80]:        # models[s - 1]: after step s
        np.testing.assert_array_equal(Zs, Z[:Zs.shape[0]])
        ref[:beta.shape[0]] += beta
    np.testing.assert_allclose(mdl.averaged() / out["n_avg"], ref / out["n_avg"],
                               rtol=1e-10, atol=1e-12)


def test_bsca_tail_averaging_option():
    X, y = data()
    last = solve_budget(X, y, C=10, gamma=0.5, budget=15, solver="bsca", random_state=0,
                        offset=False, averaging="none")
    auto = solve_budget(X, y, C=10, gamma=0.5, budget=15, solver="bsca", random_state=0,
                        offset=False)
    tail = solve_budget(X, y, C=10, gamma=0.5, budget=15, solver="bsca", random_state=0,
                        offset=False, averaging="tail")
    np.testing.assert_array_equal(auto.dual_coef, tail.dual_coef)     # auto: tail for bsca
    np.testing.assert_array_equal(tail.support_vectors, last.support_vectors)
    assert not np.allclose(tail.dual_coef, last.dual_coef)
    # with checkpoints, auto is the last iterate of each checkpoint (no averaging)
    ck = solve_budget(X, y, C=10, gamma=0.5, budget=15, solver="bsca", random_state=0,
                      offset=False, checkpoints=3)
    ck_none = solve_budget(X, y, C=10, gamma=0.5, budget=15, solver="bsca", random_state=0,
                           offset=False, checkpoints=3, averaging="none")
    np.testing.assert_array_equal(ck.dual_coef, ck_none.dual_coef)
    with pytest.raises(ValueError, match="bsgd"):
        BudgetSVC(solver="bsca", averaging="all").fit(X, y)
