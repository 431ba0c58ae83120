"""Merge maths against explicit kernel matrices and brute-force grids."""
import numpy as np
import pytest

from pybudget import _merge, merging


def gram(Z, gamma):
    d2 = ((Z[:, None, :] - Z[None, :, :]) ** 2).sum(-1)
    return np.exp(-gamma * d2)


def explicit_wd(points, coefs, z, beta_z, gamma):
    """||sum_i coefs_i phi(points_i) - beta_z phi(z)||^2 from the kernel matrix."""
    Z = np.vstack([points, z[None, :]])
    v = np.append(coefs, -beta_z)
    return float(v @ gram(Z, gamma) @ v)


def test_wd_formula_matches_kernel_matrix_norm():
    rng = np.random.default_rng(0)
    worst = 0.0
    for trial in range(300):
        d = rng.integers(1, 6)
        zm = rng.normal(size=d)
        zn = zm + rng.normal(size=d) * rng.choice([1e-4, 0.1, 0.5, 2.0])
        gamma = rng.choice([0.1, 1.0, 5.0])
        sign = rng.choice([-1.0, 1.0])
        bm, bn = sign * rng.uniform(0.01, 3, size=2)
        z, bz, wd = merging.merge(zm, zn, bm, bn, gamma)
        ref = explicit_wd(np.vstack([zm, zn]), [bm, bn], z, bz, gamma)
        worst = max(worst, abs(wd - ref))
        # and at an arbitrary h, with the coefficient optimal for that h
        hv = rng.uniform()
        kappa = np.exp(-gamma * np.sum((zm - zn) ** 2))
        zh = hv * zm + (1 - hv) * zn
        bh = bm * kappa ** ((1 - hv) ** 2) + bn * kappa ** (hv ** 2)
        if kappa > 0:
            wdh = (bm + bn) ** 2 * merging.wd_at(bm / (bm + bn), kappa, hv)
            worst = max(worst, abs(wdh - explicit_wd(np.vstack([zm, zn]), [bm, bn], zh, bh, gamma)))
    assert worst < 1e-10


def test_wd_general_matches_kernel_matrix_for_vectors():
    # the multi-class degradation (a coefficient vector per SV, any signs)
    rng = np.random.default_rng(1)
    for trial in range(100):
        zm, zn = rng.normal(size=(2, 3))
        gamma = rng.uniform(0.05, 2)
        bm, bn = rng.normal(size=(2, 4))
        c = gamma * np.sum((zm - zn) ** 2)
        hv = rng.uniform()
        zh = hv * zm + (1 - hv) * zn
        a, b = np.exp(-c * (1 - hv) ** 2), np.exp(-c * hv ** 2)
        bz = a * bm + b * bn
        K = gram(np.vstack([zm, zn, zh]), gamma)
        V = np.vstack([bm, bn, -bz])
        ref = np.trace(V.T @ K @ V)
        got = _merge.wd_array(np.array([bm @ bm]), np.array([bn @ bn]), np.array([bm @ bn]),
                              np.array([c]), np.array([hv]))[0]
        assert abs(got - ref) < 1e-10


def grid_argmax(m, kappa, n=200001):
    hs = np.linspace(0, 1, n)
    sv = merging.s(m, kappa, hs)
    return hs[np.argmax(sv)], sv.max()


@pytest.mark.parametrize("tol", [0.01, 1e-4])
def test_gss_matches_dense_grid_including_bimodal(tol):
    rng = np.random.default_rng(2)
    ms = rng.uniform(0, 1, 150)
    kappas = np.concatenate([rng.uniform(1e-4, np.exp(-2), 75), rng.uniform(np.exp(-2), 1, 75)])
    hg = merging.h(ms, kappas, tol=tol)
    for m, k, hv in zip(ms, kappas, hg):
        href, sref = grid_argmax(m, k)
        if abs(m - 0.5) < 1e-3:      # two equal peaks: either is right
            assert merging.s(m, k, hv) >= sref - 1e-6
        else:
            assert abs(hv - href) <= tol / 2 + 1e-5, (m, k, hv, href)


def test_bimodal_case_takes_heavier_peak():
    # kappa < e^-2: two local maxima; the global one is near 1 for m > 1/2
    m, kappa = 0.6, 0.02
    href, _ = grid_argmax(m, kappa)
    assert href > 0.9
    assert abs(merging.h(m, kappa, tol=1e-6) - href) < 1e-4
    assert abs(merging.h(1 - m, kappa, tol=1e-6) - (1 - href)) < 1e-4


def test_precise_h_matches_grid():
    rng = np.random.default_rng(3)
    ms, ks = rng.uniform(0, 1, 100), rng.uniform(1e-3, 1, 100)
    hp = merging.h(ms, ks)
    for m, k, hv in zip(ms, ks, hp):
        href, sref = grid_argmax(m, k, 400001)
        assert merging.s(m, k, hv) >= sref - 1e-13
        if abs(m - 0.5) > 1e-3:
            assert abs(hv - href) < 1e-5


def test_lookup_wd_within_one_percent_of_precise():
    rng = np.random.default_rng(4)
    m = rng.uniform(0.01, 0.99, 100_000)
    kappa = rng.uniform(np.exp(-2), 0.999, 100_000)
    precise = merging.normalised_wd(m, kappa, "exact")
    looked = merging.normalised_wd(m, kappa, "lookup-wd")
    rel = np.abs(looked - precise) / precise
    assert rel.max() < 0.01
    # lookup-h gives an h within a cell of h*, so its (exact) WD is close too
    lh = merging.normalised_wd(m, kappa, "lookup-h")
    assert np.all(lh >= precise * (1 - 1e-9))
    assert np.median((lh - precise) / precise) < 0.01


def test_tables_at_nodes_and_clamping():
    H, R = merging.lookup_tables()
    assert H.shape == R.shape == (401, 401)
    i, j = 120, 300                       # m = 0.3, kappa = 0.75
    m, k = i / 400, j / 400
    assert abs(H[i, j] - merging.h(m, k)) < 1e-10
    e = m * (1 - m) * (1 - k)
    assert abs(R[i, j] * e * e - merging.normalised_wd(m, k)) < 1e-12
    # interpolation reproduces the nodes, and m = 1 / kappa = 1 stay in range
    vals = _merge.interp_array(R, np.array([m, 1.0, 0.5, 1.0]), np.array([k, 0.5, 1.0, 1.0]))
    assert abs(vals[0] - R[i, j]) < 1e-12
    assert vals[1] == pytest.approx(R[400, 200]) and vals[2] == pytest.approx(2.0)
    assert vals[3] == pytest.approx(2.0)
    # the limits used at the borders agree with the interior next to them
    assert R[1, 200] == pytest.approx(R[0, 200], rel=0.02)
    assert R[200, 399] == pytest.approx(R[200, 400], rel=0.02)


def test_opposite_signs_rejected_by_public_api():
    with pytest.raises(ValueError, match="same sign"):
        merging.weight_degradation(1.0, -0.5, 0.5)
    with pytest.raises(ValueError, match="m must lie"):
        merging.h(1.5, 0.5)
    with pytest.raises(ValueError, match="kappa"):
        merging.h(0.5, 0.0)
