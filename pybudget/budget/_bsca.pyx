# BSCA (Qaadan, Schueler & Glasmachers; docs/algorithms.md#bsca): stochastic coordinate
# ascent on the kernel dual
#   max_a  sum_i a_i - 1/2 a^T Q a,  0 <= a_i <= C,  Q_ij = y_i y_j k(x_i, x_j),
# with the budgeted model standing in for w = sum_i a_i y_i phi(x_i).  Binary only (the
# Python layer runs one-vs-rest).  Q_ii = k(x_i, x_i) = 1 for the Gaussian kernel, so
# the exact coordinate step is delta = clip(a_i + 1 - y_i f(x_i), 0, C) - a_i; y_i delta
# is added at x_i, in the existing slot while x_i is still an unmerged SV.  A full
# permutation per epoch; a fixed number of epochs (no KKT stopping, see the paper).
# Optional tail averaging (not in the paper): from step avg_start on, the model returned
#   is the mean of the models after each step, kept per SV in the buffer's `acc` as for
#   BSGD; an in-place change of an SV's coefficient is pre-debited like a new SV.
from libc.stdint cimport uint64_t

from pybudget.budget._budget cimport BudgetModel
from pybudget.budget._maintain cimport Maintainer
from pybudget.budget._epochs cimport EpochSteps

from pybudget.budget._epochs import run_epochs


cdef class BscaSteps(EpochSteps):
    cdef double[::1] y, alpha
    cdef double C
    cdef long n_updates
    cdef int src_offset       # row i's source index in the model: src_offset + i

    cdef void step(self, int i) noexcept nogil:
        self.next_step()
        self.update(i)
        if self.avg_start > 0 and self.t >= self.avg_start:
            self.mdl.accrue()         # the model after this step joins the average

    cdef inline void update(self, int i) noexcept nogil:
        cdef double a = self.alpha[i] + 1.0 - self.y[i] * self.f[0], delta, coef
        cdef double* bp
        cdef int j
        if a < 0.0:
            a = 0.0
        elif a > self.C:
            a = self.C
        delta = a - self.alpha[i]
        if delta == 0.0:
            return
        self.alpha[i] = a
        self.n_updates += 1
        coef = self.y[i] * delta
        j = self.mdl.slot_of[self.src_offset + i]
        if j >= 0:
            bp = self.mdl.beta
            bp[j] += coef / self.mdl.scale
            if self.mdl.track_avg:    # the change earns only the steps from now on
                bp = self.mdl.acc
                bp[j] -= coef / self.mdl.scale * self.mdl.avg_pending
        else:
            self.mdl.add_row(&self.X, i, self.xsq[i], &coef, self.src_offset + i)
            if self.mdl.n_sv >= self.mdl.cap:
                self.maintain()


def bsca_run(X, double[::1] xsq, double[::1] y, double C, double[::1] alpha,
             BudgetModel mdl, Maintainer mt, int budget, int merge_size, int epochs,
             uint64_t seed, progress=None, long check_every=0, checkpoint=None,
             long avg_start=0, tuple team=(1, 0, 0), perm=None, bint visit=False,
             long t_start=0, int src_offset=0):
    """`epochs` BSCA epochs on canonical CSR X with labels y in {-1, +1}, dual variables
    alpha (updated in place) and a binary model `mdl` created with n_src = n_rows.
    `progress`, if given, is called as progress(epochs_done, epochs, seconds).
    check_every > 0: after every check_every steps short of the end, the model is merged
    down to `budget` SVs and checkpoint(mdl) is called.  avg_start in 1 .. epochs * n:
    average the models after steps avg_start .. epochs * n (steps counted from 1; read
    the result with mdl.averaged() / n_avg).  team = (threads, krow_work, max_wait)
    (_team.pxd): threads > 1 runs a team, the same bits; team_jobs counts the jobs it
    ran, team_retired the runs it left early.  perm: the rows an epoch steps, in the
    order to continue from (EpochSteps.setup).  visit: this call is a share of a
    longer run (a partition's turn in pybudget.dask's ring): the steps are counted from
    t_start, avg_start may lie outside this call's steps, the final merge is left to
    the caller, and X's rows are rows src_offset.. of the model's n_src sources."""
    n_rows = X.shape[0]
    sources_fit = (mdl.n_src >= n_rows + src_offset if visit else mdl.n_src == n_rows)
    if (mdl.n_coef != 1 or mdl.d != X.shape[1] or xsq.shape[0] != n_rows
            or y.shape[0] != n_rows or alpha.shape[0] != n_rows or n_rows < 1
            or src_offset < 0 or not sources_fit):
        raise ValueError("bsca_run: arrays do not match")
    if not visit and (t_start != 0 or src_offset != 0):
        raise ValueError("bsca_run: t_start and src_offset are a visit's")
    cdef long n_steps = n_rows if perm is None else len(perm)
    cdef long T = <long>epochs * n_steps
    if avg_start < 0 or (avg_start != 0 and not visit and not 0 < avg_start <= T):
        raise ValueError("bsca_run: avg_start outside this run's steps")
    if check_every > 0 and avg_start != 0:
        raise ValueError("bsca_run: checkpoints need no averaging")
    cdef BscaSteps st = BscaSteps()
    st.setup(X, xsq, mdl, mt, merge_size, seed, team, perm)
    st.y, st.alpha, st.C, st.n_updates, st.src_offset = y, alpha, C, 0, src_offset
    st.t, st.avg_start = t_start, avg_start
    seconds = run_epochs(st, epochs, budget, progress, check_every, checkpoint, not visit)
    return {"t": st.t, "n_updates": st.n_updates, "merge_time": st.merge_time,
            "time": seconds, "seed_state": st.rng, "team_jobs": st.team.n_jobs,
            "team_retired": st.team.retired,
            "n_avg": st.t - avg_start + 1 if avg_start > 0 else 0}
