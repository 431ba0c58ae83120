"""Method "whole" on the workers of one host: one copy of the rows, shared through a
file in /dev/shm (``_host_memory``), mapped by the other workers; the same bits as one
machine, nothing left in /dev/shm, and each worker its own copy where the file cannot
be made."""
import errno
import glob
import os
import time
from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp

import pybudget
import pybudget.dask as pbd
from pybudget.dask import _host_memory, _whole
from pybudget.dask._partition import PartSummary
from pybudget.dask._plan import FitSpec
from pybudget.dask.errors import HostCopyMissing

from helpers import tasks_run

distributed = pytest.importorskip("distributed")
pytestmark = pytest.mark.skipif(not _host_memory.available(), reason="no /dev/shm")


def make_data(n=1200, d=250, classes=4, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.05, format="csr", random_state=seed)
    X.data = rng.normal(size=X.data.shape)
    y = np.argmax(X @ rng.normal(size=(d, classes)) + 0.5 * rng.normal(size=(n, classes)),
                  axis=1)
    return X, y


def ours():
    return set(glob.glob(_host_memory.path("pybudget-*")))


def sent(ran):
    """The names of the tasks that ran, and {name: [worker of each]} (``tasks_run``)."""
    where = {}
    for name, worker in ran:
        where.setdefault(name, []).append(worker)
    return [name for name, _ in ran], where


def gone_soon(before):
    """Our files in /dev/shm are those of before within 5 s (the unlink is not waited
    for)."""
    deadline = time.monotonic() + 5
    while ours() - before and time.monotonic() < deadline:
        time.sleep(0.05)
    return not (ours() - before)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_create_write_then_attach_gives_the_same_arrays(dtype):
    """Two writers create the file (the second opens the first's), each writes some
    arrays; a third process's attach sees them all, aligned."""
    arrays = [np.arange(7, dtype=dtype), np.arange(5, dtype=np.int32),
              np.empty(0, dtype=np.int64), np.linspace(0, 1, 9)]
    name = "pybudget-test-roundtrip"
    shapes = [(a.shape, a.dtype) for a in arrays]
    try:
        views, layout = _host_memory.create(name, shapes)
        again, same = _host_memory.create(name, shapes)
        assert same == layout
        for k, a in enumerate(arrays):
            (views if k % 2 else again)[k][...] = a
        got = _host_memory.attach(name, layout)
    finally:
        _host_memory.unlink(name)
    assert not os.path.exists(_host_memory.path(name))
    for a, g in zip(arrays, got):
        assert g.dtype == a.dtype and g.shape == a.shape
        np.testing.assert_array_equal(g, a)
        assert g.ctypes.data % _host_memory.ALIGN == 0 or a.size == 0
    with pytest.raises(OSError):         # (unlinked: a late worker cannot map it)
        _host_memory.attach(name, layout)


def _parts(case):
    """Partitions' (X, y, sample_weight) and the spec all_rows needs, for ``case``."""
    rng = np.random.default_rng(5)
    X = sp.random(90, 40, density=0.2, format="csr", random_state=5)
    X.data = rng.normal(size=X.data.shape)
    y = rng.integers(0, 3, size=90) * 7 + 1
    spec = FitSpec(loss="hinge", n_parts=3, bias=1.0, d=40, C=1.0, seed=0, n_rows=90,
                   classes=np.array([1, 8, 15]), class_weight=np.ones(3),
                   positive=(0, 1, 2))
    cuts = [0, 30, 55, 90]
    if case == "float32":
        X = X.astype(np.float32)
    if case == "regression":
        y = rng.normal(size=90)
        spec = replace(spec, regression=True, loss="epsilon_insensitive", classes=None,
                       class_weight=None, positive=None)
    if case == "one partition":
        cuts = [0, 90]
    parts = [(X[a:b].copy(), y[a:b], rng.uniform(0.5, 2, size=b - a))
             for a, b in zip(cuts, cuts[1:])]
    if case == "narrow and unsorted":        # (a partition without the last columns)
        Xn = parts[0][0][:, :30].tocsr()
        Xn.indices, Xn.data = Xn.indices.copy(), Xn.data.copy()
        for r in range(Xn.shape[0]):          # each row's entries reversed
            s = slice(Xn.indptr[r], Xn.indptr[r + 1])
            Xn.indices[s], Xn.data[s] = Xn.indices[s][::-1], Xn.data[s][::-1]
        Xn.has_sorted_indices = False
        parts[0] = (Xn, parts[0][1], parts[0][2])
    return spec, parts


def _file_plan(spec, parts):
    """_whole.file_plan of the partitions, from the summaries the workers give."""
    Xs = [X if X.shape[1] == spec.d else
          sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], spec.d))
          for X, _, _ in parts]
    infos = [PartSummary(n=X.shape[0], d=spec.d, nnz=X.nnz, dtypes=tuple(
        a.dtype.str for a in (X.data, X.indices, X.indptr, y))) for X, (_, y, _)
        in zip(Xs, parts)]
    return _whole.file_plan(spec, infos)


@pytest.mark.parametrize("case", ["plain", "float32", "regression", "one partition",
                                  "narrow and unsorted"])
def test_file_rows_are_all_rows(case):
    """The rows written into the file by each partition (in any order), as each worker
    of the host maps them, are all_rows' arrays, value for value and dtype for dtype
    (so the same bits)."""
    spec, parts = _parts(case)
    job = _whole.LinearProblems(spec, tol=0.1, max_iter=1000)
    ref = _whole.all_rows(job, *parts)
    name = f"pybudget-test-rows-{case.replace(' ', '-')}"
    shapes, starts = _file_plan(spec, parts)
    try:
        written = [_whole.file_write(name, shapes, spec, row, at, part)
                   for (row, at), part in reversed(list(zip(starts, parts)))]
        made = [_whole.file_rows(name, shapes, job, ref[0].n, *written)
                for _ in range(2)]         # (each worker of the host maps it)
    finally:
        _host_memory.unlink(name)
    for rows, y, sw, plan in made:
        X, Xr = rows.X, ref[0].X
        assert X.shape == Xr.shape and X.has_sorted_indices and rows.bias == ref[0].bias
        for a, b in [(X.data, Xr.data), (X.indices, Xr.indices), (X.indptr, Xr.indptr),
                     (rows.sqnorms, ref[0].sqnorms), (y, ref[1]), (sw, ref[2])]:
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)
        assert plan == ref[3]


def test_create_on_a_full_tmpfs_leaves_nothing(monkeypatch):
    """A tmpfs without room fails the reservation (not a write with SIGBUS): no file
    is made, and none is left."""
    def full(fd, offset, size):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "posix_fallocate", full)
    assert _host_memory.create("pybudget-test-full", [((10,), np.float64)]) is None
    # (its own name only: other test processes make and unlink theirs meanwhile)
    assert not os.path.exists(_host_memory.path("pybudget-test-full"))


@pytest.mark.parametrize("lacks", ["tmpfs", "posix_fallocate"])
def test_without_a_tmpfs_or_fallocate_no_file_is_made(monkeypatch, lacks):
    """Where there is no /dev/shm (macOS, Windows) or no way to reserve its space, no
    file is made: each worker keeps its own copy."""
    if lacks == "tmpfs":
        monkeypatch.setattr(_host_memory, "ROOT", "/no/such/dir")
    else:
        monkeypatch.delattr(os, "posix_fallocate")
    assert not _host_memory.available()
    assert _host_memory.create("pybudget-test-none", [((4,), np.float64)]) is None
    monkeypatch.undo()
    assert not os.path.exists(_host_memory.path("pybudget-test-none"))


def test_file_rows_without_the_file_raise_host_copy_missing():
    with pytest.raises(HostCopyMissing):
        _whole.file_rows("pybudget-none", [((3,), np.float64)], {"d": 1}, 3)


def test_a_writer_on_a_full_tmpfs_raises_host_copy_missing_and_leaves_nothing(
        monkeypatch):
    """The first writer of the host's file cannot reserve its space: HostCopyMissing
    (the client then gives each worker its own copy), and no file is left."""
    def full(fd, offset, size):
        raise OSError(errno.ENOSPC, "No space left on device")

    spec, parts = _parts("plain")
    shapes, starts = _file_plan(spec, parts)
    monkeypatch.setattr(os, "posix_fallocate", full)
    with pytest.raises(HostCopyMissing, match="could not be made"):
        _whole.file_write("pybudget-test-full-writer", shapes, spec, *starts[0], parts[0])
    assert not os.path.exists(_host_memory.path("pybudget-test-full-writer"))


def blocks_on_workers(client, X, y):
    """X and y as Dask arrays of one block a worker, each sent to its worker (so each
    partition is built there, where a persisted array's chunks may share a worker);
    persisted, so that they no longer need the scattered blocks (an array made from a
    future does not keep it: once let go, the scheduler forgets the block)."""
    da = pytest.importorskip("dask.array")
    workers = sorted(client.scheduler_info()["workers"])
    step = -(-X.shape[0] // len(workers))
    xs, ys, sent = [], [], []
    for k, w in enumerate(workers):
        lo, hi = step * k, min(step * (k + 1), X.shape[0])
        fx, fy = client.scatter([X[lo:hi], y[lo:hi]], workers=[w])
        sent += [fx, fy]
        n = hi - lo
        xs.append(da.from_delayed(fx, shape=(n, X.shape[1]), dtype=X.dtype, meta=X[:0]))
        ys.append(da.from_delayed(fy, shape=(n,), dtype=y.dtype))
    Xd, yd = client.persist([da.concatenate(xs), da.concatenate(ys)])
    distributed.wait([Xd, yd])
    return Xd, yd


def fit_on(client, monkeypatch, inputs, seed=0):
    """A "whole" fit on 2 worker processes of one host, and one machine's.  "dask
    array": a block a worker, each partition built on the worker of its block (above
    rules with a lower small_bytes), so each writes its own rows into the file; "in
    memory": the partitions, blocks of contiguous rows, on one worker (small), which
    writes them."""
    X, y = make_data(seed=seed)
    one = pybudget.LinearSVC(random_state=0).fit(X, y)
    rules = None
    if inputs == "dask array":
        rules = pbd.ClusterRules(small_bytes=1000)
        X, y = blocks_on_workers(client, X, y)
    m = pbd.LinearSVC(method="whole", random_state=0, client=client,
                      rules=rules).fit(X, y)
    return m, one


@pytest.mark.parametrize("inputs", ["dask array", "in memory"])
def test_the_workers_of_a_host_share_one_copy_to_one_machines_bits(client, monkeypatch,
                                                                   inputs):
    """Two workers of one host: the rows go into one file in /dev/shm, each partition's
    written by the worker holding it, and both workers map it: no rows between the
    workers, no task fetching a partition's rows first; one machine's bits; no file
    left."""
    before = ours()
    with tasks_run(client) as ran:
        m, one = fit_on(client, monkeypatch, inputs)
    names, where = sent(ran)
    np.testing.assert_array_equal(m.coef_, one.coef_)
    np.testing.assert_array_equal(m.intercept_, one.intercept_)
    assert "all_rows" not in names and "file_write" not in names
    assert "partition_rows_task" not in names
    assert len(set(where["file_rows"])) == 2 and m.bytes_sent_["workers"] == 0
    # (a Dask array: each worker its own block; in memory: small, all on one worker)
    assert len(set(where["file_write_held"])) == (2 if inputs == "dask array" else 1)
    assert names.count("file_write_held") == m.n_partitions_
    assert gone_soon(before)


@pytest.mark.parametrize("inputs", ["dask array", "in memory"])
@pytest.mark.parametrize("how", ["not made", "not seen"])
def test_where_the_copy_cannot_be_shared_each_worker_copies(client, monkeypatch, how,
                                                            inputs):
    """The file cannot be made (as where /dev/shm is missing or full), or the other
    worker cannot map it (as in a container with its own /dev/shm): each worker gets
    its own copy, to the same bits."""
    if how == "not made":
        # (a name in no directory: the file cannot be made)
        real, fn = _whole.file_write_held, "file_write_held"
        monkeypatch.setattr(_whole, fn, lambda name, *args: real(name + "/x", *args))
    else:
        real, fn = _whole.file_rows, "file_rows"
        monkeypatch.setattr(_whole, fn, lambda name, *args: real(name + "-x", *args))
    before = ours()
    with tasks_run(client) as ran:
        m, one = fit_on(client, monkeypatch, inputs, seed=1)
    np.testing.assert_array_equal(m.coef_, one.coef_)
    np.testing.assert_array_equal(m.intercept_, one.intercept_)
    assert sent(ran)[0].count("all_rows") == 2
    assert m.bytes_sent_["workers"] > 0
    assert gone_soon(before)


def test_a_worker_that_runs_no_problem_still_writes_its_partition(monkeypatch):
    """4 workers of one host, 3 problems: the partition of the worker left out is
    written into the file by that worker all the same (no rows move), and the three
    that run problems share it; one machine's bits."""
    X, y = make_data(n=1600, classes=3, seed=2)
    one = pybudget.LinearSVC(random_state=0).fit(X, y)
    before = ours()
    with distributed.LocalCluster(n_workers=4, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        Xd, yd = blocks_on_workers(c, X, y)
        with tasks_run(c) as ran:
            m = pbd.LinearSVC(method="whole", random_state=0, client=c,
                              n_partitions=4,
                              rules=pbd.ClusterRules(small_bytes=1000)).fit(Xd, yd)
        assert gone_soon(before)
    where = sent(ran)[1]
    np.testing.assert_array_equal(m.coef_, one.coef_)
    np.testing.assert_array_equal(m.intercept_, one.intercept_)
    assert len(set(where["file_write_held"])) == 4
    assert len(set(where["solve_problems"])) == 3
    assert len(set(where["file_rows"])) == 3 and m.bytes_sent_["workers"] == 0
