"""Progress lines on stderr (``verbose``, the command line), all in one format:
``[pybudget] <what>, <seconds>s elapsed, peak memory <MiB> MiB``."""
import sys

try:
    import resource
except ImportError:   # Windows: no getrusage, the memory figure is left out
    resource = None


def peak_rss_mb():
    """Peak resident memory of this process so far in MiB, or None where unknown.

    VmHWM of /proc/self/status where there is one (Linux): ``ru_maxrss`` survives exec,
    so a child of a large parent would start at the parent's peak.  Elsewhere
    ``getrusage``'s ``ru_maxrss`` (bytes on macOS); Windows has no ``resource``
    module."""
    if resource is None:
        return None
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 2**10     # kB
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10


def usage(seconds):
    """``'<seconds>s elapsed, peak memory <MiB> MiB'`` (the memory where known)."""
    text = f"{seconds:.2f}s elapsed"
    mb = peak_rss_mb()
    return text if mb is None else f"{text}, peak memory {mb:.0f} MiB"


def report(msg, seconds=None, file=None):
    """Write ``[pybudget] msg`` (and ``usage(seconds)``) as one line with one write, so
    that the lines of n_jobs worker threads do not interleave."""
    line = f"[pybudget] {msg}" if seconds is None else f"[pybudget] {msg}, {usage(seconds)}"
    out = sys.stderr if file is None else file
    out.write(line + "\n")
    out.flush()
