"""Decision values of a budgeted model: what ``BudgetSVC.decision_function`` and the
offset's scoring compute.

``decision_values`` runs the solvers' own kernel loop (the kernel row of a training
step, ``BudgetModel.kernel_row_csr``, then its weighted sum) with the rows spread over
threads; each row's value is computed by one thread in one fixed order, so the bits do
not depend on the number of threads.  The loop needs the SVs in a model buffer (twice
their dense size), so a model larger than BUFFER_MAX_VALUES is scored by
``kernel_decision``, numpy's formula in row chunks (on one thread), which is also the
tests' reference.
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
    SV rows Z (n_sv, d) and true coefficients beta (n_sv, n_coef), on up to
    ``n_threads`` threads.  Returns an (n, n_coef) array."""
    n_coef = beta.shape[1]
    if Z.shape[0] == 0:
        return np.zeros((X.shape[0], n_coef))
    if Z.size > BUFFER_MAX_VALUES:
        return kernel_decision(X, Z, beta.T, gamma)
    mdl = BudgetModel(Z.shape[1], n_coef, Z.shape[0], gamma)
    mdl.load(Z, beta)
    if xsq is None:
        xsq = V.row_sqnorms(X)
    out, _ = mdl.decision_rows(X, xsq, n_threads)
    return out.reshape(X.shape[0], n_coef)


def kernel_decision(X, Z, dual_coef, gamma, chunk=4096):
    """k(X, Z) @ dual_coef.T in row chunks (bounded memory); X CSR or dense: numpy's
    formula (within 1e-12 of the kernel loop's values)."""
    n = X.shape[0]
    out = np.zeros((n, dual_coef.shape[0]))
    if Z.shape[0] == 0:
        return out
    zsq = np.einsum("ij,ij->i", Z, Z)
    for a in range(0, n, chunk):
        # float32 input in float64 a chunk at a time: the same numbers as a float64 X
        Xa = X[a:a + chunk].astype(np.float64, copy=False)
        if sp.issparse(Xa):
            xsq = np.asarray(Xa.multiply(Xa).sum(axis=1)).ravel()
            dots = np.asarray(Xa @ Z.T)
        else:
            xsq = np.einsum("ij,ij->i", Xa, Xa)
            dots = Xa @ Z.T
        d2 = np.maximum(xsq[:, None] + zsq[None, :] - 2.0 * dots, 0.0)
        out[a:a + chunk] = np.exp(-gamma * d2) @ dual_coef.T
    return out
