"""The typed model buffer against plain numpy."""
import numpy as np
import pytest
import scipy.sparse as sp

from pybudget.budget._budget import BudgetModel


def rbf(A, B, gamma):
    return np.exp(-gamma * ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1))


def filled(n=7, d=5, n_coef=1, gamma=0.7, seed=0, cap=10, n_src=0):
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n, d)) * (rng.uniform(size=(n, d)) < 0.6)
    beta = rng.normal(size=(n, n_coef))
    mdl = BudgetModel(d, n_coef, cap, gamma, n_src)
    mdl.load(Z, beta, np.arange(n) if n_src else None)
    return mdl, Z, beta


def test_kernel_rows_sparse_and_dense_match_numpy():
    mdl, Z, beta = filled()
    rng = np.random.default_rng(1)
    for _ in range(5):
        x = rng.normal(size=5) * (rng.uniform(size=5) < 0.5)
        ref = rbf(Z, x[None, :], 0.7).ravel()
        np.testing.assert_allclose(mdl.kernel_row(x), ref, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(mdl.kernel_row(sp.csr_matrix(x)), ref, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(mdl.decision_function(x), ref @ beta, rtol=1e-12, atol=1e-14)
    # an empty sparse row and an SV equal to x (distance clamped at 0, k = 1)
    np.testing.assert_allclose(mdl.kernel_row(sp.csr_matrix((1, 5))),
                               np.exp(-0.7 * (Z ** 2).sum(1)), rtol=1e-12)
    assert mdl.kernel_row(Z[3])[3] == 1.0


def test_cached_norms_and_round_trip():
    mdl, Z, beta = filled(n_coef=3)
    np.testing.assert_allclose(mdl.sq_norms, (Z ** 2).sum(1), rtol=1e-14)
    Z2, b2, src = mdl.arrays()
    np.testing.assert_array_equal(Z2, Z)
    np.testing.assert_array_equal(b2, beta)
    assert (src == -1).all()


def test_remove_moves_last_and_keeps_slot_map():
    mdl, Z, beta = filled(n_src=7)
    np.testing.assert_array_equal(mdl.slots, np.arange(7))
    mdl.remove_slot(2)
    Z2, b2, src = mdl.arrays()
    assert mdl.n_sv == 6
    np.testing.assert_array_equal(src, [0, 1, 6, 3, 4, 5])
    np.testing.assert_array_equal(Z2[2], Z[6])
    slots = mdl.slots
    assert slots[2] == -1 and slots[6] == 2
    for j, s in enumerate(src):
        assert slots[s] == j
    mdl.remove_slot(5)                    # removing the last row
    assert mdl.n_sv == 5 and mdl.slots[5] == -1
    with pytest.raises(IndexError):
        mdl.remove_slot(5)


def test_feature_major_copy_follows_adds_into_stale_slots_and_removes():
    # kernel rows read the feature-major copy, arrays() the row-major one: after sparse
    # and dense adds into slots that held other SVs (with other supports) and removals
    # from the middle, both must still describe the same SVs
    rng = np.random.default_rng(3)
    d = 9
    mdl = BudgetModel(d, 1, 6, 0.3)
    for step in range(200):
        if mdl.n_sv == 6 or (mdl.n_sv > 0 and rng.uniform() < 0.4):
            mdl.remove_slot(int(rng.integers(mdl.n_sv)))
            continue
        x = rng.normal(size=d) * (rng.uniform(size=d) < 0.3)
        mdl.add(sp.csr_matrix(x) if rng.uniform() < 0.7 else x, [1.0])
        if step % 10 == 0:
            Z = mdl.arrays()[0]
            probe = rng.normal(size=d)
            np.testing.assert_allclose(mdl.kernel_row(probe), rbf(Z, probe[None], 0.3).ravel(),
                                       rtol=1e-12)


def test_lazy_scaling_equals_eager_to_1e12():
    rng = np.random.default_rng(3)
    mdl = BudgetModel(4, 2, 200, 0.5)
    Z, B = np.zeros((0, 4)), np.zeros((0, 2))
    for t in range(1, 150):
        f = rng.choice([0.5, 0.9, 1 - 1 / (t + 1)])    # 0.5 repeatedly forces folding
        mdl.multiply(f)
        B = B * f
        if rng.uniform() < 0.5:
            x, c = rng.normal(size=4), rng.normal(size=2)
            mdl.add(x, c)
            Z, B = np.vstack([Z, x]), np.vstack([B, c])
        assert mdl.scale >= 1e-9
        Zl, Bl, _ = mdl.arrays()
        np.testing.assert_allclose(Bl, B, rtol=1e-12, atol=0)
        np.testing.assert_array_equal(Zl, Z)
    x = rng.normal(size=4)
    np.testing.assert_allclose(mdl.decision_function(x), rbf(Z, x[None], 0.5).ravel() @ B,
                               rtol=1e-12, atol=1e-300)


def test_multiply_by_zero_clears():
    mdl, _, _ = filled(n_src=7)
    mdl.multiply(0.0)
    assert mdl.n_sv == 0 and (mdl.slots == -1).all() and mdl.scale == 1.0


def test_bad_arguments_raise():
    with pytest.raises(ValueError):
        BudgetModel(0, 1, 5, 1.0)
    with pytest.raises(ValueError):
        BudgetModel(3, 1, 5, 0.0)
    mdl = BudgetModel(3, 1, 2, 1.0)
    with pytest.raises(ValueError, match="do not fit"):
        mdl.load(np.zeros((3, 3)), np.zeros(3))
    mdl.add(np.ones(3), [1.0])
    mdl.add(np.ones(3), [1.0])
    with pytest.raises(ValueError, match="full"):
        mdl.add(np.ones(3), [1.0])
    with pytest.raises(ValueError, match="shape"):
        BudgetModel(3, 1, 2, 1.0).kernel_row(sp.csr_matrix(np.ones((1, 4))))
    with pytest.raises(ValueError, match=">= 0"):
        mdl.multiply(-1.0)


# ---- iterate averaging sums (BSGD averaging) -----------------------------------------

@pytest.mark.parametrize("kw", [dict(), dict(maintenance="remove"), dict(maintenance="project"),
                                dict(merge_size=3), dict(merge_size=3, multi="gradient"),
                                dict(search="lookup-wd")])
def test_averaged_sums_follow_every_maintenance(kw):
    """With the coefficients frozen, k accruals give acc = k * beta; every maintenance is
    linear in the coefficients for its chosen geometry, so acc = k * beta must survive it
    (merge: sum_i acc_i k(z_i, z); projection: moved like beta; removal: dropped)."""
    from pybudget.budget._maintain import Maintainer
    rng = np.random.default_rng(3)
    n, d = 9, 4
    mdl = BudgetModel(d, 1, n, 0.4)
    mdl.load(rng.normal(size=(n, d)), rng.uniform(0.2, 2.0, n) * rng.choice([-1, 1], n))
    mdl.start_averaging()
    for _ in range(3):
        mdl.accrue_step()
    mt = Maintainer(mdl, **{"maintenance": "merge", **kw})
    for _ in range(3):
        mt.step(mdl)
        np.testing.assert_allclose(mdl.averaged(), 3 * mdl.arrays()[1], rtol=1e-12, atol=1e-12)
    assert mdl.n_sv < n


def test_averaged_sums_survive_lazy_scaling_and_fold():
    rng = np.random.default_rng(4)
    mdl = BudgetModel(3, 2, 5, 0.5)
    Z, beta = rng.normal(size=(2, 3)), rng.normal(size=(2, 2))
    mdl.load(Z, beta)
    mdl.start_averaging()
    expect = np.zeros((2, 2))
    scale = 1.0
    for f in (0.5, 1e-6, 1e-5, 3.0):           # the product falls below 1e-9: a fold
        mdl.multiply(f)
        scale *= f
        mdl.accrue_step()
        expect += scale * beta
    assert mdl.scale != pytest.approx(scale)   # folded
    mdl.add(rng.normal(size=3), [1.0, -2.0])   # a new SV earns only later steps
    mdl.accrue_step()
    expect = np.vstack([expect + scale * beta, [[1.0, -2.0]]])
    np.testing.assert_allclose(mdl.averaged(), expect, rtol=1e-12)
    with pytest.raises(ValueError, match="averaging was not started"):
        BudgetModel(3, 1, 2, 0.5).averaged()


def test_kernel_row_exp_over_the_whole_range():
    # the vectorised exp (Cody-Waite + polynomial) against numpy over -g d2 in [-750, 0]
    rng = np.random.default_rng(5)
    d, n = 3, 400
    Z = np.zeros((n, d))
    Z[:, 0] = np.sqrt(np.linspace(0, 750, n))
    mdl = BudgetModel(d, 1, n, 1.0)
    mdl.load(Z, np.ones((n, 1)))
    x = np.zeros(d)
    ref = np.exp(-(Z ** 2).sum(1))
    got = mdl.kernel_row(x)
    small = ref < 1e-300
    np.testing.assert_allclose(got[~small], ref[~small], rtol=1e-14, atol=0)
    # below exp(-708) ~ 3.3e-308 the value is held at exp(-708) instead of underflowing
    assert np.all(got[small] <= np.maximum(ref[small] * (1 + 1e-13), 3.31e-308))
    assert np.all(got >= 0)
    assert got[0] == 1.0
    # random sparse points: same as the dense formula
    Z = rng.normal(size=(37, 11))
    mdl = BudgetModel(11, 1, 40, 0.3)
    mdl.load(Z, np.ones((37, 1)))
    for _ in range(5):
        x = rng.normal(size=11) * (rng.random(11) < 0.4)
        ref = np.exp(-0.3 * ((Z - x) ** 2).sum(1))
        np.testing.assert_allclose(mdl.kernel_row(sp.csr_matrix(x)), ref, rtol=1e-13)


def test_decision_stream_matches_decision_function():
    rng = np.random.default_rng(6)
    Z = rng.normal(size=(20, 7))
    beta = rng.normal(size=(20, 1))
    mdl = BudgetModel(7, 1, 25, 0.4)
    mdl.load(Z, beta)
    mdl.multiply(0.37)
    X = sp.random(30, 7, density=0.5, random_state=1, format="csr")
    X.indices = X.indices.astype(np.int32)
    xsq = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    got = mdl.decision_stream(X, xsq)
    ref = np.array([mdl.decision_function(X[i])[0] for i in range(30)])
    np.testing.assert_allclose(got, ref, rtol=1e-13, atol=1e-15)
    K = np.exp(-0.4 * ((X.toarray()[:, None] - Z[None]) ** 2).sum(-1))
    np.testing.assert_allclose(got, 0.37 * K @ beta[:, 0], rtol=1e-12, atol=1e-14)
