"""Figures of the C-grid comparison: ``pybudget cgrid --plot``, ``CGridResult.plot`` and
``bench/cgrid.py`` all draw through this module, so there is one plotting code.

matplotlib is an optional extra (``pip install "pybudget[plot]"``).  It is imported here
only when a figure is drawn, and figures are built on ``matplotlib.figure.Figure`` rather
than pyplot, so no display or interactive backend is ever needed.
"""
from pathlib import Path

INSTALL_HINT = 'plotting needs matplotlib: pip install "pybudget[plot]"'
FORMATS = ("png", "svg", "pdf")
PANEL_INCHES = (5.0, 4.0)   # width, height of one panel
DPI = 100                   # a two-panel figure is 1000 x 400 pixels
# the metadata key each format keeps free text under (pdf has no "Description")
DESCRIPTION_KEY = {"png": "Description", "svg": "Description", "pdf": "Subject"}


def require_matplotlib():
    """Import matplotlib, or raise ImportError with the one line saying what to install."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ImportError(INSTALL_HINT) from None


def figure_format(path):
    """The image format of ``path`` from its extension; ValueError if not png/svg/pdf."""
    ext = Path(path).suffix.lower().lstrip(".")
    if ext not in FORMATS:
        raise ValueError(f"{path}: a figure file must end in .png, .svg or .pdf")
    return ext


def new_axes(nrows=1, ncols=2):
    """A fresh figure's axes, an array of shape (nrows, ncols), pyplot left out."""
    require_matplotlib()
    from matplotlib.figure import Figure
    fig = Figure(figsize=(PANEL_INCHES[0] * ncols, PANEL_INCHES[1] * nrows),
                 layout="constrained")
    return fig.subplots(nrows, ncols, squeeze=False)


def save_figure(axes, path, description=None):
    """Write the figure holding ``axes`` to ``path`` (format from the extension);
    ``description`` goes into the file's metadata."""
    fmt = figure_format(path)
    fig = _flat(axes)[0].figure
    meta = {DESCRIPTION_KEY[fmt]: description} if description else None
    fig.savefig(path, format=fmt, dpi=DPI, metadata=meta)


def _flat(ax):
    if hasattr(ax, "ravel"):
        return list(ax.ravel())
    return list(ax) if isinstance(ax, (list, tuple)) else [ax]


def _panels(ax):
    """Axes to draw on: a new two-panel figure for None, else the one or two given."""
    return list(new_axes(1, 2)[0]) if ax is None else _flat(ax)


def _returned(ax, panels):
    import numpy as np
    return np.array(panels, dtype=object) if ax is None else ax


def _by_C(rows, selection):
    return sorted((r for r in rows if r["selection"] == selection), key=lambda r: r["C"])


def _speedup(rows, time_key, sels):
    """(strategy, Cs, ratios): hard shrinking's time over that of the strategy fastest over
    the whole grid, at each C both ran; None without shrinking or another strategy."""
    others = [s for s in sels if s != "shrinking"]
    if "shrinking" not in sels or not others:
        return None
    t = {(r["C"], r["selection"]): r[time_key] for r in rows}
    best = min(others, key=lambda s: sum(r[time_key] for r in _by_C(rows, s)))
    Cs = sorted(c for c, s in t if s == best and (c, "shrinking") in t)
    return best, Cs, [t[(c, "shrinking")] / t[(c, best)] for c in Cs]


def _time_panel(ax, rows, sels, time_key):
    capped_label = "stopped by max_iter"
    for k, s in enumerate(sels):
        sub = _by_C(rows, s)
        ax.plot([r["C"] for r in sub], [r[time_key] for r in sub], marker="o",
                color=f"C{k}", label=s)
        capped = [r for r in sub if not r["converged"]]
        if capped:   # an open square around each capped point, one legend entry in all
            ax.scatter([r["C"] for r in capped], [r[time_key] for r in capped], s=130,
                       marker="s", facecolors="none", edgecolors="black", zorder=3,
                       label=capped_label)
            capped_label = "_nolegend_"
    what = "" if time_key == "time" else ", " + time_key.split("_")[-1]   # time_median
    ax.set(xscale="log", yscale="log", xlabel="C", ylabel=f"training time{what} [s]")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)


def _steps_panel(ax, rows, sels, time_key):
    from matplotlib.ticker import FuncFormatter
    for k, s in enumerate(sels):
        sub = [r for r in _by_C(rows, s) if r["n_steps"] is not None]
        if sub:   # liblinear's runs (bench) have no step count
            ax.plot([r["C"] for r in sub], [r["n_steps"] for r in sub], marker="o",
                    color=f"C{k}", label=s)
    ax.set(xscale="log", yscale="log", xlabel="C", ylabel="coordinate steps")
    ax.grid(True, which="both", alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    speed = _speedup(rows, time_key, sels)
    if speed is not None:
        best, Cs, ratios = speed
        tw = ax.twinx()   # its own axis: a ratio, not a count
        tw.plot(Cs, ratios, "k--", marker="D", label=f"speed-up of {best} over shrinking")
        tw.axhline(1.0, color="grey", lw=0.8, ls=":")
        for c, x in zip(Cs, ratios):
            tw.annotate(f"{x:.2g}×", (c, x), textcoords="offset points", xytext=(0, 6),
                        ha="center", fontsize=7)
        tw.set(yscale="log", ylabel=f"shrinking time / {best} time")
        # a ratio axis reads 0.5×, 1×, 2×: not 9×10⁻¹, nor a label on every minor tick
        tw.yaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}×"))
        tw.yaxis.set_minor_formatter(FuncFormatter(
            lambda x, _: f"{x:g}×" if f"{x:.0e}"[0] in "25" else ""))
        tw.margins(y=0.15)   # room for the labels above the points
        h2, l2 = tw.get_legend_handles_labels()
        handles, labels = handles + h2, labels + l2
    ax.set_title("coordinate steps, speed-up over shrinking", fontsize=10)
    ax.legend(handles, labels, fontsize=8, loc="upper left")


def plot_cgrid(rows, ax=None, *, time_key="time", title=None):
    """Draw C-grid records: time against C, and coordinate steps with the speed-up.

    Parameters
    ----------
    rows : list of dict
        Records of one data set and tolerance, as from :func:`pybudget.cgrid.cgrid`
        (keys ``C``, ``selection``, ``converged``, ``n_steps`` and ``time_key``).
    ax : matplotlib Axes or pair of Axes, optional
        Where to draw.  None: a new figure with two panels.  One Axes: the time panel
        only.  Two: the time panel, then coordinate steps per strategy with, on a twin
        axis, hard shrinking's time over that of the strategy fastest over the grid.
    time_key : str, default="time"
        The record key holding the time.
    title : str, optional
        Title of the time panel (data set, loss, tol).

    Returns
    -------
    ax
        The axes given, or for None an array of the new figure's two axes.
    """
    panels = _panels(ax)
    sels = list(dict.fromkeys(r["selection"] for r in rows))
    _time_panel(panels[0], rows, sels, time_key)
    if title:
        panels[0].set_title(title, fontsize=10)
    if len(panels) > 1:
        _steps_panel(panels[1], rows, sels, time_key)
    return _returned(ax, panels)


def plot_cgrid_cv(results, ax=None, *, title=None):
    """Draw :func:`pybudget.cgrid.cgrid_cv` results: cross-validated accuracy (mean ± std
    over folds) and fit time against C, one line per strategy, each best C starred.

    Parameters
    ----------
    results : dict
        ``{strategy: CVGridResult}``.
    ax : matplotlib Axes or pair of Axes, optional
        None: a new two-panel figure.  One Axes: the accuracy panel only.
    title : str, optional
        Title of the accuracy panel.

    Returns
    -------
    ax
        The axes given, or for None an array of the new figure's two axes.
    """
    panels = _panels(ax)
    acc = panels[0]
    for k, (s, r) in enumerate(results.items()):
        mean, std = r.mean_accuracy, r.std_accuracy
        acc.plot(r.Cs, mean, marker="o", color=f"C{k}", label=s)
        acc.fill_between(r.Cs, mean - std, mean + std, color=f"C{k}", alpha=0.15)
        best = list(r.Cs).index(r.best_C)
        acc.scatter([r.best_C], [mean[best]], marker="*", s=250, color=f"C{k}",
                    edgecolors="black", zorder=3, label=f"{s}: best C = {r.best_C:g}")
        if len(panels) > 1:
            panels[1].plot(r.Cs, r.fit_time, marker="o", color=f"C{k}", label=s)
    acc.set(xscale="log", xlabel="C", ylabel="cross-validated accuracy")
    acc.grid(True, which="both", alpha=0.3)
    acc.legend(fontsize=8)
    if title:
        acc.set_title(title, fontsize=10)
    if len(panels) > 1:
        panels[1].set(xscale="log", yscale="log", xlabel="C",
                      ylabel="fit time, summed over folds [s]")
        panels[1].grid(True, which="both", alpha=0.3)
        panels[1].legend(fontsize=8)
    return _returned(ax, panels)
