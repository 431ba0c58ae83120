# Sparse CSR kernels shared by every solver.
#
# A CsrView holds raw pointers into validated scipy CSR arrays (int32 sorted indices,
# float64 or float32 values): rows are read in place, never copied.  All kernels are
# inline, nogil and unchecked: the Python layer guarantees shapes, dtypes and index
# ranges.
#
# Two value types, one code path for the solvers: a struct cannot be generic, so the
# view carries both typed pointers, one of them NULL.  The row-level kernels
# (csr_row_dot, csr_row_axpy, csr_row_sqnorm, csr_prefetch_row, csr_rows_dot,
# csr_rows_gram) take the view and a row index, ask csr_f32 which pointer to read and
# call an inline helper fused over the value type.  In a module compiled for one value
# type (PB_VALUE_TYPE, _value_type.h; the linear solvers, linear/_dcd64.pyx and
# _dcd32.pyx) that question is a compile-time constant and the branch disappears (it
# showed in the time of shrinking sweeps over short rows).  Elsewhere it is one
# well-predicted branch per row.  Every product is taken in double, (double)x * w: a
# float32 solve equals, bit for bit, a float64 solve of X.astype(float32).astype(float64).
from cython cimport floating

cdef extern from "_value_type.h":
    const int PB_VALUE_TYPE     # 0 (either, per view), 32 or 64 (only that one)

cdef extern from "_prefetch.h":
    void PB_PREFETCH(const void* p) noexcept nogil
    void PB_PREFETCH_W(const void* p) noexcept nogil


# The second value type of csr_rows_dot (two rows of possibly different views).
ctypedef fused floating_b:
    float
    double


cdef struct CsrView:
    # the values: data if float64, data32 if float32, the other NULL (both NULL when X
    # stores no value: no kernel reads one then)
    const double* data
    const float* data32
    const int* indices
    const int* indptr
    int n_rows
    int n_cols


cdef inline bint csr_f32(const CsrView* X) noexcept nogil:
    """Whether X holds float32 values: a constant where PB_VALUE_TYPE fixes the type."""
    if PB_VALUE_TYPE == 32:
        return True
    if PB_VALUE_TYPE == 64:
        return False
    return X.data32 != NULL


cdef inline int csr_span(const CsrView* X, int i, int* nnz) noexcept nogil:
    """Offset of row i's first entry in the value and index arrays; nnz receives its
    number of entries.  For fused helpers that walk a row in their own way."""
    cdef int start = X.indptr[i]
    nnz[0] = X.indptr[i + 1] - start
    return start


cdef inline void csr_prefetch_row(const CsrView* X, int i) noexcept nogil:
    """Hint the row's values and indices into cache (a few steps ahead of use)."""
    cdef int start = X.indptr[i], end = X.indptr[i + 1], k
    if csr_f32(X):
        # values and indices both 4 bytes: one cache line of each per 16 entries
        for k in range(start, end, 16):
            PB_PREFETCH(X.data32 + k)
            PB_PREFETCH(X.indices + k)
        return
    for k in range(start, end, 8):
        PB_PREFETCH(X.data + k)
    for k in range(start, end, 16):
        PB_PREFETCH(X.indices + k)


cdef inline void csr_prefetch_dense(const CsrView* X, int i, const double* w,
                                    int stride) noexcept nogil:
    """Hint the entries of a dense vector (stride doubles per feature) that row i will
    touch (its indices must be cached already, e.g. by csr_prefetch_row one step
    earlier)."""
    cdef int k
    for k in range(X.indptr[i], X.indptr[i + 1]):
        PB_PREFETCH_W(w + <Py_ssize_t>X.indices[k] * stride)


# ---- the fused helpers: one sparse row given by its values, indices and length ---------

cdef inline double sparse_dot_dense(const floating* data, const int* indices, int nnz,
                                    const double* w) noexcept nogil:
    cdef double s = 0.0
    cdef int k
    for k in range(nnz):
        s += <double>data[k] * w[indices[k]]
    return s


cdef inline void sparse_axpy(double a, const floating* data, const int* indices, int nnz,
                             double* w) noexcept nogil:
    cdef int k
    for k in range(nnz):
        w[indices[k]] += a * <double>data[k]


cdef inline double sparse_sqnorm(const floating* data, int nnz) noexcept nogil:
    cdef double s = 0.0, v
    cdef int k
    for k in range(nnz):
        v = data[k]
        s += v * v
    return s


cdef inline double sparse_dot_sparse(const floating* a_data, const int* a_ind, int a_nnz,
                                     const floating_b* b_data, const int* b_ind,
                                     int b_nnz) noexcept nogil:
    # Merge walk over two sorted index lists.
    cdef double s = 0.0
    cdef int p = 0, q = 0
    while p < a_nnz and q < b_nnz:
        if a_ind[p] == b_ind[q]:
            s += <double>a_data[p] * <double>b_data[q]
            p += 1
            q += 1
        elif a_ind[p] < b_ind[q]:
            p += 1
        else:
            q += 1
    return s


cdef inline double sparse_gram(const floating* a_data, const int* a_ind, int a_nnz,
                               const floating* b_data, const int* b_ind, int b_nnz,
                               double* gram) noexcept nogil:
    # One merge walk: gram = [a.a, a.b, b.b]; returns |a - b|^2 summed term by term
    # (no cancellation when a and b are nearly equal).
    cdef double aa = 0.0, ab = 0.0, bb = 0.0, dd = 0.0, u, v
    cdef int p = 0, q = 0
    while p < a_nnz or q < b_nnz:
        if q >= b_nnz or (p < a_nnz and a_ind[p] < b_ind[q]):
            u, v = a_data[p], 0.0
            p += 1
        elif p >= a_nnz or b_ind[q] < a_ind[p]:
            u, v = 0.0, b_data[q]
            q += 1
        else:
            u, v = a_data[p], b_data[q]
            p += 1
            q += 1
        aa += u * u
        ab += u * v
        bb += v * v
        dd += (u - v) * (u - v)
    gram[0], gram[1], gram[2] = aa, ab, bb
    return dd


# ---- the row-level kernels: a view and a row index, one branch on the value type -------

cdef inline double csr_row_dot(const CsrView* X, int i, const double* w) noexcept nogil:
    """x_i . w"""
    cdef int nnz, start = csr_span(X, i, &nnz)
    if csr_f32(X):
        return sparse_dot_dense(X.data32 + start, X.indices + start, nnz, w)
    return sparse_dot_dense(X.data + start, X.indices + start, nnz, w)


cdef inline void csr_row_axpy(const CsrView* X, int i, double a, double* w) noexcept nogil:
    """w += a x_i"""
    cdef int nnz, start = csr_span(X, i, &nnz)
    if csr_f32(X):
        sparse_axpy(a, X.data32 + start, X.indices + start, nnz, w)
    else:
        sparse_axpy(a, X.data + start, X.indices + start, nnz, w)


cdef inline double csr_row_sqnorm(const CsrView* X, int i) noexcept nogil:
    """||x_i||^2"""
    cdef int nnz, start = csr_span(X, i, &nnz)
    if csr_f32(X):
        return sparse_sqnorm(X.data32 + start, nnz)
    return sparse_sqnorm(X.data + start, nnz)


cdef inline double csr_rows_dot(const CsrView* A, int i, const CsrView* B,
                                int j) noexcept nogil:
    """a_i . b_j for rows of two views (of either value type)."""
    cdef int an, bn
    cdef int a0 = csr_span(A, i, &an), b0 = csr_span(B, j, &bn)
    cdef const int* ai = A.indices + a0
    cdef const int* bi = B.indices + b0
    if csr_f32(A):
        if csr_f32(B):
            return sparse_dot_sparse(A.data32 + a0, ai, an, B.data32 + b0, bi, bn)
        return sparse_dot_sparse(A.data32 + a0, ai, an, B.data + b0, bi, bn)
    if csr_f32(B):
        return sparse_dot_sparse(A.data + a0, ai, an, B.data32 + b0, bi, bn)
    return sparse_dot_sparse(A.data + a0, ai, an, B.data + b0, bi, bn)


cdef inline double csr_rows_gram(const CsrView* X, int i, int j,
                                 double* gram) noexcept nogil:
    """|x_i - x_j|^2 for two rows of one view; gram receives [x_i.x_i, x_i.x_j, x_j.x_j]."""
    cdef int an, bn
    cdef int a0 = csr_span(X, i, &an), b0 = csr_span(X, j, &bn)
    if csr_f32(X):
        return sparse_gram(X.data32 + a0, X.indices + a0, an, X.data32 + b0,
                           X.indices + b0, bn, gram)
    return sparse_gram(X.data + a0, X.indices + a0, an, X.data + b0, X.indices + b0, bn,
                       gram)


cdef CsrView csr_view(X) except *
