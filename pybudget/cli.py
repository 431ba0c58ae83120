"""The ``pybudget`` command line (also ``python -m pybudget``).

Subcommands: ``train``, ``predict``, ``info`` (liblinear/LIBSVM habits on LIBSVM files,
model files from ``pybudget.save``) and ``cgrid`` (the C-grid comparison).  Results go to
stdout, progress and messages to stderr; errors print one line and exit with status 2.
"""
import argparse
import contextlib
import glob
import json
import logging
import math
import os
import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp

from pybudget._core._progress import report
from pybudget._plot import figure_format, require_matplotlib, save_figure
from pybudget.cgrid import (CGRID_LOSSES, DEFAULT_CS, DEFAULT_SELECTIONS, cgrid, cgrid_cv,
                             data_format, format_cv_table, format_table)
from pybudget.budget.svm import AVERAGING, MAINTENANCE, SEARCHES, SOLVERS, STORAGES
from pybudget.linear.problem import LOSSES, REGRESSION_LOSSES, SELECTION_CHOICES

LINEAR_OPTS = {"loss": "-s/--loss", "tol": "-e", "bias": "-B", "selection": "--selection",
               "max_iter": "--max-iter", "epsilon": "-p"}
KERNEL_OPTS = {"gamma": "-g", "budget": "--budget", "maintenance": "--maintenance",
               "merge_size": "--merge-size", "merge_search": "--merge-search",
               "epochs": "--epochs", "checkpoints": "--checkpoints", "offset": "--no-offset",
               "averaging": "--averaging", "refit": "--refit", "storage": "--storage"}
# liblinear's -s -> our loss; the loss picks the estimator (ESTIMATOR_OF)
LIBLINEAR_S = {"1": "squared_hinge", "3": "hinge", "4": "crammer_singer", "7": "logistic",
               "12": "squared_epsilon_insensitive", "13": "epsilon_insensitive"}
ALL_LOSSES = (*LOSSES, "crammer_singer", "logistic", *REGRESSION_LOSSES)
ESTIMATOR_OF = {**{loss: "LinearSVC" for loss in LOSSES}, "crammer_singer": "LinearSVC",
                "logistic": "LogisticRegression",
                **{loss: "LinearSVR" for loss in REGRESSION_LOSSES}}


def _finite(text):
    """argparse type: a finite float (a NaN bias would otherwise mean "no bias")."""
    value = float(text)
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


class CLIError(ValueError):
    """A usage problem found after parsing (exit status 2, one-line message)."""


def _cgrid(args):
    _check_cgrid_files(args)
    if args.cv:
        res = cgrid_cv(args.data, Cs=args.C, cv=args.cv, tol=args.tol,
                       selections=args.selection, n_jobs=args.n_jobs, loss=args.loss,
                       max_iter=args.max_iter, fit_intercept=args.bias > 0,
                       random_state=args.seed)
        print(format_cv_table(res, title=f"{args.data}, {args.cv}-fold cross-validation, "
                                         f"tol {args.tol:g}"))
    else:
        res = cgrid(args.data, Cs=args.C, tol=args.tol, selections=args.selection,
                    loss=args.loss, max_iter=args.max_iter, fit_intercept=args.bias > 0,
                    random_state=args.seed, verbose=not args.quiet)
        print(format_table(res, title=f"{args.data}, tol {args.tol:g}, loss {args.loss}"))
    if args.out:
        res.write(args.out)
        _log(args, f"wrote {args.out}")
    if args.plot:   # the figure's metadata says which run drew it
        save_figure(res.plot(), args.plot, description=json.dumps(res.header()))
        _log(args, f"wrote {args.plot}")
    return 0


def _check_cgrid_files(args):
    """Refuse a bad --plot/--out before the grid runs, not after (it can take minutes)."""
    for path, fmt in ((args.plot, figure_format), (args.out, data_format)):
        if path:
            fmt(path)
            if not os.path.isdir(os.path.dirname(path) or "."):
                raise CLIError(f"{path}: no such folder")
    if args.plot:
        try:
            require_matplotlib()
        except ImportError as e:
            raise CLIError(str(e)) from None


# ---------------------------------------------------------------------------- helpers

def _log(args, msg, seconds=None):
    """A progress line on stderr (none with -q); with seconds, also the elapsed time and
    the peak memory."""
    if not args.quiet:
        report(msg, seconds)


@contextlib.contextmanager
def _warnings_as_lines(args):
    """Warnings raised while training or predicting become one-line messages on stderr
    (none with -q); the estimators print their own progress on stderr."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    if not args.quiet:
        seen = set()
        for w in caught:
            msg = str(w.message)
            if msg not in seen:
                seen.add(msg)
                print(f"pybudget: warning: {msg}", file=sys.stderr)


def _resolve_kernel(args):
    """'linear' (LinearSVC, dual CD) or 'rbf' (BudgetSVC) from --kernel/--solver."""
    kernel, solver = args.kernel, args.solver
    if args.stream and kernel is None and solver is None:
        solver = args.solver = "bsgd"
    if solver in ("bsgd", "bsca"):
        if kernel == "linear":
            raise CLIError(f"--solver {solver} trains a Gaussian-kernel model; it cannot be "
                           "combined with --kernel linear")
        kernel = "rbf"
    elif solver == "dcd":
        if kernel == "rbf":
            raise CLIError("--solver dcd is the linear solver; use --solver bsgd or bsca "
                           "with --kernel rbf")
        kernel = "linear"
    kernel = kernel or "linear"
    wrong = KERNEL_OPTS if kernel == "linear" else LINEAR_OPTS
    given = [flag for dest, flag in wrong.items() if getattr(args, dest) is not None]
    if given:
        raise CLIError(f"{', '.join(given)} apply only to "
                       f"{'--kernel rbf' if kernel == 'linear' else '--kernel linear'}")
    if args.stream and (kernel != "rbf" or (solver or "bsgd") != "bsgd"):
        raise CLIError("--stream trains with BSGD's partial_fit: use it with --kernel rbf "
                       "(--solver bsgd)")
    if args.stream and args.cv:
        raise CLIError("-v (cross-validation) needs the data in memory; drop --stream")
    if args.stream and (args.checkpoints or args.averaging not in (None, "auto", "none")):
        raise CLIError("--checkpoints and --averaging act on the iterates of one fit; "
                       "partial_fit (--stream) continues the last iterate: drop one of them")
    if args.stream and args.refit:
        raise CLIError("--refit solves on all training rows in memory; partial_fit "
                       "(--stream) ignores it: drop one of them")
    return kernel


def _make_estimator(args, kernel):
    """The estimator with the options given; anything not given keeps the estimator's
    own default (so the command and the Python API agree)."""
    from pybudget.budget.svm import BudgetSVC
    verbose = 0 if args.quiet else (2 if args.verbose and kernel == "linear" else 1)
    if kernel == "linear":
        name, kw = _linear_kwargs(args)
        if args.n_jobs is not None:
            if name == "LinearSVR":
                raise CLIError("-n (threads) applies to classification: regression is "
                               "one problem")
            kw["n_jobs"] = args.n_jobs
        return _estimator_class(name)(C=args.c, random_state=args.seed, verbose=verbose,
                                      **kw)
    kw = _budget_kwargs(args)
    if args.n_jobs is not None:
        kw["n_jobs"] = args.n_jobs
    return BudgetSVC(C=args.c, random_state=args.seed, verbose=verbose, **kw)


def _budget_kwargs(args):
    """The keyword arguments of a BudgetSVC from the kernel options given (the ones not
    given keep the estimator's defaults)."""
    kw = {k: getattr(args, k) for k in ("budget", "solver", "epochs", "maintenance",
                                        "merge_size", "merge_search", "checkpoints",
                                        "offset", "averaging", "refit", "storage")
          if getattr(args, k) is not None}
    if args.gamma is not None:
        kw["gamma"] = _gamma(args.gamma)
    return kw


def _linear_kwargs(args):
    """(estimator name, keyword arguments) of a linear model from -s/--loss, -e, -p, -B,
    --selection and --max-iter (the ones not given keep the estimator's defaults)."""
    loss = args.loss or "hinge"
    name = ESTIMATOR_OF[loss]
    kw = {k: getattr(args, k) for k in ("tol", "selection", "max_iter")
          if getattr(args, k) is not None}
    if loss == "crammer_singer":   # the multi-class hinge loss, one joint problem
        kw["multi_class"] = "crammer_singer"
    elif name != "LogisticRegression":
        kw["loss"] = loss
    if args.epsilon is not None:
        if name != "LinearSVR":
            raise CLIError("-p (epsilon) applies only to regression (-s 12 or 13)")
        kw["epsilon"] = args.epsilon
    if args.bias is not None:
        kw.update(fit_intercept=args.bias > 0,
                  intercept_scaling=args.bias if args.bias > 0 else 1.0)
    else:
        kw.update(fit_intercept=False)  # liblinear's default -B -1: no bias
    return name, kw


def _check_params(est):
    from pybudget._core._validation import n_jobs
    n_jobs(getattr(est, "n_jobs", None))
    if type(est).__name__ == "BudgetSVC":
        est._params()
        return
    from pybudget.linear.problem import check_linear_params
    check_linear_params(est.C, getattr(est, "loss", "logistic"), est.selection, est.tol,
                        est.max_iter, est.fit_intercept, est.intercept_scaling, ALL_LOSSES)
    if _is_regressor(est):
        from pybudget._core._validation import nonnegative
        nonnegative("epsilon", est.epsilon)


def _estimator_class(name):
    from pybudget import BudgetSVC, LinearSVC, LinearSVR, LogisticRegression
    return {"LinearSVC": LinearSVC, "LogisticRegression": LogisticRegression,
            "LinearSVR": LinearSVR, "BudgetSVC": BudgetSVC}[name]


def _is_regressor(model):
    return type(model).__name__ == "LinearSVR"


def _default(estimator, name):
    import inspect
    return inspect.signature(_estimator_class(estimator)).parameters[name].default


def _option(group, flag, estimator, text, **kw):
    """An option that overrides one of the estimator's parameters (None: keep its
    default, which the help text shows)."""
    param = kw.get("dest", flag.lstrip("-").replace("-", "_"))
    group.add_argument(flag, default=None, help=f"{text} (default "
                       f"{_default(estimator, param)})", **kw)


def _gamma(text):
    if text == "scale":
        return "scale"
    try:
        return float(text)
    except ValueError:
        raise CLIError(f"-g takes a positive number or 'scale', got {text!r}") from None


def _liblinear_s(text):
    if text not in LIBLINEAR_S:
        raise argparse.ArgumentTypeError(
            f"the liblinear types available are the dual solvers 1, 3, 4, 7, 12 and 13, "
            f"got {text!r}")
    return LIBLINEAR_S[text]


def _label_text(v):
    """A label as LIBSVM files write it: integral floats without a decimal point."""
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return repr(float(v))
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    return str(v)


def _fit_width(X, d):
    """X with exactly d columns: missing ones are zero, extra ones (features never seen
    in training) are dropped, as liblinear's predict does."""
    if X.shape[1] == d:
        return X
    if X.shape[1] < d:
        return sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], d))
    return X[:, :d]


# ---------------------------------------------------------------------------- train

def _train(args):
    from pybudget.datasets import load_svmlight
    from pybudget.io import save
    if args.scheduler is not None or args.workers is not None:
        return _train_cluster(args)
    for opt, val in (("--local-sweeps", args.local_sweeps), ("--laps", args.laps)):
        if val is not None:
            raise CLIError(f"{opt} applies to training on a Dask cluster "
                           "(--scheduler or --workers)")
    kernel = _resolve_kernel(args)
    est = _make_estimator(args, kernel)
    _check_params(est)  # before reading a possibly large file
    model_file = args.model_file or (os.path.basename(args.train_file) + ".model")
    if args.cv is not None and args.cv < 2:
        raise CLIError(f"-v needs at least 2 folds, got {args.cv}")
    t0 = time.perf_counter()
    if args.stream:
        from pybudget.stream import stream_fit
        if args.chunk_size < 1:
            raise CLIError(f"--chunk-size must be >= 1, got {args.chunk_size}")
        _log(args, f"streaming {args.train_file} in chunks of {args.chunk_size} rows into "
                   f"BudgetSVC(bsgd, budget={est.budget}), {est.epochs} pass(es)")
        with _warnings_as_lines(args):
            stream_fit(est, args.train_file, chunk_size=args.chunk_size, epochs=est.epochs,
                       zero_based=args.zero_based, verbose=0 if args.quiet else 1)
    else:
        try:
            X, y = load_svmlight(args.train_file, zero_based=args.zero_based)
        except ValueError as e:   # the message names the file
            raise CLIError(str(e)) from None
        _log(args, f"read {X.shape[0]} rows x {X.shape[1]} features, {X.nnz} nonzeros",
             time.perf_counter() - t0)
        if args.cv is not None:
            return _cross_validate(args, est, X, y)
        _log(args, f"training {_describe(est)}")
        with _warnings_as_lines(args):
            est.fit(X, y)
    _log(args, f"trained ({_summary(est)})", time.perf_counter() - t0)
    est.set_params(verbose=0)
    save(est, model_file)
    _log(args, f"model written to {model_file}")
    return 0


# ---------------------------------------------------------------------------- train on Dask

CLUSTER = "--scheduler/--workers"


def _cluster_usage(args, kernel):
    """The one-line refusals of options that a Dask cluster does not train with."""
    if args.stream:
        raise CLIError(f"--stream reads a file on one machine; with {CLUSTER} the workers "
                       "read the shards")
    if kernel == "rbf":
        linear = [flag for flag, v in (("--local-sweeps", args.local_sweeps),
                                       (f"--method {args.method}", args.method != "auto"))
                  if v not in (None, False)]
        if linear:
            raise CLIError(f"{', '.join(linear)}: the linear ring's; a BudgetSVC on "
                           f"{CLUSTER} takes --laps only")
    if args.loss == "crammer_singer":
        raise CLIError(f"Crammer-Singer (-s 4) is one joint problem on one machine; {CLUSTER} "
                       "train one-vs-rest linear models (-s 3, 1, 7, 12 or 13)")
    if args.cv is not None:
        raise CLIError(f"-v (cross-validation) runs on one machine; drop {CLUSTER}")
    if args.n_jobs is not None:
        raise CLIError("-n (threads) applies to one machine; with a cluster the workers "
                       "train in parallel (--workers N)")
    if args.verbose:
        raise CLIError(f"--verbose (per-sweep trace) applies to one machine; with {CLUSTER} "
                       "the progress is one line per check of the model")
    if args.workers is not None and args.workers < 1:
        raise CLIError(f"--workers must be >= 1, got {args.workers}")
    if args.model_file is None and glob.has_magic(args.train_file):
        raise CLIError("TRAIN_FILE is a glob: give MODEL_FILE too")


@contextlib.contextmanager
def _dask_client(args):
    """A distributed.Client: to the scheduler at --scheduler, or to a local cluster of
    --workers processes started (and closed) for the run."""
    try:
        from distributed import Client, LocalCluster
        from pybudget.dask._scheduler import worker_addresses
    except ImportError:
        raise CLIError(f'{CLUSTER} need Dask: pip install "pybudget[dask]"') from None
    with contextlib.ExitStack() as stack:
        if args.workers is not None:
            _log(args, f"starting a local Dask cluster of {args.workers} worker processes")
            # no dashboard; the scheduler's HTTP server (always started) on a free port,
            # not 8787, which another cluster may hold (a warning, then another port); the
            # workers' logs silenced: a failed task's error comes back as one line
            cluster = stack.enter_context(LocalCluster(
                n_workers=args.workers, threads_per_worker=1, processes=True,
                dashboard_address=None, scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
                silence_logs=logging.CRITICAL))
            client = stack.enter_context(Client(cluster))
        else:
            client = stack.enter_context(Client(args.scheduler))
            n = len(worker_addresses(client))
            _log(args, f"connected to the Dask scheduler at {args.scheduler}, {n} workers")
        yield client


def _train_cluster(args):
    """TRAIN_FILE (a path or a glob of LIBSVM shards) trained on a Dask cluster
    (pybudget.dask); the model saved is the one-machine estimator with its weights."""
    from pybudget.io import save
    kernel = _resolve_kernel(args)
    _cluster_usage(args, kernel)
    import pybudget.dask as pbd
    from pybudget.dask import ClusterError
    if kernel == "rbf":
        name, kw = "BudgetSVC", _budget_kwargs(args)
    else:
        name, kw = _linear_kwargs(args)
        if args.local_sweeps is not None:
            kw["local_sweeps"] = args.local_sweeps
        kw["method"] = args.method
    if args.laps is not None:
        kw["laps"] = args.laps
    est = getattr(pbd, name)(C=args.c, random_state=args.seed,
                             verbose=0 if args.quiet else 1, **kw)
    est._check_params()   # before starting or reaching a cluster
    model_file = args.model_file or (os.path.basename(args.train_file) + ".model")
    shards = pbd.read_svmlight(args.train_file, zero_based=args.zero_based)
    t0 = time.perf_counter()
    with _dask_client(args) as client:
        how = (f"laps {est.laps}" if kernel == "rbf" else
               f"method {est.method}, {est.local_sweeps} local sweep(s) per round")
        _log(args, f"training {_describe(est)} on {len(shards.paths)} shard(s), {how}")
        est.set_params(client=client)
        with _warnings_as_lines(args):
            try:
                est.fit(shards)
            except ClusterError as e:   # pybudget.dask gives up: workers or tasks lost
                raise CLIError(str(e)) from None
            except Exception as e:   # the cluster's own errors, one line too
                if not type(e).__module__.startswith(("distributed", "dask", "tornado")):
                    raise
                raise CLIError(f"Dask: {type(e).__name__}: {e}") from None
        est.set_params(client=None)
        _log(args, _cluster_summary(est), time.perf_counter() - t0)
    local = est.to_local()
    local.set_params(verbose=0)
    save(local, model_file)
    _log(args, f"model written to {model_file}")
    return 0


def _cluster_summary(est):
    """What a fit on the cluster did, for the log."""
    sent = est.bytes_sent_
    moved = (f"bytes through the client {sent['client']}, between workers "
             f"{sent.get('workers', 0)}")
    if type(est).__name__ == "BudgetSVC":
        how = (f"{est.laps_} laps an epoch" if est.laps_ is not None
               else "each one-vs-rest problem on one worker")
        return (f"trained: {how}, {est.support_vectors_.shape[0]} support vectors, "
                f"{moved}")
    from pybudget.dask._methods import METHODS
    unit = METHODS[est.method_].unit        # ("whole" counts sweeps of a problem)
    return (f"trained by {est.method_} ({est.n_rounds_} {unit}, KKT violation "
            f"{np.max(est.kkt_violation_):.3g}, relative duality gap "
            f"{np.max(est.duality_gap_):.3g}, {moved})")


def _describe(est):
    name = type(est).__name__
    if name != "BudgetSVC":
        bias = "%g" % est.intercept_scaling if est.fit_intercept else "none"
        loss = f"loss={est.loss}, " if hasattr(est, "loss") else ""
        eps = f"epsilon={est.epsilon:g}, " if _is_regressor(est) else ""
        return (f"{name}(C={est.C:g}, {loss}{eps}selection={est.selection}, "
                f"tol={est.tol:g}, bias={bias})")
    return (f"BudgetSVC(C={est.C:g}, solver={est.solver}, budget={est.budget}, "
            f"gamma={est.gamma}, epochs={est.epochs}, maintenance={est.maintenance})")


def _summary(est):
    if type(est).__name__ != "BudgetSVC":
        return (f"{est.n_iter_} sweeps, {est.n_steps_} steps, "
                f"KKT violation {np.max(est.kkt_violation_):.3g}")
    return (f"{est.support_vectors_.shape[0]} support vectors, gamma {est.gamma_:.4g}, "
            f"{est.n_merges_} merges")


def _cross_validate(args, est, X, y):
    from sklearn.model_selection import KFold, StratifiedKFold, cross_val_score
    if _is_regressor(est):
        if X.shape[0] < args.cv:
            raise CLIError(f"-v {args.cv} needs at least {args.cv} rows")
        est.set_params(verbose=0)
        folds = KFold(args.cv, shuffle=True, random_state=args.seed)
        with _warnings_as_lines(args):
            mse = -cross_val_score(est, X, y, cv=folds, error_score="raise",
                                   scoring="neg_mean_squared_error")
            r2 = cross_val_score(est, X, y, cv=folds, error_score="raise")
        print(f"Cross Validation Mean squared error = {mse.mean():g}")
        print(f"Cross Validation R2 = {r2.mean():g}")
        return 0
    counts = np.unique(y, return_counts=True)[1]
    if counts.min() < args.cv:
        raise CLIError(f"-v {args.cv} needs at least {args.cv} rows of every class")
    _log(args, f"{args.cv}-fold cross-validation of {_describe(est)}")
    est.set_params(verbose=0)
    folds = StratifiedKFold(args.cv, shuffle=True, random_state=args.seed)
    with _warnings_as_lines(args):
        scores = cross_val_score(est, X, y, cv=folds, error_score="raise")
    print(f"Cross Validation Accuracy = {100 * scores.mean():g}%")
    return 0


# ---------------------------------------------------------------------------- predict

def _predict(args):
    from pybudget.io import load
    from pybudget.stream import iter_svmlight_chunks
    model = load(args.model_file)
    d = model.n_features_in_
    regression = _is_regressor(model)
    n = correct = 0
    sums = np.zeros(6)   # regression: error^2, p, y, p^2, y^2, p*y (liblinear's report)
    extra = False
    with open(args.output_file, "w") as out:
        for X, y in iter_svmlight_chunks(args.test_file, 10000, zero_based=args.zero_based):
            extra = extra or X.shape[1] > d
            pred = model.predict(_fit_width(X, d))
            if regression:
                texts = [f"{p:.17g}" for p in pred]
                sums += [np.sum((pred - y) ** 2), pred.sum(), y.sum(), np.sum(pred * pred),
                         np.sum(y * y), np.sum(pred * y)]
            else:
                texts = [_label_text(p) for p in pred]
                correct += sum(t == _label_text(v) for t, v in zip(texts, y))
            out.write("\n".join(texts) + "\n")
            n += X.shape[0]
    if extra and not args.quiet:
        print(f"pybudget: warning: {args.test_file} has features beyond the {d} of the "
              "model; they were ignored", file=sys.stderr)
    if n == 0:
        raise CLIError(f"{args.test_file}: no data rows")
    if args.quiet:
        return 0
    if regression:
        se, p, y, pp, yy, py = sums
        den = (n * pp - p * p) * (n * yy - y * y)
        r2 = (n * py - p * y) ** 2 / den if den > 0 else float("nan")
        print(f"Mean squared error = {se / n:g} (regression)")
        print(f"Squared correlation coefficient = {r2:g} (regression)")
    else:
        print(f"Accuracy = {100.0 * correct / n:g}% ({correct}/{n})")
    return 0


# ---------------------------------------------------------------------------- info

def _info(args):
    from pybudget.io import load, read_header
    header = read_header(args.model_file)
    model = load(args.model_file)  # verifies checksums and shapes
    if _is_regressor(model):
        targets = "targets: real (regression)"
    else:
        classes = [_label_text(c) for c in model.classes_]
        targets = (f"classes ({len(classes)}): {' '.join(classes[:20])}"
                   f"{' ...' if len(classes) > 20 else ''}")
    lines = [
        f"file: {args.model_file} ({os.path.getsize(args.model_file)} bytes)",
        f"format: {header['format']} version {header['version']} "
        f"(written by pybudget {header.get('pybudget_version', '?')}); checksums ok",
        f"estimator: {header['estimator']}",
        targets,
        f"features: {model.n_features_in_}",
    ]
    if header["estimator"] != "BudgetSVC":
        coef = np.atleast_2d(model.coef_)
        lines += [f"weights: {coef.shape[0]} x {coef.shape[1]}, "
                  f"{int(np.count_nonzero(coef))} nonzero",
                  f"intercept: {' '.join(f'{b:.6g}' for b in model.intercept_[:10])}",
                  f"training: {model.n_iter_} sweeps, {model.n_steps_} steps, "
                  f"selection {model.selection_}, KKT violation "
                  f"{np.max(model.kkt_violation_):.3g}, converged "
                  f"{bool(np.all(model.converged_))}"]
    else:
        lines += [f"support vectors: {model.support_vectors_.shape[0]} "
                  f"(budget {model.budget}), dual coefficients {model.dual_coef_.shape[0]} "
                  f"x {model.dual_coef_.shape[1]}",
                  f"gamma: {model.gamma_:.17g}",
                  f"offset (intercept): {' '.join(f'{b:.6g}' for b in model.intercept_[:10])}"
                  f"{' ...' if model.intercept_.shape[0] > 10 else ''}"
                  f"{'' if model.offset else ' (offset=False)'}",
                  f"training: {model.n_iter_} epoch(s), {model.n_merges_} merges, "
                  f"{model.n_removed_} removed"]
    params = model.get_params()
    lines.append("params: " + ", ".join(f"{k}={v!r}" for k, v in sorted(params.items())))
    print("\n".join(lines))
    return 0


# ---------------------------------------------------------------------------- parser

TRAIN_HELP = """\
Train a model on a LIBSVM file and write it to MODEL_FILE (default: the training
file's name plus ".model" in the current directory).

Which model: --kernel linear (default) trains LinearSVC by dual coordinate descent
(--solver dcd); --kernel rbf trains a Gaussian-kernel BudgetSVC with --solver bsgd
(default) or bsca.  Naming a solver is enough: --solver bsgd or bsca implies
--kernel rbf.  Linear-only options (-s, --loss, -e, -B, --selection, --max-iter) are
refused with an rbf model and kernel-only options (-g, --budget, --maintenance,
--merge-size, --merge-search, --epochs) with a linear one.  More than two classes:
one-vs-rest (linear, bsca) or BSGD's multi-class model.

With -v N the command prints the N-fold cross-validation accuracy and writes no
model (as in liblinear).  --stream reads the file in chunks of --chunk-size rows
(BSGD partial_fit, bounded memory) for data larger than memory.

With --scheduler ADDRESS (an existing Dask cluster) or --workers N (a local cluster
of N processes started for the run) one problem is trained on the cluster
(pybudget.dask, pip install "pybudget[dask]"): TRAIN_FILE is then a path or a quoted
glob of LIBSVM shards, one partition per file, read by the workers (which must see
the same paths); -e and --max-iter mean what they mean on one machine (a ring round
is one sweep).  --kernel rbf trains pybudget.dask.BudgetSVC: the model travels the
shards in --laps laps an epoch (BSCA with more than two classes: each one-vs-rest
problem on one worker).  The model file is the one-machine model, for predict as
usual.

Progress goes to stderr (per class for linear models, per chunk with an ETA when
streaming, per check on a cluster: round, KKT violation, relative gap, elapsed time and
the peak memory of each worker; --verbose adds the per-sweep trace), -q silences it."""

EPILOG = """\
examples:
  pybudget train -c 1 -B 1 train.txt model.pb
  pybudget train --kernel rbf -c 10 -g 0.05 --budget 200 --epochs 3 train.txt model.pb
  pybudget train -v 5 -c 0.1 train.txt
  pybudget train --workers 4 -c 0.1 -B 1 "shards/part-*.svm.bz2" model.pb
  pybudget train --workers 2 --kernel rbf --budget 500 "shards/part-*.svm" model.pb
  pybudget train --scheduler tcp://10.0.0.1:8786 -s 7 "/shared/part-*.svm" model.pb
  pybudget predict test.txt model.pb predictions.txt
  pybudget info model.pb"""


def build_parser():
    ap = argparse.ArgumentParser(prog="pybudget", description="Fast SVM training.")
    sub = ap.add_subparsers(dest="command", required=True)
    g = sub.add_parser("cgrid", help="compare selection strategies over a grid of C",
                       description="Train every selection strategy at every C and print "
                                   "the AVSF paper's table (time, steps, sweeps, dual "
                                   "objective, final KKT violation, test accuracy).")
    g.add_argument("--data", default="debian-lib-small",
                   help="embedded name (a9a, debian-lib-small), a benchmark name in "
                        "$PYBUDGET_DATA, or a LIBSVM file 'train[,test]' (default: %(default)s)")
    g.add_argument("--C", type=float, nargs="+", default=list(DEFAULT_CS), help="grid of C")
    g.add_argument("--tol", type=float, default=0.01, help="KKT tolerance (default %(default)s)")
    g.add_argument("--selection", nargs="+", default=list(DEFAULT_SELECTIONS),
                   choices=SELECTION_CHOICES, help="strategies to compare")
    g.add_argument("--loss", default="hinge", choices=CGRID_LOSSES,
                   help="the problem: an SVM loss, crammer_singer, logistic or a regression "
                        "loss (epsilon 0.1, liblinear's default; test score R2)")
    g.add_argument("--max-iter", type=int, default=100000, help="sweep cap per run")
    g.add_argument("-B", "--bias", type=_finite, default=-1,
                   help="bias feature value (liblinear -B); <= 0 means no bias (default)")
    g.add_argument("--seed", type=int, default=0, help="random seed")
    g.add_argument("--cv", type=int, default=0, metavar="K",
                   help="instead: K-fold cross-validated accuracy per C and strategy, "
                        "warm-started along C in each fold; reports the best C")
    g.add_argument("--n-jobs", type=int, default=None,
                   help="with --cv: folds run in parallel on this many workers (joblib)")
    g.add_argument("--plot", metavar="FILE", help="also draw the comparison to FILE (.png, "
                   ".svg or .pdf): time and steps against C, or with --cv the CV accuracy "
                   "and time; needs matplotlib (pip install \"pybudget[plot]\")")
    g.add_argument("--out", metavar="FILE", help="also write every record, the package "
                   "version, data set and parameters to FILE (.json or .csv)")
    g.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    g.set_defaults(func=_cgrid)

    t = sub.add_parser("train", help="train a model on a LIBSVM file and save it",
                       description=TRAIN_HELP, epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    t.add_argument("train_file", metavar="TRAIN_FILE",
                   help="LIBSVM/svmlight file (plain, .gz, .bz2, .xz); with "
                        "--scheduler/--workers also a quoted glob of shards")
    t.add_argument("model_file", metavar="MODEL_FILE", nargs="?",
                   help="where to write the model (default: TRAIN_FILE's name + '.model')")
    t.add_argument("--zero-based", action="store_true",
                   help="feature indices start at 0 (default: 1, as in LIBSVM files)")
    m = t.add_argument_group("model choice")
    m.add_argument("--kernel", choices=["linear", "rbf"], default=None,
                   help="linear: LinearSVC (default); rbf: Gaussian-kernel BudgetSVC")
    m.add_argument("--solver", choices=("dcd", *SOLVERS), default=None,
                   help="dcd: dual coordinate descent (linear); bsgd: budgeted SGD (rbf, "
                        "default for rbf); bsca: budgeted stochastic coordinate ascent (rbf)")
    m.add_argument("-c", type=float, default=1.0, metavar="C",
                   help="cost C (default %(default)s)")
    m.add_argument("-v", dest="cv", type=int, default=None, metavar="N",
                   help="N-fold cross-validation: print the accuracy, write no model")
    m.add_argument("--seed", type=int, default=0,
                   help="random seed: same seed, same model (default %(default)s)")
    m.add_argument("-n", "--n-jobs", dest="n_jobs", type=int, default=None, metavar="N",
                   help="threads for the one-vs-rest problems (linear, bsca; -1: every "
                        "core); the model is the same for every N (default 1)")
    m.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    m.add_argument("--verbose", action="store_true",
                   help="per-sweep trace of the linear solver on stderr")
    lin = t.add_argument_group("linear models (--kernel linear)")
    lin.add_argument("-s", dest="loss", type=_liblinear_s, default=None, metavar="TYPE",
                     help="liblinear solver type (dual solvers): 3 = L1-loss (hinge) SVM "
                          "(default), 1 = L2-loss (squared hinge) SVM, 4 = Crammer-Singer "
                          "multi-class SVM, 7 = logistic "
                          "regression (LogisticRegression), 13 = L1-loss (epsilon-"
                          "insensitive) and 12 = L2-loss support vector regression "
                          "(LinearSVR)")
    lin.add_argument("--loss", dest="loss", choices=ALL_LOSSES,
                     help="the loss by name, instead of -s")
    lin.add_argument("-p", dest="epsilon", type=float, default=None, metavar="EPSILON",
                     help="epsilon of the regression losses (default %s)"
                     % _default("LinearSVR", "epsilon"))
    lin.add_argument("-e", dest="tol", type=float, default=None, metavar="EPS",
                     help="tolerance on the final KKT violation (default %s)"
                          % _default("LinearSVC", "tol"))
    lin.add_argument("-B", dest="bias", type=_finite, default=None, metavar="BIAS",
                     help="if BIAS > 0, append a constant feature of that value (a "
                          "regularised bias, liblinear's -B); default -1: no bias")
    lin.add_argument("--selection", choices=SELECTION_CHOICES,
                     default=None, help="coordinate selection (default: LinearSVC's, "
                                        "currently %s)" % _default("LinearSVC", "selection"))
    lin.add_argument("--max-iter", type=int, default=None,
                     help="cap on sweeps per problem (default %s); with "
                          "--scheduler/--workers on rounds (default 1000)"
                     % _default("LinearSVC", "max_iter"))
    ker = t.add_argument_group("budgeted kernel models (--kernel rbf)")
    ker.add_argument("-g", dest="gamma", default=None, metavar="GAMMA",
                     help="Gaussian kernel exp(-gamma |x-x'|^2): a number or 'scale' "
                          "(default: scale = 1 / (n_features * var(X)))")
    _option(ker, "--budget", "BudgetSVC", "maximal number of support vectors", type=int)
    _option(ker, "--maintenance", "BudgetSVC", "what happens when the budget overflows",
            choices=list(MAINTENANCE))
    _option(ker, "--merge-size", "BudgetSVC", "support vectors merged into one per event",
            type=int)
    _option(ker, "--merge-search", "BudgetSVC",
            "merge partner search: golden section or lookup table", choices=list(SEARCHES))
    _option(ker, "--epochs", "BudgetSVC", "passes over the data", type=int)
    _option(ker, "--storage", "BudgetSVC", "support vectors held dense or as their "
            "non-zeros (auto: sparse for short rows in many columns)",
            choices=list(STORAGES))
    ker.add_argument("--checkpoints", type=int, default=None, metavar="K",
                     help="return the lowest-objective of K evenly spaced iterates instead "
                          "of the last (default %s: the last)"
                     % _default("BudgetSVC", "checkpoints"))
    ker.add_argument("--no-offset", dest="offset", action="store_const", const=False,
                     default=None,
                     help="no offset fitted on training rows (with --averaging none: "
                          "the papers' last iterate)")
    ker.add_argument("--refit", action="store_const", const=True, default=None,
                     help="solve the coefficients on the final support vectors exactly "
                          "once after the epochs (the Nystroem problem on the budget's "
                          "own centres, squared hinge; n x budget kernel values in memory)")
    ker.add_argument("--refit-hinge", dest="refit", action="store_const", const="hinge",
                     help="--refit with the hinge (smoothed within 0.5 of the margin) in "
                          "place of the squared hinge")
    ker.add_argument("--averaging", choices=AVERAGING, default=None,
                     help="iterate averaging (default %s: the mean of the last "
                          "min(n/2, 4*budget) iterates; all, last-half: BSGD only)"
                          % _default("BudgetSVC", "averaging"))
    ker.add_argument("--stream", action="store_true",
                     help="read TRAIN_FILE in chunks (BSGD partial_fit, bounded memory)")
    ker.add_argument("--chunk-size", type=int, default=10000,
                     help="rows per chunk with --stream (default %(default)s)")
    dk = t.add_argument_group("Dask cluster (pip install \"pybudget[dask]\")")
    where = dk.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="ADDRESS", default=None,
                       help="train on the Dask cluster whose scheduler is at ADDRESS "
                            "(e.g. tcp://host:8786)")
    where.add_argument("--workers", type=int, metavar="N", default=None,
                       help="train on a local Dask cluster of N worker processes (one "
                            "thread each), started for this run and closed after it")
    dk.add_argument("--local-sweeps", type=int, default=None, metavar="K",
                    help="sweeps of the local dual CD solver per round (default 1)")
    dk.add_argument("--laps", type=int, default=None, metavar="L",
                    help="the ring's laps per round, each visit a share of one sweep "
                         "(default: 64 visits a round, at least one lap per shard, "
                         "finer for visits of more than 32768 non-zeros, doubled when "
                         "the checks stall); --kernel rbf: laps an epoch (default: "
                         "about 1024 visits an epoch of at least 8 rows)")
    from pybudget.dask._methods import METHODS      # (imports no Dask)
    dk.add_argument("--method", choices=("auto", *METHODS),
                    default="auto",
                    help="how the partitions share the work (default %(default)s: whole "
                         "for up to 64 MiB of rows, else newton where one machine would "
                         "run it, else ring): ring, they take turns (one round = one "
                         "sweep of one machine); whole, all rows on every worker, each "
                         "problem on one worker; newton, the primal Newton solver with "
                         "its sums over the partitions")
    t.set_defaults(func=_train)

    p = sub.add_parser("predict", help="predict a LIBSVM file with a saved model",
                       description="Write one predicted label per line of TEST_FILE to "
                                   "OUTPUT_FILE and print 'Accuracy = x% (correct/total)' "
                                   "against TEST_FILE's labels, as liblinear's predict does. "
                                   "The file is read in chunks (bounded memory); features "
                                   "beyond the model's are ignored.")
    p.add_argument("test_file", metavar="TEST_FILE")
    p.add_argument("model_file", metavar="MODEL_FILE")
    p.add_argument("output_file", metavar="OUTPUT_FILE")
    p.add_argument("-q", "--quiet", action="store_true", help="do not print the accuracy")
    p.add_argument("--zero-based", action="store_true",
                   help="feature indices start at 0 (default: 1, as in LIBSVM files)")
    p.set_defaults(func=_predict)

    i = sub.add_parser("info", help="describe a saved model file",
                       description="Print what a model file holds (format version, "
                                   "estimator, classes, features, sizes, parameters) after "
                                   "verifying its checksums.")
    i.add_argument("model_file", metavar="MODEL_FILE")
    i.set_defaults(func=_info)
    return ap


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print("pybudget: interrupted", file=sys.stderr)
        return 130
    except (ValueError, TypeError, OSError, OverflowError) as e:
        print(f"pybudget: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
