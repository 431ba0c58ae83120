"""float32 input end to end: the memory a fit adds, and the speed, against float64.

Both dtypes hold the same numbers: X32 is the data read as float32 (CSR, int32
indices) and X64 = X32.astype(float64), so the two fits do identical work (the models
are equal bit for bit, tests/test_float32.py) and only the value type differs.

- ``memory``: for each case (LinearSVC defaults on debian-lib, binary; LinearSVC at
  C = 1 on debian-sections20, 20 classes one-vs-rest; BudgetSVC defaults on ijcnn1) and
  dtype, X is saved as an uncompressed .npz in a temp folder; a fresh child process
  imports numpy, scipy, scikit-learn and pybudget, runs a tiny fit of the same kind (so
  that lazily loaded code is in place), loads X, fits, and reads VmRSS/VmHWM
  (/proc/self/status) after each phase.  The high-water mark is reset after loading
  (``/proc/self/clear_refs`` 5, Linux >= 4.0) so that the fit's own peak is seen; the
  load's peak is recorded before the reset.  Reported: X's size (data + indices +
  indptr), the fit's peak above the loaded data (target: <= 10 % of X + 5 MB for
  float32), the peak above the imports (data + fit; target: float32 <= 0.75x float64),
  and the model's own arrays (coef_ and what the estimator keeps for warm starts; for
  20 classes coef_ alone is K x d float64), which are output, not copies of X.
- ``speed``: LinearSVC with hard shrinking and with AVSF on debian-lib, C in {1, 100},
  tol 0.01: the whole ``fit`` (checks, row norms and solve) in wall and in thread CPU
  seconds, and the solver's ``fit_time_``, float32 and float64 interleaved, medians of
  r; ratio float32/float64 (target <= 0.9).

Writes bench/results/float32/<stem>.json and .md.

    PYBUDGET_DATA=<data folder> python bench/float32.py [--study memory speed] [-r 5]
    python bench/float32.py --quick
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from common import machine, results_dir, write_outputs

HERE = Path(__file__).resolve().parent
MB = 2 ** 20
MEMORY_CASES = {   # name -> (data set, estimator, parameters)
    "debian-lib LinearSVC": ("debian-lib", "LinearSVC", {}),
    "debian-sections20 LinearSVC (20 classes)": ("debian-sections20", "LinearSVC",
                                                 {"C": 1.0}),
    "ijcnn1 BudgetSVC": ("ijcnn1", "BudgetSVC", {}),
}
QUICK_CASES = {"a9a LinearSVC": ("a9a", "LinearSVC", {}),
               "a9a BudgetSVC": ("a9a", "BudgetSVC", {"budget": 50})}


def status():
    """VmRSS and VmHWM of this process, in MiB."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                key, value = line.split(":")
                out[key] = int(value.split()[0]) / 1024
    return out


def reset_peak():
    """Reset VmHWM to the current VmRSS; False where the kernel does not allow it."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def memory_child(job):
    """One fit in this fresh process; prints its memory record as JSON."""
    import warnings
    warnings.simplefilter("ignore")
    import scipy.sparse as sp
    import sklearn  # noqa: F401

    import pybudget
    make = getattr(pybudget, job["estimator"])
    # a tiny fit of the same kind first: every module and cache the fit loads lazily
    # is in place before the first mark, so the marks see data, not code
    rng = np.random.default_rng(0)
    Xw = sp.random(200, 30, density=0.3, format="csr", random_state=rng,
                   dtype=np.dtype(job["dtype"]))
    make(random_state=0, **job["params"]).fit(Xw, np.arange(200) % job["n_classes"])
    del Xw
    marks = {"imports": status()}
    X = sp.load_npz(job["x"])
    y = np.load(job["y"])
    marks["loaded"] = status()
    was_reset = reset_peak()
    marks["after_reset"] = status()
    est = make(random_state=0, **job["params"])
    t0 = time.perf_counter()
    est.fit(X, y)
    seconds = time.perf_counter() - t0
    marks["fit"] = status()
    model = {}
    if hasattr(est, "coef_"):
        model["coef_"] = est.coef_.nbytes
        warm = getattr(est, "_warm", None) or {}
        model["warm-start state"] = sum(s.alpha.nbytes + s.prefs.nbytes + s.perm.nbytes
                                        for s in warm.get("states", []))
    else:
        model["support_vectors_"] = est.support_vectors_.nbytes
    print(json.dumps({"marks": marks, "reset": was_reset, "seconds": seconds,
                      "x_bytes": int(X.data.nbytes + X.indices.nbytes + X.indptr.nbytes),
                      "dtype": str(X.dtype), "index_dtype": str(X.indices.dtype),
                      "shape": list(X.shape), "nnz": int(X.nnz), "model": model}))


def run_child(args, build=None):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(build or HERE.parent), str(HERE), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, str(HERE / "float32.py"), *args], env=env,
                       capture_output=True, text=True, cwd=str(HERE))
    if r.returncode:
        raise RuntimeError(f"child failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def load32(name, quick):
    """(X32 CSR float32 with int32 indices, y) of a data set's training part."""
    from pybudget.datasets import load
    X, y = load(name, dtype=np.float32)[:2]
    if quick:
        X, y = X[:3000], y[:3000]
    assert X.dtype == np.float32 and X.indices.dtype == np.int32
    return X, y


def study_memory(cases, quick, build=None):
    import scipy.sparse as sp
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for case, (name, estimator, params) in cases.items():
            X32, y = load32(name, quick)
            np.save(Path(tmp) / "y.npy", y)
            runs = {}
            for dt in ("float32", "float64"):
                path = Path(tmp) / f"X_{dt}.npz"
                sp.save_npz(path, X32.astype(dt), compressed=False)
                job = {"x": str(path), "y": str(Path(tmp) / "y.npy"), "dtype": dt,
                       "estimator": estimator, "params": params,
                       "n_classes": int(np.unique(y).size)}
                runs[dt] = r = run_child(["--memory-child", json.dumps(job)], build)
                m = r["marks"]
                r["load_peak_above_imports"] = m["loaded"]["VmHWM"] - m["imports"]["VmRSS"]
                r["loaded_above_imports"] = m["loaded"]["VmRSS"] - m["imports"]["VmRSS"]
                r["fit_peak_above_loaded"] = m["fit"]["VmHWM"] - m["loaded"]["VmRSS"]
                r["peak_above_imports"] = (max(m["fit"]["VmHWM"], m["loaded"]["VmHWM"])
                                           - m["imports"]["VmRSS"])
                r["model_mb"] = sum(r["model"].values()) / MB
                print(f"{case} {dt}: {json.dumps(r)}", file=sys.stderr)
            a, b = runs["float32"], runs["float64"]
            limit = 0.1 * a["x_bytes"] / MB + 5.0
            rows.append({
                "case": case, "data": name, "estimator": estimator, "params": params,
                "runs": runs, "x32_mb": a["x_bytes"] / MB, "x64_mb": b["x_bytes"] / MB,
                "fit_peak_limit_mb": limit,
                "fit_peak_met": a["fit_peak_above_loaded"] <= limit,
                "fit_peak_net_of_model_met":
                    a["fit_peak_above_loaded"] - a["model_mb"] <= limit,
                "peak_ratio": a["peak_above_imports"] / b["peak_above_imports"],
                "peak_ratio_met": a["peak_above_imports"] <= 0.75 * b["peak_above_imports"]})
    md = ["| case | dtype | X (MB) | loaded (MB) | fit peak above loaded (MB) | limit "
          "(10 % X + 5) | met | model arrays (MB) | peak above imports (MB) "
          "| float32 / float64 | met (<= 0.75) |", "|---" * 11 + "|"]
    for r in rows:
        a, b = r["runs"]["float32"], r["runs"]["float64"]
        met = "yes" if r["fit_peak_met"] else "no (net of model arrays: {})".format(
            "yes" if r["fit_peak_net_of_model_met"] else "no")
        md.append(f"| {r['case']} | float32 | {a['x_bytes'] / MB:.1f} "
                  f"| {a['loaded_above_imports']:.1f} | {a['fit_peak_above_loaded']:.1f} "
                  f"| {r['fit_peak_limit_mb']:.1f} | {met} | {a['model_mb']:.1f} "
                  f"| {a['peak_above_imports']:.1f} | {r['peak_ratio']:.2f} "
                  f"| {'yes' if r['peak_ratio_met'] else 'no'} |")
        md.append(f"| | float64 | {b['x_bytes'] / MB:.1f} | {b['loaded_above_imports']:.1f} "
                  f"| {b['fit_peak_above_loaded']:.1f} | | | {b['model_mb']:.1f} "
                  f"| {b['peak_above_imports']:.1f} | | |")
    reset = all(x["reset"] for r in rows for x in r["runs"].values())
    md += ["", "MB = 2^20 bytes.  `loaded`: resident growth from loading X (and y) from "
           "the .npz; `fit peak above loaded`: the fit's high-water mark minus the "
           "resident size after loading (" + ("the mark was reset after loading"
                                             if reset else "the mark could NOT be reset: "
                                             "it includes the load's own peak") + "); "
           "`model arrays`: coef_ plus the per-problem state kept for warm starts "
           "(LinearSVC) or the support vectors (BudgetSVC), all float64, held at the end "
           "of the fit; `peak above imports`: the largest resident size of the whole "
           "child (load + fit) minus its size after the imports."]
    return rows, md


def study_speed(reps, Cs, quick):
    import warnings
    from pybudget import LinearSVC
    X32, y = load32("a9a" if quick else "debian-lib", quick)
    Xs = {"float32": X32, "float64": X32.astype(np.float64)}
    rows = []
    for selection in ("shrinking", "avsf"):
        for C in Cs:
            runs = {"float32": [], "float64": []}
            for rep in range(reps):
                # interleaved, the order alternating between repeats
                for dt in (("float32", "float64") if rep % 2 == 0
                           else ("float64", "float32")):
                    est = LinearSVC(C=C, selection=selection, tol=0.01, random_state=0)
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        t0, c0 = time.perf_counter(), time.thread_time()
                        est.fit(Xs[dt], y)
                        wall = time.perf_counter() - t0
                        cpu = time.thread_time() - c0
                    runs[dt].append({"wall": wall, "cpu": cpu, "solver": est.fit_time_,
                                     "steps": int(est.n_steps_)})
            med = {dt: {k: float(np.median([r[k] for r in v]))
                        for k in ("wall", "cpu", "solver")} for dt, v in runs.items()}
            rows.append({"selection": selection, "C": C, "runs": runs, "median": med,
                         "same_steps": runs["float32"][0]["steps"]
                         == runs["float64"][0]["steps"],
                         **{f"ratio_{k}": med["float32"][k] / med["float64"][k]
                            for k in ("wall", "cpu", "solver")}})
    md = ["| selection | C | fit, wall (s): float64 / float32 | ratio | fit, CPU (s): "
          "float64 / float32 | ratio | solver only, wall (s) | ratio | steps equal |",
          "|---" * 9 + "|"]
    for r in rows:
        m = r["median"]
        md.append(f"| {r['selection']} | {r['C']:g} "
                  + "".join(f"| {m['float64'][k]:.3f} / {m['float32'][k]:.3f} "
                            f"| {r['ratio_' + k]:.3f} " for k in ("wall", "cpu", "solver"))
                  + f"| {r['same_steps']} |")
    md += ["", f"Medians of {reps} interleaved runs (the dtype order alternating), tol "
           "0.01.  `fit`: the whole LinearSVC.fit (checks, row norms, solve), in wall "
           "seconds and in CPU seconds of the thread (other jobs on a busy machine disturb "
           "the wall clock far more); `solver only`: its fit_time_.  Ratios are float32 / "
           "float64; target <= 0.9."]
    return rows, md


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--study", nargs="+", choices=("memory", "speed"),
                    default=["memory", "speed"])
    ap.add_argument("-r", "--repeats", type=int, default=5)
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: 3000 rows of a9a, one repeat, seconds")
    ap.add_argument("--build", help="memory study: folder whose pybudget/ the fitting "
                    "children import (e.g. an older build; default: this checkout)")
    ap.add_argument("--stem", help="name of the output files (default: float32[_study])")
    ap.add_argument("--memory-child", help=argparse.SUPPRESS)
    ap.add_argument("--out", default=str(results_dir("float32")))
    a = ap.parse_args()
    if a.memory_child:
        return memory_child(json.loads(a.memory_child))
    reps = 1 if a.quick else a.repeats
    t0 = time.perf_counter()
    record = {"machine": machine(), "repeats": reps, "quick": a.quick}
    text = []
    if "memory" in a.study:
        rows, md = study_memory(QUICK_CASES if a.quick else MEMORY_CASES, a.quick, a.build)
        record["memory"] = rows
        record["build"] = a.build
        text += ["### float32 input: memory of a fit (fresh child per fit, X from an "
                 "uncompressed .npz)" + (f"; the fits import `{a.build}`" if a.build else ""),
                 "", *md, ""]
    if "speed" in a.study:
        rows, md = study_speed(reps, [1.0] if a.quick else [1.0, 100.0], a.quick)
        record["speed"] = rows
        text += [f"### float32 input: LinearSVC speed on {'a9a' if a.quick else 'debian-lib'}"
                 f", float32 against float64 of the same values", "", *md, ""]
    record["seconds"] = time.perf_counter() - t0
    stem = (a.stem or "float32" + ("_" + "_".join(a.study) if len(a.study) == 1 else "")
            ) + ("_quick" if a.quick else "")
    write_outputs(stem, record, "\n".join(text), a.out)
    print("\n".join(text))


if __name__ == "__main__":
    main()
