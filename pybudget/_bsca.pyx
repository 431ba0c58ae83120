# BSCA (Qaadan, Schueler & Glasmachers): stochastic coordinate ascent on the kernel dual
#   max_a  sum_i a_i - 1/2 a^T Q a,  0 <= a_i <= C,  Q_ij = y_i y_j k(x_i, x_j),
# with the budgeted model standing in for w = sum_i a_i y_i phi(x_i).  Binary only (the
# Python layer runs one-vs-rest).  Q_ii = k(x_i, x_i) = 1 for the Gaussian kernel, so
# the exact coordinate step is delta = clip(a_i + 1 - y_i f(x_i), 0, C) - a_i; y_i delta
# is added at x_i, in the existing slot while x_i is still an unmerged SV.  A full
# permutation per epoch; a fixed number of epochs (no KKT stopping, see the paper).
from libc.stdint cimport uint64_t

from pybudget._csr cimport CsrView, csr_view, csr_row
from pybudget._rng cimport rng_shuffle
from pybudget._budget cimport BudgetModel
from pybudget._merge cimport Maintainer
from pybudget._runtime cimport interrupted, now, segment_end

import numpy as np


cdef void bsca_steps(const CsrView* X, const double* xsq, const double* y, double C,
                     double* alpha, int* perm, int s_begin, int s_end, BudgetModel mdl,
                     Maintainer mt, int M, uint64_t* rng, double* krow, long* n_updates,
                     double* merge_time, bint* stop) noexcept nogil:
    # steps s_begin .. s_end - 1 of one epoch; a new epoch (s_begin == 0) reshuffles
    cdef int s, i, j, nnz, n = X.n_rows
    cdef const double* xd
    cdef const int* xi
    cdef double f, a, delta, coef, t0
    if s_begin == 0:
        rng_shuffle(rng, perm, n)
    for s in range(s_begin, s_end):
        if (s & 1023) == 1023 and interrupted():
            stop[0] = True
            return
        i = perm[s]
        csr_row(X, i, &xd, &xi, &nnz)
        mdl.kernel_row_sparse(xd, xi, nnz, xsq[i], krow)
        mdl.decision(krow, &f)
        a = alpha[i] + 1.0 - y[i] * f
        if a < 0.0:
            a = 0.0
        elif a > C:
            a = C
        delta = a - alpha[i]
        if delta == 0.0:
            continue
        alpha[i] = a
        n_updates[0] += 1
        coef = y[i] * delta
        j = mdl.slot_of[i]
        if j >= 0:
            mdl.beta[j] += coef / mdl.scale
        else:
            mdl.add_sparse(xd, xi, nnz, xsq[i], &coef, i)
            if mdl.n_sv >= mdl.cap:
                t0 = now()
                mt.run(mdl, M)
                merge_time[0] += now() - t0


def bsca_run(X, double[::1] xsq, double[::1] y, double C, double[::1] alpha,
             BudgetModel mdl, Maintainer mt, int budget, int merge_size, int epochs,
             uint64_t seed, progress=None, long check_every=0, checkpoint=None):
    """`epochs` BSCA epochs on canonical CSR X with labels y in {-1, +1}, dual variables
    alpha (updated in place) and a binary model `mdl` created with n_src = n_rows.
    `progress`, if given, is called as progress(epochs_done, epochs, seconds).
    check_every > 0: after every check_every steps short of the end, the model is merged
    down to `budget` SVs and checkpoint(mdl) is called."""
    if (mdl.n_coef != 1 or mdl.n_src != X.shape[0] or mdl.d != X.shape[1]
            or xsq.shape[0] != X.shape[0] or y.shape[0] != X.shape[0]
            or alpha.shape[0] != X.shape[0] or X.shape[0] < 1):
        raise ValueError("bsca_run: arrays do not match")
    cdef CsrView V = csr_view(X.data, X.indices, X.indptr, X.shape[1])
    if check_every < 0 or (check_every > 0 and checkpoint is None):
        raise ValueError("bsca_run: checkpoints need a callback")
    cdef int n = X.shape[0], ep, M = merge_size, s, s_end
    cdef long t = 0, T = <long>epochs * X.shape[0]
    cdef uint64_t rng = seed
    cdef int[::1] perm = np.arange(n, dtype=np.int32)
    cdef double[::1] krow = np.zeros(mdl.cap + 1)
    cdef long n_updates = 0
    cdef double merge_time = 0.0, t0 = now(), t1
    cdef bint stop = False
    for ep in range(epochs):
        s = 0
        while s < n:
            s_end = segment_end(t, check_every, s, n)
            with nogil:
                bsca_steps(&V, &xsq[0], &y[0], C, &alpha[0], &perm[0], s, s_end, mdl, mt, M,
                           &rng, &krow[0], &n_updates, &merge_time, &stop)
            if stop:
                raise KeyboardInterrupt
            t += s_end - s
            s = s_end
            if check_every > 0 and t % check_every == 0 and t < T:
                t1 = now()
                with nogil:
                    mt.down_to(mdl, budget, M)
                merge_time += now() - t1
                checkpoint(mdl)
        if progress is not None:
            progress(ep + 1, epochs, now() - t0)
    with nogil:
        t1 = now()
        mt.down_to(mdl, budget, M)
        merge_time += now() - t1
    return {"n_updates": n_updates, "merge_time": merge_time, "time": now() - t0}
