"""The task functions that run where the partitions live (a Dask worker process), and
the registry that keeps the partitions there between rounds.

The registry is this process's own dictionary, keyed by (job, partition): the rows and
the duals stay on the worker across rounds.  The weights travel between the tasks as
their results, so Dask moves them from worker to worker; the client asks only for
scalars.  A worker that dies takes its entries with it, which the client sees as
PartitionMissing (or the worker's absence) and answers by rebuilding from the source.
Arguments named ``after`` only order a task behind earlier ones on the same partition.
"""
import numpy as np

from pybudget.dask import _steps
from pybudget.dask._sources import build_partition

REGISTRY = {}
REPLICAS = {}     # (job, problem) -> this process's replica of the weights (sparse hops)
RECEIVED = {}     # job -> bytes of the sparse hops' payloads received from other workers
KEPT = {}         # (job, checkpoint, name) -> a checkpoint's copy held by this process


class PartitionMissing(RuntimeError):
    """The partition is not on this worker (it was lost with another one)."""


def _get(job, part):
    try:
        return REGISTRY[(job, part)]
    except KeyError:
        raise PartitionMissing(f"partition {part} of job {job} is not on this worker") from None


def build_task(job, part, source, regression, where):
    P = build_partition(part, source, regression, where)
    REGISTRY[(job, part)] = P
    return P.summary(regression)


def scales_task(job, part, spec):
    return _get(job, part).scales(spec)


def setup_task(job, part, spec):
    return _get(job, part).setup(spec)


def ring_task(job, visits, payload, problems, rnd, sweeps, first, laps, tol=None,
              log=None):
    """Consecutive visits (partition, lap) of the ring to partitions on this worker;
    ``tol``: the payload comes from a check pass, whose passed problems stay behind;
    ``log``: sparse hops, (this run's number, the run of this worker's replicas, the
    oldest replica's run on the other workers, whether the payload came from one)."""
    payload = (_steps.payload_of(payload) if tol is None
               else _steps.still_open(payload, tol))
    problems = [j for j in problems if j in payload]
    if log is not None:
        run, since, keep, moved = log
        payload, logs = _replica_rows(job, payload, since, moved)
        before = {j: payload[j][0].copy() for j in problems}
    for i, (part, lap) in enumerate(visits):
        payload = _steps.ring_visit(_get(job, part), rnd, payload, problems, sweeps,
                                    first and i == 0, lap, laps)
    if log is not None:
        own = {j: (_steps.change_set(run, before[j], payload[j][0]),) for j in problems}
        payload = _changes_rows(payload, logs, own, run, keep)
    return payload


def ring_check_task(job, parts, carried, problems, n_parts, checked, log=None):
    """Consecutive partitions on this worker of a group's check pass (_steps) of the
    problems ``checked`` (the payload carries all the group's ``problems``); ``log`` as
    for ring_task, with the group's latest run (the pass changes no weights)."""
    if log is not None:
        run, since, keep, moved = log
        payload, found, stats = (carried if isinstance(carried, tuple)
                                 else (carried, {}, None))
        rows, logs = _replica_rows(job, payload, since, moved)
        carried = (rows, found, stats)
    for part in parts:
        carried = _steps.check_visit(_get(job, part), part, carried, checked, n_parts)
    if log is not None:
        carried = (_changes_rows(carried[0], logs, {}, run, keep), *carried[1:])
    return carried


def check_found(carried):
    """What the client needs of a finished check pass: ({partition: scalars}, the
    weights' statistics), both computed by the pass (the round after it may already
    change the weights in place)."""
    return carried[1], carried[2]


# ---- the ring's sparse hops ---------------------------------------------------------

def seed_task(job, payload, problems):
    """This worker's replicas of the problems' weights, from a payload of the weights
    themselves: from here on the ring sends their changes (``_steps.Changes``)."""
    payload = _steps.payload_of(payload)
    for j in problems:
        REPLICAS[(job, j)] = np.array(_steps.weights_of(payload[j]), dtype=np.float64)


def _replica_rows(job, payload, since, moved):
    """A payload with each row's weights replaced by this worker's replica, brought up to
    date (its run: ``since``): (the rows, each row's change-sets to pass on)."""
    rows, logs = {}, {}
    for j, (x, carry) in payload.items():
        w = REPLICAS[(job, j)]
        if moved:
            RECEIVED[job] = RECEIVED.get(job, 0) + x.nbytes + carry.nbytes
        if isinstance(x, _steps.Changes):
            x.apply(w, since)
            logs[j] = x
        else:        # the weights themselves (the payload the replicas were seeded from)
            np.copyto(w, x)
            logs[j] = _steps.Changes()
        rows[j] = (w, carry)
    return rows, logs


def _changes_rows(rows, logs, own, run, keep):
    """The rows sent on after run ``run`` (``Changes.sent_on``; every other worker's
    replicas are as of run ``keep`` or later)."""
    return {j: (logs[j].sent_on(w, run, keep, own.get(j, ())), carry)
            for j, (w, carry) in rows.items()}


def rows_task(job, result, problems, copy):
    """The rows of ``problems`` in a ring result (or the parallel methods' weights) with
    the weights themselves: a row sent as changes is read from this worker's replica,
    current for it (the result is this worker's own).  ``copy``: arrays of their own
    (a checkpoint's; the ring changes its payloads in place)."""
    payload = _steps.payload_of(result)
    out = {}
    for j in problems:
        row = payload[j]
        if isinstance(row, tuple):
            w = REPLICAS[(job, j)] if isinstance(row[0], _steps.Changes) else row[0]
            out[j] = (w.copy(), row[1].copy()) if copy else (w, row[1])
        else:
            out[j] = row.copy() if copy else row
    return out


def take_received(job):
    """The bytes of sparse hops received here since the last call."""
    return RECEIVED.pop(job, 0)


def check_task(job, part, problems, *payloads):
    return _steps.check_partition(_get(job, part), payloads, problems)


def propose_task(job, part, rnd, W, problems, sweeps, check, *after):
    return _steps.propose_partition(_get(job, part), rnd, W, problems, sweeps, check)


def terms_task(job, part, etas):
    return _steps.terms_partition(_get(job, part), etas)


def commit_task(job, part, etas):
    _steps.commit_partition(_get(job, part), etas)


def snapshot_task(job, part, problems, *after):
    P = _get(job, part)
    return {j: P.state(j) for j in problems}


def restore_task(job, part, spec, states):
    """Partition back to a checkpoint: fresh setup, then the saved problem states."""
    P = _get(job, part)
    P.setup(spec)
    for j, st in (states or {}).items():
        P.restore(j, st)


def keep_task(job, number, name, value):
    """Hold a checkpoint's copy here, outside Dask's memory: a task result's extra
    replicas are dropped by Dask's active memory manager (every 2 s by default), and a
    result lost with its only holder would be recomputed against today's partitions."""
    KEPT[(job, number, name)] = value


def kept_task(job, number, name):
    """A checkpoint's copy held here (the recovery's input; never recomputed
    elsewhere: the task is pinned here and fails when the copy is gone)."""
    try:
        return KEPT[(job, number, name)]
    except KeyError:
        raise PartitionMissing(f"checkpoint {number} of job {job} has no copy of "
                               f"{name} here") from None


def kept_here(job, number):
    """The names of checkpoint ``number``'s copies held here."""
    return sorted(nm for (jb, no, nm) in KEPT if jb == job and no == number)


def drop_kept(job, before):
    """Forget the checkpoints numbered below ``before`` (a newer one is complete)."""
    for key in [k for k in KEPT if k[0] == job and k[1] < before]:
        del KEPT[key]


def parts_here(job):
    """The partitions of job held by this process."""
    return sorted(p for (jb, p) in REGISTRY if jb == job)


def drop_job(job):
    for table in (REGISTRY, REPLICAS, KEPT):
        for key in [k for k in table if k[0] == job]:
            del table[key]
    RECEIVED.pop(job, None)
