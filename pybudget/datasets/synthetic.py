"""Synthetic data sets built from a seed, for traits no shipped data set has.

``make_skin_like`` shares the traits of the UCI "skin segmentation" set: three
dense features on the 0..255 colour scale, a minority class (about 1 row in 5) on a thin
sheet of colours in the middle of the cube, the majority spread over the whole cube and
heavy clusters of dark and bright pixels far from the minority, nearly separable with the
Gaussian kernel (a small fraction of majority rows fall in the minority's region).  It is
not that data set and holds none of its rows.
"""
import numpy as np

SKIN_FRACTION = 0.2075      # 50,859 of 245,057 rows in the original set
OVERLAP = 0.03              # chance that a majority row drawn in the minority's region stays
# majority clusters (B, G, R) and their weights: dark and bright pixels are common in
# photographs and lie far from the minority, where a budgeted model's f fades out
CENTRES = np.array([[15, 15, 15], [240, 240, 240], [128, 128, 128],    # greys
                    [180, 90, 30], [60, 140, 40], [200, 200, 120]])    # blue, green, pale
WEIGHTS = np.array([0.35, 0.25, 0.1, 0.1, 0.1, 0.1])
UNIFORM = 0.3               # share of majority rows drawn uniformly over the cube


def _skin_region(X):
    """True where a colour (columns B, G, R) lies in the minority's region: R in
    [90, 250], G/R in [0.55, 0.85], B/G in [0.6, 0.95]."""
    b, g, r = X[:, 0], X[:, 1], X[:, 2]
    with np.errstate(divide="ignore", invalid="ignore"):
        gr, bg = g / r, b / g
    return (r >= 90) & (r <= 250) & (gr >= 0.55) & (gr <= 0.85) & (bg >= 0.6) & (bg <= 0.95)


def _skin(rng, n):
    """Minority rows: a brightness, then two colour ratios; rows that rounding or the
    ratio noise push out of the region are redrawn, so the class is a thin sheet."""
    out = np.empty((0, 3))
    while out.shape[0] < n:
        m = n - out.shape[0]
        r = 90 + 160 * rng.beta(2.0, 2.0, m)
        g = r * rng.uniform(0.58, 0.82, m) * (1 + 0.01 * rng.normal(size=m))
        b = g * rng.uniform(0.63, 0.92, m) * (1 + 0.01 * rng.normal(size=m))
        X = np.round(np.column_stack([b, g, r]))
        out = np.vstack([out, X[_skin_region(X)]])
    return out


def _other(rng, n):
    """Majority rows: UNIFORM of them uniform over the cube, the rest from CENTRES; rows
    in the minority's region are redrawn except with probability OVERLAP."""
    out = np.empty((0, 3))
    while out.shape[0] < n:
        m = n - out.shape[0]
        u = rng.uniform(0, 255, (m, 3))
        c = CENTRES[rng.choice(len(CENTRES), m, p=WEIGHTS)] + 15 * rng.normal(size=(m, 3))
        X = np.round(np.clip(np.where(rng.random(m)[:, None] < UNIFORM, u, c), 0, 255))
        keep = ~_skin_region(X) | (rng.random(m) < OVERLAP)
        out = np.vstack([out, X[keep]])
    return out


def make_skin_like(n_samples, random_state=0):
    """A data set with the traits of the skin segmentation set.

    Parameters
    ----------
    n_samples : int
        Number of rows.
    random_state : int, default=0
        Seed of numpy's generator: the same seed gives the same rows.

    Returns
    -------
    X : ndarray of shape (n_samples, 3)
        Integer colours (B, G, R) in 0..255, as float64.
    y : ndarray of shape (n_samples,)
        1 for the minority ("skin") class, 2 for the majority, as in the original file.
    """
    rng = np.random.default_rng(random_state)
    n_skin = int(rng.binomial(n_samples, SKIN_FRACTION))
    X = np.vstack([_skin(rng, n_skin), _other(rng, n_samples - n_skin)])
    y = np.concatenate([np.ones(n_skin), np.full(n_samples - n_skin, 2.0)])
    order = rng.permutation(n_samples)
    return X[order], y[order]
