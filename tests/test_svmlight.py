"""The LIBSVM reader (pybudget._svmlight.parse over _core._libsvm_text) against
scikit-learn's load_svmlight_file, the independent reference: the same labels, matrix,
dtypes and shape on the files both accept, and a clear error, naming the line and the
token, where ours refuses one."""
import io
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
from sklearn.datasets import load_svmlight_file

from helpers import data_dir
from pybudget import _svmlight
from pybudget._svmlight import parse

EDGE_CASES = [
    b"",
    b"# only a comment\n\n   \n",
    b"1\n-1\n",                                   # rows without features
    b"1 qid:3 2:1\n0 qid:4 1:1\n",                # query ids are skipped
    b"1 2:1 # a comment: with a colon\n-1   3:2\r\n",   # CRLF, spaces, comments
    b"1 2:0 3:1e300 5:-0.0\n",                    # explicit zeros stay
    b"+1 1:.5 2:+3 4:1E-3\n-1.5e0 +3:2\n",
    b"1 2:3",                                     # no final newline
    b"  \n 2 \t 1:4  5:6e-3 \n\n#x\n3 7:1",
    b"1 1:1\n\n\n2 2:2\n# c\n3 3:3\n",
    b"0.25 1:1 100000:2\n",
]


def _same(path_or_bytes, zero_based, dtype=np.float64, n_features=None):
    """Our reader and scikit-learn's give the same bits."""
    source = path_or_bytes if isinstance(path_or_bytes, bytes) else \
        path_or_bytes.read_bytes()
    kw = {} if n_features is None else {"n_features": n_features}
    X0, y0 = load_svmlight_file(io.BytesIO(source), zero_based=zero_based, dtype=dtype,
                                **kw)
    X, y = parse(io.BytesIO(source), n_features, zero_based, dtype, "x")
    assert X.format == "csr" and X.shape == X0.shape
    assert X.indices.dtype == X.indptr.dtype == np.int32     # (narrowed where they fit)
    assert X.data.dtype == dtype and y.dtype == np.float64
    np.testing.assert_array_equal(X.indptr, X0.indptr)
    np.testing.assert_array_equal(X.indices, X0.indices)
    np.testing.assert_array_equal(X.data, X0.data)
    np.testing.assert_array_equal(y, y0)


@pytest.mark.parametrize("zero_based", [False, True])
@pytest.mark.parametrize("text", EDGE_CASES)
def test_edge_cases_as_scikit_learn_reads_them(text, zero_based):
    _same(text, zero_based)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_random_files_as_scikit_learn_reads_them(dtype):
    """Values written in several notations (shortest repr, %.17g, %g, integers),
    ragged rows, blank and comment lines."""
    rng = np.random.default_rng(0)
    lines = []
    for i in range(3000):
        cols = np.sort(rng.choice(5000, size=rng.integers(0, 30), replace=False)) + 1
        vals = rng.standard_normal(len(cols)) * 10.0 ** rng.integers(-30, 30, len(cols))
        form = ["%r", "%.17g", "%g", "%d"][i % 4]
        pairs = " ".join(f"{c}:" + (form % (v if form != "%r" else float(v)))
                         for c, v in zip(cols, vals))
        lines.append(f"{rng.integers(-3, 4)} {pairs}" + (" # c" if i % 7 == 0 else ""))
        if i % 11 == 0:
            lines.append("" if i % 2 else "# a comment line")
    text = "\n".join(lines).encode()
    for zero_based in (False, True):
        _same(text, zero_based, dtype)
    _same(text, False, dtype, n_features=6000)


@pytest.mark.parametrize("block", [1, 7, 64])
def test_lines_across_blocks(monkeypatch, block):
    """Text read a few bytes at a time gives the same matrix, and an error's line
    number counts the lines of the blocks before."""
    text = b"".join(b"%d 1:%d 3:0.5 # c:\n\n" % (i % 3, i) for i in range(200))
    X0, y0 = parse(io.BytesIO(text), None, False, np.float64, "x")
    monkeypatch.setattr(_svmlight, "BLOCK_BYTES", block)
    X, y = parse(io.BytesIO(text), None, False, np.float64, "x")
    np.testing.assert_array_equal(y, y0)
    assert (X != X0).nnz == 0 and X.shape == X0.shape == (200, 3)
    with pytest.raises(ValueError, match=r"line 401, '2:x'"):
        parse(io.BytesIO(text + b"1 2:x\n"), None, False, np.float64, "x")
    with pytest.raises(ValueError, match=r"line 11, "):
        parse(io.BytesIO(text + b"1 2:x\n"), None, False, np.float64, "x",
              first_line=-389)


@pytest.mark.parametrize("text,where", [
    (b"1 1: 2\n", "line 1, '1:': not index:value"),
    (b"1 1 :2\n", "line 1, '1': not index:value"),
    (b"1 1:x\n", "'1:x': not index:value"),
    (b"1 1:2:3\n", "'1:2:3': not index:value"),
    (b"1 a:b\n", "'a:b': not index:value"),
    (b"1 1e1:2\n", "'1e1:2': not index:value"),
    (b"1 1:2x\n", "'1:2x': not index:value"),
    (b"1 1:\n", "'1:': not index:value"),
    (b"x 1:1\n", "'x': the label is not a number"),
    (b"1x 1:2\n", "'1x': the label is not a number"),
    (b"1 0:1\n", "'0:1': feature index 0 .*zero_based=True"),
    (b"1 -2:1\n", "'-2:1': a feature index is negative"),
    (b"1 2:1 2:3\n", "'2:3': feature indices must increase"),
    (b"1 1:1\n2 3:1 1:2\n", "line 2, '1:2': feature indices must increase"),
    (b"1 99999999999999999999:1\n", "a feature index is too large"),
    (b"1 1:1\n-1 2:nan\n", "NaN or infinity"),
    (b"inf 1:1\n", "NaN or infinity"),
    (b"1 1:1e39\n", None),                 # finite in float64, not in float32
])
def test_errors_name_the_line_and_token(text, where):
    """Files that scikit-learn refuses or reads with NaN or infinity: ours refuses
    them, naming the line and the token."""
    if where is None:
        parse(io.BytesIO(text), None, False, np.float64, "'a.txt'")
        with pytest.raises(ValueError, match="NaN or infinity"):
            parse(io.BytesIO(text), None, False, np.float32, "'a.txt'")
        return
    try:
        X, y = load_svmlight_file(io.BytesIO(text), zero_based=False)
        assert not (np.isfinite(X.data).all() and np.isfinite(y).all())
    except (ValueError, OverflowError):
        pass
    with pytest.raises(ValueError, match="'a.txt'.*" + where):
        parse(io.BytesIO(text), None, False, np.float64, "'a.txt'")


def test_n_features_smaller_than_the_file():
    with pytest.raises(ValueError, match="n_features=3, but f has feature index 5"):
        parse(io.BytesIO(b"1 5:1\n"), 3, False, np.float64, "f")
    X, _ = parse(io.BytesIO(b"1 5:1\n"), 5, False, np.float64, "f")
    assert X.shape == (1, 5)


@pytest.mark.parametrize("name", ["a9a.bz2", "w8a.bz2"])
def test_real_files_as_scikit_learn_reads_them(name):
    path = data_dir() / name
    if not path.exists():
        pytest.skip(f"no {path}")
    with _svmlight.open_binary(path) as f:
        _same(f.read(), False)


COMMA_LOCALE = "de_DE.UTF-8"


@pytest.fixture(scope="module")
def comma_locale(tmp_path_factory):
    """A directory (for LOCPATH) holding a locale whose decimal point is a comma,
    compiled here by glibc's localedef; skips where it cannot be made."""
    if sys.platform != "linux" or shutil.which("localedef") is None:
        pytest.skip("no glibc localedef to compile a comma locale")
    where = tmp_path_factory.mktemp("locales")
    made = subprocess.run(["localedef", "-i", "de_DE", "-f", "UTF-8",
                           str(where / COMMA_LOCALE)], capture_output=True)
    if not (where / COMMA_LOCALE).exists():
        pytest.skip(f"localedef could not make {COMMA_LOCALE}: {made.stderr[-200:]!r}")
    return where


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_numbers_are_read_alike_whatever_the_locale(comma_locale, dtype):
    """A program that set a locale whose decimal point is a comma (as
    locale.setlocale(locale.LC_ALL, "") does in a German session) reads 1.5 as 1.5, the
    same bits as in the C locale: the numbers are parsed in the C locale."""
    text = b"1.5 1:2.25 3:-0.5e-3\n-1 2:1e-3 4:.75\n"
    code = (
        "import io, locale, sys, numpy as np\n"
        f"assert locale.setlocale(locale.LC_ALL, {COMMA_LOCALE!r})\n"
        "assert locale.localeconv()['decimal_point'] == ','\n"
        "from pybudget._svmlight import parse\n"
        f"X, y = parse(io.BytesIO({text!r}), None, False, np.{dtype}, 'f')\n"
        "sys.stdout.write(repr((y.tolist(), X.toarray().tolist())))\n")
    env = dict(os.environ, LOCPATH=str(comma_locale))
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    X, y = parse(io.BytesIO(text), None, False, np.dtype(dtype), "f")
    assert run.stdout == repr((y.tolist(), X.toarray().tolist()))
