# L2-regularised support vector regression dual (liblinear -s 13 epsilon-insensitive,
# -s 12 squared), as a dual CD problem (Ho & Lin 2012):
#   min_b  1/2 b'Qb + 1/2 sum D_ii b_i^2 - sum y_i b_i + eps sum |b_i|,  -U_i <= b_i <= U_i,
# Q_ij = x_i.x_j, w = sum b_i x_i.  upper[i] is U_i (inf for the squared loss), diag[i]
# is D_ii (0 for the plain loss).  The one-variable step is a soft-thresholded Newton
# step; liblinear's shrinking drops variables at 0 or at a bound.
from libc.math cimport fabs, INFINITY

from pybudget._core._csr cimport csr_row_axpy
from pybudget.linear._dcd_rows cimport (DualData, PairVar, Shrink, VISIT_DROP, VISIT_STEP,
                                        row_margin)


cdef struct SvrProblem:
    DualData r
    double eps          # half-width of the insensitive zone


cdef inline double svr_gradient(const SvrProblem* P, const double* w, const double* b,
                                int i) noexcept nogil:
    """Gradient of the smooth part; the eps|b_i| term adds +-eps (see svr_violation)."""
    return row_margin(&P.r.X, P.r.bias, P.r.d, w, i) - P.r.y[i] + P.r.diag[i] * b[i]


cdef inline double svr_violation(const SvrProblem* P, const double* b, int i,
                                 double G) noexcept nogil:
    """Distance of 0 from the subdifferential of the objective in b_i (within the box)."""
    cdef double gp = G + P.eps, gn = G - P.eps, U = P.r.upper[i]
    if b[i] == 0.0:
        if gp < 0.0:
            return -gp
        if gn > 0.0:
            return gn
        return 0.0
    if b[i] >= U:
        return gp if gp > 0.0 else 0.0
    if b[i] <= -U:
        return -gn if gn < 0.0 else 0.0
    return fabs(gp) if b[i] > 0.0 else fabs(gn)


cdef inline double svr_step(const SvrProblem* P, double* w, double* b, int i, double G,
                            double q) noexcept nogil:
    """Exact minimiser of G d + q/2 d^2 + eps |b_i + d| over the box; returns the move."""
    cdef double old = b[i], U = P.r.upper[i], gp = G + P.eps, gn = G - P.eps, new
    if q > 0.0:
        if gp < q * old:
            new = old - gp / q
        elif gn > q * old:
            new = old - gn / q
        else:
            new = 0.0
        # (liblinear skips tiny moves; one that lands on the kink is taken, or a b_i
        # left within 1e-12 of 0, e.g. by a team's damped combine, would keep the
        # violation |G -+ eps| of the wrong side for ever)
        if fabs(new - old) < 1e-12 and new != 0.0:
            return 0.0
        if new > U:
            new = U
        elif new < -U:
            new = -U
    else:
        # All-zero row without bias and no diagonal: the objective is linear in b_i.
        new = U if gp < 0.0 else (-U if gn > 0.0 else 0.0)
    cdef double mu = new - old
    if mu != 0.0:
        b[i] = new
        csr_row_axpy(&P.r.X, i, mu, w)
        w[P.r.d] += mu * P.r.bias
    return mu


cdef inline double svr_gain(const SvrProblem* P, const double* b, int i, double G,
                            double mu, double q) noexcept nogil:
    """Exact decrease of the dual objective by the move mu (b already updated)."""
    return -(G * mu + 0.5 * q * mu * mu + P.eps * (fabs(b[i]) - fabs(b[i] - mu)))


cdef inline void svr_pair_var(const SvrProblem* P, const double* b, int i, double G,
                              double bias_term, PairVar* v) noexcept nogil:
    """Variable i in the pair steps' form (_dcd_rows.pxd): z_i = b_i as it is."""
    v.z = b[i]
    v.lo = -P.r.upper[i]
    v.hi = P.r.upper[i]
    v.g = G - bias_term
    v.eps = P.eps


cdef inline void svr_pair_set(const SvrProblem* P, double* b, int i, double z) noexcept nogil:
    b[i] = z


# liblinear's rule (solve_l2r_l1l2_svr) keeps one threshold, the previous sweep's largest
# violation.  By default we stop on the absolute largest violation <= tol like the other
# problems; tol_rule="liblinear" stops as liblinear does, on the sweep's sum of the
# violations of the visited (active) variables, sum_new, relative to the first sweep's
# (its Gnorm1_new <= eps Gnorm1_init; the test is in _dcd.pxi, l1_met).
cdef inline void svr_shrink_begin(Shrink* sh) noexcept nogil:
    sh.max_new = 0.0
    sh.sum_new = 0.0


cdef inline int svr_shrink_visit(const SvrProblem* P, const double* b, int i, double G,
                                 Shrink* sh) noexcept nogil:
    cdef double gp = G + P.eps, gn = G - P.eps, U = P.r.upper[i], v = 0.0
    if b[i] == 0.0:
        if gp < 0.0:
            v = -gp
        elif gn > 0.0:
            v = gn
        elif gp > sh.max_old and gn < -sh.max_old:
            return VISIT_DROP
    elif b[i] >= U:
        if gp > 0.0:
            v = gp
        elif gp < -sh.max_old:
            return VISIT_DROP
    elif b[i] <= -U:
        if gn < 0.0:
            v = -gn
        elif gn > sh.max_old:
            return VISIT_DROP
    elif b[i] > 0.0:
        v = fabs(gp)
    else:
        v = fabs(gn)
    if v > sh.max_new:
        sh.max_new = v
    sh.sum_new += v
    return VISIT_STEP


cdef inline bint svr_shrink_met(Shrink* sh, double tol) noexcept nogil:
    return sh.max_new <= tol


cdef inline void svr_shrink_roll(Shrink* sh) noexcept nogil:
    sh.max_old = sh.max_new


cdef inline void svr_shrink_reset(Shrink* sh) noexcept nogil:
    sh.max_old = INFINITY


cdef inline double svr_shrink_shown(const Shrink* sh) noexcept nogil:
    return sh.max_new


cdef inline double svr_final(const SvrProblem* P, const double* w, const double* b, int i,
                             double tol, bint* drop, double* loss_sum) noexcept nogil:
    """As svm_final: exact violation, the shrinking decision at tol, the primal loss."""
    cdef double m = row_margin(&P.r.X, P.r.bias, P.r.d, w, i)
    cdef double G = m - P.r.y[i] + P.r.diag[i] * b[i]
    cdef double gp = G + P.eps, gn = G - P.eps, U = P.r.upper[i]
    drop[0] = ((b[i] == 0.0 and gp > tol and gn < -tol) or (b[i] >= U and gp < -tol)
               or (b[i] <= -U and gn > tol))
    loss_sum[0] += svr_loss(P, i, m)
    return svr_violation(P, b, i, G)


cdef inline double svr_loss(const SvrProblem* P, int i, double m) noexcept nogil:
    """Sample i's weighted primal loss at the prediction m = w.x_i."""
    cdef double loss = fabs(m - P.r.y[i]) - P.eps
    if loss <= 0.0:
        return 0.0
    return P.r.cvec[i] * (loss * loss if P.r.squared else loss)
