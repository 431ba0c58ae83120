"""BSGD against an eager numpy reference that replays the solver's random order."""

import numpy as np
import pytest
import scipy.sparse as sp

from pybudget import BudgetSVC
from pybudget.budget import _merge_math
from pybudget.budget._bsgd import bsgd_run
from pybudget.budget._budget import BudgetModel
from pybudget.budget._maintain import Maintainer
from pybudget._core._validation import row_sqnorms

from helpers import SplitMix, data_dir, need_data, small_problem

def reference_bsgd(X, y, C, gamma, budget, epochs, seed, tol, avg_start=0, acc_out=None):
    """Eager Pegasos (every coefficient scaled every step) with pairwise merging written
    out in numpy; SV slots handled like the buffer (remove = move last into the hole).
    avg_start > 0: also keep, per SV, the sum of its coefficient over the iterates
    w_{t+1}, t >= avg_start (merged SV: sum_i A_i k(z_i, z)); returned in acc_out."""
    n = X.shape[0]
    lam = 1.0 / (n * C)
    Z, B, A = [], [], []
    perm, rng, t = list(range(n)), SplitMix(seed), 0
    for _ in range(epochs):
        rng.shuffle(perm)
        for i in perm:
            t += 1
            if t == avg_start:
                A = [0.0] * len(B)
            f = sum(b * np.exp(-gamma * np.sum((z - X[i]) ** 2)) for z, b in zip(Z, B))
            B = [b * (1 - 1 / t) for b in B]
            if t == 1:
                Z, B, A = [], [], []
            if y[i] * f < 1:
                Z.append(X[i].copy())
                B.append(y[i] / (lam * t))
                A.append(0.0)
                if len(Z) > budget:
                    p = 0                     # smallest |beta|, ties (1e-12) to the lowest
                    for j in range(1, len(B)):
                        if B[j] ** 2 < B[p] ** 2 * (1 - 1e-12):
                            p = j
                    best = None
                    for j in range(len(Z)):
                        if j == p or B[j] * B[p] <= 0:
                            continue
                        c = gamma * np.sum((Z[p] - Z[j]) ** 2)
                        m = B[p] / (B[p] + B[j])
                        h = _merge_math.gss_h_array(np.array([m]), np.array([c]), tol)[0]
                        wd = _merge_math.wd_array(*(np.array([v]) for v in
                                               (B[p] ** 2, B[j] ** 2, B[p] * B[j], c, h)))[0]
                        if best is None or wd < best[0]:
                            best = (wd, j, h, c)
                    _, q, h, c = best
                    z = h * Z[p] + (1 - h) * Z[q]
                    b = B[p] * np.exp(-c * (1 - h) ** 2) + B[q] * np.exp(-c * h * h)
                    a = sum(A[r] * np.exp(-gamma * np.sum((Z[r] - z) ** 2)) for r in (p, q))
                    for r in sorted((p, q), reverse=True):
                        Z[r], B[r], A[r] = Z[-1], B[-1], A[-1]
                        Z.pop()
                        B.pop()
                        A.pop()
                    Z.append(z)
                    B.append(b)
                    A.append(a)
            if avg_start and t >= avg_start:
                A = [a + b for a, b in zip(A, B)]
    if acc_out is not None:
        acc_out.append(np.array(A))
    return np.array(Z), np.array(B), t


def run_solver(X, y, C, gamma, budget, epochs, seed, tol, t0=0, mdl=None, avg_start=0):
    Xc = sp.csr_matrix(X)
    Xc.indices = Xc.indices.astype(np.int32)
    Xc.indptr = Xc.indptr.astype(np.int32)
    if mdl is None:
        mdl = BudgetModel(X.shape[1], 1, budget + 1, gamma)
    mt = Maintainer(mdl, tol=tol)
    out = bsgd_run(Xc, row_sqnorms(Xc), (y > 0).astype(np.int32), mdl, mt, budget, 2,
                   1.0 / (X.shape[0] * C), epochs, t0, seed, avg_start)
    return mdl, out, mt


def test_lazy_scaling_matches_eager_without_maintenance():
    X, y = small_problem()
    mdl, out, mt = run_solver(X, y, C=2.0, gamma=0.5, budget=60, epochs=1, seed=123, tol=0.01)
    Zr, Br, t = reference_bsgd(X, y, 2.0, 0.5, 60, 1, 123, 0.01)
    Z, B, _ = mdl.arrays()
    assert mt.n_merges == 0 and out["t"] == t == 60
    np.testing.assert_array_equal(Z, Zr)
    np.testing.assert_allclose(B[:, 0], Br, rtol=1e-12, atol=1e-12 * np.abs(Br).max())


def test_bsgd_with_merging_matches_reference_over_epochs():
    X, y = small_problem(n=50)
    mdl, out, mt = run_solver(X, y, C=5.0, gamma=0.8, budget=8, epochs=3, seed=7, tol=1e-3)
    Zr, Br, t = reference_bsgd(X, y, 5.0, 0.8, 8, 3, 7, 1e-3)
    Z, B, _ = mdl.arrays()
    assert mt.n_merges > 10 and out["t"] == t == 150
    np.testing.assert_allclose(Z, Zr, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(B[:, 0], Br, rtol=1e-9, atol=1e-9 * np.abs(Br).max())


@pytest.mark.parametrize("budget,avg_start", [(60, 1), (8, 1), (8, 71), (8, 150)])
def test_iterate_averaging_matches_eager_reference(budget, avg_start):
    """Averaged sums through lazy scaling, insertions and merges equal an eager replay."""
    X, y = small_problem(n=50)
    mdl, out, mt = run_solver(X, y, C=5.0, gamma=0.8, budget=budget, epochs=3, seed=7,
                              tol=1e-3, avg_start=avg_start)
    acc = []
    Zr, Br, t = reference_bsgd(X, y, 5.0, 0.8, budget, 3, 7, 1e-3, avg_start, acc)
    Z, B, _ = mdl.arrays()
    assert out["n_avg"] == 150 - avg_start + 1
    assert (mt.n_merges > 10) == (budget < 50)
    np.testing.assert_allclose(Z, Zr, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(B[:, 0], Br, rtol=1e-9, atol=1e-9 * np.abs(Br).max())
    np.testing.assert_allclose(mdl.averaged()[:, 0], acc[0], rtol=1e-9,
                               atol=1e-9 * np.abs(acc[0]).max())
    if avg_start == 150:      # averaging only the last iterate is the last iterate
        np.testing.assert_allclose(mdl.averaged()[:, 0], B[:, 0], rtol=1e-12)


def test_averaging_off_leaves_the_model_unchanged():
    X, y = small_problem(n=50)
    m0, _, _ = run_solver(X, y, 5.0, 0.8, 8, 2, 3, 0.01)
    m1, out, _ = run_solver(X, y, 5.0, 0.8, 8, 2, 3, 0.01, avg_start=60)
    for a, b in zip(m0.arrays(), m1.arrays()):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="avg_start outside"):
        run_solver(X, y, 5.0, 0.8, 8, 1, 3, 0.01, avg_start=51)   # beyond the last step


def test_t_is_global_across_calls():
    X, y = small_problem(n=40)
    mdl, out, _ = run_solver(X, y, 1.0, 0.5, 10, 1, 5, 0.01)
    _, out2, _ = run_solver(X, y, 1.0, 0.5, 10, 2, 6, 0.01, t0=out["t"], mdl=mdl)
    assert out2["t"] == 120
    clf = BudgetSVC(budget=10, random_state=0)
    clf.partial_fit(X[:25], y[:25], classes=[-1.0, 1.0]).partial_fit(X[25:], y[25:])
    assert clf._t == 40 and clf.n_iter_ == 2
    assert clf.support_vectors_.shape[0] <= 10


@pytest.mark.parametrize("maintenance,kw", [("merge", dict(merge_size=3)),
                                             ("merge", dict(merge_size=4, multi_merge="gradient")),
                                             ("merge", dict(merge_search="lookup-wd")),
                                             ("merge", dict(merge_search="lookup-h")),
                                             ("remove", {}), ("project", {})])
def test_every_maintenance_respects_budget_and_learns(maintenance, kw):
    X, y = small_problem(n=300, seed=1)
    clf = BudgetSVC(C=10, gamma=0.5, budget=20, epochs=3, maintenance=maintenance,
                    random_state=0, **kw).fit(X, y)
    assert clf.support_vectors_.shape[0] <= 20
    assert clf.score(X, y) > (0.7 if maintenance == "remove" else 0.8)   # removal: a baseline


def test_multiclass_bsgd_learns_blobs():
    from sklearn.datasets import make_blobs
    X, y = make_blobs(400, centers=4, n_features=3, random_state=0, cluster_std=1.0)
    clf = BudgetSVC(C=10, gamma=0.3, budget=30, epochs=5, random_state=0).fit(X, y)
    assert clf.dual_coef_.shape == (4, clf.support_vectors_.shape[0])
    assert clf.support_vectors_.shape[0] <= 30
    # Crammer-Singer updates keep every SV's coefficients summing to zero; merges too
    np.testing.assert_allclose(clf.dual_coef_.sum(0), 0, atol=1e-8 * np.abs(clf.dual_coef_).max())
    assert clf.score(X, y) > 0.9


@need_data("ijcnn1.bz2", "ijcnn1.t.bz2")
def test_ijcnn1_one_epoch_smoke():
    from sklearn.datasets import load_svmlight_file
    X, y = load_svmlight_file(str(data_dir() / "ijcnn1.bz2"))
    Xt, yt = load_svmlight_file(str(data_dir() / "ijcnn1.t.bz2"), n_features=X.shape[1])
    clf = BudgetSVC(C=32, gamma=2.0, budget=200, random_state=0).fit(X, y)
    assert clf.score(Xt[:20000], yt[:20000]) > 0.94


@pytest.mark.parametrize("averaging,avg_start,budget", [
    ("all", 1, 8), ("last-half", 76, 8),
    ("tail", 126, 8), ("auto", 126, 8),   # the last min(n / 2, 4 B) = 25 steps
    ("tail", 139, 3),                     # the last 4 B = 12 steps
])
def test_estimator_returns_the_mean_of_the_averaged_iterates(averaging, avg_start, budget):
    # solve_budget's choice of the first averaged step and its division by the number of
    # averaged iterates, against the eager replay (T = 3 epochs x 50 rows = 150 steps)
    from pybudget import solve_budget
    from pybudget._core._validation import seed_from
    X, y = small_problem(n=50)
    res = solve_budget(X, y, C=5.0, gamma=0.8, budget=budget, epochs=3, merge_tol=1e-3,
                       averaging=averaging, random_state=11)
    acc = []
    Zr, _, _ = reference_bsgd(X, y, 5.0, 0.8, budget, 3, seed_from(11), 1e-3, avg_start,
                              acc)
    np.testing.assert_allclose(res.support_vectors, Zr, rtol=1e-9, atol=1e-9)
    want = np.asarray(acc[0]) / (150 - avg_start + 1)
    np.testing.assert_allclose(res.dual_coef[0], want, rtol=1e-9, atol=1e-9 * np.abs(want).max())


def test_direct_run_refuses_mismatched_parts():
    """bsgd_run and the shared epoch loop are callable from Python: parts that do not
    belong together are refused, never run (a maintainer sized for a smaller model
    corrupted the heap; a negative budget looped forever)."""
    from pybudget.budget._bsgd import BsgdSteps
    from pybudget.budget._epochs import run_epochs
    from pybudget._core._validation import canonical_csr
    X = canonical_csr(np.random.RandomState(0).randn(300, 3))
    codes = (np.arange(300) % 2).astype(np.int32)
    mdl = BudgetModel(3, 1, 6, 1.0)
    cases = [(Maintainer(BudgetModel(3, 1, 3, 1.0)), 5, 2, "different model"),
             (Maintainer(mdl), -5, 2, "do not fit"), (Maintainer(mdl), 5, 50, "do not fit"),
             (Maintainer(mdl), 500, 2, "do not fit")]
    for mt, budget, M, match in cases:
        with pytest.raises(ValueError, match=match):
            bsgd_run(X, row_sqnorms(X), codes, mdl, mt, budget, M, 0.01, 2, 0, 1, 0)
    with pytest.raises(ValueError, match="not set up"):
        run_epochs(BsgdSteps(), 1, 5)
