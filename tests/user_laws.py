"""User-defined laws for the tests: laws given by the minimal hooks only."""

from fractions import Fraction

import numpy as np

from freeattn.laws._law_base import Interval, SpectralLaw


class UserArcsine(SpectralLaw):
    """The arcsine law on ``[lo, hi]`` from three hooks only: support with its
    exponents, density, Cauchy transform."""

    def __init__(self, lo, hi):
        super().__init__(None)
        self.lo, self.hi = lo, hi

    def _support_intervals(self):
        return (Interval(self.lo, self.hi, Fraction(-1, 2), Fraction(-1, 2)),)

    def _density(self, x):
        return 1.0 / (np.pi * np.sqrt((self.hi - x) * (x - self.lo)))

    def _stieltjes_exact(self, z):
        w = np.where(z.imag == 0, z.real + 0j, z)
        return 1.0 / (np.sqrt(w - self.lo) * np.sqrt(w - self.hi))
