import numpy as np
import pytest
import scipy.sparse as sp

from sklearn.utils.extmath import safe_sparse_dot

from pybudget._core._csr import (_row_axpy_py, _row_dots_py, _row_pair_dot_py,
                                 _row_sqnorms_py, _rows_gram_py, csr_structure,
                                 rows_combination)
from pybudget._core._validation import as_csr


@pytest.fixture(params=[np.float64, np.float32])
def X(request):
    """Both value types the kernels read (float32 is read in place, never converted)."""
    rng = np.random.default_rng(1)
    X = sp.random(40, 25, density=0.2, format="csr", random_state=rng)
    X = sp.vstack([X, sp.csr_matrix((2, 25))]).tocsr()  # all-zero rows too
    X = as_csr(X.astype(request.param))
    assert X.dtype == request.param
    return X


def widened(X):
    """The float64 copy of X whose float64 kernels a float32 X must match bit for bit."""
    return X.astype(np.float64)


def test_dot_matches_scipy(X):
    w = np.random.default_rng(2).standard_normal(X.shape[1])
    np.testing.assert_allclose(_row_dots_py(X, w), widened(X) @ w, rtol=1e-13, atol=1e-14)


def test_axpy_matches_numpy(X):
    w = np.random.default_rng(3).standard_normal(X.shape[1])
    for i in (0, 7, X.shape[0] - 1):
        expect = w + 0.37 * widened(X)[i].toarray().ravel()
        _row_axpy_py(X, i, 0.37, w)
        np.testing.assert_allclose(w, expect, rtol=1e-14)


def test_sqnorms_match(X):
    X64 = widened(X)
    np.testing.assert_allclose(_row_sqnorms_py(X), np.asarray(X64.multiply(X64).sum(1)).ravel(),
                               rtol=1e-13)


@pytest.mark.parametrize("ydtype", [np.float64, np.float32])
def test_sparse_sparse_dot(X, ydtype):
    Y = as_csr(sp.random(10, 25, density=0.5, format="csr", random_state=4).astype(ydtype))
    full = (widened(X) @ widened(Y).T).toarray()
    for i in range(X.shape[0]):
        for j in range(Y.shape[0]):
            assert _row_pair_dot_py(X, i, Y, j) == pytest.approx(full[i, j], abs=1e-13)
            assert _row_pair_dot_py(X, i, Y, j) == _row_pair_dot_py(widened(X), i,
                                                                     widened(Y), j)


def test_rows_gram(X):
    """|x_i - x_j|^2 and the Gram entries of two rows (the pair steps' curvature), the
    same bits for float32 and its float64 copy; a row against itself gives exactly 0."""
    X64 = widened(X).toarray()
    for i in (0, 3, 40, 41):
        for j in (0, 5, 17, 41):
            dd, gram = _rows_gram_py(X, i, j)
            diff = X64[i] - X64[j]
            assert dd == pytest.approx(diff @ diff, abs=1e-13)
            np.testing.assert_allclose(gram, [X64[i] @ X64[i], X64[i] @ X64[j],
                                              X64[j] @ X64[j]], atol=1e-13)
            assert (dd, gram) == _rows_gram_py(widened(X), i, j)
            if i == j:
                assert dd == 0.0


def test_float32_rows_equal_their_float64_copy(X):
    """Every product is taken in double: float32 values give the bits of their float64
    copy in every kernel."""
    X64 = widened(X)
    w = np.random.default_rng(5).standard_normal(X.shape[1])
    np.testing.assert_array_equal(_row_dots_py(X, w), _row_dots_py(X64, w))
    np.testing.assert_array_equal(_row_sqnorms_py(X), _row_sqnorms_py(X64))
    w1, w2 = w.copy(), w.copy()
    for i in range(X.shape[0]):
        _row_axpy_py(X, i, 0.3 + i, w1)
        _row_axpy_py(X64, i, 0.3 + i, w2)
    np.testing.assert_array_equal(w1, w2)


@pytest.mark.parametrize("K", [1, 3])
def test_rows_combination_equals_scipy(X, K):
    """X.T @ coef without converting X, bit for bit what scipy computes on the float64
    copy (the warm starts rely on it to keep float64 results unchanged)."""
    coef = np.random.default_rng(6).standard_normal((X.shape[0], K))
    out = np.zeros((X.shape[1], K))
    rows_combination(X, coef, out)
    np.testing.assert_array_equal(out, safe_sparse_dot(widened(X).T, coef,
                                                       dense_output=True))
    vec = np.zeros(X.shape[1])
    rows_combination(X, coef[:, :1].copy(), vec[:, None])    # a 1-d w through a column view
    np.testing.assert_array_equal(vec, safe_sparse_dot(coef[:, 0], widened(X)))
    with pytest.raises(ValueError, match="shapes"):
        rows_combination(X, coef, np.zeros((X.shape[1] + 1, K)))


def test_structure_checks():
    indptr = np.array([0, 2, 3], dtype=np.int32)   # 2 rows
    assert csr_structure(indptr, np.array([0, 3, 1], dtype=np.int32), 2, 4)
    assert not csr_structure(indptr, np.array([3, 0, 1], dtype=np.int32), 2, 4)  # unsorted
    assert not csr_structure(indptr, np.array([1, 1, 1], dtype=np.int32), 2, 4)  # duplicate
    with pytest.raises(ValueError, match="outside"):
        csr_structure(indptr, np.array([0, 4, 1], dtype=np.int32), 2, 4)
    with pytest.raises(ValueError, match="outside"):
        csr_structure(indptr, np.array([-1, 2, 1], dtype=np.int32), 2, 4)
    with pytest.raises(ValueError, match="indptr decreases"):
        csr_structure(np.array([0, 2, 1], dtype=np.int32), np.array([0, 1, 2], dtype=np.int32),
                      2, 4)
    with pytest.raises(ValueError, match="indptr does not match"):
        csr_structure(np.array([0, 2, 5], dtype=np.int32), np.array([0, 1, 2], dtype=np.int32),
                      2, 4)
    for rows in (1, 3):   # indptr shorter or longer than the row count says
        with pytest.raises(ValueError, match="indptr has 3 entries"):
            csr_structure(indptr, np.array([0, 3, 1], dtype=np.int32), rows, 4)
