"""The wheel workflow (.github/workflows/wheels.yml) builds what pyproject.toml's
[tool.cibuildwheel] declares: cibuildwheel, one native runner per (platform, arch) that
pyproject lists, no matrix of its own, a test run on every wheel, and an sdist."""
import re
import sys
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")  # in the test extra; skip only where it is missing
if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib  # in the test extra for Python < 3.11

ROOT = Path(__file__).resolve().parents[1]

# GitHub-hosted runner label -> (cibuildwheel platform, the arch it builds natively)
RUNNERS = {
    "ubuntu-latest": ("linux", "x86_64"),
    "ubuntu-24.04": ("linux", "x86_64"),
    "ubuntu-22.04": ("linux", "x86_64"),
    "ubuntu-24.04-arm": ("linux", "aarch64"),
    "ubuntu-22.04-arm": ("linux", "aarch64"),
    "macos-15-intel": ("macos", "x86_64"),
    "macos-13": ("macos", "x86_64"),
    "macos-14": ("macos", "arm64"),
    "macos-15": ("macos", "arm64"),
    "macos-latest": ("macos", "arm64"),
    "windows-latest": ("windows", "AMD64"),
    "windows-2022": ("windows", "AMD64"),
    "windows-2025": ("windows", "AMD64"),
}


def cibuildwheel_config():
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["tool"]["cibuildwheel"]


def workflow():
    return yaml.safe_load((ROOT / ".github" / "workflows" / "wheels.yml").read_text())


def steps_using(wf, action):
    """(job, step) pairs whose step runs `action` (a 'uses:' of action@ref)."""
    return [(job, step) for job in wf["jobs"].values() for step in job.get("steps", [])
            if step.get("uses", "").split("@")[0] == action]


def uploaded_paths(job):
    return [s["with"]["path"] for s in job["steps"]
            if s.get("uses", "").startswith("actions/upload-artifact@")]


def cibuildwheel_step(wf):
    found = steps_using(wf, "pypa/cibuildwheel")
    assert len(found) == 1, "the workflow runs cibuildwheel exactly once (one matrix job)"
    return found[0]


def test_workflow_runs_a_pinned_cibuildwheel_with_pyprojects_matrix():
    job, step = cibuildwheel_step(workflow())
    assert re.fullmatch(r"pypa/cibuildwheel@v\d+\.\d+\.\d+", step["uses"]), step["uses"]
    # The build selection, skips and test command come from pyproject.toml alone; the
    # workflow only tells each runner to build its own arch.
    assert step.get("env", {}) == {"CIBW_ARCHS": "native"}
    assert not step.get("with", {}).get("config-file")
    assert uploaded_paths(job) == ["wheelhouse/*.whl"]


def test_workflow_runners_cover_pyprojects_archs():
    job, _ = cibuildwheel_step(workflow())
    assert job["runs-on"] == "${{ matrix.os }}"
    labels = job["strategy"]["matrix"]["os"]
    unknown = [label for label in labels if label not in RUNNERS]
    assert not unknown, f"runner labels this test does not know the arch of: {unknown}"
    built = [RUNNERS[label] for label in labels]
    assert len(built) == len(set(built)), f"two runners build the same wheels: {labels}"
    config = cibuildwheel_config()
    declared = {(platform, arch) for platform in ("linux", "macos", "windows")
                for arch in config[platform]["archs"]}
    assert set(built) == declared


def test_every_built_wheel_is_tested():
    config = cibuildwheel_config()
    assert ".ci/run_installed_tests.py {project}" in config["test-command"]
    assert not config.get("test-skip"), "cibuildwheel would build wheels it never tests"
    assert (ROOT / ".ci" / "run_installed_tests.py").is_file()
    assert "pyyaml" in config["test-requires"]  # so this module runs there too


def test_workflow_builds_the_sdist():
    wf = workflow()
    assert wf.get("on", wf.get(True))  # PyYAML reads the key 'on' as True
    sdist = wf["jobs"]["sdist"]
    assert any("build --sdist" in step.get("run", "") for step in sdist["steps"])
    assert uploaded_paths(sdist) == ["dist/*.tar.gz"]
