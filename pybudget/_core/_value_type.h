/* The value type of X that a module's CSR kernels are compiled for.  0: either, read
   per row from the view (which of its value pointers is set).  32 or 64: only float32
   or only float64 values, so the kernels' test folds away at compile time.  A module
   fixes it by defining PB_VALUE_TYPE before including this header (see
   pybudget/linear/_dcd64.pyx and _dcd32.pyx). */
#ifndef PB_VALUE_TYPE
#define PB_VALUE_TYPE 0
#endif
