"""pybudget.dask when workers are lost: a killed worker must cost nothing but time (the
fit replays from its checkpoint to the same bits), and a cluster that cannot go on
fails in one clear line within the timeout."""
import math
import time

import numpy as np
import pytest

import pybudget.dask as pbd
from pybudget.dask._sources import row_bounds

from helpers import chunked, kill_on_task, make_data, ring_estimators, ring_rules, tall, tasks_run

distributed = pytest.importorskip("distributed")

# (the tests of the ring: "auto" never means "whole" on their small data)
LinearSVC, LogisticRegression, LinearSVR = ring_estimators()


@pytest.fixture
def nanny_client():
    """2 worker processes under nannies (a killed worker comes back); Dask's active
    memory manager drops the extra replicas of task results every 50 ms (2 s by
    default), so a loss always finds them gone."""
    import dask
    with dask.config.set({"distributed.scheduler.active-memory-manager.interval": "50ms"}), \
            distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                     dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c


@pytest.mark.parametrize("task, nth, times", [("ring_task", 6, 1), ("snapshot_task", 5, 1),
                                              ("snapshot_task", 5, 2)])
def test_killed_worker_mid_fit_replays_to_the_same_bits(nanny_client, tmp_path, task, nth,
                                                         times):
    """A worker killed as it starts round 6 (the small rows live on one worker: a round
    is one ring task); or as it copies the checkpoint after round 8 (4 partitions, a
    snapshot task each): the replay is from round 4's, which the other worker holds
    too; twice: the second worker dies as it copies a checkpoint too.  (timeout: a
    recovery that waits on a lost copy fails fast.)"""
    X, y = make_data(n=1500, seed=11)
    Xd, yd = chunked(X, y, 4)
    ref = LinearSVC(C=0.1, tol=1e-3, random_state=0, engine="threads",
                    checkpoint_every=4).fit(Xd, yd)
    assert ref.converged_.all() and ref.n_rounds_ > 10
    deaths = kill_on_task(nanny_client, task, tmp_path, nth=nth, times=times)
    m = LinearSVC(C=0.1, tol=1e-3, random_state=0, client=nanny_client,
                  checkpoint_every=4, timeout=60).fit(Xd, yd)
    assert len(deaths()) == times and m.recoveries_ >= times
    np.testing.assert_array_equal(m.coef_, ref.coef_)
    np.testing.assert_array_equal(m.duality_gap_, ref.duality_gap_)
    # (the replayed rounds' checks are logged once: the log was cut at the checkpoint)
    assert [e["round"] for e in m.rounds_log_] == [e["round"] for e in ref.rounds_log_]


def test_killed_worker_with_sparse_hops_replays_to_the_same_bits(nanny_client, tmp_path):
    """Spread partitions, 4 laps: the ring sends changes against replicas, so the
    checkpoint's copies of the weights are read from the replicas, which the loss
    leaves stale or gone; the replay from the copies, spread over the survivor and
    the nanny's new worker, seeds the replicas anew and gives the same bits."""
    X, y = make_data(n=1500, d=5000, density=10 / 5000, seed=11)
    # (spread in runs: 2 + 2; changes all along: here the visits change most weights,
    # which would stop them; the ring)
    rules = ring_rules(small_bytes=1000, sparse_give_up=math.inf)
    kw = dict(C=0.1, tol=1e-3, random_state=0, checkpoint_every=4, laps=4, n_partitions=4,
              rules=rules)
    ref = LinearSVC(engine="threads", **kw).fit(X, y)
    assert ref.converged_.all() and ref.n_rounds_ > 8
    deaths = kill_on_task(nanny_client, "ring_task", tmp_path, nth=6)
    with tasks_run(nanny_client) as ran:
        m = LinearSVC(client=nanny_client, timeout=60, **kw).fit(X, y)
    assert len(deaths()) == 1 and m.recoveries_ >= 1
    # seeded at the start and again after the loss
    assert [name for name, _ in ran].count("seed_task") >= 2 * len(set(m.partition_workers_))
    np.testing.assert_array_equal(m.coef_, ref.coef_)
    np.testing.assert_array_equal(m.duality_gap_, ref.duality_gap_)


def test_killed_worker_mid_newton_fit_replays_to_the_same_bits(nanny_client, tmp_path):
    """Method "newton" keeps no state on the workers but the rows (and curvatures that
    a rebuilt partition computes again): the lost partition is rebuilt from its source
    and the failed call sent again, to the same bits.  Killed at a worker's 12th
    call, while three problems' calls interleave on the workers: the others' calls
    fail too and wait for one recovery."""
    X, y = tall(n=3000, classes=3, seed=2)
    Xd, yd = chunked(X, y, 4)
    kw = dict(method="newton", tol=1e-6, C=0.5)
    ref = LogisticRegression(engine="threads", **kw).fit(Xd, yd)
    deaths = kill_on_task(nanny_client, "each_task", tmp_path, nth=12)
    m = LogisticRegression(client=nanny_client, timeout=60, **kw).fit(Xd, yd)
    assert len(deaths()) == 1 and m.recoveries_ == 1
    np.testing.assert_array_equal(m.coef_, ref.coef_)
    np.testing.assert_array_equal(m.intercept_, ref.intercept_)


def test_svmlight_shards_are_reread_after_a_loss(nanny_client, tmp_path):
    from sklearn.datasets import dump_svmlight_file
    X, y = make_data(n=900, seed=2)
    for p, (a, b) in enumerate(zip(row_bounds(900, 3)[:-1], row_bounds(900, 3)[1:])):
        dump_svmlight_file(X[a:b], y[a:b], str(tmp_path / f"part-{p}.svm"),
                           zero_based=False)
    shards = pbd.read_svmlight(str(tmp_path / "part-*.svm"), n_features=X.shape[1])
    ref = LinearSVC(C=0.1, tol=1e-2, random_state=0, engine="threads").fit(shards)
    (tmp_path / "deaths").mkdir()
    deaths = kill_on_task(nanny_client, "ring_task", tmp_path / "deaths", nth=3)
    m = LinearSVC(C=0.1, tol=1e-2, random_state=0, client=nanny_client).fit(shards)
    assert len(deaths()) == 1 and m.recoveries_ == 1
    np.testing.assert_array_equal(m.coef_, ref.coef_)


def test_a_worker_lost_every_round_is_a_clear_error(nanny_client, tmp_path):
    X, y = make_data(n=600)
    deaths = kill_on_task(nanny_client, "ring_task", tmp_path, nth=1, times=10)
    clf = LinearSVC(tol=1e-9, random_state=0, client=nanny_client, max_iter=50)
    with pytest.raises(RuntimeError, match="lost partitions 4 times"):
        clf.fit(*chunked(X, y, 2))
    assert not hasattr(clf, "coef_") and len(deaths()) >= 4


@pytest.mark.cluster
def test_no_worker_left_raises_within_the_timeout(tmp_path):
    X, y = make_data(n=600)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cl, distributed.Client(cl) as c:
        kill_on_task(c, "ring_task", tmp_path, nth=2, leave=True)
        t0 = time.monotonic()
        with pytest.raises(RuntimeError, match="no Dask worker left: none joined within 5 s"):
            LinearSVC(tol=1e-12, max_iter=10**6, client=c, timeout=5.0,
                      random_state=0).fit(*chunked(X, y, 2))
        assert time.monotonic() - t0 < 30
