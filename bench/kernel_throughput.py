"""Kernel throughput of the budgeted solvers' hot loop.

1. Kernel values per second computed one training step at a time (what BSGD/BSCA do:
   the Gaussian kernel row of one sparse point against the B SVs, then the margin), by
   ``BudgetModel.decision_stream``, against the same values computed in bulk by scipy
   (sparse X @ dense Z.T, in chunks of 8192 rows) plus numpy's exp.
2. One BSGD epoch (golden-section merging, tol 0.01) at B = 500 on ijcnn1 and a9a:
   median of 3 seeds.  ``--before FILE`` merges the epoch times of an earlier build
   (a JSON written by ``--epochs-only`` under that build) into the table.

Writes bench/results/kernel_throughput/kernel_throughput.json and .md.

    python bench/kernel_throughput.py [--data ijcnn1 w8a] [--epoch-data ijcnn1 a9a]
    python bench/kernel_throughput.py --quick      # smoke run, a few seconds
"""
import argparse
import json
import sys
import time

import numpy as np

from common import machine, results_dir, write_outputs
from pybudget.datasets import load

PARAMS = {"ijcnn1": (32.0, 2.0), "a9a": (32.0, 2.0 ** -7), "w8a": (8.0, 0.03)}


def csr(X):
    X = X.tocsr().astype(np.float64)
    X.sum_duplicates()
    X.sort_indices()
    X.indices = X.indices.astype(np.int32)
    return X


def throughput(X, B, gamma, repeats, seed=0):
    """(stepwise values/s, bulk values/s, max relative difference of the margins)."""
    from pybudget.budget._budget import BudgetModel
    rng = np.random.default_rng(seed)
    n, d = X.shape
    rows = rng.choice(n, size=B, replace=False)
    Z = X[rows].toarray()
    beta = rng.uniform(-1, 1, B)
    mdl = BudgetModel(d, 1, B, gamma)
    mdl.load(Z, beta[:, None])
    xsq = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    sqn = (Z ** 2).sum(1)
    ZT = np.ascontiguousarray(Z.T)
    t_step, t_bulk = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        f_step = mdl.decision_stream(X, xsq)
        t_step.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        f_bulk = np.empty(n)
        for a in range(0, n, 8192):
            Xa = X[a:a + 8192]
            K = Xa @ ZT                      # sparse x dense -> dense (rows x B)
            K *= -2.0
            K += xsq[a:a + 8192, None]
            K += sqn[None, :]
            np.maximum(K, 0.0, out=K)
            K *= -gamma
            np.exp(K, out=K)
            f_bulk[a:a + 8192] = K @ beta
        t_bulk.append(time.perf_counter() - t0)
    err = float(np.max(np.abs(f_step - f_bulk)) / max(np.max(np.abs(f_bulk)), 1e-300))
    vals = n * B
    return (vals / np.median(t_step), vals / np.median(t_bulk), err, np.median(t_step),
            np.median(t_bulk))


def epoch_times(name, X, y, B, seeds):
    from pybudget import solve_budget
    C, gamma = PARAMS.get(name, (32.0, 2.0 ** -7))
    out = []
    for s in seeds:
        r = solve_budget(X, y, C=C, gamma=gamma, budget=B, epochs=1, random_state=s,
                         offset=False, averaging="none")
        out.append({"seed": s, "time": r.time, "merge_time": r.merge_time,
                    "n_merges": r.n_merges})
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", nargs="+", default=["ijcnn1", "w8a"])
    ap.add_argument("--epoch-data", nargs="+", default=["ijcnn1", "a9a"])
    ap.add_argument("--budget", type=int, default=500)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--epochs-only", action="store_true",
                    help="only the epoch times (to record an earlier build for --before)")
    ap.add_argument("--before", help="JSON of epoch times from an earlier build")
    ap.add_argument("--out", default=str(results_dir("kernel_throughput")))
    ap.add_argument("--stem", default=None)
    args = ap.parse_args()
    limit = None
    if args.quick:
        args.data, args.epoch_data = ["a9a"], ["a9a"]
        args.budget, args.repeats, args.seeds, limit = 100, 1, [0], 3000
    data = {}

    def get(name):
        if name not in data:
            X, y, _, _ = load(name)
            X = csr(X)
            if limit:
                X, y = X[:limit], y[:limit]
            data[name] = (X, y)
        return data[name]

    record = {"machine": machine(), "budget": args.budget, "quick": args.quick,
              "throughput": [], "epochs": {}}
    if not args.epochs_only:
        for name in args.data:
            X, _ = get(name)
            gamma = PARAMS.get(name, (1.0, 2.0 ** -7))[1]
            st, bu, err, ts, tb = throughput(X, args.budget, gamma, args.repeats)
            record["throughput"].append({"data": name, "n": X.shape[0], "d": X.shape[1],
                                         "nnz_per_row": X.nnz / X.shape[0],
                                         "stepwise_values_per_s": st, "bulk_values_per_s": bu,
                                         "ratio": st / bu, "stepwise_s": ts, "bulk_s": tb,
                                         "max_rel_diff": err})
            print(name, f"step {st:.3g}/s bulk {bu:.3g}/s ratio {st / bu:.2f}", file=sys.stderr)
    for name in args.epoch_data:
        X, y = get(name)
        record["epochs"][name] = epoch_times(name, X, y, args.budget, args.seeds)
        print(name, "epoch", np.median([r["time"] for r in record["epochs"][name]]),
              file=sys.stderr)
    before = json.loads(open(args.before).read())["epochs"] if args.before else {}
    record["before"] = before

    md = ["# Kernel throughput and BSGD epoch time", "",
          f"{record['machine']['platform']}, {record['machine']['cpus']} cores "
          f"(shared with other jobs: figures are medians, load varies), B = {args.budget}"
          + (" (quick smoke run: 3000 rows of a9a, B = 100)" if args.quick else "") + ".", ""]
    if record["throughput"]:
        md += ["## Kernel values per second", "",
               "Step at a time = one sparse point's Gaussian kernel row against the B SVs plus "
               "its margin, as in a training step (`BudgetModel.decision_stream`); bulk = "
               "scipy CSR @ dense Z.T in 8192-row chunks + numpy exp + margins. "
               f"Median of {args.repeats}.", "",
               "| data | n | d | nnz/row | step-at-a-time values/s | bulk values/s | ratio "
               "| max rel. diff of margins |",
               "|---|---|---|---|---|---|---|---|"]
        for r in record["throughput"]:
            md.append(f"| {r['data']} | {r['n']} | {r['d']} | {r['nnz_per_row']:.1f} | "
                      f"{r['stepwise_values_per_s']:.3g} | {r['bulk_values_per_s']:.3g} | "
                      f"{r['ratio']:.2f} | {r['max_rel_diff']:.1e} |")
        md.append("")
    md += ["## One BSGD epoch (golden-section merging, tol 0.01)", "",
           f"Median [min, max] over seeds {args.seeds}; merge = time in budget maintenance.", "",
           "| data | before: epoch s | before: merge s | after: epoch s | after: merge s "
           "| merges |",
           "|---|---|---|---|---|---|"]

    def mm(rows, key):
        v = [r[key] for r in rows]
        return f"{np.median(v):.3f} [{min(v):.3f}, {max(v):.3f}]"
    for name, rows in record["epochs"].items():
        b = before.get(name)
        md.append(f"| {name} | {mm(b, 'time') if b else '-'} | "
                  f"{mm(b, 'merge_time') if b else '-'} | "
                  f"{mm(rows, 'time')} | {mm(rows, 'merge_time')} | "
                  f"{int(np.median([r['n_merges'] for r in rows]))} |")
    md.append("")
    stem = args.stem or ("kernel_throughput_quick" if args.quick else "kernel_throughput")
    kw = {"out_dir": args.out} if args.out else {}
    write_outputs(stem, record, "\n".join(md) + "\n", **kw)


if __name__ == "__main__":
    main()
