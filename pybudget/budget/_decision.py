"""Decision values of a budgeted model: what ``BudgetSVC.decision_function`` and the
offset's scoring compute.

``decision_values`` runs the solvers' own kernel loop (the kernel row of a training
step, ``BudgetModel.kernel_row_csr``, then its weighted sum) with the rows spread over
threads; each row's value is computed by one thread in one fixed order, so the bits do
not depend on the number of threads.  The loop needs the SVs in a model buffer (twice
their dense size; sparse SVs, a scipy CSR Z, once), so a model larger than
BUFFER_MAX_VALUES is scored by ``kernel_decision``, numpy's formula in row chunks (on
one thread), which is also the tests' reference; ``kernel_matrix`` (its kernel
columns) also serves refit=True.
"""
import numpy as np
import scipy.sparse as sp

from pybudget._core import _validation as V
from pybudget.budget._budget import BudgetModel


# Models of more SV values (support vectors times features) than this are scored by
# kernel_decision: the buffer would copy them twice (row- and feature-major), 256 MiB.
BUFFER_MAX_VALUES = 1 << 24


def decision_values(Z, beta, gamma, X, xsq=None, n_threads=1):
    """f_c(x_i) = sum_j beta[j, c] exp(-gamma |z_j - x_i|^2) for the rows of canonical
    CSR X (float64 or float32 values; ``xsq`` their squared norms, computed when None),
    SV rows Z (n_sv, d; dense, or CSR for sparse storage) and true coefficients beta
    (n_sv, n_coef), on up to ``n_threads`` threads.  Returns an (n, n_coef) array."""
    n_coef = beta.shape[1]
    if Z.shape[0] == 0:
        return np.zeros((X.shape[0], n_coef))
    sparse = sp.issparse(Z)
    if (Z.nnz if sparse else Z.size) > BUFFER_MAX_VALUES:
        return kernel_decision(X, Z, beta.T, gamma)
    mdl = BudgetModel(Z.shape[1], n_coef, Z.shape[0], gamma, 0, sparse)
    mdl.load(Z, beta)
    if xsq is None:
        xsq = V.row_sqnorms(X)
    return mdl.decision_rows(X, xsq, n_threads)[0]


CHUNK = 4096
DENSE_SHARE = 0.1     # X dense for the kernel product from this density (a9a: 0.11)


def kernel_decision(X, Z, dual_coef, gamma, chunk=CHUNK):
    """k(X, Z) @ dual_coef.T in row chunks (bounded memory); X CSR or dense: numpy's
    formula (within 1e-12 of the kernel loop's values)."""
    out = np.zeros((X.shape[0], dual_coef.shape[0]))
    if Z.shape[0] == 0:
        return out
    for a, block in _kernel_blocks(X, Z, gamma, chunk):
        out[a:a + block.shape[0]] = block @ dual_coef.T
    return out


def kernel_matrix(X, Z, gamma, chunk=CHUNK):
    """k(X, Z) as a dense (n, m) array; X CSR or dense, Z dense or CSR (m, d)."""
    out = np.empty((X.shape[0], Z.shape[0]))
    for _ in _kernel_blocks(X, Z, gamma, chunk, out):
        pass            # (each block is written into out)
    return out


def _kernel_blocks(X, Z, gamma, chunk, out=None):
    """(first row, k(X's chunk of rows, Z)) per chunk, each block a view of ``out`` when
    given, else a buffer reused for the next chunk.

    -gamma ||x - z||^2 = 2 gamma x.z - gamma |x|^2 - gamma |z|^2 as one product of
    [X, |x|^2, 1] and [2 gamma Z, -gamma, -gamma |z|^2] (X's chunk dense when at least
    DENSE_SHARE of X's entries are non-zero, else the sparse product and two
    broadcasts), clipped at 0 (round-off) and exponentiated in place; float32 input in
    float64 a chunk at a time (the same numbers as a float64 X).  A CSR Z (sparse
    storage): the sparse product of X's chunk and 2 gamma Z', then the broadcasts."""
    n, m = X.shape[0], Z.shape[0]
    sparse = sp.issparse(X)
    if sp.issparse(Z):
        zsq = np.asarray(Z.multiply(Z).sum(axis=1)).ravel()
        cross, dense_rows = (2.0 * gamma * Z).T.tocsc(), False
    else:
        zsq = np.einsum("ij,ij->i", Z, Z)
        right = np.hstack([2.0 * gamma * Z, np.full((m, 1), -gamma),
                           -gamma * zsq[:, None]]).T
        right = np.ascontiguousarray(right)
        cross = right[:-2]
        dense_rows = not sparse or X.nnz >= DENSE_SHARE * X.shape[0] * X.shape[1]
    zterm = -gamma * zsq
    buf = np.empty((min(chunk, n), m)) if out is None else None
    for a in range(0, n, chunk):
        Xa = X[a:a + chunk].astype(np.float64, copy=False)
        block = out[a:a + chunk] if out is not None else buf[:Xa.shape[0]]
        if sparse:
            xsq = np.asarray(Xa.multiply(Xa).sum(axis=1)).ravel()
        else:
            xsq = np.einsum("ij,ij->i", Xa, Xa)
        if dense_rows:
            left = np.empty((Xa.shape[0], Xa.shape[1] + 2))
            left[:, :-2] = Xa.toarray() if sparse else Xa
            left[:, -2] = xsq
            left[:, -1] = 1.0
            np.matmul(left, right, out=block)
        else:
            prod = Xa @ cross
            block[...] = prod.toarray() if sp.issparse(prod) else prod
            block -= gamma * xsq[:, None]
            block += zterm[None, :]
        np.minimum(block, 0.0, out=block)
        np.exp(block, out=block)
        yield a, block


def center_kernel(Z, gamma):
    """k(Z, Z), symmetric with an exact unit diagonal."""
    K = kernel_matrix(Z, Z, gamma)
    K = 0.5 * (K + K.T)
    np.fill_diagonal(K, 1.0)
    return K
