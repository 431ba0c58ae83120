"""Budgeted SVMs on dense and sparse support vectors (``BudgetSVC(storage=)``).

Each cell (data, budget, storage) is one BSGD epoch (``BudgetSVC`` defaults otherwise;
C and gamma of bench/budget.py's PARAMS, and C = 1, gamma = 1 for the debian text sets)
in a fresh single-threaded process: the fit's time and its parts (maintenance: the
distances to every SV, the partner search and the merge; the rest: the kernel rows of
the steps and the offset), prediction on the test rows, test accuracy, the peak resident
memory of the process (VmHWM, before the fit and after the prediction), the mean
non-zeros of a support vector, and a digest of the model (both storages give the same
bits).  Repeats
run the cells in an order that rotates; medians.  A dense cell whose model would take
more than --dense-max-gib is skipped (debian-lib's 353,593 columns: 2.8 GiB at B = 500).
``storage="auto"``'s choice is recorded per cell.  Writes
bench/results/budget_storage/<stem>.{json,md}.

    PYBUDGET_DATA=<data> python bench/budget_storage.py [--data a9a w8a debian-lib]
        [--budgets 100 500] [--storages dense sparse] [-r 3] [--stem NAME] [--quick]
        [--out DIR]
"""
import argparse
import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from budget import PARAMS  # noqa: E402
from common import machine, results_dir, write_outputs  # noqa: E402

TEXT = {"debian-lib": (1.0, 1.0), "debian-sections20": (1.0, 1.0),
        "debian-lib-small": (1.0, 1.0)}


def vm_hwm_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM"):
                return int(line.split()[1]) / 1024


def child(args):
    """One cell in this fresh process: prints its record."""
    import scipy.sparse as sp

    from pybudget import BudgetSVC
    from pybudget.budget.svm import sparse_storage
    from pybudget.datasets import load
    X, y, Xt, yt = load(args.data[0])
    if Xt is None:      # (no test file: the last quarter of the rows)
        cut = X.shape[0] * 3 // 4
        X, y, Xt, yt = X[:cut], y[:cut], X[cut:], y[cut:]
    if args.quick:
        X, y, Xt, yt = X[:3000], y[:3000], Xt[:1000], yt[:1000]
    C, gamma = TEXT.get(args.data[0], PARAMS.get(args.data[0], (32.0, 2.0 ** -7)))
    B = args.budgets[0]
    before = vm_hwm_mib()
    if args.storage in PEERS:
        return peer(args.storage, C, gamma, X, y, Xt, yt, before)
    clf = BudgetSVC(C=C, gamma=gamma, budget=B, storage=args.storage, random_state=0)
    fit, pred, predict = fit_predict(clf, X, y, Xt)
    peak = vm_hwm_mib()
    parts = time_parts(clf, X, y, args.storage == "sparse") if args.parts else {}
    # (the digest of the SVs' non-zeros, the same for both storages; no dense copy of
    # sparse SVs, which would be most of the memory here)
    Z = sp.csr_matrix(clf.support_vectors_)
    digest = hashlib.sha256(b"".join(np.ascontiguousarray(a).tobytes() for a in (
        Z.data, Z.indices, Z.indptr, clf.dual_coef_, clf.intercept_))).hexdigest()
    print(json.dumps({
        "fit_s": fit, "maintenance_s": clf.merge_time_, "predict_s": predict,
        "accuracy": 100.0 * float(np.mean(pred == yt)), "n_sv": Z.shape[0],
        "sv_nnz_mean": Z.nnz / max(Z.shape[0], 1), "n_merges": clf.n_merges_,
        "peak_mib": peak, "before_fit_mib": before, "digest": digest,
        "auto_is_sparse": bool(sparse_storage("auto", X, B + 1)), **parts,
        "rows_nnz_mean": X.nnz / X.shape[0], "d": X.shape[1]}))


def fit_predict(clf, X, y, Xt):
    """(seconds of clf.fit(X, y), the predictions on Xt, their seconds)."""
    t0 = time.perf_counter()
    clf.fit(X, y)
    fit = time.perf_counter() - t0
    t0 = time.perf_counter()
    pred = clf.predict(Xt)
    return fit, pred, time.perf_counter() - t0


def time_parts(clf, X, y, sparse, rows=2000, events=200):
    """The parts of a step and of a maintenance event, timed on the fitted model (one
    thread): a kernel row and its weighted sum (``decision_rows`` over ``rows`` training
    rows), the squared distances from one SV to all (``sq_distances``, through a Python
    call of about a microsecond), the partner search (``Maintainer.partners``: the
    distances and every candidate's weight degradation, no merge) and whole maintenance
    events (``Maintainer.step`` after adding a training row to the full model: distances,
    partner search, merge).  Microseconds each, all on warm caches (the search runs once
    untimed first); the merge is the event less the search."""
    import scipy.sparse as sp

    from pybudget._core import _validation as V
    from pybudget.budget._budget import BudgetModel
    from pybudget.budget._maintain import Maintainer
    Z, beta = clf.support_vectors_, clf.dual_coef_.T
    n_sv = Z.shape[0]
    mdl = BudgetModel(Z.shape[1], beta.shape[1], n_sv + 1, clf.gamma_, 0, sparse)
    mdl.load(Z, beta)
    Xs = X[:rows]
    xsq = V.row_sqnorms(Xs)
    t0 = time.perf_counter()
    mdl.decision_rows(Xs, xsq, 1)
    krow = (time.perf_counter() - t0) / Xs.shape[0]
    ps = range(min(n_sv, events))
    t0 = time.perf_counter()
    for p in ps:
        mdl.sq_distances(p)
    dist = (time.perf_counter() - t0) / len(ps)
    mt = Maintainer(mdl)
    coef = np.full(beta.shape[1], float(np.median(np.abs(beta))))
    spent = search = 0.0
    for i in range(events):
        row = sp.csr_matrix(X[i % X.shape[0]])
        mdl.add(row, coef if y[i % X.shape[0]] == y[0] else -coef)
        mt.partners(mdl)            # (the event below runs on warm caches: so does this)
        t0 = time.perf_counter()
        mt.partners(mdl)
        search += time.perf_counter() - t0
        t0 = time.perf_counter()
        mt.step(mdl)
        spent += time.perf_counter() - t0
    return {"kernel_row_us": 1e6 * krow, "distances_us": 1e6 * dist,
            "search_us": 1e6 * search / events, "event_us": 1e6 * spent / events}


def peer(name, C, gamma, X, y, Xt, yt, before):
    """A peer's fit at the same C (and gamma): pybudget's LinearSVC, or LIBSVM's exact
    kernel SVM (scikit-learn's SVC)."""
    if name == "linearsvc":
        from pybudget import LinearSVC
        clf = LinearSVC(C=C, random_state=0)
    else:
        from sklearn.svm import SVC
        clf = SVC(C=C, gamma=gamma, cache_size=1000)
    fit, pred, predict = fit_predict(clf, X, y, Xt)
    n_sv = int(clf.support_vectors_.shape[0]) if name == "libsvm" else 0
    print(json.dumps({"fit_s": fit, "maintenance_s": 0.0, "predict_s": predict,
                      "accuracy": 100.0 * float(np.mean(pred == yt)), "n_sv": n_sv,
                      "sv_nnz_mean": 0.0, "n_merges": 0, "peak_mib": vm_hwm_mib(),
                      "before_fit_mib": before, "digest": name, "auto_is_sparse": False,
                      "rows_nnz_mean": X.nnz / X.shape[0], "d": X.shape[1]}))


PEERS = ("linearsvc", "libsvm")


def run_cell(args, data, B, storage):
    cmd = [sys.executable, __file__, "--child", "--data", data, "--budgets", str(B),
           "--storage", storage]
    cmd += ["--quick"] if args.quick else []
    cmd += ["--parts"] if args.parts and storage not in PEERS else []
    try:
        out = subprocess.run(cmd, capture_output=True, text=True,
                             timeout=args.peer_timeout if storage in PEERS else None)
    except subprocess.TimeoutExpired:
        return None
    if out.returncode:
        raise RuntimeError(f"{data} B={B} {storage}: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", nargs="+", default=["a9a", "w8a", "ijcnn1", "debian-lib"])
    ap.add_argument("--budgets", type=int, nargs="+", default=[100, 500])
    ap.add_argument("-r", "--repeats", type=int, default=3)
    ap.add_argument("--dense-max-gib", type=float, default=1.0,
                    help="skip dense cells whose SV rows (twice: row- and feature-major) "
                         "would take more")
    ap.add_argument("--storages", nargs="+", default=["dense", "sparse"],
                    choices=["dense", "sparse"])
    ap.add_argument("--peers", nargs="*", default=[], choices=PEERS,
                    help="also fit these at the same C and gamma, once per data set: "
                         "pybudget's LinearSVC, LIBSVM's exact SVC")
    ap.add_argument("--peer-timeout", type=float, default=1800.0,
                    help="seconds a peer's fit and prediction may take (else: not finished)")
    ap.add_argument("--stem", default="budget_storage", help="output file name")
    ap.add_argument("--parts", action="store_true",
                    help="also time the parts of a step and of a maintenance event on the "
                         "fitted model (kernel row, distances, partner search, whole event)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=str(results_dir("budget_storage")))
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--storage", default="dense", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args)
    if args.quick:      # (the embedded sets: a smoke run)
        args.data, args.budgets, args.repeats = ["a9a", "debian-lib-small"], [50], 1
    from pybudget.datasets import load
    cells = []
    for data in args.data:
        d = load(data)[0].shape[1]
        for B in args.budgets:
            for storage in args.storages:
                if storage == "dense" and 16.0 * (B + 1) * d > args.dense_max_gib * 2**30:
                    continue
                cells.append((data, B, storage))
        cells += [(data, 0, name) for name in args.peers]
    runs = {c: [] for c in cells}
    for r in range(args.repeats):
        order = cells[r % len(cells):] + cells[:r % len(cells)]
        for cell in order:
            if cell[2] in PEERS and runs[cell]:
                continue          # (a peer runs once: its time is not the question)
            runs[cell].append(run_cell(args, *cell))
            print(cell, runs[cell][-1] and {k: round(v, 3) if isinstance(v, float) else v
                                            for k, v in runs[cell][-1].items()
                                            if k != "digest"},
                  file=sys.stderr, flush=True)
    rows = []
    for (data, B, storage), rs in runs.items():
        if rs == [None]:
            rows.append({"data": data, "budget": B, "storage": storage,
                         "finished": False, "timeout_s": args.peer_timeout})
            continue
        med = {k: float(np.median([x[k] for x in rs])) for k in
               ("fit_s", "maintenance_s", "predict_s", "peak_mib", "before_fit_mib",
                "kernel_row_us", "distances_us", "search_us", "event_us") if k in rs[0]}
        rows.append({"data": data, "budget": B, "storage": storage, **med,
                     "fit_each": [x["fit_s"] for x in rs],
                     "accuracy": rs[0]["accuracy"], "n_merges": rs[0]["n_merges"],
                     "n_sv": rs[0]["n_sv"],
                     "sv_nnz_mean": rs[0]["sv_nnz_mean"], "d": rs[0]["d"],
                     "rows_nnz_mean": rs[0]["rows_nnz_mean"],
                     "auto_is_sparse": rs[0]["auto_is_sparse"],
                     "digests_agree": len({x["digest"] for x in rs}) == 1,
                     "digest": rs[0]["digest"]})
    by = {(r["data"], r["budget"], r["storage"]): r for r in rows}
    for r in rows:
        if r.get("finished") is False or r["storage"] in PEERS:
            continue
        other = by.get((r["data"], r["budget"], "dense" if r["storage"] == "sparse"
                        else "sparse"))
        r["same_bits_as_other_storage"] = None if other is None else (
            other["digest"] == r["digest"])
    record = {"machine": machine(), "args": vars(args), "rows": rows}
    md = ["# Budgeted SVMs on dense and sparse support vectors", "",
          f"One BSGD epoch per cell, fresh single-threaded processes, medians of "
          f"{args.repeats} (each fit's seconds in brackets).  \"auto\": the storage "
          f"`storage=\"auto\"` picks.", "",
          "| data (d, non-zeros a row) | B | storage | auto | fit (s) | maintenance (s) "
          "| rest (s) | predict (s) | accuracy % | SV non-zeros | peak MiB (before fit) "
          "| same bits |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r.get("finished") is False:
            md.append(f"| {r['data']} | - | {r['storage']} | - | not finished in "
                      f"{r['timeout_s']:.0f} s | | | | | | | |")
            continue
        if r["storage"] in PEERS:
            md.append(f"| {r['data']} | {r['n_sv'] or '-'} | {r['storage']} | - | "
                      f"{r['fit_s']:.2f} | | | {r['predict_s']:.2f} | {r['accuracy']:.2f} "
                      f"| | {r['peak_mib']:.0f} ({r['before_fit_mib']:.0f}) | |")
            continue
        each = ", ".join(f"{t:.2f}" for t in r["fit_each"])
        same = {None: "-", True: "yes", False: "no"}[r["same_bits_as_other_storage"]]
        md.append(f"| {r['data']} ({r['d']}, {r['rows_nnz_mean']:.0f}) | {r['budget']} | "
                  f"{r['storage']} | {'sparse' if r['auto_is_sparse'] else 'dense'} | "
                  f"{r['fit_s']:.2f} ({each}) | {r['maintenance_s']:.2f} | "
                  f"{r['fit_s'] - r['maintenance_s']:.2f} | {r['predict_s']:.2f} | "
                  f"{r['accuracy']:.2f} | {r['sv_nnz_mean']:.0f} | {r['peak_mib']:.0f} "
                  f"({r['before_fit_mib']:.0f}) | {same} |")
    timed = [r for r in rows if "event_us" in r]
    if timed:
        md += ["", "Parts (microseconds, one thread, medians): a kernel row and its sum; "
               "the squared distances from one SV to all; the partner search (those "
               "distances and every candidate's weight degradation); a whole maintenance "
               "event (partner search and merge).", "",
               "| data | B | storage | kernel row | distances | partner search | event |",
               "|---|---|---|---|---|---|---|"]
        md += [f"| {r['data']} | {r['budget']} | {r['storage']} | {r['kernel_row_us']:.1f} | "
               f"{r['distances_us']:.1f} | {r['search_us']:.1f} | {r['event_us']:.1f} |"
               for r in timed]
    write_outputs(args.stem + ("_quick" if args.quick else ""), record,
                  "\n".join(md) + "\n", args.out)


if __name__ == "__main__":
    main()
