"""pybudget train --scheduler / --workers: a Dask cluster from the command line."""
import inspect
import re
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file, load_svmlight_file

from pybudget import LinearSVC, LinearSVR, LogisticRegression, load
from pybudget.cli import main
from pybudget.datasets import load as load_data

distributed = pytest.importorskip("distributed")
pbd = pytest.importorskip("pybudget.dask")
from pybudget.dask import estimators as E  # noqa: E402

ROUND = re.compile(r"^\[pybudget\] round (\d+): KKT violation ([0-9.e+-]+), relative "
                   r"duality gap [0-9.e+-]+ \(largest of \d+ checked\), \d+ problems "
                   r"left, bytes through the "
                   r"client \d+, between workers \d+, worker peak memory "
                   r"\[(\d+(?:, \d+)*)\] MiB, [0-9.]+s elapsed", re.M)
TRAINED = re.compile(r"^\[pybudget\] trained by ring \((\d+) rounds, KKT violation "
                     r"([0-9.e+-]+), relative duality gap [0-9.e+-]+, bytes through the client "
                     r"(\d+), between workers (\d+)\)", re.M)
ACC = re.compile(r"^Accuracy = ([0-9.]+)% \((\d+)/(\d+)\)$", re.M)
FAST = ["-c", "0.1", "-B", "1"]   # a9a converges in about 55 rounds at the default tol


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    """Four LIBSVM shards of 1000 a9a rows (the last one bz2) and a test file."""
    d = tmp_path_factory.mktemp("shards")
    X, y, Xt, yt = load_data("a9a")
    for k in range(4):
        rows = slice(1000 * k, 1000 * (k + 1))
        dump_svmlight_file(X[rows], y[rows], str(d / f"part-{k}.svm"), zero_based=False)
    (d / "part-3.svm").rename(d / "part-3.svm.tmp")
    import bz2
    (d / "part-3.svm.bz2").write_bytes(bz2.compress((d / "part-3.svm.tmp").read_bytes()))
    (d / "part-3.svm.tmp").unlink()
    dump_svmlight_file(Xt[:2000], yt[:2000], str(d / "test.svm"), zero_based=False)
    return d, str(d / "part-*.svm*"), d / "test.svm"


@pytest.fixture(scope="module")
def scheduler():
    """A small in-process cluster reached over TCP, as a remote one would be."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None, protocol="tcp",
                                  scheduler_kwargs={"dashboard_address": "127.0.0.1:0"}
                                  ) as cluster:
        yield cluster.scheduler_address


def run(argv, capsys):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def reference(cls, pattern, **kw):
    """What the Python API trains on the same shards with the CLI's seed (0)."""
    return cls(random_state=0, engine="threads", **kw).fit(pbd.read_svmlight(pattern))


def test_scheduler_train_predict_info(shards, scheduler, capsys, tmp_path, monkeypatch):
    d, pattern, test = shards
    # (the shards are small: the rule lowered, they spread over both workers; the CLI
    # takes no rules, the estimators' default rules are patched)
    monkeypatch.setattr(E, "DEFAULT_RULES", replace(E.DEFAULT_RULES, small_bytes=1000))
    model = tmp_path / "cluster.pbm"
    code, out, err = run(["train", "--scheduler", scheduler, "--method", "ring", *FAST,
                          pattern, model], capsys)
    assert code == 0 and out == "", err
    assert f"connected to the Dask scheduler at {scheduler}, 2 workers" in err
    assert "on 4 shard(s), method ring" in err
    rounds = ROUND.findall(err)
    # (the ring checks after a round)
    assert len(rounds) >= 2 and int(rounds[0][0]) == 1
    assert all(len(mem.split(", ")) == 2 for _, _, mem in rounds)   # one figure per worker
    n_rounds, kkt, client, between = TRAINED.search(err).groups()
    assert float(kkt) <= 0.1 and int(client) > 0 and int(between) > 0
    assert int(between) > 0 or int(n_rounds) < 10
    assert "model written to" in err

    ref = reference(pbd.LinearSVC, pattern, C=0.1, fit_intercept=True, method="ring")
    est = load(model)
    assert type(est) is LinearSVC and est.C == 0.1 and est.random_state == 0
    assert int(n_rounds) == ref.n_rounds_ and float(kkt) == pytest.approx(
        ref.kkt_violation_.max(), rel=1e-2)
    np.testing.assert_array_equal(est.coef_, ref.coef_)
    np.testing.assert_array_equal(est.intercept_, ref.intercept_)

    code, out, _ = run(["predict", test, model, tmp_path / "pred"], capsys)
    assert code == 0
    acc, k, n = ACC.search(out).groups()
    Xt, yt = load_svmlight_file(str(test), n_features=est.n_features_in_)
    expected = ref.to_local().predict(Xt)
    assert int(n) == 2000 and int(k) == int(np.sum(expected == yt))
    assert float(acc) > 80
    assert run(["info", model], capsys)[0] == 0


def test_default_method_on_small_shards_is_whole(shards, scheduler, capsys, tmp_path):
    """Without --method, small shards are trained by method "whole" (the one-machine
    solver on a worker): the model is the Python API's."""
    _, pattern, _ = shards
    model = tmp_path / "whole.pbm"
    code, out, err = run(["train", "--scheduler", scheduler, *FAST, pattern, model], capsys)
    assert code == 0 and out == "", err
    assert re.search(r"^\[pybudget\] trained by whole \(\d+ sweeps of a problem", err, re.M)
    ref = reference(pbd.LinearSVC, pattern, C=0.1, fit_intercept=True)
    assert ref.method_ == "whole"
    np.testing.assert_array_equal(load(model).coef_, ref.coef_)


@pytest.mark.parametrize("opts,cls,local", [
    (["-s", "1", "--laps", "1"], pbd.LinearSVC, LinearSVC),
    (["-s", "7", "--local-sweeps", "2"], pbd.LogisticRegression, LogisticRegression),
    (["-s", "13", "-p", "0.1", "--selection", "shrinking"], pbd.LinearSVR, LinearSVR),
])
def test_scheduler_other_problems(shards, scheduler, capsys, tmp_path, opts, cls, local):
    _, pattern, _ = shards
    model = tmp_path / "m.pbm"
    code, _, err = run(["train", "-q", "--scheduler", scheduler, "-c", "0.1", "-e", "0.05",
                        "--method", "ring", *opts, pattern, model], capsys)
    assert code == 0 and err == ""     # -q: no progress
    kw = {"C": 0.1, "tol": 0.05, "fit_intercept": False, "method": "ring"}
    if cls is pbd.LinearSVC:
        kw.update(loss="squared_hinge", laps=1)
    elif cls is pbd.LogisticRegression:
        kw["local_sweeps"] = 2
    else:
        kw.update(loss="epsilon_insensitive", epsilon=0.1, selection="shrinking")
    ref = reference(cls, pattern, **kw)
    est = load(model)
    assert type(est) is local
    np.testing.assert_array_equal(est.coef_, ref.coef_)


def test_worker_side_error_is_one_line(scheduler, capsys, tmp_path):
    good = tmp_path / "part-0.svm"
    good.write_text("1 1:1\n-1 2:1\n")
    (tmp_path / "part-1.svm").write_text("1 1:1\nnot a row\n")
    code, out, err = run(["train", "--scheduler", scheduler, str(tmp_path / "part-*.svm"),
                          tmp_path / "m.pbm"], capsys)
    assert code == 2 and out == ""
    last = err.strip().splitlines()[-1]
    assert last.startswith("pybudget: error: ") and "part-1.svm" in last
    assert "Traceback" not in err and not (tmp_path / "m.pbm").exists()


def test_local_cluster_error_is_one_line(capfd, tmp_path):
    """--workers in this process: a shard the workers cannot read is one line, without
    the workers' logged tracebacks (they write to the same terminal)."""
    (tmp_path / "part-0.svm").write_text("1 1:1\n-1 2:1\n")
    (tmp_path / "part-1.svm").write_text("1 1:1\nnot a row\n")
    code = main(["train", "--workers", "1", "-q", str(tmp_path / "part-*.svm"),
                 str(tmp_path / "m.pbm")])
    out, err = capfd.readouterr()
    assert code == 2 and out == ""
    assert err.startswith("pybudget: error: cannot read") and err.count("\n") == 1, err
    assert "part-1.svm" in err and not (tmp_path / "m.pbm").exists()


def test_scheduler_trains_a_budgeted_kernel_model(shards, scheduler, capsys, tmp_path):
    """--kernel rbf on the cluster: pybudget.dask.BudgetSVC on the shards, the model file
    the Python API's model (its threads engine), predict as usual."""
    d, pattern, test = shards
    model = tmp_path / "rbf.pbm"
    code, out, err = run(["train", "--scheduler", scheduler, "--kernel", "rbf", "--budget",
                          "40", "--laps", "3", pattern, model], capsys)
    assert code == 0 and out == "", err
    assert "training BudgetSVC(C=1, solver=bsgd, budget=40" in err and "laps 3" in err
    assert "trained: 3 laps an epoch, 40 support vectors" in err
    ref = reference(pbd.BudgetSVC, pattern, budget=40, laps=3)
    got = load(model)
    X, _ = load_svmlight_file(str(test), n_features=123)
    X = X[:, :got.n_features_in_]       # (the shards use 122 of a9a's 123 columns)
    np.testing.assert_array_equal(got.decision_function(X), ref.decision_function(X))
    code, out, _ = run(["predict", test, model, tmp_path / "p.txt"], capsys)
    assert code == 0 and float(ACC.search(out).group(1)) > 75


BAD = [
    (["--stream"], "--stream reads a file on one machine"),
    (["--kernel", "rbf", "--local-sweeps", "2"], "--local-sweeps: the linear ring's"),
    (["--solver", "bsca", "--method", "ring"], "--method ring: the linear ring's"),
    (["--budget", "1"], "budget"),
    (["--kernel", "rbf", "--checkpoints", "2", "--averaging", "none"], "one machine's only"),
    (["-s", "4"], "Crammer-Singer"),
    (["-v", "3"], "-v (cross-validation) runs on one machine"),
    (["-n", "2"], "-n (threads) applies to one machine"),
    (["--verbose"], "--verbose"),
    (["-p", "0.1"], "-p (epsilon) applies only to regression"),
    (["-c", "-1"], "C must be"),
    (["--local-sweeps", "0"], "local_sweeps"),
    (["--laps", "0"], "laps"),
    (["--laps", "2", "--local-sweeps", "2"], "a visit runs either several sweeps"),
]


@pytest.mark.parametrize("opts,message", BAD)
def test_usage_errors_are_one_line(shards, capsys, tmp_path, opts, message):
    # refused before any cluster is started
    _, pattern, _ = shards
    code, out, err = run(["train", "--workers", "2", *opts, pattern, tmp_path / "m"], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("pybudget: error: ") and message in err
    assert not (tmp_path / "m").exists()


def test_file_errors(shards, capsys, tmp_path):
    _, pattern, _ = shards
    for argv, message in [
        (["--workers", "2", pattern], "TRAIN_FILE is a glob: give MODEL_FILE"),
        (["--workers", "2", str(tmp_path / "none-*.svm"), tmp_path / "m"], "no files match"),
        (["--workers", "0", pattern, tmp_path / "m"], "--workers must be >= 1"),
        (["--local-sweeps", "2", pattern, tmp_path / "m"], "--local-sweeps applies to"),
        (["--laps", "2", pattern, tmp_path / "m"], "--laps applies to"),
    ]:
        code, _, err = run(["train", *argv], capsys)
        assert code == 2 and err.count("\n") == 1 and message in err, err
    with pytest.raises(SystemExit) as e:      # argparse: one or the other
        main(["train", "--workers", "2", "--scheduler", "tcp://x:1", pattern, "m"])
    assert e.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_without_dask_says_what_to_install(shards, capsys, tmp_path, monkeypatch):
    _, pattern, _ = shards
    monkeypatch.setitem(sys.modules, "distributed", None)   # import fails
    code, _, err = run(["train", "--workers", "2", pattern, tmp_path / "m"], capsys)
    assert code == 2 and err.count("\n") == 1
    assert 'pip install "pybudget[dask]"' in err


def test_unreachable_scheduler_is_one_line(shards, capsys, tmp_path):
    import dask
    _, pattern, _ = shards
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        code, _, err = run(["train", "--scheduler", "tcp://127.0.0.1:9", pattern,
                            tmp_path / "m"], capsys)
    assert code == 2 and err.count("\n") == 1 and "tcp://127.0.0.1:9" in err, err


def test_help_documents_the_cluster_options(capsys):
    with pytest.raises(SystemExit) as e:
        main(["train", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for text in ("--scheduler ADDRESS", "--workers N", "--local-sweeps K", "--laps L",
                 "KKT violation", 'pip install "pybudget[dask]"'):
        assert text in out
    # the defaults the help states are pybudget.dask's, and one machine's
    params = inspect.signature(pbd.LinearSVC).parameters
    one = inspect.signature(LinearSVC).parameters
    assert params["tol"].default == one["tol"].default
    assert params["max_iter"].default == one["max_iter"].default
    assert params["local_sweeps"].default == 1 and params["laps"].default == "auto"


@pytest.mark.cluster
def test_local_cluster_by_subprocess(shards, tmp_path):
    """python -m pybudget train --workers 2: a local cluster of two processes started
    and closed by the command; the model is the Python API's."""
    _, pattern, test = shards
    model = tmp_path / "local.pbm"
    res = subprocess.run([sys.executable, "-m", "pybudget", "train", "--workers", "2",
                          "--method", "ring", *FAST, pattern, str(model)],
                         capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout == ""
    assert "starting a local Dask cluster of 2 worker processes" in res.stderr
    rounds = ROUND.findall(res.stderr)
    # (peak memory of the fit's workers: the shards are small, on one worker, until
    # the checkpoint of round 10 copies the duals to the other)
    assert rounds and all(len(mem.split(", ")) == 1 for t, _, mem in rounds if int(t) < 10)
    assert TRAINED.search(res.stderr) and "Traceback" not in res.stderr
    ref = reference(pbd.LinearSVC, pattern, C=0.1, fit_intercept=True, method="ring")
    np.testing.assert_array_equal(load(model).coef_, ref.coef_)
