"""Warm-started C paths against cold starts.

For each strategy, solves the increasing grid with linear_path(carry=...) for carry in
none (cold starts), alpha (dual variables rescaled by C'/C and clipped), all (also
AVSF preferences / reference gain and the hard-shrinking partition) and extrapolate
(alpha on the line through the two previous solutions); r interleaved
repeats; reports the median summed time per variant, its ratio to cold, sweeps per C,
and the largest relative difference of the dual objectives to the cold solutions.

A second table asks what a better *start* alone would buy at the grid's last step
C2 -> C3 (from cold solutions at C1 < C2 < C3): cold, alpha(C2) scaled by C3/C2 (what
carry="alpha" does), alpha(C2) unscaled, and the linear extrapolation of the solution
path alpha(C2) + (alpha(C2) - alpha(C1)) (C3 - C2)/(C2 - C1), each clipped to [0, C3].

    python bench/warmstart.py [--data debian-lib] [-r 3] [--quick] [--C ...] [--stem NAME]
"""
import argparse
import sys
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from common import machine, results_dir, write_outputs
from pybudget._core import _validation as V
from pybudget import linear_path
from pybudget.cgrid import DEFAULT_CS
from pybudget.datasets import load
from pybudget.linear.plan import Rows, plan_for
from pybudget.linear.problem import SolverState, solve_binary

CARRY = ["none", "alpha", "all", "extrapolate"]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="debian-lib")
    ap.add_argument("--C", type=float, nargs="+", default=list(DEFAULT_CS))
    ap.add_argument("--tol", type=float, default=0.01)
    ap.add_argument("--selection", nargs="+", default=["shrinking", "avsf"])
    ap.add_argument("-r", "--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="smoke run on embedded a9a")
    ap.add_argument("--out", default=str(results_dir("warmstart")))
    ap.add_argument("--stem", default=None, help="output name (default warmstart_DATA)")
    a = ap.parse_args()
    if a.quick:
        a.data, a.C, a.repeats, a.selection = "a9a", [0.01, 0.1], 1, ["shrinking", "avsf"]
    X, y, _, _ = load(a.data)
    X = V.as_csr(X)
    runs = []
    for rep in range(a.repeats):
        for sel in a.selection:
            for carry in CARRY:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    path = linear_path(X, y, a.C, selection=sel, tol=a.tol, max_iter=1000000,
                                       random_state=rep, carry=carry)
                runs.append({"selection": sel, "carry": carry, "repeat": rep,
                             "times": [r.time for r in path], "sweeps": [r.n_iter for r in path],
                             "steps": [r.n_steps for r in path],
                             "dual": [r.dual_objective for r in path],
                             "converged": [r.converged for r in path]})
                print(f"{sel} carry={carry} #{rep}: {sum(runs[-1]['times']):.3f}s "
                      f"sweeps {runs[-1]['sweeps']}", file=sys.stderr, flush=True)
    rows = []
    for sel in a.selection:
        cold = [r for r in runs if r["selection"] == sel and r["carry"] == "none"]
        cold_total = float(np.median([sum(r["times"]) for r in cold]))
        cold_dual = np.median([r["dual"] for r in cold], axis=0)
        for carry in CARRY:
            rs = [r for r in runs if r["selection"] == sel and r["carry"] == carry]
            total = float(np.median([sum(r["times"]) for r in rs]))
            rel = max(float(np.max(np.abs(np.array(r["dual"]) - cold_dual) / np.abs(cold_dual)))
                      for r in rs)
            rows.append({"selection": sel, "carry": carry, "total_median": total,
                         "ratio_to_cold": total / cold_total,
                         "per_C_median": np.median([r["times"] for r in rs], axis=0).tolist(),
                         "sweeps_median": np.median([r["sweeps"] for r in rs], axis=0).tolist(),
                         "max_rel_dual_diff": rel,
                         "all_converged": all(all(r["converged"]) for r in rs)})
    md = [f"# Warm-started C paths on {a.data} (tol {a.tol:g}, median of {a.repeats})", "",
          "| strategy | carry | total s | ratio to cold | "
          + " | ".join(f"C={c:g} s (sweeps)" for c in sorted(a.C))
          + " | max rel. dual diff to cold | converged |",
          "|---|---|---|---|" + "---|" * len(a.C) + "---|---|"]
    for r in rows:
        cells = " | ".join(f"{t:.3f} ({s:.0f})"
                           for t, s in zip(r["per_C_median"], r["sweeps_median"]))
        md.append(f"| {r['selection']} | {r['carry']} | {r['total_median']:.3f} | "
                  f"{r['ratio_to_cold']:.2f} | "
                  f"{cells} | {r['max_rel_dual_diff']:.1e} | "
                  f"{'yes' if r['all_converged'] else 'no'} |")
    starts = start_study(X, y, sorted(a.C)[-3:], a.tol, a.selection, a.repeats)
    md += ["", f"Starts for the last step C = {sorted(a.C)[-2]:g} -> {sorted(a.C)[-1]:g} "
           f"(median of {a.repeats}; fresh strategy state in every case):", "",
           "| strategy | start | time s | sweeps | rel. dual diff to cold |",
           "|---|---|---|---|---|"]
    for r in starts:
        md.append(f"| {r['selection']} | {r['start']} | {r['time']:.3f} | {r['sweeps']:.0f} | "
                  f"{r['rel_dual_diff']:.1e} |")
    down = descending_study(X, y, sorted(a.C), a.tol, a.selection, a.repeats)
    md += ["", "The same grid solved downwards (largest C cold, then each C from the previous "
           f"solution scaled by C'/C), median of {a.repeats}:", "",
           "| strategy | total s | ratio to the cold grid | sweeps per C (decreasing C) |",
           "|---|---|---|---|"]
    for r in down:
        cold_total = next(x["total_median"] for x in rows
                          if x["selection"] == r["selection"] and x["carry"] == "none")
        md.append(f"| {r['selection']} | {r['total']:.3f} | {r['total'] / cold_total:.2f} | "
                  f"{' / '.join(f'{v:.0f}' for v in r['sweeps'])} |")
    near = distance_study(X, y, sorted(a.C)[-1], a.tol, a.repeats, a.quick)
    md += ["", f"How close must an AVSF start be? C = {sorted(a.C)[-1]:g} started from the "
           f"solution (tol {a.tol / 10:g}) at a smaller C' scaled by C/C' (median of "
           f"{a.repeats}; cold for comparison):", "",
           "| C' / C | sweeps | time s |", "|---|---|---|"]
    for r in near:
        md.append(f"| {r['fraction']} | {r['sweeps']:.0f} | {r['time']:.3f} |")
    write_outputs(a.stem or "warmstart_" + ("quick" if a.quick else a.data),
                  {"machine": machine(), "params": vars(a), "rows": rows, "runs": runs,
                   "starts": starts, "descending": down, "distance": near},
                  "\n".join(md) + "\n", **({"out_dir": a.out} if a.out else {}))


def solver(X, y, tol):
    """solve(C, selection, seed, alpha=None, tol=tol): one binary problem, cold or
    started from alpha (clipped to the box) with a fresh strategy state."""
    _, ypm = V.binary_labels(y, X.shape[0])
    n = X.shape[0]
    rows = Rows.canonical(X)

    def solve(C, sel, seed, alpha=None, tol=tol):
        start = None if alpha is None else SolverState.fresh(alpha, C)
        cvec = np.full(n, C)
        return solve_binary(rows, ypm, cvec, C, plan_for(rows, cvec, "hinge", sel), loss="hinge",
                            tol=tol, max_iter=1000000, seed=seed, start=start)
    return solve


def descending_study(X, y, Cs, tol, selections, repeats):
    """The grid solved from the largest C down, each C from the previous solution
    scaled by C'/C: total time and sweeps per C (medians over repeats)."""
    solve = solver(X, y, tol)
    out = []
    for sel in selections:
        totals, sweeps = [], []
        for rep in range(repeats):
            prev, t, sw = None, 0.0, []
            for C in Cs[::-1]:
                r = solve(C, sel, rep, None if prev is None else prev.state.rescaled(C).alpha)
                prev, t = r, t + r.time
                sw.append(r.n_iter)
            totals.append(t)
            sweeps.append(sw)
        out.append({"selection": sel, "total": float(np.median(totals)),
                    "sweeps": np.median(sweeps, axis=0).tolist()})
        print(f"descending {sel}: {out[-1]['total']:.3f}s", file=sys.stderr, flush=True)
    return out


def distance_study(X, y, C, tol, repeats, quick):
    """AVSF at C from the solution at C*f, scaled by 1/f, for f from 1 down to 0.1."""
    solve = solver(X, y, tol)
    out = []
    for f in ([1.0, 0.5] if quick else [1.0, 0.9, 0.7, 0.5, 0.3, 0.1]) + ["cold"]:
        alpha = None if f == "cold" else solve(C * f, "avsf", 0, tol=tol / 10).alpha / f
        rs = [solve(C, "avsf", rep + 1, alpha) for rep in range(repeats)]
        out.append({"fraction": f, "sweeps": float(np.median([r.n_iter for r in rs])),
                    "time": float(np.median([r.time for r in rs]))})
        print(f"distance {f}: {out[-1]['sweeps']:.0f} sweeps", file=sys.stderr, flush=True)
    return out


def start_study(X, y, Cs, tol, selections, repeats):
    """Time to solve Cs[-1] from several starts built from cold solutions at Cs[:-1]."""
    solve = solver(X, y, tol)

    C3 = Cs[-1]
    C1, C2 = (Cs[0], Cs[1]) if len(Cs) == 3 else (None, Cs[0])
    out = []
    for sel in selections:
        a2 = solve(C2, sel, 0).state.alpha
        starts = {"cold": None, "scaled (carry=alpha)": a2 * (C3 / C2), "unscaled": a2}
        if C1 is not None:
            a1 = solve(C1, sel, 0).state.alpha
            starts["path extrapolation"] = a2 + (a2 - a1) * (C3 - C2) / (C2 - C1)
        res = {k: [solve(C3, sel, rep + 1, v) for rep in range(repeats)]
               for k, v in starts.items()}
        cold = np.median([r.dual_objective for r in res["cold"]])
        for k, rs in res.items():
            out.append({"selection": sel, "start": k,
                        "time": float(np.median([r.time for r in rs])),
                        "sweeps": float(np.median([r.n_iter for r in rs])),
                        "rel_dual_diff": max(abs(r.dual_objective - cold) / abs(cold) for r in rs)})
            print(f"start {sel} {k}: {out[-1]['time']:.3f}s {out[-1]['sweeps']:.0f} sweeps",
                  file=sys.stderr, flush=True)
    return out


if __name__ == "__main__":
    main()
