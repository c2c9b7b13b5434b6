"""Acquire bioactivity tables: the ChEMBL web service, ChEMBL web exports, chemists' tables.

:func:`load_activities` reads the source a workflow config describes with the reader of its kind:
:func:`~screenbai.chem.chembl_web.fetch_chembl_activities` (the live web service, cached),
:func:`~screenbai.chem.tables.read_chembl_export` or :func:`~screenbai.chem.tables.read_activity_table`.
Every reader returns one :class:`pandas.DataFrame` whose first columns are :data:`STANDARD_COLUMNS`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from screenbai.chem.chembl_web import ChemblUnavailableError, fetch_chembl_activities
from screenbai.chem.tables import (
    STANDARD_COLUMNS,
    is_chembl_export,
    read_activity_table,
    read_chembl_export,
    read_structure_table,
)

__all__ = [
    "STANDARD_COLUMNS",
    "ChemblUnavailableError",
    "fetch_chembl_activities",
    "read_chembl_export",
    "read_activity_table",
    "read_structure_table",
    "is_chembl_export",
    "load_activities",
]


_KIND_ALIASES = {"chembl": "chembl", "api": "chembl", "export": "export", "chembl_export": "export",
                 "table": "table", "csv": "table", "tsv": "table", "sdf": "table"}


def load_activities(
    source_config: Mapping[str, Any], cache_dir: str | Path = "data/cache", config_key: str = ""
) -> pd.DataFrame:
    """Load raw activities as described by a config mapping (what the workflow calls).

    Parameters
    ----------
    source_config : mapping
        ``kind`` (alias ``source``) selects the reader:

        - ``"chembl"``: ``target_chembl_id`` (required), ``activity_types`` (default
          ``["IC50"]``), ``timeout`` (30), ``deadline`` (600), ``page_size`` (1000), ``refresh`` (false),
          ``retries`` (2) -> :func:`fetch_chembl_activities`.
        - ``"export"``: ``path`` -> :func:`read_chembl_export`.
        - ``"table"`` (aliases ``csv``, ``tsv``, ``sdf``): ``path``, ``smiles_column``,
          ``activity_column``, optional ``id_column``, ``units``, ``activity_type``
          ("IC50"), ``relation_column`` -> :func:`read_activity_table`.
    cache_dir : str or Path
        Cache directory for ``kind: chembl``.
    config_key : str
        Where ``source_config`` sits in the workflow config (``"source"``, ``"offline_fallback"``):
        a table's messages name its keys (``source.units``).

    Returns
    -------
    pandas.DataFrame
        Raw activities with :data:`STANDARD_COLUMNS`.
    """
    cfg = dict(source_config)
    kind_raw = cfg.pop("kind", None) or cfg.pop("source", None)
    kind = _KIND_ALIASES.get(str(kind_raw).lower()) if kind_raw is not None else None
    if kind is None:
        raise ValueError(
            f"source config needs 'kind' in ['chembl', 'export', 'table'], got {kind_raw!r} "
            f"(config: {dict(source_config)})"
        )

    def need(key: str) -> Any:
        if key not in cfg or cfg[key] in (None, ""):
            raise ValueError(f"source config of kind {kind!r} needs key {key!r}; got keys {sorted(cfg)}")
        return cfg.pop(key)

    def reject_unknown() -> None:
        if cfg:
            raise ValueError(f"unknown keys for source kind {kind!r}: {sorted(cfg)}")

    if kind == "chembl":
        target = need("target_chembl_id")
        kwargs = {
            k: cfg.pop(k)
            for k in ("activity_types", "timeout", "deadline", "page_size", "refresh", "retries")
            if k in cfg
        }
        reject_unknown()
        return fetch_chembl_activities(target, cache_dir=cache_dir, **kwargs)
    if kind == "export":
        path = need("path")
        reject_unknown()
        return read_chembl_export(path)
    path = need("path")
    activity_column = need("activity_column")
    smiles_column = cfg.pop("smiles_column", None)
    table_kwargs = {k: cfg.pop(k) for k in ("id_column", "units", "activity_type", "relation_column") if k in cfg}
    cfg.pop("pchembl_of", None)  # names the activity behind pChEMBL values in labels (screening.pchembl_of)
    reject_unknown()
    return read_activity_table(
        path, smiles_column=smiles_column, activity_column=activity_column, config_key=config_key, **table_kwargs
    )
