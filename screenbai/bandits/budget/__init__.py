"""Fixed-budget algorithms: GSE (gse.py) and the baselines of Azizi et al. section 8 (baselines.py)."""
