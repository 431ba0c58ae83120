"""One partition of a distributed fit: its rows and, per binary problem, the local dual
state, with the operations every method is made of.

A partition never leaves the process that built it (a Dask worker, or the client for
``engine="threads"``).  The methods (see ``_driver``) use it in two ways:

- the ring (``visit``, and ``check`` for its check passes): the partition runs its
  sweeps in place on the current weights of a problem, exactly as one machine's dual CD
  would on these rows, and hands the weights on;
- the primal Newton method (``primal_setup``, then ``primal_at``, ``primal_value``,
  ``primal_hessp``): the partition's sums of the primal's loss terms, which the client
  adds up for its Newton iterations (``_newton``).

The sweeps are the one-machine strategies' (``linear._dual_cd.dcd_round``) on the
partition's rows.  Everything here is deterministic: the generator of problem j on partition p in
round t is seeded from (seed, j, p, t) alone.
"""
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from pybudget._core import _validation as V
from pybudget.dask.errors import PartitionMissing
from pybudget.linear._dcd_types import RING_CARRY, ROUND_SCALARS, THRESHOLDS
from pybudget.linear._dual_cd import SELECTIONS, dcd_round, fresh_carry, roll_carried
from pybudget.linear.losses import LOSS
from pybudget.linear.primal import _Primal
from pybudget.linear.problem import problem_costs

# A weight change is sent as (indices, values) when fewer than this share of its
# entries is non-zero (12 bytes an entry against 8 for every entry).
SPARSE_SHARE = 1 / 3

def round_seed(seed, problem, part, rnd):
    """The 64-bit generator seed of one problem on one partition in one round."""
    ss = np.random.SeedSequence([seed % 2**64, problem, part, rnd])
    return int(ss.generate_state(1, np.uint64)[0])


def encode(dw):
    """dw as ("sparse", indices, values) when it is mostly zero, else ("dense", dw)."""
    nz = np.flatnonzero(dw)
    if nz.size < SPARSE_SHARE * dw.size:
        return ("sparse", nz.astype(np.int32), dw[nz])
    return ("dense", dw)


def add_into(w, msg):
    """w += the decoded change (in place; the sparse form touches only its entries, so
    both forms give the same bits)."""
    if msg[0] == "sparse":
        w[msg[1]] += msg[2]
    else:
        w += msg[1]


def first_lr_tol(selection):
    """The logistic inner tolerance a problem starts with."""
    return 1e-2 if selection == SELECTIONS["shrinking"] else 1e-8


def first_carry(kind, selection):
    """What the ring carries for one problem before its first round (a 1-element
    RING_CARRY array)."""
    carry = np.zeros(1, RING_CARRY)
    c = carry[0]            # (a structured scalar: a view of the array's record)
    for name, value in zip(THRESHOLDS, fresh_carry(kind)):
        c[name] = value
    c["lr_tol"] = first_lr_tol(selection)
    return carry


@dataclass(frozen=True)
class PartSummary:
    """What the client learns of a built partition before setup: its rows, columns and
    non-zeros, the dtypes of X's data, indices and indptr and of y, for classification
    the labels with their rows' summed sample weights, and for regression the largest
    |y| of its rows of positive weight (the unit of ``tol``)."""
    n: int
    d: int
    nnz: int
    dtypes: tuple
    labels: np.ndarray = None
    weights: np.ndarray = None
    max_abs_y: float = 0.0


@dataclass
class ProblemState:
    """One binary problem's local dual state on a partition: what dcd_round keeps
    between the ring's visits (and a checkpoint keeps, but y)."""
    y: np.ndarray           # the targets (+-1, or regression's); None in a checkpoint
    u: np.ndarray           # the duals
    prefs: np.ndarray       # AVSF's preferences
    perm: np.ndarray        # int32: the order, hard shrinking's active rows first
    n_active: int
    comp: np.ndarray        # the logistic loss's C - u (None for the others)
    scal: np.ndarray        # dcd_round's scalars (a 1-element ROUND_SCALARS array)

    def copied(self, y):
        """A copy of every array, with targets y (a checkpoint keeps none: setup's)."""
        return replace(self, y=y, u=self.u.copy(), prefs=self.prefs.copy(),
                       perm=self.perm.copy(),
                       comp=None if self.comp is None else self.comp.copy(),
                       scal=self.scal.copy())


@dataclass(frozen=True)
class PartCheck:
    """One partition's share of a problem's check at given weights (``check``):
    the weighted primal loss of its rows, its dual objective's terms without w
    (``Partition.gap_terms``) and the largest violation of its duals' optimality.
    Sent from a worker to the client (it pickles); the engines sum the partitions'
    in partition order (``_steps.sum_checks``)."""
    loss: float
    dual_terms: float
    kkt: float


class _Costs:
    """The per-row constants of one problem: C_i, the box (C_i or infinite), the
    diagonal D_ii of the squared losses and the curvatures Q_ii."""

    def __init__(self, X, cvec, squared, bias):
        self.cvec = np.ascontiguousarray(cvec)
        self.upper = np.full(cvec.shape[0], np.inf) if squared else cvec.copy()
        self.diag = 0.5 / cvec if squared else np.zeros(cvec.shape[0])
        self.qd = self.diag + V.row_sqnorms(X, bias) if X.shape[0] else self.diag.copy()


class Partition:
    """Rows of one partition (canonical CSR, validated) with their labels or targets and
    sample weights, and the local state of every binary problem once ``setup`` ran."""

    def __init__(self, X, y, sample_weight=None, part=0):
        self.part = part
        self.X = X
        self.y = y
        self.sw = (np.ones(X.shape[0]) if sample_weight is None
                   else np.asarray(sample_weight, dtype=np.float64))
        self.problems = None
        self.primals = None       # method "newton"'s problems (primal_setup)
        # values a method derives from the rows alone, by a key that fixes them (the
        # budgeted ring's orders and norms): the same when a rebuilt partition
        # computes them again
        self.memo = {}

    @property
    def n(self):
        return self.X.shape[0]

    def summary(self, regression):
        """The PartSummary of this partition (what the client needs before setup)."""
        common = dict(n=self.n, d=self.X.shape[1], nnz=int(self.X.nnz),
                      dtypes=tuple(a.dtype.str for a in (self.X.data, self.X.indices,
                                                         self.X.indptr, self.y)))
        if regression:
            kept = self.y[self.sw > 0]
            return PartSummary(**common, max_abs_y=float(np.max(np.abs(kept), initial=0.0)))
        labels, codes = np.unique(self.y, return_inverse=True)
        return PartSummary(**common, labels=labels,
                           weights=np.bincount(codes, weights=self.sw,
                                               minlength=len(labels)))

    def scales(self, spec):
        """For selection="auto", the statistics one machine uses, on the rows with
        positive weight: their C_i (|x_i|^2 + bias^2) and the columns they use."""
        if self.n == 0:
            return np.zeros(0), np.zeros(0, np.int32)
        cvec = spec.C * self.sw
        if not spec.regression:
            codes = np.searchsorted(spec.classes, self.y)
            cvec = cvec * spec.class_weight[codes]
        keep = cvec > 0
        X = self.X if keep.all() else self.X[keep]      # (no copy of every row)
        used = np.zeros(X.shape[1], dtype=bool)          # (no sorted copy of X.indices)
        used[X.indices] = True
        return (cvec[keep] * V.row_sqnorms(X, spec.bias),
                np.flatnonzero(used).astype(np.int32))

    def setup(self, spec):
        """Build the local state of every problem of ``spec`` (a dict: loss,
        bias, d, epsilon, selection, seed, and either classes plus class weights and the
        positive class of each problem, or regression=True).  Returns the encoded initial
        contribution of each problem to w (non-zero only for the logistic loss, whose
        duals start inside their box)."""
        targets, costs = self._problems(spec)
        Xk = self.Xk
        self.loss = LOSS[spec.loss]
        kind, squared = self.loss.kind, self.loss.squared
        self.kind, self.squared = kind, squared
        self.bias, self.epsilon = spec.bias, spec.epsilon
        self.selection = SELECTIONS[spec.selection]
        self.rules = spec.rules
        self.seed = spec.seed
        self.n_total = spec.n_rows
        shared = {}      # problems with the same row weights share their constants
        self.costs = []
        for c in costs:
            key = c.tobytes()
            if key not in shared:
                shared[key] = _Costs(Xk, c, squared, self.bias)
            self.costs.append(shared[key])
        self.problems = [self._fresh(t, c) for t, c in zip(targets, self.costs)]
        return [self._initial(st) for st in self.problems]

    def _problems(self, spec):
        """The rows with positive weight (self.Xk) and every problem's targets and
        costs, as one machine sets them."""
        d = spec.d
        if self.X.shape[1] < d:     # shards may use fewer columns than the widest one
            self.X.resize((self.n, d))
        keep = self.sw > 0
        self.keep = None if keep.all() else np.flatnonzero(keep)
        self.Xk = self.X if self.keep is None else self.X[self.keep]
        V.check_squares(self.Xk, spec.bias)  # (as on one machine: no overflowing |x|^2)
        sw = self.sw[keep]
        if spec.regression:
            return [self.y[keep].astype(np.float64)], [spec.C * sw]
        # the costs of one-vs-rest as liblinear sets them (as on one machine)
        codes = np.searchsorted(spec.classes, self.y[keep])
        targets = [np.where(codes == k, 1.0, -1.0) for k in spec.positive]
        costs = [problem_costs(spec.C, spec.class_weight, codes, k, sw)
                 for k in spec.positive]
        return targets, costs

    # ---- method "newton": the primal's sums over these rows ---------------------------

    def primal_setup(self, spec):
        """Every problem's primal on these rows (``linear.primal._Primal``; X's squares
        shared by the problems)."""
        targets, costs = self._problems(spec)
        Xsq = self.Xk.multiply(self.Xk).tocsr()
        eps = spec.epsilon
        self.primals = [_Primal(self.Xk, t, c, spec.loss, spec.bias, eps, Xsq,
                                gather=False) for t, c in zip(targets, costs)]
        self.curvature = {}

    def primal(self, what, j, *args):
        """``primal_<what>(j, *args)`` (at, value or hessp): method "newton"'s call."""
        if self.primals is None:     # (rebuilt after a loss, not set up yet: sent again)
            raise PartitionMissing(f"partition {self.part} is not set up here")
        return getattr(self, "primal_" + what)(j, *args)

    def primal_at(self, j, v, tag):
        """Problem j's loss sum, gradient part and Hessian diagonal part at v; keeps the
        curvature weights for ``primal_hessp`` under ``tag``."""
        lo, grad, _, h = self.primals[j].local_at(v)
        self.curvature[j] = (tag, h)
        return lo, grad, self.primals[j].local_hdiag(h)

    def primal_value(self, j, v):
        return self.primals[j].local_value(v)

    def primal_hessp(self, j, p, v, tag):
        """The Hessian part A' diag(h) A p at v, the point of ``primal_at`` call ``tag``
        (its curvature computed again if this partition does not hold it: rebuilt after
        a loss)."""
        if self.curvature.get(j, (None,))[0] != tag:
            self.curvature[j] = (tag, self.primals[j].local_at(v)[3])
        return self.primals[j].local_hessp(self.curvature[j][1], p)

    def _fresh(self, y, cost):
        n = y.shape[0]
        scal = np.zeros(1, ROUND_SCALARS)
        scal["max_old"], scal["min_old"] = np.inf, -np.inf
        scal["lr_tol"] = first_lr_tol(self.selection)
        st = ProblemState(y=np.ascontiguousarray(y), u=np.zeros(n), prefs=np.ones(n),
                          perm=np.arange(n, dtype=np.int32),
                          n_active=n, comp=None, scal=scal)
        if self.kind == "lr":
            # liblinear's start, as in dual_cd
            st.u = self.loss.start_inside(cost.upper)
            st.comp = cost.upper - st.u
        return st

    def _initial(self, st):
        d1 = self.Xk.shape[1] + 1
        if self.kind != "lr" or self.Xk.shape[0] == 0:
            return ("sparse", np.zeros(0, np.int32), np.zeros(0))
        ay = st.u * st.y
        w = np.zeros(d1)
        w[:-1] = self.Xk.T @ ay
        w[-1] = self.bias * ay.sum()
        return encode(w)

    # ---- the dual objective's terms that do not involve w ----------------------------

    def _terms(self, st, cost, u, comp):
        """At the duals u (and comp = C - u for the logistic loss): the dual objective
        is terms - 1/2 |w|^2."""
        if self.kind == "lr":
            return -float(self.loss.entropy(u, comp, cost.cvec))
        lin = self.loss.linear_term(st.y, u, self.epsilon)
        quad = 0.5 * np.sum(cost.diag * u * u) if self.squared else 0.0
        return float(lin - quad)

    def gap_terms(self, j):
        st = self.problems[j]
        return self._terms(st, self.costs[j], st.u, st.comp)

    def _sweeps(self, j, rnd, v, sweeps, check, lap=0, laps=1):
        """dcd_round on problem j from weights v (changed in place); returns its
        RoundOutcome."""
        st, cost = self.problems[j], self.costs[j]
        # (only a round's first lap draws an order or a schedule: the later laps and
        # the check pass use no generator, so they skip the seed's ~15 us)
        seed = round_seed(self.seed, j, self.part, rnd) if lap == 0 and sweeps else 0
        out = dcd_round(self.Xk, st.y, cost.upper, cost.diag, cost.cvec, self.bias,
                        st.u, v, st.prefs, st.perm, st.n_active, st.scal,
                        cost.qd, False, self.selection, sweeps, seed, self.squared, check,
                        self.kind, self.epsilon, st.comp, lap, laps, self.n_total)
        st.n_active = out.n_active
        return out

    # ---- the ring -----------------------------------------------------------------------

    def visit(self, j, rnd, w, sweeps, carry, lap=0, laps=1):
        """The ring's visit: ``sweeps`` sweeps of problem j in place on its
        current weights w, or the lap-th of ``laps`` shares of one sweep, with the
        thresholds and gains carried along the ring (carry, updated in place: this
        partition's extremes folded in, steps added)."""
        if self.Xk.shape[0] == 0:
            return
        st = self.problems[j]
        s, c = st.scal[0], carry[0]     # (structured scalars: views of the records)
        for name in ("max_old", "min_old", "dref", "lr_tol"):
            s[name] = c[name]
        # (one seed per round: the laps after the first draw nothing)
        out = self._sweeps(j, rnd, w, sweeps, False, lap, laps)
        c["max_new"] = max(c["max_new"], s["max_new"])
        c["min_new"] = min(c["min_new"], s["min_new"])
        c["dref"], c["lr_tol"] = s["dref"], s["lr_tol"]
        c["steps"] += out.n_steps

    def check(self, j, w):
        """The check's scalars of problem j at weights w (a PartCheck); also
        resets hard shrinking's active set."""
        if self.Xk.shape[0] == 0:
            return PartCheck(loss=0.0, dual_terms=0.0, kkt=0.0)
        terms = self.gap_terms(j)
        # (the check pass only reads w; dcd_round takes it writable)
        out = self._sweeps(j, 0, w if w.flags.writeable else w.copy(), 0, True)
        return PartCheck(loss=out.loss_sum, dual_terms=terms, kkt=out.kkt_violation)

    # ---- checkpoints -----------------------------------------------------------------

    def state(self, j):
        """What a checkpoint keeps of problem j: a ProblemState of copies, without y
        (setup's; the checkpoint is pickled to workers and the client)."""
        return self.problems[j].copied(None)

    def restore(self, j, saved):
        """Problem j back to a checkpointed state (``state``'s; copied, so that a
        second loss can restore it again)."""
        self.problems[j] = saved.copied(self.problems[j].y)


def roll_ring(kind, carries, rnd):
    """Start of a ring round: each carried row's extremes become its thresholds (not
    before the first round, which starts from the fresh thresholds)."""
    if rnd == 0:
        return
    for carry in carries:
        c = carry[0]
        rolled = roll_carried(kind, *(c[name] for name in THRESHOLDS))
        for name, value in zip(THRESHOLDS, rolled):
            c[name] = value


def check_block(X, y, where, d=None, regression=False, sample_weight=None):
    """A block of rows (dense or CSR) as canonical CSR plus labels, checked; errors name
    ``where`` (a chunk or a shard) in one line.  A block without rows is allowed (an
    empty partition takes no part in the fit)."""
    if X.shape[0] == 0:
        X = sp.csr_matrix((0, X.shape[1] if d is None else d))
        return X, np.asarray(y).ravel()[:0], None
    try:
        Xc = V.as_csr(X)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{where}: {str(exc).splitlines()[0]}") from None
    if d is not None and Xc.shape[1] != d:
        raise ValueError(f"{where}: {Xc.shape[1]} columns, expected {d} (the first chunk's)")
    y = np.asarray(y).ravel()
    if y.shape[0] != Xc.shape[0]:
        raise ValueError(f"{where}: {Xc.shape[0]} rows of X but {y.shape[0]} labels")
    if y.dtype.kind in "fc" and not np.isfinite(y).all():
        raise ValueError(f"{where}: labels or targets contain NaN or infinity")
    if regression and y.dtype.kind not in "fiub":
        raise ValueError(f"{where}: regression targets must be numbers, got {y.dtype}")
    sw = None
    if sample_weight is not None:
        sw = np.asarray(sample_weight, dtype=np.float64).ravel()
        if sw.shape[0] != Xc.shape[0] or not np.isfinite(sw).all() or (sw < 0).any():
            raise ValueError(f"{where}: sample_weight must be finite, >= 0, one per row")
    return Xc, y, sw
