"""screenbai: best-arm identification in (generalized) linear bandits for compound screening."""

__version__ = "0.1.0"
