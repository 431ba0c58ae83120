"""What the scheduler says, asked afresh: the workers and their records (threads,
memory limit), and how often the client polls it.
"""

POLL_SECONDS = 0.2
_IDENTITY_WITHOUT_ARGS = set()     # addresses of schedulers of older Dask releases


def worker_addresses(client):
    """The addresses of the scheduler's workers, asked afresh.  Not from
    ``client.scheduler_info()``: it returns the client's cached identity, which the
    client's own refresh (every 2 s, with no per-worker entries) can overwrite between
    the answer and the read, so a live cluster looked empty now and then and a fit
    restarted after a loss that never happened."""
    return sorted(worker_info(client))


def worker_info(client):
    """{address: the scheduler's record of the worker}, asked afresh (worker_addresses)."""
    identity, address = client.scheduler.identity, client.scheduler.address
    if address not in _IDENTITY_WITHOUT_ARGS:
        try:
            return client.sync(identity, n_workers=-1)["workers"]   # (all of them)
        except TypeError:            # older Dask lists them all, and takes no argument
            _IDENTITY_WITHOUT_ARGS.add(address)     # (asked once: its scheduler logs it)
    return client.sync(identity)["workers"]
