"""Why the ring needs laps, and why a bias makes it slow: dual coordinate descent in
the visiting orders of a ring, in plain numpy (independent of pybudget's solvers).

Rows of a sample are dealt to K fixed blocks (rows p, p + K, ... to block p, as
pybudget.dask deals in-memory rows).  One sweep visits every row once, in one of these
orders:

- ``random``: one fresh permutation of all rows (one machine);
- ``blocks K``: block 0 in a fresh permutation, then block 1, ... (a ring round, one lap);
- ``laps K L``: each block's fresh permutation cut into L shares, visited share by
  share, block by block (a ring round with L laps);
- ``fixed``: one permutation drawn once and repeated (cyclic CD).

Exact coordinate steps on the L2-regularised hinge or squared hinge dual, with or
without a bias feature (liblinear's: a constant column B = 1 in every row).  Reported:
the sweeps to a relative duality gap of --tol (primal and dual from the iterate), capped
at --cap, median over --seeds.

    python bench/ring_order.py [--data debian-lib] [--n 2000] [--cap 150] [--quick]
"""
import argparse
import time

import numpy as np

from common import machine, results_dir, write_outputs
from pybudget.datasets import load

ORDERS = [("random", 1, 1), ("blocks", 2, 1), ("blocks", 3, 1), ("blocks", 4, 1),
          ("laps", 2, 4), ("laps", 2, 16), ("fixed", 1, 1)]


def sweep_order(kind, blocks, laps, rng, fixed):
    if kind == "random":
        return rng.permutation(sum(b.size for b in blocks))
    if kind == "fixed":
        return fixed
    shares = [np.array_split(rng.permutation(b), laps) for b in blocks]
    return np.concatenate([s[lap] for lap in range(laps) for s in shares])


def sweeps_to_gap(X, y, C, loss, bias, kind, K, laps, seed, tol, cap):
    """(sweeps to the gap, or None; the gap reached) of exact dual CD in one order."""
    n = X.shape[0]
    D = 0.5 / C if loss == "squared_hinge" else 0.0
    upper = np.inf if loss == "squared_hinge" else C
    rows = [(X.indices[X.indptr[i]:X.indptr[i + 1]], X.data[X.indptr[i]:X.indptr[i + 1]])
            for i in range(n)]
    qd = np.array([v @ v for _, v in rows]) + bias * bias + D
    rng = np.random.default_rng(seed)
    blocks = [np.arange(p, n, K) for p in range(K)]
    fixed = rng.permutation(n)
    a, w, wb = np.zeros(n), np.zeros(X.shape[1]), 0.0
    gap = 1.0
    for t in range(1, cap + 1):
        for i in sweep_order(kind, blocks, laps, rng, fixed):
            idx, val = rows[i]
            G = y[i] * (w[idx] @ val + bias * wb) - 1.0 + D * a[i]
            new = min(max(a[i] - G / qd[i], 0.0), upper)
            step = (new - a[i]) * y[i]
            if step:
                w[idx] += step * val
                wb += step * bias
                a[i] = new
        margin = np.maximum(0.0, 1.0 - y * (X @ w + bias * wb))
        w2 = w @ w + wb * wb
        primal = 0.5 * w2 + C * np.sum(margin ** 2 if loss == "squared_hinge" else margin)
        dual = a.sum() - 0.5 * w2 - 0.5 * D * (a @ a)
        gap = (primal - dual) / primal
        if gap <= tol:
            return t, gap
    return None, gap


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="debian-lib")
    ap.add_argument("--n", type=int, default=2000, help="rows of the sample (the first)")
    ap.add_argument("--C", type=float, default=1.0)
    ap.add_argument("--tol", type=float, default=1e-6)
    ap.add_argument("--cap", type=int, default=150)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    ap.add_argument("--losses", nargs="+", default=["squared_hinge", "hinge"])
    ap.add_argument("--stem", default=None)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=str(results_dir("distributed")))
    a = ap.parse_args()
    if a.quick:
        a.data, a.n, a.cap, a.seeds, a.losses = "a9a", 300, 20, [0], ["squared_hinge"]
        a.tol = 1e-2
    X, y, _, _ = load(a.data)
    X, y = X[:a.n].tocsr(), np.asarray(y[:a.n], dtype=float)
    t_start = time.perf_counter()
    rows = []
    for loss in a.losses:
        for bias in (0.0, 1.0):
            for kind, K, laps in ORDERS:
                runs = [sweeps_to_gap(X, y, a.C, loss, bias, kind, K, laps, s, a.tol, a.cap)
                        for s in a.seeds]
                done = [t for t, _ in runs if t is not None]
                row = {"loss": loss, "bias": bias, "order": kind, "K": K, "laps": laps,
                       "sweeps": [t for t, _ in runs], "gaps": [g for _, g in runs],
                       "median": float(np.median(done)) if len(done) == len(runs) else None}
                rows.append(row)
                print(loss, bias, kind, K, laps, row["sweeps"],
                      [f"{g:.1e}" for g in row["gaps"]], flush=True)
    stem = "ring_order" + ("_quick" if a.quick else "") + (f"_{a.stem}" if a.stem else "")
    lines = [f"### ring_order: exact dual CD in a ring's visiting orders, {a.data}[:{a.n}], "
             f"C = {a.C:g}, sweeps to a relative gap of {a.tol:g} (cap {a.cap}; seeds "
             f"{a.seeds})", "",
             "| loss | bias | order | sweeps per seed | gap reached |", "|---|---|---|---|---|"]
    for r in rows:
        name = {"random": "random (one machine)", "fixed": "one fixed permutation",
                "blocks": f"{r['K']} blocks", "laps": f"{r['K']} blocks, {r['laps']} laps"}
        sweeps = ", ".join(str(t) if t is not None else f"> {a.cap}" for t in r["sweeps"])
        lines.append(f"| {r['loss']} | {'B = 1' if r['bias'] else 'none'} | "
                     f"{name[r['order']]} | {sweeps} | "
                     f"{', '.join(f'{g:.1e}' for g in r['gaps'])} |")
    lines += ["", f"Command: `python bench/ring_order.py{' --quick' if a.quick else ''}` "
              f"({time.perf_counter() - t_start:.0f} s)."]
    write_outputs(stem, {"machine": machine(), "args": vars(a), "rows": rows},
                  "\n".join(lines) + "\n", a.out)


if __name__ == "__main__":
    main()
