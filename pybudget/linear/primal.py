"""Truncated Newton on the primal of the smooth losses (squared hinge, logistic, squared
epsilon-insensitive), for problems whose dual coordinate descent cannot converge: a large
``intercept_scaling`` B adds B^2 y y' to the dual's Q, and single-coordinate steps then
crawl along the directions with sum_i y_i alpha_i fixed (liblinear's dual solvers hit
their cap there too; liblinear >= 2.40 then switches to its primal Newton solver, -s 2
and -s 0, and scikit-learn uses the primal solvers by default for these problems).

The primal is f(v) = 1/2 |v|^2 + sum_i C_i l(z_i), z = X v[:d] + B v[d], with the
(generalised, for the squared losses) Hessian I + A' diag(C l'') A, A = [X, B 1].  Each
Newton direction comes from Jacobi-preconditioned conjugate gradients (the bias column's
diagonal is ~B^2 times the others'), then a backtracking line search on f.  The dual
variables follow from v (alpha_i = -C_i l'(z_i) y_i, beta_i = -C_i l'(z_i)).

The certificate is the returned iterate's own duality gap.  With alpha = alpha(v) the
loss terms meet their conjugates with equality (Fenchel-Young), so
    P(v) - D(alpha(v)) = |v - w(alpha(v))|^2 / 2 = |grad f(v)|^2 / 2,
computed from the gradient, without the cancellation of P - D (w(alpha)'s bias weight
B sum_i y_i alpha_i cancels to ~1/B of its terms).  The run stops when that gap is at
most ``tol`` times P(v), and is converged only then; an iterate that stalls above it is
reported unconverged.  The KKT violation reported is the primal's, max_j |grad f(v)_j|
(stationarity): the dual solver's check of (alpha, w(alpha)) certifies nothing here, its
round-off floor at a large B being far above any tol.

The iterations (``newton``) ask an oracle for f, its gradient and Hessian products:
``_Primal`` on one thread; ``_RowBlocks`` on several (``n_threads``: contiguous blocks of
rows, their sums added in block order); ``pybudget.dask`` gives one whose rows are on a
cluster's partitions.
"""
import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp
from joblib import cpu_count
from scipy.special import expit

from pybudget._core._reduce import add_in_order, fixed_dot


# Newton iterations with neither a smaller gap nor a decrease of f (relative 1e-12):
# the floating-point floor is reached, and the run stops there unconverged
STALLS = 3
SMOOTH_LOSSES = ("squared_hinge", "logistic", "squared_epsilon_insensitive")
# Fewer non-zeros: one thread (newton_threads).  Measured with primal_newton on
# synthetic sparse sets on a 2-core machine, two threads against one, medians of 7:
# 0.86-1.21x at 0.6 M non-zeros, 1.28-1.65x from 1.5 M to 6 M.
NEWTON_MIN_NNZ = 1_000_000
# The squared losses' Hessian products run on a copy of the rows with curvature when
# they are at most this share of the rows: 1.8-2.0x on w8a (22 %), about 1.0x at 44-60 %
# (ijcnn1, a9a, synthetic sets); checked on two imbalanced synthetic sets: 1.2x at 30 %,
# 1.6-2.3x at 2-7 %.
ACTIVE_SHARE = 0.3


def _pieces(loss, y, z, epsilon):
    """Per row: the loss, its derivative in z and its (generalised) second derivative."""
    if loss == "logistic":
        m = y * z
        return np.logaddexp(0.0, -m), -y * expit(-m), expit(m) * expit(-m)
    if loss == "squared_hinge":
        s = np.maximum(0.0, 1.0 - y * z)
        return s * s, -2.0 * y * s, 2.0 * (s > 0)
    r = y - z                                   # squared epsilon-insensitive
    s = np.maximum(0.0, np.abs(r) - epsilon)
    return s * s, -2.0 * np.sign(r) * s, 2.0 * (s > 0)


class _Primal:
    """f, its gradient and Hessian-vector products at v, on A = [X, bias * 1].  The
    ``local_*`` parts are the loss terms' sums over these rows alone, which a cluster
    adds over its partitions (``pybudget.dask``); Xsq (X's squares) may be shared by
    the problems on the same rows."""

    def __init__(self, X, y, cvec, loss, bias, epsilon, Xsq=None, gather=True):
        self.X, self.y, self.c, self.loss = X, y, cvec, loss
        self.bias, self.eps, self.d = bias, epsilon, X.shape[1]
        self._Xsq = Xsq
        # the squared losses' Hessian products on the rows with curvature only (gather:
        # a copy of them per Newton iteration; the cluster's partitions, which keep
        # every problem's curvature between calls, do without)
        self.gather = gather and loss != "logistic"
        self._active = (None, None, None)

    @property
    def Xsq(self):
        """X's squares (the Hessian's diagonal), made when first needed."""
        if self._Xsq is None:
            self._Xsq = self.X.multiply(self.X).tocsr()
        return self._Xsq

    def margins(self, v):
        return self.X @ v[:self.d] + self.bias * v[self.d]

    def adjoint(self, u):
        return np.append(self.X.T @ u, self.bias * u.sum())

    def local_value(self, v):
        """sum_i C_i l(z_i)."""
        return fixed_dot(self.c, _pieces(self.loss, self.y, self.margins(v), self.eps)[0])

    def local_at(self, v):
        """(sum_i C_i l(z_i), A' (C l'), dl/dz, the curvature weights C l'')."""
        lo, d1, d2 = _pieces(self.loss, self.y, self.margins(v), self.eps)
        return fixed_dot(self.c, lo), self.adjoint(self.c * d1), d1, self.c * d2

    def local_hessp(self, h, p):
        """A' diag(h) A p; for the squared losses, whose h is 0 on every row past its
        margin, on the others only (their rows copied once per h: liblinear's primal
        solvers do the same)."""
        if not self.gather:
            return self.adjoint(h * self.margins(p))
        if self._active[0] is not h:
            rows = np.flatnonzero(h)
            if rows.size > ACTIVE_SHARE * h.size:
                rows = None
            self._active = (h, rows, None if rows is None else self.X[rows])
        _, rows, Xa = self._active
        if rows is None:
            return self.adjoint(h * self.margins(p))
        u = h[rows] * (Xa @ p[:self.d] + self.bias * p[self.d])
        return np.append(Xa.T @ u, self.bias * u.sum())

    def local_hdiag(self, h):
        """The diagonal of A' diag(h) A."""
        return np.append(self.Xsq.T @ h, self.bias * self.bias * h.sum())

    def value(self, v):
        return 0.5 * fixed_dot(v, v) + self.local_value(v)

    def at(self, v):
        """(f, gradient, dl/dz, curvature weights C l'') at v."""
        lo, grad, d1, h = self.local_at(v)
        return 0.5 * fixed_dot(v, v) + lo, v + grad, d1, h

    def hessp(self, h, p):
        return p + self.local_hessp(h, p)

    def hdiag(self, h):
        return 1.0 + self.local_hdiag(h)


class _RowBlocks:
    """The same oracle as ``_Primal`` (f, gradient, Hessian products), as a sum over
    contiguous blocks of rows with about equal non-zeros, each block's terms on a thread
    of ``pool`` (scipy's sparse products and numpy's element-wise functions release the
    GIL), added in block order: the same bits run to run for a number of blocks, other
    bits (the same optimum within tol) for another."""

    def __init__(self, X, y, cvec, loss, bias, epsilon, n_blocks, pool):
        cuts = np.searchsorted(X.indptr, X.nnz * np.arange(1, n_blocks) / n_blocks)
        bounds = [0, *np.minimum(cuts, X.shape[0]).tolist(), X.shape[0]]
        self.blocks = [_Primal(_row_view(X, a, b), y[a:b], cvec[a:b], loss, bias, epsilon)
                       for a, b in zip(bounds[:-1], bounds[1:]) if b > a]
        self.whole = _Primal(X, y, cvec, loss, bias, epsilon)    # (for _dual_of)
        self.y, self.c, self.loss = y, cvec, loss
        self.pool = pool

    def margins(self, v):
        return self.whole.margins(v)

    def value(self, v):
        lo = add_in_order(list(self.pool.map(lambda b: b.local_value(v), self.blocks)))
        return 0.5 * fixed_dot(v, v) + lo

    def at(self, v):
        parts = list(self.pool.map(lambda b: b.local_at(v), self.blocks))
        lo, grad = add_in_order([(p[0], p[1]) for p in parts])
        return (0.5 * fixed_dot(v, v) + lo, v + grad, np.concatenate([p[2] for p in parts]),
                [p[3] for p in parts])

    def hessp(self, h, p):
        parts = self.pool.map(lambda b, hb: b.local_hessp(hb, p), self.blocks, h)
        return p + add_in_order(list(parts))

    def hdiag(self, h):
        return 1.0 + add_in_order(list(self.pool.map(_Primal.local_hdiag, self.blocks, h)))


def _row_view(X, a, b):
    """Rows a:b of canonical CSR X, sharing its values and indices."""
    lo, hi = X.indptr[a], X.indptr[b]
    return sp.csr_matrix((X.data[lo:hi], X.indices[lo:hi], X.indptr[a:b + 1] - lo),
                         shape=(b - a, X.shape[1]))


def newton_threads(X, n_threads, cpus=None):
    """Threads for the Newton route of one problem on X when ``n_threads`` may be used
    on ``cpus`` cores (None: this machine's): 1 below NEWTON_MIN_NNZ non-zeros (each
    product's hand-over to the threads then outweighs its share of the work), else up
    to the cores."""
    if n_threads < 2 or X.nnz < NEWTON_MIN_NNZ:
        return 1
    return max(1, min(n_threads, cpu_count() if cpus is None else cpus))


def _dual_of(P, v, d1):
    """The dual variables v implies (alpha for classification, beta for regression) and,
    for the logistic loss, C - alpha computed without cancellation."""
    if P.loss == "squared_epsilon_insensitive":
        return -P.c * d1, None
    if P.loss == "logistic":
        m = P.y * P.margins(v)
        tiny = np.finfo(np.float64).tiny          # strictly inside (0, C): the logs
        return np.maximum(P.c * expit(-m), tiny), np.maximum(P.c * expit(m), tiny)
    return -P.c * d1 * P.y, None


def primal_newton(X, y, cvec, *, loss, bias, tol, max_iter, epsilon=0.0, n_threads=1):
    """Minimise the primal of a smooth loss by truncated Newton.

    X canonical CSR, y +-1 (classification) or targets, cvec the C_i > 0, bias the
    constant feature's value (0: none), tol the relative duality gap to reach, max_iter
    the Newton iterations.  Returns a dict: w (d + 1 weights, the primal iterate), alpha
    (the dual variables it implies), comp (C - alpha for the logistic loss, else None),
    n_iter, converged, primal and dual (the objectives at w and alpha), gap (their
    difference, relative to the primal), kkt_violation (max |grad f(w)|), loss_sum (at w),
    threads (``n_threads``: the sums split into that many blocks of rows, one thread
    each; ``newton_threads`` is the rule that says how many pay)."""
    check_smooth(loss)
    threads = max(1, n_threads)
    if threads == 1:
        P = _Primal(X, y, cvec, loss, bias, epsilon)
        out = newton(P, X.shape[1] + 1, tol, max_iter)
    else:
        with ThreadPoolExecutor(threads, thread_name_prefix="pybudget-newton") as pool:
            P = _RowBlocks(X, y, cvec, loss, bias, epsilon, threads, pool)
            out = newton(P, X.shape[1] + 1, tol, max_iter)
    out["threads"] = threads
    # The weights are the Newton iterate v, not w(alpha): w(alpha)'s bias weight is
    # B sum_i y_i alpha_i, a sum that cancels to ~1/B of its terms, so its round-off,
    # times B^2 in the intercept, moved it by up to 580 on 200 rows at B = 1e4, C = 1e3.
    out["alpha"], out["comp"] = _dual_of(P, out["w"], out.pop("d1"))
    return out


def check_smooth(loss):
    if loss not in SMOOTH_LOSSES:
        raise ValueError(f"the primal solver needs a smooth loss {SMOOTH_LOSSES}, got {loss!r}")


def newton(P, n_weights, tol, max_iter):
    """The Newton iterations from v = 0 on an oracle P (``_Primal``'s ``at``, ``value``,
    ``hessp``, ``hdiag``; ``pybudget.dask`` gives one whose rows are on a cluster).
    Returns a dict: w, n_iter, converged, primal, dual, gap, kkt_violation, loss_sum,
    n_products (Hessian-vector products) and d1 (dl/dz at w, as P.at gave it)."""
    v = np.zeros(n_weights)
    f, g, d1, h = P.at(v)
    it, best, stalls, f_old, products = 0, np.inf, 0, np.inf, 0
    while True:
        gap = 0.5 * fixed_dot(g, g)
        rel = gap / f if f > 0.0 else 0.0
        flat = f_old - f <= 1e-12 * abs(f)
        stalls = stalls + 1 if rel >= best and flat else 0
        best = min(best, rel)
        if rel <= tol or stalls >= STALLS or it >= max_iter:
            break
        step, n = _newton_direction(P, g, h)
        products += n
        f_old = f
        v, f, g, d1, h = _line_search(P, v, f, g, step)
        it += 1
    return {"w": v, "d1": d1, "n_iter": it, "converged": rel <= tol,
            "primal": f, "dual": f - gap, "gap": rel,
            "kkt_violation": float(np.max(np.abs(g))),
            "loss_sum": f - 0.5 * fixed_dot(v, v), "n_products": products}


def _newton_direction(P, g, h):
    """An approximate solution of H s = -g by Jacobi-preconditioned conjugate gradients,
    solved more exactly as the gradient shrinks (forcing term min(0.1, |g|)), and the
    Hessian-vector products it took.  scipy's cg, written out so that every inner
    product is a fixed-order sum (``_core._reduce``): its BLAS dot products depend on
    the BLAS thread count, and limiting that count changes it for the whole process."""
    inv = 1.0 / P.hdiag(h)
    b = -g
    b_norm = math.sqrt(fixed_dot(b, b))
    x = np.zeros_like(b)
    if b_norm == 0.0:
        return x, 0
    stop = max(min(0.1, b_norm), 1e-14) * b_norm
    r, p, rho_prev, products = b.copy(), None, 0.0, 0
    for it in range(max(2 * b.shape[0], 50)):
        if math.sqrt(fixed_dot(r, r)) < stop:
            break
        z = inv * r
        rho = fixed_dot(r, z)
        p = z if it == 0 else z + (rho / rho_prev) * p
        q = P.hessp(h, p)
        products += 1
        alpha = rho / fixed_dot(p, q)
        x = x + alpha * p
        r = r - alpha * q
        rho_prev = rho
    return x, products


def _line_search(P, v, f, g, step):
    """Backtracking (Armijo) along step, starting at the full Newton step.  The full
    step is tried with ``P.at``, which it needs anyway when accepted (it mostly is;
    on a cluster each call is a round trip), the shorter ones with ``P.value`` alone."""
    slope = fixed_dot(g, step)
    if slope >= 0.0:                 # CG gave no descent (round-off): steepest descent
        step, slope = -g, -fixed_dot(g, g)
    v_new = v + step
    f_new, g_new, d1, h = P.at(v_new)
    if f_new <= f + 1e-4 * slope:
        return v_new, f_new, g_new, d1, h
    t = 0.5
    for _ in range(59):
        v_new = v + t * step
        f_new = P.value(v_new)
        if f_new <= f + 1e-4 * t * slope:
            break
        t *= 0.5
    f_new, g_new, d1, h = P.at(v_new)
    return v_new, f_new, g_new, d1, h
