import bz2
import gzip
import lzma

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file

from pybudget.datasets import EMBEDDED, available, load, load_svmlight


@pytest.mark.parametrize("name", sorted(EMBEDDED))
def test_embedded_sets_load(name):
    X, y, Xt, yt = load(name)
    assert sp.issparse(X) and X.shape[0] == y.shape[0] > 1000
    assert Xt.shape[1] == X.shape[1] and Xt.shape[0] == yt.shape[0] > 500
    assert set(np.unique(y)) == {-1.0, 1.0}
    assert name in available()


def test_embedded_a9a_is_the_real_a9a():
    X, y, Xt, yt = load("a9a")
    assert X.shape == (32561, 123) and X.nnz == 451592
    assert Xt.shape == (16281, 123) and int((y == 1).sum()) == 7841


@pytest.mark.parametrize("opener,suffix", [(open, ""), (gzip.open, ".gz"), (bz2.open, ".bz2"),
                                           (lzma.open, ".xz")])
def test_load_svmlight_compressions(tmp_path, opener, suffix):
    X = sp.random(20, 7, density=0.4, format="csr", random_state=0)
    y = np.arange(20) % 2
    path = tmp_path / f"d.svm{suffix}"
    with opener(path, "wb") as f:
        dump_svmlight_file(X, y, f, zero_based=False)
    X2, y2 = load_svmlight(path, n_features=7)
    np.testing.assert_allclose(X2.toarray(), X.toarray())
    np.testing.assert_array_equal(y2, y)
    X3, _, Xt, _ = load(f"{path},{path}")
    assert Xt.shape == X3.shape


def test_unknown_data_set():
    with pytest.raises(ValueError, match="unknown data set 'nope'"):
        load("nope")
    with pytest.raises(FileNotFoundError):
        load_svmlight("/nonexistent/file.svm")


def test_indices_are_one_based_for_train_and_test_alike(tmp_path):
    """One convention for every file (LIBSVM's), so a test file can never be read with
    a different column offset than its training file."""
    zero = tmp_path / "zero.txt"
    zero.write_text("1 0:0.5 3:1.2\n-1 1:1\n")
    with pytest.raises(ValueError, match="zero.txt.*1-based"):
        load_svmlight(zero)
    with pytest.raises(TypeError, match="zero_based"):
        load_svmlight(zero, zero_based="auto")
    X, y = load_svmlight(zero, zero_based=True)
    np.testing.assert_array_equal(X.toarray(), [[0.5, 0, 0, 1.2], [0, 1, 0, 0]])
    one = tmp_path / "one.txt"
    one.write_text("1 1:0.5 3:1.2\n-1 2:1\n")
    with pytest.raises(ValueError, match="zero.txt"):
        load(f"{one},{zero}")


@pytest.mark.parametrize("suffix,damage", [(".gz", lambda b: b[:-12]),
                                           (".xz", lambda b: b[:20] + b"x" * 40),
                                           (".bz2", lambda b: b[:30])])
def test_damaged_compressed_files_are_clear_errors(tmp_path, suffix, damage):
    opener = {".gz": gzip.open, ".xz": lzma.open, ".bz2": bz2.open}[suffix]
    path = tmp_path / f"data.txt{suffix}"
    with opener(path, "wb") as f:
        f.write(b"".join(b"%d 1:%d 2:0.5\n" % (i % 2, i) for i in range(2000)))
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(ValueError, match="data.txt"):
        load_svmlight(path)


def test_index_beyond_int64_is_a_clear_error(tmp_path):
    path = tmp_path / "big.txt"
    path.write_text("1 99999999999999999999:1\n-1 1:1\n")
    with pytest.raises(ValueError, match="big.txt"):
        load_svmlight(path)


def test_load_svmlight_refuses_nan_like_the_streaming_reader(tmp_path):
    from pybudget.datasets import load_svmlight
    from pybudget.stream import iter_svmlight_chunks
    path = tmp_path / "nan.txt"
    path.write_text("1 1:0.5\n-1 2:nan\n")
    with pytest.raises(ValueError, match="NaN or infinity"):
        load_svmlight(path)
    with pytest.raises(ValueError, match="NaN or infinity"):
        list(iter_svmlight_chunks(path))
