"""The policy contract and what drives it: policy.py (ask/tell, plates, state, Result), parts.py (the
stopping rule a policy is built with, its confidence set and certificate), params.py
(each algorithm's parameters, declared once), registry.py (name -> class), state.py (a state as
plain data), persistence.py (a policy in one file), runner.py (simulation loops and replications),
cache.py."""
