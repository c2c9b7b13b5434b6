"""A sampling rule with another stopping rule: ``with_stopping(policy_class, rule)``.

A policy class whose sampling works with any valid stopping rule of its model says so
(``foreign_stopping_rules = True``; today lin-tas, tracking/linear.py) and takes its rule from
``_stopping_rule(p)`` in ``_setup``. ``with_stopping`` makes the subclass whose ``_stopping_rule``
is ``rule(policy, p)``: the same parameters, sampling and recommendation, stopped (and certified)
by the rule given. For example, lin-tas's blocks stopped by the Abbasi-Yadkori ridge set of LinGapE
(linear/confidence.py):

    LinTasAY = with_stopping(
        LinearTrackAndStop,
        lambda pol, p: RidgeRule("abbasi-yadkori", epsilon=p.epsilon, delta=p.delta, sigma=p.sigma, S=2.0,
                                 norm_bound=1.0, lambda_reg=1.0, d=pol.d_eff, K=pol.K, m=pol.m),
        name="LinTasAY",
    )
    policy = LinTasAY(features, delta=0.05, sigma=1.0)

The class is created in the caller's module under ``name``; assign it to that name at module level
so that its policies pickle (pickle finds a class by module and name). Valid when the rule's set
holds at all times at once under the sampling rule's adaptivity (the ridge sets of confidence.py do;
the block evidence needs blocks of fixed design, which lin-tas's sampling makes).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from screenbai.bandits.core.parts import StoppingRule


def with_stopping(policy_class: type, rule: Callable[[Any, Any], StoppingRule], name: str,
                  module: str | None = None) -> type:
    """The subclass of ``policy_class`` stopped by ``rule(policy, p)`` (``p``: the policy's validated
    parameters), named ``name`` in ``module`` (default: the caller's). Raises TypeError when the class's
    sampling does not take a stopping rule from outside (``foreign_stopping_rules``)."""
    if not getattr(policy_class, "foreign_stopping_rules", False):
        raise TypeError(
            f"{policy_class.__name__}'s sampling computes its own stopping statistic; with_stopping needs a "
            "policy class with foreign_stopping_rules = True (e.g. LinearTrackAndStop)"
        )
    if not name.isidentifier():
        raise ValueError(f"name must be a Python identifier (the class's name); got {name!r}")
    if module is None:
        module = sys._getframe(1).f_globals.get("__name__", "__main__")

    def _stopping_rule(self, p) -> StoppingRule:
        built = rule(self, p)
        if not isinstance(built, StoppingRule):
            raise TypeError(f"the rule given to with_stopping built a {type(built).__name__}, not a StoppingRule")
        return built

    _stopping_rule.__doc__ = f"The stopping rule given to with_stopping ({name})."
    label = f"{getattr(policy_class, 'name', 'policy')}+{name}"  # the name runs and messages show
    return type(name, (policy_class,), {"_stopping_rule": _stopping_rule, "__module__": module,
                                        "__qualname__": name, "name": label})
