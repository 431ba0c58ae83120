"""Robustness figures: thread speed-up, Ctrl-C latency, memory after 200 fits, and
same-seed reproducibility across processes.

- threads: two fits of the same kind run one after the other, then at once in two
  threads; ratio = threaded wall time / sequential wall time (target <= 0.65 on 2 cores).
- interrupt: a subprocess starts a long fit (linear: tol 1e-9; bsgd: budget 500, 10
  epochs; bsca: budget 500, 40 epochs, each about 10-20 s here; linear-ovr, bsca-ovr:
  one-vs-rest on n_jobs=2 threads, see pybudget/_interrupt_child.py); SIGINT is sent 1 s in;
  latency = time from the signal to the KeyboardInterrupt reaching Python, and whether
  the estimator was left unfitted (or with its previous fit intact).
- memory: in a fresh subprocess, 20 warm-up fit+predict cycles, then 200 more; growth
  of the resident set (target: within 5 MB).
- reproducibility: 3 subprocesses with different PYTHONHASHSEED train with the same
  random_state and report a SHA-256 of the model arrays; all must agree.

    python bench/robustness.py [--quick] [--out DIR] [-r 3]
"""
import argparse
import json
import os
import signal
import subprocess
import tempfile
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from common import machine, results_dir, write_outputs  # noqa: E402

HERE = Path(__file__).resolve()


def data(rows=None):
    from pybudget.datasets import load
    X, y, _, _ = load("a9a")
    if rows:
        X, y = X[:rows], y[:rows]
    return X, y


def workloads(quick):
    from pybudget import BudgetSVC, LinearSVC
    return {
        "LinearSVC(avsf, C=1, tol=0.01)":
            lambda: LinearSVC(C=1.0, tol=0.01, random_state=0, max_iter=100000),
        "LinearSVC(shrinking, C=1, tol=0.01)":
            lambda: LinearSVC(C=1.0, tol=0.01, selection="shrinking", random_state=0,
                              max_iter=100000),
        "BudgetSVC(bsgd, B=100)" if quick else "BudgetSVC(bsgd, B=200, 2 epochs)":
            (lambda: BudgetSVC(budget=100, random_state=0)) if quick else
            (lambda: BudgetSVC(budget=200, epochs=2, random_state=0)),
        "BudgetSVC(bsca, B=100)" if quick else "BudgetSVC(bsca, B=200)":
            (lambda: BudgetSVC(solver="bsca", budget=100, random_state=0)) if quick else
            (lambda: BudgetSVC(solver="bsca", budget=200, random_state=0)),
    }


# ------------------------------------------------------------------ threads

def bench_threads(quick, repeats):
    X, y = data(8000 if quick else None)
    out = []
    for name, make in workloads(quick).items():
        make().fit(X, y)  # warm-up
        seq, par = [], []
        for _ in range(repeats):
            t0 = time.perf_counter()
            make().fit(X, y)
            make().fit(X, y)
            seq.append(time.perf_counter() - t0)
            threads = [threading.Thread(target=lambda: make().fit(X, y)) for _ in range(2)]
            t0 = time.perf_counter()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            par.append(time.perf_counter() - t0)
        s, p = float(np.median(seq)), float(np.median(par))
        out.append({"workload": name, "sequential_s": s, "threaded_s": p, "ratio": p / s,
                     "sequential_runs": seq, "threaded_runs": par})
        print(f"threads {name}: sequential {s:.3f}s, 2 threads {p:.3f}s, ratio {p / s:.2f}",
              file=sys.stderr)
    return out


# ------------------------------------------------------------------ interrupt

def interrupt_once(kind, refit, delay):
    p = subprocess.Popen([sys.executable, "-m", "pybudget._interrupt_child", kind,
                          "refit" if refit else "fresh"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         cwd=tempfile.gettempdir())
    line = p.stdout.readline()
    assert line.strip() == "READY", (line, p.stderr.read())
    time.sleep(delay)
    sent = time.time()
    p.send_signal(signal.SIGINT)
    try:
        out, err = p.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        p.kill()
        return {"kind": kind, "refit": refit, "hang": True}
    status = json.loads(out.strip().splitlines()[-1])
    status.update(kind=kind, refit=refit, delay=delay)
    if status.get("interrupted"):
        status["latency_s"] = status.pop("caught") - sent
    return status


def bench_interrupt(quick):
    out = []
    for kind in (("linear",) if quick else ("linear", "bsgd", "bsca", "linear-ovr",
                                            "bsca-ovr")):
        for refit in (False, True):
            r = interrupt_once(kind, refit, delay=1.0)
            out.append(r)
            print(f"interrupt {kind} ({'refit' if refit else 'fresh'}): "
                  f"{r.get('latency_s', float('nan')):.3f}s, fitted={r.get('fitted')}, "
                  f"previous intact={r.get('previous_fit_intact')}", file=sys.stderr)
            if quick:
                break
    return out


# ------------------------------------------------------------------ memory

CHILD_MEMORY = r"""
import json, sys, warnings, gc, os, tempfile
warnings.simplefilter("ignore")
import numpy as np
import pybudget
from pybudget import BudgetSVC, LinearSVC
from pybudget.datasets import load
X, y, Xt, yt = load("a9a")
X, y = X[:int(sys.argv[1])], y[:int(sys.argv[1])]
n = int(sys.argv[2])
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
path = os.path.join(tempfile.mkdtemp(), "m")
def cycle(i):
    for est in (LinearSVC(C=1.0, random_state=i), LinearSVC(C=1.0, selection="shrinking"),
                BudgetSVC(budget=50, random_state=i), BudgetSVC(budget=50, solver="bsca"),
                BudgetSVC(budget=50).partial_fit(X[:500], y[:500], classes=[-1, 1])):
        est.fit(X, y)
        est.predict(Xt[:2000])
        pybudget.save(est, path)
        pybudget.load(path).predict(Xt[:100])
for i in range(20):
    cycle(i)
gc.collect()
r0 = rss()
trace = []
for i in range(n):
    cycle(i)
    if i % 20 == 19:
        gc.collect()
        trace.append(rss() - r0)
gc.collect()
print(json.dumps({"rss_before_mb": r0, "rss_after_mb": rss(), "growth_mb": rss() - r0,
                  "trace_mb": trace}))
"""


def bench_memory(quick):
    rows, n = (2000, 40) if quick else (5000, 200)
    out = subprocess.run([sys.executable, "-c", CHILD_MEMORY, str(rows), str(n)],
                         capture_output=True, text=True, check=True, cwd=tempfile.gettempdir())
    r = json.loads(out.stdout.strip().splitlines()[-1])
    r.update(rows=rows, cycles=n, fits_per_cycle=5)
    print(f"memory: {n} cycles x 5 fit+predict+save+load: RSS {r['rss_before_mb']:.1f} -> "
          f"{r['rss_after_mb']:.1f} MB ({r['growth_mb']:+.2f} MB)", file=sys.stderr)
    return r


# ------------------------------------------------------------------ reproducibility

CHILD_REPRO = r"""
import hashlib, json, warnings
warnings.simplefilter("ignore")
import numpy as np
from pybudget import BudgetSVC, LinearSVC, solve_linear
from pybudget.datasets import load
X, y, _, _ = load("a9a")
X, y = X[:3000], y[:3000]
h = {}
for name, est in [("avsf", LinearSVC(random_state=7)),
                  ("shrinking", LinearSVC(selection="shrinking", random_state=7)),
                  ("uniform", LinearSVC(selection="uniform", random_state=7)),
                  ("bsgd", BudgetSVC(budget=40, epochs=2, random_state=7)),
                  ("bsca", BudgetSVC(budget=40, solver="bsca", random_state=7))]:
    est.fit(X, y)
    arrays = ([est.coef_, est.intercept_] if name in ("avsf", "shrinking", "uniform")
              else [est.support_vectors_, est.dual_coef_])
    blob = b"".join(np.ascontiguousarray(a).tobytes() for a in arrays)
    h[name] = hashlib.sha256(blob).hexdigest()
est = BudgetSVC(budget=40, random_state=7)
for s in range(0, 3000, 1000):
    est.partial_fit(X[s:s + 1000], y[s:s + 1000], classes=[-1, 1])
h["partial_fit"] = hashlib.sha256(est.dual_coef_.tobytes()).hexdigest()
print(json.dumps(h))
"""


def bench_repro(n_proc=3):
    hashes = []
    for seed in range(n_proc):
        env = dict(os.environ, PYTHONHASHSEED=str(seed * 1000 + 1))
        out = subprocess.run([sys.executable, "-c", CHILD_REPRO], capture_output=True,
                             text=True, check=True, env=env, cwd=tempfile.gettempdir())
        hashes.append(json.loads(out.stdout.strip().splitlines()[-1]))
    same = {k: len({h[k] for h in hashes}) == 1 for k in hashes[0]}
    print(f"reproducibility across {n_proc} processes: {same}", file=sys.stderr)
    return {"processes": n_proc, "identical": same, "hashes": hashes}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smoke run (small, one case each)")
    ap.add_argument("-r", "--repeats", type=int, default=3)
    ap.add_argument("--out", default=str(results_dir("robustness")))
    ap.add_argument("--only", nargs="+", choices=["threads", "interrupt", "memory", "repro"],
                    default=["threads", "interrupt", "memory", "repro"])
    args = ap.parse_args()
    repeats = 1 if args.quick else args.repeats
    rec = {"machine": machine(), "params": vars(args), "loadavg_start": os.getloadavg()}
    md = []
    if "threads" in args.only:
        rec["threads"] = bench_threads(args.quick, repeats)
        md += ["### Two fits in two threads vs one after the other", "",
               "| workload | sequential s | 2 threads s | ratio (target <= 0.65) |",
               "|---|---|---|---|"]
        md += [f"| {r['workload']} | {r['sequential_s']:.3f} | {r['threaded_s']:.3f} | "
               f"{r['ratio']:.2f} |" for r in rec["threads"]]
        md.append("")
    if "interrupt" in args.only:
        rec["interrupt"] = bench_interrupt(args.quick)
        md += ["### Ctrl-C during a long fit (SIGINT 1 s after the fit starts)", "",
               "| solver | estimator before | latency s | KeyboardInterrupt | fitted after | "
               "previous fit intact |", "|---|---|---|---|---|---|"]
        for r in rec["interrupt"]:
            lat = r.get("latency_s")
            md.append(f"| {r['kind']} | {'fitted (refit)' if r['refit'] else 'unfitted'} | "
                      f"{'—' if lat is None else f'{lat:.3f}'} | {r.get('interrupted')} | "
                      f"{r.get('fitted')} | {r.get('previous_fit_intact', '—')} |")
        md.append("")
    if "memory" in args.only:
        m = rec["memory"] = bench_memory(args.quick)
        md += ["### Memory after repeated fits", "",
               f"{m['cycles']} cycles of 5 fits (LinearSVC avsf/shrinking, BudgetSVC bsgd/bsca,"
               f" partial_fit) + predict + save + load on {m['rows']} a9a rows: RSS "
               f"{m['rss_before_mb']:.1f} -> {m['rss_after_mb']:.1f} MB "
               f"(**{m['growth_mb']:+.2f} MB**, target within 5 MB); every 20 cycles: "
               + ", ".join(f"{t:+.1f}" for t in m["trace_mb"]), ""]
    if "repro" in args.only:
        r = rec["repro"] = bench_repro(2 if args.quick else 3)
        md += ["### Same random_state across processes (different PYTHONHASHSEED)", "",
               "| model | identical in all processes |", "|---|---|"]
        md += [f"| {k} | {v} |" for k, v in r["identical"].items()]
        md.append("")
    rec["loadavg_end"] = os.getloadavg()
    md.append(f"Load average (1 min) at start {rec['loadavg_start'][0]:.2f}, at end "
              f"{rec['loadavg_end'][0]:.2f} on {os.cpu_count()} CPUs (other jobs share the "
              "machine: the thread ratio needs both cores free).")
    stem = "robustness_quick" if args.quick else "robustness"
    write_outputs(stem, rec, "\n".join(md) + "\n", args.out)
    print("\n".join(md))


if __name__ == "__main__":
    main()
