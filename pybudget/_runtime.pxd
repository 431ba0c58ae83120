# Small runtime services for the solver loops: a portable monotonic clock and a
# Ctrl-C check, both callable without the GIL.
from cpython.exc cimport PyErr_Clear

cdef extern from "_clock.h":
    double now "pb_now"() noexcept nogil

cdef extern from "Python.h":
    # Declared here without Cython's "except -1" so that the result is ours to handle.
    int check_signals "PyErr_CheckSignals"() noexcept


cdef inline bint interrupted() noexcept nogil:
    """True when a signal handler raised (Ctrl-C).  Loops call this every so many steps
    and return early; their Python caller then raises KeyboardInterrupt, and the
    estimators store results only after a run returns, so nothing half-updated is
    handed back."""
    cdef int r
    with gil:
        r = check_signals()
        if r != 0:
            PyErr_Clear()
    return r != 0
