"""pybudget: fast SVM training.

Linear SVMs by dual coordinate descent (uniform, liblinear's hard shrinking, AVSF) and
budgeted kernel SVMs.  Public names only; see the README.
"""
from pybudget import merging
from pybudget.kernel import BudgetResult, BudgetSVC, solve_budget
from pybudget.linear import LinearResult, LinearSVC, solve_linear
from pybudget.path import CVGridResult, cv_grid, linear_path
from pybudget.io import load, save
from pybudget.stream import stream_fit

__version__ = "0.1.0"
__all__ = ["LinearSVC", "LinearResult", "solve_linear", "linear_path", "cv_grid",
           "CVGridResult", "BudgetSVC", "BudgetResult", "solve_budget", "merging",
           "save", "load", "stream_fit", "__version__"]
