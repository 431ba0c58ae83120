# The epoch loop both budgeted solvers share (see _epochs.pyx).
cdef class EpochSteps:
    cdef double merge_time      # seconds in budget maintenance, the driver's included
    cdef bint run(self, int s_begin, int s_end) noexcept nogil
