# Merge maths and budget maintenance (ALGORITHMS.md section 3).
#
# Notation: two SVs with coefficients b_m, b_n (same sign in the binary case),
# c = gamma * ||z_m - z_n||^2 = -ln(kappa).  The merged point z = h z_m + (1-h) z_n has
# k(z_m, z) = exp(-c (1-h)^2) =: a and k(z_n, z) = exp(-c h^2) =: b; its best coefficient is
# b_m a + b_n b (per class), and the weight degradation of that choice is
#   WD(h) = A (1 - a^2) + D (1 - b^2) + 2 Cc (kappa - a b)
# with A = |b_m|^2, D = |b_n|^2, Cc = b_m . b_n.  Written this way (expm1 for every
# bracket) it keeps full relative precision even where WD ~ 1e-17 (kappa -> 1, m -> 0),
# which the textbook form  A + D + 2 Cc kappa - |b_z|^2  does not.
from libc.math cimport exp, expm1, log, fabs, sqrt
from scipy.linalg.cython_lapack cimport dposv

from pybudget._budget cimport BudgetModel

import numpy as np

cdef double INVPHI = 0.6180339887498949      # 1 / golden ratio
cdef int GRID = 401                          # lookup nodes per axis, step 1/400


# ---- pairwise maths ------------------------------------------------------------------

cdef struct Objective:
    # What a merge maximises over h, with a = k(z_m, z), b = k(z_n, z) as above:
    # binary (squared False): s(h) = p a + q b, p = m, q = 1 - m (normalised kernel value);
    # multi-class (squared True): |b_m a + b_n b|^2 = p a^2 + 2 r a b + q b^2 with p = A,
    # q = D, r = Cc.
    double p, q, r, c
    bint squared


cdef inline double objective(const Objective* o, double h) noexcept nogil:
    cdef double a = exp(-o.c * (1.0 - h) * (1.0 - h)), b = exp(-o.c * h * h)
    if o.squared:
        return o.p * a * a + 2.0 * o.r * a * b + o.q * b * b
    return o.p * a + o.q * b


cdef inline double scan(const Objective* o, int nodes, double* lo, double* hi,
                        double* best) noexcept nogil:
    """Objective at nodes equally spaced nodes of [0, 1]: the best node (returned, with
    its value in best) and the bracket [lo, hi] of its two neighbours, clipped to [0, 1]."""
    cdef double step = 1.0 / (nodes - 1), f, hbest = 0.0
    cdef int k
    best[0] = -1.0
    for k in range(nodes):
        f = objective(o, step * k)
        if f > best[0]:
            best[0] = f
            hbest = step * k
    lo[0] = hbest - step if hbest - step > 0.0 else 0.0
    hi[0] = hbest + step if hbest + step < 1.0 else 1.0
    return hbest


cdef double wd_general(double A, double D, double Cc, double c, double h) noexcept nogil:
    cdef double one_a2 = -expm1(-2.0 * c * (1.0 - h) * (1.0 - h))
    cdef double one_b2 = -expm1(-2.0 * c * h * h)
    cdef double k_ab = -exp(-c) * expm1(2.0 * c * h * (1.0 - h))
    cdef double wd = A * one_a2 + D * one_b2 + 2.0 * Cc * k_ab
    return wd if wd > 0.0 else 0.0


cdef inline double golden(const Objective* o, double lo, double hi, double tol,
                          int max_it) noexcept nogil:
    """Golden-section search for the maximum of the objective on [lo, hi], assumed
    unimodal there: at most max_it shrinks, stopping once the bracket is no wider than
    tol; returns its midpoint."""
    cdef double x1 = hi - INVPHI * (hi - lo), x2 = lo + INVPHI * (hi - lo)
    cdef double f1 = objective(o, x1), f2 = objective(o, x2)
    cdef int _it
    for _it in range(max_it):
        if hi - lo <= tol:
            break
        if f1 < f2:
            lo = x1
            x1 = x2
            f1 = f2
            x2 = lo + INVPHI * (hi - lo)
            f2 = objective(o, x2)
        else:
            hi = x2
            x2 = x1
            f2 = f1
            x1 = hi - INVPHI * (hi - lo)
            f1 = objective(o, x1)
    return 0.5 * (lo + hi)


cdef double gss_h(double m, double c, double tol) noexcept nogil:
    """Golden-section search for h* = argmax s(h), m in [0, 1].

    s is a sum of two equal-width Gaussians centred at 0 (weight 1-m) and 1 (weight m).
    For kappa < e^-2 it can be bimodal; the global maximum then lies on the side of the
    heavier bump and s is unimodal on that half (s'(1/2) has the sign of m - 1/2), so
    searching [1/2, 1] when m >= 1/2 and [0, 1/2] otherwise finds the global maximum.
    Returns the midpoint of the final bracket (width <= tol)."""
    cdef double lo, hi
    cdef Objective o
    if c <= 0.0:
        return m          # kappa = 1: every h is optimal; m is the limit of h* as c -> 0
    if fabs(m - 0.5) <= 1e-12:
        # equal coefficients (the rule for unmerged Pegasos SVs): by symmetry h* = 1/2 when
        # s is unimodal (kappa >= e^-2); decide exactly instead of by rounding noise
        if c <= 2.0:
            return 0.5
        m = 0.5
    if m >= 0.5:
        lo = 0.5
        hi = 1.0
    else:
        lo = 0.0
        hi = 0.5
    o = Objective(m, 1.0 - m, 0.0, c, False)
    return golden(&o, lo, hi, tol, 200)


cdef double search_h_general(double A, double D, double Cc, double c, double tol) noexcept nogil:
    """argmax_h |b_m a + b_n b|^2 for coefficient vectors (multi-class, any signs): a scan
    at step 0.1 picks the bracket of the global maximum, golden section refines it to tol."""
    cdef Objective o = Objective(A, D, Cc, c, True)
    cdef double lo, hi, best, h0, h
    if c <= 0.0:
        return 0.5
    h0 = scan(&o, 11, &lo, &hi, &best)
    h = golden(&o, lo, hi, tol, 200)
    # the scan nodes themselves (notably the ends 0 and 1) may beat the refined point
    return h0 if best > objective(&o, h) else h


cdef double precise_h(double m, double c) noexcept nogil:
    """h* to ~1e-12 with no unimodality assumption: a dense scan of [0, 1] locates the
    global maximum's bracket, golden section shrinks it, Newton on s'(h) = 0 polishes."""
    cdef Objective o = Objective(m, 1.0 - m, 0.0, c, False)
    cdef double lo, hi, best, h, a, b, d1, d2, hn
    cdef int _it
    if c <= 0.0:
        return m
    scan(&o, 101, &lo, &hi, &best)
    h = golden(&o, lo, hi, -1.0, 60)
    # s is flat at its maximum, so comparing s values pins h only to ~sqrt(eps / s'');
    # Newton on s'(h) = 0 (s'/(2c) is computed to full absolute precision) finishes the
    # job inside the bracket.
    for _it in range(8):
        a = exp(-c * (1.0 - h) * (1.0 - h))
        b = exp(-c * h * h)
        d1 = m * (1.0 - h) * a - (1.0 - m) * h * b
        d2 = (m * a * (2.0 * c * (1.0 - h) * (1.0 - h) - 1.0)
              - (1.0 - m) * b * (1.0 - 2.0 * c * h * h))
        if d2 >= 0.0:
            break
        hn = h - d1 / d2
        if hn < lo or hn > hi:
            break
        if fabs(hn - h) < 1e-16:
            h = hn
            break
        h = hn
    return h


# ---- lookup tables ---------------------------------------------------------------------

cdef inline double r_limit_m0(double kappa) noexcept nogil:
    """R(0, kappa) = lim_{m->0} WD_n / (m (1-m) (1-kappa))^2."""
    if kappa <= 0.0:
        return 1.0
    if kappa >= 1.0:
        return 2.0
    return ((1.0 - kappa * kappa + 2.0 * kappa * kappa * log(kappa))
            / ((1.0 - kappa) * (1.0 - kappa)))


def build_tables():
    """(H, R), each GRID x GRID over m = i/400 (rows), kappa = j/400 (columns).

    H[i, j] = h*(m, kappa).  R is the normalised WD divided by (m (1-m) (1-kappa))^2: the
    normalised WD itself vanishes like m^2 at m -> 0 and like (1-kappa)^2 at kappa -> 1,
    where bilinear interpolation of it would be off by 100 % and more; the quotient is
    smooth (R -> 2 at kappa = 1 for every m) and interpolates to well below 1 %."""
    H = np.empty((GRID, GRID))
    R = np.empty((GRID, GRID))
    cdef double[:, ::1] Hv = H
    cdef double[:, ::1] Rv = R
    cdef int i, j
    cdef double m, kappa, c, h, e
    with nogil:
        for i in range(GRID):
            m = i / (GRID - 1.0)
            for j in range(GRID):
                kappa = j / (GRID - 1.0)
                if j == 0:
                    Hv[i, j] = 1.0 if m >= 0.5 else 0.0
                    Rv[i, j] = 1.0 / (m * m if m >= 0.5 else (1.0 - m) * (1.0 - m))
                elif j == GRID - 1:
                    Hv[i, j] = m
                    Rv[i, j] = 2.0
                elif i == 0 or i == GRID - 1:
                    Hv[i, j] = m
                    Rv[i, j] = r_limit_m0(kappa)
                else:
                    c = -log(kappa)
                    h = precise_h(m, c)
                    Hv[i, j] = h
                    e = m * (1.0 - m) * (1.0 - kappa)
                    Rv[i, j] = (wd_general(m * m, (1.0 - m) * (1.0 - m), m * (1.0 - m), c, h)
                                / (e * e))
    return H, R


_TABLES = None


def tables():
    """The lookup tables, computed on first use (about a second) and cached."""
    global _TABLES
    if _TABLES is None:
        _TABLES = build_tables()
    return _TABLES


cdef inline double interp(const double* T, double m, double kappa) noexcept nogil:
    """Bilinear interpolation on the grid; cell indices clamped so m = 1 or kappa = 1 (and
    rounding just outside [0, 1]) stay in range."""
    cdef double x = m * (GRID - 1), y = kappa * (GRID - 1), fx, fy
    cdef int i, j
    if x < 0.0:
        x = 0.0
    if y < 0.0:
        y = 0.0
    i = <int>x
    j = <int>y
    if i > GRID - 2:
        i = GRID - 2
    if j > GRID - 2:
        j = GRID - 2
    fx = x - i
    fy = y - j
    return ((1.0 - fx) * ((1.0 - fy) * T[i * GRID + j] + fy * T[i * GRID + j + 1])
            + fx * ((1.0 - fy) * T[(i + 1) * GRID + j] + fy * T[(i + 1) * GRID + j + 1]))


cdef inline double pair_wd(const MergeParams* P, double bp, double bj, double c,
                           double* h) noexcept nogil:
    """Weight degradation of merging same-sign coefficients bp, bj at kappa = exp(-c)
    under the search rule P.search; *h gets the h used (-1 for lookup-WD, which needs
    no h until the merge is executed)."""
    cdef double ssum = bp + bj, m = bp / ssum, kappa = exp(-c), e
    if P.search == SEARCH_LOOKUP_WD:
        e = m * (1.0 - m) * (1.0 - kappa)
        h[0] = -1.0
        return ssum * ssum * e * e * interp(P.r_table, m, kappa)
    h[0] = interp(P.h_table, m, kappa) if P.search == SEARCH_LOOKUP_H else gss_h(m, c, P.tol)
    return wd_general(bp * bp, bj * bj, bp * bj, c, h[0])


# ---- maintenance ---------------------------------------------------------------------

cdef class MergeWork:
    """Scratch memory for maintain(), sized once per solver run."""

    def __init__(self, int cap, int d, int n_coef, bint project=False):
        self.c_mv = np.zeros(cap)
        self.d2_mv = np.zeros(cap)
        self.wd_mv = np.zeros(cap)
        self.h_mv = np.zeros(cap)
        self.z_mv = np.zeros(d)
        self.z2_mv = np.zeros(2 * d)
        self.coef_mv = np.zeros(n_coef)
        self.g_mv = np.zeros(n_coef)
        self.accz_mv = np.zeros(n_coef)
        self.gram_mv = np.zeros(cap * cap if project else 1)
        self.rhs_mv = np.zeros(cap)
        self.top_mv = np.zeros(cap, dtype=np.int32)
        self.pts_mv = np.zeros(cap, dtype=np.int32)
        self.c = &self.c_mv[0]
        self.d2 = &self.d2_mv[0]
        self.wd = &self.wd_mv[0]
        self.h = &self.h_mv[0]
        self.z = &self.z_mv[0]
        self.z2 = &self.z2_mv[0]
        self.coef = &self.coef_mv[0]
        self.g = &self.g_mv[0]
        self.accz = &self.accz_mv[0]
        self.gram = &self.gram_mv[0]
        self.rhs = &self.rhs_mv[0]
        self.top = &self.top_mv[0]
        self.pts = &self.pts_mv[0]


cdef inline double dot_n(const double* a, const double* b, int n) noexcept nogil:
    cdef double s = 0.0
    cdef int k
    for k in range(n):
        s += a[k] * b[k]
    return s


cdef inline double sqdist(const double* a, const double* b, int n) noexcept nogil:
    cdef double s = 0.0, t
    cdef int k
    for k in range(n):
        t = a[k] - b[k]
        s += t * t
    return s


cdef int smallest_sv(BudgetModel mdl) noexcept nogil:
    """Slot with the smallest |beta| (squared norm for vectors); ties to the lowest slot.
    Unmerged Pegasos SVs all have the same |beta| = nC/t in exact arithmetic, so ties are
    the rule: values within 1e-12 (relative) count as equal, which makes the choice
    independent of the rounding of the lazy scale."""
    cdef int j, p = 0
    cdef double v, best = -1.0
    cdef const double* b
    for j in range(mdl.n_sv):
        b = mdl.beta + <Py_ssize_t>j * mdl.n_coef
        v = dot_n(b, b, mdl.n_coef)
        if best < 0.0 or v < best * (1.0 - 1e-12):
            best = v
            p = j
    return p


cdef void remove_set(BudgetModel mdl, int* slots, int k) noexcept nogil:
    """Remove k distinct slots: descending order keeps the pending ones valid under the
    buffer's move-last-into-hole removal."""
    cdef int a, b, t
    for a in range(1, k):
        t = slots[a]
        b = a - 1
        while b >= 0 and slots[b] < t:
            slots[b + 1] = slots[b]
            b -= 1
        slots[b + 1] = t
    for a in range(k):
        mdl.remove(slots[a])


cdef void add_merged(BudgetModel mdl, MergeWork W) noexcept nogil:
    """Insert W.z with unscaled coefficients W.coef as a new (merged) SV."""
    cdef int c
    for c in range(mdl.n_coef):
        W.coef[c] *= mdl.scale     # add_dense divides by the scale again
    mdl.add_dense(W.z, W.coef, -1)


cdef void cascade(BudgetModel mdl, const MergeParams* P, MergeWork W, int p, int k) noexcept nogil:
    """z absorbs the partners W.top[0..k) one by one (ascending pairwise WD), each step an
    exact binary merge against the current z (MM-BSGD, Alg. 1)."""
    cdef int r, q, t, nc = mdl.n_coef, d = mdl.d
    cdef double c, h, m, a, b, A, D, Cc
    cdef const double* zq
    cdef const double* bq
    for t in range(d):
        W.z[t] = mdl.Z[<Py_ssize_t>p * d + t]
    for t in range(nc):
        W.coef[t] = mdl.beta[<Py_ssize_t>p * nc + t]
        if mdl.track_avg:
            W.accz[t] = mdl.acc[<Py_ssize_t>p * nc + t]
    for r in range(k):
        q = W.top[r]
        zq = mdl.Z + <Py_ssize_t>q * d
        bq = mdl.beta + <Py_ssize_t>q * nc
        c = mdl.gamma * sqdist(W.z, zq, d)
        if nc == 1:
            m = W.coef[0] / (W.coef[0] + bq[0])
            h = gss_h(m, c, P.tol)
        else:
            A = dot_n(W.coef, W.coef, nc)
            D = dot_n(bq, bq, nc)
            Cc = dot_n(W.coef, bq, nc)
            h = search_h_general(A, D, Cc, c, P.tol)
        a = exp(-c * (1.0 - h) * (1.0 - h))
        b = exp(-c * h * h)
        for t in range(d):
            W.z[t] = h * W.z[t] + (1.0 - h) * zq[t]
        for t in range(nc):
            W.coef[t] = a * W.coef[t] + b * bq[t]
            if mdl.track_avg:      # the averaged model's parts take the same path
                W.accz[t] = a * W.accz[t] + b * mdl.acc[<Py_ssize_t>q * nc + t]


cdef double gd_objective(BudgetModel mdl, MergeWork W, const double* z, int npts) noexcept nogil:
    """|g(z)|^2 with g(z) = sum_i beta_i k(z_i, z) over the points W.pts[0..npts); leaves
    k(z_i, z) in W.c[i] and g in W.g."""
    cdef int i, t, nc = mdl.n_coef
    cdef double kv
    cdef const double* bi
    for t in range(nc):
        W.g[t] = 0.0
    for i in range(npts):
        kv = exp(-mdl.gamma * sqdist(z, mdl.Z + <Py_ssize_t>W.pts[i] * mdl.d, mdl.d))
        W.c[i] = kv
        bi = mdl.beta + <Py_ssize_t>W.pts[i] * nc
        for t in range(nc):
            W.g[t] += kv * bi[t]
    return dot_n(W.g, W.g, nc)


cdef void gradient_merge(BudgetModel mdl, MergeWork W, int npts) noexcept nogil:
    """Merge the points W.pts[0..npts) at once (MM-GD, Alg. 2): minimise
    |sum_i beta_i phi(z_i) - beta_z phi(z)|^2 = const - |g(z)|^2 (beta_z = g(z) in closed
    form) by gradient ascent on |g|^2 from the |beta|-weighted mean.  The first trial step
    is the mean-shift step, which is monotone for same-sign binary merges; backtracking
    keeps every accepted step an ascent step otherwise."""
    cdef int i, t, _it, _ls, d = mdl.d, nc = mdl.n_coef
    cdef double wsum = 0.0, wi, F, Ft, step, sw
    cdef const double* bi
    cdef double* dirv = W.z2
    cdef double* trial = W.z2 + d
    cdef const double* zi
    for t in range(d):
        W.z[t] = 0.0
    for i in range(npts):
        zi = mdl.Z + <Py_ssize_t>W.pts[i] * d
        bi = mdl.beta + <Py_ssize_t>W.pts[i] * nc
        wi = sqrt(dot_n(bi, bi, nc))
        wsum += wi
        for t in range(d):
            W.z[t] += wi * zi[t]
    if wsum > 0.0:
        for t in range(d):
            W.z[t] /= wsum
    F = gd_objective(mdl, W, W.z, npts)
    for _it in range(200):
        sw = 0.0
        for t in range(d):
            dirv[t] = 0.0
        for i in range(npts):
            wi = dot_n(W.g, mdl.beta + <Py_ssize_t>W.pts[i] * nc, nc) * W.c[i]
            sw += fabs(wi)
            zi = mdl.Z + <Py_ssize_t>W.pts[i] * d
            for t in range(d):
                dirv[t] += wi * (zi[t] - W.z[t])
        if sw <= 0.0:
            break
        step = 1.0 / sw
        Ft = F
        for _ls in range(40):
            for t in range(d):
                trial[t] = W.z[t] + step * dirv[t]
            Ft = gd_objective(mdl, W, trial, npts)
            if Ft > F:
                break
            step *= 0.5
        if not Ft > F:
            break
        for t in range(d):
            W.z[t] = trial[t]
        if Ft - F <= 1e-13 * Ft:
            F = Ft
            break
        F = Ft
    gd_objective(mdl, W, W.z, npts)
    for t in range(nc):
        W.coef[t] = W.g[t]


cdef bint project_out(BudgetModel mdl, MergeWork W, int p, double jitter) noexcept nogil:
    """Projection of SV p onto the others: delta beta_j = beta_p (K^-1 k_p)_j (BSGD paper
    eq. 14).  Returns False if the Cholesky factorisation fails."""
    cdef int n1 = mdl.n_sv - 1, r, s, i, j, t, info = 0, nrhs = 1
    cdef double g = mdl.gamma, d2, v
    cdef char uplo = b'L'
    cdef const double* zi
    r = 0
    for j in range(mdl.n_sv):
        if j != p:
            W.pts[r] = j
            r += 1
    for r in range(n1):
        i = W.pts[r]
        zi = mdl.Z + <Py_ssize_t>i * mdl.d
        W.gram[<Py_ssize_t>r * n1 + r] = 1.0 + jitter
        for s in range(r + 1, n1):
            j = W.pts[s]
            d2 = mdl.sqn[i] + mdl.sqn[j] - 2.0 * dot_n(zi, mdl.Z + <Py_ssize_t>j * mdl.d, mdl.d)
            v = exp(-g * d2) if d2 > 0.0 else 1.0
            W.gram[<Py_ssize_t>r * n1 + s] = v
            W.gram[<Py_ssize_t>s * n1 + r] = v
        d2 = mdl.sqn[i] + mdl.sqn[p] - 2.0 * dot_n(zi, mdl.Z + <Py_ssize_t>p * mdl.d, mdl.d)
        W.rhs[r] = exp(-g * d2) if d2 > 0.0 else 1.0
    dposv(&uplo, &n1, &nrhs, W.gram, &n1, W.rhs, &n1, &info)
    if info != 0:
        return False
    for r in range(n1):
        j = W.pts[r]
        for t in range(mdl.n_coef):
            mdl.beta[<Py_ssize_t>j * mdl.n_coef + t] += (mdl.beta[<Py_ssize_t>p * mdl.n_coef + t]
                                                         * W.rhs[r])
            if mdl.track_avg:
                # the averaged model's part at z_p is projected the same way
                mdl.acc[<Py_ssize_t>j * mdl.n_coef + t] += (mdl.acc[<Py_ssize_t>p * mdl.n_coef + t]
                                                            * W.rhs[r])
    return True


cdef int maintain(BudgetModel mdl, const MergeParams* P, MergeWork W, int M,
                  MaintCounts* counts) noexcept nogil:
    """One maintenance event: shrink the model by M - 1 SVs (merge M points into one) or by
    one (removal, projection, or merge when no partner has the same sign).  Decisions use
    the unscaled coefficients: every criterion is invariant to the common scale.
    Returns the number of SVs removed from the model."""
    cdef int p, j, q, r, t, k = 0, kmax = M - 1, nc = mdl.n_coef, n_before = mdl.n_sv
    cdef double bp, bj, m, c, kappa, wd, h, thr, s_ub, lo_m, hi_m, A, D, Cc, e, ssum
    cdef const double* vp
    cdef const double* vj
    if mdl.n_sv < 2:
        return 0
    mdl.settle()     # iterate averaging: bring every SV's sum up to date (no-op otherwise)
    p = smallest_sv(mdl)
    vp = mdl.beta + <Py_ssize_t>p * nc
    A = dot_n(vp, vp, nc)
    if A == 0.0 or P.maintenance == MAINT_REMOVE:
        mdl.remove(p)
        counts.n_removed += 1
        return 1
    if P.maintenance == MAINT_PROJECT:
        if not project_out(mdl, W, p, 1e-10):
            project_out(mdl, W, p, 1e-6)   # failure leaves beta untouched: plain removal
        mdl.remove(p)
        counts.n_removed += 1
        return 1
    if kmax > mdl.n_sv - 1:
        kmax = mdl.n_sv - 1
    bp = vp[0]
    mdl.sqdist_all(p, W.d2)     # every ||z_p - z_j||^2 at once
    for j in range(mdl.n_sv):
        if j == p:
            continue
        vj = mdl.beta + <Py_ssize_t>j * nc
        thr = W.wd[W.top[k - 1]] if k == kmax else -1.0
        c = mdl.gamma * W.d2[j]
        if nc == 1:
            bj = vj[0]
            if not bp * bj > 0.0:
                continue           # never merge opposite signs (m would leave [0, 1])
            if P.search != SEARCH_LOOKUP_WD and thr >= 0.0:
                # exact pruning before an h search (valid for every h, so for lookup-h
                # too): on the searched half s <= max(m,1-m) + min(m,1-m) kappa^(1/4)
                ssum = bp + bj
                m = bp / ssum
                kappa = exp(-c)
                hi_m = m if m >= 0.5 else 1.0 - m
                lo_m = 1.0 - hi_m
                s_ub = hi_m + lo_m * exp(-0.25 * c)
                if ssum * ssum * (m * m + (1.0 - m) * (1.0 - m) + 2.0 * m * (1.0 - m) * kappa
                                  - s_ub * s_ub) - 1e-12 * ssum * ssum > thr:
                    continue
            wd = pair_wd(P, bp, bj, c, &h)
        else:
            D = dot_n(vj, vj, nc)
            if D == 0.0:
                continue
            Cc = dot_n(vp, vj, nc)
            h = search_h_general(A, D, Cc, c, P.tol)
            wd = wd_general(A, D, Cc, c, h)
        if k == kmax and not wd < thr:
            continue
        W.wd[j] = wd
        W.h[j] = h
        W.c[j] = c
        # insert j into the ascending top list (strict < keeps the lower slot first on ties)
        r = k if k < kmax else kmax - 1
        while r > 0 and wd < W.wd[W.top[r - 1]]:
            W.top[r] = W.top[r - 1]
            r -= 1
        W.top[r] = j
        if k < kmax:
            k += 1
    if k == 0:
        mdl.remove(p)      # every other SV has the opposite sign
        counts.n_removed += 1
        return 1
    W.pts[0] = p
    for r in range(k):
        W.pts[r + 1] = W.top[r]
    # averaged model (track_avg): the merged parts are replaced by their best multiple of
    # phi(z), sum_i acc_i k(z_i, z), the rule that gives the merged beta (the cascade
    # applies its own sequence of pairwise rules)
    if k == 1:
        q = W.top[0]
        c = W.c[q]
        h = W.h[q]
        if nc == 1 and (P.search != SEARCH_GSS or h < 0.0):
            h = gss_h(bp / (bp + mdl.beta[q]), c, P.tol)   # exact h for the chosen pair
        for t in range(mdl.d):
            W.z[t] = (h * mdl.Z[<Py_ssize_t>p * mdl.d + t]
                      + (1.0 - h) * mdl.Z[<Py_ssize_t>q * mdl.d + t])
        A = exp(-c * (1.0 - h) * (1.0 - h))
        D = exp(-c * h * h)
        for t in range(nc):
            W.coef[t] = A * vp[t] + D * mdl.beta[<Py_ssize_t>q * nc + t]
            if mdl.track_avg:
                W.accz[t] = (A * mdl.acc[<Py_ssize_t>p * nc + t]
                             + D * mdl.acc[<Py_ssize_t>q * nc + t])
    elif P.multi == MULTI_CASCADE:
        cascade(mdl, P, W, p, k)
    else:
        gradient_merge(mdl, W, k + 1)
        if mdl.track_avg:
            for t in range(nc):
                W.accz[t] = 0.0
            for r in range(k + 1):
                q = W.pts[r]
                e = exp(-mdl.gamma * sqdist(W.z, mdl.Z + <Py_ssize_t>q * mdl.d, mdl.d))
                for t in range(nc):
                    W.accz[t] += e * mdl.acc[<Py_ssize_t>q * nc + t]
    remove_set(mdl, W.pts, k + 1)
    add_merged(mdl, W)
    if mdl.track_avg:
        for t in range(nc):
            mdl.acc[<Py_ssize_t>(mdl.n_sv - 1) * nc + t] = W.accz[t]
    counts.n_merges += 1
    return n_before - mdl.n_sv


# ---- Python access (merging.py, tests, solver setup) ---------------------------------

MAINTENANCE = {"merge": MAINT_MERGE, "remove": MAINT_REMOVE, "project": MAINT_PROJECT}
SEARCHES = {"gss": SEARCH_GSS, "lookup-h": SEARCH_LOOKUP_H, "lookup-wd": SEARCH_LOOKUP_WD}
MULTI = {"cascade": MULTI_CASCADE, "gradient": MULTI_GRADIENT}


def gss_h_array(double[::1] m, double[::1] c, double tol):
    out = np.empty(m.shape[0])
    cdef double[::1] o = out
    cdef Py_ssize_t i
    with nogil:
        for i in range(m.shape[0]):
            o[i] = gss_h(m[i], c[i], tol)
    return out


def precise_h_array(double[::1] m, double[::1] c):
    out = np.empty(m.shape[0])
    cdef double[::1] o = out
    cdef Py_ssize_t i
    with nogil:
        for i in range(m.shape[0]):
            o[i] = precise_h(m[i], c[i])
    return out


def search_h_general_array(double[::1] A, double[::1] D, double[::1] Cc, double[::1] c, double tol):
    out = np.empty(A.shape[0])
    cdef double[::1] o = out
    cdef Py_ssize_t i
    with nogil:
        for i in range(A.shape[0]):
            o[i] = search_h_general(A[i], D[i], Cc[i], c[i], tol)
    return out


def wd_array(double[::1] A, double[::1] D, double[::1] Cc, double[::1] c, double[::1] h):
    out = np.empty(A.shape[0])
    cdef double[::1] o = out
    cdef Py_ssize_t i
    with nogil:
        for i in range(A.shape[0]):
            o[i] = wd_general(A[i], D[i], Cc[i], c[i], h[i])
    return out


def interp_array(double[:, ::1] T, double[::1] m, double[::1] kappa):
    if T.shape[0] != GRID or T.shape[1] != GRID:
        raise ValueError(f"table must be {GRID}x{GRID}")
    out = np.empty(m.shape[0])
    cdef double[::1] o = out
    cdef Py_ssize_t i
    with nogil:
        for i in range(m.shape[0]):
            o[i] = interp(&T[0, 0], m[i], kappa[i])
    return out


cdef class Maintainer:
    """MergeParams + MergeWork bundled for the solvers and for tests."""

    def __init__(self, BudgetModel mdl, str maintenance="merge", str search="gss",
                 str multi="cascade", int merge_size=2, double tol=0.01):
        cdef double[:, ::1] H
        cdef double[:, ::1] R
        if merge_size < 2 or not tol > 0:
            raise ValueError("merge_size >= 2 and tol > 0 required")
        self.P.maintenance = MAINTENANCE[maintenance]
        self.P.search = SEARCHES[search]
        self.P.multi = MULTI[multi]
        self.P.merge_size = merge_size if self.P.maintenance == MAINT_MERGE else 2
        self.P.tol = tol
        self.P.h_table = NULL
        self.P.r_table = NULL
        if self.P.maintenance == MAINT_MERGE and self.P.search != SEARCH_GSS:
            H, R = tables()
            self._keep = (H, R)
            self.P.h_table = &H[0, 0]
            self.P.r_table = &R[0, 0]
        self.W = MergeWork(mdl.cap, mdl.d, mdl.n_coef, self.P.maintenance == MAINT_PROJECT)
        self.cap, self.d, self.n_coef = mdl.cap, mdl.d, mdl.n_coef
        self.n_merges = 0
        self.n_removed = 0
        self.audit_every = 0
        self.audit_max = 0
        self.audit_n = 0
        self.audit_same_gss = 0
        self.n_events = 0
        self.audit_wd_exec = 0.0
        self.audit_wd_precise = 0.0
        self.audit_wd_gss = 0.0

    def serves(self, BudgetModel mdl):
        """True when this maintainer's work space was sized for mdl's shape."""
        return self.cap == mdl.cap and self.d == mdl.d and self.n_coef == mdl.n_coef

    def start_audit(self, long every=20, long max_events=300):
        """Audit every `every`-th pairwise merge event (binary, M = 2, up to `max_events`):
        which partner GSS (tol 0.01) and this search pick, the weight degradation of the
        merge actually executed, and the smallest WD over all partners with a precise h
        (~1e-12).  Costs ~1000 exps per SV per audited event; for benchmarks."""
        cdef double[:, ::1] H
        cdef double[:, ::1] R
        if every < 1 or max_events < 0:
            raise ValueError(f"start_audit needs every >= 1 and max_events >= 0, got "
                             f"{every} and {max_events}")
        if self.P.h_table == NULL:
            H, R = tables()
            self._keep = (H, R)
            self.P.h_table = &H[0, 0]
            self.P.r_table = &R[0, 0]
        self.audit_log = np.zeros((max(max_events, 1), 3))
        self.audit_n = self.audit_same_gss = self.n_events = 0
        self.audit_wd_exec = self.audit_wd_gss = self.audit_wd_precise = 0.0
        self.audit_every = every
        self.audit_max = max_events

    def audit_stats(self):
        return {"events": self.audit_n, "same_as_gss": self.audit_same_gss,
                "wd_exec": self.audit_wd_exec, "wd_gss": self.audit_wd_gss,
                "wd_precise": self.audit_wd_precise,
                "log": np.asarray(self.audit_log)[:self.audit_n].copy()}

    cdef void audit(self, BudgetModel mdl) noexcept nogil:
        """Replays the binary pairwise partner choice of maintain() for every rule."""
        cdef int p, j, jg = -1, jm = -1
        cdef double bp, bj, m, c, wg, wm, wp, h, bg = -1.0, bm = -1.0, bpr = -1.0, wexec
        if mdl.n_sv < 2 or mdl.n_coef != 1:
            return
        mdl.settle()
        p = smallest_sv(mdl)
        bp = mdl.beta[p]
        if bp == 0.0:
            return
        mdl.sqdist_all(p, self.W.d2)
        for j in range(mdl.n_sv):
            if j == p:
                continue
            bj = mdl.beta[j]
            if not bp * bj > 0.0:
                continue
            c = mdl.gamma * self.W.d2[j]
            m = bp / (bp + bj)
            h = gss_h(m, c, 0.01)
            wg = wd_general(bp * bp, bj * bj, bp * bj, c, h)
            if jg < 0 or wg < bg:
                jg = j
                bg = wg
            h = precise_h(m, c)
            wp = wd_general(bp * bp, bj * bj, bp * bj, c, h)
            if bpr < 0.0 or wp < bpr:
                bpr = wp
            wm = pair_wd(&self.P, bp, bj, c, &h)      # the rule maintain() uses
            if jm < 0 or wm < bm:
                jm = j
                bm = wm
        if jm < 0:
            return
        bj = mdl.beta[jm]
        c = mdl.gamma * self.W.d2[jm]
        h = gss_h(bp / (bp + bj), c, self.P.tol)     # the executed merge's h
        wexec = wd_general(bp * bp, bj * bj, bp * bj, c, h)
        # WD in units of the current scale squared: normalise each event by the precise
        # optimum's scale so events at different times weigh alike
        self.audit_log[self.audit_n, 0] = wexec
        self.audit_log[self.audit_n, 1] = bg
        self.audit_log[self.audit_n, 2] = bpr
        self.audit_n += 1
        if jm == jg:
            self.audit_same_gss += 1
        if bpr > 0.0:
            self.audit_wd_exec += wexec / bpr
            self.audit_wd_gss += bg / bpr
            self.audit_wd_precise += 1.0

    cdef int run(self, BudgetModel mdl, int M) noexcept nogil:
        cdef MaintCounts cnt
        cdef int out
        if (self.audit_every > 0 and M == 2 and self.P.maintenance == MAINT_MERGE
                and self.audit_n < self.audit_max):
            self.n_events += 1
            if self.n_events % self.audit_every == 0:
                self.audit(mdl)
        cnt.n_merges = 0
        cnt.n_removed = 0
        out = maintain(mdl, &self.P, self.W, M, &cnt)
        self.n_merges += cnt.n_merges
        self.n_removed += cnt.n_removed
        return out

    def step(self, BudgetModel mdl, int M=0):
        """One maintenance event with M points (default merge_size); returns the number of
        SVs the model lost."""
        if M <= 0:
            M = self.P.merge_size
        if mdl.cap > self.W.c_mv.shape[0] or mdl.d != self.W.z_mv.shape[0]:
            raise ValueError("model does not match this Maintainer")
        return self.run(mdl, M)

    cdef void down_to(self, BudgetModel mdl, int budget, int M) noexcept nogil:
        """Maintain until at most `budget` SVs remain (a multi-merge buffer may hold up to
        M - 2 over budget between events): at the end of a run and at checkpoints."""
        while mdl.n_sv > budget:
            self.run(mdl, M if M < mdl.n_sv - budget + 1 else mdl.n_sv - budget + 1)
