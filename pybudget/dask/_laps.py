"""The ring's laps, in one place: how many a round starts with (``first``, decided by
the estimator from the built partitions) and when the driver doubles them
(``grown``).  Both from the data and the gaps alone, never from the cluster: the same
bits on any number of workers.  (What a lap is: a round goes round the partitions
``laps`` times, each visit a share of one sweep; docs/algorithms.md#the-ring.  The rule
in full: docs/architecture.md#the-dask-cluster.)
"""
from pybudget.dask._sources import SMALL_BYTES, rows_bytes

MIN_SEGMENTS = 64       # visits of a ring round that "auto" laps aim for
MIN_VISIT_ROWS = 256    # rows per visit of the smallest partition, at least (or:)
MIN_VISIT_NNZ = 32768   # non-zeros per visit above which "auto" makes the laps finer
STALL_ROUNDS = 10       # rounds before the laps may grow (``grown``)


def first(laps, method, sweeps, summ, n_problems, d, movable):
    """(laps of the ring's first round, the most they may grow to) for the estimator's
    ``laps`` ("auto" or a count) and the partitions' summaries ``summ``.

    "auto" (with one local sweep): enough laps for at least MIN_SEGMENTS visits a
    round, at least one per partition, and more while a visit of the smallest partition
    covers at least MIN_VISIT_NNZ non-zeros (a visit's calls, about 40 us, are then a
    small share of its work), at most one per MIN_VISIT_ROWS rows of the smallest
    partition, or one per MIN_VISIT_NNZ non-zeros where that allows more (a visit of
    long rows is mostly work however few they are); unless the rows are small
    (``_sources.rows_bytes`` at most SMALL_BYTES) and ``movable`` (the engine then
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
    big = min(s["nnz"] for s in summ if s["n"]) // MIN_VISIT_NNZ
    # (rows of more than MIN_VISIT_NNZ / MIN_VISIT_ROWS = 128 non-zeros: the rows' cap
    # alone left 8 partitions of 500 rows of 1,000 non-zeros at one lap, 8.68 times one
    # machine's sweeps; docs/benchmarks.md, section 10, long-rows at K = 8)
    most = max(1, min(s["n"] for s in summ if s["n"]) // MIN_VISIT_ROWS, big)
    # (MIN_SEGMENTS visits a round: K partitions need ceil(MIN_SEGMENTS / K) laps;
    # at least one lap, so every partition is visited)
    want = min(max(1, -(-MIN_SEGMENTS // K), big), most)
    nnz = sum(s["nnz"] for s in summ)
    if movable and rows_bytes(sum(s["n"] for s in summ), nnz) <= SMALL_BYTES:
        return want, most
    group = -(-n_problems // min(n_problems, K))       # problems travelling together
    fits = (12 * nnz) // (K * 8 * (d + 1) * group)
    return int(max(1, min(want, fits))), most


def grown(laps, max_laps, t, ahead):
    """The laps after a check at round t whose gaps predict ``ahead`` more rounds to tol
    (the largest over the problems): doubled, up to max_laps, when from round
    STALL_ROUNDS on that is more than twice the rounds run.  The ring's block order
    stalls so with a bias feature (its constant column couples every dual variable;
    bench/ring_order.py), and finer laps restore the progress."""
    if t >= STALL_ROUNDS and ahead > 2 * t and laps < max_laps:
        return min(2 * laps, max_laps)
    return laps
