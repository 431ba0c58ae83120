"""Where a partition's rows come from, and building a Partition from them.

A source is a small tuple the client can keep and send again after a loss:
("arrays", X, y, sw) for in-memory blocks, ("pieces", Xs, ys, sws) for pieces of
Dask chunks (futures the scheduler can recompute from their lineage), ("svmlight",
path) for a LIBSVM shard that a worker reads itself.  Partition p of P covers the rows
[p n / P, (p + 1) n / P) of the data, whatever the number of workers.
"""
import glob
import os

import numpy as np
import scipy.sparse as sp

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


def row_bounds(n, n_parts):
    """Start row of each of n_parts contiguous partitions of n rows, and n."""
    return [p * n // n_parts for p in range(n_parts + 1)]


def memory_sources(X, y, sw, n_parts):
    """Sources of in-memory data split into n_parts row blocks."""
    b = row_bounds(X.shape[0], n_parts)
    return [("arrays", X[b[p]:b[p + 1]], y[b[p]:b[p + 1]],
             None if sw is None else sw[b[p]:b[p + 1]], X.shape[1]) for p in range(n_parts)]


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


def build_partition(part, source, regression, where):
    """The Partition of a source, checked; ValueErrors name ``where``."""
    kind = source[0]
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
