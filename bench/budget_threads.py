"""Budgeted SVMs on threads, judged against what the machine's cores can give in the
same run: one fit (``--task fit``: ``BudgetSVC(n_jobs=2).fit`` against ``n_jobs=1``, a
team of threads on one model) or ``decision_function`` of one model (``--task
decision``).  ``--task rule`` checks the rule that keeps a fit on one thread
(``budget/_team_rules.py``) on data of your choice: per cell, one epoch on a team of 2
(the rule's other thresholds) and on one thread, interleaved in one process
(``gamma="scale"``, C = 1), and whether the rule picked the faster.

C and gamma are bench/budget.py's PARAMS (debian-lib: C = 1, gamma = 1, as in
bench/budget_storage.py), BudgetSVC's defaults otherwise.  Every timing
runs in a fresh process (fit: on the training rows; decision: a model fitted once and
saved, on ``--rows`` rows, the training rows repeated).  Per repeat, in an order that
rotates from repeat to repeat:

- one process with ``n_jobs=1`` alone (t1), one with ``n_jobs=2`` alone (t2);
- two ``n_jobs=1`` processes at once (each takes tp);
- decision only: the numpy formula (``budget._decision.kernel_decision``), alone.

speed-up = t1 / t2; ceiling = 2 t1 / tp (what two cores give two independent one-thread
jobs right now: 2 on a quiet machine, less when it is shared); efficiency = speed-up /
ceiling (medians over the repeats of the per-repeat values).  Also whether n_jobs=1 and
2 gave the same bits (the fitted model, or the decision values), and for decision ns per
kernel value (time / (rows x support vectors)).  Writes
bench/results/budget_threads/<stem>.{json,md}.

    PYBUDGET_DATA=<data> python bench/budget_threads.py [--task fit|decision|rule]
        [--data a9a ijcnn1 w8a] [--budgets 500 2000] [--solvers bsgd bsca]
        [--rows 65000] [-r 7] [--quick] [--out DIR] [--stem NAME]
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
from budget import PARAMS as PAPER_PARAMS  # noqa: E402

PARAMS = {**PAPER_PARAMS, "debian-lib": (1.0, 1.0)}
from common import machine, results_dir, write_outputs  # noqa: E402


def rows_of(name, n_rows, quick):
    import scipy.sparse as sp

    from pybudget.datasets import load
    X, y, _, _ = load(name)
    if quick:
        X, y = X[:3000], y[:3000]
    reps = -(-n_rows // X.shape[0])
    return sp.vstack([X] * reps, format="csr")[:n_rows], X, y


def fit_child(args):
    """One fit in this fresh process: prints {seconds, digest}."""
    import scipy.sparse as sp

    import pybudget
    _, X, y = rows_of(args.data[0], 1, args.quick)
    C, gamma = PARAMS[args.data[0]]
    clf = pybudget.BudgetSVC(C=C, gamma=gamma, budget=args.budgets[0],
                             solver=args.solvers[0], random_state=0, n_jobs=args.threads)
    t0 = time.perf_counter()
    clf.fit(X, y)
    seconds = time.perf_counter() - t0
    Z = clf.support_vectors_
    parts = (Z.data, Z.indices, Z.indptr) if sp.issparse(Z) else (Z,)   # (sparse storage)
    digest = hashlib.sha256(b"".join(np.ascontiguousarray(a).tobytes() for a in (
        *parts, clf.dual_coef_, clf.intercept_))).hexdigest()
    print(json.dumps({"seconds": seconds, "digest": digest}))


def child(args):
    """One timing in this fresh process: prints {seconds, digest}."""
    if args.task == "fit":
        return fit_child(args)
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


def spawn(args, model, data, how, threads, budget=0, solver="bsgd"):
    cmd = [sys.executable, __file__, "--child", "--model", model, "--data", data,
           "--rows", str(args.rows), "--how", how, "--threads", str(threads),
           "--task", args.task, "--budgets", str(budget), "--solvers", solver]
    if args.quick:
        cmd.append("--quick")
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)


def result(proc):
    out, _ = proc.communicate()
    if proc.returncode:
        raise RuntimeError(f"child failed ({proc.returncode})")
    return json.loads(out.strip().splitlines()[-1])


def cell(args, data, budget, solver, tmp):
    import pybudget
    C, gamma = PARAMS[data]
    _, X, y = rows_of(data, args.rows, args.quick)
    clf = pybudget.BudgetSVC(C=C, gamma=gamma, budget=budget, solver=solver,
                             random_state=0).fit(X, y)
    model = str(Path(tmp) / f"{data}-{budget}.pbm")
    pybudget.save(clf, model)
    n_sv = clf.support_vectors_.shape[0]
    runs = []
    kinds = ["one", "two", "pair"] + (["numpy"] if args.task == "decision" else [])
    for r in range(args.repeats):
        rec = {}
        for kind in kinds[r % len(kinds):] + kinds[:r % len(kinds)]:
            if kind == "pair":
                procs = [spawn(args, model, data, "threads", 1, budget, solver)
                         for _ in range(2)]
                rec["pair"] = [result(p)["seconds"] for p in procs]
            else:
                how, t = ("numpy", 1) if kind == "numpy" else ("threads", 1 + (kind == "two"))
                got = result(spawn(args, model, data, how, t, budget, solver))
                rec[kind], rec[f"{kind}_digest"] = got["seconds"], got["digest"]
        rec["speedup"] = rec["one"] / rec["two"]
        rec["ceiling"] = 2 * rec["one"] / float(np.mean(rec["pair"]))
        rec["efficiency"] = rec["speedup"] / rec["ceiling"]
        runs.append(rec)
        print(data, budget, solver, r, {k: round(v, 4) for k, v in rec.items()
                                        if isinstance(v, float)}, file=sys.stderr)
    med = {k: float(np.median([r[k] for r in runs]))
           for k in ("one", "two", "speedup", "ceiling", "efficiency")}
    med["pair"] = float(np.median([np.mean(r["pair"]) for r in runs]))
    if args.task == "decision":
        med["numpy"] = float(np.median([r["numpy"] for r in runs]))
        med["ns_per_value"] = med["one"] / (args.rows * n_sv) * 1e9
        med["ns_per_value_numpy"] = med["numpy"] / (args.rows * n_sv) * 1e9
    med["same_bits"] = all(r["one_digest"] == r["two_digest"] for r in runs)
    med["efficiency_range"] = [float(min(r["efficiency"] for r in runs)),
                               float(max(r["efficiency"] for r in runs))]
    return {"data": data, "budget": budget, "solver": solver, "n_sv": n_sv,
            "rows": args.rows if args.task == "decision" else X.shape[0], "C": C,
            "gamma": gamma, "median": med, "runs": runs}


def rule_cell(data, budget, solver, repeats):
    """One epoch on a team of 2 and on one thread, interleaved in this process: medians,
    what the rule picks (``team_for``) and whether it was the faster."""
    from pybudget._core import _validation as V
    from pybudget.budget._bsca import bsca_run
    from pybudget.budget._bsgd import bsgd_run
    from pybudget.budget._budget import BudgetModel
    from pybudget.budget._maintain import Maintainer
    from pybudget.budget._team_rules import team_for
    from pybudget.budget.svm import scale_gamma
    from pybudget.datasets import load
    X, y, _, _ = load(data)
    X = V.canonical_csr(V.as_csr(X))
    n, d = X.shape
    classes, codes = np.unique(y, return_inverse=True)
    if solver == "bsca":
        codes = (codes == 0).astype(np.int32)      # (one binary problem)
    gamma, xsq, n_coef = scale_gamma(X), V.row_sqnorms(X), 1
    if solver == "bsgd" and len(classes) > 2:
        n_coef = len(classes)

    def one(team):
        mdl = BudgetModel(d, n_coef, budget + 1, gamma, n if solver == "bsca" else 0)
        mt = Maintainer(mdl)
        t0 = time.perf_counter()
        if solver == "bsgd":
            bsgd_run(X, xsq, codes.astype(np.int32), mdl, mt, budget, 2, 1.0 / n, 1, 0, 0,
                     team=team)
        else:
            bsca_run(X, xsq, np.where(codes == 1, 1.0, -1.0), 1.0, np.zeros(n), mdl, mt,
                     budget, 2, 1, 0, team=team)
        return time.perf_counter() - t0

    times = {"one": [], "team": []}
    for _ in range(repeats):
        times["one"].append(one((1, 0, 0)))
        times["team"].append(one(team_for(2, 10**9, cpus=2)))   # (whatever the budget)
    med = {k: float(np.median(v)) for k, v in times.items()}
    pick = "team" if team_for(2, budget + 1, cpus=2)[0] > 1 else "one"
    other = "one" if pick == "team" else "team"
    return {"data": data, "budget": budget, "solver": solver, "median": med,
            "runs": times, "pick": pick, "right": med[pick] <= med[other],
            "team_speedup": med["one"] / med["team"]}


def rule_main(args):
    cells = [rule_cell(data, b, solver, args.repeats) for data in args.data
             for b in args.budgets for solver in args.solvers]
    right = sum(c["right"] for c in cells)
    md = [f"# The one-thread rule on data (team of 2 against one thread, one epoch, "
          f"medians of {args.repeats} interleaved runs in one process)", "",
          "| data | solver | B | one thread (s) | team of 2 (s) | team speed-up | rule picks "
          "| right |", "|---|---|---|---|---|---|---|---|"]
    md += [f"| {c['data']} | {c['solver']} | {c['budget']} | {c['median']['one']:.4f} | "
           f"{c['median']['team']:.4f} | {c['team_speedup']:.2f} | {c['pick']} | "
           f"{'yes' if c['right'] else 'no'} |" for c in cells]
    md += ["", f"The rule picked the faster in {right} of {len(cells)} cells."]
    write_outputs(args.stem, {"machine": machine(), "params": vars(args), "cells": cells},
                  "\n".join(md) + "\n", args.out or results_dir("budget_threads"))
    print("\n".join(md))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", nargs="+", default=["a9a", "ijcnn1", "w8a"])
    ap.add_argument("--task", choices=["fit", "decision", "rule"], default="fit")
    ap.add_argument("--budgets", type=int, nargs="+", default=[500, 2000])
    ap.add_argument("--solvers", nargs="+", default=["bsgd", "bsca"],
                    help="fit: the solvers (decision: the model's, first only)")
    ap.add_argument("--rows", type=int, default=65000)
    ap.add_argument("-r", "--repeats", type=int, default=7)
    ap.add_argument("--quick", action="store_true",
                    help="a9a's first 3000 rows, B = 100, 2 repeats, 20000 rows")
    ap.add_argument("--out", default=None)
    ap.add_argument("--stem", default=None, help="default: budget_threads_<task>")
    # (the child's own options)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    ap.add_argument("--how", default="threads", help=argparse.SUPPRESS)
    ap.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args)
    args.stem = args.stem or f"budget_threads_{args.task}"
    if args.quick:
        args.data, args.budgets, args.repeats, args.rows = ["a9a"], [100], 2, 20000
        args.stem += "_quick"
    if args.task == "rule":
        return rule_main(args)
    solvers = args.solvers if args.task == "fit" else args.solvers[:1]
    cells = []
    with tempfile.TemporaryDirectory() as tmp:
        for data in args.data:
            for budget in args.budgets:
                for solver in solvers:
                    cells.append(cell(args, data, budget, solver, tmp))
    what = ("one fit (BudgetSVC.fit, one epoch)" if args.task == "fit" else
            f"decision_function ({args.rows} rows)")
    md = [f"# {what} on threads: medians of {args.repeats} interleaved repeats, fresh "
          "processes", "",
          "| data | solver | B (SVs) | n_jobs=1 (s) | n_jobs=2 (s) | speed-up | ceiling | "
          "efficiency [range] | same bits |"
          + (" ns / kernel value | numpy formula (s) |" if args.task == "decision" else ""),
          "|---|---|---|---|---|---|---|---|---|"
          + ("---|---|" if args.task == "decision" else "")]
    for c in cells:
        m = c["median"]
        md.append(f"| {c['data']} | {c['solver']} | {c['budget']} ({c['n_sv']}) | "
                  f"{m['one']:.3f} | {m['two']:.3f} | {m['speedup']:.2f} | "
                  f"{m['ceiling']:.2f} | **{m['efficiency']:.2f}** "
                  f"[{m['efficiency_range'][0]:.2f}, {m['efficiency_range'][1]:.2f}] | "
                  f"{'yes' if m['same_bits'] else 'NO'} |"
                  + (f" {m['ns_per_value']:.2f} | {m['numpy']:.3f} |"
                     if args.task == "decision" else ""))
    md += ["", "ceiling = 2 x (one n_jobs=1 process alone) / (each of two n_jobs=1 processes "
           "at once); efficiency = speed-up / ceiling, per repeat."]
    record = {"machine": machine(), "params": vars(args), "cells": cells}
    write_outputs(args.stem, record, "\n".join(md) + "\n",
                  args.out or results_dir("budget_threads"))
    print("\n".join(md))


if __name__ == "__main__":
    main()
