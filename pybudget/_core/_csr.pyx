# Construction of CsrView from a validated CSR matrix, the transposed product the warm
# starts need, and thin Python wrappers used by the tests to check every inline kernel
# of _csr.pxd against numpy/scipy.
import numpy as np


cdef CsrView csr_view(X) except *:
    """A view of CSR X: float64 or float32 data (read in place, never converted), int32
    indices and indptr.  X must stay alive while the view is used."""
    cdef CsrView v
    cdef const double[::1] d64
    cdef const float[::1] d32
    cdef const int[::1] indices = X.indices
    cdef const int[::1] indptr = X.indptr
    dtype = X.data.dtype
    # Empty data arrays have no valid address; kernels never read them (nnz == 0).
    v.data = NULL
    v.data32 = NULL
    if dtype == np.float64:
        d64 = X.data
        v.data = &d64[0] if d64.shape[0] > 0 else NULL
    elif dtype == np.float32:
        d32 = X.data
        v.data32 = &d32[0] if d32.shape[0] > 0 else NULL
    else:
        raise TypeError(f"CSR values must be float64 or float32, got {dtype}")
    v.indices = &indices[0] if indices.shape[0] > 0 else NULL
    v.indptr = &indptr[0]
    v.n_rows = indptr.shape[0] - 1
    v.n_cols = X.shape[1]
    return v


def rows_combination(X, const double[:, ::1] coef, double[:, ::1] out):
    """out += X.T @ coef for CSR X (n x d, either value type), coef (n x K), out
    (d x K), without converting X: the warm starts' w = sum_i a_i x_i.  Row by row in
    order, so for float64 X the sums equal scipy's X.T @ coef bit for bit."""
    cdef CsrView v = csr_view(X)
    cdef Py_ssize_t K = coef.shape[1]
    if coef.shape[0] != v.n_rows or out.shape[0] != v.n_cols or out.shape[1] != K:
        raise ValueError("rows_combination: shapes do not match")
    cdef int i, nnz, start, t
    cdef Py_ssize_t m
    cdef double x
    cdef double* o
    if K == 0 or v.n_rows == 0:
        return
    with nogil:
        for i in range(v.n_rows):
            if K == 1:
                csr_row_axpy(&v, i, coef[i, 0], &out[0, 0])
                continue
            start = csr_span(&v, i, &nnz)
            for t in range(start, start + nnz):
                x = v.data32[t] if v.data32 != NULL else v.data[t]
                o = &out[v.indices[t], 0]
                for m in range(K):
                    o[m] += x * coef[i, m]


def used_columns(X):
    """The number of distinct column indices of a canonical CSR X, from a bitset of
    n_cols bits: no copy of the indices (np.bincount would widen them to int64, twice
    the size of a float32 X's values)."""
    cdef const int[::1] ind = X.indices
    cdef Py_ssize_t nnz = X.indptr[X.shape[0]], k, count = 0
    bits = np.zeros((X.shape[1] + 7) // 8, dtype=np.uint8)
    cdef unsigned char[::1] b = bits
    cdef int j
    cdef unsigned char bit
    with nogil:
        for k in range(nnz):
            j = ind[k]
            bit = 1 << (j & 7)
            if not b[j >> 3] & bit:
                b[j >> 3] |= bit
                count += 1
    return count


def _row_dots_py(X, const double[::1] w):
    """w·x_i for every row (test wrapper around csr_row_dot)."""
    return _per_row(X, &w[0])


def _row_sqnorms_py(X):
    """‖x_i‖² for every row (test wrapper around csr_row_sqnorm)."""
    return _per_row(X, NULL)


cdef _per_row(X, const double* w):
    """csr_row_dot with w, or csr_row_sqnorm when w is NULL, for every row."""
    cdef CsrView v = csr_view(X)
    cdef int i
    out = np.empty(v.n_rows)
    cdef double[::1] o = out
    for i in range(v.n_rows):
        o[i] = csr_row_sqnorm(&v, i) if w == NULL else csr_row_dot(&v, i, w)
    return out


def _row_axpy_py(X, int i, double a, double[::1] w):
    """w += a x_i in place (test wrapper around csr_row_axpy)."""
    cdef CsrView v = csr_view(X)
    csr_row_axpy(&v, i, a, &w[0])


def _row_pair_dot_py(X, int i, Y, int j):
    """x_i·y_j for rows of two CSR matrices (test wrapper around csr_rows_dot)."""
    cdef CsrView a = csr_view(X)
    cdef CsrView b = csr_view(Y)
    return csr_rows_dot(&a, i, &b, j)


def _rows_gram_py(X, int i, int j):
    """(|x_i - x_j|^2, [x_i.x_i, x_i.x_j, x_j.x_j]) (test wrapper around csr_rows_gram)."""
    cdef CsrView v = csr_view(X)
    cdef double gram[3]
    cdef double dd = csr_rows_gram(&v, i, j, gram)
    return dd, [gram[0], gram[1], gram[2]]


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
