"""screenbai: best-arm identification in (generalized) linear bandits for compound screening."""

__version__ = "0.1.0"


class ScreenbaiWarning(Warning):
    """Base of every warning screenbai raises (each also derives from the standard category it is,
    e.g. DeprecationWarning or UserWarning): ``warnings.simplefilter("error", ScreenbaiWarning)``
    turns all of them into errors, as the test suite does."""
