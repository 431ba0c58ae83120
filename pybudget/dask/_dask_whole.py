"""Method "whole" on a Dask cluster (a mixin of ``_dask_engine.DaskEngine``, apart so
that each file holds one concern; it works on the engine's tables): a copy of all rows
on each worker that runs a problem, then the problems dealt to the workers' threads as
they free up (what a worker computes: ``_whole``).
"""
import time

from pybudget.dask import _whole, _worker
from pybudget.dask._recovery import MAX_RECOVERIES
from pybudget.dask._scheduler import POLL_SECONDS, worker_info
from pybudget.dask.errors import ClusterError, PartitionsLost


class WholeProblems:
    """whole and its copies of the rows, for DaskEngine."""

    def whole(self, spec, problems, tol, max_iter):
        """Method "whole" (``_whole``): a copy of all rows on each worker that will run
        a problem (as many as there are problems), then the problems dealt as the
        workers' threads free up, a few to a task (``_share``), so the problems spread
        over the workers' threads; while more are left than the workers have threads,
        one more task waits on each worker, so that a thread does not wait for the client
        between two tasks.  A task whose worker leaves runs again on another (a
        problem's bits do not depend on where); when no worker holding the rows is left,
        the lost partitions are rebuilt and the rows copied again (at most
        MAX_RECOVERIES times); a fit in which no task finished for ``timeout`` seconds
        is abandoned, and a problem's own error (an overflow, say) stops the others.
        Returns the problems' outputs and their weights, put in one array as each
        task's results arrive (``_whole.put``)."""
        from distributed import wait
        data, slots = self._rows_everywhere(spec, len(problems))
        todo, running, outs, recoveries = list(problems)[::-1], {}, {}, 0
        row, W = {j: i for i, j in enumerate(problems)}, None
        last = time.monotonic()
        while todo or running:
            live = set(self.workers())
            for fut, (addr, js) in list(running.items()):
                if addr not in live:           # (its pinned task would wait for ever)
                    self.client.cancel([fut])
                    del running[fut]
                    todo.extend(js[::-1])
            data = {a: f for a, f in data.items() if a in live}
            if not data:
                recoveries += 1
                if recoveries > MAX_RECOVERIES:
                    raise ClusterError(f"every worker holding the rows left, "
                                       f"{recoveries} times; the fit is abandoned")
                data, slots = self._rows_everywhere(spec, len(problems), rebuild=True)
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
                        running[self._on(addr, _whole.solve_problems, data[addr], spec,
                                         js, tol, max_iter)] = (addr, js)
            try:
                with self.client.as_current():     # (wait() asks the default client)
                    done = wait(list(running), timeout=POLL_SECONDS,
                                return_when="FIRST_COMPLETED").done
            except TimeoutError:           # (none finished within the poll)
                done = ()
            for fut in done:
                addr, js = running.pop(fut)
                if fut.status == "finished":
                    for j, out in zip(js, fut.result()):
                        W = _whole.put(W, len(problems), row[j], out)
                        outs[j] = out
                    last = time.monotonic()
                elif addr in set(self.workers()):
                    self.client.cancel(list(running))
                    fut.result()               # (raises the task's error)
                else:
                    todo.extend(js[::-1])
            if time.monotonic() - last > self.timeout:
                self.client.cancel(list(running))
                raise ClusterError(f"no task of the fit finished for timeout="
                                   f"{self.timeout:g} s; it is abandoned")
        self.client.cancel(list(data.values()))
        return [outs[j] for j in problems], W

    def _rows_everywhere(self, spec, n_problems, rebuild=False):
        """({worker: future of all rows there (``_whole.all_rows``)}, {worker: its
        threads}) on as many live workers as there are problems, those holding the most
        rows first; Dask moves the partitions' rows from worker to worker.  A worker
        lost meanwhile: its partitions are rebuilt on the others and the copies made
        again (``rebuild``: first of all)."""
        for attempt in range(MAX_RECOVERIES + 1):
            try:
                if rebuild or attempt:
                    self._rebuild_lost()
                parts = [self._submit(_worker.partition_rows_task, p, self.job, p,
                                      track=False) for p in range(len(self.where))]
                info = worker_info(self.client)
                here = {a: sum(self.part_bytes[p] for p in self.where if self.where[p] == a)
                        for a in self._live_workers()}
                data, slots = {}, {}
                for addr in sorted(here, key=lambda a: (-here[a], a))[:n_problems]:
                    data[addr] = self._on(addr, _whole.all_rows, spec, *parts)
                    slots[addr] = max(1, int(info.get(addr, {}).get("nthreads") or 1))
                    self.bytes["workers"] += sum(self.part_bytes) - here[addr]
                # (waits for the copies without bringing them to the client)
                self._gather(list(data.values()), also=set(data), fetch=False)
                # (the partitions' copies go with their futures, when this returns: a
                # cancel would cancel the copies made from them too)
                return data, slots
            except PartitionsLost as exc:
                lost = exc
        raise ClusterError(f"workers kept leaving while the rows were copied; last: {lost}")


def _share(left, threads):
    """Problems for the next task when ``left`` are left for ``threads`` threads: half a
    thread's share of them, at least one (as OpenMP's guided schedule), so that most
    problems go in a few tasks, each costing the client and the workers ~5 ms of CPU
    here, and the last ones one by one, which balances the threads' ends.  On
    debian-sections20 (20 problems, 2 workers) this, with the selection made on the
    workers, took the fit from 1.07 to 1.01 s (docs/benchmarks.md, section 10)."""
    return max(1, left // (2 * threads))
