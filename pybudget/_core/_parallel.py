"""Independent problems on a pool of threads (``n_jobs``), with Ctrl-C.

The solver loops run without the GIL, so threads give real parallelism.  Signals reach
the main thread only: ``PyErr_CheckSignals`` in a worker never reports Ctrl-C.  So the
main thread only waits; when it catches KeyboardInterrupt (or a worker fails) it sets
the pool's stop event, which the workers' loops see through ``stop_requested`` in their
regular Ctrl-C check (``interrupted()`` in _runtime.pxd), and returns once they have
stopped.
"""
import threading
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait


def problem_seed(seed, k):
    """The seed of the k-th problem of a run seeded with seed (same for every n_jobs)."""
    return (seed + k) % 2**64


_local = threading.local()     # .stop: the stop event of the pool running this thread

# The main thread wakes this often while it waits, so that Ctrl-C is seen promptly where
# a blocking wait cannot be interrupted by a signal (Windows).
_POLL_SECONDS = 0.2


def stop_requested():
    """True in a worker thread whose pool was told to stop; False anywhere else.  Called
    with the GIL from the solvers' Ctrl-C check."""
    stop = getattr(_local, "stop", None)
    return stop is not None and stop.is_set()


def map_threads(fn, args, n_jobs):
    """[fn(*a) for a in args], computed on min(n_jobs, len(args)) threads, in order.

    A failure (the first in argument order among the calls finished when it is seen) or
    the main thread's KeyboardInterrupt stops the other calls at their next Ctrl-C check
    and is raised once they have returned.
    With n_jobs == 1 the calls run in the calling thread, one after the other."""
    args = list(args)
    if n_jobs <= 1 or len(args) <= 1:
        return [fn(*a) for a in args]
    stop = threading.Event()

    def work(a):
        _local.stop = stop
        try:
            if stop.is_set():
                raise KeyboardInterrupt        # stopped before it started
            return fn(*a)
        finally:
            _local.stop = None

    pool = ThreadPoolExecutor(min(n_jobs, len(args)), thread_name_prefix="pybudget")
    try:
        futures = [pool.submit(work, a) for a in args]
        while True:
            _, pending = wait(futures, _POLL_SECONDS, return_when=FIRST_EXCEPTION)
            for f in futures:
                if f.done() and f.exception() is not None:
                    f.result()                 # raises it
            if not pending:
                return [f.result() for f in futures]
    except BaseException:
        stop.set()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
