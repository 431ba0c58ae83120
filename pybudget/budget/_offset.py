"""The unregularised offset of a budgeted model, fitted after training
(docs/algorithms.md#averaging-and-the-offset).

BSGD and BSCA train f(x) = sum_j beta_j k(z_j, x) without a bias.  With lambda = 1/(nC)
and a large C the last steps shift f by a nearly constant amount on a flat kernel, so
the sign of the last iterate depends on where the run happens to stop, while the shape
of f is good (docs/benchmarks.md, section 3).  The offset b minimises the mean hinge
loss of f + b over a fixed random sample of training rows: one-dimensional, convex and
piecewise linear with slope rising by one at each kink, so its minimisers lie between
two order statistics of the kinks.  Multi-class models (one f_c per class) get one
offset per class by exact coordinate minimisation of the multi-class hinge
1 + max_{r != y} g_r - g_y, g = f + b, a few passes over the classes.

The offset is kept only when it lowers the sample's hinge loss by Z_MIN standard errors
(paired over the sample's rows): on a narrow kernel the training margins next to the
support vectors are optimistic, and an offset fitted to them moves a well-placed
threshold the wrong way (ijcnn1, 5 epochs: +0.7 fitted where the test-optimal one is
-0.4).  The hinge minimiser then gives the direction and the farthest the threshold may
move; the offset returned is the point of that segment with the fewest classification
errors on the sample.  The hinge alone can move the threshold too far: on
low-dimensional, nearly separable data with a narrow kernel, a budgeted f fades towards
0 away from its support vectors, so many rows of the class that fills the space lie
correctly classified but inside the margin, 0 < yf < 1.  Their hinge falls by one per
unit of b until b = 1 - f, about 1, while the other class, mostly far beyond its margin,
hardly resists: the minimiser lands near b = 1, a large and significant hinge gain, and
puts the threshold inside the other class (bench/budget_defaults.py's skin-like cells:
about +1.0, costing 1-4 points).  On the segment, the errors first fall (rows of the
first class with f slightly below 0) and then rise (rows of the other class with
-1 < f < 0).  A shifted f, as on a9a, has its fewest errors near the hinge minimiser.
Only training rows enter the offset; it is refitted on the final model (with
checkpoints, at every checkpoint, whose objective then uses it; with partial_fit, on a
reservoir sample of all rows seen).
"""
import numpy as np
import scipy.sparse as sp

from pybudget.budget._decision import decision_values

SAMPLE = 2048       # training rows in the sample (all rows if fewer)
PASSES = 5          # coordinate passes over the classes of a multi-class model
Z_MIN = 3.0         # move the threshold only when the hinge minimiser lowers the hinge so clearly
STEPS = 256         # points on the segment from 0 to the hinge minimiser where errors are counted


def sample_rows(n, seed):
    """The sorted indices of a fixed random sample of min(n, SAMPLE) of n rows, drawn
    with numpy's generator from `seed` (independent of the solver's own generator, so
    training is unchanged)."""
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(n, SAMPLE, replace=False)) if n > SAMPLE else np.arange(n)


def draw_sample(X, xsq, codes, seed):
    """(X rows, their squared norms, their codes) of ``sample_rows``' rows of canonical
    CSR X."""
    rows = sample_rows(X.shape[0], seed)
    Xs = X[rows]
    Xs.sort_indices()
    return Xs, np.ascontiguousarray(xsq[rows]), np.asarray(codes)[rows]


def hinge(F, codes, b=None):
    """Mean hinge loss of F + b: F (n,) with 0/1 codes (positive class 1), or F (n, K)
    with class indices (multi-class hinge)."""
    return float(row_hinge(F, codes, b).mean())


def row_hinge(F, codes, b=None):
    """Per-row hinge losses of F + b (see hinge)."""
    G = F if b is None else F + (b[0] if F.ndim == 1 else b)
    if G.ndim == 1:
        margins = np.where(codes == 1, G, -G)
    else:
        idx = np.arange(G.shape[0])
        other = G.copy()
        other[idx, codes] = -np.inf
        margins = G[idx, codes] - other.max(axis=1)
    return np.maximum(0.0, 1.0 - margins)


def row_error(F, codes, b=None):
    """Per-row classification errors (0 or 1) of F + b, as predict decides: positive
    class where F + b > 0, else the largest column."""
    G = F if b is None else F + (b[0] if F.ndim == 1 else b)
    pred = (G > 0).astype(np.int64) if G.ndim == 1 else np.argmax(G, axis=1)
    return (pred != codes).astype(np.float64)


def significant(F, codes, b, z_min=Z_MIN):
    """True when the offset b lowers the per-row hinge losses of the sample by at least
    z_min standard errors of their mean (paired over rows)."""
    d = row_hinge(F, codes) - row_hinge(F, codes, b)
    gain = d.mean()
    if not gain > 0:
        return False
    se = d.std(ddof=1) / np.sqrt(d.shape[0]) if d.shape[0] > 1 else 0.0
    return bool(gain >= z_min * se)


def _nearest_minimiser(n_falling, kinks, current):
    """Minimiser nearest to `current` of a convex piecewise-linear loss whose slope
    starts at -n_falling and rises by one at each kink.  Its minimisers are the interval
    between the n_falling-th and the (n_falling + 1)-th smallest kink (an order
    statistic, no sort needed); `current` is kept when it lies inside."""
    m = kinks.shape[0]
    lo = np.partition(kinks, n_falling - 1)[n_falling - 1] if n_falling > 0 else -np.inf
    hi = np.partition(kinks, n_falling)[n_falling] if n_falling < m else np.inf
    return float(min(max(current, lo), hi))


def fit_offset(F, codes):
    """Offsets b (shape (1,) for a binary F of shape (n,), (K,) for F of shape (n, K))
    minimising hinge(F, codes, b): exactly for a binary model, by exact coordinate
    minimisation for a multi-class one.  Of several minimisers, the one nearest to
    zero (the previous value) is taken."""
    if F.ndim == 1:
        # positive rows: max(0, 1 - f - b) stops falling at b = 1 - f; negative rows:
        # max(0, 1 + f + b) starts rising at b = -1 - f
        pos = codes == 1
        kinks = np.where(pos, 1.0 - F, -1.0 - F)
        return np.array([_nearest_minimiser(int(pos.sum()), kinks, 0.0)])
    n, K = F.shape
    b = np.zeros(K)
    idx = np.arange(n)
    for _ in range(PASSES):
        moved = False
        for k in range(K):
            G = F + b
            gy = G[idx, codes]
            rest = G.copy()
            rest[:, k] = -np.inf           # best class other than k ...
            rest[idx, codes] = -np.inf     # ... and other than y
            m = rest.max(axis=1)
            own = codes == k
            fk = F[:, k]
            # rows of class k: max(0, 1 + m - fk - b_k) stops falling at 1 + m - fk;
            # others: max(0, 1 + m - gy, 1 + fk + b_k - gy) starts rising where the
            # last term takes over
            kinks = np.where(own, 1.0 + m - fk,
                             np.maximum(0.0, 1.0 + m - gy) - 1.0 - fk + gy)
            new = _nearest_minimiser(int(own.sum()), kinks, b[k])
            moved |= new != b[k]
            b[k] = new
        if not moved:
            break
    return b


def fewest_errors(F, codes, b):
    """The offset t * b, t in [0, 1] on a grid of STEPS + 1 points, with the fewest
    classification errors of F + t * b: zero when zero is among them, else the middle
    of the run of grid points with the fewest errors nearest to zero (the middle keeps
    the threshold away from the sample rows on either side)."""
    errors = np.array([row_error(F, codes, t * b).sum()
                       for t in np.linspace(0.0, 1.0, STEPS + 1)])
    low = errors.min()
    if errors[0] == low:
        return np.zeros_like(b)
    first = int(np.argmax(errors == low))
    last = first + int(np.argmax(np.append(errors[first:] != low, True))) - 1
    return (first + last) / (2 * STEPS) * b


def sample_offset(F, codes):
    """The offset returned for decision values F on the sample: zeros unless
    fit_offset's lowers the hinge significantly, then the point with the fewest errors
    on the segment from zero to it."""
    b = fit_offset(F, codes)
    return fewest_errors(F, codes, b) if significant(F, codes, b, Z_MIN) else np.zeros_like(b)


def model_offset(Z, beta, gamma, sample, n_threads=1):
    """sample_offset for the model (SV rows Z, true coefficients beta (n_sv, n_coef)) on
    a sample from draw_sample, its decision values computed by the solvers' own kernel
    loop on up to n_threads threads (the same bits for any number)."""
    Xs, xsq, codes = sample
    F = decision_values(Z, beta, gamma, Xs, xsq, n_threads)
    return sample_offset(F[:, 0] if F.shape[1] == 1 else F, codes)


def reservoir_update(sample, seen, X, xsq, codes, seed):
    """Reservoir sampling (Algorithm R) of training rows across partial_fit calls:
    `sample` = (X rows, squared norms, codes) kept so far (None at first) out of `seen`
    rows; the chunk (X, xsq, codes) comes next.  Returns the new sample, a uniform
    random subset of min(seen + n, SAMPLE) of all rows seen, drawn from `seed`."""
    n = X.shape[0]
    rng = np.random.default_rng(seed)
    kept = 0 if sample is None else sample[0].shape[0]
    slots = list(range(kept))                 # row numbers into vstack(old, chunk)
    draws = rng.integers(0, seen + np.arange(n) + 1)   # row j replaces slot draws[j]
    fill = min(n, SAMPLE - kept)              # rows that join while the sample is short
    slots += range(kept, kept + fill)
    for j in fill + np.flatnonzero(draws[fill:] < SAMPLE):
        slots[draws[j]] = kept + j            # later rows overwrite earlier ones
    slots = np.array(slots, dtype=np.int64)
    new = slots >= kept
    take = slots[new] - kept                  # chunk rows that enter the sample
    Xnew = X[take]
    Xs = Xnew if sample is None else sp.vstack([sample[0], Xnew], format="csr")
    # slot order: old rows by their old position, new ones after them
    where = np.empty(slots.shape[0], dtype=np.int64)
    where[~new] = slots[~new]
    where[new] = kept + np.arange(take.shape[0])
    Xs = Xs[where]
    Xs.indices = Xs.indices.astype(np.int32)
    Xs.indptr = Xs.indptr.astype(np.int32)
    Xs.sort_indices()
    xs = np.concatenate([xsq[take]] if sample is None else [sample[1], xsq[take]])[where]
    cs = np.concatenate([codes[take]] if sample is None else [sample[2], codes[take]])[where]
    return Xs, np.ascontiguousarray(xs), np.ascontiguousarray(cs, dtype=np.int32)
