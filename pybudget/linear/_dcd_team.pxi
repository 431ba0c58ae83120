# One problem on several threads (dcd_solve's n_threads > 1): the strategies of _dcd.pxi
# run by a team of OpenMP threads.  Included at the end of _dcd.pxi (it uses its hooks).
#
# Each sweep's visits are dealt to the threads (uniform and shrinking: contiguous shares
# of the sweep's order; AVSF: each row belongs to one thread for the whole solve, and a
# thread visits its rows' slots of the schedule).  A thread steps on its own replica of
# w for `chunk` visits; then the team combines (combine): w moves by eta * sum_t dw_t
# and every changed variable by eta times its change, 0 <= eta <= 1.  The dual's
# separable part is convex in eta, so its chord bounds the gain from below:
#     gain(eta) >= eta A - eta^2 B / 2,   A = sum_t (gain_t + |dw_t|^2 / 2),
#                                          B = |sum_t dw_t|^2,
# with equality at eta = 0 and at eta = 1 (gain_t: thread t's exact gain on its replica;
# the plain sum gains sum_t gain_t less the cross terms dw_s.dw_t).  eta = min(1, A / B)
# maximises the bound: every combine is an ascent step, and eta < 1 only where it
# provably gains more than the plain sum.
#
# A combine costs passes over d + 1 weights (each thread: its range of the features
# over every replica, then a copy of w into its own replica), so it pays only where a
# chunk's work is large against d; pybudget/linear/_team.py decides when a team is used
# and its chunk, from measurements.
#
# Deterministic for a fixed team size: the random draws are thread 0's, each thread's
# work depends on its share only, and every reduction adds the threads' partials in
# thread order.  Other team sizes deal the rows differently: other bits, the same
# optimum within the tolerance.
from cython.parallel cimport parallel, threadid

cdef extern from "_threads.h":
    int pb_openmp() noexcept nogil
    int pb_team_size() noexcept nogil
    void pb_barrier() noexcept nogil

# whether this build runs teams (False where it was compiled without OpenMP)
THREADS = bool(pb_openmp())

cdef enum:
    TEAM_GO = 0
    TEAM_DONE = 1


cdef struct Member:
    # one thread's own state (each Member is allocated apart and padded)
    double* w               # replica of the iterate
    int* rows               # the variables changed since the last combine...
    double* old             # ...and their values before (alpha, and comp for logistic)
    int n_rows
    int* stamp              # AVSF (which revisits rows): the combine of a row's old value
    int* slots              # AVSF: this thread's slots of the sweep's schedule
    int lo                  # this sweep's share of the order: [lo, end) still to visit
    int pos                 # or active ([pos, end): shrinking drops to the end)
    int end
    int combines            # combines so far (each thread counts its own: no race)
    double gain             # the dual gain of the steps since the last combine
    double gained           # that gain, kept at the combine for the others to read
    double sq               # sum_s |dw_s[j]|^2 over this thread's range of features
    double bsum             # |sum_s dw_s[j]|^2 over it
    double v                # the sweep's largest violation, L1 sum, steps
    double l1
    long long steps
    double dref             # AVSF's reference gain, over this thread's visits
    double dpsum            # AVSF: change of the preferences' sum
    Shrink sh               # this thread's extremes of the sweep


cdef struct Team:
    int T                   # threads
    int chunk               # visits per thread between combines
    int n_chunks            # combines in the current sweep (the same for every thread)
    int d1                  # weights, d + 1
    int flag                # thread 0's order to the others: TEAM_GO or TEAM_DONE
    long long combines      # statistics: combines, and those with eta < 1
    long long damped
    double eta_min
    double* moved           # per feature: the threads' summed change at a combine
    int* owner              # AVSF: the thread of each row
    int* tmp                # shrinking's compaction of the active set
    Member** m


cdef Team* team_new(int T, int chunk, int n, int d1, bint avsf) noexcept nogil:
    """The team's buffers (NULL when out of memory)."""
    cdef Team* tm = <Team*>calloc(1, sizeof(Team))
    cdef int t, i
    cdef Member* me
    if tm == NULL:
        return NULL
    tm.T, tm.chunk, tm.d1, tm.eta_min = T, chunk, d1, 1.0
    tm.m = <Member**>calloc(T, sizeof(Member*))
    tm.moved = <double*>malloc(d1 * sizeof(double))
    tm.owner = <int*>malloc(n * sizeof(int))
    tm.tmp = <int*>malloc(n * sizeof(int))
    if tm.m == NULL or tm.moved == NULL or tm.owner == NULL or tm.tmp == NULL:
        team_free(tm)
        return NULL
    for t in range(T):
        # (padded: two threads' hot fields must not share a cache line, or every
        # step of each invalidates the other's)
        tm.m[t] = <Member*>calloc(1, sizeof(Member) + 128)
        me = tm.m[t]
        if me == NULL:
            team_free(tm)
            return NULL
        me.w = <double*>malloc(d1 * sizeof(double))
        me.rows = <int*>malloc(chunk * sizeof(int))
        me.old = <double*>malloc(2 * chunk * sizeof(double))
        me.stamp = <int*>malloc((n if avsf else 1) * sizeof(int))
        me.slots = <int*>malloc((n if avsf else 1) * sizeof(int))
        if (me.w == NULL or me.rows == NULL or me.old == NULL or me.stamp == NULL
                or me.slots == NULL):
            team_free(tm)
            return NULL
        if avsf:
            for i in range(n):
                me.stamp[i] = -1
    return tm


cdef void team_free(Team* tm) noexcept nogil:
    cdef int t
    if tm == NULL:
        return
    if tm.m != NULL:
        for t in range(tm.T):
            if tm.m[t] != NULL:
                free(tm.m[t].w)
                free(tm.m[t].rows)
                free(tm.m[t].old)
                free(tm.m[t].stamp)
                free(tm.m[t].slots)
                free(tm.m[t])
    free(tm.m)
    free(tm.moved)
    free(tm.owner)
    free(tm.tmp)
    free(tm)


cdef inline void team_step(const Problem* P, Member* me, double* a, int i, double G,
                           double q, bint revisits) noexcept nogil:
    """The step on variable i at gradient G on this thread's replica, with what the
    combine needs: the variable's old value (at its first change since the last
    combine: rows are visited once a chunk unless ``revisits``) and the step's gain."""
    cdef double mu, old_a = a[i], old_c = 0.0
    if Problem is LrProblem:
        old_c = P.comp[i]
    mu = step(P, me.w, a, i, G, q)
    if mu == 0.0:
        return
    me.gain += gain(P, a, i, G, mu, q)
    if revisits:
        if me.stamp[i] == me.combines:
            return
        me.stamp[i] = me.combines
    me.rows[me.n_rows] = i
    me.old[2 * me.n_rows] = old_a
    me.old[2 * me.n_rows + 1] = old_c
    me.n_rows += 1


cdef void combine(const Problem* P, Team* tm, int t, double* w, double* a) noexcept nogil:
    """Every thread calls this after its chunk: w and the changed variables move by eta
    times the threads' summed changes (see the top of this file), and every replica
    equals w again.  Thread t combines its range of the features, in one sequential
    pass over w and the replicas (the changes are where a replica differs from w);
    then each thread copies w into its replica."""
    cdef Member* me = tm.m[t]
    cdef int k, j, s, i, T = tm.T, changed, last = 0
    cdef int lo = share(tm.d1, t, T), hi = share(tm.d1, t + 1, T)
    cdef double base, dj, x, sq = 0.0, bsum = 0.0, A = 0.0, B = 0.0, eta = 1.0
    pb_barrier()                            # every replica final
    for j in range(lo, hi):
        base = w[j]
        x = 0.0
        changed = 0
        for s in range(T):
            dj = tm.m[s].w[j] - base
            if dj != 0.0:
                x += dj
                sq += dj * dj
                changed += 1
                last = s
        tm.moved[j] = x
        if changed == 0:
            continue
        bsum += x * x
        # (a feature one thread moved takes its replica's value exactly)
        w[j] = tm.m[last].w[j] if changed == 1 else base + x
    # (into fields the next chunk leaves alone: the others read them after the barrier)
    me.sq, me.bsum, me.gained = sq, bsum, me.gain
    pb_barrier()                            # w, the replicas and the partials final
    for s in range(T):                      # (every thread: the same sums, same eta)
        A += tm.m[s].gained + 0.5 * tm.m[s].sq
        B += tm.m[s].bsum
    if B > 0.0 and A < B:
        eta = A / B if A > 0.0 else 0.0
    if eta != 1.0:
        # the bound gains more at eta than at the plain sum: step back
        for j in range(lo, hi):
            if tm.moved[j] != 0.0:
                w[j] += (eta - 1.0) * tm.moved[j]
        for k in range(me.n_rows):
            i = me.rows[k]
            a[i] = me.old[2 * k] + eta * (a[i] - me.old[2 * k])
            if Problem is LrProblem:
                P.comp[i] = me.old[2 * k + 1] + eta * (P.comp[i] - me.old[2 * k + 1])
        pb_barrier()
    # Each thread refreshes its own replica only: a line of it written by another core
    # would cost a transfer at every later read (measured: sweeps 1.5x slower).
    memcpy(me.w, w, tm.d1 * sizeof(double))
    me.combines += 1
    if t == 0:
        tm.combines += 1
        if eta < 1.0:
            tm.damped += 1
            if eta < tm.eta_min:
                tm.eta_min = eta
    me.n_rows = 0
    me.gain = 0.0


cdef inline int share(int n, int t, int T) noexcept nogil:
    """Where thread t's share of n visits starts (thread T: n)."""
    return <int>((<long long>n * t) // T)


cdef void team_prepare(const Problem* P, State* S, Team* tm, int selection) noexcept nogil:
    """Thread 0, before a sweep: the sweep's random draws and each thread's share."""
    cdef int t, n = S.active if selection == SEL_SHRINKING else S.n
    if selection == SEL_AVSF:
        make_schedule(&S.rng, S.pp, S.psum, S.n, S.sched)
    else:
        rng_shuffle(&S.rng, S.order, n)
    for t in range(tm.T):
        tm.m[t].lo = share(n, t, tm.T)
        tm.m[t].pos = tm.m[t].lo
        tm.m[t].end = share(n, t + 1, tm.T)
        tm.m[t].v, tm.m[t].l1, tm.m[t].steps = 0.0, 0.0, 0
        tm.m[t].sh = S.sh
        tm.m[t].dref = 0.0 if S.first_sweep else S.dref
        tm.m[t].dpsum = 0.0
        if selection == SEL_SHRINKING:
            shrink_begin(P, &tm.m[t].sh)
    # (AVSF counts its chunks in team_sweep, from each thread's slots)
    tm.n_chunks = ((n + tm.T - 1) // tm.T + tm.chunk - 1) // tm.chunk


cdef void team_sweep(const Problem* P, State* S, Team* tm, int selection,
                     int t) noexcept nogil:
    """Every thread: its share of one sweep, in n_chunks chunks, each ended by a combine."""
    cdef Member* me = tm.m[t]
    cdef double* a = S.a
    cdef const double* qd = S.qd
    cdef const int* order = S.order
    cdef int c, k, i, s, n = S.n, count, most, code
    cdef double G, pg, g, mu, window = (<double>n) / tm.T
    cdef bint first_sweep = S.first_sweep
    if selection == SEL_AVSF:
        # this thread's slots of the schedule, in the schedule's order
        count = 0
        for s in range(n):
            if tm.owner[S.sched[s]] == t:
                me.slots[count] = S.sched[s]
                count += 1
        me.pos, me.end = 0, count
        pb_barrier()
        if t == 0:
            most = 0
            for s in range(tm.T):
                if tm.m[s].end > most:
                    most = tm.m[s].end
            tm.n_chunks = (most + tm.chunk - 1) // tm.chunk
        pb_barrier()
        order = me.slots
    for c in range(tm.n_chunks):
        k = 0
        while k < tm.chunk and me.pos < me.end:
            k += 1
            i = order[me.pos]
            prefetch_ahead(&P.r.X, order, me.pos, me.end, me.w, 1)
            G = gradient(P, me.w, a, i)
            if selection == SEL_SHRINKING:
                code = shrink_visit(P, a, i, G, &me.sh)
                if code == VISIT_DROP:
                    me.end -= 1
                    S.order[me.pos] = S.order[me.end]
                    S.order[me.end] = i
                    continue
                if code == VISIT_STEP:
                    team_step(P, me, a, i, G, qd[i], False)
                me.pos += 1
                continue
            me.pos += 1
            pg = violation(P, a, i, G)
            if pg > me.v:
                me.v = pg
            if Problem is SvrProblem:
                me.l1 += pg
            if selection == SEL_UNIFORM:
                if pg > 1e-12:
                    team_step(P, me, a, i, G, qd[i], False)
                continue
            # AVSF: the step's gain adapts the preference (as avsf_sweep)
            g = me.gain
            if pg > 1e-12:
                team_step(P, me, a, i, G, qd[i], True)
            g = me.gain - g
            if first_sweep:
                me.dref += g / me.end
            else:
                if me.dref > 0.0:
                    me.dpsum += avsf_adapt(S.pp, i, g, me.dref)
                me.dref = (1.0 - 1.0 / window) * me.dref + g / window
        me.steps += k
        combine(P, tm, t, S.w, a)
    pb_barrier()                            # (also when there was no chunk)


cdef int team_finish(const Problem* P, State* S, Team* tm, int selection,
                     double tol) noexcept nogil:
    """Thread 0, after a sweep: the threads' statistics merged in thread order and the
    strategy's end of sweep; returns a SWEEP_* code (uniform: SWEEP_STOP when its rule
    fired)."""
    cdef int t, k, active = 0, dropped
    cdef Member* me
    cdef double v = 0.0, l1 = 0.0, dref = 0.0
    for t in range(tm.T):
        me = tm.m[t]
        S.steps += me.steps
        if me.v > v:
            v = me.v
        l1 += me.l1
    if selection == SEL_SHRINKING:
        # the active set: each share's survivors in thread order, then the dropped
        for t in range(tm.T):
            me = tm.m[t]
            for k in range(me.lo, me.end):
                tm.tmp[active] = S.order[k]
                active += 1
        dropped = active
        for t in range(tm.T):
            me = tm.m[t]
            for k in range(me.end, share(S.active, t + 1, tm.T)):
                tm.tmp[dropped] = S.order[k]
                dropped += 1
        memcpy(S.order, tm.tmp, dropped * sizeof(int))
        for t in range(tm.T):
            me = tm.m[t]
            if t == 0:
                S.sh = me.sh
            else:
                if me.sh.max_new > S.sh.max_new:
                    S.sh.max_new = me.sh.max_new
                if me.sh.min_new < S.sh.min_new:
                    S.sh.min_new = me.sh.min_new
                S.sh.sum_new += me.sh.sum_new
        return shrink_end(P, S, tol, active, &S.sh)
    S.shown = v
    if selection == SEL_UNIFORM:
        S.l1 = l1
        return SWEEP_STOP if (l1_met(S, l1, tol) if S.rule == RULE_L1 else v <= tol) \
            else SWEEP_GO
    for t in range(tm.T):
        dref += tm.m[t].dref
        S.psum += tm.m[t].dpsum
    S.dref = dref / tm.T
    S.first_sweep = False
    return SWEEP_STOP if avsf_end(S, tol, v, l1) else SWEEP_GO


cdef void team_deal(State* S, Team* tm) noexcept nogil:
    """AVSF: each row to one thread for the whole solve, at random, in equal numbers."""
    cdef int k
    for k in range(S.n):
        tm.tmp[k] = k
    rng_shuffle(&S.rng, tm.tmp, S.n)
    for k in range(S.n):
        tm.owner[tm.tmp[k]] = <int>((<long long>k * tm.T) // S.n)


cdef void team_lead(const Problem* P, State* S, Team* tm, int selection, double tol,
                    int max_iter, int verbose, Outcome* out) noexcept nogil:
    """Thread 0: run()'s loop with the sweeps made by the team."""
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
    if selection == SEL_AVSF:
        team_deal(S, tm)
    while out.n_iter < max_iter:
        team_prepare(P, S, tm, selection)
        tm.flag = TEAM_GO
        pb_barrier()
        team_sweep(P, S, tm, selection, 0)
        code = team_finish(P, S, tm, selection, tol)
        out.n_iter += 1
        if verbose >= 2:
            with gil:
                report(f"sweep {out.n_iter}: violation {S.shown:.3g}, steps {S.steps}, "
                       f"active {S.active}, damped combines {tm.damped} of "
                       f"{tm.combines} (eta >= {tm.eta_min:.3g})", now() - t0)
        if code == SWEEP_UNSHRUNK:
            continue
        stop_rule = code == SWEEP_STOP
        if stop_rule and S.rule == RULE_L1:
            out.kkt = exact_pass(P, S, S.shown, &out.loss_sum, &out.final_active)
            out.converged = True
            break
        if stop_rule:
            out.kkt = exact_pass(P, S, tol, &out.loss_sum, &out.final_active)
            if out.kkt <= tol:
                out.converged = True
                break
            S.canstop = False
            S.active = S.n
            shrink_reset(P, &S.sh)
        if interrupted():
            out.interrupted = True
            break
    tm.flag = TEAM_DONE
    pb_barrier()
    if not out.converged:
        out.kkt = exact_pass(P, S, S.shown if S.rule == RULE_L1 else tol, &out.loss_sum,
                             &out.final_active)
        out.converged = (S.rule == RULE_MAX and out.kkt <= tol
                         and not out.interrupted)


cdef void team_member(const Problem* P, State* S, Team* tm, int selection, double tol,
                      int max_iter, int verbose, Outcome* out, int t) noexcept nogil:
    if t == 0:
        team_lead(P, S, tm, selection, tol, max_iter, verbose, out)
        return
    while True:
        pb_barrier()                        # thread 0 has prepared a sweep, or is done
        if tm.flag == TEAM_DONE:
            return
        team_sweep(P, S, tm, selection, t)


cdef Outcome team_run(const Problem* P, State* S, Team* tm, int selection, double tol,
                      int max_iter, int verbose) noexcept nogil:
    """run() on a team of tm.T threads (fewer if OpenMP grants fewer)."""
    cdef Outcome out
    cdef int t, granted = tm.T, requested = tm.T
    memcpy(tm.m[0].w, S.w, tm.d1 * sizeof(double))
    for t in range(1, tm.T):
        memcpy(tm.m[t].w, S.w, tm.d1 * sizeof(double))
    with parallel(num_threads=requested):
        t = threadid()
        if t == 0:
            granted = pb_team_size()
            tm.T = granted
        pb_barrier()
        team_member(P, S, tm, selection, tol, max_iter, verbose, &out, t)
    tm.T = requested                       # (team_free frees every member)
    return out
