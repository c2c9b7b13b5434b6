"""Simulation: the problem and the environment that draws rewards (instance.py), the papers'
instances and a random linear one, generated (generators.py)."""
