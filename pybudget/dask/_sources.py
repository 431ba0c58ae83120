"""Where a partition's rows come from, and building a Partition from them.

A source is a small tuple the client can keep and send again after a loss:
("arrays", X, y, sw) for in-memory blocks, ("pieces", Xs, ys, sws) for pieces of
Dask chunks (futures the scheduler can recompute from their lineage), ("svmlight",
path) for a LIBSVM shard that a worker reads itself, ("generated", spec, p) for the
rows of a generated problem that a worker builds itself (``make_classification``).
Partition p of P covers the rows [p n / P, (p + 1) n / P) of the data, whatever the
number of workers.
"""
import glob
import os

import numpy as np
import scipy.sparse as sp

from pybudget._core import _validation as V
from pybudget._svmlight import open_binary, parse
from pybudget.dask._partition import Partition, check_block


class SvmlightShards:
    """LIBSVM shards to be parsed on the workers (see :func:`read_svmlight`)."""

    def __init__(self, paths, n_features=None, zero_based=False):
        self.paths = list(paths)
        self.n_features = n_features
        self.zero_based = zero_based

    def __repr__(self):
        return f"SvmlightShards({len(self.paths)} files)"


def read_svmlight(paths_or_glob, n_features=None, zero_based=False):
    """LIBSVM shards (plain, .gz, .bz2, .xz) for ``fit``: one partition per file, parsed
    on a worker, so the rows never pass through the client.  The workers must see the
    same paths (a shared file system).

    Parameters
    ----------
    paths_or_glob : str, os.PathLike or list of them
        Files, or a glob pattern such as ``"data/part-*.svm.bz2"`` (sorted by name).
    n_features : int, optional
        Number of columns; the widest shard's when None.
    zero_based : bool, default=False
        Whether the files' feature indices start at 0 (LIBSVM's start at 1).

    Returns
    -------
    SvmlightShards
    """
    if isinstance(paths_or_glob, (str, os.PathLike)):
        pattern = os.fspath(paths_or_glob)
        paths = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
    else:
        paths = [os.fspath(p) for p in paths_or_glob]
    if not paths:
        raise ValueError(f"no files match {paths_or_glob!r}")
    for p in paths:
        if not os.path.isfile(p):
            raise FileNotFoundError(f"no data file at {p!r}")
    if n_features is not None and (not isinstance(n_features, (int, np.integer))
                                   or n_features < 1):
        raise ValueError(f"n_features must be a positive int or None, got {n_features!r}")
    return SvmlightShards([os.path.abspath(p) for p in paths], n_features, zero_based)


class GeneratedShards:
    """A sparse linear classification problem built on the workers, partition by
    partition (see :func:`make_classification`)."""

    def __init__(self, n_samples, n_features, nnz_per_row, n_partitions, noise, seed):
        self.n_samples, self.n_features = n_samples, n_features
        self.nnz_per_row, self.n_partitions = nnz_per_row, n_partitions
        self.noise, self.seed = noise, seed

    @property
    def nbytes(self):
        """Bytes of the CSR rows once built (values, indices, row pointers)."""
        return self.n_samples * (self.nnz_per_row * 12 + 4) + 4 * self.n_partitions

    def sources(self):
        return [("generated", self, p) for p in range(self.n_partitions)]

    def __repr__(self):
        return (f"GeneratedShards({self.n_samples} x {self.n_features}, "
                f"{self.nnz_per_row} per row, {self.n_partitions} partitions)")


def make_classification(n_samples, n_features, *, nnz_per_row=20, n_partitions=4,
                        noise=0.1, random_state=0):
    """A sparse binary classification problem whose rows are built on the workers: the
    data never exist in one process.  ``fit`` it like LIBSVM shards.

    Row i has ``nnz_per_row`` entries, one in each of as many equal bands of the
    columns (at a random column of its band), with standard normal values scaled by
    1 / sqrt(nnz_per_row); its label is the sign of x_i . w* + noise * N(0, 1) for a
    fixed standard normal w*.  Partition p holds rows [p n / P, (p + 1) n / P), built
    from (random_state, p) alone: the same rows on any worker, after a loss too.

    Returns
    -------
    GeneratedShards
    """
    for name, v, lo in (("n_samples", n_samples, 1), ("n_features", n_features, 1),
                        ("nnz_per_row", nnz_per_row, 1), ("n_partitions", n_partitions, 1)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
            raise ValueError(f"{name} must be an int >= {lo}, got {v!r}")
    if nnz_per_row > n_features:
        raise ValueError(f"nnz_per_row={nnz_per_row} exceeds n_features={n_features}")
    if n_features >= 2**31:
        raise ValueError("n_features must be below 2**31 (int32 column indices)")
    if not (isinstance(noise, (int, float)) and np.isfinite(noise) and noise >= 0):
        raise ValueError(f"noise must be a finite number >= 0, got {noise!r}")
    if not isinstance(random_state, (int, np.integer)) or random_state < 0:
        raise ValueError(f"random_state must be an int >= 0, got {random_state!r}")
    return GeneratedShards(int(n_samples), int(n_features), int(nnz_per_row),
                           int(n_partitions), float(noise), int(random_state))


GENERATE_BLOCK = 65536      # rows generated at a time (bounds the temporaries)


def generate_rows(g, p):
    """Partition p of GeneratedShards g: (CSR X, labels), built in blocks of rows into
    arrays allocated once."""
    b = row_bounds(g.n_samples, g.n_partitions)
    n, k, d = b[p + 1] - b[p], g.nnz_per_row, g.n_features
    w_star = np.random.default_rng([g.seed, 2**32]).standard_normal(d)
    rng = np.random.default_rng([g.seed, p])
    edges = (np.arange(k + 1) * d) // k          # k bands of the columns
    indices = np.empty(n * k, dtype=np.int32)
    data = np.empty(n * k)
    y = np.empty(n)
    for lo in range(0, n, GENERATE_BLOCK):
        m = min(GENERATE_BLOCK, n - lo)
        cols = edges[:-1] + (rng.random((m, k)) * np.diff(edges)).astype(np.int64)
        vals = rng.standard_normal((m, k)) / np.sqrt(k)
        score = np.einsum("ij,ij->i", vals, w_star[cols])
        y[lo:lo + m] = np.where(score + g.noise * rng.standard_normal(m) >= 0, 1.0, -1.0)
        indices[lo * k:(lo + m) * k] = cols.ravel()
        data[lo * k:(lo + m) * k] = vals.ravel()
    indptr = np.arange(0, n * k + 1, k, dtype=np.int32 if n * k < 2**31 else np.int64)
    return sp.csr_matrix((data, indices, indptr), shape=(n, d)), y


def row_bounds(n, n_parts):
    """Start row of each of n_parts contiguous partitions of n rows, and n."""
    return [p * n // n_parts for p in range(n_parts + 1)]


def memory_sources(X, y, sw, n_parts, dealt=True):
    """(sources, names) of in-memory data in n_parts partitions: ``dealt``, rows
    p::n_parts to partition p (files are often ordered, by class or by source, and a
    ring over contiguous blocks of ordered rows needs several times the rounds of one
    over rows that look alike: on a 2-core machine, debian-lib, C = 1, 2 partitions,
    one lap a round, 168 and 160 rounds in the file's order against 37 and 20 with the
    rows shuffled, uniform and AVSF); else contiguous blocks (method
    "whole", which runs every problem on all rows in their own order: the blocks only
    need stacking)."""
    if dealt:
        cuts = [slice(p, None, n_parts) for p in range(n_parts)]
        names = [f"partition {p} (rows {p}::{n_parts})" for p in range(n_parts)]
    else:
        b = row_bounds(X.shape[0], n_parts)
        cuts = [slice(b[p], b[p + 1]) for p in range(n_parts)]
        names = [f"partition {p} (rows {b[p]}-{b[p + 1] - 1})" for p in range(n_parts)]
    return ([("arrays", X[c], y[c], None if sw is None else sw[c], X.shape[1])
             for c in cuts], names)


def dask_pieces(arr, n_parts, n):
    """Per partition, the Dask delayed pieces of arr (a Dask array chunked by rows) that
    cover its rows: whole chunks as they are, partly covered ones sliced."""
    import dask

    chunks = arr.to_delayed().ravel()
    starts = np.concatenate([[0], np.cumsum(arr.chunks[0])])
    b = row_bounds(n, n_parts)
    out = []
    for p in range(n_parts):
        lo, hi = b[p], b[p + 1]
        pieces = []
        for c, blk in enumerate(chunks):
            s, e = max(lo, starts[c]), min(hi, starts[c + 1])
            if s >= e:
                continue
            if s == starts[c] and e == starts[c + 1]:
                pieces.append(blk)
            else:
                pieces.append(dask.delayed(_rows)(blk, s - starts[c], e - starts[c]))
        out.append(pieces)
    return out


def _rows(block, a, b):
    return block[a:b]


def _stack(blocks):
    if len(blocks) == 1:
        return blocks[0]
    if any(sp.issparse(b) for b in blocks):
        return sp.vstack([sp.csr_matrix(b) for b in blocks], format="csr")
    return np.concatenate([np.asarray(b) for b in blocks])


# CSR bytes (rows_bytes) per byte of a LIBSVM file, before it is read: a first guess
# only.  Measured on the bz2 files of the benchmark data (their rows, nnz and bytes):
# 2.2-2.3 for the debian text sets, 3.4 svmguide1, 5.7 ijcnn1, 13 pendigits, 23 w8a,
# 32 dna, 42 splice, 47 german.numer, 55 a9a, 130 mushrooms; no constant fits, so the
# engine decides the placement again from the rows once they are built (_dask_engine).
TEXT_RATIO, COMPRESSED_RATIO = 2, 50
COMPRESSED = (".bz2", ".gz", ".xz")


def source_bytes(source):
    """About what a source's rows take on a worker (a file's size for a LIBSVM shard);
    None when unknown (Dask array chunks, which stay where they are)."""
    kind = source[0]
    if kind == "generated":
        return source[1].nbytes // source[1].n_partitions
    if kind == "svmlight":
        size = os.path.getsize(source[1])
        return size * (COMPRESSED_RATIO if source[1].endswith(COMPRESSED) else TEXT_RATIO)
    if kind == "arrays":
        return V.matrix_bytes(source[1])
    return None


def rows_bytes(n, nnz):
    """What n CSR rows with nnz non-zeros take: 12 bytes a non-zero (value, index) and
    4 a row (its pointer)."""
    return 12 * nnz + 4 * n


def data_bytes(sources):
    """About what the sources' rows take (source_bytes summed); None when unknown."""
    sizes = [source_bytes(s) for s in sources]
    return None if None in sizes else sum(sizes)


def build_partition(part, source, regression, where):
    """The Partition of a source, checked; ValueErrors name ``where``."""
    kind = source[0]
    if kind == "generated":
        X, y = generate_rows(source[1], source[2])
        return Partition(X, y, None, part)
    if kind == "svmlight":
        path, n_features, zero_based = source[1:]
        with open_binary(path) as f:
            X, y = parse(f, n_features, zero_based, np.float64, repr(path))
        X, y, sw = check_block(X, y, where, regression=regression)
    else:
        Xs, ys, sws, d = source[1:]
        if kind == "pieces" and not Xs:
            Xs, ys, sws = sp.csr_matrix((0, d)), np.zeros(0), None
        elif kind == "pieces":
            for i, blk in enumerate(Xs):
                if blk.ndim != 2:
                    raise ValueError(f"{where}, piece {i}: X blocks must be 2-d")
            widths = {blk.shape[1] for blk in Xs}
            if len(widths) > 1:
                raise ValueError(f"{where}: chunks with different column counts "
                                 f"{sorted(widths)}")
            Xs, ys = _stack(Xs), np.concatenate([np.asarray(v).ravel() for v in ys])
            sws = None if sws is None else np.concatenate([np.asarray(v).ravel()
                                                           for v in sws])
        X, y, sw = check_block(Xs, ys, where, d=d, regression=regression,
                               sample_weight=sws)
    return Partition(X, y, sw, part)
