import os
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from pybudget.datasets import external_data_dir


def make_problem(n=60, d=15, density=0.3, seed=0, zero_rows=0):
    """Small sparse binary problem with a linear signal, labels in {-1, +1}."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, format="csr", random_state=rng)
    X.data = rng.standard_normal(X.nnz)
    if zero_rows:
        X = sp.vstack([X, sp.csr_matrix((zero_rows, d))]).tocsr()
    w = rng.standard_normal(d)
    y = np.sign(X @ w + 0.3 * rng.standard_normal(X.shape[0]))
    y[y == 0] = 1
    return X, y


@pytest.fixture
def problem():
    return make_problem()


def data_dir():
    return Path(os.environ.get("PYBUDGET_DATA", external_data_dir()))


def need_data(*names):
    """Skip (cleanly) when the benchmark data files are absent."""
    missing = [n for n in names if not (data_dir() / n).exists()]
    return pytest.mark.skipif(bool(missing), reason=f"benchmark data absent: {missing}")
