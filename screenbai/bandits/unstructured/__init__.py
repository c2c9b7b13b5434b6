"""Policies with no model of the features: each compound on its own outcomes (kl_lucb.py: KL-LUCB)."""
