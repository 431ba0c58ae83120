"""The task functions that run where the partitions live (a Dask worker process), and
the registry that keeps the partitions there between rounds.

The registry is this process's own dictionary, keyed by (job, partition): the rows and
the duals stay on the worker across rounds; only weights and scalars travel.  A worker
that dies takes its entries with it, which the client sees as PartitionMissing (or the
worker's absence) and answers by rebuilding from the source.
"""
from pybudget._core._progress import peak_rss_mb
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


def setup_task(job, part, spec):
    return _get(job, part).setup(spec)


def round_task(job, part, j, rnd, w, check, sweeps, want_state):
    P = _get(job, part)
    msg, stats = P.round(j, rnd, w, check, sweeps)
    return msg, stats, (P.state(j) if want_state else None)


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


def peak_memory():
    return peak_rss_mb()
