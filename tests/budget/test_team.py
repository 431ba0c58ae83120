"""One budgeted fit on a team of threads (n_jobs): the kernel rows and the maintenance
events' distances and partner searches split over ranges of support vectors.  The model
is one thread's to the last bit for every solver, maintenance and storage, the team
really ran (it counts the jobs its helpers served), and the rule keeps small fits on
one thread."""
import numpy as np
import pytest
import scipy.sparse as sp

from pybudget import BudgetSVC
from pybudget._core import _validation as V
from pybudget.budget import _team_rules, svm as S
from pybudget.budget._bsca import bsca_run
from pybudget.budget._bsgd import bsgd_run
from pybudget.budget._budget import BudgetModel
from pybudget.budget._epochs import THREADS
from pybudget.budget._maintain import Maintainer

needs_openmp = pytest.mark.skipif(not THREADS, reason="built without OpenMP")
NEVER = 1e300          # (max_wait: a team that is never retired)


def rows(n=700, d=40, density=0.3, classes=2, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, format="csr", random_state=seed)
    X.data = rng.normal(size=X.data.shape)
    score = X @ rng.normal(size=d) + 0.3 * rng.normal(size=n)
    y = (score > 0).astype(np.int32) if classes == 2 else np.digitize(score, [-0.7, 0.7])
    return V.canonical_csr(X), y.astype(np.int32)


def fit(solver, team, *, classes=2, budget=60, merge_size=2, search="gss", multi="cascade",
        sparse=False, avg=False, f32=False, retired=False):
    """(support vectors, coefficients, scale, team jobs) of one epoch on `team`; with
    retired=True also the runs the team left early."""
    X, codes = rows(classes=classes)
    if f32:
        X = X.astype(np.float32)
    n, d = X.shape
    xsq = V.row_sqnorms(X)
    n_coef = 1 if classes == 2 else classes
    cap = budget + merge_size - 1
    mdl = BudgetModel(d, n_coef, cap, 0.3, n if solver == "bsca" else 0, sparse)
    mt = Maintainer(mdl, "merge", search, multi, merge_size, 0.01)
    if solver == "bsgd":
        out = bsgd_run(X, xsq, codes, mdl, mt, budget, merge_size, 1.0 / (n * 10.0), 1, 0,
                       5, n // 2 if avg else 0, team=team)
    else:
        y = np.where(codes == 1, 1.0, -1.0)
        out = bsca_run(X, xsq, y, 10.0, np.zeros(n), mdl, mt, budget, merge_size, 1, 5,
                       avg_start=n // 2 if avg else 0, team=team)
    Z, beta, _ = mdl.arrays()
    Z = Z.toarray() if sp.issparse(Z) else Z
    assert mt.n_merges > 50              # (maintenance ran: the partner search was split)
    if retired:
        return Z, beta, mdl.scale, out["team_jobs"], out["team_retired"]
    return Z, beta, mdl.scale, out["team_jobs"]


CASES = [dict(solver="bsgd"), dict(solver="bsca"), dict(solver="bsgd", classes=3),
         dict(solver="bsgd", sparse=True), dict(solver="bsca", sparse=True),
         dict(solver="bsgd", search="lookup-wd"), dict(solver="bsca", search="lookup-h"),
         dict(solver="bsgd", merge_size=3), dict(solver="bsgd", merge_size=4,
                                                 multi="gradient"),
         dict(solver="bsgd", classes=3, merge_size=3), dict(solver="bsgd", avg=True),
         dict(solver="bsca", avg=True), dict(solver="bsgd", f32=True)]


@needs_openmp
@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(f"{v}" for v in c.values()))
def test_a_team_gives_one_threads_bits(case):
    Z1, b1, s1, jobs1 = fit(team=(1, 0, 0), **case)
    assert jobs1 == 0
    for threads in (2, 3):
        Z, b, s, jobs = fit(team=(threads, 0, NEVER), **case)
        assert jobs > 0                  # the team ran: its helpers served these jobs
        np.testing.assert_array_equal(Z, Z1)
        np.testing.assert_array_equal(b, b1)
        assert s == s1


@needs_openmp
def test_the_rules_pick_the_loops():
    # kernel rows never on the team: the events only; then one more job a step
    Z, b, _, events = fit("bsgd", (2, 1 << 60, NEVER))
    _, _, _, jobs = fit("bsgd", (2, 0, NEVER))
    assert 0 < events and jobs == events + 700
    Z1, b1, _, _ = fit("bsgd", (1, 0, 0))
    np.testing.assert_array_equal(b, b1)
    np.testing.assert_array_equal(Z, Z1)


@needs_openmp
@pytest.mark.parametrize("solver", ["bsgd", "bsca"])
@pytest.mark.parametrize("first", ["kernel row", "partner search"])
def test_a_retired_team_gives_one_threads_bits(solver, first):
    # max_wait < 0: the team leaves after its first job (as one whose helpers keep
    # losing their cores would) and thread 0 runs the rest of the epoch alone; that
    # job's results (a kernel row, or a partner search whose helper's list is merged
    # after the team left) are kept
    Z1, b1, s1, _ = fit(solver, (1, 0, 0))
    krow_work = 0 if first == "kernel row" else 1 << 60
    Z, b, s, jobs, retired = fit(solver, (2, krow_work, -1.0), retired=True)
    assert jobs == 1 and retired == 1
    np.testing.assert_array_equal(Z, Z1)
    np.testing.assert_array_equal(b, b1)
    assert s == s1


@needs_openmp
@pytest.mark.parametrize("solver", ["bsgd", "bsca"])
def test_n_jobs_runs_one_fit_on_a_team(monkeypatch, solver):
    X, y = rows(n=900)
    ran = []
    for name in ("bsgd_run", "bsca_run"):
        real = getattr(S, name)

        def spy(*args, _real=real, **kw):
            out = _real(*args, **kw)
            ran.append(out["team_jobs"])
            return out
        monkeypatch.setattr(S, name, spy)
    monkeypatch.setattr(_team_rules, "cpu_count", lambda: 2)     # (any machine)
    kw = dict(solver=solver, budget=250, gamma=0.3, C=10, random_state=0)
    one = BudgetSVC(n_jobs=1, **kw).fit(X, y)
    two = BudgetSVC(n_jobs=2, **kw).fit(X, y)
    assert ran[0] == 0 and ran[1] > 0
    np.testing.assert_array_equal(two.support_vectors_, one.support_vectors_)
    np.testing.assert_array_equal(two.dual_coef_, one.dual_coef_)
    np.testing.assert_array_equal(two.intercept_, one.intercept_)


def test_team_rule():
    rule = _team_rules.team_for
    assert rule(1, 5000, cpus=8) == (1, 0, 0)
    assert rule(4, 5000, cpus=1) == (1, 0, 0)
    assert rule(4, _team_rules.MIN_CAP - 1, cpus=4) == (1, 0, 0)
    if THREADS:
        assert rule(4, 5000, cpus=2) == (2, _team_rules.KROW_WORK, _team_rules.MAX_WAIT)
        assert rule(3, 5000, cpus=8)[0] == 3


def test_partial_fit_on_a_team_is_one_threads():
    X, y = rows(n=900)
    a = BudgetSVC(budget=250, gamma=0.3, random_state=0, n_jobs=1)
    b = BudgetSVC(budget=250, gamma=0.3, random_state=0, n_jobs=2)
    for part in (slice(0, 450), slice(450, 900)):
        a.partial_fit(X[part], y[part], classes=[0, 1])
        b.partial_fit(X[part], y[part], classes=[0, 1])
    np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)
    np.testing.assert_array_equal(a.support_vectors_, b.support_vectors_)
