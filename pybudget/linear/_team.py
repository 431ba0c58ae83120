"""When one dual CD problem runs on several threads, and how often they combine.

A team (``_dcd_team.pxi``) deals each sweep's visits to its threads; each steps on its
own replica of w for ``chunk`` visits, then the team combines the replicas in passes over
all d + 1 weights.  So a team pays only where a chunk's work (about ``chunk`` times the
mean row length) is large against d, and where a sweep still holds several chunks per
thread (the replicas go stale within a chunk: fewer combines, more sweeps).  Everything
else runs on one thread, whatever ``n_jobs`` asks: ``n_jobs`` is an upper bound.

The constants were measured on 2-core machines:
- sparse text (debian-lib, d = 353,593, 90 non-zeros a row; hinge, C = 1, hard
  shrinking): a combine took 1-4 ms and a team of 2 was slower than one thread at
  every chunk tried (500 to a whole sweep); the rule sends such data to one thread;
- short rows (a9a, w8a, ijcnn1: d <= 300): chunks of 1024 visits were the fastest of
  128-1024 on all three.
What a team gains where the rule runs one: docs/benchmarks.md, section 11.
"""
import math

from joblib import cpu_count

from pybudget.linear._dcd64 import THREADS

# the teams' problems and strategies (the logistic dual's inner Newton state is per
# solver, Crammer-Singer's blocks and the pair steps are not written for teams)
TEAM_PROBLEMS = ("svm", "svr")
TEAM_SELECTIONS = ("uniform", "shrinking", "avsf")
MIN_NNZ = 200_000       # smaller data: one thread (a team's start and barriers dominate)
MIN_CHUNK = 1024        # visits per thread between two combines
COMBINE_COST = 8        # a chunk's non-zeros at least this many times d + 1
MIN_COMBINES = 4        # chunks per thread in a full sweep, at least


def team_size(X, n_threads, problem, selection, cpus=None):
    """(threads, chunk) for one problem on canonical CSR X when ``n_threads`` may be
    used on ``cpus`` cores (None: this machine's): (1, 0) unless a team is expected to
    pay (see the module's docstring)."""
    if (n_threads < 2 or not THREADS or problem not in TEAM_PROBLEMS
            or selection not in TEAM_SELECTIONS or X.nnz < MIN_NNZ):
        return 1, 0
    n, d = X.shape
    chunk = max(MIN_CHUNK, math.ceil(COMBINE_COST * (d + 1) * n / X.nnz))
    # (more threads than cores only wait at the barriers)
    threads = min(n_threads, cpu_count() if cpus is None else cpus,
                  n // (MIN_COMBINES * chunk))
    return (threads, chunk) if threads >= 2 else (1, 0)
