"""Exceptions raised by freeattn."""

__all__ = ["ConvergenceError"]


class ConvergenceError(ArithmeticError):
    """A numerical solver did not reach its stated accuracy.

    The message quotes the numbers: where the solver was evaluated, the
    residual it reached, the tolerance it was asked for and the number of
    iterations it used.  Attributes carry the same numbers for programs.

    Parameters
    ----------
    message : str
        Human-readable description, including the numbers.
    point : object, optional
        The input (or inputs) at which the solve failed.
    residual : float, optional
        The residual reached.
    tolerance : float, optional
        The residual that was required.
    iterations : int, optional
        Iterations used.
    """

    def __init__(self, message, *, point=None, residual=None, tolerance=None,
                 iterations=None):
        super().__init__(message)
        self.point = point
        self.residual = residual
        self.tolerance = tolerance
        self.iterations = iterations
