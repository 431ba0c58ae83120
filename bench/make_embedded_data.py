"""Build the data sets embedded in pybudget/datasets/data from ../shared/data.

a9a is copied as is.  debian-lib-small is a seeded random subset of debian-lib
(train and test rows sampled from their own files) restricted to the features that
occur in the sampled training rows, written as bzip2 LIBSVM text.

    python bench/make_embedded_data.py [--data-dir DIR]
"""
import argparse
import bz2
import shutil
from pathlib import Path

import numpy as np

from pybudget.datasets import DATA_DIR, external_data_dir, load_svmlight

N_TRAIN, N_TEST, SEED = 5000, 1500, 20261122


def write_bz2(X, y, path):
    # Shortest round-trip float repr keeps the file small (the source has 6 digits).
    lines = []
    for i in range(X.shape[0]):
        row = X.getrow(i)
        feats = " ".join(f"{j + 1}:{v!r}" for j, v in zip(row.indices, row.data.tolist()))
        lines.append(f"{int(y[i])} {feats}".rstrip())
    path.write_bytes(bz2.compress(("\n".join(lines) + "\n").encode(), 9))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data-dir", type=Path, default=external_data_dir())
    a = ap.parse_args()
    DATA_DIR.mkdir(exist_ok=True)
    for f in ("a9a.bz2", "a9a.t.bz2"):
        shutil.copy(a.data_dir / f, DATA_DIR / f)
    rng = np.random.default_rng(SEED)
    X, y = load_svmlight(a.data_dir / "debian-lib.train.bz2")
    Xt, yt = load_svmlight(a.data_dir / "debian-lib.test.bz2", n_features=X.shape[1])
    tr = np.sort(rng.choice(X.shape[0], N_TRAIN, replace=False))
    te = np.sort(rng.choice(Xt.shape[0], N_TEST, replace=False))
    X, y, Xt, yt = X[tr], y[tr], Xt[te], yt[te]
    used = np.flatnonzero(np.diff(X.tocsc().indptr))
    X, Xt = X[:, used], Xt[:, used]
    write_bz2(X, y, DATA_DIR / "debian-lib-small.train.bz2")
    write_bz2(Xt, yt, DATA_DIR / "debian-lib-small.test.bz2")
    for p in sorted(DATA_DIR.iterdir()):
        print(f"{p.name}: {p.stat().st_size} bytes")


if __name__ == "__main__":
    main()
