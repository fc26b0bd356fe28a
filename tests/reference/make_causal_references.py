"""Independent references for the causal law (theory/10_causal.md).

Run from the repository root:

    python tests/reference/make_causal_references.py

It writes ``tests/reference/causal_references.json`` with its working precision
and this command.  Nothing here uses freeattn's causal solver:

* ``moments``: exact rational coefficients of ``m_1 .. m_6`` as polynomials in
  ``theta1, theta2, 1/gamma`` (theory eq. (10.16)), from the power series of
  the reduced system in ``w = 1/z`` in the (A, B) form of eqs. (10.8)-(10.9),
  computed in sympy's exact polynomial rings (fixed-point passes until no
  coefficient changes);
* ``stieltjes``: ``G(z)`` at a few points from a *different* discretisation:
  the unknown is ``psi`` on Chebyshev-Lobatto nodes of the full interval
  ``[0, 1]`` (no symmetry, no variables a, b), ``A = J e^psi/kappa``,
  ``B = int_x^1 e^-psi`` by the spectral integration matrix ``J``, ``sigma``
  from the first integral (10.9), equations ``psi = J(alpha^2 + 2 beta^2 sigma)/kappa``
  and ``kappa e^-psi(1) = -z``; ``G = -A(1)``.  A float64 solve by
  continuation in ``Im z`` (from ``Im z = 40``) picks the Stieltjes branch,
  then Newton's method in mpmath at ``DPS`` digits polishes it, at two numbers
  of nodes (the difference is stored as the discretisation error);
* ``nystrom``: ``G(z)`` at one point from the *original* operator system
  (theory eq. (10.5)), by a midpoint Nystrom discretisation at m = 100, 200,
  400 nodes and Richardson extrapolation in 1/m (the kernel diagonals are
  first-order accurate), with the last extrapolation step as error estimate.
"""

import json
import sys
from pathlib import Path

import mpmath
import numpy as np
import scipy.special
from sympy import QQ, symbols
from sympy.polys.rings import ring

DPS = 30
NODES = (56, 72)
# (beta, gamma, z): z in physical units (theta1 = e^{beta^2} - 1); real z means z + i0
POINTS = [
    (1.0, 1.0, 0.5), (1.0, 1.0, 2.0), (1.0, 1.0, 1.0 + 1.0j), (0.5, 3.0, 0.15),
    (1.5, 0.5, 3.0), (1.0, 0.3, 0.05), (2.0, 10.0, 20.0 + 5.0j),
]
NYSTROM = (1.0, 1.0, 1.0 + 1.0j)
MOMENT_ORDER = 6


# --------------------------------------------------------------------------- moments

def exact_moments(kmax):
    R, X, A2, B2, IG = ring("x,a2,b2,ig", QQ)
    N = kmax + 2

    def integ(p):
        out = R.zero
        for (i, j, k, l), c in p.terms():
            out += R({(i + 1, j, k, l): c / (i + 1)})
        return out

    def at1(p):
        out = R.zero
        for (i, j, k, l), c in p.terms():
            out += R({(0, j, k, l): c})
        return out

    def at0(p):
        out = R.zero
        for (i, j, k, l), c in p.terms():
            if i == 0:
                out += R({(0, j, k, l): c})
        return out

    def smul(s, t):
        out = [R.zero] * N
        for i, si in enumerate(s):
            if si == 0:
                continue
            for j in range(N - i):
                if t[j] != 0:
                    out[i + j] += si * t[j]
        return out

    def sexp(s, sign):
        e = [R.zero] * N
        e[0] = R.one
        for j in range(1, N):
            acc = R.zero
            for i in range(1, j + 1):
                if s[i] != 0:
                    acc += i * s[i] * e[j - i]
            e[j] = sign * acc * QQ(1, j)
        return e

    half = R(QQ(1, 2))
    sig = [half] + [R.zero] * (N - 1)
    kinv = [R.zero, R(-1)] + [R.zero] * (N - 2)
    prev = None
    for _ in range(4 * N + 4):
        f = [A2 + 2 * B2 * sig[0]] + [2 * B2 * s for s in sig[1:]]
        psi = smul(kinv, [integ(p) for p in f])
        ep, em = sexp(psi, 1), sexp(psi, -1)
        A = smul(kinv, [integ(p) for p in ep])
        B = [at1(integ(p)) - integ(p) for p in em]
        B0 = [at0(p) for p in B]
        zA = A[1:] + [R.zero]
        AB = smul(A, B)
        sig = [(B[j] - B0[j] - zA[j] + A2 * AB[j]) * IG for j in range(N)]
        sig[0] = sig[0] + half
        e1 = sexp([at1(p) for p in psi], -1)
        kinv = [R.zero] + [-p for p in e1[:N - 1]]
        m = [-at1(A[k + 1]) for k in range(1, kmax + 1)]
        if m == prev:
            break
        prev = m
    a2, b2, ig, t1, t2 = symbols("a2 b2 ig theta1 theta2")
    out = []
    for k, mk in enumerate(m, start=1):
        expr = mk.as_expr().subs({a2: t1 - b2}).subs({b2: t2}).expand()
        terms = []
        for mon, coeff in expr.as_poly(t1, t2, ig).terms():
            terms.append([int(coeff.p), int(coeff.q), mon[0], mon[1], mon[2]])
        out.append({"k": k, "terms": sorted(terms, key=lambda t: t[2:])})
    return out


# --------------------------------------------------------------------------- full interval

def cheb(n):
    k = np.arange(n + 1)
    x = (1 - np.cos(np.pi * k / n)) / 2
    s = 2 * x - 1
    V = np.polynomial.chebyshev.chebvander(s, n)
    Jc = np.empty((n + 1, n + 1))
    for j in range(n + 1):
        c = np.zeros(n + 1)
        c[j] = 1
        Jc[:, j] = np.polynomial.chebyshev.chebval(s, np.polynomial.chebyshev.chebint(c, lbnd=-1) * 0.5)
    return x, np.linalg.solve(V.T, Jc.T).T


def cheb_mp(n):
    """Nodes and integration matrix in mpmath (Clenshaw-Curtis style via Chebyshev sums)."""
    x = [(1 - mpmath.cos(mpmath.pi * k / n)) / 2 for k in range(n + 1)]
    s = [2 * xi - 1 for xi in x]
    V = mpmath.matrix(n + 1, n + 1)
    I = mpmath.matrix(n + 1, n + 1)
    for i in range(n + 1):
        th = mpmath.acos(s[i])
        for j in range(n + 1):
            V[i, j] = mpmath.cos(j * th)
            # int_{-1}^{s} T_j = (T_{j+1}/(j+1) - T_{j-1}/(j-1))/2 + const; times 1/2 for x
            if j == 0:
                val = s[i] + 1
            elif j == 1:
                val = (s[i] ** 2 - 1) / 2
            else:
                val = (mpmath.cos((j + 1) * th) / (j + 1) - mpmath.cos((j - 1) * th) / (j - 1)) / 2 \
                    - ((-1) ** (j + 1) / (j + 1) - (-1) ** (j - 1) / (j - 1)) / 2
            I[i, j] = val / 2
    J = I * mpmath.inverse(V)
    return x, J


def residual(psi, kap, z, a2, b2, gamma, J, lib):
    """Residual of the full-interval equations and their Jacobian (numpy or mpmath)."""
    n1 = len(psi)
    if lib == "np":
        e, f = np.exp(psi), np.exp(-psi)
        w = J[-1]
        A = J @ e / kap
        Jf = J @ f
        B = w @ f - Jf
        sig = 0.5 + (-Jf - z * A + a2 * A * B) / gamma
        R1 = psi - J @ (a2 + 2 * b2 * sig) / kap
        R2 = -kap * np.exp(-psi[-1]) / z - 1
        dA = J * e[None, :] / kap
        dAk = -A / kap
        dB = -np.outer(np.ones(n1), w * f) + J * f[None, :]
        dsig = (J * f[None, :] - z * dA + a2 * (B[:, None] * dA + A[:, None] * dB)) / gamma
        dsigk = (-z * dAk + a2 * B * dAk) / gamma
        M = np.zeros((n1 + 1, n1 + 1), complex)
        M[:n1, :n1] = np.eye(n1) - (2 * b2 / kap) * J @ dsig
        M[:n1, n1] = J @ (a2 + 2 * b2 * sig) / kap ** 2 - (2 * b2 / kap) * J @ dsigk
        M[n1, n1 - 1] = kap * np.exp(-psi[-1]) / z
        M[n1, n1] = -np.exp(-psi[-1]) / z
        return np.concatenate([R1, [R2]]), M
    mp = mpmath
    e = [mp.exp(p) for p in psi]
    f = [mp.exp(-p) for p in psi]
    ev, fv = mp.matrix(e), mp.matrix(f)
    Je, Jfv = J * ev, J * fv
    tot = sum(J[n1 - 1, j] * f[j] for j in range(n1))
    A = [Je[i] / kap for i in range(n1)]
    B = [tot - Jfv[i] for i in range(n1)]
    sig = [mp.mpf(1) / 2 + (-Jfv[i] - z * A[i] + a2 * A[i] * B[i]) / gamma for i in range(n1)]
    src = mp.matrix([a2 + 2 * b2 * s for s in sig])
    Js = J * src
    R = [psi[i] - Js[i] / kap for i in range(n1)] + [-kap * mp.exp(-psi[-1]) / z - 1]
    M = mp.matrix(n1 + 1, n1 + 1)
    dsig = mp.matrix(n1, n1)
    for i in range(n1):
        for j in range(n1):
            dAij = J[i, j] * e[j] / kap
            dBij = -J[n1 - 1, j] * f[j] + J[i, j] * f[j]
            dsig[i, j] = (J[i, j] * f[j] - z * dAij + a2 * (B[i] * dAij + A[i] * dBij)) / gamma
    Jd = J * dsig
    dsigk = mp.matrix([(-z * (-A[i] / kap) + a2 * B[i] * (-A[i] / kap)) / gamma for i in range(n1)])
    Jdk = J * dsigk
    for i in range(n1):
        for j in range(n1):
            M[i, j] = (1 if i == j else 0) - (2 * b2 / kap) * Jd[i, j]
        M[i, n1] = Js[i] / kap ** 2 - (2 * b2 / kap) * Jdk[i]
    M[n1, n1 - 1] = kap * mp.exp(-psi[-1]) / z
    M[n1, n1] = -mp.exp(-psi[-1]) / z
    return R, M


def float_solve(z, a2, b2, gamma, n):
    """Branch by continuation in Im z from 40i down to Im z (0 for real z)."""
    x, J = cheb(n)
    y_end = z.imag
    etas = [40.0 * 0.8 ** k for k in range(200)]
    etas = [e for e in etas if e > max(y_end, 1e-9)] + [y_end]
    psi = kap = None
    for eta in etas:
        zz = z.real + 1j * eta
        if psi is None:
            T = scipy.special.lambertw(-1 / zz, 0)
            kap, psi = 1 / T, T * x
        for _ in range(50):
            R, M = residual(psi, kap, zz, a2, b2, gamma, J, "np")
            d = np.linalg.solve(M, -R)
            psi, kap = psi + d[:-1], kap + d[-1]
            if np.max(np.abs(d)) < 1e-14:
                break
    return psi, kap


def mp_polish(psi0, kap0, z, a2, b2, gamma, n):
    x, J = cheb_mp(n)
    # interpolate the float solution onto this grid
    xf, _ = cheb(len(psi0) - 1)
    coef = np.polynomial.chebyshev.chebfit(2 * xf - 1, psi0, len(psi0) - 1)
    psi = [mpmath.mpc(complex(np.polynomial.chebyshev.chebval(2 * float(xi) - 1, coef))) for xi in x]
    kap = mpmath.mpc(kap0)
    z = mpmath.mpc(z)
    tol = mpmath.mpf(10) ** (-(DPS - 5))
    for it in range(30):
        R, M = residual(psi, kap, z, a2, b2, gamma, J, "mp")
        d = mpmath.lu_solve(M, mpmath.matrix([-r for r in R]))
        psi = [p + d[i] for i, p in enumerate(psi)]
        kap = kap + d[len(psi)]
        if max(abs(v) for v in d) < tol:
            break
    else:
        raise RuntimeError(f"mpmath Newton did not converge at z={z}")
    e = [mpmath.exp(p) for p in psi]
    A1 = sum(J[n, j] * e[j] for j in range(n + 1)) / kap
    return -A1, it


# --------------------------------------------------------------------------- Nystrom

def nystrom(z, a2, b2, gamma, m):
    c = b2 / gamma
    h = 1.0 / m
    E = h * (np.tril(np.ones((m, m)), -1) + 0.5 * np.eye(m))
    t = np.full(m, -1 / z, complex)
    w = np.ones(m, complex)
    for _ in range(3000):
        K2 = np.diag(E @ np.linalg.solve(np.diag(1 / t) + c * E.T @ np.diag(w) @ E, E.T)) / h
        K1 = np.diag(E.T @ np.linalg.solve(np.diag(1 / w) + c * E @ np.diag(t) @ E.T, E)) / h
        wn = 1 / (1 + a2 * (E @ t) + b2 * K2)
        tn = 1 / (-z + a2 * (E.T @ w) + b2 * K1)
        err = max(np.abs(wn - w).max(), np.abs(tn - t).max())
        w, t = 0.5 * wn + 0.5 * w, 0.5 * tn + 0.5 * t
        if err < 1e-14:
            break
    return -t.sum() * h


def main():
    mpmath.mp.dps = DPS
    out = {"dps": DPS, "nodes": list(NODES), "command": "python tests/reference/make_causal_references.py",
           "units": "physical: G in 1/x, z in x (squared singular values)"}
    print("moments ...", flush=True)
    out["moments"] = exact_moments(MOMENT_ORDER)
    out["stieltjes"] = []
    for beta, gamma, z in POINTS:
        theta1 = float(np.expm1(beta ** 2))
        b2 = beta ** 2 / theta1
        a2 = 1.0 - b2
        zu = complex(z) / theta1
        psi, kap = float_solve(zu, a2, b2, gamma, NODES[0])
        vals = []
        for n in NODES:
            g, its = mp_polish(psi, kap, zu, mpmath.mpf(a2), mpmath.mpf(b2), mpmath.mpf(gamma), n)
            vals.append(g / theta1)
        err = abs(vals[1] - vals[0])
        rec = {"beta": beta, "gamma": gamma, "z": [float(np.real(z)), float(np.imag(z))],
               "G": [mpmath.nstr(vals[1].real, DPS - 5), mpmath.nstr(vals[1].imag, DPS - 5)],
               "discretisation_error": float(err)}
        print(rec, flush=True)
        out["stieltjes"].append(rec)
    beta, gamma, z = NYSTROM
    theta1 = float(np.expm1(beta ** 2))
    b2 = beta ** 2 / theta1
    vals = [nystrom(z / theta1, 1 - b2, b2, gamma, m) / theta1 for m in (100, 200, 400)]
    r1 = [2 * vals[1] - vals[0], 2 * vals[2] - vals[1]]
    r2 = (4 * r1[1] - r1[0]) / 3
    out["nystrom"] = {"beta": beta, "gamma": gamma, "z": [z.real, z.imag], "m": [100, 200, 400],
                      "G": [r2.real, r2.imag], "error_estimate": float(abs(r2 - r1[1]))}
    print(out["nystrom"], flush=True)
    path = Path(__file__).with_name("causal_references.json")
    path.write_text(json.dumps(out, indent=1) + "\n")
    print("wrote", path)


if __name__ == "__main__":
    sys.exit(main())
