"""Writes fingerprints.json: SHA-256 digests of models and their step counts for every
linear strategy and budget solver on the embedded data sets, computed before the
package was reorganised (on commit d07f2db), for tests/test_fingerprints.py
to check that the reorganisation changed no bit.

    PYTHONPATH=<checkout built in place> python tests/data/make_fingerprints.py
"""
import hashlib
import json
from pathlib import Path

import numpy as np

from pybudget import BudgetSVC, LinearSVC, linear_path, solve_budget, solve_linear
from pybudget.datasets import load

LINEAR_SETS = ("a9a", "debian-lib-small")
SELECTIONS = ("uniform", "shrinking", "avsf", "auto")
LOSSES = ("hinge", "squared_hinge")
BUDGET_CONFIGS = {   # name -> solve_budget options (a9a, first 1500 rows)
    "bsgd": dict(solver="bsgd"),
    "bsgd_paper": dict(solver="bsgd", offset=False, averaging="none"),
    "bsgd_lookup_h": dict(solver="bsgd", merge_search="lookup-h"),
    "bsgd_lookup_wd_m3": dict(solver="bsgd", merge_search="lookup-wd", merge_size=3),
    "bsgd_gradient_m4": dict(solver="bsgd", merge_size=4, multi_merge="gradient"),
    "bsgd_remove": dict(solver="bsgd", maintenance="remove"),
    "bsgd_project": dict(solver="bsgd", maintenance="project"),
    "bsgd_checkpoints": dict(solver="bsgd", checkpoints=4),
    "bsca": dict(solver="bsca"),
    "bsca_lookup_wd": dict(solver="bsca", merge_search="lookup-wd"),
    "bsca_m3": dict(solver="bsca", merge_size=3),
}


def digest(*arrays):
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(np.asarray(a, dtype=np.float64)).tobytes())
    return h.hexdigest()[:24]


def linear_prints():
    out = {}
    for name in LINEAR_SETS:
        X, y = load(name)[:2]
        for loss in LOSSES:
            for sel in SELECTIONS:
                for C, bias in ((0.1, False), (10.0, True)):
                    r = solve_linear(X, y, C, loss=loss, selection=sel, tol=0.1,
                                     max_iter=200, fit_intercept=bias, random_state=3)
                    out[f"{name}/{loss}/{sel}/C={C}/bias={bias}"] = [
                        digest(r.coef, [r.intercept], r.alpha), r.n_iter, r.n_steps]
            path = linear_path(X, y, [0.1, 1.0, 10.0], loss=loss, selection="avsf",
                               tol=0.1, max_iter=200, random_state=3)
            out[f"{name}/{loss}/path"] = [digest(*[r.coef for r in path]),
                                          sum(r.n_steps for r in path)]
    X, y = load("a9a")[:2]
    y3 = np.where(X[:, 0].toarray().ravel() > 0, 2, y)   # three classes
    clf = LinearSVC(C=1.0, selection="auto", random_state=3).fit(X, y3)
    out["a9a/ovr3"] = [digest(clf.coef_, clf.intercept_), int(np.sum(clf.n_iter_))]
    return out


def budget_prints(bsca_opts=None):
    """The budget fingerprints; bsca_opts (e.g. averaging="none") are added to every
    BSCA configuration."""
    out = {}
    X, y = load("a9a")[:2]
    X, y = X[:1500], y[:1500]
    for name, opts in BUDGET_CONFIGS.items():
        if opts["solver"] == "bsca":
            opts = dict(opts, **(bsca_opts or {}))
        r = solve_budget(X, y, C=8.0, gamma=0.05, budget=40, epochs=2, random_state=5,
                         **opts)
        sv = r.support_vectors
        sv = sv.toarray() if hasattr(sv, "toarray") else sv
        out[name] = [digest(sv, r.dual_coef, np.ravel(r.intercept)), int(r.n_steps),
                     int(r.n_added), int(r.n_merges)]
    y3 = np.where(X[:, 0].toarray().ravel() > 0, 2, y)
    for solver in ("bsgd", "bsca"):
        opts = (bsca_opts or {}) if solver == "bsca" else {}
        clf = BudgetSVC(C=8.0, gamma=0.05, budget=40, epochs=1, solver=solver,
                        random_state=5, **opts).fit(X, y3)
        out[f"{solver}_multi3"] = [digest(clf.support_vectors_, clf.dual_coef_,
                                          np.ravel(clf.intercept_)), 0]
    return out


if __name__ == "__main__":
    prints = {"linear": linear_prints(), "budget": budget_prints()}
    path = Path(__file__).parent / "fingerprints.json"
    path.write_text(json.dumps(prints, indent=1, sort_keys=True) + "\n")
    print(f"wrote {sum(len(v) for v in prints.values())} fingerprints to {path}")
