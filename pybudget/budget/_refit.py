"""The final exact solve of a budgeted model's coefficients on its own support vectors
(``BudgetSVC(refit=True)``).

With the centres S (the budget's final support vectors) fixed, the model
f(x) = sum_j a_j k(x, s_j) + b is a linear model on the kernel columns K(x, S): the
Nystroem problem with S as landmarks.  Its squared-hinge SVM at the same C,

    min_a,b  1/2 a' K_SS a + C sum_i max(0, 1 - y_i (K_iS a + b))^2,

is solved here in the coefficients a themselves.  That is the whitened problem on the
features phi(x) = K(x, S) K_SS^(-1/2) with w = K_SS^(1/2) a (a' K_SS a = |w|^2 and
phi(x) w = K(x, S) a), without forming phi (n x B times B x B: for B = 2000 more
work than the solve).  The offset b is not regularised.

The solver is Newton's method on that piecewise quadratic (Chapelle, "Training a support
vector machine in the primal", Neural Computation 2007): on the rows with a positive
loss (the active set) the objective is a quadratic whose minimiser one Cholesky solve of
H = K_SS + 2C K_AS' K_AS (with the offset's row and column) gives; the step is taken
with an exact line search along it, and the run stops when the active set no longer
changes (the exact minimiser) or the Newton decrement is below ``tol`` times the
objective.  K_AS' K_AS is updated by the rows that enter or leave the active set, so
the iterations after the first cost O(changed rows x B^2 + B^3 / 3).  It starts from
the stochastic solver's coefficients, whose active set is already close.

K_SS is singular when two centres coincide (and near-singular when they nearly do); a
ridge of ``JITTER`` times H's mean diagonal (raised where round-off needs it, ``_solve``)
keeps H positive definite; the gradient, the line search and the stopping rule use the
objective without it.
"""
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
from scipy.linalg.blas import dsyrk

from pybudget._core import _validation as V
from pybudget.budget._decision import center_kernel, kernel_matrix

JITTER = 1e-12       # ridge on H relative to its mean diagonal (_solve)
TOL = 1e-12          # Newton decrement / objective at which the run stops (round-off)
MAX_ITER = 50        # Newton iterations (the active set settles in about 5-15)
REBUILD = 0.5        # rebuild K_AS' K_AS when more rows changed than this share of A
def _gram(rows):
    """rows' rows (upper triangle only: what the Cholesky factorisation reads)."""
    return dsyrk(1.0, rows.T, trans=0, lower=0)


class _Active:
    """K_AS' K_AS (upper triangle) and K_AS' 1 for the active set A, updated by the rows
    that change."""

    def __init__(self, K):
        self.K = K
        self.mask = np.zeros(K.shape[0], dtype=bool)
        self.G = np.zeros((K.shape[1], K.shape[1]))
        self.s = np.zeros(K.shape[1])

    def set(self, mask):
        enter = np.flatnonzero(mask & ~self.mask)
        leave = np.flatnonzero(self.mask & ~mask)
        if enter.size + leave.size > REBUILD * max(1, int(mask.sum())):
            Ka = self.K[mask]
            self.G = _gram(Ka)
            self.s = Ka.sum(axis=0)
        else:
            for rows, sign in ((enter, 1.0), (leave, -1.0)):
                if rows.size:
                    Kr = self.K[rows]
                    self.G += sign * _gram(Kr)
                    self.s += sign * Kr.sum(axis=0)
        self.mask = mask.copy()


def refit_binary(K, Kss, y, C, a0, b0, fit_bias=True, tol=TOL, max_iter=MAX_ITER):
    """Minimise 1/2 a'Kss a + C sum_i max(0, 1 - y_i (K_i a + b))^2 over (a, b) by
    Newton's method with exact line searches, from (a0, b0).

    K (n, m) the kernel columns of the training rows, Kss (m, m) the centres' kernel,
    y +-1 floats, C > 0, fit_bias False: b stays 0.  Returns (a, b, RefitInfo)."""
    m = Kss.shape[0]
    a = np.array(a0, dtype=np.float64)
    b = float(b0) if fit_bias else 0.0
    two_c = 2.0 * C
    act = _Active(K)
    Ka = K @ a
    Kssa = Kss @ a
    converged, it, dec, f = False, 0, np.inf, np.inf
    while True:
        slack = 1.0 - y * (Ka + b)
        mask = slack > 0.0
        f = 0.5 * float(a @ Kssa) + C * float(slack[mask] @ slack[mask])
        if it >= max_iter:
            break
        same = np.array_equal(mask, act.mask) and it > 0
        if same:              # the last step solved this active set's quadratic exactly
            converged = True
            break
        act.set(mask)
        ys = np.where(mask, y * slack, 0.0)
        g_a = Kssa - two_c * (ys @ K)
        H = Kss + two_c * act.G
        if fit_bias:
            g = np.append(g_a, -two_c * ys.sum())
            Hb = np.empty((m + 1, m + 1))
            Hb[:m, :m] = H
            Hb[:m, m] = Hb[m, :m] = two_c * act.s
            Hb[m, m] = two_c * mask.sum()
            H = Hb
        else:
            g = g_a
        step = -_solve(H, g)
        dec = -float(g @ step)              # the Newton decrement, squared
        it += 1
        if dec <= tol * max(f, 1e-300):
            converged = True
            break
        da = step[:m]
        db = float(step[m]) if fit_bias else 0.0
        d_out = K @ da + db                 # the margins' direction
        Kda = Kss @ da
        t = _line_search(y, Ka + b, d_out, float(a @ Kda), float(da @ Kda), C)
        a += t * da
        b += t * db
        Ka += t * (d_out - db)
        Kssa += t * Kda
    return a, b, RefitInfo(it, converged, f, dec)


def _solve(H, g):
    """H^-1 g by Cholesky (H's upper triangle), with a ridge of JITTER times H's mean
    diagonal, raised 100-fold until the factorisation succeeds: K_SS is singular when
    two centres coincide, and the rank updates of K_AS' K_AS leave round-off of about
    eps |K_AS' K_AS| in its null directions."""
    scale = float(np.mean(np.diag(H)))
    ridge = JITTER * scale
    diag = np.diag(H).copy()
    for _ in range(8):
        np.fill_diagonal(H, diag + ridge)
        try:
            return sla.cho_solve(sla.cho_factor(H, lower=False, check_finite=False,
                                                overwrite_a=False), g, check_finite=False)
        except np.linalg.LinAlgError:
            ridge *= 100.0
    return np.linalg.lstsq(H, g, rcond=None)[0]


def _line_search(y, out, d, aKd, dKd, C, max_iter=50):
    """argmin_t of 1/2 (a + t da)'Kss(a + t da) + C sum_i max(0, 1 - y_i (out_i +
    t d_i))^2 (a convex piecewise quadratic in t) by 1-D Newton steps from t = 1, each
    exact on its active set: it ends when the active set repeats (Chapelle 2007)."""
    t = 1.0
    yd = y * d
    last = None
    for _ in range(max_iter):
        slack = 1.0 - y * (out + t * d)
        mask = slack > 0.0
        grad = aKd + t * dKd - 2.0 * C * float(yd[mask] @ slack[mask])
        curv = dKd + 2.0 * C * float(d[mask] @ d[mask])
        if curv <= 0.0:
            break
        t_new = t - grad / curv
        if last is not None and np.array_equal(mask, last):
            t = t_new
            break
        last = mask
        t = t_new
    return max(t, 0.0)


@dataclass(frozen=True)
class RefitInfo:
    """One problem's Newton run: iterations, whether it ended at the optimum (the
    active set repeated, or the decrement fell to round-off), the objective and the
    last squared Newton decrement."""
    n_iter: int
    converged: bool
    objective: float = 0.0
    decrement: float = 0.0


def refit_model(X, codes, Z, dual, intercept, gamma, C, fit_bias, blocks=None):
    """Refit every problem of a budgeted model on its own support vectors.

    X canonical CSR, codes class indices, Z (n_sv, d), dual (n_problems, n_sv),
    intercept (n_problems,).  Binary: one problem (positive side class 1).  More
    classes: one-vs-rest, problem k class k against the rest, on the shared SVs (BSGD)
    or, with ``blocks`` (a list of (start, stop) per problem: one-vs-rest BSCA's
    stacked SVs), each on its own.  Returns (dual, intercept, a RefitInfo per
    problem)."""
    n_prob = dual.shape[0]
    dual = dual.copy()
    b_out = np.array(intercept, dtype=np.float64).copy()
    infos = []
    if blocks is None:
        blocks = [(0, Z.shape[0])] * n_prob
    held = None         # the block whose kernel columns K, Kss hold (one at a time)
    for k in range(n_prob):
        lo, hi = blocks[k]
        if hi - lo == 0:
            infos.append(RefitInfo(0, True))
            continue
        if held != (lo, hi):
            S = Z[lo:hi]
            V.dense_size(X.shape[0] * S.shape[0], f"refit=True: the kernel columns of "
                         f"{X.shape[0]} rows against {S.shape[0]} support vectors",
                         "reduce the budget or refit on fewer rows")
            K = None        # (the previous block's columns go before the next come)
            K, Kss, held = kernel_matrix(X, S, gamma), center_kernel(S, gamma), (lo, hi)
        positive = 1 if n_prob == 1 else k
        y = np.where(codes == positive, 1.0, -1.0)
        a, b, info = refit_binary(K, Kss, y, C, dual[k, lo:hi], b_out[k] if fit_bias else 0.0,
                                  fit_bias)
        dual[k, lo:hi] = a
        b_out[k] = b if fit_bias else 0.0
        infos.append(info)
    return dual, b_out, infos
