"""BudgetSVC trained on a Dask cluster: one model (BSGD's, binary BSCA's) with the rows
on their workers and the budgeted model travelling between them (``_budget_ring``);
BSCA's one-vs-rest problems each whole on one worker (``_budget_whole``)."""
import time
from typing import NamedTuple

import numpy as np
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from pybudget._core import _validation as V
from pybudget._core._estimator import binary_problems
from pybudget._core._parallel import problem_seed
from pybudget._core._progress import report
from pybudget.budget.svm import (BudgetSVC as LocalBudgetSVC, _effective_budget,
                                 gamma_from_moments, sparse_storage_for, stack_problems)
from pybudget.dask import _budget_ring, _budget_whole
from pybudget.dask._sources import GeneratedShards, SvmlightShards
from pybudget.dask.estimators import ENGINES, _ClusterInput


class _Constants(NamedTuple):
    """A fit's constants, decided on the client (``BudgetSVC._constants``)."""
    classes: np.ndarray
    d: int
    gamma: object       # a float; "scale" for one-vs-rest BSCA (where the rows are)
    budget: int
    M: int
    cap: int
    sizes: np.ndarray
    n: int
    sparse: bool


def _one_vs_rest(p, classes):
    """Whether the fit runs one-vs-rest problems, each whole on a worker (BSCA with
    more than two classes), rather than one model travelling the partitions."""
    return p.solver == "bsca" and classes.shape[0] > 2


def _one_machine_only(est):
    raise AttributeError("partial_fit is one machine's: pybudget.dask.BudgetSVC trains "
                         "with fit (to_local() gives a pybudget.BudgetSVC to continue)")


class BudgetSVC(_ClusterInput, LocalBudgetSVC):
    """:class:`pybudget.BudgetSVC` trained on a Dask cluster: one model (BSGD's, or
    binary BSCA's) with the rows on the workers and the model (B support vectors)
    travelling between them; BSCA's one-vs-rest problems each whole on one worker.

    Parameters as the one-machine estimator's, with the same meanings and defaults,
    plus ``client``, ``n_partitions``, ``engine``, ``timeout`` and ``rules`` (where
    the partitions go) as :class:`pybudget.dask.LinearSVC` takes them, and ``laps``.
    An epoch cuts each partition's rows, in a random order of its own, into ``laps``
    shares; lap by lap, each partition runs the steps of its share on the model it
    received, the partitions of a lap in a random order: one machine's BSGD (or BSCA)
    on that order of the rows, the same model for any number of workers and with
    ``engine="threads"``.  One machine's fit shuffles all rows together; the laps come
    close to it where the partitions' rows differ (a file sorted by label), and
    ``laps="auto"`` aims at about ``rules.budget_visits`` (1024) visits an epoch of
    at least ``rules.budget_visit_rows`` (8) rows each (docs/benchmarks.md, section
    16).  ``gamma="scale"``, the storage, the average and the offset are decided as on
    one machine, over all partitions' rows.  Binary BSCA's duals (8 bytes a row) stay
    on the client, and each visit gets and returns its share's.

    With ``solver="bsca"`` and more than two classes, each worker that runs a problem
    holds a copy of all rows (one a host, as :class:`pybudget.dask.LinearSVC`'s
    method "whole"), and the one-vs-rest problems are dealt to the workers' threads,
    each run start to end with one machine's solver and seed: one machine's model to
    the last bit, for any number of workers.  The rows must fit in a worker's memory.
    In-memory rows go to the partitions in contiguous blocks for one-vs-rest BSCA
    (so the copy is X), otherwise dealt.

    Not on a cluster yet: ``checkpoints``, ``refit`` and ``partial_fit``
    (``to_local()`` gives the one-machine estimator of the same model, which can
    continue it).

    Attributes beyond the one-machine ones: ``laps_`` (None for one-vs-rest BSCA),
    ``bytes_sent_`` ({"client": bytes through the client, "workers": bytes between
    them}), ``hop_bytes_`` (the bytes of the model each run of visits on one worker
    handed on, in order; empty for one-vs-rest BSCA), ``n_partitions_``,
    ``partition_workers_``, ``recoveries_``, ``worker_peak_memory_``.
    """

    _local_class = LocalBudgetSVC
    _fitted = "support_vectors_"

    def __init__(self, C=1.0, *, gamma="scale", budget=500, solver="bsgd", epochs=1,
                 maintenance="merge", merge_size=2, merge_search="gss",
                 multi_merge="cascade", merge_tol=0.01, averaging="auto", checkpoints=0,
                 offset=True, refit=False, storage="auto", random_state=None, n_jobs=None,
                 verbose=0, client=None, n_partitions=None, laps="auto", engine="dask",
                 timeout=600.0, rules=None):
        super().__init__(C, gamma=gamma, budget=budget, solver=solver, epochs=epochs,
                         maintenance=maintenance, merge_size=merge_size,
                         merge_search=merge_search, multi_merge=multi_merge,
                         merge_tol=merge_tol, averaging=averaging, checkpoints=checkpoints,
                         offset=offset, refit=refit, storage=storage,
                         random_state=random_state, n_jobs=n_jobs, verbose=verbose)
        self.client = client
        self.n_partitions = n_partitions
        self.laps = laps
        self.engine = engine
        self.timeout = timeout
        self.rules = rules

    partial_fit = available_if(_one_machine_only)(LocalBudgetSVC.partial_fit)

    def _check_params(self):
        p = self._params()
        V.choice("engine", self.engine, ENGINES)
        if self.n_partitions is not None:
            V.positive_int("n_partitions", self.n_partitions)
        V.positive("timeout", self.timeout)
        if self.laps != "auto":
            V.positive_int("laps", self.laps)
        for name, value, default in (("checkpoints", p.checkpoints, 0),
                                     ("refit", p.refit, False)):
            if value != default:
                raise ValueError(f"{name}={getattr(self, name)!r} is one machine's only "
                                 f"so far: pybudget.dask.BudgetSVC trains without it "
                                 f"(fit pybudget.BudgetSVC on one machine)")
        return p, self._rules()

    def _dealt(self, X, y, rules):
        # (one-vs-rest BSCA's copies stack the partitions in order: contiguous blocks
        # give X; a model travelling the partitions likes them alike: dealt)
        return not (self.solver == "bsca" and np.unique(y).shape[0] > 2)

    def fit(self, X, y=None):
        p, rules = self._check_params()
        verbose = V.verbosity(self.verbose)
        seed = V.seed_from(self.random_state)
        t0 = time.perf_counter()
        engine = self._engine(rules)
        try:
            srcs, names, locality = self._sources(X, y, None, self.engine, rules)
            summ = engine.build(srcs, False, names, locality)
            calls = _budget_ring.Calls(engine)
            c = self._constants(calls, summ, p, X, verbose)
            if verbose:
                report(f"{len(srcs)} partitions, {c.n} rows, {c.d} columns, budget "
                       f"{c.budget}, gamma "
                       f"{'scale' if c.gamma == 'scale' else format(c.gamma, '.4g')}, "
                       f"{'sparse' if c.sparse else 'dense'} support vectors",
                       time.perf_counter() - t0)
            fit = self._bsca if _one_vs_rest(p, c.classes) else self._ring
            Z, dual, b, counts, laps, gamma = fit(calls, c, p, seed, rules, verbose, t0)
            peaks = engine.peak_memory()
            placed = engine.placement()
            sent = dict(engine.bytes)
        finally:
            engine.close()
        self.classes_ = c.classes
        self.n_features_in_ = c.d
        self.support_vectors_ = Z
        self.dual_coef_ = dual
        self.intercept_ = b
        self.gamma_ = gamma
        self.n_iter_ = p.epochs
        self.laps_ = laps
        self.n_merges_ = counts["n_merges"]
        self.n_removed_ = counts["n_removed"]
        self.merge_time_ = counts["merge_time"]
        self.fit_time_ = time.perf_counter() - t0
        self.checkpoint_ = None
        self._t, self._n_seen = counts["t"], c.n
        self.recoveries_ = calls.recoveries
        self.bytes_sent_ = sent
        self.hop_bytes_ = np.array(counts["hop_bytes"], dtype=np.int64)
        self.n_partitions_ = len(srcs)
        self.partition_workers_ = placed
        self.worker_peak_memory_ = peaks
        return self

    def _constants(self, calls, summ, p, X, verbose):
        """The fit's constants from the partitions' summaries and value sums, decided
        as one machine decides them on all rows."""
        sizes = np.array([s.n for s in summ])
        n = int(sizes.sum())
        if n == 0:
            raise ValueError("every partition is empty: no rows to train on")
        d = max(s.d for s in summ)
        if isinstance(X, (SvmlightShards, GeneratedShards)) and X.n_features:
            d = X.n_features
        classes = np.unique(np.concatenate([s.labels for s in summ if s.n]))
        if classes.shape[0] < 2:
            raise ValueError(f"y has {classes.shape[0]} class; at least 2 are needed")
        nnz = sum(s.nnz for s in summ)
        gamma, whole = p.gamma, _one_vs_rest(p, classes)
        if p.gamma == "scale" and not whole:       # (whole problems': where the rows are)
            total = total_sq = 0.0
            for s, s_sq in calls.each(_budget_ring.moments):    # (in partition order)
                total += s
                total_sq += s_sq
            gamma = gamma_from_moments(n, d, total, total_sq)
        budget, M, cap = _effective_budget(p, n, d, verbose)
        n_models = len(binary_problems(classes.shape[0])) if whole else 1
        return _Constants(classes, d, gamma, budget, M, cap, sizes, n,
                          sparse_storage_for(p.storage, n, d, nnz, cap, n_models))

    def _ring(self, calls, c, p, seed, rules, verbose, t0):
        """One model travelling the partitions (``_budget_ring``), BSGD's or binary
        BSCA's (with its one binary problem's seed, as one machine's): (Z, dual,
        offsets, counters, laps, gamma)."""
        laps = (_budget_ring.auto_laps(c.sizes, rules) if self.laps == "auto"
                else self.laps)
        bsca = p.solver == "bsca"
        run = _budget_ring.BudgetRun(
            params=p, classes=c.classes, d=c.d, gamma=c.gamma, budget=c.budget,
            merge_size=c.M, cap=c.cap, lam=1.0 / (c.n * p.C),
            avg_start=_budget_ring.first_avg_step(p, c.n, c.budget), sparse=c.sparse,
            seed=problem_seed(seed, binary_problems(2)[0]) if bsca else seed, laps=laps,
            starts=tuple(int(v) for v in np.cumsum([0, *c.sizes])) if bsca else ())

        def progress(epoch, visits, n_sv):
            if verbose:
                report(f"epoch {epoch + 1}/{p.epochs}, {laps} laps, {visits} visits: "
                       f"{n_sv} support vectors, bytes through the client "
                       f"{calls.engine.bytes['client']}", time.perf_counter() - t0)

        return (*_budget_ring.fit(calls, run, c.sizes, progress), laps, c.gamma)

    def _bsca(self, calls, c, p, seed, rules, verbose, t0):
        """BSCA's problems, each whole on a worker (``_budget_whole``): (Z, dual,
        offsets, counters, laps None, gamma as the workers computed it)."""
        problems = binary_problems(c.classes.shape[0])
        job = _budget_whole.BscaProblems(
            spec=_budget_whole.RowsSpec(c.d, c.classes),
            params=p, gamma=None if c.gamma == "scale" else c.gamma, budget=c.budget,
            merge_size=c.M, cap=c.cap, sparse=c.sparse, seed=seed,
            n_problems=len(problems))
        outs, _ = calls.engine.whole(job, problems)
        Z, dual, b, _, stats = stack_problems([fit for fit, _ in outs], c.sparse)
        if verbose:
            report(f"bsca: {len(problems)} problem(s), {Z.shape[0]} SVs, "
                   f"{stats['n_merges']} merges", time.perf_counter() - t0)
        return Z, dual, b, dict(stats, t=0, hop_bytes=[]), None, outs[0][1]

    def to_local(self):
        """The one-machine :class:`pybudget.BudgetSVC` with these parameters (the
        cluster's left out) and this model (for ``pybudget.save``, the command line's
        ``predict``, and ``partial_fit``)."""
        check_is_fitted(self, "support_vectors_")
        names = LocalBudgetSVC().get_params()
        local = LocalBudgetSVC(**{k: v for k, v in self.get_params().items()
                                  if k in names})
        for name in ("classes_", "n_features_in_", "support_vectors_", "dual_coef_",
                     "intercept_", "gamma_", "n_iter_", "n_merges_", "n_removed_",
                     "merge_time_", "fit_time_", "checkpoint_"):
            value = getattr(self, name)
            setattr(local, name, value.copy() if hasattr(value, "copy") else value)
        local._t, local._n_seen = self._t, self._n_seen
        return local

    def decision_function(self, X):
        k = self.dual_coef_.shape[0] if hasattr(self, "dual_coef_") else 1
        return self._blockwise(X, "decision_function", None if k == 1 else k)
