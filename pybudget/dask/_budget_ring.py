"""BSGD on a cluster: the rows stay on their partitions, the budgeted model travels.

An epoch is one turn of every partition, in partition order.  A turn runs the BSGD steps
of the partition's rows, in an order drawn from (seed, partition, epoch) alone, on the
model it received (a ``budget._state.ModelState``: the SVs, their coefficients and the
average's sums, a few hundred kB at B = 500) and returns the model and the step count.
So the fit is one machine's BSGD on a partition-blocked order of the rows, the same bits
for any number of workers and on the in-process engine.  The client keeps the model
between turns: a turn whose worker is lost runs again from that model on the partition
rebuilt elsewhere, the same bits (a partition keeps nothing between turns).

After the last turn the client merges the model down to the budget and fits the offset
on one machine's sample (``budget._offset.draw_sample``'s rows, by their index in the
partition-blocked order), as ``BudgetSVC`` does.
"""
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from pybudget._core import _validation as V
from pybudget.budget._bsgd import bsgd_run
from pybudget.budget._offset import SAMPLE, model_offset
from pybudget.budget.svm import BudgetParams, _new_model, _tail
from pybudget.dask._checkpoints import counted
from pybudget.dask._partition import round_seed
from pybudget.dask.errors import PartitionsLost


@dataclass(frozen=True)
class BudgetRun:
    """What every turn needs: the checked parameters and the fit's constants
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

    @property
    def n_coef(self):
        return 1 if self.classes.shape[0] == 2 else self.classes.shape[0]

    def model(self):
        """A new, empty model and its maintainer."""
        return _new_model(self.d, self.n_coef, self.cap, self.gamma, self.params,
                          sparse=self.sparse)


class Turn(NamedTuple):
    """A turn's result: the model after it, the global step count, and the turn's own
    counters."""
    state: object
    t: int
    n_added: int
    n_merges: int
    n_removed: int
    merge_time: float


# ---- on the partitions --------------------------------------------------------------

def moments(part):
    """(rows, non-zeros, sum, sum of squares) of the partition's values: gamma="scale"
    and storage="auto" from sums over the partitions."""
    return (part.n, int(part.X.nnz), *V.value_moments(part.X))


def turn(part, run, state, t, p, epoch):
    """Partition p's turn of epoch ``epoch`` on the model ``state`` (None: empty) at
    global step t."""
    mdl, mt = run.model()
    if state is not None:
        mdl.restore(state)
    X = part.X
    codes = np.searchsorted(run.classes, part.y).astype(np.int32)
    out = bsgd_run(X, V.row_sqnorms(X), codes, mdl, mt, run.budget, run.merge_size,
                   run.lam, 1, t, round_seed(run.seed, 0, p, epoch), run.avg_start,
                   visit=True)
    if mdl.out_of_memory:
        raise MemoryError("the sparse support vectors outgrew the memory: reduce the "
                          "budget")
    return Turn(mdl.state(), out["t"], out["n_added"], mt.n_merges, mt.n_removed,
                out["merge_time"])


def rows_at(part, rows):
    """The partition's rows ``rows`` (sorted local indices), canonical CSR, and their
    labels."""
    Xs = part.X[rows]
    Xs.sort_indices()
    return Xs, part.y[rows]


# ---- on the client ------------------------------------------------------------------

def first_avg_step(params, n, budget):
    """The first averaged step of an n-row fit (``BudgetSVC``'s rule; 0: none)."""
    T = params.epochs * n
    return {"none": 0, "all": 1, "last-half": T // 2 + 1,
            "tail": T - _tail(n, budget, "tail") + 1}[params.averaging]


def fit(engine, run, sizes, callback=None):
    """BSGD for ``run.params.epochs`` epochs of turns over partitions of ``sizes`` rows;
    returns (Z, beta (n_coef, n_sv), offset, counters).  callback(epoch, turns done,
    n_sv), if given, after every turn."""
    state, t = None, 0
    n_added = n_merges = n_removed = 0
    merge_time, recoveries = 0.0, 0
    for epoch in range(run.params.epochs):
        for p in np.flatnonzero(sizes):
            while True:
                try:
                    res = engine.each(turn, run, state, t, int(p), epoch, parts=[int(p)])[0]
                    break
                except PartitionsLost as lost:      # the same turn again, rebuilt
                    recoveries = counted(recoveries, lost)
                    engine.rebuild_lost()
            state, t = res.state, res.t
            n_added += res.n_added
            n_merges += res.n_merges
            n_removed += res.n_removed
            merge_time += res.merge_time
            if callback is not None:
                callback(epoch, int(p), state.n_sv)
    mdl, mt = run.model()
    mdl.restore(state)
    mt.merge_down(mdl, run.budget, run.merge_size)
    Z, beta, _ = mdl.arrays()
    if run.avg_start:
        beta = mdl.averaged() / (t - run.avg_start + 1)
    counts = dict(t=t, n_added=n_added, n_merges=n_merges + mt.n_merges,
                  n_removed=n_removed + mt.n_removed, merge_time=merge_time,
                  recoveries=recoveries)
    b = offset(engine, run, sizes, Z, beta) if run.params.offset else np.zeros(run.n_coef)
    return Z, beta.T.copy(), b, counts


def offset(engine, run, sizes, Z, beta):
    """The offset fitted on ``draw_sample``'s rows of the partition-blocked order."""
    n = int(np.sum(sizes))
    rng = np.random.default_rng(run.seed)
    rows = np.sort(rng.choice(n, SAMPLE, replace=False)) if n > SAMPLE else np.arange(n)
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    parts = [p for p in range(len(sizes)) if sizes[p]]
    local = {p: rows[(rows >= bounds[p]) & (rows < bounds[p + 1])] - bounds[p]
             for p in parts}
    parts = [p for p in parts if local[p].size]
    got = []
    for p in parts:
        while True:
            try:
                got.append(engine.each(rows_at, local[p], parts=[p])[0])
                break
            except PartitionsLost:
                engine.rebuild_lost()
    Xs = sp.vstack([g[0] for g in got], format="csr")
    Xs.sort_indices()
    codes = np.searchsorted(run.classes, np.concatenate([g[1] for g in got]))
    return model_offset(Z, beta, run.gamma, (Xs, V.row_sqnorms(Xs), codes))
