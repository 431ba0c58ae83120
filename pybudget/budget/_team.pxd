# A team of threads for one budgeted fit (BSGD or BSCA): thread 0 runs the solver's
# steps; at the two places where a step's work is a loop over the support vectors (the
# kernel row, and a maintenance event's distances and partner search) it posts a job and
# every thread takes one contiguous range of SV slots.  Each value is computed by one
# thread in the order one thread computes it, and the partner lists are merged in slot
# order, so the model has the same bits for any number of threads.  The helpers wait for
# thread 0's job counter between jobs (_epochs.pyx: EpochSteps.serve; _spin.h); a team
# exists only inside EpochSteps.run's parallel region.
cdef extern from "_threads.h":
    int pb_openmp() noexcept nogil
    int pb_team_size() noexcept nogil

cdef extern from "_spin.h":
    void pb_store(long* p, long v) noexcept nogil
    long pb_wait_change(long* p, long v) noexcept nogil
    double pb_wait_for(long* p, long v) noexcept nogil

cdef extern from "_clock.h":
    double pb_now() noexcept nogil

# longs between two flags: each on cache lines of its own (a spinning reader must not
# share a line with thread 0's writes)
cdef enum:
    FLAG_STRIDE = 16

# a run's first milliseconds, in which its waits are not yet judged
cdef enum:
    MIN_RUN_MS = 20

cdef enum:
    JOB_DONE = 0        # thread 0 has finished: the helpers leave
    JOB_KROW = 1        # the kernel row of training row `row` into `out`
    JOB_PARTNERS = 2    # distances and partner search of a maintenance event


cdef struct Team:
    int T               # threads (1: no team; every job runs on the caller's thread)
    long seq            # thread 0's count of the jobs posted (from 0 each run)
    # flags[FLAG_STRIDE]: seq, published (a new value posts a job);
    # flags[(t + 1) * FLAG_STRIDE]: the last job helper t has done
    long* flags
    int job             # JOB_*, posted by thread 0
    int n               # the slots the job splits
    int row             # JOB_KROW: the training row, its squared norm, the output
    double xsq
    double* out
    long long krow_work  # a kernel row goes to the team from n_sv * (nnz + KROW_EXP) on
    long long n_jobs    # jobs run on the team (a test's proof that it ran)
    # thread 0's waits for its helpers beyond spinning (a helper not running: its core
    # taken by other work) add up in `waited`; once they exceed max_wait of the run's
    # time so far (after its first MIN_RUN_MS), the run goes on without the team
    # (T = 1; retired counts it).  max_wait < 0: at the first join (tests)
    double started, waited, max_wait
    int retired


cdef inline void span(int n, int T, int t, int* lo, int* hi) noexcept nogil:
    """Thread t's share of n slots: contiguous, in slot order, sizes within one."""
    lo[0] = <int>((<Py_ssize_t>n * t) // T)
    hi[0] = <int>((<Py_ssize_t>n * (t + 1)) // T)


cdef inline void post(Team* tm, int job, int n, int* lo, int* hi) noexcept nogil:
    """Thread 0 posts a job over n slots and releases the helpers; [lo, hi) is its own
    share.  It calls join() once it has done that share."""
    tm.job = job
    tm.n = n
    tm.n_jobs += 1
    tm.seq += 1
    pb_store(&tm.flags[FLAG_STRIDE], tm.seq)
    span(n, tm.T, 0, lo, hi)


cdef inline void retire(Team* tm) noexcept nogil:
    """The helpers leave and thread 0 runs the rest of the run alone (the same values:
    only the speed changes)."""
    tm.job = JOB_DONE
    tm.seq += 1
    pb_store(&tm.flags[FLAG_STRIDE], tm.seq)
    tm.T = 1
    tm.retired += 1


cdef inline void join(Team* tm) noexcept nogil:
    """Thread 0 waits until every helper has done its share of the posted job; a team
    that waits too long for helpers that are not running is retired."""
    cdef int t
    cdef double waited = 0.0, ran
    for t in range(1, tm.T):
        waited += pb_wait_for(&tm.flags[(t + 1) * FLAG_STRIDE], tm.seq)
    if waited > 0.0 or tm.max_wait < 0.0:     # (the clock is read on slow joins only)
        tm.waited += waited
        ran = pb_now() - tm.started
        if tm.max_wait < 0.0 or (ran > MIN_RUN_MS * 1e-3
                                 and tm.waited > tm.max_wait * ran):
            retire(tm)
