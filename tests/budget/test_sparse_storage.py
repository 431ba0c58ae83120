"""Sparse support vectors (storage="sparse"): the same model to the last bit as dense
storage, the buffer's operations against numpy, the "auto" rule, model files and
threads."""
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.utils.estimator_checks import check_estimator

from pybudget import BudgetSVC, load, save
from pybudget.budget import svm as S
from pybudget.budget._budget import THREADS, BudgetModel
from pybudget.budget._maintain import Maintainer


def rbf(A, B, gamma):
    return np.exp(-gamma * ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1))


def text_like(n=600, d=3000, density=0.01, classes=2, seed=0):
    """Sparse rows in many columns, labels from a random linear model."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, format="csr", random_state=seed)
    X.data = rng.normal(size=X.data.shape)
    score = X @ rng.normal(size=d)
    y = (score > 0).astype(int) if classes == 2 else np.digitize(score, [-0.5, 0.5])
    return X, y


def both(X, y, **kw):
    """The fitted (dense, sparse) models of the same parameters."""
    return [BudgetSVC(budget=30, gamma=0.5, C=10, random_state=0, storage=st, **kw).fit(X, y)
            for st in ("dense", "sparse")]


def assert_same_model(dense, sparse, X):
    assert isinstance(dense.support_vectors_, np.ndarray)
    assert sp.issparse(sparse.support_vectors_)
    np.testing.assert_array_equal(sparse.support_vectors_.toarray(), dense.support_vectors_)
    for name in ("dual_coef_", "intercept_"):
        np.testing.assert_array_equal(getattr(sparse, name), getattr(dense, name))
    np.testing.assert_array_equal(sparse.decision_function(X), dense.decision_function(X))
    assert sparse.n_merges_ == dense.n_merges_ and sparse.n_removed_ == dense.n_removed_


@pytest.mark.parametrize("kw", [
    dict(), dict(solver="bsca"), dict(merge_size=3), dict(merge_size=3, multi_merge="gradient"),
    dict(maintenance="project"), dict(maintenance="remove"), dict(averaging="all"),
    dict(checkpoints=4, averaging="none"), dict(merge_search="lookup-wd"),
    dict(merge_search="lookup-h", offset=False)])
@pytest.mark.parametrize("classes", [2, 3])
def test_sparse_storage_gives_the_dense_models_bits(kw, classes):
    X, y = text_like(classes=classes)
    dense, sparse = both(X, y, **kw)
    assert dense.n_merges_ + dense.n_removed_ > 100       # (the budget was maintained)
    assert_same_model(dense, sparse, X)


def test_float32_rows_and_dense_input_give_the_same_bits():
    X, y = text_like(seed=2)
    ref = both(X, y)[1]
    for Xv in (X.astype(np.float32), X.toarray()):
        got = BudgetSVC(budget=30, gamma=0.5, C=10, random_state=0, storage="sparse")
        got.fit(Xv, y)
        if Xv.dtype == np.float32:      # (float32 values: the same numbers in float64)
            ref32 = both(X.astype(np.float32).astype(np.float64), y)[1]
            np.testing.assert_array_equal(got.dual_coef_, ref32.dual_coef_)
        else:
            np.testing.assert_array_equal(got.dual_coef_, ref.dual_coef_)
            np.testing.assert_array_equal(got.support_vectors_.toarray(),
                                          ref.support_vectors_.toarray())


def test_buffer_operations_match_numpy_and_dense_storage():
    """Random adds (sparse and dense rows), removals and maintenance events of every
    kind on both storages: the same SVs, norms and kernel rows, and those of numpy."""
    rng = np.random.default_rng(3)
    d, cap = 40, 8
    for maintenance, M in (("merge", 2), ("merge", 3), ("remove", 2), ("project", 2)):
        models = [BudgetModel(d, 1, cap, 0.3, 0, sparse) for sparse in (False, True)]
        makers = [Maintainer(m, maintenance, merge_size=M) for m in models]
        for step in range(300):
            x = rng.normal(size=d) * (rng.uniform(size=d) < 0.2)
            row = sp.csr_matrix(x) if rng.uniform() < 0.7 else x
            c = [rng.normal()]
            for m, mt in zip(models, makers):
                if m.n_sv == cap:
                    mt.step(m, min(M, cap))
                m.add(row, c)
            if rng.uniform() < 0.1:
                j = int(rng.integers(models[0].n_sv))
                for m in models:
                    m.remove_slot(j)
            (Zd, bd, _), (Zs, bs, _) = (m.arrays() for m in models)
            assert sp.issparse(Zs) and Zs.has_sorted_indices
            np.testing.assert_array_equal(Zs.toarray(), Zd)
            np.testing.assert_array_equal(bs, bd)
            np.testing.assert_array_equal(models[1].sq_norms, models[0].sq_norms)
            assert models[1].stored_values == Zs.nnz <= Zd.size == models[0].stored_values
            if step % 25 == 0:
                probe = rng.normal(size=d) * (rng.uniform(size=d) < 0.5)
                # (kernel_row takes |x|^2 from numpy: the same row, the same number)
                k_dense = models[0].kernel_row(sp.csr_matrix(probe))
                np.testing.assert_array_equal(models[1].kernel_row(sp.csr_matrix(probe)),
                                              k_dense)
                np.testing.assert_array_equal(models[1].kernel_row(probe),
                                              models[0].kernel_row(probe))
                np.testing.assert_allclose(k_dense, rbf(Zd, probe[None], 0.3).ravel(),
                                           rtol=1e-12)


def test_squared_distances_match_numpy_on_both_storages():
    Z = sp.random(9, 60, density=0.2, format="csr", random_state=5)
    dense = Z.toarray()
    for sparse in (False, True):
        m = BudgetModel(60, 1, 9, 0.5, 0, sparse)
        m.load(Z, np.ones(9))
        for p in (0, 4, 8):
            np.testing.assert_allclose(m.sq_distances(p), ((dense - dense[p]) ** 2).sum(1),
                                       rtol=1e-14, atol=0)
        with pytest.raises(IndexError):
            m.sq_distances(9)


def test_load_takes_sparse_and_dense_rows():
    rng = np.random.default_rng(4)
    Z = sp.random(6, 50, density=0.1, format="csr", random_state=4)
    beta = rng.normal(size=(6, 2))
    for rows in (Z, Z.toarray(), Z.tocoo()):
        m = BudgetModel(50, 2, 8, 0.5, 0, True)
        m.load(rows, beta)
        got, b, _ = m.arrays()
        np.testing.assert_array_equal(got.toarray(), Z.toarray())
        np.testing.assert_array_equal(b, beta)
    with pytest.raises(ValueError, match="do not fit"):
        BudgetModel(50, 2, 4, 0.5, 0, True).load(Z, beta)


def test_auto_storage_rule():
    X, _ = text_like(n=400, d=3000, density=0.005)
    assert S.sparse_storage("auto", X, cap=501)               # rows fill 1/200, 1.5M values
    assert not S.sparse_storage("auto", X, cap=101)           # 0.3M values: dense is small
    dense_rows = sp.random(400, 3000, density=0.05, format="csr", random_state=0)
    assert not S.sparse_storage("auto", dense_rows, cap=501)  # rows fill 1/20
    assert S.sparse_storage("sparse", dense_rows, cap=3)
    assert not S.sparse_storage("dense", X, cap=501)
    X, y = text_like(n=400, d=5000, density=0.004)
    m = BudgetSVC(budget=300, gamma=0.5, random_state=0).fit(X, y)
    assert sp.issparse(m.support_vectors_)
    X, y = X.toarray()[:, :40], y                              # few columns: dense
    assert isinstance(BudgetSVC(budget=30, random_state=0).fit(X, y).support_vectors_,
                      np.ndarray)


def test_bad_storage_is_refused():
    X, y = text_like(n=50, d=100)
    with pytest.raises(ValueError, match="storage"):
        BudgetSVC(storage="csr").fit(X, y)


def test_model_file_round_trip_with_sparse_support_vectors(tmp_path):
    X, y = text_like()
    for m in both(X, y) + both(X, y, solver="bsca"):
        path = tmp_path / "m.pbm"
        save(m, path)
        back = load(path)
        assert sp.issparse(back.support_vectors_) == sp.issparse(m.support_vectors_)
        assert back.get_params() == m.get_params()
        assert back.decision_function(X).tobytes() == m.decision_function(X).tobytes()


def test_partial_fit_keeps_the_first_calls_storage_and_the_dense_bits():
    X, y = text_like(n=900)
    chunks = [(X[a:a + 300], y[a:a + 300]) for a in (0, 300, 600)]
    fits = []
    for storage in ("dense", "sparse"):
        m = BudgetSVC(budget=30, gamma=0.5, C=10, random_state=0, storage=storage)
        for Xc, yc in chunks:
            m.partial_fit(Xc, yc, classes=[0, 1])
        fits.append(m)
    assert sp.issparse(fits[1].support_vectors_)
    assert_same_model(*fits, X)


@pytest.mark.skipif(not THREADS, reason="built without OpenMP")
def test_decision_function_on_threads_with_sparse_support_vectors():
    """Each thread scatters its rows into its own buffer: the same bits for 1 and 2
    threads, and a team of 2 ran."""
    X, y = text_like()
    m = both(X, y)[1]
    Z, beta = m.support_vectors_, m.dual_coef_.T
    mdl = BudgetModel(Z.shape[1], 1, Z.shape[0], m.gamma_, 0, True)
    mdl.load(Z, beta)
    xsq = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    one, ran1 = mdl.decision_rows(X, xsq, 1)
    two, ran2 = mdl.decision_rows(X, xsq, 2)
    assert ran1 == 1 and ran2 == 2
    np.testing.assert_array_equal(one, two)
    np.testing.assert_array_equal(
        BudgetSVC(**{**m.get_params(), "n_jobs": 2}).fit(X, y).decision_function(X),
        m.decision_function(X))


def test_refit_on_sparse_support_vectors_is_the_dense_refit():
    """The refit's kernel columns come from sparse products here (numpy's formula in
    another order): the same optimum to round-off."""
    X, y = text_like()
    dense, sparse = both(X, y, refit=True)
    np.testing.assert_array_equal(sparse.support_vectors_.toarray(), dense.support_vectors_)
    np.testing.assert_allclose(sparse.dual_coef_, dense.dual_coef_, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(sparse.decision_function(X), dense.decision_function(X),
                               rtol=1e-6, atol=1e-8)


def test_check_estimator_sparse_storage():
    check_estimator(BudgetSVC(C=10.0, epochs=2, budget=20, storage="sparse", random_state=0))
