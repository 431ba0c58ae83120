"""pybudget.dask against the one-machine solvers: the same models, rounds against one
machine's sweeps, wall time and memory on a cluster.

Every ``tol`` here means what it means on one machine: the largest KKT violation over
all rows (for the SVR relative to max|y| - epsilon; a relative duality gap where
``selection="auto"`` or ``method="newton"`` takes the primal Newton route), on the Dask
side and on the one-machine side alike; a ring round is one sweep, so ``max_iter``
(``--max-rounds``) counts the same on both.

- ``correct``: a 2-worker LocalCluster (2 processes x 1 thread) started here; the
  training data as a Dask array of 4 row chunks (CSR blocks), ``n_partitions=4``, C = 1,
  ``random_state=0``, against ``pybudget.solve_linear`` with the same loss and bias, both
  at ``tol=1e-4`` (``--tol``; 0.1 would leave relative gaps up to 7e-2, too loose for
  the target below) and ``max_iter`` ``--max-rounds``.  Cells: a9a hinge with bias;
  debian-lib hinge and squared hinge, each with and without bias; debian-lib logistic;
  debian-size SVR (epsilon-insensitive, epsilon = 0 on both sides, LinearSVR's
  default).  Reported: both primal objectives and their relative difference (target <=
  1e-4), both test scores (accuracy or R^2, target: within 0.1 point), rounds against
  one machine's sweeps, gap, KKT violation, converged_.  A cell that reaches
  ``--max-rounds`` is reported as not converged, with the violation it reached.
- ``rounds``: a9a, ijcnn1 and debian-lib (``--rounds-data``), hinge with bias, C = 1 and
  10, defaults otherwise: each method's (``--methods``) rounds at K = 2, 4, 8 (``--parts``)
  partitions to a largest KKT violation of ``--rounds-tol`` (default 0.1, one machine's
  default) against the sweeps the one-machine ``solve_linear`` (the selection the ring
  resolved, same loss, C and bias, same seed) takes to stop at the same tol (its
  ``n_iter``); target ratio of the medians over seeds <= 2.  Runs with
  ``engine="threads"`` (bit-identical to the Dask engine).
- ``speed``: debian-sections20, 20 classes one-vs-rest: ``pybudget.dask.LinearSVC(C=1)``
  with its defaults on a 2-worker x 1-thread LocalCluster (2 partitions), the data
  persisted on the workers first (2 row chunks), and the same data in memory (CSR sent
  by the fit), against the one-machine ``pybudget.LinearSVC(C=1, n_jobs=2)`` with its
  defaults (the same 2 cores as the cluster; and n_jobs=1) in this process; both
  ``random_state=0``.  Same parameters, so method "whole" (what "auto" picks for these
  rows) gives one machine's model: the study checks that coef_ and intercept_ are the
  same bits.  Wall time of ``fit``, medians of r interleaved repeats of every fit;
  target dask / n_jobs=2 <= 1.2.
- ``memory``: debian-sections20 as in ``speed``: each worker's peak RSS during the fit
  (the high-water mark reset before the fit through ``/proc/self/clear_refs``, read from
  VmHWM after it) against the one-machine fit's (``LinearSVC(n_jobs=1)``, the same tol
  ``--memory-tol``, default 0.1) peak measured the same way in a fresh child process that
  loaded the data first; absolute and above the RSS before the fit.  Target: each
  worker's peak <= 0.6x the one-machine peak.

- ``peer`` (only when asked for; needs ``pip install dask-ml``): dask-ml's
  LogisticRegression (dask-glm's lbfgs and admm) against pybudget.dask's on the same
  cluster, dense 200,000 x 50 and debian-lib, C = 1: time to an objective within 1e-3 of
  the optimum (``study_peer``).
- ``threads`` (only when asked for): the ring on debian-sections20 on LocalClusters of
  W workers x T threads (``--configs``, default 1x1 1x2 2x1 2x2), tol ``--threads-tol``
  (default 0.1): each ring run spreads its group's problems over its worker's threads
  (``study_threads``).
- ``big`` (only when asked for): ``pybudget.dask.make_classification`` of 3.4 GiB built
  on a 4-worker LocalCluster whose memory_limit is half the data, C = ``--big-C``, default
  tol (0.1); then the same fit in one process under RLIMIT_AS = that limit (MemoryError
  expected).

``--quick``: small subsets (a9a, a synthetic 4-class problem), seconds; outputs named
``*_quick*``.  Writes bench/results/distributed/distributed_<study>.{json,md}.

    PYBUDGET_DATA=<data> python bench/distributed.py [--study correct rounds speed memory]
        [--method auto|ring|whole|newton] [-r 3] [--max-rounds 10000] [--quick] [--out DIR]
"""
import argparse
import itertools
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
# this file's name shadows the ``distributed`` package (Dask's) when bench/ is first on
# sys.path (it is: the script's folder): move bench/ to the end, import Dask's first
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE] + [str(HERE)]
sys.modules.pop("distributed", None)

import numpy as np  # noqa: E402

from common import machine, results_dir, write_outputs  # noqa: E402

MB = 2 ** 20
STUDIES = ("correct", "rounds", "speed", "memory", "peer", "big", "threads")

# name, data, estimator kind, loss, fit_intercept
CORRECT_CELLS = [
    ("a9a hinge, bias", "a9a", "svc", "hinge", True),
    ("debian-lib hinge, bias", "debian-lib", "svc", "hinge", True),
    ("debian-lib hinge, no bias", "debian-lib", "svc", "hinge", False),
    ("debian-lib squared hinge, bias", "debian-lib", "svc", "squared_hinge", True),
    ("debian-lib squared hinge, no bias", "debian-lib", "svc", "squared_hinge", False),
    ("debian-lib logistic, bias", "debian-lib", "lr", "logistic", True),
    ("debian-size SVR, bias", "debian-size", "svr", "epsilon_insensitive", True),
]
QUICK_CORRECT_CELLS = [
    ("a9a[:2000] hinge, bias", "a9a", "svc", "hinge", True),
    ("a9a[:2000] squared hinge, no bias", "a9a", "svc", "squared_hinge", False),
    ("a9a[:2000] logistic, bias", "a9a", "lr", "logistic", True),
    ("a9a[:2000] SVR on the labels, bias", "a9a", "svr", "epsilon_insensitive", True),
]


# ---- data and cluster ---------------------------------------------------------------

_CACHE = {}


def load_data(name, quick):
    """(X, y, X_test, y_test), one data set cached at a time."""
    if name not in _CACHE:
        _CACHE.clear()
        if name == "synthetic":
            import scipy.sparse as sp
            from sklearn.datasets import make_classification
            X, y = make_classification(n_samples=3000, n_features=40, n_informative=12,
                                       n_classes=4, random_state=0)
            X = sp.csr_matrix(X)
            _CACHE[name] = (X[:2000], y[:2000], X[2000:], y[2000:])
        elif name == "long-rows":
            # rows of 1,000 non-zeros (the benchmark files have at most 90 on average):
            # a set on which no lap constant was chosen
            import scipy.sparse as sp
            from sklearn.datasets import make_classification
            # (with flip_y=0.05 and class_sep=1 one machine was at a gap of 0.2 after
            # 1,600 sweeps: too slow for a study of rounds)
            X, y = make_classification(n_samples=6000, n_features=1000, n_informative=40,
                                       flip_y=0.0, class_sep=2.0, random_state=0)
            X = sp.csr_matrix(X)
            _CACHE[name] = (X[:4000], y[:4000], X[4000:], y[4000:])
        elif name == "long-rows-sparse":
            # rows of 300 non-zeros in 3,000 columns, labels of a noisy linear model
            import scipy.sparse as sp
            rng = np.random.default_rng(0)
            X = sp.random(12000, 3000, density=0.1, format="csr", random_state=0)
            X.data = rng.normal(size=X.data.shape)
            s = X @ rng.normal(size=3000)
            y = np.where(s + 0.1 * s.std() * rng.normal(size=12000) > 0, 1, -1)
            _CACHE[name] = (X[:8000], y[:8000], X[8000:], y[8000:])
        else:
            from pybudget.datasets import load
            X, y, Xt, yt = load(name)
            if quick:
                X, y = X[:2000], y[:2000]
            _CACHE[name] = (X, y, Xt, yt)
    return _CACHE[name]


def start_cluster():
    from distributed import Client, LocalCluster
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           dashboard_address=None)
    return cluster, Client(cluster)


def as_dask(X, y, chunks_n):
    import dask.array as da
    n, d = X.shape
    rows = math.ceil(n / chunks_n)
    return (da.from_array(X, chunks=(rows, d), asarray=False),
            da.from_array(np.asarray(y), chunks=(rows,)))


def on_workers(client, X, y, chunks_n):
    """X and y as dask arrays whose blocks were sent straight to the workers, one block
    per worker in turn (from_array would ship the whole X inside the graph to whichever
    worker slices it, which then holds it as well)."""
    import dask.array as da

    from pybudget.dask._scheduler import worker_addresses
    workers = worker_addresses(client)
    n, d = X.shape
    rows = math.ceil(n / chunks_n)
    xs, ys = [], []
    for k, lo in enumerate(range(0, n, rows)):
        hi = min(lo + rows, n)
        fx, fy = client.scatter([X[lo:hi], np.asarray(y[lo:hi])],
                                workers=[workers[k % len(workers)]])
        xs.append(da.from_delayed(fx, shape=(hi - lo, d), dtype=X.dtype, meta=X[:0]))
        ys.append(da.from_delayed(fy, shape=(hi - lo,), dtype=np.asarray(y).dtype))
    return da.concatenate(xs), da.concatenate(ys)


def rel_gap(primal, dual):
    return (primal - dual) / abs(primal) if primal else 0.0


def score_local(kind, res, Xt, yt):
    """Test accuracy or R^2 of a solve_linear result."""
    from sklearn.metrics import accuracy_score, r2_score
    f = Xt @ res.coef + res.intercept
    if kind == "svr":
        return float(r2_score(yt, f))
    return float(accuracy_score(yt, np.where(f > 0, res.classes[1], res.classes[0])))


def first(value):
    """The first problem's value of a per-problem attribute (LinearSVR's are scalars,
    as on one machine)."""
    return np.ravel(value)[0].item()


def dask_estimator(kind, loss, C, **kw):
    import pybudget.dask as pbd
    if kind == "svc":
        return pbd.LinearSVC(C=C, loss=loss, **kw)
    if kind == "lr":
        return pbd.LogisticRegression(C=C, **kw)
    return pbd.LinearSVR(C=C, epsilon=0.0, loss=loss, **kw)


# ---- correct ------------------------------------------------------------------------

def study_correct(a, client):
    import pybudget
    cells = QUICK_CORRECT_CELLS if a.quick else CORRECT_CELLS
    rows = []
    for name, data, kind, loss, bias in cells:
        for C in a.C:
            X, y, Xt, yt = load_data(data, a.quick)
            t0 = time.perf_counter()
            loc = pybudget.solve_linear(X, y, C=C, loss=loss, selection="auto", tol=a.tol,
                                        max_iter=a.max_rounds, fit_intercept=bias,
                                        random_state=0, epsilon=0.0)
            t_loc = time.perf_counter() - t0
            Xd, yd = as_dask(X, y, 4)
            est = dask_estimator(kind, loss, C, tol=a.tol, max_iter=a.max_rounds,
                                 fit_intercept=bias, random_state=0, client=client,
                                 n_partitions=4, engine=a.engine, method=a.method)
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est.fit(Xd, yd)
            t_dask = time.perf_counter() - t0
            s_loc = score_local(kind, loc, Xt, yt)
            s_dask = float(est.score(Xt, yt))
            p_loc, p_dask = float(loc.primal_objective), first(est.primal_objective_)
            row = {"cell": name, "data": data, "loss": loss, "fit_intercept": bias, "C": C,
                   "n": X.shape[0], "d": X.shape[1], "engine": a.engine,
                   "local": {"primal": p_loc, "dual": float(loc.dual_objective),
                             "rel_gap": rel_gap(p_loc, loc.dual_objective),
                             "sweeps": int(loc.n_iter), "kkt": float(loc.kkt_violation),
                             "selection": loc.selection, "converged": bool(loc.converged),
                             "score": s_loc, "seconds": t_loc},
                   "dask": {"primal": p_dask, "dual": first(est.dual_objective_),
                            "rel_gap": first(est.duality_gap_),
                            "rounds": int(est.n_rounds_), "checks": int(est.n_checks_),
                            "laps": int(est.laps_),
                            "laps_log": [(e["round"], e["laps"]) for e in est.rounds_log_],
                            "kkt": first(est.kkt_violation_),
                            "converged": first(est.converged_),
                            "selection": est.selection_, "score": s_dask,
                            "bytes_sent": est.bytes_sent_, "method": est.method_,
                            "seconds": t_dask,
                            "max_rounds": a.max_rounds,
                            "check_log": [(e["round"], e["kkt"], e["gap"])
                                          for e in est.rounds_log_]},
                   "primal_rel_diff": (p_dask - p_loc) / abs(p_loc),
                   "score_diff_points": 100 * (s_dask - s_loc)}
            row["met_primal"] = abs(row["primal_rel_diff"]) <= 1e-4
            row["met_score"] = abs(row["score_diff_points"]) <= 0.1
            rows.append(row)
            print(f"{name} C={C}: primal {p_loc:.6g} / {p_dask:.6g} "
                  f"({row['primal_rel_diff']:+.2e}), score {s_loc:.4f} / {s_dask:.4f}, "
                  f"{est.n_rounds_} rounds ({loc.n_iter} sweeps), KKT "
                  f"{row['dask']['kkt']:.2e}, gap {row['dask']['rel_gap']:.2e}, converged "
                  f"{row['dask']['converged']}, {t_dask:.0f} s", flush=True)
    return rows


def md_correct(rows, a):
    lines = [f"### correct: pybudget.dask (4 partitions, 2-worker LocalCluster, engine "
             f"\"{a.engine}\", method {a.method}) against solve_linear, both at tol "
             f"{a.tol:g} (KKT) and max_iter {a.max_rounds}{', quick' if a.quick else ''}",
             "", "| cell | C | one-machine primal | dask primal | rel. diff | one-machine "
             "score | dask score | diff (points) | method | rounds (checks) / one-machine "
             "sweeps | laps (first, last) | KKT one-machine / dask | dask gap | converged "
             "one-machine / dask | primal within 1e-4 | score within 0.1 pt |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]

    def conv(c):
        return "yes" if c else "NO"

    for r in rows:
        L, D = r["local"], r["dask"]
        lines.append(
            f"| {r['cell']} | {r['C']:g} | {L['primal']:.8g} | {D['primal']:.8g} | "
            f"{r['primal_rel_diff']:+.2e} | {100 * L['score']:.2f} | {100 * D['score']:.2f} | "
            f"{r['score_diff_points']:+.2f} | {D['method']} | {D['rounds']} ({D['checks']}) "
            f"/ {L['sweeps']} | "
            f"{D['laps_log'][0][1] if D['laps_log'] else D['laps']}, {D['laps']} | "
            f"{L['kkt']:.2e} / {D['kkt']:.2e} | {D['rel_gap']:.2e} | "
            f"{conv(L['converged'])} / {conv(D['converged'])} | "
            f"{'met' if r['met_primal'] else 'not met'} | "
            f"{'met' if r['met_score'] else 'not met'} |")
    lines += ["", "Score: test accuracy (%) for the classifiers, test R^2 x 100 for the SVR. "
              "One-machine: `solve_linear(selection=\"auto\", random_state=0)`; its "
              "relative gaps are in the JSON.  Rel. diff = (dask - one-machine) / "
              "one-machine primal.  KKT: the largest violation at the end (the SVR's in "
              "the targets' units; its tol is relative to max|y|).  Rounds of method "
              "whole: the most sweeps of a problem.  Checks: the ring's exact passes for "
              "the largest KKT violation (about half a sweep each).  NO: stopped at "
              "max_iter above tol.", ""]
    return lines


# ---- rounds -------------------------------------------------------------------------

def _median(values):
    """Median of counts where None (not reached) counts as larger than any number;
    None when the median itself was not reached."""
    v = sorted(values, key=lambda x: (x is None, x or 0))
    mid = v[(len(v) - 1) // 2]
    return None if mid is None else (float(np.median([x for x in v if x is not None]))
                                     if None not in v else mid)


def study_rounds(a):
    """Each method's rounds to the KKT tol against the one-machine sweeps to the same
    tol, hinge with bias, defaults otherwise (selection "auto"), medians over seeds (the
    sweeps vary from seed to seed, by up to 2x on debian-lib)."""
    import pybudget
    import pybudget.dask as pbd
    datas = ["a9a"] if a.quick else a.rounds_data
    Cs = (1.0,) if a.quick else a.rounds_C
    parts = (2, 4) if a.quick else a.parts
    seeds = a.seeds[:1] if a.quick else a.seeds
    rows = []
    rules = [None] + [r.split("=") for r in a.lap_rules]
    for data in datas:
        X, y, _, _ = load_data(data, a.quick)
        labels, counts = np.unique(y, return_counts=True)
        if len(labels) > 2:          # (dna: its largest class against the rest)
            y = np.where(y == labels[np.argmax(counts)], 1, -1)
        for C in Cs:
            local = {}        # (selection, seed) -> the one-machine solve

            def one_machine(selection, seed):
                """solve_linear at the ring's selection, tol, max_iter and seed."""
                if (selection, seed) not in local:
                    t0 = time.perf_counter()
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        r = pybudget.solve_linear(X, y, C=C, loss="hinge",
                                                  selection=selection, tol=a.rounds_tol,
                                                  max_iter=a.max_rounds,
                                                  fit_intercept=True, random_state=seed)
                    local[selection, seed] = (int(r.n_iter) if r.converged else None,
                                              time.perf_counter() - t0)
                return local[selection, seed]

            for method in a.methods:
                for K in parts:
                    for laps, rule in itertools.product(
                            a.laps if method == "ring" else ["auto"], rules):
                        if rule is not None and (laps != "auto" or method != "ring"):
                            continue
                        fits = []
                        t0 = time.perf_counter()
                        for seed in seeds:
                            est = pbd.LinearSVC(C=C, loss="hinge", tol=a.rounds_tol,
                                                max_iter=a.max_rounds, fit_intercept=True,
                                                random_state=seed, n_partitions=K,
                                                method=method, engine="threads", n_jobs=2,
                                                laps=laps if laps == "auto" else int(laps),
                                                rules=lap_rules(rule))
                            with warnings.catch_warnings():
                                warnings.simplefilter("ignore")
                                est.fit(X, y)
                            fits.append(est)
                        t_dask = time.perf_counter() - t0
                        loc = [one_machine(e.selection_, seed) for e, seed in zip(fits, seeds)]
                        sweeps = [m for m, _ in loc]
                        m = _median(sweeps)
                        per = [int(e.n_rounds_) if e.converged_[0] else None for e in fits]
                        rounds = _median(per)
                        ratio = rounds / m if (m and rounds) else None
                        row = {"data": data, "C": C, "method": method, "K": K,
                               "laps": int(fits[0].laps_), "seeds": list(seeds),
                               "tol": a.rounds_tol,
                               "lap_rule": "=".join(rule) if rule else "default",
                               "first_laps_each": [e.rounds_log_[0]["laps"]
                                                   if e.rounds_log_ else int(e.laps_)
                                                   for e in fits],
                               "laps_each": [int(e.laps_) for e in fits],
                               "selection": fits[0].selection_,
                               "selections": sorted({e.selection_ for e in fits}),
                               "local_sweeps": m, "local_sweeps_each": sweeps,
                               "local_seconds": sum(t for _, t in loc),
                               "rounds": rounds, "rounds_each": per,
                               "checks_each": [int(e.n_checks_) for e in fits],
                               "dask_kkt_each": [float(e.kkt_violation_[0]) for e in fits],
                               "dask_gap_each": [float(e.duality_gap_[0]) for e in fits],
                               "converged": rounds is not None,
                               "max_rounds": a.max_rounds, "ratio": ratio,
                               "met": ratio is not None and ratio <= 2.0,
                               "threads_seconds": t_dask,
                               "check_log": [(e["round"], e["kkt"], e["gap"])
                                             for e in fits[0].rounds_log_]}
                        rows.append(row)
                        print(f"rounds {data} C={C} {method} K={K} laps={row['laps']} "
                              f"({row['lap_rule']}, first {row['first_laps_each']}): one "
                              f"machine {sweeps} sweeps ({row['selection']}), rounds "
                              f"{per}", flush=True)
    return rows


def lap_rules(rule):
    """The ClusterRules with one of the laps' fields changed (rule: (field, value),
    e.g. ("min_segments", "32")); None: the defaults."""
    if rule is None:
        return None
    from pybudget.dask import ClusterRules
    name, value = rule
    return ClusterRules(**{name.lower(): int(value)})


def md_rounds(rows, a):
    lines = [f"### rounds: hinge with bias, defaults (selection auto), rounds to a largest "
             f"KKT violation of {a.rounds_tol:g} (engine \"threads\", bit-identical to "
             f"the Dask engine) against the one-machine sweeps to the same tol, max_iter "
             f"{a.max_rounds} on both, medians over seeds "
             f"{a.seeds[:1] if a.quick else a.seeds}{', quick' if a.quick else ''}", "",
             "| data | C | selection | one machine (sweeps, each seed) | method | K | lap rule "
             "| laps (first, last) | rounds (each seed) | ratio of medians | <= 2x |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]

    def each(v):
        return ", ".join(">max" if x is None else str(x) for x in v)

    for r in rows:
        rounds = (f"{r['rounds']:g} ({each(r['rounds_each'])})" if r["converged"]
                  else f"> {r['max_rounds']} ({each(r['rounds_each'])})")
        ratio = f"{r['ratio']:.2f}" if r["ratio"] is not None else "-"
        local = (f"{r['local_sweeps']:g} ({each(r['local_sweeps_each'])})"
                 if r["local_sweeps"] else f"> {r['max_rounds']} "
                 f"({each(r['local_sweeps_each'])})")
        lines.append(f"| {r['data']} | {r['C']:g} | {', '.join(r['selections'])} | {local} "
                     f"| {r['method']} | {r['K']} | {r['lap_rule']} | "
                     f"{r['first_laps_each'][0]}, {r['laps']} | {rounds} | {ratio} | "
                     f"{'met' if r['met'] else 'not met'} |")
    lines += ["", "One machine: `solve_linear(selection=<the ring's>, tol, max_iter, "
              "random_state=seed)`, its sweeps (n_iter) to the stop; the ring stops on its "
              "exact check of the same violation (one round, one sweep).  In-memory rows "
              "are dealt to the partitions (p::K); \">max\": not converged within max_iter.",
              ""]
    return lines


# ---- speed --------------------------------------------------------------------------

def speed_data(a):
    return load_data("synthetic" if a.quick else "debian-sections20", a.quick)


def study_speed(a, client):
    """The Dask fits (2 workers x 1 thread) against one machine on the same cores
    (LinearSVC(n_jobs=2)), and on one core (n_jobs=1), all with their defaults (C = 1,
    random_state=0); interleaved runs, medians.  Dask fits: the data as a Dask array
    persisted on the workers (2 chunks) and as in-memory CSR (sent by the fit).  Same
    parameters, same meanings: method "whole" must give one machine's bits (checked)."""
    import pybudget
    import pybudget.dask as pbd
    from distributed import wait
    X, y, Xt, yt = speed_data(a)
    Xd, yd = as_dask(X, y, 2)
    Xd, yd = client.persist([Xd, yd])
    wait([Xd, yd])
    reps = 1 if a.quick else a.repeats
    fits = {"local1": (X, y), "local2": (X, y), "dask_array": (Xd, yd),
            "dask_memory": (X, y)}
    times = {k: [] for k in fits}
    ests = {}
    for r in range(reps):
        order = list(fits)
        for which in order[r % len(order):] + order[:r % len(order)]:
            if which.startswith("dask"):
                m = pbd.LinearSVC(C=1.0, random_state=0, client=client, n_partitions=2,
                                  method=a.method)
            else:
                m = pybudget.LinearSVC(C=1.0, n_jobs=int(which[-1]), random_state=0)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t0 = time.perf_counter()
                m.fit(*fits[which])
                times[which].append(time.perf_counter() - t0)
            ests[which] = m
    med = {k: float(np.median(v)) for k, v in times.items()}
    loc = ests["local2"]
    rows = []
    for which in ("dask_array", "dask_memory"):
        est = ests[which]
        ratio = med[which] / med["local2"]
        rows.append({
            "data": "synthetic" if a.quick else "debian-sections20", "fit": which,
            "n": X.shape[0], "d": X.shape[1], "n_classes": int(loc.classes_.size),
            "tol": est.tol, "max_iter": est.max_iter,
            "local_kkt": loc.kkt_violation_.tolist(),
            "local_converged": loc.converged_.tolist(), "local_sweeps": int(loc.n_iter_),
            "dask_kkt": est.kkt_violation_.tolist(), "dask_gaps": est.duality_gap_.tolist(),
            "dask_primals": est.primal_objective_.tolist(),
            "dask_converged": est.converged_.tolist(), "dask_rounds": int(est.n_rounds_),
            "dask_checks": int(est.n_checks_), "dask_selection": est.selection_,
            "local_selection": loc.selection_, "times": times, "medians": med,
            "median": med[which], "ratio_n_jobs_2": ratio,
            "ratio_n_jobs_1": med[which] / med["local1"], "met": ratio <= 1.2,
            "same_bits_as_local": bool(np.array_equal(est.coef_, loc.coef_)
                                       and np.array_equal(est.intercept_, loc.intercept_)),
            "accuracy_local": float(loc.score(Xt, yt)),
            "accuracy_dask": float(est.score(Xt, yt)), "repeats": reps,
            "bytes_sent": est.bytes_sent_, "method": est.method_})
        print(f"speed {which}: n_jobs=1 {med['local1']:.2f} s, n_jobs=2 "
              f"{med['local2']:.2f} s, dask {med[which]:.2f} s, dask / n_jobs=2 "
              f"{ratio:.2f}, same bits {rows[-1]['same_bits_as_local']}", flush=True)
    return rows


def md_speed(rows, a):
    r0 = rows[0]
    med = r0["medians"]
    lines = [f"### speed: pybudget.dask.LinearSVC (2 workers x 1 thread, 2 partitions) "
             f"against LinearSVC(n_jobs=2) on the same 2 cores (and n_jobs=1), both "
             f"with their defaults (tol {r0['tol']:g}, max_iter {r0['max_iter']}) (medians "
             f"of {r0['repeats']}, interleaved{', quick' if a.quick else ''})", "",
             f"One machine: n_jobs=1 {med['local1']:.2f} s, n_jobs=2 {med['local2']:.2f} s "
             f"(spreads {_spread(r0['times']['local1'])}, "
             f"{_spread(r0['times']['local2'])}), {r0['local_sweeps']} sweeps (the most "
             f"of a class).", "",
             "| data | input | method | dask (s), spread | dask / n_jobs=2 | target "
             "<= 1.2 | rounds (checks) | every class <= tol | same bits as one machine | "
             "bytes between workers | accuracy one-machine / dask |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['data']} | {'in-memory CSR' if 'memory' in r['fit'] else 'Dask array'} "
            f"| {r['method']} | {r['median']:.2f}, "
            f"{_spread(r['times'][r['fit']])} | {r['ratio_n_jobs_2']:.2f} | "
            f"{'met' if r['met'] else 'not met'} | {r['dask_rounds']} ({r['dask_checks']}) | "
            f"{'yes' if all(r['dask_converged']) else 'NO'} | "
            f"{'yes' if r['same_bits_as_local'] else 'no'} | {r['bytes_sent']['workers']} | "
            f"{100 * r['accuracy_local']:.2f} / {100 * r['accuracy_dask']:.2f} |")
    lines += ["", "Per class: the largest KKT violation one-machine / dask (Dask array), and "
              "dask's relative duality gap", "",
              "| class | one-machine KKT | dask KKT | dask gap | dask converged |",
              "|---|---|---|---|---|"]
    for k, (k1, k2, g2, c) in enumerate(zip(r0["local_kkt"], r0["dask_kkt"],
                                            r0["dask_gaps"], r0["dask_converged"])):
        lines.append(f"| {k} | {k1:.2e} | {k2:.2e} | {g2:.2e} | {'yes' if c else 'NO'} |")
    lines += ["", "\"rounds\" of method whole: the most sweeps of a class.", ""]
    return lines


def _spread(values):
    return f"{min(values):.2f}-{max(values):.2f}"


# ---- threads: the ring on workers with several threads --------------------------------

def study_threads(a):
    """The ring (method "ring", 2 partitions) on debian-sections20 one-vs-rest, C = 1,
    tol ``--threads-tol``, on LocalClusters of W workers x T threads (``--configs``),
    each started here, the data persisted on its workers first (2 chunks); each ring run
    spreads its group's problems over its worker's threads.  Interleaved repeats,
    medians; the bits of every fit compared with the first configuration's."""
    import pybudget.dask as pbd
    from distributed import Client, LocalCluster, wait
    X, y, _, _ = speed_data(a)
    configs = [tuple(int(v) for v in c.split("x")) for c in a.configs]
    # (quick: a smoke run, at most 100 rounds; the synthetic set's ring takes about
    # 2,200 rounds to tol 0.1, a minute a configuration)
    max_iter = min(a.max_rounds, 100) if a.quick else a.max_rounds
    kw = dict(C=1.0, tol=a.threads_tol, max_iter=max_iter, random_state=0,
              n_partitions=2, method="ring")
    clusters, times, fits = {}, {c: [] for c in configs}, {}
    reps = 1 if a.quick else a.repeats
    try:
        for W, T in configs:
            cluster = LocalCluster(n_workers=W, threads_per_worker=T, processes=True,
                                   dashboard_address=None)
            client = Client(cluster, set_as_default=False)
            Xd, yd = client.persist(list(as_dask(X, y, 2)))
            with client.as_current():
                wait([Xd, yd])
            clusters[(W, T)] = (cluster, client, Xd, yd)
        for r in range(reps):
            for c in configs[r % len(configs):] + configs[:r % len(configs)]:
                _, client, Xd, yd = clusters[c]
                m = pbd.LinearSVC(client=client, **kw)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    t0 = time.perf_counter()
                    m.fit(Xd, yd)
                    times[c].append(time.perf_counter() - t0)
                fits[c] = m
    finally:
        for cluster, client, _, _ in clusters.values():
            client.close()
            cluster.close()
    med = {c: float(np.median(v)) for c, v in times.items()}
    rows = []
    for (W, T), m in fits.items():
        base = med.get((W, 1))
        rows.append({"data": "synthetic" if a.quick else "debian-sections20",
                     "workers": W, "threads_per_worker": T, "tol": a.threads_tol,
                     "max_iter": max_iter,
                     "times": times[(W, T)], "median": med[(W, T)],
                     "speedup_vs_1_thread": None if base is None else base / med[(W, T)],
                     "rounds": int(m.n_rounds_), "checks": int(m.n_checks_),
                     "converged": bool(np.all(m.converged_)), "recoveries": int(m.recoveries_),
                     "same_bits_as_first": bool(
                         np.array_equal(m.coef_, fits[configs[0]].coef_)
                         and np.array_equal(m.intercept_, fits[configs[0]].intercept_)),
                     "repeats": reps})
        print(f"threads {W}x{T}: {med[(W, T)]:.2f} s, {m.n_rounds_} rounds", flush=True)
    return rows


def md_threads(rows, a):
    r0 = rows[0]
    lines = [f"### threads: the ring (2 partitions, {r0['data']}, C = 1, tol "
             f"{r0['tol']:g}, max_iter {r0['max_iter']}) on W workers x T threads "
             f"(medians of {r0['repeats']}, "
             f"interleaved{', quick' if a.quick else ''})", "",
             "| workers x threads | fit (s), spread | speed-up over T = 1 | rounds (checks) "
             "| converged | recoveries | same bits as the first |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        up = r["speedup_vs_1_thread"]
        lines.append(f"| {r['workers']} x {r['threads_per_worker']} | {r['median']:.2f} "
                     f"({_spread(r['times'])}) | {'-' if up is None else f'{up:.2f}'} | "
                     f"{r['rounds']} ({r['checks']}) | {r['converged']} | {r['recoveries']} "
                     f"| {r['same_bits_as_first']} |")
    lines += ["", f"{os.cpu_count()} cores: W x T above the cores share them.", ""]
    return lines


# ---- peer: dask-ml --------------------------------------------------------------------

def lr_objective(w, b, X, y, C):
    """0.5 (|w|^2 + b^2) + C sum log(1 + exp(-y (x.w + b))), y +-1: liblinear's logistic
    primal with the bias regularised (intercept_scaling = 1), which is dask-glm's
    objective at lamduh = 1 / C times C."""
    m = y * (X @ w + b)
    return 0.5 * (float(w @ w) + b * b) + C * float(np.logaddexp(0.0, -m).sum())


def peer_data(a):
    """(name, X, y +-1): dense synthetic (200,000 x 50; quick 4,000 x 20) and debian-lib
    (sparse text; quick: its first 2,000 rows)."""
    rng = np.random.default_rng(0)
    n, d = (4000, 20) if a.quick else (200_000, 50)
    X = rng.standard_normal((n, d))
    y = np.where(X @ rng.standard_normal(d) + rng.logistic(size=n) > 0, 1.0, -1.0)
    Xs, ys, _, _ = load_data("debian-lib", a.quick)
    return [(f"dense {n} x {d}", X, y), ("debian-lib", Xs, np.where(ys > 0, 1.0, -1.0))]


def study_peer(a, client):
    """dask-ml's LogisticRegression (dask-glm's lbfgs and admm) and pybudget.dask's on the
    same cluster and data (4 row chunks persisted on 2 workers x 1 thread), C = 1: the
    time of the first fit whose objective is within 1e-3 (relative) of the optimum (for
    dask-ml, max_iter doubled until one is; for pybudget.dask, tol divided by 10 from its
    default 0.1 until one is), the median of ``-r`` repeats of that fit.  (No one tol
    means one excess: it is the largest KKT violation where the fit runs dual CD, a
    relative duality gap, which bounds the excess, where it takes the Newton route.)"""
    import pybudget
    import pybudget.dask as pbd
    from distributed import wait
    try:
        from dask_ml.linear_model import LogisticRegression as DaskMLLR
    except ImportError:
        print("peer: dask-ml is not installed (pip install dask-ml): skipped", flush=True)
        return [{"skipped": "dask-ml is not installed"}]
    C, excess = 1.0, 1e-3
    rows = []
    for name, X, y in peer_data(a):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = pybudget.LogisticRegression(C=C, tol=1e-6, max_iter=10000).fit(X, y)
        best = lr_objective(ref.coef_[0], float(ref.intercept_[0]), X, y, C)
        Xd, yd = as_dask(X, y, 4)
        Xd, yd = client.persist([Xd, yd])
        wait([Xd, yd])

        def timed(fit):
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m = fit()
            return m, time.perf_counter() - t0

        reps = 1 if a.quick else a.repeats

        def median_of(fit):
            """The fit repeated: (the last model, the median time, every time)."""
            times = []
            for _ in range(reps):
                m, t = timed(fit)
                times.append(t)
            return m, _median(times), times

        row = {"data": name, "solver": "pybudget.dask", "optimum": best, "reached": False}
        for tol in (0.1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6):
            def fit():
                return pbd.LogisticRegression(C=C, tol=tol, random_state=0,
                                              client=client).fit(Xd, yd)
            m, t = timed(fit)
            obj = lr_objective(m.coef_[0], float(m.intercept_[0]), X, y, C)
            row.update(solver=f"pybudget.dask ({m.method_})", seconds=t, tol=tol,
                       iterations=int(m.n_rounds_), objective=obj, excess=obj / best - 1)
            if obj <= best * (1 + excess):
                row["reached"] = True
                _, row["seconds"], row["times"] = median_of(fit)
                break
        rows.append(row)
        y01 = client.persist((yd > 0).astype(int))
        for solver in ("lbfgs", "admm"):
            row = {"data": name, "solver": f"dask-ml {solver}", "seconds": None,
                   "tol": None, "iterations": None, "objective": None, "optimum": best,
                   "excess": None, "reached": False}
            it = 1
            while it <= (16 if a.quick else 512):
                try:
                    m, t = timed(lambda: DaskMLLR(C=C, solver=solver, max_iter=it,
                                                  tol=1e-12).fit(Xd, y01))
                except Exception as exc:        # (dask-glm's solvers and sparse chunks)
                    row["error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
                    break
                obj = lr_objective(np.ravel(m.coef_), float(np.ravel(m.intercept_)[0]),
                                   X, y, C)
                row.update(seconds=t, iterations=it, objective=obj, excess=obj / best - 1)
                if obj <= best * (1 + excess):
                    row["reached"] = True
                    _, row["seconds"], row["times"] = median_of(
                        lambda: DaskMLLR(C=C, solver=solver, max_iter=it,
                                         tol=1e-12).fit(Xd, y01))
                    break
                it *= 2
            rows.append(row)
        for r in rows[-3:]:
            print(f"peer: {r['data']}, {r['solver']}: {r['seconds']} s, excess "
                  f"{r['excess']}, reached {r['reached']} {r.get('error', '')}", flush=True)
    return rows


def md_peer(rows, a):
    if rows and "skipped" in rows[0]:
        return ["### peer: dask-ml (skipped: dask-ml is not installed)", ""]
    lines = ["### peer: dask-ml LogisticRegression against pybudget.dask, 2 workers x 1 "
             "thread, 4 chunks persisted, C = 1: time to an objective within 1e-3 of the "
             f"optimum{' (quick)' if a.quick else ''}", "",
             "| data | solver | tol | fit (s) | iterations (rounds) | objective / optimum - 1 "
             "| within 1e-3 |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        t = "-" if r["seconds"] is None else f"{r['seconds']:.2f}"
        ex = "-" if r["excess"] is None else f"{r['excess']:.2e}"
        note = "yes" if r["reached"] else ("no: " + r["error"] if "error" in r else "no")
        tol = "-" if r["tol"] is None else f"{r['tol']:g}"
        lines.append(f"| {r['data']} | {r['solver']} | {tol} | {t} | {r['iterations']} | "
                     f"{ex} | {note} |")
    lines += ["", "Optimum: pybudget.LogisticRegression(tol=1e-6) on one machine; objective "
              "0.5 (|w|^2 + b^2) + C sum log(1 + exp(-y (x.w + b))) computed here for "
              "every fit.  dask-ml (tol 1e-12): max_iter doubled from 1 until the objective "
              "is within 1e-3; pybudget.dask: tol divided by 10 from 0.1 until it is (a KKT "
              "tolerance on dual CD, a relative gap on the Newton route); the time "
              "reported is the median of repeats of that fit alone.", ""]
    return lines


# ---- memory -------------------------------------------------------------------------

def proc_status():
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                key, value = line.split(":")
                out[key] = int(value.split()[0]) / 1024
    return out


def reset_peak():
    """Reset VmHWM to VmRSS (Linux >= 4.0); the status after it, with the mark before."""
    high = proc_status()["VmHWM"]
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        ok = True
    except OSError:
        ok = False
    st = proc_status()
    st["VmHWM_before_reset"] = high
    st["reset"] = ok
    return st


def memory_child(job):
    """A one-machine fit in this fresh process; prints its memory marks as JSON."""
    import scipy.sparse as sp
    warnings.simplefilter("ignore")
    import pybudget
    rng = np.random.default_rng(0)
    Xw = sp.random(200, 30, density=0.3, format="csr", random_state=rng)
    pybudget.LinearSVC(C=1.0, random_state=0).fit(Xw, np.arange(200) % 3)
    del Xw
    marks = {"imports": proc_status()}
    X = sp.load_npz(job["x"])
    y = np.load(job["y"])
    marks["loaded"] = proc_status()
    marks["before_fit"] = reset_peak()
    t0 = time.perf_counter()
    pybudget.LinearSVC(C=1.0, tol=job["tol"], max_iter=job["max_iter"], n_jobs=1,
                       random_state=0).fit(X, y)
    seconds = time.perf_counter() - t0
    marks["fit"] = proc_status()
    print(json.dumps({"marks": marks, "seconds": seconds}))


def study_memory(a, client):
    import scipy.sparse as sp

    import pybudget.dask as pbd
    from distributed import wait
    X, y, Xt, yt = speed_data(a)
    with tempfile.TemporaryDirectory() as tmp:
        sp.save_npz(Path(tmp) / "X.npz", sp.csr_matrix(X), compressed=False)
        np.save(Path(tmp) / "y.npy", y)
        # (the same tol and max_iter as the Dask fit)
        job = {"x": str(Path(tmp) / "X.npz"), "y": str(Path(tmp) / "y.npy"),
               "tol": a.memory_tol, "max_iter": a.max_rounds}
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [str(HERE.parent), os.environ.get("PYTHONPATH", "")]))
        r = subprocess.run([sys.executable, str(HERE / "distributed.py"), "--memory-child",
                            json.dumps(job)], env=env, capture_output=True, text=True,
                           cwd=tmp)
        if r.returncode:
            raise RuntimeError(f"child failed:\n{r.stderr[-3000:]}")
        child = json.loads(r.stdout.strip().splitlines()[-1])
    one_peak = child["marks"]["fit"]["VmHWM"]
    one_base = child["marks"]["before_fit"]["VmRSS"]
    # a small fit first so the workers have imported and warmed everything lazily loaded
    Xs, ys = as_dask(X[:400], y[:400], 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pbd.LinearSVC(C=1.0, max_iter=5, random_state=0, client=client,
                      n_partitions=2).fit(Xs, ys)
    # each worker idle after its imports (the warm-up's mark cleared), then its half of
    # the rows sent to it alone, then the fit (mark cleared again)
    idle = client.run(reset_peak)
    Xd, yd = on_workers(client, X, y, 2)
    wait([Xd, yd])
    before = client.run(reset_peak)
    tol = a.memory_tol
    est = pbd.LinearSVC(C=1.0, tol=tol, max_iter=a.max_rounds, random_state=0,
                        client=client, n_partitions=2, method=a.method)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(Xd, yd)
    after = client.run(proc_status)
    marks = child["marks"]
    one_imports = marks["imports"]["VmRSS"]
    one_whole = max(marks["loaded"]["VmHWM"], one_peak) - one_imports
    workers = []
    for addr in sorted(before):
        peak, base = after[addr]["VmHWM"], before[addr]["VmRSS"]
        whole = max(before[addr]["VmHWM_before_reset"], peak) - idle[addr]["VmRSS"]
        workers.append({"worker": addr, "idle_after_imports": idle[addr]["VmRSS"],
                        "rss_before_fit": base, "peak": max(peak, before[addr][
                            "VmHWM_before_reset"]), "fit_peak": peak,
                        "above_baseline": peak - base, "above_idle": whole,
                        "reset": before[addr]["reset"],
                        "ratio_abs": peak / one_peak,
                        "ratio_above": (peak - base) / max(one_peak - one_base, 1e-9),
                        "ratio_above_idle": whole / max(one_whole, 1e-9),
                        "met": whole / max(one_whole, 1e-9) <= 0.6})
    row = {"data": "synthetic" if a.quick else "debian-sections20", "n": X.shape[0],
           "d": X.shape[1], "n_classes": int(np.unique(y).size),
           "x_mb": (X.data.nbytes + X.indices.nbytes + X.indptr.nbytes) / MB,
           "one_machine": {"peak": one_peak, "rss_before_fit": one_base,
                           "above_baseline": one_peak - one_base, "imports": one_imports,
                           "above_imports": one_whole, "marks": marks,
                           "seconds": child["seconds"]},
           "workers": workers, "tol": tol, "dask_rounds": int(est.n_rounds_),
           "dask_method": est.method_, "dask_converged": est.converged_.tolist()}
    print(f"memory: one machine peak {one_peak:.0f} MiB, workers "
          f"{[round(w['peak']) for w in workers]} MiB", flush=True)
    return [row]


def md_memory(rows, a):
    r = rows[0]
    o = r["one_machine"]
    lines = [f"### memory: each worker's peak RSS through pybudget.dask.LinearSVC.fit (2 "
             f"workers x 1 thread, 2 partitions) against the one-machine LinearSVC(n_jobs=1)"
             f"'s, both at tol {r['tol']:g}{', quick' if a.quick else ''}", "",
             f"{r['data']}: {r['n']} rows, {r['n_classes']} classes, X {r['x_mb']:.1f} MiB "
             f"(CSR). One machine (a fresh child): {o['imports']:.0f} MiB after its imports, "
             f"{o['rss_before_fit']:.0f} MiB with X loaded, peak {o['peak']:.0f} MiB: "
             f"{o['above_imports']:.0f} MiB above its imports, {o['above_baseline']:.0f} "
             f"MiB above the loaded data.  Dask fit: method {r['dask_method']}, "
             f"{r['dask_rounds']} rounds.", "",
             "| worker | idle after imports (MiB) | with its rows (MiB) | peak (MiB) | "
             "above idle (MiB) | / one machine's above its imports | target <= 0.6 | "
             "fit's peak above its rows (MiB) | / one machine's above its data |",
             "|---|---|---|---|---|---|---|---|---|"]
    for w in r["workers"]:
        lines.append(f"| {w['worker']} | {w['idle_after_imports']:.0f} | "
                     f"{w['rss_before_fit']:.0f} | {w['peak']:.0f} | {w['above_idle']:.0f} "
                     f"| {w['ratio_above_idle']:.2f} | {'met' if w['met'] else 'not met'} | "
                     f"{w['above_baseline']:.0f} | {w['ratio_above']:.2f} |")
    lines += ["", "Worker marks through client.run: idle after a warm-up fit (mark cleared "
              "with /proc/self/clear_refs 5), each half of the rows scattered to its worker "
              "(mark read, cleared), VmHWM after the fit.  Peaks are VmHWM, not ru_maxrss.",
              ""]
    return lines


# ---- data larger than a worker ------------------------------------------------------

def big_child(job):
    """The same generated fit in this one process under RLIMIT_AS = the workers' memory
    limit; prints the outcome as JSON (MemoryError expected)."""
    import resource

    import pybudget.dask as pbd
    pbd.LinearSVC(engine="threads").fit(pbd.make_classification(200, 20, nnz_per_row=5))
    out = {"limit": job["limit"], "before": proc_status()}    # (imports and warm-up done)
    resource.setrlimit(resource.RLIMIT_AS, (job["limit"], job["limit"]))
    try:
        g = pbd.make_classification(**job["gen"])
        pbd.LinearSVC(C=job["C"], max_iter=job["max_iter"], random_state=0,
                      engine="threads").fit(g)
        out["outcome"] = "fitted"
    except MemoryError as exc:
        out["outcome"] = f"MemoryError: {exc}"
    print(json.dumps(out))


def study_big(a):
    """A generated problem twice the size of a worker's memory limit on a 4-worker
    LocalCluster, and the same fit in one process under that limit."""
    from distributed import Client, LocalCluster
    import pybudget.dask as pbd
    gen = ({"n_samples": 200_000, "n_features": 50_000, "nnz_per_row": 20}
           if a.quick else {"n_samples": 3_000_000, "n_features": 1_000_000,
                            "nnz_per_row": 100})
    gen.update(n_partitions=4, random_state=0)
    g = pbd.make_classification(**gen)
    limit = 600 * MB if a.quick else g.nbytes // 2     # (quick: a smoke run only)
    row = {"data_mb": g.nbytes / MB, "worker_limit_mb": limit / MB, "generator": gen,
           "C": a.big_C}
    with LocalCluster(n_workers=4, threads_per_worker=1, memory_limit=limit,
                      dashboard_address=None) as cl, Client(cl) as c:
        t0 = time.perf_counter()
        est = pbd.LinearSVC(C=a.big_C, random_state=0, client=c, max_iter=a.max_rounds)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(g)
        row.update(seconds=time.perf_counter() - t0, rounds=int(est.n_rounds_),
                   gap=float(est.duality_gap_[0]), kkt=float(est.kkt_violation_[0]),
                   converged=bool(est.converged_[0]),
                   worker_peaks_mb=est.worker_peak_memory_, bytes_sent=est.bytes_sent_,
                   method=est.method_, selection=est.selection_)
    r = subprocess.run([sys.executable, str(HERE / "distributed.py"), "--big-child",
                        json.dumps({"gen": gen, "limit": int(limit), "C": a.big_C,
                                    "max_iter": a.max_rounds})],
                       capture_output=True, text=True)
    lines = r.stdout.strip().splitlines()
    row["one_process"] = (json.loads(lines[-1]) if lines
                          else {"outcome": f"exit {r.returncode}: {r.stderr[-300:]}"})
    print(f"big: {row['data_mb']:.0f} MiB of rows, workers limited to "
          f"{row['worker_limit_mb']:.0f} MiB: {row['rounds']} rounds, KKT {row['kkt']:.2e}, "
          f"{row['seconds']:.0f} s; one process: {row['one_process']['outcome']}", flush=True)
    return [row]


def md_big(rows, a):
    r = rows[0]
    peaks = ", ".join(f"{v:.0f}" for _, v in sorted(r["worker_peaks_mb"].items()))
    return [f"### big: a generated problem larger than any worker{', quick' if a.quick else ''}",
            "", f"`make_classification({r['generator']})`: {r['data_mb']:.0f} MiB of CSR "
            f"rows, built on the workers.  4-worker LocalCluster, memory_limit "
            f"{r['worker_limit_mb']:.0f} MiB each (Dask pauses a worker at 80 % and "
            f"restarts it at 95 %).", "",
            f"C = {r['C']:g}, hinge with bias, defaults (tol 0.1: the largest KKT "
            "violation, as on one machine).", "",
            "| method | selection | rounds | final KKT | final gap | converged | seconds | "
            "worker peaks (VmHWM, MiB) | one process under RLIMIT_AS = the limit |",
            "|---|---|---|---|---|---|---|---|---|",
            f"| {r['method']} | {r['selection']} | {r['rounds']} | {r['kkt']:.2e} | "
            f"{r['gap']:.2e} | "
            f"{'yes' if r['converged'] else 'NO'} | {r['seconds']:.0f} | {peaks} | "
            f"{r['one_process']['outcome']} |", ""]


# ---- main ---------------------------------------------------------------------------

def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--memory-child":
        memory_child(json.loads(sys.argv[2]))
        return
    if len(sys.argv) > 2 and sys.argv[1] == "--big-child":
        big_child(json.loads(sys.argv[2]))
        return
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--study", nargs="+", choices=STUDIES,
                    default=[s for s in STUDIES if s not in ("big", "peer", "threads")])
    ap.add_argument("-r", "--repeats", type=int, default=3)
    ap.add_argument("--C", type=float, nargs="+", default=[1.0],
                    help="C values of the correct study (default 1)")
    ap.add_argument("--tol", type=float, default=1e-4,
                    help="correct study's tol, both sides (default 1e-4)")
    ap.add_argument("--rounds-tol", type=float, default=0.1,
                    help="rounds study's tol, both sides (default 0.1, one machine's)")
    ap.add_argument("--rounds-C", type=float, nargs="+", default=[1.0, 10.0],
                    help="C values of the rounds study (default 1 10)")
    ap.add_argument("--memory-tol", type=float, default=0.1,
                    help="memory study's tol, both fits (default 0.1, one machine's)")
    ap.add_argument("--max-rounds", type=int, default=10000,
                    help="max_iter (rounds = sweeps) of the Dask fits and of the "
                         "one-machine fits they are compared with (default 10000)")
    ap.add_argument("--method", default="auto", choices=("auto", "ring", "whole", "newton"),
                    help="method of the correct, speed and memory studies (default auto)")
    ap.add_argument("--methods", nargs="+", default=["ring"], choices=("ring",),
                    help="methods of the rounds study")
    ap.add_argument("--parts", type=int, nargs="+", default=[2, 4, 8],
                    help="partitions K of the rounds study")
    ap.add_argument("--rounds-data", nargs="+", default=["a9a", "ijcnn1", "debian-lib"],
                    help="data sets of the rounds study (also long-rows and long-rows-sparse: "
                         "synthetic, 1,000 and 300 non-zeros a row; more than 2 classes: "
                         "the largest against the rest)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2],
                    help="random_state values of the rounds study (medians reported)")
    ap.add_argument("--laps", nargs="+", default=["auto"],
                    help="laps of the ring in the rounds study (auto or integers)")
    ap.add_argument("--lap-rules", nargs="*", default=[],
                    help="the rounds study again with one of the laps' rules changed "
                         "(pybudget.dask.ClusterRules), e.g. min_segments=32 "
                         "min_visit_nnz=8192 (with laps auto)")
    ap.add_argument("--engine", choices=("dask", "threads"), default="dask",
                    help="engine of the correct study (default dask)")
    ap.add_argument("--configs", nargs="+", default=["1x1", "1x2", "2x1", "2x2"],
                    help="workers x threads of the threads study")
    ap.add_argument("--threads-tol", type=float, default=0.1,
                    help="threads study's tol (default 0.1, one machine's)")
    ap.add_argument("--big-C", type=float, default=0.1, help="C of the big study")
    ap.add_argument("--stem", default=None, help="output name suffix")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=str(results_dir("distributed")))
    a = ap.parse_args()
    cluster = client = None
    try:
        if {"correct", "speed", "memory", "peer"} & set(a.study) and not (
                a.study == ["correct"] and a.engine == "threads"):
            cluster, client = start_cluster()
        for study in a.study:
            load_before = os.getloadavg()
            t0 = time.perf_counter()
            if study == "correct":
                rows, md = study_correct(a, client), md_correct
            elif study == "rounds":
                rows, md = study_rounds(a), md_rounds
            elif study == "big":
                rows, md = study_big(a), md_big
            elif study == "speed":
                rows, md = study_speed(a, client), md_speed
            elif study == "peer":
                rows, md = study_peer(a, client), md_peer
            elif study == "threads":
                rows, md = study_threads(a), md_threads
            else:
                rows, md = study_memory(a, client), md_memory
            seconds = time.perf_counter() - t0
            load_after = os.getloadavg()
            cmd = "python bench/distributed.py " + " ".join(sys.argv[1:])
            lines = md(rows, a) + [
                f"Command: `{cmd}` ({seconds:.0f} s). Load average before "
                f"{load_before[0]:.2f}, after {load_after[0]:.2f} ({os.cpu_count()} cores, "
                "shared with other jobs: timings are indicative; rounds, sweeps and "
                "objectives are deterministic).", ""]
            stem = (f"distributed_{study}" + (f"_{a.stem}" if a.stem else "")
                    + ("_quick" if a.quick else ""))
            write_outputs(stem, {"machine": machine(), "study": study, "args": vars(a),
                                 "command": cmd, "seconds": seconds,
                                 "loadavg_before": load_before,
                                 "loadavg_after": load_after, "rows": rows},
                          "\n".join(lines), a.out)
    finally:
        if client is not None:
            client.close()
            cluster.close()


if __name__ == "__main__":
    main()
