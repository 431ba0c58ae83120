"""When one budgeted fit runs on a team of threads, and which of its loops the team takes.

A team (``_team.pxd``) splits two loops over the support vectors by ranges of slots:
each maintenance event's distances and partner search and, where a row is long enough,
the kernel row of a step (dense storage).  A split costs a hand-off between cores, about
a microsecond on the 2-core machines measured, so only fits whose loops are long enough
run on a team, whatever ``n_jobs`` asks: ``n_jobs`` is an upper bound.

The constants were measured on 2-core machines, BSGD and BSCA, one epoch, a9a, ijcnn1
and w8a at B = 30 to 1000 (each fit against one thread, interleaved):
- a team was slower than one thread at B = 30 and 60 on a9a (0.43-0.65x) and w8a, and
  faster from B = 100 on all three (1.06-1.37x), so budgets below MIN_CAP run on one
  thread;
- kernel rows on the team were slower than kept on thread 0 at B = 100 (about 2,000
  units of n_sv * (nnz + 8)) and faster at B = 200 and above (4,400 units and more) on
  all three sets: KROW_WORK.
docs/benchmarks.md ("Budgeted SVMs on threads") checks the rule on other data.
"""
from joblib import cpu_count

from pybudget.budget._epochs import THREADS

MIN_CAP = 100           # budgets below: one thread (the loops too short to split)
KROW_WORK = 4_000       # a kernel row goes to the team from n_sv * (nnz + 8) on
# A team whose thread 0 has spent more than this share of an epoch waiting for helpers
# that were not running (their cores taken by other work) runs the rest of the epoch on
# one thread.  Measured with both cores busy with other work (a9a, BSGD, B = 500): a
# team that never gave up took 0.6-10 s against 0.5-1.0 s for one thread.
MAX_WAIT = 0.25


def team_for(n_threads, cap, cpus=None):
    """The ``team`` argument of bsgd_run / bsca_run, (threads, krow_work, max_wait),
    for one fit with room for ``cap`` SVs when ``n_threads`` may be used on ``cpus``
    cores (None: this machine's): (1, 0, 0) where a team is not expected to pay."""
    threads = min(n_threads, cpu_count() if cpus is None else cpus)
    if threads < 2 or not THREADS or cap < MIN_CAP:
        return (1, 0, 0)
    return (threads, KROW_WORK, MAX_WAIT)
