"""BSCA on a cluster: each one-vs-rest problem whole on one worker (method "whole"'s
row copies and dealing, ``_dask_whole``), with one machine's solver, seed and
constants, so the model is one machine's to the last bit whoever runs a problem.

BSCA keeps a dual variable per row and problem; a problem that runs where all rows are
keeps its duals there, and only its B support vectors come back (the duals are
dropped: ``checkpoints`` and ``refit``, which need them, are one machine's).
"""
from dataclasses import dataclass

import numpy as np

from pybudget._core import _validation as V
from pybudget._core._parallel import problem_seed
from pybudget.budget.svm import BudgetParams, bsca_problem, scale_gamma


@dataclass(frozen=True)
class RowsSpec:
    """What the copies of all rows hold (``_whole.all_rows``): d columns, the labels'
    indices in ``classes``, plain squared norms (no bias column)."""
    d: int
    classes: np.ndarray
    bias: float = 0.0
    regression: bool = False


@dataclass(frozen=True)
class BscaProblems:
    """BSCA's binary problems (class k against the rest, ``budget.svm.bsca_problem``)
    as a job of method "whole", with the fit's constants decided on the client as one
    machine decides them on all rows; gamma None: "scale", computed where the rows
    are (``prepare``), as one machine sums all the values (the client's sum over the
    partitions differs in the last bits)."""
    spec: RowsSpec
    params: BudgetParams
    gamma: object           # a float, or None for "scale"
    budget: int
    merge_size: int
    cap: int
    sparse: bool
    seed: int
    n_problems: int

    def prepare(self, rows, y, sw):
        return scale_gamma(rows.X) if self.gamma is None else self.gamma

    def solve(self, data, k):
        """(the problem's ``ProblemFit`` without its duals, gamma)."""
        rows, codes, _, gamma = data
        fit = bsca_problem(rows.X, rows.sqnorms, codes, k, problem_seed(self.seed, k),
                           self.params, gamma, self.budget, self.merge_size,
                           self.cap, self.sparse, self.n_problems)
        return fit._replace(alpha=None), gamma     # (n duals: they stay on the worker)

    @staticmethod
    def nbytes(out):
        return V.matrix_bytes(out[0].Z) + out[0].coef.nbytes

    @staticmethod
    def put(W, n_problems, i, out):
        return W            # (the outputs hold the SVs)
