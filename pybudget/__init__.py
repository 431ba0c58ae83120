"""pybudget: fast SVM training.

Linear SVMs by dual coordinate descent (uniform, liblinear's hard shrinking, AVSF) and
budgeted kernel SVMs.  Public names only; see the README.
"""
from pybudget.linear import LinearResult, LinearSVC, solve_linear

__version__ = "0.1.0"
__all__ = ["LinearSVC", "LinearResult", "solve_linear", "__version__"]
