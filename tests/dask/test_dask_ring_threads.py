"""The ring on workers with several threads: a ring run spreads its
group's problems over the worker's threads, for the visits and for the check passes.
The problems are independent, so the bits are those of one thread a worker and of the
threads engine, whatever the threads."""
import distributed
import numpy as np
import pytest

import pybudget.dask as pbd
from pybudget.dask import _steps

from helpers import make_data, ring_estimators, ring_rules, tasks_run

# (the tests of the ring: "auto" never means "whole" on their small data)
LinearSVC, LogisticRegression, LinearSVR = ring_estimators()

# (the data here is small: threads for every visit; the partitions on both workers,
# whatever the size)
THREADED = ring_rules(visit_thread_nnz=1)
SPREAD = ring_rules(visit_thread_nnz=1, small_bytes=1000)


@pytest.fixture(scope="module")
def two_by_two():
    # (in this process: the spy below sees the workers' calls)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster, set_as_default=False) as c:
        c.wait_for_workers(2)
        yield c


@pytest.fixture
def spy(monkeypatch):
    """The thread counts that ring visits and check passes ran their problems on."""
    calls = []
    real = _steps.map_threads

    def counted(fn, args, n_jobs):
        args = list(args)
        calls.append((n_jobs, len(args)))
        return real(fn, args, n_jobs)

    monkeypatch.setattr(_steps, "map_threads", counted)
    return calls


@pytest.mark.parametrize("laps", [1, 4], ids=["weights", "sparse hops"])
def test_ring_runs_each_visit_on_the_workers_threads(two_by_two, spy, laps):
    X, y = make_data(n=900, classes=4, seed=6)
    kw = dict(C=0.5, random_state=0, method="ring", n_partitions=2, max_iter=300,
              laps=laps, rules=SPREAD)
    with tasks_run(two_by_two) as ran:
        m = LinearSVC(client=two_by_two, **kw).fit(X, y)
    assert ("seed_task" in [name for name, _ in ran]) == (laps > 1)
    assert len(set(m.partition_workers_)) == 2
    assert spy and all(n == 2 for n, _ in spy)
    assert max(k for _, k in spy) == 2          # (4 problems in 2 groups)
    spy.clear()
    one = LinearSVC(engine="threads", n_jobs=1, **kw).fit(X, y)
    assert not spy
    four = LinearSVC(engine="threads", n_jobs=4, **kw).fit(X, y)  # two a group
    assert spy and all(n >= 2 for n, _ in spy)
    for ref in (one, four):
        np.testing.assert_array_equal(m.coef_, ref.coef_)
        np.testing.assert_array_equal(m.intercept_, ref.intercept_)
        assert m.n_rounds_ == ref.n_rounds_ and m.n_checks_ == ref.n_checks_
    assert m.converged_.all() and m.recoveries_ == 0


def test_small_visits_stay_on_one_thread():
    rules = pbd.ClusterRules()
    least = rules.visit_thread_nnz
    assert rules.visit_threads(4, 10, least // 10) == 1
    assert rules.visit_threads(4, 10, least // 5) == 2
    assert rules.visit_threads(4, 3, 10 * least) == 3
    assert rules.visit_threads(1, 10, 10 * least) == 1


def test_a_visit_error_on_a_thread_reaches_the_fit(spy, monkeypatch):
    """A problem that fails on one of a visit's threads fails the fit (not a hang)."""
    from pybudget.dask import _partition
    X, y = make_data(n=300, classes=3, seed=2)

    def broken(self, j, *args, **kwargs):
        raise FloatingPointError(f"problem {j} broke")

    monkeypatch.setattr(_partition.Partition, "visit", broken)
    with pytest.raises(FloatingPointError, match="broke"):
        LinearSVC(engine="threads", n_jobs=4, method="ring", n_partitions=2,
                  random_state=0, rules=THREADED).fit(X, y)
    assert spy and all(n == 2 for n, _ in spy)     # (it failed on the visits' threads)
