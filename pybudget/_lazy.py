"""Public names of a package imported when first used (PEP 562), so that importing one
module of pybudget does not import them all.

A Dask worker unpickles its tasks from ``pybudget.dask._worker``, which imports the
packages above it; with every estimator imported there, each fresh worker also imported
scikit-learn (2.4-2.9 s on a 2-core machine, with pandas installed: scikit-learn then
imports pandas and pyarrow), which the solvers do not need.  So the packages name their
public objects here instead of importing them, and the solver layer imports scikit-learn
only inside the functions that use it (input checks, warnings); the LIBSVM reader is
our own (_core/_libsvm_text.pyx).
"""
import importlib


def exports(package, where, submodules=()):
    """``__getattr__`` and ``__dir__`` for ``package`` (its ``__name__``) whose public
    names live in the modules ``where`` gives ({name: module}), and whose ``submodules``
    are reachable as attributes without an import of their own (as when the package
    imported them); each is imported on first use and then kept in the package's
    namespace."""
    namespace = importlib.import_module(package).__dict__

    def __getattr__(name):
        if name in submodules:
            return importlib.import_module(f"{package}.{name}")   # (sets the attribute)
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__():
        return sorted(set(namespace) | set(where) | set(submodules))

    return __getattr__, __dir__
