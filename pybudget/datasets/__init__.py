"""Data sets: LIBSVM/svmlight files and a few small real data sets shipped with pybudget.

``load(name)`` returns ``(X_train, y_train, X_test, y_test)`` for an embedded data set
(``EMBEDDED``), a benchmark name found in a data directory (``$PYBUDGET_DATA``,
default ``../shared/data`` next to the checkout) or a LIBSVM file path
(optionally ``"train_path,test_path"``).
"""
import os
from pathlib import Path

import numpy as np

from pybudget._svmlight import open_binary, parse

DATA_DIR = Path(__file__).parent / "data"

# name -> (train file, test file) inside the package; see bench/make_embedded_data.py
EMBEDDED = {
    "a9a": ("a9a.bz2", "a9a.t.bz2"),
    "debian-lib-small": ("debian-lib-small.train.bz2", "debian-lib-small.test.bz2"),
}

# Benchmark names -> (train, test) file names in the external data directory.
_EXTERNAL = {
    "debian-lib": ("debian-lib.train.bz2", "debian-lib.test.bz2"),
    "debian-sections20": ("debian-sections20.train.bz2", "debian-sections20.test.bz2"),
    "debian-size": ("debian-size.train.bz2", "debian-size.test.bz2"),
}


def load_svmlight(path, n_features=None, zero_based=False, dtype=np.float64):
    """Read a LIBSVM/svmlight file (plain, .gz, .bz2 or .xz).

    Feature indices are 1-based as in LIBSVM (``zero_based=True`` for 0-based files),
    the same convention as the streaming reader, so a training file and its test file
    can never be read with different offsets.

    Parameters
    ----------
    path : str or os.PathLike
        The file.
    n_features : int, optional
        Number of columns (e.g. the training file's, for its test file); by default the
        largest index in the file.
    zero_based : bool, default=False
        Whether feature indices start at 0.
    dtype : {numpy.float64, numpy.float32}, default=numpy.float64
        Value type of ``X``.  float32 is parsed straight into float32 (half the memory;
        every solver trains on it without a copy).

    Returns
    -------
    X : scipy.sparse.csr_matrix of dtype
        The data.
    y : ndarray of float64
        The labels.

    Raises
    ------
    ValueError
        When the file cannot be read or holds NaN or infinity (naming it).
    """
    with open_binary(path) as f:
        return parse(f, n_features, zero_based, dtype, repr(os.fspath(path)))


def external_data_dir():
    """Directory of the benchmark data.

    Returns
    -------
    pathlib.Path
        ``$PYBUDGET_DATA`` when set, else the first existing ``shared/data`` beside the
        checkout (for a source tree or the working directory); the first candidate when
        none exists.
    """
    env = os.environ.get("PYBUDGET_DATA")
    if env:
        return Path(env)
    candidates = [Path(__file__).resolve().parents[3] / "shared" / "data",
                  Path.cwd().parent / "shared" / "data", Path.cwd() / "shared" / "data"]
    return next((c for c in candidates if c.is_dir()), candidates[0])


def _pair(train, test, dtype):
    X, y = load_svmlight(train, dtype=dtype)
    if test is None:
        return X, y, None, None
    Xt, yt = load_svmlight(test, n_features=X.shape[1], dtype=dtype)
    return X, y, Xt, yt


def load(name, dtype=np.float64):
    """Load a data set as training and test parts.

    Parameters
    ----------
    name : str
        An embedded name (``EMBEDDED``), a benchmark name in the external data directory
        (:func:`external_data_dir`), or a LIBSVM file path (``"train[,test]"``).
    dtype : {numpy.float64, numpy.float32}, default=numpy.float64
        Value type of the matrices (see :func:`load_svmlight`).

    Returns
    -------
    X_train, y_train, X_test, y_test
        CSR matrices and label arrays; the test matrix has the training file's width.
        ``X_test`` and ``y_test`` are None when there is no test file.

    Raises
    ------
    ValueError
        When ``name`` is none of these, or a file cannot be read.

    See Also
    --------
    available : The names ``load`` accepts.
    load_svmlight : Read one file.

    Examples
    --------
    >>> from pybudget.datasets import load
    >>> X, y, X_test, y_test = load("a9a")
    >>> X.shape[1] == X_test.shape[1]
    True
    """
    if name in EMBEDDED:
        tr, te = EMBEDDED[name]
        return _pair(DATA_DIR / tr, DATA_DIR / te, dtype)
    ext = external_data_dir()
    if name in _EXTERNAL or (ext / f"{name}.bz2").exists():
        tr, te = _EXTERNAL.get(name, (f"{name}.bz2", f"{name}.t.bz2"))
        test = ext / te
        return _pair(ext / tr, test if test.exists() else None, dtype)
    parts = str(name).split(",")
    if len(parts) in (1, 2) and os.path.exists(parts[0]):
        return _pair(parts[0], parts[1] if len(parts) == 2 else None, dtype)
    raise ValueError(f"unknown data set {name!r}: not one of the embedded {sorted(EMBEDDED)}, "
                     f"not found in {ext}, and not an existing file path")


def available():
    """Names loadable with :func:`load`.

    Returns
    -------
    list of str
        The embedded names, then those found in :func:`external_data_dir`.
    """
    names = list(EMBEDDED)
    ext = external_data_dir()
    if ext.is_dir():
        names += sorted(_EXTERNAL)
        names += sorted(p.name[:-4] for p in ext.glob("*.bz2")
                        if not p.name.endswith(".t.bz2") and "debian-lib" not in p.name)
    return names
