#!/usr/bin/env bash
# Release check: sdist + wheel (the wheel is built from the sdist, so the sdist builds
# from scratch), twine check, then a fresh virtual environment outside the source tree,
# the wheel installed with its test extra, and the test suite run against it from a
# temporary copy of tests/ (.ci/run_installed_tests.py).
#   .ci/wheel_check.sh            # numpy 2 at run time
#   NUMPY1=1 .ci/wheel_check.sh   # then again with numpy 1.x at run time
#   KEEP=1 ...                    # keep the work directory (dist/ and venv/)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/pybudget-wheel.XXXXXX")"
if [ "${KEEP:-0}" = "0" ]; then trap 'rm -rf "$work"' EXIT; else echo "work dir: $work"; fi

echo "== build sdist and wheel (isolated, build requirements from PyPI)"
python3 -m build --outdir "$work/dist" "$root"
ls -l "$work/dist"

echo "== twine check"
python3 -m twine check --strict "$work"/dist/*

echo "== fresh venv, install the wheel"
python3 -m venv "$work/venv"
# shellcheck disable=SC1091
. "$work/venv/bin/activate"
python -m pip install --quiet --upgrade pip
wheel=$(ls "$work"/dist/*.whl)
python -m pip install --quiet "${wheel}[test]"
python -m pip list 2>/dev/null | grep -iE "^(pybudget|numpy|scipy|scikit-learn) "

echo "== tests against the installed wheel"
cd "$work"
python "$root/.ci/run_installed_tests.py" "$root"
pybudget --help >/dev/null

if [ "${NUMPY1:-0}" != "0" ]; then
    echo "== again with numpy 1.x at run time"
    python -m pip install --quiet "numpy<2" "scipy<1.15" "pandas<2.3"
    python -c "import numpy; print('numpy', numpy.__version__)"
    python "$root/.ci/run_installed_tests.py" "$root"
fi
echo "== wheel check passed"
