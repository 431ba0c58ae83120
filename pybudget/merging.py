"""``import pybudget.merging``: the budget's merging routines, where they always were
(the module is ``pybudget.budget.merging`` itself, not a copy)."""
import sys

from pybudget.budget import merging as _merging

sys.modules[__name__] = _merging
