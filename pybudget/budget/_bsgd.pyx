# BSGD (Wang, Crammer & Vucetic): Pegasos on the kernel primal with a budget
# (docs/algorithms.md#bsgd).
#   lambda = 1/(n C), eta_t = 1/(lambda t), t global over epochs and partial_fit calls.
#   Step t on (x, y): margin with the current model; every coefficient *= (1 - 1/t)
#   (lazily, through the model's scale); on a margin violation add x with coefficient
#   y eta_t (binary) or +eta_t for class y and -eta_t for the best wrong class r
#   (multi-class, BSGD paper section 5); maintenance when the buffer is full.  No bias.
# Optional iterate averaging (off by default; the paper outputs the last iterate): from
#   global step avg_start on, the returned model is the mean of the iterates w_{t+1},
#   t = avg_start .. T, kept per SV in the buffer's `acc` (see _budget.pxd).
# Inputs are validated in pybudget/budget/svm.py; bsgd_run only checks that the arrays it is
# handed fit together (what a direct caller, e.g. a test or bench, could get wrong).
from libc.stdint cimport uint64_t

from pybudget.budget._budget cimport BudgetModel
from pybudget.budget._maintain cimport Maintainer
from pybudget.budget._epochs cimport EpochSteps

from pybudget.budget._epochs import run_epochs

import numpy as np


cdef class BsgdSteps(EpochSteps):
    cdef double[::1] coef
    cdef int[::1] codes
    cdef double lam
    cdef long n_added

    cdef void step(self, int i) noexcept nogil:
        cdef const double* f = &self.f[0]
        cdef double* coef = &self.coef[0]
        cdef int c, r = -1, K = self.mdl.n_coef, y = self.codes[i]
        cdef double eta, best = 0.0
        cdef bint violated
        self.next_step()              # may start the average (acc only, beta untouched)
        if K == 1:
            violated = (f[0] if y == 1 else -f[0]) < 1.0
        else:
            for c in range(K):
                if c != y and (r < 0 or f[c] > best):
                    best = f[c]
                    r = c
            violated = 1.0 + best - f[y] > 0.0
        self.mdl.scale_by(1.0 - 1.0 / self.t)
        if violated:
            eta = 1.0 / (self.lam * self.t)
            if K == 1:
                coef[0] = eta if y == 1 else -eta
            else:
                for c in range(K):
                    coef[c] = 0.0
                coef[y] = eta
                coef[r] = -eta
            self.mdl.add_row(&self.X, i, self.xsq[i], coef, -1)
            self.n_added += 1
            if self.mdl.n_sv >= self.mdl.cap:
                self.maintain()
        if self.avg_start > 0 and self.t >= self.avg_start:
            self.mdl.accrue()         # w_{t+1} joins the average


def bsgd_run(X, double[::1] xsq, int[::1] codes, BudgetModel mdl, Maintainer mt,
             int budget, int merge_size, double lam, int epochs, long t_start,
             uint64_t seed, long avg_start=0, progress=None, long check_every=0,
             checkpoint=None, tuple team=(1, 0, 0), perm=None, bint visit=False):
    """Run `epochs` BSGD epochs on canonical CSR X (codes: 0/1 for binary with the model's
    n_coef == 1, else the class index), continuing the model in `mdl` and the global step
    count t_start.  avg_start > t_start: average the iterates from that global step on
    (read the result with mdl.averaged() / n_avg); 0: no averaging.  `progress`, if
    given, is called as progress(epochs_done, epochs, seconds) after every epoch.
    check_every > 0: after every check_every steps (counted from t_start) short of the
    end, the model is first merged down to `budget` SVs, then checkpoint(mdl) is called.
    team = (threads, krow_work, max_wait) (_team.pxd): threads > 1 runs a team, the
    same bits.  perm: the rows an epoch steps, in the order to continue from
    (EpochSteps.setup; a subset of X's rows: an epoch is their steps).  visit: this
    call is a share of a longer run (a partition's turn in pybudget.dask's ring): the
    final merge is left to the caller and avg_start may lie outside this call's steps.
    Returns a dict of counters and timings (n_avg: number of averaged iterates;
    team_jobs: the jobs the team ran; team_retired: the runs it left early)."""
    if (mdl.d != X.shape[1] or xsq.shape[0] != X.shape[0] or codes.shape[0] != X.shape[0]
            or X.shape[0] < 1 or not lam > 0):
        raise ValueError("bsgd_run: arrays do not match")
    cdef long n_steps = X.shape[0] if perm is None else len(perm)
    if avg_start < 0 or (avg_start != 0 and not visit
                         and not t_start < avg_start <= t_start + <long>epochs * n_steps):
        raise ValueError("bsgd_run: avg_start outside this run's steps")
    if np.min(codes) < 0 or np.max(codes) >= max(mdl.n_coef, 2):
        raise ValueError("bsgd_run: class codes out of range")
    if check_every > 0 and avg_start != 0:
        raise ValueError("bsgd_run: checkpoints need no averaging")
    cdef BsgdSteps st = BsgdSteps()
    st.setup(X, xsq, mdl, mt, merge_size, seed, team, perm)
    st.codes, st.lam, st.n_added = codes, lam, 0
    st.t, st.avg_start = t_start, avg_start
    # the buffer holds budget + M - 1 rows, and a step that fills it triggers maintenance:
    # one event merges M into one (M = 2: one overflow); removal/projection delete one SV
    st.coef = np.zeros(mdl.n_coef)
    seconds = run_epochs(st, epochs, budget, progress, check_every, checkpoint, not visit)
    return {"t": st.t, "n_added": st.n_added, "merge_time": st.merge_time,
            "time": seconds, "seed_state": st.rng, "team_jobs": st.team.n_jobs,
            "team_retired": st.team.retired,
            "n_avg": st.t - avg_start + 1 if avg_start > 0 else 0}
