"""A budgeted model's exact state, so that a model can travel between processes (a hop of
pybudget.dask's budgeted ring) and continue with the same bits as one that stayed."""
from dataclasses import dataclass

import numpy as np

from pybudget._core import _validation as V


@dataclass(frozen=True)
class ModelState:
    """``BudgetModel.state()``; ``BudgetModel.restore`` takes it back.

    Z: the SV rows (n_sv, d), dense or canonical CSR as the model stores them; sqn: their
    squared norms as the model computed them (a merged SV's is not recomputed from its
    row); beta: the coefficients before the lazy ``scale``; src: each SV's training index
    (-1 once merged); acc, avg_pending: the iterate average's sums and pending steps
    (acc None while no average runs)."""
    Z: object
    sqn: np.ndarray
    beta: np.ndarray
    scale: float
    src: np.ndarray
    acc: object
    avg_pending: float

    @property
    def n_sv(self):
        return self.beta.shape[0]

    @property
    def nbytes(self):
        """Bytes of its arrays (what a hop sends)."""
        return (V.matrix_bytes(self.Z) + self.sqn.nbytes + self.beta.nbytes + self.src.nbytes
                + (0 if self.acc is None else self.acc.nbytes))
