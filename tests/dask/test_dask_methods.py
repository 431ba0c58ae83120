"""pybudget.dask's methods behind one interface (``_methods``) and the driver's
checkpoints (``_checkpoints``): a new method is an object in ``METHODS`` and nothing else,
and a lost partition costs a replay from the latest checkpoint, at most MAX_RECOVERIES
times."""
import copy

import numpy as np
import pytest
import scipy.sparse as sp

import pybudget.dask as pbd
from pybudget.dask import _checkpoints, _methods
from pybudget.dask._driver import _Driver
from pybudget.dask.errors import CheckpointLost, ClusterError, PartitionsLost


def make_data(n=600, d=80, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.1, format="csr", random_state=seed)
    X.data = rng.normal(size=X.data.shape)
    y = np.where(X @ rng.normal(size=d) + 0.3 * rng.normal(size=n) > 0, 1, -1)
    return X, y


def test_every_estimator_method_is_an_object_of_the_registry():
    assert set(_methods.METHODS) == {"ring", "whole", "newton"}
    for name, m in _methods.METHODS.items():
        assert m.name == name and callable(m.fit)


def test_a_new_method_registered_in_methods_alone_trains(monkeypatch):
    """The recipe of docs/architecture.md: a method is one object in METHODS; the
    estimator takes it by name and the driver runs its rounds."""
    rounds = []

    class CountedRing(_methods.Ring):
        name = "counted"

        def round(self, fit, drv):
            rounds.append(drv.t)
            super().round(fit, drv)

    monkeypatch.setitem(_methods.METHODS, "counted", CountedRing())
    X, y = make_data()
    kw = dict(engine="threads", n_partitions=2, tol=1e-2, max_iter=3000, random_state=0)
    m = pbd.LinearSVC(method="counted", **kw).fit(X, y)
    ring = pbd.LinearSVC(method="ring", **kw).fit(X, y)
    assert m.method_ == "counted" and m.converged_.all()
    assert rounds == list(range(ring.n_rounds_ + 1))     # (the last: its check passed)
    np.testing.assert_array_equal(m.coef_, ring.coef_)
    with pytest.raises(ValueError, match="method"):
        pbd.LinearSVC(method="quarter", engine="threads").fit(X, y)


class FakeEngine:
    """An engine whose recoveries fail as told: ``fails`` lists what each call of
    recover raises (None: it succeeds)."""

    def __init__(self, fails):
        self.fails = list(fails)
        self.recovered_to, self.snapshots = [], 0

    def snapshot(self):
        self.snapshots += 1
        return ("token", self.snapshots)

    def recover(self, spec, token):
        self.recovered_to.append(token)
        exc = self.fails.pop(0) if self.fails else None
        if exc is not None:
            raise exc


def advanced(drv, t):
    drv = copy.deepcopy(drv)
    drv.t = t
    return drv


def test_checkpoints_are_taken_every_so_many_rounds_once():
    eng = FakeEngine([])
    drv = _Driver(2, 1)
    ck = _checkpoints.Checkpoints(eng, {}, drv, every=3)
    for t in range(8):
        ck.take(advanced(drv, t))
        ck.take(advanced(drv, t))              # (a replayed round: no second copy)
    assert eng.snapshots == 2 and ck.latest[0].t == 6 and ck.latest[1] == ("token", 2)
    never = _checkpoints.Checkpoints(eng, {}, drv, every=0)
    never.take(advanced(drv, 30))
    assert never.latest[1] is None and eng.snapshots == 2


def test_a_recovery_replays_from_the_latest_checkpoint_with_fresh_copies():
    eng = FakeEngine([None])
    ck = _checkpoints.Checkpoints(eng, {}, _Driver(1, 1), every=2)
    ck.take(advanced(_Driver(1, 1), 4))
    drv = ck.restore(PartitionsLost("worker gone"))
    assert drv.t == 4 and eng.recovered_to == [("token", 1)]
    # the copies of the checkpoint are made anew on today's workers
    assert ck.latest[1] == ("token", 2) and ck.recoveries == 1


def test_a_lost_checkpoint_replays_from_the_start_and_is_not_a_new_loss():
    eng = FakeEngine([CheckpointLost("both copies lost"), None])
    ck = _checkpoints.Checkpoints(eng, {}, _Driver(1, 1), every=2)
    ck.take(advanced(_Driver(1, 1), 4))
    drv = ck.restore(PartitionsLost("worker gone"))
    assert drv.t == 0 and eng.recovered_to == [("token", 1), None]
    assert ck.recoveries == 1 and ck.latest[1] is None


def test_too_many_losses_abandon_the_fit():
    losses = [PartitionsLost(f"loss {i}") for i in range(_checkpoints.MAX_RECOVERIES)]
    eng = FakeEngine(losses)
    ck = _checkpoints.Checkpoints(eng, {}, _Driver(1, 1), every=2)
    with pytest.raises(ClusterError, match="lost partitions 4 times; last: loss 2"):
        ck.restore(PartitionsLost("first"))
    assert len(eng.recovered_to) == _checkpoints.MAX_RECOVERIES
