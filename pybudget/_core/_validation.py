"""Every input check of pybudget, in one place.

Nothing invalid may reach the Cython kernels (they run without bounds checks), so
the functions here convert data once to the layout the kernels expect and raise a
ValueError/TypeError naming the parameter and the problem otherwise.
"""
import numbers

import numpy as np
import scipy.sparse as sp

from pybudget._core._csr import csr_structure

INT32_MAX = np.iinfo(np.int32).max
# Largest dense float64 array a solver allocates (linear weights, SV rows): beyond this
# we refuse with a message rather than let the machine swap or kill the process.
MAX_DENSE_BYTES = 4 * 2**30


# Values the kernels read in place; anything else (ints, float16, ...) becomes float64.
VALUE_TYPES = (np.float64, np.float32)
# Stored values per block of the chunked reductions below: their float64 temporaries stay
# at 512 KiB whatever the size of X (a float64 copy of a float32 X would double it).
CHUNK_VALUES = 1 << 16


def all_finite(values):
    """Whether a float array has no NaN or infinity: a finite float64 sum says so
    without a mask of the array's size; a sum that overflowed or is NaN is looked at
    value by value."""
    with np.errstate(over="ignore", invalid="ignore"):
        return bool(np.isfinite(np.sum(values, dtype=np.float64))
                    or np.isfinite(values).all())


def as_csr(X, name="X"):
    """Check X (dense or sparse) and return a canonical CSR matrix for the kernels:
    float64 or float32 data (kept as given; other types become float64), int32 sorted
    indices without duplicates, at least one row and column, all values finite.  The
    caller's matrix is never modified.  A scipy sparse matrix or a 2-d numpy array of
    real numbers is checked here; anything else (lists, data frames, object or complex
    arrays, no rows or columns) by scikit-learn's check_array first, which is imported
    only then (a Dask worker checks its blocks without it: ``pybudget._lazy``).  The
    errors are scikit-learn's either way."""
    if X is None:
        raise TypeError(f"{name} must be an array or sparse matrix, got None")
    if not ((sp.issparse(X) or type(X) is np.ndarray) and X.ndim == 2
            and X.dtype.kind in "fiub" and min(X.shape) > 0):
        from sklearn.utils import check_array
        X = check_array(X, accept_sparse="csr", dtype=list(VALUE_TYPES),
                        ensure_all_finite=True, input_name=name, accept_large_sparse=True)
        return canonical_csr(X)
    values = X.data if sp.issparse(X) else X
    if values.dtype.kind == "f" and not all_finite(values):
        if np.isnan(values).any():
            raise ValueError(f"Input {name} contains NaN.")
        raise ValueError(f"Input {name} contains infinity or a value too large for "
                         f"{values.dtype!r}.")
    return canonical_csr(X)


def canonical_csr(X):
    """CSR with float64 or float32 data and int32 sorted, duplicate-free indices from an
    already checked (finite, 2-d, float) array or sparse matrix.  Copies only what must
    change: float32 stays float32 (the kernels read it in place), other value types
    become float64, dense input becomes CSR of its own value type, and int64 indices
    are narrowed to int32 (a copy of the index arrays, not of the values)."""
    if not sp.issparse(X):
        X = np.asarray(X)
        X = sp.csr_matrix(X if X.dtype in VALUE_TYPES else X.astype(np.float64))
    elif X.format != "csr":
        X = X.tocsr()
    if X.shape[1] > INT32_MAX or X.nnz > INT32_MAX:
        raise ValueError(f"X is too large for 32-bit indices: shape {X.shape}, nnz {X.nnz}")
    copied = False
    if X.dtype not in VALUE_TYPES:
        X = X.astype(np.float64)
        copied = True
    if X.indices.dtype != np.int32 or X.indptr.dtype != np.int32:
        # Values must survive narrowing (2**32 + 1 would wrap to a valid-looking 1);
        # csr_structure then checks the structure itself.
        for a in (X.indptr, X.indices):
            if a.size and (a.min() < -INT32_MAX or a.max() > INT32_MAX):
                raise ValueError("X is not a valid CSR matrix: an index or pointer lies "
                                 "outside the 32-bit range")
        X = sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)),
                          shape=X.shape)
        copied = True
    X.data = np.ascontiguousarray(X.data)
    X.indices = np.ascontiguousarray(X.indices, dtype=np.int32)
    X.indptr = np.ascontiguousarray(X.indptr, dtype=np.int32)
    # Our own scan (not scipy's cached flags): index ranges and sortedness are what
    # the unchecked kernels rely on.
    canonical = csr_structure(X.indptr, X.indices, X.shape[0], X.shape[1])
    if X.data.shape[0] < X.indptr[-1]:
        raise ValueError("X is not a valid CSR matrix: data is shorter than indptr says")
    if not canonical:
        if not copied:
            X = X.copy()
        X.has_sorted_indices = False
        X.has_canonical_format = False
        X.sum_duplicates()  # sorts the indices too
    return X


def row_blocks(X, size=None):
    """(a, b): consecutive row ranges of a CSR X holding at most `size` (default
    CHUNK_VALUES) stored values each (a longer row is a block of its own), covering
    every row."""
    n, indptr = X.shape[0], X.indptr
    size = size or CHUNK_VALUES
    a = 0
    while a < n:
        b = int(np.searchsorted(indptr, int(indptr[a]) + size, side="right")) - 1
        b = min(max(b, a + 1), n)
        yield a, b
        a = b


def float64_values(X, a, b):
    """The stored values of rows a..b-1 as a new float64 array (exact for float32)."""
    return X.data[X.indptr[a]:X.indptr[b]].astype(np.float64)


def matrix_bytes(X):
    """The bytes of a dense array's values, or of a sparse matrix's data, indices and
    row pointers."""
    return X.data.nbytes + X.indices.nbytes + X.indptr.nbytes if sp.issparse(X) else X.nbytes


def with_columns(X, d):
    """CSR X viewed with d >= X.shape[1] columns (a shard that used fewer of the
    problem's columns), sharing X's arrays."""
    if X.shape[1] == d:
        return X
    out = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], d), copy=False)
    out.has_sorted_indices = X.has_sorted_indices
    return out


def row_sqnorms(X, extra=0.0, name="X"):
    """Squared row norms of a canonical CSR X, plus extra² (a bias column); refuses data
    whose squares overflow (see check_squares).  Squares in float64 (float32 values are
    widened first) a block of rows at a time: no temporary the size of X, and the same
    reduction per row as on the whole array, so float32 data give the bits of its
    float64 copy."""
    with np.errstate(over="ignore", invalid="ignore"):
        sq = np.full(X.shape[0], extra * extra)
        for a, b in row_blocks(X):
            _add_block_sqnorms(X, a, b, sq)
        refuse_overflow(sq.sum(), X, extra, name)
    return sq


def _add_block_sqnorms(X, a, b, sq):
    """sq[a:b] += the squared norms of rows a..b-1 (their temporaries die on return)."""
    values = X.data[X.indptr[a]:X.indptr[b]]
    if values.size:
        data = np.multiply(values, values, dtype=np.float64)   # float32: widened first
        starts = X.indptr[a:b]
        nonempty = X.indptr[a + 1:b + 1] > starts
        sq[a:b][nonempty] += np.add.reduceat(data, starts[nonempty] - starts[0])


def value_moments(X, squares_only=False):
    """(sum, sum of squares) of the stored values of a canonical CSR X, accumulated in
    float64 without a copy of X: float64 values in place, float32 ones widened a block
    of rows at a time (their sums then differ from those of a float64 copy in the last
    bits at most).  squares_only: sum is None."""
    data = X.data[:X.indptr[-1]]
    with np.errstate(over="ignore", invalid="ignore"):
        if data.dtype == np.float64:
            return (None if squares_only else data.sum()), np.einsum("i,i->", data, data)
        total = 0.0 if not squares_only else None
        total_sq = 0.0
        for a, b in row_blocks(X):
            block = float64_values(X, a, b)
            if not squares_only:
                total += block.sum()
            total_sq += np.einsum("i,i->", block, block)
            del block                 # before the next one is made
        return total, total_sq


def check_squares(X, extra=0.0, name="X"):
    """Refuse a canonical CSR X (plus a bias column of value extra) whose sum of squares
    overflows float64: every solver builds its step sizes and kernel values from squared
    norms, and an overflow would end in a silently trivial model.  O(nnz), no copy of X
    (float32 squares cannot overflow float64, but the bias column still can)."""
    with np.errstate(over="ignore", invalid="ignore"):
        refuse_overflow(value_moments(X, squares_only=True)[1]
                        + X.shape[0] * extra * extra, X, extra, name)


def refuse_overflow(total, X=None, extra=0.0, name="X"):
    """Raise the overflow error unless the sum of squares `total` is finite."""
    if not np.isfinite(total):
        big = float(np.abs(X.data).max()) if X is not None and X.nnz else None
        detail = ([f"largest |value| {big:.3g}"] if big is not None else []) + (
            [f"bias column {extra:.3g}"] if extra else [])
        raise ValueError(f"{name} has values too large for float64 arithmetic: the sum of "
                         f"squared row norms overflows"
                         + (f" ({', '.join(detail)})" if detail else ""))


def dense_size(n_values, what, advice):
    """Refuse a dense float64 allocation of n_values beyond MAX_DENSE_BYTES."""
    if n_values * 8 > MAX_DENSE_BYTES:
        raise ValueError(f"{what} need {n_values * 8 / 2**30:.1f} GiB; {advice}")


def linear_weights_fit(n_vectors, d):
    """Refuse n_vectors dense weight vectors of d features plus the bias beyond the cap."""
    dense_size(n_vectors * (d + 1), f"{n_vectors} weight vector(s) for {d} features",
               "reduce the number of features (the largest column index sets it)")


def encode_labels(y, n_samples, name="y", min_classes=2):
    """Return (classes, codes) for any hashable/sortable labels; codes index classes."""
    if y is None:
        raise TypeError(f"{name} must be array-like, got None")
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y.ravel()
    if y.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {y.shape}")
    if y.shape[0] != n_samples:
        raise ValueError(f"{name} has {y.shape[0]} labels but X has {n_samples} rows")
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise ValueError(f"{name} contains NaN or infinity")
    if y.dtype.kind == "O":
        if any(v is None for v in y):
            raise ValueError(f"{name} contains None")
    if y.dtype.kind in "fiub" and y.shape[0] > 0:
        # Fast path for the common binary case: two passes instead of a sort.
        lo, hi = y.min(), y.max()
        is_hi = y == hi
        if np.all(is_hi | (y == lo)):
            classes = np.array([lo] if lo == hi else [lo, hi], dtype=y.dtype)
            codes = is_hi.astype(np.intp) if lo != hi else np.zeros(y.shape[0], np.intp)
        else:
            classes, codes = np.unique(y, return_inverse=True)
    else:
        try:
            classes, codes = np.unique(y, return_inverse=True)
        except TypeError:
            kinds = sorted({type(v).__name__ for v in y})
            raise TypeError(f"{name} mixes label types that cannot be ordered ({kinds}); "
                            f"use labels of one type") from None
    if classes.shape[0] < min_classes:
        raise ValueError(f"{name} has {classes.shape[0]} class(es) {classes.tolist()}; "
                         f"at least {min_classes} are needed")
    return classes, codes.astype(np.intp)


def binary_labels(y, n_samples, name="y"):
    """(classes, ±1 float64 array) for exactly two label values."""
    classes, codes = encode_labels(y, n_samples, name)
    if classes.shape[0] != 2:
        raise ValueError(f"{name} must have exactly two classes for this solver, "
                         f"got {classes.shape[0]}: {classes.tolist()[:10]}")
    return classes, np.where(codes == 1, 1.0, -1.0)


def regression_targets(y, n_samples, name="y"):
    """Finite float64 targets, one per row."""
    if y is None:
        raise TypeError(f"{name} must be an array of targets, got None")
    from sklearn.utils import check_array
    y = check_array(y, ensure_2d=False, dtype=np.float64, ensure_all_finite=True,
                    input_name=name)
    if y.ndim != 1 or y.shape[0] != n_samples:
        raise ValueError(f"{name} must be 1-d with one target per row of X ({n_samples}), "
                         f"got shape {y.shape}")
    return np.ascontiguousarray(y)


def positive(name, value, allow_inf=False):
    """A real number > 0 (finite unless allow_inf)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a positive number, got {value!r}")
    value = float(value)
    if not value > 0 or (not allow_inf and not np.isfinite(value)):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return value


def nonnegative(name, value):
    """A finite real number >= 0."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    value = float(value)
    if not np.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be finite and >= 0, got {value!r}")
    return value


def positive_int(name, value, minimum=1):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def boolean(name, value):
    """A flag: True or False (numpy's bools too), not any truthy object."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def verbosity(value):
    """verbose as scikit-learn takes it: a bool or an integer >= 0."""
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    return positive_int("verbose", value, minimum=0)


def n_jobs(value):
    """The number of threads ``n_jobs`` asks for, as scikit-learn reads it: None is 1,
    -1 every core, -2 all but one and so on (at least 1); 0 is refused."""
    if value is None:
        return 1
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"n_jobs must be None or a nonzero integer, got {value!r}")
    if value == 0:
        raise ValueError("n_jobs must be None or a nonzero integer (-1: every core), got 0")
    if value < 0:
        from joblib import cpu_count     # cores available to this process (cgroups too)
        return max(1, cpu_count() + 1 + int(value))
    return int(value)


def choice(name, value, options):
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"{name} must be one of {sorted(options)}, got {value!r}")
    return value


def sample_weights(sample_weight, n_samples):
    """float64 weights >= 0, finite, one per row (ones when None)."""
    if sample_weight is None:
        return np.ones(n_samples)
    sw = np.asarray(sample_weight)
    try:
        if sw.dtype.kind not in "biufO":
            raise TypeError
        sw = sw.astype(np.float64)   # object arrays: only if every entry is a real number
    except (TypeError, ValueError):
        raise TypeError(f"sample_weight must be real numbers, got {sw.dtype} values "
                        f"such as {sw.ravel()[:1].tolist()}") from None
    if sw.ndim == 0:
        sw = np.full(n_samples, float(sw))
    if sw.ndim != 1 or sw.shape[0] != n_samples:
        raise ValueError(f"sample_weight must have shape ({n_samples},), got {sw.shape}")
    if not np.all(np.isfinite(sw)):
        raise ValueError("sample_weight contains NaN or infinity")
    if np.any(sw < 0):
        raise ValueError("sample_weight must be non-negative")
    if not np.any(sw > 0):
        raise ValueError("sample_weight is zero for every sample")
    return sw


def seed_from(random_state):
    """A 64-bit seed for the solvers' own generator from None/int/RandomState/Generator."""
    if random_state is None:
        return int(np.random.SeedSequence().generate_state(1, np.uint64)[0])
    if isinstance(random_state, (bool, np.bool_)):
        raise TypeError("random_state must be None, an int or a numpy generator, "
                        f"got {random_state!r}")
    if isinstance(random_state, numbers.Integral):
        if random_state < 0:
            raise ValueError(f"random_state must be non-negative, got {random_state}")
        return int(np.random.SeedSequence(int(random_state)).generate_state(1, np.uint64)[0])
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(0, 2**63 - 1, dtype=np.int64))
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, 2**63 - 1))
    raise TypeError(f"random_state must be None, an int or a numpy generator, got {random_state!r}")
