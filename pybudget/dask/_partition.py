"""One partition of a CoCoA+ fit: its rows and, per binary problem, the local dual state.

A partition never leaves the process that built it (a Dask worker, or the client for
``engine="threads"``).  Each round it receives the global weights of one problem, runs
the chosen strategy on its rows (``linear._dual_cd.dcd_round``: the one-machine strategies
on the rescaled local problem, see there) and returns only its weight change dw_k and,
on check rounds, the scalars of the duality gap.  Everything here is deterministic: the
generator of problem j on partition p in round t is seeded from (seed, j, p, t) alone.
"""
import numpy as np
import scipy.sparse as sp
from scipy.special import xlogy

from pybudget._core import _validation as V
from pybudget.linear._dual_cd import SELECTIONS, dcd_round
from pybudget.linear.svm import PROBLEM_OF

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


def payload_bytes(msg):
    """Bytes of the arrays of an encoded weight change."""
    return sum(a.nbytes for a in msg[1:])


def add_into(w, msg):
    """w += the decoded change (in place; the sparse form touches only its entries, so
    both forms give the same bits)."""
    if msg[0] == "sparse":
        w[msg[1]] += msg[2]
    else:
        w += msg[1]


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

    @property
    def n(self):
        return self.X.shape[0]

    def summary(self, regression):
        """What the client needs before setup: rows, columns, non-zeros, and the labels
        (classification) or the largest |target| (regression)."""
        out = {"n": self.n, "d": self.X.shape[1], "nnz": int(self.X.nnz)}
        if regression:
            out["max_abs_y"] = float(np.max(np.abs(self.y))) if self.n else 0.0
        else:
            out["labels"], out["counts"] = np.unique(self.y, return_counts=True)
        # for selection="auto": columns in use and the median squared row norm
        out["used"] = int(np.unique(self.X.indices).size)
        out["median_sqnorm"] = float(np.median(V.row_sqnorms(self.X))) if self.n else 0.0
        return out

    def setup(self, spec):
        """Build the local state of every problem of ``spec`` (a dict: loss, K (sigma'),
        bias, d, epsilon, selection, seed, and either classes plus class weights and the
        positive class of each problem, or regression=True).  Returns the encoded initial
        contribution of each problem to w (non-zero only for the logistic loss, whose
        duals start inside their box)."""
        d = spec["d"]
        if self.X.shape[1] < d:     # shards may use fewer columns than the widest one
            self.X.resize((self.n, d))
        problem, squared = PROBLEM_OF[spec["loss"]]
        K = spec["K"]
        if spec.get("regression"):
            cvec = spec["C"] * self.sw
            targets = [self.y.astype(np.float64)]
        else:
            codes = np.searchsorted(spec["classes"], self.y)
            cvec = spec["C"] * self.sw * spec["class_weight"][codes]
            targets = [np.where(codes == k, 1.0, -1.0) for k in spec["positive"]]
        keep = cvec > 0
        self.keep = None if keep.all() else np.flatnonzero(keep)
        Xk = self.X if self.keep is None else self.X[self.keep]
        V.check_squares(Xk, spec["bias"])    # (as on one machine: no overflowing |x|^2)
        cvec = cvec[keep]
        self.Xk = Xk
        self.cvec = np.ascontiguousarray(cvec)
        self.upper = np.full(cvec.shape[0], np.inf) if squared else K * cvec
        self.diag = 0.5 / (K * cvec) if squared else np.zeros(cvec.shape[0])
        self.kind, self.squared, self.K = problem, squared, K
        self.bias, self.epsilon = spec["bias"], spec.get("epsilon", 0.0)
        self.selection = SELECTIONS[spec["selection"]]
        self.seed = spec["seed"]
        self.qd = np.empty(cvec.shape[0])
        self.fresh_qd = True
        self.problems = [self._fresh(t[keep]) for t in targets]
        return [self._initial(st) for st in self.problems]

    def _fresh(self, y):
        n = y.shape[0]
        st = {"y": np.ascontiguousarray(y), "u": np.zeros(n), "prefs": np.ones(n),
              "perm": np.arange(n, dtype=np.int32), "n_active": n, "comp": None,
              "scal": np.array([np.inf, -np.inf, 0.0, 0.0, 0.0,
                                1e-2 if self.selection == SELECTIONS["shrinking"] else 1e-8])}
        if self.kind == "lr":
            # liblinear's start, as in dual_cd: inside the box by min(1e-3 U, 1e-8)
            st["u"] = np.minimum(1e-3 * self.upper, 1e-8)
            st["comp"] = self.upper - st["u"]
        return st

    def _initial(self, st):
        d1 = self.Xk.shape[1] + 1
        if self.kind != "lr" or self.n == 0:
            return ("sparse", np.zeros(0, np.int32), np.zeros(0))
        ay = st["u"] * st["y"] / self.K
        w = np.zeros(d1)
        w[:-1] = self.Xk.T @ ay
        w[-1] = self.bias * ay.sum()
        return encode(w)

    def gap_terms(self, st):
        """The dual objective's terms of this partition that do not involve w, at the
        current duals alpha = u / K: the objective is terms - 1/2 |w|^2."""
        a = st["u"] / self.K
        if self.kind == "lr":
            c = st["comp"] / self.K
            return -float(np.sum(xlogy(a, a / self.cvec) + xlogy(c, c / self.cvec)))
        lin = a.sum() if self.kind == "svm" else (np.sum(st["y"] * a)
                                                  - self.epsilon * np.abs(a).sum())
        quad = 0.5 * np.sum(0.5 / self.cvec * a * a) if self.squared else 0.0
        return float(lin - quad)

    def round(self, j, rnd, w, check, sweeps):
        """One round of problem j against the global weights w (not modified): returns
        (encoded dw_k, stats) with stats = {loss, kkt, dual_terms} on check rounds, plus
        steps."""
        st = self.problems[j]
        stats = {"steps": 0}
        if self.Xk.shape[0] == 0:
            if check:
                stats.update(loss=0.0, kkt=0.0, dual_terms=0.0)
            return ("sparse", np.zeros(0, np.int32), np.zeros(0)), stats
        if check:
            stats["dual_terms"] = self.gap_terms(st)
        v = np.array(w, dtype=np.float64, copy=True)
        out = dcd_round(self.Xk, st["y"], self.upper, self.diag, self.cvec, self.bias,
                        st["u"], v, st["prefs"], st["perm"], st["n_active"], st["scal"],
                        self.qd, self.fresh_qd, self.selection, sweeps,
                        round_seed(self.seed, j, self.part, rnd), self.squared, check,
                        self.kind, self.epsilon, st["comp"])
        self.fresh_qd = False
        st["n_active"] = out["n_active"]
        stats["steps"] = out["n_steps"]
        if check:
            stats["loss"] = out["loss_sum"]
            stats["kkt"] = out["kkt_violation"]
        v -= w
        v /= self.K
        return encode(v), stats

    def state(self, j):
        """What a checkpoint keeps of problem j (copies)."""
        st = self.problems[j]
        return {k: (v.copy() if isinstance(v, np.ndarray) else v)
                for k, v in st.items() if k != "y"}

    def restore(self, j, saved):
        """Problem j back to a checkpointed state (its curvatures are recomputed)."""
        st = self.problems[j]
        for k, v in saved.items():
            st[k] = v.copy() if isinstance(v, np.ndarray) else v
        self.fresh_qd = True


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
