"""Whole grids of C: warm-started regularisation paths and cross-validated grids.

``linear_path`` solves an increasing grid of C, each from the previous solution.
``cv_grid`` runs that path inside every fold of a cross-validation; folds are joblib
tasks, so any joblib backend runs them (local threads by default, which is efficient
because the solvers release the GIL; ``joblib.parallel_config(backend="dask")`` or
``"ray"`` sends them to a cluster without changing the call).
"""
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import StratifiedKFold

from pybudget import _validation as V
from pybudget.linear import LinearSVC, _solve_binary, check_linear_params

CARRY = ("none", "alpha", "all")


def check_grid(Cs):
    """Sorted unique positive C values (a grid is solved in increasing order)."""
    if np.ndim(Cs) != 1 or len(Cs) == 0:
        raise ValueError(f"Cs must be a non-empty 1-d sequence of positive numbers, got {Cs!r}")
    return sorted({V.positive("C", c) for c in Cs})


def linear_path(X, y, Cs, *, loss="hinge", selection="auto", tol=0.1, max_iter=1000,
                fit_intercept=False, intercept_scaling=1.0, sample_weight=None,
                random_state=None, carry="alpha"):
    """Solve a binary linear SVM for every C in ``Cs`` (sorted increasingly), each
    warm-started from the previous one, and return the list of LinearResults in that
    order (each has ``.C``).

    ``carry`` says what passes from one C to the next: "none" (cold starts, for
    comparison), "alpha" (dual variables rescaled by C'/C and clipped to the new box,
    w rebuilt) or "all" (also AVSF's learned preferences and reference gain, taken
    from before its final reset-to-uniform confirmation sweep, and the hard-shrinking
    partition: rows that shrinking would drop at the previous solution start outside
    the active set).  Parameters otherwise as in ``solve_linear``.
    """
    Cs = check_grid(Cs)
    _, tol, max_iter, bias = check_linear_params(Cs[0], loss, selection, tol, max_iter,
                                                 fit_intercept, intercept_scaling)
    V.choice("carry", carry, CARRY)
    X = V.as_csr(X)
    classes, ypm = V.binary_labels(y, X.shape[0])
    weights = V.sample_weights(sample_weight, X.shape[0])
    seed = V.seed_from(random_state)
    results, state = [], None
    for k, C in enumerate(Cs):
        start = None if (state is None or carry == "none") else state.rescaled(C, carry)
        res = _solve_binary(X, ypm, C * weights, C, loss=loss, selection=selection,
                            tol=tol, max_iter=max_iter, bias=bias,
                            seed=(seed + k) % 2**64, start=start)
        res.classes, res.C = classes, C
        state = res.state
        results.append(res)
    capped = [r.C for r in results if not r.converged]
    if capped:
        warnings.warn(f"max_iter={max_iter} reached before tol={tol} at C={capped}",
                      ConvergenceWarning)
    return results


@dataclass
class CVGridResult:
    """Cross-validated accuracy per C: ``Cs`` (increasing), ``mean_accuracy``,
    ``std_accuracy``, ``fold_accuracy`` (n_folds x n_C), ``fit_time`` (optimisation
    seconds per C summed over folds), ``best_C`` (highest mean accuracy; the smallest
    such C on ties), ``wall_time`` (whole call)."""
    Cs: list
    mean_accuracy: np.ndarray
    std_accuracy: np.ndarray
    fold_accuracy: np.ndarray
    fit_time: np.ndarray
    best_C: float
    wall_time: float
    n_iter: np.ndarray = field(default=None)


def _fold_path(estimator, X, y, train, test, Cs):
    """One fold: the warm-started path over Cs; accuracy, time and sweeps per C."""
    est = clone(estimator).set_params(warm_start=True)
    Xtr, ytr, Xte, yte = X[train], y[train], X[test], y[test]
    acc, times, iters = [], [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for C in Cs:
            est.set_params(C=C).fit(Xtr, ytr)
            acc.append(est.score(Xte, yte))
            times.append(est.fit_time_)
            iters.append(est.n_iter_)
    return acc, times, iters


def cv_grid(X, y, Cs, cv=5, *, n_jobs=None, random_state=0, **params):
    """k-fold cross-validated accuracy of ``LinearSVC(**params)`` for every C in
    ``Cs``, warm-starting along C inside each fold; folds run as joblib tasks
    (``n_jobs`` workers; threads unless a joblib backend is configured).  ``cv`` is
    the number of stratified, shuffled folds (seeded by ``random_state``).
    Returns a CVGridResult."""
    Cs = check_grid(Cs)
    cv = V.positive_int("cv", cv, minimum=2)
    t0 = time.perf_counter()
    X = V.as_csr(X)
    classes, codes = V.encode_labels(y, X.shape[0])
    if np.bincount(codes).min() < cv:
        raise ValueError(f"cv={cv} folds need at least {cv} samples of every class")
    y = np.asarray(y)
    estimator = LinearSVC(random_state=random_state, **params)
    check_linear_params(Cs[0], estimator.loss, estimator.selection, estimator.tol,
                        estimator.max_iter, estimator.fit_intercept,
                        estimator.intercept_scaling)
    folds = StratifiedKFold(cv, shuffle=True, random_state=random_state).split(X, codes)
    out = Parallel(n_jobs=n_jobs, prefer="threads")(
        delayed(_fold_path)(estimator, X, y, tr, te, Cs) for tr, te in folds)
    acc = np.array([o[0] for o in out])
    mean = acc.mean(axis=0)
    return CVGridResult(Cs=Cs, mean_accuracy=mean, std_accuracy=acc.std(axis=0),
                        fold_accuracy=acc, fit_time=np.array([o[1] for o in out]).sum(axis=0),
                        best_C=Cs[int(np.argmax(mean))], wall_time=time.perf_counter() - t0,
                        n_iter=np.array([o[2] for o in out]))
