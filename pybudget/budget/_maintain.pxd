# Budget maintenance on a BudgetModel: merging (golden section or lookup tables, pairwise
# or multi-merge), removal, projection.  Used by _bsgd.pyx and _bsca.pyx.
from pybudget.budget._budget cimport BudgetModel
from pybudget.budget._merge_math cimport PairSearch
from pybudget.budget._team cimport Team

cdef enum:
    MAINT_MERGE = 0
    MAINT_REMOVE = 1
    MAINT_PROJECT = 2

cdef enum:
    MULTI_CASCADE = 0
    MULTI_GRADIENT = 1


cdef struct MergeParams:
    int maintenance
    int multi
    int merge_size       # M: points merged into one per event
    PairSearch pair      # h search, its tolerance and lookup tables


cdef struct MaintCounts:
    long n_merges        # merge events (each replaces 2..M SVs by one)
    long n_removed       # SVs deleted without replacement (removal, projection, fallback)


cdef class MergeWork:
    cdef double[::1] c_mv, d2_mv, wd_mv, h_mv, z_mv, z2_mv, coef_mv, gram_mv, rhs_mv, g_mv, accz_mv
    cdef int[::1] top_mv, pts_mv
    cdef double* c
    cdef double* d2      # squared distances of every SV to the merge candidate p
    cdef double* wd
    cdef double* h
    cdef double* z
    cdef double* z2
    cdef double* coef
    cdef double* gram
    cdef double* rhs
    cdef double* g
    cdef double* accz
    cdef int* top
    cdef int* pts
    # the rows of the points of an event (gather_rows): into the model's dense rows, or
    # (sparse storage) into `rows`, dense over the union `cols` of their columns, dz long
    # (cols2: the merge's other buffer)
    cdef const double** row
    cdef double* rows
    cdef int* cols
    cdef int* cols2
    cdef Py_ssize_t rows_room, cols_room, cols2_room
    cdef int dz
    # an event's merge candidate p, its coefficient (binary) and squared norm, the number
    # of partners kmax; the partner lists of a team's helpers: W.tk[t] entries in row
    # t - 1 of ttop (top_room wide); W.tk[0] counts W.top's (partner_scan)
    cdef int p, kmax, top_room
    cdef double bp, A
    cdef int[::1] tk_mv, ttop_mv
    cdef int* tk
    cdef int* ttop


cdef int maintain(BudgetModel mdl, const MergeParams* P, MergeWork W, int M,
                  MaintCounts* counts, Team* team) noexcept nogil
cdef void partner_scan(BudgetModel mdl, const MergeParams* P, MergeWork W, int t, int lo,
                       int hi) noexcept nogil


cdef class Maintainer:
    cdef MergeParams P
    cdef MergeWork W
    cdef object _keep
    cdef Team* team                      # the fit's team while one runs (else NULL)
    cdef readonly int cap, d, n_coef     # the model shape its work space was sized for
    cdef public long n_merges, n_removed
    # optional audit of the partner choice (bench/budget.py --study lookup, _merge_audit):
    # every audit_every-th binary pairwise merge event, up to audit_max events
    # readonly: audit_n indexes audit_log, which only start_audit allocates
    cdef readonly long audit_every, audit_max, audit_n, audit_same_gss, n_events
    cdef public double audit_wd_exec, audit_wd_precise, audit_wd_gss
    cdef double[:, ::1] audit_log     # per audited event: WD executed, WD of GSS's pick, min WD
    cdef void audit(self, BudgetModel mdl) noexcept nogil
    cdef int run(self, BudgetModel mdl, int M) noexcept nogil
    cdef void down_to(self, BudgetModel mdl, int budget, int M) noexcept nogil
