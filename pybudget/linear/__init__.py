"""Linear SVMs by dual coordinate descent.

``_dcd.pxi`` holds the selection strategies (uniform, hard shrinking, AVSF), written
once over the problems of ``_dcd_svm.pxd``, ``_dcd_svr.pxd``, ``_dcd_lr.pxd`` and
``_dcd_cs.pxd``, and compiled once per value type of X (``_dcd64.pyx``, ``_dcd32.pyx``;
``_dual_cd.py`` picks one per fit); ``plan.py`` the measured rules that decide how a
problem is solved (``Plan``) and the checked rows they decide on (``Rows``);
``problem.py`` the problem layer and its solvers (``solve_binary``, which follows a
plan, and ``solve_linear``); ``svm.py`` ``LinearSVC``;
``svr.py`` ``LinearSVR``; ``logistic.py`` ``LogisticRegression``; ``crammer_singer.py``
the joint multi-class problem of ``_dcd_cs.pxd``;
``path.py`` the C grids (``linear_path``, ``cv_grid``).  See docs/architecture.md.
"""
from pybudget._lazy import exports as _exports

# (imported when first used: a Dask worker needs the solvers, not the estimators)
__getattr__, __dir__ = _exports(__name__, {
    "CrammerSingerResult": "pybudget.linear.crammer_singer",
    "solve_crammer_singer": "pybudget.linear.crammer_singer",
    "CVGridResult": "pybudget.linear.path", "cv_grid": "pybudget.linear.path",
    "linear_path": "pybudget.linear.path",
    "LogisticRegression": "pybudget.linear.logistic",
    "LinearResult": "pybudget.linear.problem", "solve_linear": "pybudget.linear.problem",
    "solve_binary": "pybudget.linear.problem",
    "Plan": "pybudget.linear.plan", "Rows": "pybudget.linear.plan",
    "plan_for": "pybudget.linear.plan",
    "LinearSVC": "pybudget.linear.svm", "LinearSVR": "pybudget.linear.svr"})

__all__ = ["LinearSVC", "LinearSVR", "LogisticRegression", "LinearResult", "solve_linear",
           "solve_binary", "Plan", "Rows", "plan_for", "solve_crammer_singer",
           "CrammerSingerResult", "linear_path", "cv_grid", "CVGridResult"]
