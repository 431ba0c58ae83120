"""Method "newton": the primal Newton solver with the rows on the partitions.

For the smooth losses on data with many more rows than columns, one machine's
``selection="auto"`` runs truncated Newton on the primal (``linear.primal.newton``,
``linear.plan.primal_pays``): a few Newton iterations of a few conjugate-gradient
steps each, where dual CD may need a thousand sweeps.  Here the same iterations run on
the client, and every function value, gradient and Hessian-vector product they need is
a sum over the partitions (``Partition.primal_at``, ``primal_value``, ``primal_hessp``):
the client sends the point (d + 1 numbers) and adds the partitions' answers in partition
order, so the bits do not depend on the workers (the partitions' rows and order fix
them) and are the same on either engine.  A call is one task per partition, with no hop
between workers; an iteration costs one call for its gradient, one per CG step and one
per line-search trial.

The problems of a one-vs-rest fit run at the same time, each on a thread of the client
(their calls interleave on the workers).  Nothing but the rows lives on the workers
between calls, except each problem's curvature weights, which a partition recomputes
from the point when it does not hold them: after a lost worker the engine rebuilds the
lost partitions from their sources, and the calls that failed are sent again, which
gives the same bits as a fit without the loss.  ``tol`` is the iterate's own relative
duality gap, as on one machine's Newton route.
"""
import threading

import numpy as np

from pybudget._core._parallel import map_threads
from pybudget._core._reduce import add_in_order, fixed_dot
from pybudget.dask._driver import FitResult
from pybudget.dask._checkpoints import counted
from pybudget.dask._partition import Partition
from pybudget.dask.errors import PartitionsLost
from pybudget.linear.primal import newton


class _Recoveries:
    """The lost partitions of one fit rebuilt once per loss, whichever problem's call
    saw it first (the others' failed calls wait, then are sent again)."""

    def __init__(self, engine, spec):
        self.engine, self.spec = engine, spec
        self.lock = threading.Lock()
        self.generation = 0          # losses recovered so far
        self.count = 0

    def after(self, lost, sent_in):
        """Recover from ``lost``, met by a call sent in generation ``sent_in``."""
        with self.lock:
            if self.generation != sent_in:       # another call recovered already
                return
            while True:                          # (a recovery can lose a worker too)
                self.count = counted(self.count, lost)
                try:
                    lost = self.engine.rebuild_lost()
                    self.engine.each(Partition.primal_setup, self.spec, parts=lost)
                    break
                except PartitionsLost as again:
                    lost = again
            self.generation += 1


class _ClusterPrimal:
    """The oracle ``linear.primal.newton`` asks (f, gradient, Hessian products) for
    problem j, each answer summed over the partitions by the engine."""

    def __init__(self, engine, j, recoveries):
        self.engine, self.j, self.recoveries = engine, j, recoveries
        self.tag, self.v_at = 0, None        # the latest ``at`` call and its point

    def _ask(self, what, *args):
        while True:
            sent_in = self.recoveries.generation
            try:
                return add_in_order(self.engine.each(Partition.primal, what, self.j,
                                                     *args))
            except PartitionsLost as lost:
                self.recoveries.after(lost, sent_in)

    def at(self, v):
        self.tag += 1
        self.v_at = v
        lo, grad, diag = self._ask("at", v, self.tag)
        return 0.5 * fixed_dot(v, v) + lo, v + grad, None, diag

    def value(self, v):
        return 0.5 * fixed_dot(v, v) + self._ask("value", v)

    def hessp(self, diag, p):
        return p + self._ask("hessp", p, self.v_at, self.tag)

    def hdiag(self, diag):
        return 1.0 + diag


def fit(engine, spec, n_problems, d, tol, max_iter):
    """Every problem by Newton iterations on the engine's partitions: a FitResult
    (n_rounds: the most Newton iterations a problem took; n_steps: the Hessian-vector
    products)."""
    engine.each(Partition.primal_setup, spec)
    recoveries = _Recoveries(engine, spec)

    def solve(j):
        return newton(_ClusterPrimal(engine, j, recoveries), d + 1, tol, max_iter)

    outs = map_threads(solve, [(j,) for j in range(n_problems)],
                       engine.concurrency(n_problems))
    col = {key: np.array([o[key] for o in outs]) for key in
           ("gap", "primal", "dual", "kkt_violation", "n_iter")}
    W = np.vstack([o["w"] for o in outs])
    if not np.isfinite(W).all():
        raise ValueError("C is too large for this data: the weights overflowed")
    return FitResult(W=W, n_rounds=int(col["n_iter"].max()), gap=col["gap"],
                     primal=col["primal"], dual=col["dual"], kkt=col["kkt_violation"],
                     converged=np.array([o["converged"] for o in outs]),
                     n_steps=int(sum(o["n_products"] for o in outs)),
                     bytes_sent=dict(engine.bytes), n_checks=n_problems,
                     recoveries=recoveries.count)
