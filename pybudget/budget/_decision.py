"""Decision values of a budgeted model by the solvers' own kernel loop (the kernel row
of a training step, ``BudgetModel.kernel_row_csr``, then its weighted sum), the rows
spread over threads: what ``BudgetSVC.decision_function`` and the offset's scoring
compute.  Each row's value is computed by one thread in one fixed order, so the bits do
not depend on the number of threads."""
import numpy as np

from pybudget._core import _validation as V
from pybudget.budget._budget import BudgetModel


def decision_values(Z, beta, gamma, X, xsq=None, n_threads=1):
    """f_c(x_i) = sum_j beta[j, c] exp(-gamma |z_j - x_i|^2) for the rows of canonical
    CSR X (float64 or float32 values; ``xsq`` their squared norms, computed when None),
    SV rows Z (n_sv, d) and true coefficients beta (n_sv, n_coef), on up to
    ``n_threads`` threads.  Returns an (n, n_coef) array."""
    n_coef = beta.shape[1]
    if Z.shape[0] == 0:
        return np.zeros((X.shape[0], n_coef))
    mdl = BudgetModel(Z.shape[1], n_coef, Z.shape[0], gamma)
    mdl.load(Z, beta)
    if xsq is None:
        xsq = V.row_sqnorms(X)
    out, _ = mdl.decision_rows(X, xsq, n_threads)
    return out.reshape(X.shape[0], n_coef)
