# BSGD (Wang, Crammer & Vucetic): Pegasos on the kernel primal with a budget.
#   lambda = 1/(n C), eta_t = 1/(lambda t), t global over epochs and partial_fit calls.
#   Step t on (x, y): margin with the current model; every coefficient *= (1 - 1/t)
#   (lazily, through the model's scale); on a margin violation add x with coefficient
#   y eta_t (binary) or +eta_t for class y and -eta_t for the best wrong class r
#   (multi-class, BSGD paper section 5); maintenance when the buffer is full.  No bias.
# Optional iterate averaging (off by default; the paper outputs the last iterate): from
#   global step avg_start on, the returned model is the mean of the iterates w_{t+1},
#   t = avg_start .. T, kept per SV in the buffer's `acc` (see _budget.pxd).
# Inputs are validated in pybudget/kernel.py; bsgd_run only checks that the arrays it is
# handed fit together (what a direct caller, e.g. a test or bench, could get wrong).
from libc.stdint cimport uint64_t

from pybudget._csr cimport CsrView, csr_view, csr_row
from pybudget._rng cimport rng_shuffle
from pybudget._budget cimport BudgetModel
from pybudget._merge cimport Maintainer
from pybudget._runtime cimport interrupted, now, segment_end

import numpy as np


cdef struct EpochStats:
    long n_added
    double merge_time
    bint interrupted


cdef void bsgd_steps(const CsrView* X, const double* xsq, const int* codes, int* perm,
                     int s_begin, int s_end,
                     BudgetModel mdl, Maintainer mt, int trigger, int M, double lam,
                     long avg_start, long* t, uint64_t* rng, double* krow, double* f, double* coef,
                     EpochStats* st) noexcept nogil:
    # steps s_begin .. s_end - 1 of one epoch; a new epoch (s_begin == 0) reshuffles
    cdef int s, i, c, r, nnz, n = X.n_rows, K = mdl.n_coef, y
    cdef const double* xd
    cdef const int* xi
    cdef double eta, yf, best, t0
    cdef bint violated
    if s_begin == 0:
        rng_shuffle(rng, perm, n)
    for s in range(s_begin, s_end):
        if (s & 1023) == 1023 and interrupted():
            st.interrupted = True
            return
        i = perm[s]
        t[0] += 1
        csr_row(X, i, &xd, &xi, &nnz)
        mdl.kernel_row_sparse(xd, xi, nnz, xsq[i], krow)
        mdl.decision(krow, f)
        y = codes[i]
        if K == 1:
            yf = f[0] if y == 1 else -f[0]
            violated = yf < 1.0
        else:
            r = -1
            best = 0.0
            for c in range(K):
                if c != y and (r < 0 or f[c] > best):
                    best = f[c]
                    r = c
            violated = 1.0 + best - f[y] > 0.0
        if avg_start > 0 and t[0] == avg_start:
            mdl.begin_average()
        mdl.scale_by(1.0 - 1.0 / t[0])
        if violated:
            eta = 1.0 / (lam * t[0])
            if K == 1:
                coef[0] = eta if y == 1 else -eta
            else:
                for c in range(K):
                    coef[c] = 0.0
                coef[y] = eta
                coef[r] = -eta
            mdl.add_sparse(xd, xi, nnz, xsq[i], coef, -1)
            st.n_added += 1
            if mdl.n_sv >= trigger:
                t0 = now()
                mt.run(mdl, M)
                st.merge_time += now() - t0
        if avg_start > 0 and t[0] >= avg_start:
            mdl.accrue()         # w_{t+1} joins the average


def bsgd_run(X, double[::1] xsq, int[::1] codes, BudgetModel mdl, Maintainer mt,
             int budget, int merge_size, double lam, int epochs, long t_start,
             uint64_t seed, long avg_start=0, progress=None, long check_every=0,
             checkpoint=None):
    """Run `epochs` BSGD epochs on canonical CSR X (codes: 0/1 for binary with the model's
    n_coef == 1, else the class index), continuing the model in `mdl` and the global step
    count t_start.  avg_start > t_start: average the iterates from that global step on
    (read the result with mdl.averaged() / n_avg); 0: no averaging.  `progress`, if
    given, is called as progress(epochs_done, epochs, seconds) after every epoch.
    check_every > 0: after every check_every steps (counted from t_start) short of the
    end, the model is first merged down to `budget` SVs, then checkpoint(mdl) is called.
    Returns a dict of counters and timings (n_avg: number of averaged iterates)."""
    if (mdl.d != X.shape[1] or xsq.shape[0] != X.shape[0] or codes.shape[0] != X.shape[0]
            or X.shape[0] < 1 or not lam > 0):
        raise ValueError("bsgd_run: arrays do not match")
    if avg_start != 0 and not t_start < avg_start <= t_start + <long>epochs * X.shape[0]:
        raise ValueError("bsgd_run: avg_start outside this run's steps")
    if np.min(codes) < 0 or np.max(codes) >= max(mdl.n_coef, 2):
        raise ValueError("bsgd_run: class codes out of range")
    cdef CsrView V = csr_view(X.data, X.indices, X.indptr, X.shape[1])
    cdef int n = X.shape[0], ep, s, s_end
    cdef long t = t_start, T = t_start + <long>epochs * X.shape[0]
    cdef uint64_t rng = seed
    cdef int[::1] perm = np.arange(n, dtype=np.int32)
    cdef double[::1] krow = np.zeros(mdl.cap + 1)
    cdef double[::1] f = np.zeros(mdl.n_coef)
    cdef double[::1] coef = np.zeros(mdl.n_coef)
    # the buffer holds budget + M - 1 rows; one event merges M into one (M = 2: one
    # overflow), removal/projection delete one SV per overflow
    cdef int trigger = mdl.cap
    cdef int M = merge_size
    cdef EpochStats st
    cdef double t0 = now(), t1
    st.n_added = 0
    st.merge_time = 0.0
    st.interrupted = False
    if check_every < 0 or (check_every > 0 and (checkpoint is None or avg_start != 0)):
        raise ValueError("bsgd_run: checkpoints need a callback and no averaging")
    for ep in range(epochs):
        s = 0
        while s < n:
            s_end = segment_end(t - t_start, check_every, s, n)
            with nogil:
                bsgd_steps(&V, &xsq[0], &codes[0], &perm[0], s, s_end, mdl, mt, trigger, M,
                           lam, avg_start, &t, &rng, &krow[0], &f[0], &coef[0], &st)
            if st.interrupted:
                raise KeyboardInterrupt
            s = s_end
            if check_every > 0 and (t - t_start) % check_every == 0 and t < T:
                t1 = now()
                with nogil:
                    mt.down_to(mdl, budget, M)
                st.merge_time += now() - t1
                checkpoint(mdl)
        if progress is not None:
            progress(ep + 1, epochs, now() - t0)
    with nogil:
        t1 = now()
        mt.down_to(mdl, budget, M)
        st.merge_time += now() - t1
    return {"t": t, "n_added": st.n_added, "merge_time": st.merge_time,
            "time": now() - t0, "seed_state": rng,
            "n_avg": t - avg_start + 1 if avg_start > 0 else 0}
