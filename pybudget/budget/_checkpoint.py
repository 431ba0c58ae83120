"""Checkpoint selection for the budgeted solvers (``BudgetSVC(checkpoints=k)``).

With lambda = 1/(nC) and a large C, one late SGD step (or one dual coordinate step)
moves f by up to about C / epochs at every point; with a nearly flat kernel (a9a at
gamma = 2^-7) that shifts the whole decision function, so the last iterate's accuracy
depends on the few steps before it stops (BSCA paper, section 5.1: BSGD "is at risk of
delivering low-quality solutions ... when it happens to stop at one of the peaks").
Checkpointing watches the quantity both solvers minimise, the primal objective of the
budgeted model, estimated on a fixed random sample of training rows, and returns the
checkpoint where it was lowest.  With the offset on (``offset=True``), the hinge term
is that of f + b with b fitted on the same sample (see _offset.py): the objective of
the model that would be returned.
"""
import time

import numpy as np
import scipy.sparse as sp

from pybudget.budget._offset import draw_sample, hinge, sample_offset


class BestCheckpoint:
    """Callback for bsgd_run/bsca_run: estimate the primal objective
    lambda/2 ||w||^2 + mean hinge (the BSGD form; BSCA's C-form is n C times it) on a
    fixed sample, keep a copy of the model (and optional extra state) when it improves.
    ``k``: the number of checkpoints asked for (``every`` spaces them over a run).

    ``codes``: 0/1 for a binary model (positive class 1), else class indices (the
    multi-class hinge 1 + max_{r != y} f_r - f_y of the BSGD paper, section 5).
    """

    def __init__(self, X, xsq, codes, lam, seed, k, extra=None, offset=False):
        self.X, self.xsq, self.codes = draw_sample(X, xsq, codes, seed)
        self.lam = lam
        self.k = k
        self.extra = extra            # e.g. BSCA's alpha, copied with the model
        self.offset = offset          # fit the offset at every checkpoint
        self.objectives = []
        self.best = None              # (objective, index, Z, beta, extra copy, offset)
        self.index = None             # of the returned checkpoint, set by finish
        self.seconds = 0.0            # spent in finish (the solvers time the others)

    def every(self, T):
        """Steps between checkpoints for a run of T steps (the last one ends the run)."""
        return -(-T // self.k)

    def objective(self, mdl):
        """(estimated objective, Z, beta, offset b (zeros without the offset))."""
        Z, beta, _ = mdl.arrays()
        F = mdl.decision_stream(self.X, self.xsq)
        b = sample_offset(F, self.codes) if self.offset else np.zeros(mdl.n_coef)
        w2 = 0.0
        if Z.shape[0]:
            Zs = sp.csr_matrix(Z)
            Zs.sort_indices()
            FZ = mdl.decision_stream(Zs, mdl.sq_norms)
            w2 = float(np.sum(beta * FZ.reshape(beta.shape)))
        return 0.5 * self.lam * w2 + hinge(F, self.codes, b), Z, beta, b

    def __call__(self, mdl):
        obj, Z, beta, b = self.objective(mdl)
        self.objectives.append(obj)
        if self.best is None or obj < self.best[0]:
            extra = None if self.extra is None else self.extra.copy()
            self.best = (obj, len(self.objectives) - 1, Z, beta, extra, b)

    def finish(self, mdl):
        """Score the final model too; returns (Z, beta, extra, offset) of the best."""
        t0 = time.perf_counter()
        self(mdl)
        _, self.index, Z, beta, extra, b = self.best
        self.seconds = time.perf_counter() - t0
        return Z, beta, extra, b


def checkpoint_fields(cks):
    """(index per problem, objectives per problem) of finished BestCheckpoints, or
    (None, None) without checkpoints."""
    if not cks:
        return None, None
    return np.array([c.index for c in cks]), [np.array(c.objectives) for c in cks]
