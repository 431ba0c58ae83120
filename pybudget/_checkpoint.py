"""Checkpoint selection for the budgeted solvers (``BudgetSVC(checkpoints=k)``).

With lambda = 1/(nC) and a large C, one late SGD step (or one dual coordinate step)
moves f by up to about C / epochs at every point; with a nearly flat kernel (a9a at
gamma = 2^-7) that shifts the whole decision function, so the last iterate's accuracy
depends on the few steps before it stops (BSCA paper, section 5.1: BSGD "is at risk of
delivering low-quality solutions ... when it happens to stop at one of the peaks").
Checkpointing watches the quantity both solvers minimise, the primal objective of the
budgeted model, estimated on a fixed random sample of training rows, and returns the
checkpoint where it was lowest.
"""
import time

import numpy as np
import scipy.sparse as sp

SAMPLE = 2048      # training rows in the objective estimate (all rows if fewer)


class BestCheckpoint:
    """Callback for bsgd_run/bsca_run: estimate the primal objective
    lambda/2 ||w||^2 + mean hinge (the BSGD form; BSCA's C-form is n C times it) on a
    fixed sample, keep a copy of the model (and optional extra state) when it improves.
    ``k``: the number of checkpoints asked for (``every`` spaces them over a run).

    ``codes``: 0/1 for a binary model (positive class 1), else class indices (the
    multi-class hinge 1 + max_{r != y} f_r - f_y of the BSGD paper, section 5).
    """

    def __init__(self, X, xsq, codes, lam, seed, k, extra=None):
        n = X.shape[0]
        rng = np.random.default_rng(seed)
        rows = np.sort(rng.choice(n, SAMPLE, replace=False)) if n > SAMPLE else np.arange(n)
        self.X = X[rows]
        self.X.sort_indices()
        self.xsq = np.ascontiguousarray(xsq[rows])
        self.codes = np.asarray(codes)[rows]
        self.lam = lam
        self.k = k
        self.extra = extra            # e.g. BSCA's alpha, copied with the model
        self.objectives = []
        self.best = None              # (objective, index, Z, beta, extra copy)
        self.index = None             # of the returned checkpoint, set by finish
        self.seconds = 0.0            # spent in finish (the solvers time the others)

    def every(self, T):
        """Steps between checkpoints for a run of T steps (the last one ends the run)."""
        return -(-T // self.k)

    def objective(self, mdl):
        Z, beta, _ = mdl.arrays()
        F = mdl.decision_stream(self.X, self.xsq)
        if F.ndim == 1:
            margins = np.where(self.codes == 1, F, -F)
        else:
            f_y = F[np.arange(F.shape[0]), self.codes]
            F = F.copy()
            F[np.arange(F.shape[0]), self.codes] = -np.inf
            margins = f_y - F.max(axis=1)
        hinge = np.maximum(0.0, 1.0 - margins).mean()
        w2 = 0.0
        if Z.shape[0]:
            Zs = sp.csr_matrix(Z)
            Zs.sort_indices()
            FZ = mdl.decision_stream(Zs, mdl.sq_norms)
            w2 = float(np.sum(beta * FZ.reshape(beta.shape)))
        return 0.5 * self.lam * w2 + hinge, Z, beta

    def __call__(self, mdl):
        obj, Z, beta = self.objective(mdl)
        self.objectives.append(obj)
        if self.best is None or obj < self.best[0]:
            extra = None if self.extra is None else self.extra.copy()
            self.best = (obj, len(self.objectives) - 1, Z, beta, extra)

    def finish(self, mdl):
        """Score the final model too; returns (Z, beta, extra) of the best."""
        t0 = time.perf_counter()
        self(mdl)
        _, self.index, Z, beta, extra = self.best
        self.seconds = time.perf_counter() - t0
        return Z, beta, extra


def checkpoint_fields(cks):
    """(index per problem, objectives per problem) of finished BestCheckpoints, or
    (None, None) without checkpoints."""
    if not cks:
        return None, None
    return np.array([c.index for c in cks]), [np.array(c.objectives) for c in cks]
