"""Linear SVMs by dual coordinate descent.

``_dcd.pxi`` holds the selection strategies (uniform, hard shrinking, AVSF), written
once over the problems of ``_dcd_svm.pxd``, ``_dcd_svr.pxd``, ``_dcd_lr.pxd`` and
``_dcd_cs.pxd``, and compiled once per value type of X (``_dcd64.pyx``, ``_dcd32.pyx``;
``_dual_cd.py`` picks one per fit); ``svm.py`` the Python solver (``solve_linear``) and
``LinearSVC``;
``svr.py`` ``LinearSVR``; ``logistic.py`` ``LogisticRegression``; ``crammer_singer.py``
the joint multi-class problem of ``_dcd_cs.pxd``;
``path.py`` the C grids (``linear_path``, ``cv_grid``).  See docs/architecture.md.
"""
from pybudget.linear.crammer_singer import CrammerSingerResult, solve_crammer_singer
from pybudget.linear.path import CVGridResult, cv_grid, linear_path
from pybudget.linear.logistic import LogisticRegression
from pybudget.linear.problem import LinearResult, solve_linear
from pybudget.linear.svm import LinearSVC
from pybudget.linear.svr import LinearSVR

__all__ = ["LinearSVC", "LinearSVR", "LogisticRegression", "LinearResult", "solve_linear",
           "solve_crammer_singer", "CrammerSingerResult", "linear_path", "cv_grid",
           "CVGridResult"]
