"""The unregularised offset of a budgeted model, fitted after training.

BSGD and BSCA train f(x) = sum_j beta_j k(z_j, x) without a bias.  With lambda = 1/(nC)
and a large C the last steps shift f by a nearly constant amount on a flat kernel, so
the sign of the last iterate depends on where the run happens to stop, while the shape
of f is good (bench/results/budget_defaults.md).  The offset b minimises the mean hinge
loss of f + b over a fixed random sample of training rows: one-dimensional, convex and
piecewise linear, so its exact minimiser is one of the loss's kinks, found by a search
over the sorted kinks.  Multi-class models (one f_c per class) get one offset per class
by exact coordinate minimisation of the multi-class hinge 1 + max_{r != y} g_r - g_y,
g = f + b, a few passes over the classes.

Only training rows enter the offset; it is refitted on the final model (and, with
checkpoints, at every checkpoint, whose objective then uses it).
"""
import numpy as np

SAMPLE = 2048       # training rows in the sample (all rows if fewer)
PASSES = 5          # coordinate passes over the classes of a multi-class model


def draw_sample(X, xsq, codes, seed):
    """(X rows, their squared norms, their codes) of a fixed random sample of
    min(n, SAMPLE) rows of canonical CSR X, drawn with numpy's generator from `seed`
    (independent of the solver's own generator, so training is unchanged)."""
    n = X.shape[0]
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.choice(n, SAMPLE, replace=False)) if n > SAMPLE else np.arange(n)
    Xs = X[rows]
    Xs.sort_indices()
    return Xs, np.ascontiguousarray(xsq[rows]), np.asarray(codes)[rows]


def hinge(F, codes, b=None):
    """Mean hinge loss of F + b: F (n,) with 0/1 codes (positive class 1), or F (n, K)
    with class indices (multi-class hinge)."""
    G = F if b is None else F + (b[0] if F.ndim == 1 else b)
    if G.ndim == 1:
        margins = np.where(codes == 1, G, -G)
    else:
        idx = np.arange(G.shape[0])
        other = G.copy()
        other[idx, codes] = -np.inf
        margins = G[idx, codes] - other.max(axis=1)
    return float(np.maximum(0.0, 1.0 - margins).mean())


def _argmin_on_kinks(loss, kinks, current):
    """Minimiser of a convex piecewise-linear loss(b) whose kinks are all in `kinks`:
    a ternary search over the sorted kinks (convex along them), keeping `current` when
    it is as good (so a flat minimum or a missing class leaves the offset where it is)."""
    t = np.unique(kinks[np.isfinite(kinks)])
    lo, hi = 0, t.shape[0] - 1
    if hi < 0:
        return current
    while hi - lo > 2:
        m1 = lo + (hi - lo) // 3
        m2 = hi - (hi - lo) // 3
        if loss(t[m1]) <= loss(t[m2]):
            hi = m2
        else:
            lo = m1
    values = [loss(t[i]) for i in range(lo, hi + 1)]
    best = int(np.argmin(values))
    return current if loss(current) <= values[best] else float(t[lo + best])


def fit_offset(F, codes):
    """Offsets b (shape (1,) for a binary F of shape (n,), (K,) for F of shape (n, K))
    minimising hinge(F, codes, b) exactly (binary) or by exact coordinate minimisation
    (multi-class)."""
    if F.ndim == 1:
        y = np.where(codes == 1, 1.0, -1.0)
        loss = lambda b: np.maximum(0.0, 1.0 - y * (F + b)).mean()
        return np.array([_argmin_on_kinks(loss, y - F, 0.0)])
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
            # rows of class k: max(0, 1 + m - fk - b); others: max(0, 1 + max(m, fk + b) - gy)
            kinks = np.concatenate([1.0 + m[own] - fk[own], (m - fk)[~own],
                                    (gy - 1.0 - fk)[~own]])

            def loss(bk):
                own_loss = np.maximum(0.0, 1.0 + m[own] - fk[own] - bk)
                other = np.maximum(0.0, 1.0 + np.maximum(m[~own], fk[~own] + bk) - gy[~own])
                return (own_loss.sum() + other.sum()) / n

            new = _argmin_on_kinks(loss, kinks, b[k])
            moved |= new != b[k]
            b[k] = new
        if not moved:
            break
    return b


def model_offset(Z, beta, gamma, sample):
    """fit_offset for the model (SV rows Z, true coefficients beta (n_sv, n_coef)) on a
    sample from draw_sample, its decision values computed by the solvers' own kernel
    loop."""
    from pybudget._budget import BudgetModel
    Xs, xsq, codes = sample
    mdl = BudgetModel(Z.shape[1], beta.shape[1], max(Z.shape[0], 1), gamma)
    mdl.load(Z, beta)
    return fit_offset(mdl.decision_stream(Xs, xsq), codes)


def reservoir_update(sample, seen, X, xsq, codes, seed):
    """Reservoir sampling (Algorithm R) of training rows across partial_fit calls:
    `sample` = (X rows, squared norms, codes) kept so far (None at first) out of `seen`
    rows; the chunk (X, xsq, codes) comes next.  Returns the new sample, a uniform
    random subset of min(seen + n, SAMPLE) of all rows seen, drawn from `seed`."""
    import scipy.sparse as sp
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
