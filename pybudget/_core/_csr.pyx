# Construction of CsrView from memoryviews, and thin Python wrappers used by the tests
# to check every inline kernel of _csr.pxd against numpy/scipy.
import numpy as np


cdef CsrView csr_view(const double[::1] data, const int[::1] indices,
                      const int[::1] indptr, int n_cols):
    cdef CsrView v
    # Empty data arrays have no valid address; kernels never read them (nnz == 0).
    v.data = &data[0] if data.shape[0] > 0 else NULL
    v.indices = &indices[0] if indices.shape[0] > 0 else NULL
    v.indptr = &indptr[0]
    v.n_rows = indptr.shape[0] - 1
    v.n_cols = n_cols
    return v


def _row_dots_py(X, const double[::1] w):
    """w·x_i for every row (test wrapper around sparse_dot_dense)."""
    return _per_row(X, &w[0])


def _row_sqnorms_py(X):
    """‖x_i‖² for every row (test wrapper around sparse_sqnorm)."""
    return _per_row(X, NULL)


cdef _per_row(X, const double* w):
    """sparse_dot_dense with w, or sparse_sqnorm when w is NULL, for every row."""
    cdef CsrView v = csr_view(X.data, X.indices, X.indptr, X.shape[1])
    cdef const double* d
    cdef const int* ind
    cdef int nnz, i
    out = np.empty(v.n_rows)
    cdef double[::1] o = out
    for i in range(v.n_rows):
        csr_row(&v, i, &d, &ind, &nnz)
        o[i] = sparse_sqnorm(d, nnz) if w == NULL else sparse_dot_dense(d, ind, nnz, w)
    return out


def _row_axpy_py(X, int i, double a, double[::1] w):
    """w += a x_i in place (test wrapper around sparse_axpy)."""
    cdef CsrView v = csr_view(X.data, X.indices, X.indptr, X.shape[1])
    cdef const double* d
    cdef const int* ind
    cdef int nnz
    csr_row(&v, i, &d, &ind, &nnz)
    sparse_axpy(a, d, ind, nnz, &w[0])


def _row_pair_dot_py(X, int i, Y, int j):
    """x_i·y_j for rows of two CSR matrices (test wrapper around sparse_dot_sparse)."""
    cdef CsrView a = csr_view(X.data, X.indices, X.indptr, X.shape[1])
    cdef CsrView b = csr_view(Y.data, Y.indices, Y.indptr, Y.shape[1])
    cdef const double* ad
    cdef const int* ai
    cdef const double* bd
    cdef const int* bi
    cdef int an, bn
    csr_row(&a, i, &ad, &ai, &an)
    csr_row(&b, j, &bd, &bi, &bn)
    return sparse_dot_sparse(ad, ai, an, bd, bi, bn)


def csr_structure(const int[::1] indptr, const int[::1] indices, Py_ssize_t n_rows,
                  int n_cols):
    """Check the structure of an n_rows x n_cols CSR matrix before any kernel touches it.

    Returns True when every row's indices are strictly increasing (canonical), False
    when some row is unsorted or has duplicates (the caller repairs it).  Raises
    ValueError for structure the kernels could not survive: indptr not of length
    n_rows + 1, not starting at 0, decreasing or ending beyond the index array, or
    column indices outside [0, n_cols).
    """
    cdef Py_ssize_t n = indptr.shape[0] - 1, i, k, nnz = indices.shape[0]
    cdef bint canonical = True, bad_ptr = False, bad_index = False
    if n != n_rows:
        raise ValueError(f"X is not a valid CSR matrix: indptr has {n + 1} entries for "
                         f"{n_rows} rows (expected {n_rows + 1})")
    if n < 0 or indptr[0] != 0 or indptr[n] > nnz:
        raise ValueError("X is not a valid CSR matrix: indptr does not match the index array")
    with nogil:
        for i in range(n):
            if indptr[i + 1] < indptr[i]:
                bad_ptr = True
                break
            for k in range(indptr[i], indptr[i + 1]):
                if indices[k] < 0 or indices[k] >= n_cols:
                    bad_index = True
                    break
                if k > indptr[i] and indices[k] <= indices[k - 1]:
                    canonical = False
            if bad_index:
                break
    if bad_ptr:
        raise ValueError("X is not a valid CSR matrix: indptr decreases")
    if bad_index:
        raise ValueError(f"X is not a valid CSR matrix: a column index lies outside [0, {n_cols})")
    return canonical
