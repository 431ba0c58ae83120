import subprocess
import sys
from pathlib import Path

import pytest

from pybudget.cgrid import cgrid, format_table
from pybudget.cli import main

ROOT = Path(__file__).resolve().parents[1]


def test_cgrid_function_and_table():
    rows = cgrid("a9a", Cs=[0.01, 0.1], tol=0.1, selections=["shrinking", "avsf"])
    assert len(rows) == 4 and all(r["converged"] for r in rows)
    assert all(0.8 < r["test_accuracy"] < 0.9 for r in rows)
    table = format_table(rows)
    assert "| shrinking |" in table and "| avsf |" in table and "C=0.01" in table


def test_cli_cgrid_prints_table(capsys):
    assert main(["cgrid", "--data", "a9a", "--C", "0.1", "--tol", "0.1", "-q"]) == 0
    out = capsys.readouterr().out
    assert "| strategy | C=0.1 | total |" in out and "dual objective" in out


def test_cli_errors_are_messages(capsys):
    assert main(["cgrid", "--data", "no-such-set", "-q"]) == 2
    assert "unknown data set" in capsys.readouterr().err
    assert main(["cgrid", "--data", "a9a", "--C", "-1", "-q"]) == 2
    assert "C must be" in capsys.readouterr().err


def test_cli_damaged_data_file_is_a_message(tmp_path, capsys):
    import lzma
    bad = tmp_path / "bad.txt.xz"
    with lzma.open(bad, "wb") as f:
        f.write(b"".join(b"%d 1:%d\n" % (2 * (i % 2) - 1, i) for i in range(3000)))
    bad.write_bytes(bad.read_bytes()[:30] + b"x" * 50)
    for argv in (["train", str(bad), str(tmp_path / "m.pb")],
                 ["train", "--stream", str(bad), str(tmp_path / "m.pb")]):
        assert main(argv) == 2
        assert "bad.txt.xz" in capsys.readouterr().err


def test_python_dash_m_runs(tmp_path):
    # run outside the source tree: "-m" would import the uncompiled checkout instead
    out = subprocess.run([sys.executable, "-m", "pybudget", "cgrid", "--data", "a9a", "--C", "1",
                          "--tol", "0.1", "-q"], capture_output=True, text=True, check=True,
                         cwd=tmp_path)
    assert "| avsf |" in out.stdout


@pytest.mark.slow
def test_readme_main_job_runs(tmp_path):
    # the README's first command after the install: the default C-grid comparison
    out = subprocess.run([sys.executable, "-m", "pybudget", "cgrid"], capture_output=True,
                         text=True, check=True, cwd=tmp_path, timeout=600)
    assert "debian-lib-small, tol 0.01" in out.stdout
    assert "| shrinking |" in out.stdout and "| avsf |" in out.stdout
    assert "C=1000" in out.stdout and "no (max_iter)" not in out.stdout


def test_readme_commands_are_what_ci_runs():
    readme = (ROOT / "README.md").read_text().splitlines()
    first = readme.index("```bash")
    install_run, test_cmd = readme[first + 1], readme[first + 2]
    assert install_run == "pip install . && python -m pybudget cgrid"
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    # CI types both where a newcomer does: at the root of a fresh clone
    assert ci.index('cd "$clone"') < ci.index(install_run) < ci.index(test_cmd)


def test_cli_cgrid_cross_validation(capsys):
    assert main(["cgrid", "--data", "a9a", "--C", "0.01", "0.1", "--cv", "3", "--n-jobs", "2",
                 "--selection", "shrinking", "-q"]) == 0
    out = capsys.readouterr().out
    assert "3-fold cross-validation" in out and "best C = " in out
    assert "| 0.01 | 84." in out  # a9a accuracy at C=0.01 is about 84.4 %


def _unbuilt_checkout(tmp_path):
    """A folder laid out like a fresh clone: pybudget/ with its sources, nothing built."""
    import pybudget
    src = tmp_path / "pybudget"
    src.mkdir()
    (src / "__init__.py").write_text(Path(pybudget.__file__).read_text())
    (src / "__main__.py").write_text("raise SystemExit('the unbuilt checkout ran')\n")
    return tmp_path


def test_module_command_at_the_root_of_an_unbuilt_checkout(tmp_path):
    """'python -m pybudget' where a newcomer types it, at the root of a clone: the
    unbuilt pybudget/ there hands over to the installed (built) package."""
    root = _unbuilt_checkout(tmp_path)
    out = subprocess.run([sys.executable, "-m", "pybudget", "train", "--help"],
                         capture_output=True, text=True, cwd=root, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "MODEL_FILE" in out.stdout
    where = subprocess.run([sys.executable, "-c", "import pybudget, pybudget.budget.svm; "
                            "print(pybudget.__file__); print(pybudget.BudgetSVC.__module__)"],
                           capture_output=True, text=True, cwd=root, check=True).stdout.split()
    assert Path(where[0]).parent != root / "pybudget" and where[1] == "pybudget.budget.svm"


def test_unbuilt_checkout_alone_says_how_to_build(tmp_path):
    root = _unbuilt_checkout(tmp_path)
    # nothing installed: only the checkout and the standard library on the path
    code = (f"import sys; sys.path[:] = [{str(root)!r}] + "
            "[p for p in sys.path if p and 'site-packages' not in p]; import pybudget")
    out = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True,
                         cwd=root, timeout=60)
    assert out.returncode != 0 and "pip install ." in out.stderr


@pytest.mark.parametrize("loss,score", [("crammer_singer", " %"), ("logistic", " %"),
                                        ("squared_epsilon_insensitive", "R² ")])
def test_cli_cgrid_every_problem(capsys, loss, score):
    assert main(["cgrid", "--data", "a9a", "--C", "0.01", "0.1", "--loss", loss, "-q"]) == 0
    out = capsys.readouterr().out
    assert f"loss {loss}" in out and "| shrinking / avsf |" in out and score in out
