# Small runtime services for the solver loops: a portable monotonic clock, a Ctrl-C
# check and checkpoint segmentation, all callable without the GIL.
from cpython.exc cimport PyErr_Clear

cdef extern from "_clock.h":
    double now "pb_now"() noexcept nogil

cdef extern from "Python.h":
    # Declared here without Cython's "except -1" so that the result is ours to handle.
    int check_signals "PyErr_CheckSignals"() noexcept


cdef inline bint interrupted() noexcept nogil:
    """True when a signal handler raised (Ctrl-C) or, in a worker thread of an n_jobs
    pool, when the pool was told to stop (signals reach the main thread only; see
    _core/_parallel.py).  Loops call this every so many steps and return early; their
    Python caller then raises KeyboardInterrupt, and the estimators store results only
    after a run returns, so nothing half-updated is handed back."""
    cdef int r
    with gil:
        r = check_signals()
        if r != 0:
            PyErr_Clear()
        else:
            try:
                from pybudget._core._parallel import stop_requested
                r = stop_requested()
            except BaseException:
                # A signal handler ran inside that Python call and raised (Ctrl-C):
                # the exception cannot leave this noexcept function, so it is an
                # interrupt, not something to drop.
                r = 1
    return r != 0


cdef inline int segment_end(long done, long every, int s, int n) noexcept nogil:
    """Where the run segment starting at step s of an n-step epoch ends, `done` steps
    into the run: at the epoch's end, or earlier at the next multiple of `every` (the
    next checkpoint; every = 0: none)."""
    if every > 0 and every - done % every < n - s:
        return s + <int>(every - done % every)
    return n
