"""Model files: ``save(model, path)`` and ``load(path)`` without pickle.

Format ``pybudget-model``, version 3.  A model file is a ZIP archive (deflate) holding

- ``header.json``: UTF-8 JSON with ``format`` ("pybudget-model"), ``version`` (2),
  ``pybudget_version`` (writer), ``estimator`` ("LinearSVC", "LogisticRegression",
  "LinearSVR" or "BudgetSVC"), ``params``
  (``get_params()``; a numpy random generator is stored as null, a class_weight dict as a
  list of [label, weight] pairs), ``classes`` (``{"dtype": ..., "values": [...]}`` with
  the numpy dtype string, e.g. "<f8", "<i8", "|b1", "<U3", or "object" for Python
  objects, and the labels as JSON numbers, strings or booleans; null for a regressor),
  ``attributes`` (scalar
  fitted attributes, floats written with full round-trip precision) and ``arrays``
  (for each array: file name, dtype, shape and SHA-256 of its ``.npy`` bytes).
- one ``<name>.npy`` file per array (``numpy.save`` with ``allow_pickle=False``):
  LinearSVC and LogisticRegression: ``coef_``, ``intercept_``, ``dual_objective_``,
  ``kkt_violation_``, ``converged_``; LinearSVR: ``coef_``, ``intercept_``; BudgetSVC:
  ``support_vectors_``, ``dual_coef_``, ``intercept_`` (the fitted offset, new in
  version 2), or for support vectors held sparse (``storage``, new in version 3) their
  CSR parts in place of ``support_vectors_`` (``support_vectors_data``, ``_indices``,
  ``_indptr``) and, for a model trained by ``partial_fit``, the reservoir sample its
  offset is refitted on (``offset_sample_data``, ``_indices``, ``_indptr``, ``_xsq``,
  ``_codes``).

Version 1 files (no ``intercept_``) still load: their BudgetSVC gets a zero offset and
predicts exactly as before; version 2 files load as they were written.

Every file in the archive carries the ZIP CRC-32 and every array its SHA-256 in the
header, so a truncated or corrupted file is detected; a file of a newer format version
is refused.  Each failure is a ValueError naming the file and the problem.  Floats are
stored bit for bit, so a reloaded model predicts exactly what the saved one did.

Not stored: LinearSVC's warm-start state (a reloaded model refits from scratch) and
BudgetSVC's BSCA dual variables.  BSGD's step count and row count are stored, so
``partial_fit`` continues a reloaded BSGD model as it would the original.
"""
import hashlib
import io
import json
import math
import numbers
import os
import secrets
import stat
import zipfile
import zlib

import numpy as np
import scipy.sparse as sp

FORMAT = "pybudget-model"
VERSION = 3
# arrays a file of an older version lacks, and how to fill them in: name -> (version
# that added it, function of the loaded model giving its value)
_ADDED = {"intercept_": (2, lambda m: np.zeros(m.dual_coef_.shape[0]))}
# BudgetSVC's partial_fit reservoir (_offset.reservoir_update), stored when present
_SAMPLE_PARTS = ("data", "indices", "indptr", "xsq", "codes")
# BudgetSVC's support vectors when they are a CSR matrix (sparse storage)
_SV_PARTS = ("data", "indices", "indptr")

# estimator -> (arrays, scalar attributes (name, kind), optional private attributes);
# kind "int1": an int in the file, an array of shape (1,) on the model (scikit-learn's
# LogisticRegression.n_iter_)
_LAYOUT = {
    "LinearSVC": (
        ("coef_", "intercept_", "dual_objective_", "kkt_violation_", "converged_"),
        (("n_iter_", "int"), ("n_steps_", "int"), ("fit_time_", "float"),
         ("selection_", "str"), ("n_features_in_", "int")),
        (),
    ),
    "LogisticRegression": (
        ("coef_", "intercept_", "dual_objective_", "kkt_violation_", "converged_"),
        (("n_iter_", "int1"), ("n_steps_", "int"), ("fit_time_", "float"),
         ("selection_", "str"), ("n_features_in_", "int")),
        (),
    ),
    "LinearSVR": (
        ("coef_", "intercept_"),
        (("n_iter_", "int"), ("n_steps_", "int"), ("fit_time_", "float"),
         ("selection_", "str"), ("n_features_in_", "int"), ("dual_objective_", "float"),
         ("primal_objective_", "float"), ("kkt_violation_", "float"),
         ("converged_", "bool")),
        (),
    ),
    "BudgetSVC": (
        ("support_vectors_", "dual_coef_", "intercept_"),
        (("gamma_", "float"), ("n_iter_", "int"), ("n_merges_", "int"),
         ("n_removed_", "int"), ("merge_time_", "float"), ("fit_time_", "float"),
         ("n_features_in_", "int")),
        (("_t", "int"), ("_n_seen", "int")),
    ),
}
# what zipfile raises on damaged archives (bad CRC, truncation, flipped header bits)
_ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, zlib.error,
               NotImplementedError, RuntimeError, ValueError, UnicodeDecodeError)


def _estimators():
    from pybudget.budget.svm import BudgetSVC
    from pybudget.linear.svm import LinearSVC
    from pybudget.linear.logistic import LogisticRegression
    from pybudget.linear.svr import LinearSVR
    return {"LinearSVC": LinearSVC, "LogisticRegression": LogisticRegression,
            "LinearSVR": LinearSVR, "BudgetSVC": BudgetSVC}


_REGRESSORS = ("LinearSVR",)   # no classes_


# ---------------------------------------------------------------------------- JSON values

def _plain(value, what):
    """A JSON-safe Python scalar (None, bool, int, float, str) from value."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        value = float(value)
        if not math.isfinite(value):
            return {"float": repr(value)}  # JSON has no inf/nan
        return value
    if isinstance(value, np.str_):
        return str(value)
    raise TypeError(f"cannot store {what}={value!r} ({type(value).__name__}) in a model file")


def _unplain(value):
    if isinstance(value, dict) and set(value) == {"float"}:
        return float(value["float"])
    return value


def _encode_params(params):
    out = {}
    for name, value in params.items():
        if name == "random_state" and isinstance(value, (np.random.RandomState,
                                                         np.random.Generator)):
            out[name] = None  # a generator's state is not a parameter worth keeping
        elif name == "class_weight" and isinstance(value, dict):
            out[name] = {"pairs": [[_plain(k, "class_weight label"), _plain(v, "class_weight")]
                                   for k, v in value.items()]}
        else:
            out[name] = _plain(value, name)
    return out


def _decode_params(params):
    out = {}
    for name, value in params.items():
        if name == "class_weight" and isinstance(value, dict) and "pairs" in value:
            out[name] = {k: v for k, v in value["pairs"]}
        else:
            out[name] = _unplain(value)
    return out


def _encode_labels(classes):
    classes = np.asarray(classes)
    if classes.dtype.kind == "O":
        values = [_plain(v, "class label") for v in classes]
        return {"dtype": "object", "values": values}
    if classes.dtype.kind not in "biufU":
        raise TypeError(f"cannot store class labels of dtype {classes.dtype} in a model file")
    return {"dtype": classes.dtype.str, "values": [_plain(v, "class label")
                                                   for v in classes.tolist()]}


def _decode_labels(spec):
    values = [_unplain(v) for v in spec["values"]]
    if spec["dtype"] == "object":
        out = np.empty(len(values), dtype=object)
        out[:] = values
        return out
    dtype = np.dtype(spec["dtype"])
    if dtype.kind not in "biufU":
        raise ValueError(f"unsupported class label dtype {spec['dtype']!r}")
    return np.array(values, dtype=dtype)


# ---------------------------------------------------------------------------- save

def _npy_bytes(a):
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(a), allow_pickle=False)
    return buf.getvalue()


def save(model, path):
    """Write a fitted LinearSVC or BudgetSVC to a model file, without pickle.

    The format is described in the module docstring (:mod:`pybudget.io`).  The file is
    written to a temporary name and renamed, so an existing file is never left
    half-written.

    Parameters
    ----------
    model : LinearSVC or BudgetSVC
        A fitted estimator; a ``pybudget.dask`` estimator is written as its one-machine
        model (``to_local()``).
    path : str, os.PathLike or binary file object
        Where to write; a file object open for writing is written directly.

    Raises
    ------
    TypeError
        When ``model`` is not a LinearSVC or BudgetSVC, or holds an array that cannot
        be stored.
    ValueError
        When ``model`` is not fitted.

    See Also
    --------
    load : Read the file back.

    Examples
    --------
    >>> import os, tempfile
    >>> from sklearn.datasets import make_classification
    >>> from pybudget import LinearSVC, load, save
    >>> X, y = make_classification(n_samples=100, n_features=4, random_state=0)
    >>> clf = LinearSVC(random_state=0).fit(X, y)
    >>> path = os.path.join(tempfile.mkdtemp(), "model.zip")
    >>> save(clf, path)
    >>> bool((load(path).predict(X) == clf.predict(X)).all())
    True
    """
    if hasattr(model, "to_local"):      # (a cluster's estimator: its parameters are not
        model = model.to_local()        # the model's, its coefficients are)
    kind = type(model).__name__
    if kind not in _LAYOUT or not isinstance(model, _estimators()[kind]):
        raise TypeError(f"save supports {', '.join(_LAYOUT)}; got {type(model).__name__}")
    if not model.__sklearn_is_fitted__():
        raise ValueError(f"this {kind} is not fitted yet; call fit before save")
    arrays, scalars, private = _LAYOUT[kind]
    from pybudget import __version__
    header = {"format": FORMAT, "version": VERSION, "pybudget_version": __version__,
              "estimator": kind, "params": _encode_params(model.get_params()),
              "classes": None if kind in _REGRESSORS else _encode_labels(model.classes_),
              "attributes": {}, "arrays": {}}
    for name, kind_ in scalars + private:
        if hasattr(model, name):
            value = getattr(model, name)
            if kind_ == "int1":      # an array of shape (1,) on the model, an int in the file
                value = int(np.asarray(value).reshape(-1)[0])
            header["attributes"][name] = _plain(value, name)
    names = getattr(model, "feature_names_in_", None)
    if names is not None:
        header["attributes"]["feature_names_in_"] = [str(s) for s in names]
    if getattr(model, "checkpoint_", None) is not None:
        header["attributes"]["checkpoint_"] = [int(i) for i in model.checkpoint_]
    blobs = {}
    stored = {name: getattr(model, name) for name in arrays}
    if kind == "BudgetSVC" and sp.issparse(stored["support_vectors_"]):
        Z = stored.pop("support_vectors_")
        stored.update(zip((f"support_vectors_{p}" for p in _SV_PARTS),
                          (Z.data, Z.indices, Z.indptr)))
    sample = getattr(model, "_offset_sample", None)
    if kind == "BudgetSVC" and sample is not None:
        Xs, xsq, codes = sample
        stored.update(zip((f"offset_sample_{p}" for p in _SAMPLE_PARTS),
                          (Xs.data, Xs.indices, Xs.indptr, xsq, codes)))
    for name, a in stored.items():
        a = np.asarray(a)
        if a.dtype.kind not in "biuf":
            raise TypeError(f"{kind}.{name} has dtype {a.dtype}; cannot store it")
        data = _npy_bytes(a)
        header["arrays"][name] = {"file": f"{name}.npy", "dtype": a.dtype.str,
                                  "shape": list(a.shape),
                                  "sha256": hashlib.sha256(data).hexdigest()}
        blobs[f"{name}.npy"] = data
    text = json.dumps(header, indent=1, allow_nan=False).encode("utf-8")
    if hasattr(path, "write"):
        _write_zip(path, text, blobs)
        return
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = _new_temp(folder)
    try:
        with os.fdopen(fd, "wb") as f:
            _write_zip(f, text, blobs)
        if os.path.exists(path):
            try:    # replacing a file keeps its permissions, as writing into it would
                os.chmod(tmp, stat.S_IMODE(os.stat(path).st_mode))
            except OSError:
                pass
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _new_temp(folder):
    """A fresh file beside the target for an atomic replace, created with mode 0666 so
    that the umask applies as for any new file (mkstemp would make it 0600)."""
    while True:
        tmp = os.path.join(folder, f".pybudget-{secrets.token_hex(8)}.tmp")
        try:
            return os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY
                           | getattr(os, "O_BINARY", 0), 0o666), tmp
        except FileExistsError:
            continue


def _write_zip(f, header_bytes, blobs):
    with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("header.json", header_bytes)
        for name, data in blobs.items():
            z.writestr(name, data)


# ---------------------------------------------------------------------------- load

def _fail(path, msg):
    return ValueError(f"{path}: not a valid pybudget model file: {msg}")


def read_header(path):
    """The JSON header of a model file as a dict (checked for format and version)."""
    with _open(path) as z:
        return _header(z, path)


def _open(path):
    shown = path if isinstance(path, (str, os.PathLike)) else "<file>"
    if isinstance(path, (str, os.PathLike)) and not os.path.exists(path):
        raise FileNotFoundError(f"no model file at {os.fspath(path)!r}")
    try:
        return zipfile.ZipFile(path, "r")
    except IsADirectoryError:
        raise
    except _ZIP_ERRORS as e:
        raise _fail(shown, f"not a ZIP archive or truncated ({e})") from None


def _read(z, name, path):
    try:
        return z.read(name)
    except KeyError:
        raise _fail(path, f"{name} is missing") from None
    except _ZIP_ERRORS as e:
        raise _fail(path, f"{name} is corrupted or truncated ({e})") from None


def _header(z, path):
    try:
        header = json.loads(_read(z, "header.json", path).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise _fail(path, f"header.json is not valid JSON ({e})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        found = header.get("format") if isinstance(header, dict) else None
        raise _fail(path, f"format is {found!r}, expected {FORMAT!r}")
    version = header.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise _fail(path, f"bad format version {version!r}")
    if version > VERSION:
        raise ValueError(f"{path}: model file format version {version} was written by a newer "
                         f"pybudget ({header.get('pybudget_version', '?')}); this pybudget "
                         f"reads versions up to {VERSION}. Upgrade pybudget to load it.")
    for key in ("estimator", "params", "classes", "attributes", "arrays"):
        if key not in header:
            raise _fail(path, f"header has no {key!r}")
    if header["estimator"] not in _LAYOUT:
        raise _fail(path, f"unknown estimator {header['estimator']!r}")
    return header


def load(path):
    """Read a model file written by :func:`save` and return the fitted estimator.

    Floats are stored bit for bit, so the reloaded model predicts exactly what the
    saved one did.  Version 1 files still load (a BudgetSVC from one gets a zero
    offset).

    Parameters
    ----------
    path : str, os.PathLike or binary file object
        The model file.

    Returns
    -------
    LinearSVC or BudgetSVC
        The fitted estimator.

    Raises
    ------
    FileNotFoundError
        When there is no file.
    ValueError
        When the file is truncated, corrupted (CRC or checksum mismatch, inconsistent
        shapes), not a pybudget model file, or of a newer format version.

    See Also
    --------
    save
    """
    shown = os.fspath(path) if isinstance(path, (str, os.PathLike)) else "<file>"
    try:
        return _load(path, shown)
    except (KeyError, TypeError, AttributeError, IndexError, OverflowError,
            RecursionError) as e:
        raise _fail(shown, f"malformed header ({type(e).__name__}: {e})") from None


def _load(path, shown):
    with _open(path) as z:
        header = _header(z, shown)
        kind = header["estimator"]
        arrays, scalars, private = _LAYOUT[kind]
        values = {}
        listed = header["arrays"]
        optional = [f"offset_sample_{p}" for p in _SAMPLE_PARTS
                    if kind == "BudgetSVC" and f"offset_sample_{p}" in listed]
        sv_parts = [f"support_vectors_{p}" for p in _SV_PARTS]
        if kind == "BudgetSVC" and "support_vectors_" not in listed:
            arrays = tuple(a for a in arrays if a != "support_vectors_") + tuple(sv_parts)
        for name in list(arrays) + optional:
            spec = listed.get(name)
            if spec is None and name in _ADDED and header["version"] < _ADDED[name][0]:
                continue
            if not isinstance(spec, dict):
                raise _fail(shown, f"array {name} is not listed in the header")
            data = _read(z, spec.get("file", f"{name}.npy"), shown)
            if hashlib.sha256(data).hexdigest() != spec.get("sha256"):
                raise _fail(shown, f"checksum mismatch for {name} (file corrupted)")
            try:
                a = np.load(io.BytesIO(data), allow_pickle=False)
            except (ValueError, OSError, EOFError) as e:
                raise _fail(shown, f"array {name} cannot be read ({e})") from None
            if a.dtype.str != spec.get("dtype") or list(a.shape) != spec.get("shape"):
                raise _fail(shown, f"array {name} has dtype {a.dtype.str} and shape "
                                   f"{list(a.shape)}, the header says {spec.get('dtype')} "
                                   f"and {spec.get('shape')}")
            values[name] = a
        try:
            if (header["classes"] is None) != (kind in _REGRESSORS):
                raise ValueError("a regressor has no classes, a classifier needs them")
            classes = None if kind in _REGRESSORS else _decode_labels(header["classes"])
            params = _decode_params(header["params"])
        except (KeyError, TypeError, ValueError) as e:
            raise _fail(shown, f"bad classes or params in the header ({e})") from None
    cls = _estimators()[kind]
    model = cls()
    known = model.get_params()
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise _fail(shown, f"unknown {kind} parameters {unknown}")
    model.set_params(**params)
    attrs = header["attributes"]
    for name, kind_ in scalars + private:
        if name not in attrs:
            if (name, kind_) in private:
                continue
            raise _fail(shown, f"attribute {name} is missing")
        v = _unplain(attrs[name])
        try:
            v = {"int": _strict_int, "float": float, "str": str, "bool": _strict_bool,
                 "int1": lambda u: np.array([_strict_int(u)], dtype=np.int32)}[kind_](v)
        except (TypeError, ValueError):
            raise _fail(shown, f"attribute {name}={attrs[name]!r} is not a {kind_}") from None
        setattr(model, name, v)
    if "feature_names_in_" in attrs:
        model.feature_names_in_ = np.array(attrs["feature_names_in_"], dtype=object)
    if kind == "BudgetSVC":
        try:
            ck = attrs.get("checkpoint_")
            model.checkpoint_ = None if ck is None else np.array([int(i) for i in ck])
        except (TypeError, ValueError):
            raise _fail(shown, f"attribute checkpoint_={attrs['checkpoint_']!r} is not a "
                        "list of integers") from None
    if classes is not None:
        model.classes_ = classes
    for name in arrays:
        if name in values:
            setattr(model, name, values[name])
    for name, (_, fill) in _ADDED.items():
        if name in arrays and name not in values:
            setattr(model, name, fill(model))
    if sv_parts[0] in values:
        model.support_vectors_ = _sparse_svs(values, shown, model)
    if optional:
        model._offset_sample = _sample_from(values, shown, model)
    _check_consistent(model, kind, shown)
    return model


def _sparse_svs(values, shown, model):
    """BudgetSVC's sparse support vectors from their stored CSR parts, checked."""
    from pybudget._core._validation import canonical_csr
    data, indices, indptr = (values[f"support_vectors_{p}"] for p in _SV_PARTS)
    try:
        return canonical_csr(sp.csr_matrix((data, indices, indptr),
                                           shape=(indptr.shape[0] - 1,
                                                  model.n_features_in_)))
    except (ValueError, TypeError, IndexError) as e:
        raise _fail(shown, f"the support vectors are not a valid sparse matrix "
                    f"({e})") from None


def _sample_from(values, shown, model):
    """BudgetSVC's reservoir sample from its stored parts, checked like any input."""
    from pybudget._core._validation import canonical_csr
    parts = [values.get(f"offset_sample_{p}") for p in _SAMPLE_PARTS]
    if any(a is None for a in parts):
        raise _fail(shown, "the offset sample is incomplete")
    data, indices, indptr, xsq, codes = parts
    try:
        Xs = canonical_csr(sp.csr_matrix((data, indices, indptr),
                                         shape=(indptr.shape[0] - 1, model.n_features_in_)))
    except (ValueError, TypeError, IndexError) as e:
        raise _fail(shown, f"the offset sample is not a valid sparse matrix ({e})") from None
    n_codes = max(2, model.dual_coef_.shape[0])
    if (xsq.shape != (Xs.shape[0],) or codes.shape != (Xs.shape[0],)
            or codes.dtype.kind not in "iu" or xsq.dtype.kind != "f"
            or not np.all(np.isfinite(xsq)) or not np.all(np.isfinite(Xs.data))
            or (codes.size and (codes.min() < 0 or codes.max() >= n_codes))):
        raise _fail(shown, "the offset sample's norms or codes do not match its rows")
    return Xs, np.ascontiguousarray(xsq, dtype=np.float64), codes.astype(np.int32)


def _strict_bool(v):
    if not isinstance(v, bool):
        raise TypeError(f"{v!r} is not a boolean")
    return v


def _strict_int(v):
    """int(v) for an integral value only (5.7 is not silently 5)."""
    if isinstance(v, bool) or (isinstance(v, float) and not v.is_integer()):
        raise ValueError(v)
    return int(v)


def _check_consistent(m, kind, path):
    if kind in _REGRESSORS:
        if m.n_features_in_ < 1:
            raise _fail(path, f"{m.n_features_in_} features")
        return _check_arrays(m, path, {"coef_": (m.n_features_in_,), "intercept_": (1,)},
                             ("coef_", "intercept_"), f"{m.n_features_in_} features")
    K, d = m.classes_.shape[0], m.n_features_in_
    n_prob = 1 if K == 2 else K
    if K < 2 or d < 1:
        raise _fail(path, f"{K} classes and {d} features")
    uniq = np.unique(m.classes_)
    if uniq.shape[0] != K or not np.all(uniq == m.classes_):
        raise _fail(path, "classes are not sorted and distinct")
    if kind == "BudgetSVC" and not 0 <= getattr(m, "_t", 0) < 2**62:
        raise _fail(path, f"step count {m._t} out of range")
    if kind in ("LinearSVC", "LogisticRegression"):
        # crammer_singer solves one joint problem for every row of coef_
        n_runs = 1 if getattr(m, "multi_class", "ovr") == "crammer_singer" else n_prob
        shapes = {"coef_": (n_prob, d), "intercept_": (n_prob,),
                  "dual_objective_": (n_runs,), "kkt_violation_": (n_runs,),
                  "converged_": (n_runs,)}
        finite = ("coef_", "intercept_")
    else:
        n_sv = m.support_vectors_.shape[0]
        if m.solver == "bsgd":
            n_dual = 1 if K == 2 else K
        else:
            n_dual = n_prob
        shapes = {"support_vectors_": (n_sv, d), "dual_coef_": (n_dual, n_sv),
                  "intercept_": (n_dual,)}
        finite = ("support_vectors_", "dual_coef_", "intercept_")
        if not (math.isfinite(m.gamma_) and m.gamma_ > 0):
            raise _fail(path, f"gamma_={m.gamma_!r} is not a positive number")
    _check_arrays(m, path, shapes, finite, f"{K} classes and {d} features")


def _check_arrays(m, path, shapes, finite, what):
    """Shapes as expected (for `what`), finite real values where required."""
    for name, shape in shapes.items():
        if getattr(m, name).shape != shape:
            raise _fail(path, f"{name} has shape {getattr(m, name).shape}, expected {shape} "
                              f"for {what}")
    for name in finite:
        a = getattr(m, name)
        a = a.data if sp.issparse(a) else a
        if a.dtype.kind != "f":
            raise _fail(path, f"{name} is not a real float array")
        if not np.all(np.isfinite(a)):
            raise _fail(path, f"{name} contains NaN or infinity")
