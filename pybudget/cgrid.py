"""The C-grid comparison: every selection strategy at every C on one data set.

``cgrid()`` trains ``solve_linear`` for each (C, strategy) cell and returns one record
per run; ``format_table()`` lays the records out like Tables 2-3 of the AVSF paper
(strategies as rows, C as columns, time and coordinate steps per cell) followed by
the per-cell details (sweeps, dual objective, final KKT violation, test accuracy).
The results (:class:`CGridResult`, :class:`CGridCVResult`) also come out as a figure
(``.plot()``), a pandas DataFrame (``.to_frame()``), a dict (``.to_dict()``) and a JSON or
CSV file (``.write(path)``).
"""
import csv
import json
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from pybudget._core import _validation as V
from pybudget._core._progress import report
from pybudget._plot import plot_cgrid, plot_cgrid_cv
from pybudget.datasets import load
from pybudget.linear.crammer_singer import solve_crammer_singer
from pybudget.linear.problem import LOSSES, REGRESSION_LOSSES, SELECTION_CHOICES, solve_linear

DEFAULT_CS = (0.01, 0.1, 1.0, 10.0, 100.0, 1000.0)
DEFAULT_SELECTIONS = ("shrinking", "avsf")
# every problem of the dual family: the SVM losses, Crammer-Singer, logistic, regression
CGRID_LOSSES = (*LOSSES, "crammer_singer", "logistic", *REGRESSION_LOSSES)
DATA_FORMATS = ("json", "csv")


class _Records:
    """What both results share: a header (version, data set, parameters), flat records,
    and the ways out built on them."""

    def _init_header(self, data, params):
        self.data = data if isinstance(data, str) else "given arrays"
        self.params = dict(params or {})

    def header(self):
        """The run's description: package version, data set and parameters."""
        import pybudget
        return {"pybudget_version": pybudget.__version__, "kind": self.KIND,
                "data": self.data, "params": self.params}

    def to_dict(self):
        """:meth:`header` plus ``"records"``, a list of flat dicts (JSON-ready)."""
        return {**self.header(), "records": self.records()}

    def to_frame(self):
        """The records as a pandas DataFrame, one row each (needs pandas)."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("to_frame() needs pandas: pip install pandas") from None
        return pd.DataFrame(self.records())

    def write(self, path):
        """Write :meth:`to_dict` as JSON, or the records as CSV (with the version, data
        set and scalar parameters repeated on each row), by the extension of ``path``."""
        fmt = data_format(path)
        if fmt == "json":
            with open(path, "w") as f:
                json.dump(self.to_dict(), f, indent=1, default=_plain)
                f.write("\n")
            return
        head = self.header()
        const = {"data": head["data"], "pybudget_version": head["pybudget_version"],
                 **{k: v for k, v in head["params"].items() if not isinstance(v, list)}}
        rows = [_csv_row(r, const) for r in self.records()]
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(dict.fromkeys(k for r in rows for k in r)))
            w.writeheader()
            w.writerows(rows)


def _plain(value):
    """JSON for numpy scalars a caller passed in (a C grid from np.logspace, ...)."""
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def data_format(path):
    """"json" or "csv" from the extension of ``path``; ValueError otherwise."""
    ext = Path(path).suffix.lower().lstrip(".")
    if ext not in DATA_FORMATS:
        raise ValueError(f"{path}: a data file must end in .json or .csv")
    return ext


def _csv_row(record, const):
    """One CSV row: lists spread over numbered columns (fold_accuracy_0, ...), None empty,
    the constants after the record's own keys unless it has them."""
    row = {}
    for k, v in record.items():
        if isinstance(v, list):
            row.update((f"{k}_{i}", x) for i, x in enumerate(v))
        else:
            row[k] = "" if v is None else v
    return {**row, **{k: v for k, v in const.items() if k not in row}}


class CGridResult(_Records, list):
    """The records of :func:`cgrid`: a list of dicts, one per (C, strategy) run, as from
    :func:`run_cell`, with the run's settings.

    Attributes
    ----------
    data : str
        The data set's name ("given arrays" for arrays).
    params : dict
        ``Cs``, ``tol``, ``selections``, ``loss``, ``max_iter``, ``fit_intercept``,
        ``random_state``.
    """
    KIND = "cgrid"

    def __init__(self, records=(), data=None, params=None):
        super().__init__(records)
        self._init_header(data, params)

    @classmethod
    def from_dict(cls, d):
        """The result :meth:`to_dict` (or a JSON file from :meth:`write`) describes."""
        return cls(d["records"], d.get("data"), d.get("params"))

    def records(self):
        return [dict(r) for r in self]

    def title(self):
        return (f"{self.data}, loss {self.params.get('loss', 'hinge')}, "
                f"tol {self.params.get('tol', float('nan')):g}")

    def plot(self, ax=None):
        """Training time against C per strategy (capped runs boxed); with two panels
        (the default) also coordinate steps and the speed-up over hard shrinking.
        Needs matplotlib; see :func:`pybudget._plot.plot_cgrid` for ``ax``.

        Returns
        -------
        The axes drawn on (for ``ax=None``, an array of a new figure's two axes).
        """
        return plot_cgrid(self, ax=ax, title=self.title())


class CGridCVResult(_Records, dict):
    """The results of :func:`cgrid_cv`: a dict ``{strategy: CVGridResult}``, as before,
    with the run's settings (``data``, ``params``) and flat records, one per strategy
    and C."""
    KIND = "cgrid_cv"

    def __init__(self, results=(), data=None, params=None):
        super().__init__(results)
        self._init_header(data, params)

    def records(self):
        out = []
        for s, r in self.items():
            for k, c in enumerate(r.Cs):
                out.append({"selection": s, "C": float(c),
                            "mean_accuracy": float(r.mean_accuracy[k]),
                            "std_accuracy": float(r.std_accuracy[k]),
                            "fit_time": float(r.fit_time[k]),
                            "fold_accuracy": [float(a) for a in r.fold_accuracy[:, k]],
                            "fold_n_iter": (None if r.n_iter is None
                                            else [int(n) for n in r.n_iter[:, k]]),
                            "best": bool(c == r.best_C), "best_C": float(r.best_C),
                            "wall_time": float(r.wall_time)})
        return out

    def title(self):
        p = self.params
        return (f"{self.data}, {p.get('cv')}-fold cross-validation, "
                f"loss {p.get('loss', 'hinge')}, tol {p.get('tol', float('nan')):g}")

    def plot(self, ax=None):
        """Cross-validated accuracy (mean ± std) and fit time against C per strategy,
        each best C starred.  Needs matplotlib.

        Returns
        -------
        The axes drawn on (for ``ax=None``, an array of a new figure's two axes).
        """
        return plot_cgrid_cv(self, ax=ax, title=self.title())


def accuracy(res, X, y):
    """Test score of a result: accuracy for classification, R² for regression.

    Parameters
    ----------
    res : LinearResult or CrammerSingerResult
        A result of ``solve_linear`` or ``solve_crammer_singer``.
    X : sparse matrix or ndarray of shape (n_samples, n_features)
        Test data.
    y : array-like of shape (n_samples,)
        Test labels or targets.

    Returns
    -------
    float
        The fraction of rows predicted correctly, or R² (``res.classes`` is None).
    """
    if res.classes is None:                   # regression: R² of the predictions
        y = np.asarray(y, dtype=float)
        residual = y - (X @ res.coef + res.intercept)
        return float(1.0 - residual @ residual / np.sum((y - y.mean()) ** 2))
    if np.ndim(res.coef) == 2:                 # Crammer-Singer: one vector per class
        scores = X @ res.coef.T + res.intercept
        return float(np.mean(res.classes[np.argmax(scores, axis=1)] == y))
    scores = X @ res.coef + res.intercept
    return float(np.mean(res.classes[(scores > 0).astype(int)] == y))


def run_cell(X, y, C, selection, *, tol, loss="hinge", max_iter=100000, fit_intercept=False,
             random_state=0, X_test=None, y_test=None, epsilon=0.1):
    """One ``solve_linear`` run as a flat record.

    Runs stopped by ``max_iter`` are recorded (``converged`` False), not warned about.

    Parameters
    ----------
    X, y
        Training data and labels.
    C : float
        Regularisation parameter.
    selection : str
        Coordinate selection strategy.
    tol : float
        Stopping tolerance.
    loss, max_iter, fit_intercept, random_state
        As in ``solve_linear``; defaults "hinge", 100000, False, 0 (``loss``: see
        :func:`run_cell`).  ``loss`` is any of
        ``CGRID_LOSSES``: "crammer_singer" runs ``solve_crammer_singer``; the regression
        losses use epsilon 0.1 (liblinear's default) and score by R².
    X_test, y_test : optional
        Test data; without them ``test_accuracy`` is None.

    Returns
    -------
    dict
        Keys ``C``, ``selection``, ``tol``, ``time``, ``n_iter``, ``n_steps``,
        ``dual_objective``, ``primal_objective``, ``kkt_violation``, ``converged``,
        ``test_accuracy``.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if loss == "crammer_singer":
            res = solve_crammer_singer(X, y, C, selection=selection, tol=tol,
                                       max_iter=max_iter, fit_intercept=fit_intercept,
                                       random_state=random_state)
        else:
            res = solve_linear(X, y, C, loss=loss, selection=selection, tol=tol,
                               max_iter=max_iter, fit_intercept=fit_intercept,
                               random_state=random_state, epsilon=epsilon)
    return {
        "C": C, "selection": selection, "tol": tol, "time": res.time,
        "n_iter": res.n_iter, "n_steps": res.n_steps,
        "dual_objective": res.dual_objective, "primal_objective": res.primal_objective,
        "kkt_violation": res.kkt_violation, "converged": res.converged,
        "test_accuracy": None if X_test is None else accuracy(res, X_test, y_test),
        "loss": loss,
    }


def cgrid(data="debian-lib-small", Cs=DEFAULT_CS, tol=0.01, selections=DEFAULT_SELECTIONS,
          *, loss="hinge", max_iter=100000, fit_intercept=False, random_state=0,
          verbose=False, file=None):
    """Train every selection strategy at every C on one data set.

    Parameters
    ----------
    data : str or tuple, default="debian-lib-small"
        A name for ``datasets.load`` or a tuple ``(X, y[, X_test, y_test])``.
    Cs : sequence of float, default=DEFAULT_CS
        The C values, in the order given.
    tol : float, default=0.01
        Stopping tolerance.
    selections : sequence of str, default=("shrinking", "avsf")
        Strategies to run at each C.
    loss, max_iter, fit_intercept, random_state
        As in ``solve_linear``; defaults "hinge", 100000, False, 0.
    verbose : bool, default=False
        One line per run on ``file`` (default stderr).
    file : file object, optional
        Where ``verbose`` output goes.

    Returns
    -------
    CGridResult
        A list with one record (dict) per (C, strategy) run, as from :func:`run_cell`;
        also ``.plot()``, ``.to_frame()``, ``.to_dict()`` and ``.write(path)``.

    See Also
    --------
    format_table : Lay the records out as Markdown.
    cgrid_cv : Cross-validated accuracy over the same grid.
    """
    t0 = time.perf_counter()
    if isinstance(data, str):
        X, y, Xt, yt = load(data)
    else:
        X, y, Xt, yt = (tuple(data) + (None, None))[:4]
    Cs = [V.positive("C", c) for c in Cs]
    for s in selections:
        V.choice("selection", s, SELECTION_CHOICES)
    X = V.as_csr(X)  # convert once, not per cell
    if Xt is not None:
        Xt = V.as_csr(Xt)
    params = {"Cs": Cs, "tol": tol, "selections": list(selections), "loss": loss,
              "max_iter": max_iter, "fit_intercept": fit_intercept,
              "random_state": random_state}
    rows = CGridResult(data=data, params=params)
    for C in Cs:
        for s in selections:
            row = run_cell(X, y, C, s, tol=tol, loss=loss, max_iter=max_iter,
                           fit_intercept=fit_intercept, random_state=random_state,
                           X_test=Xt, y_test=yt)
            rows.append(row)
            if verbose:
                report(f"C={C:g} {s}: {row['time']:.3f}s, {row['n_iter']} sweeps"
                       f"{'' if row['converged'] else ' (capped)'}",
                       time.perf_counter() - t0, file=file)
    return rows


def _sci(x):
    return f"{x:.1e}".replace("e+0", "e").replace("e+", "e")


def strategy_table(rows, time_key="time"):
    """Markdown lines in the AVSF paper's layout.

    Strategies as rows, C as columns, time (``time_key``) with coordinate steps below
    (* = stopped by its cap), a total, the shrinking/avsf time ratio when both are
    present, and auto's time over the faster of the two when all three are.

    Parameters
    ----------
    rows : list of dict
        Records from :func:`cgrid` or :func:`run_cell`.
    time_key : str, default="time"
        The record key holding the time to show.

    Returns
    -------
    list of str
        Markdown table lines.
    """
    Cs = sorted({r["C"] for r in rows})
    sels = list(dict.fromkeys(r["selection"] for r in rows))
    cell = {(r["C"], r["selection"]): r for r in rows}
    out = ["| strategy | " + " | ".join(f"C={c:g}" for c in Cs) + " | total |",
           "|---" * (len(Cs) + 2) + "|"]
    for s in sels:
        cells, total = [], 0.0
        for c in Cs:
            r = cell.get((c, s))
            if r is None:
                cells.append("—")
                continue
            total += r[time_key]
            steps = "" if r["n_steps"] is None else f" ({_sci(r['n_steps'])})"
            cells.append(f"{r[time_key]:.3f}{'' if r['converged'] else '*'}{steps}")
        out.append(f"| {s} | " + " | ".join(cells) + f" | {total:.3f} |")
    if all((c, s) in cell for c in Cs for s in ("shrinking", "avsf")):
        t = {s: [cell[(c, s)][time_key] for c in Cs] for s in ("shrinking", "avsf")}
        ratios = [a / b for a, b in zip(t["shrinking"], t["avsf"])]
        out.append("| shrinking / avsf | " + " | ".join(f"{x:.2f}×" for x in ratios)
                   + f" | {sum(t['shrinking']) / sum(t['avsf']):.2f}× |")
        if all((c, "auto") in cell for c in Cs):
            best = [min(a, b) for a, b in zip(t["shrinking"], t["avsf"])]
            auto = [cell[(c, "auto")][time_key] for c in Cs]
            out.append("| auto / faster of the two | " + " | ".join(
                f"{a / b:.2f}×" for a, b in zip(auto, best)) + f" | {sum(auto) / sum(best):.2f}× |")
    return out


def format_table(rows, title=None):
    """Format C-grid records as Markdown.

    Parameters
    ----------
    rows : list of dict
        Records from :func:`cgrid`.
    title : str, optional
        A ``###`` heading above the tables.

    Returns
    -------
    str
        The paper's layout (:func:`strategy_table`) followed by a details table (sweeps,
        dual objective, final KKT violation, test accuracy per run).
    """
    out = [f"### {title}", ""] if title else []
    out += strategy_table(rows)
    out += ["", "| C | strategy | time s | sweeps | steps | dual objective | KKT viol. "
                "| converged | test score |",
            "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        acc = ("—" if r["test_accuracy"] is None
               else f"R² {r['test_accuracy']:.4f}" if r.get("loss") in REGRESSION_LOSSES
               else f"{100 * r['test_accuracy']:.2f} %")
        out.append(f"| {r['C']:g} | {r['selection']} | {r['time']:.3f} | {r['n_iter']} | "
                   f"{r['n_steps']} | {r['dual_objective']:.8g} | {r['kkt_violation']:.2e} | "
                   f"{'yes' if r['converged'] else 'no (max_iter)'} | {acc} |")
    return "\n".join(out) + "\n"


def cgrid_cv(data="debian-lib-small", Cs=DEFAULT_CS, cv=5, tol=0.01,
             selections=DEFAULT_SELECTIONS, *, n_jobs=None, loss="hinge", max_iter=100000,
             fit_intercept=False, random_state=0):
    """Cross-validated accuracy over the C grid for each strategy.

    Runs ``path.cv_grid`` (warm-started along C inside each fold) once per strategy.

    Parameters
    ----------
    data : str or tuple, default="debian-lib-small"
        A name for ``datasets.load`` (its training part is used) or a tuple
        ``(X, y, ...)``.
    Cs : sequence of float, default=DEFAULT_CS
        The C values.
    cv : int, default=5
        Number of folds.
    tol : float, default=0.01
        Stopping tolerance.
    selections : sequence of str, default=("shrinking", "avsf")
        Strategies.
    n_jobs : int, optional
        Workers of each ``cv_grid`` call.
    loss, max_iter, fit_intercept, random_state
        As in ``cv_grid``/``LinearSVC``; defaults "hinge", 100000, False, 0.

    Returns
    -------
    CGridCVResult
        A dict ``{strategy: CVGridResult}``; also ``.plot()``, ``.to_frame()``,
        ``.to_dict()`` and ``.write(path)``.

    See Also
    --------
    format_cv_table : Lay the results out as Markdown.
    """
    from pybudget.linear.path import cv_grid
    X, y = (load(data)[:2] if isinstance(data, str) else tuple(data)[:2])
    X = V.as_csr(X)
    results = {s: cv_grid(X, y, Cs, cv=cv, n_jobs=n_jobs, random_state=random_state,
                          selection=s, tol=tol, loss=loss, max_iter=max_iter,
                          fit_intercept=fit_intercept)
               for s in selections}
    params = {"Cs": [float(c) for c in Cs], "cv": cv, "tol": tol,
              "selections": list(selections), "loss": loss, "max_iter": max_iter,
              "fit_intercept": fit_intercept, "random_state": random_state}
    return CGridCVResult(results, data=data, params=params)


def format_cv_table(results, title=None):
    """Format :func:`cgrid_cv` results as Markdown.

    Parameters
    ----------
    results : dict
        ``{strategy: CVGridResult}`` from :func:`cgrid_cv`.
    title : str, optional
        A ``###`` heading above the table.

    Returns
    -------
    str
        Per C and strategy, mean ± std cross-validated accuracy and the optimisation
        time summed over folds; the best C per strategy below.
    """
    out = [f"### {title}", ""] if title else []
    sels = list(results)
    out.append("| C | " + " | ".join(f"{s}: accuracy | {s}: time s" for s in sels) + " |")
    out.append("|---" * (1 + 2 * len(sels)) + "|")
    Cs = results[sels[0]].Cs
    for k, c in enumerate(Cs):
        cells = []
        for s in sels:
            r = results[s]
            cells += [f"{100 * r.mean_accuracy[k]:.2f} ± {100 * r.std_accuracy[k]:.2f} %",
                      f"{r.fit_time[k]:.3f}"]
        out.append(f"| {c:g} | " + " | ".join(cells) + " |")
    out.append("")
    for s in sels:
        r = results[s]
        out.append(f"- {s}: best C = {r.best_C:g}, wall time {r.wall_time:.2f} s")
    return "\n".join(out) + "\n"
