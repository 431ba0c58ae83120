"""The final exact solve of a budgeted model's coefficients on its own support vectors
(``BudgetSVC(refit=...)``).

With the centres S (the budget's final support vectors) fixed, the model
f(x) = sum_j a_j k(x, s_j) + b is a linear model on the kernel columns K(x, S): the
Nystroem problem with S as landmarks.  Its SVM at the same C,

    min_a,b  1/2 a' K_SS a + C sum_i L(y_i (K_iS a + b)),

with L the squared hinge max(0, 1 - m)^2 (``refit=True`` or "squared_hinge") or the
hinge smoothed over margins within ``HUBER`` of 1 ("hinge": Chapelle's Huber hinge,
0 above 1 + h, (1 + h - m)^2 / (4h) within h of 1, 1 - m below 1 - h), is solved here
in the coefficients a themselves.  That is the whitened problem on the features
phi(x) = K(x, S) K_SS^(-1/2) with w = K_SS^(1/2) a (a' K_SS a = |w|^2 and
phi(x) w = K(x, S) a), without forming phi (n x B times B x B: for B = 2000 more
work than the solve).  The offset b is not regularised.

The solver is Newton's method on that piecewise quadratic (Chapelle, "Training a support
vector machine in the primal", Neural Computation 2007): L is quadratic on a set Q of
rows (the squared hinge's positive losses, the Huber hinge's rows within h of 1) and
linear or zero elsewhere, so one Cholesky solve of H = K_SS + C L'' K_QS' K_QS (with the
offset's row and column) gives the step; it is taken with an exact line search along
it, and the run stops when no row changes piece (the step was exact) or the Newton
decrement is below ``tol`` times the objective.  K_QS' K_QS is updated by the rows that
enter or leave Q, so the iterations after the first cost O(changed rows x B^2 + B^3 /
3).  It starts from the stochastic solver's coefficients.

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
MAX_ITER = 50        # Newton iterations (the pieces settle in about 5-20)
REBUILD = 0.5        # rebuild K_QS' K_QS when more rows changed than this share of Q
# The hinge's smoothing h: the smallest of 0.5, 0.1 and 0.01 at which Newton settled
# in about as many iterations as with the squared hinge on a9a, ijcnn1 and w8a (B = 500
# and 2000, seeds 0-4: 8-19; h = 0.1 took 32-41 on ijcnn1, h = 0.01 did not settle
# within 99 there).
HUBER = 0.5


class SquaredHinge:
    """L(m) = max(0, 1 - m)^2."""
    curvature = 2.0          # L'' on its quadratic piece

    @staticmethod
    def at(margins):
        """(sum of L, L' at each margin, the rows on the quadratic piece, the pieces of
        every row: what must repeat for Newton's step to have been exact)."""
        r = 1.0 - margins
        quad = r > 0.0
        r = np.where(quad, r, 0.0)
        return float(r @ r), -2.0 * r, quad, (quad,)


class HuberHinge:
    """The hinge smoothed over margins within h of 1 (Chapelle 2007)."""

    def __init__(self, h=HUBER):
        self.h = h
        self.curvature = 1.0 / (2.0 * h)

    def at(self, margins):
        h = self.h
        quad = np.abs(1.0 - margins) <= h
        lin = margins < 1.0 - h
        r = np.where(quad, 1.0 + h - margins, 0.0)
        loss = float(r @ r) / (4.0 * h) + float(np.sum(1.0 - margins[lin]))
        return loss, np.where(lin, -1.0, -r / (2.0 * h)), quad, (quad, lin)


LOSSES = {"squared_hinge": SquaredHinge(), "hinge": HuberHinge()}


def _gram(rows):
    """rows' rows (upper triangle only: what the Cholesky factorisation reads)."""
    return dsyrk(1.0, rows.T, trans=0, lower=0)


class _Active:
    """K_QS' K_QS (upper triangle) and K_QS' 1 for a set Q of rows, updated by the rows
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


def refit_binary(K, Kss, y, C, a0, b0, fit_bias=True, loss="squared_hinge", tol=TOL,
                 max_iter=MAX_ITER):
    """Minimise 1/2 a'Kss a + C sum_i L(y_i (K_i a + b)) over (a, b) by Newton's method
    with exact line searches, from (a0, b0); L: ``LOSSES[loss]``.

    K (n, m) the kernel columns of the training rows, Kss (m, m) the centres' kernel,
    y +-1 floats, C > 0, fit_bias False: b stays 0.  Returns (a, b, RefitInfo)."""
    L = LOSSES[loss]
    m = Kss.shape[0]
    a = np.array(a0, dtype=np.float64)
    b = float(b0) if fit_bias else 0.0
    curv = C * L.curvature          # C L'' on the quadratic piece
    act = _Active(K)
    Ka = K @ a
    Kssa = Kss @ a
    converged, it, dec, f, pieces = False, 0, np.inf, np.inf, None
    while True:
        margins = y * (Ka + b)
        total, dl, quad, now = L.at(margins)
        f = 0.5 * float(a @ Kssa) + C * total
        if it >= max_iter:
            break
        if pieces is not None and all(np.array_equal(p, q) for p, q in zip(now, pieces)):
            converged = True     # the last step solved these pieces' quadratic exactly
            break
        pieces = now
        act.set(quad)
        ydl = y * dl
        g_a = Kssa + C * (ydl @ K)
        H = Kss + curv * act.G
        if fit_bias:
            g = np.append(g_a, C * ydl.sum())
            Hb = np.empty((m + 1, m + 1))
            Hb[:m, :m] = H
            Hb[:m, m] = Hb[m, :m] = curv * act.s
            Hb[m, m] = curv * quad.sum()
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
        t = _line_search(L, margins, y * d_out, float(a @ Kda), float(da @ Kda), C)
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


def _line_search(L, margins, dm, aKd, dKd, C, max_iter=100):
    """argmin over t >= 0 of 1/2 (a + t da)'Kss(a + t da) + C sum_i L(margins_i +
    t dm_i), a convex piecewise quadratic (and linear) function of t: Newton steps, each
    exact on its pieces, kept inside a bracket of the minimum (bisection when a step
    leaves it); it ends when the pieces repeat (Chapelle 2007)."""
    def slope(t):
        _, dl, quad, pieces = L.at(margins + t * dm)
        return (aKd + t * dKd + C * float(dl @ dm),
                dKd + C * L.curvature * float(dm[quad] @ dm[quad]), pieces)

    lo, hi = 0.0, 1.0
    while slope(hi)[0] < 0.0 and hi < 1e12:     # (the minimum lies beyond hi)
        lo, hi = hi, 2.0 * hi
    t, last = max(lo, 1.0), None
    for _ in range(max_iter):
        g, c, pieces = slope(t)
        if g > 0.0:
            hi = min(hi, t)
        else:
            lo = max(lo, t)
        t_new = t - g / c if c > 0.0 else 0.5 * (lo + hi)
        inside = lo <= t_new <= hi
        if inside and last is not None and all(np.array_equal(p, q)
                                               for p, q in zip(pieces, last)):
            return t_new
        last = pieces
        t = t_new if inside else 0.5 * (lo + hi)
        if hi - lo <= 1e-15 * hi:
            break
    return t


@dataclass(frozen=True)
class RefitInfo:
    """One problem's Newton run: iterations, whether it ended at the optimum (the
    active set repeated, or the decrement fell to round-off), the objective and the
    last squared Newton decrement."""
    n_iter: int
    converged: bool
    objective: float = 0.0
    decrement: float = 0.0


def refit_model(X, codes, Z, dual, intercept, gamma, C, fit_bias, blocks=None,
                loss="squared_hinge"):
    """Refit every problem of a budgeted model on its own support vectors.

    X canonical CSR, codes class indices, Z (n_sv, d), dual (n_problems, n_sv),
    intercept (n_problems,).  Binary: one problem (positive side class 1).  More
    classes: one-vs-rest, problem k class k against the rest, on the shared SVs (BSGD)
    or, with ``blocks`` (a list of (start, stop) per problem: one-vs-rest BSCA's
    stacked SVs), each on its own; ``loss``: a key of ``LOSSES``.  Returns (dual,
    intercept, a RefitInfo per problem)."""
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
                                  fit_bias, loss)
        dual[k, lo:hi] = a
        b_out[k] = b if fit_bias else 0.0
        infos.append(info)
    return dual, b_out, infos
