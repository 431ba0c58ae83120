"""The methods of a distributed fit: one object each, behind one interface.

Every method (``Method``) has a ``name`` and ``fit(engine, spec, n_problems, d,
**options)``, which returns a ``_driver.FitResult``; the estimators use nothing else
(``METHODS``).

- ``ring``: the partitions take turns within a round; each runs its local sweeps on the
  current weights and passes them on, so a round is one sweep of
  one-machine dual CD in a block-wise order (the same convergence; hard shrinking's
  thresholds and AVSF's reference gain are carried along).  Problem j starts its rounds
  at partition j mod K (``_steps.ring_groups``), so the problems of a one-vs-rest fit
  keep several workers busy.
- ``whole``: every worker that runs a problem holds all rows and runs whole problems
  with the one-machine solver (``_whole``); no rounds.
- ``newton`` (the smooth losses): the primal Newton solver on the client, the sums it
  needs over the partitions (``_newton``); no rounds.

The ring runs on the driver (``_driver.run``: the stopping rule, the checks' schedule,
checkpoints and replay) and gives it two more things:

- ``round(fit, drv)``: run round ``drv.t`` of ``drv.active`` on ``fit.ring``, with a
  check of the problems due (``drv.due()``), passed to ``fit.check(drv, sums)``, which
  finishes those that passed and returns those still open; the round sets
  ``drv.active`` to them and adds its coordinate steps to ``drv.n_steps``;
- ``last_check(fit, drv)``: a check-only pass of the open problems after the last
  round: {problem: _steps.CheckResult}.

A new method is a class here, in ``METHODS``; what a partition computes for it goes in
``_steps`` (the same function on either engine gives the same bits); it reaches the
partitions by ``Engine.each``, or, for a ring round of another kind, by ``Ring`` on
both engines (docs/architecture.md).
"""
from pybudget.dask import _driver, _newton, _whole
from pybudget.dask._steps import ring_groups


class Method:
    name = None
    unit = "rounds"        # what n_rounds_ counts (messages and warnings)

    def fit(self, engine, spec, n_problems, d, **options):
        raise NotImplementedError


class Ring(Method):
    name = "ring"

    def fit(self, engine, spec, n_problems, d, **options):
        return _driver.run(engine, spec, n_problems, d, self, **options)

    def round(self, fit, drv):
        groups = ring_groups(drv.active, fit.K)
        due = drv.due()
        if not due:
            fit.ring.round(drv.t, groups, fit.sweeps, drv.laps)
            return
        # the check pass of the due problems and this round together: the round visits
        # the problems that the check leaves open (decided on the workers from the same
        # sums as fit.check), so the ring does not wait for the client; the laps
        # doubled by this check apply from the next round
        sums = fit.ring.round(drv.t, groups, fit.sweeps, drv.laps, fit.stop, due)
        still = fit.check(drv, sums)
        drv.n_steps += sum(sums[j].steps for j in drv.active if j not in still)
        drv.active = still

    def last_check(self, fit, drv):
        sums = fit.ring.check(ring_groups(drv.active, fit.K))
        drv.n_steps += sum(sums[j].steps for j in drv.active)
        return sums


class Whole(Method):
    """``_whole``: no rounds, no driver; the engine runs the problems."""
    name, unit = "whole", "sweeps of a problem"

    def fit(self, engine, spec, n_problems, d, *, tol, max_rounds, **_ring_options):
        outs, W = engine.whole(_whole.LinearProblems(spec, tol, max_rounds),
                               range(n_problems))
        return _whole.result(outs, W, engine.bytes)


class Newton(Method):
    """``_newton``: the primal Newton solver, its sums over the partitions; no rounds."""
    name, unit = "newton", "Newton iterations"

    def fit(self, engine, spec, n_problems, d, *, tol, max_rounds, **_ring_options):
        return _newton.fit(engine, spec, n_problems, d, tol, max_rounds)


METHODS = {m.name: m for m in (Ring(), Whole(), Newton())}
