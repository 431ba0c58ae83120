"""DaskEngine: ``_engines.Engine`` on the workers of a Dask cluster.

Each partition is built once on a Dask worker and kept there (``_worker.STATE``); a
task runs where its partition lives (``_submit``, ``_on``) and the client gathers the
results (``_gather``).  The methods run on top: the ring's weights and tables are a
``_dask_ring.DaskRing`` (``ring``), method "whole" is ``_dask_whole``, method
"newton" calls ``each``.  A worker that leaves is noticed by polling the scheduler (a
pinned task would otherwise wait for it forever): the caller then gets PartitionsLost,
and ``rebuild_lost`` builds the lost partitions again on the workers left, from their
sources (the ring then restores its checkpoint: ``_checkpoints``).
"""
import math
import threading
import time
import uuid
from concurrent.futures import CancelledError

import numpy as np

from pybudget._core._progress import peak_rss_mb
from pybudget.dask import _dask_whole, _worker
from pybudget.dask._dask_ring import DaskRing
from pybudget.dask._plan import ClusterRules
from pybudget.dask._scheduler import POLL_SECONDS, worker_addresses, worker_info
from pybudget.dask._sources import data_bytes, rows_bytes
from pybudget.dask.errors import ClusterError, PartitionMissing, PartitionsLost


class DaskEngine:
    """The partitions on the workers of a Dask cluster (see the module docstring)."""

    def __init__(self, client, rules=None, timeout=600.0, worker_grace=30.0):
        self.client = client
        # (placement and the sparse hops decide by these)
        self.rules = ClusterRules() if rules is None else rules
        self.timeout = timeout
        self.grace = min(worker_grace, timeout)
        self.job = uuid.uuid4().hex
        self.where = {}
        self.sources = None
        self.bytes = {"client": 0, "workers": 0}
        self.after = {}          # partition -> futures of its tasks not yet waited for
        self.used = set()        # workers that ran a task of the fit
        self.counting = threading.Lock()     # (method "newton" counts from several threads)

    def workers(self):
        return worker_addresses(self.client)

    def _live_workers(self):
        """The current workers, waiting up to worker_grace seconds for one to come."""
        deadline = time.monotonic() + self.grace
        while True:
            live = self.workers()
            if live:
                return live
            if time.monotonic() > deadline:
                raise ClusterError(f"no Dask worker left: none joined within "
                                   f"{self.grace:g} s; the fit is abandoned")
            time.sleep(POLL_SECONDS)

    def _submit(self, fn, part, *args, track=True):
        """A task pinned to the partition's worker; ``track``: later tasks on the
        partition that must follow it get it as an argument (holding a future keeps its
        result in the worker's memory, so ring visits, ordered by their payloads, are
        not tracked)."""
        fut = self._on(self.where[part], fn, *args)
        if track:
            self.after.setdefault(part, []).append(fut)
        return fut

    def _on(self, addr, fn, *args):
        """A task that runs on worker addr only (noting when it finished there:
        ``_worker.timed``)."""
        key = f"{getattr(fn, '__name__', 'task')}-{uuid.uuid4().hex}"
        self.used.add(addr)
        return self.client.submit(_worker.timed, self.job, fn, *args, key=key,
                                  workers=[addr], allow_other_workers=False)

    def _last_progress(self):
        """Seconds since a task of this fit last finished on any worker (inf: none).
        Asked twice when the first answer shows none: a client's first run on the
        workers takes seconds here, and its answer can predate tasks finished since."""
        for _ in range(2):
            asked = time.time()
            got = self.client.run(_worker.last_finished, self.job, on_error="ignore")
            times = [t for t in got.values() if isinstance(t, float)]
            since = asked - max(times) if times else math.inf
            if since < self.timeout:
                break
        return since

    def _gather(self, futures, also=(), fetch=True):
        """Results of pinned futures, in order (``fetch=False``: only waits for them to
        finish, leaving the results on the workers).  A watchdog thread polls the scheduler:
        when the worker of any partition, or any worker in ``also``, has left (a task
        pinned there would wait for it forever) or ``timeout`` seconds pass, it cancels
        the futures, and this raises PartitionsLost or ClusterError respectively.  The
        timeout counts from the last task of the fit that finished, not from the call:
        a gather that waits for many rounds, each of them progressing, is not stuck.  A
        task that finds its partition gone raises PartitionsLost too."""
        stop = threading.Event()
        why = []

        def watch():
            deadline = time.monotonic() + self.timeout
            missing = set()
            while not stop.wait(POLL_SECONDS):
                try:
                    live = set(self.workers())
                except Exception:          # the client is closing: gather will fail
                    return
                now = ({p for p in self.where if self.where[p] not in live}
                       | {a for a in also if a not in live})
                gone = now & missing           # absent on two polls in a row
                missing = now
                if gone:
                    parts = sorted(p for p in gone if isinstance(p, int))
                    why.append(PartitionsLost(
                        f"the workers of partitions {parts} left the cluster" if parts
                        else f"workers {sorted(gone)} left the cluster"))
                elif time.monotonic() > deadline:
                    # (asked only now: the workers know when a task last finished; a
                    # failed ask counts as no progress, so the watchdog cannot die of
                    # it and leave the gather without a timeout)
                    try:
                        since = self._last_progress()
                    except Exception:
                        since = math.inf
                    if since < self.timeout:
                        deadline = time.monotonic() + self.timeout - since
                    else:
                        why.append(ClusterError(f"no task of the fit finished for timeout="
                                                f"{self.timeout:g} s; it is abandoned"))
                if why:
                    try:
                        self.client.cancel(futures)
                    except Exception:      # (a closing client: gather fails anyway)
                        pass
                    return

        watchdog = threading.Thread(target=watch, daemon=True)
        watchdog.start()
        try:
            if not fetch:
                from distributed import TimeoutError as WaitTimeout, wait
                with self.client.as_current():     # (wait() asks the default client)
                    while not why:                 # (the watchdog's verdict ends it)
                        try:
                            wait(futures, timeout=self.timeout)
                            break
                        except WaitTimeout:       # (asyncio's on Python 3.10)
                            pass
                # (gathers only a failed future: raises its error)
                futures = [f for f in futures if f.status != "finished"]
            if why:
                raise why[0]
            return self.client.gather(futures, direct=True)
        except Exception as exc:
            if why:
                raise why[0] from None
            self.client.cancel(futures)
            if isinstance(exc, (PartitionMissing, OSError, CancelledError)):
                # the partition, the connection, or an input kept on a worker that
                # died is gone
                raise PartitionsLost(f"{type(exc).__name__}: {exc}") from None
            if type(exc).__name__ == "KilledWorker":
                raise ClusterError(f"a task of the fit keeps failing (it was running on "
                                   f"workers that died): {exc}") from None
            raise
        finally:
            stop.set()
            watchdog.join()

    def _synced(self):
        """Every task submitted so far has finished (a gather waited for them)."""
        self.after = {}

    def _moved(self, nbytes, src, dst):
        if src != dst:
            self.bytes["workers"] += nbytes

    def build(self, sources, regression, names, locality=None):
        """Build every partition on a worker: all on one worker when the data is small
        (``ClusterRules.small``: at most small_bytes and a tenth of its memory limit: a
        ring round is then one task, where spreading it would add a hop, 6-9 ms here,
        per worker and lap, and save nothing, the ring's visits running one at a time);
        else on the worker holding its data (locality[p]) when given and alive, or in
        contiguous runs over the workers by address (so that a ring visits a worker's
        partitions in one task).  The size is known for sure once the partitions are built (a Dask
        array's is unknown before, a file's compressed size is a rough guess,
        ``_sources.COMPRESSED_RATIO``): small rows of one problem (binary or
        regression) that were spread are then gathered on the worker holding most of
        them."""
        self.sources, self.regression, self.names = sources, regression, names
        live = self._live_workers()
        K = len(sources)
        # (the worker's memory limit, 0 when it has none)
        limit = worker_info(self.client).get(live[0], {}).get("memory_limit") or 0

        def small(size):
            return self.rules.small(size, limit)

        size = data_bytes(sources)
        for p in range(K):
            pref = locality[p] if locality and not small(size) else None
            self.where[p] = (pref if pref in live else
                             live[0] if small(size) else live[p * len(live) // K])
        out = self._gather([self._submit(_worker.build_task, p, self.job, p,
                                         self._sent(sources[p], p), regression, names[p])
                            for p in range(len(sources))])
        self._synced()
        # (one problem only: the problems of a one-vs-rest fit keep the workers busy
        # where the chunks are, and on one worker they would take turns)
        labels = set() if regression else set().union(*(s.labels.tolist() for s in out))
        if (len(labels) <= 2 and len(set(self.where.values())) > 1
                and small(sum(rows_bytes(s.n, s.nnz) for s in out))):
            rows = {}
            for p, s in enumerate(out):
                rows[self.where[p]] = rows.get(self.where[p], 0) + s.n
            self._gather_on(max(sorted(rows), key=rows.get))
        self.n_rows = sum(s.n for s in out)
        self.part_bytes = [rows_bytes(s.n, s.nnz) for s in out]
        self.part_info = out
        return out

    def _sent(self, source, part):
        """In-memory rows as a future on the partition's worker, sent there directly;
        as a task argument they would pass through the scheduler.  (A rebuild after a
        loss sends them again from ``self.sources``.)  Other sources as they are."""
        if source[0] != "arrays":
            return source
        try:
            return self.client.scatter([source], workers=[self.where[part]], direct=True,
                                       hash=False)[0]
        except OSError:          # (no direct connection to the workers: as an argument)
            return source

    def _gather_on(self, addr):
        """Move every partition to worker addr: dropped where it was, then built there
        anew from its source (Dask moves the chunks).  (In that order: workers in one
        process share their registry.)"""
        away = [p for p in self.where if self.where[p] != addr]
        self._gather([self._on(self.where[p], _worker.drop_partition, self.job, p)
                      for p in away])
        for p in away:
            self.where[p] = addr
        self._gather([self._submit(_worker.build_task, p, self.job, p, self.sources[p],
                                   self.regression, self.names[p]) for p in away])
        self._synced()

    def each(self, fn, *args, parts=None):
        # (not tracked: method "newton"'s problems call from several client threads,
        # each waiting for its own; also=: another thread's recovery may move a
        # partition while this call waits on its old worker)
        where = dict(self.where)
        parts = sorted(where) if parts is None else parts
        out = self._gather([self._on(where[p], _worker.each_task, self.job, p, fn, *args)
                            for p in parts], also={where[p] for p in parts})
        with self.counting:
            self.bytes["client"] += _array_bytes(args) * len(parts) + _array_bytes(out)
        return out

    def together(self, fn, parts, *args):
        addrs = {self.where[p] for p in parts}
        if len(addrs) != 1:
            raise ValueError(f"together: partitions {sorted(set(parts))} live on "
                             f"{len(addrs)} workers")
        addr = addrs.pop()
        out = self._gather([self._on(addr, _worker.together_task, self.job, list(parts), fn,
                                     *args)], also={addr})[0]
        with self.counting:
            self.bytes["client"] += _array_bytes(args) + _array_bytes(out)
        return out

    def ring(self, spec):
        return DaskRing(self, spec)

    def whole(self, job, problems):
        return _dask_whole.whole(self, job, problems)

    def rebuild_lost(self):
        lost = self._rebuild_lost()[1]
        self._synced()
        return lost

    def _rebuild_lost(self):
        """Rebuild the partitions whose workers are gone on the workers that answer,
        from their sources; returns those workers and the partitions rebuilt."""
        self._live_workers()
        # the workers that answer (the scheduler may still list one that just died)
        held = self.client.run(_worker.parts_here, self.job, on_error="ignore")
        live = sorted(held)
        if not live:
            raise PartitionsLost("no worker answered")
        lost = [p for p in self.where if p not in held.get(self.where[p], ())]
        for p in lost:
            self.where[p] = live[p % len(live)]
        self.after = {}
        if lost:
            self._gather([self._submit(_worker.build_task, p, self.job, p, self.sources[p],
                                       self.regression, self.names[p]) for p in lost])
        return live, lost
    def concurrency(self, n_problems):
        threads = sum(w.get("nthreads", 1) for w in worker_info(self.client).values())
        return max(1, min(threads, n_problems))

    def _alive(self, addrs):
        """Those of addrs the scheduler lists now, sorted: a ``Client.run`` on a worker
        that left waits for the connect timeout (30 s here)."""
        live = set(self.workers())
        return sorted(a for a in addrs if a in live)

    def placement(self):
        return [self.where[p] for p in range(len(self.where))]

    def peak_memory(self):
        # (the live workers of the fit only: an idle worker's first call imports
        # pybudget, 2 s here)
        workers = self._alive(self.used)
        if not workers:
            return {}
        return self.client.run(peak_rss_mb, workers=workers, on_error="ignore")

    def close(self):
        self.sources = None          # (their futures: the chunks on the cluster)
        try:
            workers = self._alive(self.used)
            if workers:
                # (not waited for, 15-20 ms a fit here: the fit has its result, and
                # each job's tables are its own)
                self.client.run(_worker.drop_job_async, self.job, workers=workers,
                                wait=False)
        except Exception:       # a closing cluster: nothing left to drop
            pass


def _array_bytes(values):
    """The bytes of the numpy arrays in values (lists and tuples looked into; another
    object with ``nbytes``, as a budgeted model's state, counts its own)."""
    if isinstance(values, (list, tuple)):
        return sum(_array_bytes(v) for v in values)
    nbytes = getattr(values, "nbytes", 0)
    return nbytes if isinstance(nbytes, (int, np.integer)) else 0
