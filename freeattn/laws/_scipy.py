"""A freeattn law as a :mod:`scipy.stats` distribution (``SpectralLaw.to_scipy``).

:class:`ScipyLaw` is an :class:`scipy.stats.rv_continuous` whose hooks call
the law's own methods, so SciPy's public machinery (``loc``/``scale``,
freezing, ``interval``, ``expect``, ``moment``, ``rvs`` with SciPy's
``random_state``, plotting helpers such as :func:`scipy.stats.probplot`) works
on any freeattn law, with freeattn's accuracy.

Atoms.  A freeattn law may have atoms (a multi-head or zero-padded law has one
at 0).  The SciPy object is then a *mixed* distribution: ``cdf``, ``sf``,
``ppf``, ``isf``, ``rvs``, ``moment``, ``mean``, ``var``, ``interval`` and
``expect`` are those of the full law, atoms included, while ``pdf`` (and
``logpdf``) is the density of the continuous part only (it integrates to
``1 - atom mass``), as :meth:`SpectralLaw.pdf` is.  When an atom sits at the
lower end of the support, the SciPy support end ``a`` is the float just below
it, so that SciPy's support mask (which treats ``x == a`` as outside) keeps
the jump at the atom: ``cdf(atom)`` is the atom's mass.  ``entropy`` raises
for a law with atoms (a mixed law has no differential entropy).
"""

import numpy as np
import scipy.integrate
from scipy.stats import rv_continuous

__all__ = ["ScipyLaw"]


class ScipyLaw(rv_continuous):
    """A freeattn :class:`~freeattn.SpectralLaw` as a :class:`scipy.stats.rv_continuous`.

    Built by :meth:`freeattn.SpectralLaw.to_scipy`; see the module notes on
    atoms.  The law is available as ``.law``.
    """

    def __init__(self, law, **kwargs):
        lower, upper = law.support()
        loc, mass = law.atoms()
        if loc.size and np.any((loc == lower) & (mass > 0)):
            lower = float(np.nextafter(lower, -np.inf))
        kwargs.setdefault("a", lower)
        kwargs.setdefault("b", upper)
        kwargs.setdefault("name", "freeattn")
        super().__init__(**kwargs)
        self.law = law

    def _updated_ctor_param(self):
        # freezing rebuilds the object from its constructor parameters
        params = super()._updated_ctor_param()
        params["law"] = self.law
        return params

    def _pdf(self, x):
        return np.asarray(self.law.pdf(np.asarray(x, dtype=float)))

    def _cdf(self, x):
        return np.asarray(self.law.cdf(np.asarray(x, dtype=float)))

    def _sf(self, x):
        return np.asarray(self.law.sf(np.asarray(x, dtype=float)))

    def _ppf(self, q):
        return np.asarray(self.law.ppf(np.asarray(q, dtype=float)))

    def _isf(self, q):
        return np.asarray(self.law.isf(np.asarray(q, dtype=float)))

    def _rvs(self, size=None, random_state=None):
        # inverse transform (atoms included); random_state is a numpy Generator
        # or RandomState, as SciPy passes it
        return np.asarray(self.law.ppf(random_state.uniform(size=size)))

    def _munp(self, n):
        return self.law.moment(int(n))

    def _stats(self):
        return self.law.mean(), self.law.var(), None, None

    def _entropy(self):
        if self.law.atoms()[0].size:
            raise ValueError("a law with atoms has no differential entropy (it is a mixed "
                             "distribution)")
        return super()._entropy()

    def expect(self, func=None, args=(), loc=0, scale=1, lb=None, ub=None,
               conditional=False, **kwds):
        """``E[func(loc + scale X)]`` with the law's quadrature, atoms included.

        Without bounds this is :meth:`freeattn.SpectralLaw.expect` (Gauss-Legendre
        on the law's panels plus the atoms); with ``lb``/``ub`` the continuous
        part is integrated by :func:`scipy.integrate.quad` over each support
        interval inside the bounds and the atoms inside them are added;
        ``conditional=True`` divides by the probability of ``[lb, ub]``.
        """
        if func is None:
            def func(x, *a):
                return x
        if scale <= 0:
            raise ValueError(f"scale must be > 0, got {scale!r}")

        def g(x):
            return np.asarray(func(loc + scale * np.asarray(x, dtype=float), *args),
                              dtype=float)

        if lb is None and ub is None:
            return self.law.expect(g)
        lo = -np.inf if lb is None else (lb - loc) / scale
        hi = np.inf if ub is None else (ub - loc) / scale
        atoms, masses = self.law.atoms()
        inside = (atoms >= lo) & (atoms <= hi)
        total = float(np.sum(g(atoms[inside]) * masses[inside])) if atoms.size else 0.0
        probability = float(masses[inside].sum()) if atoms.size else 0.0
        for a, b in self.law.intervals():
            a, b = max(a, lo), min(b, hi)
            if a < b:
                total += scipy.integrate.quad(lambda t: float(g(t)) * self.law.pdf(t),
                                              a, b, **kwds)[0]
                probability += scipy.integrate.quad(self.law.pdf, a, b)[0]
        return total / probability if conditional else total
