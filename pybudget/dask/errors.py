"""What can go wrong on the cluster, as exceptions.

``ClusterError`` is public (``pybudget.dask.ClusterError``): the one error a fit raises
when the cluster fails it.  The others stay inside the package: a worker's task raises
``PartitionMissing`` when what it needs is not in its process, an engine turns that (or
a worker's absence) into ``PartitionsLost``, and the driver answers it by a recovery;
``HostCopyMissing`` makes method "whole" copy the rows where it meant to share them.
"""


class ClusterError(RuntimeError):
    """The cluster failed the fit (workers or tasks lost for good, no progress): the fit
    is abandoned with this one-line reason.  Other errors are not the cluster's."""


class PartitionsLost(Exception):
    """Raised by an engine when partitions (their workers) are gone; carries the cause."""


class CheckpointLost(PartitionsLost):
    """Both copies of a checkpoint went with the workers that held them (two workers
    lost before a recovery copied it anew): the fit replays from the start."""


class PartitionMissing(RuntimeError):
    """Raised on a worker: a partition, a held row or a checkpoint's copy is not in this
    process (it was lost with another worker, or the task ran where it should not)."""


class HostCopyMissing(RuntimeError):
    """Raised on a worker: the copy of the rows that another worker of its host was to
    share with it (method "whole", ``_host_memory``) is not there; the client then
    copies the rows to it."""
