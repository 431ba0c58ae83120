"""The driver of the ring (``_methods.Ring``), on any engine, for every binary problem
of a fit at once.

The stopping rule is one machine's: the largest KKT violation over all rows, exact,
at most tol (in the problem's unit, ``FitSpec.kkt_unit``), from the partitions' check
pass; a check at round t certifies the weights after t rounds, and a problem that
passes keeps them.  Each problem's checks are scheduled from its own violation's
recent rate of decrease (at least every MAX_CHECK_INTERVAL rounds), since checking a
problem costs about half a sweep of it.  On the ring the round after a check is
submitted with it, and the workers leave out the problems it passed
(``_steps.passed_in``), so the ring never waits for the client.  Checkpoints are
taken every ``checkpoint_every`` rounds (``_checkpoints``); after a lost partition the
engine rebuilds it and the fit replays from the last checkpoint, which gives the same
bits as a run without the loss.
"""
import math
import time
from dataclasses import dataclass, field

import numpy as np

from pybudget.dask._laps import grown
from pybudget.dask._plan import ClusterRules
from pybudget.dask._checkpoints import Checkpoints
from pybudget.dask._steps import passed
from pybudget.dask.errors import PartitionsLost

MAX_CHECK_INTERVAL = 10


@dataclass
class FitResult:
    W: np.ndarray                 # (n_problems, d + 1), bias weight last
    n_rounds: int
    gap: np.ndarray               # relative duality gap per problem (reported)
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
    intercept: np.ndarray = None  # the intercepts as computed (method "whole"), else
                                  # W[:, d] * bias
    selection: str = None         # what the problems ran with, chosen on the workers
                                  # (method "whole"), else None: the spec's


class _Driver:
    """The driver's own state: what a checkpoint must restore besides the partitions."""

    def __init__(self, n_problems, first_check=1, laps=1, max_laps=1,
                 stall_rounds=ClusterRules.stall_rounds):
        self.t = 0
        self.laps, self.max_laps = laps, max(laps, max_laps)
        self.stall_rounds = stall_rounds
        self.active = list(range(n_problems))
        self.next_check = dict.fromkeys(self.active, first_check)   # per problem
        self.history = {}            # problem -> [(round, KKT violation)] of its checks
        self.final = {}              # problem -> (its _steps.Gap, the round it ended)
        self.n_steps = 0
        self.n_checks = 0

    def due(self):
        """The open problems whose check is due after round self.t."""
        return [j for j in self.active if self.next_check[j] <= self.t]

    def schedule(self, kkts, stop):
        """Each problem checked at self.t and still open (kkts: {problem: its KKT
        violation}) gets its next check from its own violation's recent rate of
        decrease towards ``stop``: a check costs about half a sweep of that problem
        alone, so the problems near it are checked every round while the others sweep
        on unchecked.  Whether the laps grow is decided on the problems' progress over
        the last half of the rounds run (``_stall_ahead``)."""
        aheads = []
        for j, g in kkts.items():
            hist = self.history.setdefault(j, [])
            hist.append((self.t, g))
            interval = 1
            if len(hist) >= 2:
                t0, g0 = hist[-2]
                if g0 > g > stop:
                    ahead = math.log(stop / g) / (math.log(g / g0) / (self.t - t0))
                    # (at most half the rounds run: a rate from two checks misleads
                    # when the violation does not fall steadily, as it need not)
                    interval = int(min(max(math.floor(ahead), 1), MAX_CHECK_INTERVAL,
                                       max(self.t // 2, 1)))
                aheads.append(_stall_ahead(hist, self.t, stop))
            self.next_check[j] = self.t + interval
        if aheads:
            self.stalled(max(aheads))

    def stalled(self, ahead):
        """The laps after a check (``_laps.grown``)."""
        self.laps = grown(self.laps, self.max_laps, self.t, ahead, self.stall_rounds)


def _stall_ahead(hist, t, stop):
    """The rounds a problem's checks [(round, KKT violation)] predict to ``stop``, from
    the smallest violation so far against the smallest up to the last check at or
    before round t / 2 (at the first check, if none): a rate over half the rounds run,
    of a series that never rises.  The violation of the ring's weights jumps up and
    down from one check to the next (debian-sections20: 0.145, 0.178, 0.178, 0.151,
    0.123 at rounds 10-14); a rate from the last two checks then took every rise for a
    stall and doubled the laps at each check (1 to 76 in 7 rounds, 33 s against 5 s
    for the same fit on 2 workers).  0 when at stop already, inf when no progress."""
    half = [k for k, (r, _) in enumerate(hist) if r <= t / 2] or [0]
    t0 = hist[half[-1]][0]
    then = min(g for _, g in hist[:half[-1] + 1])
    now = min(g for _, g in hist)
    if now <= stop:
        return 0.0
    if now >= then or t <= t0:
        return math.inf
    return math.log(stop / now) / (math.log(now / then) / (t - t0))


class _Fit:
    """What a method's round works with: the engine, its ring, the spec, the partitions' count
    K, the local sweeps, ``stop`` (tol in the problems' unit), and ``check`` (the
    driver's answer to a check's sums).
    The driver's state (``_Driver``) is not here: a replay replaces it."""

    def __init__(self, engine, ring, spec, sweeps, tol, callback):
        self.engine, self.ring, self.spec, self.sweeps = engine, ring, spec, sweeps
        self.stop = tol * spec.kkt_unit
        self.K = spec.n_parts
        self.callback = callback
        self.log = []
        self.t_start = time.perf_counter()

    def check(self, drv, sums):
        """Finish the checked problems (those of sums, {problem: _steps.CheckResult})
        that passed; returns the problems still open."""
        drv.n_checks += 1
        # (the workers' rule for the ring's round that went with the check: the same
        # decision)
        done = passed(sums, self.stop)
        gaps = {}
        for j in sums:
            g = sums[j].gap()
            gaps[j] = g.rel
            if j in done:
                drv.final[j] = (g, drv.t)
        still = [j for j in drv.active if j not in done]
        unit = self.spec.kkt_unit
        entry = {"round": drv.t, "kkt": max(s.kkt for s in sums.values()) / unit,
                 "gap": max(gaps.values()), "checked": len(sums),
                 "active": len(still), "elapsed": time.perf_counter() - self.t_start,
                 "bytes": dict(self.engine.bytes), "laps": drv.laps}
        self.log.append(entry)
        if self.callback is not None:
            self.callback(entry)
        drv.schedule({j: sums[j].kkt for j in still if j in sums}, self.stop)
        return still


def run(engine, spec, n_problems, d, method, *, tol, max_rounds, sweeps, checkpoint_every,
        laps=1, max_laps=1, callback=None):
    """Run ``method`` (a ``_methods`` object with rounds) on the engine's partitions
    (built already); returns a FitResult.  The ring starts with ``laps`` laps a round
    and may go up to ``max_laps``."""
    ring = engine.ring(spec)
    drv = _Driver(n_problems, laps=laps, max_laps=max_laps,
                  stall_rounds=spec.rules.stall_rounds)
    fit = _Fit(engine, ring, spec, sweeps, tol, callback)
    ckpts = Checkpoints(ring, spec, drv, checkpoint_every)
    while drv.active and drv.t < max_rounds:
        try:
            ckpts.take(drv)
            method.round(fit, drv)
            if not drv.active:
                break
        except PartitionsLost as lost:
            drv = ckpts.restore(lost)
            # the rounds from the checkpoint on run again: their log entries too
            del fit.log[sum(1 for e in fit.log if e["round"] < drv.t):]
            continue
        drv.t += 1
    if drv.active:
        # max_rounds reached: one check-only pass certifies the final weights
        sums = method.last_check(fit, drv)
        for j in drv.active:
            drv.final[j] = (sums[j].gap(), drv.t)
    W = ring.weights(n_problems, d)
    if not np.isfinite(W).all():
        raise ValueError(f"C={spec.C:g} is too large for this data: the weights "
                         "overflowed")
    fin = [drv.final[j] for j in range(n_problems)]
    gap, primal, dual, kkt = (np.array([getattr(g, name) for g, _ in fin])
                              for name in ("rel", "primal", "dual", "kkt"))
    rounds = np.array([t for _, t in fin])
    return FitResult(W=W, n_rounds=int(rounds.max()), gap=gap, primal=primal, dual=dual,
                     kkt=kkt, converged=kkt <= fit.stop, n_steps=int(drv.n_steps),
                     bytes_sent=dict(engine.bytes), n_checks=drv.n_checks,
                     recoveries=ckpts.recoveries, laps=drv.laps, log=fit.log)
