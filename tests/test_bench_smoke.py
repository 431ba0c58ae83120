"""Each bench script runs end to end in its --quick mode and writes its outputs."""
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

BENCH = Path(__file__).resolve().parents[1] / "bench"

SCRIPTS = ["cgrid.py", "linear_check.py", "linear_speed.py", "warmstart.py", "cvgrid.py",
           "read_svmlight.py",
           "budget_accuracy.py", "budget.py", "kernel_throughput.py", "budget_defaults.py",
           "linear_family.py", "n_jobs.py", "ring_order.py", "threads.py", "nystroem.py",
           "budget_threads.py", "budget_storage.py"]


def run_bench(args, **kw):
    """Run a bench script; on failure, fail with the tail of what it printed."""
    r = subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True,
                       timeout=600, **kw)
    if r.returncode:
        pytest.fail(f"{args[0]} exited with {r.returncode}\n--- stdout ---\n"
                    f"{r.stdout[-3000:]}\n--- stderr ---\n{r.stderr[-6000:]}")


@pytest.mark.parametrize("script", SCRIPTS)
def test_bench_quick(script, tmp_path):
    pytest.importorskip("liblinear.liblinearutil")
    run_bench([BENCH / script, "--quick", "--out", tmp_path])
    outputs = list(tmp_path.glob("*.json"))
    assert outputs and (tmp_path / (outputs[0].stem + ".md")).exists()
    record = json.loads(outputs[0].read_text())
    assert "machine" in record


def test_threads_newton_and_fallback_quick(tmp_path):
    run_bench([BENCH / "threads.py", "--quick", "--study", "newton", "fallback", "--out",
               tmp_path])
    record = json.loads(next(tmp_path.glob("*.json")).read_text())
    assert record["newton"][0]["used"] == "newton"
    assert {r["estimator"] for r in record["fallback"]} == {"LinearSVC",
                                                            "LogisticRegression"}


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="bench reads /proc")
@pytest.mark.parametrize("script", ["robustness.py", "streaming.py", "float32.py"])
def test_bench_scripts_quick(script, tmp_path):
    args = ["--only", "memory", "repro"] if script == "robustness.py" else []
    run_bench([BENCH / script, "--quick", "--out", tmp_path, *args],
              cwd=tempfile.gettempdir())
    rec = json.loads(next(tmp_path.glob("*.json")).read_text())
    assert "machine" in rec
    assert next(tmp_path.glob("*.md")).read_text().startswith("###")


def test_build_compare_quick(tmp_path):
    pytest.importorskip("liblinear.liblinearutil")
    root = BENCH.parent
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), os.environ.get(
        "PYTHONPATH", "")]))
    run_bench([BENCH / "build_compare.py", "--quick", "--before", root, "--out", tmp_path],
              env=env)
    record = json.loads((tmp_path / "build_compare_quick.json").read_text())
    assert {r["workload"] for r in record["rows"]} >= {"a9a bsgd 1 epoch: seconds"}


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="bench reads /proc")
def test_distributed_quick(tmp_path):
    pytest.importorskip("distributed")
    studies = ("correct", "rounds", "speed", "memory", "big", "threads")
    run_bench([BENCH / "distributed.py", "--quick", "--study", *studies, "--configs", "1x1",
               "1x2", "--out", tmp_path],
              cwd=tempfile.gettempdir())
    for study in studies:
        rec = json.loads((tmp_path / f"distributed_{study}_quick.json").read_text())
        assert "machine" in rec and rec["rows"]
        assert (tmp_path / f"distributed_{study}_quick.md").read_text().startswith("###")


def test_budget_threads_decision_quick(tmp_path):
    run_bench([BENCH / "budget_threads.py", "--task", "decision", "--quick", "--out",
               tmp_path])
    record = json.loads((tmp_path / "budget_threads_decision_quick.json").read_text())
    assert record["cells"][0]["median"]["same_bits"]


def test_budget_threads_rule_quick(tmp_path):
    run_bench([BENCH / "budget_threads.py", "--task", "rule", "--quick", "--out", tmp_path])
    record = json.loads((tmp_path / "budget_threads_rule_quick.json").read_text())
    assert {c["pick"] for c in record["cells"]} <= {"one", "team"}


def test_dask_budget_quick(tmp_path):
    pytest.importorskip("distributed")
    run_bench([BENCH / "dask_budget.py", "--quick", "--out", tmp_path],
              cwd=tempfile.gettempdir())
    record = json.loads((tmp_path / "dask_budget.json").read_text())
    row = record["rows"][0]
    assert row["bits"]["1"]["same"] and row["runs"][0]["auto"]["laps"] > 1
    assert (tmp_path / "dask_budget.md").read_text().startswith("###")


def test_dask_budget_peer_quick(tmp_path):
    pytest.importorskip("dask_ml")
    run_bench([BENCH / "dask_budget.py", "--peer", "--quick", "--out", tmp_path],
              cwd=tempfile.gettempdir())
    record = json.loads((tmp_path / "dask_budget.json").read_text())
    assert set(record["rows"][0]["runs"][0]) == {"seed", "budget", "rbf", "nystroem"}


def test_dask_budget_big_quick(tmp_path):
    pytest.importorskip("distributed")
    run_bench([BENCH / "dask_budget.py", "--big", "--quick", "--out", tmp_path],
              cwd=tempfile.gettempdir())
    run = json.loads((tmp_path / "dask_budget.json").read_text())["rows"][0]["runs"][0]
    assert run["cluster"]["acc"] > 60 and run["stream"]["acc"] > 60


def test_dask_budget_bsca_quick(tmp_path):
    pytest.importorskip("distributed")
    run_bench([BENCH / "dask_budget.py", "--bsca", "--quick", "--out", tmp_path],
              cwd=tempfile.gettempdir())
    row = json.loads((tmp_path / "dask_budget.json").read_text())["rows"][0]
    assert row["classes"] == 10 and row["runs"][0]["same"]


def test_dask_budget_merge_quick(tmp_path):
    pytest.importorskip("distributed")
    run_bench([BENCH / "dask_budget_merge.py", "--quick", "--out", tmp_path],
              cwd=tempfile.gettempdir())
    run = json.loads((tmp_path / "dask_budget_merge.json").read_text())["rows"][0]["runs"][0]
    assert all(run[k]["acc"] > 60 for k in ("one", "ring", "merged", "more"))
