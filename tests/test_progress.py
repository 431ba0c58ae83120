"""Progress lines: elapsed time and, where known, the peak resident memory."""
import os
import re
import sys

import numpy as np
import pytest
from sklearn.datasets import make_classification

from pybudget import BudgetSVC, LinearSVC, LinearSVR, LogisticRegression
from pybudget._core import _progress

LINUX = sys.platform.startswith("linux")
USAGE = re.compile(r"\d+\.\d\ds elapsed, peak memory \d+ MiB")


def _vm_hwm_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 2**10     # kB
    raise AssertionError("no VmHWM")


@pytest.mark.skipif(not LINUX, reason="VmHWM is Linux's")
def test_peak_rss_is_the_kernels_high_water_mark():
    # the kernel's resident-page counters are per-CPU approximations, read a little
    # differently by getrusage and /proc: agreement to a few pages, not to the byte
    slack = 4.0
    before = _vm_hwm_mb()
    peak = _progress.peak_rss_mb()
    after = _vm_hwm_mb()
    assert before - slack <= peak <= after + slack


def test_usage_without_a_memory_figure(monkeypatch):
    monkeypatch.setattr(_progress, "resource", None)     # as on Windows
    assert _progress.peak_rss_mb() is None
    assert _progress.usage(2.041) == "2.04s elapsed"


@pytest.fixture(scope="module")
def data():
    return make_classification(n_samples=300, n_features=8, n_informative=5, n_classes=3,
                               random_state=0)


def _lines(err):
    return [line for line in err.splitlines() if line.startswith("[pybudget]")]


@pytest.mark.skipif(not LINUX, reason="the memory figure is checked where it is known")
@pytest.mark.parametrize("make", [
    lambda: LinearSVC(verbose=1, random_state=0, n_jobs=2),
    lambda: LinearSVC(verbose=2, random_state=0),
    lambda: LinearSVC(verbose=1, multi_class="crammer_singer", random_state=0),
    lambda: LogisticRegression(verbose=1, random_state=0),
    lambda: BudgetSVC(verbose=1, budget=20, epochs=2, random_state=0),
    lambda: BudgetSVC(verbose=1, solver="bsca", budget=20, random_state=0, n_jobs=2),
], ids=["ovr", "sweeps", "cs", "logistic", "bsgd", "bsca"])
def test_verbose_lines_report_time_and_memory(make, data, capfd):
    est = make()
    est.fit(*data)
    lines = _lines(capfd.readouterr().err)
    assert lines and all(USAGE.search(line) for line in lines), lines
    if est.get_params().get("verbose") == 2:
        assert any("sweep 1:" in line for line in lines)


@pytest.mark.skipif(not LINUX, reason="the memory figure is checked where it is known")
def test_svr_and_stream_lines(data, tmp_path, capfd):
    from sklearn.datasets import dump_svmlight_file

    from pybudget import stream_fit
    X, y = data
    LinearSVR(verbose=1).fit(X, y.astype(float))
    path = tmp_path / "d.txt"
    dump_svmlight_file(X, y, str(path), zero_based=False)
    stream_fit(BudgetSVC(budget=20, random_state=0), path, chunk_size=100, verbose=1)
    lines = _lines(capfd.readouterr().err)
    assert len(lines) >= 5 and all(USAGE.search(line) for line in lines), lines


def test_quiet_by_default(data, capfd):
    LinearSVC(random_state=0).fit(*data)
    assert capfd.readouterr().err == ""


def test_worker_lines_do_not_interleave(data, capfd):
    """Each progress line is one write: n_jobs workers print whole lines."""
    X, y = data
    X = np.repeat(X, 3, axis=0)
    y = np.repeat(y, 3)
    LinearSVC(verbose=2, random_state=0, n_jobs=2).fit(X, y)
    for line in capfd.readouterr().err.splitlines():
        assert line.count("[pybudget]") == 1 and line.startswith("[pybudget]"), line


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs /proc")
def test_cli_train_reports_memory(data, tmp_path, capsys):
    from sklearn.datasets import dump_svmlight_file

    from pybudget.cli import main
    X, y = data
    dump_svmlight_file(X, y, str(tmp_path / "t.txt"), zero_based=False)
    assert main(["train", "-n", "2", str(tmp_path / "t.txt"), str(tmp_path / "m")]) == 0
    err = capsys.readouterr().err
    trained = [line for line in err.splitlines() if "trained" in line]
    assert trained and USAGE.search(trained[0]), err
