"""One problem on a Dask cluster: each problem whole on one worker (whole), the
partitions taking turns (ring) with pybudget's dual CD strategies on each, or the primal
Newton solver with its sums over the partitions (newton).

``pip install "pybudget[dask]"`` installs Dask.  The estimators mirror the one-machine
ones (``pybudget.LinearSVC``, ``LogisticRegression``, ``LinearSVR``) and train on Dask
arrays chunked by rows or on LIBSVM shards read on the workers
(:func:`read_svmlight`); ``engine="threads"`` runs the same algorithm in this process
without Dask.  See docs/user_guide.md, "Training on a Dask cluster".
"""
from pybudget._lazy import exports as _exports

# (imported when first used: a worker unpickling its tasks imports this package)
__getattr__, __dir__ = _exports(__name__, {
    **dict.fromkeys(["GeneratedShards", "SvmlightShards", "make_classification",
                     "read_svmlight"], "pybudget.dask._sources"),
    "BudgetSVC": "pybudget.dask.budget",
    "ClusterError": "pybudget.dask.errors",
    "ClusterRules": "pybudget.dask._plan",
    **dict.fromkeys(["LinearSVC", "LinearSVR", "LogisticRegression"],
                    "pybudget.dask.estimators")})

__all__ = ["BudgetSVC", "ClusterError", "ClusterRules", "GeneratedShards", "LinearSVC", "LinearSVR",
           "LogisticRegression", "SvmlightShards", "make_classification", "read_svmlight"]
