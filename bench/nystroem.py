"""Budgeted SVMs against a kernel model of the same size: Nystroem(m = B) + a linear SVM.

The practitioner's comparison: scikit-learn's ``Nystroem(n_components=B)``
(B random landmarks, features whitened by K_BB^(-1/2)) with the fastest exact linear
solvers on its dense features, scikit-learn's ``LinearSVC`` (``dual=False``: liblinear's
primal Newton on the squared hinge; ``dual=True``: its dual CD on the hinge) and
pybudget's ``LinearSVC`` (hinge and squared hinge, ``selection="auto"``); LIBSVM's exact
SVM (libsvm-official) as the ceiling, once per data set; and ``BudgetSVC`` with budget B
(BSGD and BSCA, defaults, ``refit=True`` and ``refit="hinge"``).  The same data, C and gamma
(bench/budget.py's PARAMS), B in ``--budgets``, seeds ``--seeds`` (the seed of the
landmarks and of the budgeted solvers).

Every cell (method, data set, B, seed) runs in a fresh child process, so that its peak
memory (VmHWM from /proc/self/status, which a child does not inherit) is its own; the
cells of one seed run one after another, method after method (interleaved), and the
tables give medians over seeds.  All solvers single-threaded (OMP_NUM_THREADS=1,
OPENBLAS_NUM_THREADS=1), as in bench/budget.py.

- fit time: the whole fit (Nystroem's fit and transform of the training rows included);
- accuracy: on the test file, median and worst seed;
- prediction time per 100,000 rows (Nystroem's transform included);
- peak memory: the child's VmHWM after the fit and prediction, and after loading the
  data (before the fit).

Writes <out>/nystroem.json (machine, versions, parameters, raw runs) and .md (tables).

    python bench/nystroem.py [--data a9a ijcnn1 w8a] [--budgets 500 2000]
                             [--seeds 0 1 2 3 4] [--methods ...] [--no-libsvm] [--out DIR]
    python bench/nystroem.py --quick      # 2,000 rows of a9a, B = 50, one seed: seconds
"""
import argparse
import json
import os
import subprocess
import sys
import time
import warnings

import numpy as np

from common import machine, results_dir, write_outputs

PARAMS = {"a9a": (32.0, 2.0 ** -7), "ijcnn1": (32.0, 2.0), "w8a": (8.0, 0.03)}  # budget.py
NYSTROEM = {"nystroem+sk-primal": "scikit-learn LinearSVC(dual=False), squared hinge",
            "nystroem+sk-dual": "scikit-learn LinearSVC(dual=True, loss='hinge')",
            "nystroem+pb-hinge": "pybudget LinearSVC(loss='hinge')",
            "nystroem+pb-sqhinge": "pybudget LinearSVC(loss='squared_hinge')"}
BUDGET = {"budget-bsgd": {}, "budget-bsgd-refit": {"refit": True},
          "budget-bsgd-refit-hinge": {"refit": "hinge"},
          "budget-bsca": {"solver": "bsca"},
          "budget-bsca-refit": {"solver": "bsca", "refit": True},
          "budget-bsca-refit-hinge": {"solver": "bsca", "refit": "hinge"}}
METHODS = [*NYSTROEM, *BUDGET]
# scikit-learn's dual CD on the hinge reached its iteration cap at C = 32 already in the
# quick run (a ConvergenceWarning): on request only
DEFAULT_METHODS = [m for m in METHODS if m != "nystroem+sk-dual"]
QUICK_ROWS = 2000


def vm_hwm_mb():
    """This process's peak resident memory (VmHWM) in MB, None off Linux."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


def load_data(name, limit):
    from pybudget.datasets import load
    X, y, Xt, yt = load(name)
    if limit:
        X, y, Xt, yt = X[:limit], y[:limit], Xt[:limit], yt[:limit]
    return X.tocsr(), y, Xt.tocsr(), yt


def make_model(method, C, gamma, B, seed):
    if method == "libsvm":
        return None
    if method in BUDGET:
        from pybudget import BudgetSVC
        return BudgetSVC(C=C, gamma=gamma, budget=B, random_state=seed, **BUDGET[method])
    from sklearn.kernel_approximation import Nystroem
    from sklearn.pipeline import make_pipeline
    if method == "nystroem+sk-primal":
        from sklearn.svm import LinearSVC
        svm = LinearSVC(C=C, dual=False)
    elif method == "nystroem+sk-dual":
        from sklearn.svm import LinearSVC
        svm = LinearSVC(C=C, dual=True, loss="hinge")
    else:
        from pybudget import LinearSVC
        svm = LinearSVC(C=C, loss="hinge" if method == "nystroem+pb-hinge"
                        else "squared_hinge")
    return make_pipeline(Nystroem(gamma=gamma, n_components=B, random_state=seed), svm)


def run_cell(cell):
    """One fit and prediction in this process; returns the cell's record."""
    X, y, Xt, yt = load_data(cell["data"], cell["limit"])
    mem_data = vm_hwm_mb()
    C, gamma = PARAMS[cell["data"]]
    rec = dict(cell)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if cell["method"] == "libsvm":
            from libsvm import svmutil
            prob = svmutil.svm_problem(y.tolist(), X)
            t0 = time.perf_counter()
            model = svmutil.svm_train(prob, f"-s 0 -t 2 -c {C} -g {gamma} -m 1000 -q")
            rec["fit_time"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            pred, _, _ = svmutil.svm_predict(yt.tolist(), Xt, model, "-q")
            rec["predict_time"] = time.perf_counter() - t0
            pred = np.asarray(pred)
            rec["n_centres"] = int(model.get_nr_sv())
        else:
            model = make_model(cell["method"], C, gamma, cell["B"], cell["seed"])
            t0 = time.perf_counter()
            model.fit(X, y)
            rec["fit_time"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            pred = model.predict(Xt)
            rec["predict_time"] = time.perf_counter() - t0
            rec["n_centres"] = (int(model.support_vectors_.shape[0])
                                if cell["method"] in BUDGET else cell["B"])
    rec["accuracy"] = 100.0 * float(np.mean(pred == yt))
    rec["predict_per_100k"] = rec["predict_time"] * 1e5 / Xt.shape[0]
    rec["peak_mb"], rec["data_mb"] = vm_hwm_mb(), mem_data
    rec["warnings"] = sorted({f"{w.category.__name__}: {str(w.message)[:120]}"
                              for w in caught})
    return rec


def child(cell, attempts=2):
    """Run one cell in a fresh interpreter (its own VmHWM); returns its record, or None
    (with the error on stderr) when every attempt failed."""
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               MKL_NUM_THREADS="1")
    for _ in range(attempts):
        out = subprocess.run([sys.executable, __file__, "--cell", json.dumps(cell)],
                             capture_output=True, text=True, env=env)
        for line in out.stdout.splitlines():
            if line.startswith("CELL "):
                return json.loads(line[5:])
        print(f"cell {cell} failed:\n{out.stderr[-3000:]}", file=sys.stderr)
    return None


def summarise(runs):
    acc = [r["accuracy"] for r in runs]
    return {"accuracy": float(np.median(acc)), "accuracy_worst": float(min(acc)),
            "accuracy_best": float(max(acc)),
            "fit_time": float(np.median([r["fit_time"] for r in runs])),
            "predict_per_100k": float(np.median([r["predict_per_100k"] for r in runs])),
            "peak_mb": float(np.median([r["peak_mb"] or 0.0 for r in runs])),
            "data_mb": float(np.median([r["data_mb"] or 0.0 for r in runs])),
            "n_centres": int(np.median([r["n_centres"] for r in runs])),
            "n_runs": len(runs),
            "warnings": sorted({w for r in runs for w in r["warnings"]})}


def verdicts(summary, data, B):
    """Per budgeted method: the goals against the Nystroem rows of (data, B).
    a9a: median within 0.1 point of Nystroem's best median, worst seed within 0.3, in a
    third of the fastest Nystroem pipeline whose median reaches (best - 0.1).  Others:
    at least Nystroem's best median in a fifth of the fastest Nystroem pipeline."""
    ny = {m: s for (d, b, m), s in summary.items() if d == data and b == B and m in NYSTROEM}
    if not ny:
        return []
    best = max(s["accuracy"] for s in ny.values())
    strict = data != "a9a"
    target = best if strict else best - 0.1
    reach = [s["fit_time"] for s in ny.values() if s["accuracy"] >= target - 1e-9]
    ref_time = min(reach) if reach else min(s["fit_time"] for s in ny.values())
    share = 5.0 if strict else 3.0
    out = []
    for m in BUDGET:
        s = summary.get((data, B, m))
        if s is None:
            continue
        ok_acc = s["accuracy"] >= target - 1e-9
        if not strict:
            ok_acc = ok_acc and s["accuracy_worst"] >= best - 0.3 - 1e-9
        ratio = s["fit_time"] / ref_time
        out.append({"data": data, "B": B, "method": m, "nystroem_best": best,
                    "nystroem_ref_time": ref_time, "accuracy": s["accuracy"],
                    "accuracy_worst": s["accuracy_worst"], "time_ratio": ratio,
                    "met": bool(ok_acc and ratio <= 1.0 / share), "share": share})
    return out


def markdown(record):
    m = record["machine"]
    a = record["args"]
    md = ["# Budgeted SVMs against Nystroem at the same size", "",
          f"{m['platform']}, {m['cpus']} cores shared with other jobs, {m['date']}; "
          f"numpy {m['numpy']}, scipy {m['scipy']}, scikit-learn {m['sklearn']}, "
          f"pybudget {m['pybudget']}, libsvm-official {m.get('libsvm-official')}"
          + (f" (quick smoke run: {QUICK_ROWS} rows of a9a)" if a["quick"] else "") + ".",
          "",
          f"Seeds {a['seeds']} (landmarks and budgeted solvers), medians; every cell a fresh "
          "process, one thread; the cells of a seed interleaved.  Fit time: the whole fit "
          "(Nystroem's transform included).  Prediction: seconds per 100,000 test rows "
          "(transform included).  Memory: the child's peak (VmHWM) after fit and "
          "prediction, and after loading the data.  C, gamma as in bench/budget.py.", "",
          "| data | B | method | accuracy % median [worst] | fit s | predict s /100k | "
          "peak MB (data) | centres |", "|---|---|---|---|---|---|---|---|"]
    for row in record["summary"]:
        s = row
        md.append(f"| {s['data']} | {s['B']} | {s['method']} | {s['accuracy']:.2f} "
                  f"[{s['accuracy_worst']:.2f}] | {s['fit_time']:.2f} | "
                  f"{s['predict_per_100k']:.3f} | {s['peak_mb']:.0f} ({s['data_mb']:.0f}) | "
                  f"{s['n_centres']} |")
    if record["failed"]:
        md += ["", "Failed cells: " + "; ".join(f"{c['data']} B={c['B']} seed={c['seed']} "
                                                 f"{c['method']}" for c in record["failed"])]
    warned = [s for s in record["summary"] if s["warnings"]]
    if warned:
        md += ["", "Warnings: " + "; ".join(f"{s['data']} B={s['B']} {s['method']}: "
                                              f"{' / '.join(s['warnings'])}" for s in warned)]
    if record["verdicts"]:
        md += ["", "Goals (a9a: median >= Nystroem's best median - 0.1, worst "
               "seed >= best - 0.3, time <= 1/3 of the fastest Nystroem pipeline reaching "
               "best - 0.1; ijcnn1, w8a: median >= Nystroem's best median, time <= 1/5 of "
               "the fastest Nystroem pipeline reaching it, or of the fastest one if none "
               "does):", "",
               "| data | B | method | accuracy [worst] | Nystroem best | time / Nystroem "
               "reference (s) | met |", "|---|---|---|---|---|---|---|"]
        for v in record["verdicts"]:
            md.append(f"| {v['data']} | {v['B']} | {v['method']} | {v['accuracy']:.2f} "
                      f"[{v['accuracy_worst']:.2f}] | {v['nystroem_best']:.2f} | "
                      f"{v['time_ratio']:.3f} (of {v['nystroem_ref_time']:.2f}) | "
                      f"{'yes' if v['met'] else 'no'} |")
    return "\n".join(md) + "\n"


def write(args, runs, failed, seconds):
    """Summaries, verdicts and the output files of the runs so far."""
    groups = {}
    for r in runs:
        groups.setdefault((r["data"], r["B"], r["method"]), []).append(r)
    summary = {k: summarise(v) for k, v in groups.items()}
    record = {"machine": machine(), "args": vars(args), "params": PARAMS,
              "methods": {"libsvm": "libsvm-official svm_train -s 0 -t 2 -m 1000",
                          **NYSTROEM, **{k: f"BudgetSVC({v})" for k, v in BUDGET.items()}},
              "summary": [{"data": d, "B": b, "method": m, **s}
                          for (d, b, m), s in summary.items()],
              "verdicts": [v for d in dict.fromkeys(r["data"] for r in runs)
                           for B in args.budgets for v in verdicts(summary, d, B)],
              "runs": runs, "failed": failed, "seconds": seconds}
    try:
        from importlib.metadata import version
        record["machine"]["libsvm-official"] = version("libsvm-official")
    except Exception:
        record["machine"]["libsvm-official"] = None
    write_outputs(args.prefix, record, markdown(record), out_dir=args.out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", nargs="+", default=["a9a", "ijcnn1", "w8a"],
                    choices=list(PARAMS))
    ap.add_argument("--budgets", type=int, nargs="+", default=[500, 2000])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--methods", nargs="+", default=DEFAULT_METHODS, choices=METHODS)
    ap.add_argument("--no-libsvm", action="store_true")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=str(results_dir("nystroem")))
    ap.add_argument("--prefix", default="nystroem")
    ap.add_argument("--cell", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.cell:
        print("CELL " + json.dumps(run_cell(json.loads(args.cell)), default=float))
        return
    limit = None
    if args.quick:
        args.data, args.budgets, args.seeds, limit = ["a9a"], [50], [0], QUICK_ROWS
        args.prefix = "nystroem_quick"
    t_start = time.perf_counter()
    runs, failed = [], []
    for data in args.data:
        cells = []
        if not args.no_libsvm:
            cells.append(dict(data=data, method="libsvm", B=None, seed=None, limit=limit))
        cells += [dict(data=data, method=m, B=B, seed=s, limit=limit)
                  for B in args.budgets for s in args.seeds for m in args.methods]
        for cell in cells:
            rec = child(cell)
            if rec is None:
                failed.append(cell)
                continue
            runs.append(rec)
            print(f"{data} B={cell['B']} seed={cell['seed']} {cell['method']}: "
                  f"{rec['accuracy']:.2f} % in {rec['fit_time']:.2f} s", file=sys.stderr,
                  flush=True)
        # after every data set, so that a long study stopped early keeps what it has
        write(args, runs, failed, time.perf_counter() - t_start)


if __name__ == "__main__":
    main()
