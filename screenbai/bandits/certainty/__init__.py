"""The cost of certainty: the instance's lower bound and optimal allocation, the forecast of a run's
length (../shared/spec/LOWER_BOUND.md; docs/lower_bound.md)."""

from .complexity import Complexity, allocation_time, characteristic_time, lower_bound
from .forecast import Forecast, cost_table, forecast, stopping_time

__all__ = [
    "Complexity",
    "Forecast",
    "allocation_time",
    "characteristic_time",
    "cost_table",
    "forecast",
    "lower_bound",
    "stopping_time",
]
