"""pybudget.dask on a Dask LocalCluster that the tests start themselves.

The engines and worker counts must give the same bits; bad input must fail in one line
and leave nothing behind (lost workers: test_dask_faults.py)."""
import math
import pickle
import warnings
from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

import pybudget
import pybudget.dask as pbd
from pybudget.dask import (_dask_engine, _dask_ring, _driver, _engines, _laps, _scheduler,
                           _steps, _worker)
from pybudget.dask._partition import PartCheck, PartSummary, Partition, add_into, encode
from pybudget.dask._plan import FitSpec
from pybudget.dask._sources import build_partition, row_bounds

from helpers import chunked, held, make_data, ring_estimators, ring_rules, tasks_run

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

# (the tests of the ring: "auto" never means "whole" on their small data)
LinearSVC, LogisticRegression, LinearSVR = ring_estimators()

# rules that take the small data here as large: the partitions spread over the workers
# (in runs: 2 + 2 for 4 partitions), the laps limited by the bytes they move, and "auto"
# not "whole"
SPREAD = ring_rules(small_bytes=1000)


# ---- the local solver and the driver --------------------------------------------------

def test_encode_round_trip_sparse_and_dense():
    w = np.zeros(30)
    w[[3, 7]] = [1.5, -2.0]
    assert encode(w)[0] == "sparse"
    dense = np.arange(30.0)
    assert encode(dense)[0] == "dense"
    for v in (w, dense):
        acc = np.ones(30)
        add_into(acc, encode(v))
        np.testing.assert_array_equal(acc, np.ones(30) + v)


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
def test_one_partition_is_serial_dual_cd(loss):
    """With K = 1 the local problem is the global one: the duality gap certifies the
    one-machine optimum (objective within the gap of solve_linear's)."""
    X, y = make_data()
    ref = pybudget.solve_linear(X, y, C=1.0, loss=loss, tol=1e-8, max_iter=20000,
                                fit_intercept=True, random_state=0)
    m = LinearSVC(C=1.0, loss=loss, tol=1e-6, n_partitions=1, engine="threads",
                  random_state=0, max_iter=5000).fit(X, y)
    assert m.converged_.all() and m.duality_gap_[0] <= 1e-6
    assert abs(m.primal_objective_[0] - ref.primal_objective) <= 2e-6 * ref.primal_objective
    # the reported gap is the gap of the returned weights
    w = np.concatenate([m.coef_[0], m.intercept_])
    margins = np.where(y == 1, 1, -1) * (X @ w[:-1] + w[-1])
    hinge = np.maximum(0, 1 - margins)
    primal = 0.5 * w @ w + np.sum(hinge ** 2 if loss == "squared_hinge" else hinge)
    assert primal == pytest.approx(m.primal_objective_[0], rel=1e-10)


@pytest.mark.parametrize("selection", ["uniform", "shrinking", "avsf"])
@pytest.mark.parametrize("est,kw", [
    (LinearSVC, {"loss": "hinge"}),
    (LinearSVC, {"loss": "squared_hinge", "fit_intercept": False}),
    (LogisticRegression, {}),
    (LinearSVR, {"epsilon": 0.1}),
])
def test_four_partitions_reach_the_one_machine_optimum(selection, est, kw):
    X, y = make_data(n=900, d=40)
    if est is LinearSVR:
        y = X @ np.linspace(-1, 1, X.shape[1]) + np.cos(np.arange(X.shape[0]))
        loss, local = kw.get("loss", "epsilon_insensitive"), {"epsilon": 0.1}
    else:
        loss = "logistic" if est is LogisticRegression else kw["loss"]
        local = {}
    bias = kw.get("fit_intercept", True)
    ref = pybudget.solve_linear(X, y, C=0.5, loss=loss, tol=1e-9, max_iter=50000,
                                fit_intercept=bias, random_state=0, **local)
    m = est(C=0.5, tol=1e-4, n_partitions=4, engine="threads", selection=selection,
            random_state=1, max_iter=5000, **kw).fit(X, y)
    # (LinearSVR's are scalars, as on one machine)
    conv, dual, primal = (np.atleast_1d(getattr(m, name)) for name in
                          ("converged_", "dual_objective_", "primal_objective_"))
    assert conv.all()
    # weak duality: the optimum lies between the dual and the primal objective
    p_opt = ref.primal_objective
    assert dual[0] <= p_opt * (1 + 1e-9) + 1e-9
    assert primal[0] >= p_opt * (1 - 1e-9) - 1e-9
    assert (primal[0] - p_opt) <= 1e-4 * abs(primal[0]) + 1e-9


def test_multiclass_one_vs_rest_matches_one_machine_predictions():
    X, y = make_data(n=1500, classes=4, seed=3)
    labels = np.array(["d", "c", "b", "a"])[y]           # any label values
    m = LinearSVC(C=1.0, tol=1e-4, engine="threads", random_state=0, method="ring",
                  max_iter=5000).fit(X, labels)
    one = pybudget.LinearSVC(C=1.0, tol=1e-4, random_state=0, max_iter=20000).fit(X, labels)
    np.testing.assert_array_equal(m.classes_, one.classes_)
    assert m.coef_.shape == (4, X.shape[1]) and m.duality_gap_.shape == (4,)
    agree = (m.predict(X) == one.predict(X)).mean()
    assert agree >= 0.995


def test_class_and_sample_weights_are_the_one_machine_problem():
    X, y = make_data(n=800, seed=5)
    sw = np.random.default_rng(0).uniform(0, 2, X.shape[0])
    sw[:50] = 0.0                                          # rows that take no part
    cw = {0: 2.0, 1: 0.5}
    one = pybudget.LinearSVC(C=1.0, tol=1e-6, class_weight=cw, max_iter=50000,
                             random_state=0).fit(X, y, sample_weight=sw)
    m = LinearSVC(C=1.0, tol=1e-4, class_weight=cw, engine="threads", random_state=0,
                  max_iter=20000).fit(X, y, sample_weight=sw)
    assert m.converged_.all()
    # the dual objective of the one-machine solution is a lower bound of our primal
    assert m.primal_objective_[0] >= one.dual_objective_[0] * (1 - 1e-9)
    assert m.primal_objective_[0] - one.dual_objective_[0] <= 1.1e-4 * m.primal_objective_[0]
    # and without the weights the problem differs
    plain = LinearSVC(C=1.0, tol=1e-4, engine="threads", random_state=0).fit(X, y)
    assert abs(plain.primal_objective_[0] - m.primal_objective_[0]) > 1e-2 * m.primal_objective_[0]


def test_local_sweeps_and_max_iter_warn():
    X, y = make_data()
    with pytest.warns(pybudget.ConvergenceWarning if hasattr(pybudget, "ConvergenceWarning")
                      else Warning, match="max_iter=2 rounds"):
        m = LinearSVC(tol=1e-9, max_iter=2, engine="threads", random_state=0).fit(X, y)
    assert m.n_rounds_ == 2 and not m.converged_[0]
    # the final gap is still exact (a check-only pass certifies the final weights)
    assert m.duality_gap_[0] > 1e-9
    # local sweeps: that many sweeps per visit (on these dealt rows they do not pay:
    # 166 rounds with 3 against 152 with 1, one lap each)
    kw = dict(tol=1e-9, max_iter=2, engine="threads", random_state=0, selection="uniform")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m3 = LinearSVC(local_sweeps=3, **kw).fit(X, y)
        m1 = LinearSVC(local_sweeps=1, laps=1, **kw).fit(X, y)
    assert m3.laps_ == m1.laps_ == 1
    assert m3.n_steps_ == 3 * m1.n_steps_ == 3 * 2 * X.shape[0]


def auto_laps(parts, d, movable):
    """laps="auto"'s (first laps, most laps) of the ring, one local sweep, one problem,
    the default rules."""
    return _laps.first("auto", "ring", 1, parts, 1, d, movable, pbd.ClusterRules())


def test_auto_laps_are_finer_when_visits_cover_many_non_zeros():
    """64 visits a round for short rows (a visit's calls would outweigh its work);
    visits of long rows are cut finer, down to min_visit_nnz non-zeros each, and never
    below min_visit_rows rows unless they cover min_visit_nnz non-zeros; spread data
    keeps the bytes' bound."""
    part = lambda n, per_row: PartSummary(n, 1000, n * per_row, ())   # noqa: E731
    assert auto_laps([part(16384, 14)] * 2, 1000, True) == (32, 64)
    # 16384 * 100 / 32768 = 50 laps of 328 rows
    assert auto_laps([part(16384, 100)] * 2, 1000, True) == (50, 64)
    # 16384 * 1000 / 32768 = 500 laps of 33 rows: many non-zeros however few rows
    assert auto_laps([part(16384, 1000)] * 2, 1000, True) == (500, 500)
    # (8 partitions of 500 rows of 1,000 non-zeros once had one lap)
    assert auto_laps([part(500, 1000)] * 8, 1000, True) == (15, 15)
    assert auto_laps([part(500, 45)] * 8, 1000, True) == (1, 1)
    # not movable, or above small_bytes (spread over the workers): as many as keep a
    # round's weights within a sweep's bytes
    laps, most = auto_laps([part(16384, 100)] * 2, 10**6, False)
    assert most == 64 and laps == 12 * 2 * 16384 * 100 // (2 * 8 * (10**6 + 1))
    laps, most = auto_laps([part(16384, 300)] * 2, 10**6, True)
    assert most == 150 and laps == 12 * 2 * 16384 * 300 // (2 * 8 * (10**6 + 1))


@pytest.mark.parametrize("K", [2, 8, 16, 32])
def test_auto_laps_aim_for_min_segments_visits_whatever_the_partitions(K):
    """With "auto", K partitions once got K laps (K^2 visits a round) for K > 8: 256 at K = 16,
    1,024 at K = 32.  The aim is min_segments visits a round."""
    parts = [PartSummary(16384, 1000, 16384, ())] * K     # (short rows: no finer laps)
    laps, _ = auto_laps(parts, 1000, True)
    assert laps * K == max(pbd.ClusterRules().min_segments, K)


def test_laps_share_out_one_sweep():
    """A round of several laps visits every row once (as many steps as one lap),
    and it needs fewer rounds than one lap per round on ordered rows."""
    X, y = make_data(n=4 * 16 * 256)         # (laps: at most one per 256 rows)
    order = np.argsort(y, kind="stable")     # sorted by class: the hard case
    X, y = X[order], y[order]
    kw = dict(engine="threads", random_state=0, n_partitions=4, selection="uniform")
    one = LinearSVC(laps=1, max_iter=3, **kw)
    four = LinearSVC(max_iter=3, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one.fit(X, y)
        four.fit(X, y)
    assert four.laps_ == 16 and one.laps_ == 1      # (64 visits a round)
    assert four.n_steps_ == one.n_steps_
    one = LinearSVC(laps=1, **kw).fit(X, y)
    four = LinearSVC(**kw).fit(X, y)
    assert four.n_rounds_ < one.n_rounds_
    with pytest.raises(ValueError, match="laps=2 with local_sweeps=2"):
        LinearSVC(laps=2, local_sweeps=2, engine="threads").fit(X, y)
    with pytest.raises(ValueError, match="laps"):
        LinearSVC(laps=0, engine="threads").fit(X, y)


def test_laps_double_when_the_checks_stall():
    """The driver doubles the ring's laps from round ``stall_rounds`` on, when the
    smallest violation so far, at its rate over the last half of the rounds run,
    predicts more than twice the rounds run (or made no progress there), up to
    max_laps; a fast rate, or a rise of the latest violation after progress, leaves
    them."""
    drv = _driver._Driver(1, 1, laps=2, max_laps=5)

    def check(t, kkt):
        drv.t = t
        drv.schedule({0: kkt}, 1e-4)

    check(1, 0.5)
    check(2, 0.49)                 # ~420 rounds ahead, but before round 10
    assert drv.laps == 2
    check(12, 0.45)                # ~1000 rounds ahead
    assert drv.laps == 4
    check(22, 1e-3)                # ~7 rounds ahead
    assert drv.laps == 4
    check(32, 2e-3)                # a rise: the smallest so far still falls fast
    assert drv.laps == 4
    check(42, 1.9e-3)
    assert drv.laps == 4
    check(62, 1.2e-3)              # no progress since round 22, the half's last check
    assert drv.laps == 5           # (capped)


def test_each_problem_is_checked_on_its_own_schedule():
    """A problem near tol is checked every round, one far from it later, by its own
    gap's rate, and never more than t/2 rounds after a check at round t."""
    drv = _driver._Driver(2, 1)
    drv.t = 10
    drv.schedule({0: 0.5, 1: 0.5}, 1e-2)
    drv.t = 12
    drv.schedule({0: 0.05, 1: 0.45}, 1e-2)   # 1.4 and 72 rounds ahead
    assert drv.next_check == {0: 13, 1: 18}    # (72 capped at 12 // 2)
    drv.t = 13
    assert drv.due() == [0]
    drv.active = [1]                           # problem 0 passed
    drv.t = 17
    assert drv.due() == []
    drv.t = 18
    assert drv.due() == [1]


def test_auto_laps_grow_on_a_stalling_ring(monkeypatch):
    """With a bias, a ring of few laps stalls (bench/ring_order.py): "auto" starts at
    one lap here (data taken as large: the bytes of 20,000 weights) and grows to the
    most (4: one per 256 rows), converging in a third of the rounds of one lap
    throughout."""
    X, y = make_data(n=2048, d=20000, density=10 / 20000)
    Xd, yd = chunked(X, y, 2)
    kw = dict(loss="squared_hinge", tol=1e-5, max_iter=400, engine="threads",
              random_state=0, rules=SPREAD)
    auto = LinearSVC(**kw).fit(Xd, yd)
    one = LinearSVC(laps=1, **kw).fit(Xd, yd)
    laps = [e["laps"] for e in auto.rounds_log_]
    assert laps[0] == 1 and auto.laps_ == 4 and laps == sorted(laps)
    assert {e["laps"] for e in one.rounds_log_} == {1} and one.laps_ == 1
    assert auto.converged_.all() and auto.n_rounds_ < one.n_rounds_ / 2


# ---- determinism -----------------------------------------------------------------------

def test_dask_equals_threads_bit_for_bit(client):
    X, y = make_data(classes=3)
    Xd, yd = chunked(X, y, 4)
    kw = dict(C=0.1, tol=1e-2, random_state=7, method="ring")
    a = LinearSVC(client=client, **kw).fit(Xd, yd)
    b = LinearSVC(engine="threads", **kw).fit(Xd, yd)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.intercept_, b.intercept_)
    np.testing.assert_array_equal(a.duality_gap_, b.duality_gap_)
    assert a.n_rounds_ == b.n_rounds_
    assert held(client) == {w: 0 for w in held(client)}     # nothing left on the workers


class HeldRows(_dask_ring.DaskRing):
    """Records, after each round that went with a check, each payload the engine keeps
    (the problems in it, the problems whose rows point to it)."""
    held = []

    def round(self, *a, **k):
        out = super().round(*a, **k)
        if out is not None:
            futs = self._payloads(self.rows)
            distributed.wait(futs)
            # (rows a run left on its worker: _worker.Held)
            on = self.eng.client.run(lambda: [k[1:] for k in _worker.STATE.held])
            rows = {tuple(k) for keys in on.values() for k in keys}
            for f in futs:
                res = _steps.payload_of(f.result())
                inside = ({j for tag, j in rows if tag == res.tag}
                          if isinstance(res, _worker.Held) else set(res))
                type(self).held.append((inside, set(self._held(f, self.rows))))
        return out


def test_a_check_and_its_round_leave_the_passed_problems_alone(client, monkeypatch):
    """The round submitted with a check visits only the problems that the check left
    open, as the workers decide from the check's sums: each problem keeps the weights
    its check certified (primal recomputed from coef_), on the Dask and threads engines
    alike, also when the problems pass at different checks; the engine keeps no
    payload with more problems than point to it (a check's result holds its group)."""
    X, y = make_data(n=1600, classes=4, seed=5)
    Xd, yd = chunked(X, y, 2)                # (groups of two problems)
    kw = dict(C=1.0, random_state=0, max_iter=500, method="ring")
    monkeypatch.setattr(_dask_engine, "DaskRing", HeldRows)
    HeldRows.held = []
    a = LinearSVC(client=client, **kw).fit(Xd, yd)
    assert len(HeldRows.held) > 10
    assert all(inside == pointing for inside, pointing in HeldRows.held)
    b = LinearSVC(engine="threads", **kw).fit(Xd, yd)
    active = [e["active"] for e in b.rounds_log_]
    assert len(set(active) - {0}) >= 2        # problems passed at different checks
    # checks of some of the open problems only (each on its own schedule)
    assert any(e["checked"] < e["active"] for e in b.rounds_log_)
    assert [e["checked"] for e in a.rounds_log_] == [e["checked"] for e in b.rounds_log_]
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.intercept_, b.intercept_)
    for k in range(4):
        w = np.concatenate([b.coef_[k], b.intercept_[k:k + 1]])
        hinge = np.maximum(0, 1 - np.where(y == k, 1, -1) * (X @ w[:-1] + w[-1]))
        assert 0.5 * w @ w + hinge.sum() == pytest.approx(b.primal_objective_[k],
                                                          rel=1e-10)


def test_workers_are_asked_afresh_not_from_the_client_cache(client, monkeypatch):
    # the client's periodic refresh leaves a cache with no workers in it; a fit that read
    # it saw a live cluster as empty now and then and restarted after a phantom loss
    live = sorted(client.run(lambda: 0))
    monkeypatch.setattr(client, "scheduler_info", lambda *a, **k: {"workers": {}})
    assert _scheduler.worker_addresses(client) == live
    X, y = make_data()
    m = LinearSVC(C=0.1, tol=1e-2, random_state=7, client=client).fit(*chunked(X, y, 4))
    assert m.recoveries_ == 0 and m.converged_.all()


def test_worker_addresses_from_a_scheduler_without_arguments(client, monkeypatch):
    live, sync = sorted(client.run(lambda: 0)), client.sync

    def old_scheduler(fn, *a, **k):          # Scheduler.identity() took no argument
        if k:
            raise TypeError("identity() got an unexpected keyword argument 'n_workers'")
        return sync(fn, *a)

    monkeypatch.setattr(client, "sync", old_scheduler)
    monkeypatch.setattr(_scheduler, "_IDENTITY_WITHOUT_ARGS", set())
    assert _scheduler.worker_addresses(client) == live
    assert _scheduler._IDENTITY_WITHOUT_ARGS == {client.scheduler.address}
    assert _scheduler.worker_addresses(client) == live


def test_small_dask_array_is_gathered_on_one_worker(client):
    """A small Dask array whose chunks live on both workers once kept its
    partitions where the chunks were, and paid a hop per visit (a9a as a 4-chunk array,
    C = 1, tol 1e-3: 264 s, 139 rounds).  Its partitions are now gathered on one worker,
    with the laps of any small data; the threads engine fits a persisted array too (it
    raised a KeyError), with the same bits."""
    X, y = make_data(n=1600, d=300, density=0.05, seed=6)
    w0, w1 = _scheduler.worker_addresses(client)
    blocks = []
    for k in range(4):
        rows = slice(400 * k, 400 * (k + 1))
        fut = client.scatter(X[rows], workers=[(w0, w1)[k % 2]])
        blocks.append(da.from_delayed(fut, shape=(400, X.shape[1]), dtype=X.dtype,
                                      meta=sp.csr_matrix((0, X.shape[1]))))
    Xd = da.concatenate(blocks, axis=0)
    yd = client.persist(da.from_array(y, chunks=400))
    m = LinearSVC(C=0.5, tol=1e-3, random_state=0, client=client).fit(Xd, yd)
    assert len(set(m.partition_workers_)) == 1
    ref = LinearSVC(C=0.5, tol=1e-3, random_state=0, engine="threads").fit(Xd, yd)
    np.testing.assert_array_equal(m.coef_, ref.coef_)
    assert held(client) == {w: 0 for w in held(client)}


def test_small_data_is_placed_on_one_worker(client):
    """Small data: the ring's partitions on one worker (one task a round); above
    ``small_bytes``, contiguous runs over the workers; the same bits either way (the
    laps given: the rule also sets the laps of "auto")."""
    X, y = make_data(n=800)
    kw = dict(C=0.1, tol=1e-3, random_state=0, client=client, n_partitions=4, laps=2)
    small = LinearSVC(**kw).fit(X, y)
    assert len(set(small.partition_workers_)) == 1
    spread = LinearSVC(rules=SPREAD, **kw).fit(X, y)
    where = spread.partition_workers_
    assert where[0] == where[1] != where[2] == where[3]
    np.testing.assert_array_equal(small.coef_, spread.coef_)
    # the ring moved its weights between the workers only when spread
    assert spread.bytes_sent_["workers"] > small.bytes_sent_["workers"]


def test_changes_rebuild_every_replica_bit_for_bit():
    """The sparse hops' rule (_steps.Changes) on three replicas in a ring: each receiver,
    whatever run its replica is at, gets the weights bit for bit (a zero's sign too);
    the change-sets go as a base (the weights) once they would take as many bytes."""
    rng = np.random.default_rng(0)
    d, workers = 500, 3
    w = rng.normal(size=d)
    reps = [w.copy() for _ in range(workers)]
    seen = [0] * workers
    sent, run, bases = _steps.Changes(), 0, 0
    for hop in range(60):
        at = hop % workers
        sent.apply(reps[at], seen[at])
        np.testing.assert_array_equal(reps[at].view(np.int64), w.view(np.int64))
        run += 1
        before = reps[at].copy()
        k = 400 if hop % 10 == 9 else 5      # now and then most entries change
        idx = rng.choice(d, k, replace=False)
        reps[at][idx] = np.where(rng.random(k) < 0.1, -0.0, rng.normal(size=k))
        w = reps[at].copy()
        seen[at] = run
        keep = min(seen[q] for q in range(workers) if q != at)
        sent = sent.sent_on(reps[at], run, keep, (_steps.change_set(run, before, w),))
        assert sent.nbytes < w.nbytes + 12 * 2 * 5 * workers
        bases += sent.base is not None and sent.base_run == run
    assert 4 <= bases <= 8


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_spread_ring_with_laps_sends_changes(client):
    """Spread over the workers with several laps a round, a visit changes a share of
    the weights and the ring sends the changes: the same bits as the threads engine
    and as sending the weights (sparse_laps=inf), in a fraction of the bytes."""
    X, y = make_data(n=2000, d=20000, density=10 / 20000, classes=3)
    kw = dict(C=1.0, tol=1e-6, random_state=0, laps=4, max_iter=12, n_partitions=4,
              method="ring")
    sparse = LinearSVC(client=client, rules=SPREAD, **kw).fit(X, y)
    ref = LinearSVC(engine="threads", rules=SPREAD, **kw).fit(X, y)
    dense = LinearSVC(client=client, rules=replace(SPREAD, sparse_laps=math.inf),
                      **kw).fit(X, y)
    for m in (sparse, dense):
        np.testing.assert_array_equal(m.coef_, ref.coef_)
        np.testing.assert_array_equal(m.intercept_, ref.intercept_)
    assert sparse.bytes_sent_["workers"] < dense.bytes_sent_["workers"] / 3
    assert held(client) == {w: 0 for w in held(client)}


def test_rows_move_between_workers_outside_the_task_results(client, monkeypatch):
    """A ring run leaves its rows on its worker (``_worker.Held``): the next run, on
    another worker, takes them a row at a time, so no task result that crosses between
    workers holds weights (Dask would keep the sender's copy until the receiving task
    has it, and a worker would hold the group it passed on and the one coming at
    once); each worker runs its runs in the order of their positions in their travels;
    nothing is left held after the fit."""
    X, y = make_data(n=1500, classes=3)
    pinned, submit = {}, client.submit

    def spy(fn, *args, workers=None, **kw):
        fut = submit(fn, *args, workers=workers, **kw)
        if fn is _worker.timed:            # (every task: (job, the task's function, ...))
            fn, args = args[1], args[2:]
        pinned[fut.key] = (fn, workers, [a for a in args if isinstance(a, distributed.Future)],
                           fut)
        return fut

    monkeypatch.setattr(client, "submit", spy)
    kw = dict(tol=1e-2, random_state=0, n_partitions=4, method="ring", rules=SPREAD)
    m = LinearSVC(client=client, **kw).fit(X, y)
    ref = LinearSVC(engine="threads", **kw).fit(X, y)
    np.testing.assert_array_equal(m.coef_, ref.coef_)
    visits = [(w, deps) for fn, w, deps, _ in pinned.values()
              if fn in (_worker.ring_task, _worker.ring_check_task)]
    assert visits and len({tuple(w) for w, _ in visits}) == 2        # (both workers)
    crossed = 0
    for w, deps in visits:
        fn, at, _, fut = pinned[deps[0].key]                         # (the payload)
        if at != w:
            assert fn in (_worker.ring_task, _worker.ring_check_task)
            assert isinstance(_steps.payload_of(fut.result()), _worker.Held)
            crossed += 1
    assert crossed > 0
    assert sum(held(client).values()) == 0
    # each run names the previous run on its worker (its last argument)
    for fn, w, deps, fut in pinned.values():
        if fn in (_worker.ring_task, _worker.ring_check_task) and len(deps) > 1:
            assert pinned[deps[-1].key][1] == w


@pytest.mark.parametrize("laps", [1, 4])
def test_held_rows_give_the_threads_engines_bits(client, laps):
    """Spread partitions, problems passing at different checks (their rows leave with
    the check's sums) and, with laps, sparse hops seeded from held rows: the same bits
    as the threads engine, nothing left held."""
    X, y = make_data(n=800, classes=4, seed=5)
    # (tol 3e-2: 32 rounds, the four problems still passing at different checks; at
    # 1e-2, 54-56 rounds of hops made this the suite's slowest test)
    kw = dict(C=1.0, tol=3e-2, random_state=0, max_iter=300, n_partitions=4, laps=laps,
              method="ring", rules=SPREAD)
    ref = LinearSVC(engine="threads", **kw).fit(X, y)
    assert len({e["active"] for e in ref.rounds_log_} - {0}) >= 2
    m = LinearSVC(client=client, **kw).fit(X, y)
    assert sum(held(client).values()) == 0
    np.testing.assert_array_equal(m.coef_, ref.coef_)
    np.testing.assert_array_equal(m.intercept_, ref.intercept_)


def test_pacing_waits_only_for_rows_bound_for_another_worker(monkeypatch):
    """A run taking rows from another worker is ahead when it has taken PACE_AHEAD more
    than others took from here since it began, and rows here wait for a run on another
    worker (a ">" tag) other than its own output."""
    inc = object.__new__(_worker._Incoming)
    inc.job, inc.out, inc.given, inc.taken = "j", "7>", 0, 2
    state = _worker.Registry()        # (this process's, in place of the worker's)
    monkeypatch.setattr(_worker, "STATE", state)
    state.held.update({("j", "7>", 0): None, ("j", "5", 1): None})
    assert not inc._ahead()          # (its own output, and rows for a run here)
    state.held[("j", "6>", 2)] = None
    assert inc._ahead()
    state.given["j"] = 1
    assert not inc._ahead()
    state.held[("other", "6>", 2)] = state.held.pop(("j", "6>", 2))
    state.given["j"] = 0
    assert not inc._ahead()


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_sparse_hops_stop_when_the_visits_change_most_weights(client, monkeypatch):
    """Few features and many non-zeros: a visit of a quarter partition changes most of
    the weights, so the ring goes back to sending them after its first check (until
    the laps grow); the same bits throughout."""
    X, y = make_data(n=2000, d=300, density=0.1)
    class Spy(_dask_ring.DaskRing):
        def weights(self, n_problems, d):
            out = super().weights(n_problems, d)
            Spy.off = self.sparse_off
            # (every sparse hop's bytes were counted: none left on the workers)
            Spy.left = sum(self.eng.client.run(_worker.take_received, self.eng.job).values())
            return out

    monkeypatch.setattr(_dask_engine, "DaskRing", Spy)
    kw = dict(C=1.0, tol=1e-6, random_state=0, laps=4, max_iter=12, n_partitions=4,
              method="ring", rules=SPREAD)
    with tasks_run(client) as ran:
        m = LinearSVC(client=client, **kw).fit(X, y)
    ref = LinearSVC(engine="threads", **kw).fit(X, y)
    # (seeded once, on both workers)
    assert [name for name, _ in ran].count("seed_task") == 2
    assert Spy.off == 4 and Spy.left == 0
    np.testing.assert_array_equal(m.coef_, ref.coef_)


def test_dask_array_partitions_are_built_where_their_chunks_live(client):
    X, y = make_data(n=800)
    Xd, yd = chunked(X, y, 4)
    Xd, yd = client.persist([Xd, yd])
    distributed.wait([Xd, yd])
    who = client.who_has(Xd)
    # (Dask spreads them: homes alternate here, where the spread rule would give runs)
    homes = [sorted(who[key])[0] for (key,) in Xd.__dask_keys__()]
    # (as large data: small arrays are gathered on one worker, the test above)
    m = LinearSVC(C=0.1, tol=1e-2, random_state=0, client=client,
                  rules=SPREAD).fit(Xd, yd)
    assert m.partition_workers_ == homes


@pytest.mark.cluster
def test_same_bits_with_one_two_three_workers_and_run_to_run():
    X, y = make_data(n=1000)
    coefs = []
    for n_workers in (1, 2, 3, 3):
        with distributed.LocalCluster(n_workers=n_workers, threads_per_worker=1,
                                      processes=False, dashboard_address=None) as cl, \
                distributed.Client(cl) as c:
            Xd, yd = chunked(X, y, 5)
            m = LinearSVC(C=0.1, tol=1e-2, random_state=3, client=c,
                          selection="shrinking").fit(Xd, yd)
            coefs.append(np.concatenate([m.coef_.ravel(), m.intercept_]))
    for c in coefs[1:]:
        np.testing.assert_array_equal(c, coefs[0])


def test_partitions_do_not_depend_on_chunks():
    """n_partitions re-cuts the rows: 3 chunks or 7 chunks, the same partitions."""
    X, y = make_data(n=700)
    m = [LinearSVC(tol=1e-4, n_partitions=4, random_state=0, engine="threads")
         .fit(*chunked(X, y, k)) for k in (3, 7)]
    np.testing.assert_array_equal(m[0].coef_, m[1].coef_)
    assert row_bounds(10, 4) == [0, 2, 5, 7, 10]


# ---- bad input ----------------------------------------------------------------------------

def test_chunks_with_different_column_counts_name_the_chunk(client):
    import dask
    X, y = make_data(n=200)
    good = dask.delayed(lambda: X[:100])()
    bad = dask.delayed(lambda: X[100:, :50])()
    Xd = da.concatenate([da.from_delayed(good, shape=(100, 60), dtype=float,
                                         meta=sp.csr_matrix((0, 60))),
                         da.from_delayed(bad, shape=(100, 60), dtype=float,
                                         meta=sp.csr_matrix((0, 60)))])
    clf = LinearSVC(client=client)
    with pytest.raises(ValueError, match=r"partition 1 \(chunks 1\): 50 columns, expected 60"):
        clf.fit(Xd, da.from_array(y, chunks=100))
    assert not hasattr(clf, "coef_")
    assert held(client) == {w: 0 for w in held(client)}


@pytest.mark.parametrize("where,value", [("X", np.nan), ("X", np.inf), ("y", np.nan)])
def test_nan_or_inf_names_the_chunk(client, where, value):
    X, y = make_data(n=300)
    X, y = X.toarray(), y.astype(float)
    (X if where == "X" else y)[250] = value
    with pytest.raises(ValueError, match=r"partition 2 \(chunks 2\)") as e:
        LinearSVC(client=client).fit(*chunked(X, y, 3))
    assert "\n" not in str(e.value)


def test_one_class_and_unknown_class_weight_label():
    X, y = make_data(n=200)
    with pytest.raises(ValueError, match="1 class"):
        LinearSVC(engine="threads").fit(X, np.zeros(200))
    with pytest.raises(ValueError, match="class_weight has label 5"):
        LinearSVC(engine="threads", class_weight={5: 1.0}).fit(X, y)


def test_empty_partitions_take_no_part():
    X, y = make_data(n=6, d=4, density=0.9)
    y = np.array([0, 1, 0, 1, 0, 1])
    m = LinearSVC(n_partitions=10, engine="threads", random_state=0).fit(X, y)
    assert m.converged_.all() and m.n_partitions_ == 10
    with pytest.raises(ValueError, match="no rows"):
        LinearSVC(engine="threads").fit(*chunked(X[:0], y[:0], 1))


def test_shard_that_is_not_libsvm(client, tmp_path):
    good, bad = tmp_path / "a.svm", tmp_path / "b.svm"
    good.write_text("1 1:0.5 2:1\n-1 1:-0.5\n")
    bad.write_text("this is, not, libsvm\n")
    with pytest.raises(ValueError, match=r"cannot read '.*b\.svm' as a LIBSVM file"):
        LinearSVC(client=client).fit(pbd.read_svmlight([good, bad]))
    with pytest.raises(ValueError, match="no files match"):
        pbd.read_svmlight(str(tmp_path / "none-*.svm"))


@pytest.mark.parametrize("param,value", [("local_sweeps", 0), ("tol", -1.0), ("C", 0.0),
                                         ("engine", "mpi"), ("n_partitions", 0),
                                         ("checkpoint_every", -1), ("timeout", 0)])
def test_bad_parameters(param, value):
    X, y = make_data(n=100)
    with pytest.raises((ValueError, TypeError), match=param):
        LinearSVC(engine="threads", **{param: value}).fit(X, y)


def test_no_client_is_a_clear_error(monkeypatch):
    def no_client():
        raise ValueError("No clients found")

    monkeypatch.setattr(distributed, "get_client", no_client)
    X, y = make_data(n=100)
    with pytest.raises(ValueError, match="no Dask client"):
        LinearSVC().fit(X, y)


# ---- estimator conventions ----------------------------------------------------------------

def test_to_local_save_predict_and_dask_prediction(client, tmp_path):
    X, y = make_data(n=800, classes=3)
    Xd, yd = chunked(X, y, 4)
    m = LinearSVC(C=0.1, tol=1e-2, random_state=0, client=client).fit(Xd, yd)
    local = m.to_local()
    assert isinstance(local, pybudget.LinearSVC)
    pybudget.save(local, tmp_path / "m.pbm")
    back = pybudget.load(tmp_path / "m.pbm")
    np.testing.assert_array_equal(back.predict(X), m.predict(X))
    pd = m.predict(Xd)
    assert isinstance(pd, da.Array)
    np.testing.assert_array_equal(pd.compute(), local.predict(X))
    assert m.decision_function(Xd).compute().shape == (800, 3)
    assert m.score(Xd, yd) == pytest.approx(local.score(X, y))
    lr = LogisticRegression(C=0.1, tol=1e-3, random_state=0, client=client).fit(Xd, yd)
    proba = lr.predict_proba(Xd).compute()
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_allclose(proba, lr.to_local().predict_proba(X))


def test_svr_dask(client):
    X, _ = make_data(n=600)
    y = X @ np.linspace(-1, 1, X.shape[1])
    Xd, yd = chunked(X, y, 3)
    m = LinearSVR(C=1.0, tol=1e-3, random_state=0, client=client).fit(Xd, yd)
    assert m.coef_.shape == (X.shape[1],)
    assert m.score(Xd, yd) > 0.9
    np.testing.assert_allclose(m.predict(Xd).compute(), m.to_local().predict(X))


def test_clone_get_params_pickle():
    X, y = make_data(n=300)
    m = LinearSVC(C=3.0, engine="threads", random_state=0, local_sweeps=2)
    c = clone(m)
    assert c.get_params() == m.get_params()
    m.fit(X, y)
    back = pickle.loads(pickle.dumps(m))
    np.testing.assert_array_equal(back.predict(X), m.predict(X))
    one = pybudget.LinearSVC().get_params()
    assert set(one) <= set(m.get_params())        # the namesake's parameters, and more


def test_check_leaves_w_and_the_duals_alone():
    X, y = make_data(n=100)
    P = build_partition(0, ("arrays", X, y, None, X.shape[1]), False, "p0")
    assert isinstance(P, Partition)
    spec = FitSpec(loss="hinge", n_parts=1, bias=1.0, d=X.shape[1], C=1.0, seed=0,
                   n_rows=X.shape[0], classes=np.array([0, 1]), class_weight=np.ones(2),
                   positive=(1,), selection="uniform")
    P.setup(spec)
    w = np.ones(X.shape[1] + 1)
    u = P.problems[0].u.copy()
    out = P.check(0, w)
    assert out.kkt > 0
    np.testing.assert_array_equal(w, np.ones(X.shape[1] + 1))
    np.testing.assert_array_equal(P.problems[0].u, u)


def test_check_results_travel_as_named_values():
    """A partition's check (PartCheck), the weights' statistics and the engine's summed
    CheckResult are dataclasses that pickle (Dask moves them) and sum in partition
    order."""
    X, y = make_data(n=100)
    P = build_partition(0, ("arrays", X, y, None, X.shape[1]), False, "p0")
    spec = FitSpec(loss="hinge", n_parts=1, bias=1.0, d=X.shape[1], C=1.0, seed=0,
                   n_rows=X.shape[0], classes=np.array([0, 1]), class_weight=np.ones(2),
                   positive=(1,), selection="uniform")
    P.setup(spec)
    w = np.ones(X.shape[1] + 1)
    one = P.check(0, w)
    assert isinstance(one, PartCheck) and pickle.loads(pickle.dumps(one)) == one
    from pybudget.dask._partition import first_carry
    row = _steps.RingRow(w, first_carry("svm", 0))
    passes = _steps.check_visit(P, 1, _steps.check_visit(P, 0, {0: row}, [0], 2), [0], 2)
    assert isinstance(passes, _steps.CheckPass) and passes.rows[0] is row
    again = pickle.loads(pickle.dumps(passes))
    assert again.found == passes.found and again.stats == passes.stats
    res = _steps.checked(_steps.found_by_partition([passes.found], 2), passes.stats, [0])[0]
    assert res == _steps.CheckResult(loss=0.0 + one.loss + one.loss,
                                     dual_terms=0.0 + one.dual_terms + one.dual_terms,
                                     kkt=one.kkt, w2=float(w @ w), steps=0.0)
    assert res.gap() == _steps.gap_of(res.w2, res.loss, res.dual_terms, res.kkt)


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
def test_a_long_visit_solves_the_partitions_dual_at_the_carried_weights(loss):
    """Many sweeps of one ring visit solve partition k's dual with the other partitions'
    contribution to w held fixed: max over d of sum_i [d_i - D_ii (a_i d_i + d_i^2 / 2)]
    - w.(A d) - 1/2 |A d|^2, whose optimality, written in numpy from the definition, is
    that y_i x_i.(w + A d) - 1 + D_ii (a_i + d_i) has no projected component; the
    weights are changed in place by exactly A d."""
    from pybudget.dask._partition import first_carry
    from pybudget.linear._dual_cd import SELECTIONS
    X, y = make_data(n=300, d=30, seed=4)
    C = 0.7
    P = build_partition(1, ("arrays", X, y, None, X.shape[1]), False, "p1")
    spec = FitSpec(loss=loss, n_parts=1, bias=1.0, d=X.shape[1], C=C, seed=5,
                   n_rows=X.shape[0], classes=np.array([0, 1]), class_weight=np.ones(2),
                   positive=(1,), selection="uniform")
    P.setup(spec)
    rng = np.random.default_rng(0)
    w0 = rng.normal(scale=0.1, size=X.shape[1] + 1)
    w = w0.copy()
    a_old = P.problems[0].u.copy()
    P.visit(0, 0, w, 3000, first_carry("svm", SELECTIONS["uniform"]))
    a = P.problems[0].u
    ys = np.where(y == 1, 1.0, -1.0)
    Xb = sp.hstack([X, np.ones((X.shape[0], 1))]).tocsr()
    np.testing.assert_allclose(w - w0, Xb.T @ ((a - a_old) * ys), atol=1e-12)
    D = 0.5 / C if loss == "squared_hinge" else 0.0
    G = ys * (Xb @ w) - 1.0 + D * a
    upper = np.inf if loss == "squared_hinge" else C
    assert (a >= 0).all() and (a <= upper).all()
    pg = np.where(a <= 0, np.minimum(G, 0), np.where(a >= upper, np.maximum(G, 0), G))
    assert np.abs(pg).max() < (1e-4 if loss == "hinge" else 1e-8)
    assert np.abs(a - a_old).max() > 1e-2          # (it moved: not solved from the start)


def test_overflowing_values_are_refused():
    X, y = make_data(n=200)
    big = X.copy()
    big.data[:5] = 1e200
    clf = LinearSVC(engine="threads")
    with pytest.raises(ValueError, match="too large for float64"):
        clf.fit(big, y)
    assert not hasattr(clf, "coef_")


# Weighting a row by k equals repeating it k times only at the exact optimum, which the
# fits stop short of (at a relative duality gap of tol).
WEIGHT_EQUIVALENCE = {
    "check_sample_weight_equivalence_on_dense_data": "equal only at the exact optimum",
    "check_sample_weight_equivalence_on_sparse_data": "equal only at the exact optimum",
}


@pytest.mark.parametrize("cls", [LinearSVC, LogisticRegression, LinearSVR],
                         ids=lambda c: c.func.__name__)
def test_check_estimator_threads_engine(cls):
    from sklearn.utils.estimator_checks import check_estimator
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        check_estimator(cls(engine="threads", random_state=0),
                        expected_failed_checks=WEIGHT_EQUIVALENCE)


def test_cluster_error_is_public():
    """The CLI and the user guide once imported ClusterError from the private
    _driver; it is pybudget.dask.ClusterError, the one the engines raise."""
    assert "ClusterError" in pbd.__all__ and issubclass(pbd.ClusterError, RuntimeError)
    with pytest.raises(pbd.ClusterError, match="cannot lose"):
        _engines.ThreadsEngine().rebuild_lost()
