"""C-grid benchmark of the linear solvers (AVSF paper, Tables 2-3 and Figure 1).

For each data set, tolerance, C and strategy, trains r times (seeds 0..r-1) and records
time (median/min/max), sweeps, steps, dual objective, exact final KKT violation,
converged or capped, and test score (accuracy; R² for regression).  Strategies: uniform,
shrinking, avsf and auto from pybudget, and liblinear = liblinear-official's
``train(problem, "-s S -c C -e tol")`` with the same problem (``--loss``: -s 3, 1, 7,
4, 13, 12; epsilon 0.1 for regression) and its own defaults (its iteration cap included,
reported as "capped"; the objective it prints, sign flipped; its KKT violation is not
observable and left empty).  liblinear's tolerance means something else for each -s.

Writes bench/results/cgrid/<stem>.json (machine, versions, parameters, raw runs), .md and
.png.

    python bench/cgrid.py --data debian-lib --tol 0.01 0.001 -r 3
    python bench/cgrid.py --loss epsilon_insensitive --data debian-size \
        --selection shrinking avsf auto -r 3
    python bench/cgrid.py --quick          # smoke run, a few seconds
"""
import argparse
import sys
import time

import numpy as np

from common import (have_liblinear, liblinear_train, machine, median_min_max, results_dir,
                    write_outputs)
from pybudget._core import _validation as V
from pybudget.linear._dual_cd import SELECTIONS
from pybudget.cgrid import CGRID_LOSSES, DEFAULT_CS, run_cell, strategy_table
from pybudget.datasets import load
from pybudget.linear.problem import REGRESSION_LOSSES

# liblinear's solver for each of our problems (the dual CD ones)
LIBLINEAR_S = {"hinge": 3, "squared_hinge": 1, "logistic": 7, "crammer_singer": 4,
               "epsilon_insensitive": 13, "squared_epsilon_insensitive": 12}
EPSILON = 0.1   # run_cell's (liblinear's default -p)


def liblinear_cell(prob, X_test, y_test, C, tol, loss):
    from liblinear import liblinearutil as ll
    opts = f"-s {LIBLINEAR_S[loss]} -c {C} -e {tol}"
    opts += f" -p {EPSILON}" if loss in REGRESSION_LOSSES else ""
    model, elapsed, info = liblinear_train(prob, opts)
    acc = None
    if X_test is not None:
        pred = np.asarray(ll.predict(y_test, X_test, model, "-q")[0])
        if loss in REGRESSION_LOSSES:
            acc = float(1 - np.sum((y_test - pred) ** 2) / np.sum((y_test - y_test.mean()) ** 2))
        else:
            acc = float(np.mean(pred == y_test))
    return {"C": C, "selection": "liblinear", "tol": tol, "time": elapsed,
            "n_iter": info["n_iter"], "n_steps": None, "dual_objective": info["objective"],
            "primal_objective": None, "kkt_violation": None, "converged": not info["capped"],
            "test_accuracy": acc}


def summarise(runs):
    """One row per (data, tol, C, strategy): medians and agreement of objectives."""
    keys = list(dict.fromkeys((r["data"], r["tol"], r["C"], r["selection"]) for r in runs))
    rows = []
    for k in keys:
        rs = [r for r in runs if (r["data"], r["tol"], r["C"], r["selection"]) == k]
        med, lo, hi = median_min_max([r["time"] for r in rs])
        duals = [r["dual_objective"] for r in rs
                 if r["converged"] and r["dual_objective"] is not None]
        spread = (max(duals) - min(duals)) / abs(max(duals)) if len(duals) > 1 else 0.0
        opt = lambda f: (None if rs[0][f] is None else float(np.median([r[f] for r in rs])))  # noqa: E731
        rows.append({"data": k[0], "tol": k[1], "C": k[2], "selection": k[3],
                     "time_median": med, "time_min": lo, "time_max": hi, "runs": len(rs),
                     "n_iter": opt("n_iter"), "n_steps": opt("n_steps"),
                     "dual_objective": opt("dual_objective"),
                     "kkt_violation": None if rs[0]["kkt_violation"] is None else
                     max(r["kkt_violation"] for r in rs),
                     "converged": all(r["converged"] for r in rs),
                     "dual_spread": spread, "test_accuracy": opt("test_accuracy")})
    return rows


def markdown(rows, loss="hinge"):
    score = "test R²" if loss in REGRESSION_LOSSES else "test acc."
    out = [f"# C-grid benchmark ({loss})", "",
           "Median time in seconds over the runs, median coordinate steps in brackets; "
           "`*` = stopped by the iteration cap (liblinear: its own cap).", ""]
    for data in dict.fromkeys(r["data"] for r in rows):
        for tol in dict.fromkeys(r["tol"] for r in rows if r["data"] == data):
            sub = [r for r in rows if r["data"] == data and r["tol"] == tol]
            out += [f"## {data}, tol {tol:g}", ""] + strategy_table(sub, "time_median")
            out += ["", "| C | strategy | time median [min, max] | sweeps | dual objective | "
                    f"max final KKT | converged | dual spread | {score} |",
                    "|---|---|---|---|---|---|---|---|---|"]
            for r in sub:
                kkt = "—" if r["kkt_violation"] is None else f"{r['kkt_violation']:.2e}"
                acc = ("—" if r["test_accuracy"] is None
                       else f"{r['test_accuracy']:.4f}" if loss in REGRESSION_LOSSES
                       else f"{100 * r['test_accuracy']:.2f} %")
                dual = "—" if r["dual_objective"] is None else f"{r['dual_objective']:.9g}"
                out.append(f"| {r['C']:g} | {r['selection']} | {r['time_median']:.3f} "
                           f"[{r['time_min']:.3f}, {r['time_max']:.3f}] | {r['n_iter']:.0f} | "
                           f"{dual} | {kkt} | {'yes' if r['converged'] else 'capped'} | "
                           f"{r['dual_spread']:.1e} | {acc} |")
            out.append("")
    return "\n".join(out) + "\n"


def plot(rows, path, loss="hinge", repeats=1):
    """One row of panels per (data set, tol), drawn by pybudget's own C-grid figure
    (pybudget._plot.plot_cgrid, as ``pybudget cgrid --plot``) on the median times."""
    from pybudget._plot import new_axes, plot_cgrid, save_figure
    groups = list(dict.fromkeys((r["data"], r["tol"]) for r in rows))
    try:
        axes = new_axes(len(groups), 2)
    except ImportError as e:
        print(f"{e}: no plot", file=sys.stderr)
        return
    for pair, (data, tol) in zip(axes, groups):
        sub = [r for r in rows if (r["data"], r["tol"]) == (data, tol)]
        plot_cgrid(sub, pair, time_key="time_median",
                   title=f"{data}, loss {loss}, tol {tol:g} (median of {repeats})")
    save_figure(axes, path)
    print(f"wrote {path}", file=sys.stderr)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", nargs="+", default=["debian-lib"])
    ap.add_argument("--loss", choices=CGRID_LOSSES, default="hinge",
                    help="problem (default %(default)s); see pybudget.cgrid.run_cell")
    ap.add_argument("--C", type=float, nargs="+", default=list(DEFAULT_CS))
    ap.add_argument("--tol", type=float, nargs="+", default=[0.01])
    ap.add_argument("--selection", nargs="+", default=["shrinking", "avsf", "liblinear"],
                    choices=sorted(SELECTIONS) + ["auto", "liblinear"])
    ap.add_argument("-r", "--repeats", type=int, default=3)
    ap.add_argument("--max-iter", type=int, default=1000000)
    ap.add_argument("--stem", default=None, help="output file stem (default cgrid_<data>)")
    ap.add_argument("--out", default=str(results_dir("cgrid")),
                    help="results directory (default bench/results/cgrid)")
    ap.add_argument("--quick", action="store_true", help="smoke run on embedded a9a")
    a = ap.parse_args(argv)
    if a.quick:
        a.data, a.C, a.tol, a.repeats = ["a9a"], [0.01, 0.1], [0.1], 1
    if a.loss in REGRESSION_LOSSES and a.data == ["debian-lib"]:
        a.data = ["debian-size"]
    runs = []
    for data in a.data:
        X, y, Xt, yt = load(data)
        X = V.as_csr(X)
        Xt = None if Xt is None else V.as_csr(Xt)
        prob = None
        if "liblinear" in a.selection:
            if have_liblinear():
                from liblinear import liblinearutil as ll
                prob = ll.problem(y, X)
            else:
                print("liblinear-official not installed: skipping it", file=sys.stderr)
        for tol in a.tol:
            for C in a.C:
                # strategies interleaved within each repeat: load changes hit all alike
                for rep in range(a.repeats):
                    for s in a.selection:
                        if s == "liblinear":
                            if prob is None:
                                continue
                            r = liblinear_cell(prob, Xt, yt, C, tol, a.loss)
                        else:
                            r = run_cell(X, y, C, s, tol=tol, loss=a.loss,
                                         max_iter=a.max_iter, random_state=rep, X_test=Xt,
                                         y_test=yt, epsilon=EPSILON)
                        r.update(data=data, repeat=rep)
                        runs.append(r)
                        print(f"{data} tol={tol:g} C={C:g} {s} #{rep}: {r['time']:.3f}s "
                              f"sweeps={r['n_iter']}{'' if r['converged'] else ' capped'}",
                              file=sys.stderr, flush=True)
    rows = summarise(runs)
    name = "_".join(a.data) if a.loss == "hinge" else f"{a.loss}_" + "_".join(a.data)
    stem = a.stem or ("cgrid_quick" if a.quick else "cgrid_" + name)
    record = {"machine": machine(), "params": vars(a), "summary": rows, "runs": runs,
              "finished": time.strftime("%Y-%m-%d %H:%M:%S")}
    write_outputs(stem, record, markdown(rows, a.loss), a.out)
    from pathlib import Path
    plot(rows, Path(a.out) / f"{stem}.png", a.loss, a.repeats)


if __name__ == "__main__":
    main()
