"""The C-grid comparison as a picture and as data: ``plot()``, ``to_frame()``,
``to_dict()``, ``write()`` and ``pybudget cgrid --plot/--out``."""
import csv
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import pybudget
from pybudget.cgrid import CGridCVResult, CGridResult, cgrid, cgrid_cv, format_table
from pybudget.cli import build_parser, main
from pybudget.linear.path import CVGridResult

ROOT = Path(__file__).resolve().parents[1]
SELECTIONS = ["shrinking", "avsf", "uniform"]
CS = [0.01, 0.1, 1.0]
HINT = 'pip install "pybudget[plot]"'
# a quick grid on the embedded a9a, for the command-line runs
QUICK = ["cgrid", "--data", "a9a", "--C", "0.01", "0.1", "--tol", "0.1", "-q"]


@pytest.fixture(scope="module")
def res():
    return cgrid("a9a", Cs=CS, tol=0.1, selections=SELECTIONS)


@pytest.fixture(scope="module")
def cv_res():
    return cgrid_cv("a9a", Cs=[0.01, 0.1], cv=3, tol=0.1, selections=["shrinking", "avsf"])


def _figure():
    mpl_figure = pytest.importorskip("matplotlib.figure")
    return mpl_figure.Figure()


def _png(path):
    """(height, width) of a PNG and its text chunks (matplotlib brings Pillow)."""
    Image = pytest.importorskip("PIL.Image")
    with Image.open(path) as im:
        assert im.format == "PNG"
        return (im.height, im.width), dict(im.text)


# ------------------------------------------------------------------ the result objects

def test_result_is_still_the_list_of_records(res):
    assert isinstance(res, CGridResult) and isinstance(res, list) and len(res) == 9
    assert [(r["C"], r["selection"]) for r in res] == [(c, s) for c in CS for s in SELECTIONS]
    assert all(type(r) is dict and r["converged"] for r in res)
    assert "| uniform |" in format_table(res)
    assert res.data == "a9a" and res.params["Cs"] == CS and res.params["tol"] == 0.1


def test_cv_result_is_still_the_dict_of_cv_grids(cv_res):
    assert isinstance(cv_res, CGridCVResult) and list(cv_res) == ["shrinking", "avsf"]
    assert all(isinstance(r, CVGridResult) for r in cv_res.values())
    assert cv_res.params["cv"] == 3


def test_plot_draws_one_line_per_strategy(res):
    time_ax, steps_ax = res.plot()
    for ax in (time_ax, steps_ax):
        assert [ln.get_label() for ln in ax.get_lines()] == SELECTIONS
        assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    for ln, s in zip(time_ax.get_lines(), SELECTIONS):
        assert list(ln.get_xdata()) == CS
        assert list(ln.get_ydata()) == [r["time"] for r in res if r["selection"] == s]
    for ln, s in zip(steps_ax.get_lines(), SELECTIONS):
        assert list(ln.get_ydata()) == [r["n_steps"] for r in res if r["selection"] == s]
    title = time_ax.get_title()
    assert "a9a" in title and "loss hinge" in title and "tol 0.1" in title


def test_plot_shows_the_speedup_of_the_fastest_over_shrinking(res):
    time_ax, steps_ax = res.plot()
    twins = [a for a in time_ax.figure.axes if a not in (time_ax, steps_ax)]
    assert len(twins) == 1
    t = {(r["C"], r["selection"]): r["time"] for r in res}
    best = min(["avsf", "uniform"], key=lambda s: sum(t[(c, s)] for c in CS))
    speed = twins[0].get_lines()[0]
    assert speed.get_label() == f"speed-up of {best} over shrinking"
    np.testing.assert_allclose(speed.get_ydata(), [t[(c, "shrinking")] / t[(c, best)]
                                                   for c in CS])


def test_runs_stopped_by_max_iter_are_marked():
    capped = cgrid("a9a", Cs=[0.1, 1.0], tol=0.001, selections=["avsf"], max_iter=2)
    assert not any(r["converged"] for r in capped)
    time_ax = capped.plot()[0]
    marks = [c for c in time_ax.collections if c.get_label() == "stopped by max_iter"]
    assert len(marks) == 1 and len(marks[0].get_offsets()) == 2


def test_plot_on_given_axes(res):
    fig = _figure()
    ax = fig.subplots()
    assert res.plot(ax=ax) is ax                        # one Axes: the time panel only
    assert [ln.get_label() for ln in ax.get_lines()] == SELECTIONS
    assert len(fig.axes) == 1
    pair = _figure().subplots(1, 2)
    assert res.plot(ax=pair) is pair


def test_cv_plot_marks_the_best_C(cv_res):
    acc_ax, time_ax = cv_res.plot()
    assert [ln.get_label() for ln in acc_ax.get_lines()] == ["shrinking", "avsf"]
    assert [ln.get_label() for ln in time_ax.get_lines()] == ["shrinking", "avsf"]
    for s, r in cv_res.items():
        star = [c for c in acc_ax.collections if c.get_label() == f"{s}: best C = {r.best_C:g}"]
        k = r.Cs.index(r.best_C)
        assert star and star[0].get_offsets().tolist() == [[r.best_C, r.mean_accuracy[k]]]
    assert "3-fold cross-validation" in acc_ax.get_title()


# --------------------------------------------------------------------------- the data

def test_json_round_trips_to_the_same_records(res, tmp_path):
    res.write(tmp_path / "grid.json")
    d = json.loads((tmp_path / "grid.json").read_text())
    assert d["records"] == list(res)
    assert d["pybudget_version"] == pybudget.__version__ and d["data"] == "a9a"
    assert d["params"] == {"Cs": CS, "tol": 0.1, "selections": SELECTIONS, "loss": "hinge",
                           "max_iter": 100000, "fit_intercept": False, "random_state": 0}
    back = CGridResult.from_dict(d)
    assert back == res and back.params == res.params and back.data == res.data
    assert d == res.to_dict()


def test_cv_json_holds_every_record(cv_res, tmp_path):
    cv_res.write(tmp_path / "cv.json")
    d = json.loads((tmp_path / "cv.json").read_text())
    assert d == cv_res.to_dict() and d["kind"] == "cgrid_cv" and len(d["records"]) == 4
    for rec in d["records"]:
        r, k = cv_res[rec["selection"]], cv_res[rec["selection"]].Cs.index(rec["C"])
        assert rec["mean_accuracy"] == r.mean_accuracy[k]
        assert rec["fold_accuracy"] == list(r.fold_accuracy[:, k])
        assert rec["best"] == (rec["C"] == r.best_C)


def test_csv_has_a_row_per_record(res, tmp_path):
    res.write(tmp_path / "grid.csv")
    with open(tmp_path / "grid.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(res)
    for row, r in zip(rows, res):
        assert float(row["time"]) == r["time"] and row["selection"] == r["selection"]
        assert row["data"] == "a9a" and row["pybudget_version"] == pybudget.__version__
        assert row["max_iter"] == "100000"


def test_cv_csv_spreads_the_folds(cv_res, tmp_path):
    cv_res.write(tmp_path / "cv.csv")
    with open(tmp_path / "cv.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 4 and {"fold_accuracy_0", "fold_accuracy_2", "cv"} <= set(rows[0])


def test_to_frame(res, cv_res):
    pytest.importorskip("pandas")
    df = res.to_frame()
    assert df.shape == (9, len(res[0])) and list(df.columns) == list(res[0])
    assert df["time"].tolist() == [r["time"] for r in res]
    assert cv_res.to_frame().shape[0] == 4


def test_unknown_file_types_are_refused(res, tmp_path):
    with pytest.raises(ValueError, match=r"\.json or \.csv"):
        res.write(tmp_path / "grid.txt")


# ----------------------------------------------------------------------- the command

@pytest.mark.parametrize("ext", ["png", "svg", "pdf"])
def test_cli_plot_writes_the_image(tmp_path, capsys, ext):
    pytest.importorskip("matplotlib")
    path = tmp_path / f"grid.{ext}"
    assert main([*QUICK, "--plot", str(path)]) == 0
    assert "| shrinking |" in capsys.readouterr().out        # the tables as before
    data = path.read_bytes()
    assert len(data) > 1000
    if ext == "png":
        size, text = _png(path)
        assert size == (400, 1000)                          # two 5 x 4 in panels at 100 dpi
        head = json.loads(text["Description"])              # which run drew it
        assert head["data"] == "a9a" and head["params"]["Cs"] == [0.01, 0.1]
    elif ext == "svg":
        assert b"<svg" in data[:1000] and b'width="720pt"' in data[:1000]
    else:
        assert data.startswith(b"%PDF")


def test_cli_cv_plot_and_out(tmp_path):
    pytest.importorskip("matplotlib")
    png, out = tmp_path / "cv.png", tmp_path / "cv.json"
    assert main([*QUICK, "--cv", "3", "--selection", "avsf", "--plot", str(png),
                 "--out", str(out)]) == 0
    assert _png(png)[0] == (400, 1000)
    d = json.loads(out.read_text())
    assert d["kind"] == "cgrid_cv" and [r["C"] for r in d["records"]] == [0.01, 0.1]


def test_cli_out_json_and_csv(tmp_path):
    assert main([*QUICK, "--out", str(tmp_path / "g.json")]) == 0
    assert main([*QUICK, "--out", str(tmp_path / "g.csv")]) == 0
    d = json.loads((tmp_path / "g.json").read_text())
    assert [(r["C"], r["selection"]) for r in d["records"]] == [
        (0.01, "shrinking"), (0.01, "avsf"), (0.1, "shrinking"), (0.1, "avsf")]
    assert d["params"]["tol"] == 0.1 and d["data"] == "a9a"
    assert len((tmp_path / "g.csv").read_text().splitlines()) == 5


def test_cli_refuses_bad_files_before_the_run(tmp_path, capsys):
    for extra in (["--plot", str(tmp_path / "g.gif")], ["--out", str(tmp_path / "g.txt")],
                  ["--plot", str(tmp_path / "no" / "g.png")]):
        assert main([*QUICK, *extra]) == 2
        out, err = capsys.readouterr()
        assert out == "" and len(err.strip().splitlines()) == 1, err


def test_without_matplotlib_plot_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)     # import matplotlib fails
    path = tmp_path / "g.png"
    assert main([*QUICK, "--plot", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and not path.exists()
    assert err.strip().splitlines() == [f"pybudget: error: plotting needs matplotlib: {HINT}"]
    # nothing else changes: the tables and the data files come out as before
    assert main([*QUICK, "--out", str(tmp_path / "g.json")]) == 0
    assert "| avsf |" in capsys.readouterr().out and (tmp_path / "g.json").exists()
    with pytest.raises(ImportError, match=re.escape(HINT)):
        CGridResult([{"C": 1.0, "selection": "avsf"}]).plot()


def test_matplotlib_is_imported_only_to_draw():
    code = ("import sys, pybudget, pybudget.cli, pybudget.cgrid; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'matplotlib'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


# ------------------------------------------------------------------------ the README

def _readme_plot_command():
    lines = (ROOT / "README.md").read_text().splitlines()
    cmd = [ln for ln in lines if ln.startswith("python -m pybudget cgrid --plot")]
    assert len(cmd) == 1, "the README shows one cgrid --plot command"
    return cmd[0]


def test_readme_picture_is_the_output_of_the_readme_command():
    cmd = _readme_plot_command()
    args = build_parser().parse_args(shlex.split(cmd)[3:])
    picture = ROOT / args.plot
    assert args.plot.startswith("docs/") and f"]({args.plot})" in (ROOT / "README.md").read_text()
    size, text = _png(picture)
    assert size == (400, 1000)
    head = json.loads(text["Description"])     # the run that drew it, stamped by --plot
    assert head["data"] == args.data and head["pybudget_version"] == pybudget.__version__
    assert head["params"] == {"Cs": args.C, "tol": args.tol, "selections": args.selection,
                              "loss": args.loss, "max_iter": args.max_iter,
                              "fit_intercept": args.bias > 0, "random_state": args.seed}
    if args.out:                               # the same run's records beside it
        d = json.loads((ROOT / args.out).read_text())
        assert {k: d[k] for k in head} == head
        assert len(d["records"]) == len(args.C) * len(args.selection)
    assert cmd in (ROOT / "docs" / "user_guide.md").read_text()


def test_user_guide_example_runs():
    pytest.importorskip("matplotlib")
    pytest.importorskip("pandas")
    text = (ROOT / "docs" / "user_guide.md").read_text()
    blocks = [b for b in text.split("```python\n")[1:] if "from pybudget.cgrid import" in b]
    assert len(blocks) == 1
    scope = {}
    exec(blocks[0][:blocks[0].index("```")], scope)
    assert [ln.get_label() for ln in scope["axes"][0].get_lines()] == ["shrinking", "avsf"]
    assert scope["df"].shape[0] == 6


def test_bench_draws_through_the_same_function(tmp_path):
    """bench/cgrid.py's figure: one row of pybudget's two panels per (data set, tol)."""
    pytest.importorskip("matplotlib")
    assert "plot_cgrid" in (ROOT / "bench" / "cgrid.py").read_text()
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "cgrid.py"), "--data", "a9a",
                          "--C", "0.01", "0.1", "--tol", "0.1", "0.5", "-r", "1", "--selection",
                          "shrinking", "avsf", "--out", str(tmp_path), "--stem", "g"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert _png(tmp_path / "g.png")[0] == (800, 1000)
