"""n_jobs: one-vs-rest problems on threads give the same model bit for bit; the thread
pool's error and stop handling; n_jobs validation.  (Ctrl-C with n_jobs=2 is in
tests/test_robustness.py; the speed-up is measured by bench/n_jobs.py.)"""
import threading

import numpy as np
import pytest
from sklearn.datasets import make_classification

from pybudget import BudgetSVC, LinearSVC, LogisticRegression, solve_budget
from pybudget._core import _validation as V
from pybudget._core._parallel import map_threads, stop_requested

from helpers import pool_rendezvous


@pytest.fixture(scope="module")
def four_classes():
    return make_classification(n_samples=600, n_features=12, n_informative=8,
                               n_classes=4, random_state=0)


MAKERS = {
    "LinearSVC": lambda j: LinearSVC(C=0.1, tol=1e-2, random_state=5, n_jobs=j),
    "LinearSVC-shrinking": lambda j: LinearSVC(C=1.0, selection="shrinking",
                                               random_state=5, n_jobs=j),
    "LogisticRegression": lambda j: LogisticRegression(C=1.0, random_state=5, n_jobs=j),
    "BudgetSVC-bsca": lambda j: BudgetSVC(solver="bsca", budget=30, epochs=2,
                                          random_state=5, n_jobs=j),
    "BudgetSVC-bsca-checkpoints": lambda j: BudgetSVC(solver="bsca", budget=30, epochs=2,
                                                      checkpoints=3, random_state=5,
                                                      n_jobs=j),
    "BudgetSVC-bsca-lookup": lambda j: BudgetSVC(solver="bsca", budget=30,
                                                 merge_search="lookup-wd",
                                                 random_state=5, n_jobs=j),
}


def _arrays(est, X):
    if isinstance(est, BudgetSVC):
        return (est.support_vectors_, est.dual_coef_, est.intercept_,
                est.decision_function(X))
    return est.coef_, est.intercept_, est.dual_objective_


@pytest.mark.parametrize("name", MAKERS)
def test_same_model_for_every_n_jobs(name, four_classes):
    """The same bits, with min(n_jobs, 4 problems) pool threads proven to have run
    problems at once (``pool_rendezvous``)."""
    X, y = four_classes
    expected = _arrays(MAKERS[name](None).fit(X, y), X)
    for n_jobs in (1, 2, 3, -1):
        parties = min(V.n_jobs(n_jobs), 4)
        with pool_rendezvous(parties) as (seen, broken):
            got = _arrays(MAKERS[name](n_jobs).fit(X, y), X)
        assert not broken and len(seen) == (parties if parties >= 2 else 0), (n_jobs, seen)
        for a, b in zip(expected, got):
            assert np.array_equal(a, b), (name, n_jobs)


def test_warm_start_and_class_weights_with_threads(four_classes):
    """Per-class warm starts and weights reach the right problem on every thread."""
    X, y = four_classes
    models = []
    for n_jobs in (1, 2):
        est = LinearSVC(C=0.1, class_weight="balanced", warm_start=True, random_state=1,
                        n_jobs=n_jobs)
        est.fit(X, y, sample_weight=np.linspace(0.0, 2.0, X.shape[0]))
        with pool_rendezvous(n_jobs) as (seen, broken):
            est.set_params(C=1.0).fit(X, y, sample_weight=np.linspace(0.0, 2.0, X.shape[0]))
        assert not broken and len(seen) == (2 if n_jobs == 2 else 0)
        models.append((est.coef_, est.intercept_, est.n_steps_))
    assert all(np.array_equal(a, b) for a, b in zip(*models))


def test_solve_budget_takes_n_jobs(four_classes):
    X, y = four_classes
    one = solve_budget(X, y, solver="bsca", budget=20, random_state=2)
    with pool_rendezvous(2) as (seen, broken):
        two = solve_budget(X, y, solver="bsca", budget=20, random_state=2, n_jobs=2)
    assert not broken and len(seen) == 2
    assert np.array_equal(one.dual_coef, two.dual_coef)
    assert np.array_equal(one.support_vectors, two.support_vectors)


def test_bsgd_ignores_n_jobs(four_classes):
    """Multi-class BSGD is one model (shared support vectors): sequential whatever
    n_jobs says."""
    X, y = four_classes
    a = BudgetSVC(budget=20, random_state=4).fit(X, y)
    b = BudgetSVC(budget=20, random_state=4, n_jobs=2).fit(X, y)
    assert np.array_equal(a.dual_coef_, b.dual_coef_)


def test_n_jobs_is_a_parameter():
    for cls in (LinearSVC, LogisticRegression, BudgetSVC):
        assert cls().get_params()["n_jobs"] is None
        assert cls(n_jobs=2).get_params()["n_jobs"] == 2


def test_n_jobs_validation(four_classes, monkeypatch):
    import joblib
    monkeypatch.setattr(joblib, "cpu_count", lambda: 4)
    assert [V.n_jobs(v) for v in (None, 1, 3, -1, -2, -4, -100)] == [1, 1, 3, 4, 3, 1, 1]
    with pytest.raises(ValueError, match="n_jobs"):
        V.n_jobs(0)
    for bad in (1.5, True, "2"):
        with pytest.raises(TypeError, match="n_jobs"):
            V.n_jobs(bad)
    X, y = four_classes
    for cls in (LinearSVC, LogisticRegression, BudgetSVC):
        with pytest.raises(ValueError, match="n_jobs"):
            cls(n_jobs=0).fit(X, y)
    with pytest.raises(ValueError, match="n_jobs"):
        solve_budget(X, y, n_jobs=0)


def test_map_threads_keeps_order_and_runs_on_workers():
    names = map_threads(lambda k: (k, threading.current_thread().name), [(k,) for k in
                                                                          range(7)], 3)
    assert [k for k, _ in names] == list(range(7))
    assert all(name.startswith("pybudget") for _, name in names)
    # one job: the calling thread, no pool
    assert map_threads(lambda: threading.current_thread().name, [()], 4) == [
        threading.current_thread().name]


def test_a_failure_stops_the_other_workers():
    """A worker's error reaches the caller, after the others saw the stop request (what
    the solver loops read in their Ctrl-C check) and returned."""
    seen = []
    failed = threading.Event()

    def task(k):
        if k == 1:
            failed.set()
            raise ArithmeticError("problem 1 failed")
        failed.wait(60)
        for _ in range(6000):          # the stop request arrives within ~0.2 s
            if stop_requested():
                seen.append(k)
                raise KeyboardInterrupt
            threading.Event().wait(0.01)
        return k

    with pytest.raises(ArithmeticError, match="problem 1"):
        map_threads(task, [(0,), (1,)], 2)
    assert seen == [0]
    assert not stop_requested()        # the main thread never is a stopped worker


def test_cli_n_jobs(four_classes, tmp_path, capsys):
    from sklearn.datasets import dump_svmlight_file

    from pybudget import load
    from pybudget.cli import main
    X, y = four_classes
    train = str(tmp_path / "t.txt")
    dump_svmlight_file(X, y, train, zero_based=False)
    for opts in (["-c", "0.1"], ["--solver", "bsca", "--budget", "20"]):
        assert main(["train", "-q", *opts, train, str(tmp_path / "one")]) == 0
        assert main(["train", "-q", "-n", "2", *opts, train, str(tmp_path / "two")]) == 0
        one, two = load(tmp_path / "one"), load(tmp_path / "two")
        assert two.n_jobs == 2
        assert np.array_equal(one.decision_function(X), two.decision_function(X))
    assert main(["train", "-n", "0", train]) == 2
    assert "n_jobs" in capsys.readouterr().err
    assert main(["train", "-s", "12", "-n", "2", train]) == 2
    assert "-n" in capsys.readouterr().err
