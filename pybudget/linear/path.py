"""Whole grids of C: warm-started regularisation paths and cross-validated grids.

``linear_path`` solves an increasing grid of C, each from the previous solution.
``cv_grid`` runs that path inside every fold of a cross-validation as joblib tasks, so
any joblib backend runs them (local threads by default, which is efficient because the
solvers release the GIL; ``joblib.parallel_config(backend="dask")`` or ``"ray"`` sends
them to a cluster without changing the call).
"""
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import KFold, StratifiedKFold

from pybudget._core import _validation as V
from pybudget._core._parallel import problem_seed
from pybudget.linear.plan import Rows, plan_for, resolve_selection
from pybudget.linear.problem import (LOSSES, REGRESSION_LOSSES, check_linear_params,
                                     next_start, solve_binary)
from pybudget.linear.svm import LinearSVC

PATH_LOSSES = (*LOSSES, "logistic", *REGRESSION_LOSSES)

CARRY = ("none", "alpha", "all", "extrapolate")


def check_grid(Cs):
    """Sorted unique positive C values (a grid is solved in increasing order)."""
    if np.ndim(Cs) != 1 or len(Cs) == 0:
        raise ValueError(f"Cs must be a non-empty 1-d sequence of positive numbers, got {Cs!r}")
    return sorted({V.positive("C", c) for c in Cs})


def linear_path(X, y, Cs, *, loss="hinge", selection="auto", tol=0.1, max_iter=1000,
                fit_intercept=False, intercept_scaling=1.0, sample_weight=None,
                random_state=None, carry="extrapolate", epsilon=0.0):
    """Solve a binary linear problem (SVM, logistic regression or SVR) for every C of a
    grid, each warm-started.

    The values of ``Cs`` are sorted increasingly (duplicates dropped) and each C starts
    from the solution at the previous one.

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Training data.
    y : array-like of shape (n_samples,)
        Labels, any two values (the positive side is the larger one), or targets for
        the regression losses.
    Cs : sequence of float
        Non-empty 1-d sequence of positive C values.
    loss, selection, tol, max_iter, fit_intercept, intercept_scaling, sample_weight, \
epsilon
        As in :func:`solve_linear` (same defaults; ``loss`` may also be "logistic").
    random_state : None, int, numpy.random.RandomState or numpy.random.Generator
        Seed; the k-th C of the grid runs with its own seed derived from it.
    carry : {"extrapolate", "alpha", "all", "none"}, default="extrapolate"
        What passes from one C to the next:

        - "extrapolate": from the third C on, alpha on the line through the two previous
          solutions, clipped to the new box, w rebuilt; exact while no variable changes
          between free and bound; the second C starts as with "alpha".
        - "alpha": dual variables rescaled by C'/C and clipped.
        - "all": as "alpha", plus AVSF's learned preferences and reference gain, taken
          from before its final reset-to-uniform confirmation sweep, and the
          hard-shrinking partition: rows that shrinking would drop at the previous
          solution start outside the active set.
        - "none": cold starts, for comparison.

        What each saves is measured in docs/benchmarks.md, section 2.

    Returns
    -------
    list of LinearResult
        One per C, in increasing order of C; each has ``.C``.

    Raises
    ------
    ValueError, TypeError
        For an empty or non-1-d ``Cs``, invalid parameters, or ``y`` without exactly
        two classes.

    Warns
    -----
    ConvergenceWarning
        Once, naming the C values at which ``max_iter`` was reached before ``tol``.

    See Also
    --------
    solve_linear : One C.
    cv_grid : Cross-validated accuracy over a grid of C.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from pybudget import linear_path
    >>> X, y = make_classification(n_samples=200, n_features=5, random_state=0)
    >>> path = linear_path(X, y, [1.0, 0.1, 10.0], random_state=0)
    >>> [r.C for r in path]
    [0.1, 1.0, 10.0]
    """
    Cs = check_grid(Cs)
    _, tol, max_iter, bias = check_linear_params(Cs[0], loss, selection, tol, max_iter,
                                                 fit_intercept, intercept_scaling,
                                                 PATH_LOSSES)
    V.choice("carry", carry, CARRY)
    X = V.as_csr(X)
    extra = {}
    if loss in REGRESSION_LOSSES:
        classes, ypm = None, V.regression_targets(y, X.shape[0])
        extra["epsilon"] = V.nonnegative("epsilon", epsilon)
    else:
        classes, ypm = V.binary_labels(y, X.shape[0])
    weights = V.sample_weights(sample_weight, X.shape[0])
    seed = V.seed_from(random_state)
    rows = Rows.canonical(X, bias)
    results, state, earlier = [], None, None
    for k, C in enumerate(Cs):
        start = next_start(state, earlier, C, carry)
        # ("auto" depends on C: a plan per C)
        how = plan_for(rows, C * weights, loss, selection)
        res = solve_binary(rows, ypm, C * weights, C, how, loss=loss, tol=tol,
                           max_iter=max_iter, seed=problem_seed(seed, k), start=start,
                           **extra)
        res.classes = classes
        earlier, state = state, res.state
        results.append(res)
    capped = [r.C for r in results if not r.converged]
    if capped:
        warnings.warn(f"max_iter={max_iter} reached before tol={tol} at C={capped}",
                      ConvergenceWarning)
    return results


@dataclass
class CVGridResult:
    """Cross-validated accuracy per C, as returned by :func:`cv_grid`.

    Attributes
    ----------
    Cs : list of float
        The C values, increasing.
    mean_accuracy, std_accuracy : ndarray of shape (n_C,)
        Mean and standard deviation of the accuracy over the folds.
    fold_accuracy : ndarray of shape (n_folds, n_C)
        Accuracy on each fold's held-out part.
    fit_time : ndarray of shape (n_C,)
        Optimisation seconds per C, summed over folds.
    best_C : float
        The C of highest mean accuracy; the smallest such C on ties.
    wall_time : float
        Seconds of the whole call.
    n_iter : ndarray of shape (n_folds, n_C)
        Sweeps (``n_iter_`` of each fit).
    """
    Cs: list
    mean_accuracy: np.ndarray
    std_accuracy: np.ndarray
    fold_accuracy: np.ndarray
    fit_time: np.ndarray
    best_C: float
    wall_time: float
    n_iter: np.ndarray = field(default=None)


def _chain(estimator, X, y, train, test, Cs):
    """Warm-started fits over the C values of one chain on one fold: accuracy, time
    and sweeps per C."""
    est = clone(estimator).set_params(warm_start=True)
    Xtr, ytr, Xte, yte = X[train], y[train], X[test], y[test]
    acc, times, iters = [], [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for C in Cs:
            est.set_params(C=C).fit(Xtr, ytr)
            acc.append(est.score(Xte, yte))
            times.append(est.fit_time_)
            iters.append(int(np.max(est.n_iter_)))   # LogisticRegression's is an array
    return acc, times, iters


def _chains(Cs, estimator, X_train):
    """Split the grid into chains solved warm-started in one task each.  Warm starts
    pay well for hard shrinking but hardly for AVSF (bench/warmstart.py), so every C at
    which AVSF runs is a task of its own: more, smaller tasks balance better over
    workers.  Which strategy runs is decided as "auto" would (class weights ignored:
    this only shapes the tasks, never the results)."""
    bias = estimator.intercept_scaling if estimator.fit_intercept else 0.0
    rows = Rows.canonical(X_train, bias)
    ones = np.ones(X_train.shape[0])
    chain, singles = [], []
    for C in Cs:
        used = resolve_selection(estimator.selection, rows, C * ones)
        (singles if used == "avsf" else chain).append(C)
    return ([chain] if chain else []) + [[C] for C in singles]


def _grid_estimator(params, random_state):
    """The estimator cv_grid fits: LinearSVR for the regression losses (scored by R²),
    LogisticRegression for loss="logistic", LinearSVC otherwise (scored by accuracy)."""
    from pybudget.linear.logistic import LogisticRegression
    from pybudget.linear.svr import LinearSVR
    loss = params.get("loss")
    if loss in REGRESSION_LOSSES:
        return LinearSVR(random_state=random_state, **params)
    if loss == "logistic":
        rest = {k: v for k, v in params.items() if k != "loss"}
        return LogisticRegression(random_state=random_state, **rest)
    return LinearSVC(random_state=random_state, **params)


def cv_grid(X, y, Cs, cv=5, *, n_jobs=None, random_state=0, **params):
    """k-fold cross-validated score of a linear estimator for every C in ``Cs``.

    The estimator is ``LinearSVC(**params)`` (scored by accuracy, stratified folds),
    ``LogisticRegression`` for ``loss="logistic"`` (accuracy) or ``LinearSVR`` for the
    regression losses (R², plain shuffled folds); the result's ``*_accuracy`` fields
    then hold those scores.

    Each fold's grid runs as joblib tasks: the C values where hard shrinking runs form
    one warm-started chain, each C where AVSF runs is its own task; the largest C go
    first.  Results do not depend on ``n_jobs`` or the backend.

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Data.
    y : array-like of shape (n_samples,)
        Class labels; every class needs at least ``cv`` samples.
    Cs : sequence of float
        Non-empty 1-d sequence of positive C values (sorted, duplicates dropped).
    cv : int, default=5
        Number of stratified, shuffled folds, at least 2.
    n_jobs : int, optional
        Number of joblib workers; threads unless a joblib backend is configured (e.g.
        ``joblib.parallel_config(backend="dask")``).
    random_state : int, default=0
        Seeds the fold split and the estimator.
    **params
        Further ``LinearSVC`` parameters (not ``C``; ``warm_start`` is set to True
        inside each chain).

    Returns
    -------
    CVGridResult

    Raises
    ------
    TypeError
        When ``C`` is passed in ``params`` (a single C would be ignored).
    ValueError
        When a class has fewer than ``cv`` samples, or for invalid ``Cs`` or parameters.

    See Also
    --------
    linear_path : The warm-started path on the whole data.
    LinearSVC

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from pybudget import cv_grid
    >>> X, y = make_classification(n_samples=200, n_features=5, random_state=0)
    >>> res = cv_grid(X, y, [0.1, 1.0], cv=3, n_jobs=1)
    >>> res.fold_accuracy.shape, res.best_C in res.Cs
    ((3, 2), True)
    """
    if "C" in params:
        raise TypeError("cv_grid takes the C values as Cs; a single C would be ignored")
    Cs = check_grid(Cs)
    cv = V.positive_int("cv", cv, minimum=2)
    t0 = time.perf_counter()
    X = V.as_csr(X)
    regression = params.get("loss") in REGRESSION_LOSSES
    if regression:
        codes = V.regression_targets(y, X.shape[0])
        if X.shape[0] < cv:
            raise ValueError(f"cv={cv} folds need at least {cv} rows")
    else:
        _, codes = V.encode_labels(y, X.shape[0])
        if np.bincount(codes).min() < cv:
            raise ValueError(f"cv={cv} folds need at least {cv} samples of every class")
    y = np.asarray(y)
    estimator = _grid_estimator(params, random_state)
    check_linear_params(Cs[0], getattr(estimator, "loss", "logistic"), estimator.selection,
                        estimator.tol, estimator.max_iter, estimator.fit_intercept,
                        estimator.intercept_scaling, PATH_LOSSES)
    splitter = (KFold if regression else StratifiedKFold)(cv, shuffle=True,
                                                          random_state=random_state)
    folds = list(splitter.split(X, codes))
    tasks = [(f, chain) for f, (tr, _) in enumerate(folds)
             for chain in _chains(Cs, estimator, X[tr])]
    tasks.sort(key=lambda t: -max(t[1]))
    out = Parallel(n_jobs=n_jobs, prefer="threads")(
        delayed(_chain)(estimator, X, y, folds[f][0], folds[f][1], chain)
        for f, chain in tasks)
    col = {C: k for k, C in enumerate(Cs)}
    acc, times, iters = (np.zeros((cv, len(Cs))) for _ in range(3))
    for (f, chain), (a, t, it) in zip(tasks, out):
        for C, a_, t_, it_ in zip(chain, a, t, it):
            acc[f, col[C]], times[f, col[C]], iters[f, col[C]] = a_, t_, it_
    mean = acc.mean(axis=0)
    return CVGridResult(Cs=Cs, mean_accuracy=mean, std_accuracy=acc.std(axis=0),
                        fold_accuracy=acc, fit_time=times.sum(axis=0),
                        best_C=Cs[int(np.argmax(mean))], wall_time=time.perf_counter() - t0,
                        n_iter=iters.astype(int))
