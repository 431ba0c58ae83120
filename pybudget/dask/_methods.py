"""The methods of a distributed fit: one object each, behind one interface.

Every method (``Method``) has a ``name``, ``sigma(n_parts)`` (its local subproblems'
sigma') and ``fit(engine, spec, n_problems, d, **options)``, which returns a
``_driver.FitResult``; the estimators use nothing else (``METHODS``).

- ``ring``: the partitions take turns within a round; each runs its local sweeps on the
  current weights with sigma' = 1 and passes them on, so a round is one sweep of
  one-machine dual CD in a block-wise order (the same convergence; hard shrinking's
  thresholds and AVSF's reference gain are carried along).  Problem j starts its rounds
  at partition j mod K (``_steps.ring_groups``), so the problems of a one-vs-rest fit
  keep several workers busy.
- ``bda``: every partition runs its sweeps against the same weights with sigma' = 1;
  the changes are added and scaled by a step eta: the exact line search for the
  quadratic duals (hinge, squared hinge, SVR with epsilon = 0), Armijo backtracking for
  logistic regression and SVR with epsilon > 0 (Lee & Roth, ICML 2015; Lee & Chang, 2020).
- ``cocoa``: CoCoA+ (Ma et al. 2015): the same with sigma' = K and eta = 1.
- ``whole``: every worker that runs a problem holds all rows and runs whole problems
  with the one-machine solver (``_whole``); no rounds.
- ``newton`` (the smooth losses): the primal Newton solver on the client, the sums it
  needs over the partitions (``_newton``); no rounds.

The methods with rounds share the driver (``_driver.run``: the stopping rule, the
checks' schedule, checkpoints and replay) and give it two more things:

- ``round(fit, drv)``: run round ``drv.t`` of ``drv.active`` on ``fit.engine``, with a
  check of the problems due (``drv.due()``), passed to ``fit.check(drv, sums)``, which
  finishes those that passed and returns those still open; the round sets
  ``drv.active`` to them and adds its coordinate steps to ``drv.n_steps``;
- ``last_check(fit, drv)``: a check-only pass of the open problems after the last
  round: {problem: (loss, terms, kkt, |w|^2, steps)}.

A new method is a class here with these, in ``METHODS``; what a partition computes for
it goes in ``_steps`` (the same function on either engine gives the same bits), the
engines' calls in the ``Engine`` protocol and both engines (docs/architecture.md).
"""
from pybudget.dask import _driver, _newton, _whole
from pybudget.dask._laps import STALL_ROUNDS
from pybudget.dask._steps import ring_groups
from pybudget.linear.losses import LOSS

ARMIJO_SIGMA = 0.01       # sufficient increase of the backtracking search
ARMIJO_TRIALS = 30


class Method:
    name = None
    unit = "rounds"        # what n_rounds_ counts (messages and warnings)

    def sigma(self, n_parts):
        """sigma' of the local subproblems, for ``n_parts`` partitions with rows: how
        much the partitions' changes may add up (1: each as if alone)."""
        return 1

    def fit(self, engine, spec, n_problems, d, **options):
        raise NotImplementedError


class _WithRounds(Method):
    """fit() of the methods with rounds: the driver runs them."""
    ring = False           # the engine sets up the ring's hops (Engine.setup)
    first_check = 0        # the first check after this round

    def fit(self, engine, spec, n_problems, d, **options):
        return _driver.run(engine, spec, n_problems, d, self, **options)


class Ring(_WithRounds):
    name, ring, first_check = "ring", True, 1

    def round(self, fit, drv):
        groups = ring_groups(drv.active, fit.K)
        due = drv.due()
        if not due:
            fit.engine.ring_round(drv.t, groups, fit.sweeps, drv.laps)
            return
        # the check pass of the due problems and this round together: the round visits
        # the problems that the check leaves open (decided on the workers from the same
        # sums as fit.check), so the ring does not wait for the client; the laps
        # doubled by this check apply from the next round.  In the first rounds the
        # workers check a due problem only when its stale gap (_steps.seen_gap, free
        # with the visits) is near tol: one left unchecked stays due.  From half the
        # rounds before the laps may grow on, every due problem is checked, so that the
        # exact gaps' rate is known by then (_Driver.schedule, _laps.grown)
        near = fit.tol if drv.t < STALL_ROUNDS // 2 else None
        sums = fit.engine.ring_round(drv.t, groups, fit.sweeps, drv.laps, fit.tol, due,
                                     near)
        still = fit.check(drv, sums)
        drv.n_steps += sum(sums[j][4] for j in drv.active if j not in still)
        drv.active = still

    def last_check(self, fit, drv):
        sums = fit.engine.ring_check(ring_groups(drv.active, fit.K))
        drv.n_steps += sum(sums[j][4] for j in drv.active)
        return sums


class Parallel(_WithRounds):
    """bda and cocoa: the partitions propose changes from the same weights; the driver
    scales their sum by a step per problem (``step``) and commits it."""

    def __init__(self, name, step, added=False):
        # added: the changes are added whole (CoCoA+: sigma' = K), else scaled by step
        self.name, self.step, self.added = name, step, added

    def sigma(self, n_parts):
        return n_parts if self.added else 1

    def round(self, fit, drv):
        # (the check is part of the proposals: all problems are checked together)
        check = bool(drv.due())
        small = fit.engine.propose(drv.t, drv.active, fit.sweeps, check)
        still = drv.active
        if check:
            still = fit.check(drv, {j: (*small[j]["check"][:3], small[j]["w2"])
                                    for j in drv.active})
        for j in drv.active:
            drv.n_steps += small[j]["steps"]
        etas = self.step(fit, small, still)
        etas.update({j: 0.0 for j in drv.active if j not in still})
        fit.engine.commit(etas)
        if self.name == "bda":
            drv.etas.append((drv.t, {j: etas[j] for j in still}))
        drv.active = still

    def last_check(self, fit, drv):
        return fit.engine.check(drv.active)


class Whole(Method):
    """``_whole``: no rounds, no driver; the engine runs the problems."""
    name, unit = "whole", "sweeps of a problem"

    def fit(self, engine, spec, n_problems, d, *, tol, max_rounds, **_ring_options):
        outs, W = engine.whole(spec, range(n_problems), tol, max_rounds)
        return _whole.result(outs, W, tol, engine.bytes)


class Newton(Method):
    """``_newton``: the primal Newton solver, its sums over the partitions; no rounds."""
    name, unit = "newton", "Newton iterations"

    def fit(self, engine, spec, n_problems, d, *, tol, max_rounds, **_ring_options):
        return _newton.fit(engine, spec, n_problems, d, tol, max_rounds)


def unit_step(fit, small, problems):
    """CoCoA+'s step: 1."""
    return {j: 1.0 for j in problems}


def line_search(fit, small, problems):
    """bda's step: exact for the quadratic duals, else backtracking."""
    if LOSS[fit.spec["loss"]].exact_line_search(fit.spec.get("epsilon", 0.0)):
        return {j: line_search_exact(small[j]) for j in problems}
    return armijo(fit.engine, small, problems)


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


METHODS = {m.name: m for m in (Ring(), Parallel("bda", line_search),
                               Parallel("cocoa", unit_step, added=True), Whole(),
                               Newton())}
