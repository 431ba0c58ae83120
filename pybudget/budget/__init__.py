"""Budgeted Gaussian-kernel SVMs: BSGD and BSCA on a budget of support vectors.

``_budget`` is the model buffer, ``_merge_math`` the merge maths and lookup tables,
``_maintain`` budget maintenance (merging, removal, projection), ``_epochs`` the epoch
loop, ``_bsgd``/``_bsca`` the two solvers, ``_checkpoint`` and ``_offset`` what runs
after them, ``svm.py`` ``solve_budget`` and ``BudgetSVC``, ``merging`` the public merge
maths.  See docs/architecture.md.
"""
from pybudget.budget import merging
from pybudget.budget.svm import BudgetResult, BudgetSVC, solve_budget

__all__ = ["BudgetSVC", "BudgetResult", "solve_budget", "merging"]
