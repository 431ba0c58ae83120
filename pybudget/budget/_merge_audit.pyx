# Partner-choice audit: how the partner a search rule picks for SV p compares with golden
# section's pick and with the precise optimum over all partners.
from pybudget.budget._merge_math cimport gss_h, pair_wd, precise_h, wd_general


cdef int audit_partners(BudgetModel mdl, const PairSearch* S, int p, double* d2,
                        double* row) noexcept nogil:
    """Replays maintain()'s binary pairwise partner choice for SV p (n_coef = 1) under the
    rule S, under GSS (tol 0.01) and with a precise h.  row gets the WD of the merge
    maintain() executes, the WD of GSS's pick and the smallest precise WD; d2 is scratch
    (cap).  Returns 1 if S picks GSS's partner, 0 if not, -1 (row untouched) when p has no
    same-sign partner."""
    cdef int j, jg = -1, jm = -1
    cdef double bp, bj, m, c, wg, wm, wp, h, bg = -1.0, bm = -1.0, bpr = -1.0
    bp = mdl.beta[p]
    if bp == 0.0:
        return -1
    mdl.sqdist_all(p, d2)
    for j in range(mdl.n_sv):
        if j == p:
            continue
        bj = mdl.beta[j]
        if not bp * bj > 0.0:
            continue
        c = mdl.gamma * d2[j]
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
        wm = pair_wd(S, bp, bj, c, &h)      # the rule maintain() uses
        if jm < 0 or wm < bm:
            jm = j
            bm = wm
    if jm < 0:
        return -1
    bj = mdl.beta[jm]
    c = mdl.gamma * d2[jm]
    h = gss_h(bp / (bp + bj), c, S.tol)     # the executed merge's h
    row[0] = wd_general(bp * bp, bj * bj, bp * bj, c, h)
    row[1] = bg
    row[2] = bpr
    return 1 if jm == jg else 0
