import json
import os
import pickle
import stat
import zipfile

import numpy as np
import pytest

import pybudget
from pybudget import BudgetSVC, LinearSVC, load, save
from pybudget import io as pio
from helpers import make_problem


def _multiclass(n=90, d=6, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.argmax(X[:, :3], axis=1)
    return X, y


MODELS = [
    ("linear-binary", lambda: LinearSVC(C=0.5, random_state=0), "binary"),
    ("linear-sq-multi", lambda: LinearSVC(loss="squared_hinge", selection="shrinking",
                                          class_weight="balanced", random_state=1), "multi"),
    ("bsgd-binary", lambda: BudgetSVC(budget=10, random_state=0, epochs=2), "binary"),
    ("bsgd-multi", lambda: BudgetSVC(budget=8, gamma=0.3, random_state=0), "multi"),
    ("bsca-multi", lambda: BudgetSVC(solver="bsca", budget=6, maintenance="remove",
                                     random_state=0), "multi"),
    ("bsca-checkpoints", lambda: BudgetSVC(solver="bsca", budget=6, checkpoints=4,
                                           random_state=0), "multi"),
]


def _data(kind):
    if kind == "binary":
        X, y = make_problem(n=80, d=12)
        return X, y
    return _multiclass()


@pytest.mark.parametrize("name,make,kind", MODELS, ids=[m[0] for m in MODELS])
def test_round_trip_bit_identical(tmp_path, name, make, kind):
    X, y = _data(kind)
    est = make().fit(X, y)
    path = tmp_path / "m.pbm"
    save(est, path)
    back = load(path)
    assert type(back) is type(est)
    assert back.get_params() == est.get_params()
    np.testing.assert_array_equal(back.classes_, est.classes_)
    assert back.classes_.dtype == est.classes_.dtype
    d1, d2 = est.decision_function(X), back.decision_function(X)
    assert d1.tobytes() == d2.tobytes()  # bit for bit
    np.testing.assert_array_equal(back.predict(X), est.predict(X))
    assert back.n_features_in_ == est.n_features_in_
    if isinstance(est, BudgetSVC):
        ck = est.checkpoint_
        assert (back.checkpoint_ is None) if ck is None else np.array_equal(back.checkpoint_, ck)
    # the archive holds no pickle: only the JSON header and .npy arrays
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
        assert names[0] == "header.json" and all(n.endswith(".npy") for n in names[1:])
        header = json.loads(z.read("header.json"))
    assert header["format"] == "pybudget-model" and header["version"] == 3
    assert header["estimator"] == type(est).__name__


@pytest.mark.parametrize("labels", [
    np.array(["spam", "ham", "eggs"]),
    np.array(["yes", "no"], dtype=object),
    np.array([3, 7]),
    np.array([-1.0, 2.0]),
    np.array([True, False]),
    np.array([10, 20, 30], dtype=np.uint8),
], ids=["str", "object-str", "int", "float", "bool", "uint8"])
def test_label_types(tmp_path, labels):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 4))
    y = labels[np.arange(60) % labels.shape[0]]
    X[np.arange(60), np.arange(60) % labels.shape[0]] += 3.0
    for est in (LinearSVC(random_state=0), BudgetSVC(budget=5, random_state=0)):
        est.fit(X, y)
        save(est, tmp_path / "m")
        back = load(tmp_path / "m")
        assert back.classes_.dtype == est.classes_.dtype
        assert back.classes_.tolist() == est.classes_.tolist()
        p1, p2 = est.predict(X), back.predict(X)
        assert p1.dtype == p2.dtype and p1.tolist() == p2.tolist()
        assert [type(v) for v in p1.tolist()] == [type(v) for v in p2.tolist()]


def test_pickle_round_trip():
    X, y = make_problem()
    for est in (LinearSVC(random_state=0).fit(X, y), BudgetSVC(budget=7, random_state=0).fit(X, y),
                BudgetSVC(budget=7, random_state=0).partial_fit(X, y, classes=[-1, 1])):
        back = pickle.loads(pickle.dumps(est))
        assert back.decision_function(X).tobytes() == est.decision_function(X).tobytes()


def test_partial_fit_continues_after_load(tmp_path):
    X, y = make_problem(n=100)
    a = BudgetSVC(budget=9, random_state=3).partial_fit(X[:50], y[:50], classes=[-1, 1])
    save(a, tmp_path / "m")
    b = load(tmp_path / "m")
    a.partial_fit(X[50:], y[50:])
    b.partial_fit(X[50:], y[50:])
    assert a.decision_function(X).tobytes() == b.decision_function(X).tobytes()


def test_params_with_class_weight_dict_and_generator(tmp_path):
    X, y = make_problem()
    est = LinearSVC(class_weight={-1.0: 2.0, 1.0: 0.5},
                    random_state=np.random.default_rng(0)).fit(X, y)
    save(est, tmp_path / "m")
    back = load(tmp_path / "m")
    assert back.class_weight == {-1.0: 2.0, 1.0: 0.5}
    assert back.random_state is None
    assert back.decision_function(X).tobytes() == est.decision_function(X).tobytes()


def test_file_object_and_no_half_written_file(tmp_path):
    import io
    X, y = make_problem()
    est = LinearSVC(random_state=0).fit(X, y)
    buf = io.BytesIO()
    save(est, buf)
    buf.seek(0)
    assert load(buf).decision_function(X).tobytes() == est.decision_function(X).tobytes()
    save(est, tmp_path / "m")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]  # temp file renamed away


def test_save_refuses_unfitted_and_foreign(tmp_path):
    with pytest.raises(ValueError, match="not fitted"):
        save(LinearSVC(), tmp_path / "m")
    from sklearn.linear_model import LogisticRegression
    with pytest.raises(TypeError, match="save supports LinearSVC.*got LogisticRegression"):
        save(LogisticRegression(), tmp_path / "m")
    with pytest.raises(FileNotFoundError):
        load(tmp_path / "absent")


@pytest.fixture
def saved(tmp_path):
    X, y = make_problem()
    est = BudgetSVC(budget=7, random_state=0).fit(X, y)
    path = tmp_path / "m"
    save(est, path)
    return path


def test_truncated_file_is_a_clear_error(saved):
    data = saved.read_bytes()
    for cut in list(range(0, len(data), 13)) + [len(data) - 1]:
        saved.write_bytes(data[:cut])
        with pytest.raises(ValueError, match="not a valid pybudget model file"):
            load(saved)


def test_corrupted_bytes_are_detected_or_harmless(saved):
    """Flip bytes all over the file: loading either raises a ValueError or (for bytes
    nothing depends on, such as ZIP timestamps) gives the very same model."""
    data = saved.read_bytes()
    X, _ = make_problem()
    reference = load(saved).decision_function(X).tobytes()
    detected = 0
    for pos in range(0, len(data), 5):
        for flip in (0xFF, 0x01):
            bad = bytearray(data)
            bad[pos] ^= flip
            saved.write_bytes(bytes(bad))
            try:
                m = load(saved)
            except ValueError as e:
                assert "pybudget model file" in str(e)
                detected += 1
            else:
                assert m.decision_function(X).tobytes() == reference
    assert detected > 0.7 * 2 * len(range(0, len(data), 5))


def _rewrite(path, edit_header=None, edit_array=None):
    with zipfile.ZipFile(path) as z:
        files = {n: z.read(n) for n in z.namelist()}
    header = json.loads(files["header.json"])
    if edit_header:
        edit_header(header)
    files["header.json"] = json.dumps(header).encode()
    if edit_array:
        edit_array(files)
    with zipfile.ZipFile(path, "w") as z:
        for n, b in files.items():
            z.writestr(n, b)


def test_newer_version_is_refused(saved):
    _rewrite(saved, lambda h: h.update(version=pio.VERSION + 1, pybudget_version="9.0"))
    with pytest.raises(ValueError, match="newer pybudget"):
        load(saved)
    with pytest.raises(ValueError, match="newer pybudget"):
        pio.read_header(saved)


def test_tampered_array_fails_checksum(saved):
    def edit(files):
        a = bytearray(files["dual_coef_.npy"])
        a[-1] ^= 1
        files["dual_coef_.npy"] = bytes(a)
    _rewrite(saved, edit_array=edit)
    with pytest.raises(ValueError, match="checksum mismatch"):
        load(saved)


@pytest.mark.parametrize("edit,match", [
    (lambda h: h.update(format="other"), "format"),
    (lambda h: h.update(estimator="SVC"), "unknown estimator"),
    (lambda h: h["attributes"].update(n_features_in_=99), "shape"),
    (lambda h: h["params"].update(kernel="poly"), "unknown BudgetSVC parameters"),
    (lambda h: h["attributes"].pop("gamma_"), "gamma_ is missing"),
    (lambda h: h["classes"].update(values=[1]), "classes"),
    (lambda h: h["classes"].update(values=[1.0, -1.0]), "sorted and distinct"),
    (lambda h: h["attributes"].update(n_features_in_=5.7), "n_features_in_=5.7"),
    (lambda h: h["attributes"].update(_t=-3), "step count"),
])
def test_inconsistent_header(saved, edit, match):
    _rewrite(saved, edit)
    with pytest.raises(ValueError, match=match):
        load(saved)


def test_not_a_zip(tmp_path):
    p = tmp_path / "m"
    p.write_text("1 1:0.5\n")
    with pytest.raises(ValueError, match="not a ZIP archive"):
        load(p)


def test_public_names():
    assert pybudget.save is save and pybudget.load is load
    assert {"save", "load", "stream_fit"} <= set(pybudget.__all__)


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_saved_file_has_the_usual_permissions(tmp_path):
    """Like any file the user creates (umask applies), not private as mkstemp makes it."""
    X, y = make_problem(n=40, d=4, seed=3)
    old = os.umask(0o022)
    try:
        save(LinearSVC().fit(X, y), tmp_path / "m.pb")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "m.pb").st_mode) == 0o644
    # overwriting keeps the file's own permissions
    os.chmod(tmp_path / "m.pb", 0o600)
    save(LinearSVC().fit(X, y), tmp_path / "m.pb")
    assert stat.S_IMODE(os.stat(tmp_path / "m.pb").st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["m.pb"]   # no temporary left


def test_complex_array_with_valid_checksum_is_refused(saved):
    """A hand-made file whose header and checksums agree still needs real arrays."""
    import hashlib
    import io as _io
    with zipfile.ZipFile(saved) as z:
        header = json.loads(z.read("header.json"))
    spec = header["arrays"]["dual_coef_"]
    with zipfile.ZipFile(saved) as z:
        a = np.load(_io.BytesIO(z.read(spec.get("file", "dual_coef_.npy"))))
    buf = _io.BytesIO()
    np.save(buf, a.astype(np.complex128))
    blob = buf.getvalue()

    def edit_header(h):
        h["arrays"]["dual_coef_"].update(dtype="<c16", sha256=hashlib.sha256(blob).hexdigest())

    def edit_array(files):
        files[spec.get("file", "dual_coef_.npy")] = blob
    _rewrite(saved, edit_header, edit_array)
    with pytest.raises(ValueError, match="not a real float array"):
        load(saved)
