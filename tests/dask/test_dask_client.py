"""pybudget.dask with ``client=`` a client that is not the default one (no default
client at all): every call goes to the client given.  Found when a script with two
clusters side by side failed with "No clients found" (distributed.wait asks the
default client)."""
import numpy as np
import pytest
import scipy.sparse as sp

import pybudget
import pybudget.dask as pbd

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")


@pytest.mark.parametrize("method", ["whole", "ring"])
def test_a_client_that_is_not_the_default(method):
    rng = np.random.default_rng(0)
    X = sp.random(600, 50, density=0.2, format="csr", random_state=0)
    y = rng.integers(0, 3, size=600)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster, set_as_default=False) as client:
        with pytest.raises(ValueError, match="No clients"):
            distributed.default_client()
        Xd = client.persist(da.from_array(X, chunks=(150, 50), asarray=False))
        yd = client.persist(da.from_array(y, chunks=150))
        m = pbd.LinearSVC(client=client, method=method, random_state=0).fit(Xd, yd)
    assert m.converged_.all() and m.kkt_violation_.max() <= 0.1
    if method == "whole":        # (one machine's bits: in order, either way)
        local = pybudget.LinearSVC(random_state=0).fit(X, y)
        np.testing.assert_array_equal(m.coef_, local.coef_)
