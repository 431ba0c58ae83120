"""BudgetSVC trained on a Dask cluster: the rows stay on their workers, the budgeted
model travels between them (``_budget_ring``)."""
import time

import numpy as np
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from pybudget._core import _validation as V
from pybudget._core._progress import report
from pybudget.budget.svm import (BudgetSVC as LocalBudgetSVC, _effective_budget,
                                 gamma_from_moments, sparse_storage_for)
from pybudget.dask import _budget_ring
from pybudget.dask._sources import GeneratedShards, SvmlightShards
from pybudget.dask.estimators import ENGINES, _ClusterInput


def _one_machine_only(est):
    raise AttributeError("partial_fit is one machine's: pybudget.dask.BudgetSVC trains "
                         "with fit (to_local() gives a pybudget.BudgetSVC to continue)")


class BudgetSVC(_ClusterInput, LocalBudgetSVC):
    """:class:`pybudget.BudgetSVC` trained on a Dask cluster: BSGD with the rows on the
    workers and the model (B support vectors) travelling between them.

    Parameters as the one-machine estimator's, with the same meanings and defaults,
    plus ``client``, ``n_partitions``, ``engine``, ``timeout`` and ``rules`` (where
    the partitions go) as :class:`pybudget.dask.LinearSVC` takes them, and ``laps``.
    An epoch cuts each partition's rows, in a random order of its own, into ``laps``
    shares; lap by lap, each partition runs the BSGD steps of its share on the model
    it received, the partitions of a lap in a random order: one machine's BSGD on that
    order of the rows, the same model for any number of workers and with
    ``engine="threads"``.  One machine's fit shuffles all rows together; the laps come
    close to it where the partitions' rows differ (a file sorted by label), and
    ``laps="auto"`` aims at about ``rules.budget_visits`` (1024) visits an epoch of
    at least ``rules.budget_visit_rows`` (8) rows each (docs/benchmarks.md, section
    16).  ``gamma="scale"``, the storage, the average and the offset are decided as on
    one machine, over all partitions' rows.  Not on a cluster yet: ``solver="bsca"``,
    ``checkpoints``, ``refit`` and ``partial_fit`` (``to_local()`` gives the
    one-machine estimator of the same model, which can continue it).

    Attributes beyond the one-machine ones: ``laps_``, ``bytes_sent_`` ({"client":
    bytes through the client}), ``hop_bytes_`` (the bytes of the model each run of
    visits on one worker handed on, in order), ``n_partitions_``,
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
        for name, value, default in (("solver", p.solver, "bsgd"),
                                     ("checkpoints", p.checkpoints, 0),
                                     ("refit", p.refit, False)):
            if value != default:
                raise ValueError(f"{name}={getattr(self, name)!r} is one machine's only "
                                 f"so far: pybudget.dask.BudgetSVC trains BSGD without "
                                 f"it (fit pybudget.BudgetSVC on one machine)")
        return p, self._rules()

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
            run, sizes = self._run(calls, summ, p, seed, X, rules, verbose)
            if verbose:
                report(f"{len(srcs)} partitions, {int(np.sum(sizes))} rows, {run.d} "
                       f"columns, {run.laps} laps, budget {run.budget}, gamma "
                       f"{run.gamma:.4g}, "
                       f"{'sparse' if run.sparse else 'dense'} support vectors",
                       time.perf_counter() - t0)

            def progress(epoch, visits, n_sv):
                if verbose:
                    report(f"epoch {epoch + 1}/{p.epochs}, {visits} visits: {n_sv} "
                           f"support vectors, bytes through the client "
                           f"{engine.bytes['client']}", time.perf_counter() - t0)

            Z, dual, b, counts = _budget_ring.fit(calls, run, sizes, progress)
            peaks = engine.peak_memory()
            placed = engine.placement()
            sent = dict(engine.bytes)
        finally:
            engine.close()
        self.classes_ = run.classes
        self.n_features_in_ = run.d
        self.support_vectors_ = Z
        self.dual_coef_ = dual
        self.intercept_ = b
        self.gamma_ = run.gamma
        self.n_iter_ = p.epochs
        self.laps_ = run.laps
        self.n_merges_ = counts["n_merges"]
        self.n_removed_ = counts["n_removed"]
        self.merge_time_ = counts["merge_time"]
        self.fit_time_ = time.perf_counter() - t0
        self.checkpoint_ = None
        self._t, self._n_seen = counts["t"], int(np.sum(sizes))
        self.recoveries_ = calls.recoveries
        self.bytes_sent_ = sent
        self.hop_bytes_ = np.array(counts["hop_bytes"])
        self.n_partitions_ = len(srcs)
        self.partition_workers_ = placed
        self.worker_peak_memory_ = peaks
        return self

    def _run(self, calls, summ, p, seed, X, rules, verbose):
        """(BudgetRun, partition sizes): the fit's constants from the partitions'
        summaries and value sums, decided as one machine decides them."""
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
        stats = calls.each(_budget_ring.moments)
        nnz = sum(s[1] for s in stats)
        if p.gamma == "scale":
            total = total_sq = 0.0
            for s in stats:           # (in partition order)
                total += s[2]
                total_sq += s[3]
            gamma = gamma_from_moments(n, d, total, total_sq)
        else:
            gamma = p.gamma
        budget, M, cap = _effective_budget(p, n, d, verbose)
        laps = (_budget_ring.auto_laps(sizes, rules) if self.laps == "auto"
                else self.laps)
        run = _budget_ring.BudgetRun(
            params=p, classes=classes, d=d, gamma=gamma, budget=budget, merge_size=M,
            cap=cap, lam=1.0 / (n * p.C),
            avg_start=_budget_ring.first_avg_step(p, n, budget),
            sparse=sparse_storage_for(p.storage, n, d, nnz, cap), seed=seed, laps=laps)
        return run, sizes

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
