"""Real screening campaigns: a library, plates, lab results, status, report and backtest, in one file.

The layout: campaign.py (the :class:`Campaign` object), library.py (structures -> arms), lab/ (plate
files, layouts, readouts, results files), state/ (the SQLite file, its log, the policy rebuilt from
it, changes of the compound set), views/ (status, why these wells, the HTML page, export),
backtest.py, and cli.py + labcli.py (``screenbai campaign``).

See the README section "Run a real screen" and ``screenbai campaign --help``.
"""

from .campaign import Campaign, Plate, RecordSummary
from .lab.assay import Readout
from .lab.layout import PlateLayout
from .lab.results import ResultsError
from .library import Library, import_library
from .state.replay import ReplayMismatch
from .state.store import CampaignDamaged, CampaignError, CampaignFileError

__all__ = [
    "Campaign",
    "CampaignDamaged",
    "CampaignError",
    "CampaignFileError",
    "Library",
    "Plate",
    "PlateLayout",
    "Readout",
    "RecordSummary",
    "ReplayMismatch",
    "ResultsError",
    "import_library",
]
