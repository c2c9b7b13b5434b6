"""Stopping rules shared by several policy families, and the composition of a sampling rule with a
stopping rule. The contract is core/parts.py (``StoppingRule``); family-specific rules live with their
family (linear/confidence.py: GIFA's ridge sets; tracking/blocks.py: the block evidence).

likelihood.py: the likelihood-ratio confidence set restarted late (log-tas's stopping rule).
compose.py: ``with_stopping``, a policy class whose sampling rule runs with another stopping rule.
"""
