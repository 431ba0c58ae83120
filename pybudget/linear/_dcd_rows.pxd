# What every dual coordinate-descent problem shares: its data (DualData), reading a
# row with the optional bias feature, and the bookkeeping of liblinear-style
# shrinking.  A problem (see _dcd_svm.pxd, _dcd_svr.pxd) is a struct holding a DualData
# `r` plus its own constants, and a set of inline hooks; _dcd.pxi writes each
# selection strategy once over them.
from libc.math cimport fabs, fmax, fmin, INFINITY, isinf

from pybudget._core._csr cimport (CsrView, csr_prefetch_dense, csr_prefetch_row, csr_row_dot,
                                  csr_row_sqnorm)

# What a problem's shrink_visit hook tells the hard-shrinking strategy.
cdef enum:
    VISIT_DROP = -1      # shrink the variable out of the active set
    VISIT_SKIP = 0       # keep it, no step needed
    VISIT_STEP = 1       # keep it and take the one-variable step


cdef struct DualData:
    CsrView X
    const double* y        # labels (+-1) or regression targets
    const double* upper    # box bound per variable (inf: none)
    const double* diag     # D_ii, the diagonal the L2 losses add to Q
    const double* cvec     # the sample's effective C (for the primal objective)
    double bias            # value of the constant feature (0: none)
    int n
    int d                  # index of the bias weight (== X.n_cols)
    bint squared           # squared (L2) loss


cdef struct Shrink:
    # Each problem reads and writes the fields its own rule needs (liblinear keeps
    # the extremes of the projected gradient seen in the previous and current sweep).
    double max_old
    double min_old
    double max_new
    double min_new
    double sum_new      # the sweep's L1 norm of the violations (SVR's liblinear rule)


cdef inline double row_margin(const CsrView* X, double bias, int d, const double* w,
                              int i) noexcept nogil:
    """w . x_i, plus bias * w[d] for the constant feature."""
    return csr_row_dot(X, i, w) + bias * w[d]


cdef inline double row_sqnorm(const CsrView* X, double bias, int i) noexcept nogil:
    """||x_i||^2 + bias^2."""
    return csr_row_sqnorm(X, i) + bias * bias


cdef inline double dual_qd(const DualData* r, int i) noexcept nogil:
    """Curvature of variable i's one-variable subproblem: ||x_i||^2 + bias^2 + D_ii."""
    return row_sqnorm(&r.X, r.bias, i) + r.diag[i]


cdef inline void prefetch_ahead(const CsrView* X, const int* order, int s, int end,
                                const double* w, int stride) noexcept nogil:
    # Rows are visited in random order, so each step waits on memory: fetch the row
    # two steps ahead and the weights of the row one step ahead (stride weights per
    # feature: 1, or K for a feature-major K-class model).
    if s + 2 < end:
        csr_prefetch_row(X, order[s + 2])
    if s + 1 < end:
        csr_prefetch_dense(X, order[s + 1], w, stride)


# ---- pair steps (selection "pairs", for a dominant bias column) ------------------------
#
# The SVM and SVR duals share one form in z_i = y_i alpha_i (SVM) or beta_i (SVR):
#   min_z 1/2 |w|^2 + 1/2 sum D_ii z_i^2 - sum y_i z_i + eps sum |z_i|,  lo_i <= z_i <= hi_i,
# with w = sum_i z_i [x_i, bias] (eps = 0 for the SVM).  A pair step moves z_u += t,
# z_d -= t: sum_i z_i, and so the bias weight, stays fixed, the bias cancels out of the
# directional derivative and the curvature is |x_u - x_d|^2 + D_uu + D_dd, not ~bias^2.
# A coordinate step is the same move against a free partner of no cost whose gradient
# is minus the bias term (FREE_PARTNER): g_u - g_d is then u's full gradient.

cdef struct PairVar:
    double z            # the variable in the shared form
    double lo           # its box
    double hi
    double g            # smooth gradient without the bias term: w.x_i - y_i + D_ii z_i
    double eps          # weight of its |z| term


cdef inline PairVar free_partner(double bias_term) noexcept nogil:
    cdef PairVar v
    v.z, v.lo, v.hi, v.g, v.eps = 0.0, -INFINITY, INFINITY, -bias_term, 0.0
    return v


cdef inline double pair_up(const PairVar* v) noexcept nogil:
    """Derivative of the objective when z increases (z < hi)."""
    return v.g + (v.eps if v.z >= 0.0 else -v.eps)


cdef inline double pair_down(const PairVar* v) noexcept nogil:
    """Minus the derivative when z decreases (z > lo): a pair (u, d) descends when
    pair_up(u) < pair_down(d)."""
    return v.g + (v.eps if v.z > 0.0 else -v.eps)


cdef inline double pair_phi(const PairVar* u, const PairVar* d, double g, double q,
                            double t) noexcept nogil:
    """Change of the objective when z_u += t, z_d -= t."""
    return (g * t + 0.5 * q * t * t + u.eps * (fabs(u.z + t) - fabs(u.z))
            + d.eps * (fabs(d.z - t) - fabs(d.z)))


cdef inline double pair_move(const PairVar* u, const PairVar* d, double q) noexcept nogil:
    """The t minimising pair_phi with both variables in their boxes (0 if none decreases
    it).  pair_phi is convex, quadratic between its kinks at -z_u and z_d: its minimiser
    is an end of the interval, a kink or the stationary point of one of the (at most
    three) pieces, so trying each finds it exactly."""
    cdef double g = u.g - d.g
    cdef double tl = fmax(u.lo - u.z, d.z - d.hi), th = fmin(u.hi - u.z, d.z - d.lo)
    cdef double k1 = fmin(-u.z, d.z), k2 = fmax(-u.z, d.z), m, slope
    cdef double cand[7]
    cdef double mids[3]
    cdef double best = 0.0, best_t = 0.0, val
    cdef int c, nc = 4
    if tl > 0.0:    # (round-off: z is in its box, so 0 is feasible)
        tl = 0.0
    if th < 0.0:
        th = 0.0
    cand[0], cand[1], cand[2], cand[3] = tl, th, fmin(fmax(k1, tl), th), fmin(fmax(k2, tl), th)
    if q > 0.0:
        mids[0], mids[1], mids[2] = k1 - 1.0, 0.5 * (k1 + k2), k2 + 1.0
        for c in range(3):
            m = mids[c]
            slope = (u.eps * (1.0 if u.z + m > 0.0 else -1.0)
                     - d.eps * (1.0 if d.z - m > 0.0 else -1.0))
            cand[nc] = fmin(fmax(-(g + slope) / q, tl), th)
            nc += 1
    for c in range(nc):
        if isinf(cand[c]):      # an end of an unbounded box
            continue
        val = pair_phi(u, d, g, q, cand[c])
        if val < best:
            best, best_t = val, cand[c]
    return best_t


cdef inline double pair_target(const PairVar* v, double t) noexcept nogil:
    """z + t, exactly on the bound or the kink (0) where t reaches one."""
    if t >= v.hi - v.z:
        return v.hi
    if t <= v.lo - v.z:
        return v.lo
    if t == -v.z:
        return 0.0
    return v.z + t
