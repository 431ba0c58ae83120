# Merge maths (see _merge_math.pxd for the notation and the inline routines): the lookup
# tables, built and cached here only, and array access for merging.py and the tests.
from libc.math cimport log

import threading

import numpy as np


cdef inline double r_limit_m0(double kappa) noexcept nogil:
    """R(0, kappa) = lim_{m->0} WD_n / (m (1-m) (1-kappa))^2."""
    if kappa <= 0.0:
        return 1.0
    if kappa >= 1.0:
        return 2.0
    return ((1.0 - kappa * kappa + 2.0 * kappa * kappa * log(kappa))
            / ((1.0 - kappa) * (1.0 - kappa)))


def build_tables():
    """(H, R), each GRID x GRID over m = i/400 (rows), kappa = j/400 (columns).

    H[i, j] = h*(m, kappa).  R is the normalised WD divided by (m (1-m) (1-kappa))^2: the
    normalised WD itself vanishes like m^2 at m -> 0 and like (1-kappa)^2 at kappa -> 1,
    where bilinear interpolation of it would be off by 100 % and more; the quotient is
    smooth (R -> 2 at kappa = 1 for every m) and interpolates to well below 1 %."""
    H = np.empty((GRID, GRID))
    R = np.empty((GRID, GRID))
    cdef double[:, ::1] Hv = H
    cdef double[:, ::1] Rv = R
    cdef int i, j
    cdef double m, kappa, c, h, e
    with nogil:
        for i in range(GRID):
            m = i / (GRID - 1.0)
            for j in range(GRID):
                kappa = j / (GRID - 1.0)
                if j == 0:
                    Hv[i, j] = 1.0 if m >= 0.5 else 0.0
                    Rv[i, j] = 1.0 / (m * m if m >= 0.5 else (1.0 - m) * (1.0 - m))
                elif j == GRID - 1:
                    Hv[i, j] = m
                    Rv[i, j] = 2.0
                elif i == 0 or i == GRID - 1:
                    Hv[i, j] = m
                    Rv[i, j] = r_limit_m0(kappa)
                else:
                    c = -log(kappa)
                    h = precise_h(m, c)
                    Hv[i, j] = h
                    e = m * (1.0 - m) * (1.0 - kappa)
                    Rv[i, j] = (wd_general(m * m, (1.0 - m) * (1.0 - m), m * (1.0 - m), c, h)
                                / (e * e))
    return H, R


_TABLES = None
_TABLES_LOCK = threading.Lock()


def tables():
    """The lookup tables, computed on first use (about a second) and cached: the one
    source of the tables for the solvers (bind_tables) and merging.py.  Built under a
    lock: one-vs-rest threads (n_jobs) that all need them wait for one build."""
    global _TABLES
    with _TABLES_LOCK:
        if _TABLES is None:
            _TABLES = build_tables()
    return _TABLES


cdef object bind_tables(PairSearch* S):
    """Points S at the cached tables; returns them, for the caller to keep alive."""
    cdef double[:, ::1] H
    cdef double[:, ::1] R
    H, R = tables()
    S.h_table = &H[0, 0]
    S.r_table = &R[0, 0]
    return (H, R)


# ---- array access (merging.py, tests) --------------------------------------------------

cdef enum:
    EACH_GSS_H = 0
    EACH_PRECISE_H = 1
    EACH_SEARCH_H = 2
    EACH_WD = 3
    EACH_INTERP = 4


cdef _each(int f, double tol, const double* T, double[::1] a, double[::1] b,
           double[::1] c=None, double[::1] d=None, double[::1] e=None):
    """Routine f (with tol, or table T for interp) at every index of the argument arrays:
    the one loop behind the *_array functions (f is loop-invariant: the compiler hoists
    the branch)."""
    out = np.empty(a.shape[0])
    cdef double[::1] o = out
    cdef Py_ssize_t i
    with nogil:
        for i in range(a.shape[0]):
            if f == EACH_GSS_H:
                o[i] = gss_h(a[i], b[i], tol)
            elif f == EACH_PRECISE_H:
                o[i] = precise_h(a[i], b[i])
            elif f == EACH_SEARCH_H:
                o[i] = search_h_general(a[i], b[i], c[i], d[i], tol)
            elif f == EACH_WD:
                o[i] = wd_general(a[i], b[i], c[i], d[i], e[i])
            else:
                o[i] = interp(T, a[i], b[i])
    return out


def gss_h_array(double[::1] m, double[::1] c, double tol):
    return _each(EACH_GSS_H, tol, NULL, m, c)


def precise_h_array(double[::1] m, double[::1] c):
    return _each(EACH_PRECISE_H, 0.0, NULL, m, c)


def search_h_general_array(double[::1] A, double[::1] D, double[::1] Cc, double[::1] c,
                           double tol):
    return _each(EACH_SEARCH_H, tol, NULL, A, D, Cc, c)


def wd_array(double[::1] A, double[::1] D, double[::1] Cc, double[::1] c, double[::1] h):
    return _each(EACH_WD, 0.0, NULL, A, D, Cc, c, h)


def interp_array(double[:, ::1] T, double[::1] m, double[::1] kappa):
    if T.shape[0] != GRID or T.shape[1] != GRID:
        raise ValueError(f"table must be {GRID}x{GRID}")
    return _each(EACH_INTERP, 0.0, &T[0, 0], m, kappa)
