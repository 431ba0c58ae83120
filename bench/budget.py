"""Budgeted solvers against the papers and the peers.

Sub-studies (``--study``, several allowed):

- ``lookup``: golden-section merging (tol 0.01), precise golden section (tol 1e-10),
  lookup-h and lookup-wd (lookup-merging paper): training time, maintenance time and
  share, share of SGD steps that trigger a merge, test accuracy (median over seeds),
  and, from separate audited runs (one seed, every 20th merge event up to 300 events),
  the share of events where the rule picks GSS's partner and the mean factor by which
  the executed merge's weight degradation exceeds the smallest one available (precise h
  over every partner), as in that paper's Table 3.
- ``multimerge``: M in {2, 3, 5, 8, 11} x B, cascade and gradient multi-merge
  (multi-merge paper, Figures 1-2, 4): time, maintenance share, accuracy.  B from
  ``--budgets``, or with ``--budget-fractions`` as fractions of LIBSVM's SV count per
  data set, as that paper chooses its budgets.
- ``dual``: BSCA vs BSGD test accuracy and primal objective after each epoch
  (BSCA paper, Figures 1-2): one seed.
- ``maintenance``: removal vs projection vs merging (BSGD paper, Table 3), B = 100.
- ``peers``: LIBSVM (libsvm-official, else scikit-learn's SVC) and scikit-learn's
  Nystroem(n_components=B) + LinearSVC, against BSGD/BSCA settings, same data, same run.

Writes bench/results/budget/budget_<study>.json, .md (and .png where useful).

    python bench/budget.py --study lookup peers [--seeds 0 1 2] [--out DIR]
    python bench/budget.py --quick          # smoke run of every study, a few seconds
"""
import argparse
import os
import sys
import time

# libsvm-official is built with OpenMP; on a shared machine its spinning threads cost more
# than they give, and every other solver here is single-threaded: one thread for all.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

from common import machine, median_min_max, results_dir, write_outputs
from pybudget import BudgetSVC
from pybudget.datasets import load

# (C, gamma): LIBSVM's tuned values used by the papers
PARAMS = {"a9a": (32.0, 2.0 ** -7), "ijcnn1": (32.0, 2.0), "w8a": (8.0, 0.03)}
LIBSVM_REF = {"a9a": (85.07, 42.0), "ijcnn1": (98.70, 8.6), "w8a": (99.05, 12.0)}
# LIBSVM's support-vector counts at PARAMS, measured by the peers study
# (bench/results/budget/budget_peers.json, libsvm-official 3.x): --budget-fractions
# scales these
LIBSVM_NSV = {"a9a": 11386, "ijcnn1": 2478, "w8a": 2757}
# BSCA paper, Table 2 (B = 500, one pass, their machine): (seconds, test accuracy %)
BSCA_TABLE2 = {"a9a": {"bsgd": (8.48, 80.74), "bsca": (9.84, 83.18)},
               "ijcnn1": {"bsgd": (11.28, 96.68), "bsca": (11.53, 97.27)}}
LOOKUP = [("gss", "gss", 0.01), ("gss-precise", "gss", 1e-10),
          ("lookup-h", "lookup-h", 0.01), ("lookup-wd", "lookup-wd", 0.01)]


class Data:
    def __init__(self, limit=None):
        self.limit = limit
        self.cache = {}

    def __call__(self, name):
        if name not in self.cache:
            X, y, Xt, yt = load(name)
            if self.limit:
                X, y = X[:self.limit], y[:self.limit]
                Xt, yt = Xt[:self.limit], yt[:self.limit]
            self.cache[name] = (X.tocsr(), y, Xt.tocsr(), yt)
        return self.cache[name]


def fit_eval(data, name, **kw):
    X, y, Xt, yt = data(name)
    C, gamma = PARAMS.get(name, (32.0, 2.0 ** -7))
    kw.setdefault("C", C)
    kw.setdefault("gamma", gamma)
    kw.setdefault("offset", False)     # the papers' algorithms: the last iterate, no offset
    kw.setdefault("averaging", "none")
    clf = BudgetSVC(**kw)
    t0 = time.perf_counter()
    clf.fit(X, y)
    wall = time.perf_counter() - t0
    t0 = time.perf_counter()
    acc = 100.0 * float(np.mean(clf.predict(Xt) == yt))
    pred = time.perf_counter() - t0
    steps = X.shape[0] * clf.n_iter_
    return {"time": clf.fit_time_, "wall": wall, "merge_time": clf.merge_time_,
            "maint_share": clf.merge_time_ / clf.fit_time_ if clf.fit_time_ else 0.0,
            "merge_frac": clf.n_merges_ / steps, "n_merges": clf.n_merges_,
            "n_removed": clf.n_removed_, "accuracy": acc, "predict_time": pred,
            "n_sv": clf.support_vectors_.shape[0]}


def summarise(runs, keys=("time", "merge_time", "maint_share", "merge_frac", "accuracy")):
    out = {}
    for k in keys:
        out[k], out[k + "_min"], out[k + "_max"] = median_min_max([r[k] for r in runs])
    return out


def audit_run(data, name, budget, search, tol, seed, epochs=1, every=20, max_events=300):
    """One BSGD fit with the Maintainer's partner audit switched on."""
    from pybudget._core import _validation as V
    from pybudget.budget._bsgd import bsgd_run
    from pybudget.budget.svm import _effective_budget, _new_model, check_budget_params
    X, y, _, _ = data(name)
    C, gamma = PARAMS.get(name, (32.0, 2.0 ** -7))
    p = check_budget_params(C, gamma, budget, "bsgd", epochs, "merge", 2, search, "cascade", tol)
    Xc = V.canonical_csr(X)
    classes, codes = V.encode_labels(y, Xc.shape[0])
    n, d = Xc.shape
    B, M, cap = _effective_budget(p, n, d, 0)
    mdl, mt = _new_model(d, 1, cap, gamma, p)
    mt.start_audit(every, max_events)
    bsgd_run(Xc, V.row_sqnorms(Xc), codes.astype(np.int32), mdl, mt, B, M, 1.0 / (n * C),
             epochs, 0, V.seed_from(seed), 0)
    st = mt.audit_stats()
    n_pos = max(st["wd_precise"], 1.0)
    log = st["log"]
    pos = log[:, 2] > 0
    ratio = log[pos, 0] / log[pos, 2] if pos.any() else np.ones(1)
    return {"events": st["events"], "agree_gss": st["same_as_gss"] / max(st["events"], 1),
            "wd_excess": st["wd_exec"] / n_pos, "wd_excess_gss": st["wd_gss"] / n_pos,
            "wd_excess_median": float(np.median(ratio)),
            "wd_excess_p90": float(np.quantile(ratio, 0.9)),
            "wd_exec_over_min_share": float(np.mean(ratio > 1 + 1e-9))}


# ---- studies ---------------------------------------------------------------------------

def study_lookup(data, args):
    rows = []
    for name in args.data:
        for B in args.budgets:
            for label, search, tol in LOOKUP:
                runs = [fit_eval(data, name, budget=B, epochs=args.epochs, merge_search=search,
                                 merge_tol=tol, random_state=s) for s in args.seeds]
                row = {"data": name, "B": B, "method": label, "epochs": args.epochs,
                       **summarise(runs), "runs": runs}
                if not args.no_audit:
                    row["audit"] = audit_run(data, name, B, search, tol, args.seeds[0],
                                             max_events=args.audit_events)
                rows.append(row)
                print(name, B, label, f"{row['time']:.3f}s acc {row['accuracy']:.2f}",
                      file=sys.stderr)
    extra = []
    if args.claim_epochs and "a9a" in args.data:
        for label, search, tol in (LOOKUP[0], LOOKUP[3]):
            runs = [fit_eval(data, "a9a", budget=500, epochs=args.claim_epochs,
                             merge_search=search, merge_tol=tol, random_state=s)
                    for s in args.seeds]
            extra.append({"data": "a9a", "B": 500, "method": label,
                          "epochs": args.claim_epochs, **summarise(runs), "runs": runs})
            print("claim", label, extra[-1]["time"], extra[-1]["accuracy"], file=sys.stderr)
    md = [f"Seeds {args.seeds} (median [min, max]); {args.epochs} epoch(s); C, gamma as in "
          "LIBSVM's tuning (PARAMS). Times are BSGD optimisation seconds (`fit_time_`), "
          "maintenance = `merge_time_`; 'merge steps' = merge events / SGD steps. Audit: "
          f"one seed, every 20th merge event (up to {args.audit_events}); 'same partner' = "
          "share of audited events where the rule picks the partner GSS (tol 0.01) picks; "
          "'WD excess' = mean over audited events of (WD of the merge executed) / (smallest "
          "WD over all partners with a precise h), then its median and 90th percentile; the "
          "mean is "
          "dominated by a few events whose best WD is ~0 (near-duplicate SVs).", "",
          "| data | B | method | time s | maintenance s | maint. share | merge steps | "
          "accuracy % | time / GSS | same partner | WD excess mean / median / p90 |",
          "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        g = next(x for x in rows if x["data"] == r["data"] and x["B"] == r["B"]
                 and x["method"] == "gss")
        a = r.get("audit", {})
        md.append(f"| {r['data']} | {r['B']} | {r['method']} | {r['time']:.3f} | "
                  f"{r['merge_time']:.3f} | {r['maint_share']:.2f} | {r['merge_frac']:.3f} | "
                  f"{r['accuracy']:.2f} [{r['accuracy_min']:.2f}, {r['accuracy_max']:.2f}] | "
                  f"{r['time'] / g['time']:.2f} | "
                  + (f"{a['agree_gss']:.3f} ({a['events']}) | {a['wd_excess']:.4f} / "
                     f"{a.get('wd_excess_median', float('nan')):.5f} / "
                     f"{a.get('wd_excess_p90', float('nan')):.4f} |" if a else "- | - |"))
    if extra:
        g = extra[0]
        md += ["", "Claim check (lookup-wd against GSS): a9a, B = 500, "
               f"{args.claim_epochs} epochs.", "",
               "| method | time s | maintenance s | accuracy % | time / GSS |",
               "|---|---|---|---|---|"]
        for r in extra:
            md.append(f"| {r['method']} | {r['time']:.3f} | {r['merge_time']:.3f} | "
                      f"{r['accuracy']:.2f} [{r['accuracy_min']:.2f}, {r['accuracy_max']:.2f}] | "
                      f"{r['time'] / g['time']:.2f} |")
    plot_bars(args, "lookup", rows, "method", "time", "BSGD time (s)")
    return {"rows": rows, "claim": extra}, md


def study_multimerge(data, args):
    rows = []
    for name in args.data:
        budgets = ([max(10, round(f * LIBSVM_NSV[name])) for f in args.budget_fractions]
                   if args.budget_fractions else args.budgets)
        for B in budgets:
            for multi in ("cascade", "gradient"):
                for M in args.merge_sizes:
                    if M == 2 and multi == "gradient":
                        continue
                    runs = [fit_eval(data, name, budget=B, epochs=args.epochs, merge_size=M,
                                     multi_merge=multi, merge_search=args.mm_search,
                                     random_state=s) for s in args.seeds]
                    rows.append({"data": name, "B": B, "multi": multi if M > 2 else "pairwise",
                                 "B_fraction": B / LIBSVM_NSV[name] if name in LIBSVM_NSV else None,
                                 "M": M, **summarise(runs), "runs": runs})
                    print(name, B, multi, M, rows[-1]["time"], rows[-1]["accuracy"],
                          file=sys.stderr)
    claim = []
    if args.mm_claim_epochs and "a9a" in args.data:
        for label, kw in (("GSS, M = 2", dict(merge_search="gss", merge_size=2)),
                          ("lookup-wd, M = 5 cascade", dict(merge_search="lookup-wd",
                                                            merge_size=5)),
                          ("lookup-wd, M = 5 gradient", dict(merge_search="lookup-wd", merge_size=5,
                                                             multi_merge="gradient"))):
            runs = [fit_eval(data, "a9a", budget=500, epochs=args.mm_claim_epochs,
                             random_state=s, **kw) for s in args.seeds]
            claim.append({"label": label, **summarise(runs), "runs": runs})
            print("claim", label, claim[-1]["time"], claim[-1]["accuracy"], file=sys.stderr)
    md = [f"Seeds {args.seeds}; {args.epochs} epoch(s); partner search {args.mm_search}.", "",
          "| data | B | variant | M | time s | maintenance s | maint. share | accuracy % |",
          "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        frac = f" ({100 * r['B_fraction']:.0f} % of LIBSVM's SVs)" if r["B_fraction"] else ""
        md.append(f"| {r['data']} | {r['B']}{frac} | {r['multi']} | {r['M']} | {r['time']:.3f} | "
                  f"{r['merge_time']:.3f} | {r['maint_share']:.2f} | {r['accuracy']:.2f} "
                  f"[{r['accuracy_min']:.2f}, {r['accuracy_max']:.2f}] |")
    if claim:
        md += ["", "Claim check (lookup-wd multi-merge against GSS, M = 2): a9a, B = 500, "
               f"{args.mm_claim_epochs} epochs.", "",
               "| setting | time s | maintenance s | accuracy % | time / GSS M=2 |",
               "|---|---|---|---|---|"]
        for r in claim:
            md.append(f"| {r['label']} | {r['time']:.3f} | {r['merge_time']:.3f} | "
                      f"{r['accuracy']:.2f} [{r['accuracy_min']:.2f}, {r['accuracy_max']:.2f}] | "
                      f"{r['time'] / claim[0]['time']:.2f} |")
    plot_pareto(args, rows)
    return {"rows": rows, "claim": claim}, md


def study_maintenance(data, args):
    rows = []
    for name in args.data:
        for maint in ("remove", "project", "merge"):
            runs = [fit_eval(data, name, budget=args.maint_budget, epochs=args.epochs,
                             maintenance=maint, random_state=s) for s in args.seeds]
            rows.append({"data": name, "B": args.maint_budget, "maintenance": maint,
                         **summarise(runs), "runs": runs})
            print(name, maint, rows[-1]["accuracy"], file=sys.stderr)
    md = [f"Seeds {args.seeds}; {args.epochs} epoch(s); B = {args.maint_budget}.", "",
          "| data | maintenance | accuracy % | time s | maintenance s |", "|---|---|---|---|---|"]
    for r in rows:
        md.append(f"| {r['data']} | {r['maintenance']} | {r['accuracy']:.2f} "
                  f"[{r['accuracy_min']:.2f}, {r['accuracy_max']:.2f}] | {r['time']:.3f} | "
                  f"{r['merge_time']:.3f} |")
    return {"rows": rows}, md


def study_dual(data, args):
    """Accuracy and primal objective after each epoch; BSGD through partial_fit (the
    global step count continues), BSCA one epoch at a time on the same model (bsca_curve)."""
    from pybudget.budget._decision import kernel_decision
    rows = []
    for name in args.data:
        X, y, Xt, yt = data(name)
        C, gamma = PARAMS.get(name, (32.0, 2.0 ** -7))
        classes = np.unique(y)
        ysign = np.where(y == classes[1], 1.0, -1.0)

        def primal(clf, with_norm=False):
            Z, a = clf.support_vectors_, clf.dual_coef_[0]
            K = np.exp(-gamma * ((Z ** 2).sum(1)[:, None] + (Z ** 2).sum(1)[None]
                                 - 2 * Z @ Z.T).clip(0))
            f = kernel_decision(X, Z, clf.dual_coef_, gamma).ravel()
            w2 = float(a @ K @ a)
            P = 0.5 * w2 + C * float(np.maximum(0, 1 - ysign * f).sum())
            return (P, w2) if with_norm else P

        for B in args.dual_budgets:
            clf = BudgetSVC(C=C, gamma=gamma, budget=B, random_state=args.seeds[0],
                            offset=False)
            for e in range(1, args.dual_epochs + 1):
                clf.partial_fit(X, y, classes=classes)
                tt = clf.fit_time_          # cumulative over partial_fit calls
                rows.append({"data": name, "B": B, "solver": "bsgd", "epoch": e, "time": tt,
                             "accuracy": 100 * float(np.mean(clf.predict(Xt) == yt)),
                             "primal": primal(clf)})
            rows.extend(bsca_curve(X, ysign, Xt, yt, classes, C, gamma, B, args.seeds[0],
                                   args.dual_epochs, primal, name))
            print(name, B, "dual done", file=sys.stderr)
    md = [f"Seed {args.seeds[0]}; C, gamma as in LIBSVM's tuning (PARAMS); primal = "
          "1/2 |w|^2 + C sum hinge of the budgeted model on the training set; BSCA dual = "
          "sum(alpha) - 1/2 |w|^2 with w the budgeted model (not a true dual value once "
          "merging has changed w). BSGD runs epoch after epoch through partial_fit; BSCA one "
          "epoch per call on the "
          "same model and alpha.", "",
          "| data | B | solver | epoch | time s | accuracy % | primal | dual |",
          "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        dual = f"{r['dual']:.4g}" if "dual" in r else ""
        md.append(f"| {r['data']} | {r['B']} | {r['solver']} | {r['epoch']} | {r['time']:.3f} | "
                  f"{r['accuracy']:.2f} | {r['primal']:.4g} | {dual} |")
    first = [r for r in rows if r["epoch"] == 1 and r["B"] == 500]
    if first:
        md += ["", "BSCA paper, Table 2 rows for our data: B = 500, one pass (the paper's "
               "seconds are from its machine and C++ code).", "",
               "| data | solver | time s | accuracy % | paper: time s | paper: accuracy % |",
               "|---|---|---|---|---|---|"]
        for r in first:
            ref = BSCA_TABLE2.get(r["data"], {}).get(r["solver"])
            paper = f"{ref[0]} | {ref[1]}" if ref else " | "
            md.append(f"| {r['data']} | {r['solver']} | {r['time']:.3f} | {r['accuracy']:.2f} | "
                      f"{paper} |")
    plot_dual(args, rows)
    return {"rows": rows}, md


def bsca_curve(X, ysign, Xt, yt, classes, C, gamma, B, seed, epochs, primal, name):
    """BSCA one epoch at a time on one model and one alpha (pybudget internals; epoch e
    shuffles with seed + e), evaluated after every epoch: accuracy, primal, and the dual
    sum(alpha) - |w|^2 / 2 with w the budgeted model."""
    from types import SimpleNamespace
    from pybudget._core import _validation as V
    from pybudget.budget._bsca import bsca_run
    from pybudget.budget._decision import kernel_decision
    from pybudget.budget.svm import _effective_budget, _new_model, check_budget_params
    p = check_budget_params(C, gamma, B, "bsca", 1, "merge", 2, "gss", "cascade", 0.01)
    Xc = V.canonical_csr(X)
    n, d = Xc.shape
    Bf, M, cap = _effective_budget(p, n, d, 0)
    mdl, mt = _new_model(d, 1, cap, gamma, p, n_src=n)
    alpha = np.zeros(n)
    xsq = V.row_sqnorms(Xc)
    tt, rows = 0.0, []
    for e in range(1, epochs + 1):
        out = bsca_run(Xc, xsq, ysign, C, alpha, mdl, mt, Bf, M, 1, (V.seed_from(seed) + e) % 2**64)
        tt += out["time"]
        Z, beta, _ = mdl.arrays()
        fake = SimpleNamespace(support_vectors_=Z, dual_coef_=beta.T.copy())
        P, w2 = primal(fake, with_norm=True)
        f = kernel_decision(Xt, Z, fake.dual_coef_, gamma).ravel()
        acc = 100 * float(np.mean(np.where(f > 0, classes[1], classes[0]) == yt))
        rows.append({"data": name, "B": B, "solver": "bsca", "epoch": e, "time": tt,
                     "accuracy": acc, "primal": P, "dual": float(alpha.sum() - 0.5 * w2)})
    return rows


def libsvm_fit(X, y, Xt, yt, C, gamma):
    try:
        from libsvm import svmutil
    except ImportError:
        svmutil = None
    if svmutil is not None:
        prob = svmutil.svm_problem(y.tolist(), X)
        t0 = time.perf_counter()
        model = svmutil.svm_train(prob, f"-s 0 -t 2 -c {C} -g {gamma} -m 1000 -q")
        t = time.perf_counter() - t0
        pred, _, _ = svmutil.svm_predict(yt.tolist(), Xt, model, "-q")
        return "libsvm-official", t, 100 * float(np.mean(np.asarray(pred) == yt)), model.get_nr_sv()
    from sklearn.svm import SVC
    clf = SVC(C=C, gamma=gamma, cache_size=1000)
    t0 = time.perf_counter()
    clf.fit(X, y)
    t = time.perf_counter() - t0
    return "sklearn SVC", t, 100 * float(np.mean(clf.predict(Xt) == yt)), int(clf.n_support_.sum())


def nystroem_fit(X, y, Xt, yt, C, gamma, B, seed):
    from sklearn.kernel_approximation import Nystroem
    from sklearn.pipeline import make_pipeline
    from sklearn.svm import LinearSVC
    pipe = make_pipeline(Nystroem(gamma=gamma, n_components=B, random_state=seed),
                         LinearSVC(C=C, dual=True, max_iter=2000))
    import warnings
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe.fit(X, y)
    t = time.perf_counter() - t0
    return t, 100 * float(np.mean(pipe.predict(Xt) == yt))


def study_peers(data, args):
    rows = []
    # per-B settings (budget = the B of the row), then settings with their own budget
    settings = [dict(solver="bsgd", epochs=1),
                dict(solver="bsgd", epochs=1, averaging="last-half", merge_search="lookup-wd"),
                dict(solver="bsgd", epochs=5),
                dict(solver="bsgd", epochs=5, merge_search="lookup-wd"),
                dict(solver="bsca", epochs=1, merge_search="lookup-wd"),
                dict(solver="bsca", epochs=2, merge_search="lookup-wd"),
                dict(solver="bsgd", epochs=1, C=2.0, averaging="last-half",
                     merge_search="lookup-wd"),
                dict(solver="bsca", epochs=1, checkpoints=10, merge_search="lookup-wd"),
                dict(solver="bsgd", epochs=20, checkpoints=40, merge_search="lookup-wd"),
                dict(solver="bsgd", epochs=20, checkpoints=40)]
    own_budget = [dict(solver="bsgd", budget=5000, epochs=1, averaging="last-half",
                       merge_search="lookup-wd"),
                  dict(solver="bsgd", budget=2000, epochs=2, averaging="last-half",
                       merge_search="lookup-wd"),
                  dict(solver="bsgd", budget=1000, epochs=5, merge_search="lookup-wd")]
    if args.quick:
        settings, own_budget = settings[:2], [dict(own_budget[0], budget=60)]
    for name in args.data:
        X, y, Xt, yt = data(name)
        C, gamma = PARAMS.get(name, (32.0, 2.0 ** -7))
        if not args.no_libsvm:
            impl, t, acc, nsv = libsvm_fit(X, y, Xt, yt, C, gamma)
            rows.append({"data": name, "method": f"{impl} (exact)", "B": nsv, "time": t,
                         "accuracy": acc})
            print(name, impl, t, acc, file=sys.stderr)
        for B in args.budgets:
            res = [nystroem_fit(X, y, Xt, yt, C, gamma, B, s) for s in args.nystroem_seeds]
            rows.append({"data": name, "method": "Nystroem + LinearSVC", "B": B,
                         "time": float(np.median([r[0] for r in res])),
                         "accuracy": float(np.median([r[1] for r in res])),
                         "accuracy_min": min(r[1] for r in res),
                         "accuracy_max": max(r[1] for r in res)})
            print(name, "nystroem", B, rows[-1]["time"], rows[-1]["accuracy"], file=sys.stderr)
            todo = ([dict(s, budget=B) for s in settings]
                    + (own_budget if B == args.budgets[-1] else []))
            for s in todo:
                runs = [fit_eval(data, name, random_state=sd, **s) for sd in args.seeds]
                label = ", ".join(f"{k}={v}" for k, v in s.items() if k != "budget")
                rows.append({"data": name, "method": label, "B": s["budget"],
                             **summarise(runs), "runs": runs})
                print(name, label, s["budget"], rows[-1]["time"], rows[-1]["accuracy"],
                      file=sys.stderr)
    md = [f"Seeds {args.seeds} for pybudget, {args.nystroem_seeds} for Nystroem (median "
          "[min, max]); LIBSVM once "
          "(OMP_NUM_THREADS=1: every solver single-threaded). "
          "Times: training only (pybudget `fit_time_`, LIBSVM/Nystroem pipeline `fit`), "
          "same machine, same run; C, gamma as in LIBSVM's tuning (PARAMS) unless the row "
          "says C=...; "
          "pybudget rows without merge_search use GSS (tol 0.01). LIBSVM's B column = its "
          "SV count.",
          "", "| data | method | B | time s | accuracy % |", "|---|---|---|---|---|"]
    for r in rows:
        spread = (f" [{r['accuracy_min']:.2f}, {r['accuracy_max']:.2f}]"
                  if "accuracy_min" in r else "")
        md.append(f"| {r['data']} | {r['method']} | {r['B']} | {r['time']:.3f} | "
                  f"{r['accuracy']:.2f}{spread} |")
    return {"rows": rows}, md


# ---- plots -------------------------------------------------------------------------------

def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def plot_bars(args, stem, rows, key, value, ylabel):
    plt = _plt()
    groups = sorted({(r["data"], r["B"]) for r in rows})
    methods = list(dict.fromkeys(r[key] for r in rows))
    fig, ax = plt.subplots(figsize=(8, 3.5))
    w = 0.8 / len(methods)
    for i, m in enumerate(methods):
        vals = [next((r[value] for r in rows if (r["data"], r["B"]) == g and r[key] == m), 0)
                for g in groups]
        ax.bar(np.arange(len(groups)) + i * w, vals, w, label=m)
    ax.set_xticks(np.arange(len(groups)) + 0.4 - w / 2)
    ax.set_xticklabels([f"{d}\nB={b}" for d, b in groups])
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=7)
    _save(plt, fig, args, stem)


def plot_pareto(args, rows):
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 4))
    for (d, B, v) in sorted({(r["data"], r["B"], r["multi"]) for r in rows}):
        rr = [r for r in rows if (r["data"], r["B"], r["multi"]) == (d, B, v)]
        ax.plot([r["time"] for r in rr], [r["accuracy"] for r in rr], "o-", label=f"{d} B={B} {v}")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("test accuracy (%)")
    ax.legend(fontsize=6)
    _save(plt, fig, args, "multimerge")


def plot_dual(args, rows):
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    for key in sorted({(r["data"], r["B"], r["solver"]) for r in rows}):
        rr = [r for r in rows if (r["data"], r["B"], r["solver"]) == key]
        lab = f"{key[0]} B={key[1]} {key[2]}"
        axes[0].plot([r["time"] for r in rr], [r["accuracy"] for r in rr], "o-", label=lab)
        axes[1].plot([r["time"] for r in rr], [r["primal"] for r in rr], "o-", label=lab)
    axes[0].set_ylabel("test accuracy (%)")
    axes[1].set_ylabel("primal objective")
    axes[1].set_yscale("log")
    for a in axes:
        a.set_xlabel("time (s)")
    axes[0].legend(fontsize=6)
    _save(plt, fig, args, "dual")


def _save(plt, fig, args, name):
    """Write fig as <out>/<prefix>_<name>.png and free it."""
    fig.tight_layout()
    fig.savefig(_out(args) / f"{args.prefix}_{name}.png", dpi=110)
    plt.close(fig)


def _out(args):
    from pathlib import Path
    p = Path(args.out)
    p.mkdir(parents=True, exist_ok=True)
    return p


STUDIES = {"lookup": study_lookup, "multimerge": study_multimerge, "dual": study_dual,
           "maintenance": study_maintenance, "peers": study_peers}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--study", nargs="+", choices=list(STUDIES), default=["lookup", "peers"])
    ap.add_argument("--data", nargs="+", default=["a9a", "ijcnn1", "w8a"])
    ap.add_argument("--budgets", type=int, nargs="+", default=[100, 500])
    ap.add_argument("--budget-fractions", type=float, nargs="+", default=None,
                    help="multimerge: B = fraction x LIBSVM's SV count per data set")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--claim-epochs", type=int, default=5)
    ap.add_argument("--merge-sizes", type=int, nargs="+", default=[2, 3, 5, 8, 11])
    ap.add_argument("--mm-search", default="lookup-wd")
    ap.add_argument("--mm-claim-epochs", type=int, default=20)
    ap.add_argument("--maint-budget", type=int, default=100)
    ap.add_argument("--dual-budgets", type=int, nargs="+", default=[200, 500])
    ap.add_argument("--dual-epochs", type=int, default=10)
    ap.add_argument("--audit-events", type=int, default=300)
    ap.add_argument("--no-audit", action="store_true")
    ap.add_argument("--no-libsvm", action="store_true")
    ap.add_argument("--nystroem-seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=str(results_dir("budget")))
    ap.add_argument("--prefix", default="budget")
    args = ap.parse_args()
    limit = None
    if args.quick:
        args.study = list(STUDIES)
        args.data, args.budgets, args.seeds, args.claim_epochs = ["a9a"], [30], [0], 0
        args.mm_claim_epochs = 0
        args.merge_sizes, args.dual_budgets, args.dual_epochs = [2, 3], [30], 2
        args.maint_budget, args.audit_events, limit = 30, 20, 1500
        args.prefix = "budget_quick"
    data = Data(limit)
    kw = {"out_dir": args.out} if args.out else {}
    for study in args.study:
        t0 = time.perf_counter()
        result, md = STUDIES[study](data, args)
        record = {"machine": machine(), "study": study, "args": vars(args), **result,
                  "seconds": time.perf_counter() - t0}
        m = record["machine"]
        head = [f"# Budgeted solvers: {study} study", "",
                f"{m['platform']}, {m['cpus']} cores shared with other jobs, {m['date']}"
                + (" (quick smoke run: 1500 rows of a9a)" if args.quick else "") + ".", ""]
        write_outputs(f"{args.prefix}_{study}", record, "\n".join(head + md) + "\n", **kw)


if __name__ == "__main__":
    main()
