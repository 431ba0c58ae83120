"""The task functions that run where the partitions live (a Dask worker process), and
the registry that keeps the partitions there between rounds.

The registry (``STATE``, a ``Registry``) is this process's own: the partitions, keyed by
(job, partition), with their rows and duals, stay on the worker across rounds.  The
ring's weights stay on the worker of the run that last changed them (``STATE.held``),
and the next run takes them from there (``Held``); the ring's sparse hops travel as task
results, which Dask moves from worker to worker.
The client asks for scalars and final rows.  A worker that dies takes its entries with
it, which the client sees as PartitionMissing (or the worker's absence) and answers by
rebuilding from the source.
Arguments named ``after`` only order a task behind earlier ones on the same partition.
"""
import asyncio
import threading
import time
from dataclasses import replace

import numpy as np

from pybudget.dask import _steps
from pybudget.dask._sources import build_partition
from pybudget.dask.errors import PartitionMissing



class Registry:
    """What this process keeps of every job between its tasks, in one place: a lost
    worker takes all of it along, ``drop_job`` clears a job's entries, and
    ``table_sizes`` counts them."""

    def __init__(self):
        self.partitions = {}    # (job, part) -> the Partition built here
        self.replicas = {}      # (job, problem) -> replica of the weights (sparse hops)
        self.received = {}      # job -> bytes of sparse hops received from other workers
        self.kept = {}          # (job, checkpoint, name) -> a checkpoint's copy held here
        self.held = {}          # (job, tag, problem) -> a RingRow a run left here
        self.given = {}         # job -> rows taken from ``held`` by other workers
        self.finished = {}      # job -> when a task of the job last finished here (timed)
        self.taken = threading.Condition()   # notified when another worker took a row


STATE = Registry()
# A run that takes rows from another worker keeps at most this many more than other
# workers have taken from here since it began, waiting up to PACE_WAIT seconds once.
PACE_AHEAD = 2
PACE_WAIT = 1.0


def timed(job, fn, *args):
    """Run a task of ``job`` (every task an engine submits), noting when it finished:
    the client's sign of progress (``DaskEngine._gather``'s timeout)."""
    try:
        return fn(*args)
    finally:
        STATE.finished[job] = time.time()


def last_finished(job):
    """When a task of job last finished here (time.time()), or None."""
    return STATE.finished.get(job)


def _get(job, part):
    try:
        return STATE.partitions[(job, part)]
    except KeyError:
        here = sorted(p for (jb, p) in STATE.partitions if jb == job)
        try:
            where = f"worker {_address()}"
        except ValueError:          # (not in a Dask worker)
            where = "this process"
        raise PartitionMissing(f"partition {part} of job {job} is not on {where} (it holds "
                               f"partitions {here} of the job)") from None


def build_task(job, part, source, regression, where):
    P = build_partition(part, source, regression, where)
    STATE.partitions[(job, part)] = P
    return P.summary(regression)


def drop_partition(job, part):
    """Forget a partition here (it was built on another worker)."""
    STATE.partitions.pop((job, part), None)


def partition_rows_task(job, part):
    """A partition's rows (X, y, sample weights), for method "whole" (``_whole``)."""
    P = _get(job, part)
    return P.X, P.y, P.sw


def each_task(job, part, fn, *args):
    """fn(partition, *args): ``Engine.each`` on this worker."""
    return fn(_get(job, part), *args)


def together_task(job, parts, fn, *args):
    """fn([partitions], *args): ``Engine.together`` on this worker."""
    return fn([_get(job, p) for p in parts], *args)


def setup_task(job, part, spec):
    return _get(job, part).setup(spec)


def ring_task(job, visits, payload, problems, rnd, sweeps, first, laps, stop=None,
              log=None, tag=None, after=None):
    """Consecutive visits (partition, lap) of the ring to partitions on this worker;
    ``stop``: the payload comes from a check pass, whose passed problems stay behind;
    ``log``: sparse hops, (this run's number, the run of this worker's replicas, the
    oldest replica's run on the other workers, whether the payload came from one);
    ``tag``: the rows stay here under it (``_hold``), the result names them; ``after``:
    the previous run on this worker (only orders this one behind it)."""
    src = _steps.payload_of(payload)
    left = set(_keys(src)) - (set() if stop is None else _steps.passed_in(payload, stop))
    problems = [j for j in problems if j in left]
    if not problems:
        # (every problem passed the check: nothing to visit, and the fit may have
        # ended and dropped its partitions here already)
        return {} if tag is None else Held(tag, [])
    if log is not None:
        run, since, keep, moved = log
        src, logs = _replica_rows(job, src, since, moved, problems)
        before = {j: src[j][0].copy() for j in problems}
    rows = _rows(job, src, problems, out=tag)
    for i, (part, lap) in enumerate(visits):
        emit = _hold(job, tag) if tag is not None and i == len(visits) - 1 else None
        rows = _steps.ring_visit(_get(job, part), rnd, rows, problems, sweeps,
                                 first and i == 0, lap, laps, emit, _threads())
    if log is not None:
        own = {j: (_steps.change_set(run, before[j], rows[j][0]),) for j in problems}
        rows = _changes_rows(rows, logs, own, run, keep)
    return rows if tag is None else Held(tag, problems)


def ring_check_task(job, parts, carried, problems, n_parts, checked, log=None, tag=None,
                    after=None):
    """Consecutive partitions on this worker of a group's check pass (_steps) of the
    problems ``checked`` (the payload carries all the group's ``problems``); ``log`` as
    for ring_task, with the group's latest run (the pass
    changes no weights); ``tag`` as for ring_task."""
    if isinstance(carried, _steps.CheckPass):
        payload, found, stats = carried.rows, carried.found, carried.stats
    else:
        payload, found, stats = carried, {}, None
    if log is not None:
        run, since, keep, moved = log
        payload, logs = _replica_rows(job, payload, since, moved)
    carried = _steps.CheckPass(rows=_rows(job, payload, list(_keys(payload)), out=tag),
                               found=found, stats=stats)
    for i, part in enumerate(parts):
        emit = _hold(job, tag) if tag is not None and i == len(parts) - 1 else None
        carried = _steps.check_visit(_get(job, part), part, carried, checked, n_parts,
                                     emit, _threads())
    if log is not None:
        carried = replace(carried, rows=_changes_rows(carried.rows, logs, {}, run, keep))
    if tag is not None:
        carried = replace(carried, rows=Held(tag, list(carried.rows)))
    return carried


# ---- rows held by the workers (the ring's dense hops) ---------------------------------

class Held:
    """A ring result whose rows stay on the worker that made it, in ``STATE.held`` under ``tag``;
    the next run takes them from there (``_Incoming``).  As task results, a group that
    two workers swap would be on both of them until each receiving task had it (Dask
    keeps a result until its dependents are done); taken a row at a time, paced, each
    worker gives its group away as it takes the other: it holds about one group."""
    __slots__ = ("tag", "problems", "addr")

    def __init__(self, tag, problems):
        self.tag, self.problems, self.addr = tag, list(problems), _address()


def _address():
    from distributed import get_worker
    return get_worker().address


def _threads():
    """This worker's threads: a ring run spreads its problems over them (the engine
    runs one ring task at a time on each worker)."""
    from distributed import get_worker
    return max(1, int(get_worker().state.nthreads))


def _keys(src):
    return src.problems if isinstance(src, Held) else list(src)


def _hold(job, tag):
    """emit for ring_visit and check_visit: keep the row here under tag."""
    def emit(j, row):
        STATE.held[(job, tag, j)] = row
        return None
    return emit


def _rows(job, src, order, keep=False, out=None):
    """The rows of src (a payload, or Held) as a mapping read once per problem
    (``keep``: read, not taken; ``out``: the tag the reading run holds its rows under)."""
    if not isinstance(src, Held):
        return src
    return _Incoming(job, src, order, keep, out)


class _Incoming:
    """Rows of a Held result, taken from ``STATE.held`` when asked: here directly; from another
    worker all at once, before the sweeps (which would compete with the transfers for
    the cores), one row a request to its ``take_handler``.  Paced: while this worker
    holds rows that a run on another worker is to take next (tags ending in ">"), it
    takes at most PACE_AHEAD rows more than other workers have taken from it since this
    run began, so that two workers swapping groups each give theirs away as they take
    the other's; should none take them for PACE_WAIT seconds, it stops pacing for the
    rest of the run (never a deadlock, at the price of holding both groups)."""

    def __init__(self, job, src, order, keep=False, out=None):
        self.job, self.src, self.order, self.keep, self.out = job, src, list(order), keep, out
        self.remote = src.addr != _address()
        self.got = None
        self.taken, self.given = 0, STATE.given.get(job, 0)
        self.paced = not keep

    def __iter__(self):
        return iter(self.order)

    def __getitem__(self, j):
        row = self.get(j)
        if row is None:
            raise PartitionMissing(f"rows {(self.job, self.src.tag, j)} are not held by "
                                   f"{self.src.addr}")
        return row

    def get(self, j):
        """The row, or None when its holder no longer has it (``check_found`` takes a
        passed problem's)."""
        if not self.remote:
            key = (self.job, self.src.tag, j)
            return STATE.held.get(key) if self.keep else STATE.held.pop(key, None)
        if self.got is None:
            self.got = self._take_all()
        return self.got.pop(j)

    def _take_all(self):
        from distributed import get_worker
        w = get_worker()
        pending = {}
        for j in self.order:
            self._wait_pace()
            pending[j] = asyncio.run_coroutine_threadsafe(
                self._take(w, (self.job, self.src.tag, j)), w.loop.asyncio_loop)
            self.taken += 1
        try:
            return {j: f.result()["row"] for j, f in pending.items()}
        except Exception as exc:             # the holder is gone (or its connection)
            raise PartitionMissing(f"rows of {self.src.tag} could not be read from "
                                   f"{self.src.addr}: {exc}") from None

    async def _take(self, w, key):
        async with w.rpc(self.src.addr) as peer:
            return await peer.pybudget_take(key=list(key), keep=self.keep)

    def _ahead(self):
        return (self.taken - (STATE.given.get(self.job, 0) - self.given) >= PACE_AHEAD
                and any(k[0] == self.job and k[1] != self.out and k[1].endswith(">")
                        for k in list(STATE.held)))

    def _wait_pace(self):
        t0 = time.monotonic()
        with STATE.taken:
            while self.paced and self._ahead():
                left = PACE_WAIT - (time.monotonic() - t0)
                if left <= 0:
                    self.paced = False
                else:
                    STATE.taken.wait(left)


async def take_handler(key=None, keep=False):
    """The worker's handler ``pybudget_take``: hand over one held row (and forget it,
    unless ``keep``)."""
    from distributed.protocol import to_serialize
    row = STATE.held.get(tuple(key)) if keep else STATE.held.pop(tuple(key), None)
    if row is not None and not keep:
        with STATE.taken:
            STATE.given[key[0]] = STATE.given.get(key[0], 0) + 1
            STATE.taken.notify_all()
    return {"row": None if row is None else to_serialize(row)}


def install(dask_worker):
    """Register this module's handler on the worker (idempotent)."""
    dask_worker.handlers["pybudget_take"] = take_handler


def check_found(job, carried, stop=None):
    """What the client needs of a finished check pass (a CheckPass): its PartChecks
    and the weights' statistics, both computed by the pass (the round after it may
    already change the weights in place), and as its rows, with ``stop``, the rows of the
    problems that passed, taken from here: they are final, and no worker need keep them
    until the end."""
    done = sorted(_steps.passed_in(carried, stop)) if stop is not None else []
    return replace(carried, rows=rows_task(job, carried, done, False) if done else {})


# ---- the ring's sparse hops ---------------------------------------------------------

def seed_task(job, payload, problems):
    """This worker's replicas of the problems' weights, from a payload of the weights
    themselves: from here on the ring sends their changes (``_steps.Changes``)."""
    rows = _rows(job, _steps.payload_of(payload), problems, keep=True)
    for j in problems:
        row = rows.get(j)
        if row is not None:     # (None: passed at the check this round goes with)
            STATE.replicas[(job, j)] = np.array(_steps.weights_of(row), dtype=np.float64)


def drop_replicas(job, problems, *after):
    """Forget this worker's replicas of the problems (None: all of the job's): the
    ring sends weights again, or the problems passed."""
    for key in [k for k in STATE.replicas
                if k[0] == job and (problems is None or k[1] in problems)]:
        del STATE.replicas[key]


def _replica_rows(job, payload, since, moved, problems=None):
    """A payload's rows (of ``problems``, all by default) with each row's weights
    replaced by this worker's replica, brought up to date (its run: ``since``): (the
    rows, each row's change-sets to pass on)."""
    rows, logs = {}, {}
    problems = _keys(payload) if problems is None else problems
    src = _rows(job, payload, problems)
    for j in problems:
        x, carry = src[j]
        w = STATE.replicas[(job, j)]
        if moved:
            STATE.received[job] = STATE.received.get(job, 0) + x.nbytes + carry.nbytes
        if isinstance(x, _steps.Changes):
            x.apply(w, since)
            logs[j] = x
        else:        # the weights themselves (the payload the replicas were seeded from)
            np.copyto(w, x)
            logs[j] = _steps.Changes()
        rows[j] = _steps.RingRow(w, carry)
    return rows, logs


def _changes_rows(rows, logs, own, run, keep):
    """The rows sent on after run ``run`` (``Changes.sent_on``; every other worker's
    replicas are as of run ``keep`` or later)."""
    return {j: _steps.RingRow(logs[j].sent_on(w, run, keep, own.get(j, ())), carry)
            for j, (w, carry) in rows.items()}


def rows_task(job, result, problems, copy):
    """The rows of ``problems`` in a ring result with the weights themselves: a row
    sent as changes is read from this worker's replica, current for it (the result is
    this worker's own).  ``copy``: arrays of their own
    (a checkpoint's; the ring changes its payloads in place)."""
    # (Held: this worker's own rows, taken unless copied)
    payload = _rows(job, _steps.payload_of(result), problems, keep=copy)
    out = {}
    for j in problems:
        row = payload[j]
        if isinstance(row, _steps.RingRow):
            w = STATE.replicas[(job, j)] if isinstance(row.w, _steps.Changes) else row.w
            out[j] = (_steps.RingRow(w.copy(), row.carry.copy()) if copy
                      else _steps.RingRow(w, row.carry))
        else:
            out[j] = row.copy() if copy else row
    return out


def take_received(job):
    """The bytes of sparse hops received here since the last call."""
    return STATE.received.pop(job, 0)


def barrier(payload):
    """A token where a payload is, once it is there (waits for the tasks making it)."""
    return None


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
    STATE.kept[(job, number, name)] = value


def kept_task(job, number, name):
    """A checkpoint's copy held here (the recovery's input; never recomputed
    elsewhere: the task is pinned here and fails when the copy is gone)."""
    try:
        return STATE.kept[(job, number, name)]
    except KeyError:
        raise PartitionMissing(f"checkpoint {number} of job {job} has no copy of "
                               f"{name} here") from None


def kept_here(job, number):
    """The names of checkpoint ``number``'s copies held here."""
    return sorted(nm for (jb, no, nm) in STATE.kept if jb == job and no == number)


def drop_kept(job, before):
    """Forget the checkpoints numbered below ``before`` (a newer one is complete)."""
    for key in [k for k in STATE.kept if k[0] == job and k[1] < before]:
        del STATE.kept[key]


def parts_here(job):
    """The partitions of job held by this process."""
    return sorted(p for (jb, p) in STATE.partitions if jb == job)


def table_sizes(job, every=False):
    """{table: entries of job (of every job with ``every``)} in this process (what a
    long fit must keep bounded, and a finished one must leave empty)."""
    tables = {"partitions": STATE.partitions, "replicas": STATE.replicas,
              "kept": STATE.kept, "held": STATE.held}
    return {name: sum(1 for k in t if every or k[0] == job) for name, t in tables.items()}


def _drop(job, tables):
    for table in tables:
        for key in [k for k in table if k[0] == job]:
            del table[key]


def drop_held(job):
    """Forget the rows held for job (after a loss: the checkpoint's are restored)."""
    _drop(job, (STATE.held,))


def drop_job(job):
    _drop(job, (STATE.partitions, STATE.replicas, STATE.kept, STATE.held))
    for table in (STATE.received, STATE.given, STATE.finished):
        table.pop(job, None)


async def drop_job_async(job):
    """drop_job as a coroutine: ``Client.run`` sends it without waiting only so."""
    drop_job(job)
