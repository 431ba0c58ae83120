"""Shared helpers of the bench/ scripts: machine record, output files, timing, and a
liblinear-official runner that captures what liblinear prints (sweeps, objective,
whether it stopped at its iteration cap)."""
import ctypes
import json
import os
import platform
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).parent / "results"


def results_dir(group):
    """Default output folder of one study: bench/results/<group>/ (see bench/README.md)."""
    return RESULTS / group


def machine():
    import scipy
    import sklearn

    import pybudget
    info = {"python": sys.version.split()[0], "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
            "cpus": os.cpu_count(), "numpy": np.__version__, "scipy": scipy.__version__,
            "sklearn": sklearn.__version__, "pybudget": pybudget.__version__,
            "date": time.strftime("%Y-%m-%d %H:%M:%S"),
            "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None}
    try:
        from importlib.metadata import version
        info["liblinear-official"] = version("liblinear-official")
    except Exception:
        info["liblinear-official"] = None
    return info


def write_outputs(stem, record, markdown, out_dir=RESULTS):
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{stem}.json").write_text(json.dumps(record, indent=1, default=float))
    (out_dir / f"{stem}.md").write_text(markdown)
    print(f"wrote {out_dir / stem}.json and .md", file=sys.stderr)


def median_min_max(values):
    return float(np.median(values)), float(np.min(values)), float(np.max(values))


def have_liblinear():
    try:
        import liblinear.liblinearutil  # noqa: F401
        return True
    except ImportError:
        return False


_libc = ctypes.CDLL(None)


def liblinear_train(prob, options):
    """liblinear-official ``train(prob, options)`` (no -q) with its C stdout captured.

    Returns (model, seconds, info) with info = {n_iter, objective (dual, liblinear's
    minimisation sign flipped to maximisation), capped}.  The timing covers train()
    only; printing a few lines costs microseconds.
    """
    from liblinear import liblinearutil as ll
    sys.stdout.flush()
    saved = os.dup(1)
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), 1)
        try:
            t0 = time.perf_counter()
            model = ll.train(prob, options)
            elapsed = time.perf_counter() - t0
            _libc.fflush(None)
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        tmp.seek(0)
        text = tmp.read().decode(errors="replace")
    iters = [int(m) for m in re.findall(r"#iter\s*=\s*(\d+)", text)]
    objs = [float(m) for m in re.findall(r"Objective value\s*=\s*(\S+)", text)]
    info = {"n_iter": iters[-1] if iters else None,
            "objective": -objs[-1] if objs else None,
            "capped": "reaching max number of iterations" in text}
    return model, elapsed, info


def liblinear_coef(model, n_features):
    """(w, b) of a binary liblinear model, oriented so that w·x + b > 0 means the
    larger label (pybudget's convention)."""
    labels = model.get_labels()
    w = np.array([model.get_decfun_coef(j + 1) for j in range(n_features)])
    b = model.get_decfun_bias()
    if labels[0] < labels[1]:
        w, b = -w, -b
    return w, b
