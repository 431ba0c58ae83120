"""pybudget.dask, method "whole": every worker holds all rows and runs whole problems
with the one-machine solver.  Its bits must be one machine's for the same parameters, the
same on any engine, worker count and thread count, and a lost worker must cost only
the problems it was running."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone

import pybudget
import pybudget.dask as pbd

from helpers import chunked, kill_on_task, tasks_run

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")


def make_data(n=1500, d=300, classes=5, seed=0):
    """Sparse rows, several classes (one-vs-rest), d > n/2 so text-like."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.05, format="csr", random_state=seed)
    X.data = rng.normal(size=X.data.shape)
    W = rng.normal(size=(d, classes))
    y = np.argmax(X @ W + 0.5 * rng.normal(size=(n, classes)), axis=1)
    return X, 10 * y + 3          # any label values


def primal(X, y, coef, intercept, C, loss="hinge"):
    """The one-vs-rest primal of each class, from scratch."""
    out = []
    for k, c in enumerate(np.unique(y)):
        s = np.where(y == c, 1.0, -1.0)
        m = s * (X @ coef[k] + intercept[k])
        xi = np.maximum(0.0, 1.0 - m)
        out.append(0.5 * (coef[k] @ coef[k] + intercept[k] ** 2)
                   + C * np.sum(xi if loss == "hinge" else xi * xi))
    return np.array(out)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_auto_picks_whole_for_small_data_and_the_ring_otherwise():
    X, y = make_data()
    size = 12 * X.nnz + 4 * X.shape[0]         # (the rows' bytes: _sources.rows_bytes)
    for labels in (y, (y > 20).astype(int)):           # one-vs-rest, binary
        for rules in (None, pbd.ClusterRules(whole_bytes=size)):
            m = pbd.LinearSVC(engine="threads", random_state=0, rules=rules).fit(X, labels)
            assert m.method_ == "whole"
    big = pbd.LinearSVC(engine="threads", random_state=0, max_iter=3,
                        rules=pbd.ClusterRules(whole_bytes=size - 1)).fit(X, y)
    assert big.method_ == "ring"


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
def test_whole_has_one_machine_bits_on_a_dask_array(client, loss, monkeypatch):
    """Chunks in order are the rows in order, and a tol the one-machine default meets
    stops every problem where one machine stops: the same bits, the problems run on
    both workers."""
    X, y = make_data()
    one = pybudget.LinearSVC(C=1.0, loss=loss, random_state=3).fit(X, y)
    Xd, yd = chunked(X, y, 4)
    with tasks_run(client) as ran:
        m = pbd.LinearSVC(C=1.0, loss=loss, random_state=3, client=client).fit(Xd, yd)
    ran_on = {w for name, w in ran if name == "solve_problems"}
    assert m.method_ == "whole"
    np.testing.assert_array_equal(m.classes_, one.classes_)
    np.testing.assert_array_equal(m.coef_, one.coef_)
    np.testing.assert_array_equal(m.intercept_, one.intercept_)
    assert len(ran_on) == 2
    # (the weights come through the client: counted)
    assert m.bytes_sent_["client"] >= (m.coef_.size + m.intercept_.size) * 8


def test_tol_reaches_the_worker_processes(client):
    """tol and max_iter travel to the workers (2 processes here) with their one-machine
    meaning: "whole" at tol=1e-4 gives one machine's bits at tol=1e-4, and at the
    default tol one machine's default bits (which differ)."""
    X, y = make_data(n=600, classes=3)
    one = pybudget.LinearSVC(tol=1e-4, random_state=0).fit(X, y)
    kw = dict(method="whole", random_state=0, client=client)
    m = pbd.LinearSVC(tol=1e-4, **kw).fit(X, y)
    np.testing.assert_array_equal(m.coef_, one.coef_)
    np.testing.assert_array_equal(m.intercept_, one.intercept_)
    default = pbd.LinearSVC(**kw).fit(X, y)
    one_default = pybudget.LinearSVC(random_state=0).fit(X, y)
    np.testing.assert_array_equal(default.coef_, one_default.coef_)
    assert default.n_iter_ < m.n_iter_ and not np.array_equal(default.coef_, one.coef_)


def test_rules_must_be_cluster_rules():
    X, y = make_data(n=200, classes=2)
    est = pbd.LinearSVC(engine="threads", rules=pbd.ClusterRules(whole_bytes=0))
    assert clone(est).get_params()["rules"] == pbd.ClusterRules(whole_bytes=0)
    with pytest.raises(ValueError, match="rules must be a pybudget.dask.ClusterRules"):
        pbd.LinearSVC(engine="threads", rules={"whole_bytes": 0}).fit(X, y)


def test_whole_follows_one_machine_to_the_primal_newton_solver():
    """Where "auto" sends one machine to the primal Newton solver (many rows per column,
    a smooth loss), "whole" runs it too: one machine's bits; the ring keeps dual CD."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1500, 4)) * [1, 10, 100, 1000]
    y = np.where(X @ [1, 0.1, 0.01, -0.001] + rng.logistic(size=1500) > 0, 2, 7)
    one = pybudget.LogisticRegression(random_state=0).fit(X, y)
    m = pbd.LogisticRegression(random_state=0, engine="threads").fit(X, y)
    assert one.selection_ == m.selection_ == "newton" and m.method_ == "whole"
    np.testing.assert_array_equal(m.coef_, one.coef_)
    np.testing.assert_array_equal(m.intercept_, one.intercept_)
    ring = pbd.LogisticRegression(random_state=0, engine="threads", method="ring")
    assert ring.fit(X, y).selection_ == "shrinking"


@pytest.mark.parametrize("tol", [1e-4, 0.1])
def test_whole_is_one_machines_fit_for_the_same_parameters(tol):
    """Every problem stops where one machine's does, with its KKT violation, duals'
    objective and convergence flags; the primal recomputed here agrees."""
    X, y = make_data(seed=2)
    C = 0.1
    m = pbd.LinearSVC(C=C, tol=tol, random_state=0, engine="threads").fit(X, y)
    one = pybudget.LinearSVC(C=C, tol=tol, random_state=0).fit(X, y)
    assert m.method_ == "whole"
    np.testing.assert_array_equal(m.coef_, one.coef_)
    for name in ("kkt_violation_", "dual_objective_", "converged_"):
        np.testing.assert_array_equal(getattr(m, name), getattr(one, name))
    assert (m.kkt_violation_ <= tol).all() and m.n_iter_ == one.n_iter_
    P = primal(X, y, m.coef_, m.intercept_, C)
    np.testing.assert_allclose(P, m.primal_objective_, rtol=1e-9)
    np.testing.assert_allclose(m.dual_objective_, P * (1 - m.duality_gap_), rtol=1e-9)


def test_whole_same_bits_for_engines_threads_and_workers(client):
    X, y = make_data(seed=4)
    kw = dict(C=1.0, tol=1e-3, random_state=1)
    ref = pbd.LinearSVC(engine="threads", **kw).fit(X, y)
    for n_jobs in (2, 3):
        other = pbd.LinearSVC(engine="threads", n_jobs=n_jobs, **kw).fit(X, y)
        np.testing.assert_array_equal(other.coef_, ref.coef_)
    m = pbd.LinearSVC(client=client, **kw).fit(X, y)
    np.testing.assert_array_equal(m.coef_, ref.coef_)
    np.testing.assert_array_equal(m.intercept_, ref.intercept_)
    np.testing.assert_array_equal(m.duality_gap_, ref.duality_gap_)
    with distributed.LocalCluster(n_workers=3, threads_per_worker=2, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c3:
        m3 = pbd.LinearSVC(client=c3, **kw).fit(X, y)
    np.testing.assert_array_equal(m3.coef_, ref.coef_)


@pytest.mark.parametrize("cls,kw", [
    (pbd.LogisticRegression, {}),
    (pbd.LinearSVC, {"class_weight": "balanced"}),
])
def test_whole_other_problems_match_one_machine(client, cls, kw):
    X, y = make_data(seed=5)
    sw = np.random.default_rng(0).uniform(0.5, 2.0, X.shape[0])
    local = getattr(pybudget, cls.__name__)(C=0.5, random_state=0, **kw).fit(
        X, y, sample_weight=sw)
    m = cls(C=0.5, random_state=0, client=client, n_partitions=3, **kw).fit(
        X, y, sample_weight=sw)
    assert m.method_ == "whole"
    # (in memory the partitions are blocks of contiguous rows for this method.
    # "balanced" sums the sample weights per partition, then over them: its class
    # weights, and so the model, may differ from one machine's in the last bits)
    rtol = 1e-10 if kw else 0.0
    np.testing.assert_allclose(m.coef_, local.coef_, rtol=rtol, atol=0.0)
    np.testing.assert_allclose(m.intercept_, local.intercept_, rtol=rtol, atol=0.0)


def test_whole_can_be_asked_for_a_binary_and_a_regression_problem(client):
    X, y = make_data(seed=6)
    yb = (y > 20).astype(int)
    m = pbd.LinearSVC(method="whole", random_state=0, client=client).fit(X, yb)
    one = pybudget.LinearSVC(random_state=0).fit(X, yb)
    assert m.method_ == "whole" and m.converged_.all() and m.kkt_violation_[0] <= 0.1
    np.testing.assert_array_equal(m.coef_, one.coef_)
    t = X @ np.random.default_rng(1).normal(size=X.shape[1])
    kw = dict(tol=1e-6, random_state=0)
    r = pbd.LinearSVR(method="whole", client=client, **kw).fit(X, t)
    np.testing.assert_array_equal(r.coef_, pybudget.LinearSVR(**kw).fit(X, t).coef_)
    ring = pbd.LinearSVR(method="ring", engine="threads", **kw).fit(X, t)
    assert r.converged_ and ring.converged_
    np.testing.assert_allclose(r.primal_objective_, ring.primal_objective_, rtol=2e-3)


@pytest.mark.cluster
@pytest.mark.parametrize("when, inputs", [("solve_problems", "in memory"),
                                          ("file_write_held", "in memory"),
                                          ("file_rows", "dask array")])
def test_whole_lost_worker_reruns_its_problems_to_the_same_bits(monkeypatch, tmp_path,
                                                                 when, inputs):
    """A worker lost while it runs a problem: the problem runs again on the other; lost
    while the rows are written into the host's file (by the worker holding every
    partition), or mapped, with its partitions: they are rebuilt from their sources and copied
    again.  The same bits either way; the host's file is unlinked by the live workers
    only (the scheduler would try to reach a lost one for 30 s)."""
    from pybudget.dask import _host_memory
    unlinks, run = [], distributed.Client.run

    def spy(self, fn, *args, workers=None, **kw):
        if fn is _host_memory.unlink_async:
            unlinks.append(workers)
        return run(self, fn, *args, workers=workers, **kw)

    monkeypatch.setattr(distributed.Client, "run", spy)
    X, y = make_data(seed=7)
    kw = dict(C=1.0, tol=1e-3, random_state=0)
    ref = pbd.LinearSVC(engine="threads", **kw).fit(X, y)
    if inputs == "dask array":
        X, y = chunked(X, y, 2)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        deaths = kill_on_task(c, when, tmp_path)
        m = pbd.LinearSVC(client=c, timeout=60, **kw).fit(X, y)
    killed = deaths()
    assert len(killed) == 1
    if when != "solve_problems":       # (lost while copying: before the unlink)
        assert unlinks and all(killed[0] not in ws for ws in unlinks)
    np.testing.assert_array_equal(m.coef_, ref.coef_)
    np.testing.assert_array_equal(m.intercept_, ref.intercept_)


def test_whole_deals_the_problems_a_few_to_a_task(client, monkeypatch):
    """The problems go a few to a task, fewer as fewer are left (_dask_whole._share),
    each exactly once, to one machine's bits; the last ones one to a task."""
    from pybudget.dask import _dask_whole
    X, y = make_data(classes=12, seed=4)
    with tasks_run(client) as ran:
        m = pbd.LinearSVC(method="whole", random_state=0, client=client).fit(X, y)
    one = pybudget.LinearSVC(random_state=0).fit(X, y)
    np.testing.assert_array_equal(m.coef_, one.coef_)
    tasks = [name for name, _ in ran].count("solve_problems")
    assert 2 < tasks < 12                      # (a few to a task, fewer at the end)
    assert [_dask_whole._share(left, 2) for left in (20, 15, 4, 3, 1)] == [5, 3, 1, 1, 1]


@pytest.mark.parametrize("case", ["text", "dense rows", "many rows, smooth loss",
                                  "balanced classes"])
def test_whole_auto_selection_is_one_machines(case):
    """"whole" leaves selection="auto" to the workers, which apply one machine's rule
    to all rows: the same choice (selection_) and bits as pybudget.LinearSVC."""
    kw, C, loss = {}, 1.0, "hinge"
    if case == "text":                        # columns > rows / 2: AVSF
        X, y = make_data(n=400)
    elif case == "dense rows":                # few columns: hard shrinking
        rng = np.random.default_rng(1)
        X = rng.normal(size=(800, 6))
        y = (X[:, 0] + 0.3 * rng.normal(size=800) > 0).astype(int)
    elif case == "many rows, smooth loss":    # 100 rows a column: the Newton solver
        rng = np.random.default_rng(2)
        X = rng.normal(size=(3000, 5))
        y = (X @ rng.normal(size=5) + 0.5 * rng.normal(size=3000) > 0).astype(int)
        loss = "squared_hinge"
    else:                                     # the rule weighs rows by their class
        X, y = make_data(seed=3)
        y = np.where(y == y.min(), 0, 1)
        kw, C = {"class_weight": "balanced"}, 3.0
    one = pybudget.LinearSVC(C=C, loss=loss, random_state=0, **kw).fit(X, y)
    m = pbd.LinearSVC(C=C, loss=loss, method="whole", random_state=0,
                      engine="threads", **kw).fit(X, y)
    assert m.selection_ == one.selection_
    np.testing.assert_array_equal(m.coef_, one.coef_)
    if case == "text":
        assert one.selection_ == "avsf"
    elif case == "dense rows":
        assert one.selection_ == "shrinking"
    elif case == "many rows, smooth loss":
        assert one.selection_ == "newton"
