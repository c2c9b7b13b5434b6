"""The report of a curation (:class:`CurationReport`): every input row kept or dropped by reason, the rows merged
into one compound, and the counts as a table, Markdown and JSON."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd

__all__ = ["CurationReport"]


@dataclass(frozen=True)
class CurationReport:
    """What :func:`curate_activities` kept and dropped.

    Attributes
    ----------
    n_input : int
        Input rows.
    n_output_rows : int
        Measurements kept (before merging per compound).
    n_compounds : int
        Library rows (one per compound key, see :func:`screenbai.chem.standardize.compound_key`).
    dropped : dict
        Reason -> number of input rows dropped (only non-zero reasons).
    altered : dict
        Reason -> number of kept rows whose value was changed (only non-zero reasons): with
        ``censored="keep_as_value"``, ``"censored '>' taken as the value"`` and so on per relation; rows without
        ``standard_value`` whose ``pchembl_value`` gave the value, ``"value recovered from pchembl_value"``.
    merged : dict
        Reason of :data:`MERGE_REASONS` -> number of kept rows merged into another row's compound
        (only non-zero reasons); ``n_output_rows - sum(merged) == n_compounds``.
    merged_largest_fold : dict
        Reason -> the largest ratio of highest to lowest measurement a merge of that reason combined:
        over a compound's ids for ``another id``, over one id's rows for ``replicate``.
    n_wide_merges, wide_merges : int, list of (compound_id, fold)
        Compounds whose merged measurements span more than WIDE_MERGE_FOLD (highest over lowest), and the
        WIDE_MERGES_NAMED widest of them, widest first: their median stands for values that disagree.
    mixed_type_compounds : int
        Compounds whose value is a median over several activity types (``combine_types="median"``).
    structures_dropped : list of (id, reason, smiles)
        Rows dropped for their structure (too large, unparseable, text after the SMILES, metal-containing,
        inorganic, a mixture, only solvents and counter-ions, standardization failed); SMILES longer than 200 characters
        are shortened.
    settings : dict
        The curation options used.
    """

    n_input: int
    n_output_rows: int
    n_compounds: int
    dropped: dict[str, int]
    structures_dropped: list[tuple[str, str, str]] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    altered: dict[str, int] = field(default_factory=dict)
    merged: dict[str, int] = field(default_factory=dict)
    merged_largest_fold: dict[str, float] = field(default_factory=dict)
    n_wide_merges: int = 0
    wide_merges: list[tuple[str, float]] = field(default_factory=list)
    mixed_type_compounds: int = 0

    @property
    def unparseable(self) -> list[tuple[str, str]]:
        """(id, smiles) of the rows whose SMILES RDKit could not parse or standardize."""
        failed = ("unparseable SMILES", "text after the SMILES", "standardization failed")
        return [(cid, smi) for cid, reason, smi in self.structures_dropped if reason in failed]

    @property
    def n_dropped(self) -> int:
        return int(sum(self.dropped.values()))

    def to_frame(self) -> pd.DataFrame:
        """The counts: ``reason``, ``count``, ``step``, ``largest_fold`` (the file counts.csv).

        ``step`` ``"row"``: each input row once, kept as ``"kept"`` (those whose value was changed
        under their own reason, ``"kept, censored '>' taken as the value"``) or dropped by reason;
        ``"merge"``: kept rows merged into another row's compound, by reason, with the largest fold
        between the measurements merged; ``"library"``: the ``"compounds in library"``.
        """
        n_altered = sum(self.altered.values())
        rows: list[tuple[str, int, str, float]] = [("kept", self.n_output_rows - n_altered, "row", math.nan)]
        rows += [(f"kept, {r}", n, "row", math.nan) for r, n in self.altered.items()]
        rows += [(r, n, "row", math.nan) for r, n in self.dropped.items()]
        rows += [(r, n, "merge", self.merged_largest_fold.get(r, math.nan)) for r, n in self.merged.items()]
        rows.append(("compounds in library", self.n_compounds, "library", math.nan))
        return pd.DataFrame(rows, columns=["reason", "count", "step", "largest_fold"])

    def to_markdown(self) -> str:
        """A plain-text Markdown table of the counts."""
        frame = self.to_frame()
        width = max(len("compounds in library"), *(len(r) for r in frame["reason"]))
        lines = [
            f"| {'reason':<{width}} | {'count':>7} |",
            f"|{'-' * (width + 2)}|{'-' * 8}:|",
        ]
        each_row = frame["step"] == "row"
        lines += [
            f"| {r:<{width}} | {n:>7,d} |" for r, n in frame.loc[each_row, ["reason", "count"]].itertuples(index=False)
        ]
        lines.append(f"| {'total input rows':<{width}} | {self.n_input:>7,d} |")
        lines += [
            f"| {r:<{width}} | {n:>7,d} |" for r, n in frame.loc[~each_row, ["reason", "count"]].itertuples(index=False)
        ]
        return "\n".join(lines)

    def to_json(self, **kwargs: Any) -> str:
        """JSON text of all fields."""
        data = asdict(self)
        data["structures_dropped"] = [list(x) for x in self.structures_dropped]
        return json.dumps(data, indent=kwargs.pop("indent", 2), **kwargs)
