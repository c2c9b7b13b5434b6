"""The bandit engine: instances, the ask/tell policies, estimators, selection rules, runner."""

from screenbai.bandits.core.persistence import load_policy, save_policy
from screenbai.bandits.core.policy import Policy, Result
from screenbai.bandits.core.registry import available, make_policy, policy_for_instance, register
from screenbai.bandits.core.runner import replicate, run, summarize
from screenbai.bandits.sim.instance import Environment, Instance

__all__ = [
    "Environment",
    "Instance",
    "Policy",
    "Result",
    "available",
    "load_policy",
    "make_policy",
    "policy_for_instance",
    "register",
    "replicate",
    "run",
    "save_policy",
    "summarize",
]
