"""The dual CD entry points.  The strategies (_dcd.pxi) are compiled twice, once per
value type of X (_dcd64, _dcd32), so that no sweep tests the type per row; each fit
picks its module here, once, by X.dtype."""
import numpy as np

from pybudget.linear import _dcd32, _dcd64
from pybudget.linear._dcd64 import (PAIRS, PROBLEMS, SELECTIONS, TOL_RULES, fresh_carry,
                                    roll_carried, sum_of_squares)
from pybudget.linear._dcd_types import DcdOptions, DcdOutcome, DcdState, RoundOutcome

__all__ = ["PAIRS", "PROBLEMS", "SELECTIONS", "TOL_RULES", "DcdOptions", "DcdOutcome",
           "DcdState", "RoundOutcome", "dcd_round", "dcd_solve", "fresh_carry", "module_for",
           "roll_carried", "sum_of_squares"]


def module_for(X):
    """The compiled module for X's value type (float32 or float64 CSR)."""
    return _dcd32 if X.dtype == np.float32 else _dcd64


def dcd_solve(X, y, upper, diag, cvec, bias, state, opts):
    return module_for(X).dcd_solve(X, y, upper, diag, cvec, bias, state, opts)


def dcd_round(X, *args, **kwargs):
    return module_for(X).dcd_round(X, *args, **kwargs)


dcd_solve.__doc__ = _dcd64.dcd_solve.__doc__
dcd_round.__doc__ = _dcd64.dcd_round.__doc__
