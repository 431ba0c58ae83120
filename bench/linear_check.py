"""Correctness of the linear solvers on real data.

For each data set and C (tol 0.01, no bias): every strategy's exact final KKT
violation and dual objective, the largest relative spread of the dual objectives
across strategies, and liblinear-official's dual objective at -s 3 -e 0.001 (when it
does not stop at its iteration cap) with our relative difference to it.

    python bench/linear_check.py [--data a9a w8a debian-lib] [--C 0.01 1 100] [--quick]
"""
import argparse
import sys

import numpy as np

from common import have_liblinear, liblinear_train, machine, results_dir, write_outputs
from pybudget._core import _validation as V
from pybudget.cgrid import run_cell
from pybudget.datasets import load


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", nargs="+", default=["a9a", "w8a", "debian-lib"])
    ap.add_argument("--C", type=float, nargs="+", default=[0.01, 1.0, 100.0])
    ap.add_argument("--tol", type=float, default=0.01)
    ap.add_argument("--max-iter", type=int, default=10000)
    ap.add_argument("--quick", action="store_true", help="smoke run: a9a, C=0.01 only")
    ap.add_argument("--out", default=str(results_dir("linear")),
                    help="results directory (default bench/results/linear)")
    a = ap.parse_args()
    if a.quick:
        a.data, a.C, a.max_iter = ["a9a"], [0.01], 1000
    runs, lines = [], []
    lines += ["| data | C | strategy | sweeps | converged | final KKT | dual objective "
              "| rel. spread | liblinear -e 0.001 | rel. diff |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for name in a.data:
        X, y, _, _ = load(name)
        X = V.as_csr(X)
        prob = None
        if have_liblinear():
            from liblinear import liblinearutil as ll
            prob = ll.problem(y, X)
        for C in a.C:
            cells = [run_cell(X, y, C, s, tol=a.tol, max_iter=a.max_iter, random_state=0)
                     for s in ("uniform", "shrinking", "avsf")]
            duals = np.array([c["dual_objective"] for c in cells])
            spread = float((duals.max() - duals.min()) / abs(duals).max())
            ll_obj, ll_info = None, None
            if prob is not None:
                _, _, ll_info = liblinear_train(prob, f"-s 3 -c {C} -e 0.001")
                ll_obj = None if ll_info["capped"] else ll_info["objective"]
            for c in cells:
                ok = (not c["converged"]) or c["kkt_violation"] <= a.tol
                rel = None if ll_obj is None else abs(c["dual_objective"] - ll_obj) / abs(ll_obj)
                runs.append({"data": name, **c, "kkt_ok": ok, "strategy_spread": spread,
                             "liblinear": ll_info, "rel_diff_liblinear": rel})
                llcol = (("capped at " + str(ll_info["n_iter"])) if ll_info and ll_info["capped"]
                         else (f"{ll_obj:.8g}" if ll_obj is not None else "—"))
                lines.append(f"| {name} | {C:g} | {c['selection']} | {c['n_iter']} | "
                             f"{'yes' if c['converged'] else 'no'} | {c['kkt_violation']:.2e} | "
                             f"{c['dual_objective']:.10g} | {spread:.1e} | {llcol} | "
                             f"{'—' if rel is None else f'{rel:.1e}'} |")
                print(lines[-1], file=sys.stderr)
    record = {"machine": machine(), "params": vars(a), "runs": runs}
    md = "# Linear dual CD: correctness on real data\n\n" + "\n".join(lines) + "\n"
    write_outputs("linear_check" + ("_quick" if a.quick else ""), record, md,
                  **({"out_dir": a.out} if a.out else {}))


if __name__ == "__main__":
    main()
