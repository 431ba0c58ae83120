# Merge maths (docs/algorithms.md#merging-two-support-vectors, #finding-h and
# #lookup-tables): the pairwise objective, its h searches, the weight degradation and the
# lookup-table interpolation.
#
# Notation: two SVs with coefficients b_m, b_n (same sign in the binary case),
# c = gamma * ||z_m - z_n||^2 = -ln(kappa).  The merged point z = h z_m + (1-h) z_n has
# k(z_m, z) = exp(-c (1-h)^2) =: a and k(z_n, z) = exp(-c h^2) =: b; its best coefficient is
# b_m a + b_n b (per class), and the weight degradation of that choice is
#   WD(h) = A (1 - a^2) + D (1 - b^2) + 2 Cc (kappa - a b)
# with A = |b_m|^2, D = |b_n|^2, Cc = b_m . b_n.  Written this way (expm1 for every
# bracket) it keeps full relative precision even where WD ~ 1e-17 (kappa -> 1, m -> 0),
# which the textbook form  A + D + 2 Cc kappa - |b_z|^2  does not.
#
# The functions are defined here, inline, rather than in _merge_math.pyx: every module
# that cimports them (maintenance, audit, table building) then calls them directly, not
# through the function pointers Cython uses across modules.
from libc.math cimport exp, expm1, fabs

cdef enum:
    SEARCH_GSS = 0
    SEARCH_LOOKUP_H = 1
    SEARCH_LOOKUP_WD = 2

cdef enum:
    GRID = 401       # lookup nodes per axis, step 1/400


cdef struct PairSearch:
    # how a same-sign binary pair's h and WD are found (pair_wd)
    int search
    double tol               # golden-section tolerance on h
    const double* h_table    # (GRID x GRID) h*(m, kappa), NULL unless lookup-h
    const double* r_table    # (GRID x GRID) rescaled normalised WD, NULL unless lookup-wd


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


cdef inline double wd_general(double A, double D, double Cc, double c,
                              double h) noexcept nogil:
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
    cdef double invphi = 0.6180339887498949      # 1 / golden ratio
    cdef double x1 = hi - invphi * (hi - lo), x2 = lo + invphi * (hi - lo)
    cdef double f1 = objective(o, x1), f2 = objective(o, x2)
    cdef int _it
    for _it in range(max_it):
        if hi - lo <= tol:
            break
        if f1 < f2:
            lo = x1
            x1 = x2
            f1 = f2
            x2 = lo + invphi * (hi - lo)
            f2 = objective(o, x2)
        else:
            hi = x2
            x2 = x1
            f2 = f1
            x1 = hi - invphi * (hi - lo)
            f1 = objective(o, x1)
    return 0.5 * (lo + hi)


cdef inline double gss_h(double m, double c, double tol) noexcept nogil:
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


cdef inline double search_h_general(double A, double D, double Cc, double c,
                                    double tol) noexcept nogil:
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


cdef inline double precise_h(double m, double c) noexcept nogil:
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


cdef inline double pair_wd(const PairSearch* S, double bp, double bj, double c,
                           double* h) noexcept nogil:
    """Weight degradation of merging same-sign coefficients bp, bj at kappa = exp(-c)
    under the search rule S.search; *h gets the h used (-1 for lookup-WD, which needs
    no h until the merge is executed)."""
    cdef double ssum = bp + bj, m = bp / ssum, kappa = exp(-c), e
    if S.search == SEARCH_LOOKUP_WD:
        e = m * (1.0 - m) * (1.0 - kappa)
        h[0] = -1.0
        return ssum * ssum * e * e * interp(S.r_table, m, kappa)
    h[0] = interp(S.h_table, m, kappa) if S.search == SEARCH_LOOKUP_H else gss_h(m, c, S.tol)
    return wd_general(bp * bp, bj * bj, bp * bj, c, h[0])


cdef object bind_tables(PairSearch* S)
