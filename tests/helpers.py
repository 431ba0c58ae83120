"""Helpers the test modules share (one module: tests never import each other)."""
import os
import threading
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from pybudget.datasets import external_data_dir


def make_problem(n=60, d=15, density=0.3, seed=0, zero_rows=0):
    """Small sparse binary problem with a linear signal, labels in {-1, +1}."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, format="csr", random_state=rng)
    X.data = rng.standard_normal(X.nnz)
    if zero_rows:
        X = sp.vstack([X, sp.csr_matrix((zero_rows, d))]).tocsr()
    w = rng.standard_normal(d)
    y = np.sign(X @ w + 0.3 * rng.standard_normal(X.shape[0]))
    y[y == 0] = 1
    return X, y



def small_problem(n=60, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * (rng.uniform(size=(n, d)) < 0.8)
    y = np.where(X[:, 0] + 0.5 * X[:, 1] ** 2 > 0.3, 1.0, -1.0)
    return X, y


MASK = (1 << 64) - 1


class SplitMix:
    """Python twin of pybudget/_core/_rng.pxd."""

    def __init__(self, seed):
        self.s = seed & MASK

    def next(self):
        self.s = (self.s + 0x9E3779B97F4A7C15) & MASK
        z = self.s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def shuffle(self, a):
        for i in range(len(a) - 1, 0, -1):
            j = ((self.next() >> 32) * (i + 1)) >> 32
            a[i], a[j] = a[j], a[i]


def data_dir():
    return Path(os.environ.get("PYBUDGET_DATA", external_data_dir()))


def need_data(*names):
    """Skip (cleanly) when the benchmark data files are absent."""
    missing = [n for n in names if not (data_dir() / n).exists()]
    return pytest.mark.skipif(bool(missing), reason=f"benchmark data absent: {missing}")


@contextmanager
def pool_rendezvous(parties):
    """Prove that ``parties`` of pybudget's pool threads ran problems at the same time.

    Each pool thread (named "pybudget...", ``_core._parallel.map_threads``), on its first
    call into pybudget's code, waits until ``parties`` threads have arrived (30 s at
    most).  Yields (seen, broken): the threads that arrived, and those whose wait timed
    out.  A run on fewer threads than ``parties`` leaves ``broken`` non-empty or ``seen``
    short; with ``parties`` < 2 nothing is checked (one thread: no pool)."""
    import pybudget
    package = os.path.dirname(pybudget.__file__)
    barrier = threading.Barrier(max(parties, 1), timeout=30)
    seen, broken = set(), []

    def profile(frame, event, arg):
        name = threading.current_thread().name
        if (event != "call" or not name.startswith("pybudget") or name in seen
                or not frame.f_code.co_filename.startswith(package)):
            return
        seen.add(name)
        try:
            barrier.wait()
        except threading.BrokenBarrierError:
            broken.append(name)

    threading.setprofile(profile)      # (threads started from here on)
    try:
        yield seen, broken
    finally:
        threading.setprofile(None)
