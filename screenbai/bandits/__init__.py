"""The bandit engine: instances, the ask/tell policies, estimators, selection rules, runner."""

from .instance import Environment, Instance
from .policy import Policy, Result, load_policy, save_policy
from .registry import available, make_policy, policy_for_instance, register
from .runner import replicate, run, summarize

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
