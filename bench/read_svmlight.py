"""Reading LIBSVM files: pybudget's parser against scikit-learn's ``load_svmlight_file``.

Each file is decompressed once into memory; then both readers parse the same bytes
(``io.BytesIO``) in alternation, ``--repeats`` times each, so that decompression and the
disk are not timed.  Reports median seconds (min-max), their ratio, peak memory
(VmHWM) of each reader in a fresh process, and whether both gave the same matrix and
labels bit for bit.

Writes bench/results/read_svmlight/read_svmlight[_quick].json and .md.

    python bench/read_svmlight.py [--data a9a ijcnn1 w8a debian-lib.train] [--repeats 5]
    python bench/read_svmlight.py --quick      # smoke run, a few seconds
"""
import argparse
import io
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import pybudget.datasets

from common import machine, median_min_max, results_dir, write_outputs
from pybudget._svmlight import open_binary, parse
from pybudget.datasets import external_data_dir

DATA = ["a9a", "ijcnn1", "w8a", "debian-lib.train", "debian-sections20.train"]

PEAK_CHILD = """
import io, sys
from pybudget._svmlight import open_binary, parse
with open_binary(sys.argv[2]) as f:
    text = f.read()
def hwm():
    return int(next(l for l in open("/proc/self/status") if l.startswith("VmHWM")).split()[1])
base = hwm()
if sys.argv[1] == "pybudget":
    X, y = parse(io.BytesIO(text), None, False, float, "x")
else:
    from sklearn.datasets import load_svmlight_file
    base = hwm()
    X, y = load_svmlight_file(io.BytesIO(text), zero_based=False)
print((hwm() - base) / 1024)
"""


def readers():
    from sklearn.datasets import load_svmlight_file
    return {"pybudget": lambda b: parse(io.BytesIO(b), None, False, np.float64, "x"),
            "scikit-learn": lambda b: load_svmlight_file(io.BytesIO(b), zero_based=False)}


def peak_mb(reader, path):
    """MB the reader adds to the peak resident memory of a fresh process holding the
    file's text (VmHWM: a child's ru_maxrss would start at its parent's peak)."""
    out = subprocess.run([sys.executable, "-c", PEAK_CHILD, reader, str(path)],
                         capture_output=True, text=True, check=True)
    return float(out.stdout.split()[-1])


def study(names, repeats, text_limit):
    rows = []
    for name in names:
        path = external_data_dir() / f"{name}.bz2"
        if not path.exists():              # (the embedded copy: a9a without the data)
            path = Path(pybudget.datasets.__file__).parent / "data" / f"{name}.bz2"
        with open_binary(path) as f:
            text = f.read(text_limit) if text_limit else f.read()
        text = text[:text.rfind(b"\n") + 1]
        times, results = {r: [] for r in readers()}, {}
        for _ in range(repeats):             # (alternating: the machine's drift hits both)
            for reader, read in readers().items():
                t0 = time.perf_counter()
                results[reader] = read(text)
                times[reader].append(time.perf_counter() - t0)
        (X, y), (X0, y0) = results["pybudget"], results["scikit-learn"]
        same = (X.shape == X0.shape and np.array_equal(X.indptr, X0.indptr)
                and np.array_equal(X.indices, X0.indices)
                and np.array_equal(X.data, X0.data) and np.array_equal(y, y0))
        row = {"data": name, "mb": len(text) / 2**20, "rows": X.shape[0], "nnz": X.nnz,
               "same_bits": bool(same)}
        for reader, ts in times.items():
            row[reader] = median_min_max(ts)
        row["ratio"] = row["scikit-learn"][0] / row["pybudget"][0]
        if not text_limit:
            row["peak_mb"] = {r: peak_mb(r, path) for r in times}
        rows.append(row)
        print(row, file=sys.stderr)
    return rows


def markdown(rows, repeats):
    lines = [f"### Reading LIBSVM text (median of {repeats}, min-max; bytes in memory)",
             "", "| data | MB | nnz | pybudget s | scikit-learn s | ratio | peak MB "
             "(pybudget / sklearn) | same bits |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        p, s = r["pybudget"], r["scikit-learn"]
        peak = r.get("peak_mb")
        peak = f"{peak['pybudget']:.0f} / {peak['scikit-learn']:.0f}" if peak else "-"
        lines.append(f"| {r['data']} | {r['mb']:.1f} | {r['nnz']:,} | {p[0]:.3f} "
                     f"({p[1]:.3f}-{p[2]:.3f}) | {s[0]:.3f} ({s[1]:.3f}-{s[2]:.3f}) | "
                     f"{r['ratio']:.1f} | {peak} | {'yes' if r['same_bits'] else 'NO'} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", nargs="+", default=DATA)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="a9a's first 200 kB, 2 repeats")
    ap.add_argument("--out", default=results_dir("read_svmlight"))
    args = ap.parse_args()
    names, repeats, limit = (["a9a"], 2, 200_000) if args.quick else \
        (args.data, args.repeats, 0)
    rows = study(names, repeats, limit)
    stem = "read_svmlight_quick" if args.quick else "read_svmlight"
    write_outputs(stem, {"machine": machine(), "repeats": repeats, "rows": rows},
                  markdown(rows, repeats), args.out)
    if not all(r["same_bits"] for r in rows):
        sys.exit("the readers disagree")


if __name__ == "__main__":
    main()
