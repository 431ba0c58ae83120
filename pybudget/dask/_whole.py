"""Method "whole": a worker holds all the rows and runs whole problems.

For small data, the ring pays a hop per visit of every problem, where the rows would fit
on a worker many times over.  Here each worker that runs a problem holds all rows (in
their own order: the same rows and order whoever runs it; the workers of a host share
one copy, ``file_rows``), and each binary problem runs start to end on one worker with
the one-machine solver (``linear.problem.solve_binary`` with the plan one machine
decides, ``linear.plan.plan_for``, and the problem's seed as one machine gives it): the
problems spread over the workers' threads as ``n_jobs`` spreads them over one
machine's.

Stopping: ``tol`` and ``max_iter`` are one machine's, and so is the run: the same
call with the same plan, seed and tolerance gives one machine's model, bit for bit.
Which worker or thread runs a problem never changes its bits.

The rows' copies and the dealing of problems take any job (``LinearProblems`` here;
BSCA's one-vs-rest problems: ``_budget_whole``).
"""
from dataclasses import dataclass
from itertools import accumulate

import numpy as np
import scipy.sparse as sp

from pybudget._core import _validation as V
from pybudget._core._parallel import problem_seed
from pybudget.dask import _host_memory
from pybudget.dask._driver import FitResult
from pybudget.dask._worker import partition_rows_task
from pybudget.dask.errors import HostCopyMissing
from pybudget.linear.plan import Rows, plan_for
from pybudget.linear.problem import problem_costs, solve_binary

def all_rows(job, *parts):
    """(rows, y, sample weights, prepared) of all rows, from the partitions' (X, y,
    sample_weight), in partition order: the rows in their own order (in-memory rows are
    not dealt for this method: ``_sources.memory_sources``), so that the problems see
    them as one machine does.  rows: a ``linear.plan.Rows`` (X with the squared norms);
    y: the targets, or for classification the labels' indices in ``job.spec.classes``.
    The rows, these indices and what the job makes of them once (``job.prepare``: the
    linear plan, ``plan_on``) serve every problem of the job."""
    spec = job.spec
    d = spec.d
    Xs = [V.with_columns(X, d) for X, _, _ in parts]
    X = sp.vstack(Xs, format="csr") if len(Xs) > 1 else Xs[0]
    y = np.concatenate([p[1] for p in parts])
    sw = np.concatenate([p[2] for p in parts])
    X.sort_indices()
    y = _codes(spec, y)
    rows = Rows(X, spec.bias, V.row_sqnorms(X, spec.bias))
    return rows, y, sw, job.prepare(rows, y, sw)


def _codes(spec, y):
    """Classification: the labels' indices in ``spec.classes``; regression: y."""
    return y if spec.regression else np.searchsorted(spec.classes, y)


def file_plan(spec, infos):
    """For all rows in partition order in one file (``all_rows``' arrays),
    from the partitions' summaries ``infos``: the arrays' (shape, dtype), and each
    partition's first row and first non-zero there.  The dtypes are those ``all_rows``
    gives: so are the bits."""
    n, nnz = sum(s.n for s in infos), sum(s.nnz for s in infos)
    dt = [[np.dtype(t) for t in s.dtypes] for s in infos]
    index = np.result_type(*[t for ts in dt for t in ts[1:3]])
    label = np.result_type(*[ts[3] for ts in dt]) if spec.regression else np.intp
    shapes = [((nnz,), np.result_type(*[ts[0] for ts in dt])), ((nnz,), index),
              ((n + 1,), index), ((n,), label), ((n,), np.float64), ((n,), np.float64)]
    rows = accumulate((s.n for s in infos), initial=0)
    firsts = accumulate((s.nnz for s in infos), initial=0)
    return shapes, list(zip(rows, firsts))[:-1]


def file_write(name, shapes, spec, row, first, part):
    """One partition's rows (X, y, sample weights) written into the file from its row
    ``row`` and non-zero ``first`` on (``file_plan``'s ``shapes`` and starts), by a
    worker of the host, with their label indices and squared norms (row by row, so the
    bits of all rows').  The first writer makes the file (``_host_memory.create``).
    HostCopyMissing when the file cannot be made or is not seen here."""
    made = _host_memory.create(name, shapes)
    if made is None:
        raise HostCopyMissing(f"{name} could not be made")
    X, y, sw = part
    X = X if X.has_sorted_indices else X.sorted_indices()
    data, indices, indptr, codes, weights, norms = made[0]
    n, nnz = X.shape[0], X.nnz
    data[first:first + nnz] = X.data
    indices[first:first + nnz] = X.indices
    # (indptr[row] is also the previous partition's last entry: both write `first`)
    indptr[row:row + n + 1] = X.indptr + first
    codes[row:row + n] = _codes(spec, y)
    weights[row:row + n] = sw
    norms[row:row + n] = V.row_sqnorms(X, spec.bias)
    return True


def file_write_held(name, shapes, spec, row, first, job, part):
    """``file_write`` of the partition this worker holds (its rows never leave it, and
    no task fetches them first)."""
    return file_write(name, shapes, spec, row, first, partition_rows_task(job, part))


def file_rows(name, shapes, job, n, *written):
    """``all_rows`` from the file that the partitions wrote (``file_write``, each
    ``written`` its result: the task waits for them), mapped, not copied, with the
    job's ``prepare`` made on them: each worker of the host runs this, so the same
    arrays and the same bits on each.  HostCopyMissing where this process does not see
    the file."""
    try:
        data, indices, indptr, y, sw, sqnorms = _host_memory.attach(
            name, _host_memory.layout_of(shapes))
    except OSError as exc:
        raise HostCopyMissing(f"{name}: {exc}") from None
    X = sp.csr_matrix((data, indices, indptr), shape=(n, job.spec.d), copy=False)
    X.has_sorted_indices = True          # (as the partitions wrote them: file_write)
    rows = Rows(X, job.spec.bias, sqnorms)
    return rows, y, sw, job.prepare(rows, y, sw)


def plan_on(spec, rows, y, sw):
    """One machine's plan on all rows (y as ``all_rows`` has it), one thread a problem:
    the costs of its rule are each row's own class's (``LinearSVC.fit``), C times the
    sample weight for regression.  So the client needs no statistics of the
    partitions first."""
    cvec = spec.C * sw
    if not spec.regression:
        cvec = cvec * spec.class_weight[y]
    return plan_for(rows, cvec, spec.loss, spec.selection, tol_rule=spec.tol_rule)


def solve_problems(data, job, js):
    """``job.solve`` for each problem of js, in turn (a task's share of the fit)."""
    return [job.solve(data, j) for j in js]


@dataclass(frozen=True)
class LinearProblems:
    """The linear problems of ``spec`` as method "whole" runs them (``solve_problem``
    with one machine's ``tol`` and ``max_iter``).  A job of method "whole" says what
    the rows' copies hold (``spec``: d, bias, regression, classes), what is made once
    on all rows (``prepare``), how a problem runs on them (``solve``) and how the
    client keeps a result as it arrives (``put``, ``nbytes``)."""
    spec: object
    tol: float
    max_iter: int

    def prepare(self, rows, y, sw):
        return plan_on(self.spec, rows, y, sw)

    def solve(self, data, j):
        return solve_problem(data, self.spec, j, self.tol, self.max_iter)

    @staticmethod
    def nbytes(out):
        return out.w.nbytes

    @staticmethod
    def put(W, n_problems, i, out):
        return put(W, n_problems, i, out)


@dataclass
class Solved:
    """One problem solved (``solve_problem``): its weights w (bias weight last; None
    once ``put`` stacked them), intercept, relative gap, primal, dual, KKT violation,
    sweeps, dual CD steps, the selection it ran with and whether it converged."""
    w: np.ndarray
    intercept: float
    gap: float
    primal: float
    dual: float
    kkt: float
    sweeps: int
    steps: int
    selection: str
    converged: bool


def solve_problem(data, spec, j, tol, max_iter):
    """Problem j of spec on all rows ``data`` (``all_rows``), a ``Solved``."""
    rows, y, sw, how = data
    bias, C = spec.bias, spec.C
    if spec.regression:
        target, cvec, seed = y, C * sw, spec.seed
        extra = {"epsilon": spec.epsilon, "tol_rule": spec.tol_rule}
    else:
        codes, k = y, spec.positive[j]
        target = np.where(codes == k, 1.0, -1.0)
        cvec = problem_costs(C, spec.class_weight, codes, k, sw)
        seed, extra = problem_seed(spec.seed, k), {}
    res = solve_binary(rows, target, cvec, C, how, loss=spec.loss, tol=tol,
                       max_iter=max_iter, seed=seed, **extra)
    primal, dual = res.primal_objective, res.dual_objective
    gap = (primal - dual) / abs(primal) if primal != 0 else 0.0
    w = np.empty(rows.X.shape[1] + 1)
    w[:-1] = res.coef
    w[-1] = res.intercept / bias if bias else 0.0
    return Solved(w=w, intercept=res.intercept, gap=gap, primal=primal, dual=dual,
                  kkt=res.kkt_violation, sweeps=res.n_iter, steps=res.n_steps,
                  selection=res.selection, converged=res.converged)


def put(W, n_problems, i, out):
    """Problem i's weights from its ``Solved`` ``out`` (which keeps the rest) into row
    i of W, allocated at the first call (W None); returns W.  A client that puts each
    result there as it arrives holds no second copy of them all at the end."""
    if W is None:
        W = np.empty((n_problems, out.w.shape[0]))
    W[i], out.w = out.w, None
    return W


def result(outs, W, bytes_sent):
    """The FitResult of the problems' ``solve_problem`` outputs and their stacked
    weights W (``weights``; n_rounds: the most sweeps a problem took)."""
    col = {key: np.array([getattr(o, key) for o in outs]) for key in
           ("gap", "primal", "dual", "kkt", "sweeps", "intercept")}
    if not np.isfinite(W).all():
        raise ValueError("C is too large for this data: the weights overflowed")
    return FitResult(W=W, n_rounds=int(col["sweeps"].max()), gap=col["gap"],
                     primal=col["primal"], dual=col["dual"], kkt=col["kkt"],
                     converged=np.array([o.converged for o in outs]),
                     n_steps=int(sum(o.steps for o in outs)),
                     bytes_sent=dict(bytes_sent), n_checks=len(outs), recoveries=0,
                     intercept=col["intercept"], selection=outs[0].selection)
