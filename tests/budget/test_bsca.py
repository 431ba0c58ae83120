"""BSCA against exact dual coordinate ascent on the full kernel matrix."""
import numpy as np
import scipy.sparse as sp

from pybudget import BudgetSVC, solve_budget
from pybudget.budget._bsca import bsca_run
from pybudget.budget._budget import BudgetModel
from pybudget.budget._maintain import Maintainer
from pybudget._core._validation import row_sqnorms

from helpers import SplitMix, small_problem


def run(X, y, C, gamma, budget, epochs, seed):
    Xc = sp.csr_matrix(X)
    Xc.indices, Xc.indptr = Xc.indices.astype(np.int32), Xc.indptr.astype(np.int32)
    n = X.shape[0]
    mdl = BudgetModel(X.shape[1], 1, budget + 1, gamma, n)
    mt = Maintainer(mdl)
    alpha = np.zeros(n)
    out = bsca_run(Xc, row_sqnorms(Xc), y, C, alpha, mdl, mt, budget, 2, epochs, seed)
    return mdl, alpha, out, mt


def test_unbudgeted_bsca_is_exact_dual_coordinate_ascent():
    X, y = small_problem(n=40)
    C, gamma = 2.0, 0.7
    mdl, alpha, out, mt = run(X, y, C, gamma, budget=40, epochs=3, seed=11)
    K = np.exp(-gamma * ((X[:, None] - X[None]) ** 2).sum(-1))
    a = np.zeros(40)
    perm, rng = list(range(40)), SplitMix(11)
    for _ in range(3):
        rng.shuffle(perm)
        for i in perm:
            g = 1 - y[i] * (K[i] @ (a * y))
            a[i] = min(max(a[i] + g, 0.0), C)
    np.testing.assert_allclose(alpha, a, rtol=1e-10, atol=1e-10)
    # one slot per training point, updated in place, coefficient y_i alpha_i
    Z, B, src = mdl.arrays()
    assert mt.n_merges == 0 and len(set(src)) == len(src) and (src >= 0).all()
    np.testing.assert_allclose(B[:, 0], y[src] * a[src], atol=1e-12)
    assert np.all(np.abs(a[np.setdiff1d(np.arange(40), src)]) == 0)


def test_budgeted_bsca_keeps_box_budget_and_slot_map():
    X, y = small_problem(n=200, seed=2)
    mdl, alpha, out, mt = run(X, y, 5.0, 0.5, budget=15, epochs=3, seed=3)
    assert mdl.n_sv <= 15 and mt.n_merges > 0
    assert alpha.min() >= 0 and alpha.max() <= 5.0
    _, _, src = mdl.arrays()
    slots = mdl.slots
    for j, s in enumerate(src):
        if s >= 0:
            assert slots[s] == j
    assert (slots >= 0).sum() == (src >= 0).sum()


def test_bsca_estimator_binary_and_one_vs_rest():
    X, y = small_problem(n=300, seed=4)
    clf = BudgetSVC(C=10, gamma=0.5, budget=25, solver="bsca", epochs=3, random_state=0)
    assert clf.fit(X, y).score(X, y) > 0.85
    from sklearn.datasets import make_blobs
    Xb, yb = make_blobs(300, centers=3, n_features=2, random_state=1)
    res = solve_budget(Xb, yb, C=10, gamma=0.5, budget=10, solver="bsca", epochs=2,
                       random_state=0)
    assert res.dual_coef.shape == (3, res.support_vectors.shape[0])
    assert res.alpha.shape == (3, 300)
    # block structure: each SV belongs to exactly one one-vs-rest problem
    assert ((res.dual_coef != 0).sum(0) <= 1).all()
    clf = BudgetSVC(C=10, gamma=0.5, budget=10, solver="bsca", epochs=2, random_state=0)
    assert clf.fit(Xb, yb).score(Xb, yb) > 0.9
