"""The user guide's Dask example runs as printed, in a fresh process (its LocalCluster
starts worker processes that import the script)."""
import re
import subprocess
import sys

import pytest

import pybudget
from pybudget.datasets import load

from helpers import ROOT

pytest.importorskip("distributed")
GUIDE = ROOT / "docs" / "user_guide.md"


def dask_example():
    text = GUIDE.read_text()
    section = text[text.index("\n## Training on a Dask cluster\n") + 1:]
    section = section[:section.index("\n## ", 3)]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 1
    return blocks[0]


@pytest.mark.slow
def test_user_guide_dask_example_runs(tmp_path):
    script = tmp_path / "example.py"
    script.write_text(dask_example())
    out = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 4
    X, y, X_test, y_test = load("debian-lib-small")
    one = pybudget.LinearSVC(C=0.1, random_state=0).fit(X, y).score(X_test, y_test)
    assert abs(float(lines[1]) - one) <= 0.005      # the one-machine model's accuracy
    assert (tmp_path / "dlib.pbm").exists()
    # the budgeted model: its laps, and the accuracy of the model the file holds
    laps, acc = lines[3].split()
    kernel = pybudget.load(tmp_path / "kernel.pbm")
    assert int(laps) > 1 and float(acc) == kernel.score(X_test, y_test) > 0.8
    assert sorted(p.name for p in tmp_path.glob("part-*.svm")) == [
        "part-0.svm", "part-1.svm", "part-2.svm"]
