"""What a distributed fit is told: the cluster's measured rules (``ClusterRules``) and
the problem with the decisions made from them at fit (``FitSpec``).

Every threshold a fit decides by is a field of ``ClusterRules``, set once at fit and
passed down as an argument (to the engine, and inside the FitSpec to every partition on
the workers): nothing below the estimator reads a module constant to decide.  The
defaults were measured on 2-core machines; the comment of each says what it is for
and what set it.  Tests and users pass their own rules (``rules=`` of the
estimators) instead of changing the defaults.
"""
from dataclasses import dataclass, field, replace

import numpy as np

MIB = 2**20


@dataclass(frozen=True)
class ClusterRules:
    """The measured rules of a distributed fit (see the module docstring).

    Placement and method
        small_bytes: rows of at most this many bytes (12 a non-zero, 4 a row) are small:
            the engine places every partition on one worker (a ring round is then one
            task; spreading it adds a 6-9 ms hop per worker and lap and saves nothing,
            the visits running one at a time), and the ring's laps are not limited by the
            bytes they move.  Also capped at a tenth of a worker's memory limit.
        whole_bytes: ``method="auto"`` trains rows of at most this many bytes by
            "whole" (each worker that runs a problem holds them all, one copy a host).
            The same 64 MiB: rows small enough for one worker are small enough for each
            (debian-sections20 ran whole at 1.12-1.27x the one-machine ``n_jobs=2``
            time: docs/benchmarks.md, section 10; the bound itself was not measured
            apart).
    The ring's laps ("auto": docs/architecture.md, "The Dask cluster")
        min_segments: visits a round aims for; min_visit_rows: rows per visit of the
            smallest partition, at least; min_visit_nnz: non-zeros per visit above which
            the laps get finer.  ijcnn1 (hinge, C = 1, 2 partitions) at 2/4/8/16 laps
            took 155/95/70/51 rounds against one machine's 35-49 sweeps.
        stall_rounds: rounds before the laps may double (when the checks predict more
            than twice the rounds run: the block order stalls with a bias feature).
        sparse_laps: the ring sends the changes of the weights (sparse hops) from this
            many laps a round on, where its partitions span workers: a visit of a whole
            partition changes much of the weights, and finding which costs more than
            sending them (``math.inf``: never).
        sparse_give_up: the ring's sparse hops stop when, at a check, they have taken
            this share of the bytes of the weights they replaced.
    Budgeted SVMs (``pybudget.dask.BudgetSVC``, laps="auto")
        budget_visits: visits an epoch aims for (laps = budget_visits / partitions);
        budget_visit_rows: rows a visit of the smallest partition has, at least.  Test
            accuracy, means of 12 seeds, 4 contiguous chunks as the files store the
            rows, against one machine's: w8a (positives all in the first chunk) at 1,
            4, 16, 64 and 256 laps 97.50, 97.73, 98.26, 98.52 and 98.67 % against 98.72;
            ijcnn1 95.15 ... 96.89 against 96.97; a9a 83.84 ... 83.98 against 84.10.
            Set there; on data that played no part (30 seeds for the small sets):
            svmguide1 96.01 against 96.04 (one lap: 92.40), mushrooms 99.99 / 100.00,
            dna.scale 93.68 / 93.75, pendigits 97.42 / 97.39, splice 87.67 / 87.83,
            german.numer 66.64 / 66.92 (one lap: 66.65).  A floor of 32 rows a visit
            left svmguide1 at 95.83 and splice at 87.49: docs/benchmarks.md, section 16.
    Threads on the workers
        visit_thread_nnz: a visit spreads its problems over threads only where each
            thread sweeps at least this many non-zeros (the visit's problems times its
            share of the partition): a pool costs about 70 us to start, about 50,000
            non-zeros of sweeping on debian-lib, and each problem's visit holds the GIL
            for its Python part.  debian-sections20's ring (a visit sweeps half a
            partition a problem) ran 1.13x faster on a worker's second thread
            (docs/benchmarks.md, section 11; 1.32x when a visit swept a whole
            partition); a synthetic 20-class set (150,000 x
            5,000, 30 non-zeros a row) whose laps grew to 292, about 7,700 non-zeros a
            problem and visit, 1.08x.
    """
    small_bytes: int = 64 * MIB
    whole_bytes: int = 64 * MIB
    min_segments: int = 64
    min_visit_rows: int = 256
    min_visit_nnz: int = 32768
    stall_rounds: int = 10
    sparse_laps: float = 2
    sparse_give_up: float = 0.5
    visit_thread_nnz: int = 100_000
    budget_visits: int = 1024
    budget_visit_rows: int = 8

    def small(self, size, memory_limit=0):
        """Whether rows of ``size`` bytes (None: unknown) are small on workers with
        this memory limit (0: none)."""
        return size is not None and size <= min(self.small_bytes,
                                                memory_limit / 10 or np.inf)

    def visit_threads(self, threads, n_problems, nnz):
        """The threads a visit of ``n_problems`` problems, each sweeping ``nnz``
        non-zeros, runs on: at most ``threads``, one a problem, visit_thread_nnz each."""
        return max(1, min(threads, n_problems,
                          int(n_problems * nnz // self.visit_thread_nnz)))


@dataclass(frozen=True)
class FitSpec:
    """One distributed fit's problem, as every partition and the client see it: the
    loss, the partitions' count, the bias value, the features d, C, the seed, the rows
    in all, epsilon (regression), the classes, their weights and the positive class of
    each binary problem (classification), the dual CD selection decided at fit, the
    unit of ``tol`` (``kkt_unit``: 1 for classification, one machine's
    ``linear.problem.regression_tol_scale`` for regression), regression's ``tol_rule``
    and the rules.  It pickles to the workers with each setup."""
    loss: str
    n_parts: int
    bias: float
    d: int
    C: float
    seed: int
    n_rows: int
    epsilon: float = 0.0
    regression: bool = False
    classes: np.ndarray = None
    class_weight: np.ndarray = None
    positive: tuple = None
    selection: str = "auto"
    kkt_unit: float = 1.0
    tol_rule: str = "max"
    rules: ClusterRules = field(default_factory=ClusterRules)

    @property
    def n_problems(self):
        return 1 if self.positive is None else len(self.positive)

    def with_selection(self, selection):
        return replace(self, selection=selection)
