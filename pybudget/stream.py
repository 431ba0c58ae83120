"""Training on LIBSVM files larger than memory: ``stream_fit``.

The file is read ``chunk_size`` lines at a time (plain, .gz, .bz2 or .xz, decompressed on
the fly); each chunk is parsed by scikit-learn's svmlight parser into a CSR matrix and
handed to ``estimator.partial_fit``.  Memory is bounded by one chunk (its text and its
CSR matrix) plus the model, whatever the file size.

What must be known before the first ``partial_fit`` call, and where it comes from:

- ``n_features`` (the width of every chunk) and ``classes`` (``partial_fit`` needs them
  all on the first call): pass both to skip it, otherwise a first pass over the file
  (parsing only, same bounded memory) finds the largest feature index and the labels.
- ``gamma="scale"`` of a BudgetSVC: when that first pass runs it also sums the values
  and their squares, so ``gamma_`` is the whole-file value that ``fit`` would use; when
  the pass is skipped, ``partial_fit`` takes the scale of the first chunk.

Feature indices are 1-based as in LIBSVM files (``zero_based=True`` for 0-based files;
no per-chunk guessing).  Rows are visited in file order between chunks and in a fresh
random order within each chunk: shuffle a file sorted by label before streaming it.

A BudgetSVC's offset (``offset=True``, the default) is refitted at the end of every
``partial_fit`` call on a reservoir sample of up to 2048 of all rows streamed so far
(uniform over the file read up to there), so it never rests on the last chunk alone and
memory stays bounded.
"""
import io
import lzma
import os
import time

import numpy as np

from pybudget._core import _validation as V
from pybudget._core._progress import report
from pybudget._svmlight import open_binary, parse, value_dtype
from pybudget.budget.svm import gamma_from_moments


class _Progress:
    """Fraction of the (compressed) file consumed, from the raw file position."""

    def __init__(self, path):
        self.size = max(os.path.getsize(path), 1)
        self.raw = None

    def attach(self, f):
        raw = f
        for attr in ("fileobj", "_fp", "_fileobj"):   # gzip / bz2 / lzma keep the raw file
            inner = getattr(raw, attr, None)
            if inner is not None and hasattr(inner, "tell"):
                raw = inner
                break
        self.raw = raw

    def fraction(self):
        try:
            return min(self.raw.tell() / self.size, 1.0)
        except (OSError, ValueError, AttributeError):
            return float("nan")


def iter_svmlight_chunks(path, chunk_size=10000, n_features=None, *, zero_based=False,
                         dtype=np.float64, progress=None):
    """Read a LIBSVM/svmlight file in chunks of ``chunk_size`` lines.

    Comment and empty lines are skipped (they do not count towards ``chunk_size``).

    Parameters
    ----------
    path : str or os.PathLike
        The file: plain, .gz, .bz2 or .xz.
    chunk_size : int, default=10000
        Data lines per chunk.
    n_features : int, optional
        Number of columns of every chunk; when None, each chunk is as wide as its
        largest index.
    zero_based : bool, default=False
        Whether feature indices start at 0 (LIBSVM files are 1-based).
    dtype : {numpy.float64, numpy.float32}, default=numpy.float64
        Value type of ``X`` (float32 is parsed straight into float32).
    progress : object, optional
        Internal progress tracker (used by :func:`stream_fit`).

    Yields
    ------
    X : scipy.sparse.csr_matrix
        The chunk's rows.
    y : ndarray of float64
        The chunk's labels.

    Raises
    ------
    ValueError
        When the file cannot be parsed, or a compressed stream is corrupt or truncated
        (naming the file and, for parse errors, the line).
    """
    chunk_size = V.positive_int("chunk_size", chunk_size)
    zero_based = V.boolean("zero_based", zero_based)
    dtype = value_dtype(dtype)
    with open_binary(path) as f:
        if progress is not None:
            progress.attach(f)
        lines, rows, first = [], 0, 1
        for lineno, line in enumerate(_lines(f, path), 1):
            lines.append(line)
            s = line.strip()
            rows += bool(s) and not s.startswith(b"#")
            if rows == chunk_size:
                yield _parse(lines, n_features, zero_based, dtype, path, first)
                lines, rows, first = [], 0, lineno + 1
        if rows:
            yield _parse(lines, n_features, zero_based, dtype, path, first)


def _lines(f, path):
    """The lines of an open (possibly compressed) file; a corrupt or truncated
    compressed stream raises ValueError naming the file."""
    try:
        yield from f
    except (EOFError, lzma.LZMAError, OSError) as e:
        raise ValueError(f"{os.fspath(path)}: cannot read the file: {e}") from e


def _parse(lines, n_features, zero_based, dtype, path, first):
    """A chunk's lines (comments and blank lines kept, so that errors give the line
    numbers of the file: its first line is line ``first``)."""
    text = b"".join(line if line.endswith(b"\n") else line + b"\n" for line in lines)
    return parse(io.BytesIO(text), n_features, zero_based, dtype, repr(os.fspath(path)),
                 first_line=first)


def scan_svmlight(path, chunk_size=10000, *, zero_based=False, dtype=np.float64):
    """Summarise a LIBSVM file in one bounded-memory pass.

    Parameters
    ----------
    path : str or os.PathLike
        The file (plain, .gz, .bz2 or .xz).
    chunk_size : int, default=10000
        Lines parsed at a time.
    zero_based : bool, default=False
        Whether feature indices start at 0.
    dtype : {numpy.float64, numpy.float32}, default=numpy.float64
        Value type the values are read as (the sums are of those values, accumulated
        in float64).

    Returns
    -------
    dict
        ``{"n_rows", "n_features", "classes", "nnz", "sum", "sumsq"}``; ``sum`` and
        ``sumsq`` are over all stored values, ``classes`` the sorted labels.

    Raises
    ------
    ValueError
        When the file has no data rows or cannot be read.
    """
    n_rows = nnz = 0
    d = 0
    total = total_sq = 0.0
    labels = set()
    for X, y in iter_svmlight_chunks(path, chunk_size, None, zero_based=zero_based,
                                     dtype=dtype):
        n_rows += X.shape[0]
        d = max(d, X.shape[1])
        nnz += X.nnz
        data = X.data.astype(np.float64, copy=False)   # float32: one chunk's copy
        total += float(data.sum())
        total_sq += float(np.dot(data, data))
        labels.update(np.unique(y).tolist())
    if n_rows == 0:
        raise ValueError(f"{os.fspath(path)}: no data rows")
    return {"n_rows": n_rows, "n_features": d, "classes": np.array(sorted(labels)),
            "nnz": nnz, "sum": total, "sumsq": total_sq}


def stream_fit(estimator, path, chunk_size=10000, *, n_features=None, classes=None,
               epochs=1, zero_based=False, dtype=np.float64, verbose=0, file=None):
    """Train an estimator on a LIBSVM file read a chunk at a time.

    Memory is bounded by one chunk plus the model.  Rows are visited in file order
    between chunks and in a fresh random order within each chunk (see the module
    docstring, :mod:`pybudget.stream`, for what is read before the first chunk).

    Parameters
    ----------
    estimator : estimator with ``partial_fit(X, y, classes=...)``
        Typically ``BudgetSVC(solver="bsgd")``.
    path : str or os.PathLike
        The LIBSVM file (plain, .gz, .bz2 or .xz).
    chunk_size : int, default=10000
        Lines per ``partial_fit`` call.
    n_features : int, optional
        Width of every chunk.  Unless both ``n_features`` and ``classes`` are given, a
        first pass over the file (parsing only, same bounded memory) finds them; for a
        BudgetSVC with ``gamma="scale"`` that pass also gives the whole-file gamma that
        ``fit`` would use (when the pass is skipped, ``partial_fit`` takes the scale of
        the first chunk).
    classes : array-like, optional
        All class labels (see ``n_features``).
    epochs : int, default=1
        Passes over the file, each continuing ``partial_fit`` (BudgetSVC's lambda keeps
        using the number of rows seen so far, so a second pass regularises less than
        ``fit(epochs=2)``).
    zero_based : bool, default=False
        Whether feature indices start at 0 (LIBSVM files are 1-based).
    dtype : {numpy.float64, numpy.float32}, default=numpy.float64
        Value type of the chunks: float32 halves their memory; the model equals that
        of the float64 chunks of the same, float32-rounded values.
    verbose : int, default=0
        Progress per chunk with the share of the file read and an ETA.
    file : file object, optional
        Where progress goes (default stderr).

    Returns
    -------
    estimator
        The trained estimator.

    Raises
    ------
    TypeError
        When ``estimator`` has no ``partial_fit`` (e.g. BudgetSVC with
        ``solver="bsca"``).
    ValueError
        When the file has no data rows or cannot be read, or for invalid parameters.

    See Also
    --------
    BudgetSVC.partial_fit
    iter_svmlight_chunks, scan_svmlight
    """
    if not hasattr(estimator, "partial_fit"):
        raise TypeError(f"stream_fit needs an estimator with partial_fit (BudgetSVC with "
                        f"solver='bsgd'), got {type(estimator).__name__}"
                        + (f" with solver={estimator.solver!r}"
                           if hasattr(estimator, "solver") else ""))
    epochs = V.positive_int("epochs", epochs)
    chunk_size = V.positive_int("chunk_size", chunk_size)
    dtype = value_dtype(dtype)
    gamma_override = None
    if n_features is None or classes is None:
        t0 = time.perf_counter()
        info = scan_svmlight(path, chunk_size, zero_based=zero_based, dtype=dtype)
        if verbose:
            report(f"scanned {info['n_rows']} rows, {info['n_features']} features, "
                   f"{len(info['classes'])} classes", time.perf_counter() - t0, file=file)
        if n_features is None:
            n_features = info["n_features"]
        if classes is None:
            classes = info["classes"]
        if getattr(estimator, "gamma", None) == "scale" and not hasattr(estimator, "gamma_"):
            gamma_override = gamma_from_moments(info["n_rows"], info["n_features"],
                                                info["sum"], info["sumsq"])
    n_features = V.positive_int("n_features", n_features)
    classes = np.asarray(classes)
    if gamma_override is not None:
        estimator.set_params(gamma=gamma_override)
    try:
        t0 = time.perf_counter()
        n_seen = 0
        for ep in range(epochs):
            prog = _Progress(path)
            for X, y in iter_svmlight_chunks(path, chunk_size, n_features,
                                             zero_based=zero_based, dtype=dtype,
                                             progress=prog):
                estimator.partial_fit(X, y, classes=classes)
                n_seen += X.shape[0]
                if verbose:
                    frac = (ep + prog.fraction()) / epochs
                    el = time.perf_counter() - t0
                    eta = el * (1 - frac) / frac if frac > 0 else float("nan")
                    report(f"epoch {ep + 1}/{epochs}: {n_seen} rows, {100 * frac:.0f}% done, "
                           f"ETA {eta:.0f}s", el, file=file)
        if n_seen == 0:
            raise ValueError(f"{os.fspath(path)}: no data rows")
    finally:
        if gamma_override is not None:
            estimator.set_params(gamma="scale")
    return estimator
