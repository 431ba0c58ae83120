"""Threads, Ctrl-C, repeated fits and reproducibility across processes (behaviour only;
the timings are measured by bench/robustness.py)."""
import hashlib
import json
import os
import signal
import subprocess
import tempfile
import sys
import threading
from pathlib import Path

import pytest

from pybudget import BudgetSVC, LinearSVC
from pybudget.datasets import load

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def a9a():
    X, y, _, _ = load("a9a")
    return X[:3000], y[:3000]


def _model_bytes(est):
    if isinstance(est, LinearSVC):
        return est.coef_.tobytes() + est.intercept_.tobytes()
    return est.support_vectors_.tobytes() + est.dual_coef_.tobytes()


MAKERS = [
    lambda: LinearSVC(C=1.0, tol=0.01, random_state=3),
    lambda: LinearSVC(C=1.0, tol=0.01, selection="shrinking", random_state=3),
    lambda: BudgetSVC(budget=30, random_state=3),
    lambda: BudgetSVC(budget=30, solver="bsca", random_state=3),
]


def test_concurrent_fits_in_threads_match_sequential(a9a):
    X, y = a9a
    expected = [_model_bytes(make().fit(X, y)) for make in MAKERS]
    results = {}

    def work(k, make):
        results[k] = _model_bytes(make().fit(X, y))
    threads = [threading.Thread(target=work, args=(k, m))
               for k, m in enumerate(MAKERS + MAKERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [results[k] for k in range(len(MAKERS))] == expected
    assert [results[k + len(MAKERS)] for k in range(len(MAKERS))] == expected


@pytest.mark.skipif(os.name == "nt", reason="SIGINT delivery differs on Windows")
@pytest.mark.parametrize("kind", ["linear", "bsgd", "linear-ovr", "bsca-ovr", "bsgd-team"])
@pytest.mark.parametrize("refit", [False, True])
def test_ctrl_c_leaves_estimator_unfitted_or_previous(kind, refit):
    """SIGINT during a long fit raises KeyboardInterrupt in the caller and never leaves a
    half-updated estimator: still unfitted, or still the previous fit bit for bit.
    (The solver loops check for a signal every 1024 steps; bench/robustness.py measures
    the latency.)  "-ovr": one-vs-rest on n_jobs=2 worker threads, which never see the
    signal themselves: the main thread stops them; "-team": one budgeted fit on a team
    of 2, whose thread 0 sees it and releases the helper."""
    p = subprocess.Popen([sys.executable, "-m", "pybudget._interrupt_child", kind,
                          "refit" if refit else "fresh"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         cwd=tempfile.gettempdir())
    try:
        assert p.stdout.readline().strip() == "READY"
        import time
        time.sleep(0.5)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=300)  # a hang guard, not a timing threshold
    finally:
        if p.poll() is None:
            p.kill()
    res = json.loads(out.strip().splitlines()[-1])
    assert res["interrupted"], err
    assert res["fitted"] == refit
    if refit:
        assert res["previous_fit_intact"] and res["finite"]


REPRO = r"""
import hashlib, warnings
warnings.simplefilter("ignore")
from pybudget import BudgetSVC, LinearSVC
from pybudget.datasets import load
X, y, _, _ = load("a9a")
X, y = X[:2000], y[:2000]
parts = []
for est in (LinearSVC(random_state=11), LinearSVC(selection="uniform", random_state=11),
            BudgetSVC(budget=25, epochs=2, random_state=11),
            BudgetSVC(budget=25, solver="bsca", random_state=11)):
    est.fit(X, y)
    arrays = ((est.coef_, est.intercept_) if isinstance(est, LinearSVC)
              else (est.support_vectors_, est.dual_coef_))
    parts.append(hashlib.sha256(b"".join(a.tobytes() for a in arrays)).hexdigest())
print(" ".join(parts))
"""


def test_same_random_state_same_model_across_processes():
    outs = set()
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        r = subprocess.run([sys.executable, "-c", REPRO], capture_output=True, text=True,
                           env=env, check=True, cwd=tempfile.gettempdir())
        outs.add(r.stdout.strip())
    assert len(outs) == 1
    # and the same as in this process
    X, y, _, _ = load("a9a")
    X, y = X[:2000], y[:2000]
    mine = hashlib.sha256(_model_bytes(BudgetSVC(budget=25, epochs=2,
                                                 random_state=11).fit(X, y))).hexdigest()
    assert mine == outs.pop().split()[2]


def _rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc")
def test_repeated_fits_do_not_grow_memory(a9a, tmp_path):
    """A leak check with a generous bound (bench/robustness.py measures 200 cycles)."""
    import gc

    import pybudget
    X, y = a9a[0][:800], a9a[1][:800]

    def cycle(i):
        for est in (LinearSVC(random_state=i), BudgetSVC(budget=20, random_state=i),
                    BudgetSVC(budget=20, solver="bsca", random_state=i)):
            est.fit(X, y).predict(X)
            pybudget.save(est, tmp_path / "m")
            pybudget.load(tmp_path / "m").predict(X[:10])
    for i in range(10):
        cycle(i)
    gc.collect()
    before = _rss_mb()
    for i in range(60):
        cycle(i)
    gc.collect()
    assert _rss_mb() - before < 10.0
