"""The CoCoA+ driver (Ma et al. 2015; Smith et al., JMLR 2018): adding, gamma = 1,
sigma' = K, for every binary problem of a fit at once, on any engine.

Round t for each unfinished problem j: every partition k runs its local sweeps against
w_j and returns dw_kj; the driver adds them in partition order, w_j += sum_k dw_kj, the
same bits whatever ran where.  The stopping rule is the relative duality gap
(P(w) - D(alpha)) / P(w) <= tol, where every term but |w|^2 comes from the partitions'
check pass at the start of a round: so a check certifies the w the round started from,
and a problem that passes it keeps that w.  Checks are scheduled from the gap's recent
rate of decrease (at least every MAX_CHECK_INTERVAL rounds), since a check pass costs
about half a sweep.  Checkpoints (w and every partition's state) are taken every
``checkpoint_every`` rounds; after a lost partition the engine rebuilds it and the fit
replays from the last checkpoint, which gives the same bits as a run without the loss.
"""
import copy
import math
import time
from dataclasses import dataclass, field

import numpy as np

from pybudget.dask._partition import add_into, payload_bytes
from pybudget.linear._dual_cd import sum_of_squares

MAX_CHECK_INTERVAL = 10
MAX_RECOVERIES = 3        # lost partitions survived in one fit before giving up


class PartitionsLost(Exception):
    """Raised by an engine when partitions (their workers) are gone; carries the cause."""


@dataclass
class CocoaResult:
    W: np.ndarray                 # (n_problems, d + 1), bias weight last
    n_rounds: int
    gap: np.ndarray               # relative duality gap per problem
    primal: np.ndarray
    dual: np.ndarray
    kkt: np.ndarray
    converged: np.ndarray
    n_steps: int
    bytes_sent: int
    n_checks: int
    recoveries: int
    log: list = field(default_factory=list)


class _Driver:
    """The driver's own state: what a checkpoint must restore besides the partitions."""

    def __init__(self, n_problems):
        self.t = 0
        self.active = list(range(n_problems))
        self.next_check = 0
        self.history = []            # (round, largest relative gap) of each check
        self.final = {}              # problem -> (gap, primal, dual, kkt, round)
        self.n_steps = 0
        self.n_checks = 0

    def schedule(self, gmax, tol):
        """The round of the next check after one at self.t that saw gap gmax."""
        self.history.append((self.t, gmax))
        interval = 1
        if len(self.history) >= 2:
            t0, g0 = self.history[-2]
            if g0 > gmax > tol:
                rate = math.log(gmax / g0) / (self.t - t0)
                ahead = math.log(tol / gmax) / rate
                interval = int(min(max(math.floor(ahead), 1), MAX_CHECK_INTERVAL))
        self.next_check = self.t + interval


def gap_of(w, stats):
    """(relative gap, primal, dual, kkt) of one problem from its partitions' check stats
    (in partition order) and its weights."""
    wsq = sum_of_squares(w)
    loss = 0.0
    terms = 0.0
    kkt = 0.0
    for s in stats:
        loss += s["loss"]
        terms += s["dual_terms"]
        kkt = max(kkt, s["kkt"])
    primal = 0.5 * wsq + loss
    dual = terms - 0.5 * wsq
    gap = (primal - dual) / abs(primal) if primal != 0 else 0.0
    return gap, primal, dual, kkt


def cocoa(engine, spec, n_problems, d, *, tol, max_rounds, sweeps, checkpoint_every,
          callback=None):
    """Run CoCoA+ on the engine's partitions (built already); returns a CocoaResult."""
    W = np.zeros((n_problems, d + 1))
    bytes_sent = 0
    for msgs in engine.setup(spec):
        for j, msg in enumerate(msgs):
            add_into(W[j], msg)
            bytes_sent += payload_bytes(msg)
    drv = _Driver(n_problems)
    ckpt = (copy.deepcopy(drv), W.copy(), None)
    recoveries = 0
    log = []
    t_start = time.perf_counter()
    while drv.active and drv.t < max_rounds:
        check = drv.t >= drv.next_check
        want_state = checkpoint_every > 0 and (drv.t + 1) % checkpoint_every == 0
        try:
            res, nbytes = engine.round(drv.t, drv.active, W, check, sweeps, want_state)
        except PartitionsLost as exc:
            lost = exc
            while True:                    # (a recovery can lose a worker too)
                recoveries += 1
                if recoveries > MAX_RECOVERIES:
                    raise RuntimeError(f"the fit lost partitions {recoveries} times; "
                                       f"last: {lost}") from None
                try:
                    engine.recover(spec, ckpt[2])
                    break
                except PartitionsLost as again:
                    lost = again
            drv, W = copy.deepcopy(ckpt[0]), ckpt[1].copy()
            continue
        bytes_sent += nbytes
        still = list(drv.active)
        if check:
            drv.n_checks += 1
            gaps = []
            for j in drv.active:
                g = gap_of(W[j], [r[j][1] for r in res])
                gaps.append(g[0])
                if g[0] <= tol:
                    drv.final[j] = (*g, drv.t)
                    still.remove(j)
            gmax = max(gaps)
            entry = {"round": drv.t, "gap": gmax, "active": len(still),
                     "elapsed": time.perf_counter() - t_start}
            log.append(entry)
            if callback is not None:
                callback(entry)
            drv.schedule(max([g for g, j in zip(gaps, drv.active) if j in still] or [0.0]),
                         tol)
        for j in still:
            for r in res:
                add_into(W[j], r[j][0])
        if not np.isfinite(W[still]).all():
            raise ValueError(f"C={spec['C']:g} is too large for this data: the weights "
                             "overflowed")
        for r in res:
            for j in drv.active:
                drv.n_steps += r[j][1]["steps"]
        drv.active = still
        drv.t += 1
        if want_state:
            # (problems finished before this round need no state: they stay finished)
            states = [{j: r[j][2] for j in r} for r in res]
            ckpt = (copy.deepcopy(drv), W.copy(), states)
    if drv.active:
        # max_rounds reached: one check-only pass certifies the final weights
        res, nbytes = engine.round(drv.t, drv.active, W, True, 0, False)
        bytes_sent += nbytes
        for j in drv.active:
            drv.final[j] = (*gap_of(W[j], [r[j][1] for r in res]), drv.t)
    fin = [drv.final[j] for j in range(n_problems)]
    gap, primal, dual, kkt, rounds = (np.array(c) for c in zip(*fin))
    return CocoaResult(W=W, n_rounds=int(rounds.max()), gap=gap, primal=primal, dual=dual,
                       kkt=kkt, converged=gap <= tol, n_steps=drv.n_steps,
                       bytes_sent=bytes_sent, n_checks=drv.n_checks,
                       recoveries=recoveries, log=log)
