"""The seam of ``dcd_solve`` (the dual CD solver of _dcd.pxi): what it is told
(``DcdOptions``), the warm-startable state it updates in place (``DcdState``) and what
it reports (``DcdOutcome``); and what ``dcd_round`` (one partition's share of a ring
round) reports (``RoundOutcome``).  Plain Python, so that the compiled modules and
their callers share one definition."""
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class DcdOptions:
    """How one dual CD run goes.

    selection: a ``SELECTIONS`` value or ``PAIRS``; tol and max_iter (sweeps): the
    stopping rule ``tol_rule`` (a ``TOL_RULES`` value: 0, the largest violation; 1,
    liblinear's L1 rule for "svr"); seed: the random order's; squared: the
    squared-hinge (or squared epsilon-insensitive) dual; problem: "svm", "svr", "lr"
    or "cs" (``n_classes`` classes); epsilon: SVR's insensitive zone; n_threads and
    chunk: a team of threads combining every ``chunk`` visits each (problems "svm"
    and "svr"); verbose: a per-sweep trace."""
    selection: int
    tol: float
    max_iter: int
    seed: int
    squared: bool = False
    problem: str = "svm"
    epsilon: float = 0.0
    n_classes: int = 0
    tol_rule: int = 0
    n_threads: int = 1
    chunk: int = 0
    verbose: int = 0


@dataclass
class DcdState:
    """The solver's state, updated in place by a run: the duals ``alpha`` and the
    weights ``w`` (their model on entry), AVSF's preferences ``prefs``, ``perm`` whose
    first ``n_active`` rows are hard shrinking's active set, AVSF's reference gain
    ``dref`` (<= 0: learn it in the first sweep), and for the logistic problem ``comp``
    = upper - alpha (computed when None).  Arrays must be C-contiguous float64
    (``perm`` int32)."""
    alpha: np.ndarray
    w: np.ndarray
    prefs: np.ndarray
    perm: np.ndarray
    n_active: int
    dref: float = 0.0
    comp: np.ndarray = None


@dataclass(frozen=True)
class DcdOutcome:
    """What a run reports: sweeps (``n_iter``), coordinate visits (``n_steps``),
    whether ``tol`` was reached, the exact maximal violation at the end and the
    weighted primal loss there (``loss_sum``); for the L1 rule the first and last
    sweeps' L1 norms; for a team, its combines and the damped ones."""
    n_iter: int
    n_steps: int
    converged: bool
    kkt_violation: float
    loss_sum: float
    l1_init: float = None
    l1: float = None
    combines: int = None
    damped: int = None


@dataclass(frozen=True)
class RoundOutcome:
    """What a ``dcd_round`` call reports: hard shrinking's active rows after it
    (``n_active``), its coordinate visits (``n_steps``), and from its check pass (0
    without one) the exact maximal violation and the weighted primal loss at the
    entering weights (``loss_sum``)."""
    n_active: int
    n_steps: int
    kkt_violation: float = 0.0
    loss_sum: float = 0.0


# The thresholds and extremes of hard shrinking, first in both records below, in this
# order (``roll_carried`` and ``fresh_carry`` read and return them).
THRESHOLDS = ("max_old", "min_old", "max_new", "min_new")

# The scalars a ``dcd_round`` keeps between calls on one partition (a 1-element array of
# this dtype, the ``RoundScalars`` struct of _dcd.pxi): hard shrinking's thresholds and
# the extremes of the gradients seen since they were set, AVSF's reference gain (<= 0:
# learnt in the first sweep), the logistic loss's inner tolerance, and where a shrinking
# lap continues.
ROUND_SCALARS = np.dtype([(name, np.float64) for name in
                          (*THRESHOLDS, "dref", "lr_tol", "lap_pos")])

# What the ring carries per problem from one partition to the next (a 1-element array of
# this dtype, shipped with the weights): the thresholds handed on and the extremes folded
# over the round's partitions, AVSF's reference gain, the logistic inner tolerance and
# the dual CD steps so far.
RING_CARRY = np.dtype([(name, np.float64) for name in
                       (*THRESHOLDS, "dref", "lr_tol", "steps")])
