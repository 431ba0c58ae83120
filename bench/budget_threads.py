"""Budgeted SVMs on threads: ``decision_function`` of one model with ``n_jobs`` threads
against one thread, judged against what the machine's cores can give in the same run.

A model (BSGD, default settings otherwise; C and gamma of bench/budget.py's PARAMS) is
fitted once and saved; every timing then runs in a fresh process that loads it and
times ``decision_function`` on ``--rows`` rows (the training rows, repeated).  Per
repeat, in an order that rotates from repeat to repeat:

- one process with ``n_jobs=1`` alone (t1), one with ``n_jobs=2`` alone (t2);
- two ``n_jobs=1`` processes at once (each takes tp);
- the numpy formula (``budget._decision.kernel_decision``, what ``decision_function``
  computed before it ran the solvers' kernel loop), alone.

speed-up = t1 / t2; ceiling = 2 t1 / tp (what two cores give two independent one-thread
jobs right now: 2 on a quiet machine, less when it is shared); efficiency = speed-up /
ceiling (medians over the repeats of the per-repeat values).  Also ns per kernel value
(time / (rows x support vectors)), and whether the values of n_jobs=1 and 2 are the
same bits.  Writes bench/results/budget_threads/budget_threads.{json,md}.

    PYBUDGET_DATA=<data> python bench/budget_threads.py [--data a9a ijcnn1 w8a]
        [--budgets 500 2000] [--rows 65000] [-r 7] [--quick] [--out DIR]
"""
import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from budget import PARAMS  # noqa: E402
from common import machine, results_dir, write_outputs  # noqa: E402


def rows_of(name, n_rows, quick):
    import scipy.sparse as sp

    from pybudget.datasets import load
    X, y, _, _ = load(name)
    if quick:
        X, y = X[:3000], y[:3000]
    reps = -(-n_rows // X.shape[0])
    return sp.vstack([X] * reps, format="csr")[:n_rows], X, y


def child(args):
    """One timing in this fresh process: prints {seconds, digest}."""
    import pybudget
    from pybudget.budget._decision import kernel_decision
    clf = pybudget.load(args.model)
    Xr, _, _ = rows_of(args.data[0], args.rows, args.quick)
    if args.how == "numpy":
        run = lambda: kernel_decision(Xr, clf.support_vectors_, clf.dual_coef_,  # noqa: E731
                                      clf.gamma_)
    else:
        clf.set_params(n_jobs=args.threads)
        run = lambda: clf.decision_function(Xr)  # noqa: E731
    run()                                   # (warm: page in the model and the rows)
    t0 = time.perf_counter()
    f = run()
    seconds = time.perf_counter() - t0
    digest = hashlib.sha256(np.ascontiguousarray(f).tobytes()).hexdigest()
    print(json.dumps({"seconds": seconds, "digest": digest}))


def spawn(args, model, data, how, threads):
    cmd = [sys.executable, __file__, "--child", "--model", model, "--data", data,
           "--rows", str(args.rows), "--how", how, "--threads", str(threads)]
    if args.quick:
        cmd.append("--quick")
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)


def result(proc):
    out, _ = proc.communicate()
    if proc.returncode:
        raise RuntimeError(f"child failed ({proc.returncode})")
    return json.loads(out.strip().splitlines()[-1])


def cell(args, data, budget, tmp):
    import pybudget
    C, gamma = PARAMS[data]
    _, X, y = rows_of(data, args.rows, args.quick)
    clf = pybudget.BudgetSVC(C=C, gamma=gamma, budget=budget, random_state=0).fit(X, y)
    model = str(Path(tmp) / f"{data}-{budget}.pbm")
    pybudget.save(clf, model)
    n_sv = clf.support_vectors_.shape[0]
    runs = []
    kinds = ["one", "two", "pair", "numpy"]
    for r in range(args.repeats):
        rec = {}
        for kind in kinds[r % 4:] + kinds[:r % 4]:
            if kind == "pair":
                procs = [spawn(args, model, data, "threads", 1) for _ in range(2)]
                rec["pair"] = [result(p)["seconds"] for p in procs]
            else:
                how, t = ("numpy", 1) if kind == "numpy" else ("threads", 1 + (kind == "two"))
                got = result(spawn(args, model, data, how, t))
                rec[kind], rec[f"{kind}_digest"] = got["seconds"], got["digest"]
        rec["speedup"] = rec["one"] / rec["two"]
        rec["ceiling"] = 2 * rec["one"] / float(np.mean(rec["pair"]))
        rec["efficiency"] = rec["speedup"] / rec["ceiling"]
        runs.append(rec)
        print(data, budget, r, {k: round(v, 4) for k, v in rec.items()
                                if isinstance(v, float)}, file=sys.stderr)
    med = {k: float(np.median([r[k] for r in runs]))
           for k in ("one", "two", "numpy", "speedup", "ceiling", "efficiency")}
    med["pair"] = float(np.median([np.mean(r["pair"]) for r in runs]))
    med["ns_per_value"] = med["one"] / (args.rows * n_sv) * 1e9
    med["ns_per_value_numpy"] = med["numpy"] / (args.rows * n_sv) * 1e9
    med["same_bits"] = all(r["one_digest"] == r["two_digest"] for r in runs)
    med["efficiency_range"] = [float(min(r["efficiency"] for r in runs)),
                               float(max(r["efficiency"] for r in runs))]
    return {"data": data, "budget": budget, "n_sv": n_sv, "rows": args.rows, "C": C,
            "gamma": gamma, "median": med, "runs": runs}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", nargs="+", default=["a9a", "ijcnn1", "w8a"])
    ap.add_argument("--budgets", type=int, nargs="+", default=[500, 2000])
    ap.add_argument("--rows", type=int, default=65000)
    ap.add_argument("-r", "--repeats", type=int, default=7)
    ap.add_argument("--quick", action="store_true",
                    help="a9a's first 3000 rows, B = 100, 2 repeats, 20000 rows")
    ap.add_argument("--out", default=None)
    ap.add_argument("--stem", default="budget_threads")
    # (the child's own options)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    ap.add_argument("--how", default="threads", help=argparse.SUPPRESS)
    ap.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args)
    if args.quick:
        args.data, args.budgets, args.repeats, args.rows = ["a9a"], [100], 2, 20000
        args.stem += "_quick"
    cells = []
    with tempfile.TemporaryDirectory() as tmp:
        for data in args.data:
            for budget in args.budgets:
                cells.append(cell(args, data, budget, tmp))
    md = [f"# decision_function on threads ({args.rows} rows, medians of {args.repeats} "
          "interleaved repeats, fresh processes)", "",
          "| data | B (SVs) | n_jobs=1 (s) | n_jobs=2 (s) | speed-up | ceiling | "
          "efficiency [range] | same bits | ns / kernel value | numpy formula (s) |",
          "|---|---|---|---|---|---|---|---|---|---|"]
    for c in cells:
        m = c["median"]
        md.append(f"| {c['data']} | {c['budget']} ({c['n_sv']}) | {m['one']:.3f} | "
                  f"{m['two']:.3f} | {m['speedup']:.2f} | {m['ceiling']:.2f} | "
                  f"**{m['efficiency']:.2f}** [{m['efficiency_range'][0]:.2f}, "
                  f"{m['efficiency_range'][1]:.2f}] | {'yes' if m['same_bits'] else 'NO'} | "
                  f"{m['ns_per_value']:.2f} | {m['numpy']:.3f} |")
    md += ["", "ceiling = 2 x (one n_jobs=1 process alone) / (each of two n_jobs=1 processes "
           "at once); efficiency = speed-up / ceiling, per repeat."]
    record = {"machine": machine(), "params": vars(args), "cells": cells}
    write_outputs(args.stem, record, "\n".join(md) + "\n",
                  args.out or results_dir("budget_threads"))
    print("\n".join(md))


if __name__ == "__main__":
    main()
