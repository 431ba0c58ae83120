import numpy as np
import pytest
import scipy.sparse as sp

from pybudget._core._csr import (_row_axpy_py, _row_dots_py, _row_pair_dot_py,
                                 _row_sqnorms_py, csr_structure)
from pybudget._core._validation import as_csr


@pytest.fixture
def X():
    rng = np.random.default_rng(1)
    X = sp.random(40, 25, density=0.2, format="csr", random_state=rng)
    X = sp.vstack([X, sp.csr_matrix((2, 25))]).tocsr()  # all-zero rows too
    return as_csr(X)


def test_dot_matches_scipy(X):
    w = np.random.default_rng(2).standard_normal(X.shape[1])
    np.testing.assert_allclose(_row_dots_py(X, w), X @ w, rtol=1e-13, atol=1e-14)


def test_axpy_matches_numpy(X):
    w = np.random.default_rng(3).standard_normal(X.shape[1])
    for i in (0, 7, X.shape[0] - 1):
        expect = w + 0.37 * X[i].toarray().ravel()
        _row_axpy_py(X, i, 0.37, w)
        np.testing.assert_allclose(w, expect, rtol=1e-14)


def test_sqnorms_match(X):
    np.testing.assert_allclose(_row_sqnorms_py(X), np.asarray(X.multiply(X).sum(1)).ravel(),
                               rtol=1e-13)


def test_sparse_sparse_dot(X):
    Y = as_csr(sp.random(10, 25, density=0.5, format="csr", random_state=4))
    full = (X @ Y.T).toarray()
    for i in range(X.shape[0]):
        for j in range(Y.shape[0]):
            assert _row_pair_dot_py(X, i, Y, j) == pytest.approx(full[i, j], abs=1e-13)


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
