"""Ctrl-C probe, run as ``python -m pybudget._interrupt_child KIND fresh|refit``.

Used by tests/test_robustness.py (behaviour) and bench/robustness.py (latency): starts a
long fit on a9a (KIND "linear": tol 1e-9 at C = 1000; "bsgd": budget 500, 10 epochs;
"bsca": budget 500, 40 epochs; "linear-ovr" and "bsca-ovr": the same one-vs-rest on
n_jobs=2 threads, a9a's label combined with its first feature into four classes, so
that the signal reaches the main thread while worker threads run the solvers;
"bsgd-team": "bsgd" on a team of n_jobs=2 threads), prints
READY just before it, and prints one JSON line
when the fit returns or is interrupted: interrupted, caught (time.time() of the
KeyboardInterrupt), fitted, finite (decisions of a fitted model) and, with "refit" (a
quick fit on 300 rows comes first), previous_fit_intact (its decisions bit for bit).
"""
import json
import signal
import sys
import time
import warnings


def make(kind, C):
    from pybudget import BudgetSVC, LinearSVC
    n_jobs = 2 if kind.endswith(("-ovr", "-team")) else None
    if kind.startswith("linear"):
        return LinearSVC(C=1000 * C, tol=1e-9, max_iter=10**7, random_state=0,
                         n_jobs=n_jobs)
    if kind.startswith("bsgd"):
        return BudgetSVC(C=C, budget=500, epochs=10, random_state=0, n_jobs=n_jobs)
    return BudgetSVC(C=C, solver="bsca", budget=500, epochs=40, random_state=0,
                     n_jobs=n_jobs)


def main(kind, refit):
    # a process started in the background (nohup, '&') inherits SIGINT ignored: restore
    # Python's default handler, which raises KeyboardInterrupt
    signal.signal(signal.SIGINT, signal.default_int_handler)
    warnings.simplefilter("ignore")
    import numpy as np
    from pybudget.datasets import load

    X, y, _, _ = load("a9a")
    if kind.endswith("-ovr"):
        y = 2 * (y > 0) + (X[:, 0].toarray().ravel() > 0)     # four classes
    est = make(kind, 1.0)
    before = None
    if refit:
        est.set_params(**({"max_iter": 1000, "tol": 0.1} if kind.startswith("linear")
                          else {"budget": 20, "epochs": 1}))
        est.fit(X[:300], y[:300])
        before = est.decision_function(X[:50]).tobytes()
        est.set_params(**make(kind, 100.0).get_params())
    print("READY", flush=True)
    try:
        est.fit(X, y)
        status = {"interrupted": False}
    except KeyboardInterrupt:
        status = {"interrupted": True, "caught": time.time()}
    status["fitted"] = hasattr(est, "classes_")
    if status["fitted"]:
        d = est.decision_function(X[:50])
        status["finite"] = bool(np.all(np.isfinite(d)))
        if refit:
            status["previous_fit_intact"] = d.tobytes() == before
    print(json.dumps(status), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] == "refit")
