# The epoch loop both budgeted solvers share (see _epochs.pyx), and the state their steps
# have in common.
from libc.stdint cimport uint64_t

from pybudget.budget._budget cimport BudgetModel
from pybudget._core._csr cimport CsrView
from pybudget.budget._maintain cimport Maintainer
from pybudget.budget._team cimport Team


cdef class EpochSteps:
    cdef CsrView X              # the training rows (canonical CSR, checked by the caller)
    cdef double[::1] xsq        # their squared norms
    cdef double[::1] krow       # kernel row scratch, cap + 1
    cdef double[::1] f          # decision values at the current row, n_coef
    cdef int[::1] perm          # this epoch's order (each epoch shuffles the last)
    cdef BudgetModel mdl
    cdef Maintainer mt
    cdef int M                  # merge size
    cdef uint64_t rng
    cdef double merge_time      # seconds in budget maintenance, the driver's included
    cdef bint ready             # setup() ran: run_epochs refuses anything else
    # iterate averaging (see next_step in _epochs.pyx): t counts steps (BSGD: globally)
    cdef long t, avg_start      # the average starts at step avg_start (0: none)
    cdef Team team              # threads for one fit (_team.pxd); team.T == 1: none
    cdef long[::1] flags        # the memory of team.flags
    cdef bint stopped           # run_steps was interrupted (set inside the team's region)
    cdef setup(self, X, double[::1] xsq, BudgetModel mdl, Maintainer mt, int M, uint64_t seed,
               tuple team=*, perm=*)
    cdef void kernel_row(self, int i) noexcept nogil
    cdef bint run_steps(self, int s_begin, int s_end) noexcept nogil
    cdef void serve(self, int t, long seq) noexcept nogil
    cdef void maintain(self) noexcept nogil
    cdef void merge_down(self, int budget) noexcept nogil
    cdef bint run(self, int s_begin, int s_end) noexcept nogil
    cdef void step(self, int i) noexcept nogil
    cdef void next_step(self) noexcept nogil
