# The dual CD solvers (_dcd.pxi) compiled for float32 values of X only: the CSR
# kernels' value-type test is a constant here (_value_type.h), so no sweep branches on
# it.  pybudget.linear._dual_cd picks this module or _dcd64 by X.dtype.
cdef extern from *:
    """
    #define PB_VALUE_TYPE 32
    """

include "_dcd.pxi"
