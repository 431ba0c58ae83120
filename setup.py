"""Build script: declares the Cython extensions (metadata lives in pyproject.toml).

Every ``pybudget/**/*.pyx`` becomes an extension named by its path
(``pybudget/linear/_dcd64.pyx`` -> ``pybudget.linear._dcd64``); the typed
memoryviews' support code is one generated module they share (``SHARED``).  Set
``PYBUDGET_DEBUG=1`` to build with bounds checking and without -O3, for debugging.
"""
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

DEBUG = os.environ.get("PYBUDGET_DEBUG", "0") not in ("", "0")

directives = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": not DEBUG,
    "nonecheck": False,
    "embedsignature": True,
}

if os.name == "nt":
    compile_args = ["/O2"]
else:
    compile_args = ["-O0", "-g"] if DEBUG else ["-O3"]

# OpenMP for the threaded solvers (n_jobs on one problem, linear/_dcd_team.pxi): gcc's
# -fopenmp and MSVC's /openmp.  Apple's clang has no OpenMP of its own; there the team
# code compiles to one thread (pybudget.linear._dcd64.THREADS is False) unless
# PYBUDGET_OPENMP names the flags (e.g. "-Xpreprocessor -fopenmp -lomp" with libomp).
if "PYBUDGET_OPENMP" in os.environ:
    openmp = os.environ["PYBUDGET_OPENMP"].split()
elif os.name == "nt":
    openmp = ["/openmp"]
elif sys.platform == "darwin":
    openmp = []
else:
    openmp = ["-fopenmp"]
THREADED = {"_dcd64", "_dcd32", "_budget", "_epochs", "_maintain"}  # (OpenMP)

here = Path(__file__).parent
extensions = [
    Extension(
        ".".join(pyx.relative_to(here).with_suffix("").parts),
        [pyx.relative_to(here).as_posix()],
        include_dirs=[np.get_include(), "pybudget/_core"],   # the C headers
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_9_API_VERSION")],
        extra_compile_args=compile_args + (openmp if pyx.stem in THREADED else []),
        extra_link_args=openmp if pyx.stem in THREADED and os.name != "nt" else [],
    )
    for pyx in sorted((here / "pybudget").rglob("*.pyx"))
]

# The support code of typed memoryviews goes in one module of its own (Cython >= 3.1)
# instead of into each extension: it was half of every module's C, and a clean build took
# 88-98 s instead of 45-54 s on 2 cores (CI builds the package three times).
SHARED = "pybudget._cyutility"
shared_c = here.joinpath(*SHARED.split(".")).with_suffix(".c")
with tempfile.TemporaryDirectory() as tmp:
    # (written afresh each build, as the Cython installed may have changed, but kept
    # where unchanged, so that an in-place build does not compile it again)
    fresh = Path(tmp) / shared_c.name
    subprocess.run([sys.executable, "-m", "cython", f"--generate-shared={fresh}"],
                   check=True)
    if not shared_c.exists() or shared_c.read_bytes() != fresh.read_bytes():
        shutil.copyfile(fresh, shared_c)
extensions.append(Extension(SHARED, [shared_c.relative_to(here).as_posix()],
                            extra_compile_args=compile_args))

JOBS = os.cpu_count() or 1


class ParallelBuildExt(build_ext):
    """Compiles the extensions on every core unless ``-j`` says otherwise (threads;
    cythonizing and compiling the modules took 78 s one at a time, 41 s on two cores,
    on a faster machine than the one SHARED's figures come from)."""

    def finalize_options(self):
        super().finalize_options()
        if not self.parallel:
            self.parallel = JOBS


# Cythonizing in a process pool needs fork: under spawn or forkserver each worker would
# import this script again and call setup() itself
forks = multiprocessing.get_start_method() == "fork"
setup(ext_modules=cythonize(extensions, compiler_directives=directives,
                            shared_utility_qualified_name=SHARED,
                            nthreads=JOBS if forks else 0),
      cmdclass={"build_ext": ParallelBuildExt})
