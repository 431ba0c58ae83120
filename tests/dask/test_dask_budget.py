"""pybudget.dask.BudgetSVC: BSGD with the rows on the workers and the model travelling
between them, BSCA's problems each whole on a worker.  The same bits on the threads
engine, on any number of workers and (BSCA) as one machine's, a lost worker replayed
to the same bits, one machine's conventions (estimator checks, to_local, model files),
and the refusals."""
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone

import pybudget
import pybudget.dask as pbd
from pybudget._core import _validation as V
from pybudget.budget._offset import draw_sample, model_offset

from helpers import chunked, kill_on_task, tasks_run

distributed = pytest.importorskip("distributed")

SPREAD = pbd.ClusterRules(small_bytes=1000)     # (small data over every worker)


def rbf_data(n=1200, d=20, seed=0):
    """Two classes of sparse rows that a Gaussian kernel separates better than a line
    (labels 3 and 8: any values)."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.3, format="csr", random_state=seed)
    X.data = rng.normal(size=X.data.shape)
    r = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    y = np.where(r + 0.3 * rng.normal(size=n) > np.median(r), 8, 3)
    return X, y


def arrays(m):
    return (m.support_vectors_, m.dual_coef_, m.intercept_, m.gamma_)


def same(a, b):
    for u, v in zip(arrays(a), arrays(b)):
        u = u.toarray() if sp.issparse(u) else u
        v = v.toarray() if sp.issparse(v) else v
        np.testing.assert_array_equal(u, v)


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_same_bits_on_any_number_of_workers(workers):
    """2 partitions a worker, spread over 1, 2 and 3 workers (in-memory rows: the
    engine places them; a Dask array's partitions go where Dask put its chunks): the
    threads engine's model, bit for bit, and the model travelled between the
    workers."""
    X, y = rbf_data()
    kw = dict(budget=40, epochs=2, random_state=1, rules=SPREAD, n_partitions=2 * workers)
    ref = pbd.BudgetSVC(engine="threads", **kw).fit(X, y)
    with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cl, distributed.Client(cl) as c:
        c.wait_for_workers(workers)
        with tasks_run(c) as ran:
            m = pbd.BudgetSVC(client=c, **kw).fit(X, y)
    same(m, ref)
    assert len(set(m.partition_workers_)) == workers
    # the runs of visits where their partitions live
    runs = [w for name, w in ran if name == "together_task"]
    assert len(runs) >= 2 * workers and len(set(runs)) == workers
    assert m.bytes_sent_["client"] > 0 and m.n_partitions_ == 2 * workers


def test_dask_array_partitions_train_where_the_chunks_are(client):
    """A Dask array's 4 chunks: the partitions are built where Dask put them, the
    threads engine's bits."""
    X, y = rbf_data()
    Xd, yd = chunked(X, y, 4)
    kw = dict(budget=40, random_state=1)
    ref = pbd.BudgetSVC(engine="threads", **kw).fit(Xd, yd)
    m = pbd.BudgetSVC(client=client, **kw).fit(Xd, yd)
    same(m, ref)
    assert m.n_partitions_ == 4 and None not in m.partition_workers_


def test_multiclass_and_dense_input_on_the_threads_engine():
    """One multi-class BSGD model (the classes share the SVs), in-memory dense rows
    dealt to 3 partitions: every class predicted, one machine's accuracy within a few
    points, the same bits run to run."""
    rng = np.random.default_rng(2)
    centres = rng.normal(size=(4, 6)) * 3
    y = np.repeat(np.arange(4), 150) * 5 + 1
    X = centres[np.repeat(np.arange(4), 150)] + rng.normal(size=(600, 6))
    kw = dict(budget=30, random_state=0)
    a = pbd.BudgetSVC(engine="threads", n_partitions=3, **kw).fit(X, y)
    b = pbd.BudgetSVC(engine="threads", n_partitions=3, **kw).fit(X, y)
    same(a, b)
    assert a.dual_coef_.shape == (4, a.support_vectors_.shape[0]) <= (4, 30)
    one = pybudget.BudgetSVC(**kw).fit(X, y)
    assert set(a.predict(X)) == set(y)
    assert a.score(X, y) >= one.score(X, y) - 0.05


def test_laps_mix_the_partitions_of_rows_stored_by_label():
    """Rows sorted by label in 4 contiguous chunks: with one visit a partition an
    epoch, the model ends on the last chunks' class and some seeds predict one class
    only; the auto laps' visits (about 1024 an epoch, at least 8 rows each) mix the
    partitions, and every seed comes near one machine's accuracy.  Every row is
    stepped once an epoch whatever the laps."""
    X, y = rbf_data(n=2400, seed=5)
    order = np.argsort(y, kind="stable")
    X, y = X[order], y[order]
    Xd, yd = chunked(X, y, 4)
    one, auto, machine = [], [], []
    for seed in range(4):
        m1 = pbd.BudgetSVC(budget=30, random_state=seed, engine="threads", laps=1).fit(Xd, yd)
        ma = pbd.BudgetSVC(budget=30, random_state=seed, engine="threads").fit(Xd, yd)
        # (600 rows a partition, at least 8 a visit)
        assert ma.laps_ == 75 and m1.laps_ == 1 and ma._t == m1._t == 2400
        one.append(m1.score(X, y))
        auto.append(ma.score(X, y))
        machine.append(pybudget.BudgetSVC(budget=30, random_state=seed).fit(X, y).score(X, y))
    assert min(one) < 0.55                  # (one class predicted)
    assert min(auto) > 0.7 and np.mean(auto) > np.mean(machine) - 0.08


def test_an_epochs_visits_cover_every_share_once_in_laps():
    """epoch_visits: lap by lap, every partition with rows in the lap's share once, in
    an order that changes from lap to lap and epoch to epoch (drawn from the seed)."""
    from pybudget.dask._budget_ring import epoch_visits
    from types import SimpleNamespace
    run = SimpleNamespace(laps=8, seed=3)
    sizes = np.array([40, 0, 5, 40])
    v0, v1 = epoch_visits(run, sizes, 0), epoch_visits(run, sizes, 1)
    assert sorted(v0) == sorted(v1) and len(set(v0)) == len(v0)
    assert {p for p, _ in v0} == {0, 2, 3}
    assert sum(p == 2 for p, _ in v0) == 5          # (5 rows: 5 laps with a share)
    laps = [lap for _, lap in v0]
    assert laps == sorted(laps)
    orders = {tuple(p for p, lap in v0 if lap == k and p != 2) for k in range(8)}
    assert len(orders) == 2 and v0 != v1


def test_offset_is_fitted_on_one_machines_sample_of_the_blocked_rows():
    """The intercept is model_offset on draw_sample's rows of the partitions' rows in
    partition order (in-memory rows are dealt: row i to partition i mod 3)."""
    X, y = rbf_data(n=3000)
    m = pbd.BudgetSVC(budget=30, random_state=4, engine="threads", n_partitions=3).fit(X, y)
    order = np.concatenate([np.arange(p, X.shape[0], 3) for p in range(3)])
    Xb = X[order]
    Xb.sort_indices()
    codes = np.searchsorted(m.classes_, y[order])
    xsq = np.asarray(Xb.multiply(Xb).sum(axis=1)).ravel()
    sample = draw_sample(Xb, xsq, codes, V.seed_from(4))    # (the fit's seed)
    assert sample[0].shape[0] == 2048
    b = model_offset(m.support_vectors_, m.dual_coef_.T, m.gamma_, sample)
    assert m.intercept_[0] != 0
    np.testing.assert_array_equal(m.intercept_, b)
    nob = pbd.BudgetSVC(budget=30, random_state=4, engine="threads", n_partitions=3,
                        offset=False).fit(X, y)
    assert np.all(nob.intercept_ == 0)


@pytest.mark.parametrize("solver", ["bsgd", "bsca"])
def test_killed_worker_mid_fit_replays_the_turn(tmp_path, solver):
    """A worker SIGKILLed as it starts its 3rd run of visits: the partitions it held
    are rebuilt on the survivor and the run goes again from the model (and BSCA's
    duals) the client kept: one recovery, the same bits."""
    import dask
    X, y = rbf_data()
    kw = dict(solver=solver, budget=40, epochs=2, random_state=3, rules=SPREAD,
              n_partitions=4)
    ref = pbd.BudgetSVC(engine="threads", **kw).fit(X, y)
    with dask.config.set({"distributed.scheduler.active-memory-manager.interval": "50ms"}), \
            distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                     dashboard_address=None) as cl, \
            distributed.Client(cl) as c:
        deaths = kill_on_task(c, "together_task", tmp_path, nth=3, times=1)
        m = pbd.BudgetSVC(client=c, timeout=60, **kw).fit(X, y)
    assert len(deaths()) == 1 and m.recoveries_ == 1
    same(m, ref)


def four_classes(n=800, seed=2):
    """rbf_data's rows in four classes (labels 10, 20, 30, 40) by the quartiles of
    their squared norms."""
    X, _ = rbf_data(n=n, seed=seed)
    r = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    return X, 10 * (1 + np.searchsorted(np.quantile(r, [0.25, 0.5, 0.75]), r))


def test_bsca_is_one_machines_model_with_the_problems_on_both_workers():
    """solver="bsca", four classes: the one-vs-rest problems run whole on the workers
    that hold all rows, one machine's solver and seed: one machine's model to the
    last bit (n_jobs does not change it), from in-memory rows and from a Dask array;
    the problems spread over both workers."""
    X, y = four_classes()
    kw = dict(solver="bsca", budget=30, random_state=4)
    one = pybudget.BudgetSVC(n_jobs=2, **kw).fit(X, y)
    same(pbd.BudgetSVC(engine="threads", **kw).fit(X, y), one)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cl, distributed.Client(cl) as c:
        c.wait_for_workers(2)
        with tasks_run(c) as ran:
            m = pbd.BudgetSVC(client=c, **kw).fit(X, y)
        same(m, one)
        same(pbd.BudgetSVC(client=c, **kw).fit(*chunked(X, y, 3)), one)
    solved_on = {w for name, w in ran if name == "solve_problems"}
    assert len(solved_on) == 2
    assert m.laps_ is None and m.hop_bytes_.shape == (0,)
    assert m.bytes_sent_["client"] > 0 and m.score(X, y) == one.score(X, y)


@pytest.mark.parametrize("workers", [1, 2])
def test_binary_bsca_travels_the_partitions_with_its_duals(workers):
    """Binary BSCA: one model travels the partitions as BSGD's does, each visit with
    its share's duals: the threads engine's bits on 1 and 2 workers, about one
    machine's training accuracy."""
    X, y = rbf_data()
    kw = dict(solver="bsca", budget=40, epochs=2, random_state=1, rules=SPREAD,
              n_partitions=4)
    ref = pbd.BudgetSVC(engine="threads", **kw).fit(X, y)
    with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cl, distributed.Client(cl) as c:
        c.wait_for_workers(workers)
        m = pbd.BudgetSVC(client=c, **kw).fit(X, y)
    same(m, ref)
    assert len(set(m.partition_workers_)) == workers and m.laps_ > 1
    one = pybudget.BudgetSVC(solver="bsca", budget=40, epochs=2, random_state=1).fit(X, y)
    assert m.score(X, y) > one.score(X, y) - 0.03


def test_binary_bsca_ring_is_its_visits_on_one_array_of_duals():
    """Binary BSCA, one partition in 3 laps, 2 epochs (rows seen again): the bits of
    bsca_run's visits in the ring's order, on one model and one array of duals, each
    share stepped in its own shuffled order: a visit's duals go back to their rows."""
    from types import SimpleNamespace

    from pybudget._core._parallel import problem_seed
    from pybudget.budget._bsca import bsca_run
    from pybudget.budget.svm import _new_model
    from pybudget.dask import _budget_ring as R
    from pybudget.dask._partition import round_seed
    X, y = rbf_data(n=600)
    X.sort_indices()
    kw = dict(solver="bsca", budget=30, gamma=0.1, epochs=2, averaging="none",
              offset=False, random_state=2, storage="dense")
    m = pbd.BudgetSVC(engine="threads", n_partitions=1, laps=3, **kw).fit(X, y)
    n, d = X.shape
    run = SimpleNamespace(seed=problem_seed(V.seed_from(2), 1))
    xsq, alpha = V.row_sqnorms(X), np.zeros(n)
    mdl, mt = _new_model(d, 1, 31, 0.1, pybudget.BudgetSVC(**kw)._params(), n_src=n)
    t = 0
    for epoch in range(2):
        order = R.epoch_order(run, 0, n, epoch)
        for lap in range(3):
            t = bsca_run(X, xsq, np.where(y == 8, 1.0, -1.0), 1.0, alpha, mdl, mt, 30, 2,
                         1, round_seed(run.seed, lap, 0, epoch),
                         perm=R.share_rows(order, 3, lap), visit=True, t_start=t)["t"]
    mt.merge_down(mdl, 30, 2)
    Z, beta, _ = mdl.arrays()
    np.testing.assert_array_equal(m.support_vectors_, Z)
    np.testing.assert_array_equal(m.dual_coef_, beta.T)


def test_bsca_sparse_and_dense_storage_and_dense_input():
    """BSCA's support vectors stored sparse or dense, from a dense array: one machine's
    model either way (the threads engine runs the cluster's code in process)."""
    X, y = four_classes(n=400)
    for storage in ("sparse", "dense"):
        kw = dict(solver="bsca", budget=20, random_state=0, storage=storage)
        m = pbd.BudgetSVC(engine="threads", **kw).fit(X.toarray(), y)
        same(m, pybudget.BudgetSVC(**kw).fit(X.toarray(), y))
        assert sp.issparse(m.support_vectors_) == (storage == "sparse")


def test_bsca_killed_worker_mid_fit_runs_its_problems_again(tmp_path):
    """A worker SIGKILLed as it starts solving: its problems run again on the worker
    left (the rows' copy there): one machine's model."""
    X, y = four_classes()
    kw = dict(solver="bsca", budget=30, random_state=5)
    one = pybudget.BudgetSVC(**kw).fit(X, y)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cl, \
            distributed.Client(cl) as c:
        c.wait_for_workers(2)
        deaths = kill_on_task(c, "solve_problems", tmp_path, nth=1, times=1)
        m = pbd.BudgetSVC(client=c, timeout=60, **kw).fit(X, y)
    assert len(deaths()) == 1
    same(m, one)


@pytest.mark.parametrize("solver", ["bsgd", "bsca"])
def test_libsvm_shards_that_use_fewer_columns(tmp_path, solver):
    """LIBSVM shards whose rows use fewer than all columns (each shard's width is its
    last column): the model has the widest shard's columns, and each partition's rows
    are seen with them (the threads engine's model from the same shards)."""
    from sklearn.datasets import dump_svmlight_file
    X, y = four_classes(n=400)
    X = X.tolil()
    X[:200, 15:] = 0                  # (the first two shards end before column 15)
    X = X.tocsr()
    X.eliminate_zeros()
    for k in range(4):
        rows = slice(100 * k, 100 * (k + 1))
        dump_svmlight_file(X[rows], y[rows], str(tmp_path / f"part-{k}.svm"),
                           zero_based=False)
    from sklearn.datasets import load_svmlight_file
    shards = pbd.read_svmlight(str(tmp_path / "part-*.svm"))
    m = pbd.BudgetSVC(solver=solver, budget=20, random_state=0, engine="threads").fit(shards)
    assert m.n_features_in_ == X.shape[1]
    # (the files' values, as the shards hold them)
    X = sp.vstack([load_svmlight_file(str(tmp_path / f"part-{k}.svm"),
                                      n_features=X.shape[1])[0] for k in range(4)],
                  format="csr")
    one = pybudget.BudgetSVC(solver=solver, budget=20, random_state=0).fit(X, y)
    if solver == "bsca":                # (one-vs-rest: each problem on all rows)
        same(m, one)
    else:                               # (BSGD: the partitions' blocked order)
        assert m.score(X, y) > one.score(X, y) - 0.1


def test_to_local_save_and_continue(tmp_path):
    X, y = rbf_data()
    m = pbd.BudgetSVC(budget=30, random_state=0, engine="threads").fit(X, y)
    local = m.to_local()
    assert type(local) is pybudget.BudgetSVC and local.budget == 30
    np.testing.assert_array_equal(local.decision_function(X), m.decision_function(X))
    path = tmp_path / "m.pbm"
    pybudget.save(m, path)
    back = pybudget.load(path)
    np.testing.assert_array_equal(back.predict(X), m.predict(X))
    local.partial_fit(X[:100], y[:100])            # one machine continues the model
    assert not hasattr(m, "partial_fit")
    again = pickle.loads(pickle.dumps(m))
    np.testing.assert_array_equal(again.decision_function(X), m.decision_function(X))
    c = clone(m)
    assert c.get_params() == m.get_params() and not hasattr(c, "support_vectors_")


def test_dask_array_prediction_is_chunked(client):
    X, y = rbf_data()
    Xd, yd = chunked(X, y, 3)
    m = pbd.BudgetSVC(budget=30, random_state=0, client=client).fit(Xd, yd)
    pred = m.predict(Xd)
    assert hasattr(pred, "compute")
    np.testing.assert_array_equal(pred.compute(), m.to_local().predict(X))
    assert m.score(Xd, yd) == m.to_local().score(X, y)


@pytest.mark.parametrize("kw, match", [
    ({"checkpoints": 3, "averaging": "none"}, "one machine's only"),
    ({"refit": True}, "one machine's only"),
    ({"n_partitions": 0}, "n_partitions"),
    ({"engine": "spark"}, "engine"),
    ({"budget": 1}, "budget"),
    ({"C": -1.0}, "C"),
    ({"rules": {"small_bytes": 1}}, "ClusterRules"),
    ({"laps": 0}, "laps"),
])
def test_bad_parameters_are_refused(kw, match):
    X, y = rbf_data(n=100)
    with pytest.raises(ValueError, match=match):
        pbd.BudgetSVC(**{"engine": "threads", **kw}).fit(X, y)


def test_bad_data_is_refused():
    X, y = rbf_data(n=100)
    with pytest.raises(ValueError, match="at least 2"):
        pbd.BudgetSVC(engine="threads").fit(X, np.ones(100))
    bad = X.toarray()
    bad[3, 2] = np.nan
    with pytest.raises(ValueError):
        pbd.BudgetSVC(engine="threads").fit(bad, y)
    with pytest.raises(ValueError):
        pbd.BudgetSVC(engine="threads").fit(X, y[:50])


def test_check_estimator_threads_engine():
    from sklearn.utils.estimator_checks import check_estimator
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_estimator(pbd.BudgetSVC(budget=20, engine="threads", random_state=0))


def test_generated_problem_trains_on_the_workers_as_on_the_threads_engine():
    """A problem built on the workers (pybudget.dask.make_classification, never in one
    process): the threads engine's model, bit for bit, with the partitions on both
    workers, and about one machine's training accuracy on the same rows."""
    from pybudget.dask._sources import generate_rows
    g = pbd.make_classification(6000, 500, nnz_per_row=20, n_partitions=4, random_state=1)
    kw = dict(budget=60, random_state=0, rules=SPREAD)
    ref = pbd.BudgetSVC(engine="threads", **kw).fit(g)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  memory_limit="800MiB", dashboard_address=None) as cl, \
            distributed.Client(cl) as c:
        m = pbd.BudgetSVC(client=c, **kw).fit(g)
    same(m, ref)
    assert len(set(m.partition_workers_)) == 2
    rows = [generate_rows(g, p) for p in range(4)]
    X = sp.vstack([r[0] for r in rows], format="csr")
    y = np.concatenate([r[1] for r in rows])
    one = pybudget.BudgetSVC(budget=60, random_state=0).fit(X, y).score(X, y)
    assert m.score(X, y) > one - 0.02
