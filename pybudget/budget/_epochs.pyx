# The epoch loop of BSGD and BSCA: epochs of n steps, each optionally cut into segments
# that end at checkpoints, with Ctrl-C, progress reports and the final merge down to the
# budget handled in one place.  A solver supplies the steps as an EpochSteps subclass.
# With a team (n_threads > 1, _team.pxd) thread 0 runs the steps and the others serve
# its jobs: the kernel rows (dense storage) and the maintenance events' distances and
# partner searches, each from the size on that the team's rules say (_team_rules.py).
from cython.parallel cimport parallel, threadid
from libc.stdint cimport uint64_t
from libc.string cimport memset

from pybudget.budget._budget cimport BudgetModel
from pybudget._core._csr cimport csr_span, csr_view
from pybudget.budget._maintain cimport Maintainer, partner_scan
from pybudget.budget._team cimport (FLAG_STRIDE, JOB_DONE, JOB_KROW, join, pb_openmp,
                                    pb_store, pb_team_size, pb_wait_change, post, span)
from pybudget._core._rng cimport rng_shuffle
from pybudget._core._runtime cimport interrupted, now, segment_end

import numpy as np

# whether this build runs teams (False where it was compiled without OpenMP)
THREADS = bool(pb_openmp())

# one exponential costs about KROW_EXP multiply-adds of a kernel row's axpys (the unit
# of Team.krow_work)
cdef int KROW_EXP = 8


cdef class EpochSteps:
    cdef setup(self, X, double[::1] xsq, BudgetModel mdl, Maintainer mt, int M, uint64_t seed,
               tuple team=(1, 0, 0), perm=None):
        """perm: the rows an epoch steps, in the order its first epoch shuffles (int32,
        distinct rows of X, updated in place: a run continued by another call passes it
        on; a subset of the rows: an epoch is those rows' steps); None: 0..n-1."""
        self.X = csr_view(X)
        self.xsq, self.mdl, self.mt, self.M, self.rng = xsq, mdl, mt, M, seed
        if perm is None:
            perm = np.arange(X.shape[0], dtype=np.int32)
        elif not (isinstance(perm, np.ndarray) and perm.dtype == np.int32
                  and perm.ndim == 1 and 0 < perm.shape[0] <= X.shape[0]
                  and perm.min() >= 0 and perm.max() < X.shape[0]
                  and np.unique(perm).shape[0] == perm.shape[0]):
            raise ValueError("perm must be distinct int32 rows of X")
        self.perm = perm
        self.krow = np.zeros(mdl.cap + 1)
        self.f = np.zeros(mdl.n_coef)
        self.merge_time = 0.0
        n_threads, self.team.krow_work, self.team.max_wait = team
        self.team.T = max(1, n_threads) if THREADS else 1
        self.team.n_jobs = self.team.retired = 0
        self.flags = np.zeros((self.team.T + 2) * FLAG_STRIDE, dtype="l")
        self.team.flags = &self.flags[0]
        mt.W.reserve_team(self.team.T)
        self.ready = True

    cdef void kernel_row(self, int i) noexcept nogil:
        """The kernel row of training row i into self.krow: on the team when it is large
        enough (dense storage; Team.krow_work)."""
        cdef int nnz = 0, lo, hi
        cdef Team* tm = &self.team
        if tm.T > 1 and not self.mdl.sparse:
            csr_span(&self.X, i, &nnz)
        if nnz == 0 or <long long>self.mdl.n_sv * (nnz + KROW_EXP) < tm.krow_work:
            self.mdl.kernel_row_csr(&self.X, i, self.xsq[i], &self.krow[0])
            return
        tm.row = i
        tm.xsq = self.xsq[i]
        tm.out = &self.krow[0]
        post(tm, JOB_KROW, self.mdl.n_sv, &lo, &hi)
        self.mdl.kernel_row_part(&self.X, i, tm.xsq, tm.out, lo, hi)
        join(tm)

    cdef void serve(self, int t, long seq) noexcept nogil:
        """A helper's loop: thread t's share of each job thread 0 posts after job counter
        seq, until JOB_DONE."""
        cdef int lo, hi
        cdef Team* tm = &self.team
        while True:
            seq = pb_wait_change(&tm.flags[FLAG_STRIDE], seq)   # thread 0 posted a job
            if tm.job == JOB_DONE:
                return
            span(tm.n, tm.T, t, &lo, &hi)
            if tm.job == JOB_KROW:
                self.mdl.kernel_row_part(&self.X, tm.row, tm.xsq, tm.out, lo, hi)
            else:
                partner_scan(self.mdl, &self.mt.P, self.mt.W, t, lo, hi)
            pb_store(&tm.flags[(t + 1) * FLAG_STRIDE], seq)   # done: thread 0 goes on

    cdef void maintain(self) noexcept nogil:
        """Budget maintenance on the full buffer, timed."""
        cdef double t0 = now()
        self.mt.run(self.mdl, self.M)
        self.merge_time += now() - t0

    cdef void merge_down(self, int budget) noexcept nogil:
        """Merge the model down to `budget` SVs (before a checkpoint and at the end), timed."""
        cdef double t0 = now()
        self.mt.down_to(self.mdl, budget, self.M)
        self.merge_time += now() - t0

    cdef bint run(self, int s_begin, int s_end) noexcept nogil:
        """run_steps(s_begin, s_end), on the team if there is one."""
        cdef int t, requested = self.team.T
        cdef long seq = 0
        if requested < 2:
            return self.run_steps(s_begin, s_end)
        self.stopped = False
        self.team.seq = 0      # (at most two jobs a step: below 2^31 under 2^30 rows)
        self.team.waited = 0.0
        self.team.started = now()
        memset(&self.flags[0], 0, self.flags.shape[0] * sizeof(long))
        with parallel(num_threads=requested):
            t = threadid()
            if t == 0:
                self.team.T = pb_team_size()   # (OpenMP may grant fewer)
                self.mt.team = &self.team
                self.stopped = self.run_steps(s_begin, s_end)
                self.mt.team = NULL
                if self.team.T > 1:             # (a retired team's helpers have left)
                    self.team.job = JOB_DONE
                    self.team.seq += 1
                    pb_store(&self.team.flags[FLAG_STRIDE], self.team.seq)
            else:
                self.serve(t, seq)
        self.team.T = requested
        return self.stopped

    cdef bint run_steps(self, int s_begin, int s_end) noexcept nogil:
        """Steps s_begin .. s_end - 1 of the current epoch (s_begin == 0 reshuffles): each
        computes the decision values at its row into f, then the solver's step() acts on
        them.  True when interrupted by a signal (checked every 1024 steps)."""
        cdef int s, i
        if s_begin == 0:
            rng_shuffle(&self.rng, &self.perm[0], self.perm.shape[0])
        for s in range(s_begin, s_end):
            if (s & 1023) == 1023 and interrupted():
                return True
            i = self.perm[s]
            self.kernel_row(i)
            self.mdl.decision(&self.krow[0], &self.f[0])
            self.step(i)
        return False

    cdef void step(self, int i) noexcept nogil:
        """One solver step on row i of self.X with f already computed."""
        pass

    cdef void next_step(self) noexcept nogil:
        """Called first by a solver's step, before it changes the model: counts the step
        in self.t and starts the average at step avg_start."""
        self.t += 1
        if self.avg_start > 0 and self.t == self.avg_start:
            self.mdl.begin_average()


def run_epochs(EpochSteps steps, int epochs, int budget, progress=None, long check_every=0,
               checkpoint=None, bint merge_at_end=True):
    """Run `epochs` epochs over the rows `steps` was set up with.  progress(epochs_done,
    epochs, seconds), if given, is called after every epoch.  check_every > 0: after
    every check_every steps short of the end, the model is merged down to `budget` SVs
    and checkpoint(steps.mdl) is called.  The model is merged down to `budget` at the
    end unless merge_at_end is False (a run that others continue).  Raises
    KeyboardInterrupt when the steps were interrupted; returns the elapsed seconds."""
    if steps is None or not steps.ready:
        raise ValueError("run_epochs: the steps were not set up")
    cdef BudgetModel mdl = steps.mdl
    cdef Maintainer mt = steps.mt
    cdef int n = steps.perm.shape[0], M = steps.M
    if not mt.serves(mdl):
        raise ValueError("run_epochs: the maintainer was built for a different model")
    if not (M >= 2 and 1 <= budget and budget + M - 1 <= mdl.cap):
        raise ValueError(f"run_epochs: budget={budget} and merge size {M} do not fit the "
                         f"model's {mdl.cap} rows")
    if n < 1 or epochs < 1:
        raise ValueError(f"run_epochs: {n} rows and {epochs} epochs (both must be >= 1)")
    if check_every < 0 or (check_every > 0 and checkpoint is None):
        raise ValueError("run_epochs: checkpoints need check_every > 0 and a callback")
    cdef long done = 0, T = <long>epochs * n
    cdef int ep, s, s_end
    cdef bint stop
    cdef double t0 = now()
    for ep in range(epochs):
        s = 0
        while s < n:
            s_end = segment_end(done, check_every, s, n)
            with nogil:
                stop = steps.run(s, s_end)
            if stop:
                raise KeyboardInterrupt
            done += s_end - s
            s = s_end
            if check_every > 0 and done % check_every == 0 and done < T:
                with nogil:
                    steps.merge_down(budget)
                checkpoint(mdl)
        if progress is not None:
            progress(ep + 1, epochs, now() - t0)
    if merge_at_end:
        with nogil:
            steps.merge_down(budget)
    return now() - t0
