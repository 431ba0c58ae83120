"""The rest of liblinear's dual family on the dual CD seam: correctness, speed against
liblinear-official, and the C grid of the strategies.

Problems (``--problem``): ``svr`` (liblinear -s 13, epsilon-insensitive) and ``svr2``
(-s 12, squared), with epsilon = 0.1 (liblinear's default ``-p``); ``cs``
(Crammer-Singer, -s 4); ``lr`` (logistic regression, -s 7).  Studies:

- ``correct``: every strategy at C in {0.01, 1, 100} (tol 1e-3, ``--tol``): dual objectives,
  their spread relative to the best, exact final violation, converged; liblinear at
  ``-e 1e-6`` (``--peer-tol``) and its primal objective next to ours.
- ``speed``: the liblinear-style strategy ("shrinking") against liblinear-official's
  ``train`` with the same -s at its default tolerance, C in {0.1, 1}, same prepared
  problem, medians of r interleaved runs; both solutions' primal objective and exact
  final violation (the stopping rules differ: liblinear's bounds the sum of the
  violations relative to the first sweep's, ours the largest violation, for regression
  relative to its value at zero, see docs/user_guide.md).  ``--tol-rules max,liblinear``
  (regression) times ours with each stopping rule (``tol_rule``; "liblinear" is
  liblinear's own) in the same interleaved repeats, one row per rule.
- ``sklearn``: our estimator against scikit-learn's liblinear-backed counterpart
  (LinearSVR, LinearSVC(multi_class="crammer_singer"), LogisticRegression(solver=
  "liblinear")) at tight tolerances (ours 1e-4, theirs ``--peer-tol``, 1e-6) on the
  training split, C =
  ``--C`` (default 1): agreement of the test predictions and the test scores.

The C grids of these problems are bench/cgrid.py's (``--loss``), which also plots them.

Data: for regression a LIBSVM regression set (``debian-size``) or ``a9a`` (its +-1
labels as targets); for ``cs`` a multi-class set (``debian-sections20``, ``pendigits``);
for ``lr`` a binary one (``debian-lib``, ``a9a``).  Writes
bench/results/linear_family/<stem>.json and .md.

    python bench/linear_family.py --problem svr --data debian-size --study speed -r 5
    python bench/linear_family.py --problem svr --data debian-size --study speed -r 5 \
        --tol-rules max,liblinear
    python bench/linear_family.py --quick
"""
import argparse
import time

import numpy as np

from common import liblinear_train, machine, results_dir, write_outputs
from pybudget import solve_crammer_singer, solve_linear
from pybudget._core import _validation as V
from pybudget.datasets import load

PROBLEMS = {  # name -> (our loss, liblinear -s)
    "svr": ("epsilon_insensitive", 13),
    "svr2": ("squared_epsilon_insensitive", 12),
    "cs": ("crammer_singer", 4),
    "lr": ("logistic", 7),
}
EPSILON = 0.1
STRATEGIES = ("uniform", "shrinking", "avsf", "auto")


MAX_ITER = 3000   # sweeps; a run that hits it is reported as not converged ("*")


def ours(X, y, C, loss, selection, tol, seed=0, max_iter=None, tol_rule="max"):
    import warnings
    max_iter = MAX_ITER if max_iter is None else max_iter
    extra = {} if tol_rule == "max" else {"tol_rule": tol_rule}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if loss == "crammer_singer":
            r = solve_crammer_singer(X, y, C, selection=selection, tol=tol,
                                     max_iter=max_iter, random_state=seed)
        else:
            r = solve_linear(X, y, C, loss=loss, epsilon=EPSILON, selection=selection,
                             tol=tol, max_iter=max_iter, random_state=seed, **extra)
    return {"selection": r.selection, "time": r.time, "n_iter": r.n_iter,
            "n_steps": r.n_steps, "dual": r.dual_objective, "primal": r.primal_objective,
            "violation": r.kkt_violation, "converged": r.converged}


def liblinear_primal(model, X, y, C, s):
    """Our primal objective of liblinear's model (its dual is not exposed to Python, so
    the primal is what we compare)."""
    d = X.shape[1]
    if s == 4:
        labels = model.get_labels()
        W = np.array([[model.get_decfun_coef(j + 1, k) for j in range(d)]
                      for k in range(len(labels))])
        yi = np.searchsorted(np.sort(labels), y)
        order = np.argsort(labels)              # rows of W in increasing label order
        W = W[order]
        S = np.asarray(X @ W.T)
        own = S[np.arange(X.shape[0]), yi]
        S += 1.0
        S[np.arange(X.shape[0]), yi] -= 1.0
        return 0.5 * float(np.sum(W * W)) + C * float(np.sum(S.max(axis=1) - own))
    w = np.array([model.get_decfun_coef(j + 1) for j in range(d)])
    if s == 7:
        sign = 1.0 if model.get_labels()[0] == max(model.get_labels()) else -1.0
        m = sign * y * (X @ w)
        return 0.5 * float(w @ w) + C * float(np.sum(np.logaddexp(0.0, -m)))
    r = np.maximum(np.abs(X @ w - y) - EPSILON, 0.0)
    return 0.5 * float(w @ w) + C * float(np.sum(r * r if s == 12 else r))


def theirs(prob, X, y, C, s, tol=None):
    opts = f"-s {s} -c {C}" + (f" -p {EPSILON}" if s in (12, 13) else "")
    opts += f" -e {tol}" if tol else ""
    model, elapsed, info = liblinear_train(prob, opts)
    return {"time": elapsed, "n_iter": info["n_iter"], "capped": info["capped"],
            "primal": liblinear_primal(model, X, y, C, s)}


def study_correct(X, y, loss, s, prob, Cs, peer_tol=1e-6, tol=1e-3):
    rows = []
    for C in Cs:
        runs = {sel: ours(X, y, C, loss, sel, tol) for sel in STRATEGIES}
        best = max(r["dual"] for r in runs.values())
        # peer_tol 0: no liblinear run (where it would not finish in reasonable time)
        ll = (theirs(prob, X, y, C, s, tol=peer_tol) if peer_tol > 0
              else {"primal": float("nan"), "capped": False})
        for sel, r in runs.items():
            rows.append({"C": C, "strategy": sel, **r,
                         "dual_gap_to_best": (best - r["dual"]) / max(1.0, abs(best)),
                         "liblinear_primal": ll["primal"], "liblinear_capped": ll["capped"],
                         "primal_rel_diff": (r["primal"] - ll["primal"]) / ll["primal"]})
    md = ["| C | strategy | sweeps | dual | (best - dual)/best | violation | converged "
          f"| primal | liblinear primal (-e {peer_tol:g}) | rel. diff |", "|---" * 10 + "|"]
    md += [f"| {r['C']:g} | {r['strategy']} | {r['n_iter']} | {r['dual']:.8g} "
           f"| {r['dual_gap_to_best']:.1e} | {r['violation']:.2e} | {r['converged']} "
           f"| {r['primal']:.8g} | {r['liblinear_primal']:.8g}"
           f"{' (capped)' if r['liblinear_capped'] else ''} | {r['primal_rel_diff']:.1e} |"
           for r in rows]
    return rows, md


def study_speed(X, y, loss, s, prob, Cs, reps, tol_rules=("max",)):
    """Per C, r interleaved repeats of ours with each stopping rule and liblinear's
    train (seeds 0..r-1 for ours; liblinear's rand() goes on from run to run)."""
    rows = []
    for C in Cs:
        a, b = {rule: [] for rule in tol_rules}, []
        for rep in range(reps):
            for rule in tol_rules:
                a[rule].append(ours(X, y, C, loss, "shrinking", 0.1, seed=rep,
                                    tol_rule=rule))
            b.append(theirs(prob, X, y, C, s))
        tb = np.median([r["time"] for r in b])
        pb = float(np.median([r["primal"] for r in b]))
        for rule in tol_rules:
            ar = a[rule]
            ta = np.median([r["time"] for r in ar])
            pa = float(np.median([r["primal"] for r in ar]))
            rows.append({"C": C, "tol_rule": rule, "ours": ar, "liblinear": b,
                         "ours_median": float(ta), "liblinear_median": float(tb),
                         "ratio": float(ta / tb),
                         # medians over the repeats (the orders differ from run to run)
                         "ours_primal": pa, "liblinear_primal": pb,
                         "primal_rel_diff": (pa - pb) / pb,
                         "ours_sweeps": int(np.median([r["n_iter"] for r in ar])),
                         "liblinear_sweeps": int(np.median([r["n_iter"] for r in b])),
                         "ours_violation": float(np.median([r["violation"] for r in ar])),
                         # per sweep: the stopping rules differ, the sweeps do not
                         "sweep_ratio": float(
                             (ta / np.median([r["n_iter"] for r in ar]))
                             / (tb / np.median([r["n_iter"] for r in b])))})
    md = ["| C | tol_rule | ours (s) | liblinear (s) | ratio | sweeps ours / liblinear "
          "| per sweep ratio | primal ours | primal liblinear | (ours - liblinear)/liblinear "
          "| our final violation |", "|---" * 11 + "|"]
    md += [f"| {r['C']:g} | {r['tol_rule']} | {r['ours_median']:.3f} "
           f"| {r['liblinear_median']:.3f} "
           f"| {r['ratio']:.2f} | {r['ours_sweeps']} / {r['liblinear_sweeps']} "
           f"| {r['sweep_ratio']:.2f} "
           f"| {r['ours_primal']:.8g} | {r['liblinear_primal']:.8g} "
           f"| {r['primal_rel_diff']:+.1e} | {r['ours_violation']:.3g} |" for r in rows]
    md += ["", "Ours: solve_linear, selection \"shrinking\", tol 0.1, seeds 0..r-1; liblinear: "
           "train at its default -e; no bias on either side.  Times, sweeps, primal "
           "objectives and violations are medians over the repeats."]
    return rows, md


def study_sklearn(problem, X, y, Xt, yt, C, peer_tol=1e-6):
    """Our estimator and scikit-learn's counterpart, both tight, on the same split."""
    import warnings

    import sklearn.linear_model as skl
    import sklearn.svm as sks

    import pybudget
    loss = PROBLEMS[problem][0]
    if problem.startswith("svr"):
        pair = (pybudget.LinearSVR(C=C, epsilon=EPSILON, loss=loss, tol=1e-4,
                                   max_iter=100000, random_state=0),
                sks.LinearSVR(C=C, epsilon=EPSILON, loss=loss, tol=peer_tol, max_iter=100000,
                              dual=True, random_state=0))
    elif problem == "cs":
        pair = (pybudget.LinearSVC(C=C, multi_class="crammer_singer", tol=1e-4,
                                   max_iter=100000, random_state=0),
                sks.LinearSVC(C=C, multi_class="crammer_singer", tol=peer_tol,
                              max_iter=100000, random_state=0))
    else:
        pair = (pybudget.LogisticRegression(C=C, tol=1e-4, max_iter=100000, random_state=0),
                skl.LogisticRegression(C=C, solver="liblinear", tol=peer_tol, max_iter=100000))
    fits = []
    for est in pair:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t0 = time.perf_counter()
            est.fit(X, y)
            elapsed = time.perf_counter() - t0
        fits.append({"time": elapsed, "score": float(est.score(Xt, yt)),
                     "warnings": [str(w.message)[:120] for w in caught],
                     "pred": est.predict(Xt)})
    a, b = fits[0]["pred"], fits[1]["pred"]
    row = {"C": C, "ours_score": fits[0]["score"], "sklearn_score": fits[1]["score"],
           "ours_time": fits[0]["time"], "sklearn_time": fits[1]["time"],
           "ours_warnings": fits[0]["warnings"], "sklearn_warnings": fits[1]["warnings"]}
    if problem.startswith("svr"):
        row["agreement"] = float(np.max(np.abs(a - b)))
        what = "max abs. difference of the test predictions"
    else:
        row["agreement"] = float(np.mean(a == b))
        what = "fraction of identical test predictions"
    md = [f"| C | test score ours | test score scikit-learn | {what} | fit s ours / sklearn |",
          "|---" * 5 + "|",
          f"| {C:g} | {row['ours_score']:.6f} | {row['sklearn_score']:.6f} "
          f"| {row['agreement']:.6g} | {row['ours_time']:.2f} / {row['sklearn_time']:.2f} |"]
    if row["ours_warnings"] or row["sklearn_warnings"]:
        md += ["", f"Warnings: ours {row['ours_warnings']}, scikit-learn "
                   f"{row['sklearn_warnings']}"]
    return [row], md


def main():
    global MAX_ITER
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--problem", choices=PROBLEMS, default="svr")
    ap.add_argument("--data", default="debian-size")
    ap.add_argument("--study", choices=("correct", "speed", "sklearn"), default="speed")
    ap.add_argument("--C", type=float, default=1.0, help="C of the sklearn study")
    ap.add_argument("-r", "--repeats", type=int, default=5)
    ap.add_argument("--max-iter", type=int, default=MAX_ITER,
                    help="sweep cap per run (default %(default)s); capped runs are marked *")
    ap.add_argument("--tol", type=float, default=1e-3,
                    help="our tolerance in the correctness study (default %(default)s)")
    ap.add_argument("--peer-tol", type=float, default=1e-6,
                    help="liblinear's -e (correct; 0: no liblinear), scikit-learn's tol (sklearn); "
                    "%(default)s")
    ap.add_argument("--quick", action="store_true", help="smoke run on a9a, seconds")
    ap.add_argument("--tol-rules", default="max",
                    help="speed: our stopping rules, comma-separated, of max, liblinear "
                    "(regression only); default %(default)s")
    ap.add_argument("--stem", help="output file stem (default from the arguments)")
    ap.add_argument("--out", default=str(results_dir("linear_family")))
    a = ap.parse_args()
    tol_rules = tuple(a.tol_rules.split(","))
    MAX_ITER = a.max_iter
    from liblinear import liblinearutil as ll
    loss, s = PROBLEMS[a.problem]
    data = "a9a" if a.quick else a.data
    X, y, Xt, yt = load(data)
    X, y = V.as_csr(X), np.asarray(y, dtype=np.float64)
    prob = ll.problem(y, X)
    reps = 1 if a.quick else a.repeats
    t0 = time.perf_counter()
    if a.study == "correct":
        rows, md = study_correct(X, y, loss, s, prob, [0.01] if a.quick else [0.01, 1, 100],
                                 a.peer_tol, a.tol)
    elif a.study == "sklearn":
        rows, md = study_sklearn(a.problem, X, y, Xt, yt, a.C, a.peer_tol)
    else:
        rows, md = study_speed(X, y, loss, s, prob, [0.1] if a.quick else [0.1, 1], reps,
                               tol_rules)
    eps = f", epsilon {EPSILON}" if s in (12, 13) else ""
    title = (f"### {a.problem} ({loss}, liblinear -s {s}{eps}) on {data}: "
             f"{a.study}" + ("" if a.study == "correct" else f", medians of {reps}"))
    text = "\n".join([title, "", *md, ""])
    stem = f"{a.problem}_{data}_{a.study}" + ("_quick" if a.quick else "")
    if a.study == "correct" and a.tol != 1e-3:
        stem += f"_tol{a.tol:g}"
    if a.study == "sklearn" and a.C != 1.0:
        stem += f"_C{a.C:g}"
    if a.study != "speed" and a.peer_tol != 1e-6:
        stem += f"_peer{a.peer_tol:g}"
    if a.study == "speed" and tol_rules != ("max",):
        stem += "_" + "_".join(tol_rules)
    stem = a.stem or stem
    write_outputs(stem, {"machine": machine(), "problem": a.problem, "data": data,
                         "study": a.study, "repeats": reps, "epsilon": EPSILON,
                         "max_iter": MAX_ITER, "tol_rules": list(tol_rules), "rows": rows,
                         "seconds": time.perf_counter() - t0}, text, a.out)
    print(text)


if __name__ == "__main__":
    main()
