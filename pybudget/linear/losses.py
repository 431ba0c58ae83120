"""One entry per loss: the dual problem it is, and the pieces of that dual which the
one-machine solver (``linear.problem.dual_cd``) and the cluster (``dask._partition``)
both use.  Adding a loss: an entry here (its dual CD problem must
exist in the compiled hooks, ``linear/_dcd_*.pxd``), then its name in the estimators'
lists of losses.

The duals, in alpha (the dual variables), with w = sum_i alpha_i y_i x_i (svr:
sum_i beta_i x_i) and D_ii = 1 / (2 C_i) for the squared losses (else 0):

- svm (hinge, squared hinge): D(alpha) = sum alpha - 1/2 sum D alpha^2 - 1/2 |w|^2,
  0 <= alpha <= C (no upper bound when squared);
- svr (epsilon-insensitive, squared): D(beta) = sum y beta - epsilon sum |beta|
  - 1/2 sum D beta^2 - 1/2 |w|^2, -C <= beta <= C (unbounded when squared);
- lr (logistic): D(alpha) = -sum (alpha log(alpha / C) + c log(c / C)) - 1/2 |w|^2,
  c = C - alpha, 0 < alpha < C strictly.

Every function keeps the order of its floating-point operations: the one-machine and
the cluster code give the bits they gave before the table.
"""
from dataclasses import dataclass

import numpy as np
from scipy.special import xlogy


@dataclass(frozen=True)
class Loss:
    kind: str           # the dual CD problem: "svm", "svr" or "lr"
    squared: bool       # a squared loss: an unbounded box and a diagonal D

    def start_inside(self, upper):
        """The logistic dual's start, min(0.001 C_i, 1e-8) (liblinear's), inside its open
        box; None for the others (they start at 0)."""
        return np.minimum(1e-3 * upper, 1e-8) if self.kind == "lr" else None

    def lower(self, upper):
        """The box's lower bound for the bound upper: -upper (svr) or 0."""
        return -upper if self.kind == "svr" else 0.0

    def linear_term(self, y, a, epsilon):
        """The dual's term linear in the duals (svm, svr)."""
        if self.kind == "svm":
            return a.sum()
        return np.sum(y * a) - epsilon * np.abs(a).sum()

    @staticmethod
    def entropy(a, c, cvec):
        """The logistic dual's sum_i a log(a / C) + c log(c / C) (written with a/C, c/C to
        avoid cancelling C log C)."""
        return np.sum(xlogy(a, a / cvec) + xlogy(c, c / cvec))


LOSS = {"hinge": Loss("svm", False), "squared_hinge": Loss("svm", True),
        "epsilon_insensitive": Loss("svr", False),
        "squared_epsilon_insensitive": Loss("svr", True),
        "logistic": Loss("lr", False)}

# loss -> (dual CD problem, squared loss)
PROBLEM_OF = {name: (loss.kind, loss.squared) for name, loss in LOSS.items()}
