"""Simulation: the problem and the environment that draws rewards (instance.py), the papers'
instances (instances.py)."""
