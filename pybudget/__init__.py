"""pybudget: fast SVM training.

Linear SVMs by dual coordinate descent (uniform, liblinear's hard shrinking, AVSF) and
budgeted kernel SVMs.  Public names only; see the README.
"""


def _installed_instead():
    """The installed pybudget's import spec when this folder is an unbuilt source tree.

    ``python -m pybudget`` at the root of a checkout puts the checkout first on sys.path,
    so its pybudget/ (Cython sources, no compiled extensions) would shadow the package
    that ``pip install .`` installed.  Returns None when this folder is built in place
    (development) or nothing else is installed."""
    import importlib.machinery
    import os
    import sys
    here = os.path.dirname(os.path.abspath(__file__))
    if any(os.path.exists(os.path.join(here, "_core", "_csr" + suffix))
           for suffix in importlib.machinery.EXTENSION_SUFFIXES):
        return None
    root = os.path.dirname(here)
    elsewhere = [p for p in sys.path if os.path.abspath(p or os.curdir) != root]
    spec = importlib.machinery.PathFinder.find_spec(__name__, elsewhere)
    if spec is None or spec.origin is None or os.path.dirname(spec.origin) == here:
        raise ImportError(f"pybudget in {here} is not built and no installed copy was "
                          "found: run 'pip install .' (or 'python setup.py build_ext "
                          "--inplace' to develop in place)")
    return spec


_spec = _installed_instead()
if _spec is not None:
    # hand over: the import system returns what sys.modules holds once this file ends
    import importlib.util as _util
    import sys as _sys
    _module = _util.module_from_spec(_spec)
    _sys.modules[__name__] = _module
    _spec.loader.exec_module(_module)
else:
    from pybudget._lazy import exports as _exports

    # (imported when first used: pybudget._lazy)
    __getattr__, __dir__ = _exports(__name__, {
        **dict.fromkeys(["BudgetResult", "BudgetSVC", "merging", "solve_budget"],
                        "pybudget.budget"),
        **dict.fromkeys(["load", "save"], "pybudget.io"),
        **dict.fromkeys(["CrammerSingerResult", "CVGridResult", "LinearResult", "LinearSVC",
                         "LinearSVR", "LogisticRegression", "cv_grid", "linear_path",
                         "solve_crammer_singer", "solve_linear"], "pybudget.linear"),
        "stream_fit": "pybudget.stream"},
        submodules=("budget", "io", "linear", "stream"))

    __version__ = "0.1.0"
    __all__ = ["LinearSVC", "LinearSVR", "LogisticRegression", "LinearResult", "solve_linear",
               "solve_crammer_singer", "CrammerSingerResult", "linear_path", "cv_grid",
               "CVGridResult", "BudgetSVC", "BudgetResult", "solve_budget", "merging", "save",
               "load", "stream_fit", "__version__"]
