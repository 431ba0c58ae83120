"""Per-step speed of hard shrinking against liblinear-official, same data, same process.

For each (data set, C) at tol 0.1: ``solve_linear(X, y, C, selection="shrinking",
tol=0.1)`` (wall time of the whole call, validation included, and its own optimisation
time) against ``liblinear.train(problem, "-s 3 -c C -e 0.1 -q")`` with the problem built
beforehand; runs interleaved, median of r each, plus sweeps and time per coordinate step.

Sweep counts vary with the random order (ours seeded by the run's index, liblinear's
unseeded), and with them the time of a run: ``--sweeps N`` compares, untimed, the
distributions of the sweep counts of N runs of each instead (writes <stem>_sweeps.*).

    python bench/linear_speed.py [-r 5] [--quick] [--stem NAME] [--sweeps N]
"""
import argparse
import sys
import time

import numpy as np

from common import liblinear_train, machine, results_dir, write_outputs
from pybudget._core import _validation as V
from pybudget import solve_linear
from pybudget.datasets import load

CASES = [("debian-lib", 0.1), ("debian-lib", 1.0), ("a9a", 0.01), ("a9a", 0.1)]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-r", "--repeats", type=int, default=5)
    ap.add_argument("--tol", type=float, default=0.1)
    ap.add_argument("--quick", action="store_true", help="smoke run: a9a only, 1 repeat")
    ap.add_argument("--out", default=str(results_dir("linear")))
    ap.add_argument("--stem", default="linear_speed", help="name of the output files")
    ap.add_argument("--sweeps", type=int, default=0, metavar="N",
                    help="compare the sweep counts of N untimed runs of each instead")
    a = ap.parse_args()
    from liblinear import liblinearutil as ll
    cases = [("a9a", 0.01)] if a.quick else CASES
    if a.sweeps:
        return sweep_counts(a, cases, ll)
    reps = 1 if a.quick else a.repeats
    rows, loaded = [], {}
    for name, C in cases:
        if name not in loaded:
            X, y, _, _ = load(name)
            X = V.as_csr(X)  # the same prepared matrix for both solvers
            loaded[name] = (X, y, ll.problem(y, X))
        X, y, prob = loaded[name]
        ours, opt, theirs, sweeps, ll_iters, steps = [], [], [], [], [], []
        for rep in range(reps):
            t0 = time.perf_counter()
            res = solve_linear(X, y, C, selection="shrinking", tol=a.tol, random_state=rep)
            ours.append(time.perf_counter() - t0)
            opt.append(res.time)
            sweeps.append(res.n_iter)
            steps.append(res.n_steps)
            _, t, info = liblinear_train(prob, f"-s 3 -c {C} -e {a.tol}")
            theirs.append(t)
            ll_iters.append(info["n_iter"])
        row = {"data": name, "C": C, "tol": a.tol, "ours_fit": ours, "ours_opt": opt,
               "liblinear": theirs, "sweeps": sweeps, "steps": steps, "liblinear_sweeps": ll_iters,
               "ours_fit_median": float(np.median(ours)), "ours_opt_median": float(np.median(opt)),
               "liblinear_median": float(np.median(theirs)),
               "ratio_fit": float(np.median(ours) / np.median(theirs)),
               "ratio_opt": float(np.median(opt) / np.median(theirs)),
               "ns_per_step": float(1e9 * np.median(opt) / np.median(steps))}
        rows.append(row)
        print(f"{name} C={C:g}: ours {row['ours_fit_median']:.4f}s "
              f"(opt {row['ours_opt_median']:.4f}s, "
              f"{int(np.median(sweeps))} sweeps), liblinear {row['liblinear_median']:.4f}s "
              f"({int(np.median(ll_iters))} sweeps), ratio {row['ratio_fit']:.3f}", file=sys.stderr)
    md = [("# Hard shrinking vs liblinear-official (-s 3, tol %g), "
           "median of %d runs") % (a.tol, reps), "",
          "| data | C | pybudget fit s | pybudget optimisation s | liblinear train s "
          "| sweeps (ours / liblinear) | ratio fit/liblinear | ratio opt/liblinear |",
          "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        md.append(f"| {r['data']} | {r['C']:g} | {r['ours_fit_median']:.4f} | "
                  f"{r['ours_opt_median']:.4f} | "
                  f"{r['liblinear_median']:.4f} | {int(np.median(r['sweeps']))} / "
                  f"{int(np.median(r['liblinear_sweeps']))} | {r['ratio_fit']:.3f} | "
                  f"{r['ratio_opt']:.3f} |")
    write_outputs(a.stem + ("_quick" if a.quick else ""),
                  {"machine": machine(), "params": vars(a), "rows": rows}, "\n".join(md) + "\n",
                  **({"out_dir": a.out} if a.out else {}))


def sweep_counts(a, cases, ll):
    """The distributions of the sweep counts of N runs of each solver (untimed)."""
    n = 2 if a.quick else a.sweeps
    rows = []
    for name, C in cases:
        X, y, _, _ = load(name)
        X = V.as_csr(X)
        prob = ll.problem(y, X)
        ours = [solve_linear(X, y, C, selection="shrinking", tol=a.tol,
                             random_state=seed).n_iter for seed in range(n)]
        theirs = [liblinear_train(prob, f"-s 3 -c {C} -e {a.tol}")[2]["n_iter"]
                  for _ in range(n)]
        rows.append({"data": name, "C": C, "tol": a.tol, "sweeps": ours,
                     "liblinear_sweeps": theirs})
    md = [f"# Sweeps of hard shrinking and liblinear-official (-s 3, tol {a.tol:g}), "
          f"{n} runs each", "",
          "| data | C | ours: mean, median [10th, 90th percentile] | liblinear: mean, median "
          "[10th, 90th percentile] |", "|---|---|---|---|"]

    def summary(v):
        p10, p50, p90 = np.percentile(v, [10, 50, 90])
        return f"{np.mean(v):.2f}, {p50:g} [{p10:g}, {p90:g}]"
    for r in rows:
        md.append(f"| {r['data']} | {r['C']:g} | {summary(r['sweeps'])} | "
                  f"{summary(r['liblinear_sweeps'])} |")
    write_outputs(a.stem + "_sweeps" + ("_quick" if a.quick else ""),
                  {"machine": machine(), "params": vars(a), "rows": rows},
                  "\n".join(md) + "\n", out_dir=a.out)


if __name__ == "__main__":
    main()
