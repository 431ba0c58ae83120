"""pybudget.dask, method "newton": the primal Newton solver on the client, its sums over
the partitions.  It must reach the one-machine optimum to its tolerance, give the same
bits on either engine and for any number of workers or client threads, be chosen by
"auto" where one machine's rule chooses Newton and the data is not small, refuse what
it cannot solve, and replay a lost worker's calls to the same bits
(test_dask_faults.py; on 2 and 3 workers: test_dask_spans.py)."""
import numpy as np
import pytest
import scipy.sparse as sp

import pybudget
import pybudget.dask as pbd

from pybudget.linear.primal import primal_newton

from helpers import ring_rules, tall

pytest.importorskip("distributed")


@pytest.mark.parametrize("est, kw", [(pbd.LogisticRegression, {}),
                                     (pbd.LinearSVC, {"loss": "squared_hinge"})])
def test_newton_reaches_the_one_machine_optimum(est, kw):
    X, y = tall(classes=3, sparse=True)
    m = est(method="newton", engine="threads", tol=1e-8, C=2.0, **kw).fit(X, y)
    assert m.method_ == "newton" and m.selection_ == "newton"
    assert m.converged_.all() and (m.duality_gap_ <= 1e-8).all()
    loss = "logistic" if est is pbd.LogisticRegression else "squared_hinge"
    for k, c in enumerate(m.classes_):
        target = np.where(y == c, 1.0, -1.0)
        ref = primal_newton(X, target, np.full(X.shape[0], 2.0), loss=loss, bias=1.0,
                            tol=1e-12, max_iter=100)
        assert abs(m.primal_objective_[k] - ref["primal"]) <= 1e-7 * ref["primal"]
        np.testing.assert_allclose(m.coef_[k], ref["w"][:-1], atol=1e-4)
    # and the model predicts as the one-machine estimator with the same parameters
    local = (pybudget.LogisticRegression if est is pbd.LogisticRegression
             else pybudget.LinearSVC)(C=2.0, tol=1e-8, **kw).fit(X, y)
    assert np.mean(m.predict(X) == local.predict(X)) > 0.999


def test_newton_regression_and_sample_weights():
    X, y = tall(n=2000, d=5)
    t = X @ np.arange(1.0, 6.0) + 0.1 * np.random.default_rng(1).standard_normal(2000)
    sw = np.random.default_rng(2).uniform(0.0, 2.0, 2000)
    sw[::7] = 0.0                                     # rows left out
    m = pbd.LinearSVR(method="newton", loss="squared_epsilon_insensitive", epsilon=0.05,
                      engine="threads", tol=1e-10).fit(X, t, sample_weight=sw)
    ref = primal_newton(sp.csr_matrix(X[sw > 0]), t[sw > 0], sw[sw > 0],
                        loss="squared_epsilon_insensitive", bias=1.0, epsilon=0.05,
                        tol=1e-14, max_iter=100)
    np.testing.assert_allclose(m.coef_, ref["w"][:-1], rtol=1e-6)
    assert abs(m.intercept_ - ref["w"][-1]) < 1e-6


def test_same_bits_for_any_client_threads_and_partition_placement():
    X, y = tall(classes=4, seed=3)
    kw = dict(method="newton", engine="threads", tol=1e-6, n_partitions=3)
    one = pbd.LogisticRegression(n_jobs=1, **kw).fit(X, y)
    two = pbd.LogisticRegression(n_jobs=2, **kw).fit(X, y)
    np.testing.assert_array_equal(one.coef_, two.coef_)
    np.testing.assert_array_equal(one.intercept_, two.intercept_)
    assert one.n_iter_ == two.n_iter_ and one.n_steps_ == two.n_steps_


def test_auto_picks_newton_where_one_machine_would_and_the_data_is_not_small():
    X, y = tall()
    kw = dict(engine="threads", rules=ring_rules())    # (not small)
    assert pbd.LogisticRegression(**kw).fit(X, y).method_ == "newton"
    assert pbd.LinearSVC(loss="squared_hinge", **kw).fit(X, y).method_ == "newton"
    # the hinge has no primal route; an explicit selection means dual CD; wide data
    assert pbd.LinearSVC(**kw).fit(X, y).method_ == "ring"
    m = pbd.LogisticRegression(selection="shrinking", max_iter=5, **kw)
    with pytest.warns(Warning):
        assert m.fit(X, y).method_ == "ring"
    Xw = sp.random(300, 50, density=0.2, format="csr", random_state=0)
    assert pbd.LogisticRegression(**kw).fit(Xw, y[:300]).method_ == "ring"


@pytest.mark.parametrize("kw, match", [({"loss": "hinge"}, "smooth loss"),
                                       ({"loss": "squared_hinge", "selection": "avsf"},
                                        "selection")])
def test_newton_refuses_what_it_cannot_solve(kw, match):
    X, y = tall(n=200)
    with pytest.raises(ValueError, match=match):
        pbd.LinearSVC(method="newton", engine="threads", **kw).fit(X, y)


def test_recoveries_retry_a_loss_during_a_recovery_and_give_up_after_the_limit():
    from pybudget.dask import _newton
    from pybudget.dask._checkpoints import MAX_RECOVERIES
    from pybudget.dask.errors import ClusterError, PartitionsLost

    class Engine:
        def __init__(self, fails):
            self.fails, self.calls = fails, 0

        def rebuild_lost(self):
            self.calls += 1
            if self.calls <= self.fails:
                raise PartitionsLost("another worker left during the recovery")
            return [1]

        def each(self, fn, *args, parts=None):
            assert parts == [1]

    once = _newton._Recoveries(Engine(fails=1), {})
    once.after(PartitionsLost("a worker left"), sent_in=0)
    assert once.count == 2 and once.generation == 1
    once.after(PartitionsLost("the same loss, seen late"), sent_in=0)      # (recovered)
    assert once.count == 2 and once.engine.calls == 2
    never = _newton._Recoveries(Engine(fails=10 ** 6), {})
    with pytest.raises(ClusterError, match="lost partitions"):
        never.after(PartitionsLost("a worker left"), sent_in=0)
    assert never.engine.calls == MAX_RECOVERIES
