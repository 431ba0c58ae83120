# L2-regularised logistic regression dual (liblinear -s 7; Yu, Huang & Lin 2011) as a dual
# CD problem:
#   min_a  1/2 a'Qa + sum_i [a_i log a_i + (C_i - a_i) log(C_i - a_i)],  0 < a_i < C_i,
# Q_ij = y_i y_j x_i.x_j, w = sum a_i y_i x_i.  upper[i] is C_i, diag is unused (0).
# The entropy keeps every a_i strictly inside the box, so nothing is ever at a bound:
# the violation is |gradient| and "shrinking" drops nothing.  The one-variable step
# has no closed form; it is liblinear's bounded Newton method.
#
# C_i - a_i is stored next to a_i (comp) because near C_i it cannot be recovered from
# a_i: the step works on whichever of the two is smaller, and both are written back.
from libc.math cimport exp, fabs, fmax, log, log1p

from pybudget._core._csr cimport csr_row_axpy
from pybudget.linear._dcd_rows cimport DualData, Shrink, VISIT_STEP, row_margin


cdef struct LrInner:
    # Mutable state of the inner solver, behind a pointer so the hooks (which see a
    # const problem) can update it.
    double eps          # inner tolerance on |g'(z)|
    double eps_min      # its floor, min(1e-8, tol)
    long long newton    # Newton iterations this sweep (drives the eps schedule)
    double old_a        # the pair before the last step (for the exact gain)
    double old_c
    int max_inner


cdef struct LrProblem:
    DualData r
    double* comp        # C_i - a_i
    LrInner* inner


cdef inline double lr_gradient(const LrProblem* P, const double* w, const double* a,
                               int i) noexcept nogil:
    """Gradient of the quadratic part, y_i w.x_i; the entropy adds log(a_i/(C_i-a_i))."""
    return P.r.y[i] * row_margin(&P.r.X, P.r.bias, P.r.d, w, i)


cdef inline double lr_violation(const LrProblem* P, const double* a, int i,
                                double G) noexcept nogil:
    return fabs(G + log(a[i] / P.comp[i]))


cdef inline double lr_step(const LrProblem* P, double* w, double* a, int i, double G,
                           double q) noexcept nogil:
    """Newton on g(z) = (z - z0) s G + q/2 (z - z0)^2 + z log z + (C - z) log(C - z) for
    z = a_i (s = 1) or z = C_i - a_i (s = -1), whichever holds the minimiser in (0, C/2]
    (so C - z loses no precision); returns the move of a_i."""
    cdef double C = P.r.upper[i], ai = a[i], ci = P.comp[i]
    cdef double z0, z, sg, gp, gpp, tmpz, mu
    cdef int it = 0
    # g'(C/2) in a_i decides the side: >= 0 puts the minimiser at or below C/2.
    if 0.5 * q * (ci - ai) + G < 0.0:
        sg = -1.0
        z0 = ci
    else:
        sg = 1.0
        z0 = ai
    z = z0
    if C - z < 0.5 * C:
        z = 0.1 * z     # start below C/2, where the minimiser is
    gp = q * (z - z0) + sg * G + log(z / (C - z))
    while it <= P.inner.max_inner:
        if fabs(gp) < P.inner.eps:
            break
        gpp = q + C / ((C - z) * z)
        tmpz = z - gp / gpp
        if tmpz <= 0.0:
            z *= 0.1                    # liblinear's eta: stay strictly above 0
        elif tmpz >= C:
            z = 0.5 * (z + C)           # (not reached in theory) stay strictly below C
        else:
            z = tmpz
        gp = q * (z - z0) + sg * G + log(z / (C - z))
        it += 1
    P.inner.newton += it
    if it == 0:
        return 0.0
    P.inner.old_a = ai
    P.inner.old_c = ci
    if sg > 0.0:
        a[i] = z
        P.comp[i] = C - z
    else:
        P.comp[i] = z
        a[i] = C - z
    mu = sg * (z - z0)
    if mu != 0.0:
        csr_row_axpy(&P.r.X, i, mu * P.r.y[i], w)
        w[P.r.d] += mu * P.r.y[i] * P.r.bias
    return mu


cdef inline double lr_gain(const LrProblem* P, const double* a, int i, double G, double mu,
                           double q) noexcept nogil:
    """Exact decrease g(a_old) - g(a_new) of the subproblem by the move mu (a updated).

    With d = mu, a' = a + d, c' = c - d:  a' log a' - a log a = d log a' + a log1p(d/a)
    and c' log c' - c log c = -d log c' + c log1p(-d/c), which stay accurate for tiny
    moves and for a or c near 0."""
    if mu == 0.0:
        return 0.0
    cdef double a0 = P.inner.old_a, c0 = P.inner.old_c
    cdef double ent = (mu * log(a[i] / P.comp[i]) + a0 * log1p(mu / a0)
                       + c0 * log1p(-mu / c0))
    return -(G * mu + 0.5 * q * mu * mu) - ent


# liblinear's outer loop: no shrinking, stop when the sweep's largest |gradient| is at
# most tol; after a sweep that needed few Newton iterations (<= n/10 in all) the inner
# tolerance tightens tenfold, down to eps_min.
cdef inline void lr_shrink_begin(const LrProblem* P, Shrink* sh) noexcept nogil:
    sh.max_new = 0.0
    P.inner.newton = 0


cdef inline int lr_shrink_visit(const LrProblem* P, const double* a, int i, double G,
                                Shrink* sh) noexcept nogil:
    cdef double v = lr_violation(P, a, i, G)
    if v > sh.max_new:
        sh.max_new = v
    return VISIT_STEP


cdef inline bint lr_shrink_met(const Shrink* sh, double tol) noexcept nogil:
    return sh.max_new <= tol


cdef inline void lr_shrink_roll(const LrProblem* P, Shrink* sh) noexcept nogil:
    if 10 * P.inner.newton <= P.r.n:
        P.inner.eps = fmax(P.inner.eps_min, 0.1 * P.inner.eps)


cdef inline void lr_shrink_reset(Shrink* sh) noexcept nogil:
    pass


cdef inline double lr_shrink_shown(const Shrink* sh) noexcept nogil:
    return sh.max_new


cdef inline double lr_final(const LrProblem* P, const double* w, const double* a, int i,
                            double tol, bint* drop, double* loss_sum) noexcept nogil:
    """Exact violation; never dropped; adds C_i log(1 + exp(-y_i w.x_i)), computed as
    log1p(exp(-|m|)) + max(-m, 0) so it neither overflows nor loses small losses."""
    cdef double m = P.r.y[i] * row_margin(&P.r.X, P.r.bias, P.r.d, w, i)
    drop[0] = False
    loss_sum[0] += lr_loss(P, i, m)
    return lr_violation(P, a, i, m)


cdef inline double lr_loss(const LrProblem* P, int i, double m) noexcept nogil:
    """Sample i's weighted primal loss at margin m = y_i w.x_i (its gradient G is m)."""
    return P.r.cvec[i] * (log1p(exp(-fabs(m))) + (-m if m < 0.0 else 0.0))
