"""Run the test suite against the *installed* pybudget (a wheel), not the source tree.

Copies tests/, bench/, .ci/, .github/, docs/, README.md and pyproject.toml of the project (what
the tests read) into a temporary directory without the pybudget/ package, checks that
``import pybudget`` resolves outside the project, and runs pytest there.  Used by
.ci/wheel_check.sh and by cibuildwheel's test-command (there PROJECT_DIR is the checkout,
``/project`` inside the manylinux container, and the working directory is a scratch one).

    python .ci/run_installed_tests.py PROJECT_DIR [pytest args, test files...]
"""
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def main():
    project = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parents[1]).resolve()
    extra = sys.argv[2:]
    # ignore_cleanup_errors: on Windows a file a test left open must not fail the run
    with tempfile.TemporaryDirectory(prefix="pybudget-tests-", ignore_cleanup_errors=True) as tmp:
        tmp = Path(tmp)
        for name in ("tests", "bench", ".ci", ".github", "docs"):
            shutil.copytree(project / name, tmp / name,
                            ignore=shutil.ignore_patterns("__pycache__", "results"))
        for name in ("README.md", "pyproject.toml"):
            shutil.copy(project / name, tmp / name)
        where = subprocess.run([sys.executable, "-c", "import pybudget; print(pybudget.__file__)"],
                               cwd=tmp, capture_output=True, text=True, check=True).stdout.strip()
        print(f"pybudget imported from {where}", flush=True)
        if Path(where).resolve().is_relative_to(project):
            sys.exit(f"pybudget resolves to the source tree {project}, not an installed wheel")
        env = dict(os.environ)
        data = project.parent / "shared" / "data"
        if "PYBUDGET_DATA" not in env and data.is_dir():
            env["PYBUDGET_DATA"] = str(data)
        # (the whole suite, unless the arguments name test files)
        files = [] if any(a.startswith("tests/") for a in extra) else ["tests"]
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *files, *extra]
        sys.exit(subprocess.run(cmd, cwd=tmp, env=env).returncode)


if __name__ == "__main__":
    main()
