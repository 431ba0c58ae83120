"""n_jobs: wall time of one-vs-rest fits with n_jobs=1 and n_jobs=2, and whether the
models are identical.

Workloads (random_state=0, defaults otherwise):

- ``LinearSVC(C=1)`` and ``LogisticRegression(C=1)`` one-vs-rest on debian-sections20
  (39,138 rows, 353,591 features, 20 classes);
- ``BudgetSVC(solver="bsca")`` one-vs-rest on pendigits (7,494 rows, 10 classes) at the
  defaults (budget 500, 1 epoch) and with 5 epochs.

Each repetition fits with n_jobs=1 and with n_jobs=2, in alternating order (interleaved,
so a slow phase of the machine hits both); the table shows the medians of r
repetitions, ratio = median(n_jobs=2) / median(n_jobs=1) (target <= 0.6 on 2 cores), the
process CPU seconds per wall second of the fits (n_jobs=2 on 2 free cores: near 2.0;
below 1.0 the machine gave this process less than a core) and
whether every fit gave the same model bit for bit (linear: coef_, intercept_; budgeted:
support_vectors_, dual_coef_, intercept_).  The load average before and after is
recorded: on a machine busy with other work the ratio is only indicative.
``--quick``: a synthetic 4-class problem, seconds.  Writes bench/results/n_jobs/.

    PYBUDGET_DATA=... python bench/n_jobs.py [-r 5] [--quick] [--out DIR]
"""
import argparse
import os
import resource
import time
import warnings

import numpy as np

from common import machine, median_min_max, results_dir, write_outputs


def workloads(quick):
    """[(name, data name, estimator factory taking n_jobs)]."""
    from pybudget import BudgetSVC, LinearSVC, LogisticRegression
    linear = "synthetic" if quick else "debian-sections20"
    kernel = "synthetic" if quick else "pendigits"
    budget = {"budget": 50} if quick else {}
    return [
        ("LinearSVC(C=1) ovr", linear,
         lambda j: LinearSVC(C=1.0, random_state=0, n_jobs=j)),
        ("LogisticRegression(C=1) ovr", linear,
         lambda j: LogisticRegression(C=1.0, random_state=0, n_jobs=j)),
        ("BudgetSVC(bsca) ovr, defaults", kernel,
         lambda j: BudgetSVC(solver="bsca", random_state=0, n_jobs=j, **budget)),
        ("BudgetSVC(bsca) ovr, 5 epochs", kernel,
         lambda j: BudgetSVC(solver="bsca", epochs=5, random_state=0, n_jobs=j, **budget)),
    ]


def load_data(name):
    if name == "synthetic":
        from sklearn.datasets import make_classification
        return make_classification(n_samples=3000, n_features=20, n_informative=10,
                                   n_classes=4, random_state=0)
    from pybudget.datasets import load
    X, y, _, _ = load(name)
    return X, y


def model_arrays(est):
    if hasattr(est, "coef_"):
        return est.coef_, est.intercept_
    return est.support_vectors_, est.dual_coef_, est.intercept_


def cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def timed_fit(make, n_jobs, X, y):
    est = make(n_jobs)
    c0, t0 = cpu_seconds(), time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    wall = time.perf_counter() - t0
    return est, wall, cpu_seconds() - c0


def run(name, data, make, X, y, reps):
    times = {1: [], 2: []}
    cpu = {1: [], 2: []}
    reference, identical = None, True
    for r in range(reps):
        for n_jobs in ((1, 2) if r % 2 == 0 else (2, 1)):
            est, wall, c = timed_fit(make, n_jobs, X, y)
            times[n_jobs].append(wall)
            cpu[n_jobs].append(c)
            arrays = model_arrays(est)
            if reference is None:
                reference = arrays
            else:
                identical &= all(np.array_equal(a, b) for a, b in zip(reference, arrays))
    m1, m2 = np.median(times[1]), np.median(times[2])
    row = {"workload": name, "data": data, "n_classes": int(np.unique(y).size),
           "times_1": times[1], "times_2": times[2], "cpu_1": cpu[1], "cpu_2": cpu[2],
           "median_1": float(m1), "median_2": float(m2), "ratio": float(m2 / m1),
           "min_max_1": median_min_max(times[1])[1:], "min_max_2": median_min_max(times[2])[1:],
           "cpu_per_wall_1": float(np.sum(cpu[1]) / np.sum(times[1])),
           "cpu_per_wall_2": float(np.sum(cpu[2]) / np.sum(times[2])),
           "identical": bool(identical)}
    print(f"{name} on {data}: n_jobs=1 {m1:.2f}s, n_jobs=2 {m2:.2f}s, ratio "
          f"{row['ratio']:.2f}, identical {identical}", flush=True)
    return row


def markdown(rows, reps, load_before, load_after, quick):
    lines = [f"### n_jobs: one-vs-rest fit time, n_jobs=1 vs 2 (medians of {reps}, "
             f"interleaved{', quick' if quick else ''})", "",
             "| workload | data | classes | n_jobs=1 (s) | n_jobs=2 (s) | ratio | "
             "CPU s per wall s, n_jobs=1 / 2 | identical models |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['workload']} | {r['data']} | {r['n_classes']} | "
                     f"{r['median_1']:.2f} | {r['median_2']:.2f} | {r['ratio']:.2f} | "
                     f"{r['cpu_per_wall_1']:.2f} / {r['cpu_per_wall_2']:.2f} | "
                     f"{'yes' if r['identical'] else 'NO'} |")
    def fmt(load):
        return ", ".join(f"{v:.2f}" for v in load)
    lines += ["", f"Load average (1, 5, 15 min) before: {fmt(load_before)}; after: "
              f"{fmt(load_after)} ({os.cpu_count()} cores). Ratio = n_jobs=2 / n_jobs=1; "
              "target <= 0.6.", ""]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-r", "--repeats", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="smoke run on synthetic data, seconds")
    ap.add_argument("--out", default=str(results_dir("n_jobs")))
    a = ap.parse_args()
    reps = 1 if a.quick else a.repeats
    load_before = os.getloadavg()
    rows, cache = [], {}
    for name, data, make in workloads(a.quick):
        if data not in cache:
            cache = {data: load_data(data)}      # one data set in memory at a time
        rows.append(run(name, data, make, *cache[data], reps))
    load_after = os.getloadavg()
    stem = "n_jobs" + ("_quick" if a.quick else "")
    write_outputs(stem, {"machine": machine(), "repeats": reps, "rows": rows,
                         "loadavg_before": load_before, "loadavg_after": load_after},
                  markdown(rows, reps, load_before, load_after, a.quick), a.out)
    if not all(r["identical"] for r in rows):
        raise SystemExit("models differ between n_jobs=1 and n_jobs=2")


if __name__ == "__main__":
    main()
