"""A long fit on a Dask cluster keeps its tables bounded, and its timeout counts from
the last progress."""
import time

import numpy as np
import pytest

from pybudget.dask import _dask_engine, _dask_ring, _driver, _worker
from pybudget.dask.errors import ClusterError

from helpers import make_data, ring_estimators, ring_rules

# (the tests of the ring: "auto" never means "whole" on their small data)
LinearSVC, LogisticRegression, LinearSVR = ring_estimators()


def worker_tables(engine):
    """{table: entries of the engine's job, summed over the workers}."""
    out = {}
    for sizes in engine.client.run(_worker.table_sizes, engine.job).values():
        for name, v in sizes.items():
            out[name] = out.get(name, 0) + v
    return out


class Recording(_dask_ring.DaskRing):
    """Records, every EVERY rounds once the round's tasks are done, the sizes of the
    client's and the workers' tables."""
    EVERY = 250
    sizes = []

    def round(self, rnd, *args, **kwargs):
        out = super().round(rnd, *args, **kwargs)
        if rnd % self.EVERY == self.EVERY - 1:
            eng = self.eng
            eng._gather([eng._on(self.loc[f.key], _worker.barrier, f)
                         for f in self._payloads(self.rows)])
            # (and each worker's latest task: a replicas' drop on a worker that holds no
            # payload runs after the round, and a read before it would still count them)
            eng._gather([eng._on(w, _worker.barrier, f) for w, f in self.last_on.items()])
            Recording.sizes.append({"held": len(self.held), "loc": len(self.loc),
                                    "sparse hops": bool(self.replica_runs),
                                    **worker_tables(eng)})
        return out


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_2000_rounds_keep_every_table_bounded(client, monkeypatch):
    """2,000 ring rounds (2 partitions on one worker, as the small-data rule places
    them: a round is one task): the client's places and Held marks, and the workers'
    registry, replicas, checkpoints and held rows, stay the size they had at round 250.
    (Before, held and loc gained an entry every round.)"""
    X, y = make_data(n=200, d=400, density=0.05, seed=3)
    y = np.where(np.random.default_rng(0).random(len(y)) < 0.3, 1 - y, y)    # noisy
    monkeypatch.setattr(_dask_engine, "DaskRing", Recording)
    monkeypatch.setattr(Recording, "EVERY", 250)
    # (checks every 50 rounds: a check waits for the workers, and the stalled gap's
    # schedule would check every round)
    monkeypatch.setattr(_driver._Driver, "schedule",
                        lambda self, gaps, tol: self.next_check.update(
                            dict.fromkeys(gaps, self.t + 50)))
    Recording.sizes = []
    m = LinearSVC(C=1e4, tol=1e-300, max_iter=2000, n_partitions=2,
                  checkpoint_every=50, random_state=0, client=client).fit(X, y)
    assert m.n_rounds_ == 2000 and len(Recording.sizes) == 8
    assert all(s == Recording.sizes[0] for s in Recording.sizes), Recording.sizes
    assert Recording.sizes[0]["held"] <= 1 and Recording.sizes[0]["loc"] <= 1, Recording.sizes
    rounds = [e["round"] for e in m.rounds_log_]
    assert rounds == sorted(set(rounds))


def test_replicas_dropped_when_the_sparse_hops_stop(client, monkeypatch):
    """4 partitions spread over 2 workers, 2 laps: the ring seeds replicas and sends
    changes; on these dense rows the visits change most weights, so at the first
    check it sends the weights again, and the workers' replicas go (they stayed until
    the fit's end before)."""
    X, y = make_data(n=1500, seed=11)
    monkeypatch.setattr(_dask_engine, "DaskRing", Recording)
    monkeypatch.setattr(Recording, "EVERY", 1)
    Recording.sizes = []
    m = LinearSVC(C=0.1, tol=1e-3, laps=2, n_partitions=4, random_state=0,
                  client=client,       # (spread in runs: 2 + 2)
                  rules=ring_rules(small_bytes=1000)).fit(X, y)
    assert m.converged_.all() and len(Recording.sizes) >= m.n_rounds_
    assert Recording.sizes[0]["sparse hops"] and Recording.sizes[0]["replicas"] == 2
    stopped = [s for s in Recording.sizes if not s["sparse hops"]]
    assert stopped and all(s["replicas"] == 0 for s in stopped), Recording.sizes


def test_timeout_counts_from_the_last_progress(client):
    """A gather that waits for a chain of 8 tasks of 0.3 s each, with timeout=1.5 s:
    the chain progresses, so it is not abandoned; a single task longer than the
    timeout is."""
    eng = _dask_engine.DaskEngine(client, timeout=1.5)
    addr = eng.workers()[0]
    eng.where = {0: addr}
    fut = None
    for _ in range(8):
        fut = eng._on(addr, lambda prev: time.sleep(0.3), fut)
    t0 = time.monotonic()
    eng._gather([fut])
    assert time.monotonic() - t0 > 1.5             # (longer than the timeout in all)
    eng = _dask_engine.DaskEngine(client, timeout=1.5)
    eng.where = {0: addr}
    with pytest.raises(ClusterError, match="no task of the fit finished"):
        eng._gather([eng._on(addr, time.sleep, 4.0)])


@pytest.mark.parametrize("fetch", [True, False])
def test_timeout_holds_when_the_progress_poll_fails(client, monkeypatch, fetch):
    """The watchdog asks the workers for their progress; when that ask fails (a
    closing comm, say), the gather is still abandoned at the timeout.  (Before, the
    watchdog's thread died of the error and the gather waited for the task.)"""
    eng = _dask_engine.DaskEngine(client, timeout=1.0)
    addr = eng.workers()[0]
    eng.where = {0: addr}

    def fails():
        raise OSError("the poll failed")

    monkeypatch.setattr(eng, "_last_progress", fails)
    with pytest.raises(ClusterError, match="no task of the fit finished"):
        eng._gather([eng._on(addr, time.sleep, 6.0)], fetch=fetch)
