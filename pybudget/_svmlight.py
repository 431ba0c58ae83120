"""The one LIBSVM/svmlight reader behind ``datasets.load_svmlight`` (a whole file) and
the streaming reader (chunks of lines): opening compressed files, parsing with
scikit-learn's parser, and the checks and index narrowing both need."""
import bz2
import gzip
import lzma
import os

import numpy as np
import scipy.sparse as sp

from pybudget._core import _validation as V

ZERO_BASED_HINT = (" (feature indices are 1-based as in LIBSVM; for a 0-based file pass "
                   "zero_based=True, or --zero-based on the command line)")


def open_binary(path):
    """The file at path opened for binary reading, decompressed by its suffix (.gz,
    .bz2, .xz); FileNotFoundError naming it when there is none."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"no data file at {path!r}")
    if path.endswith(".gz"):
        return gzip.open(path, "rb")
    if path.endswith(".bz2"):
        return bz2.open(path, "rb")
    if path.endswith(".xz"):
        return lzma.open(path, "rb")
    return open(path, "rb")


def value_dtype(dtype):
    """numpy.float64 or numpy.float32 (the value types the solvers read in place)."""
    dt = np.dtype(dtype)
    if dt not in V.VALUE_TYPES:
        raise ValueError(f"dtype must be numpy.float64 or numpy.float32, got {dtype!r}")
    return dt.type


def parse(source, n_features, zero_based, dtype, where):
    """(CSR X, float64 y) from an open binary file or buffer; ``where`` names the
    source in errors ("'a.txt'", "a.txt lines 1-7").  X has values of ``dtype``
    (float64 or float32, parsed straight into it by scikit-learn's reader: no float64
    intermediate); they must be finite.  Indices are int32 where they fit
    (scikit-learn's partial_fit estimators refuse int64)."""
    zero_based = V.boolean("zero_based", zero_based)   # never sklearn's per-chunk "auto"
    dtype = value_dtype(dtype)
    kw = {} if n_features is None else {"n_features": n_features}
    from sklearn.datasets import load_svmlight_file    # (not at import: _lazy.py)
    try:
        X, y = load_svmlight_file(source, zero_based=zero_based, dtype=dtype, **kw)
    except (PermissionError, IsADirectoryError):
        raise
    except (ValueError, OverflowError, EOFError, lzma.LZMAError, OSError) as e:
        hint = ZERO_BASED_HINT if "Invalid index 0" in str(e) else ""
        raise ValueError(f"cannot read {where} as a LIBSVM file: {e}{hint}") from None
    with np.errstate(over="ignore", invalid="ignore"):
        # a finite float64 sum means finite values, without an nnz-sized mask
        finite = np.isfinite(np.sum(X.data, dtype=np.float64))
    if not (finite or np.all(np.isfinite(X.data))) or not np.all(np.isfinite(y)):
        raise ValueError(f"{where}: NaN or infinity in the data")
    X = X.tocsr()
    if X.indices.dtype != np.int32 and X.nnz < 2**31 - 1 and X.shape[1] < 2**31 - 1:
        X = sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)),
                          shape=X.shape)
    return X, y
