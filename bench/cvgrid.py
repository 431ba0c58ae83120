"""Cross-validated C grid: n_jobs=1 against n_jobs=2 (and optionally a local dask
cluster) with the same call.

    python bench/cvgrid.py [--data debian-lib] [--cv 5] [-r 3] [--dask] [--quick]
"""
import argparse
import sys
import time

import numpy as np

from common import machine, results_dir, write_outputs
from pybudget import cv_grid
from pybudget._core import _validation as V
from pybudget.cgrid import DEFAULT_CS
from pybudget.datasets import load


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="debian-lib")
    ap.add_argument("--C", type=float, nargs="+", default=list(DEFAULT_CS))
    ap.add_argument("--cv", type=int, default=5)
    ap.add_argument("--tol", type=float, default=0.01)
    ap.add_argument("--selection", default="auto")
    ap.add_argument("-r", "--repeats", type=int, default=3)
    ap.add_argument("--dask", action="store_true", help="also run on a local dask cluster")
    ap.add_argument("--quick", action="store_true", help="smoke run on embedded a9a")
    ap.add_argument("--out", default=str(results_dir("cgrid")))
    a = ap.parse_args()
    if a.quick:
        a.data, a.C, a.repeats, a.cv = "a9a", [0.01, 0.1], 1, 3
    X, y, _, _ = load(a.data)
    X = V.as_csr(X)
    kw = dict(cv=a.cv, tol=a.tol, selection=a.selection, max_iter=1000000, fit_intercept=False)
    times = {1: [], 2: []}
    results = {}
    for rep in range(a.repeats):
        for n_jobs in (1, 2):
            t0 = time.perf_counter()
            res = cv_grid(X, y, a.C, n_jobs=n_jobs, **kw)
            times[n_jobs].append(time.perf_counter() - t0)
            results[n_jobs] = res
            print(f"n_jobs={n_jobs} #{rep}: {times[n_jobs][-1]:.2f}s best C {res.best_C:g}",
                  file=sys.stderr, flush=True)
    rec = {"machine": machine(), "params": vars(a),
           "times_n_jobs_1": times[1], "times_n_jobs_2": times[2],
           "ratio": float(np.median(times[2]) / np.median(times[1])),
           "best_C": results[1].best_C, "mean_accuracy": results[1].mean_accuracy.tolist(),
           "same_result": bool(np.allclose(results[1].fold_accuracy, results[2].fold_accuracy))}
    if a.dask:
        import joblib
        from dask.distributed import Client, LocalCluster
        with LocalCluster(n_workers=2, threads_per_worker=1,
                          dashboard_address=None) as cl, Client(cl):
            with joblib.parallel_config(backend="dask"):
                t0 = time.perf_counter()
                res = cv_grid(X, y, a.C, **kw)
                rec["dask_time"] = time.perf_counter() - t0
                rec["dask_same_result"] = bool(np.allclose(res.fold_accuracy,
                                                           results[1].fold_accuracy))
    md = [f"# {a.cv}-fold cross-validated C grid on {a.data} "
          f"(selection {a.selection}, tol {a.tol:g})", "",
          "| n_jobs | median s | runs |", "|---|---|---|",
          f"| 1 | {np.median(times[1]):.2f} | {', '.join(f'{t:.2f}' for t in times[1])} |",
          f"| 2 | {np.median(times[2]):.2f} | {', '.join(f'{t:.2f}' for t in times[2])} |", "",
          f"Ratio n_jobs=2 / n_jobs=1: **{rec['ratio']:.2f}**; "
          f"identical fold accuracies: {rec['same_result']}.",
          f"Best C {rec['best_C']:g}; mean accuracy per C: "
          + ", ".join(f"{c:g}: {100 * m:.2f} %" for c, m in zip(a.C, rec["mean_accuracy"]))]
    if a.dask:
        md.append(f"\nLocal dask cluster (2 worker processes): {rec['dask_time']:.2f}s, "
                  f"same result: {rec['dask_same_result']}.")
    write_outputs("cvgrid_" + ("quick" if a.quick else a.data), rec, "\n".join(md) + "\n",
                  **({"out_dir": a.out} if a.out else {}))


if __name__ == "__main__":
    main()
