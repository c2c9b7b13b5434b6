"""The policy contract and what drives it: policy.py (ask/tell, plates, state, Result), params.py
(each algorithm's parameters, declared once), registry.py (name -> class), runner.py (simulation
loops and replications), ties.py, cache.py."""
