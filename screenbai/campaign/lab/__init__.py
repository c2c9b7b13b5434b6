"""What the lab handles: plates.py (plate files, well names), layout.py (plate formats, control
wells, empty edges, replicates), assay.py (raw readouts, hit cutoffs, controls, Z'), results.py
(reading and validating a results file before anything is written)."""
