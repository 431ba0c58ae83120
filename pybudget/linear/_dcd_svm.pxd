# The L2-regularised SVM dual (liblinear -s 3 hinge, -s 1 squared hinge) as a dual CD
# problem:  min_a  1/2 a'Qa + 1/2 sum D_ii a_i^2 - sum a_i,  0 <= a_i <= U_i,
# Q_ij = y_i y_j x_i.x_j.  upper[i] is U_i (inf for squared hinge), diag[i] is D_ii
# (0 for hinge), cvec[i] the sample's effective C (for the primal objective).
from libc.math cimport fabs, INFINITY

from pybudget._core._csr cimport csr_row_axpy
from pybudget.linear._dcd_rows cimport (DualData, PairVar, Shrink, VISIT_DROP, VISIT_SKIP,
                                        VISIT_STEP, row_margin)


cdef struct SvmProblem:
    DualData r


cdef inline double svm_gradient(const SvmProblem* P, const double* w, const double* a,
                                int i) noexcept nogil:
    return P.r.y[i] * row_margin(&P.r.X, P.r.bias, P.r.d, w, i) - 1.0 + P.r.diag[i] * a[i]


cdef inline double svm_projected(double G, double a, double U) noexcept nogil:
    if a <= 0.0:
        return G if G < 0.0 else 0.0
    if a >= U:
        return G if G > 0.0 else 0.0
    return G


cdef inline double svm_violation(const SvmProblem* P, const double* a, int i,
                                 double G) noexcept nogil:
    return fabs(svm_projected(G, a[i], P.r.upper[i]))


cdef inline double svm_step(const SvmProblem* P, double* w, double* a, int i, double G,
                            double q) noexcept nogil:
    """Exact minimisation along coordinate i (gradient G, curvature q); returns the move."""
    cdef double old = a[i], U = P.r.upper[i], new
    if q > 0.0:
        new = old - G / q
        if new < 0.0:
            new = 0.0
        elif new > U:
            new = U
    else:
        # All-zero row without bias: constant gradient, optimum at a bound.
        new = U if G < 0.0 else 0.0
    cdef double mu = new - old
    if mu != 0.0:
        a[i] = new
        csr_row_axpy(&P.r.X, i, mu * P.r.y[i], w)
        w[P.r.d] += mu * P.r.y[i] * P.r.bias
    return mu


cdef inline double svm_gain(const SvmProblem* P, const double* a, int i, double G,
                            double mu, double q) noexcept nogil:
    """Exact decrease of the dual objective by the move mu."""
    return mu * (-G - 0.5 * mu * q)


cdef inline void svm_pair_var(const SvmProblem* P, const double* a, int i, double G,
                              double b, PairVar* v) noexcept nogil:
    """Variable i in the pair steps' form (_dcd_rows.pxd), z_i = y_i a_i; G is its
    gradient, b the bias term of the margins."""
    cdef double y = P.r.y[i], U = P.r.upper[i]
    v.z = y * a[i]
    v.lo = 0.0 if y > 0.0 else -U
    v.hi = U if y > 0.0 else 0.0
    v.g = y * G - b
    v.eps = 0.0


cdef inline void svm_pair_set(const SvmProblem* P, double* a, int i, double z) noexcept nogil:
    a[i] = P.r.y[i] * z


# liblinear's shrinking (solve_l2r_l1l2_svc): drop a variable at a bound whose gradient
# points outwards beyond the previous sweep's extremes; stop when the projected
# gradients of the active set span at most tol.
cdef inline void svm_shrink_begin(Shrink* sh) noexcept nogil:
    sh.max_new = -INFINITY
    sh.min_new = INFINITY


cdef inline int svm_shrink_visit(const SvmProblem* P, const double* a, int i, double G,
                                 Shrink* sh) noexcept nogil:
    cdef double pg = 0.0
    if a[i] <= 0.0:
        if G > sh.max_old:
            return VISIT_DROP
        elif G < 0.0:
            pg = G
    elif a[i] >= P.r.upper[i]:
        if G < sh.min_old:
            return VISIT_DROP
        elif G > 0.0:
            pg = G
    else:
        pg = G
    if pg > sh.max_new:
        sh.max_new = pg
    if pg < sh.min_new:
        sh.min_new = pg
    return VISIT_STEP if fabs(pg) > 1e-12 else VISIT_SKIP


cdef inline bint svm_shrink_met(Shrink* sh, double tol) noexcept nogil:
    if sh.max_new < sh.min_new:
        # Nothing left in the active set (all shrunk or a warm start with an empty
        # one): no violation seen, so the full set must be re-checked.
        sh.max_new = 0.0
        sh.min_new = 0.0
    return (sh.max_new - sh.min_new <= tol and fabs(sh.max_new) <= tol
            and fabs(sh.min_new) <= tol)


cdef inline void svm_shrink_roll(Shrink* sh) noexcept nogil:
    sh.max_old = sh.max_new if sh.max_new > 0.0 else INFINITY
    sh.min_old = sh.min_new if sh.min_new < 0.0 else -INFINITY


cdef inline void svm_shrink_reset(Shrink* sh) noexcept nogil:
    sh.max_old = INFINITY
    sh.min_old = -INFINITY


cdef inline double svm_shrink_shown(const Shrink* sh) noexcept nogil:
    return sh.max_new - sh.min_new


cdef inline double svm_final(const SvmProblem* P, const double* w, const double* a, int i,
                             double tol, bint* drop, double* loss_sum) noexcept nogil:
    """Exact violation of variable i; whether shrinking at tolerance tol would drop it;
    adds the sample's weighted primal loss to loss_sum."""
    cdef double m = P.r.y[i] * row_margin(&P.r.X, P.r.bias, P.r.d, w, i)
    cdef double G = m - 1.0 + P.r.diag[i] * a[i]
    drop[0] = (a[i] <= 0.0 and G > tol) or (a[i] >= P.r.upper[i] and G < -tol)
    loss_sum[0] += svm_loss(P, i, m)
    return fabs(svm_projected(G, a[i], P.r.upper[i]))


cdef inline double svm_loss(const SvmProblem* P, int i, double m) noexcept nogil:
    """Sample i's weighted primal loss at margin m = y_i w.x_i."""
    cdef double loss = 1.0 - m
    if loss <= 0.0:
        return 0.0
    return P.r.cvec[i] * (loss * loss if P.r.squared else loss)
