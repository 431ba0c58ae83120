"""The driver's checkpoints and its replay after a loss.

A checkpoint is the driver's state (a copy of ``_driver._Driver``) with the engine's
token for the partitions' duals and the weights (``Engine.snapshot``; on a Dask cluster
copies held by two workers, ``_dask_checkpoints``).  After a lost partition the engine
rebuilds it and puts every partition back to the latest checkpoint (``Engine.recover``),
and the fit replays from there: the same bits as a run without the loss.
"""
import copy

from pybudget.dask.errors import CheckpointLost, ClusterError, PartitionsLost

MAX_RECOVERIES = 3        # lost partitions survived in one fit before giving up


def counted(recoveries, lost):
    """The recoveries of a fit after one more, for ``lost``; past MAX_RECOVERIES the fit
    is abandoned (ClusterError)."""
    recoveries += 1
    if recoveries > MAX_RECOVERIES:
        raise ClusterError(f"the fit lost partitions {recoveries} times; last: {lost}") from None
    return recoveries


class Checkpoints:
    """The start, the latest checkpoint, and the recoveries of one fit."""

    def __init__(self, engine, spec, drv, every):
        self.engine, self.spec, self.every = engine, spec, every
        # the first checkpoint is the start itself: a recovery to it sets up afresh
        self.start = self.latest = (copy.deepcopy(drv), None)
        self.recoveries = 0

    def take(self, drv):
        """A checkpoint before round drv.t when one is due (every ``every`` rounds)."""
        if (self.every > 0 and drv.t > 0 and drv.t % self.every == 0
                and self.latest[0].t != drv.t):
            self.latest = (copy.deepcopy(drv), self.engine.snapshot())

    def restore(self, lost):
        """After ``lost`` (a PartitionsLost): the partitions rebuilt and put back to the
        latest checkpoint; returns the driver's state to replay from."""
        while True:                    # (a recovery can lose a worker too)
            self.recoveries = counted(self.recoveries, lost)
            try:
                self.engine.recover(self.spec, self.latest[1])
                # copies of the checkpoint on today's workers: the old ones may have
                # lived on the worker lost (a second loss would have nothing to
                # restore); a loss while they are made is a loss like any other
                fresh = self.engine.snapshot() if self.latest[1] is not None else None
                break
            except CheckpointLost as again:
                # (no new loss: the same recovery, from the start)
                lost, self.latest = again, self.start
                self.recoveries -= 1
            except PartitionsLost as again:
                lost = again
        drv = copy.deepcopy(self.latest[0])
        self.latest = (self.latest[0], fresh)
        return drv
