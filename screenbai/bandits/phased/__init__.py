"""Phased elimination on fixed designs (RAGE's phases), shared by the linear and logistic families."""
