"""Two builds of pybudget side by side: is a change free of speed loss?

Runs the same workloads in child processes that import pybudget from BEFORE (an
older commit built in place, or a virtual environment's site-packages) and from AFTER
(default: this checkout), interleaved (before, after, before, ...), ``-r`` times each:

- linear: ``bench/linear_speed.py``'s cases (hard shrinking, tol 0.1) as the ratio of
  our optimisation time to liblinear-official's ``train`` in the same child, and AVSF
  on debian-lib at C = 100, tol 0.01;
- budget: one BSGD and one BSCA epoch on ijcnn1 and a9a (C = 32, budget 500, the
  gamma of bench/budget_defaults.py).

Reports medians and the after/before ratio of medians.  ``--clock cpu`` times the same
solver calls in CPU seconds of their thread instead of wall-clock seconds: on a machine
busy with other jobs the wall clock mostly measures them.  Results are identical by
construction when the change is a refactoring (tests/test_fingerprints.py); this
script checks the speed.

    git worktree add /tmp/old <commit> && (cd /tmp/old && python setup.py build_ext -i)
    PYBUDGET_DATA=<data folder> python bench/build_compare.py --before /tmp/old [-r 5]
"""
import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from common import machine, results_dir, write_outputs

HERE = Path(__file__).resolve().parent
LINEAR = [("debian-lib", 0.1), ("debian-lib", 1.0), ("a9a", 0.01), ("a9a", 0.1)]
BUDGET = [("ijcnn1", "bsgd", 2.0), ("ijcnn1", "bsca", 2.0),
          ("a9a", "bsgd", 2 ** -7), ("a9a", "bsca", 2 ** -7)]


def child(workloads, clock="wall"):
    """Run the workloads once in this process; print {name: seconds or ratio}.  clock
    "wall": the optimisation seconds the solvers report; "cpu": this thread's CPU
    seconds in the same Cython solver calls (dcd_solve, bsgd_run, bsca_run; liblinear's
    train), which other jobs on a busy machine disturb far less than the wall clock."""
    import time
    import warnings
    warnings.simplefilter("ignore")
    import pybudget
    import pybudget.budget.svm as budget_svm
    import pybudget.linear.problem as linear_problem
    from pybudget import solve_budget, solve_linear
    from pybudget.datasets import load
    from common import liblinear_train
    out, data = {"origin": os.path.dirname(pybudget.__file__)}, {}
    spent = []

    def cpu_timed(f):
        def call(*args, **kw):
            t0 = time.thread_time()
            try:
                return f(*args, **kw)
            finally:
                spent.append(time.thread_time() - t0)
        return call

    if clock == "cpu":   # both builds call these through their module globals
        linear_problem.dcd_solve = cpu_timed(linear_problem.dcd_solve)
        budget_svm.bsgd_run = cpu_timed(budget_svm.bsgd_run)
        budget_svm.bsca_run = cpu_timed(budget_svm.bsca_run)
        liblinear_train = cpu_timed(liblinear_train)

    def get(name):
        if name not in data:
            X, y = load(name)[:2]      # CSR float64: both builds take it without a copy
            data[name] = (X.tocsr(), y)
        return data[name]

    def seconds(res):
        """The last call's CPU seconds (clock "cpu") or the seconds it reports."""
        return spent[-1] if clock == "cpu" else res.time

    for kind, name, C, extra in workloads:
        X, y = get(name)
        if kind == "shrinking":
            from liblinear import liblinearutil as ll
            ours = seconds(solve_linear(X, y, C, selection="shrinking", tol=0.1,
                                        random_state=0))
            _, theirs, _ = liblinear_train(ll.problem(y, X), f"-s 3 -c {C} -e 0.1 -q")
            theirs = spent[-1] if clock == "cpu" else theirs
            out[f"{name} shrinking C={C:g}: ratio to liblinear"] = ours / theirs
        elif kind == "avsf":
            out[f"{name} avsf C={C:g} tol 0.01: seconds"] = seconds(solve_linear(
                X, y, C, selection="avsf", tol=0.01, random_state=0))
        else:
            out[f"{name} {kind} 1 epoch: seconds"] = seconds(solve_budget(
                X, y, C, gamma=extra, budget=500, solver=kind, epochs=1, random_state=0))
    print(json.dumps(out))


def run_child(path, workloads, clock="wall"):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(path), str(HERE)]))
    r = subprocess.run([sys.executable, str(HERE / "build_compare.py"), "--child",
                        json.dumps(workloads), "--clock", clock], env=env,
                       capture_output=True, text=True, cwd=str(HERE))
    if r.returncode:
        raise RuntimeError(f"the child importing {path} failed:\n{r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", required="--child" not in sys.argv,
                    help="folder whose pybudget/ is the old build")
    ap.add_argument("--after", default=str(HERE.parent), help="folder of the new build")
    ap.add_argument("-r", "--repeats", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="smoke run: a9a only, 1 repeat")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="wall: the optimisation seconds the solvers report (default); "
                         "cpu: CPU seconds of the same solver calls, for a busy machine")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--out", default=str(results_dir("build_compare")))
    ap.add_argument("--stem", default="build_compare",
                    help="name of the output files (default %(default)s)")
    a = ap.parse_args()
    if a.child:
        return child(json.loads(a.child), a.clock)
    if a.quick:
        work = [("shrinking", "a9a", 0.01, None), ("bsgd", "a9a", 32.0, 2 ** -7)]
    else:
        work = ([("shrinking", n, C, None) for n, C in LINEAR]
                + [("avsf", "debian-lib", 100.0, None)]
                + [(s, n, 32.0, g) for n, s, g in BUDGET])
    reps = 1 if a.quick else a.repeats
    runs = {"before": [], "after": []}
    for rep in range(reps):
        for side in ("before", "after"):
            runs[side].append(run_child(getattr(a, side), work, a.clock))
            print(f"[{rep + 1}/{reps}] {side}: {runs[side][-1]}", file=sys.stderr)
    keys = [k for k in runs["after"][0] if k != "origin"]
    rows = []
    for k in keys:
        b = float(np.median([r[k] for r in runs["before"]]))
        f = float(np.median([r[k] for r in runs["after"]]))
        rows.append({"workload": k, "before": b, "after": f, "ratio": f / b,
                     "before_all": [r[k] for r in runs["before"]],
                     "after_all": [r[k] for r in runs["after"]]})
    clock = ("; CPU seconds of the solver calls (`--clock cpu`)" if a.clock == "cpu"
             else "")
    md = [f"### Two builds side by side: medians of {reps} interleaved runs{clock}",
          "", f"before: `{runs['before'][0]['origin']}`; after: `{runs['after'][0]['origin']}`",
          "", "| workload | before | after | after / before |", "|---|---|---|---|"]
    md += [f"| {r['workload']} | {r['before']:.4g} | {r['after']:.4g} | {r['ratio']:.3f} |"
           for r in rows]
    record = {"machine": machine(), "repeats": reps, "clock": a.clock, "rows": rows,
              "before": a.before, "after": a.after}
    stem = a.stem + ("_quick" if a.quick else "")
    write_outputs(stem, record, "\n".join(md) + "\n", Path(a.out))
    print("\n".join(md))


if __name__ == "__main__":
    main()
