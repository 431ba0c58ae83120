# Budget maintenance (docs/algorithms.md#budget-maintenance, #multi-merge and
# #removal-and-projection): the smallest SV is merged with its best partner(s), removed,
# or projected onto the others.  The pairwise maths is inline from _merge_math.pxd; the
# optional partner audit lives in _merge_audit.
from libc.math cimport exp, fabs, sqrt
from libc.stdlib cimport calloc, free
from libc.string cimport memset
from scipy.linalg.cython_lapack cimport dposv

from pybudget.budget._budget cimport BudgetModel
from pybudget.budget._merge_audit cimport audit_partners
from pybudget.budget._team cimport JOB_PARTNERS, Team, join, post
from pybudget.budget._merge_math cimport (SEARCH_GSS, SEARCH_LOOKUP_H, SEARCH_LOOKUP_WD,
                                          bind_tables, gss_h, pair_wd, search_h_general,
                                          wd_general)

import numpy as np

MAINTENANCE = {"merge": MAINT_MERGE, "remove": MAINT_REMOVE, "project": MAINT_PROJECT}
SEARCHES = {"gss": SEARCH_GSS, "lookup-h": SEARCH_LOOKUP_H, "lookup-wd": SEARCH_LOOKUP_WD}
MULTI = {"cascade": MULTI_CASCADE, "gradient": MULTI_GRADIENT}


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
        self.row = <const double**>calloc(cap, sizeof(double*))
        if self.row == NULL:
            raise MemoryError("MergeWork: no memory")
        self.dz = d
        self.top_room = cap
        self.reserve_team(1)

    def reserve_team(self, int T):
        """Room for the partner lists of a team of T threads."""
        self.tk_mv = np.zeros(max(T, 1), dtype=np.int32)
        self.ttop_mv = np.zeros(max(T - 1, 1) * self.top_room, dtype=np.int32)
        self.tk = &self.tk_mv[0]
        self.ttop = &self.ttop_mv[0]

    def __cinit__(self):
        self.row = NULL
        self.rows = NULL
        self.cols = NULL
        self.cols2 = NULL
        self.rows_room = self.cols_room = self.cols2_room = 0

    def __dealloc__(self):
        free(self.row)
        free(self.rows)
        free(self.cols)
        free(self.cols2)


cdef int _grow_ints(int** buf, Py_ssize_t* room, Py_ssize_t need) noexcept nogil:
    """*buf holds at least need ints (reallocated, contents dropped); -1 without memory."""
    if need <= room[0]:
        return 0
    free(buf[0])
    buf[0] = <int*>calloc(need, sizeof(int))
    room[0] = need if buf[0] != NULL else 0
    return 0 if buf[0] != NULL else -1


cdef int gather_rows(BudgetModel mdl, MergeWork W, int npts) noexcept nogil:
    """W.row[r] = the row of SV W.pts[r], r < npts, each W.dz long: the model's own
    dense rows (dz = d), or for sparse storage dense copies over the union of the
    points' columns (W.cols, ascending; dz = their count), where every sum a merge takes
    has the same non-zero terms in the same order as over all d.  The union is built by
    merging the points' sorted column lists, and each row is placed by a walk along it.
    -1 when the memory is not there (out_of_memory set)."""
    cdef int r, s, t, a, b, u, n, j
    cdef Py_ssize_t total = 0
    cdef int* tmp
    cdef const int* idx
    cdef const double* val
    if not mdl.sparse:
        for r in range(npts):
            W.row[r] = mdl.Z + <Py_ssize_t>W.pts[r] * mdl.d
        W.dz = mdl.d
        return 0
    for r in range(npts):
        total += mdl.sv_nnz[W.pts[r]]
    if (_grow_ints(&W.cols, &W.cols_room, total) < 0
            or _grow_ints(&W.cols2, &W.cols2_room, total) < 0):
        mdl.out_of_memory = True
        return -1
    j = W.pts[0]
    u = mdl.sv_nnz[j]
    for t in range(u):
        W.cols[t] = mdl.sv_idx[j][t]
    for r in range(1, npts):          # union so far (W.cols) with point r -> W.cols2
        idx = mdl.sv_idx[W.pts[r]]
        n = mdl.sv_nnz[W.pts[r]]
        a = b = t = 0
        while a < u or b < n:
            if b >= n or (a < u and W.cols[a] < idx[b]):
                W.cols2[t] = W.cols[a]
                a += 1
            elif a >= u or idx[b] < W.cols[a]:
                W.cols2[t] = idx[b]
                b += 1
            else:
                W.cols2[t] = W.cols[a]
                a += 1
                b += 1
            t += 1
        u = t
        tmp = W.cols
        W.cols = W.cols2
        W.cols2 = tmp
        total = W.cols_room
        W.cols_room = W.cols2_room
        W.cols2_room = total
    if <Py_ssize_t>npts * u > W.rows_room:
        free(W.rows)
        W.rows = <double*>calloc(<Py_ssize_t>npts * u, sizeof(double))
        W.rows_room = <Py_ssize_t>npts * u if W.rows != NULL else 0
        if W.rows == NULL:
            mdl.out_of_memory = True
            return -1
    if u == 0:          # (all-zero points: nothing to copy)
        for r in range(npts):
            W.row[r] = W.rows
        W.dz = 0
        return 0
    memset(W.rows, 0, <Py_ssize_t>npts * u * sizeof(double))
    for r in range(npts):             # each point's values at their places in the union
        j = W.pts[r]
        idx = mdl.sv_idx[j]
        val = mdl.sv_val[j]
        t = 0
        for s in range(mdl.sv_nnz[j]):
            while W.cols[t] != idx[s]:
                t += 1
            W.rows[<Py_ssize_t>r * u + t] = val[s]
        W.row[r] = W.rows + <Py_ssize_t>r * u
    W.dz = u
    return 0


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
    """Insert W.z (over gather_rows' columns) with unscaled coefficients W.coef as a new
    (merged) SV."""
    cdef int c
    for c in range(mdl.n_coef):
        W.coef[c] *= mdl.scale     # add_dense divides by the scale again
    if mdl.sparse:
        mdl.add_compact(W.z, W.cols, W.dz, W.coef, -1)
    else:
        mdl.add_dense(W.z, W.coef, -1)


cdef inline void merge_pair(BudgetModel mdl, const MergeParams* P, MergeWork W,
                            const double* z, const double* coef, const double* acc,
                            const double* zq, int q, double c, double h) noexcept nogil:
    """The binary merge of the point (z, coef, acc) with SV q (its row zq) at kappa =
    exp(-c), into W.z, W.coef (and W.accz), rows W.dz long (gather_rows): z, coef, acc may
    be W's own (the cascade's point so far).  h < 0: find the exact h here (golden
    section; the general search for vectors)."""
    cdef int t, nc = mdl.n_coef, d = W.dz
    cdef double a, b
    cdef const double* bq = mdl.beta + <Py_ssize_t>q * nc
    if h < 0.0:
        if nc == 1:
            h = gss_h(coef[0] / (coef[0] + bq[0]), c, P.pair.tol)
        else:
            h = search_h_general(dot_n(coef, coef, nc), dot_n(bq, bq, nc), dot_n(coef, bq, nc),
                                 c, P.pair.tol)
    a = exp(-c * (1.0 - h) * (1.0 - h))
    b = exp(-c * h * h)
    for t in range(d):
        W.z[t] = h * z[t] + (1.0 - h) * zq[t]
    for t in range(nc):
        W.coef[t] = a * coef[t] + b * bq[t]
        if mdl.track_avg:      # the averaged model's parts take the same path
            W.accz[t] = a * acc[t] + b * mdl.acc[<Py_ssize_t>q * nc + t]


cdef void cascade(BudgetModel mdl, const MergeParams* P, MergeWork W, int p, int k) noexcept nogil:
    """z absorbs the partners W.top[0..k) one by one (ascending pairwise WD), each step an
    exact binary merge against the current z (MM-BSGD, Alg. 1), starting from SV p (the
    rows of p and the partners: W.row[0..k], gather_rows)."""
    cdef int r, q, nc = mdl.n_coef, d = W.dz
    cdef double c
    cdef const double* z = W.row[0]
    cdef const double* coef = mdl.beta + <Py_ssize_t>p * nc
    cdef const double* acc = mdl.acc + <Py_ssize_t>p * nc
    for r in range(k):
        q = W.top[r]
        c = mdl.gamma * sqdist(z, W.row[r + 1], d)
        merge_pair(mdl, P, W, z, coef, acc, W.row[r + 1], q, c, -1.0)
        z = W.z
        coef = W.coef
        acc = W.accz


cdef double gd_objective(BudgetModel mdl, MergeWork W, const double* z, int npts) noexcept nogil:
    """|g(z)|^2 with g(z) = sum_i beta_i k(z_i, z) over the points W.pts[0..npts) (rows
    W.row, gather_rows); leaves k(z_i, z) in W.c[i] and g in W.g."""
    cdef int i, t, nc = mdl.n_coef
    cdef double kv
    cdef const double* bi
    for t in range(nc):
        W.g[t] = 0.0
    for i in range(npts):
        kv = exp(-mdl.gamma * sqdist(z, W.row[i], W.dz))
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
    keeps every accepted step an ascent step otherwise.  Rows W.row, W.dz long."""
    cdef int i, t, _it, _ls, d = W.dz, nc = mdl.n_coef
    cdef double wsum = 0.0, wi, F, Ft, step, sw
    cdef const double* bi
    cdef double* dirv = W.z2
    cdef double* trial = W.z2 + d
    cdef const double* zi
    for t in range(d):
        W.z[t] = 0.0
    for i in range(npts):
        zi = W.row[i]
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
            zi = W.row[i]
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
    r = 0
    for j in range(mdl.n_sv):
        if j != p:
            W.pts[r] = j
            r += 1
    for r in range(n1):
        i = W.pts[r]
        W.gram[<Py_ssize_t>r * n1 + r] = 1.0 + jitter
        for s in range(r + 1, n1):
            j = W.pts[s]
            d2 = mdl.sqn[i] + mdl.sqn[j] - 2.0 * mdl.sv_dot(i, j)
            v = exp(-g * d2) if d2 > 0.0 else 1.0
            W.gram[<Py_ssize_t>r * n1 + s] = v
            W.gram[<Py_ssize_t>s * n1 + r] = v
        d2 = mdl.sqn[i] + mdl.sqn[p] - 2.0 * mdl.sv_dot(i, p)
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


cdef inline int top_insert(MergeWork W, int* top, int* k, int kmax, int j,
                           double wd) noexcept nogil:
    """Insert candidate j (weight degradation wd) into the ascending list top[0 .. k) of
    at most kmax: strict < keeps the lower slot first on ties, so the list holds the kmax
    smallest (wd, slot).  -1 when j does not enter a full list."""
    cdef int r
    if k[0] == kmax and not wd < W.wd[top[kmax - 1]]:
        return -1
    r = k[0] if k[0] < kmax else kmax - 1
    while r > 0 and wd < W.wd[top[r - 1]]:
        top[r] = top[r - 1]
        r -= 1
    top[r] = j
    if k[0] < kmax:
        k[0] += 1
    return 0


cdef void partner_scan(BudgetModel mdl, const MergeParams* P, MergeWork W, int t, int lo,
                       int hi) noexcept nogil:
    """The distances of SVs lo <= j < hi to the merge candidate W.p and their pairwise
    weight degradations, keeping the W.kmax best (top_insert) in thread t's list (W.top
    for t = 0, else W.ttop's (t-1)-th row) of W.tk[t] entries; W.wd, W.h, W.c hold each
    listed j's values.  Each candidate's values depend on it alone; the pruning only
    skips what could not enter the list."""
    cdef int j, p = W.p, kmax = W.kmax, nc = mdl.n_coef, k = 0
    cdef double bp = W.bp, bj, m, c, kappa, wd, h, thr, s_ub, lo_m, hi_m, D, Cc, ssum
    cdef const double* vp = mdl.beta + <Py_ssize_t>p * nc
    cdef const double* vj
    cdef int* top = W.top if t == 0 else W.ttop + <Py_ssize_t>(t - 1) * W.top_room
    mdl.sqdist_part(p, W.d2, lo, hi)
    for j in range(lo, hi):
        if j == p:
            continue
        vj = mdl.beta + <Py_ssize_t>j * nc
        thr = W.wd[top[k - 1]] if k == kmax else -1.0
        c = mdl.gamma * W.d2[j]
        if nc == 1:
            bj = vj[0]
            if not bp * bj > 0.0:
                continue           # never merge opposite signs (m would leave [0, 1])
            if P.pair.search != SEARCH_LOOKUP_WD and thr >= 0.0:
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
            wd = pair_wd(&P.pair, bp, bj, c, &h)
        else:
            D = dot_n(vj, vj, nc)
            if D == 0.0:
                continue
            Cc = dot_n(vp, vj, nc)
            h = search_h_general(W.A, D, Cc, c, P.pair.tol)
            wd = wd_general(W.A, D, Cc, c, h)
        if k == kmax and not wd < thr:
            continue
        W.wd[j] = wd
        W.h[j] = h
        W.c[j] = c
        top_insert(W, top, &k, kmax, j, wd)
    W.tk[t] = k


cdef int find_partners(BudgetModel mdl, const MergeParams* P, MergeWork W, int p, int M,
                       Team* team) noexcept nogil:
    """The up to M - 1 partners of SV p (its coefficients not zero) with the smallest
    pairwise weight degradations, ascending: W.top[0 .. k), k returned (0: every other SV
    has the opposite sign), with W.wd, W.h, W.c at each.  On `team` (NULL: none) each
    thread scans a range of slots and the lists are merged in slot order."""
    cdef int t, r, j, lo, hi, T, kmax = M - 1
    if kmax > mdl.n_sv - 1:
        kmax = mdl.n_sv - 1
    W.p, W.kmax, W.bp = p, kmax, mdl.beta[<Py_ssize_t>p * mdl.n_coef]
    W.A = dot_n(mdl.beta + <Py_ssize_t>p * mdl.n_coef, mdl.beta + <Py_ssize_t>p * mdl.n_coef,
                mdl.n_coef)
    if team != NULL and team.T > 1:
        T = team.T                      # (join may retire the team: T is this job's)
        post(team, JOB_PARTNERS, mdl.n_sv, &lo, &hi)
        partner_scan(mdl, P, W, 0, lo, hi)
        join(team)
        for t in range(1, T):           # the helpers' lists, in slot order
            for r in range(W.tk[t]):
                j = W.ttop[<Py_ssize_t>(t - 1) * W.top_room + r]
                if top_insert(W, W.top, &W.tk[0], kmax, j, W.wd[j]) < 0:
                    break               # (ascending: the rest of this list is worse)
    else:
        partner_scan(mdl, P, W, 0, 0, mdl.n_sv)
    return W.tk[0]


cdef int maintain(BudgetModel mdl, const MergeParams* P, MergeWork W, int M,
                  MaintCounts* counts, Team* team) noexcept nogil:
    """One maintenance event: shrink the model by M - 1 SVs (merge M points into one) or by
    one (removal, projection, or merge when no partner has the same sign).  Decisions use
    the unscaled coefficients: every criterion is invariant to the common scale.  The
    distances and the partner search run on `team` (NULL: none).  Returns the number of
    SVs removed from the model."""
    cdef int p, q, r, t, k, nc = mdl.n_coef, n_before = mdl.n_sv
    cdef double h, A, e
    cdef const double* vp
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
    k = find_partners(mdl, P, W, p, M, team)
    if k == 0:
        mdl.remove(p)      # every other SV has the opposite sign
        counts.n_removed += 1
        return 1
    W.pts[0] = p
    for r in range(k):
        W.pts[r + 1] = W.top[r]
    if gather_rows(mdl, W, k + 1) < 0:
        mdl.remove(p)      # (no memory for the merge: the caller raises MemoryError)
        counts.n_removed += 1
        return 1
    # averaged model (track_avg): the merged parts are replaced by their best multiple of
    # phi(z), sum_i acc_i k(z_i, z), the rule that gives the merged beta (the cascade
    # applies its own sequence of pairwise rules)
    if k == 1:
        q = W.top[0]
        # the search's h is exact for GSS and for vectors; a lookup's (or lookup-WD's
        # none) is not: h = -1 has merge_pair find the exact h for the chosen pair
        h = W.h[q] if nc > 1 or P.pair.search == SEARCH_GSS else -1.0
        merge_pair(mdl, P, W, W.row[0], vp, mdl.acc + <Py_ssize_t>p * nc, W.row[1], q,
                   W.c[q], h)
    elif P.multi == MULTI_CASCADE:
        cascade(mdl, P, W, p, k)
    else:
        gradient_merge(mdl, W, k + 1)
        if mdl.track_avg:
            for t in range(nc):
                W.accz[t] = 0.0
            for r in range(k + 1):
                q = W.pts[r]
                e = exp(-mdl.gamma * sqdist(W.z, W.row[r], W.dz))
                for t in range(nc):
                    W.accz[t] += e * mdl.acc[<Py_ssize_t>q * nc + t]
    remove_set(mdl, W.pts, k + 1)
    add_merged(mdl, W)
    if mdl.track_avg:
        for t in range(nc):
            mdl.acc[<Py_ssize_t>(mdl.n_sv - 1) * nc + t] = W.accz[t]
    counts.n_merges += 1
    return n_before - mdl.n_sv


cdef class Maintainer:
    """MergeParams + MergeWork bundled for the solvers and for tests."""

    def __init__(self, BudgetModel mdl, str maintenance="merge", str search="gss",
                 str multi="cascade", int merge_size=2, double tol=0.01):
        if merge_size < 2 or not tol > 0:
            raise ValueError("merge_size >= 2 and tol > 0 required")
        self.P.maintenance = MAINTENANCE[maintenance]
        self.P.pair.search = SEARCHES[search]
        self.P.multi = MULTI[multi]
        self.P.merge_size = merge_size if self.P.maintenance == MAINT_MERGE else 2
        self.P.pair.tol = tol
        self.P.pair.h_table = NULL
        self.P.pair.r_table = NULL
        if self.P.maintenance == MAINT_MERGE and self.P.pair.search != SEARCH_GSS:
            self._keep = bind_tables(&self.P.pair)
        self.W = MergeWork(mdl.cap, mdl.d, mdl.n_coef, self.P.maintenance == MAINT_PROJECT)
        self.team = NULL
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
        if every < 1 or max_events < 0:
            raise ValueError(f"start_audit needs every >= 1 and max_events >= 0, got "
                             f"{every} and {max_events}")
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
        """Audits this event's partner choice (audit_partners) and tallies it."""
        cdef double* row
        cdef int same
        if mdl.n_sv < 2 or mdl.n_coef != 1:
            return
        mdl.settle()
        row = &self.audit_log[self.audit_n, 0]
        same = audit_partners(mdl, &self.P.pair, smallest_sv(mdl), self.W.d2, row)
        if same < 0:
            return
        self.audit_n += 1
        self.audit_same_gss += same
        # WD in units of the current scale squared: normalise each event by the precise
        # optimum's scale so events at different times weigh alike
        if row[2] > 0.0:
            self.audit_wd_exec += row[0] / row[2]
            self.audit_wd_gss += row[1] / row[2]
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
        out = maintain(mdl, &self.P, self.W, M, &cnt, self.team)
        self.n_merges += cnt.n_merges
        self.n_removed += cnt.n_removed
        return out

    def partners(self, BudgetModel mdl, int M=0):
        """(p, partners): the SV the next maintenance event merges and its partners, best
        first, found as that event finds them but without merging (tests, and
        bench/budget_storage.py's parts).  p = -1 when there is nothing to merge."""
        cdef int p, k, r
        if M <= 0:
            M = self.P.merge_size
        if not self.serves(mdl):
            raise ValueError("model does not match this Maintainer")
        if mdl.n_sv < 2 or self.P.maintenance != MAINT_MERGE:
            return -1, []
        with nogil:
            mdl.settle()
            p = smallest_sv(mdl)
            k = find_partners(mdl, &self.P, self.W, p, M, NULL)
        return p, [self.W.top[r] for r in range(k)]

    def step(self, BudgetModel mdl, int M=0):
        """One maintenance event with M points (default merge_size); returns the number of
        SVs the model lost."""
        if M <= 0:
            M = self.P.merge_size
        if mdl.cap > self.W.c_mv.shape[0] or mdl.d != self.W.z_mv.shape[0]:
            raise ValueError("model does not match this Maintainer")
        return self.run(mdl, M)

    def merge_down(self, BudgetModel mdl, int budget, int M):
        """down_to from Python: the final maintenance of a run that ended with
        merge_at_end=False (visits of pybudget.dask's budgeted ring)."""
        if not self.serves(mdl) or budget < 1 or M < 2:
            raise ValueError("merge_down: model, budget or merge size do not fit")
        with nogil:
            self.down_to(mdl, budget, M)

    cdef void down_to(self, BudgetModel mdl, int budget, int M) noexcept nogil:
        """Maintain until at most `budget` SVs remain (a multi-merge buffer may hold up to
        M - 2 over budget between events): at the end of a run and at checkpoints."""
        while mdl.n_sv > budget:
            self.run(mdl, M if M < mdl.n_sv - budget + 1 else mdl.n_sv - budget + 1)
