# The typed budget model buffer (see _budget.pxd).  All cdef methods are nogil and
# unchecked; the Python-level methods at the bottom exist for tests and for moving a
# model in and out of the solvers, and they do check their arguments.
from libc.stdlib cimport calloc, free, realloc
from libc.string cimport memcpy, memset

# The hot loop of both solvers: one Gaussian kernel row k(z_j, x), j < n, for a sparse x.
# The SVs are stored feature-major as well (ZT, d x ld), so each non-zero x_k is one
# contiguous axpy over all SVs (the same summation order per j as a row-wise dot
# product), and the exponentials run in a branch-free loop the compiler vectorises:
# pb_exp is exp() by Cody-Waite reduction (k = round(x / ln 2), r = x - k ln 2 with a
# two-part ln 2) and a degree-13 Taylor polynomial, |r| <= 0.347, so the truncation
# error is below 4e-18 and the result is within ~2 ulp of libm (tests: 1e-12 relative).
# Arguments below -708 give exp(-708) ~ 3e-308 instead of an underflow to 0.
# (`restrict`: the output row never aliases the buffer.)  On x86-64
# Linux with GCC the loops are also compiled for AVX2 and AVX-512 and picked at load time
# (target_clones); contraction to FMA is switched off, so every version rounds alike.
cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    #if defined(__GNUC__) && !defined(__clang__)
    #pragma GCC push_options
    #pragma GCC optimize("fp-contract=off")   /* no FMA: every clone rounds alike */
    #endif
    #if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
    #define PB_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
    #else
    #define PB_CLONES
    #endif

    /* exp(x) for -708 <= x <= 0 (callers clamp) */
    static inline double pb_exp(double x) {
        const double magic = 6755399441055744.0;   /* 1.5 * 2^52 */
        double t, kd, r, p, s;
        uint64_t bits;
        t = x * 1.4426950408889634 + magic;
        kd = t - magic;
        r = x - kd * 6.93147180369123816490e-01;
        r = r - kd * 1.90821492927058770002e-10;
        p = 1.6059043836821614e-10;                 /* 1/13! */
        p = p * r + 2.0876756987868099e-09;         /* 1/12! */
        p = p * r + 2.5052108385441720e-08;         /* 1/11! */
        p = p * r + 2.7557319223985893e-07;
        p = p * r + 2.7557319223985888e-06;
        p = p * r + 2.4801587301587302e-05;
        p = p * r + 1.9841269841269841e-04;
        p = p * r + 1.3888888888888889e-03;
        p = p * r + 8.3333333333333332e-03;
        p = p * r + 4.1666666666666664e-02;
        p = p * r + 1.6666666666666666e-01;
        p = p * r + 0.5;
        p = p * r + 1.0;
        p = p * r + 1.0;
        memcpy(&bits, &t, 8);
        bits = (bits + 1023) << 52;
        memcpy(&s, &bits, 8);
        return p * s;
    }

    /* out[j] = exp(-g * max(sqn[j] + xsq - 2 out[j], 0)), out holding the dot products */
    PB_CLONES static void pb_gauss(int n, double g, double xsq,
                                   const double* restrict sqn, double* restrict out) {
        int j;
        double lim = 708.0 / g;     /* clamp -g d2 to >= -708 (selects, no branches) */
        for (j = 0; j < n; j++) {
            double d2 = sqn[j] + xsq - 2.0 * out[j];
            d2 = d2 > 0.0 ? d2 : 0.0;
            d2 = d2 < lim ? d2 : lim;
            out[j] = pb_exp(-g * d2);
        }
    }

    /* kernel row of a sparse x against the n SVs of the feature-major ZT (stride ld),
       for float64 values (pb_krow_sparse) and float32 values (pb_krow_sparse_f32): each
       value is taken in double, so both give the same bits for the same numbers */
    #define PB_KROW_SPARSE(NAME, T)                                                     \
    PB_CLONES static void NAME(int n, int ld, const double* restrict ZT,                \
                               const double* restrict sqn,                              \
                               const T* restrict xd, const int* restrict xi,            \
                               int nnz, double xsq, double g, double* restrict out) {   \
        int j, k;                                                                       \
        for (j = 0; j < n; j++) out[j] = 0.0;                                           \
        for (k = 0; k < nnz; k++) {                                                     \
            const double* zc = ZT + (size_t)xi[k] * ld;                                 \
            double v = (double)xd[k];                                                   \
            for (j = 0; j < n; j++) out[j] += v * zc[j];                                \
        }                                                                               \
        pb_gauss(n, g, xsq, sqn, out);                                                  \
    }
    PB_KROW_SPARSE(pb_krow_sparse, double)
    PB_KROW_SPARSE(pb_krow_sparse_f32, float)

    PB_CLONES static void pb_krow_dense(int n, int ld, int d, const double* restrict ZT,
                                        const double* restrict sqn,
                                        const double* restrict x, double xsq,
                                        double g, double* restrict out) {
        int j, k;
        for (j = 0; j < n; j++) out[j] = 0.0;
        for (k = 0; k < d; k++) {
            const double* zc = ZT + (size_t)k * ld;
            double v = x[k];
            if (v == 0.0) continue;
            for (j = 0; j < n; j++) out[j] += v * zc[j];
        }
        pb_gauss(n, g, xsq, sqn, out);
    }

    /* out[j] = ||zp - z_j||^2 for j < n from the feature-major ZT: per j the same
       summation order (k ascending, difference squared) as a row-wise loop, so the
       result is bit-identical to it, but vectorised across j */
    PB_CLONES static void pb_sqdist_all(int n, int ld, int d, const double* restrict ZT,
                                        const double* restrict zp, double* restrict out) {
        int j, k;
        for (j = 0; j < n; j++) out[j] = 0.0;
        for (k = 0; k < d; k++) {
            const double* zc = ZT + (size_t)k * ld;
            double v = zp[k];
            for (j = 0; j < n; j++) {
                double t = v - zc[j];
                out[j] += t * t;
            }
        }
    }

    /* The sparse storage's kernels: the same non-zero terms in the same ascending index
       order as the dense loops above (a term with a zero factor adds nothing), so the
       same bits.  Kernel row of a sparse x from the feature-major posting lists: each
       non-zero x_k adds x_k z_jk to out[j] for the SVs j in column k's list */
    #define PB_KROW_POSTED(NAME, T)                                                     \
    static void NAME(int n, int* const* slot, double* const* val, const int* len,       \
                     const T* restrict xd, const int* restrict xi, int nnz,             \
                     const double* restrict sqn, double xsq, double g,                  \
                     double* restrict out) {                                            \
        int j, k, t;                                                                    \
        for (j = 0; j < n; j++) out[j] = 0.0;                                           \
        for (k = 0; k < nnz; k++) {                                                     \
            const int* s = slot[xi[k]];                                                 \
            const double* w = val[xi[k]];                                               \
            double v = (double)xd[k];                                                   \
            for (t = 0; t < len[xi[k]]; t++) out[s[t]] += v * w[t];                     \
        }                                                                               \
        pb_gauss(n, g, xsq, sqn, out);                                                  \
    }
    PB_KROW_POSTED(pb_krow_posted, double)
    PB_KROW_POSTED(pb_krow_posted_f32, float)

    /* kernel row of a dense x against n sparse SVs, each summed over its own values */
    static void pb_krow_rows(int n, int* const* idx, double* const* val, const int* nnz,
                             const double* restrict x, const double* restrict sqn,
                             double xsq, double g, double* restrict out) {
        int j, t;
        for (j = 0; j < n; j++) {
            double s = 0.0;
            for (t = 0; t < nnz[j]; t++) s += x[idx[j][t]] * val[j][t];
            out[j] = s;
        }
        pb_gauss(n, g, xsq, sqn, out);
    }

    /* ||a - b||^2 of two sorted sparse vectors, over their union in ascending order */
    static double pb_sqdist_sv(const int* ai, const double* av, int an,
                               const int* bi, const double* bv, int bn) {
        int s = 0, t = 0;
        double acc = 0.0, u;
        while (s < an || t < bn) {
            if (t >= bn || (s < an && ai[s] < bi[t])) { u = av[s++]; }
            else if (s >= an || bi[t] < ai[s]) { u = -bv[t++]; }
            else { u = av[s++] - bv[t++]; }
            acc += u * u;
        }
        return acc;
    }

    /* a . b of two sorted sparse vectors, over their common indices in ascending order */
    static double pb_dot_sv(const int* ai, const double* av, int an,
                            const int* bi, const double* bv, int bn) {
        int s = 0, t = 0;
        double acc = 0.0;
        while (s < an && t < bn) {
            if (ai[s] < bi[t]) s++;
            else if (bi[t] < ai[s]) t++;
            else acc += av[s++] * bv[t++];
        }
        return acc;
    }

    /* sum_j b[j] k[j] with four interleaved partial sums (latency, not order, bound) */
    static double pb_dot4(int n, const double* b, const double* k) {
        double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
        int j = 0;
        for (; j + 3 < n; j += 4) {
            s0 += b[j] * k[j];
            s1 += b[j + 1] * k[j + 1];
            s2 += b[j + 2] * k[j + 2];
            s3 += b[j + 3] * k[j + 3];
        }
        for (; j < n; j++) s0 += b[j] * k[j];
        return (s0 + s1) + (s2 + s3);
    }
    #if defined(__GNUC__) && !defined(__clang__)
    #pragma GCC pop_options
    #endif
    """
    double pb_exp(double x) nogil
    void pb_krow_sparse(int n, int ld, const double* ZT, const double* sqn,
                        const double* xd, const int* xi, int nnz, double xsq, double g,
                        double* out) nogil
    void pb_krow_sparse_f32(int n, int ld, const double* ZT, const double* sqn,
                            const float* xd, const int* xi, int nnz, double xsq, double g,
                            double* out) nogil
    void pb_krow_dense(int n, int ld, int d, const double* ZT, const double* sqn,
                       const double* x, double xsq, double g, double* out) nogil
    double pb_dot4(int n, const double* b, const double* k) nogil
    void pb_sqdist_all(int n, int ld, int d, const double* ZT, const double* zp,
                       double* out) nogil
    void pb_krow_posted(int n, int** slot, double** val, const int* len, const double* xd,
                        const int* xi, int nnz, const double* sqn, double xsq, double g,
                        double* out) nogil
    void pb_krow_posted_f32(int n, int** slot, double** val, const int* len,
                            const float* xd, const int* xi, int nnz, const double* sqn,
                            double xsq, double g, double* out) nogil
    void pb_krow_rows(int n, int** idx, double** val, const int* nnz, const double* x,
                      const double* sqn, double xsq, double g, double* out) nogil
    double pb_sqdist_sv(const int* ai, const double* av, int an, const int* bi,
                        const double* bv, int bn) nogil
    double pb_dot_sv(const int* ai, const double* av, int an, const int* bi,
                     const double* bv, int bn) nogil

from cython cimport floating
from cython.parallel cimport prange, threadid

cdef extern from "_threads.h":
    int pb_openmp() noexcept nogil

# whether this build spreads rows over threads (False where it was compiled without
# OpenMP: decision_rows then runs on one thread)
THREADS = bool(pb_openmp())

import numpy as np
import scipy.sparse as sp

from pybudget._core._csr cimport CsrView, csr_span, csr_view
from pybudget._core._csr import csr_structure
from pybudget.budget._state import ModelState

# Below this the lazy common factor is folded into the coefficients, well before
# beta/scale could overflow or lose precision.
cdef double FOLD_BELOW = 1e-9


cdef inline void _put_sparse(double* z, double* zt, int d, int cap, const floating* xd,
                             const int* xi, int nnz) noexcept nogil:
    """Write a sparse row into SV row z and its feature-major mirror zt (stride cap)."""
    cdef int k
    # ZT's column j mirrors Z's row j (stale slots too): one contiguous read of the
    # row finds the few strided column entries to clear
    for k in range(d):
        if z[k] != 0.0:
            zt[<Py_ssize_t>k * cap] = 0.0
    memset(z, 0, d * sizeof(double))
    for k in range(nnz):
        z[xi[k]] = xd[k]
        zt[<Py_ssize_t>xi[k] * cap] = xd[k]


cdef inline void _put_sv(BudgetModel m, int j, const floating* xd, const int* xi,
                         int nnz) noexcept nogil:
    """Write a sparse row (ascending indices) into sparse slot j, leaving out zeros."""
    cdef int k, t = 0
    if m._room(j, nnz) < 0:
        m.sv_nnz[j] = 0
        return
    for k in range(nnz):
        if xd[k] != 0:
            m.sv_idx[j][t] = xi[k]
            m.sv_val[j][t] = xd[k]
            t += 1
    m.sv_nnz[j] = t
    m._post(j)


cdef class BudgetModel:
    """Budgeted Gaussian-kernel model: up to ``cap`` SVs of ``d`` features, stored dense
    or (``sparse``) as sorted sparse rows, ``n_coef`` coefficients per SV (1 for binary,
    K for multi-class), a lazy scale, the source training index of each SV (-1 once
    merged) and, when ``n_src > 0``, the inverse map training index -> slot.
    ``out_of_memory`` is set when a sparse SV could not grow (the caller raises)."""

    def __cinit__(self):
        self.sv_idx = NULL
        self.sv_val = NULL
        self.sv_pos = NULL
        self.sv_nnz = NULL
        self.sv_room = NULL
        self.pl_slot = NULL
        self.pl_val = NULL
        self.pl_t = NULL
        self.pl_len = NULL
        self.pl_room = NULL

    def __dealloc__(self):
        cdef int j
        if self.sv_idx != NULL:
            for j in range(self.cap):
                free(self.sv_idx[j])
                free(self.sv_val[j])
                free(self.sv_pos[j])
        free(self.sv_idx)
        free(self.sv_val)
        free(self.sv_pos)
        free(self.sv_nnz)
        free(self.sv_room)
        if self.pl_slot != NULL:
            for j in range(self.d):
                free(self.pl_slot[j])
                free(self.pl_val[j])
                free(self.pl_t[j])
        free(self.pl_slot)
        free(self.pl_val)
        free(self.pl_t)
        free(self.pl_len)
        free(self.pl_room)

    def __init__(self, int d, int n_coef, int cap, double gamma, int n_src=0,
                 bint sparse=False):
        if d < 1 or n_coef < 1 or cap < 1 or not gamma > 0 or n_src < 0:
            raise ValueError("BudgetModel needs d, n_coef, cap >= 1, gamma > 0, n_src >= 0")
        if self.sv_idx != NULL:
            raise ValueError("BudgetModel is initialised once")
        self.d = d
        self.n_coef = n_coef
        self.cap = cap
        self.gamma = gamma
        self.n_sv = 0
        self.n_src = n_src
        self.scale = 1.0
        self.sparse = sparse
        self.out_of_memory = False
        if sparse:
            self.sv_idx = <int**>calloc(cap, sizeof(int*))
            self.sv_val = <double**>calloc(cap, sizeof(double*))
            self.sv_pos = <int**>calloc(cap, sizeof(int*))
            self.sv_nnz = <int*>calloc(cap, sizeof(int))
            self.sv_room = <int*>calloc(cap, sizeof(int))
            self.pl_slot = <int**>calloc(d, sizeof(int*))
            self.pl_val = <double**>calloc(d, sizeof(double*))
            self.pl_t = <int**>calloc(d, sizeof(int*))
            self.pl_len = <int*>calloc(d, sizeof(int))
            self.pl_room = <int*>calloc(d, sizeof(int))
            if (self.sv_idx == NULL or self.sv_val == NULL or self.sv_pos == NULL
                    or self.sv_nnz == NULL or self.sv_room == NULL or self.pl_slot == NULL
                    or self.pl_val == NULL or self.pl_t == NULL or self.pl_len == NULL
                    or self.pl_room == NULL):
                raise MemoryError("BudgetModel: no memory for the sparse SVs")
        # (sparse: no dense rows; a 1 x 1 array keeps the pointers valid)
        cdef int rows = 1 if sparse else cap, cols = 1 if sparse else d
        self.Z_mv = np.zeros((rows, cols))
        self.ZT_mv = np.zeros((cols, rows))
        self.sqn_mv = np.zeros(cap)
        self.beta_mv = np.zeros((cap, n_coef))
        self.src_mv = np.full(cap, -1, dtype=np.int32)
        self.slot_mv = np.full(max(n_src, 1), -1, dtype=np.int32)
        self.acc_mv = np.zeros((cap, n_coef))
        self.track_avg = False
        self.avg_pending = 0.0
        self.acc = &self.acc_mv[0, 0]
        self.Z = &self.Z_mv[0, 0]
        self.ZT = &self.ZT_mv[0, 0]
        self.sqn = &self.sqn_mv[0]
        self.beta = &self.beta_mv[0, 0]
        self.src = &self.src_mv[0]
        self.slot_of = &self.slot_mv[0] if n_src > 0 else NULL

    # ---- kernels -------------------------------------------------------------------

    cdef int _room(self, int j, int nnz) noexcept nogil:
        """Sparse slot j can hold nnz pairs (grown by at least half); -1 (and
        out_of_memory set) when the memory is not there."""
        cdef int room = self.sv_room[j]
        cdef int* idx
        cdef int* pos
        cdef double* val
        if nnz <= room:
            return 0
        room = nnz if nnz > room + room // 2 else room + room // 2
        idx = <int*>realloc(self.sv_idx[j], room * sizeof(int))
        if idx != NULL:
            self.sv_idx[j] = idx
        val = <double*>realloc(self.sv_val[j], room * sizeof(double))
        if val != NULL:
            self.sv_val[j] = val
        pos = <int*>realloc(self.sv_pos[j], room * sizeof(int))
        if pos != NULL:
            self.sv_pos[j] = pos
        if idx == NULL or val == NULL or pos == NULL:
            self.out_of_memory = True
            return -1
        self.sv_room[j] = room
        return 0

    cdef void _post(self, int j) noexcept nogil:
        """Add sparse slot j's values to the posting lists of their columns."""
        cdef int t, f, room, n
        cdef int* s
        cdef int* at
        cdef double* v
        for t in range(self.sv_nnz[j]):
            f = self.sv_idx[j][t]
            n = self.pl_len[f]
            if n == self.pl_room[f]:
                room = 4 if n < 4 else n + n // 2
                s = <int*>realloc(self.pl_slot[f], room * sizeof(int))
                if s != NULL:
                    self.pl_slot[f] = s
                v = <double*>realloc(self.pl_val[f], room * sizeof(double))
                if v != NULL:
                    self.pl_val[f] = v
                at = <int*>realloc(self.pl_t[f], room * sizeof(int))
                if at != NULL:
                    self.pl_t[f] = at
                if s == NULL or v == NULL or at == NULL:
                    # (the slot keeps the values posted so far, so the lists stay
                    # consistent; the caller raises MemoryError before the model is used)
                    self.sv_nnz[j] = t
                    self.out_of_memory = True
                    return
                self.pl_room[f] = room
            self.pl_slot[f][n] = j
            self.pl_val[f][n] = self.sv_val[j][t]
            self.pl_t[f][n] = t
            self.sv_pos[j][t] = n
            self.pl_len[f] = n + 1

    cdef void _unpost(self, int j, int to) noexcept nogil:
        """Sparse slot j's entries in the posting lists: removed (to < 0; the column's
        last entry takes the place) or renamed to slot ``to``."""
        cdef int t, f, k, n
        for t in range(self.sv_nnz[j]):
            f = self.sv_idx[j][t]
            k = self.sv_pos[j][t]
            if to >= 0:
                self.pl_slot[f][k] = to
                continue
            n = self.pl_len[f] - 1
            if k != n:
                self.pl_slot[f][k] = self.pl_slot[f][n]
                self.pl_val[f][k] = self.pl_val[f][n]
                self.pl_t[f][k] = self.pl_t[f][n]
                self.sv_pos[self.pl_slot[f][k]][self.pl_t[f][k]] = k
            self.pl_len[f] = n

    cdef void kernel_row_sparse(self, const double* xd, const int* xi, int nnz, double xsq,
                                double* out) noexcept nogil:
        """out[j] = k(z_j, x) for a sparse x with squared norm xsq."""
        if self.sparse:
            pb_krow_posted(self.n_sv, self.pl_slot, self.pl_val, self.pl_len, xd, xi, nnz,
                           self.sqn, xsq, self.gamma, out)
            return
        pb_krow_sparse(self.n_sv, self.cap, self.ZT, self.sqn, xd, xi, nnz, xsq, self.gamma,
                       out)

    cdef void kernel_row_csr(self, const CsrView* X, int i, double xsq,
                             double* out) noexcept nogil:
        """kernel_row_sparse for row i of a view of either value type."""
        cdef int nnz, start = csr_span(X, i, &nnz)
        if self.sparse and X.data32 != NULL:
            pb_krow_posted_f32(self.n_sv, self.pl_slot, self.pl_val, self.pl_len,
                               X.data32 + start, X.indices + start, nnz, self.sqn, xsq,
                               self.gamma, out)
        elif self.sparse:
            pb_krow_posted(self.n_sv, self.pl_slot, self.pl_val, self.pl_len,
                           X.data + start, X.indices + start, nnz, self.sqn, xsq,
                           self.gamma, out)
        else:
            self.kernel_row_part(X, i, xsq, out, 0, self.n_sv)

    cdef void kernel_row_part(self, const CsrView* X, int i, double xsq, double* out,
                              int lo, int hi) noexcept nogil:
        """kernel_row_csr's values at the slots lo .. hi - 1 only, dense storage (a team's
        share): each value the same bits as in the whole row."""
        cdef int nnz, start = csr_span(X, i, &nnz)
        if X.data32 != NULL:
            pb_krow_sparse_f32(hi - lo, self.cap, self.ZT + lo, self.sqn + lo,
                               X.data32 + start, X.indices + start, nnz, xsq, self.gamma,
                               out + lo)
        else:
            pb_krow_sparse(hi - lo, self.cap, self.ZT + lo, self.sqn + lo, X.data + start,
                           X.indices + start, nnz, xsq, self.gamma, out + lo)

    cdef void kernel_row_dense(self, const double* x, double xsq, double* out) noexcept nogil:
        if self.sparse:
            pb_krow_rows(self.n_sv, self.sv_idx, self.sv_val, self.sv_nnz, x, self.sqn, xsq,
                         self.gamma, out)
            return
        pb_krow_dense(self.n_sv, self.cap, self.d, self.ZT, self.sqn, x, xsq, self.gamma, out)

    cdef void sqdist_all(self, int p, double* out) noexcept nogil:
        self.sqdist_part(p, out, 0, self.n_sv)

    cdef void sqdist_part(self, int p, double* out, int lo, int hi) noexcept nogil:
        """out[j] = ||z_p - z_j||^2 from the row differences (exact for near-equal rows), for
        the SVs lo <= j < hi: vectorised over the feature-major copy, or over the union of
        the two supports (sparse); each value the same bits for any lo, hi."""
        cdef int j
        if self.sparse:
            for j in range(lo, hi):
                out[j] = pb_sqdist_sv(self.sv_idx[p], self.sv_val[p], self.sv_nnz[p],
                                      self.sv_idx[j], self.sv_val[j], self.sv_nnz[j])
            return
        pb_sqdist_all(hi - lo, self.cap, self.d, self.ZT + lo,
                      self.Z + <Py_ssize_t>p * self.d, out + lo)

    cdef double sv_dot(self, int i, int j) noexcept nogil:
        """z_i . z_j (ascending index order, as a row-wise dot product)."""
        cdef int k
        cdef double s = 0.0
        cdef const double* zi
        cdef const double* zj
        if self.sparse:
            return pb_dot_sv(self.sv_idx[i], self.sv_val[i], self.sv_nnz[i],
                             self.sv_idx[j], self.sv_val[j], self.sv_nnz[j])
        zi = self.Z + <Py_ssize_t>i * self.d
        zj = self.Z + <Py_ssize_t>j * self.d
        for k in range(self.d):
            s += zi[k] * zj[k]
        return s

    cdef void decision(self, const double* krow, double* out) noexcept nogil:
        """out[c] = f_c(x) from a kernel row of x."""
        cdef int j, c
        cdef const double* b
        if self.n_coef == 1:
            out[0] = self.scale * pb_dot4(self.n_sv, self.beta, krow)
            return
        for c in range(self.n_coef):
            out[c] = 0.0
        for j in range(self.n_sv):
            b = self.beta + <Py_ssize_t>j * self.n_coef
            for c in range(self.n_coef):
                out[c] += b[c] * krow[j]
        for c in range(self.n_coef):
            out[c] *= self.scale

    # ---- insertion / removal ---------------------------------------------------------

    cdef void _set_coef(self, int j, const double* coef) noexcept nogil:
        cdef int c
        cdef double* b = self.beta + <Py_ssize_t>j * self.n_coef
        for c in range(self.n_coef):
            b[c] = coef[c] / self.scale

    cdef void _set_acc_debit(self, int j) noexcept nogil:
        # a new SV must not earn the steps accrued before its insertion
        cdef int c
        if self.track_avg:
            for c in range(self.n_coef):
                self.acc[<Py_ssize_t>j * self.n_coef + c] = (
                    -self.beta[<Py_ssize_t>j * self.n_coef + c] * self.avg_pending)

    cdef void _set_source(self, int j, int source) noexcept nogil:
        self.src[j] = source
        if source >= 0 and self.slot_of != NULL:
            self.slot_of[source] = j

    cdef int add_sparse(self, const double* xd, const int* xi, int nnz, double xsq,
                        const double* coef, int source) noexcept nogil:
        """Append x with true coefficients coef (divided by the scale); returns the slot.
        The caller guarantees n_sv < cap."""
        cdef int j = self.n_sv
        if self.sparse:
            _put_sv(self, j, xd, xi, nnz)
            return self._commit(j, xsq, coef, source)
        _put_sparse(self.Z + <Py_ssize_t>j * self.d, self.ZT + j, self.d, self.cap, xd, xi,
                    nnz)
        return self._commit(j, xsq, coef, source)

    cdef int add_row(self, const CsrView* X, int i, double xsq, const double* coef,
                     int source) noexcept nogil:
        """add_sparse for row i of a view of either value type (stored as float64)."""
        cdef int j = self.n_sv, nnz, start = csr_span(X, i, &nnz)
        cdef double* z = self.Z + <Py_ssize_t>j * self.d
        if self.sparse:
            if X.data32 != NULL:
                _put_sv(self, j, X.data32 + start, X.indices + start, nnz)
            else:
                _put_sv(self, j, X.data + start, X.indices + start, nnz)
            return self._commit(j, xsq, coef, source)
        if X.data32 != NULL:
            _put_sparse(z, self.ZT + j, self.d, self.cap, X.data32 + start,
                        X.indices + start, nnz)
        else:
            _put_sparse(z, self.ZT + j, self.d, self.cap, X.data + start, X.indices + start,
                        nnz)
        return self._commit(j, xsq, coef, source)

    cdef int add_dense(self, const double* x, const double* coef, int source) noexcept nogil:
        cdef int j = self.n_sv, k, t = 0
        cdef double* z = self.Z + <Py_ssize_t>j * self.d
        cdef double* zt = self.ZT + j
        cdef double s = 0.0
        if self.sparse:
            for k in range(self.d):
                s += x[k] * x[k]
                t += x[k] != 0.0
            if self._room(j, t) < 0:
                t = 0
            else:
                t = 0
                for k in range(self.d):
                    if x[k] != 0.0:
                        self.sv_idx[j][t] = k
                        self.sv_val[j][t] = x[k]
                        t += 1
            self.sv_nnz[j] = t
            self._post(j)
            return self._commit(j, s, coef, source)
        memcpy(z, x, self.d * sizeof(double))
        for k in range(self.d):
            s += x[k] * x[k]
            zt[<Py_ssize_t>k * self.cap] = x[k]
        return self._commit(j, s, coef, source)

    cdef int add_compact(self, const double* z, const int* cols, int n, const double* coef,
                         int source) noexcept nogil:
        """Sparse storage: add_dense of the point that is z[t] at column cols[t] (t < n,
        cols ascending) and zero elsewhere, what a merge computes on the union of its
        parts' columns."""
        cdef int j = self.n_sv, t, k = 0
        cdef double s = 0.0
        for t in range(n):
            s += z[t] * z[t]
        if self._room(j, n) < 0:
            n = 0
        for t in range(n):
            if z[t] != 0.0:
                self.sv_idx[j][k] = cols[t]
                self.sv_val[j][k] = z[t]
                k += 1
        self.sv_nnz[j] = k
        self._post(j)
        return self._commit(j, s, coef, source)

    cdef int _commit(self, int j, double sqn, const double* coef, int source) noexcept nogil:
        """Finish appending the point just written to slot j (squared norm sqn)."""
        self.sqn[j] = sqn
        self._set_coef(j, coef)
        self._set_acc_debit(j)
        self._set_source(j, source)
        self.n_sv += 1
        return j

    cdef void remove(self, int j) noexcept nogil:
        """Delete slot j by moving the last SV into it (order is not meaningful; sparse
        slots swap their memory)."""
        cdef int last = self.n_sv - 1, k
        cdef double* zt = self.ZT
        cdef double* zj = self.Z + <Py_ssize_t>j * self.d
        cdef const double* zl = self.Z + <Py_ssize_t>last * self.d
        cdef int* ti
        cdef int* tp
        cdef double* tv
        if self.src[j] >= 0 and self.slot_of != NULL:
            self.slot_of[self.src[j]] = -1
        if self.sparse:
            self._unpost(j, -1)
            self.sv_nnz[j] = 0
        if j != last and self.sparse:
            self._unpost(last, j)
            ti, tv, tp, k = self.sv_idx[j], self.sv_val[j], self.sv_pos[j], self.sv_room[j]
            self.sv_idx[j], self.sv_val[j] = self.sv_idx[last], self.sv_val[last]
            self.sv_pos[j] = self.sv_pos[last]
            self.sv_room[j], self.sv_nnz[j] = self.sv_room[last], self.sv_nnz[last]
            self.sv_idx[last], self.sv_val[last], self.sv_room[last] = ti, tv, k
            self.sv_pos[last] = tp
            self.sv_nnz[last] = 0
        elif j != last:
            # ZT's columns mirror Z's rows: copy only where either row is non-zero
            for k in range(self.d):
                if zj[k] != 0.0 or zl[k] != 0.0:
                    zt[<Py_ssize_t>k * self.cap + j] = zl[k]
            memcpy(zj, zl, self.d * sizeof(double))
        if j != last:
            memcpy(self.beta + <Py_ssize_t>j * self.n_coef,
                   self.beta + <Py_ssize_t>last * self.n_coef, self.n_coef * sizeof(double))
            self.sqn[j] = self.sqn[last]
            memcpy(self.acc + <Py_ssize_t>j * self.n_coef,
                   self.acc + <Py_ssize_t>last * self.n_coef, self.n_coef * sizeof(double))
            self.src[j] = self.src[last]
            if self.src[j] >= 0 and self.slot_of != NULL:
                self.slot_of[self.src[j]] = j
        self.src[last] = -1
        self.n_sv = last

    # ---- lazy scaling -----------------------------------------------------------------

    cdef void scale_by(self, double f) noexcept nogil:
        """Multiply every coefficient by f >= 0 in O(1) (O(n_sv) when folding)."""
        if f <= 0.0:
            self.clear()
            return
        self.scale *= f
        if self.scale < FOLD_BELOW:
            self.fold()

    cdef void settle(self) noexcept nogil:
        """acc += beta (unscaled) * avg_pending for every SV; avg_pending = 0."""
        cdef Py_ssize_t k
        if self.track_avg and self.avg_pending != 0.0:
            for k in range(<Py_ssize_t>self.n_sv * self.n_coef):
                self.acc[k] += self.beta[k] * self.avg_pending
        self.avg_pending = 0.0

    cdef void accrue(self) noexcept nogil:
        """Count the current model once more in the average (O(1))."""
        self.avg_pending += self.scale

    cdef void fold(self) noexcept nogil:
        cdef Py_ssize_t k
        self.settle()      # pending sums are in units of the old scale
        for k in range(<Py_ssize_t>self.n_sv * self.n_coef):
            self.beta[k] *= self.scale
        self.scale = 1.0

    cdef void clear(self) noexcept nogil:
        cdef int j, t
        if self.sparse:
            for j in range(self.n_sv):
                for t in range(self.sv_nnz[j]):
                    self.pl_len[self.sv_idx[j][t]] = 0
                self.sv_nnz[j] = 0
        if self.slot_of != NULL:
            for j in range(self.n_sv):
                if self.src[j] >= 0:
                    self.slot_of[self.src[j]] = -1
        for j in range(self.n_sv):
            self.src[j] = -1
        self.n_sv = 0
        self.scale = 1.0

    # ---- Python-level access (tests, solver entry/exit) -------------------------------

    def load(self, Z, beta, src=None):
        """Replace the content by SV rows Z (n, d; dense, or scipy sparse), true
        coefficients beta (n, n_coef) and optional source indices (n,)."""
        if sp.issparse(Z):          # (a canonical copy: sorted, no duplicates)
            Z = sp.csr_matrix(Z, dtype=np.float64, copy=True)
            Z.sum_duplicates()
        else:
            Z = np.ascontiguousarray(Z, dtype=np.float64)
        beta = np.ascontiguousarray(beta, dtype=np.float64).reshape(Z.shape[0], -1)
        n = Z.shape[0]
        if Z.ndim != 2 or Z.shape[1] != self.d or beta.shape[1] != self.n_coef or n > self.cap:
            raise ValueError("model arrays do not fit this buffer")
        srcs = (np.full(n, -1, dtype=np.int32) if src is None or self.n_src == 0
                else np.asarray(src, dtype=np.int32).reshape(n))
        if np.any(srcs < -1) or np.any(srcs >= self.n_src):
            raise ValueError("source index out of range")
        self.clear()
        cdef const double[:, ::1] bv = beta
        cdef const double[:, ::1] Zv
        cdef double[::1] xd
        cdef int[::1] xi, ip
        cdef int j, k
        cdef double s
        if sp.issparse(Z):
            # (one padding entry: an empty last row still has an element to point at)
            xd = np.append(Z.data, 0.0)
            xi = np.append(Z.indices, 0).astype(np.int32)
            ip = Z.indptr.astype(np.int32)
            for j in range(n):
                s = 0.0         # (in index order, as add_dense sums a dense row)
                for k in range(ip[j], ip[j + 1]):
                    s += xd[k] * xd[k]
                self.add_sparse(&xd[ip[j]], &xi[ip[j]], ip[j + 1] - ip[j], s, &bv[j, 0],
                                srcs[j])
            if self.out_of_memory:
                raise MemoryError("BudgetModel.load: no memory for the sparse SVs")
            return
        Zv = Z     # (const: read-only arrays load too)
        for j in range(n):
            self.add_dense(&Zv[j, 0], &bv[j, 0], srcs[j])
        if self.out_of_memory:
            raise MemoryError("BudgetModel.load: no memory for the sparse SVs")

    def arrays(self):
        """(Z, beta, src) copies of the current model with the scale folded in; Z a
        canonical CSR matrix for sparse storage."""
        n = self.n_sv
        beta = np.asarray(self.beta_mv)[:n] * self.scale
        src = np.asarray(self.src_mv)[:n].copy()
        return self._rows(), beta, src

    def state(self):
        """The model exactly as it stands (a ModelState): restore() on a model of the
        same shape and storage continues from it with the same bits."""
        n = self.n_sv
        return ModelState(self._rows(), np.asarray(self.sqn_mv)[:n].copy(),
                          np.asarray(self.beta_mv)[:n].copy(), self.scale,
                          np.asarray(self.src_mv)[:n].copy(),
                          np.asarray(self.acc_mv)[:n].copy() if self.track_avg else None,
                          self.avg_pending)

    def restore(self, state):
        """Replace the content by a ModelState taken from a model of the same d, n_coef
        and storage (sources beyond this model's n_src are refused)."""
        if not isinstance(state, ModelState):
            raise TypeError("restore needs a ModelState")
        n = state.n_sv
        if (sp.issparse(state.Z) != self.sparse or state.Z.shape != (n, self.d)
                or state.beta.shape != (n, self.n_coef) or n > self.cap
                or state.sqn.shape != (n,) or state.src.shape != (n,)
                or (state.acc is not None and state.acc.shape != (n, self.n_coef))):
            raise ValueError("the state does not fit this model")
        self.load(state.Z, np.zeros((n, self.n_coef)), state.src)
        np.asarray(self.sqn_mv)[:n] = state.sqn
        np.asarray(self.beta_mv)[:n] = state.beta
        self.scale = state.scale
        self.track_avg = state.acc is not None
        if self.track_avg:
            np.asarray(self.acc_mv)[:n] = state.acc
        self.avg_pending = state.avg_pending

    def _rows(self):
        """A copy of the SV rows: dense, or canonical CSR for sparse storage."""
        n = self.n_sv
        if not self.sparse:
            return np.asarray(self.Z_mv)[:n].copy()
        cdef int j, t
        indptr = np.zeros(n + 1, dtype=np.int32)
        cdef int[::1] ip = indptr
        for j in range(n):
            ip[j + 1] = ip[j] + self.sv_nnz[j]
        indices = np.empty(ip[n], dtype=np.int32)
        data = np.empty(ip[n])
        cdef int[::1] iv = indices
        cdef double[::1] dv = data
        for j in range(n):
            for t in range(self.sv_nnz[j]):
                iv[ip[j] + t] = self.sv_idx[j][t]
                dv[ip[j] + t] = self.sv_val[j][t]
        Z = sp.csr_matrix((data, indices, indptr), shape=(n, self.d))
        Z.has_sorted_indices = True
        return Z

    @property
    def stored_values(self):
        """The SV values the storage holds: n_sv * d dense, the non-zeros sparse."""
        cdef int j
        cdef Py_ssize_t s = 0
        if not self.sparse:
            return <Py_ssize_t>self.n_sv * self.d
        for j in range(self.n_sv):
            s += self.sv_nnz[j]
        return s

    cdef void begin_average(self) noexcept nogil:
        """Start (or restart) the iterate average: every SV's sum is zeroed."""
        memset(self.acc, 0, <Py_ssize_t>self.cap * self.n_coef * sizeof(double))
        self.avg_pending = 0.0
        self.track_avg = True

    def start_averaging(self):
        self.begin_average()

    def accrue_step(self):
        """Python access to accrue() (tests)."""
        self.accrue()

    def averaged(self):
        """Settled per-SV sums of the averaged iterates (n_sv, n_coef), true units."""
        if not self.track_avg:
            raise ValueError("averaging was not started")
        self.settle()
        return np.asarray(self.acc_mv)[:self.n_sv].copy()

    @property
    def sq_norms(self):
        return np.asarray(self.sqn_mv)[:self.n_sv].copy()

    @property
    def slots(self):
        return np.asarray(self.slot_mv)[:self.n_src].copy()

    def add(self, x, coef, int source=-1):
        """Append one row x (dense 1-d array or 1-row sparse matrix)."""
        if self.n_sv >= self.cap:
            raise ValueError("buffer is full")
        if self.n_src == 0:
            source = -1
        if not -1 <= source < self.n_src:
            raise ValueError("source index out of range")
        cdef double[::1] c = np.ascontiguousarray(coef, dtype=np.float64).reshape(self.n_coef)
        cdef double[::1] xd
        cdef int[::1] xi
        if sp.issparse(x):
            xd, xi, nnz, xsq = _one_sparse_row(x, self.d)
            j = self.add_sparse(&xd[0], &xi[0], nnz, xsq, &c[0], source)
        else:
            xd = np.ascontiguousarray(x, dtype=np.float64).reshape(self.d)
            j = self.add_dense(&xd[0], &c[0], source)
        if self.out_of_memory:
            raise MemoryError("BudgetModel.add: no memory for the sparse SV")
        return j

    def remove_slot(self, int j):
        if not 0 <= j < self.n_sv:
            raise IndexError("slot out of range")
        self.remove(j)

    def sq_distances(self, int p):
        """||z_p - z_j||^2 for every SV j, as a maintenance event computes them (tests,
        and bench/budget_storage.py's parts)."""
        if not 0 <= p < self.n_sv:
            raise IndexError("slot out of range")
        out = np.zeros(self.n_sv)
        cdef double[::1] o = out
        self.sqdist_all(p, &o[0])
        return out

    def multiply(self, double f):
        if not f >= 0:
            raise ValueError("factor must be >= 0")
        self.scale_by(f)

    def kernel_row(self, x):
        """k(z_j, x) for every SV j (x dense 1-d or a 1-row sparse matrix)."""
        out = np.zeros(max(self.n_sv, 1))
        cdef double[::1] o = out
        cdef double[::1] xd
        cdef int[::1] xi
        if sp.issparse(x):
            xd, xi, nnz, xsq = _one_sparse_row(x, self.d)
            self.kernel_row_sparse(&xd[0], &xi[0], nnz, xsq, &o[0])
        else:
            xd = np.ascontiguousarray(x, dtype=np.float64).reshape(self.d)
            self.kernel_row_dense(&xd[0], float(np.dot(xd, xd)), &o[0])
        return out[:self.n_sv]

    def decision_function(self, x):
        k = self.kernel_row(x)
        out = np.zeros(self.n_coef)
        cdef double[::1] o = out
        cdef double[::1] kv = np.append(k, 0.0)
        self.decision(&kv[0], &o[0])
        return out

    def decision_stream(self, X, const double[::1] xsq):
        """f(x_i) for every row of a CSR X with int32 indices and float64 or float32
        data, each computed as one training step computes its margin: a kernel row
        against the current SVs, then the weighted sum.  Shape (n,) for a binary model, else
        (n, n_coef).  For checkpoints, benchmarks (kernel_throughput.py) and tests."""
        out, _ = self.decision_rows(X, xsq, 1)
        return out[:, 0] if self.n_coef == 1 else out

    def decision_rows(self, X, const double[::1] xsq, int n_threads=1):
        """``decision_stream``'s values, an (n, n_coef) array, with the rows spread over
        up to ``n_threads`` threads (OpenMP, static blocks of rows; one thread runs no
        OpenMP region): each row's value is computed by one thread in the same order, so
        the bits do not depend on the number of threads.  Returns (values, threads that
        computed rows)."""
        if (not sp.issparse(X) or X.format != "csr" or X.shape[1] != self.d
                or xsq.shape[0] != X.shape[0]):
            raise ValueError("decision_rows: a CSR X and xsq matching the model")
        if n_threads < 1:
            raise ValueError(f"decision_rows: n_threads must be >= 1, got {n_threads}")
        csr_structure(X.indptr, X.indices, X.shape[0], self.d)  # kernels read unchecked
        if X.data.shape[0] < X.indptr[X.shape[0]]:
            raise ValueError("decision_rows: data is shorter than indptr says")
        if not THREADS:
            n_threads = 1
        cdef CsrView V = csr_view(X)
        cdef Py_ssize_t i
        cdef int t
        out = np.zeros((X.shape[0], self.n_coef))
        cdef double[:, ::1] o = out
        cdef double[:, ::1] krows = np.zeros((n_threads, self.cap + 1))  # one per thread
        cdef int[::1] ran = np.zeros(n_threads, dtype=np.int32)
        with nogil:
            if n_threads == 1:
                for i in range(V.n_rows):
                    self.kernel_row_csr(&V, <int>i, xsq[i], &krows[0, 0])
                    self.decision(&krows[0, 0], &o[i, 0])
                ran[0] = V.n_rows > 0
            else:
                for i in prange(V.n_rows, num_threads=n_threads, schedule="static"):
                    t = threadid()
                    ran[t] = 1
                    self.kernel_row_csr(&V, <int>i, xsq[i], &krows[t, 0])
                    self.decision(&krows[t, 0], &o[i, 0])
        return out, int(np.sum(ran))


def _one_sparse_row(x, int d):
    """A 1 x d sparse row as (values, int32 indices, nnz, squared norm), both arrays
    padded by one entry so that an empty row still has a first element to point at."""
    x = sp.csr_matrix(x, dtype=np.float64)
    x.sum_duplicates()
    if x.shape != (1, d):
        raise ValueError("x has the wrong shape")
    return (np.append(x.data, 0.0), np.append(x.indices, 0).astype(np.int32), x.nnz,
            float(np.dot(x.data, x.data)))
