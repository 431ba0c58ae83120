"""Checkpoints and the replay after a loss, in one place: the driver's side (when to
take one, the replay: ``Checkpoints``; how many losses a fit survives: ``counted``) and
the Dask ring's (where the copies live and how the ring comes back:
``Checkpointing``, a mixin of ``_dask_ring.DaskRing``).

A checkpoint is the driver's state (a copy of ``_driver._Driver``) with the ring's
token for the partitions' duals and the weights (``Ring.snapshot``; on a Dask cluster
copies held by two workers in ``_worker.STATE.kept``, never through the client unless
one worker is left).  After a lost partition the engine rebuilds it from its source on
the workers left (``Engine.rebuild_lost``), the ring puts every partition and the
weights back to the latest checkpoint (``Ring.recover``), and the fit replays from
there: the same bits as a run without the loss.
"""
import copy

from pybudget.dask import _steps, _worker
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

    def __init__(self, ring, spec, drv, every):
        self.ring, self.spec, self.every = ring, spec, every
        # the first checkpoint is the start itself: a recovery to it sets up afresh
        self.start = self.latest = (copy.deepcopy(drv), None)
        self.recoveries = 0

    def take(self, drv):
        """A checkpoint before round drv.t when one is due (every ``every`` rounds)."""
        if (self.every > 0 and drv.t > 0 and drv.t % self.every == 0
                and self.latest[0].t != drv.t):
            self.latest = (copy.deepcopy(drv), self.ring.snapshot())

    def restore(self, lost):
        """After ``lost`` (a PartitionsLost): the partitions rebuilt and put back to the
        latest checkpoint; returns the driver's state to replay from."""
        while True:                    # (a recovery can lose a worker too)
            self.recoveries = counted(self.recoveries, lost)
            try:
                self.ring.recover(self.spec, self.latest[1])
                # copies of the checkpoint on today's workers: the old ones may have
                # lived on the worker lost (a second loss would have nothing to
                # restore); a loss while they are made is a loss like any other
                fresh = self.ring.snapshot() if self.latest[1] is not None else None
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


class Checkpointing:
    """snapshot, recover and their helpers, for ``_dask_ring.DaskRing`` (on the ring's
    tables and its engine, ``self.eng``)."""

    def snapshot(self):
        """Each partition's duals and the weights, held by two workers (the partition's
        own or the payload's, and a peer) in ``_worker.STATE.kept``, never through the
        client.  Not as replicated task results: Dask's active memory manager drops a
        result's extra replicas within seconds, and a result lost with its only holder
        is recomputed by Dask against the partitions as they are then."""
        eng = self.eng
        n_problems = self.n_problems
        rows, loc = self._copies(self.rows, self.loc)
        pls = self._payloads(rows, rows)
        # after the ring's visits: small tokens where the payloads are, not the payloads
        done = [eng._on(loc[f.key], _worker.barrier, f)
                for f in pls]
        states = [eng._submit(_worker.snapshot_task, p, eng.job, p, range(n_problems),
                              *eng.after.get(p, ()), *done) for p in eng.where]
        live = eng.workers()
        if len(live) > 1:
            number = self.kept_no = self.kept_no + 1
            items = ([(("state", p), st, eng.where[p]) for p, st in zip(eng.where, states)]
                     + [(("rows", i), f, loc[f.key]) for i, f in enumerate(pls)])
            peers = {a: live[(live.index(a) + 1) % len(live)] if a in live else live[0]
                     for a in set(eng.where.values()) | set(loc.values())}
            keeps = [eng._on(at, _worker.keep_task, eng.job, number, name, fut)
                     for name, fut, home in items for at in {home, peers[home]}]
            # (the round's tasks, errors included, are waited for with them)
            eng._gather(keeps, also=set(peers.values()) | set(loc.values()))
            eng._synced()
            eng.client.run(_worker.drop_kept, eng.job, number, on_error="ignore")
            eng.bytes["workers"] += self.state_bytes + len(rows) * self.row_bytes
            slots = {f.key: i for i, f in enumerate(pls)}
            return number, {j: slots[f.key] for j, f in rows.items()}, None
        # one worker (say, while a lost one restarts): no peer to copy to, and a copy
        # lost with its only holder could not be restored, so the client keeps this
        # checkpoint
        got = eng._gather(states)
        eng._synced()
        payloads = dict(zip((f.key for f in pls), eng._gather(pls)))
        eng.bytes["client"] += self.state_bytes + sum(_steps.payload_nbytes(pl)
                                                      for pl in payloads.values())
        return got, {j: payloads[f.key] for j, f in rows.items()}, None

    @property
    def state_bytes(self):
        """Bytes of one copy of every partition's duals (u, preferences and order): 20
        per row per problem, an estimate from the arrays (the logistic complements' 8
        more are left out)."""
        return 20 * self.eng.n_rows * self.n_problems

    def recover(self, spec, token):
        """Rebuild the lost partitions on the workers left and put every partition and
        the weights back to the checkpoint (token None: the start, set up afresh)."""
        eng = self.eng
        # (rows the ring left on the workers are stale: the checkpoint's come back)
        eng.client.run(_worker.drop_held, eng.job, on_error="ignore")
        self.held, self.last_on = set(), {}
        eng.client.run(_worker.install, on_error="ignore")
        live = eng._rebuild_lost()[0]
        if token is None:
            eng._synced()
            self.setup(spec)
            return
        states, rows, loc = token
        if isinstance(states, int):          # kept by the workers: read where it is
            states, rows, loc = self._kept(states, rows)
        eng._gather([eng._submit(_worker.restore_task, p, eng.job, p, spec, states[p])
                     for p in eng.where], also=set(live))
        eng._synced()
        if loc is None:               # kept by the client: back to a worker
            held, rows = {}, dict(rows)
            for j, pl in rows.items():
                if id(pl) not in held:      # (a list: a dict would be scattered by key)
                    held[id(pl)] = eng.client.scatter([pl], workers=[live[0]],
                                                      hash=False)[0]
                rows[j] = held[id(pl)]
            loc = {f.key: live[0] for f in held.values()}
        self.replica_runs, self.latest = {}, {}     # (replicas lost or stale: seeded anew)
        # (problems passed after the checkpoint are open again: theirs come back)
        for j in rows:
            self.done.pop(j, None)
        # the ring gets copies, the checkpoint stays (a second loss restores it again)
        self.rows, self.loc = self._copies(rows, {k: a if a in live else live[0]
                                                  for k, a in loc.items()})

    def _kept(self, number, slots):
        """(states, rows, loc) of checkpoint ``number`` as futures of tasks that read a
        surviving copy where it is held (a partition's state from its own worker when
        that one holds it)."""
        eng = self.eng
        # (on_error="ignore": the workers that fail to answer are left out)
        have = eng.client.run(_worker.kept_here, eng.job, number, on_error="ignore")
        holders = {}
        for addr, names in have.items():
            for name in names:
                holders.setdefault(tuple(name), []).append(addr)

        def read(name, prefer):
            at = holders.get(name, [])
            if not at:
                raise CheckpointLost(f"both copies of checkpoint {number}'s {name} "
                                     "are lost")
            addr = prefer if prefer in at else at[0]
            return eng._on(addr, _worker.kept_task, eng.job, number, name), addr

        states = {p: read(("state", p), eng.where[p])[0] for p in eng.where}
        payloads = {i: read(("rows", i), None) for i in sorted(set(slots.values()))}
        rows = {j: payloads[i][0] for j, i in slots.items()}
        return states, rows, {f.key: addr for f, addr in payloads.values()}
