"""Reductions whose bits do not depend on how many threads a library runs.

A dot product through BLAS (``np.dot``, ``@`` on vectors) is split by OpenBLAS over its
threads on long vectors, and the partial sums then add up in another order: the same
fit gave other bits with 1 and 2 OpenBLAS threads.  Wherever a sum feeds the iterate,
it is taken here, in numpy's fixed pairwise order (the compiled sweeps have their own
``sum_of_squares``, the same order without the temporary).
"""
import numpy as np


def fixed_dot(a, b):
    """a.b as float(np.sum(a * b)): the same bits for any BLAS thread count."""
    return float(np.sum(a * b))


def add_in_order(parts):
    """Results of blocks of rows (numbers, arrays, or tuples of them) added in block
    order: the same bits whichever thread or worker computed each block."""
    first = parts[0]
    if isinstance(first, tuple):
        return tuple(add_in_order([r[i] for r in parts]) for i in range(len(first)))
    total = first
    for r in parts[1:]:
        total = total + r
    return total
