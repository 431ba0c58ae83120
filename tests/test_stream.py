import bz2
import gzip
import lzma

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file, load_svmlight_file
from sklearn.linear_model import SGDClassifier

import pybudget
from pybudget import BudgetSVC, LinearSVC, stream_fit
from pybudget import stream as S
from pybudget.budget.svm import scale_gamma
from helpers import make_problem


@pytest.fixture
def libsvm_file(tmp_path):
    X, y = make_problem(n=230, d=17, density=0.4, seed=4)
    path = tmp_path / "train.txt"
    dump_svmlight_file(X, y, str(path), zero_based=False)
    X, y = load_svmlight_file(str(path), n_features=X.shape[1])  # as written (%.16g)
    return path, X, y


def test_chunks_reassemble_the_file(libsvm_file):
    path, X, y = libsvm_file
    chunks = list(S.iter_svmlight_chunks(path, 50, X.shape[1]))
    assert [c[0].shape[0] for c in chunks] == [50, 50, 50, 50, 30]
    assert all(c[0].shape[1] == X.shape[1] for c in chunks)
    Xs = sp.vstack([c[0] for c in chunks]).tocsr()
    assert (Xs != X).nnz == 0
    np.testing.assert_array_equal(np.concatenate([c[1] for c in chunks]), y)


@pytest.mark.parametrize("opener,suffix", [(gzip.open, ".gz"), (bz2.open, ".bz2"),
                                           (lzma.open, ".xz")])
def test_compressed_files_and_comments(tmp_path, opener, suffix):
    text = b"# a comment line\n1 1:0.5 3:2\n\n-1 2:1.5 # trailing comment\n1 3:-1\n"
    path = tmp_path / f"f.txt{suffix}"
    with opener(path, "wb") as f:
        f.write(text)
    chunks = list(S.iter_svmlight_chunks(path, 2, 3))
    assert [c[0].shape for c in chunks] == [(2, 3), (1, 3)]
    X = sp.vstack([c[0] for c in chunks]).toarray()
    np.testing.assert_array_equal(X, [[0.5, 0, 2], [0, 1.5, 0], [0, 0, -1]])
    info = S.scan_svmlight(path, 2)
    assert info["n_rows"] == 3 and info["n_features"] == 3
    assert info["classes"].tolist() == [-1.0, 1.0]


def test_stream_fit_equals_partial_fit_on_the_same_chunks(libsvm_file):
    path, X, y = libsvm_file
    a = stream_fit(BudgetSVC(budget=12, gamma=0.2, random_state=5), path, chunk_size=60)
    b = BudgetSVC(budget=12, gamma=0.2, random_state=5)
    for s in range(0, X.shape[0], 60):
        b.partial_fit(X[s:s + 60], y[s:s + 60], classes=np.array([-1.0, 1.0]))
    assert a.decision_function(X).tobytes() == b.decision_function(X).tobytes()
    assert a.n_iter_ == 4 and a.support_vectors_.shape[0] <= 12


def test_gamma_scale_is_the_whole_file_value(libsvm_file):
    path, X, _ = libsvm_file
    est = stream_fit(BudgetSVC(budget=10, random_state=0), path, chunk_size=40)
    assert est.gamma == "scale"  # the parameter is left as the user set it
    assert est.gamma_ == pytest.approx(scale_gamma(X), rel=1e-12)
    assert est.score(X, load_svmlight_file(str(path))[1]) > 0.6


def test_no_first_pass_when_features_and_classes_given(libsvm_file, monkeypatch):
    path, X, y = libsvm_file

    def boom(*a, **k):
        raise AssertionError("scan should not run")
    monkeypatch.setattr(S, "scan_svmlight", boom)
    est = stream_fit(BudgetSVC(budget=10, gamma=0.5, random_state=0), path, chunk_size=100,
                     n_features=X.shape[1], classes=[-1, 1])
    assert est.n_features_in_ == X.shape[1] and est.n_iter_ == 3


def test_epochs_and_verbose_progress(libsvm_file, capsys):
    path, X, y = libsvm_file
    est = stream_fit(BudgetSVC(budget=10, random_state=0), path, chunk_size=100, epochs=2,
                     verbose=1)
    assert est.n_iter_ == 6
    err = capsys.readouterr().err
    assert "epoch 2/2" in err and "ETA" in err and "100% done" in err


def test_multiclass_and_other_partial_fit_estimators(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((150, 5))
    y = np.argmax(X[:, :3], axis=1)
    path = tmp_path / "m.txt"
    dump_svmlight_file(X, y, str(path), zero_based=False)
    est = stream_fit(BudgetSVC(budget=15, random_state=0), path, chunk_size=40)
    assert est.classes_.tolist() == [0.0, 1.0, 2.0] and est.score(X, y) > 0.6
    sgd = stream_fit(SGDClassifier(random_state=0), path, chunk_size=40)
    assert sgd.classes_.tolist() == [0.0, 1.0, 2.0]


def test_errors(libsvm_file, tmp_path):
    path, X, y = libsvm_file
    with pytest.raises(TypeError, match="partial_fit"):
        stream_fit(LinearSVC(), path)
    with pytest.raises(TypeError, match="solver='bsca'"):
        stream_fit(BudgetSVC(solver="bsca"), path)
    with pytest.raises(ValueError, match="chunk_size"):
        stream_fit(BudgetSVC(), path, chunk_size=0)
    with pytest.raises(ValueError, match="epochs"):
        stream_fit(BudgetSVC(), path, epochs=0)
    with pytest.raises(FileNotFoundError):
        stream_fit(BudgetSVC(), tmp_path / "absent.txt")
    with pytest.raises(ValueError, match="n_features"):
        stream_fit(BudgetSVC(), path, n_features=X.shape[1] - 5, classes=[-1, 1])
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing\n\n")
    with pytest.raises(ValueError, match="no data rows"):
        stream_fit(BudgetSVC(), empty)
    bad = tmp_path / "bad.txt"
    bad.write_text("1 1:0.5\n1 2:x\n-1 1:1\n")
    with pytest.raises(ValueError, match="bad.txt' as a LIBSVM file: line 2, '2:x'"):
        stream_fit(BudgetSVC(), bad)
    nan = tmp_path / "nan.txt"
    nan.write_text("1 1:0.5\n-1 2:nan\n")
    with pytest.raises(ValueError, match="NaN"):
        stream_fit(BudgetSVC(), nan)
    with pytest.raises(ValueError, match="not in classes"):
        stream_fit(BudgetSVC(gamma=1.0), path, n_features=X.shape[1], classes=[1, 2])
    truncated = tmp_path / "cut.txt.gz"
    with gzip.open(truncated, "wb") as f:
        f.write(b"".join(b"%d 1:%d\n" % (2 * (i % 2) - 1, i) for i in range(5000)))
    truncated.write_bytes(truncated.read_bytes()[:-12])
    with pytest.raises(ValueError, match="cut.txt.gz"):
        stream_fit(BudgetSVC(), truncated)
    with pytest.raises(TypeError, match="zero_based"):   # not sklearn's per-chunk "auto"
        stream_fit(BudgetSVC(), path, zero_based="auto")
    huge = tmp_path / "huge.txt"
    huge.write_text("1 99999999999999999999:1\n-1 1:1\n")
    with pytest.raises(ValueError, match="huge.txt"):
        stream_fit(BudgetSVC(), huge)


def test_public_name():
    assert pybudget.stream_fit is stream_fit
