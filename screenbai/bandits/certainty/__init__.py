"""What the data certify and what certainty costs: the anytime certificate of an answer and a check
of the model it rests on; the instance's lower bound and optimal allocation, the forecast of a run's
length (../shared/spec/LOWER_BOUND.md; docs/lower_bound.md)."""

from screenbai.bandits.certainty.certificate import Certificate, certainty_summary, certificate_json, certify
from screenbai.bandits.certainty.complexity import Complexity, allocation_time, characteristic_time, lower_bound
from screenbai.bandits.certainty.forecast import Forecast, cost_table, forecast, stopping_time

# model_check (scipy.stats) is imported where used: ``from screenbai.bandits.certainty.model_check import ...``
__all__ = [
    "Certificate",
    "Complexity",
    "Forecast",
    "allocation_time",
    "certainty_summary",
    "certificate_json",
    "certify",
    "characteristic_time",
    "cost_table",
    "forecast",
    "lower_bound",
    "stopping_time",
]
