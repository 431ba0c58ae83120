"""Property-based tests (hypothesis) of every public entry point.

Valid input (any label type, dense or sparse, float32/64, empty rows, duplicate points,
constant features, extreme C and gamma, tiny budgets) must give a finite model whose
predictions are among the classes; invalid input (NaN/inf, wrong shapes, one class,
bad parameters) must raise ValueError or TypeError.  Examples are small and the
search is derandomised, so the suite is fast and reproducible.
"""
import os

import numpy as np
import pytest
import scipy.sparse as sp

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import pybudget  # noqa: E402
from pybudget import BudgetSVC, LinearSVC, cv_grid, linear_path, solve_budget, solve_linear  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore")

# PYBUDGET_HYPOTHESIS_EXAMPLES=500 runs a longer, randomised search (not derandomised)
_N = int(os.environ.get("PYBUDGET_HYPOTHESIS_EXAMPLES", "0"))
_DERANDOM = _N == 0


def _n(default):
    return _N or default


FAST = settings(max_examples=_n(30), deadline=None, derandomize=_DERANDOM, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

LABEL_SETS = [
    np.array([-1, 1]), np.array([0, 1, 2]), np.array([3.0, 7.0]), np.array(["no", "yes"]),
    np.array(["a", "b", "c", "d"]), np.array([False, True]), np.array([10, 20], dtype=np.uint8),
    np.array(["x", "y"], dtype=object),
]


@st.composite
def datasets(draw, binary=False):
    n = draw(st.integers(2, 14))
    d = draw(st.integers(1, 5))
    scale = draw(st.sampled_from([1e-8, 1e-3, 1.0, 1e3, 1e6]))
    X = draw(st.lists(st.floats(-1, 1, allow_nan=False, width=32), min_size=n * d,
                      max_size=n * d))
    X = np.asarray(X, dtype=np.float64).reshape(n, d) * scale
    pattern = draw(st.sampled_from(["none", "zero-rows", "duplicates", "constant-col",
                                    "sparse-zeros"]))
    if pattern == "zero-rows":
        X[: max(1, n // 3)] = 0.0
    elif pattern == "duplicates":
        X[n // 2:] = X[0]
    elif pattern == "constant-col":
        X[:, 0] = 3.0
    elif pattern == "sparse-zeros":
        X[np.abs(X) < 0.5 * scale] = 0.0
    sets = [s for s in LABEL_SETS if s.shape[0] == 2] if binary else LABEL_SETS
    labels = draw(st.sampled_from(sets))
    k = labels.shape[0] if n >= labels.shape[0] else 2
    codes = np.array(draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n)))
    codes[:k] = np.arange(k)  # every class present
    y = labels[codes]
    fmt = draw(st.sampled_from(["dense", "csr", "csc", "float32", "coo"]))
    if fmt == "csr":
        X = sp.csr_matrix(X)
    elif fmt == "csc":
        X = sp.csc_matrix(X)
    elif fmt == "coo":
        X = sp.coo_matrix(X)
    elif fmt == "float32":
        X = X.astype(np.float32)
    return X, y


def _finite_model(est, X, y):
    scores = est.decision_function(X)
    assert np.all(np.isfinite(scores))
    pred = est.predict(X)
    assert pred.shape == (X.shape[0],)
    assert set(pred.tolist()) <= set(np.unique(y).tolist())


C_VALUES = st.sampled_from([1e-6, 1e-2, 1.0, 100.0, 1e6])
GAMMAS = st.sampled_from(["scale", 1e-6, 0.1, 10.0, 1e4])


@FAST
@given(datasets(), C_VALUES, st.sampled_from(["uniform", "shrinking", "avsf", "auto"]),
       st.sampled_from(["hinge", "squared_hinge"]), st.booleans())
# found by this test: selection="auto" when the last rows of X are empty (np.add.reduceat)
@example(data=(np.array([[1e-8], [0.0]]), np.array([-1, 1])), C=1.0, selection="auto",
         loss="hinge", fit_intercept=False)
def test_linear_svc_valid(data, C, selection, loss, fit_intercept):
    X, y = data
    est = LinearSVC(C=C, selection=selection, loss=loss, fit_intercept=fit_intercept,
                    max_iter=200, random_state=0).fit(X, y)
    assert np.all(np.isfinite(est.coef_)) and np.all(np.isfinite(est.intercept_))
    _finite_model(est, X, y)


@FAST
@given(datasets(binary=True), C_VALUES, st.sampled_from(["uniform", "shrinking", "avsf"]))
def test_solve_linear_and_path_valid(data, C, selection):
    X, y = data
    res = solve_linear(X, y, C, selection=selection, max_iter=200, random_state=1)
    assert np.all(np.isfinite(res.coef)) and np.isfinite(res.intercept)
    assert np.all(res.alpha >= 0) and np.isfinite(res.dual_objective)
    assert res.dual_objective <= res.primal_objective * (1 + 1e-9) + 1e-9
    path = linear_path(X, y, [C, 10 * C], selection=selection, max_iter=200, random_state=1)
    assert all(np.all(np.isfinite(r.coef)) for r in path)


@FAST
@given(datasets(), C_VALUES, GAMMAS, st.integers(2, 5),
       st.sampled_from([("bsgd", "merge", 2), ("bsgd", "merge", 3), ("bsgd", "remove", 2),
                        ("bsgd", "project", 2), ("bsca", "merge", 2), ("bsca", "remove", 2)]),
       st.integers(1, 2))
def test_budget_svc_valid(data, C, gamma, budget, config, epochs):
    X, y = data
    solver, maintenance, M = config
    M = min(M, budget)
    est = BudgetSVC(C=C, gamma=gamma, budget=budget, solver=solver, maintenance=maintenance,
                    merge_size=M, epochs=epochs, random_state=0).fit(X, y)
    n_problems = est.dual_coef_.shape[0] if solver == "bsca" else 1  # one-vs-rest SVs stacked
    assert est.support_vectors_.shape[0] <= budget * n_problems
    assert np.all(np.isfinite(est.support_vectors_)) and np.all(np.isfinite(est.dual_coef_))
    _finite_model(est, X, y)


@FAST
@given(datasets(), C_VALUES, st.integers(2, 4), st.integers(1, 4))
def test_budget_partial_fit_and_solve_budget_valid(data, C, budget, n_chunks):
    X, y = data
    classes = np.unique(y)
    est = BudgetSVC(C=C, budget=budget, random_state=0)
    rows = np.array_split(np.arange(X.shape[0]), n_chunks)
    Xr = sp.csr_matrix(X) if sp.issparse(X) else X
    for r in rows:
        if r.size:
            est.partial_fit(Xr[r], y[r], classes=classes)
    _finite_model(est, X, y)
    res = solve_budget(X, y, C, budget=budget, random_state=0)
    assert np.all(np.isfinite(res.dual_coef))


@settings(max_examples=_n(8), deadline=None, derandomize=_DERANDOM, database=None)
@given(datasets(binary=True))
def test_cv_grid_valid(data):
    X, y = data
    _, counts = np.unique(y, return_counts=True)
    if counts.min() < 2:
        with pytest.raises(ValueError):
            cv_grid(X, y, [0.1, 1.0], cv=2)
        return
    res = cv_grid(X, y, [0.1, 1.0], cv=2, max_iter=100)
    assert np.all((res.mean_accuracy >= 0) & (res.mean_accuracy <= 1))


@FAST
@given(datasets(), st.sampled_from(["linear", "budget"]))
def test_save_load_any_valid_model(tmp_path_factory, data, kind):
    X, y = data
    est = (LinearSVC(random_state=0, max_iter=100) if kind == "linear"
           else BudgetSVC(budget=3, random_state=0)).fit(X, y)
    path = tmp_path_factory.mktemp("m") / "model"
    pybudget.save(est, path)
    back = pybudget.load(path)
    assert back.decision_function(X).tobytes() == est.decision_function(X).tobytes()
    assert back.predict(X).tolist() == est.predict(X).tolist()


# ---------------------------------------------------------------- invalid input

BAD_VALUES = st.sampled_from([np.nan, np.inf, -np.inf])


BREAKS = ["nonfinite", "short-y", "one-class", "no-rows", "3d", "y-nan", "y-none",
          "X-none", "y-2d", "no-features", "strings"]


@st.composite
def bad_data(draw, how):
    """(X, y) broken as `how` says, which every estimator must refuse, and the label set
    of the unbroken data (what partial_fit declares as classes)."""
    X, y = draw(datasets(binary=True))
    X = X.toarray() if sp.issparse(X) else np.array(X, dtype=np.float64)
    labels = np.unique(y)
    if how == "nonfinite":
        X[draw(st.integers(0, X.shape[0] - 1)), 0] = draw(BAD_VALUES)
        if draw(st.booleans()):
            X = sp.csr_matrix(X)
    elif how == "short-y":
        y = y[:-1]
    elif how == "one-class":
        y = np.full(X.shape[0], y[0])
    elif how == "no-rows":
        X, y = X[:0], y[:0]
    elif how == "3d":
        X = X[:, :, None]
    elif how == "y-nan":
        y = np.where(np.arange(X.shape[0]) == 0, np.nan, 1.0)
    elif how == "y-none":
        y = None
    elif how == "X-none":
        X = None
    elif how == "y-2d":
        y = np.stack([y, y], axis=1)
    elif how == "no-features":
        X = X[:, :0]
    elif how == "strings":
        X = np.full(X.shape, "a")
    return X, y, labels


FITS = {
    "LinearSVC": lambda X, y, labels: LinearSVC(max_iter=50).fit(X, y),
    "solve_linear": lambda X, y, labels: solve_linear(X, y, max_iter=50),
    "BudgetSVC": lambda X, y, labels: BudgetSVC(budget=3).fit(X, y),
    "BudgetSVC-bsca": lambda X, y, labels: BudgetSVC(budget=3, solver="bsca").fit(X, y),
    "solve_budget": lambda X, y, labels: solve_budget(X, y, budget=3),
    "partial_fit": lambda X, y, labels: BudgetSVC(budget=3).partial_fit(X, y, classes=labels),
    "linear_path": lambda X, y, labels: linear_path(X, y, [1.0], max_iter=50),
}


# every (break, entry point) pair runs: hypothesis only draws the data
@pytest.mark.parametrize("which", list(FITS))
@pytest.mark.parametrize("how", BREAKS)
def test_invalid_data_is_refused(how, which):
    @settings(max_examples=_n(4), deadline=None, derandomize=_DERANDOM, database=None)
    @given(bad_data(how))
    def check(bad):
        X, y, labels = bad
        if how == "one-class" and which == "partial_fit":
            FITS[which](X, y, labels)  # a chunk with one of the declared classes is fine
            return
        with pytest.raises((ValueError, TypeError)):
            FITS[which](X, y, labels)
    check()


BAD_PARAMS = [
    dict(C=0), dict(C=-1.0), dict(C=np.nan), dict(C=np.inf), dict(C="1"), dict(C=True),
    dict(C=None), dict(tol=0), dict(tol=-1e-3), dict(max_iter=-1), dict(max_iter=1.5),
    dict(selection="random"), dict(loss="log"), dict(intercept_scaling=0.0),
    dict(class_weight="auto"), dict(class_weight={5: 1.0}), dict(random_state=-1),
    dict(random_state="seed"),
]
BAD_BUDGET_PARAMS = [
    dict(C=0), dict(C=np.inf), dict(gamma=0), dict(gamma=-1.0), dict(gamma="auto"),
    dict(gamma=np.nan), dict(budget=1), dict(budget=0), dict(budget=2.5), dict(epochs=0),
    dict(solver="sgd"), dict(maintenance="drop"), dict(merge_size=1),
    dict(merge_size=5, budget=3), dict(merge_search="bisect"), dict(multi_merge="x"),
    dict(merge_tol=0.6), dict(merge_tol=0), dict(maintenance="remove", merge_size=3),
    dict(random_state=1.5),
]


@pytest.mark.parametrize("params", BAD_PARAMS, ids=repr)
def test_invalid_linear_params_are_refused(params):
    @settings(max_examples=_n(3), deadline=None, derandomize=_DERANDOM, database=None)
    @given(datasets(binary=True))
    def check(data):
        _refused_linear(data, params)
    check()


def _refused_linear(data, params):
    X, y = data
    with pytest.raises((ValueError, TypeError)):
        LinearSVC(**params).fit(X, y)
    fn_params = {k: v for k, v in params.items() if k != "class_weight"}
    if "intercept_scaling" in fn_params:
        fn_params["fit_intercept"] = True  # solve_linear ignores it without an intercept
    if fn_params:
        with pytest.raises((ValueError, TypeError)):
            solve_linear(X, y, **fn_params)


@pytest.mark.parametrize("partial", [False, True])
@pytest.mark.parametrize("params", BAD_BUDGET_PARAMS, ids=repr)
def test_invalid_budget_params_are_refused(params, partial):
    @settings(max_examples=_n(3), deadline=None, derandomize=_DERANDOM, database=None)
    @given(datasets(binary=True))
    def check(data):
        _refused_budget(data, params, partial)
    check()


def _refused_budget(data, params, partial):
    X, y = data
    est = BudgetSVC(**params)
    with pytest.raises((ValueError, TypeError)):
        if partial and est.solver == "bsgd":
            est.partial_fit(X, y, classes=np.unique(y))
        else:
            est.fit(X, y)
    with pytest.raises((ValueError, TypeError)):
        solve_budget(X, y, **params)


@FAST
@given(datasets(binary=True), st.sampled_from(["nonfinite", "width", "none", "3d"]))
def test_predict_refuses_bad_input(data, how):
    X, y = data
    X = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
    for est in (LinearSVC(max_iter=50).fit(X, y), BudgetSVC(budget=3).fit(X, y)):
        Z = X.copy()
        if how == "nonfinite":
            Z[0, 0] = np.nan
        elif how == "width":
            Z = np.hstack([Z, Z])
        elif how == "none":
            Z = None
        else:
            Z = Z[:, :, None]
        with pytest.raises((ValueError, TypeError)):
            est.predict(Z)
