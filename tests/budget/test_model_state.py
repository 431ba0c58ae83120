"""A budgeted model's exact state (BudgetModel.state / restore) and the pieces of a run
that another call continues (bsgd_run's perm and visit, Maintainer.merge_down): a run cut
into calls, each on a model rebuilt from the last state, gives the bits of one run."""
import numpy as np
import pytest
import scipy.sparse as sp

from pybudget._core import _validation as V
from pybudget.budget._bsca import bsca_run
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


@pytest.mark.parametrize("storage", ["dense", "sparse"])
def test_a_bsca_run_cut_into_visits_gives_the_bits_of_one_run(storage):
    """BSCA: three epochs in one call against three visits of one epoch, each on a new
    model restored from the previous state (order, generator, duals and step count
    passed on; the tail average begun in the last): the same SVs, coefficients,
    sources (unmerged SVs updated in place across calls), averages and duals."""
    X, codes = data()
    n, d = X.shape
    y = np.where(codes == 1, 1.0, -1.0)
    p = check_budget_params(1.0, "scale", 100, "bsca", 3, "merge", 2, "gss", "cascade",
                            0.01, "tail", 0, True, False, storage)
    B, M, E, seed = 100, 2, 3, 5
    xsq = V.row_sqnorms(X)
    avg = E * n - _tail(n, B, "tail") + 1
    mdl, mt = _new_model(d, 1, B + M - 1, 0.1, p, n_src=n, sparse=storage == "sparse")
    alpha = np.zeros(n)
    bsca_run(X, xsq, y, 1.0, alpha, mdl, mt, B, M, E, seed, avg_start=avg)
    state, t, rng, perm, alpha2 = None, 0, seed, np.arange(n, dtype=np.int32), np.zeros(n)
    sourced = []
    for _ in range(E):
        m2, mt2 = _new_model(d, 1, B + M - 1, 0.1, p, n_src=n, sparse=storage == "sparse")
        if state is not None:
            m2.restore(state)
        out = bsca_run(X, xsq, y, 1.0, alpha2, m2, mt2, B, M, 1, rng, avg_start=avg,
                       perm=perm, visit=True, t_start=t)
        t, rng, state = out["t"], out["seed_state"], m2.state()
        sourced.append(int(np.sum(state.src >= 0)))
    mt2.merge_down(m2, B, M)
    for a, b in zip(arrays(mdl, True), arrays(m2, True)):
        assert np.array_equal(a, b)
    assert np.array_equal(alpha, alpha2) and t == E * n
    assert min(sourced) > 0          # (unmerged SVs handed on with their sources)


def test_a_bsca_visit_to_a_partition_steps_its_rows_as_the_rows_of_all():
    """A visit to the rows a.. of X (src_offset = a) against the same rows stepped as
    rows of all of X: the same model, sources and duals (its rows' sources are their
    index in all rows, so an SV from another partition keeps its own)."""
    X, codes = data(n=400)
    n, d = X.shape
    y = np.where(codes == 1, 1.0, -1.0)
    a = 150
    p = check_budget_params(1.0, "scale", 100, "bsca", 1, "merge", 2, "gss", "cascade",
                            0.01, "none", 0, True, False, "dense")
    xsq = V.row_sqnorms(X)
    share = np.arange(0, n - a, 2, dtype=np.int32)
    first = np.arange(0, a, 3, dtype=np.int32)
    runs = []
    for local in (True, False):
        mdl, mt = _new_model(d, 1, 101, 0.1, p, n_src=n)
        alpha = np.zeros(n)
        out = bsca_run(X, xsq, y, 1.0, alpha, mdl, mt, 100, 2, 1, 3, perm=first.copy(),
                       visit=True)                     # (partition 0's rows first)
        if local:
            part = alpha[a:].copy()
            bsca_run(X[a:], xsq[a:], y[a:], 1.0, part, mdl, mt, 100, 2, 1, 7,
                     perm=share.copy(), visit=True, t_start=out["t"], src_offset=a)
            alpha[a:] = part
        else:
            bsca_run(X, xsq, y, 1.0, alpha, mdl, mt, 100, 2, 1, 7, perm=share + a,
                     visit=True, t_start=out["t"])
        runs.append((*arrays(mdl, False)[:3], alpha))
    for u, v in zip(*runs):
        assert np.array_equal(u, v)
    src = runs[0][2]
    assert np.any((src >= 0) & (src < a)) and np.any(src >= a)
    with pytest.raises(ValueError, match="do not match"):      # (sources beyond n_src)
        bsca_run(X[a:], xsq[a:], y[a:], 1.0, np.zeros(n - a), mdl, mt, 100, 2, 1, 7,
                 visit=True, src_offset=a + 1)


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
