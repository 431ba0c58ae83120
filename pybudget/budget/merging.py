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
    """Objective s(h) of the binary merge.

    ``s(h) = m kappa^((1-h)^2) + (1-m) kappa^(h^2)``; h* maximises it.

    Parameters
    ----------
    m, kappa, h : float or array-like
        Broadcast together; no range checks.

    Returns
    -------
    ndarray
        s(h), float64.

    See Also
    --------
    h : The maximiser h*.
    """
    m, kappa, h = (np.asarray(a, dtype=np.float64) for a in (m, kappa, h))
    return m * kappa ** ((1 - h) ** 2) + (1 - m) * kappa ** (h ** 2)


def h(m, kappa, tol=None):
    """Optimal merge coefficient h*(m, kappa), the maximiser of :func:`s`.

    Parameters
    ----------
    m : float or array-like
        ``beta_m / (beta_m + beta_n)``, in [0, 1].
    kappa : float or array-like
        Kernel value ``k(z_m, z_n)``, in (0, 1]; broadcast with ``m``.
    tol : float, optional
        None (default): h* to ~1e-12 by a dense scan plus refinement.  A number in
        (0, 0.5): the solvers' golden-section search with that tolerance.

    Returns
    -------
    ndarray
        h* in the broadcast shape of ``m`` and ``kappa``.

    Raises
    ------
    ValueError
        When ``m`` or ``kappa`` is outside its range or not finite, or ``tol`` is
        outside (0, 0.5).

    Examples
    --------
    >>> from pybudget import merging
    >>> round(float(merging.h(0.5, 0.8)), 6)   # equal weights: the midpoint
    0.5
    """
    shape, (m, kappa) = _args(m, kappa)
    _check_m_kappa(m, kappa)
    c = -np.log(kappa)
    if tol is None:
        return _merge_math.precise_h_array(m, c).reshape(shape)
    if not 0 < tol < 0.5:
        raise ValueError(f"tol must be in (0, 0.5), got {tol!r}")
    return _merge_math.gss_h_array(m, c, float(tol)).reshape(shape)


def wd_at(m, kappa, hval):
    """Normalised weight degradation at a given h.

    beta_z is chosen optimally for that h.

    Parameters
    ----------
    m : float or array-like
        ``beta_m / (beta_m + beta_n)``, in [0, 1].
    kappa : float or array-like
        Kernel value ``k(z_m, z_n)``, in (0, 1].
    hval : float or array-like
        Merge coefficient h, in [0, 1]; broadcast with ``m`` and ``kappa``.

    Returns
    -------
    ndarray
        WD / (beta_m + beta_n)^2.

    Raises
    ------
    ValueError
        When an argument is outside its range or not finite.
    """
    shape, (m, kappa, hval) = _args(m, kappa, hval)
    _check_m_kappa(m, kappa)
    if np.any(~np.isfinite(hval)) or np.any((hval < 0) | (hval > 1)):
        raise ValueError("h must lie in [0, 1]")
    c = -np.log(kappa)
    return _merge_math.wd_array(m * m, (1 - m) ** 2, m * (1 - m), c, hval).reshape(shape)


def normalised_wd(m, kappa, method="exact", tol=0.01):
    """Normalised weight degradation WD / (beta_m + beta_n)^2 as a method estimates it.

    Parameters
    ----------
    m : float or array-like
        ``beta_m / (beta_m + beta_n)``, in [0, 1].
    kappa : float or array-like
        Kernel value ``k(z_m, z_n)``, in (0, 1]; broadcast with ``m``.
    method : {"exact", "gss", "lookup-h", "lookup-wd"}, default="exact"
        "exact" (h* to ~1e-12), "gss" (h from golden section with ``tol``), "lookup-h"
        (h interpolated from the table) or "lookup-wd" (the interpolated table value).
    tol : float, default=0.01
        Golden-section tolerance, used by "gss" only.

    Returns
    -------
    ndarray
        The normalised weight degradation.

    Raises
    ------
    ValueError
        For an unknown ``method`` or arguments outside their ranges.

    See Also
    --------
    weight_degradation : The unnormalised value from the coefficients.
    lookup_tables : The tables behind "lookup-h" and "lookup-wd".
    """
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
    """Weight degradation of merging two same-sign SVs (any non-zero scale).

    Parameters
    ----------
    beta_m, beta_n : float or array-like
        Coefficients of the two SVs: finite, non-zero and of the same sign.
    kappa : float or array-like
        Kernel value ``k(z_m, z_n)``, in (0, 1].
    method : {"exact", "gss", "lookup-h", "lookup-wd"}, default="exact"
        As in :func:`normalised_wd`.
    tol : float, default=0.01
        Golden-section tolerance, used by "gss" only.

    Returns
    -------
    ndarray
        ``(beta_m + beta_n)^2 * normalised_wd(m, kappa)``.

    Raises
    ------
    ValueError
        When the coefficients are not finite, zero or of different signs, or for the
        reasons of :func:`normalised_wd`.
    """
    bm, bn = np.asarray(beta_m, dtype=np.float64), np.asarray(beta_n, dtype=np.float64)
    _check_same_sign(bm, bn)
    total = bm + bn
    return total ** 2 * normalised_wd(bm / total, kappa, method, tol)


def merge(z_m, z_n, beta_m, beta_n, gamma, tol=None):
    """Merge two same-sign SVs given as dense vectors.

    Parameters
    ----------
    z_m, z_n : array-like of shape (n_features,)
        The two support vectors.
    beta_m, beta_n : float
        Their coefficients: finite, non-zero and of the same sign.
    gamma : float
        Kernel parameter, positive and finite.
    tol : float, optional
        How h is found, as in :func:`h` (None: to ~1e-12).

    Returns
    -------
    z : ndarray of shape (n_features,)
        The merged point ``h z_m + (1 - h) z_n``.
    beta_z : float
        Its coefficient.
    wd : float
        The weight degradation of the merge.

    Raises
    ------
    ValueError
        When the coefficients are not finite, zero or of different signs, or for a bad
        ``gamma`` or ``tol``.

    Examples
    --------
    >>> from pybudget import merging
    >>> z, beta_z, wd = merging.merge([0.0, 0.0], [1.0, 0.0], 1.0, 1.0, gamma=0.5)
    >>> [round(float(v), 6) for v in z]
    [0.5, 0.0]
    """
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
    """Copies of the lookup tables behind ``merge_search="lookup-h"`` and ``"lookup-wd"``.

    Returns
    -------
    H : ndarray of shape (401, 401)
        h* over m = i/400, kappa = j/400.
    R : ndarray of shape (401, 401)
        The normalised WD divided by (m (1 - m) (1 - kappa))^2 on the same grid (see
        ``pybudget.budget._merge_math.build_tables``).
    """
    H, R = _merge_math.tables()
    return H.copy(), R.copy()
