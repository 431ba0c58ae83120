"""The maths of merging two support vectors, for users and tests (vectorised numpy).

Two SVs ``(beta_m, z_m)``, ``(beta_n, z_n)`` of the same sign, ``m = beta_m / (beta_m +
beta_n)`` and ``kappa = k(z_m, z_n) = exp(-gamma ||z_m - z_n||^2)``.  The merged point is
``z = h z_m + (1 - h) z_n`` with coefficient ``beta_z = beta_m kappa^((1-h)^2) + beta_n
kappa^(h^2)``; ``h*`` maximises ``s(h) = m kappa^((1-h)^2) + (1-m) kappa^(h^2)`` and the
weight degradation ``||beta_m phi(z_m) + beta_n phi(z_n) - beta_z phi(z)||^2`` is
``(beta_m + beta_n)^2 * normalised_wd(m, kappa)``.
"""
import numpy as np

from pybudget.budget import _merge_math

METHODS = ("exact", "gss", "lookup-h", "lookup-wd")


def _args(*arrays):
    b = np.broadcast_arrays(*[np.asarray(a, dtype=np.float64) for a in arrays])
    shape = b[0].shape
    return shape, [np.ascontiguousarray(a.ravel()) for a in b]


def _check_m_kappa(m, kappa):
    if np.any(~np.isfinite(m)) or np.any((m < 0) | (m > 1)):
        raise ValueError("m must lie in [0, 1] (same-sign coefficients)")
    if np.any(~np.isfinite(kappa)) or np.any((kappa <= 0) | (kappa > 1)):
        raise ValueError("kappa must lie in (0, 1]")


def _check_same_sign(bm, bn):
    # signs, not the product: 1e-300 * 1e-300 underflows to 0
    ok = np.isfinite(bm) & np.isfinite(bn) & (bm != 0) & (np.sign(bm) == np.sign(bn))
    if not np.all(ok):
        raise ValueError("beta_m and beta_n must be finite, non-zero and of the same sign")


def s(m, kappa, h):
    """The objective s(h) of the binary merge."""
    m, kappa, h = (np.asarray(a, dtype=np.float64) for a in (m, kappa, h))
    return m * kappa ** ((1 - h) ** 2) + (1 - m) * kappa ** (h ** 2)


def h(m, kappa, tol=None):
    """Optimal merge coefficient h*(m, kappa): to ~1e-12 by a dense scan plus refinement
    (``tol=None``), or by the solvers' golden-section search with tolerance ``tol``."""
    shape, (m, kappa) = _args(m, kappa)
    _check_m_kappa(m, kappa)
    c = -np.log(kappa)
    if tol is None:
        return _merge_math.precise_h_array(m, c).reshape(shape)
    if not 0 < tol < 0.5:
        raise ValueError(f"tol must be in (0, 0.5), got {tol!r}")
    return _merge_math.gss_h_array(m, c, float(tol)).reshape(shape)


def wd_at(m, kappa, hval):
    """Normalised weight degradation at a given h (beta_z chosen optimally for that h)."""
    shape, (m, kappa, hval) = _args(m, kappa, hval)
    _check_m_kappa(m, kappa)
    if np.any(~np.isfinite(hval)) or np.any((hval < 0) | (hval > 1)):
        raise ValueError("h must lie in [0, 1]")
    c = -np.log(kappa)
    return _merge_math.wd_array(m * m, (1 - m) ** 2, m * (1 - m), c, hval).reshape(shape)


def normalised_wd(m, kappa, method="exact", tol=0.01):
    """WD / (beta_m + beta_n)^2 as the given method estimates it: "exact" (h* to ~1e-12),
    "gss" (h from golden section with ``tol``), "lookup-h" (h interpolated from the table),
    "lookup-wd" (the interpolated table value)."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    shape, (m, kappa) = _args(m, kappa)
    _check_m_kappa(m, kappa)
    if method == "exact":
        hv = h(m, kappa)
    elif method == "gss":
        hv = h(m, kappa, tol)
    elif method == "lookup-h":
        hv = _merge_math.interp_array(_merge_math.tables()[0], m, kappa)
    else:
        e = m * (1 - m) * (1 - kappa)
        return (e * e * _merge_math.interp_array(_merge_math.tables()[1], m, kappa)).reshape(shape)
    return wd_at(m, kappa, hv).reshape(shape)


def weight_degradation(beta_m, beta_n, kappa, method="exact", tol=0.01):
    """Weight degradation of merging two same-sign SVs (any non-zero scale)."""
    bm, bn = np.asarray(beta_m, dtype=np.float64), np.asarray(beta_n, dtype=np.float64)
    _check_same_sign(bm, bn)
    total = bm + bn
    return total ** 2 * normalised_wd(bm / total, kappa, method, tol)


def merge(z_m, z_n, beta_m, beta_n, gamma, tol=None):
    """Merge two same-sign SVs (dense vectors): returns (z, beta_z, wd)."""
    z_m, z_n = np.asarray(z_m, dtype=np.float64), np.asarray(z_n, dtype=np.float64)
    _check_same_sign(np.float64(beta_m), np.float64(beta_n))
    if not (np.isfinite(gamma) and gamma > 0):
        raise ValueError(f"gamma must be a positive finite number, got {gamma!r}")
    kappa = float(np.exp(-gamma * np.sum((z_m - z_n) ** 2)))
    m = beta_m / (beta_m + beta_n)
    hv = float(h(m, max(kappa, np.finfo(float).tiny), tol))
    z = hv * z_m + (1 - hv) * z_n
    beta_z = beta_m * kappa ** ((1 - hv) ** 2) + beta_n * kappa ** (hv ** 2)
    wd = (beta_m + beta_n) ** 2 * float(wd_at(m, max(kappa, np.finfo(float).tiny), hv))
    return z, beta_z, wd


def lookup_tables():
    """(H, R): 401 x 401 tables over m = i/400, kappa = j/400 of h* and of the normalised
    WD divided by (m (1 - m) (1 - kappa))^2 (see ``pybudget.budget._merge_math.build_tables``)."""
    H, R = _merge_math.tables()
    return H.copy(), R.copy()
