"""Real screening campaigns: a library, plates, lab results, status, report and backtest, in one file.

See the README section "Run a real screen" and ``screenbai campaign --help``.
"""

from .campaign import Campaign, CampaignError, Plate, RecordSummary, ReplayMismatch
from .library import Library, import_library
from .results import ResultsError

__all__ = [
    "Campaign",
    "CampaignError",
    "Library",
    "Plate",
    "RecordSummary",
    "ReplayMismatch",
    "ResultsError",
    "import_library",
]
