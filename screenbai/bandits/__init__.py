"""The bandit engine: instances, the ask/tell policies, estimators, selection rules, runner."""

from .instance import Environment, Instance
from .policy import Policy, Result
from .registry import available, make_policy, policy_for_instance, register
from .runner import replicate, run, summarize

__all__ = [
    "Environment",
    "Instance",
    "Policy",
    "Result",
    "available",
    "make_policy",
    "policy_for_instance",
    "register",
    "replicate",
    "run",
    "summarize",
]
