"""How a linear problem is solved: the measured rules, decided once per fit.

A fit checks its rows once (``Rows``: canonical CSR X and the rows' squared norms with
the bias column) and decides one ``Plan`` from them and its parameters (``plan_for``); the
solver (``problem.solve_binary``) follows the plan and decides nothing.  The rules:

- which strategy ``selection="auto"`` stands for (``resolve_selection``: hard shrinking,
  AVSF or the primal Newton solver);
- the route of a dominant bias (``bias_dominated``: the primal Newton solver or pair
  steps, whatever the selection: no single-coordinate strategy converges there);
- a team of threads on one dual CD problem (``_team.team_size``) and the primal Newton
  route's threads (``primal.newton_threads``).

Each constant below says what it is for and which measurement set it.  Tests hand a
Plan to ``solve_binary`` instead of patching a rule.
"""
from dataclasses import dataclass

import numpy as np

from pybudget._core import _validation as V
from pybudget._core._csr import used_columns
from pybudget.linear._team import team_size
from pybudget.linear.losses import PROBLEM_OF
from pybudget.linear.primal import SMOOTH_LOSSES, newton_threads

# What a plan may run: the dual CD strategies, dual CD with pair steps (a dominant bias)
# and the primal Newton solver.
STRATEGIES = ("uniform", "shrinking", "avsf", "pairs", "newton")


@dataclass(frozen=True, eq=False)
class Rows:
    """Training rows checked once, at the public edge: ``X`` canonical CSR (finite
    values, int32 sorted indices, float64 or float32), ``bias`` the constant feature's
    value (0: no intercept) and ``sqnorms`` the rows' squared norms with it (float64;
    computing them refused data whose squares overflow).  Below the edge nothing checks
    these again."""
    X: object
    bias: float
    sqnorms: np.ndarray

    @classmethod
    def check(cls, X, bias=0.0, name="X"):
        """Rows of any input ``as_csr`` takes."""
        return cls.canonical(V.as_csr(X, name), bias, name)

    @classmethod
    def canonical(cls, X, bias=0.0, name="X"):
        """Rows of an already canonical CSR X (an estimator's validated input)."""
        return cls(X, float(bias), V.row_sqnorms(X, bias, name))

    @property
    def n(self):
        return self.X.shape[0]

    def take(self, keep):
        """The rows where the boolean mask ``keep`` is true (self when it keeps all)."""
        if keep.all():
            return self
        return Rows(self.X[keep], self.bias, self.sqnorms[keep])


@dataclass(frozen=True)
class Plan:
    """How one binary problem is solved: ``selection``, one of STRATEGIES, and the
    threads it runs on: for dual CD a team of ``threads`` that combine their steps every
    ``chunk`` visits each (``threads == 1``, ``chunk == 0``: no team), for "newton" the
    blocks of rows its sums are split into, one thread each."""
    selection: str
    threads: int = 1
    chunk: int = 0

    def __post_init__(self):
        V.choice("selection", self.selection, STRATEGIES)
        if self.threads < 1 or self.chunk < 0:
            raise ValueError(f"a plan needs threads >= 1 and chunk >= 0, got {self}")
        if self.selection != "newton" and (self.threads > 1) != (self.chunk > 0):
            raise ValueError(f"a dual CD team needs a chunk, one thread none: got {self}")


def plan_for(rows, cvec, loss, selection="auto", n_threads=1, tol_rule="max"):
    """The plan of a problem (or of every problem of a one-vs-rest fit) on ``rows`` with
    per-row costs ``cvec``, decided on the rows of positive cost: ``selection``
    resolved (``resolve_selection``), the route of a dominant bias (``bias_dominated``;
    it replaces any selection, since none converges there, and ``selection_`` reports
    it), and up to ``n_threads`` threads where they are measured to pay."""
    rows = rows.take(cvec > 0)
    cvec = cvec[cvec > 0]
    used = resolve_selection(selection, rows, cvec, loss)
    if bias_dominated(loss, rows, tol_rule):
        used = "newton" if loss in SMOOTH_LOSSES else "pairs"
    if used == "newton":
        return Plan("newton", newton_threads(rows.X, n_threads))
    threads, chunk = team_size(rows.X, n_threads, PROBLEM_OF[loss][0], used)
    return Plan(used, threads, chunk)


def resolve_selection(selection, rows, cvec, loss=None):
    """Resolve ``selection="auto"`` to the strategy it stands for.

    The choice uses cheap statistics of the data and C.  For the smooth classification
    losses (squared hinge, logistic) on rows that outnumber the columns in use
    ``PRIMAL_ROWS_PER_COLUMN`` times, the primal Newton solver (``"newton"``,
    :mod:`pybudget.linear.primal`): there dual CD needed 1.05-49 times its time, and
    often stopped at its sweep cap far from the optimum (the measurement is described at
    ``PRIMAL_ROWS_PER_COLUMN``).  Otherwise dual CD.  Hard shrinking wins unless the
    problem has many free dual variables that need far more updates than the rest,
    which is when AVSF's soft shrinking pays off: data of high dimension relative to the
    number of rows (text), at C large enough that the box constraints stop binding
    (median C_i (‖x_i‖² + bias²) >= 1).  On low-dimensional data at most about d + 1
    variables are free at the optimum, so hard shrinking can drop nearly everything and
    stays ahead at every C (AVSF paper, §5; measured in docs/benchmarks.md, section 1).

    Parameters
    ----------
    selection : str
        "uniform", "shrinking", "avsf" or "auto"; anything but "auto" is returned
        unchanged.
    rows : Rows
        The training rows (with the bias column's value).
    cvec : ndarray of shape (n_samples,)
        Per-sample C_i.
    loss : str, optional
        The loss; None: the choice among the dual CD strategies alone.

    Returns
    -------
    str
        For ``selection="auto"``: "newton" where ``primal_pays``; else "shrinking" or
        "avsf" ("shrinking" when X has no entries or uses fewer than
        ``AUTO_MIN_DIM_RATIO * n_samples`` columns, "avsf" when the median of
        C_i (‖x_i‖² + bias²) is at least ``AUTO_MIN_SCALE``).  Otherwise ``selection``.
    """
    if selection != "auto":
        return selection
    X = rows.X
    if X.nnz == 0:
        return "shrinking"
    d_used = used_columns(X)    # columns in use
    if primal_pays(loss, X.shape[0], d_used):
        return "newton"
    if d_used < AUTO_MIN_DIM_RATIO * X.shape[0]:
        return "shrinking"
    return auto_selection(X.shape[0], d_used, cvec * rows.sqnorms)


def auto_selection(n, d_used, scales):
    """The rule of ``selection="auto"`` from its statistics: the rows n, the columns in
    use and every row's C_i (|x_i|^2 + bias^2) (also used by pybudget.dask, which
    gathers them from its partitions)."""
    if d_used == 0 or d_used < AUTO_MIN_DIM_RATIO * n:
        return "shrinking"
    return "avsf" if float(np.median(scales)) >= AUTO_MIN_SCALE else "shrinking"


def primal_pays(loss, n, d_used):
    """Whether "auto" sends a problem of n rows using d_used columns to the primal
    Newton solver: a smooth classification loss (``PRIMAL_AUTO_LOSSES``) and at least
    ``PRIMAL_ROWS_PER_COLUMN`` rows per column in use, the bias's included."""
    return loss in PRIMAL_AUTO_LOSSES and n >= PRIMAL_ROWS_PER_COLUMN * (d_used + 1)


def bias_dominated(loss, rows, tol_rule="max"):
    """Whether the bias column dominates the dual, so that single-coordinate dual CD
    cannot converge: the bias adds ``bias**2 y y'`` to the dual's Q, and coordinate
    steps, of curvature about ``bias**2``, crawl along the directions that keep
    ``sum_i y_i alpha_i`` fixed.

    That is when ``bias**2`` is at least ``PRIMAL_BIAS_RATIO`` (100) times the median
    squared norm of the rows (without the bias) for the smooth losses (squared hinge,
    logistic, squared epsilon-insensitive), which then go to the primal Newton solver
    (:mod:`pybudget.linear.primal`, ``selection_ == "newton"``), and ``PAIRS_BIAS_RATIO``
    (5) times for the hinge and epsilon-insensitive losses, which have no smooth primal
    and go to dual CD with pair steps that keep the bias fixed (``selection_ ==
    "pairs"``, see ``_dcd.pxi``).  Never without a bias, nor with the regression rule
    ``tol_rule="liblinear"`` (liblinear's own solver)."""
    bias = rows.bias
    if bias == 0.0 or tol_rule == "liblinear" or rows.n == 0:
        return False
    ratio = PRIMAL_BIAS_RATIO if loss in SMOOTH_LOSSES else PAIRS_BIAS_RATIO
    return bias * bias >= ratio * float(np.median(rows.sqnorms - bias * bias))


# "auto": hard shrinking when the columns in use are fewer than this share of the rows
# (low-dimensional data: at most about d + 1 free variables at the optimum), and AVSF
# from this median C_i (|x_i|^2 + bias^2) up (the boxes stop binding); docs/benchmarks.md,
# section 1.
AUTO_MIN_DIM_RATIO = 0.5
AUTO_MIN_SCALE = 1.0
# Rows per column in use from which "auto" takes the primal Newton solver.  Measured on
# a 2-core machine, medians of 3, solve_linear at tol 0.1 with a bias against
# primal_newton at tol 0.1, C = 1 and 100, on the binary problems of the benchmark data
# (multi-class sets: the first class against the rest): from 166 rows per column up
# (a9a, ijcnn1, w8a, pendigits, svmguide1, a dense 200,000 x 50 set) the primal Newton
# solver beat dual CD in every cell (1.05-49 times faster; the dual often stopped at its
# cap of 1000 sweeps far from the optimum); below 100 the dual won on mushrooms and on
# dna.scale at C = 1 and lost on german.numer and splice; on text (debian-lib, fewer
# rows than columns) the dual won by 3-64 times.  Checked afterwards on synthetic sets
# of 120-500 rows per column: 6.4-158 times faster than hard shrinking.
PRIMAL_ROWS_PER_COLUMN = 100
PRIMAL_AUTO_LOSSES = ("squared_hinge", "logistic")   # (regression: not measured)
# bias^2 over the median squared row norm from which dual CD stalls: the bias column adds
# bias^2 y y' to the dual's Q (measured on a9a: every loss converges at intercept_scaling
# 10, ratio 7, none at 100, ratio 700; liblinear's dual solvers stall there too).
PRIMAL_BIAS_RATIO = 100.0
# The same for the hinge and epsilon-insensitive losses, whose pair steps cost little
# more than plain dual CD: at intercept_scaling 10 (a9a: ratio 7; ijcnn1: 69) hard
# shrinking needs about 1000 sweeps at C = 1 (liblinear stops at its cap of 300), the
# pair steps about 200 and 60.
PAIRS_BIAS_RATIO = 5.0
