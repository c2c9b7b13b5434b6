"""Fixed-confidence algorithms of the logistic model: GLGapE (glgape.py, its widths in
glgape_width.py) and top-m GLGapE (glgape_topm.py)."""
