"""pybudget.dask when workers are lost: a killed worker must cost nothing but time (the
fit replays from its checkpoint to the same bits), and a cluster that cannot go on
fails in one clear line within the timeout."""
import math
import os
import signal
import time

import numpy as np
import pytest

import pybudget.dask as pbd
from pybudget.dask import _dask_engine
from pybudget.dask import estimators as E
from pybudget.dask._sources import row_bounds

from helpers import chunked, make_data, ring_rules, tall

distributed = pytest.importorskip("distributed")

# (these tests are about the ring: conftest.ring_by_default)
pytestmark = pytest.mark.usefixtures("ring_by_default")


class KillingEngine(_dask_engine.DaskEngine):
    """Kills the worker of partition 0 as round ``at`` starts (``times`` times), or
    as the checkpoint after round ``at`` starts (``in_snapshot``); ``replaced``: waits
    also for the nanny's new worker, so the recovery spreads the partitions over two
    workers again."""
    at, times, kills, replaced, in_snapshot, rnd = 6, 1, 0, False, False, None

    def _kill(self, rnd):
        """Kill the worker, then wait until the scheduler has seen it go (a kill timed
        against the fit would land anywhere; the tests choose where)."""
        if rnd == type(self).at and type(self).kills < type(self).times:
            type(self).kills += 1
            # as if seconds had passed since the checkpoint: Dask's active memory
            # manager drops the extra replicas of task results (every 2 s by default)
            self.client.amm.run_once()
            addr, n = self.where[0], len(self.workers())
            os.kill(self.client.run(os.getpid, workers=[addr])[addr], signal.SIGKILL)
            deadline = time.monotonic() + 30
            while addr in self.workers() and time.monotonic() < deadline:
                time.sleep(0.05)
            while (type(self).replaced and len(self.client.run(os.getpid)) < n
                   and time.monotonic() < deadline):
                time.sleep(0.05)

    def ring_round(self, rnd, *a, **k):
        self.rnd = rnd
        if not self.in_snapshot:
            self._kill(rnd)
        return super().ring_round(rnd, *a, **k)

    def snapshot(self):
        if self.in_snapshot:
            self._kill(self.rnd)
        return super().snapshot()


@pytest.fixture
def nanny_client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c


@pytest.mark.parametrize("in_snapshot, times", [(False, 1), (True, 1), (True, 2)])
def test_killed_worker_mid_fit_replays_to_the_same_bits(nanny_client, monkeypatch,
                                                         in_snapshot, times):
    """A worker killed as a round starts, the checkpoint's copies seconds old; or as
    the checkpoint after round 7 is taken: the replay is from round 4's, which the
    workers still hold; twice: also as the recovery copies that checkpoint anew.
    (timeout: a recovery that waits on a lost copy fails fast.)"""
    X, y = make_data(n=1500, seed=11)
    Xd, yd = chunked(X, y, 4)
    ref = pbd.LinearSVC(C=0.1, tol=1e-3, random_state=0, engine="threads",
                        checkpoint_every=4).fit(Xd, yd)
    assert ref.converged_.all() and ref.n_rounds_ > 10
    monkeypatch.setattr(E, "DaskEngine", KillingEngine)
    monkeypatch.setattr(KillingEngine, "in_snapshot", in_snapshot)
    monkeypatch.setattr(KillingEngine, "at", 7 if in_snapshot else 6)
    monkeypatch.setattr(KillingEngine, "times", times)
    KillingEngine.kills = 0
    m = pbd.LinearSVC(C=0.1, tol=1e-3, random_state=0, client=nanny_client,
                      checkpoint_every=4, timeout=60).fit(Xd, yd)
    assert KillingEngine.kills == times and m.recoveries_ >= times
    np.testing.assert_array_equal(m.coef_, ref.coef_)
    np.testing.assert_array_equal(m.duality_gap_, ref.duality_gap_)
    # (the replayed rounds' checks are logged once: the log was cut at the checkpoint)
    assert [e["round"] for e in m.rounds_log_] == [e["round"] for e in ref.rounds_log_]


def test_killed_worker_with_sparse_hops_replays_to_the_same_bits(nanny_client, monkeypatch):
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
    ref = pbd.LinearSVC(engine="threads", **kw).fit(X, y)
    assert ref.converged_.all() and ref.n_rounds_ > KillingEngine.at + 2
    monkeypatch.setattr(E, "DaskEngine", KillingEngine)
    monkeypatch.setattr(KillingEngine, "replaced", True)
    seeded = []
    seed = KillingEngine._seed
    monkeypatch.setattr(KillingEngine, "_seed",
                        lambda self, groups: (seeded.append(self.kills), seed(self, groups)))
    KillingEngine.kills = 0
    m = pbd.LinearSVC(client=nanny_client, timeout=60, **kw).fit(X, y)
    assert KillingEngine.kills == 1 and m.recoveries_ >= 1
    assert seeded[0] == 0 and seeded[-1] == 1               # seeded again after the loss
    np.testing.assert_array_equal(m.coef_, ref.coef_)
    np.testing.assert_array_equal(m.duality_gap_, ref.duality_gap_)


class NewtonKillingEngine(KillingEngine):
    """Kills the worker of partition 0 as method "newton"'s Hessian-product call number
    ``at`` is sent."""
    calls = 0

    def primal(self, what, j, *args):
        if what == "hessp":
            type(self).calls += 1
            self._kill(type(self).calls)
        return super().primal(what, j, *args)


def test_killed_worker_mid_newton_fit_replays_to_the_same_bits(nanny_client, monkeypatch):
    """Method "newton" keeps no state on the workers but the rows (and curvatures that
    a rebuilt partition computes again): the lost partition is rebuilt from its source
    and the failed call sent again, to the same bits.  Killed at the 3rd Hessian
    product, while three problems' calls interleave on the workers: the others' calls
    fail too and wait for one recovery."""
    X, y = tall(n=3000, classes=3, seed=2)
    Xd, yd = chunked(X, y, 4)
    kw = dict(method="newton", tol=1e-6, C=0.5)
    ref = pbd.LogisticRegression(engine="threads", **kw).fit(Xd, yd)
    monkeypatch.setattr(E, "DaskEngine", NewtonKillingEngine)
    monkeypatch.setattr(NewtonKillingEngine, "at", 3)
    NewtonKillingEngine.kills = NewtonKillingEngine.calls = 0
    m = pbd.LogisticRegression(client=nanny_client, timeout=60, **kw).fit(Xd, yd)
    assert NewtonKillingEngine.kills == 1 and m.recoveries_ == 1
    np.testing.assert_array_equal(m.coef_, ref.coef_)
    np.testing.assert_array_equal(m.intercept_, ref.intercept_)


def test_svmlight_shards_are_reread_after_a_loss(nanny_client, monkeypatch, tmp_path):
    from sklearn.datasets import dump_svmlight_file
    X, y = make_data(n=900, seed=2)
    for p, (a, b) in enumerate(zip(row_bounds(900, 3)[:-1], row_bounds(900, 3)[1:])):
        dump_svmlight_file(X[a:b], y[a:b], str(tmp_path / f"part-{p}.svm"),
                           zero_based=False)
    shards = pbd.read_svmlight(str(tmp_path / "part-*.svm"), n_features=X.shape[1])
    ref = pbd.LinearSVC(C=0.1, tol=1e-2, random_state=0, engine="threads").fit(shards)
    monkeypatch.setattr(E, "DaskEngine", KillingEngine)
    KillingEngine.kills, KillingEngine.at = 0, 3
    m = pbd.LinearSVC(C=0.1, tol=1e-2, random_state=0, client=nanny_client).fit(shards)
    KillingEngine.at = 6
    assert m.recoveries_ == 1
    np.testing.assert_array_equal(m.coef_, ref.coef_)


def test_a_worker_lost_every_round_is_a_clear_error(nanny_client, monkeypatch):
    X, y = make_data(n=600)
    monkeypatch.setattr(E, "DaskEngine", KillingEngine)
    monkeypatch.setattr(KillingEngine, "at", 1)
    monkeypatch.setattr(KillingEngine, "times", 10)
    KillingEngine.kills = 0
    clf = pbd.LinearSVC(tol=1e-9, random_state=0, client=nanny_client, max_iter=50)
    with pytest.raises(RuntimeError, match="lost partitions 4 times"):
        clf.fit(*chunked(X, y, 2))
    assert not hasattr(clf, "coef_")


@pytest.mark.cluster
def test_no_worker_left_raises_within_the_timeout(monkeypatch):
    X, y = make_data(n=600)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cl, distributed.Client(cl) as c:

        class LastWorkerLeaves(_dask_engine.DaskEngine):
            def ring_round(self, rnd, *a, **k):
                if rnd == 2:
                    cl.scale(0)
                    while self.workers():
                        time.sleep(0.05)
                return super().ring_round(rnd, *a, **k)

        monkeypatch.setattr(E, "DaskEngine", LastWorkerLeaves)
        t0 = time.monotonic()
        with pytest.raises(RuntimeError, match="no Dask worker left: none joined within 5 s"):
            pbd.LinearSVC(tol=1e-12, max_iter=10**6, client=c, timeout=5.0,
                          random_state=0).fit(*chunked(X, y, 2))
        assert time.monotonic() - t0 < 30
