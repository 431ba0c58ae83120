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
variables follow from v (alpha_i = -C_i l'(z_i) y_i, beta_i = -C_i l'(z_i)); the run stops
when the dual solver's exact check (one pass of ``dcd_solve`` with no sweep) finds the
dual pair (alpha, w(alpha)) within ``tol``, the same rule as the dual path.
"""
import numpy as np
import scipy.sparse.linalg as spla
from scipy.special import expit

from pybudget.linear._dual_cd import SELECTIONS, TOL_RULES, dcd_solve

# Newton iterations with neither a smaller dual violation nor a decrease of f (relative
# 1e-12) that mean the violation's floor is reached
STALLS = 3
SMOOTH_LOSSES = ("squared_hinge", "logistic", "squared_epsilon_insensitive")


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
    """f, its gradient and Hessian-vector products at v, on A = [X, bias * 1]."""

    def __init__(self, X, y, cvec, loss, bias, epsilon):
        self.X, self.y, self.c, self.loss = X, y, cvec, loss
        self.bias, self.eps, self.d = bias, epsilon, X.shape[1]
        self.Xsq = X.multiply(X).tocsr()

    def margins(self, v):
        return self.X @ v[:self.d] + self.bias * v[self.d]

    def adjoint(self, u):
        return np.append(self.X.T @ u, self.bias * u.sum())

    def value(self, v):
        return 0.5 * v @ v + self.c @ _pieces(self.loss, self.y, self.margins(v), self.eps)[0]

    def at(self, v):
        """(f, gradient, dl/dz, curvature weights C l'') at v."""
        lo, d1, d2 = _pieces(self.loss, self.y, self.margins(v), self.eps)
        return 0.5 * v @ v + self.c @ lo, v + self.adjoint(self.c * d1), d1, self.c * d2

    def hessp(self, h, p):
        return p + self.adjoint(h * self.margins(p))

    def hdiag(self, h):
        return 1.0 + np.append(self.Xsq.T @ h, self.bias * self.bias * h.sum())


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


def _check(P, X, alpha, comp, tol, epsilon):
    """The dual solver's exact pass on (alpha, w(alpha)): (violation, loss_sum, w)."""
    n = alpha.shape[0]
    sv = alpha if P.loss == "squared_epsilon_insensitive" else alpha * P.y
    w = P.adjoint(sv)
    squared = P.loss != "logistic"
    problem = {"logistic": "lr", "squared_hinge": "svm"}.get(P.loss, "svr")
    upper = np.full(n, np.inf) if squared else P.c
    diag = 0.5 / P.c if squared else np.zeros(n)
    out = dcd_solve(X, P.y, upper, diag, P.c, P.bias, alpha, w, np.ones(n),
                    np.arange(n, dtype=np.int32), n, 0.0, SELECTIONS["uniform"], tol, 0, 0,
                    squared, 0, problem, epsilon, comp, tol_rule=TOL_RULES["max"])
    return out["kkt_violation"], out["loss_sum"], w


def primal_newton(X, y, cvec, *, loss, bias, tol, max_iter, epsilon=0.0):
    """Minimise the primal of a smooth loss by truncated Newton.

    X canonical CSR, y +-1 (classification) or targets, cvec the C_i > 0, bias the
    constant feature's value (0: none), tol the dual violation to reach (the units of
    ``dual_cd``'s), max_iter the Newton iterations.  Returns a dict: w (d + 1 weights,
    the primal iterate), alpha (the dual variables it implies), comp (C - alpha for the logistic
    loss, else None), n_iter, converged, kkt_violation, loss_sum."""
    if loss not in SMOOTH_LOSSES:
        raise ValueError(f"the primal solver needs a smooth loss {SMOOTH_LOSSES}, got {loss!r}")
    P = _Primal(X, y, cvec, loss, bias, epsilon)
    v = np.zeros(X.shape[1] + 1)
    f, g, d1, h = P.at(v)
    it, kkt, converged, best, stalls, f_old = 0, np.inf, False, np.inf, 0, np.inf
    while True:
        alpha, comp = _dual_of(P, v, d1)
        kkt, loss_sum, w = _check(P, X, alpha, comp, tol, epsilon)
        flat = f_old - f <= 1e-12 * abs(f)
        stalls = stalls + 1 if kkt >= best and flat else 0
        best = min(best, kkt)
        # Stagnation is convergence too: with B^2 C large the dual violation has a
        # floating-point floor (alpha's round-off times B^2) that a tight tol can be
        # below; Newton steps then stop reducing it (kkt_violation reports it).
        if kkt <= tol or stalls >= STALLS:
            converged = True
            break
        if it >= max_iter:
            break
        step = _newton_direction(P, g, h)
        f_old = f
        v, f, g, d1, h = _line_search(P, v, f, g, step)
        it += 1
    # The weights are the Newton iterate v, not w(alpha): w(alpha)'s bias weight is
    # B sum_i y_i alpha_i, a sum that cancels to ~1/B of its terms, so its round-off,
    # times B^2 in the intercept, moved it by up to 580 on 200 rows at B = 1e4, C = 1e3.
    return {"w": v, "alpha": alpha, "comp": comp, "n_iter": it, "converged": converged,
            "kkt_violation": kkt, "loss_sum": loss_sum}


def _newton_direction(P, g, h):
    """An approximate solution of H s = -g by preconditioned CG, solved more exactly as
    the gradient shrinks (forcing term min(0.1, |g|))."""
    n = g.shape[0]
    H = spla.LinearOperator((n, n), matvec=lambda p: P.hessp(h, p), dtype=np.float64)
    inv = 1.0 / P.hdiag(h)
    M = spla.LinearOperator((n, n), matvec=lambda r: inv * r, dtype=np.float64)
    rtol = min(0.1, float(np.linalg.norm(g)))
    step, _ = spla.cg(H, -g, M=M, rtol=max(rtol, 1e-14), maxiter=max(2 * n, 50))
    return step


def _line_search(P, v, f, g, step):
    """Backtracking (Armijo) along step, starting at the full Newton step."""
    slope = float(g @ step)
    if slope >= 0.0:                 # CG gave no descent (round-off): steepest descent
        step, slope = -g, -float(g @ g)
    t = 1.0
    for _ in range(60):
        v_new = v + t * step
        f_new = P.value(v_new)
        if f_new <= f + 1e-4 * t * slope:
            break
        t *= 0.5
    f_new, g_new, d1, h = P.at(v_new)
    return v_new, f_new, g_new, d1, h
