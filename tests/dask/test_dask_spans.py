"""Fits that really span 2 and 3 workers, one per method: the data here is small, and
the small-data rule would put every partition on one worker, so the fits get rules
with a lower ``small_bytes`` (the ``spread`` fixture); each test then checks that
every worker held partitions and that bytes moved between them, besides the same bits
as the threads engine."""
import distributed
import numpy as np
import pytest

from pybudget.dask import _scheduler

from helpers import make_data, ring_estimators, ring_rules, tall


# (the tests of the ring: "auto" never means "whole" on their small data)
LinearSVC, LogisticRegression, LinearSVR = ring_estimators()


@pytest.fixture(scope="module", params=[2, 3], ids=["2 workers", "3 workers"])
def client(request):
    with distributed.LocalCluster(n_workers=request.param, threads_per_worker=1,
                                  processes=True, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        c.wait_for_workers(request.param)
        yield c


@pytest.fixture
def spread():
    """Rules that spread the partitions over the workers in contiguous runs, whatever
    the size."""
    return ring_rules(small_bytes=1000)


def test_ring_spans_every_worker(client, spread):
    K = len(_scheduler.worker_addresses(client))
    X, y = make_data(n=900, classes=3, seed=4)
    kw = dict(C=0.1, tol=1e-2, random_state=0, method="ring", n_partitions=2 * K,
              max_iter=300, rules=spread)
    m = LinearSVC(client=client, **kw).fit(X, y)
    ref = LinearSVC(engine="threads", **kw).fit(X, y)
    assert len(set(m.partition_workers_)) == K
    assert m.bytes_sent_["workers"] > 0
    np.testing.assert_array_equal(m.coef_, ref.coef_)
    assert m.n_rounds_ == ref.n_rounds_


def test_newton_spans_every_worker(client, spread):
    """Method "newton": every worker holds partitions, nothing moves between them, and
    the partitions' sums, added in partition order, give the threads engine's bits."""
    K = len(_scheduler.worker_addresses(client))
    X, y = tall(n=4000, classes=3, seed=5)
    kw = dict(method="newton", tol=1e-6, C=0.5, n_partitions=2 * K, rules=spread)
    m = LogisticRegression(client=client, **kw).fit(X, y)
    ref = LogisticRegression(engine="threads", **kw).fit(X, y)
    assert len(set(m.partition_workers_)) == K
    assert ref.partition_workers_ == [None] * 2 * K
    np.testing.assert_array_equal(m.coef_, ref.coef_)
    np.testing.assert_array_equal(m.intercept_, ref.intercept_)
    assert m.n_iter_ == ref.n_iter_ and m.recoveries_ == 0
    assert m.bytes_sent_["client"] > 0 and m.bytes_sent_["workers"] == 0


def test_no_recovery_under_load(client, spread):
    """Under load, with no worker lost, a ring task once ran where its
    partition was not, and the fit replayed.  Two busy processes beside the cluster:
    every task runs where it is pinned, no recovery, the same bits."""
    import subprocess
    import sys
    X, y = make_data(n=1500, classes=2, seed=8)
    kw = dict(C=0.1, tol=1e-3, random_state=0, n_partitions=4, laps=2, rules=spread)
    ref = LinearSVC(engine="threads", **kw).fit(X, y)
    spin = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        m = LinearSVC(client=client, **kw).fit(X, y)
    finally:
        for p in spin:
            p.kill()
            p.wait()
    assert m.recoveries_ == 0
    np.testing.assert_array_equal(m.coef_, ref.coef_)
