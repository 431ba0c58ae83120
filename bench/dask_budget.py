"""pybudget.dask.BudgetSVC against one machine's BudgetSVC.

Each data set as a Dask array of ``--chunks`` contiguous row chunks (the file's order),
persisted on a LocalCluster of ``--workers`` worker processes x 1 thread; both sides with
BudgetSVC's defaults (C = 1, gamma = "scale", B = 500, one epoch) and the seeds
``--seeds``, one machine's fit (single-threaded, in this process) and the cluster's
(each ``--laps`` setting) interleaved seed by seed:

- accuracy on the test file (median and worst seed) and the difference of the medians
  (goal: within 0.2 point);
- fit time (medians), the cluster's over one machine's (after an untimed first fit that
  imports pybudget on the workers);
- the model each run of visits hands on: bytes a hop (median), the same model held as
  sparse support vectors (where they would pay), and the runs of the first seed;
- the same bits: the first seed's model (laps "auto") on 1, 2 and 3 workers, with rules
  that spread the partitions over every worker, against the threads engine's.

With ``--bsca``: one-vs-rest BSCA on the cluster against one machine's n_jobs
(``bsca``).  With ``--big``: rows beyond each worker's memory limit against one
machine's stream (``big``).  With ``--peer``: against dask-ml's nearest choice on the
same cluster and data (random features, RBFSampler or Nystroem with n_components = B, and
``Incremental(SGDClassifier)``), accuracy and fit time (``peer``).

Writes <out>/<stem>.json and .md (stem: dask_budget).  ``--engine threads`` runs the
cluster side in this process (the same models, no Dask): for accuracy on more data.
A data set without a test file is split 70/30 (a fixed draw).

    python bench/dask_budget.py [--data a9a ijcnn1 w8a] [--seeds 0 1 2 3 4] [--laps auto 1]
    python bench/dask_budget.py --solver bsca  # binary BSCA travelling the partitions
    python bench/dask_budget.py --quick     # 2,000 rows of a9a, B = 50: seconds
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

from common import machine, median_min_max, results_dir, write_outputs  # noqa: E402


def chunked(X, y, k):
    import dask.array as da
    step = -(-X.shape[0] // k)
    return (da.from_array(X, chunks=(step, X.shape[1]), asarray=False),
            da.from_array(y, chunks=step))


def state_bytes_sparse(m):
    """The bytes a hop would send with the final model's SVs held sparse (values,
    int32 indices, row pointers; the rest as dense)."""
    Z = sp.csr_matrix(m.support_vectors_)
    n = Z.shape[0]
    per_sv = 8 + 8 + 4 + 8          # squared norm, coefficient, source, average's sum
    return Z.data.nbytes + 4 * Z.nnz + 4 * (n + 1) + per_sv * n


def same_model(a, b):
    """Whether two fitted BudgetSVCs hold the same model, bit for bit."""
    def parts(v):         # (sparse SVs compared as stored: 10,000 x 353,591 would not fit)
        return (v.data, v.indices, v.indptr, v.shape) if sp.issparse(v) else (v,)
    return all(sp.issparse(getattr(a, k)) == sp.issparse(getattr(b, k))
               and all(np.array_equal(u, v) for u, v in zip(parts(getattr(a, k)),
                                                            parts(getattr(b, k))))
               for k in ("support_vectors_", "dual_coef_", "intercept_"))


def cluster(workers):
    import distributed
    cl = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                  dashboard_address=None)
    c = distributed.Client(cl)
    c.wait_for_workers(workers)
    return cl, c


def study(name, args, kw):
    import pybudget
    import pybudget.dask as pbd
    from pybudget.datasets import load
    X, y, Xt, yt = load(name)
    if Xt is None:      # (no test file: a fixed 70/30 split, the training rows as stored)
        test = np.random.default_rng(0).random(X.shape[0]) < 0.3
        X, y, Xt, yt = X[~test], y[~test], X[test], y[test]
    if args.quick:
        X, y = X[:2000], y[:2000]
    threads = args.engine == "threads"
    cl, c = (None, None) if threads else cluster(args.workers)
    where = {"engine": "threads"} if threads else {"client": c}
    runs = []
    try:
        Xd, yd = chunked(X, y, args.chunks)
        if not threads:
            Xd, yd = c.persist([Xd, yd])
            # (a first fit imports pybudget on the workers: not timed)
            pbd.BudgetSVC(budget=10, client=c).fit(Xd[:2000], yd[:2000])
        for seed in args.seeds:
            one = pybudget.BudgetSVC(random_state=seed, **kw)
            t0 = time.perf_counter()
            one.fit(X, y)
            t_one = time.perf_counter() - t0
            r = {"seed": seed, "one_time": t_one, "one_acc": 100 * one.score(Xt, yt)}
            for laps in args.laps:
                m = pbd.BudgetSVC(random_state=seed, laps=laps, **where, **kw)
                t0 = time.perf_counter()
                m.fit(Xd, yd)
                r[laps] = {"time": time.perf_counter() - t0, "acc": 100 * m.score(Xt, yt),
                           "laps": m.laps_, "hop_bytes": m.hop_bytes_.tolist(),
                           "client_bytes": m.bytes_sent_["client"],
                           "workers": m.partition_workers_,
                           "sparse_hop_bytes": state_bytes_sparse(m),
                           "n_sv": int(m.support_vectors_.shape[0])}
                print(f"{name} seed {seed}: one machine {r['one_acc']:.2f} % {t_one:.2f} s, "
                      f"laps={laps}: {r[laps]['acc']:.2f} % {r[laps]['time']:.2f} s",
                      file=sys.stderr)
            runs.append(r)
    finally:
        if c is not None:
            c.close()
            cl.close()
    bits = {}
    seed = args.seeds[0]
    spread = pbd.ClusterRules(small_bytes=1000)
    Xd, yd = chunked(X, y, args.chunks)
    ref = pbd.BudgetSVC(random_state=seed, engine="threads", rules=spread, **kw).fit(Xd, yd)
    for workers in args.bit_workers:
        cl, c = cluster(workers)
        try:
            t0 = time.perf_counter()
            m = pbd.BudgetSVC(random_state=seed, client=c, rules=spread, **kw).fit(Xd, yd)
            t_spread = time.perf_counter() - t0
            runs_spread = len(m.hop_bytes_)
        finally:
            c.close()
            cl.close()
        same = same_model(m, ref)
        bits[workers] = {"same": same, "workers_used": len(set(m.partition_workers_)),
                         "runs": runs_spread, "time": t_spread,
                         "client_bytes": m.bytes_sent_["client"]}
    return {"data": name, "n": X.shape[0], "d": X.shape[1], "runs": runs, "bits": bits}


def bsca(name, args, kw):
    """One-vs-rest BSCA: pybudget.dask.BudgetSVC(solver="bsca") on the Dask array
    (each problem whole on a worker) against one machine's BudgetSVC(solver="bsca",
    n_jobs=--workers) in this process, on the same cores, fits interleaved seed by
    seed (after an untimed cluster fit that imports pybudget on the workers); the
    same model is checked for every seed."""
    import pybudget
    import pybudget.dask as pbd
    from pybudget.datasets import load
    X, y, Xt, yt = load(name)
    if args.quick:
        X, y = X[:2000], y[:2000]
    cl, c = cluster(args.workers)
    runs = []
    try:
        Xd, yd = c.persist(list(chunked(X, y, args.chunks)))
        pbd.BudgetSVC(solver="bsca", budget=10, client=c).fit(Xd[:500], yd[:500])
        for seed in args.seeds:
            one = pybudget.BudgetSVC(solver="bsca", random_state=seed, n_jobs=args.workers,
                                     **kw)
            t0 = time.perf_counter()
            one.fit(X, y)
            t_one = time.perf_counter() - t0
            m = pbd.BudgetSVC(solver="bsca", random_state=seed, client=c, **kw)
            t0 = time.perf_counter()
            m.fit(Xd, yd)
            t_cl = time.perf_counter() - t0
            runs.append({"seed": seed, "one_time": t_one, "time": t_cl,
                         "same": same_model(m, one), "acc": 100 * m.score(Xt, yt),
                         "sparse": sp.issparse(m.support_vectors_),
                         "bytes": m.bytes_sent_})
            print(f"{name} seed {seed}: n_jobs={args.workers} {t_one:.2f} s, cluster "
                  f"{t_cl:.2f} s ({t_cl / t_one:.2f}x), same model {runs[-1]['same']}, "
                  f"{runs[-1]['acc']:.2f} %", file=sys.stderr)
    finally:
        c.close()
        cl.close()
    return {"data": name, "n": X.shape[0], "d": X.shape[1],
            "classes": int(np.unique(y).shape[0]), "runs": runs}


def bsca_markdown(rows, args, seconds):
    out = [f"### One-vs-rest BSCA: pybudget.dask.BudgetSVC(solver=\"bsca\") on "
           f"{args.workers} workers x 1 thread against BudgetSVC(solver=\"bsca\", "
           f"n_jobs={args.workers})\n",
           "| data | classes | SVs | n_jobs fit s | cluster fit s | cluster / n_jobs "
           "(medians) | per-seed ratios | same model | accuracy % |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        one = float(np.median([x["one_time"] for x in r["runs"]]))
        t = float(np.median([x["time"] for x in r["runs"]]))
        ratios = ", ".join(f"{x['time'] / x['one_time']:.2f}" for x in r["runs"])
        same = all(x["same"] for x in r["runs"])
        acc = float(np.median([x["acc"] for x in r["runs"]]))
        kind = "sparse" if r["runs"][0]["sparse"] else "dense"
        out.append(f"| {r['data']} | {r['classes']} | {kind} | {one:.2f} | {t:.2f} | "
                   f"{t / one:.2f} | {ratios} | {'yes' if same else 'NO'} | {acc:.2f} |")
    out.append(f"\nSeeds {args.seeds} ({args.chunks}-chunk Dask arrays), defaults "
               f"otherwise. Command: `python bench/dask_budget.py "
               f"{' '.join(sys.argv[1:])}` ({seconds:.0f} s).\n")
    return "\n".join(out)


def peer(name, args, kw):
    """dask-ml's nearest choice on the same cluster and data: random features with
    n_components = B (scikit-learn's RBFSampler, or Nystroem on B rows drawn from
    the training rows) at BudgetSVC's gamma, each chunk transformed where it lives,
    and dask_ml.wrappers.Incremental(SGDClassifier(hinge, alpha = 1 / (n C))): one
    pass of partial_fit over the chunks; against pybudget.dask.BudgetSVC (laps "auto")
    in the same run, seed by seed."""
    from dask_ml.wrappers import Incremental
    from sklearn.kernel_approximation import Nystroem, RBFSampler
    from sklearn.linear_model import SGDClassifier

    import pybudget.dask as pbd
    from pybudget.budget.svm import scale_gamma
    from pybudget.datasets import load
    X, y, Xt, yt = load(name)
    if args.quick:
        X, y = X[:2000], y[:2000]
    B = kw.get("budget", 500)
    gamma = scale_gamma(X)
    classes = np.unique(y)
    cl, c = cluster(args.workers)
    runs = []
    try:
        Xd, yd = c.persist(list(chunked(X, y, args.chunks)))
        pbd.BudgetSVC(budget=10, client=c).fit(Xd[:2000], yd[:2000])     # (imports)
        for seed in args.seeds:
            r = {"seed": seed}
            t0 = time.perf_counter()
            m = pbd.BudgetSVC(random_state=seed, client=c, **kw).fit(Xd, yd)
            r["budget"] = {"time": time.perf_counter() - t0, "acc": 100 * m.score(Xt, yt)}
            for label, make in (("rbf", lambda: RBFSampler(gamma=gamma, n_components=B,
                                                           random_state=seed)),
                                ("nystroem", lambda: Nystroem(gamma=gamma, n_components=B,
                                                              random_state=seed))):
                t0 = time.perf_counter()
                rows = np.random.default_rng(seed).choice(X.shape[0], B, replace=False)
                feat = make().fit(X[np.sort(rows)])       # (B rows: the landmarks)
                Z = Xd.map_blocks(feat.transform, chunks=(Xd.chunks[0], (B,)),
                                  dtype=np.float64, meta=np.empty((0, 0)))
                sgd = SGDClassifier(loss="hinge", alpha=1.0 / (X.shape[0] * 1.0),
                                    random_state=seed)
                inc = Incremental(sgd, scoring="accuracy").fit(Z, yd, classes=classes)
                elapsed = time.perf_counter() - t0
                acc = 100 * float(np.mean(inc.estimator_.predict(feat.transform(Xt)) == yt))
                r[label] = {"time": elapsed, "acc": acc}
            print(f"{name} seed {seed}: " + ", ".join(
                f"{k} {v['acc']:.2f} % {v['time']:.2f} s" for k, v in r.items()
                if k != "seed"), file=sys.stderr)
            runs.append(r)
    finally:
        c.close()
        cl.close()
    return {"data": name, "n": X.shape[0], "d": X.shape[1], "B": B, "runs": runs}


def big(name, args, kw):
    """Rows that exceed each worker's memory limit: a problem generated on the workers
    (``pybudget.dask.make_classification``, 4 partitions on --workers workers of
    --big-memory MiB each), against one machine's stream of the same rows from a LIBSVM
    file (``pybudget.stream.stream_fit``, chunks of 10,000 rows), both BudgetSVC(budget
    --big-budget, random_state each of --seeds); accuracy on rows of the same problem
    neither saw (a fifth partition's)."""
    import tempfile

    import distributed
    from sklearn.datasets import dump_svmlight_file

    import pybudget
    import pybudget.dask as pbd
    from pybudget.dask._sources import generate_rows
    from pybudget.stream import stream_fit
    N, D, K = args.big_rows, args.big_features, args.big_nnz
    B = kw.get("budget", args.big_budget)
    g = pbd.make_classification(N, D, nnz_per_row=K, n_partitions=4, random_state=0)
    held = pbd.make_classification(N * 5 // 4, D, nnz_per_row=K, n_partitions=5,
                                   random_state=0)
    Xt, yt = generate_rows(held, 4)          # (the same problem, rows no fit saw)
    out = {"data": name, "n": N, "d": D, "nnz_per_row": K, "rows_mib": g.nbytes / 2**20,
           "memory_limit_mib": args.big_memory, "workers": args.workers, "B": B,
           "runs": []}
    import dask
    # (Dask pauses a worker at 80 % of its limit, counting the partitions' rows, which it
    # does not manage; the visits run one at a time, so one paused worker would hold the
    # fit: the study switches the pause off and keeps the terminate limit)
    with dask.config.set({"distributed.worker.memory.pause": False}), \
            distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1,
                                     processes=True, memory_limit=f"{args.big_memory}MiB",
                                     dashboard_address=None) as cl, \
            distributed.Client(cl) as c:
        for seed in args.seeds:
            t0 = time.perf_counter()
            m = pbd.BudgetSVC(budget=B, random_state=seed, client=c).fit(g)
            out["runs"].append({"seed": seed, "cluster": {
                "time": time.perf_counter() - t0, "acc": 100 * m.score(Xt, yt),
                "worker_peak_mib": m.worker_peak_memory_, "laps": m.laps_,
                "client_bytes": m.bytes_sent_["client"]}})
    with tempfile.TemporaryDirectory() as tmp:
        path = f"{tmp}/rows.svm"
        with open(path, "wb") as f:
            for p in range(4):
                dump_svmlight_file(*generate_rows(g, p), f, zero_based=False)
        for run in out["runs"]:
            t0 = time.perf_counter()
            one = stream_fit(pybudget.BudgetSVC(budget=B, random_state=run["seed"]), path,
                             n_features=D)
            run["stream"] = {"time": time.perf_counter() - t0,
                             "acc": 100 * one.score(Xt, yt)}
            print(f"big, seed {run['seed']}: cluster {run['cluster']['acc']:.2f} % "
                  f"{run['cluster']['time']:.1f} s, stream {run['stream']['acc']:.2f} % "
                  f"{run['stream']['time']:.1f} s", file=sys.stderr)
    return out


def big_markdown(rows, args, seconds):
    r = rows[0]
    out = [f"### Rows beyond each worker's memory limit\n\n"
           f"A generated problem of {r['n']:,} rows x {r['d']:,} columns "
           f"({r['nnz_per_row']} non-zeros a row, {r['rows_mib']:.0f} MiB of rows) on "
           f"{r['workers']} workers of {r['memory_limit_mib']} MiB each, "
           f"BudgetSVC(budget={r['B']}), accuracy % on held-out rows of the same "
           f"problem:\n",
           "| random_state | pybudget.dask.BudgetSVC (laps) | fit s | worker peaks MiB | "
           "one machine's stream_fit | fit s | difference |", "|---|---|---|---|---|---|---|"]
    for run in r["runs"]:
        c, s = run["cluster"], run["stream"]
        peaks = ", ".join(f"{v:.0f}" for _, v in sorted(c["worker_peak_mib"].items()))
        out.append(f"| {run['seed']} | {c['acc']:.2f} ({c['laps']}) | {c['time']:.1f} | "
                   f"{peaks} | {s['acc']:.2f} | {s['time']:.1f} | "
                   f"{c['acc'] - s['acc']:+.2f} |")
    cl = float(np.median([x["cluster"]["acc"] for x in r["runs"]]))
    st = float(np.median([x["stream"]["acc"] for x in r["runs"]]))
    out.append(f"| medians | {cl:.2f} | | | {st:.2f} | | {cl - st:+.2f} |")
    out.append(f"\nCommand: `python bench/dask_budget.py {' '.join(sys.argv[1:])}` "
               f"({seconds:.0f} s).\n")
    return "\n".join(out)


def fit_lines(rows, labels, ratio_to=None):
    """Table rows "| data | fit | median accuracy (worst) | median fit s |" of each run's
    fits ``labels`` ({key: label}), and the fit time over ``ratio_to``'s if given."""
    out = []
    for r in rows:
        t_ref = (float(np.median([x[ratio_to]["time"] for x in r["runs"]]))
                 if ratio_to else None)
        for key, label in labels.items():
            acc = [x[key]["acc"] for x in r["runs"]]
            t = float(np.median([x[key]["time"] for x in r["runs"]]))
            ratio = f" {t / t_ref:.2f} |" if ratio_to else ""
            out.append(f"| {r['data']} | {label} | {np.median(acc):.2f} ({min(acc):.2f}) | "
                       f"{t:.2f} |{ratio}")
    return out


def peer_markdown(rows, args, seconds):
    out = [f"### pybudget.dask.BudgetSVC against random features with dask-ml's "
           f"Incremental(SGDClassifier) ({args.chunks}-chunk Dask arrays, {args.workers} "
           f"workers x 1 thread, n_components = B = {rows[0]['B']})\n",
           "| data | method | accuracy % (worst) | fit s |", "|---|---|---|---|"]
    names = {"budget": "pybudget.dask.BudgetSVC (laps auto)",
             "rbf": "RBFSampler + Incremental(SGDClassifier)",
             "nystroem": "Nystroem + Incremental(SGDClassifier)"}
    out += fit_lines(rows, names)
    out.append(f"\nSeeds {args.seeds}, medians. Command: `python bench/dask_budget.py "
               f"{' '.join(sys.argv[1:])}` ({seconds:.0f} s).\n")
    return "\n".join(out)


def markdown(rows, args, seconds):
    out = [f"### pybudget.dask.BudgetSVC(solver=\"{args.solver}\") against one machine's "
           f"BudgetSVC ({args.chunks}-chunk Dask arrays, {args.workers} workers x 1 "
           f"thread)\n",
           "| data | one machine: accuracy % (worst) | fit s | laps | cluster: accuracy % "
           "(worst) | fit s | / one machine | accuracy difference | bytes a hop | sparse "
           "SVs a hop | runs |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        R = r["runs"]
        one = [x["one_acc"] for x in R]
        to = float(np.median([x["one_time"] for x in R]))
        for laps in args.laps:
            dk = [x[laps]["acc"] for x in R]
            td = float(np.median([x[laps]["time"] for x in R]))
            hops = [h for x in R for h in x[laps]["hop_bytes"]]
            sparse = float(np.median([x[laps]["sparse_hop_bytes"] for x in R]))
            out.append(f"| {r['data']} | {np.median(one):.2f} ({min(one):.2f}) | {to:.2f} | "
                       f"{R[0][laps]['laps']} | {np.median(dk):.2f} ({min(dk):.2f}) | "
                       f"{td:.2f} | {td / to:.2f} | {np.median(dk) - np.median(one):+.2f} | "
                       f"{np.median(hops) / 1e3:.0f} kB | {sparse / 1e3:.0f} kB | "
                       f"{len(R[0][laps]['hop_bytes'])} |")
    if not args.bit_workers:
        out.append(f"\nSeeds {args.seeds}, medians; the cluster side on the "
                   f"{args.engine} engine. Command: `python bench/dask_budget.py "
                   f"{' '.join(sys.argv[1:])}` ({seconds:.0f} s).\n")
        return "\n".join(out)
    out += ["", "Same bits as the threads engine, the first seed, laps \"auto\", rules that "
            "spread the partitions over the workers (in brackets: the workers that held "
            "partitions; the runs of visits, each a hop of the model; the fit's time, its "
            "first on a new cluster; the bytes through the client):", "",
            "| data | " + " | ".join(f"{w} worker(s)" for w in args.bit_workers) + " |",
            "|---|" + "---|" * len(args.bit_workers)]
    for r in rows:
        out.append(f"| {r['data']} | " + " | ".join(
            f"{'yes' if b['same'] else 'NO'} ({b['workers_used']}; {b['runs']} runs; "
            f"{b['time']:.1f} s; {b['client_bytes'] / 1e6:.0f} MB)"
            for _, b in sorted(r["bits"].items())) + " |")
    out.append(f"\nSeeds {args.seeds}, medians; defaults of BudgetSVC on both sides "
               "(C = 1, gamma = \"scale\", B = 500, one epoch). "
               f"Command: `python bench/dask_budget.py {' '.join(sys.argv[1:])}` "
               f"({seconds:.0f} s).\n")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", nargs="+", default=None,
                    help="default: a9a ijcnn1 w8a; with --bsca: pendigits "
                         "debian-sections20")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--chunks", type=int, default=4)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--bit-workers", type=int, nargs="*", default=[1, 2, 3],
                    help="worker counts of the same-bits check (none: no check)")
    ap.add_argument("--engine", choices=("dask", "threads"), default="dask",
                    help="the cluster side on Dask, or on the threads engine (no Dask: "
                         "accuracy only, the same models)")
    ap.add_argument("--laps", nargs="+", default=["auto", "1"],
                    help="the cluster's laps settings (\"auto\" or a number)")
    ap.add_argument("--out", default=None)
    ap.add_argument("--stem", default="dask_budget", help="output file name")
    ap.add_argument("--peer", action="store_true",
                    help="against random features with dask-ml's Incremental("
                         "SGDClassifier) instead (needs pip install dask-ml)")
    ap.add_argument("--solver", choices=("bsgd", "bsca"), default="bsgd",
                    help="the default study's solver (both sides)")
    ap.add_argument("--bsca", action="store_true",
                    help="one-vs-rest BSCA on the cluster against one machine's n_jobs "
                         "(default data: pendigits debian-sections20)")
    ap.add_argument("--big", action="store_true",
                    help="rows beyond each worker's memory limit, against one machine's "
                         "stream (--big-rows, --big-features, --big-nnz, --big-memory)")
    ap.add_argument("--big-rows", type=int, default=3_000_000)
    ap.add_argument("--big-features", type=int, default=20)
    ap.add_argument("--big-nnz", type=int, default=20)
    ap.add_argument("--big-memory", type=int, default=650, help="MiB a worker")
    ap.add_argument("--big-budget", type=int, default=100)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    args.laps = [v if v == "auto" else int(v) for v in args.laps]
    args.data = args.data or (["pendigits", "debian-sections20"] if args.bsca
                              else ["a9a", "ijcnn1", "w8a"])
    kw = {} if args.solver == "bsgd" else {"solver": args.solver}
    if args.quick:
        args.data, args.seeds, args.bit_workers, args.workers = \
            ["pendigits" if args.bsca else "a9a"], [0], [1], 1
        args.big_rows = 20_000
        kw["budget"] = 50
    warnings.simplefilter("ignore")
    t0 = time.perf_counter()
    mode, table = ((big, big_markdown) if args.big else (peer, peer_markdown) if args.peer
                   else (bsca, bsca_markdown) if args.bsca else (study, markdown))
    rows = [mode(name, args, kw) for name in (["generated"] if args.big else args.data)]
    seconds = time.perf_counter() - t0
    record = {"machine": machine(), "args": vars(args), "params": kw, "rows": rows,
              "seconds": seconds}
    write_outputs(args.stem, record, table(rows, args, seconds),
                  args.out or results_dir("distributed"))
    if args.peer or args.big or args.bsca:
        return
    for r in rows:
        print(r["data"], median_min_max([x[args.laps[0]]["acc"] for x in r["runs"]]),
              file=sys.stderr)


if __name__ == "__main__":
    main()
