# What every dual coordinate-descent problem shares: reading a row with the optional
# bias feature, and the bookkeeping of liblinear-style shrinking.  A problem (see
# _dcd_svm.pxd, _dcd_svr.pxd) is a struct with at least the fields X, bias and d (the
# bias weight's index, == X.n_cols) and a set of inline hooks; _dcd.pyx writes each
# selection strategy once over them.
from pybudget._csr cimport (CsrView, csr_row, csr_prefetch_dense, csr_prefetch_row,
                            sparse_dot_dense, sparse_sqnorm)

# What a problem's shrink_visit hook tells the hard-shrinking strategy.
cdef enum:
    VISIT_DROP = -1      # shrink the variable out of the active set
    VISIT_SKIP = 0       # keep it, no step needed
    VISIT_STEP = 1       # keep it and take the one-variable step


cdef struct Shrink:
    # Each problem reads and writes the fields its own rule needs (liblinear keeps
    # the extremes of the projected gradient seen in the previous and current sweep).
    double max_old
    double min_old
    double max_new
    double min_new


cdef inline double row_margin(const CsrView* X, double bias, int d, const double* w,
                              int i) noexcept nogil:
    """w . x_i, plus bias * w[d] for the constant feature."""
    cdef const double* xd
    cdef const int* xi
    cdef int nnz
    csr_row(X, i, &xd, &xi, &nnz)
    return sparse_dot_dense(xd, xi, nnz, w) + bias * w[d]


cdef inline double row_sqnorm(const CsrView* X, double bias, int i) noexcept nogil:
    """||x_i||^2 + bias^2."""
    cdef const double* xd
    cdef const int* xi
    cdef int nnz
    csr_row(X, i, &xd, &xi, &nnz)
    return sparse_sqnorm(xd, nnz) + bias * bias


cdef inline void prefetch_ahead(const CsrView* X, const int* order, int s, int end,
                                const double* w) noexcept nogil:
    # Rows are visited in random order, so each step waits on memory: fetch the row
    # two steps ahead and the weights of the row one step ahead.
    if s + 2 < end:
        csr_prefetch_row(X, order[s + 2])
    if s + 1 < end:
        csr_prefetch_dense(X, order[s + 1], w)
