"""The live ChEMBL web service (chembl-webresource-client): a target's activities downloaded within a
total deadline, cached as ``.csv.gz`` and read from there on later calls (offline too).

Errors say how to point the data source at a local file instead (:mod:`screenbai.chem.tables`).
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from screenbai.chem.tables import STANDARD_COLUMNS, read_text_table, to_standard_columns

logger = logging.getLogger("screenbai.chem")

_TARGET_RE = re.compile(r"^CHEMBL\d+$")
_LOCAL_FILE_HINT = (
    "Point the data source at a local file instead: in the workflow config use "
    "`kind: export` with `path: <file>` for a CSV downloaded from the ChEMBL web interface "
    "(target page > Activity > export CSV), or `kind: table` with `path`, `smiles_column` "
    "and `activity_column` for your own CSV/TSV/SDF table."
)


class ChemblUnavailableError(RuntimeError):
    """The ChEMBL web service could not be reached or answered with an error."""


_API_FIELDS = STANDARD_COLUMNS + ("activity_id", "pchembl_value", "assay_variant_mutation")


def _validate_target(target_chembl_id: str) -> str:
    if not isinstance(target_chembl_id, str) or not _TARGET_RE.match(target_chembl_id.strip().upper()):
        raise ValueError(
            f"invalid ChEMBL target id {target_chembl_id!r}: expected 'CHEMBL' followed by digits, "
            "e.g. 'CHEMBL301' (CDK2) or 'CHEMBL2094128' (CDK2/cyclin A)"
        )
    return target_chembl_id.strip().upper()


def _cache_path(cache_dir: str | Path, target: str, types: Sequence[str]) -> Path:
    tag = "-".join(re.sub(r"[^0-9A-Za-z]+", "_", t).strip("_") for t in types) or "all"
    return Path(cache_dir) / f"chembl_{target}_{tag}.csv.gz"


@contextlib.contextmanager
def _client_settings(**values: Any) -> Iterator[Any]:
    """Temporarily set attributes of the client's Settings singleton; restore on exit."""
    from chembl_webresource_client.settings import Settings  # no network on import

    settings = Settings.Instance()
    saved = {k: (k in vars(settings), getattr(settings, k)) for k in values}
    try:
        for k, v in values.items():
            setattr(settings, k, v)
        yield settings
    finally:
        for k, (was_instance_attr, old) in saved.items():
            if was_instance_attr:
                setattr(settings, k, old)
            else:
                with contextlib.suppress(AttributeError):
                    delattr(settings, k)


def _activity_query(target: str, types: Sequence[str]) -> Any:
    """The client's lazy query for a target's activities, configured by the current Settings.

    Built from the client's QuerySet for the ``activity`` resource (collection ``activities``)
    rather than ``new_client``, whose import downloads the API schema with no timeout.
    """
    from chembl_webresource_client.query_set import (  # no network on import
        Model,
        QuerySet,
    )

    query = QuerySet(model=Model("activity", "activities", ("json",))).filter(target_chembl_id=target)
    if len(types) == 1:
        query = query.filter(standard_type=types[0])
    elif types:
        query = query.filter(standard_type__in=",".join(types))
    return query.only(*_API_FIELDS)


class _DeadlineExceeded(Exception):
    pass


def _records_within(query: Any, deadline: float) -> list[dict[str, Any]]:
    """All records of ``query``, or :class:`_DeadlineExceeded` after ``deadline`` seconds in total.

    The per-read timeout does not bound a server that trickles bytes; so the pages are read
    in a worker thread, and at the deadline the responses being read are shut down (urllib3's
    ``HTTPResponse.shutdown``), which ends the worker's blocking read.
    """
    reading: list[Any] = []
    query.query.session.hooks["response"].append(lambda response, *args, **kwargs: reading.append(response.raw))
    outcome: dict[str, Any] = {}

    def download() -> None:
        try:
            outcome["records"] = [dict(r) for r in query]
        except Exception as exc:  # noqa: BLE001 (handed to the calling thread, which raises it)
            outcome["error"] = exc

    worker = threading.Thread(target=download, name="chembl-download", daemon=True)
    worker.start()
    worker.join(deadline)
    if worker.is_alive():
        for raw in reading:
            with contextlib.suppress(Exception):
                raw.shutdown()
        worker.join(1.0)
        raise _DeadlineExceeded
    if "error" in outcome:
        raise outcome["error"]
    return outcome["records"]


def _download_activities(
    target: str, types: Sequence[str], *, timeout: float, deadline: float, page_size: int, retries: int
) -> list[dict[str, Any]]:
    import requests
    from chembl_webresource_client.settings import Settings

    url = Settings.Instance().NEW_CLIENT_URL
    start = time.perf_counter()
    try:
        with _client_settings(
            NEW_CLIENT_TIMEOUT=timeout,
            TOTAL_RETRIES=retries,
            BACKOFF_FACTOR=0.5,
            MAX_LIMIT=page_size,
            CACHING=False,
        ):
            records = _records_within(_activity_query(target, types), deadline)
    except _DeadlineExceeded:
        raise ChemblUnavailableError(
            f"The ChEMBL web service at {url} did not deliver the activities of {target} within the "
            f"total deadline of {deadline:g} s (it answers, but too slowly; raise `deadline` to wait "
            f"longer). {_LOCAL_FILE_HINT}"
        ) from None
    except (requests.exceptions.ConnectionError, requests.exceptions.Timeout) as exc:
        raise ChemblUnavailableError(
            f"The ChEMBL web service at {url} could not be reached within {timeout:g} s "
            f"({type(exc).__name__}: {exc}). {_LOCAL_FILE_HINT}"
        ) from exc
    except Exception as exc:  # HTTP errors, retries exhausted, malformed answers
        status = getattr(getattr(exc, "response", None), "status_code", None)
        raise ChemblUnavailableError(
            f"The ChEMBL web service at {url} answered with an error"
            + (f" (HTTP {status})" if status else "")
            + f": {type(exc).__name__}: {str(exc)[:300]}. Try again later, or: {_LOCAL_FILE_HINT}"
        ) from exc
    logger.info(
        "downloaded %d activities for %s %s from %s in %.1f s",
        len(records), target, list(types), url, time.perf_counter() - start,
    )
    if not records:
        kinds = ", ".join(types) + " " if types else ""
        raise ValueError(
            f"ChEMBL has no {kinds}activities for target {target} (the service at {url} answered with "
            f"0 records; nothing was cached): check the target id at "
            f"https://www.ebi.ac.uk/chembl/target_report_card/{target}/ and the activity types"
        )
    return records


def fetch_chembl_activities(
    target_chembl_id: str,
    *,
    activity_types: Sequence[str] = ("IC50",),
    cache_dir: str | Path = "data/cache",
    timeout: float = 30,
    deadline: float = 600,
    page_size: int = 1000,
    refresh: bool = False,
    retries: int = 2,
) -> pd.DataFrame:
    """Download the activities of a ChEMBL target through chembl-webresource-client.

    The result is cached as ``<cache_dir>/chembl_<target>_<types>.csv.gz`` and returned from
    there on later calls (offline too) unless ``refresh`` is true.

    Parameters
    ----------
    target_chembl_id : str
        Target id such as ``"CHEMBL301"``.
    activity_types : sequence of str
        ChEMBL ``standard_type`` values to download (empty = all types).
    cache_dir : str or Path
        Cache directory (created if needed).
    timeout : float
        Seconds allowed for each HTTP connect and each read.
    deadline : float
        Seconds allowed for the whole download, retries included (a server that trickles
        bytes never trips the per-read ``timeout``).
    page_size : int
        Records per page (the server allows at most 1000).
    refresh : bool
        Ignore an existing cache file and download again.
    retries : int
        Retries per request on connection errors and HTTP 400-420/500-504.

    Returns
    -------
    pandas.DataFrame
        :data:`STANDARD_COLUMNS` first, then ``activity_id``, ``pchembl_value``, ...

    Raises
    ------
    ValueError
        Malformed target id, page size or deadline; or no activities for the target (an
        unknown target id): nothing is cached then.
    ChemblUnavailableError
        Service unreachable, too slow, past the deadline, or answering with errors, and no
        cache file; the message explains how to use a local export instead.
    """
    target = _validate_target(target_chembl_id)
    if isinstance(activity_types, str):
        activity_types = (activity_types,)
    types = tuple(activity_types)
    if not 1 <= int(page_size) <= 1000:
        raise ValueError(f"page_size={page_size} out of range: the ChEMBL API serves 1 to 1000 records per page")
    if not deadline > 0:
        raise ValueError(f"deadline={deadline!r}: give the seconds allowed for the whole download (> 0)")
    cache = _cache_path(cache_dir, target, types)
    if cache.is_file() and not refresh:
        logger.info("reading cached ChEMBL activities from %s", cache)
        try:
            return to_standard_columns(read_text_table(cache, sep=","))
        except ValueError as exc:  # truncated or emptied (copied, disk full): the download it holds is lost
            raise ValueError(
                f"{exc}. This is the cache of a download of ChEMBL target {target}: delete the file, or set "
                "refresh: true in the source, to download it again"
            ) from None
    records = _download_activities(
        target, types, timeout=timeout, deadline=deadline, page_size=int(page_size), retries=retries
    )
    df = pd.DataFrame.from_records(records)
    # the API serves numbers as text ("50.0"); keep text everywhere for a loss-free cache
    for col in df.columns:
        df[col] = df[col].map(lambda v: v if v is None or isinstance(v, str) else str(v))
    out = to_standard_columns(df)
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_name(cache.name + ".tmp")
    out.to_csv(tmp, index=False, compression="gzip", na_rep="")
    tmp.replace(cache)
    logger.info("cached %d rows at %s", len(out), cache)
    return out
