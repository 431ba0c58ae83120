"""The ring's laps, in one place: how many a round starts with (``first``, decided by
the estimator from the built partitions) and when the driver doubles them
(``grown``).  Both from the data and the checks alone, never from the cluster: the same
bits on any number of workers.  (What a lap is: a round goes round the partitions
``laps`` times, each visit a share of one sweep; docs/algorithms.md#the-ring.  The rule
in full: docs/architecture.md#the-dask-cluster.)
"""
from pybudget.dask._sources import rows_bytes


def first(laps, method, sweeps, summ, n_problems, d, movable, rules):
    """(laps of the ring's first round, the most they may grow to) for the estimator's
    ``laps`` ("auto" or a count), the partitions' summaries ``summ`` and the
    ``_plan.ClusterRules`` (min_segments, min_visit_rows, min_visit_nnz, small_bytes).

    "auto" (with one local sweep): enough laps for at least min_segments visits a
    round, at least one per partition, and more while a visit of the smallest partition
    covers at least min_visit_nnz non-zeros (a visit's calls, about 40 us, are then a
    small share of its work), at most one per min_visit_rows rows of the smallest
    partition, or one per min_visit_nnz non-zeros where that allows more (a visit of
    long rows is mostly work however few they are); unless the rows are small
    (``_sources.rows_bytes`` at most small_bytes) and ``movable`` (the engine then
    places them on one worker: not the rows of a one-vs-rest fit on a Dask array,
    which stay where its chunks are), only as long as the weights moved in a round (a
    hop per visit at most) stay within the bytes a sweep reads (12 per non-zero).  The
    most: the same cap.

    A ring whose partitions sweep all their rows in one visit needs several times the
    rounds one machine needs sweeps, shuffled rows or not, and the finer the visits the
    closer it gets (measured on a 2-core machine: ijcnn1 in its file's order, hinge,
    C = 1, 2 partitions, 2/4/8/16 laps: 155/95/70/51 rounds against one machine's 35-49
    sweeps; debian-lib, C = 10, 2 partitions, 32 and 64 visits a round: 140 and 100
    rounds against 56-65); with a bias feature the block order can stall altogether
    (bench/ring_order.py; docs/benchmarks.md, section 10, "The ring: why a bias needs
    laps")."""
    if method != "ring" or sweeps > 1:
        return 1, 1
    if laps != "auto":
        return int(laps), int(laps)
    K = len(summ)
    # a visit of a few rows costs more in calls than it computes; one of many
    # non-zeros does not (finer visits, fewer rounds)
    big = min(s.nnz for s in summ if s.n) // rules.min_visit_nnz
    # (rows of more than min_visit_nnz / min_visit_rows = 128 non-zeros: the rows' cap
    # alone left 8 partitions of 500 rows of 1,000 non-zeros at one lap, 8.68 times one
    # machine's sweeps; docs/benchmarks.md, section 10, long-rows at K = 8)
    most = max(1, min(s.n for s in summ if s.n) // rules.min_visit_rows, big)
    # (min_segments visits a round: K partitions need ceil(min_segments / K) laps;
    # at least one lap, so every partition is visited)
    want = min(max(1, -(-rules.min_segments // K), big), most)
    nnz = sum(s.nnz for s in summ)
    if movable and rows_bytes(sum(s.n for s in summ), nnz) <= rules.small_bytes:
        return want, most
    group = -(-n_problems // min(n_problems, K))       # problems travelling together
    fits = (12 * nnz) // (K * 8 * (d + 1) * group)
    return int(max(1, min(want, fits))), most


def grown(laps, max_laps, t, ahead, stall_rounds):
    """The laps after a check at round t whose KKT violations predict ``ahead`` more
    rounds to tol (the largest over the problems): doubled, up to max_laps, when from round
    ``stall_rounds`` (``ClusterRules``) on that is more than twice the rounds run.  The
    ring's block order stalls so with a bias feature (its constant column couples every
    dual variable; bench/ring_order.py), and finer laps restore the progress."""
    if t >= stall_rounds and ahead > 2 * t and laps < max_laps:
        return min(2 * laps, max_laps)
    return laps
