"""Method "whole" on a Dask cluster (``DaskEngine.whole``; functions of the engine):
all rows on each worker that runs a problem (one copy a host), then the problems dealt
to the workers' threads as they free up (what a worker computes: ``_whole``).
"""
import functools
import time
import uuid

from pybudget.dask import _host_memory, _whole, _worker
from pybudget.dask._checkpoints import MAX_RECOVERIES
from pybudget.dask._scheduler import POLL_SECONDS, worker_info
from pybudget.dask.errors import ClusterError, HostCopyMissing, PartitionsLost


def whole(eng, job, problems):
    """Method "whole" (``_whole``): all rows on each worker that will run a problem
    of ``job`` (a ``_whole.LinearProblems``, say)
    (``_rows_everywhere``; as many as there are problems), then the problems dealt
    as the workers' threads free up, a few to a task (``_share``), so the problems
    spread over the workers' threads; while more are left than the workers have
    threads, one more task waits on each worker, so that a thread does not wait for
    the client between two tasks.  A task whose worker leaves runs again on another (a
    problem's bits do not depend on where); when no worker holding the rows is left,
    the lost partitions are rebuilt and the rows copied again (at most
    MAX_RECOVERIES times); a fit in which no task finished for ``timeout`` seconds
    is abandoned, and a problem's own error (an overflow, say) stops the others.
    Returns the problems' outputs and what ``job.put`` made of them as each task's
    results arrived (the linear weights in one array)."""
    from distributed import TimeoutError as WaitTimeout, wait
    data, slots = _rows_everywhere(eng, job, len(problems))
    todo, running, outs, recoveries = list(problems)[::-1], {}, {}, 0
    row, W = {j: i for i, j in enumerate(problems)}, None
    last = time.monotonic()
    while todo or running:
        live = set(eng.workers())
        for fut, (addr, js) in list(running.items()):
            if addr not in live:           # (its pinned task would wait for ever)
                eng.client.cancel([fut])
                del running[fut]
                todo.extend(js[::-1])
        data = {a: f for a, f in data.items() if a in live}
        if not data:
            recoveries += 1
            if recoveries > MAX_RECOVERIES:
                raise ClusterError(f"every worker holding the rows left, "
                                   f"{recoveries} times; the fit is abandoned")
            data, slots = _rows_everywhere(eng, job, len(problems), rebuild=True)
        threads = sum(slots[a] for a in data)
        # (not near the end: a problem queued behind a long one would wait there
        # while another worker's thread is free)
        ahead = int(len(todo) > threads)
        for addr in sorted(data):
            busy = sum(1 for a, _ in running.values() if a == addr)
            for _ in range(slots[addr] + ahead - busy):
                js = [todo.pop() for _ in range(min(_share(len(todo), threads),
                                                    len(todo)))]
                if js:
                    running[eng._on(addr, _whole.solve_problems, data[addr], job,
                                    js)] = (addr, js)
        try:
            with eng.client.as_current():     # (wait() asks the default client)
                done = wait(list(running), timeout=POLL_SECONDS,
                            return_when="FIRST_COMPLETED").done
        except WaitTimeout:            # (none finished within the poll)
            done = ()
        for fut in done:
            addr, js = running.pop(fut)
            if fut.status == "finished":
                for j, out in zip(js, fut.result()):
                    eng.bytes["client"] += job.nbytes(out)
                    W = job.put(W, len(problems), row[j], out)
                    outs[j] = out
                last = time.monotonic()
            elif addr in set(eng.workers()):
                eng.client.cancel(list(running))
                fut.result()               # (raises the task's error)
            else:
                todo.extend(js[::-1])
        if time.monotonic() - last > eng.timeout:
            eng.client.cancel(list(running))
            raise ClusterError(f"no task of the fit finished for timeout="
                               f"{eng.timeout:g} s; it is abandoned")
    # (the rows' futures are let go on return, not cancelled: the scheduler fails
    # to cancel a future with a dependent the client let go, as a host's shared
    # rows have)
    return [outs[j] for j in problems], W

def _rows_everywhere(eng, job, n_problems, rebuild=False):
    """({worker: future of all rows there (``_whole.all_rows``)}, {worker: its
    threads}) on as many live workers as there are problems, those holding the most
    rows first; Dask moves the partitions' rows from worker to worker.  The workers
    of one host share one copy (``_host_copy``, ``_host_memory``), or each gets its
    own where they cannot.  Against a copy each, debian-sections20 (2 workers x 1
    thread on one 2-core host, a Dask array, defaults): per-pair time ratios of 3
    runs of 10 interleaved pairs had medians 0.957, 0.977 and 0.919 (22 of 30 pairs
    below 1, range 0.72-1.15); and a host holds one copy of the rows instead of one
    a worker.  A worker lost meanwhile: its partitions are
    rebuilt on the others and the copies made again (``rebuild``: first of all)."""
    share, losses = True, 0
    while True:
        names, hosts = {}, {}
        try:
            if rebuild or losses:
                eng.rebuild_lost()
            part = functools.partial(_rows_to_move, eng, {})
            info = worker_info(eng.client)
            here = {a: sum(eng.part_bytes[p] for p in eng.where if eng.where[p] == a)
                    for a in eng._live_workers()}
            for addr in sorted(here, key=lambda a: (-here[a], a))[:n_problems]:
                hosts.setdefault(_host(addr, info), []).append(addr)
            data, chain = {}, []
            for host, addrs in hosts.items():
                if not (share and len(addrs) > 1):
                    for addr in addrs:
                        data[addr] = eng._on(addr, _whole.all_rows, job,
                                             *map(part, range(len(eng.where))))
                        eng.bytes["workers"] += sum(eng.part_bytes) - here[addr]
                    continue
                name = names[addrs[0]] = f"pybudget-{uuid.uuid4().hex}"
                data.update(_host_copy(eng, name, job, part, addrs, host, info,
                                       chain))
            slots = {a: max(1, int(info.get(a, {}).get("nthreads") or 1)) for a in data}
            # (waits for the copies without bringing them to the client; the chain
            # is held until then: the scheduler fails to cancel a future that has
            # a dependent the client let go)
            eng._gather(list(data.values()) + chain, also=set(data), fetch=False)
            # (the partitions' copies go with their futures, when this returns: a
            # cancel would cancel the copies made from them too)
            return data, slots
        except PartitionsLost as exc:
            losses += 1
            if losses > MAX_RECOVERIES:
                raise ClusterError(f"workers kept leaving while the rows were "
                                   f"copied; last: {exc}") from None
        except HostCopyMissing:
            share = False          # (each worker copies the rows, from now on)
        finally:
            _unlink_shared(eng, names, hosts)

def _rows_to_move(eng, made, p):
    """Partition p's rows as a future on its worker, for another worker to take (a
    task made once per copy of the rows: ``made``)."""
    if p not in made:
        made[p] = eng._submit(_worker.partition_rows_task, p, eng.job, p,
                              track=False)
    return made[p]

def _host_copy(eng, name, job, part, addrs, host, info, chain):
    """{worker: future of all rows} for the workers ``addrs`` of ``host``, from the
    new file ``name`` that they map: each partition held on the host writes its own
    rows into it (``_whole.file_write_held``: no bytes between the workers), the
    others' rows move to the first worker, which writes them; then every worker
    maps the file (``_whole.file_rows``).  ``part(p)``: partition p's rows as a
    future; the writes go to ``chain``."""
    first, spec = addrs[0], job.spec
    shapes, starts = _whole.file_plan(spec, eng.part_info)
    written = []
    for p, (row, at) in enumerate(starts):
        if _host(eng.where[p], info) == host:
            written.append(eng._on(eng.where[p], _whole.file_write_held, name,
                                   shapes, spec, row, at, eng.job, p))
        else:
            written.append(eng._on(first, _whole.file_write, name, shapes, spec, row,
                                   at, part(p)))
            eng.bytes["workers"] += eng.part_bytes[p]
    chain += written
    return {a: eng._on(a, _whole.file_rows, name, shapes, job, eng.n_rows, *written)
            for a in addrs}

def _unlink_shared(eng, names, hosts):
    """Have the shared copies' files unlinked by every live worker of their host
    (``_alive``; the workers mapped them already, or failed), without waiting for
    the unlink."""
    for first, name in names.items():
        try:
            alive = eng._alive(next(a for a in hosts.values() if a[0] == first))
            if alive:
                eng.client.run(_host_memory.unlink_async, [name], workers=alive,
                               wait=False)
        except Exception:      # (a closing cluster: its workers' /dev/shm goes too)
            pass


def _host(addr, info):
    """The host of worker addr: the workers of one host can share memory."""
    return info.get(addr, {}).get("host") or addr.rsplit(":", 1)[0]


def _share(left, threads):
    """Problems for the next task when ``left`` are left for ``threads`` threads: half a
    thread's share of them, at least one (as OpenMP's guided schedule), so that most
    problems go in a few tasks, each costing the client and the workers ~5 ms of CPU
    here, and the last ones one by one, which balances the threads' ends.  Against one
    problem a task, debian-sections20 (20 problems, 2 workers x 1 thread on a 2-core
    machine, a Dask array, defaults): per-pair time ratios of 3 runs of 10 interleaved
    pairs had medians 0.959, 0.967 and 0.965 (18 of 30 pairs below 1, range
    0.77-1.33)."""
    return max(1, left // (2 * threads))
