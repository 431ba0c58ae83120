# Crammer & Singer's multi-class SVM dual (liblinear -s 4; Keerthi et al. 2008) as a
# dual CD problem whose "variable" is an example's block of K dual variables:
#   min_a  1/2 sum_m ||w_m||^2 + sum_i sum_m e_i^m a_i^m,   w_m = sum_i a_i^m x_i,
#   a_i^m <= U_i^m = C_i [m == y_i],  sum_m a_i^m = 0,     e_i^m = [m != y_i].
# alpha is example-major (a[i*K + m]); w is feature-major, (d + 1) x K (w[j*K + m], the
# bias weights last), as in liblinear: a row's K margins and updates then read and write
# K adjacent weights per non-zero instead of K scattered rows.
# upper[i] is C_i, y[i] the class index (as a double); the curvature of every class in
# block i is A = ||x_i||^2 + bias^2 (the State's qd with diag = 0).
#
# Hooks: gradient fills the scratch P.G with the gradients G_m = w_m.x_i + e_i^m of the
# block's active classes (in the order of P.cls) and returns the block violation, which
# the strategies pass on as "G"; step solves the block QP exactly and keeps its moves in
# P.delta, which gain reads.  Shrinking is liblinear's two-level rule: per example an
# active set of classes (P.cls[i*K : i*K + P.nact[i]]), the example leaving the active
# set when one class is left.
from libc.math cimport fabs, INFINITY

from cython cimport floating

from pybudget._core._csr cimport csr_f32, csr_span
from pybudget.linear._dcd_rows cimport (DualData, Shrink, VISIT_DROP, VISIT_SKIP, VISIT_STEP)


cdef struct CsProblem:
    DualData r
    int K
    double* G           # scratch K: gradients of the visited block, by active position
    double* D           # scratch 2 K: the sort buffer of the block solve, then its moves
    double* delta       # scratch K: the last step's moves, by active position
    int* cls            # n*K: each example's classes, its active ones first
    int* all_cls        # K: 0, 1, ..., K - 1
    int* nact           # n: each example's number of active classes
    double* limit       # [0]: liblinear's eps_shrink, below which everything is restored
    int* partial        # [0]: a class was shrunk since the last restore


cdef inline void cs_row_margins(const floating* xd, const int* xi, int nnz, const double* w,
                                int K, const int* cls, int n_cls, double* out) noexcept nogil:
    """out[k] += w_{cls[k]} . x for a sparse row x (values of either type, taken in
    double); w feature-major with K weights per feature."""
    cdef const double* wj
    cdef double v
    cdef int t, k
    for t in range(nnz):
        wj = w + <Py_ssize_t>xi[t] * K
        v = xd[t]
        for k in range(n_cls):
            out[k] += v * wj[cls[k]]


cdef inline void cs_row_update(const floating* xd, const int* xi, int nnz, double* w, int K,
                               const double* D, int n_moved) noexcept nogil:
    """w_{D[k]} += D[K + k] x for k < n_moved (the block step's moves, classes stored as
    doubles), one pass over the sparse row x."""
    cdef double* wj
    cdef double v
    cdef int j, k
    for j in range(nnz):
        wj = w + <Py_ssize_t>xi[j] * K
        v = xd[j]
        for k in range(n_moved):
            wj[<int>D[k]] += D[K + k] * v


cdef inline void cs_margins(const CsProblem* P, const double* w, int i, const int* cls,
                            int n_cls, double* out) noexcept nogil:
    """out[k] = w_{cls[k]} . x_i + e_i^{cls[k]} (with the bias feature), one pass over
    the row."""
    cdef const double* wj
    cdef int nnz, k, K = P.K, y = <int>P.r.y[i]
    cdef int start = csr_span(&P.r.X, i, &nnz)
    for k in range(n_cls):
        out[k] = 0.0
    if csr_f32(&P.r.X):
        cs_row_margins(P.r.X.data32 + start, P.r.X.indices + start, nnz, w, K, cls, n_cls,
                       out)
    else:
        cs_row_margins(P.r.X.data + start, P.r.X.indices + start, nnz, w, K, cls, n_cls,
                       out)
    wj = w + <Py_ssize_t>P.r.d * K
    for k in range(n_cls):
        out[k] += P.r.bias * wj[cls[k]] + (0.0 if cls[k] == y else 1.0)


cdef inline double cs_spread(const CsProblem* P, const double* ai, int i, int n_act,
                             double* min_free) noexcept nogil:
    """max_k G_k - min over classes below their bound of G_k, over the first n_act
    positions of P.G / P.cls (>= 0); min_free receives that minimum (INFINITY if
    none)."""
    cdef const int* cls = P.cls + <Py_ssize_t>i * P.K
    cdef int y = <int>P.r.y[i], k, m
    cdef double C = P.r.upper[i], hi = -INFINITY, lo = INFINITY, g
    for k in range(n_act):
        m = cls[k]
        g = P.G[k]
        if g > hi:
            hi = g
        if g < lo and ai[m] < (C if m == y else 0.0):
            lo = g
    min_free[0] = lo
    # A feasible block always has a class below its bound (the bounds sum to C_i > 0).
    return hi - lo if lo < INFINITY else 0.0


cdef inline double cs_gradient(const CsProblem* P, const double* w, const double* a,
                               int i) noexcept nogil:
    """Gradients of block i's active classes into P.G; returns the block violation."""
    cdef int n_act = P.nact[i]
    cdef double lo
    cs_margins(P, w, i, P.cls + <Py_ssize_t>i * P.K, n_act, P.G)
    return cs_spread(P, a + <Py_ssize_t>i * P.K, i, n_act, &lo)


cdef inline double cs_violation(const CsProblem* P, const double* a, int i,
                                double G) noexcept nogil:
    return G


cdef inline double cs_step(const CsProblem* P, double* w, double* a, int i, double G,
                           double A) noexcept nogil:
    """Exact solution of block i's QP over its active classes (the shrunk ones sit at
    their bounds); updates alpha and w, keeps the moves in P.delta; returns the sum of
    |moves| (nonzero iff something moved)."""
    cdef int K = P.K, y = <int>P.r.y[i], n_act = P.nact[i], k, j, r, m, ky = -1, ko = -1
    cdef const int* cls = P.cls + <Py_ssize_t>i * K
    cdef double* ai = a + <Py_ssize_t>i * K
    cdef double* D = P.D
    cdef double C = P.r.upper[i], U, t, beta, new, dk, moved = 0.0
    cdef double* wj
    cdef int nnz, start, n_moved = 0
    for k in range(n_act):
        P.delta[k] = 0.0
    if A <= 0.0:
        # All-zero row without bias: the gradients are the constants e^m, so the
        # optimum puts y at C_i and the balance on another class; w does not move.
        for k in range(n_act):
            if cls[k] == y:
                ky = k
            elif ko < 0:
                ko = k
        if ky < 0 or ko < 0 or ai[y] >= C:
            return 0.0
        dk = C - ai[y]
        ai[y] = C
        ai[cls[ko]] -= dk
        P.delta[ky] = dk
        P.delta[ko] = -dk
        return 2.0 * dk
    # With B_m = G_m - A a_m the block is  min sum_m A/2 a_m^2 + B_m a_m,  a_m <= U_m,
    # sum_m a_m = const.  Its solution is a_m = min(U_m, (beta - B_m) / A); in
    # u_m = a_m - U_m <= 0 (shrunk classes have u_m = 0, so sum_k u_k = -C_i over the
    # active ones) beta solves sum_k min(0, beta - D_k) = -A C_i with D_k = B_k + A U_k,
    # found from the D_k sorted in decreasing order.
    for k in range(n_act):
        m = cls[k]
        t = P.G[k] - A * ai[m] + (A * C if m == y else 0.0)
        j = k
        while j > 0 and D[j - 1] < t:     # insertion sort: K is small
            D[j] = D[j - 1]
            j -= 1
        D[j] = t
    beta = D[0] - A * C
    r = 1
    while r < n_act and beta < r * D[r]:
        beta += D[r]
        r += 1
    beta /= r
    # The moves, compacted in the sort buffer (no longer needed): classes as doubles in
    # D[0:n_moved], moves in D[K:K + n_moved] (D has room for 2 K; see cs_setup).
    for k in range(n_act):
        m = cls[k]
        U = C if m == y else 0.0
        new = (beta - (P.G[k] - A * ai[m])) / A
        if new > U:
            new = U
        dk = new - ai[m]
        if dk != 0.0:
            P.delta[k] = dk
            ai[m] = new
            D[n_moved] = m
            D[K + n_moved] = dk
            n_moved += 1
            moved += fabs(dk)
    if n_moved:
        start = csr_span(&P.r.X, i, &nnz)
        if csr_f32(&P.r.X):
            cs_row_update(P.r.X.data32 + start, P.r.X.indices + start, nnz, w, K, D, n_moved)
        else:
            cs_row_update(P.r.X.data + start, P.r.X.indices + start, nnz, w, K, D, n_moved)
        wj = w + <Py_ssize_t>P.r.d * K
        for k in range(n_moved):
            wj[<int>D[k]] += D[K + k] * P.r.bias
    return moved


cdef inline double cs_gain(const CsProblem* P, const double* a, int i, double G,
                           double mu, double A) noexcept nogil:
    """Exact decrease of the dual objective by the last block step:
    -(sum_k delta_k G_k + A/2 sum_k delta_k^2)."""
    if mu == 0.0:
        return 0.0
    cdef double lin = 0.0, sq = 0.0
    cdef int k
    for k in range(P.nact[i]):
        lin += P.delta[k] * P.G[k]
        sq += P.delta[k] * P.delta[k]
    return -(lin + 0.5 * A * sq)


# liblinear's two-level shrinking (Solver_MCSVM_CS): in a visited block, a class at its
# bound whose gradient is below that of every class off its bound cannot move in this
# block's step and leaves the block's active set; an example left with one active class
# leaves the active set.  sh.max_new is the sweep's largest block violation (over the
# active blocks and classes).  Once it falls below eps_shrink (P.limit, starting at
# max(10 tol, 1), halved at each such sweep) everything is restored, and the run stops
# when it is below tol with nothing shrunk.  sh.max_old is the margin below the free
# classes' smallest gradient that shrinks a class: infinite (nothing shrinks) in the
# first sweep after a restore, 0 (liblinear's rule) after it.  That sweep over the whole
# set is what lets the strategy stop with every example active (the SVM's rule gets the
# same from its infinite thresholds); liblinear shrinks in it too and stops on a flag.
cdef inline void cs_shrink_begin(Shrink* sh) noexcept nogil:
    sh.max_new = -INFINITY


cdef inline int cs_shrink_visit(const CsProblem* P, const double* a, int i, double G,
                                Shrink* sh) noexcept nogil:
    cdef int K = P.K, y = <int>P.r.y[i], n_act = P.nact[i], k = 0, m
    cdef int* cls = P.cls + <Py_ssize_t>i * K
    cdef const double* ai = a + <Py_ssize_t>i * K
    cdef double C = P.r.upper[i], lo, t
    cs_spread(P, ai, i, n_act, &lo)
    while k < n_act:
        m = cls[k]
        if P.G[k] < lo - sh.max_old and ai[m] >= (C if m == y else 0.0):
            # swap to the end of the active classes, keeping P.G aligned with cls
            n_act -= 1
            cls[k] = cls[n_act]
            cls[n_act] = m
            t = P.G[k]
            P.G[k] = P.G[n_act]
            P.G[n_act] = t
            P.partial[0] = 1
        else:
            k += 1
    P.nact[i] = n_act
    if n_act <= 1:
        return VISIT_DROP
    if G <= 1e-12:
        return VISIT_SKIP
    if G > sh.max_new:
        sh.max_new = G
    return VISIT_STEP


cdef inline bint cs_shrink_met(const CsProblem* P, Shrink* sh, double tol) noexcept nogil:
    """True when the sweep's violation is below eps_shrink and either below tol or
    something is shrunk inside a block: the strategy then restores the full set, or,
    when every example is active, confirms by the exact pass (which also restores the
    classes when it fails).  Below eps_shrink but above tol with no class shrunk there is
    nothing to restore (liblinear's restore would be a no-op), so the sweeps go on."""
    cdef double v = sh.max_new if sh.max_new > 0.0 else 0.0
    if v >= P.limit[0]:
        return False
    P.limit[0] = P.limit[0] / 2.0 if P.limit[0] / 2.0 > tol else tol
    return v <= tol or P.partial[0] != 0


cdef inline void cs_shrink_roll(Shrink* sh) noexcept nogil:
    sh.max_old = 0.0


cdef inline void cs_shrink_reset(const CsProblem* P, Shrink* sh) noexcept nogil:
    cdef int i
    sh.max_old = INFINITY
    for i in range(P.r.n):
        P.nact[i] = P.K
    P.partial[0] = 0


cdef inline double cs_shrink_shown(const Shrink* sh) noexcept nogil:
    return sh.max_new if sh.max_new > 0.0 else 0.0


cdef inline double cs_final(const CsProblem* P, const double* w, const double* a, int i,
                            double tol, bint* drop, double* loss_sum) noexcept nogil:
    """Exact violation of block i over all K classes; whether shrinking at tol would
    leave it with one active class; adds C_i * (max_m (w_m.x_i + e_i^m) - w_{y_i}.x_i)
    (the multi-class hinge) to loss_sum."""
    cdef int m, y = <int>P.r.y[i], kept = 0
    cdef const double* ai = a + <Py_ssize_t>i * P.K
    cdef double C = P.r.upper[i], hi = -INFINITY, lo = INFINITY, g
    cs_margins(P, w, i, P.all_cls, P.K, P.G)
    for m in range(P.K):
        g = P.G[m]
        if g > hi:
            hi = g
        if g < lo and ai[m] < (C if m == y else 0.0):
            lo = g
    for m in range(P.K):
        if ai[m] < (C if m == y else 0.0) or P.G[m] >= lo - tol:
            kept += 1
    drop[0] = kept <= 1
    loss_sum[0] += C * (hi - P.G[y])
    return hi - lo if lo < INFINITY else 0.0
