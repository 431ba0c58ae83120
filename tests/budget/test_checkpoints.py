"""checkpoints=k: the objective estimate against numpy, segmented runs against unsegmented
ones, and the returned model being the lowest-objective checkpoint."""
import numpy as np
import pytest
import scipy.sparse as sp

from sklearn.utils.estimator_checks import check_estimator

from pybudget import BudgetSVC, solve_budget
from pybudget.budget._bsca import bsca_run
from pybudget.budget._bsgd import bsgd_run
from pybudget.budget._budget import BudgetModel
from pybudget.budget._checkpoint import BestCheckpoint
from pybudget.budget._maintain import Maintainer
from pybudget._core._validation import row_sqnorms


def csr(X):
    Xc = sp.csr_matrix(X)
    Xc.indices, Xc.indptr = Xc.indices.astype(np.int32), Xc.indptr.astype(np.int32)
    return Xc


def gauss(A, B, gamma):
    return np.exp(-gamma * ((A[:, None] - B[None]) ** 2).sum(-1))


def problem(n=150, k=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    X[rng.random(X.shape) < 0.3] = 0.0
    codes = (np.digitize(X[:, 0] + 0.5 * X[:, 1], [-0.5, 0.5])[:] % k).astype(np.int32)
    return X, codes


@pytest.mark.parametrize("k", [2, 3])
def test_objective_estimate_matches_numpy(k):
    X, codes = problem(k=k)
    gamma, lam, nc = 0.4, 0.01, 1 if k == 2 else k
    rng = np.random.default_rng(1)
    mdl = BudgetModel(3, nc, 12, gamma)
    Z = rng.normal(size=(10, 3))
    beta = rng.normal(size=(10, nc))
    mdl.load(Z, beta)
    mdl.multiply(0.3)                     # lazy scale must be folded into the estimate
    Xc = csr(X)
    got = BestCheckpoint(Xc, row_sqnorms(Xc), codes, lam, 0, 1).objective(mdl)[0]
    b = 0.3 * beta
    F = gauss(X, Z, gamma) @ b
    if k == 2:
        margin = np.where(codes == 1, F[:, 0], -F[:, 0])
    else:
        f_y = F[np.arange(len(X)), codes]
        F[np.arange(len(X)), codes] = -np.inf
        margin = f_y - F.max(1)
    want = lam / 2 * np.trace(b.T @ gauss(Z, Z, gamma) @ b) + np.maximum(0, 1 - margin).mean()
    assert got == pytest.approx(want, rel=1e-10)


def test_sample_is_a_fixed_subset_when_n_is_large():
    X, codes = problem(n=3000)
    Xc = csr(X)
    a = BestCheckpoint(Xc, row_sqnorms(Xc), codes, 0.1, 5, 1)
    b = BestCheckpoint(Xc, row_sqnorms(Xc), codes, 0.1, 5, 1)
    assert a.X.shape[0] == 2048 and (a.X != b.X).nnz == 0


def run_bsgd(Xc, codes, check_every, callback, M=2, budget=15):
    mdl = BudgetModel(Xc.shape[1], 1, budget + M - 1, 0.5)
    mt = Maintainer(mdl, "merge", "gss", "cascade", M, 0.01)
    out = bsgd_run(Xc, row_sqnorms(Xc), codes, mdl, mt, budget, M, 1.0 / (150 * 10.0), 3,
                   0, 7, 0, None, check_every, callback)
    return mdl, out


def test_bsgd_segments_do_not_change_the_trajectory():
    X, codes = problem()
    Xc = csr(X)
    seen = []
    plain, _ = run_bsgd(Xc, codes, 0, None)
    seg, _ = run_bsgd(Xc, codes, 37, lambda m: seen.append(m.arrays()[0].shape[0]))
    assert len(seen) == (3 * 150 - 1) // 37          # every 37 steps short of the end
    for a, b in zip(plain.arrays(), seg.arrays()):
        np.testing.assert_array_equal(a, b)


def test_bsgd_multimerge_checkpoints_see_at_most_budget_svs():
    X, codes = problem()
    seen = []
    mdl, _ = run_bsgd(csr(X), codes, 11, lambda m: seen.append(m.arrays()[0].shape[0]), M=4)
    assert max(seen) <= 15 and mdl.arrays()[0].shape[0] <= 15


def test_bsgd_returns_the_lowest_objective_checkpoint():
    X, codes = problem(n=300)
    y = np.where(codes == 1, "p", "n")
    # the papers' objective (no offset); picks checkpoint 5
    kw = dict(C=50.0, gamma=0.1, budget=20, epochs=4, random_state=0, offset=False,
              averaging="none")
    last = solve_budget(X, y, **kw)
    res = solve_budget(X, y, checkpoints=8, **kw)
    obj = res.checkpoint_objectives[0]
    assert len(obj) == 8 and res.checkpoint[0] == np.argmin(obj)
    # the returned model scores the selected objective; checkpoint 7 is the last iterate
    assert res.checkpoint[0] < 7 and not np.array_equal(res.dual_coef, last.dual_coef)
    mdl = BudgetModel(3, 1, 21, 0.1)
    mdl.load(res.support_vectors, res.dual_coef.T)
    Xc = csr(X)
    ck = BestCheckpoint(Xc, row_sqnorms(Xc), codes, 1 / (300 * 50.0), 0, 1)
    got = ck.objective(mdl)[0]
    assert got == pytest.approx(obj.min(), rel=1e-9)
    one = solve_budget(X, y, checkpoints=1, **kw)
    np.testing.assert_array_equal(one.dual_coef, last.dual_coef)
    assert one.checkpoint[0] == 0 and last.checkpoint is None


def test_bsca_segments_keep_alpha_and_return_matching_alpha():
    X, codes = problem(n=60)
    Xc = csr(X)
    y = np.where(codes == 1, 1.0, -1.0)

    def go(check_every, cb):
        mdl = BudgetModel(3, 1, 61, 0.7, 60)
        alpha = np.zeros(60)
        bsca_run(Xc, row_sqnorms(Xc), y, 2.0, alpha, mdl, Maintainer(mdl), 60, 2, 3, 9,
                 None, check_every, cb)
        return alpha, mdl.arrays()

    a0, m0 = go(0, None)
    a1, m1 = go(13, lambda m: None)
    np.testing.assert_array_equal(a0, a1)
    np.testing.assert_array_equal(m0[1], m1[1])
    # no merges (budget = n): the returned model is y * alpha on its source slots
    res = solve_budget(X, codes, C=2.0, gamma=0.7, budget=60, solver="bsca", epochs=3,
                       checkpoints=6, random_state=0)
    beta = res.dual_coef[0]
    xs = {tuple(r): i for i, r in enumerate(X)}
    idx = np.array([xs[tuple(z)] for z in res.support_vectors])
    np.testing.assert_allclose(beta, y[idx] * res.alpha[0][idx], atol=1e-12)
    assert not np.any(res.alpha[0][np.setdiff1d(np.arange(60), idx)])


def test_multiclass_checkpoints():
    X, codes = problem(n=240, k=3)
    for solver, n_prob in (("bsgd", 1), ("bsca", 3)):
        clf = BudgetSVC(C=10.0, gamma=0.5, budget=30, epochs=3, solver=solver, checkpoints=5,
                        random_state=0).fit(X, codes)
        assert clf.checkpoint_.shape == (n_prob,) and clf.score(X, codes) > 0.7


@pytest.mark.parametrize("params,exc,msg", [
    (dict(checkpoints=-1), ValueError, "checkpoints must be an integer >= 0"),
    (dict(checkpoints=2.0), TypeError, "checkpoints must be an integer"),
    (dict(checkpoints=3, averaging="all"), ValueError,
     "checkpoints=3 selects among iterates and cannot be combined with averaging='all'"),
])
def test_bad_checkpoints(params, exc, msg):
    X, codes = problem()
    with pytest.raises(exc, match=msg):
        BudgetSVC(**params).fit(X, codes)




@pytest.mark.parametrize("solver", ["bsgd", "bsca"])
def test_check_estimator_with_checkpoints(solver):
    check_estimator(BudgetSVC(C=10.0, epochs=3, budget=40, solver=solver, checkpoints=4,
                              random_state=0))


def test_more_checkpoints_than_steps():
    X, codes = problem(n=5)
    res = solve_budget(X, codes, budget=3, epochs=1, checkpoints=10, random_state=0)
    assert len(res.checkpoint_objectives[0]) == 5     # one per step
