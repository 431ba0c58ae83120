"""Shared fixtures and markers; shared functions live in helpers.py."""
import pytest

from helpers import make_problem


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: runs a script in a subprocess (minutes); "
                                       "CI runs these too, deselect with -m 'not slow'")
    config.addinivalue_line("markers", "cluster: starts or uses a Dask cluster (set on "
                                       "the tests using a cluster fixture)")


CLUSTER_FIXTURES = {"client", "nanny_client", "scheduler"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if CLUSTER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.cluster)


@pytest.fixture(scope="module")
def client():
    """A 2-worker LocalCluster (2 processes x 1 thread) and its client, per module."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c


@pytest.fixture
def problem():
    return make_problem()
