# What every dual coordinate-descent problem shares: its data (DualData), reading a
# row with the optional bias feature, and the bookkeeping of liblinear-style
# shrinking.  A problem (see _dcd_svm.pxd, _dcd_svr.pxd) is a struct holding a DualData
# `r` plus its own constants, and a set of inline hooks; _dcd.pxi writes each
# selection strategy once over them.
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
