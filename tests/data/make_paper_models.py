"""Writes paper_models.npz: models trained by pybudget before the fitted offset (commit c3cb291,
whose default was the papers' last iterate), for tests/budget/test_offset.py to compare the
setting offset=False, checkpoints=0 against bit for bit; and budget_v1.pbm, a model
file of format version 1 with the decision values it gave (in paper_models.npz).

    PYTHONPATH=<checkout of c3cb291 built in place> python tests/data/make_paper_models.py
"""
from pathlib import Path

import numpy as np

from pybudget import BudgetSVC

CONFIGS = {   # name -> (BudgetSVC options, number of classes)
    "bsgd_binary": (dict(C=20.0, gamma=0.3, budget=25, epochs=3), 2),
    "bsgd_multi": (dict(C=20.0, gamma=0.3, budget=25, epochs=2), 3),
    "bsca_binary": (dict(C=20.0, gamma=0.3, budget=25, epochs=2, solver="bsca"), 2),
    "bsca_ovr": (dict(C=5.0, gamma=0.3, budget=25, epochs=1, solver="bsca"), 3),
    "bsgd_lookup_m3": (dict(C=20.0, gamma=0.3, budget=25, epochs=2, merge_size=3,
                            merge_search="lookup-wd"), 2),
}


def data(k, n=400, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.digitize(X[:, 0] + 0.6 * np.sin(2 * X[:, 1]), np.linspace(-0.8, 0.8, k - 1))
    return X, y


def fit_all(**extra):
    out = {}
    for name, (opts, k) in CONFIGS.items():
        X, y = data(k)
        clf = BudgetSVC(random_state=7, **opts, **extra).fit(X, y)
        out[f"{name}_sv"], out[f"{name}_coef"] = clf.support_vectors_, clf.dual_coef_
    X, y = data(2)
    clf = BudgetSVC(C=20.0, gamma=0.3, budget=25, random_state=7, **extra)
    for a in range(0, 400, 150):
        clf.partial_fit(X[a:a + 150], y[a:a + 150], classes=[0, 1])
    out["partial_sv"], out["partial_coef"] = clf.support_vectors_, clf.dual_coef_
    return out


if __name__ == "__main__":
    from pybudget import save
    here = Path(__file__).parent
    out = fit_all()
    X, y = data(3)
    clf = BudgetSVC(C=20.0, gamma=0.3, budget=25, epochs=2, random_state=7).fit(X, y)
    save(clf, here / "budget_v1.pbm")
    out["v1_decision"] = clf.decision_function(X)
    np.savez(here / "paper_models.npz", **out)
