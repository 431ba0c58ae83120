"""LinearSVC, LogisticRegression and LinearSVR trained on a Dask cluster.

Each is its one-machine namesake (a subclass of it) with the same parameters, meanings
and defaults, plus what a cluster needs: ``method``, ``client``, ``n_partitions``,
``local_sweeps``, ``laps``, ``checkpoint_every``, ``engine``, ``timeout`` and ``rules``.
What a method cannot do as one machine does is stated in ``_CLUSTER_DOC``, once.
``to_local()`` gives the one-machine estimator with the same coefficients.
"""
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import accuracy_score, r2_score
from sklearn.utils.validation import check_is_fitted

from pybudget._core import _validation as V
from pybudget._core._estimator import binary_problems
from pybudget._core._progress import report
from pybudget.dask._methods import METHODS
from pybudget.dask._laps import first as first_laps
from pybudget.dask._dask_engine import DaskEngine
from pybudget.dask._engines import ThreadsEngine
from pybudget.dask._partition import Partition
from pybudget.dask._plan import ClusterRules, FitSpec
from pybudget.dask._sources import (GeneratedShards, SvmlightShards, dask_pieces,
                                    memory_sources, rows_bytes)
from pybudget.linear.logistic import LogisticRegression as LocalLogisticRegression
from pybudget.linear.plan import auto_selection, primal_pays
from pybudget.linear.problem import (LOSSES, REGRESSION_LOSSES, check_linear_params,
                                     check_tol_rule, class_weight_vector,
                                     regression_tol_scale)
from pybudget.linear.svm import LinearSVC as LocalLinearSVC
from pybudget.linear.primal import SMOOTH_LOSSES
from pybudget.linear.svr import LinearSVR as LocalLinearSVR

ENGINES = ("dask", "threads")
MEMORY_PARTITIONS = 4     # default n_partitions for numpy / scipy input
DEFAULT_RULES = ClusterRules()     # the rules of a fit with rules=None


def _is_dask(x):
    try:
        from dask.base import is_dask_collection
    except ImportError:
        return False
    return is_dask_collection(x)


def _client(client):
    try:
        from distributed import get_client
    except ImportError:
        raise ImportError("pybudget.dask needs Dask: pip install 'pybudget[dask]' "
                          "(or use engine='threads')") from None
    if client is not None:
        return client
    try:
        return get_client()
    except ValueError:
        raise ValueError("no Dask client: pass client=, create a distributed.Client "
                         "first, or use engine='threads'") from None


class _ClusterInput:
    """What every cluster estimator shares, put before the one-machine estimator in its
    bases: the training data as partition sources, the engine, and prediction by the
    one-machine model (``to_local()``) on each chunk of a Dask array.  A subclass says
    whether in-memory rows are dealt to the partitions (``_dealt``) and which fitted
    attribute marks a fit (``_fitted``)."""

    _regression = False
    _fitted = "coef_"

    def _dealt(self, X, y, rules):
        """Whether in-memory rows X (labels y) go to the partitions dealt (row i to partition i mod
        P) rather than in contiguous blocks."""
        return True

    def _rules(self):
        rules = DEFAULT_RULES if self.rules is None else self.rules
        if not isinstance(rules, ClusterRules):
            raise ValueError(f"rules must be a pybudget.dask.ClusterRules or None, got "
                             f"{type(rules).__name__}")
        return rules

    def _set_cluster_params(self, method, client, n_partitions, local_sweeps, laps,
                            checkpoint_every, engine, timeout, rules):
        self.method = method
        self.client = client
        self.n_partitions = n_partitions
        self.local_sweeps = local_sweeps
        self.laps = laps
        self.checkpoint_every = checkpoint_every
        self.engine = engine
        self.timeout = timeout
        self.rules = rules

    def _check_params(self):
        C, tol, max_iter, bias = check_linear_params(
            self.C, self.loss, self.selection, self.tol, self.max_iter,
            self.fit_intercept, self.intercept_scaling, self._loss_choices)
        V.choice("engine", self.engine, ENGINES)
        V.choice("method", self.method, (*METHODS, "auto"))
        if self.method == "newton":
            if self.loss not in SMOOTH_LOSSES:
                raise ValueError(f"method='newton' needs a smooth loss {SMOOTH_LOSSES}, "
                                 f"got loss={self.loss!r}")
            if self.selection != "auto":
                raise ValueError(f"method='newton' runs the primal Newton solver, not "
                                 f"dual CD: selection={self.selection!r} has no meaning "
                                 "there; leave it 'auto'")
        sweeps = V.positive_int("local_sweeps", self.local_sweeps)
        if self.laps != "auto":
            V.positive_int("laps", self.laps)
            if self.laps > 1 and sweeps > 1:
                raise ValueError(f"laps={self.laps} with local_sweeps={sweeps}: a visit "
                                 "runs either several sweeps or a share of one")
        ckpt = V.positive_int("checkpoint_every", self.checkpoint_every, minimum=0)
        if self.n_partitions is not None:
            V.positive_int("n_partitions", self.n_partitions)
        V.positive("timeout", self.timeout)
        if V.boolean("warm_start", self.warm_start):
            raise ValueError("warm_start=True is one machine's only: pybudget.dask "
                             "estimators start every fit from zero")
        if getattr(self, "multi_class", "ovr") != "ovr":
            raise ValueError(f"pybudget.dask.{type(self).__name__} supports "
                             f"multi_class='ovr' only, got {self.multi_class!r}")
        return C, tol, max_iter, bias, sweeps, ckpt, self._rules()

    def _sources(self, X, y, sample_weight, engine, rules):
        """(sources, names, locality) of the partitions of the training data.  Dask
        chunks are computed on the cluster; the sources hold their futures, and the
        engine holds the sources for the fit, so a lost partition can be rebuilt."""
        if isinstance(X, SvmlightShards):
            if y is not None or sample_weight is not None:
                raise ValueError("with LIBSVM shards the labels come from the files: "
                                 "y and sample_weight must be None")
            if self.n_partitions not in (None, len(X.paths)):
                raise ValueError(f"n_partitions={self.n_partitions} but there are "
                                 f"{len(X.paths)} shards (one partition per shard)")
            return ([("svmlight", p, X.n_features, X.zero_based) for p in X.paths],
                    [f"shard {p!r}" for p in X.paths], None)
        if isinstance(X, GeneratedShards):
            if y is not None or sample_weight is not None:
                raise ValueError("a generated problem has its own labels: y and "
                                 "sample_weight must be None")
            if self.n_partitions not in (None, X.n_partitions):
                raise ValueError(f"n_partitions={self.n_partitions} but the problem was "
                                 f"generated in {X.n_partitions} partitions")
            return X.sources(), [f"generated partition {p}" for p in
                                 range(X.n_partitions)], None
        if _is_dask(X):
            if y is None:
                raise ValueError("y is required (it is None only for LIBSVM shards)")
            return self._dask_sources(X, y, sample_weight, engine)
        # in memory: scikit-learn's checks, as the one-machine estimators make them
        X, y = self._training_data(X, y)
        if self._regression:
            y = V.regression_targets(y, X.shape[0])
        sw = (None if sample_weight is None
              else V.sample_weights(sample_weight, X.shape[0]))
        P = self.n_partitions or MEMORY_PARTITIONS
        srcs, names = memory_sources(X, y, sw, P, dealt=self._dealt(X, y, rules))
        return srcs, names, None

    def _dask_sources(self, X, y, sample_weight, engine):
        if X.ndim != 2 or len(X.chunks[1]) != 1:
            raise ValueError("X must be a 2-d Dask array chunked by rows only (one chunk "
                             "across the columns): use X.rechunk({1: -1})")
        if any(np.isnan(c) for c in X.chunks[0]):
            raise ValueError("X has unknown chunk sizes: call X.compute_chunk_sizes()")
        n, d = X.shape
        P = self.n_partitions or len(X.chunks[0])
        pieces = {"X": dask_pieces(X, P, n)}
        for name, v in (("y", y), ("sw", sample_weight)):
            if v is None:
                continue
            if not _is_dask(v):
                import dask.array as da
                v = da.from_array(np.asarray(v), chunks=(X.chunks[0],))
            if v.shape[0] != n:
                raise ValueError(f"X has {n} rows but {name} has {v.shape[0]}")
            pieces[name] = dask_pieces(v, P, n)
        flat = [blk for key in pieces for part in pieces[key] for blk in part]
        if engine == "dask":
            client = _client(self.client)
            futs = client.compute(flat)
            # (the scheduler knows where a chunk lives once it is computed; as_current:
            # the estimator's client, which need not be the default one)
            from distributed import wait
            with client.as_current():
                wait(futs)
            who = client.who_has(futs)
            done = iter(futs)
        else:
            import dask
            # (Dask's default scheduler: a persisted array's chunks are futures, which
            # only its client can fetch)
            done = iter(dask.compute(*flat))
        got = {key: [[next(done) for _ in part] for part in pieces[key]] for key in pieces}
        # a partition is built where its first X chunk lives
        locality = None if engine != "dask" else [
            sorted(who[part[0].key])[0] if part and who.get(part[0].key) else None
            for part in got["X"]]
        srcs = [("pieces", got["X"][p], got["y"][p],
                 got["sw"][p] if "sw" in got else None, d) for p in range(P)]
        bounds = np.concatenate([[0], np.cumsum(X.chunks[0])])
        names = [f"partition {p} (chunks {_chunk_span(bounds, p, P, n)})" for p in range(P)]
        return srcs, names, locality

    def _engine(self, rules):
        if self.engine == "dask":
            return DaskEngine(_client(self.client), rules, timeout=self.timeout)
        return ThreadsEngine(V.n_jobs(self.n_jobs))

    def _blockwise(self, X, method, n_out):
        """The one-machine estimator's ``method`` on X: a Dask array of X's row chunks
        for Dask input (n_out columns, or 1-d when None), as on one machine otherwise."""
        check_is_fitted(self, self._fitted)
        local = getattr(self._local_class, method)
        if not _is_dask(X):
            return local(self, X)
        if X.ndim != 2 or len(X.chunks[1]) != 1:
            raise ValueError("X must be a 2-d Dask array chunked by rows only")
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but the model was fitted "
                             f"with {self.n_features_in_}")
        fn = getattr(self.to_local(), method)
        dtype = self.classes_.dtype if method == "predict" and hasattr(self, "classes_") \
            else np.float64
        if n_out is None:
            return X.map_blocks(fn, drop_axis=1, dtype=dtype, meta=np.empty((0,), dtype))
        return X.map_blocks(fn, chunks=(X.chunks[0], (n_out,)), dtype=dtype,
                            meta=np.empty((0, 0), dtype))

    def predict(self, X):
        return self._blockwise(X, "predict", None)

    def score(self, X, y, sample_weight=None):
        if not (_is_dask(X) or _is_dask(y)):
            return self._local_class.score(self, X, y, sample_weight=sample_weight)
        pred = self.predict(X)
        if _is_dask(pred):
            pred = pred.compute()
        if _is_dask(y):
            y = y.compute()
        metric = r2_score if self._regression else accuracy_score
        return metric(np.asarray(y), pred, sample_weight=sample_weight)


class _ClusterEstimator(_ClusterInput):
    """The linear estimators' fit on the cluster (see the module docstring)."""

    def _dealt(self, X, y, rules):
        # (method "whole" takes contiguous blocks; _method decides it by the same rule on
        # the partitions' rows and non-zeros, which sum to X's)
        return not self._whole_by_size(X.shape[0], X.nnz, rules)

    def _fit(self, X, y, sample_weight):
        C, tol, max_iter, bias, sweeps, ckpt, rules = self._check_params()
        verbose = V.verbosity(self.verbose)
        seed = V.seed_from(self.random_state)
        t0 = time.perf_counter()
        engine = self._engine(rules)
        try:
            srcs, names, locality = self._sources(X, y, sample_weight, self.engine, rules)
            summ = engine.build(srcs, self._regression, names, locality)
            spec, d, classes = self._spec(summ, C, bias, seed, X, rules)
            n_problems = spec.n_problems
            method, selection = self._method(engine, spec, summ)
            spec = spec.with_selection(selection)
            if verbose:
                report(f"{len(srcs)} partitions, {sum(s.n for s in summ)} rows, {d} "
                       f"columns, {n_problems} problems, method {method}, selection "
                       f"{spec.selection}", time.perf_counter() - t0)

            def progress(e):
                if verbose:
                    mem = engine.peak_memory()
                    peaks = ", ".join(f"{m:.0f}" for _, m in sorted(mem.items()) if m)
                    report(f"round {e['round']}: KKT violation {e['kkt']:.3g}, relative "
                           f"duality gap {e['gap']:.3g} (largest of {e['checked']} "
                           "checked), "
                           f"{e['active']} problems left, bytes through the client "
                           f"{e['bytes']['client']}, between workers {e['bytes']['workers']}"
                           f", worker peak memory [{peaks}] MiB", time.perf_counter() - t0)

            # (the rows of a one-vs-rest fit on a Dask array stay where its chunks are,
            # those of one problem, or in memory, go to one worker when small: _dask_engine)
            laps, max_laps = first_laps(self.laps, method, sweeps, summ, n_problems, d,
                                        not _is_dask(X) or n_problems == 1, rules)
            res = METHODS[method].fit(engine, spec, n_problems, d, tol=tol,
                                      max_rounds=max_iter, sweeps=sweeps,
                                      checkpoint_every=ckpt, laps=laps, max_laps=max_laps,
                                      callback=progress)
            peaks = engine.peak_memory()
            placed = engine.placement()
        finally:
            engine.close()
        self.method_ = method
        self.laps_ = res.laps
        self._set_result(res, bias, d, classes, spec, len(srcs), time.perf_counter() - t0)
        self.worker_peak_memory_ = peaks
        self.partition_workers_ = placed
        if not res.converged.all():
            warnings.warn(f"{type(self).__name__} reached max_iter={max_iter} "
                          f"{METHODS[method].unit} before tol={tol}; increase max_iter",
                          ConvergenceWarning)
        return self

    def _method(self, engine, spec, summ):
        """(method, selection): ``method`` and ``selection``, or for "auto" by the data
        alone, never the cluster.  The method: "whole" for small data
        (``_sources.rows_bytes`` at most ``ClusterRules.whole_bytes``: each worker that
        runs a problem holds the rows, and the problem runs there without a hop, as on one
        machine: docs/benchmarks.md, section 10); else "newton" where one machine's
        ``selection="auto"`` would run the primal Newton solver
        (``linear.plan.primal_pays``: a smooth loss, many more rows than columns in
        use); else the ring, which needed fewer rounds than the parallel methods (bda,
        CoCoA+) it was measured against in every cell (docs/benchmarks.md, section 10).
        The selection: one machine's
        rule (``linear.plan.resolve_selection``) on the same statistics, gathered from
        the partitions: "newton" for the methods that run the Newton solver, else
        ``auto_selection``'s dual CD strategy; "whole" leaves "auto" to the workers, which
        hold all rows and apply one machine's rule to them (``_whole.plan_on``)."""
        method = self.method
        if method == "auto":
            method = ("whole" if self._whole_by_size(sum(s.n for s in summ),
                                                     sum(s.nnz for s in summ),
                                                     spec.rules) else None)
        if spec.tol_rule != "max" and method != "whole":
            raise ValueError(f"tol_rule={spec.tol_rule!r} is one machine's solver's "
                             "rule: method 'whole' runs it; the ring and Newton stop "
                             "by their own checks (tol_rule='max')")
        if method == "newton":
            return "newton", "newton"
        if self.selection != "auto" or method == "whole":
            return method or "ring", self.selection
        got = engine.each(Partition.scales, spec)
        scales = np.concatenate([a for a, _ in got])
        used = np.zeros(spec.d, dtype=bool)
        for _, columns in got:
            used[columns] = True
        used = int(used.sum())
        pays = bool(used) and primal_pays(spec.loss, scales.shape[0], used)
        if method is None:
            method = "newton" if pays else "ring"
        if method == "newton":
            return method, "newton"
        return method, auto_selection(scales.shape[0], used, scales)

    def _whole_by_size(self, n, nnz, rules):
        """Whether the method is "whole": asked for, or "auto" on n rows with nnz
        non-zeros of at most ``rules.whole_bytes`` (``_sources.rows_bytes``)."""
        return self.method == "whole" or (self.method == "auto"
                                          and rows_bytes(n, nnz) <= rules.whole_bytes)

    def _spec(self, summ, C, bias, seed, X, rules):
        d = max(s.d for s in summ)
        if isinstance(X, (SvmlightShards, GeneratedShards)) and X.n_features:
            d = X.n_features
        n = sum(s.n for s in summ)
        if n == 0:
            raise ValueError("every partition is empty: no rows to train on")
        common = {"loss": self.loss, "n_parts": len(summ), "bias": bias, "d": d, "C": C,
                  "seed": seed, "n_rows": n, "rules": rules}
        if self._regression:
            eps = V.nonnegative("epsilon", self.epsilon)
            # (one machine's unit of tol: linear.problem.regression_tol_scale)
            top = max(s.max_abs_y for s in summ)
            spec = FitSpec(**common, regression=True, epsilon=eps,
                           kkt_unit=regression_tol_scale(np.array([top]), eps),
                           tol_rule=check_tol_rule(self.tol_rule, self.loss))
            return spec, d, None
        labels = np.concatenate([s.labels for s in summ if s.n])
        classes = np.unique(labels)
        if classes.shape[0] < 2:
            raise ValueError(f"y has {classes.shape[0]} class; at least 2 are needed")
        # "balanced" weighs the classes by their rows' summed sample weights
        counts = np.zeros(classes.shape[0])
        for s in summ:
            if s.n:
                counts[np.searchsorted(classes, s.labels)] += s.weights
        weights = class_weight_vector(getattr(self, "class_weight", None), classes, counts)
        spec = FitSpec(**common, classes=classes, class_weight=weights,
                       positive=tuple(binary_problems(classes.shape[0])))
        return spec, d, classes

    def _set_result(self, res, bias, d, classes, spec, n_parts, elapsed):
        coef = res.W[:, :d]
        self.n_features_in_ = d
        if classes is not None:
            self.classes_ = classes
        self.n_rounds_ = res.n_rounds
        self.n_iter_ = res.n_rounds
        self.n_steps_ = res.n_steps
        self.duality_gap_ = res.gap
        self.primal_objective_ = res.primal
        self.dual_objective_ = res.dual
        self.kkt_violation_ = res.kkt
        self.converged_ = res.converged
        self.bytes_sent_ = res.bytes_sent
        self.n_checks_ = res.n_checks
        self.recoveries_ = res.recoveries
        self.n_partitions_ = n_parts
        self.selection_ = res.selection or spec.selection
        self.fit_time_ = elapsed
        self.rounds_log_ = res.log
        self.intercept_ = res.W[:, d] * bias if res.intercept is None else res.intercept
        self.coef_ = coef

    # ---- prediction -----------------------------------------------------------------

    def to_local(self):
        """The one-machine estimator with these parameters (the cluster's left out) and
        coefficients (for ``pybudget.save``, the command line's ``predict``, and a
        refit on one machine)."""
        check_is_fitted(self, "coef_")
        cls = self._local_class
        names = cls().get_params()
        local = cls(**{k: v for k, v in self.get_params().items() if k in names})
        for name in ("n_features_in_", "n_iter_", "n_steps_", "selection_", "fit_time_"):
            setattr(local, name, getattr(self, name))
        self._copy_solution(local)
        return local

    def _copy_solution(self, local):
        local.classes_ = self.classes_
        local.coef_ = self.coef_.copy()
        local.intercept_ = self.intercept_.copy()
        local.dual_objective_ = self.dual_objective_.copy()
        local.kkt_violation_ = self.kkt_violation_.copy()
        local.converged_ = self.converged_.copy()


def _chunk_span(bounds, p, P, n):
    lo, hi = p * n // P, (p + 1) * n // P
    first = int(np.searchsorted(bounds, lo, side="right") - 1)
    last = int(np.searchsorted(bounds, max(hi - 1, lo), side="right") - 1)
    return f"{first}" if first == last else f"{first}-{last}"


_CLUSTER_DOC = """
    Parameters as the one-machine estimator's, with the same meanings and defaults,
    and ``n_jobs`` the threads of ``engine="threads"``.  What a method does not do as
    one machine does: ``method="whole"`` runs one machine's solver on each problem and
    gives one machine's model, bit for bit.  The ring runs one machine's sweeps in a
    block-wise order over the partitions (one round, one sweep: ``max_iter`` counts
    rounds) and stops when the exact largest KKT violation over all rows is at most
    ``tol`` (in one machine's unit), the exact test one machine confirms its own stop
    with; it checks on a schedule of its own, so it stops at another round than one
    machine's sweeps would (often earlier: docs/benchmarks.md, section 10).
    ``method="newton"`` runs one machine's primal Newton route (``tol`` its relative
    duality gap, ``max_iter`` Newton iterations, as there).  Not on a cluster:
    ``warm_start=True``, ``multi_class="crammer_singer"``, and ``tol_rule="liblinear"``
    outside method "whole".

    method : {"auto", "ring", "whole", "newton"}, default="auto"
        How the partitions share the work (docs/user_guide.md, "Training on a Dask
        cluster"): "ring", the partitions take turns within a round; "whole", every
        worker holds all rows (one copy a host) and runs whole problems; "newton"
        (squared hinge, logistic and squared epsilon-insensitive losses,
        ``selection="auto"``), the primal Newton solver on the client with its sums
        over the partitions (``n_steps_``: the Hessian-vector products).  "auto"
        chooses per fit (``method_``): "whole" for rows of at most 64 MiB, else
        "newton" where one machine's ``selection="auto"`` runs the primal Newton solver
        (a smooth classification loss, at least 100 rows per column in use), else
        "ring".  With ``selection`` set to a dual CD strategy (not "auto"), "auto" on
        rows above 64 MiB is always "ring", whatever the loss.
    client : distributed.Client or None, default=None
        The cluster to train on; the current client when None.
    n_partitions : int or None, default=None
        Row partitions (never dependent on the number of workers): the row chunks of a
        Dask array, one per LIBSVM shard, 4 for numpy or scipy input.
    local_sweeps : int, default=1
        The ring only: sweeps of the local solver per visit.
    laps : int or "auto", default="auto"
        The ring only: each round goes round the partitions ``laps`` times, and a visit
        runs its partition's next share of one sweep (with ``local_sweeps=1``).  More
        laps, fewer rounds and more hops between workers per round; "auto" starts at 64
        visits a round, at least one lap per partition, finer for visits of more than
        32768 non-zeros, unless the weights moved would exceed the bytes a sweep reads,
        and doubles the laps when the checks stall (``laps_``: the last round's; the
        rule: docs/architecture.md, "The Dask cluster").
    checkpoint_every : int, default=10
        Rounds between checkpoints of the partitions' duals (0: only the start).  A lost
        worker costs at most this many rounds, replayed to the same bits.
    engine : {"dask", "threads"}, default="dask"
        "threads" runs the same algorithm in this process (same bits as "dask").
    timeout : float, default=600
        Seconds the fit may go without any of its tasks (a worker's share of a round)
        finishing before it gives up with ``pybudget.dask.ClusterError``.
    rules : pybudget.dask.ClusterRules or None, default=None
        The measured thresholds the fit decides by (which rows are small enough for one
        worker or for method "whole", the ring's laps, threads per visit, ...);
        None: ``ClusterRules()``, the defaults measured on 2-core machines (its
        docstring says what each decides and what set it).

    Attributes
    ----------
    As the one-machine estimator's (``n_iter_``: the method's count, ``n_rounds_``),
    and for each problem ``duality_gap_`` (relative) and ``primal_objective_``;
    ``bytes_sent_`` ({"client", "workers"}: bytes of arrays through the client and
    between workers), ``method_``, ``laps_``, ``n_partitions_``, ``n_checks_``,
    ``recoveries_``, ``rounds_log_``, ``worker_peak_memory_`` (MiB, by worker
    address, at the end of fit) and ``partition_workers_`` (the worker each partition
    lived on at the end of fit, in partition order; None with ``engine="threads"``).
"""

class _ClusterClassifier(_ClusterEstimator):
    """decision_function (classifiers only, as on one machine)."""

    def decision_function(self, X):
        check_is_fitted(self, "coef_")
        k = self.coef_.shape[0]
        return self._blockwise(X, "decision_function", None if k == 1 else k)


class LinearSVC(_ClusterClassifier, LocalLinearSVC):
    __doc__ = """:class:`pybudget.LinearSVC` (hinge or squared hinge, one-vs-rest)
    trained on a Dask cluster.
    """ + _CLUSTER_DOC

    _local_class = LocalLinearSVC
    _loss_choices = LOSSES

    def __init__(self, C=1.0, *, loss="hinge", multi_class="ovr", selection="auto", tol=0.1,
                 max_iter=1000, fit_intercept=True, intercept_scaling=1.0,
                 class_weight=None, warm_start=False, random_state=None, n_jobs=None,
                 verbose=0, method="auto", client=None, n_partitions=None,
                 local_sweeps=1, laps="auto", checkpoint_every=10, engine="dask",
                 timeout=600.0, rules=None):
        super().__init__(C, loss=loss, multi_class=multi_class, selection=selection,
                         tol=tol, max_iter=max_iter, fit_intercept=fit_intercept,
                         intercept_scaling=intercept_scaling, class_weight=class_weight,
                         warm_start=warm_start, random_state=random_state, n_jobs=n_jobs,
                         verbose=verbose)
        self._set_cluster_params(method, client, n_partitions, local_sweeps, laps,
                                 checkpoint_every, engine, timeout, rules)

    def fit(self, X, y=None, sample_weight=None):
        return self._fit(X, y, sample_weight)


class LogisticRegression(_ClusterClassifier, LocalLogisticRegression):
    __doc__ = """:class:`pybudget.LogisticRegression` (one-vs-rest) trained on a Dask
    cluster.
    """ + _CLUSTER_DOC

    _local_class = LocalLogisticRegression
    _loss_choices = ("logistic",)
    loss = "logistic"

    def __init__(self, C=1.0, *, selection="auto", tol=0.1, max_iter=1000,
                 fit_intercept=True, intercept_scaling=1.0, class_weight=None,
                 random_state=None, warm_start=False, n_jobs=None, verbose=0, method="auto",
                 client=None, n_partitions=None, local_sweeps=1, laps="auto",
                 checkpoint_every=10, engine="dask", timeout=600.0, rules=None):
        super().__init__(C, selection=selection, tol=tol, max_iter=max_iter,
                         fit_intercept=fit_intercept, intercept_scaling=intercept_scaling,
                         class_weight=class_weight, random_state=random_state,
                         warm_start=warm_start, n_jobs=n_jobs, verbose=verbose)
        self._set_cluster_params(method, client, n_partitions, local_sweeps, laps,
                                 checkpoint_every, engine, timeout, rules)

    def fit(self, X, y=None, sample_weight=None):
        self._fit(X, y, sample_weight)
        # (an array of shape (1,), as one machine's and scikit-learn's liblinear path)
        self.n_iter_ = np.array([self.n_iter_], dtype=np.int32)
        return self

    def predict_proba(self, X):
        check_is_fitted(self, "coef_")
        return self._blockwise(X, "predict_proba", self.classes_.shape[0])


class LinearSVR(_ClusterEstimator, LocalLinearSVR):
    __doc__ = """:class:`pybudget.LinearSVR` trained on a Dask cluster; ``coef_`` has shape
    (n_features,), as on one machine.
    """ + _CLUSTER_DOC

    _local_class = LocalLinearSVR
    _regression = True
    _loss_choices = REGRESSION_LOSSES

    def __init__(self, C=1.0, *, epsilon=0.0, loss="epsilon_insensitive", selection="auto",
                 tol=0.1, tol_rule="max", max_iter=1000, fit_intercept=True,
                 intercept_scaling=1.0, random_state=None, warm_start=False, n_jobs=None,
                 verbose=0, method="auto", client=None, n_partitions=None,
                 local_sweeps=1, laps="auto", checkpoint_every=10, engine="dask",
                 timeout=600.0, rules=None):
        super().__init__(C, epsilon=epsilon, loss=loss, selection=selection, tol=tol,
                         tol_rule=tol_rule, max_iter=max_iter, fit_intercept=fit_intercept,
                         intercept_scaling=intercept_scaling, random_state=random_state,
                         warm_start=warm_start, n_jobs=n_jobs, verbose=verbose)
        self._set_cluster_params(method, client, n_partitions, local_sweeps, laps,
                                 checkpoint_every, engine, timeout, rules)

    def fit(self, X, y=None, sample_weight=None):
        return self._fit(X, y, sample_weight)

    def _set_result(self, res, bias, d, classes, spec, n_parts, elapsed):
        super()._set_result(res, bias, d, classes, spec, n_parts, elapsed)
        self.coef_ = self.coef_[0]
        for name in ("dual_objective_", "primal_objective_", "kkt_violation_",
                     "duality_gap_"):
            setattr(self, name, float(getattr(self, name)[0]))
        self.converged_ = bool(self.converged_[0])

    def _copy_solution(self, local):
        local.coef_ = self.coef_.copy()
        local.intercept_ = self.intercept_.copy()
        for name in ("dual_objective_", "primal_objective_", "kkt_violation_",
                     "converged_"):
            setattr(local, name, getattr(self, name))
