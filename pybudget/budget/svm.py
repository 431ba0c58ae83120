"""Budgeted kernel SVMs (BSGD and BSCA): the functional API and the estimator.

Gaussian kernel ``k(x, x') = exp(-gamma * ||x - x'||^2)`` (no 1/2 in front of gamma);
``gamma="scale"`` is ``1 / (n_features * X.var())`` as in scikit-learn, the variance taken
over all entries of X including the zeros of a sparse matrix.
"""
import time
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from sklearn.utils._available_if import available_if

from pybudget._core import _validation as V
from pybudget._core._estimator import SVMClassifierBase, binary_problems, one_vs_rest
from pybudget._core._progress import report
from pybudget.budget._bsca import bsca_run
from pybudget.budget._bsgd import bsgd_run
from pybudget.budget._checkpoint import BestCheckpoint, checkpoint_fields
from pybudget.budget._budget import BudgetModel
from pybudget.budget._maintain import MAINTENANCE, MULTI, SEARCHES, Maintainer
from pybudget.budget._decision import decision_values
from pybudget.budget._offset import draw_sample, model_offset, reservoir_update
from pybudget.budget._refit import LOSSES as REFIT_LOSSES, refit_model
from pybudget.budget._team_rules import team_for

SOLVERS = ("bsgd", "bsca")
AVERAGING = ("auto", "none", "tail", "all", "last-half")
STORAGES = ("auto", "dense", "sparse")
TAIL_PER_SV = 4     # averaging="tail" covers the last min(n / 2, 4 * budget) steps
# storage="auto" keeps the support vectors sparse when the rows are this many times
# shorter than d (a dense SV costs d in every distance and merge, a sparse one its
# non-zeros, a few rows' worth once merged) and the dense rows would take more than
# SPARSE_MIN_VALUES values: docs/benchmarks.md, "Support vectors in any dimension"
SPARSE_ROW_SHARE = 1 / 64
SPARSE_MIN_VALUES = 1 << 20

@dataclass
class BudgetResult:
    """Outcome of :func:`solve_budget`.

    The decision function is ``k(X, support_vectors) @ dual_coef.T + intercept`` (shape
    (n, 1) for binary problems, positive side ``classes[1]``; (n, K) otherwise).

    Attributes
    ----------
    classes : ndarray of shape (n_classes,)
        Class labels.
    support_vectors : ndarray of shape (n_sv, n_features)
        The support vectors (for one-vs-rest BSCA, those of all problems stacked).
    dual_coef : ndarray of shape (n_problems, n_sv)
        Coefficients per problem and SV.
    intercept : ndarray of shape (n_problems,)
        The fitted offset (zeros with ``offset=False``).
    gamma : float
        The kernel parameter used ("scale" resolved).
    budget : int
        The budget used (capped at the number of training rows).
    n_iter : int
        Epochs.
    n_steps : int
        Training-point visits.
    n_added : int
        SV insertions (BSGD margin violations; BSCA nonzero steps).
    n_merges : int
        Merge events.
    n_removed : int
        SVs dropped without a merge.
    merge_time, time : float
        Seconds of maintenance and of optimisation in total.
    alpha : ndarray of shape (n_problems, n_samples) or None
        BSCA's dual variables (None for BSGD).
    t : int
        BSGD's global step count (0 for BSCA).
    checkpoint : ndarray of shape (n_problems,) or None
        With ``checkpoints=k``: per problem, the index of the returned checkpoint into
        ``checkpoint_objectives``; None without checkpoints.
    checkpoint_objectives : list of ndarray or None
        With ``checkpoints=k``: per problem, the estimated objective at every
        checkpoint (at most k of them; the last one is the final model); None without.

    See Also
    --------
    solve_budget, BudgetSVC
    """
    classes: np.ndarray
    support_vectors: np.ndarray
    dual_coef: np.ndarray
    intercept: np.ndarray
    gamma: float
    budget: int
    n_iter: int
    n_steps: int
    n_added: int
    n_merges: int
    n_removed: int
    merge_time: float
    time: float
    alpha: np.ndarray = None
    t: int = 0
    checkpoint: np.ndarray = None
    checkpoint_objectives: list = None


@dataclass(frozen=True)
class BudgetParams:
    """The budget solvers' validated parameters (``check_budget_params``): the
    estimator's of the same names, with ``averaging`` resolved ("auto" is "tail", or
    "none" with checkpoints)."""
    C: float
    gamma: object          # a positive float, or "scale" until the data are known
    budget: int
    solver: str
    epochs: int
    maintenance: str
    merge_size: int
    merge_search: str
    multi_merge: str
    merge_tol: float
    averaging: str
    checkpoints: int
    offset: bool
    refit: object          # False, or the loss the refit minimises (_refit.LOSSES)
    storage: str = "auto"


def refit_loss(refit):
    """``refit`` as the loss the refit minimises, or False: True means "squared_hinge"."""
    if isinstance(refit, (bool, np.bool_)):
        return "squared_hinge" if refit else False
    if not isinstance(refit, str):
        raise TypeError(f"refit must be True, False or one of {sorted(REFIT_LOSSES)}, "
                        f"got {refit!r}")
    if refit not in REFIT_LOSSES:
        raise ValueError(f"refit must be True, False or one of {sorted(REFIT_LOSSES)}, "
                         f"got {refit!r}")
    return refit


def check_budget_params(C, gamma, budget, solver, epochs, maintenance, merge_size,
                        merge_search, multi_merge, merge_tol, averaging="auto", checkpoints=0,
                        offset=True, refit=False, storage="auto"):
    """Validate every budget-solver parameter that does not depend on the data; returns
    them normalised as a BudgetParams (gamma stays "scale" until the data are known)."""
    C = V.positive("C", C)
    if isinstance(gamma, str):
        if gamma != "scale":
            raise ValueError(f"gamma must be a positive number or 'scale', got {gamma!r}")
    else:
        gamma = V.positive("gamma", gamma)
    budget = V.positive_int("budget", budget, minimum=2)
    V.choice("solver", solver, SOLVERS)
    epochs = V.positive_int("epochs", epochs, minimum=1)
    V.choice("maintenance", maintenance, MAINTENANCE)
    merge_size = V.positive_int("merge_size", merge_size, minimum=2)
    if merge_size > budget:
        raise ValueError(f"merge_size={merge_size} must not exceed budget={budget}")
    V.choice("merge_search", merge_search, SEARCHES)
    V.choice("multi_merge", multi_merge, MULTI)
    merge_tol = V.positive("merge_tol", merge_tol)
    V.choice("averaging", averaging, AVERAGING)
    checkpoints = V.positive_int("checkpoints", checkpoints, minimum=0)
    offset = V.boolean("offset", offset)
    refit = refit_loss(refit)
    V.choice("storage", storage, STORAGES)
    if averaging == "auto":   # the tail average, unless checkpoints pick one model out
        averaging = "none" if checkpoints else "tail"
    if checkpoints and averaging != "none":
        raise ValueError(f"checkpoints={checkpoints} selects among iterates and cannot be "
                         f"combined with averaging={averaging!r}")
    if averaging not in ("none", "tail") and solver != "bsgd":
        raise ValueError(f"averaging={averaging!r} applies to solver='bsgd' only "
                         f"(bsca: 'tail' or 'none'), got solver={solver!r}")
    if merge_tol >= 0.5:
        raise ValueError(f"merge_tol must be below 0.5 (a tolerance on h in [0, 1]), "
                         f"got {merge_tol!r}")
    if maintenance != "merge":
        changed = [f"{name}={value!r}" for name, value, default in
                   (("merge_size", merge_size, 2), ("merge_search", merge_search, "gss"),
                    ("multi_merge", multi_merge, "cascade"))
                   if value != default]
        if changed:
            raise ValueError(f"{', '.join(changed)} only apply to maintenance='merge', "
                             f"got maintenance={maintenance!r}")
    return BudgetParams(C=C, gamma=gamma, budget=budget, solver=solver, epochs=epochs,
                        maintenance=maintenance, merge_size=merge_size,
                        merge_search=merge_search, multi_merge=multi_merge,
                        merge_tol=merge_tol, averaging=averaging, checkpoints=checkpoints,
                        offset=offset, refit=refit, storage=storage)


def scale_gamma(X):
    """scikit-learn's gamma='scale' for dense or sparse X (zeros included)."""
    n, d = X.shape
    if sp.issparse(X):
        return gamma_from_moments(n, d, *V.value_moments(X))
    var = np.asarray(X).var()
    return 1.0 / (d * var) if var > 0 else 1.0


def gamma_from_moments(n, d, total, total_sq):
    """gamma='scale' from the sum and the sum of squares of an n x d matrix's entries
    (what a streaming pass can collect)."""
    V.refuse_overflow(total_sq)
    mean = total / (n * d)
    var = total_sq / (n * d) - mean * mean
    return 1.0 / (d * var) if var > 0 else 1.0


def _effective_budget(p, n, d, verbose):
    """(budget, merge size M, buffer rows cap) for n training rows of d features; the
    budget is capped at n unless n is None (partial_fit: more rows may follow)."""
    budget = p.budget
    if n is not None and budget > n and n >= 2:
        if verbose:
            report(f"budget={budget} exceeds the {n} training rows; using {n}")
        budget = n
    M = p.merge_size if p.maintenance == "merge" else 2
    M = min(M, budget)
    cap = budget + M - 1
    return budget, M, cap


def sparse_storage(storage, X, cap, copies=1):
    """Whether the support vectors of a fit on X (canonical CSR) with room for cap of
    them are stored sparse: ``storage`` "sparse" or "dense", or for "auto" when X's
    rows hold at most SPARSE_ROW_SHARE of its columns on average and the dense rows
    would take more than SPARSE_MIN_VALUES values.  Dense storage of ``copies`` models
    must fit in memory (``V.dense_size``)."""
    return sparse_storage_for(storage, *X.shape, X.nnz, cap, copies)


def sparse_storage_for(storage, n, d, nnz, cap, copies=1):
    """sparse_storage for rows of n x d with nnz non-zeros (wherever they are)."""
    if storage == "auto":
        sparse = (nnz <= SPARSE_ROW_SHARE * n * d
                  and cap * d > SPARSE_MIN_VALUES)
    else:
        sparse = storage == "sparse"
    if not sparse:
        V.dense_size(copies * cap * d, f"{copies} model(s) of {cap} SV rows of {d} dense "
                     f"features", "reduce the budget or the features, or use "
                     "storage='sparse'")
    return sparse


def _new_model(d, n_coef, cap, gamma, p, n_src=0, Z=None, beta=None, sparse=False):
    mdl = BudgetModel(d, n_coef, cap, gamma, n_src, sparse)
    if Z is not None and Z.shape[0] > 0:
        mdl.load(Z, beta)
    mt = Maintainer(mdl, p.maintenance, p.merge_search, p.multi_merge,
                    min(p.merge_size, cap) if p.maintenance == "merge" else 2,
                    p.merge_tol)
    return mdl, mt


def epoch_progress(label):
    """A bsgd_run/bsca_run progress callback printing epochs, elapsed time, peak memory
    and ETA."""
    def progress(done, total, seconds):
        report(f"{label}epoch {done}/{total}, ETA {seconds / done * (total - done):.1f}s",
               seconds)
    return progress


def _bsgd(X, codes, n_classes, p, gamma, seed, budget, M, cap, *, n_lambda, sparse,
          state=None, epochs=None, progress=None, xsq=None, n_threads=1):
    """BSGD on validated data; `state` = (Z, beta, t) continues a model (partial_fit);
    the fit on a team and the offset's scoring on up to n_threads threads."""
    n, d = X.shape
    n_coef = 1 if n_classes == 2 else n_classes
    Z0, beta0, t0 = state if state is not None else (None, None, 0)
    mdl, mt = _new_model(d, n_coef, cap, gamma, p, Z=Z0, beta=beta0, sparse=sparse)
    lam = 1.0 / (n_lambda * p.C)
    epochs = epochs or p.epochs
    T = epochs * n
    xsq = V.row_sqnorms(X) if xsq is None else xsq
    tail = _tail(n, budget, p.averaging)
    avg_start = {"none": 0, "all": t0 + 1, "last-half": t0 + T // 2 + 1,
                 "tail": t0 + T - tail + 1}[p.averaging]
    ck = (BestCheckpoint(X, xsq, codes, lam, seed, p.checkpoints, offset=p.offset)
          if p.checkpoints else None)
    out = bsgd_run(X, xsq, codes.astype(np.int32), mdl, mt, budget, M, lam,
                   epochs, t0, seed, avg_start, progress, ck.every(T) if ck else 0, ck,
                   team_for(n_threads, cap))
    _check_memory(mdl)
    out["checkpoints"] = [ck] if ck else []
    Z, beta, b, _ = _final_model(mdl, ck, out, avg_start, p, X, xsq, codes, seed, gamma,
                                 n_threads)
    return Z, beta.T.copy(), b, out, mt


def _final_model(mdl, ck, out, avg_start, p, X, xsq, codes, seed, gamma, n_threads):
    """(Z, beta, offset, the checkpoint's extra) at the end of a run: the checkpoint's
    best model, or the last (averaged from avg_start) with its offset fitted on
    ``draw_sample``'s rows of X; the seconds spent added to out["time"]."""
    if ck:
        Z, beta, extra, b = ck.finish(mdl)
        out["time"] += ck.seconds
        return Z, beta, b, extra
    Z, beta, _ = mdl.arrays()
    if avg_start:
        beta = mdl.averaged() / out["n_avg"]
    b, seconds = _offset(p, X, xsq, codes, seed, Z, beta, gamma, n_threads)
    out["time"] += seconds
    return Z, beta, b, None


def _check_memory(mdl):
    if mdl.out_of_memory:
        raise MemoryError("the sparse support vectors outgrew the memory: reduce the "
                          "budget")


def _tail(n, budget, averaging):
    """The number of last steps averaging="tail" averages (n rows per epoch); 0 for
    other averagings."""
    return max(1, min(n // 2, TAIL_PER_SV * budget)) if averaging == "tail" else 0


def _offset(p, X, xsq, codes, seed, Z, beta, gamma, n_threads=1):
    """(offset, seconds): the fitted offset of the final model (zeros with offset=False),
    its sample scored on up to n_threads threads."""
    if not p.offset:
        return np.zeros(beta.shape[1]), 0.0
    t0 = time.perf_counter()
    b = model_offset(Z, beta, gamma, draw_sample(X, xsq, codes, seed), n_threads)
    return b, time.perf_counter() - t0


class ProblemFit(NamedTuple):
    """One BSCA one-vs-rest problem fitted (``bsca_problem``): its SVs Z, their
    coefficients, the offset, the duals alpha (None once dropped), the run's counters
    and its checkpoint (or None)."""
    Z: object
    coef: np.ndarray
    b: float
    alpha: object
    stats: dict
    checkpoint: object


def bsca_problem(X, xsq, codes, k, seed_k, p, gamma, budget, M, cap, sparse, n_prob,
                 spare=1, verbose=0):
    """BSCA on class k against the rest (codes: class indices) with the problem's seed,
    a team of ``spare`` threads; everything written here is this problem's own (X and
    xsq are only read), so problems may run side by side."""
    n, d = X.shape
    T = p.epochs * n
    tail = _tail(n, budget, p.averaging)
    avg_start = T - tail + 1 if tail else 0
    y = np.where(codes == k, 1.0, -1.0)
    alpha = np.zeros(n)
    mdl, mt = _new_model(d, 1, cap, gamma, p, n_src=n, sparse=sparse)
    progress = epoch_progress(f"class {k}: " if n_prob > 1 else "") if verbose else None
    codes_k = (codes == k).astype(np.int32)
    ck = (BestCheckpoint(X, xsq, codes_k, 1.0 / (n * p.C), seed_k, p.checkpoints,
                         extra=alpha, offset=p.offset)
          if p.checkpoints else None)
    out = bsca_run(X, xsq, y, p.C, alpha, mdl, mt, budget, M, p.epochs,
                   seed_k, progress, ck.every(T) if ck else 0, ck, avg_start,
                   team_for(spare, cap))
    _check_memory(mdl)
    Z, beta, b, best_alpha = _final_model(mdl, ck, out, avg_start, p, X, xsq, codes_k,
                                          seed_k, gamma, spare)
    alpha = alpha if best_alpha is None else best_alpha
    stats = {"n_updates": out["n_updates"], "merge_time": out["merge_time"],
             "time": out["time"], "n_merges": mt.n_merges, "n_removed": mt.n_removed}
    return ProblemFit(Z, beta[:, 0], b[0], alpha, stats, ck)


def stack_problems(fits, sparse):
    """(Z, dual, offsets, alphas or None, stats) of BSCA's one-vs-rest problems: the
    SVs of all problems stacked, each problem's coefficients on its own rows of them
    (``stats["blocks"]``) and zero on the others'."""
    Z = (sp.vstack([f.Z for f in fits], format="csr") if sparse
         else np.vstack([f.Z for f in fits]))
    dual = np.zeros((len(fits), Z.shape[0]))
    blocks, start = [], 0       # (each problem's SVs: rows start:stop of Z)
    for row, f in enumerate(fits):
        dual[row, start:start + f.coef.shape[0]] = f.coef
        blocks.append((start, start + f.coef.shape[0]))
        start += f.coef.shape[0]
    stats = {key: sum(f.stats[key] for f in fits) for key in fits[0].stats}
    stats.update(checkpoints=[f.checkpoint for f in fits if f.checkpoint is not None],
                 blocks=blocks)
    alpha = (None if any(f.alpha is None for f in fits)
             else np.vstack([f.alpha for f in fits]))
    return Z, dual, np.array([f.b for f in fits]), alpha, stats


def _bsca(X, codes, n_classes, p, gamma, seed, budget, M, cap, verbose=0, n_jobs=1,
          sparse=False):
    """BSCA, one-vs-rest for more than two classes on n_jobs threads (the threads the
    problems leave over: a team per problem); SVs of all problems stacked."""
    n_prob = len(binary_problems(n_classes))
    spare = max(1, n_jobs // n_prob)
    xsq = V.row_sqnorms(X)
    fits = one_vs_rest(n_classes, seed, lambda k, seed_k: bsca_problem(
        X, xsq, codes, k, seed_k, p, gamma, budget, M, cap, sparse, n_prob, spare,
        verbose), n_jobs)
    return stack_problems(fits, sparse)


def _fit(X, codes, classes, p, seed, verbose=0, n_jobs=1):
    """Shared by solve_budget and BudgetSVC.fit: X canonical CSR, codes class indices;
    n_jobs threads for BSCA's one-vs-rest problems, or a team for one model
    (_team_rules)."""
    t_fit = time.perf_counter()
    n, d = X.shape
    gamma = scale_gamma(X) if p.gamma == "scale" else p.gamma
    budget, M, cap = _effective_budget(p, n, d, verbose)
    K = classes.shape[0]
    n_models = 1 if p.solver == "bsgd" else len(binary_problems(K))
    sparse = sparse_storage(p.storage, X, cap, n_models)
    p_run = replace(p, offset=False) if p.refit else p   # (refit fits its own offset)
    if p.solver == "bsgd":
        Z, dual, b, out, mt = _bsgd(X, codes, K, p_run, gamma, seed, budget, M, cap,
                                    n_lambda=n, sparse=sparse,
                                    progress=epoch_progress("") if verbose else None,
                                    n_threads=n_jobs)
        res = BudgetResult(classes=classes, support_vectors=Z, dual_coef=dual, intercept=b,
                           gamma=gamma, budget=budget, n_iter=p.epochs,
                           n_steps=p.epochs * n,
                           n_added=out["n_added"], n_merges=mt.n_merges,
                           n_removed=mt.n_removed, merge_time=out["merge_time"],
                           time=out["time"], t=out["t"])
    else:
        Z, dual, b, alpha, st = _bsca(X, codes, K, p_run, gamma, seed, budget, M, cap,
                                      verbose, n_jobs, sparse)
        n_prob = dual.shape[0]
        res = BudgetResult(classes=classes, support_vectors=Z, dual_coef=dual, intercept=b,
                           gamma=gamma, budget=budget, n_iter=p.epochs,
                           n_steps=p.epochs * n * n_prob, n_added=st["n_updates"],
                           n_merges=st["n_merges"], n_removed=st["n_removed"],
                           merge_time=st["merge_time"], time=st["time"], alpha=alpha)
        out = st
    res.checkpoint, res.checkpoint_objectives = checkpoint_fields(out["checkpoints"])
    if p.refit:
        t0 = time.perf_counter()
        res.dual_coef, res.intercept, infos = refit_model(
            X, codes, Z, res.dual_coef, res.intercept, gamma, p.C, p.offset,
            blocks=out.get("blocks"), loss=p.refit)   # (blocks: BSCA's problems' own SVs)
        res.time += time.perf_counter() - t0
        if verbose:
            report(f"refit: {', '.join(str(i.n_iter) for i in infos)} Newton "
                   f"iteration(s)", time.perf_counter() - t_fit)
    if verbose:
        report(f"{p.solver}: {res.n_iter} epoch(s), {Z.shape[0]} SVs "
               f"({'sparse' if sparse else 'dense'}), "
               f"{res.n_merges} merges, {res.n_removed} removed, "
               f"merge {res.merge_time:.3f}s of {res.time:.3f}s", time.perf_counter() - t_fit)
    return res


def solve_budget(X, y, C=1.0, *, gamma="scale", budget=500, solver="bsgd", epochs=1,
                 maintenance="merge", merge_size=2, merge_search="gss",
                 multi_merge="cascade", merge_tol=0.01, averaging="auto", checkpoints=0,
                 offset=True, refit=False, storage="auto", random_state=None, n_jobs=None,
                 verbose=0):
    """Train a budgeted Gaussian-kernel SVM with BSGD or BSCA.

    The functional counterpart of ``BudgetSVC(...).fit(X, y)``.

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Training data.
    y : array-like of shape (n_samples,)
        Class labels (two or more classes).
    C, gamma, budget, solver, epochs, maintenance, merge_size, merge_search
        As in :class:`BudgetSVC`, with the same defaults.
    multi_merge, merge_tol, averaging, checkpoints, offset, refit, storage, random_state
        As in :class:`BudgetSVC`, with the same defaults.
    n_jobs
        As in :class:`BudgetSVC`, with the same default.
    verbose
        As in :class:`BudgetSVC`, with the same default.

    Returns
    -------
    BudgetResult
        The model and run statistics.

    Raises
    ------
    ValueError, TypeError
        For invalid parameters or combinations of them (see :class:`BudgetSVC`).

    See Also
    --------
    BudgetSVC : The estimator, with ``partial_fit``.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from pybudget import solve_budget
    >>> X, y = make_classification(n_samples=200, n_features=5, random_state=0)
    >>> res = solve_budget(X, y, budget=20, random_state=0)
    >>> res.support_vectors.shape[0] <= 20, res.dual_coef.shape[0]
    (True, 1)
    """
    p = check_budget_params(C, gamma, budget, solver, epochs, maintenance, merge_size,
                            merge_search, multi_merge, merge_tol, averaging, checkpoints,
                            offset, refit, storage)
    n_jobs = V.n_jobs(n_jobs)
    X = V.as_csr(X)
    classes, codes = V.encode_labels(y, X.shape[0])
    return _fit(X, codes, classes, p, V.seed_from(random_state), V.verbosity(verbose),
                n_jobs)


class BudgetSVC(SVMClassifierBase):
    """Gaussian-kernel SVM with at most ``budget`` support vectors.

    The kernel is ``k(x, x') = exp(-gamma * ||x - x'||^2)``.  Two solvers:

    - ``solver="bsgd"``: budgeted Pegasos (Wang, Crammer & Vucetic), lambda = 1/(n C),
      step 1/(lambda t), a fresh permutation per epoch, no bias; more than two classes
      by the paper's multi-class formulation (one coefficient per class per SV).
    - ``solver="bsca"``: budgeted stochastic coordinate ascent on the dual (Qaadan,
      Schueler & Glasmachers), alpha in [0, C]; one-vs-rest for more than two classes.

    **What the defaults return.**  The late steps of both solvers shift f everywhere by
    up to about C/epochs, so the papers' last iterate is a lottery on a flat kernel: its
    accuracy varies widely from seed to seed (docs/benchmarks.md, section 3).  By
    default both solvers return the mean of the models after each of their last
    min(n/2, 4 * budget) steps (``averaging="auto"``; for BSCA per one-vs-rest problem)
    and add an offset ``intercept_`` fitted on training rows (``offset=True``).
    ``offset=False, averaging="none"`` returns the papers' last iterate, bit for bit
    what pybudget returned before.

    Parameters
    ----------
    C : float, default=1.0
        Regularisation parameter, > 0 (lambda = 1/(n C)).
    gamma : float or "scale", default="scale"
        Kernel width, > 0.  "scale" is ``1 / (n_features * X.var())`` as in
        scikit-learn, the variance taken over all entries of X including the zeros of a
        sparse matrix (1.0 when that variance is 0).
    budget : int, default=500
        Maximum number of support vectors B, at least 2; ``fit`` caps it at the number
        of training rows.
    solver : {"bsgd", "bsca"}, default="bsgd"
        The training algorithm (see above).
    epochs : int, default=1
        Passes over the training data, at least 1.
    maintenance : {"merge", "remove", "project"}, default="merge"
        Budget maintenance: "merge" (merge ``merge_size`` SVs into one), "remove" (drop
        the smallest SV) or "project" (project the smallest SV onto the others).
    merge_size : int, default=2
        SVs merged into one, from 2 up to ``budget``; ``merge_size >= 3`` merges as
        ``multi_merge`` says.  Only with ``maintenance="merge"``.
    merge_search : {"gss", "lookup-h", "lookup-wd"}, default="gss"
        Merge partner search: golden section ("gss") with tolerance ``merge_tol`` on h,
        or the "lookup-h" / "lookup-wd" tables.  Lookup tables are defined for binary
        merges; multi-class BSGD always searches the exact multi-class objective.  Only
        with ``maintenance="merge"``.
    multi_merge : {"cascade", "gradient"}, default="cascade"
        For ``merge_size >= 3``: a "cascade" of exact pairwise merges or one "gradient"
        merge.  Only with ``maintenance="merge"``.
    merge_tol : float, default=0.01
        Tolerance on h in [0, 1] of the golden-section search; in (0, 0.5).
    averaging : {"auto", "tail", "none", "all", "last-half"}, default="auto"
        Iterate averaging ("all" and "last-half" bsgd only):

        - "auto": "tail" unless ``checkpoints`` are asked for, then "none".
        - "tail": the mean of the iterates of the last min(n/2, 4 * budget) steps.
          With bsca (not in the paper; per one-vs-rest problem) the mean of the
          models after each of those steps: an SV's coefficient enters the mean
          with the value it had at each step.  On ijcnn1 (1 epoch) it lifts the
          worst of 20 seeds from 96.50 to 97.54 % (docs/benchmarks.md, section 3).
        - "none": the papers' output, the last iterate.
        - "all": the mean of all iterates of the fit, the quantity the Pegasos and BSGD
          (Theorem 1) analyses bound, via convexity.
        - "last-half": suffix averaging over the last half of the steps.

        The averaged model lives on the same B support vectors and every maintenance
        event maps it as it maps the coefficients: a merge replaces the averaged parts
        by sum_i acc_i k(z_i, z) (a cascade by its sequence of pairwise rules),
        projection moves them like the coefficients, removal drops them.  Those maps
        are approximations whose errors add up over the averaging window, which is why
        long windows degrade (docs/benchmarks.md, section 3) and "tail" is short.
    checkpoints : int, default=0
        Both solvers.  0 returns the final model.  ``k > 0`` estimates the primal
        objective lambda/2 ||w||^2 + mean hinge loss of the budgeted model
        (lambda = 1/(nC)) on a fixed random sample of min(n, 2048) training rows at
        about k evenly spaced points of the run (every ceil(T/k) of the T steps, the
        final model included) and returns the checkpoint where it was lowest (per
        binary problem for BSCA's one-vs-rest); with the offset on, each checkpoint's
        objective uses its own offset.  Each checkpoint costs about 2048 + B kernel
        rows; a multi-merge buffer is merged down to B before each one.  Cannot be
        combined with averaging other than "none".
    offset : bool, default=True
        After training, fit b to minimise the mean hinge loss of f + b over a fixed
        random sample of min(n, 2048) training rows (exactly, per class for
        multi-class BSGD by exact coordinate steps, per problem for one-vs-rest BSCA).
        It is used only when it lowers that loss by at least 3 standard errors, so a
        model whose threshold is already right is not moved by sampling noise, and
        then only as far as the sample's errors fall: the offset is the point between
        0 and the minimiser with the fewest misclassified sample rows (0 if none has
        fewer than 0).  ``partial_fit`` refits it at the end of every call on a
        reservoir sample of all rows seen.
    refit : bool or {"squared_hinge", "hinge"}, default=False
        After the stochastic epochs, solve the coefficients on the final support
        vectors exactly once: with the support vectors S fixed, minimise
        ``1/2 a' K_SS a + C sum_i L(y_i (k(x_i, S) a + b))`` over the coefficients a
        and (with ``offset=True``; else b = 0) an unregularised offset b, on all
        training rows at the same C.  L: the squared hinge ``max(0, 1 - m)^2``
        (True, "squared_hinge"), or the hinge smoothed over margins within 0.5 of 1
        ("hinge": Chapelle's Huber hinge, quadratic there so that Newton's method
        solves it); which is more accurate depends on the data, as for LinearSVC's
        ``loss``.  This is the Nystroem problem with the budget's own centres as
        landmarks (features k(x, S) K_SS^(-1/2)), solved in the coefficients by
        Newton's method with exact line searches from the stochastic solver's
        coefficients
        (``pybudget.budget._refit``); it replaces ``dual_coef_`` and ``intercept_``
        and keeps the support vectors, so the model, its prediction and its files are
        those of any BudgetSVC.  More than two classes: one-vs-rest problems on the
        shared support vectors (BSGD) or on each problem's own (BSCA).  Cost: the
        n x B kernel matrix (8 n B bytes) and a few Newton steps, each a Cholesky
        factorisation of B x B; its seconds are in ``fit_time_``.  ``partial_fit``
        ignores it.  Its accuracy and cost against Nystroem models of the same size:
        docs/benchmarks.md, section 12.
    storage : {"auto", "dense", "sparse"}, default="auto"
        How the support vectors are held while training: "dense" rows of all
        ``n_features`` values, or "sparse" rows of their non-zeros (a merged SV holds
        the union of its parts' columns), the same model to the last bit either way.
        "auto" is "sparse" where X's rows fill at most 1/64 of its columns on average
        and the dense rows would take more than 2**20 values (high-dimensional sparse
        data such as text), else "dense".  With sparse storage ``support_vectors_`` is
        a scipy CSR matrix.
    random_state : None, int, numpy.random.RandomState or numpy.random.Generator
        Seed of the solvers' random order and samples.
    n_jobs : int or None, default=None
        Threads for the fit and for predictions: None is 1, -1 every core, -2 all but
        one, as for the linear estimators.  BSCA's one-vs-rest problems run side by
        side; one model (BSGD's, binary or multi-class, or a binary BSCA problem) runs
        on a team that splits its kernel rows and its maintenance over the support
        vectors, where its budget is large enough for that to pay (budgets below 200:
        one thread).  ``decision_function`` and ``predict``, and the offset's scoring
        in ``fit``, spread their rows over ``n_jobs`` threads.  The model is the same
        to the last bit for every ``n_jobs`` (each value is one thread's, in one fixed
        order).
    verbose : int or bool, default=0
        Progress (epochs, elapsed time, peak memory, ETA, a summary) on stderr.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    support_vectors_ : ndarray or scipy CSR matrix of shape (n_sv, n_features)
        Support vectors (CSR with sparse storage).
    dual_coef_ : ndarray of shape (n_problems, n_sv)
        Coefficients per problem and SV.
    intercept_ : ndarray of shape (n_problems,)
        The offset; zeros with ``offset=False``.
    gamma_ : float
        The gamma used.
    n_iter_ : int
        Epochs.
    n_merges_, n_removed_ : int
        Merge events and SVs dropped without a merge.
    merge_time_, fit_time_ : float
        Seconds of maintenance and of optimisation (summed over one-vs-rest problems,
        so more than the wall time with ``n_jobs > 1``).
    n_features_in_ : int
        Number of features seen in training.
    checkpoint_ : ndarray of shape (n_problems,) or None
        Index of the returned checkpoint per problem; None without checkpoints.

    Raises
    ------
    ValueError, TypeError
        From ``fit`` for invalid parameters, and for combinations that do not apply:
        ``merge_size > budget``; ``checkpoints`` with averaging other than "none";
        averaging "all" or "last-half" with ``solver="bsca"``; non-default
        ``merge_size``, ``merge_search`` or ``multi_merge`` without
        ``maintenance="merge"``.

    See Also
    --------
    solve_budget : The functional interface.
    pybudget.stream_fit : Training on files larger than memory via ``partial_fit``.
    pybudget.merging : The maths of merging two SVs.
    pybudget.save, pybudget.load : Model files.

    Notes
    -----
    ``partial_fit`` (bsgd only) runs one epoch over each chunk, continuing the global
    step count; lambda uses the number of rows seen so far, so one pass over all chunks
    ends with the lambda of ``fit``.  It always continues the last iterate and ignores
    ``averaging`` and ``checkpoints``.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from pybudget import BudgetSVC
    >>> X, y = make_classification(n_samples=200, n_features=5, random_state=0)
    >>> clf = BudgetSVC(budget=20, random_state=0).fit(X, y)
    >>> clf.support_vectors_.shape[0] <= 20, clf.predict(X[:3]).shape
    (True, (3,))
    """

    def __init__(self, C=1.0, *, gamma="scale", budget=500, solver="bsgd", epochs=1,
                 maintenance="merge", merge_size=2, merge_search="gss",
                 multi_merge="cascade", merge_tol=0.01, averaging="auto", checkpoints=0,
                 offset=True, refit=False, storage="auto", random_state=None, n_jobs=None,
                 verbose=0):
        self.C = C
        self.gamma = gamma
        self.budget = budget
        self.solver = solver
        self.epochs = epochs
        self.maintenance = maintenance
        self.merge_size = merge_size
        self.merge_search = merge_search
        self.multi_merge = multi_merge
        self.merge_tol = merge_tol
        self.averaging = averaging
        self.checkpoints = checkpoints
        self.offset = offset
        self.refit = refit
        self.storage = storage
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    def _params(self):
        return check_budget_params(self.C, self.gamma, self.budget, self.solver, self.epochs,
                                   self.maintenance, self.merge_size, self.merge_search,
                                   self.multi_merge, self.merge_tol, self.averaging,
                                   self.checkpoints, self.offset, self.refit, self.storage)

    def fit(self, X, y):
        p = self._params()
        n_jobs = V.n_jobs(self.n_jobs)
        X, y = self._training_data(X, y)
        classes, codes = V.encode_labels(y, X.shape[0])
        res = _fit(X, codes, classes, p, V.seed_from(self.random_state),
                   V.verbosity(self.verbose), n_jobs)
        self._store(res)
        self._t = res.t
        self._n_seen = X.shape[0]
        self._offset_sample = None    # partial_fit's reservoir starts anew after a fit
        return self

    def _store(self, res):
        self.classes_ = res.classes
        self.support_vectors_ = res.support_vectors
        self.dual_coef_ = res.dual_coef
        self.intercept_ = res.intercept
        self.gamma_ = res.gamma
        self.n_iter_ = res.n_iter
        self.n_merges_ = res.n_merges
        self.n_removed_ = res.n_removed
        self.merge_time_ = res.merge_time
        self.fit_time_ = res.time
        self.checkpoint_ = res.checkpoint

    def _is_bsgd(self):
        if self.solver != "bsgd":
            raise AttributeError(f"partial_fit needs solver='bsgd', got solver={self.solver!r}")
        return True

    @available_if(_is_bsgd)
    def partial_fit(self, X, y, classes=None):
        """Run one BSGD epoch over the chunk (X, y), continuing the model.

        Available with ``solver="bsgd"`` only.  The global step count continues and
        lambda uses the number of rows seen so far, so one pass over all chunks ends
        with the lambda of ``fit``.  It always continues the last iterate: ``averaging``
        and ``checkpoints`` apply to ``fit`` only and are ignored here (as
        scikit-learn's SGD ignores early stopping in ``partial_fit``).  With
        ``offset=True`` the offset is refitted at the end of every call on a reservoir
        sample of all rows seen so far.  ``gamma="scale"`` takes the scale of the first
        chunk.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The chunk's data.
        y : array-like of shape (n_samples,)
            The chunk's labels, all among ``classes``.
        classes : array-like, optional
            All class labels; required on the first call, and if given later it must
            match the classes of the first call.

        Returns
        -------
        self : BudgetSVC

        Raises
        ------
        AttributeError
            With ``solver`` other than "bsgd".
        ValueError
            When ``classes`` is missing on the first call or differs from it later,
            ``y`` has labels outside ``classes``, or the fitted model has more support
            vectors than ``budget`` (lowered after fitting, or a one-vs-rest BSCA
            model).  These checks run before the estimator changes.
        """
        params = self._params()
        offset = params.offset
        p = replace(params, averaging="none", checkpoints=0, offset=False)
        first = not hasattr(self, "classes_")
        X, y = self._training_data(X, y, reset=first)
        if first:
            if classes is None:
                raise ValueError("classes must be passed on the first call to partial_fit")
            cl = np.asarray(classes)
            cl = cl.reshape(1) if cl.ndim == 0 else cl
            all_classes, _ = V.encode_labels(cl, cl.shape[0], name="classes")
        else:
            all_classes = self.classes_
            if classes is not None and not np.array_equal(np.unique(classes), all_classes):
                raise ValueError(f"classes={list(classes)} differ from the classes of the "
                                 f"first partial_fit call {all_classes.tolist()}")
        seen, codes = V.encode_labels(y, X.shape[0], min_classes=1)
        unseen = np.setdiff1d(seen, all_classes)
        if unseen.size:
            raise ValueError(f"y contains labels {unseen.tolist()[:10]} not in classes "
                             f"{all_classes.tolist()}")
        codes = np.searchsorted(all_classes, seen)[codes]
        n, d = X.shape
        # every check before the estimator changes: a refused call leaves it as it was
        V.check_squares(X)
        budget, M, cap = _effective_budget(p, None, d, 0)
        # (the storage of the first call's model: its rows decide, later ones keep it)
        sparse = (sparse_storage(p.storage, X, cap) if first
                  else sp.issparse(self.support_vectors_))
        n_sv = 0 if first else self.support_vectors_.shape[0]
        if n_sv > budget:
            raise ValueError(f"partial_fit: the fitted model has {n_sv} support vectors, more "
                             f"than budget={budget} (lowered after fitting, or a one-vs-rest "
                             f"BSCA model); raise the budget or fit anew")
        K = all_classes.shape[0]
        if first:
            gamma = scale_gamma(X) if p.gamma == "scale" else p.gamma
            Z0, dual0, t0, n_seen = None, np.zeros((1 if K == 2 else K, 0)), 0, 0
        else:
            gamma, Z0, dual0, t0, n_seen = (self.gamma_, self.support_vectors_,
                                            self.dual_coef_, self._t, self._n_seen)
        seed = V.seed_from(self.random_state)
        seed = (seed + 0x9E3779B97F4A7C15 * (t0 + 1)) % 2**64   # new order per call
        xsq = V.row_sqnorms(X)       # for the run and the reservoir
        Z, dual, _, out, mt = _bsgd(X, codes, K, p, gamma, seed, budget, M, cap,
                                    n_lambda=n_seen + n, sparse=sparse,
                                    state=(Z0, dual0.T, t0), epochs=1, xsq=xsq,
                                    n_threads=V.n_jobs(self.n_jobs))
        # the offset is refitted at the end of every call on a reservoir sample of all
        # rows seen so far (so it does not hinge on the last, possibly small, chunk)
        t_off = time.perf_counter()
        sample = reservoir_update(None if first else getattr(self, "_offset_sample", None),
                                  n_seen, X, xsq, codes.astype(np.int32), seed)
        b = (model_offset(Z, dual.T, gamma, sample) if offset
             else np.zeros(dual.shape[0]))
        out["time"] += time.perf_counter() - t_off
        if first:
            self.n_iter_ = self.n_merges_ = self.n_removed_ = 0
            self.merge_time_ = self.fit_time_ = 0.0
        self.gamma_, self._n_seen, self._t = gamma, n_seen + n, out["t"]
        self.classes_ = all_classes
        self.support_vectors_ = Z
        self.dual_coef_ = dual
        self.intercept_ = b
        self._offset_sample = sample
        self.n_iter_ += 1
        self.n_merges_ += mt.n_merges
        self.n_removed_ += mt.n_removed
        self.merge_time_ += out["merge_time"]
        self.fit_time_ += out["time"]
        self.checkpoint_ = None
        return self

    def decision_function(self, X):
        X = V.canonical_csr(self._prediction_data(X))
        scores = decision_values(self.support_vectors_, self.dual_coef_.T, self.gamma_, X,
                                 n_threads=V.n_jobs(self.n_jobs))
        scores += self.intercept_
        return scores.ravel() if scores.shape[1] == 1 else scores
