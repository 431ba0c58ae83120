"""The task functions that run where the partitions live (a Dask worker process), and
the registry that keeps the partitions there between rounds.

The registry is this process's own dictionary, keyed by (job, partition): the rows and
the duals stay on the worker across rounds.  The weights travel between the tasks as
their results, so Dask moves them from worker to worker; the client asks only for
scalars.  A worker that dies takes its entries with it, which the client sees as
PartitionMissing (or the worker's absence) and answers by rebuilding from the source.
Arguments named ``after`` only order a task behind earlier ones on the same partition.
"""
from pybudget.dask import _steps
from pybudget.dask._sources import build_partition

REGISTRY = {}


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


def ring_task(job, visits, payload, problems, rnd, sweeps, first, laps, tol=None):
    """Consecutive visits (partition, lap) of the ring to partitions on this worker;
    ``tol``: the payload comes from a check pass, whose passed problems stay behind."""
    payload = (_steps.payload_of(payload) if tol is None
               else _steps.still_open(payload, tol))
    problems = [j for j in problems if j in payload]
    for i, (part, lap) in enumerate(visits):
        payload = _steps.ring_visit(_get(job, part), rnd, payload, problems, sweeps,
                                    first and i == 0, lap, laps)
    return payload


def ring_check_task(job, parts, carried, problems, n_parts):
    """Consecutive partitions on this worker of a group's check pass (_steps)."""
    for part in parts:
        carried = _steps.check_visit(_get(job, part), part, carried, problems, n_parts)
    return carried


def check_found(carried):
    """What the client needs of a finished check pass: ({partition: scalars}, the
    weights' statistics), both computed by the pass (the round after it may already
    change the weights in place)."""
    return carried[1], carried[2]


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


def parts_here(job):
    """The partitions of job held by this process."""
    return sorted(p for (jb, p) in REGISTRY if jb == job)


def drop_job(job):
    for key in [k for k in REGISTRY if k[0] == job]:
        del REGISTRY[key]
