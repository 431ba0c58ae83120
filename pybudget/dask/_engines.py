"""The engines: where the partitions live and how a round reaches them.

Both engines implement ``Engine`` with the same ``_steps`` functions in the same order,
so a fit gives the same bits on either:

- ThreadsEngine (here; its ring: ThreadsRing): every partition in this process, on
  a pool of threads (the sweeps release the GIL).  For tests and comparisons.
- DaskEngine (``_dask_engine``; its ring: ``_dask_ring.DaskRing``, with its
  checkpoints in ``_checkpoints``; method "whole": ``_dask_whole``): each partition
  built once on a Dask worker and kept there.
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
    """Where the partitions live, and the one way to reach them (``each``); the methods
    run on top (the ring's weights: ``ring``, a ``Ring``; method "whole": ``whole``).
    Problems are ints."""

    bytes: dict     # {"client": bytes through the client, "workers": between workers}

    def build(self, sources, regression, names, locality=None) -> list:
        """Build the partitions; returns their summaries."""

    def each(self, fn, *args, parts=None) -> list:
        """fn(partition, *args) where each partition lives (those in ``parts``, all when
        None), the results in partition order.  fn is a function of a module (it
        travels to the workers by name); safe to call from several threads at once."""

    def together(self, fn, parts, *args):
        """fn([partition p for p in parts], *args) in the one process that holds every
        partition of ``parts`` (they must live together: ``placement``); its result."""

    def ring(self, spec) -> "Ring":
        """The ring's weights and state, set up: every problem's local state and its
        initial weights."""

    def whole(self, job, problems) -> tuple:
        """Method "whole" (``_whole``): every problem of ``job`` (a
        ``_whole.LinearProblems``, say) start to end where all rows are; (the
        problems' outputs, what ``job.put`` made of them as they arrived)."""

    def rebuild_lost(self) -> list:
        """The partitions whose workers left, rebuilt from their sources on the workers
        left (their state afresh); returns them."""

    def concurrency(self, n_problems) -> int:
        """How many problems of method "newton" run at the same time."""

    def peak_memory(self) -> dict:
        """Peak resident memory (MiB) of each process holding partitions."""

    def placement(self) -> list:
        """Where each partition lives, in partition order (a worker's address; None in
        this process)."""

    def close(self) -> None:
        """Drop the partitions."""


class Ring(Protocol):
    """The ring's weights on an engine's partitions (``Engine.ring``), as the driver
    (``_driver.run``) uses them.  Every result is summed over the partitions in
    partition order."""

    def round(self, rnd, groups, sweeps, laps, stop=None, due=None) -> dict | None:
        """One ring round of each group (start partition, problems): ``laps`` laps.
        With ``stop`` (tol in the problems' unit): after a check pass of the problems in
        ``due`` (all when None; ``check``, whose result it returns), of the problems
        whose KKT violation is above it."""

    def check(self, groups, due=None) -> dict:
        """{j: _steps.CheckResult} at the current weights of the problems in ``due``
        (all when None), by each group's pass along the ring
        (``_steps.check_order``)."""

    def weights(self, n_problems, d) -> np.ndarray:
        """The weights, (n_problems, d + 1)."""

    def snapshot(self):
        """A checkpoint of the partitions' duals and the weights."""

    def recover(self, spec, token) -> None:
        """Back to the checkpoint, lost partitions rebuilt."""


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

    def together(self, fn, parts, *args):
        return fn([self.parts[p] for p in parts], *args)

    def ring(self, spec):
        return ThreadsRing(self, spec)

    def map(self, fn, args):
        """fn(*a) for each a in args, on this engine's threads."""
        return map_threads(fn, args, self.n_threads)

    def whole(self, job, problems):
        """Method "whole" (``_whole``): all rows here, the job's problems on the
        threads; (their outputs, what ``job.put`` made of them)."""
        data = _whole.all_rows(job, *[(P.X, P.y, P.sw) for P in self.parts])
        outs = self.map(lambda j: job.solve(data, j), [(j,) for j in problems])
        W = None
        for i, out in enumerate(outs):
            W = job.put(W, len(outs), i, out)
        return outs, W

    def rebuild_lost(self):
        raise ClusterError("the threads engine cannot lose a partition")

    def concurrency(self, n_problems):
        return min(self.n_threads, n_problems)

    def peak_memory(self):
        return {"local": peak_rss_mb()}

    def placement(self):
        return [None] * len(self.parts)

    def close(self):
        self.parts = []


class ThreadsRing:
    """The ring's weights on a ThreadsEngine's partitions: every group's travel on a
    thread of the engine."""

    def __init__(self, eng, spec):
        self.eng, self.parts = eng, eng.parts
        inits = [P.setup(spec) for P in self.parts]
        W = initial_weights(inits, range(len(inits[0])), spec.d)
        self.rows = start_payload(W, spec)

    def _per_group(self, groups):
        """The threads each travelling group's visits get: the threads the groups leave
        over (as a Dask worker gives a ring run all of its threads)."""
        return max(1, self.eng.n_threads // max(1, len(groups)))

    def round(self, rnd, groups, sweeps, laps, stop=None, due=None):
        K = len(self.parts)
        sums = None
        if stop is not None:
            sums = self.check(groups, due)
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

        for pl in self.eng.map(travel, groups):
            self.rows.update(pl)
        return sums

    def check(self, groups, due=None):
        K = len(self.parts)
        groups = [g for g in _steps.checked_groups(groups, due) if g[1]]
        threads = self._per_group(groups)

        def travel(start, problems):
            carried = {j: self.rows[j] for j in problems}
            for p in _steps.check_order(start, K):
                carried = _steps.check_visit(self.parts[p], p, carried, problems, K,
                                             threads=threads)
            return carried.found

        per = _steps.found_by_partition(self.eng.map(travel, groups), K)
        problems = [j for _, group in groups for j in group]
        return _steps.checked(per, _steps.weight_stats([self.rows], problems), problems)

    def weights(self, n_problems, d):
        return assemble(self.rows, n_problems, d)

    def snapshot(self):
        return None         # (nothing here can be lost: no copy to keep)

    def recover(self, spec, token):
        raise ClusterError("the threads engine cannot lose a partition")
