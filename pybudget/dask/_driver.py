"""The methods of a distributed fit and the driver that runs them on any engine, for
every binary problem of a fit at once.

- ``ring``: the partitions take turns within a round; each runs its local sweeps on the
  current weights with sigma' = 1 and passes them on, so a round is one sweep of
  one-machine dual CD in a block-wise order (the same convergence; hard shrinking's
  thresholds and AVSF's reference gain are carried along).  Problem j starts its rounds
  at partition j mod K, so the problems of a one-vs-rest fit keep several workers busy.
- ``bda``: every partition runs its sweeps against the same weights with sigma' = 1;
  the changes are added and scaled by a step eta: the exact line search for the
  quadratic duals (hinge, squared hinge, SVR with epsilon = 0), Armijo backtracking for
  logistic regression and SVR with epsilon > 0 (Lee & Roth, ICML 2015; Lee & Chang, 2020).
- ``cocoa``: CoCoA+ (Ma et al. 2015): the same with sigma' = K and eta = 1.

The stopping rule is the relative duality gap (P(w) - D(alpha)) / P(w) <= tol, from the
partitions' check pass; a check at round t certifies the weights after t rounds, and a
problem that passes keeps them.  Each problem's checks are scheduled from its own gap's
recent rate of decrease (at least every MAX_CHECK_INTERVAL rounds), since checking a
problem costs about half a sweep of it.  On the ring the round after a check is
submitted with it, and the workers leave out the problems it passed
(``_steps.passed_in``), so the ring never waits for the client.  Checkpoints are
taken every ``checkpoint_every`` rounds, on the workers; after a lost partition the
engine rebuilds it and the fit replays from the last checkpoint, which gives the same
bits as a run without the loss.
"""
import copy
import math
import time
from dataclasses import dataclass, field

import numpy as np

from pybudget.dask._laps import STALL_ROUNDS, grown
from pybudget.dask._steps import gap_of, passed
from pybudget.dask.errors import CheckpointLost, ClusterError, PartitionsLost
from pybudget.linear.losses import LOSS

METHODS = ("ring", "bda", "cocoa")
MAX_CHECK_INTERVAL = 10
MAX_RECOVERIES = 3        # lost partitions survived in one fit before giving up
ARMIJO_SIGMA = 0.01       # sufficient increase of the backtracking search
ARMIJO_TRIALS = 30


@dataclass
class FitResult:
    W: np.ndarray                 # (n_problems, d + 1), bias weight last
    n_rounds: int
    gap: np.ndarray               # relative duality gap per problem
    primal: np.ndarray
    dual: np.ndarray
    kkt: np.ndarray
    converged: np.ndarray
    n_steps: int
    bytes_sent: dict
    n_checks: int
    recoveries: int
    laps: int = 1                 # the ring's laps in its last round
    log: list = field(default_factory=list)
    steps: list = field(default_factory=list)      # (round, {problem: eta}) of bda
    intercept: np.ndarray = None  # the intercepts as computed (method "whole"), else
                                  # W[:, d] * bias


class _Driver:
    """The driver's own state: what a checkpoint must restore besides the partitions."""

    def __init__(self, n_problems, first_check, laps=1, max_laps=1):
        self.t = 0
        self.laps, self.max_laps = laps, max(laps, max_laps)
        self.active = list(range(n_problems))
        self.next_check = dict.fromkeys(self.active, first_check)   # per problem
        self.history = {}            # problem -> [(round, relative gap)] of its checks
        self.final = {}              # problem -> (gap, primal, dual, kkt, round)
        self.n_steps = 0
        self.n_checks = 0
        self.etas = []

    def due(self):
        """The open problems whose check is due after round self.t."""
        return [j for j in self.active if self.next_check[j] <= self.t]

    def schedule(self, gaps, tol):
        """Each problem checked at self.t and still open (gaps: {problem: its relative
        gap}) gets its next check from its own gap's recent rate of decrease: a check
        costs about half a sweep of that problem alone, so the problems near tol are
        checked every round while the others sweep on unchecked."""
        aheads = []
        for j, g in gaps.items():
            hist = self.history.setdefault(j, [])
            hist.append((self.t, g))
            interval = 1
            if len(hist) >= 2:
                t0, g0 = hist[-2]
                if g0 > g > tol:
                    ahead = math.log(tol / g) / (math.log(g / g0) / (self.t - t0))
                    # (at most half the rounds run: a rate from two checks misleads
                    # when the gap does not fall steadily, as on the ring it need not)
                    interval = int(min(max(math.floor(ahead), 1), MAX_CHECK_INTERVAL,
                                       max(self.t // 2, 1)))
                    aheads.append(ahead)
                elif g >= g0 > tol:
                    aheads.append(math.inf)
            self.next_check[j] = self.t + interval
        if aheads:
            self.stalled(max(aheads))

    def stalled(self, ahead):
        """The laps after a check (``_laps.grown``)."""
        self.laps = grown(self.laps, self.max_laps, self.t, ahead)


def ring_groups(active, n_parts):
    """The ring's groups: (start partition, problems), problem j starting at j mod K."""
    groups = {}
    for j in active:
        groups.setdefault(j % n_parts, []).append(j)
    return sorted(groups.items())


def line_search_exact(s):
    """The step maximising a quadratic dual along the summed change (s: the combined
    scalars), within the box."""
    num = s["lin"] - s["dcross"] - s["wdw"]
    den = s["dquad"] + s["dw2"]
    if den <= 0.0 or num <= 0.0:
        return 0.0
    return float(min(num / den, s["max_step"]))


def armijo(engine, small, problems):
    """Backtracking from eta = min(1, max_step) until the dual increases by at least
    ARMIJO_SIGMA eta times its slope at 0; one evaluation round per trial."""
    etas = {j: min(1.0, small[j]["max_step"]) for j in problems}
    slope = {j: small[j]["slope"] - small[j]["wdw"] for j in problems}
    todo = [j for j in problems if slope[j] > 0.0]
    for j in problems:
        if slope[j] <= 0.0:
            etas[j] = 0.0
    for _ in range(ARMIJO_TRIALS):
        if not todo:
            break
        T = engine.terms_at({j: etas[j] for j in todo})
        left = []
        for j in todo:
            s, e = small[j], etas[j]
            gain = (T[j] - s["terms"]) - e * s["wdw"] - 0.5 * e * e * s["dw2"]
            if not gain >= ARMIJO_SIGMA * e * slope[j]:
                etas[j] = 0.5 * e
                left.append(j)
        todo = left
    for j in todo:
        etas[j] = 0.0
    return etas


def run(engine, spec, n_problems, d, *, method, tol, max_rounds, sweeps, checkpoint_every,
        laps=1, max_laps=1, callback=None):
    """Run ``method`` on the engine's partitions (built already); returns a FitResult.
    The ring starts with ``laps`` laps a round and may go up to ``max_laps``."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    ring = method == "ring"
    K = spec["n_parts"]
    engine.setup(spec, ring)
    exact = LOSS[spec["loss"]].exact_line_search(spec.get("epsilon", 0.0))
    # the ring checks after a round (its first check after round 1); the parallel methods
    # check in the pass that starts a round
    drv = _Driver(n_problems, 1 if ring else 0, laps, max_laps)
    # the first checkpoint is the start itself: a recovery to it sets up afresh
    start = ckpt = (copy.deepcopy(drv), None)
    recoveries = 0
    log = []
    t_start = time.perf_counter()

    def check_now(sums):
        """Finish the checked problems (those of sums) whose gap passed; returns the
        problems still open.  A due problem missing from sums was not checked (the
        ring's stale gap was far from tol): it stays due."""
        if not sums:
            return list(drv.active)
        drv.n_checks += 1
        # (the workers' rule for the round that went with the check: the same decision)
        done = passed(sums, tol)
        gaps = {}
        for j in sums:
            loss, terms, kkt, w2 = sums[j][:4]
            g = gap_of(w2, loss, terms, kkt)
            gaps[j] = g[0]
            if j in done:
                drv.final[j] = (*g, drv.t)
        still = [j for j in drv.active if j not in done]
        entry = {"round": drv.t, "gap": max(gaps.values()), "checked": len(sums),
                 "active": len(still), "elapsed": time.perf_counter() - t_start,
                 "bytes": dict(engine.bytes), "laps": drv.laps}
        log.append(entry)
        if callback is not None:
            callback(entry)
        drv.schedule({j: gaps[j] for j in still if j in gaps}, tol)
        return still

    while drv.active and drv.t < max_rounds:
        want_state = checkpoint_every > 0 and drv.t > 0 and drv.t % checkpoint_every == 0
        try:
            if want_state and ckpt[0].t != drv.t:
                ckpt = (copy.deepcopy(drv), engine.snapshot())
            # in the ring's first rounds the workers check a due problem only when its
            # stale gap (_steps.seen_gap, free with the visits) is near tol: a problem
            # left unchecked stays due.  From half the rounds before the laps may grow
            # on, every due problem is checked, so that the exact gaps' rate is known
            # by then (_Driver.schedule, _Driver.stalled)
            near = ring and drv.t < STALL_ROUNDS // 2
            due = drv.due()
            if ring and due:
                # the check pass of the due problems and this round together: the round
                # visits the problems that the check leaves open (decided on the
                # workers, from the same sums as here), so the ring does not wait for
                # the client; the laps doubled by this check apply from the next round
                sums = engine.ring_round(drv.t, ring_groups(drv.active, K), sweeps,
                                         drv.laps, tol, due, tol if near else None)
                still = check_now(sums)
                drv.n_steps += sum(sums[j][4] for j in drv.active if j not in still)
                drv.active = still
                if not drv.active:
                    break
            elif ring:
                engine.ring_round(drv.t, ring_groups(drv.active, K), sweeps, drv.laps)
            else:
                # (the parallel methods' check is part of the proposals: all problems)
                check = bool(due)
                small = engine.propose(drv.t, drv.active, sweeps, check)
                still = drv.active
                if check:
                    still = check_now({j: (*small[j]["check"][:2], small[j]["check"][2],
                                           small[j]["w2"]) for j in drv.active})
                for j in drv.active:
                    drv.n_steps += small[j]["steps"]
                if method == "cocoa":
                    etas = {j: 1.0 for j in still}
                elif exact:
                    etas = {j: line_search_exact(small[j]) for j in still}
                else:
                    etas = armijo(engine, small, still)
                etas.update({j: 0.0 for j in drv.active if j not in still})
                engine.commit(etas)
                if method == "bda":
                    drv.etas.append((drv.t, {j: etas[j] for j in still}))
                drv.active = still
                if not still:
                    break
        except PartitionsLost as exc:
            lost = exc
            while True:                    # (a recovery can lose a worker too)
                recoveries += 1
                if recoveries > MAX_RECOVERIES:
                    raise ClusterError(f"the fit lost partitions {recoveries} times; "
                                       f"last: {lost}") from None
                try:
                    engine.recover(spec, ckpt[1])
                    # copies of the checkpoint on today's workers: the old ones may have
                    # lived on the worker lost (a second loss would have nothing to
                    # restore); a loss while they are made is a loss like any other
                    fresh = engine.snapshot() if ckpt[1] is not None else None
                    break
                except PartitionsLost as again:
                    lost = again
                    if isinstance(again, CheckpointLost):
                        # (no new loss: the same recovery, from the start)
                        ckpt, recoveries = start, recoveries - 1
            drv = copy.deepcopy(ckpt[0])
            ckpt = (ckpt[0], fresh)
            # the rounds from the checkpoint on run again: their log entries too
            del log[sum(1 for e in log if e["round"] < drv.t):]
            continue
        drv.t += 1
    if drv.active:
        # max_rounds reached: one check-only pass certifies the final weights
        sums = (engine.ring_check(ring_groups(drv.active, K)) if ring
                else engine.check(drv.active))
        for j in drv.active:
            loss, terms, kkt, w2 = sums[j][:4]
            drv.final[j] = (*gap_of(w2, loss, terms, kkt), drv.t)
            if ring:
                drv.n_steps += sums[j][4]
    W = engine.weights(n_problems, d)
    if not np.isfinite(W).all():
        raise ValueError(f"C={spec['C']:g} is too large for this data: the weights "
                         "overflowed")
    fin = [drv.final[j] for j in range(n_problems)]
    gap, primal, dual, kkt, rounds = (np.array(c) for c in zip(*fin))
    return FitResult(W=W, n_rounds=int(rounds.max()), gap=gap, primal=primal, dual=dual,
                     kkt=kkt, converged=gap <= tol, n_steps=int(drv.n_steps),
                     bytes_sent=dict(engine.bytes), n_checks=drv.n_checks,
                     recoveries=recoveries, laps=drv.laps, log=log, steps=drv.etas)
