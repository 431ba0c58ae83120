"""The one LIBSVM/svmlight reader behind ``datasets.load_svmlight`` (a whole file) and
the streaming reader (chunks of lines): opening compressed files, parsing
(``_core._libsvm_text``), and the checks and index narrowing both need."""
import bz2
import gzip
import lzma
import os

import numpy as np
import scipy.sparse as sp

from pybudget._core import _libsvm_text as _text, _validation as V

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


# text read and parsed at a time: the parser's arrays are sized by the block's lines and
# colons, so the arrays of a file are at most one block's worth larger than its CSR
BLOCK_BYTES = 1 << 23


def parse(source, n_features, zero_based, dtype, where, first_line=1):
    """(CSR X, float64 y) from an open binary file or buffer; ``where`` names the
    source in errors ("'a.txt'"), whose line numbers start at
    ``first_line``.  X has values of ``dtype`` (float64 or float32, parsed straight
    into it: no float64 intermediate); they must be finite.  Indices are int32 where
    they fit (scikit-learn's partial_fit estimators refuse int64).  The format is
    scikit-learn's ``load_svmlight_file``'s (tests/test_svmlight.py compares them),
    parsed by ``_core._libsvm_text`` a block of whole lines at a time."""
    zero_based = V.boolean("zero_based", zero_based)   # never sklearn's per-chunk "auto"
    dtype = value_dtype(dtype)
    parts, carry, line = [], b"", first_line
    while True:
        try:
            chunk = source.read(BLOCK_BYTES)
        except (EOFError, lzma.LZMAError, OSError) as e:
            if isinstance(e, (PermissionError, IsADirectoryError)):
                raise
            raise ValueError(f"cannot read {where} as a LIBSVM file: {e}") from None
        text = carry + chunk
        cut = len(text) if not chunk else text.rfind(b"\n") + 1
        text, carry = text[:cut], text[cut:]
        if text:
            parts.append(_parse_block(text, zero_based, dtype, where, line))
            line += text.count(b"\n")
        if not chunk:
            break
    y = _joined([p[0] for p in parts], np.float64)
    nnz = sum(len(p[2]) for p in parts)
    width = max([p[4] for p in parts], default=0)
    if n_features is not None and n_features < width:
        raise ValueError(f"n_features={n_features}, but {where} has feature index "
                         f"{width - 1 + (not zero_based)} ({width} features)")
    index = np.int64 if max(nnz, width, n_features or 0) >= 2**31 - 1 else np.int32
    indptr = np.zeros(len(y) + 1, dtype=index)
    np.cumsum(_joined([p[1] for p in parts], index), out=indptr[1:])
    indices = _joined([p[2] for p in parts], index)
    data = parts[0][3] if len(parts) == 1 else _joined([p[3] for p in parts], dtype)
    if not (V.all_finite(data) and V.all_finite(y)):
        raise ValueError(f"{where}: NaN or infinity in the data")
    shape = (len(y), max(width, 1) if n_features is None else n_features)
    return sp.csr_matrix((data, indices, indptr), shape=shape), y


def _joined(arrays, dtype):
    """The arrays one after the other, as dtype (one copy)."""
    return np.concatenate(arrays, dtype=dtype) if arrays else np.zeros(0, dtype)


def _parse_block(text, zero_based, dtype, where, first_line):
    """(labels, row lengths, int64 indices, values, columns) of whole lines text."""
    parsed, error = _text.parse_lines(text, zero_based, dtype)
    if error is not None:
        line, at, what = error
        token = text[at:at + 41].split(None, 1)[0].decode("utf-8", "replace")
        token = token if len(token) <= 40 else token[:37] + "..."
        hint = ZERO_BASED_HINT if what == "feature index 0" else ""
        raise ValueError(f"cannot read {where} as a LIBSVM file: line "
                         f"{first_line + line - 1}, {token!r}: {what}{hint}")
    return parsed
