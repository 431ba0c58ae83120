"""The train / predict / info commands."""
import re
import subprocess
import tempfile
import sys

import numpy as np
import scipy.sparse as sp
import pytest
from sklearn.datasets import dump_svmlight_file, load_svmlight_file

from pybudget import BudgetSVC, LinearSVC, load
from pybudget.cli import build_parser, main
from pybudget.datasets import load as load_data

ACC = re.compile(r"^Accuracy = ([0-9.]+)% \((\d+)/(\d+)\)$")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    X, y, Xt, yt = load_data("a9a")
    train, test = d / "a9a-small.txt", d / "a9a-small.t"
    dump_svmlight_file(X[:1500], y[:1500], str(train), zero_based=False)
    dump_svmlight_file(Xt[:700], yt[:700], str(test), zero_based=False)
    return d, train, test


def run(argv, capsys):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def read_accuracy(out):
    m = ACC.match(out.strip().splitlines()[-1])
    assert m, out
    return float(m.group(1)), int(m.group(2)), int(m.group(3))


def test_linear_train_predict_info(files, capsys):
    d, train, test = files
    model = d / "lin.model"
    code, out, err = run(["train", "-c", "0.5", "-B", "1", "-e", "0.01", "--selection",
                          "shrinking", train, model], capsys)
    assert code == 0 and out == ""
    assert "trained (" in err and "model written to" in err
    est = load(model)
    assert isinstance(est, LinearSVC)
    assert est.C == 0.5 and est.fit_intercept and est.selection == "shrinking"
    assert est.tol == 0.01 and est.random_state == 0
    # the command trains what the Python API trains
    X, y = load_svmlight_file(str(train))
    ref = LinearSVC(C=0.5, tol=0.01, selection="shrinking", random_state=0).fit(X, y)
    np.testing.assert_array_equal(est.coef_, ref.coef_)

    pred = d / "lin.pred"
    code, out, err = run(["predict", test, model, pred], capsys)
    assert code == 0
    acc, k, n = read_accuracy(out)
    Xt, yt = load_svmlight_file(str(test), n_features=X.shape[1])
    labels = np.array([float(s) for s in pred.read_text().split()])
    assert n == 700 and labels.shape == (700,)
    np.testing.assert_array_equal(labels, est.predict(Xt))
    assert k == int(np.sum(labels == yt)) and acc == pytest.approx(100 * k / n, abs=1e-3)
    assert set(pred.read_text().split()) <= {"1", "-1"}  # labels written as in LIBSVM files
    assert acc > 80        # always predicting the majority label gives 76.7

    code, out, _ = run(["info", model], capsys)
    assert code == 0
    assert "estimator: LinearSVC" in out and "classes (2): -1 1" in out
    assert f"features: {X.shape[1]}\n" in out and "checksums ok" in out and "C=0.5" in out


def test_squared_hinge_by_liblinear_type(files, capsys):
    d, train, _ = files
    assert run(["train", "-s", "1", "-q", train, d / "l2.model"], capsys)[0] == 0
    assert load(d / "l2.model").loss == "squared_hinge"


@pytest.mark.parametrize("opts,solver", [
    (["--kernel", "rbf", "--budget", "30", "--epochs", "2", "-g", "0.05"], "bsgd"),
    (["--solver", "bsca", "--budget", "20", "--maintenance", "remove"], "bsca"),
    (["--solver", "bsgd", "--budget", "20", "--merge-size", "3", "--merge-search",
      "lookup-wd"], "bsgd"),
    (["--solver", "bsca", "--budget", "20", "--checkpoints", "4"], "bsca"),
    (["--kernel", "rbf", "--budget", "20", "--no-offset", "--averaging", "none"], "bsgd"),
    (["--solver", "bsca", "--budget", "20", "--refit"], "bsca"),
    (["--solver", "bsgd", "--budget", "20", "--refit-hinge"], "bsgd"),
    (["--kernel", "rbf", "--budget", "20", "--storage", "sparse"], "bsgd"),
])
def test_kernel_models(files, capsys, opts, solver):
    d, train, test = files
    model = d / f"{solver}.model"
    code, out, err = run(["train", *opts, train, model], capsys)
    assert code == 0, err
    est = load(model)
    assert isinstance(est, BudgetSVC) and est.solver == solver
    assert est.support_vectors_.shape[0] <= est.budget
    assert (est.checkpoint_ is not None) == ("--checkpoints" in opts)
    assert est.refit == ("hinge" if "--refit-hinge" in opts else "--refit" in opts)
    assert sp.issparse(est.support_vectors_) == ("--storage" in opts)
    code, out, _ = run(["predict", test, model, d / "k.pred"], capsys)
    assert code == 0
    # the command's accuracy is the model's (removal at B = 20 may be below the
    # majority share, so no absolute threshold)
    Xt, yt = load_svmlight_file(str(test), n_features=est.n_features_in_)
    assert read_accuracy(out)[0] == pytest.approx(100 * est.score(Xt, yt), abs=1e-3)
    code, out, _ = run(["info", model], capsys)
    assert "estimator: BudgetSVC" in out and "support vectors:" in out
    assert est.offset == ("--no-offset" not in opts)
    shown = re.search(r"^offset \(intercept\): (.*)$", out, re.M).group(1).split()
    assert float(shown[0]) == pytest.approx(est.intercept_[0], rel=1e-5, abs=1e-300)
    assert ("(offset=False)" in out) == ("--no-offset" in opts)
    if "--no-offset" in opts:
        assert est.intercept_[0] == 0.0 and est.averaging == "none"


def test_stream_training_matches_stream_fit(files, capsys):
    from pybudget import stream_fit
    d, train, test = files
    model = d / "stream.model"
    code, _, err = run(["train", "--stream", "--chunk-size", "400", "--budget", "25", train,
                        model], capsys)
    assert code == 0 and "ETA" in err
    est = load(model)
    ref = stream_fit(BudgetSVC(budget=25, random_state=0), train, chunk_size=400)
    X, _ = load_svmlight_file(str(train))
    assert est.decision_function(X).tobytes() == ref.decision_function(X).tobytes()


def test_default_model_name_and_quiet(files, capsys, monkeypatch, tmp_path):
    _, train, _ = files
    monkeypatch.chdir(tmp_path)
    code, out, err = run(["train", "-q", train], capsys)
    assert code == 0 and out == "" and err == ""
    assert (tmp_path / "a9a-small.txt.model").exists()


def test_cross_validation_writes_no_model(files, capsys, monkeypatch, tmp_path):
    _, train, _ = files
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(["train", "-v", "3", "-q", "-c", "0.1", train], capsys)
    assert code == 0
    m = re.fullmatch(r"Cross Validation Accuracy = ([0-9.]+)%\n", out)
    assert m and 80 < float(m.group(1)) < 95   # majority share of these rows: 75.3
    assert list(tmp_path.iterdir()) == []
    code, out, _ = run(["train", "-v", "2", "-q", "--kernel", "rbf", "--budget", "10", train],
                       capsys)
    assert code == 0 and out.startswith("Cross Validation Accuracy = ")


def test_multiclass_and_wider_test_file(tmp_path, capsys):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((120, 4))
    y = np.argmax(X[:, :3], axis=1) + 1
    dump_svmlight_file(X, y, str(tmp_path / "tr"), zero_based=False)
    # the test file has a sixth feature the model never saw: ignored, with a warning
    Xt = np.hstack([X, np.ones((120, 2))])
    dump_svmlight_file(Xt, y, str(tmp_path / "te"), zero_based=False)
    for opts in ([], ["--kernel", "rbf", "--budget", "15"]):
        assert run(["train", "-q", *opts, tmp_path / "tr", tmp_path / "m"], capsys)[0] == 0
        code, out, err = run(["predict", tmp_path / "te", tmp_path / "m", tmp_path / "p"],
                             capsys)
        assert code == 0 and "ignored" in err
        assert read_accuracy(out)[0] > 70
        assert set(tmp_path.joinpath("p").read_text().split()) <= {"1", "2", "3"}


@pytest.mark.parametrize("argv,message", [
    (["train", "{d}/absent.txt"], "no data file"),
    (["train", "-g", "0.1", "{train}"], "-g apply only to --kernel rbf"),
    (["train", "--kernel", "rbf", "-e", "0.1", "{train}"], "-e apply only to --kernel linear"),
    (["train", "--kernel", "linear", "--solver", "bsgd", "{train}"], "cannot be combined"),
    (["train", "--solver", "bsca", "--stream", "{train}"], "--stream"),
    (["train", "--stream", "-v", "3", "{train}"], "in memory"),
    (["train", "--stream", "--checkpoints", "3", "{train}"], "drop one of them"),
    (["train", "--stream", "--averaging", "tail", "{train}"], "drop one of them"),
    (["train", "--stream", "--refit", "{train}"], "drop one of them"),
    (["train", "--kernel", "linear", "--refit", "{train}"], "--refit apply only to"),
    (["train", "--kernel", "rbf", "--checkpoints", "-2", "{train}"], "checkpoints must be"),
    (["train", "--no-offset", "{train}"], "--no-offset apply only to --kernel rbf"),
    (["train", "-c", "-1", "{train}"], "C must be"),
    (["train", "--kernel", "rbf", "--budget", "1", "{train}"], "budget must be"),
    (["train", "--kernel", "rbf", "-g", "wide", "{train}"], "-g takes"),
    (["train", "-v", "1", "{train}"], "at least 2 folds"),
    (["predict", "{test}", "{d}/absent.model", "{d}/p"], "no model file"),
    (["predict", "{test}", "{train}", "{d}/p"], "not a valid pybudget model file"),
    (["info", "{train}"], "not a valid pybudget model file"),
    (["train", "-q", "{d}/bad.txt", "{d}/bad.model"], "bad.txt' as a LIBSVM file"),
])
def test_errors_are_one_line_messages(files, capsys, argv, message):
    d, train, test = files
    (d / "bad.txt").write_text("1 1:0.5\n1 qq\n")
    argv = [a.format(d=d, train=train, test=test) for a in argv]
    code, out, err = run(argv, capsys)
    assert code == 2
    assert message in err and "Traceback" not in err
    assert err.startswith("pybudget: error:") and err.count("\n") == 1


def test_usage_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as e:
        main(["train", "-s", "2", "x"])
    assert e.value.code == 2
    assert "the liblinear types available are the dual solvers" in capsys.readouterr().err
    for argv in (["train", "-B", "nan", "x"], ["cgrid", "-B", "inf"]):   # not "no bias"
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2
        assert "is not a finite number" in capsys.readouterr().err


def test_help_documents_every_option():
    text = build_parser()._subparsers._group_actions[0].choices["train"].format_help()
    for opt in ("-c", "-e", "-B", "-g", "-v", "-q", "-s", "--kernel", "--solver", "--selection",
                "--budget", "--merge-size", "--merge-search", "--maintenance", "--epochs",
                "--checkpoints", "--no-offset", "--averaging", "--refit",
                "--stream", "--chunk-size", "--seed", "TRAIN_FILE", "MODEL_FILE"):
        assert opt in text


def test_corrupted_model_in_subprocess_no_traceback(files, tmp_path):
    d, train, test = files
    subprocess.run([sys.executable, "-m", "pybudget", "train", "-q", str(train),
                    str(tmp_path / "m")], check=True, cwd=tempfile.gettempdir())
    data = (tmp_path / "m").read_bytes()
    (tmp_path / "m").write_bytes(data[: len(data) // 2])
    r = subprocess.run([sys.executable, "-m", "pybudget", "predict", str(test),
                        str(tmp_path / "m"), str(tmp_path / "p")], capture_output=True, text=True,
                       cwd=tempfile.gettempdir())
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "not a valid pybudget model file" in r.stderr


def _readme_cli_commands():
    """The shell lines of the README's command-line example (the ```bash block that
    contains 'pybudget train'), or None when the README has no such block yet."""
    from pathlib import Path
    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)```", text, flags=re.S)
    for b in blocks:
        if "pybudget train" in b:
            return [ln for ln in b.splitlines() if ln.strip() and not ln.startswith("#")]
    return None


def test_readme_command_line_example_runs(tmp_path):
    import os
    import shutil
    cmds = _readme_cli_commands()
    if cmds is None:
        pytest.skip("README has no command-line example block yet")
    env = dict(os.environ)
    if shutil.which("pybudget") is None:  # not installed as a console script: python -m
        cmds = [c.replace("pybudget ", f"{sys.executable} -m pybudget ", 1)
                if c.startswith("pybudget ") else c for c in cmds]
    cmds = [c.replace("python ", f"{sys.executable} ", 1) if c.startswith("python ") else c
            for c in cmds]
    outputs = []
    for c in cmds:
        r = subprocess.run(c, shell=True, cwd=tmp_path, capture_output=True, text=True,
                           env=env, timeout=600)
        assert r.returncode == 0, (c, r.stderr)
        outputs.append(r.stdout)
    joined = "\n".join(outputs)
    assert re.search(r"^Accuracy = [0-9.]+% \(\d+/\d+\)$", joined, flags=re.M)
    assert "estimator: LinearSVC" in joined


def test_regression_train_predict_info_and_cv(tmp_path, capsys):
    from sklearn.datasets import make_regression

    from pybudget import LinearSVR
    X, y = make_regression(300, 8, noise=1.0, random_state=0)
    y = y / 50.0
    dump_svmlight_file(X[:200], y[:200], str(tmp_path / "r.train"), zero_based=False)
    dump_svmlight_file(X[200:], y[200:], str(tmp_path / "r.test"), zero_based=False)
    code, _, _ = run(["train", "-s", "12", "-p", "0.05", "-B", "1", "-q", tmp_path / "r.train",
                      tmp_path / "r.model"], capsys)
    assert code == 0
    model = load(tmp_path / "r.model")
    assert isinstance(model, LinearSVR) and model.epsilon == 0.05
    assert model.loss == "squared_epsilon_insensitive"
    code, out, _ = run(["predict", tmp_path / "r.test", tmp_path / "r.model",
                        tmp_path / "r.pred"], capsys)
    pred = np.loadtxt(tmp_path / "r.pred")
    mse = float(re.search(r"Mean squared error = (\S+) \(regression\)", out).group(1))
    assert mse == pytest.approx(np.mean((pred - y[200:]) ** 2), rel=1e-5)
    assert "Squared correlation coefficient = 0.99" in out
    assert "targets: real (regression)" in run(["info", tmp_path / "r.model"], capsys)[1]
    code, out, _ = run(["train", "-s", "13", "-v", "3", "-q", tmp_path / "r.train"], capsys)
    assert code == 0 and "Cross Validation Mean squared error = " in out


def test_logistic_train_predict(files, capsys):
    from pybudget import LogisticRegression
    d, train, test = files
    assert run(["train", "-s", "7", "-B", "1", "-q", train, d / "lr.model"], capsys)[0] == 0
    assert isinstance(load(d / "lr.model"), LogisticRegression)
    _, out, _ = run(["predict", test, d / "lr.model", d / "lr.pred"], capsys)
    assert 80.0 < read_accuracy(out)[0] < 90.0


def test_liblinear_types_refused(files, capsys):
    d, train, _ = files
    code, _, err = run(["train", "-s", "3", "-p", "0.1", train, d / "x.model"], capsys)
    assert code == 2 and "-p (epsilon) applies only to regression" in err
    with pytest.raises(SystemExit) as e:       # argparse's own usage error
        main(["train", "-s", "5", str(train)])
    assert e.value.code == 2
    assert "dual solvers 1, 3, 4, 7, 12 and 13" in capsys.readouterr().err


def test_crammer_singer_train_predict(tmp_path, capsys):
    from sklearn.datasets import make_blobs
    X, y = make_blobs(300, centers=4, n_features=5, random_state=0)
    dump_svmlight_file(X[:200], y[:200], str(tmp_path / "m.train"), zero_based=False)
    dump_svmlight_file(X[200:], y[200:], str(tmp_path / "m.test"), zero_based=False)
    assert run(["train", "-s", "4", "-q", tmp_path / "m.train", tmp_path / "m.model"],
               capsys)[0] == 0
    model = load(tmp_path / "m.model")
    assert model.multi_class == "crammer_singer" and model.coef_.shape == (4, 5)
    _, out, _ = run(["predict", tmp_path / "m.test", tmp_path / "m.model",
                     tmp_path / "m.pred"], capsys)
    assert read_accuracy(out)[0] > 90.0
