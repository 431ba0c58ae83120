"""Peak memory of ``pybudget.stream_fit`` against the size of the LIBSVM file.

For each file size, a synthetic binary LIBSVM file is generated (d features, about
`nnz` nonzeros per row, labels from a random hyperplane plus noise), then trained in a
fresh subprocess two ways:

- stream: ``stream_fit(BudgetSVC(budget=B), path, chunk_size=c)`` (first pass for
  n_features/classes/gamma, then BSGD partial_fit chunk by chunk);
- in memory: ``load_svmlight_file`` + ``BudgetSVC(budget=B).fit`` (for contrast).

Each subprocess reports its peak resident set (``VmHWM`` of /proc/self/status) and its
resident set after imports, before touching the file; the difference is the memory the
training needed.

    python bench/streaming.py [--rows 50000 200000 800000] [--quick] [--out DIR]
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

sys.path.insert(0, str(Path(__file__).parent))
from common import machine, results_dir, write_outputs  # noqa: E402

CHILD = r"""
import json, resource, sys, time
import numpy as np
import pybudget
from pybudget import BudgetSVC, stream_fit
from pybudget._core._progress import peak_rss_mb as peak_mb   # (VmHWM, not ru_maxrss)
from sklearn.datasets import load_svmlight_file

def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20

mode, path, budget, chunk = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
base = rss_mb()
t0 = time.perf_counter()
est = BudgetSVC(budget=budget, random_state=0)
if mode == "stream":
    stream_fit(est, path, chunk_size=chunk)
else:
    X, y = load_svmlight_file(path)
    est.fit(X, y)
elapsed = time.perf_counter() - t0
peak = peak_mb()
print(json.dumps({"mode": mode, "base_mb": base, "peak_mb": peak, "time": elapsed,
                  "n_sv": int(est.support_vectors_.shape[0])}))
"""


def make_file(path, n_rows, d, nnz, seed=0, block=20000):
    """Synthetic LIBSVM file written block by block (bounded memory here too)."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(d)
    with open(path, "w") as f:
        for start in range(0, n_rows, block):
            m = min(block, n_rows - start)
            cols = np.sort(np.argsort(rng.random((m, d)), axis=1)[:, :nnz], axis=1)
            vals = np.round(rng.standard_normal((m, nnz)), 4)
            score = (vals * w[cols]).sum(axis=1) + 0.5 * rng.standard_normal(m)
            y = np.where(score > 0, 1, -1)
            idx = (cols + 1).astype(str)
            sv = vals.astype(str)
            pairs = np.char.add(np.char.add(idx, ":"), sv)
            lines = [f"{lab} " + " ".join(row) for lab, row in zip(y, pairs)]
            f.write("\n".join(lines) + "\n")


def run_child(mode, path, budget, chunk):
    out = subprocess.run([sys.executable, "-c", CHILD, mode, str(path), str(budget), str(chunk)],
                         capture_output=True, text=True, check=True, cwd=tempfile.gettempdir())
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, nargs="+", default=[50000, 200000, 800000])
    ap.add_argument("--features", type=int, default=100)
    ap.add_argument("--nnz", type=int, default=20)
    ap.add_argument("--budget", type=int, default=100)
    ap.add_argument("--chunk-size", type=int, default=10000)
    ap.add_argument("--no-in-memory", action="store_true", help="skip the in-memory contrast")
    ap.add_argument("--quick", action="store_true", help="smoke run (two tiny files)")
    ap.add_argument("--out", default=str(results_dir("streaming")))
    args = ap.parse_args()
    if args.quick:
        args.rows, args.budget, args.chunk_size = [2000, 6000], 20, 1000
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.rows:
            path = Path(tmp) / f"synthetic-{n}.txt"
            t0 = time.perf_counter()
            make_file(path, n, args.features, args.nnz)
            size_mb = os.path.getsize(path) / 2**20
            print(f"{n} rows: {size_mb:.1f} MB written in {time.perf_counter() - t0:.1f}s",
                  file=sys.stderr)
            modes = ["stream"] if args.no_in_memory else ["stream", "memory"]
            for mode in modes:
                r = run_child(mode, path, args.budget, args.chunk_size)
                r.update(rows=n, file_mb=size_mb, extra_mb=r["peak_mb"] - r["base_mb"])
                runs.append(r)
                print(f"  {mode}: peak {r['peak_mb']:.0f} MB (after imports {r['base_mb']:.0f} MB,"
                      f" +{r['extra_mb']:.0f} MB), {r['time']:.1f}s", file=sys.stderr)
    md = ["### stream_fit peak memory against file size", "",
          f"BudgetSVC(budget={args.budget}), bsgd, chunk_size={args.chunk_size}, "
          f"{args.features} features, ~{args.nnz} nonzeros per row. Peak RSS of a fresh "
          "process; 'extra' = peak minus RSS after imports.", "",
          "| rows | file MB | mode | peak RSS MB | extra MB | time s | SVs |",
          "|---|---|---|---|---|---|---|"]
    for r in runs:
        md.append(f"| {r['rows']} | {r['file_mb']:.1f} | {r['mode']} | {r['peak_mb']:.0f} | "
                  f"{r['extra_mb']:.0f} | {r['time']:.1f} | {r['n_sv']} |")
    record = {"machine": machine(), "params": vars(args), "runs": runs}
    stem = "streaming_quick" if args.quick else "streaming"
    write_outputs(stem, record, "\n".join(md) + "\n", args.out)
    print("\n".join(md))


if __name__ == "__main__":
    main()
