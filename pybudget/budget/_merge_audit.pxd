# The optional partner-choice audit of binary pairwise merges (Maintainer.start_audit,
# bench/budget.py --study lookup).
from pybudget.budget._budget cimport BudgetModel
from pybudget.budget._merge_math cimport PairSearch

cdef int audit_partners(BudgetModel mdl, const PairSearch* S, int p, double* d2,
                        double* row) noexcept nogil
