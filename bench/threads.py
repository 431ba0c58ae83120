"""threads: one binary problem on 1 and 2 threads, pybudget (n_jobs) against
liblinear-multicore (-m), interleaved, training time only.

Studies:

- ``speed``: LinearSVC's problem (``solve_linear``, bias on, C as listed, the default
  strategy or AVSF) on debian-lib, a9a, ijcnn1 and w8a.  Each repetition runs, in turn
  (the order alternates), pybudget n_jobs=1 and n_jobs=2 in this process and
  liblinear-multicore ``-m 1`` and ``-m 2`` each in a subprocess of its own Python (its
  module is named ``liblinear``, like liblinear-official's, so it lives in a virtual
  environment of its own: ``--multicore-python``; without it the peer's columns are
  empty).  The peer runs at the loosest of ``-e`` 0.1 (its default), 0.01,
  0.001, 1e-4, 1e-5, 1e-6 whose primal is at most pybudget's at its default ``tol``
  (found by untimed runs first): both are timed to the same quality, or the peer to its
  tightest.  Times are the solvers' own (pybudget: ``res.time``; liblinear: around
  ``train``); primal objectives ``1/2 |w|^2 + C sum loss`` with the bias weight
  regularised, both computed here from the returned weights.
- ``newton``: the same comparison for the smooth losses where ``selection="auto"`` runs
  the primal Newton solver (a9a, ijcnn1, w8a, and two synthetic 200,000-row sets above
  its threads threshold; squared hinge and logistic, C = 1), against
  liblinear-multicore's primal Newton solvers (``-s 2`` and ``-s 0``).
- ``fallback``: ``LinearSVC()`` defaults (``LinearSVR()`` on the regression set) with
  ``n_jobs=-1`` against ``n_jobs=1`` on every training set of ``$PYBUDGET_DATA`` (the
  "never slower" check).

Medians of r repetitions with their spread.  ``--quick``: a synthetic problem, seconds.
Writes bench/results/threads/.

    PYBUDGET_DATA=... python bench/threads.py [--study speed newton fallback] [-r 7]
        [--multicore-python VENV/bin/python] [--quick] [--out DIR]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
import scipy.sparse as sp

from common import machine, median_min_max, results_dir, write_outputs

SPEED_CELLS = [  # (data, loss, C, selection)
    ("debian-lib", "hinge", 1.0, "auto"),
    ("debian-lib", "squared_hinge", 1.0, "auto"),
    ("debian-lib", "hinge", 100.0, "avsf"),
    ("debian-lib", "hinge", 1000.0, "avsf"),
    ("a9a", "hinge", 1.0, "auto"),
    ("ijcnn1", "hinge", 1.0, "auto"),
    ("w8a", "hinge", 1.0, "auto"),
]
NEWTON_CELLS = [(data, loss, 1.0, "auto")
                for data in ("a9a", "ijcnn1", "w8a", "dense-200k", "sparse-200k")
                for loss in ("squared_hinge", "logistic")]
LIBLINEAR_SOLVER = {"hinge": 3, "squared_hinge": 1}          # the duals
PRIMAL_SOLVER = {"squared_hinge": 2, "logistic": 0}         # the primal Newton solvers

# Run by the peer's Python: reads X, y from an .npz, trains, prints the time and w.
PEER = r"""
import json, sys, time
import numpy as np, scipy.sparse as sp
from liblinear.liblinearutil import parameter, problem, train
d = np.load(sys.argv[1])
X = sp.csr_matrix((d["data"], d["indices"], d["indptr"]), shape=tuple(d["shape"]))
prob = problem(d["y"].tolist(), X)
param = parameter(sys.argv[2])      # (-B 1 there: train() sets the problem's bias from it)
t0 = time.perf_counter()
m = train(prob, param)
t = time.perf_counter() - t0
# the decision function of label[0]; liblinear's features end at the largest index used
w, b = m.get_decfun()
w = np.concatenate([w, np.zeros(X.shape[1] - len(w))])
sign = 1.0 if m.label[0] == 1 else -1.0
print(json.dumps({"time": t, "w": (sign * w).tolist(), "b": sign * b}))
"""


def load_binary(name):
    if name in ("dense-200k", "sparse-200k"):
        # above the Newton route's threads threshold: 200,000 x 50 dense (the cluster's
        # peer study's set) and 200,000 x 100 at 30 % (6 M non-zeros)
        rng = np.random.default_rng(0)
        if name == "dense-200k":
            X = sp.csr_matrix(rng.standard_normal((200_000, 50)))
        else:
            X = sp.random(200_000, 100, density=0.3, format="csr", random_state=0)
            X.data = rng.normal(size=X.data.shape)
        z = X @ rng.standard_normal(X.shape[1]) + rng.logistic(size=X.shape[0])
        return X, np.where(z > 0, 1.0, -1.0)
    if name == "synthetic":
        from sklearn.datasets import make_classification
        X, y = make_classification(n_samples=12000, n_features=40, n_informative=20,
                                   flip_y=0.0, class_sep=2.0, random_state=0)
        return sp.csr_matrix(X), np.where(y > 0, 1.0, -1.0)
    from pybudget.datasets import load
    X, y, _, _ = load(name)
    return X, np.where(y == y.max(), 1.0, -1.0)


def primal(X, y, coef, intercept, C, loss):
    margin = 1.0 - y * (X @ coef + intercept)
    loss_sum = np.maximum(margin, 0.0)
    if loss == "squared_hinge":
        loss_sum = loss_sum ** 2
    elif loss == "logistic":
        loss_sum = np.logaddexp(0.0, margin - 1.0)
    return float(0.5 * (coef @ coef + intercept ** 2) + C * loss_sum.sum())


def pybudget_fit(X, y, loss, C, selection, n_jobs):
    from pybudget import solve_linear
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = solve_linear(X, y, C, loss=loss, selection=selection, fit_intercept=True,
                         random_state=0, n_jobs=n_jobs)
    return {"time": r.time, "primal": primal(X, y, r.coef, r.intercept, C, loss),
            "sweeps": r.n_iter, "threads": r.threads, "selection": r.selection,
            "converged": bool(r.converged)}


PEER_EPS = (0.1, 0.01, 0.001, 1e-4, 1e-5, 1e-6)


def peer_fit(python, npz, X, y, loss, C, threads, eps=0.1, solvers=LIBLINEAR_SOLVER):
    opts = f"-s {solvers[loss]} -c {C:g} -e {eps:g} -B 1 -m {threads} -q"
    out = subprocess.run([python, "-c", PEER, npz, opts], capture_output=True, text=True,
                         timeout=3600)
    if out.returncode:
        raise RuntimeError(f"liblinear-multicore failed: {out.stderr[-2000:]}")
    rec = json.loads(out.stdout.strip().splitlines()[-1])
    return {"time": rec["time"], "primal": primal(X, y, np.array(rec["w"]), rec["b"], C, loss)}


def summary(runs):
    med, lo, hi = median_min_max([r["time"] for r in runs])
    return {"median": med, "min": lo, "max": hi, "primal": runs[0]["primal"]}


def speed(cells, reps, python, quick, solvers=LIBLINEAR_SOLVER):
    rows = []
    for data, loss, C, selection in cells:
        X, y = load_binary(data)
        with tempfile.TemporaryDirectory() as tmp:
            npz = os.path.join(tmp, "xy.npz")
            np.savez(npz, data=X.data, indices=X.indices, indptr=X.indptr,
                     shape=np.array(X.shape), y=y)
            runs = {k: [] for k in ("pb1", "pb2", "mc1", "mc2")}
            # the peer's stopping point: its loosest -e (from 0.1, its default) whose
            # primal is at most pybudget's (untimed runs first), so that both are timed
            # to the same quality
            target = pybudget_fit(X, y, loss, C, selection, 1)["primal"]
            eps = None
            for e in PEER_EPS if python else ():
                eps = e
                if (peer_fit(python, npz, X, y, loss, C, 2, e, solvers)["primal"]
                        <= target * (1 + 1e-6)):
                    break
            for r in range(reps):
                order = ["pb1", "pb2", "mc1", "mc2"]
                for k in (order if r % 2 == 0 else order[::-1]):
                    if k.startswith("pb"):
                        runs[k].append(pybudget_fit(X, y, loss, C, selection, int(k[2])))
                    elif python:
                        runs[k].append(peer_fit(python, npz, X, y, loss, C, int(k[2]), eps,
                                                solvers))
        row = {"data": data, "loss": loss, "C": C, "selection": selection,
               "used": runs["pb2"][0]["selection"], "threads": runs["pb2"][0]["threads"],
               "sweeps_1": runs["pb1"][0]["sweeps"], "sweeps_2": runs["pb2"][0]["sweeps"],
               "peer_eps": eps, "runs": runs}
        for k, v in runs.items():
            if v:
                row[k] = summary(v)
        row["speedup"] = row["pb1"]["median"] / row["pb2"]["median"]
        if "mc2" in row:
            row["mc_speedup"] = row["mc1"]["median"] / row["mc2"]["median"]
            row["vs_mc2"] = row["pb2"]["median"] / row["mc2"]["median"]
        print(f"{data} {loss} C={C:g} {selection}: pybudget {row['pb1']['median']:.3f} / "
              f"{row['pb2']['median']:.3f} s ({row['threads']} threads, x{row['speedup']:.2f})"
              + (f"; liblinear-multicore {row['mc1']['median']:.3f} / "
                 f"{row['mc2']['median']:.3f} s" if "mc2" in row else ""), flush=True)
        rows.append(row)
    return rows


def fallback(names, reps):
    from pybudget import LinearSVC, LinearSVR, LogisticRegression
    from pybudget.datasets import load
    rows = []
    for name in names:
        X, y, _, _ = load(name)
        # (real-valued targets: the regression set, LinearSVR's defaults; classification:
        # LinearSVC's and LogisticRegression's, whose "auto" may run the Newton route)
        regression = not np.array_equal(y, np.round(y)) or np.unique(y).size > 100
        for make in (LinearSVR,) if regression else (LinearSVC, LogisticRegression):
            rows.append(_fallback_one(name, X, y, make, regression, reps))
    return rows


def _fallback_one(name, X, y, make, regression, reps):
    """n_jobs=-1 against n_jobs=1 with the defaults of ``make``, interleaved."""
    times = {1: [], -1: []}
    for r in range(reps):
        for n_jobs in ((1, -1) if r % 2 == 0 else (-1, 1)):
            est = make(random_state=0, n_jobs=n_jobs)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t0 = time.perf_counter()
                est.fit(X, y)
                times[n_jobs].append(time.perf_counter() - t0)
    m1, ma = np.median(times[1]), np.median(times[-1])
    print(f"{name} {make.__name__}: n_jobs=1 {m1:.3f} s, n_jobs=-1 {ma:.3f} s, ratio "
          f"{ma / m1:.2f}", flush=True)
    return {"data": name, "estimator": make.__name__,
            "classes": 0 if regression else int(np.unique(y).size), "times_1": times[1],
            "times_all": times[-1], "median_1": float(m1), "median_all": float(ma),
            "ratio": float(ma / m1)}


def markdown(record):
    reps, lines = record["repeats"], []
    for study, title in (("speed", "One binary problem on 1 and 2 threads"),
                         ("newton", "The primal Newton route on 1 and 2 threads, against "
                          "liblinear-multicore's primal solvers (-s 2, -s 0)")):
        if not record.get(study):
            continue
        lines += [f"### {title} (training time, medians of {reps} "
                  "interleaved runs, min-max in brackets)", "",
                  "| data, loss, C, strategy | pybudget n_jobs=1 (s) | n_jobs=2 (s) | "
                  "threads | speed-up | iterations 1 / 2 | liblinear-multicore -e | -m 1 (s) | "
                  "-m 2 (s) | its speed-up | pybudget 2 / mc 2 | primal: pybudget 2, mc 2 |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in record[study]:
            def cell(k):
                s = r.get(k)
                return f"{s['median']:.3f} [{s['min']:.3f}-{s['max']:.3f}]" if s else "-"
            mc = "mc2" in r
            lines.append(
                f"| {r['data']}, {r['loss']}, {r['C']:g}, {r['selection']} ({r['used']}) | "
                f"{cell('pb1')} | {cell('pb2')} | {r['threads']} | {r['speedup']:.2f} | "
                f"{r['sweeps_1']} / {r['sweeps_2']} | {r['peer_eps']:g} | {cell('mc1')} | "
                f"{cell('mc2')} | "
                f"{r['mc_speedup']:.2f} | {r['vs_mc2']:.2f} | "
                f"{r['pb2']['primal']:.6g}, {r['mc2']['primal']:.6g} |" if mc else
                f"| {r['data']}, {r['loss']}, {r['C']:g}, {r['selection']} ({r['used']}) | "
                f"{cell('pb1')} | {cell('pb2')} | {r['threads']} | {r['speedup']:.2f} | "
                f"{r['sweeps_1']} / {r['sweeps_2']} | - | - | - | - | - | "
                f"{r['pb2']['primal']:.6g}, - |")
        lines.append("")
    if record.get("fallback"):
        lines += [f"### Defaults, n_jobs=-1 against n_jobs=1 (medians of {reps})",
                  "", "| data | estimator | classes | n_jobs=1 (s) | n_jobs=-1 (s) | ratio |",
                  "|---|---|---|---|---|---|"]
        for r in record["fallback"]:
            lines.append(f"| {r['data']} | {r['estimator']} | {r['classes'] or '-'} | "
                         f"{r['median_1']:.3f} | "
                         f"{r['median_all']:.3f} | {r['ratio']:.2f} |")
        lines.append("")
    lines.append(f"{os.cpu_count()} cores; load average before {record['load'][0]:.2f}, "
                 f"after {record['load'][1]:.2f}.")
    return "\n".join(lines) + "\n"


def data_names():
    """Every benchmark training set (``available()`` less the embedded copies and the
    files it also lists by their own names)."""
    from pybudget.datasets import EMBEDDED, available
    names = [n for n in available() if n not in EMBEDDED or n == "a9a"]
    return sorted({n for n in names if not n.endswith((".train", ".test"))})


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--study", nargs="+", default=["speed"],
                    choices=["speed", "newton", "fallback"])
    ap.add_argument("-r", "--repeats", type=int, default=7)
    ap.add_argument("--multicore-python", default=os.environ.get("LIBLINEAR_MULTICORE_PYTHON"),
                    help="a Python with liblinear-multicore installed")
    ap.add_argument("--only", nargs="+",
                    help="speed: only these data sets (or DATA:C, e.g. debian-lib:1)")
    ap.add_argument("--stem", default="threads")
    ap.add_argument("--quick", action="store_true", help="smoke run on synthetic data")
    ap.add_argument("--out", default=str(results_dir("threads")))
    a = ap.parse_args()
    reps = 1 if a.quick else a.repeats
    load0 = os.getloadavg()[0]
    record = {"machine": machine(), "repeats": reps, "multicore_python": a.multicore_python}
    if "speed" in a.study:
        cells = ([("synthetic", "hinge", 0.1, "auto")] if a.quick else
                 [c for c in SPEED_CELLS
                  if not a.only or c[0] in a.only or f"{c[0]}:{c[2]:g}" in a.only])
        record["speed"] = speed(cells, reps, a.multicore_python, a.quick)
    if "newton" in a.study:
        cells = ([("synthetic", "logistic", 1.0, "auto")] if a.quick else
                 [c for c in NEWTON_CELLS if not a.only or c[0] in a.only])
        record["newton"] = speed(cells, reps, a.multicore_python, a.quick, PRIMAL_SOLVER)
    if "fallback" in a.study:
        record["fallback"] = fallback(["a9a"] if a.quick else data_names(), reps)
    record["load"] = [load0, os.getloadavg()[0]]
    write_outputs(a.stem + ("_quick" if a.quick else ""), record, markdown(record), a.out)


if __name__ == "__main__":
    sys.exit(main())
