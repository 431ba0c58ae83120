# Dual coordinate descent for L2-regularised linear SVMs (hinge and squared hinge),
# liblinear style, with three ways of choosing the next coordinate:
#   SEL_UNIFORM   a fresh random permutation of all variables every sweep
#   SEL_SHRINKING liblinear's hard shrinking and stopping rule (version >= 2.42)
#   SEL_AVSF      adaptive variable selection frequencies (Glasmachers & Dogan, Alg. 3-5)
#
# Everything here runs without the GIL on inputs validated in Python (pybudget/linear.py).
# Per-sample arrays: upper[i] is the box bound U_i (inf for squared hinge), diag[i] is D_ii
# (0 for hinge), cvec[i] the sample's effective C (for the primal objective).  With
# bias > 0 the model has one extra weight w[n_cols] for a constant feature of value bias.
from libc.math cimport exp, fabs, INFINITY
from libc.stdint cimport uint64_t
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy

from pybudget._csr cimport (CsrView, csr_view, csr_row, csr_prefetch_dense, csr_prefetch_row,
                            sparse_dot_dense, sparse_axpy, sparse_sqnorm)
from pybudget._rng cimport rng_shuffle, rng_uniform
from pybudget._runtime cimport interrupted

import sys

cdef enum:
    SEL_UNIFORM = 0
    SEL_SHRINKING = 1
    SEL_AVSF = 2

SELECTIONS = {"uniform": SEL_UNIFORM, "shrinking": SEL_SHRINKING, "avsf": SEL_AVSF}

# AVSF constants from the paper: preference range and change rate.
cdef double P_MIN = 1.0 / 20.0
cdef double P_MAX = 20.0
cdef double CHANGE_RATE = 0.2


cdef struct Problem:
    CsrView X
    const double* y
    const double* upper
    const double* diag
    const double* cvec
    double* qd          # ‖x_i‖² + bias² + D_ii
    double bias
    int n
    int d               # index of the bias weight (== X.n_cols)


cdef inline double margin(const Problem* P, const double* w, int i) noexcept nogil:
    cdef const double* xd
    cdef const int* xi
    cdef int nnz
    csr_row(&P.X, i, &xd, &xi, &nnz)
    return sparse_dot_dense(xd, xi, nnz, w) + P.bias * w[P.d]


cdef inline double qd_of(const Problem* P, int i) noexcept nogil:
    cdef const double* xd
    cdef const int* xi
    cdef int nnz
    csr_row(&P.X, i, &xd, &xi, &nnz)
    return sparse_sqnorm(xd, nnz) + P.bias * P.bias + P.diag[i]


cdef inline void prefetch_ahead(const Problem* P, const int* order, int s, int end,
                                const double* w) noexcept nogil:
    # Rows are visited in random order, so each step waits on memory: fetch the row
    # two steps ahead and the weights of the row one step ahead.
    if s + 2 < end:
        csr_prefetch_row(&P.X, order[s + 2])
    if s + 1 < end:
        csr_prefetch_dense(&P.X, order[s + 1], w)


cdef inline double projected(double G, double a, double U) noexcept nogil:
    if a <= 0.0:
        return G if G < 0.0 else 0.0
    if a >= U:
        return G if G > 0.0 else 0.0
    return G


cdef inline double step(const Problem* P, double* w, double* alpha, int i,
                        double G) noexcept nogil:
    """Exact minimisation along coordinate i given its gradient G; returns the move."""
    cdef double a = alpha[i], U = P.upper[i], q = P.qd[i], new
    cdef const double* xd
    cdef const int* xi
    cdef int nnz
    if q > 0.0:
        new = a - G / q
        if new < 0.0:
            new = 0.0
        elif new > U:
            new = U
    else:
        # All-zero row without bias: constant gradient, optimum at a bound.
        new = U if G < 0.0 else 0.0
    cdef double mu = new - a
    if mu != 0.0:
        alpha[i] = new
        csr_row(&P.X, i, &xd, &xi, &nnz)
        sparse_axpy(mu * P.y[i], xd, xi, nnz, w)
        w[P.d] += mu * P.y[i] * P.bias
    return mu


cdef double exact_pass(const Problem* P, const double* w, const double* alpha,
                       double* loss_sum, bint squared, double tol, int* order,
                       int* n_active) noexcept nogil:
    """Max |projected gradient| over all variables and the weighted primal loss.

    Also rewrites order as a permutation with the rows that hard shrinking would drop
    (at a bound, gradient pushing outwards by more than tol) at the end; their count
    is n - n_active.  That is the shrinking state a warm start carries over."""
    cdef double v = 0.0, G, pg, m, loss, s = 0.0
    cdef int i, front = 0, back = P.n - 1
    for i in range(P.n):
        m = P.y[i] * margin(P, w, i)
        G = m - 1.0 + P.diag[i] * alpha[i]
        pg = fabs(projected(G, alpha[i], P.upper[i]))
        if pg > v:
            v = pg
        if (alpha[i] <= 0.0 and G > tol) or (alpha[i] >= P.upper[i] and G < -tol):
            order[back] = i
            back -= 1
        else:
            order[front] = i
            front += 1
        loss = 1.0 - m
        if loss > 0.0:
            s += P.cvec[i] * (loss * loss if squared else loss)
    n_active[0] = front
    loss_sum[0] = s
    return v


cdef void make_schedule(uint64_t* rng, const double* p, double psum, int n,
                        int* sched) noexcept nogil:
    """AVSF Alg. 4: exactly n slots, variable i gets about n p_i / psum of them
    (stochastic rounding), then shuffled."""
    cdef double N = psum, m
    cdef int i, j = 0, _k, cnt
    for i in range(n):
        if i == n - 1:
            cnt = n - j
        else:
            m = p[i] * (n - j) / N if N > 0.0 else 0.0
            cnt = <int>m
            if rng_uniform(rng) < m - cnt:
                cnt += 1
            if cnt > n - j:
                cnt = n - j
        for _k in range(cnt):
            sched[j] = i
            j += 1
        N -= p[i]
    rng_shuffle(rng, sched, n)


def dcd_solve(X, const double[::1] y, const double[::1] upper, const double[::1] diag,
              const double[::1] cvec, double bias, double[::1] alpha, double[::1] w,
              double[::1] prefs, int[::1] perm, int n_active, double dref0,
              int selection, double tol, int max_iter, uint64_t seed, bint squared,
              int verbose=0):
    """Run dual CD in place on alpha and w, starting from the given state.

    w must equal sum_i alpha_i y_i x_i (plus the bias column) on entry.  Warm-start
    state, updated in place: prefs (AVSF preferences), perm (a permutation of the
    rows whose first n_active entries are the shrinking active set) and dref0 (AVSF
    reference gain; <= 0 means "learn it in the first sweep").  Returns a dict with
    n_iter (sweeps), n_steps (coordinate visits), converged, kkt_violation (exact,
    one extra pass), loss_sum (weighted primal loss), n_active and dref.
    """
    cdef Problem P
    P.X = csr_view(X.data, X.indices, X.indptr, X.shape[1])
    P.y = &y[0]
    P.upper = &upper[0]
    P.diag = &diag[0]
    P.cvec = &cvec[0]
    P.bias = bias
    P.n = y.shape[0]
    P.d = X.shape[1]
    cdef int n = P.n
    cdef double* wp = &w[0]
    cdef double* ap = &alpha[0]
    cdef double* learned = &prefs[0]

    cdef double* qd = <double*>malloc(n * sizeof(double))
    cdef int* sched = <int*>malloc(n * sizeof(int))  # AVSF's schedule
    # AVSF works on pp; learned (the caller's array) receives the preferences as they
    # were before the final reset-to-uniform, which is what a warm start wants.
    cdef double* pp = <double*>malloc(n * sizeof(double))
    if qd == NULL or sched == NULL or pp == NULL:
        free(qd)
        free(sched)
        free(pp)
        raise MemoryError()
    memcpy(pp, learned, n * sizeof(double))
    cdef bint saved = False
    cdef int* order = &perm[0]
    P.qd = qd

    cdef uint64_t rng = seed
    cdef int i, s, it = 0, active = n_active, final_active = n
    cdef long long steps = 0
    cdef double G, pg, mu, v, gain, href, psum = 0.0, dref = dref0, pnew
    cdef double pgmax_old = INFINITY, pgmin_old = -INFINITY, pgmax_new, pgmin_new
    cdef double kkt = INFINITY, loss_sum = 0.0
    cdef double log_range = 5.991464547107982  # log(P_MAX / P_MIN): caps exp()
    cdef bint converged = False, was_interrupted = False, canstop = True, stop_rule
    cdef bint first_sweep = dref0 <= 0.0

    with nogil:
        for i in range(n):
            qd[i] = qd_of(&P, i)
            psum += pp[i]

        while it < max_iter:
            stop_rule = False
            if selection == SEL_UNIFORM:
                rng_shuffle(&rng, order, n)
                v = 0.0
                for s in range(n):
                    i = order[s]
                    prefetch_ahead(&P, order, s, n, wp)
                    G = P.y[i] * margin(&P, wp, i) - 1.0 + P.diag[i] * ap[i]
                    pg = projected(G, ap[i], P.upper[i])
                    if fabs(pg) > v:
                        v = fabs(pg)
                    if fabs(pg) > 1e-12:
                        step(&P, wp, ap, i, G)
                steps += n
                stop_rule = v <= tol

            elif selection == SEL_SHRINKING:
                rng_shuffle(&rng, order, active)
                pgmax_new = -INFINITY
                pgmin_new = INFINITY
                s = 0
                while s < active:
                    i = order[s]
                    prefetch_ahead(&P, order, s, active, wp)
                    steps += 1
                    G = P.y[i] * margin(&P, wp, i) - 1.0 + P.diag[i] * ap[i]
                    pg = 0.0
                    if ap[i] <= 0.0:
                        if G > pgmax_old:
                            active -= 1
                            order[s] = order[active]
                            order[active] = i
                            continue
                        elif G < 0.0:
                            pg = G
                    elif ap[i] >= P.upper[i]:
                        if G < pgmin_old:
                            active -= 1
                            order[s] = order[active]
                            order[active] = i
                            continue
                        elif G > 0.0:
                            pg = G
                    else:
                        pg = G
                    if pg > pgmax_new:
                        pgmax_new = pg
                    if pg < pgmin_new:
                        pgmin_new = pg
                    if fabs(pg) > 1e-12:
                        step(&P, wp, ap, i, G)
                    s += 1
                if pgmax_new < pgmin_new:
                    # Nothing left in the active set (all shrunk or a warm start with an
                    # empty one): no violation seen, so the full set must be re-checked.
                    pgmax_new = 0.0
                    pgmin_new = 0.0
                if (pgmax_new - pgmin_new <= tol and fabs(pgmax_new) <= tol
                        and fabs(pgmin_new) <= tol):
                    if active == n:
                        stop_rule = True
                    else:
                        # Possibly wrong shrinking decisions: check everything again.
                        active = n
                        pgmax_old = INFINITY
                        pgmin_old = -INFINITY
                        it += 1
                        continue
                pgmax_old = pgmax_new if pgmax_new > 0.0 else INFINITY
                pgmin_old = pgmin_new if pgmin_new < 0.0 else -INFINITY

            else:  # SEL_AVSF
                make_schedule(&rng, pp, psum, n, sched)
                v = 0.0
                for s in range(n):
                    i = sched[s]
                    prefetch_ahead(&P, sched, s, n, wp)
                    G = P.y[i] * margin(&P, wp, i) - 1.0 + P.diag[i] * ap[i]
                    pg = fabs(projected(G, ap[i], P.upper[i]))
                    if pg > v:
                        v = pg
                    mu = step(&P, wp, ap, i, G) if pg > 1e-12 else 0.0
                    # Exact dual gain of the step (maximisation gradient is -G).
                    gain = mu * (-G - 0.5 * mu * qd[i])
                    if first_sweep:
                        dref += gain / n
                    else:
                        if dref > 0.0:
                            href = CHANGE_RATE * (gain / dref - 1.0)
                            if href > log_range:
                                href = log_range
                            pnew = pp[i] * exp(href)
                            if pnew < P_MIN:
                                pnew = P_MIN
                            elif pnew > P_MAX:
                                pnew = P_MAX
                            psum += pnew - pp[i]
                            pp[i] = pnew
                        dref = (1.0 - 1.0 / n) * dref + gain / n
                steps += n
                first_sweep = False
                if v < tol:
                    if canstop:
                        stop_rule = True
                    else:
                        # Reset preferences: the next sweep is uniform and must confirm.
                        memcpy(learned, pp, n * sizeof(double))
                        saved = True
                        for i in range(n):
                            pp[i] = 1.0
                        psum = n
                        canstop = True
                else:
                    canstop = False
                    saved = False

            it += 1
            if verbose >= 2:
                with gil:
                    shown = v if selection != SEL_SHRINKING else pgmax_new - pgmin_new
                    sys.stderr.write(f"sweep {it}: violation {shown:.3g}, steps {steps}, "
                                     f"active {active}, pref sum {psum:.4g}, "
                                     f"canstop {canstop}\n")
            if stop_rule:
                kkt = exact_pass(&P, wp, ap, &loss_sum, squared, tol, order, &final_active)
                if kkt <= tol:
                    converged = True
                    break
                # The in-sweep check was optimistic (w moved after a variable was seen).
                canstop = False
                active = n
                pgmax_old = INFINITY
                pgmin_old = -INFINITY
            if interrupted():
                was_interrupted = True
                break

        if not converged:
            kkt = exact_pass(&P, wp, ap, &loss_sum, squared, tol, order, &final_active)
            # max_iter reached before the strategy's own rule fired: the exact pass may
            # still show the tolerance met, and then the run did converge.
            converged = kkt <= tol and not was_interrupted

    if not saved:
        memcpy(learned, pp, n * sizeof(double))
    free(qd)
    free(sched)
    free(pp)
    if was_interrupted:
        raise KeyboardInterrupt
    return {"n_iter": it, "n_steps": steps, "converged": bool(converged),
            "n_active": final_active, "dref": dref,
            "kkt_violation": kkt, "loss_sum": loss_sum}
