# Sparse CSR kernels shared by every solver.
#
# A CsrView holds raw pointers into validated scipy CSR arrays (float64 data, int32
# sorted indices): rows are read in place, never copied.  All kernels are inline, nogil
# and unchecked: the Python layer guarantees shapes, dtypes and index ranges.

cdef extern from "_prefetch.h":
    void PB_PREFETCH(const void* p) noexcept nogil
    void PB_PREFETCH_W(const void* p) noexcept nogil


cdef struct CsrView:
    const double* data
    const int* indices
    const int* indptr
    int n_rows
    int n_cols


cdef inline void csr_row(const CsrView* X, int i, const double** data,
                         const int** indices, int* nnz) noexcept nogil:
    cdef int start = X.indptr[i]
    data[0] = X.data + start
    indices[0] = X.indices + start
    nnz[0] = X.indptr[i + 1] - start


cdef inline void csr_prefetch_row(const CsrView* X, int i) noexcept nogil:
    """Hint the row's values and indices into cache (a few steps ahead of use)."""
    cdef int start = X.indptr[i], end = X.indptr[i + 1], k
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


cdef inline double sparse_dot_dense(const double* data, const int* indices, int nnz,
                                    const double* w) noexcept nogil:
    cdef double s = 0.0
    cdef int k
    for k in range(nnz):
        s += data[k] * w[indices[k]]
    return s


cdef inline void sparse_axpy(double a, const double* data, const int* indices, int nnz,
                             double* w) noexcept nogil:
    cdef int k
    for k in range(nnz):
        w[indices[k]] += a * data[k]


cdef inline double sparse_sqnorm(const double* data, int nnz) noexcept nogil:
    cdef double s = 0.0
    cdef int k
    for k in range(nnz):
        s += data[k] * data[k]
    return s


cdef inline double sparse_dot_sparse(const double* a_data, const int* a_ind, int a_nnz,
                                     const double* b_data, const int* b_ind,
                                     int b_nnz) noexcept nogil:
    # Merge walk over two sorted index lists.
    cdef double s = 0.0
    cdef int p = 0, q = 0
    while p < a_nnz and q < b_nnz:
        if a_ind[p] == b_ind[q]:
            s += a_data[p] * b_data[q]
            p += 1
            q += 1
        elif a_ind[p] < b_ind[q]:
            p += 1
        else:
            q += 1
    return s


cdef CsrView csr_view(const double[::1] data, const int[::1] indices,
                      const int[::1] indptr, int n_cols)
