# Dual coordinate descent, liblinear style, for every problem of the dual family, with
# each way of choosing the next coordinate written once:
#   SEL_UNIFORM   a fresh random permutation of all variables every sweep
#   SEL_SHRINKING liblinear's hard shrinking and stopping rule (version >= 2.42)
#   SEL_AVSF      adaptive variable selection frequencies (Glasmachers & Dogan, Alg. 3-5)
#   (docs/algorithms.md#hard-shrinking and #avsf describe both strategies)
#   SEL_PAIRS     uniform sweeps whose steps each add a pair step that keeps the bias
#                 fixed (SVM and SVR only; svm.py uses it when the bias column dominates)
#
# A problem is a struct (its DualData plus constants) with inline hooks (_dcd_svm.pxd,
# _dcd_svr.pxd, _dcd_lr.pxd, _dcd_cs.pxd): gradient, violation, exact one-variable (or
# one-block) step and that step's dual gain, shrinking rule and final check.  The
# strategies are fused over the problem types, so Cython compiles one specialised copy
# per problem and every hook is inlined: no indirect call per step.  A new problem adds
# a struct, its hooks, one line to the fused type and one branch to each dispatcher
# below.
#
# Everything here runs without the GIL on inputs validated in Python (linear/svm.py).
# With bias > 0 the model has one extra weight w[n_cols] for a constant feature.
#
# This file is included by _dcd64.pyx and _dcd32.pyx, each fixing the value type of X
# at compile time (PB_VALUE_TYPE); dual_data() refuses a matrix of the other type.
from libc.math cimport exp, INFINITY
from libc.stdint cimport uint64_t
from libc.stdlib cimport calloc, malloc, free
from libc.string cimport memcpy

from pybudget._core._csr cimport (PB_VALUE_TYPE, CsrView, csr_row_axpy, csr_rows_gram,
                                  csr_view)
from pybudget.linear._dcd_rows cimport (DualData, PairVar, Shrink, VISIT_DROP, VISIT_STEP,
                                        dual_qd, free_partner, pair_down, pair_move,
                                        pair_target, pair_up, prefetch_ahead)
from pybudget.linear._dcd_svm cimport (
    SvmProblem, svm_gradient, svm_violation, svm_step, svm_gain, svm_final, svm_pair_var,
    svm_pair_set,
    svm_shrink_begin, svm_shrink_visit, svm_shrink_met, svm_shrink_roll, svm_shrink_reset,
    svm_shrink_shown)
from pybudget.linear._dcd_svr cimport (
    SvrProblem, svr_gradient, svr_violation, svr_step, svr_gain, svr_final, svr_pair_var,
    svr_pair_set,
    svr_shrink_begin, svr_shrink_visit, svr_shrink_met, svr_shrink_roll, svr_shrink_reset,
    svr_shrink_shown)
from pybudget.linear._dcd_cs cimport (
    CsProblem, cs_gradient, cs_violation, cs_step, cs_gain, cs_final, cs_shrink_begin,
    cs_shrink_visit, cs_shrink_met, cs_shrink_roll, cs_shrink_reset, cs_shrink_shown)
from pybudget.linear._dcd_lr cimport (
    LrInner, LrProblem, lr_gradient, lr_violation, lr_step, lr_gain, lr_final, lr_loss,
    lr_shrink_begin, lr_shrink_visit, lr_shrink_met, lr_shrink_roll, lr_shrink_reset,
    lr_shrink_shown)
from pybudget._core._rng cimport rng_shuffle, rng_uniform
from pybudget._core._runtime cimport interrupted, now

import numpy as np

from pybudget._core._progress import report
from pybudget.linear._dcd_types import DcdOutcome, RoundOutcome
# sum_i w_i^2 added in numpy's pairwise order, the order np.sum(w * w) adds in (blocks
# of at most 128 with 8 accumulators, halved at multiples of 8 above): the same bits
# without np.sum's temporary w * w, which for a large d (or a K x d Crammer-Singer
# model) is the largest array a linear fit would allocate after the weights.  Squares
# are rounded before they are added (no FMA contraction), as numpy's separate
# multiply rounds them; tests/linear/test_linear_solver.py checks the equality.
cdef extern from *:
    """
    #if defined(__GNUC__) && !defined(__clang__)
    #pragma GCC push_options
    #pragma GCC optimize("fp-contract=off")
    #endif
    #if defined(__clang__)
    #pragma clang fp contract(off)
    #endif
    static double pb_pairwise_sqsum(const double* a, Py_ssize_t n) {
        Py_ssize_t i, n2;
        double res, v, r[8];
        int j;
        if (n < 8) {
            res = 0.0;
            for (i = 0; i < n; i++) { v = a[i] * a[i]; res += v; }
            return res;
        }
        if (n <= 128) {
            for (j = 0; j < 8; j++) r[j] = a[j] * a[j];
            for (i = 8; i < n - (n % 8); i += 8)
                for (j = 0; j < 8; j++) { v = a[i + j] * a[i + j]; r[j] += v; }
            res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
            for (; i < n; i++) { v = a[i] * a[i]; res += v; }
            return res;
        }
        n2 = n / 2;
        n2 -= n2 % 8;
        return pb_pairwise_sqsum(a, n2) + pb_pairwise_sqsum(a + n2, n - n2);
    }
    #if defined(__GNUC__) && !defined(__clang__)
    #pragma GCC pop_options
    #endif
    """
    double pb_pairwise_sqsum(const double* a, Py_ssize_t n) noexcept nogil


def sum_of_squares(const double[::1] w):
    """float(np.sum(w * w)), bit for bit, without the temporary w * w."""
    if w.shape[0] == 0:
        return 0.0
    return pb_pairwise_sqsum(&w[0], w.shape[0])


cdef enum:
    SEL_UNIFORM = 0
    SEL_SHRINKING = 1
    SEL_AVSF = 2
    SEL_PAIRS = 3

# the user's choices; PAIRS is svm.py's own (a dominant bias), as its primal "newton"
SELECTIONS = {"uniform": SEL_UNIFORM, "shrinking": SEL_SHRINKING, "avsf": SEL_AVSF}
PAIRS = SEL_PAIRS

# Stopping rules: the largest violation <= tol (every problem), or liblinear's rule for
# regression (-s 11/12/13): the sweep's L1 norm of the violations <= tol times the
# first sweep's (SVR only).
cdef enum:
    RULE_MAX = 0
    RULE_L1 = 1

TOL_RULES = {"max": RULE_MAX, "liblinear": RULE_L1}
VALUE_TYPE = np.dtype(f"float{PB_VALUE_TYPE}")   # what this module was compiled for
PROBLEMS = ("svm", "svr", "lr", "cs")

# AVSF constants from the paper: preference range and change rate.
cdef double P_MIN = 1.0 / 20.0
cdef double P_MAX = 20.0
cdef double CHANGE_RATE = 0.2
cdef double LOG_RANGE = 5.991464547107982  # log(P_MAX / P_MIN): caps exp()

ctypedef fused Problem:
    SvmProblem
    SvrProblem
    LrProblem
    CsProblem


# ---- dispatch: resolved at compile time in each specialisation ---------------------

cdef inline int stride(const Problem* P) noexcept nogil:
    """Weights per feature in w: K for Crammer-Singer's feature-major model, else 1."""
    if Problem is CsProblem:
        return P.K
    else:
        return 1


cdef inline double gradient(const Problem* P, const double* w, const double* a,
                            int i) noexcept nogil:
    if Problem is SvmProblem:
        return svm_gradient(P, w, a, i)
    elif Problem is SvrProblem:
        return svr_gradient(P, w, a, i)
    elif Problem is CsProblem:
        return cs_gradient(P, w, a, i)
    else:
        return lr_gradient(P, w, a, i)


cdef inline double violation(const Problem* P, const double* a, int i,
                             double G) noexcept nogil:
    if Problem is SvmProblem:
        return svm_violation(P, a, i, G)
    elif Problem is SvrProblem:
        return svr_violation(P, a, i, G)
    elif Problem is CsProblem:
        return cs_violation(P, a, i, G)
    else:
        return lr_violation(P, a, i, G)


cdef inline double step(const Problem* P, double* w, double* a, int i, double G,
                        double q) noexcept nogil:
    if Problem is SvmProblem:
        return svm_step(P, w, a, i, G, q)
    elif Problem is SvrProblem:
        return svr_step(P, w, a, i, G, q)
    elif Problem is CsProblem:
        return cs_step(P, w, a, i, G, q)
    else:
        return lr_step(P, w, a, i, G, q)


cdef inline double gain(const Problem* P, const double* a, int i, double G, double mu,
                        double q) noexcept nogil:
    if Problem is SvmProblem:
        return svm_gain(P, a, i, G, mu, q)
    elif Problem is SvrProblem:
        return svr_gain(P, a, i, G, mu, q)
    elif Problem is CsProblem:
        return cs_gain(P, a, i, G, mu, q)
    else:
        return lr_gain(P, a, i, G, mu, q)


cdef inline double final_check(const Problem* P, const double* w, const double* a, int i,
                               double tol, bint* drop, double* loss_sum) noexcept nogil:
    if Problem is SvmProblem:
        return svm_final(P, w, a, i, tol, drop, loss_sum)
    elif Problem is SvrProblem:
        return svr_final(P, w, a, i, tol, drop, loss_sum)
    elif Problem is CsProblem:
        return cs_final(P, w, a, i, tol, drop, loss_sum)
    else:
        return lr_final(P, w, a, i, tol, drop, loss_sum)


cdef inline void shrink_begin(const Problem* P, Shrink* sh) noexcept nogil:
    if Problem is SvmProblem:
        svm_shrink_begin(sh)
    elif Problem is SvrProblem:
        svr_shrink_begin(sh)
    elif Problem is CsProblem:
        cs_shrink_begin(sh)
    else:
        lr_shrink_begin(P, sh)


cdef inline int shrink_visit(const Problem* P, const double* a, int i, double G,
                             Shrink* sh) noexcept nogil:
    if Problem is SvmProblem:
        return svm_shrink_visit(P, a, i, G, sh)
    elif Problem is SvrProblem:
        return svr_shrink_visit(P, a, i, G, sh)
    elif Problem is CsProblem:
        return cs_shrink_visit(P, a, i, G, sh)
    else:
        return lr_shrink_visit(P, a, i, G, sh)


cdef inline bint shrink_met(const Problem* P, Shrink* sh, double tol) noexcept nogil:
    if Problem is SvmProblem:
        return svm_shrink_met(sh, tol)
    elif Problem is SvrProblem:
        return svr_shrink_met(sh, tol)
    elif Problem is CsProblem:
        return cs_shrink_met(P, sh, tol)
    else:
        return lr_shrink_met(sh, tol)


cdef inline void shrink_roll(const Problem* P, Shrink* sh) noexcept nogil:
    if Problem is SvmProblem:
        svm_shrink_roll(sh)
    elif Problem is SvrProblem:
        svr_shrink_roll(sh)
    elif Problem is CsProblem:
        cs_shrink_roll(sh)
    else:
        lr_shrink_roll(P, sh)


cdef inline void shrink_reset(const Problem* P, Shrink* sh) noexcept nogil:
    if Problem is SvmProblem:
        svm_shrink_reset(sh)
    elif Problem is SvrProblem:
        svr_shrink_reset(sh)
    elif Problem is CsProblem:
        cs_shrink_reset(P, sh)
    else:
        lr_shrink_reset(sh)


cdef inline double shrink_shown(const Problem* P, const Shrink* sh) noexcept nogil:
    if Problem is SvmProblem:
        return svm_shrink_shown(sh)
    elif Problem is SvrProblem:
        return svr_shrink_shown(sh)
    elif Problem is CsProblem:
        return cs_shrink_shown(sh)
    else:
        return lr_shrink_shown(sh)


cdef inline void pair_var(const Problem* P, const double* a, int i, double G, double b,
                          PairVar* v) noexcept nogil:
    if Problem is SvmProblem:
        svm_pair_var(P, a, i, G, b, v)
    elif Problem is SvrProblem:
        svr_pair_var(P, a, i, G, b, v)
    else:
        v[0] = free_partner(0.0)     # (never run: dcd_solve refuses the other problems)


cdef inline void pair_set(const Problem* P, double* a, int i, double z) noexcept nogil:
    if Problem is SvmProblem:
        svm_pair_set(P, a, i, z)
    elif Problem is SvrProblem:
        svr_pair_set(P, a, i, z)


# ---- the solver state and the strategies ---------------------------------------------

cdef struct State:
    double* w
    double* a
    double* qd          # curvature of each one-variable subproblem
    int* order          # permutation of the rows; the first `active` are shrinking's set
    int* sched          # AVSF's schedule for the current sweep
    double* pp          # AVSF's working preferences
    double* learned     # the caller's preferences (what a warm start carries over)
    double psum
    double dref         # AVSF's reference gain
    double shown        # the sweep's violation measure (for verbose output)
    double l1           # the sweep's L1 norm of the violations (RULE_L1)
    double l1_init      # the first sweep's (< 0 until then)
    int rule            # RULE_MAX or RULE_L1
    uint64_t rng
    long long steps
    int n
    int active
    int pos             # where a lap of a shrinking sweep continues (dcd_round's laps)
    bint first_sweep
    bint canstop
    bint saved
    Shrink sh


# How a sweep runs: a whole sweep with nothing else kept (the one-machine solvers), or a
# lap of one for the ring (pybudget.dask), which also keeps each visited row's loss.  A
# fused type, so the one-machine specialisation compiles without any of the ring's
# bookkeeping in its hot loops (measured: AVSF 1.19x slower per sweep with it).
cdef struct Whole:
    int unused

cdef struct Lapped:
    int lap             # this call runs lap number `lap` of `laps` shares of a sweep
    int laps
    double window       # AVSF's reference gain averages over about this many steps

ctypedef fused Mode:
    Whole
    Lapped


cdef Whole WHOLE


cdef inline bint l1_met(State* S, double l1, double tol) noexcept nogil:
    """liblinear's regression rule: this sweep's L1 norm of the violations at most tol
    times the first sweep's (recorded here on the first call)."""
    if S.l1_init < 0.0:
        S.l1_init = l1
    S.l1 = l1
    return l1 <= tol * S.l1_init


cdef enum:
    SWEEP_GO = 0        # keep going
    SWEEP_STOP = 1      # the strategy's own stopping rule fired
    SWEEP_UNSHRUNK = 2  # shrinking met its tolerance on a reduced set and restored it


cdef inline int lap_bound(int n, int lap, int laps) noexcept nogil:
    """Where lap number ``lap`` of ``laps`` ends in a sweep of n visits (laps share a
    sweep evenly; see dcd_round)."""
    return <int>((<long long>n * lap) // laps)


cdef double uniform_sweep(const Problem* P, State* S, const Mode* M) noexcept nogil:
    """One sweep in a fresh random order, or (Lapped) its lap-th share of ``laps`` (the
    order is drawn in the first); returns the largest violation seen."""
    # Hot state in locals: writes through S could alias it and force reloads.
    cdef double* w = S.w
    cdef double* a = S.a
    cdef const double* qd = S.qd
    cdef int* order = S.order
    cdef int s, i, lo = 0, hi = S.n
    cdef double G, pg, v = 0.0, l1 = 0.0
    if Mode is Lapped:
        lo, hi = lap_bound(S.n, M.lap, M.laps), lap_bound(S.n, M.lap + 1, M.laps)
        if M.lap == 0:
            rng_shuffle(&S.rng, order, S.n)
    else:
        rng_shuffle(&S.rng, order, S.n)
    for s in range(lo, hi):
        i = order[s]
        prefetch_ahead(&P.r.X, order, s, hi, w, stride(P))
        G = gradient(P, w, a, i)
        pg = violation(P, a, i, G)
        if pg > v:
            v = pg
        if Problem is SvrProblem:
            l1 += pg
        if pg > 1e-12:
            step(P, w, a, i, G, qd[i])
    S.steps += hi - lo
    S.l1 = l1
    return v


cdef struct Partners:
    # the sweep's best partner seen so far for a variable that goes down (it goes up:
    # the lowest pair_up) and for one that goes up (the highest pair_down); scores are
    # without the bias term, which cancels in a pair, so they stay comparable as the
    # bias moves; -1: none yet
    int up
    int down
    double up_score
    double down_score


cdef inline void offer(Partners* pt, int i, const PairVar* v) noexcept nogil:
    """Variable i (just computed exactly) as a candidate partner; a candidate offered
    again replaces its stale score even when it got worse."""
    cdef double sc
    if v.z < v.hi:
        sc = pair_up(v)
        if pt.up == i or pt.up < 0 or sc < pt.up_score:
            pt.up, pt.up_score = i, sc
    elif pt.up == i:
        pt.up = -1
    if v.z > v.lo:
        sc = pair_down(v)
        if pt.down == i or pt.down < 0 or sc > pt.down_score:
            pt.down, pt.down_score = i, sc
    elif pt.down == i:
        pt.down = -1


cdef inline double move_var(const Problem* P, double* w, double* a, int i, PairVar* v,
                            double t) noexcept nogil:
    """z_i += t (landing exactly on a bound or kink it reaches), w and the bias weight
    following; returns the change of z_i."""
    cdef double z = pair_target(v, t), dz = z - v.z
    if dz != 0.0:
        pair_set(P, a, i, z)
        csr_row_axpy(&P.r.X, i, dz, w)
        w[P.r.d] += P.r.bias * dz
        v.z = z
    return dz


cdef inline bint pair_step(const Problem* P, double* w, double* a, int iu, int id,
                           PairVar* u, PairVar* d) noexcept nogil:
    """z_iu += t, z_id -= t for the exact minimiser t; u and d (exact on entry) follow.
    Returns whether anything moved."""
    cdef double gram[3]
    cdef double q = csr_rows_gram(&P.r.X, iu, id, gram) + P.r.diag[iu] + P.r.diag[id]
    cdef double t = pair_move(u, d, q), du, dd
    if t == 0.0:
        return False
    # (the bias weight moves by bias (du + dd): 0 up to the rounding of a clipped move)
    du = move_var(P, w, a, iu, u, t)
    dd = move_var(P, w, a, id, d, -t)
    u.g += du * gram[0] + dd * gram[1] + P.r.diag[iu] * du
    d.g += du * gram[1] + dd * gram[2] + P.r.diag[id] * dd
    return True


cdef double pairs_sweep(const Problem* P, State* S) noexcept nogil:
    """One sweep for a dominant bias column (bias^2 y y' in Q): every variable, in a fresh
    random order, takes its coordinate step (curvature ~bias^2: it mostly moves the bias,
    which it sets for its own row) and then a pair step with the sweep's most violating
    partner seen so far (the bias fixed, curvature |x_i - x_j|^2), which makes the
    progress single steps cannot.  The coordinate step is the exact one of the z form:
    the problems' own steps skip moves below 1e-12 (liblinear's SVR), which at a large
    bias are still moves of the bias by 1e-12 bias^2.  Returns the largest coordinate
    violation seen."""
    cdef double* w = S.w
    cdef double* a = S.a
    cdef const double* qd = S.qd
    cdef int* order = S.order
    cdef int s, i, j, n = S.n
    cdef long long pairs = 0
    cdef double G, pg, v = 0.0, l1 = 0.0, b, up_gap, down_gap
    cdef PairVar vi, vj, free
    cdef Partners pt
    pt.up, pt.down, pt.up_score, pt.down_score = -1, -1, 0.0, 0.0
    rng_shuffle(&S.rng, order, n)
    for s in range(n):
        i = order[s]
        prefetch_ahead(&P.r.X, order, s, n, w, stride(P))
        G = gradient(P, w, a, i)
        pg = violation(P, a, i, G)
        if pg > v:
            v = pg
        l1 += pg
        b = P.r.bias * w[P.r.d]
        pair_var(P, a, i, G, b, &vi)
        if pg > 1e-12:
            free = free_partner(b)
            # the full gradient moves by qd dz, the bias term by bias^2 dz
            vi.g += b + qd[i] * move_var(P, w, a, i, &vi, pair_move(&vi, &free, qd[i]))
            b = P.r.bias * w[P.r.d]
            vi.g -= b
        # i up with the partner going down, or i down with the one going up, whichever
        # violates more by the partners' (possibly stale) scores
        up_gap = (pt.down_score - pair_up(&vi)
                  if vi.z < vi.hi and pt.down >= 0 and pt.down != i else 0.0)
        down_gap = (pair_down(&vi) - pt.up_score
                    if vi.z > vi.lo and pt.up >= 0 and pt.up != i else 0.0)
        j = -1
        if up_gap > 1e-12 and up_gap >= down_gap:
            j = pt.down
            pair_var(P, a, j, gradient(P, w, a, j), b, &vj)
            pairs += pair_step(P, w, a, i, j, &vi, &vj)
        elif down_gap > 1e-12:
            j = pt.up
            pair_var(P, a, j, gradient(P, w, a, j), b, &vj)
            pairs += pair_step(P, w, a, j, i, &vj, &vi)
        if j >= 0:
            offer(&pt, j, &vj)
        offer(&pt, i, &vi)
    S.steps += n + pairs
    S.l1 = l1
    return v


cdef int shrinking_sweep(const Problem* P, State* S, double tol,
                         const Mode* M) noexcept nogil:
    """One sweep over the active set in random order, shrinking as the problem's rule
    says, or (Lapped) its lap-th share of ``laps`` (the order is drawn and the extremes
    restart in the first, a lap continues at S.pos, and the sweep's end is in the
    last); returns a SWEEP_* code (SWEEP_GO before the last lap)."""
    cdef double* w = S.w
    cdef double* a = S.a
    cdef const double* qd = S.qd
    cdef int* order = S.order
    cdef int s = 0, i, code, active = S.active, quota = S.n
    cdef long long steps = S.steps
    cdef Shrink sh = S.sh
    cdef double G
    if Mode is Lapped:
        s = S.pos
        if M.lap == 0:
            s = 0
            rng_shuffle(&S.rng, order, active)
            shrink_begin(P, &sh)
        # this lap's share of the visits left (a drop counts as a visit)
        if M.lap < M.laps - 1:
            quota = (active - s + M.laps - M.lap - 1) // (M.laps - M.lap)
    else:
        rng_shuffle(&S.rng, order, active)
        shrink_begin(P, &sh)
    while s < active:
        if Mode is Lapped:
            if quota == 0:
                break
            quota -= 1
        i = order[s]
        prefetch_ahead(&P.r.X, order, s, active, w, stride(P))
        steps += 1
        G = gradient(P, w, a, i)
        code = shrink_visit(P, a, i, G, &sh)
        if code == VISIT_DROP:
            active -= 1
            order[s] = order[active]
            order[active] = i
            continue
        if code == VISIT_STEP:
            step(P, w, a, i, G, qd[i])
        s += 1
    S.steps = steps
    S.active = active
    S.sh = sh
    if Mode is Lapped:
        S.pos = s
        if M.lap < M.laps - 1:
            return SWEEP_GO
    return shrink_end(P, S, tol, active, &sh)


cdef int shrink_end(const Problem* P, State* S, double tol, int active,
                    Shrink* sh) noexcept nogil:
    """The end of a hard-shrinking sweep that left ``active`` rows active with the
    extremes in sh: the stopping rule, and the thresholds rolled for the next sweep
    (kept in S); returns a SWEEP_* code."""
    cdef int code = SWEEP_GO
    if (l1_met(S, sh.sum_new, tol) if S.rule == RULE_L1 else shrink_met(P, sh, tol)):
        if active == S.n:
            code = SWEEP_STOP
        else:
            # Possibly wrong shrinking decisions: check everything again.
            active = S.n
            shrink_reset(P, sh)
            code = SWEEP_UNSHRUNK
    S.shown = shrink_shown(P, sh)
    if code == SWEEP_GO:
        shrink_roll(P, sh)
    S.active = active
    S.sh = sh[0]
    return code


cdef void make_schedule(uint64_t* rng, const double* p, double psum, int n,
                        int* sched) noexcept nogil:
    """AVSF Alg. 4: exactly n slots, variable i gets about n p_i / psum of them
    (stochastic rounding), then shuffled."""
    cdef double N = psum, m
    cdef int i, j = 0, _k, cnt
    for i in range(n):
        if i == n - 1:
            cnt = n - j
        else:
            m = p[i] * (n - j) / N if N > 0.0 else 0.0
            cnt = <int>m
            if rng_uniform(rng) < m - cnt:
                cnt += 1
            if cnt > n - j:
                cnt = n - j
        for _k in range(cnt):
            sched[j] = i
            j += 1
        N -= p[i]
    rng_shuffle(rng, sched, n)


cdef inline double avsf_adapt(double* pp, int i, double g, double dref) noexcept nogil:
    """Alg. 3's preference update of variable i after a step of dual gain g against the
    reference gain dref > 0; returns the change of pp[i] (for the running sum)."""
    cdef double href = CHANGE_RATE * (g / dref - 1.0), pnew, old = pp[i]
    if href > LOG_RANGE:
        href = LOG_RANGE
    pnew = old * exp(href)
    if pnew < P_MIN:
        pnew = P_MIN
    elif pnew > P_MAX:
        pnew = P_MAX
    pp[i] = pnew
    return pnew - old


cdef bint avsf_sweep(const Problem* P, State* S, double tol, const Mode* M) noexcept nogil:
    """One AVSF sweep (Alg. 3): visit the schedule, adapt each visited variable's
    preference to its step's dual gain relative to the running reference; returns
    True when the stopping rule fired (a sweep below tol after one that confirms it
    with uniform preferences).  Or (Lapped) its lap-th share of ``laps`` (the schedule is drawn
    in the first, the rule is tested in the last; a first sweep's reference gain is
    the mean over the lap's visits)."""
    cdef double* w = S.w
    cdef double* a = S.a
    cdef double* pp = S.pp
    cdef const double* qd = S.qd
    cdef const int* sched = S.sched
    cdef int s, i, n = S.n, lo = 0, hi = S.n
    cdef double G, pg, mu, g, v = 0.0, l1 = 0.0, dref = S.dref, psum = S.psum
    cdef double window = n
    cdef bint first_sweep = S.first_sweep
    if Mode is Lapped:
        lo, hi = lap_bound(n, M.lap, M.laps), lap_bound(n, M.lap + 1, M.laps)
        window = M.window
        if M.lap == 0:
            make_schedule(&S.rng, pp, psum, n, S.sched)
    else:
        make_schedule(&S.rng, pp, psum, n, S.sched)
    for s in range(lo, hi):
        i = sched[s]
        prefetch_ahead(&P.r.X, sched, s, hi, w, stride(P))
        G = gradient(P, w, a, i)
        pg = violation(P, a, i, G)
        if pg > v:
            v = pg
        if Problem is SvrProblem:
            l1 += pg
        mu = step(P, w, a, i, G, qd[i]) if pg > 1e-12 else 0.0
        g = gain(P, a, i, G, mu, qd[i])
        if first_sweep:
            dref += g / (hi - lo)
        else:
            if dref > 0.0:
                psum += avsf_adapt(pp, i, g, dref)
            dref = (1.0 - 1.0 / window) * dref + g / window
    S.steps += hi - lo
    S.first_sweep = False
    S.dref = dref
    S.psum = psum
    S.shown = v
    if Mode is Lapped:
        if M.lap < M.laps - 1:
            return False
    return avsf_end(S, tol, v, l1)


cdef bint avsf_end(State* S, double tol, double v, double l1) noexcept nogil:
    """The end of an AVSF sweep whose largest violation was v (L1 sum l1): True when
    the stopping rule fired; otherwise resets the preferences to uniform when the next
    sweep must confirm."""
    cdef int i
    if l1_met(S, l1, tol) if S.rule == RULE_L1 else v < tol:
        if S.canstop:
            return True
        # Reset preferences: the next sweep is uniform and must confirm.
        memcpy(S.learned, S.pp, S.n * sizeof(double))
        S.saved = True
        for i in range(S.n):
            S.pp[i] = 1.0
        S.psum = S.n
        S.canstop = True
    else:
        S.canstop = False
        S.saved = False
    return False


cdef double exact_pass(const Problem* P, State* S, double tol, double* loss_sum,
                       int* n_active) noexcept nogil:
    """Max violation over all variables and the weighted primal loss.

    Also rewrites order as a permutation with the rows that hard shrinking would drop
    at tolerance tol at the end; their count is n - n_active.  That is the shrinking
    state a warm start carries over."""
    cdef double v = 0.0, pg
    cdef int i, front = 0, back = S.n - 1
    cdef bint drop
    loss_sum[0] = 0.0
    for i in range(S.n):
        pg = final_check(P, S.w, S.a, i, tol, &drop, loss_sum)
        if pg > v:
            v = pg
        if drop:
            S.order[back] = i
            back -= 1
        else:
            S.order[front] = i
            front += 1
    n_active[0] = front
    return v


cdef struct Outcome:
    int n_iter
    int final_active
    double kkt
    double loss_sum
    bint converged
    bint interrupted


cdef Outcome run(const Problem* P, State* S, int selection, double tol, int max_iter,
                 int verbose) noexcept nogil:
    """Sweeps of the chosen strategy until its rule fires and the exact pass confirms
    it, max_iter sweeps, or Ctrl-C."""
    cdef Outcome out
    cdef bint stop_rule
    cdef int code, i
    cdef double t0 = now()
    out.n_iter = 0
    out.final_active = S.n
    out.kkt = INFINITY
    out.loss_sum = 0.0
    out.converged = False
    out.interrupted = False
    for i in range(S.n):
        S.qd[i] = dual_qd(&P.r, i)
    shrink_reset(P, &S.sh)
    while out.n_iter < max_iter:
        if selection == SEL_UNIFORM or selection == SEL_PAIRS:
            S.shown = (uniform_sweep(P, S, &WHOLE) if selection == SEL_UNIFORM
                       else pairs_sweep(P, S))
            stop_rule = l1_met(S, S.l1, tol) if S.rule == RULE_L1 else S.shown <= tol
        elif selection == SEL_SHRINKING:
            code = shrinking_sweep(P, S, tol, &WHOLE)
            if code == SWEEP_UNSHRUNK:
                out.n_iter += 1
                continue
            stop_rule = code == SWEEP_STOP
        else:
            stop_rule = avsf_sweep(P, S, tol, &WHOLE)
        out.n_iter += 1
        if verbose >= 2:
            with gil:
                report(f"sweep {out.n_iter}: violation {S.shown:.3g}, steps {S.steps}, "
                       f"active {S.active}, pref sum {S.psum:.4g}, canstop {S.canstop}",
                       now() - t0)
        if stop_rule and S.rule == RULE_L1:
            # As liblinear: the rule fired on a sweep over every variable (shrinking
            # has unshrunk and rechecked first), no exact confirmation.  The pass
            # reports the violation and the loss; shrinking's partition for a warm
            # start uses the last sweep's largest violation as its threshold.
            out.kkt = exact_pass(P, S, S.shown, &out.loss_sum, &out.final_active)
            out.converged = True
            break
        if stop_rule:
            out.kkt = exact_pass(P, S, tol, &out.loss_sum, &out.final_active)
            if out.kkt <= tol:
                out.converged = True
                break
            # The in-sweep check was optimistic (w moved after a variable was seen).
            S.canstop = False
            S.active = S.n
            shrink_reset(P, &S.sh)
        if interrupted():
            out.interrupted = True
            break
    if not out.converged:
        out.kkt = exact_pass(P, S, S.shown if S.rule == RULE_L1 else tol, &out.loss_sum,
                             &out.final_active)
        # max_iter reached before the strategy's own rule fired: the exact pass may
        # still show the tolerance met, and then the run did converge (the L1 rule,
        # relative to a sweep, has no exact counterpart: not converged).
        out.converged = (S.rule == RULE_MAX and out.kkt <= tol
                         and not out.interrupted)
    return out


cdef int* cs_setup(CsProblem* cs, DualData r, int K, const double[::1] y, Py_ssize_t n_alpha,
                   Py_ssize_t n_w, double tol, double** buf) except? NULL:
    """Check the Crammer-Singer inputs and allocate the problem's scratch (returned: the
    int buffer; buf: the double one; both for free())."""
    cdef Py_ssize_t i, n = r.n
    if K < 2:
        raise ValueError(f"problem 'cs' needs n_classes >= 2, got {K}")
    if n_alpha != n * K or n_w != K * (<Py_ssize_t>r.d + 1):
        raise ValueError(f"problem 'cs' needs alpha of size n * n_classes = {n * K} and w "
                         f"of size n_classes * (d + 1) = {K * (r.d + 1)}, got {n_alpha} "
                         f"and {n_w}")
    for i in range(n):
        if not (0 <= y[i] < K) or y[i] != <int>y[i]:
            raise ValueError(f"problem 'cs' needs labels in 0..{K - 1}, got {y[i]}")
        if r.diag[i] != 0.0:
            raise ValueError("problem 'cs' needs diag = 0")
    cdef double* d = <double*>malloc((4 * K + 1) * sizeof(double))
    cdef int* ib = <int*>malloc((n * K + n + 1 + K) * sizeof(int))
    if d == NULL or ib == NULL:
        free(d)
        free(ib)
        raise MemoryError()
    cs.r = r
    cs.K = K
    cs.G, cs.D, cs.delta, cs.limit = d, d + K, d + 3 * K, d + 4 * K
    cs.cls, cs.nact, cs.partial = ib, ib + n * K, ib + n * K + n
    cs.all_cls = ib + n * K + n + 1
    for i in range(n * K + K):
        ib[i if i < n * K else i + n + 1] = i % K
    cs.limit[0] = 10.0 * tol if 10.0 * tol > 1.0 else 1.0    # liblinear's eps_shrink
    buf[0] = d
    return ib


cdef DualData dual_data(X, const double[::1] y, const double[::1] upper,
                        const double[::1] diag, const double[::1] cvec, double bias,
                        bint squared) except *:
    """The DualData of validated inputs (n >= 1); its pointers live as long as the
    caller's memoryviews."""
    cdef DualData r
    r.X = csr_view(X)
    if ((PB_VALUE_TYPE == 64 and r.X.data32 != NULL)
            or (PB_VALUE_TYPE == 32 and r.X.data != NULL)):
        raise TypeError(f"this solver module reads float{PB_VALUE_TYPE} values only, "
                        f"got {X.dtype}")
    r.y = &y[0]
    r.upper = &upper[0]
    r.diag = &diag[0]
    r.cvec = &cvec[0]
    r.bias = bias
    r.n = y.shape[0]
    r.d = X.shape[1]
    r.squared = squared
    return r


def dcd_solve(X, const double[::1] y, const double[::1] upper, const double[::1] diag,
              const double[::1] cvec, double bias, state, opts):
    """Run dual CD in place on ``state`` (a DcdState: alpha, w and the strategies'
    warm-start state) as ``opts`` (a DcdOptions) says; returns a DcdOutcome
    (pybudget/linear/_dcd_types.py), with state.n_active, state.dref and, for "lr",
    state.comp updated.

    problem: "svm" (y = +-1 labels, alpha in [0, upper]), "svr" (y = targets, alpha
    holds beta in [-upper, upper], epsilon the insensitive zone), "lr" (y = +-1
    labels, alpha strictly inside (0, upper); comp, if given, holds upper - alpha,
    computed from alpha otherwise, and is updated in place) or "cs" (Crammer-Singer:
    y = class indices 0..n_classes-1, alpha of n * n_classes example-major block
    variables with alpha_i^m <= upper_i [m == y_i] and sum_m alpha_i^m = 0, w of
    n_classes rows of d + 1; diag must be 0).  w must equal the model of alpha
    (sum_i alpha_i y_i x_i, sum_i beta_i x_i or w_m = sum_i alpha_i^m x_i, plus the bias
    column) on entry.  Warm-start state, updated in place: prefs (AVSF preferences), perm (a
    permutation of the rows whose first n_active entries are the shrinking active set)
    and dref (AVSF reference gain; <= 0 means "learn it in the first sweep").  The
    outcome's kkt_violation is exact (one extra pass); for tol_rule=RULE_L1 it has l1_init
    and l1 (the first and last sweeps' L1 norms).

    n_threads > 1 (problems "svm" and "svr", selections uniform, shrinking and AVSF,
    in a build with OpenMP; otherwise one thread): the sweeps are made by a team of
    threads that combine their steps every ``chunk`` visits each (_dcd_team.pxi); the
    outcome then has combines and damped (combines with eta < 1).

    selection: a SELECTIONS value, or PAIRS (problems "svm" and "svr": coordinate steps
    each followed by a pair step that keeps the bias weight fixed, for a dominant bias).

    tol_rule: TOL_RULES["max"] (stop when the largest violation is <= tol, confirmed by
    an exact pass) or TOL_RULES["liblinear"] (problem "svr" only: stop when a sweep's L1
    norm of the violations is <= tol times the first sweep's, liblinear -s 11/12/13).
    """
    # (the options and state into typed locals once: nothing below reads a Python object)
    cdef double[::1] alpha = state.alpha
    cdef double[::1] w = state.w
    cdef double[::1] prefs = state.prefs
    cdef int[::1] perm = state.perm
    cdef int n_active = state.n_active
    cdef double dref0 = state.dref
    comp = state.comp
    cdef int selection = opts.selection
    cdef double tol = opts.tol
    cdef int max_iter = opts.max_iter
    cdef uint64_t seed = opts.seed
    cdef bint squared = opts.squared
    cdef int verbose = opts.verbose
    cdef str problem = opts.problem
    cdef double epsilon = opts.epsilon
    cdef int n_classes = opts.n_classes
    cdef int tol_rule = opts.tol_rule
    cdef int n_threads = opts.n_threads
    cdef int chunk = opts.chunk
    if problem not in PROBLEMS:
        raise ValueError(f"problem must be one of {PROBLEMS}, got {problem!r}")
    if tol_rule != RULE_MAX and (tol_rule != RULE_L1 or problem != "svr"):
        raise ValueError(f"tol_rule {tol_rule} is not available for problem {problem!r}")
    if selection == SEL_PAIRS and problem not in ("svm", "svr"):
        raise ValueError(f"pair steps are written for problems 'svm' and 'svr', got {problem!r}")
    cdef int n = y.shape[0]
    cdef DualData r = dual_data(X, y, upper, diag, cvec, bias, squared)
    cdef SvmProblem svm
    cdef SvrProblem svr
    cdef LrProblem lr
    cdef LrInner inner
    cdef double[::1] comp_view
    svm.r = r
    svr.r = r
    svr.eps = epsilon
    if problem == "lr":
        if comp is None:
            comp = np.subtract(upper, alpha)
            state.comp = comp
        comp_view = comp
        if comp_view.shape[0] != n:
            raise ValueError("comp must have one entry per row")
        lr.r = r
        lr.comp = &comp_view[0]
        lr.inner = &inner
        # liblinear's inner tolerance: loose at first under its own outer loop
        # ("shrinking"), which tightens it as sweeps get cheap; the other strategies
        # have no such schedule and solve each subproblem to the floor.
        inner.eps_min = tol if tol < 1e-8 else 1e-8
        inner.eps = 1e-2 if selection == SEL_SHRINKING else inner.eps_min
        if inner.eps < inner.eps_min:
            inner.eps = inner.eps_min
        inner.newton = 0
        inner.max_inner = 100
        inner.old_a = 0.0
        inner.old_c = 0.0
    cdef CsProblem cs
    cdef double* cs_buf = NULL
    cdef int* cs_ibuf = NULL
    if problem == "cs":
        cs_ibuf = cs_setup(&cs, r, n_classes, y, alpha.shape[0], w.shape[0], tol, &cs_buf)

    cdef State S
    S.qd = <double*>malloc(n * sizeof(double))
    S.sched = <int*>malloc(n * sizeof(int))
    # AVSF works on pp; learned (the caller's array) receives the preferences as they
    # were before the final reset-to-uniform, which is what a warm start wants.
    S.pp = <double*>malloc(n * sizeof(double))
    if S.qd == NULL or S.sched == NULL or S.pp == NULL:
        free(cs_buf)
        free(cs_ibuf)
        free(S.qd)
        free(S.sched)
        free(S.pp)
        raise MemoryError()
    S.w = &w[0]
    S.a = &alpha[0]
    S.order = &perm[0]
    S.learned = &prefs[0]
    memcpy(S.pp, S.learned, n * sizeof(double))
    S.psum = 0.0
    for i in range(n):
        S.psum += S.pp[i]
    S.dref = dref0
    S.first_sweep = dref0 <= 0.0
    S.shown = 0.0
    S.l1 = 0.0
    S.l1_init = -1.0
    S.rule = tol_rule
    S.rng = seed
    S.steps = 0
    S.n = n
    S.active = n_active
    S.pos = 0
    S.canstop = True
    S.saved = False

    cdef Outcome out
    cdef int which = PROBLEMS.index(problem)   # (no str comparison without the GIL)
    cdef Team* tm = NULL
    if (n_threads > 1 and pb_openmp() and which <= 1 and n > 0
            and selection in (SEL_UNIFORM, SEL_SHRINKING, SEL_AVSF)):
        if chunk < 1:
            raise ValueError(f"chunk must be >= 1 with n_threads > 1, got {chunk}")
        tm = team_new(n_threads, chunk, n, r.d + 1, selection == SEL_AVSF)
        if tm == NULL:
            free(cs_buf)
            free(cs_ibuf)
            free(S.qd)
            free(S.sched)
            free(S.pp)
            raise MemoryError()
    with nogil:
        if tm != NULL:
            if which == 0:
                out = team_run(&svm, &S, tm, selection, tol, max_iter, verbose)
            else:
                out = team_run(&svr, &S, tm, selection, tol, max_iter, verbose)
        elif which == 0:
            out = run(&svm, &S, selection, tol, max_iter, verbose)
        elif which == 1:
            out = run(&svr, &S, selection, tol, max_iter, verbose)
        elif which == 2:
            out = run(&lr, &S, selection, tol, max_iter, verbose)
        else:
            out = run(&cs, &S, selection, tol, max_iter, verbose)

    if not S.saved:
        memcpy(S.learned, S.pp, n * sizeof(double))
    free(cs_buf)
    free(cs_ibuf)
    free(S.qd)
    free(S.sched)
    free(S.pp)
    cdef long long combines = 0, damped = 0
    if tm != NULL:
        combines, damped = tm.combines, tm.damped
        team_free(tm)
    if out.interrupted:
        raise KeyboardInterrupt
    state.n_active = out.final_active
    state.dref = S.dref
    return DcdOutcome(n_iter=out.n_iter, n_steps=S.steps, converged=bool(out.converged),
                      kkt_violation=out.kkt, loss_sum=out.loss_sum,
                      l1_init=S.l1_init if tol_rule == RULE_L1 else None,
                      l1=S.l1 if tol_rule == RULE_L1 else None,
                      combines=combines if tm != NULL else None,
                      damped=damped if tm != NULL else None)


# ---- one partition's share of a round (pybudget.dask) ---------------------------------
#
# The ring (docs/algorithms.md#the-ring) runs the unchanged strategies on a partition's
# rows and the current global w: one machine's problem restricted to those rows (the
# same box and diagonal), with the partition's duals and strategy state kept by the
# caller between calls.

# dcd_round's scalars kept between calls: _dcd_types.ROUND_SCALARS, field for field
cdef packed struct RoundScalars:
    double max_old, min_old, max_new, min_new
    double dref, lr_tol, lap_pos


def dcd_round(X, const double[::1] y, const double[::1] upper, const double[::1] diag,
              const double[::1] cvec, double bias, double[::1] alpha, double[::1] w,
              double[::1] prefs, int[::1] perm, int n_active, RoundScalars[::1] scal,
              double[::1] qd, bint fresh, int selection, int sweeps, uint64_t seed,
              bint squared, bint check, str problem="svm", double epsilon=0.0,
              comp=None, int lap=0, int laps=1, int n_total=0):
    """``sweeps`` sweeps of a strategy, in place on alpha (u), w (v, entering as the global
    w) and the strategy state: prefs (AVSF preferences), perm and n_active (hard
    shrinking's active set first), scal (one ``_dcd_types.ROUND_SCALARS`` record: shrinking's
    thresholds and extremes, AVSF's dref, the logistic inner tolerance, where a shrinking
    lap continues), qd (curvatures, computed here when ``fresh``).  No strategy stops early
    here: every rule runs at tolerance 0 (the caller stops on its own exact check).

    With ``check``, a pass before the sweeps, at the entering w (cvec holds the
    unscaled C_i): the exact maximal violation and the weighted primal loss (returned
    as kkt_violation and loss_sum), and hard shrinking's active set recomputed from
    scratch (the rows at a bound whose gradient points outwards are shrunk; every
    other row is active again).  Returns a RoundOutcome with those, n_active and
    n_steps.

    With ``laps`` > 1 (and sweeps = 1), the call runs the lap-th of ``laps`` even shares
    of one sweep, so that the ring can interleave the partitions' sweeps; the calls for
    laps 0 .. laps - 1 in turn make one sweep (the order or AVSF's schedule, kept in
    perm, is drawn in the first).  Every strategy's state between laps is in the
    arguments.  n_total: the rows of the whole problem when these are a part of it
    (AVSF's reference gain then averages over a sweep of the whole, as on one
    machine)."""
    if problem not in PROBLEMS[:3]:
        raise ValueError(f"problem must be one of {PROBLEMS[:3]}, got {problem!r}")
    if not (0 <= lap < laps) or (laps > 1 and sweeps > 1) or scal.shape[0] != 1:
        raise ValueError(f"lap {lap} of {laps} with {sweeps} sweeps and {scal.shape[0]} "
                         "records of scalars: need 0 <= lap < laps, one sweep with laps, "
                         "one record")
    cdef int n = y.shape[0], i
    if n == 0:
        return RoundOutcome(n_active=0, n_steps=0, kkt_violation=0.0, loss_sum=0.0)
    cdef DualData r = dual_data(X, y, upper, diag, cvec, bias, squared)
    cdef SvmProblem svm
    cdef SvrProblem svr
    cdef LrProblem lr
    cdef LrInner inner
    cdef double[::1] comp_view
    svm.r = r
    svr.r = r
    svr.eps = epsilon
    if problem == "lr":
        comp_view = comp
        lr.r = r
        lr.comp = &comp_view[0]
        lr.inner = &inner
        inner.eps_min = 1e-8
        inner.eps = scal[0].lr_tol if scal[0].lr_tol > inner.eps_min else inner.eps_min
        inner.newton = 0
        inner.max_inner = 100
        inner.old_a = 0.0
        inner.old_c = 0.0
    cdef State S
    S.qd = &qd[0]
    # AVSF's schedule in perm (unused by AVSF otherwise): it must outlive a lap
    S.sched = &perm[0]
    S.w = &w[0]
    S.a = &alpha[0]
    S.order = &perm[0]
    S.pp = &prefs[0]
    S.learned = &prefs[0]
    cdef Lapped M
    M.lap, M.laps = lap, laps
    M.window = n_total if n_total > n else n
    S.psum = 0.0
    for i in range(n):
        S.psum += prefs[i]
    S.dref = scal[0].dref
    S.first_sweep = scal[0].dref <= 0.0
    S.shown = 0.0
    S.l1 = 0.0
    S.l1_init = -1.0
    S.rule = RULE_MAX
    S.rng = seed
    S.steps = 0
    S.n = n
    S.active = n_active
    S.pos = <int>scal[0].lap_pos
    S.canstop = False
    S.saved = False
    S.sh.max_old, S.sh.min_old = scal[0].max_old, scal[0].min_old
    S.sh.max_new, S.sh.min_new = scal[0].max_new, scal[0].min_new
    cdef double kkt = 0.0, loss_sum = 0.0
    cdef int which = PROBLEMS.index(problem)
    with nogil:
        if fresh:
            for i in range(n):
                qd[i] = dual_qd(&r, i)
        if which == 0:
            kkt = round_sweeps(&svm, &S, &M, selection, sweeps, check, &loss_sum)
        elif which == 1:
            kkt = round_sweeps(&svr, &S, &M, selection, sweeps, check, &loss_sum)
        else:
            kkt = round_sweeps(&lr, &S, &M, selection, sweeps, check, &loss_sum)
    scal[0].max_old, scal[0].min_old = S.sh.max_old, S.sh.min_old
    scal[0].max_new, scal[0].min_new = S.sh.max_new, S.sh.min_new
    scal[0].dref = S.dref
    scal[0].lap_pos = S.pos
    if problem == "lr":
        scal[0].lr_tol = inner.eps
    return RoundOutcome(n_active=S.active, n_steps=S.steps, kkt_violation=kkt,
                        loss_sum=loss_sum)


cdef double round_sweeps(const Problem* P, State* S, const Lapped* M, int selection,
                         int sweeps, bint check, double* loss_sum) noexcept nogil:
    """The check pass (when asked) and the sweeps of dcd_round; returns the check's
    violation (0 without it)."""
    cdef double kkt = 0.0
    cdef int _s, active
    if check:
        kkt = exact_pass(P, S, 0.0, loss_sum, &active)
        if selection == SEL_SHRINKING:
            S.active = active
    for _s in range(sweeps):
        if selection == SEL_UNIFORM:
            S.shown = uniform_sweep(P, S, M)
        elif selection == SEL_SHRINKING:
            shrinking_sweep(P, S, 0.0, M)
        else:
            avsf_sweep(P, S, 0.0, M)
    return kkt


# ---- the ring (pybudget.dask, method="ring"; docs/algorithms.md#the-ring) -------------
#
# In a sequential pass over the partitions, hard shrinking's thresholds must come from the
# whole round, not from one partition's rows: the partitions fold their sweeps' extremes
# into scalars carried along the ring (max_new, min_new), and at the start of the next
# round this rolls them into thresholds (max_old, min_old) by the problem's own rule.

def roll_carried(str problem, double max_old, double min_old, double max_new,
                 double min_new):
    """Hard shrinking's thresholds and extremes (_dcd_types.THRESHOLDS) at the end of a
    ring round: the round's extremes become the next round's thresholds and the extremes
    restart, as one machine's sweep ends.  Returns the four in the same order."""
    cdef Shrink sh
    sh.max_old, sh.min_old, sh.max_new, sh.min_new = max_old, min_old, max_new, min_new
    sh.sum_new = 0.0
    if problem == "svm":
        svm_shrink_roll(&sh)
        svm_shrink_begin(&sh)
    elif problem == "svr":
        svr_shrink_roll(&sh)
        svr_shrink_begin(&sh)
    # (logistic regression has no shrinking thresholds: unchanged)
    return sh.max_old, sh.min_old, sh.max_new, sh.min_new


def fresh_carry(str problem):
    """Hard shrinking's thresholds and extremes before the first round, as a fresh solver
    has them (_dcd_types.THRESHOLDS' order)."""
    cdef Shrink sh
    sh.max_old, sh.min_old, sh.max_new, sh.min_new, sh.sum_new = 0.0, 0.0, 0.0, 0.0, 0.0
    if problem == "svr":
        svr_shrink_reset(&sh)
        svr_shrink_begin(&sh)
        sh.min_new = INFINITY
    else:
        svm_shrink_reset(&sh)
        svm_shrink_begin(&sh)
    return [sh.max_old, sh.min_old, sh.max_new, sh.min_new]


include "_dcd_team.pxi"
