"""Fixed-confidence algorithms of the linear model: gifa.py + gap_indices.py (LinGapE, m-LinGapE,
LinGIFA, LUCB, UGapE) and Soare et al.'s allocations (static.py, static_adaptive.py,
static_greedy.py, static_rules.py); RAGE's phased elimination on XY-optimal designs (rage.py)."""
