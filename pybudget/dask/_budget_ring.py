"""One budgeted model on a cluster (BSGD's, binary or multi-class; binary BSCA's): the
rows stay on their partitions, the budgeted model travels.

An epoch cuts each partition's rows, in a random order drawn from (seed, partition,
epoch), into ``laps`` shares; lap by lap, every partition runs the steps of its share
(in an order of their own) on the model it received, the partitions of a lap in an
order drawn from (seed, epoch, lap).  The model is a ``budget._state.ModelState``
(the SVs, their coefficients, sources and the average's sums: about 0.5 MB at B = 500
on a9a) handed on exactly, so the fit is one machine's BSGD or BSCA on that order of
the rows: the same bits for any number of workers and on the in-process engine.

BSCA has a dual variable per row.  The client keeps them all (8 bytes a row) and sends
each visit its share's values, which come back updated with the model, so a partition
keeps nothing between runs for BSGD and BSCA alike; a row's source in the model is its
index in partition order, so an unmerged SV is still updated in place.

Laps matter where the partitions' rows differ (files stored in an order: by label, by
time): one turn a partition an epoch lets the model drift to each partition's rows in
turn (w8a as 4 contiguous chunks, all positives in the first: 1.2 points below one
machine's accuracy); finer laps mix the partitions as one machine's shuffle mixes the
rows (docs/benchmarks.md, section 16).

Consecutive visits of partitions on one worker run in one call (``Engine.together``): a
run.  The client keeps the model between runs, so a run whose worker is lost runs
again from that model on the partitions rebuilt elsewhere: the same bits (a partition
keeps nothing between runs).  After the last run the client merges the model down to
the budget and fits the offset on one machine's sample (``budget._offset.draw_sample``'s
rows, by their index in partition order), as ``BudgetSVC`` does.
"""
import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from pybudget._core import _validation as V
from pybudget.budget._bsca import bsca_run
from pybudget.budget._bsgd import bsgd_run
from pybudget.budget._offset import model_offset, sample_rows
from pybudget.budget.svm import BudgetParams, _new_model, _tail
from pybudget.dask._checkpoints import counted
from pybudget.dask._partition import round_seed
from pybudget.dask.errors import PartitionsLost


@dataclass(frozen=True)
class BudgetRun:
    """What every visit needs: the checked parameters and the fit's constants
    (``classes``: the labels, a row's code is its class's index)."""
    params: BudgetParams
    classes: np.ndarray
    d: int
    gamma: float
    budget: int
    merge_size: int
    cap: int
    lam: float
    avg_start: int          # the first averaged step (0: no average)
    sparse: bool
    seed: int
    laps: int
    starts: tuple = ()      # BSCA: each partition's first row in partition order, and n

    @property
    def bsca(self):
        return self.params.solver == "bsca"

    @property
    def n_coef(self):
        return 1 if self.classes.shape[0] == 2 else self.classes.shape[0]

    def model(self):
        """A new, empty model and its maintainer (BSCA's: a source for every row, the
        map from rows to SVs 4 bytes a row, made each run)."""
        return _new_model(self.d, self.n_coef, self.cap, self.gamma, self.params,
                          n_src=self.starts[-1] if self.bsca else 0, sparse=self.sparse)


class RunResult(NamedTuple):
    """A run's result: the model after it, the global step count, the run's own
    counters (n_added: BSGD's added SVs, BSCA's non-zero steps) and BSCA's duals of
    each visit's share after it (None for BSGD)."""
    state: object
    t: int
    n_added: int
    n_merges: int
    n_removed: int
    merge_time: float
    alphas: list = None


# ---- on the partitions --------------------------------------------------------------

def moments(part):
    """(sum, sum of squares) of the partition's values: gamma="scale" from sums over
    the partitions."""
    V.check_squares(part.X)
    return V.value_moments(part.X)


def visits_run(parts, run, state, t, epoch, visits, alphas=None):
    """The visits ``visits`` ([(partition, lap)], partitions ``parts`` in the same
    order, all in this process) of epoch ``epoch``, in turn, on the model ``state``
    (None: empty) at global step t; BSCA: ``alphas``, each visit's share's duals."""
    mdl, mt = run.model()
    if state is not None:
        mdl.restore(state)
    added = 0
    seconds = 0.0
    out_alphas = [] if run.bsca else None
    for v, (part, (p, lap)) in enumerate(zip(parts, visits)):
        X, order, xsq, codes = _epoch_rows(part, run, p, epoch)
        share = share_rows(order, run.laps, lap)
        seed = round_seed(run.seed, lap, p, epoch)
        if run.bsca:
            y, alpha = _bsca_arrays(part, run, codes)
            alpha[share] = alphas[v]
            # (a copy: the run shuffles its perm in place, and the duals go back in
            # the share's sorted order)
            out = bsca_run(X, xsq, y, run.params.C, alpha, mdl, mt, run.budget,
                           run.merge_size, 1, seed, avg_start=run.avg_start,
                           perm=share.copy(), visit=True, t_start=t,
                           src_offset=run.starts[p])
            out_alphas.append(alpha[share])
            added += out["n_updates"]
        else:
            out = bsgd_run(X, xsq, codes, mdl, mt, run.budget, run.merge_size,
                           run.lam, 1, t, seed, run.avg_start, perm=share, visit=True)
            added += out["n_added"]
        if mdl.out_of_memory:
            raise MemoryError("the sparse support vectors outgrew the memory: reduce "
                              "the budget")
        t = out["t"]
        seconds += out["merge_time"]
    return RunResult(mdl.state(), t, added, mt.n_merges, mt.n_removed, seconds,
                     out_alphas)


def epoch_order(run, p, n, epoch):
    """Partition p's (n rows) order of the epoch, from (seed, p, epoch) alone: the
    client draws it too (BSCA's duals of a share)."""
    rng = np.random.default_rng(round_seed(run.seed, 0, p, epoch))
    return rng.permutation(n).astype(np.int32)


def share_rows(order, laps, lap):
    """The rows of lap ``lap``'s share of an epoch's order, sorted."""
    n = order.shape[0]
    return np.sort(order[lap * n // laps:(lap + 1) * n // laps])


def _epoch_rows(part, run, p, epoch):
    """(the rows with the problem's d columns, the rows' order of the epoch, their
    squared norms, their codes) of partition p, computed once a fit and epoch
    (``Partition.memo``: a visit is a share of them)."""
    key = ("budget", run.seed, epoch)
    if key not in part.memo:
        fixed = part.memo.get(("budget", run.seed))
        if fixed is None:
            fixed = part.memo[("budget", run.seed)] = (
                V.with_columns(part.X, run.d), V.row_sqnorms(part.X),
                np.searchsorted(run.classes, part.y).astype(np.int32))
        for old in [k for k in part.memo if len(k) == 3 and k[0] == "budget"]:
            del part.memo[old]              # (the last epoch's order)
        X, xsq, codes = fixed
        part.memo[key] = (X, epoch_order(run, p, part.n, epoch), xsq, codes)
    return part.memo[key]


def _bsca_arrays(part, run, codes):
    """BSCA's labels (+-1) of the partition's rows and a buffer of their duals, made
    once a fit (``Partition.memo``): a visit sets its share's duals before it steps
    them, and reads no other row's."""
    key = ("bsca", run.seed)
    if key not in part.memo:
        part.memo[key] = (np.where(codes == 1, 1.0, -1.0), np.zeros(part.n))
    return part.memo[key]


def rows_at(part, rows, d):
    """The partition's rows ``rows`` (sorted local indices), canonical CSR with d
    columns, and their labels."""
    Xs = V.with_columns(part.X, d)[rows]
    Xs.sort_indices()
    return Xs, part.y[rows]


# ---- on the client ------------------------------------------------------------------

class Calls:
    """A fit's calls to its partitions: a call that loses partitions runs again once
    they are rebuilt on the workers left (each loss counted, ``recoveries``; a
    partition keeps nothing between calls, so the result is the same)."""

    def __init__(self, engine):
        self.engine, self.recoveries = engine, 0

    def each(self, fn, *args, parts=None):
        return self.again(lambda: self.engine.each(fn, *args, parts=parts))

    def again(self, call):
        """call() until it runs without a loss."""
        while True:
            try:
                return call()
            except PartitionsLost as lost:
                self.recoveries = counted(self.recoveries, lost)
                self.engine.rebuild_lost()


def first_avg_step(params, n, budget):
    """The first averaged step of an n-row fit (``BudgetSVC``'s rule; 0: none)."""
    T = params.epochs * n
    return {"none": 0, "all": 1, "last-half": T // 2 + 1,
            "tail": T - _tail(n, budget, "tail") + 1}[params.averaging]


def auto_laps(sizes, rules):
    """Laps of an epoch: about ``rules.budget_visits`` visits an epoch over the
    non-empty partitions, none of fewer than ``rules.budget_visit_rows`` rows (the
    smallest partition's), at least 1."""
    n = [s for s in sizes if s]
    return max(1, min(math.ceil(rules.budget_visits / len(n)),
                      min(n) // rules.budget_visit_rows))


def epoch_visits(run, sizes, epoch):
    """[(partition, lap)] of one epoch, in order: lap by lap, the partitions with rows
    in that lap's share in an order drawn from (seed, epoch, lap)."""
    out = []
    for lap in range(run.laps):
        parts = [p for p in np.flatnonzero(sizes)
                 if (lap + 1) * sizes[p] // run.laps > lap * sizes[p] // run.laps]
        rng = np.random.default_rng(round_seed(run.seed, 1, lap, epoch))
        out += [(int(p), lap) for p in rng.permutation(parts)]
    return out


def _run_of(engine, visits, state, t, run, epoch, duals):
    """The next run: the first visits of ``visits`` whose partitions live on one
    worker, run there, with their shares' duals (BSCA: ``duals``, a ``_Duals``); (its
    result, its length)."""
    where = engine.placement()
    k = 1
    while k < len(visits) and where[visits[k][0]] == where[visits[0][0]]:
        k += 1
    sent = [duals.get(p, lap, epoch) for p, lap in visits[:k]] if run.bsca else None
    return engine.together(visits_run, [p for p, _ in visits[:k]], run, state, t, epoch,
                           visits[:k], sent), k


class _Duals:
    """BSCA's duals of all rows, in partition order, on the client: a share's values
    out to its visit and back (the orders drawn as the partitions draw them)."""

    def __init__(self, run, sizes):
        self.run, self.sizes = run, sizes
        self.alpha = np.zeros(int(np.sum(sizes)))
        self.orders, self.epoch = {}, None

    def get(self, p, lap, epoch):
        return self.alpha[self._rows(p, lap, epoch)]

    def put(self, p, lap, epoch, values):
        self.alpha[self._rows(p, lap, epoch)] = values

    def _rows(self, p, lap, epoch):
        if epoch != self.epoch:
            self.orders, self.epoch = {}, epoch
        if p not in self.orders:
            self.orders[p] = epoch_order(self.run, p, int(self.sizes[p]), epoch)
        return self.run.starts[p] + share_rows(self.orders[p], self.run.laps, lap)


def fit(calls, run, sizes, callback=None):
    """BSGD or BSCA for ``run.params.epochs`` epochs of visits over partitions of
    ``sizes`` rows (``calls``: a Calls); returns (Z, beta (n_coef, n_sv), offset,
    counters; hop_bytes: the bytes of the model each run handed on).  callback(epoch,
    visits done, n_sv), if given, after every run."""
    state, t, hop_bytes = None, 0, []
    n_added = n_merges = n_removed = 0
    merge_time = 0.0
    duals = _Duals(run, sizes) if run.bsca else None
    for epoch in range(run.params.epochs):
        visits, i = epoch_visits(run, sizes, epoch), 0
        while i < len(visits):
            res, k = calls.again(lambda: _run_of(calls.engine, visits[i:], state, t, run,
                                                 epoch, duals))
            if duals is not None:
                for (p, lap), values in zip(visits[i:i + k], res.alphas):
                    duals.put(p, lap, epoch, values)
            state, t, i = res.state, res.t, i + k
            hop_bytes.append(state.nbytes)
            n_added += res.n_added
            n_merges += res.n_merges
            n_removed += res.n_removed
            merge_time += res.merge_time
            if callback is not None:
                callback(epoch, i, state.n_sv)
    mdl, mt = run.model()
    mdl.restore(state)
    mt.merge_down(mdl, run.budget, run.merge_size)
    Z, beta, _ = mdl.arrays()
    if run.avg_start:
        beta = mdl.averaged() / (t - run.avg_start + 1)
    counts = dict(t=0 if run.bsca else t, n_added=n_added, n_merges=n_merges + mt.n_merges,
                  n_removed=n_removed + mt.n_removed, merge_time=merge_time,
                  hop_bytes=hop_bytes)
    b = offset(calls, run, sizes, Z, beta) if run.params.offset else np.zeros(run.n_coef)
    return Z, beta.T.copy(), b, counts


def offset(calls, run, sizes, Z, beta):
    """The offset fitted on ``draw_sample``'s rows of the partitions' rows in partition
    order."""
    rows = sample_rows(int(np.sum(sizes)), run.seed)
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    local = {p: rows[(rows >= bounds[p]) & (rows < bounds[p + 1])] - bounds[p]
             for p in range(len(sizes))}
    got = [calls.each(rows_at, local[p], run.d, parts=[p])[0] for p in range(len(sizes))
           if local[p].size]
    Xs = sp.vstack([g[0] for g in got], format="csr")
    Xs.sort_indices()
    codes = np.searchsorted(run.classes, np.concatenate([g[1] for g in got]))
    return model_offset(Z, beta, run.gamma, (Xs, V.row_sqnorms(Xs), codes))
