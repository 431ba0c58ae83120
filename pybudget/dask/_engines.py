"""Where the partitions live and how a round reaches them.

Both engines run the same Partition code and hand the driver the same results in the
same order, so a fit gives the same bits on either:

- ThreadsEngine: every partition in this process, the round's (partition, problem)
  tasks on a pool of threads (the sweeps release the GIL).  For tests and comparisons.
- DaskEngine: each partition built once on a Dask worker and kept there
  (``_worker.REGISTRY``); each round scatters the weights of the unfinished problems
  to every worker and runs one task per (partition, problem), pinned to the partition's
  worker.  A worker that leaves is noticed by polling the scheduler (a pinned task would
  otherwise wait for it forever): the driver then gets PartitionsLost and asks for
  ``recover``, which rebuilds the lost partitions on the workers left, from their sources.
"""
import threading
from concurrent.futures import CancelledError
import time
import uuid

from pybudget._core._parallel import map_threads
from pybudget.dask import _worker
from pybudget.dask._cocoa import PartitionsLost
from pybudget.dask._partition import payload_bytes
from pybudget.dask._sources import build_partition

POLL_SECONDS = 0.2
_IDENTITY_WITHOUT_ARGS = set()     # addresses of schedulers of older Dask releases


def worker_addresses(client):
    """The addresses of the scheduler's workers, asked afresh.  Not from
    ``client.scheduler_info()``: it returns the client's cached identity, which the
    client's own refresh (every 2 s, with no per-worker entries) can overwrite between
    the answer and the read, so a live cluster looked empty now and then and a fit
    restarted after a loss that never happened."""
    identity, address = client.scheduler.identity, client.scheduler.address
    if address not in _IDENTITY_WITHOUT_ARGS:
        try:
            return sorted(client.sync(identity, n_workers=-1)["workers"])   # (all of them)
        except TypeError:            # older Dask lists them all, and takes no argument
            _IDENTITY_WITHOUT_ARGS.add(address)     # (asked once: its scheduler logs it)
    return sorted(client.sync(identity)["workers"])


def _assemble(n_parts, active, outs):
    """outs in (partition, problem) order -> [{problem: (msg, stats, state)}] and the
    bytes of the weight changes."""
    res = [{} for _ in range(n_parts)]
    up = 0
    it = iter(outs)
    for p in range(n_parts):
        for j in active:
            out = next(it)
            res[p][j] = out
            up += payload_bytes(out[0])
    return res, up


class ThreadsEngine:
    """The partitions in this process (see the module docstring)."""

    def __init__(self, n_threads=1):
        self.n_threads = n_threads
        self.parts = []

    def build(self, sources, regression, names):
        self.parts = [build_partition(p, s, regression, names[p]) for p, s in enumerate(sources)]
        return [P.summary(regression) for P in self.parts]

    def setup(self, spec):
        return [P.setup(spec) for P in self.parts]

    def round(self, rnd, active, W, check, sweeps, want_state):
        def task(P, j):
            msg, stats = P.round(j, rnd, W[j], check, sweeps)
            return msg, stats, (P.state(j) if want_state else None)

        outs = map_threads(task, [(P, j) for P in self.parts for j in active], self.n_threads)
        res, up = _assemble(len(self.parts), active, outs)
        return res, up + len(self.parts) * W[active].nbytes

    def recover(self, spec, states):
        raise RuntimeError("the threads engine cannot lose a partition")

    def peak_memory(self):
        return {"local": _worker.peak_memory()}

    def close(self):
        self.parts = []


class DaskEngine:
    """The partitions on the workers of a Dask cluster (see the module docstring)."""

    def __init__(self, client, timeout=600.0, worker_grace=30.0):
        self.client = client
        self.timeout = timeout
        self.grace = min(worker_grace, timeout)
        self.job = uuid.uuid4().hex
        self.where = {}
        self.sources = None

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
                raise RuntimeError(f"no Dask worker left: none joined within "
                                   f"{self.grace:g} s; the fit is abandoned")
            time.sleep(POLL_SECONDS)

    def _submit(self, fn, part, *args):
        return self.client.submit(fn, *args, workers=[self.where[part]],
                                  allow_other_workers=False, pure=False)

    def _gather(self, futures):
        """Results of pinned futures ((future, partition) pairs), in order.  A watchdog
        thread polls the scheduler: when a partition's worker has left (its pinned task
        would wait for it forever) or ``timeout`` seconds have passed, it cancels the
        futures, and this raises PartitionsLost or RuntimeError respectively.  A task
        that finds its partition gone raises PartitionsLost too."""
        futs = [f for f, _ in futures]
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
                now = {p for f, p in futures
                       if self.where[p] not in live and f.status != "finished"}
                gone = sorted(now & missing)   # absent on two polls in a row
                missing = now
                if gone:
                    why.append(PartitionsLost(f"the workers of partitions {gone} left "
                                              "the cluster"))
                elif time.monotonic() > deadline:
                    why.append(RuntimeError(f"a round took longer than timeout="
                                            f"{self.timeout:g} s; the fit is abandoned"))
                if why:
                    self.client.cancel(futs)
                    return

        watchdog = threading.Thread(target=watch, daemon=True)
        watchdog.start()
        try:
            return self.client.gather(futs)
        except Exception as exc:
            if why:
                raise why[0] from None
            self.client.cancel(futs)
            if isinstance(exc, (_worker.PartitionMissing, OSError, CancelledError)):
                # the partition, the connection, or the round's weights (scattered to
                # a worker that died) are gone
                raise PartitionsLost(f"{type(exc).__name__}: {exc}") from None
            if type(exc).__name__ == "KilledWorker":
                raise RuntimeError(f"a task of the fit keeps failing (it was running on "
                                   f"workers that died): {exc}") from None
            raise
        finally:
            stop.set()
            watchdog.join()

    def build(self, sources, regression, names, locality=None):
        """Build every partition on a worker: the one holding its data (locality[p]) when
        given and alive, else round-robin over the workers by address."""
        self.sources, self.regression, self.names = sources, regression, names
        live = self._live_workers()
        for p in range(len(sources)):
            pref = locality[p] if locality else None
            self.where[p] = pref if pref in live else live[p % len(live)]
        return self._gather([(self._submit(_worker.build_task, p, self.job, p, sources[p],
                                           regression, names[p]), p)
                             for p in range(len(sources))])

    def setup(self, spec):
        return self._gather([(self._submit(_worker.setup_task, p, self.job, p, spec), p)
                             for p in self.where])

    def _scatter(self, rows):
        """The weights of the round, sent straight to each worker that holds partitions
        ({address: [future per row]}).  A worker that dies meanwhile breaks the
        connection (or times it out): PartitionsLost.  (A broadcast through the
        scheduler can wait forever for a dead worker.)"""
        out = {}
        targets = sorted(set(self.where.values()))
        gone = sorted(set(targets) - set(self.workers()))
        if gone:    # (connecting to a closed port would be retried until a timeout)
            raise PartitionsLost(f"workers {gone} left the cluster")
        for addr in targets:
            try:
                out[addr] = self.client.scatter(rows, workers=[addr], direct=True,
                                                hash=False)
            except OSError as exc:         # distributed's CommClosedError among them
                raise PartitionsLost(f"lost the connection to worker {addr} ({exc!r})") \
                    from None
        return out

    def round(self, rnd, active, W, check, sweeps, want_state):
        wf = self._scatter([W[j] for j in active])
        futs = [(self._submit(_worker.round_task, p, self.job, p, j, rnd,
                              wf[self.where[p]][i], check, sweeps, want_state), p)
                for p in self.where for i, j in enumerate(active)]
        outs = self._gather(futs)
        del wf
        res, up = _assemble(len(self.where), active, outs)
        return res, up + len(set(self.where.values())) * W[active].nbytes

    def recover(self, spec, states):
        """Rebuild the lost partitions on the workers left and put every partition back
        to the checkpoint (``states``: per partition {problem: state}, or None for the
        start)."""
        self._live_workers()
        # the workers that answer (the scheduler may still list one that just died)
        held = self.client.run(_worker.parts_here, self.job, on_error="ignore")
        live = sorted(held)
        if not live:
            raise PartitionsLost("no worker answered")
        lost = [p for p in self.where if p not in held.get(self.where[p], ())]
        for p in lost:
            self.where[p] = live[p % len(live)]
        if lost:
            self._gather([(self._submit(_worker.build_task, p, self.job, p, self.sources[p],
                                        self.regression, self.names[p]), p) for p in lost])
        self._gather([(self._submit(_worker.restore_task, p, self.job, p, spec,
                                    None if states is None else states[p]), p)
                      for p in self.where])

    def peak_memory(self):
        return self.client.run(_worker.peak_memory, on_error="ignore")

    def close(self):
        self.sources = None          # (their futures: the chunks on the cluster)
        try:
            self.client.run(_worker.drop_job, self.job)
        except Exception:       # a closing cluster: nothing left to drop
            pass

