"""A budgeted model's exact state (BudgetModel.state / restore) and the pieces of a run
that another call continues (bsgd_run's perm and visit, Maintainer.merge_down): a run cut
into calls, each on a model rebuilt from the last state, gives the bits of one run."""
import numpy as np
import pytest
import scipy.sparse as sp

from pybudget._core import _validation as V
from pybudget.budget._bsgd import bsgd_run
from pybudget.budget._budget import BudgetModel
from pybudget.budget._state import ModelState
from pybudget.budget.svm import _new_model, _tail, check_budget_params


def data(n=600, d=40, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.2, format="csr", random_state=seed)
    X.data = rng.normal(size=X.data.shape)
    codes = (X @ rng.normal(size=d) + 0.3 * rng.normal(size=n) > 0).astype(np.int32)
    return X, codes


def params(storage, averaging="tail"):
    return check_budget_params(1.0, "scale", 30, "bsgd", 3, "merge", 2, "gss", "cascade",
                               0.01, averaging, 0, True, False, storage)


def arrays(mdl, averaged):
    Z, beta, src = mdl.arrays()
    Z = Z.toarray() if sp.issparse(Z) else Z
    return Z, beta, src, (mdl.averaged() if averaged else None)


@pytest.mark.parametrize("storage", ["dense", "sparse"])
@pytest.mark.parametrize("averaging", ["tail", "none"])
def test_a_run_cut_into_calls_gives_the_bits_of_one_run(storage, averaging):
    """Three epochs in one call against three calls of one epoch, each on a new model
    restored from the previous state (the shuffled order and the generator passed on,
    the average begun in the last call): the same SVs, coefficients and averages."""
    X, codes = data()
    n, d = X.shape
    p = params(storage, averaging)
    B, M, E, seed, lam = 30, 2, 3, 11, 1.0 / (n * p.C)
    xsq = V.row_sqnorms(X)
    avg = E * n - _tail(n, B, "tail") + 1 if averaging == "tail" else 0
    mdl, mt = _new_model(d, 1, B + M - 1, 0.1, p, sparse=storage == "sparse")
    bsgd_run(X, xsq, codes, mdl, mt, B, M, lam, E, 0, seed, avg)
    state, t, rng, perm = None, 0, seed, np.arange(n, dtype=np.int32)
    for _ in range(E):
        m2, mt2 = _new_model(d, 1, B + M - 1, 0.1, p, sparse=storage == "sparse")
        if state is not None:
            m2.restore(state)
        out = bsgd_run(X, xsq, codes, m2, mt2, B, M, lam, 1, t, rng, avg, perm=perm,
                       visit=True)
        t, rng, state = out["t"], out["seed_state"], m2.state()
        assert m2.n_sv <= B + M - 1      # (not merged down to the budget between calls)
    mt2.merge_down(m2, B, M)
    for a, b in zip(arrays(mdl, avg > 0), arrays(m2, avg > 0)):
        assert (a is None and b is None) or np.array_equal(a, b)
    assert t == E * n


@pytest.mark.parametrize("storage", ["dense", "sparse"])
def test_an_epoch_of_a_subset_of_rows_steps_those_rows(storage):
    """perm = some rows of X (sorted): the steps of X[rows], row for row, so the same
    bits as a run on the sliced rows."""
    X, codes = data()
    rows = np.flatnonzero(np.random.default_rng(1).random(X.shape[0]) < 0.3).astype(np.int32)
    p = params(storage)
    out = []
    for Xr, cr, perm in ((X[rows], codes[rows], None), (X, codes, rows.copy())):
        mdl, mt = _new_model(X.shape[1], 1, 31, 0.1, p, sparse=storage == "sparse")
        res = bsgd_run(Xr, V.row_sqnorms(Xr), cr, mdl, mt, 30, 2, 1e-3, 2, 0, 5, 0,
                       perm=perm)
        out.append((arrays(mdl, False), res["t"]))
    assert out[0][1] == out[1][1] == 2 * rows.shape[0]
    for a, b in zip(out[0][0][:3], out[1][0][:3]):
        assert np.array_equal(a, b)


def test_restore_keeps_what_a_reload_would_recompute():
    """The squared norms and the unscaled coefficients come back as they were, not as
    load() would recompute them from the rows and the folded coefficients."""
    X, codes = data(n=300)
    p = params("dense")
    mdl, mt = _new_model(X.shape[1], 1, 31, 0.1, p)
    bsgd_run(X, V.row_sqnorms(X), codes, mdl, mt, 30, 2, 1e-3, 1, 0, 3, 0, visit=True)
    st = mdl.state()
    assert st.scale != 1.0 and st.n_sv == mdl.n_sv
    other = BudgetModel(X.shape[1], 1, 31, 0.1)
    other.restore(st)
    again = other.state()
    for name in ("Z", "sqn", "beta", "src"):
        assert np.array_equal(getattr(st, name), getattr(again, name))
    assert again.scale == st.scale and again.acc is None
    assert st.nbytes == st.Z.nbytes + st.sqn.nbytes + st.beta.nbytes + st.src.nbytes


def test_restore_refuses_a_state_of_another_shape():
    X, codes = data(n=100)
    mdl = BudgetModel(X.shape[1], 1, 20, 0.5)
    mdl.add(X[0], [1.0])
    st = mdl.state()
    for other in (BudgetModel(X.shape[1] + 1, 1, 20, 0.5), BudgetModel(X.shape[1], 2, 20, 0.5),
                  BudgetModel(X.shape[1], 1, 20, 0.5, sparse=True)):
        with pytest.raises(ValueError, match="does not fit"):
            other.restore(st)
    with pytest.raises(TypeError, match="ModelState"):
        mdl.restore((st.Z, st.beta))
    assert isinstance(st, ModelState)


def test_bad_perm_and_merge_down_are_refused():
    X, codes = data(n=50)
    p = params("dense")
    mdl, mt = _new_model(X.shape[1], 1, 11, 0.1, p)
    xsq = V.row_sqnorms(X)
    for perm in (np.arange(50), np.zeros(50, np.int32), np.arange(1, 51, dtype=np.int32),
                 np.arange(51, dtype=np.int32), np.arange(-1, 5, dtype=np.int32),
                 np.zeros(0, np.int32)):
        with pytest.raises(ValueError, match="perm"):
            bsgd_run(X, xsq, codes, mdl, mt, 10, 2, 1e-2, 1, 0, 1, 0, perm=perm)
    with pytest.raises(ValueError, match="avg_start"):      # (outside a whole run's steps)
        bsgd_run(X, xsq, codes, mdl, mt, 10, 2, 1e-2, 1, 0, 1, 500)
    with pytest.raises(ValueError, match="merge_down"):
        mt.merge_down(mdl, 0, 2)
    with pytest.raises(ValueError, match="merge_down"):
        mt.merge_down(BudgetModel(X.shape[1], 1, 30, 0.1), 10, 2)
