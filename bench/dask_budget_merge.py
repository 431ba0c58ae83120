"""Speed with workers on one binary problem: K budgeted models trained at once, merged.

Each data set's training rows dealt to ``--chunks`` (K) blocks (row i to block i mod K,
the best case for the method: each block a sample of all rows; ``--blocks contiguous``
for the file's order), placed round-robin on a LocalCluster of ``--workers`` processes
x 1 thread.  Every seed:

- one machine: ``BudgetSVC`` (defaults: C = 1, gamma "scale", B = 500, one epoch) on all
  rows, in this process, single-threaded;
- the ring: ``pybudget.dask.BudgetSVC`` (the same defaults, laps "auto") on K
  partitions of the rows (in memory: dealt);
- merged: on each block at the same time, ``BudgetSVC(C = K C, gamma = all rows'
  "scale")`` (the same regulariser lambda = 1 / (n C) as one machine's), no offset;
  their K B support vectors stacked with coefficients / K (the average of the K
  models), merged down to B by the budget's own merging, the offset fitted on one
  machine's sample of all rows.  Timed from the first block's fit to the merged model.
- merged, then further epochs: the merged model continued by ``--more`` BSGD epochs over
  all rows on one machine (``partial_fit``, the time added to the merged one's): the
  least a further epoch on the cluster costs (the ring's epochs cost more than one
  machine's: docs/benchmarks.md, section 16).

Accuracy on the test file (a fixed 70/30 split without one), medians over the seeds.
Writes <out>/<stem>.json and .md (stem: dask_budget_merge).

    python bench/dask_budget_merge.py [--data a9a ijcnn1 w8a] [--seeds 0 1 2 3 4]
    python bench/dask_budget_merge.py --quick        # 2,000 rows of a9a, B = 50
"""
import argparse
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
# (bench/distributed.py would shadow Dask's ``distributed`` package: bench/ goes last)
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE] + [str(HERE)]

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

from common import machine, results_dir, write_outputs  # noqa: E402
from dask_budget import cluster, fit_lines  # noqa: E402


def fit_block(X, y, C, gamma, budget, seed):
    """One block's model (on a worker): (SVs, coefficients (n_sv, 1))."""
    import pybudget
    m = pybudget.BudgetSVC(C=C, gamma=gamma, budget=budget, offset=False,
                           random_state=seed).fit(X, y)
    return m.support_vectors_, m.dual_coef_.T


def estimator(classes, Z, dual, b, gamma, budget):
    """A fitted ``pybudget.BudgetSVC`` holding the model (Z, dual (1, n_sv), b)."""
    import pybudget
    est = pybudget.BudgetSVC(budget=budget, gamma=gamma)
    est.classes_, est.n_features_in_ = classes, Z.shape[1]
    est.support_vectors_, est.dual_coef_, est.intercept_ = Z, dual, b
    est.gamma_ = gamma
    return est


def merged_model(models, X, codes, gamma, budget, seed):
    """The K models' average merged down to ``budget`` SVs, and the offset fitted on
    one machine's sample of X (canonical CSR; codes 0/1): (Z, beta (n_sv, 1), b)."""
    import pybudget
    from pybudget._core import _validation as V
    from pybudget.budget._offset import draw_sample, model_offset
    from pybudget.budget.svm import _new_model
    K = len(models)
    sparse = sp.issparse(models[0][0])
    Z = (sp.vstack([m[0] for m in models], format="csr") if sparse
         else np.vstack([m[0] for m in models]))
    beta = np.vstack([m[1] for m in models]) / K
    p = pybudget.BudgetSVC(budget=budget, gamma=gamma)._params()
    mdl, mt = _new_model(X.shape[1], 1, Z.shape[0] + 1, gamma, p, Z=Z, beta=beta,
                         sparse=sparse)
    mt.merge_down(mdl, budget, 2)
    Zm, bm, _ = mdl.arrays()
    b = model_offset(Zm, bm, gamma, draw_sample(X, V.row_sqnorms(X), codes, seed))
    return Zm, bm, b


def more_epochs(Z, beta, X, codes, gamma, budget, seed, epochs):
    """BSGD continued from the model (Z, beta) at step n for ``epochs`` epochs over X
    on one machine, lambda = 1 / n and one machine's fit's tail average and offset:
    (Z, dual, b)."""
    import pybudget
    from pybudget.budget.svm import _bsgd, _effective_budget
    n, d = X.shape
    p = pybudget.BudgetSVC(budget=budget, gamma=gamma, epochs=epochs)._params()
    budget, M, cap = _effective_budget(p, n, d, 0)
    Z, dual, b, _, _ = _bsgd(X, codes, 2, p, gamma, seed, budget, M, cap, n_lambda=n,
                             sparse=sp.issparse(Z), state=(Z, beta, n), epochs=epochs)
    return Z, dual, b


def study(name, args, kw):
    import pybudget
    import pybudget.dask as pbd
    from pybudget.budget.svm import scale_gamma
    from pybudget.datasets import load
    X, y, Xt, yt = load(name)
    if Xt is None:
        test = np.random.default_rng(0).random(X.shape[0]) < 0.3
        X, y, Xt, yt = X[~test], y[~test], X[test], y[test]
    if args.quick:
        X, y = X[:2000], y[:2000]
    X = sp.csr_matrix(X)
    X.sort_indices()
    classes = np.unique(y)
    codes = (y == classes[1]).astype(np.int32)
    K, B = args.chunks, kw.get("budget", 500)
    gamma = scale_gamma(X)
    if args.blocks == "dealt":
        parts = [np.arange(p, X.shape[0], K) for p in range(K)]
    else:
        parts = np.array_split(np.arange(X.shape[0]), K)
    cl, c = cluster(args.workers)
    runs = []
    try:
        workers = sorted(c.scheduler_info()["workers"])
        blocks = [c.scatter((X[rows], y[rows]), workers=[workers[p % len(workers)]])
                  for p, rows in enumerate(parts)]
        where = [workers[p % len(workers)] for p in range(K)]
        c.gather([c.submit(lambda xy: fit_block(*xy, 1.0, gamma, 10, 0), blk,
                           workers=[w], pure=False) for blk, w in zip(blocks, where)])
        step = max(1, X.shape[0] // 500)
        pbd.BudgetSVC(budget=10, client=c).fit(X[::step], y[::step])     # (imports)
        for seed in args.seeds:
            r = {"seed": seed}
            t0 = time.perf_counter()
            one = pybudget.BudgetSVC(random_state=seed, **kw).fit(X, y)
            r["one"] = {"time": time.perf_counter() - t0, "acc": 100 * one.score(Xt, yt)}
            t0 = time.perf_counter()
            ring = pbd.BudgetSVC(random_state=seed, client=c, n_partitions=K, **kw)
            ring.fit(X, y)
            r["ring"] = {"time": time.perf_counter() - t0, "acc": 100 * ring.score(Xt, yt)}
            t0 = time.perf_counter()
            futs = [c.submit(lambda xy, s: fit_block(*xy, K * 1.0, gamma, B, s), blk,
                             seed * K + p, workers=[w], pure=False)
                    for p, (blk, w) in enumerate(zip(blocks, where))]
            models = c.gather(futs)
            t_fit = time.perf_counter() - t0
            Z, beta, b = merged_model(models, X, codes, gamma, B, seed)
            m = estimator(classes, Z, beta.T.copy(), b, gamma, B)
            r["merged"] = {"time": time.perf_counter() - t0, "fit_time": t_fit,
                           "acc": 100 * m.score(Xt, yt)}
            t1 = time.perf_counter()
            m = estimator(classes, *more_epochs(Z, beta, X, codes, gamma, B, seed + 1,
                                                args.more), gamma, B)
            r["more"] = {"time": r["merged"]["time"] + time.perf_counter() - t1,
                         "acc": 100 * m.score(Xt, yt)}
            print(f"{name} seed {seed}: " + ", ".join(
                f"{k} {r[k]['acc']:.2f} % {r[k]['time']:.2f} s"
                for k in ("one", "ring", "merged", "more")), file=sys.stderr)
            runs.append(r)
    finally:
        c.close()
        cl.close()
    return {"data": name, "n": X.shape[0], "d": X.shape[1], "K": K, "B": B, "runs": runs}


def markdown(rows, args, seconds):
    labels = {"one": "one machine", "ring": "ring (laps auto)",
              "merged": f"{args.chunks} models at once, merged",
              "more": f"merged + {args.more} epoch(s) on one machine"}
    out = [f"### One binary problem: {args.chunks} models trained at once and merged, on "
           f"{args.workers} workers x 1 thread ({args.blocks} blocks)\n",
           "| data | fit | accuracy % (worst) | fit s | / one machine |",
           "|---|---|---|---|---|"]
    out += fit_lines(rows, labels, ratio_to="one")
    out.append(f"\nSeeds {args.seeds}, medians. Command: `python bench/dask_budget_merge.py "
               f"{' '.join(sys.argv[1:])}` ({seconds:.0f} s).\n")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", nargs="+", default=["a9a", "ijcnn1", "w8a"])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--chunks", type=int, default=4)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--more", type=int, default=1, help="further epochs after the merge")
    ap.add_argument("--blocks", choices=("dealt", "contiguous"), default="dealt",
                    help="rows to the K blocks: dealt (row i to block i mod K: each block "
                         "a sample of all rows) or contiguous (the file's order: w8a's "
                         "last blocks then hold one class, and their fits fail)")
    ap.add_argument("--out", default=None)
    ap.add_argument("--stem", default="dask_budget_merge")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    kw = {}
    if args.quick:
        args.data, args.seeds = ["a9a"], [0]
        kw = {"budget": 50}
    warnings.simplefilter("ignore")
    t0 = time.perf_counter()
    rows = [study(name, args, kw) for name in args.data]
    seconds = time.perf_counter() - t0
    write_outputs(args.stem, {"machine": machine(), "args": vars(args), "params": kw,
                              "rows": rows, "seconds": seconds},
                  markdown(rows, args, seconds), args.out or results_dir("distributed"))


if __name__ == "__main__":
    main()
