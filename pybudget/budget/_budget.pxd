# The budgeted model shared by BSGD and BSCA:
#   f_c(x) = scale * sum_j beta[j, c] * exp(-gamma * ||z_j - x||^2),  c < n_coef.
# SVs are stored dense (rows Z and the feature-major copy ZT) or sparse (`sparse`: per
# slot its sorted (index, value) pairs, for high-dimensional sparse data); merged SVs are
# not training points and their support is the union of their parents'.  Room for
# `cap` = B + M - 1 SVs, so insertion never reallocates the dense rows.  Both storages
# give the same bits: every sum runs over the same non-zero terms in ascending index order.
# Coefficients carry a lazy common factor `scale` (Pegasos shrinks every coefficient each
# step); it is folded into beta when it falls below FOLD_BELOW.
# Optional iterate averaging (BSGD `averaging`): `acc` holds, per SV and in true units,
# the sum over the averaged iterates of the SV's coefficient.  Accrual is lazy: the solver
# adds the current scale to `avg_pending` after every step, and settle() moves
# beta * avg_pending into acc for every SV (before maintenance and folding, and at the
# end); a new SV is pre-debited so it earns only the steps after its insertion.

from pybudget._core._csr cimport CsrView


cdef class BudgetModel:
    cdef readonly int d, n_coef, cap, n_sv, n_src
    cdef readonly double gamma
    cdef public double scale
    cdef double[:, ::1] Z_mv
    cdef double[:, ::1] ZT_mv
    cdef double[::1] sqn_mv
    cdef double[:, ::1] beta_mv
    cdef int[::1] src_mv
    cdef int[::1] slot_mv
    cdef double[:, ::1] acc_mv
    cdef readonly bint track_avg
    cdef readonly bint sparse, out_of_memory
    cdef public double avg_pending
    # raw pointers, taken once (the arrays above keep the memory alive)
    cdef double* Z          # cap x d (row per SV: merges, distances between SVs)
    cdef double* ZT         # d x cap (feature-major copy: kernel rows, one axpy per non-zero)
    cdef double* sqn        # cap: ||z_j||^2
    cdef double* beta       # cap x n_coef (unscaled)
    cdef int* src           # cap: training index of the SV, -1 once merged
    cdef int* slot_of       # n_src: slot of training point i, -1 if none (may be NULL)
    cdef double* acc        # cap x n_coef: averaged-iterate sums (true units), if track_avg
    # sparse storage: slot j's sv_nnz[j] pairs at sv_idx[j], sv_val[j] (malloc'd, sv_room[j]
    # long, ascending indices, no zeros), and the same values feature-major (kernel rows):
    # column f's pl_len[f] entries at pl_slot[f], pl_val[f], in no order, each with its
    # place in its slot's list (pl_t) and each slot entry with its place in the column's
    # list (sv_pos), so an SV leaves the lists in O(its non-zeros)
    cdef int** sv_idx
    cdef double** sv_val
    cdef int** sv_pos
    cdef int* sv_nnz
    cdef int* sv_room
    cdef int** pl_slot
    cdef double** pl_val
    cdef int** pl_t
    cdef int* pl_len
    cdef int* pl_room

    cdef void kernel_row_sparse(self, const double* xd, const int* xi, int nnz, double xsq,
                                double* out) noexcept nogil
    cdef void kernel_row_csr(self, const CsrView* X, int i, double xsq,
                             double* out) noexcept nogil
    cdef void kernel_row_part(self, const CsrView* X, int i, double xsq, double* out,
                              int lo, int hi) noexcept nogil
    cdef void kernel_row_dense(self, const double* x, double xsq, double* out) noexcept nogil
    cdef void sqdist_all(self, int p, double* out) noexcept nogil
    cdef void sqdist_part(self, int p, double* out, int lo, int hi) noexcept nogil
    cdef void decision(self, const double* krow, double* out) noexcept nogil
    cdef int add_sparse(self, const double* xd, const int* xi, int nnz, double xsq,
                        const double* coef, int source) noexcept nogil
    cdef int add_row(self, const CsrView* X, int i, double xsq, const double* coef,
                     int source) noexcept nogil
    cdef int add_dense(self, const double* x, const double* coef, int source) noexcept nogil
    cdef int add_compact(self, const double* z, const int* cols, int n, const double* coef,
                         int source) noexcept nogil
    cdef double sv_dot(self, int i, int j) noexcept nogil
    cdef int _room(self, int j, int nnz) noexcept nogil
    cdef void _post(self, int j) noexcept nogil
    cdef void _unpost(self, int j, int to) noexcept nogil
    cdef void remove(self, int j) noexcept nogil
    cdef void scale_by(self, double f) noexcept nogil
    cdef void fold(self) noexcept nogil
    cdef void clear(self) noexcept nogil
    cdef void _set_coef(self, int j, const double* coef) noexcept nogil
    cdef void _set_source(self, int j, int source) noexcept nogil
    cdef int _commit(self, int j, double sqn, const double* coef, int source) noexcept nogil
    cdef void _set_acc_debit(self, int j) noexcept nogil
    cdef void settle(self) noexcept nogil
    cdef void accrue(self) noexcept nogil
    cdef void begin_average(self) noexcept nogil
