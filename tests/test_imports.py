"""What importing pybudget imports: the packages' public names come when first used
(pybudget._lazy), so that a Dask worker, which imports the solvers to run its tasks,
does not import scikit-learn (seconds on a small machine)."""
import subprocess
import sys
import warnings

import numpy as np
import pytest


def _run(code):
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_the_workers_modules_import_no_scikit_learn():
    """Not to import them, nor to parse a LIBSVM shard (pybudget._svmlight)."""
    print(_run("import io, sys; import pybudget.dask._worker, pybudget.dask._whole, "
               "pybudget.dask._host_memory, pybudget.dask._sources; "
               "from pybudget._svmlight import parse; "
               "parse(io.BytesIO(b'1 1:2\\n'), None, False, float, 'x'); "
               "assert 'sklearn' not in sys.modules, 'imported sklearn'"))


@pytest.mark.parametrize("package", ["pybudget", "pybudget.linear", "pybudget.dask"])
def test_public_names_come_when_used(package):
    """Every name of __all__ is there, in dir() and by a star import; others raise
    AttributeError."""
    module = __import__(package, fromlist=["_"])
    for name in module.__all__:
        assert getattr(module, name) is not None
        assert name in dir(module)
    space = {}
    exec(f"from {package} import *", space)
    assert set(module.__all__) <= set(space)
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        module.nothing_here


def test_the_subpackages_are_attributes_as_before():
    """After ``import pybudget`` alone (a fresh process), pybudget.linear and the
    others are there, as when the package imported them all."""
    _run("import pybudget; pybudget.linear.solve_linear, pybudget.budget.BudgetSVC; "
         "pybudget.io.save, pybudget.stream.stream_fit; pybudget.merging.h")


def test_merging_is_where_it_always_was():
    import pybudget.budget.merging
    import pybudget.merging
    assert pybudget.merging is pybudget.budget.merging


@pytest.mark.cluster
def test_a_dask_fit_leaves_its_workers_without_scikit_learn(tmp_path):
    """Fresh worker processes: Dask-array chunks checked, rows copied, a problem solved
    (method "whole") and the ring run, LIBSVM shards parsed, without scikit-learn on the
    workers."""
    distributed = pytest.importorskip("distributed")
    da = pytest.importorskip("dask.array")
    import pybudget.dask as pbd
    from helpers import make_problem
    X, y = make_problem(n=200, d=30, seed=0)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        Xd = da.from_array(X, chunks=(50, X.shape[1]), asarray=False)
        yd = da.from_array(np.asarray(y), chunks=50)
        for method in ("whole", "ring"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")      # (50 rounds: not to convergence)
                pbd.LinearSVC(client=client, method=method, tol=1e-2, max_iter=50,
                              random_state=0).fit(Xd, yd)
        paths, dense = [], X.toarray()
        for k in range(2):
            paths.append(tmp_path / f"part-{k}.svm")
            paths[-1].write_text("".join(
                f"{y[i]:g} "
                + " ".join(f"{j + 1}:{float(dense[i, j])!r}" for j in range(X.shape[1]))
                + "\n" for i in range(k * 100, (k + 1) * 100)))
        pbd.LinearSVC(client=client, random_state=0).fit(
            pbd.read_svmlight([str(p) for p in paths], n_features=X.shape[1]))
        assert not any(client.run(lambda: "sklearn" in sys.modules).values())
