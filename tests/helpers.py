"""Helpers the test modules share (one module: tests never import
each other)."""
import functools
import os
import signal
import threading
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from pybudget.datasets import external_data_dir

ROOT = Path(__file__).resolve().parents[1]        # the checkout (or the suite's copy)
TEST_DATA = Path(__file__).resolve().parent / "data"


def make_problem(n=60, d=15, density=0.3, seed=0, zero_rows=0):
    """Small sparse binary problem with a linear signal, labels in {-1, +1}."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, format="csr", random_state=rng)
    X.data = rng.standard_normal(X.nnz)
    if zero_rows:
        X = sp.vstack([X, sp.csr_matrix((zero_rows, d))]).tocsr()
    w = rng.standard_normal(d)
    y = np.sign(X @ w + 0.3 * rng.standard_normal(X.shape[0]))
    y[y == 0] = 1
    return X, y



def small_problem(n=60, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * (rng.uniform(size=(n, d)) < 0.8)
    y = np.where(X[:, 0] + 0.5 * X[:, 1] ** 2 > 0.3, 1.0, -1.0)
    return X, y


MASK = (1 << 64) - 1


class SplitMix:
    """Python twin of pybudget/_core/_rng.pxd."""

    def __init__(self, seed):
        self.s = seed & MASK

    def next(self):
        self.s = (self.s + 0x9E3779B97F4A7C15) & MASK
        z = self.s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def shuffle(self, a):
        for i in range(len(a) - 1, 0, -1):
            j = ((self.next() >> 32) * (i + 1)) >> 32
            a[i], a[j] = a[j], a[i]


def data_dir():
    return Path(os.environ.get("PYBUDGET_DATA", external_data_dir()))


def need_data(*names):
    """Skip (cleanly) when the benchmark data files are absent."""
    missing = [n for n in names if not (data_dir() / n).exists()]
    return pytest.mark.skipif(bool(missing), reason=f"benchmark data absent: {missing}")


@contextmanager
def pool_rendezvous(parties):
    """Prove that ``parties`` of pybudget's pool threads ran problems at the same time.

    Each pool thread (named "pybudget...", ``_core._parallel.map_threads``), on its first
    call into pybudget's code, waits until ``parties`` threads have arrived (30 s at
    most).  Yields (seen, broken): the threads that arrived, and those whose wait timed
    out.  A run on fewer threads than ``parties`` leaves ``broken`` non-empty or ``seen``
    short; with ``parties`` < 2 nothing is checked (one thread: no pool)."""
    import pybudget
    package = os.path.dirname(pybudget.__file__)
    barrier = threading.Barrier(max(parties, 1), timeout=30)
    seen, broken = set(), []

    def profile(frame, event, arg):
        name = threading.current_thread().name
        if (event != "call" or not name.startswith("pybudget") or name in seen
                or not frame.f_code.co_filename.startswith(package)):
            return
        seen.add(name)
        try:
            barrier.wait()
        except threading.BrokenBarrierError:
            broken.append(name)

    threading.setprofile(profile)      # (threads started from here on)
    try:
        yield seen, broken
    finally:
        threading.setprofile(None)


# ---- pybudget.dask -------------------------------------------------------------------

def ring_rules(**kw):
    """pybudget.dask rules under which method="auto" never means "whole" (the rows are
    never small enough to copy to each worker), with the fields kw changed: the tests
    of the ring and of "newton"."""
    from pybudget.dask import ClusterRules
    return ClusterRules(whole_bytes=-1, **kw)


def ring_estimators():
    """pybudget.dask's LinearSVC, LogisticRegression and LinearSVR with
    ``rules=ring_rules()`` unless a call passes its own rules: method="auto" on the
    tests' small data is then the ring (or "newton"), not "whole" as with the shipped
    rules (tests/dask/test_dask_whole.py)."""
    import pybudget.dask as pbd
    rules = ring_rules()
    return tuple(functools.partial(cls, rules=rules) for cls in
                 (pbd.LinearSVC, pbd.LogisticRegression, pbd.LinearSVR))


def make_data(n=1200, d=60, seed=0, classes=2, density=0.15):
    """Sparse rows and labels of ``classes`` linear classes (the cluster tests' data)."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, format="csr", random_state=seed)
    X.data = rng.normal(size=X.data.shape)
    W = rng.normal(size=(d, classes))
    y = np.argmax(X @ W + 0.3 * rng.normal(size=(n, classes)), axis=1)
    return X, y


def tall(n=3000, d=8, classes=2, seed=0, sparse=False):
    """Many more rows than columns (one machine's "auto" runs Newton there)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * rng.uniform(0.5, 3.0, d)
    W = rng.standard_normal((d, classes))
    y = np.argmax(X @ W + rng.logistic(size=(n, classes)), axis=1)
    return (sp.csr_matrix(X) if sparse else X), 7 * y - 2      # any label values


def chunked(X, y, parts):
    """X and y as Dask arrays of ``parts`` row chunks."""
    import dask.array as da
    step = -(-X.shape[0] // parts)
    return da.from_array(X, chunks=(step, X.shape[1])), da.from_array(y, chunks=step)


def held(client, within=10.0):
    """Partitions, weight replicas, checkpoint copies and held rows of every job still
    registered on the workers, once none is left or after ``within`` seconds (a fit
    does not wait for its workers to drop its tables: DaskEngine.close)."""
    import time

    from pybudget.dask import _worker
    deadline = time.monotonic() + within
    while True:
        got = client.run(lambda: sum(_worker.table_sizes(None, every=True).values()))
        if not any(got.values()) or time.monotonic() > deadline:
            return got
        time.sleep(0.05)


@contextmanager
def tasks_run(client):
    """Yields a list that holds, once the block has run, (name, worker) of every task
    that ran on the cluster meanwhile, in the order they finished: Dask's own task
    stream, a task's name its key's prefix (a pybudget.dask task is named after its
    function)."""
    import distributed
    from dask.utils import key_split
    out = []
    with distributed.get_task_stream(client) as stream:
        yield out
    out.extend((key_split(t["key"]), t["worker"])
               for t in sorted(stream.data, key=lambda t: t["startstops"][-1]["stop"]))


def kill_on_task(client, name, tokens, nth=1, times=1, leave=False):
    """Make workers die at a chosen task: a worker that starts its ``nth`` task named
    ``name`` (counted by each worker process) is SIGKILLed (its nanny starts another),
    or with ``leave`` closes with its nanny (none comes back); ``times`` deaths over the
    cluster at most.  Each death leaves a file in the directory ``tokens``; returns a
    function listing the workers that died, in order.  (A Dask worker plugin: public
    API, no engine internals.)"""
    import distributed

    def claim(address):
        """One of the ``times`` tokens, taken by creating its file, which names the
        worker (False: none left)."""
        for i in range(times):
            try:
                fd = os.open(os.path.join(tokens, f"death-{i}"), os.O_CREAT | os.O_EXCL
                             | os.O_WRONLY)
            except FileExistsError:
                continue
            os.write(fd, address.encode())
            os.close(fd)
            return True
        return False

    class TaskKiller(distributed.WorkerPlugin):
        # (a local class: pickled by value, the workers need not import this module)
        def setup(self, worker):
            self.worker, self.seen = worker, 0

        def transition(self, key, start, finish, **kwargs):
            from dask.utils import key_split
            if finish != "executing" or key_split(key) != name:
                return
            self.seen += 1
            if self.seen < nth or not claim(self.worker.address):
                return
            if leave:
                self.worker.loop.add_callback(self.worker.close, nanny=True)
            else:
                os.kill(os.getpid(), signal.SIGKILL)

    client.register_plugin(TaskKiller(), name=f"kill-on-{name}")
    return lambda: [(Path(tokens) / f"death-{i}").read_text() for i in range(times)
                    if (Path(tokens) / f"death-{i}").exists()]
