"""The engines: where the partitions live and how a round reaches them.

Both engines implement ``Engine`` with the same ``_steps`` functions in the same order,
so a fit gives the same bits on either:

- ThreadsEngine (here): every partition in this process, on a pool of threads (the
  sweeps release the GIL).  For tests and comparisons.
- DaskEngine (``_dask_engine``; its ring's runs in ``_dask_ring``, method "whole" in
  ``_dask_whole``, its checkpoints and recovery in ``_checkpoints``): each
  partition built once on a Dask worker and kept there.
"""
from typing import Protocol

import numpy as np

from pybudget._core._parallel import map_threads
from pybudget._core._progress import peak_rss_mb
from pybudget.dask import _steps, _whole
from pybudget.dask._partition import add_into, first_carry
from pybudget.dask._sources import build_partition
from pybudget.dask.errors import ClusterError
from pybudget.linear._dual_cd import SELECTIONS
from pybudget.linear.losses import PROBLEM_OF


class Engine(Protocol):
    """What the driver (``_driver.run``) asks of an engine.  Problems are ints; every
    result is summed over the partitions in partition order."""

    bytes: dict     # {"client": bytes through the client, "workers": between workers}

    def build(self, sources, regression, names, locality=None) -> list:
        """Build the partitions; returns their summaries."""

    def each(self, fn, *args, parts=None) -> list:
        """fn(partition, *args) where each partition lives (those in ``parts``, all when
        None), the results in partition order.  fn is a function of a module (it
        travels to the workers by name); safe to call from several threads at once."""

    def setup(self, spec) -> None:
        """Every problem's local state and its initial weights (as ring payloads)."""

    def ring_round(self, rnd, groups, sweeps, laps, stop=None, due=None) -> dict | None:
        """One ring round of each group (start partition, problems): ``laps`` laps.
        With ``stop`` (tol in the problems' unit): after a check pass of the problems in
        ``due`` (all when None; ``ring_check``, whose result it returns), of the
        problems whose KKT violation is above it."""

    def ring_check(self, groups, due=None) -> dict:
        """{j: _steps.CheckResult} at the current weights of the problems in ``due``
        (all when None), by each group's pass along the ring
        (``_steps.check_order``)."""

    def weights(self, n_problems, d) -> np.ndarray:
        """The weights, (n_problems, d + 1)."""

    def whole(self, spec, problems, tol, max_iter) -> tuple:
        """Method "whole" (``_whole``): every problem start to end with the one-machine
        solver where all rows are; (the problems' outputs, their weights stacked)."""

    def rebuild_lost(self) -> list:
        """The partitions whose workers left, rebuilt from their sources on the workers
        left (their state afresh); returns them."""

    def concurrency(self, n_problems) -> int:
        """How many problems of method "newton" run at the same time."""

    def snapshot(self):
        """A checkpoint of the partitions' duals and the weights."""

    def recover(self, spec, token) -> None:
        """Back to the checkpoint, lost partitions rebuilt."""

    def peak_memory(self) -> dict:
        """Peak resident memory (MiB) of each process holding partitions."""

    def placement(self) -> list:
        """Where each partition lives, in partition order (a worker's address; None in
        this process)."""

    def close(self) -> None:
        """Drop the partitions."""


def initial_weights(inits, problems, d):
    """The partitions' initial contributions (in partition order) summed: {j: w_j}."""
    W = {j: np.zeros(d + 1) for j in problems}
    for msgs in inits:
        for j in problems:
            add_into(W[j], msgs[j])
    return W


def start_payload(W, spec):
    """{j: RingRow(w_j, what the ring carries)}."""
    kind = PROBLEM_OF[spec.loss][0]
    sel = SELECTIONS[spec.selection]
    return {j: _steps.RingRow(w, first_carry(kind, sel)) for j, w in W.items()}


def assemble(rows, n_problems, d):
    """The weights of every problem (rows holds them all) as one (n_problems, d + 1)
    array."""
    assert len(rows) == n_problems
    # (np.zeros, then the rows: 0.11 s for 20 x 353,592 here; np.empty: 0.01 s)
    W = np.empty((n_problems, d + 1))
    for j, row in rows.items():
        W[j] = _steps.weights_of(row)
    return W


class ThreadsEngine:
    """The partitions in this process (see the module docstring)."""

    def __init__(self, n_threads=1):
        self.n_threads = n_threads
        self.parts = []
        self.bytes = {"client": 0, "workers": 0}

    def build(self, sources, regression, names, locality=None):
        self.parts = [build_partition(p, s, regression, names[p]) for p, s in enumerate(sources)]
        return [P.summary(regression) for P in self.parts]

    def each(self, fn, *args, parts=None):
        return [fn(self.parts[p], *args)
                for p in (range(len(self.parts)) if parts is None else parts)]

    def setup(self, spec):
        inits = [P.setup(spec) for P in self.parts]
        W = initial_weights(inits, range(len(inits[0])), spec.d)
        self.rows = start_payload(W, spec)

    def _map(self, fn, args):
        return map_threads(fn, args, self.n_threads)

    def _per_group(self, groups):
        """The threads each travelling group's visits get: the threads the groups leave
        over (as a Dask worker gives a ring run all of its threads)."""
        return max(1, self.n_threads // max(1, len(groups)))

    def whole(self, spec, problems, tol, max_iter):
        """Method "whole" (``_whole``): all rows here, the problems on the threads;
        (their outputs, their weights stacked)."""
        data = _whole.all_rows(spec, *[(P.X, P.y, P.sw) for P in self.parts])
        outs = self._map(lambda j: _whole.solve_problem(data, spec, j, tol, max_iter),
                         [(j,) for j in problems])
        return outs, _whole.weights(outs)

    def ring_round(self, rnd, groups, sweeps, laps, stop=None, due=None):
        K = len(self.parts)
        sums = None
        if stop is not None:
            sums = self.ring_check(groups, due)
            done = _steps.passed(sums, stop)
            groups = [(s, [j for j in g if j not in done]) for s, g in groups]

        groups = [g for g in groups if g[1]]
        threads = self._per_group(groups)

        def travel(start, problems):
            pl = {j: self.rows[j] for j in problems}
            for i, (p, lap) in enumerate(_steps.ring_order(start, K, laps)):
                pl = _steps.ring_visit(self.parts[p], rnd, pl, problems, sweeps, i == 0,
                                       lap, laps, threads=threads)
            return pl

        for pl in self._map(travel, groups):
            self.rows.update(pl)
        return sums

    def ring_check(self, groups, due=None):
        K = len(self.parts)
        groups = [g for g in _steps.checked_groups(groups, due) if g[1]]
        threads = self._per_group(groups)

        def travel(start, problems):
            carried = {j: self.rows[j] for j in problems}
            for p in _steps.check_order(start, K):
                carried = _steps.check_visit(self.parts[p], p, carried, problems, K,
                                             threads=threads)
            return carried.found

        per = _steps.found_by_partition(self._map(travel, groups), K)
        problems = [j for _, group in groups for j in group]
        return _steps.checked(per, _steps.weight_stats([self.rows], problems), problems)

    def weights(self, n_problems, d):
        return assemble(self.rows, n_problems, d)

    def rebuild_lost(self):
        raise ClusterError("the threads engine cannot lose a partition")

    def concurrency(self, n_problems):
        return min(self.n_threads, n_problems)

    def snapshot(self):
        return None         # (nothing here can be lost: no copy to keep)

    def recover(self, spec, token):
        raise ClusterError("the threads engine cannot lose a partition")

    def peak_memory(self):
        return {"local": peak_rss_mb()}

    def placement(self):
        return [None] * len(self.parts)

    def close(self):
        self.parts = []
