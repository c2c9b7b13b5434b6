"""The campaign file: one SQLite database (WAL mode), every change one transaction.

Tables
------
meta       key -> JSON value: algorithm, parameters, seed, outcome kind, featurizer settings,
           library provenance, schema version.
compounds  arm (0..K-1), compound id, standardized SMILES, the input SMILES and source row.
arrays     named numpy arrays (the feature matrix, the PCA loadings) as raw bytes.
rejected   every input structure that was not used, with its reason.
plates     plate id, the log step that created it, the plate size asked for.
wells      plate id, well name, position on the plate, arm.
records    one row per results file recorded (file name, SHA-256, log step).
outcomes   one row per recorded well: value (NULL when the well failed).
events     the timestamped log; ``plate`` and ``record`` events are what replay follows.
snapshot   an optional cache of the policy state after a log step (replay gives the same).
history    the leader after every record (derived, written in the record's transaction).

The policy is never stored as such: it is rebuilt by replaying the ``plate`` and ``record``
events in step order (see :mod:`screenbai.campaign.campaign`).
"""

from __future__ import annotations

import json
import sqlite3
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE compounds (
    arm INTEGER PRIMARY KEY, compound_id TEXT NOT NULL UNIQUE, smiles TEXT NOT NULL,
    input_smiles TEXT, source_row INTEGER);
CREATE TABLE arrays (name TEXT PRIMARY KEY, dtype TEXT NOT NULL, shape TEXT NOT NULL, data BLOB NOT NULL);
CREATE TABLE rejected (source_row INTEGER, compound_id TEXT, smiles TEXT, reason TEXT NOT NULL, detail TEXT);
CREATE TABLE events (step INTEGER PRIMARY KEY AUTOINCREMENT, at TEXT NOT NULL, kind TEXT NOT NULL,
    detail TEXT NOT NULL);
CREATE TABLE plates (plate_id TEXT PRIMARY KEY, step INTEGER NOT NULL UNIQUE REFERENCES events(step),
    requested INTEGER NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE wells (plate_id TEXT NOT NULL REFERENCES plates(plate_id), well TEXT NOT NULL,
    position INTEGER NOT NULL, arm INTEGER NOT NULL REFERENCES compounds(arm),
    PRIMARY KEY (plate_id, well));
CREATE TABLE records (record_id INTEGER PRIMARY KEY, step INTEGER NOT NULL UNIQUE REFERENCES events(step),
    file TEXT NOT NULL, sha256 TEXT NOT NULL, recorded_at TEXT NOT NULL);
CREATE TABLE outcomes (id INTEGER PRIMARY KEY, record_id INTEGER NOT NULL REFERENCES records(record_id),
    plate_id TEXT NOT NULL, well TEXT NOT NULL, arm INTEGER NOT NULL, value REAL,
    UNIQUE (plate_id, well), FOREIGN KEY (plate_id, well) REFERENCES wells(plate_id, well));
CREATE TABLE snapshot (id INTEGER PRIMARY KEY CHECK (id = 1), step INTEGER NOT NULL, state TEXT NOT NULL);
CREATE TABLE history (step INTEGER PRIMARY KEY, n_tests INTEGER NOT NULL, leader TEXT NOT NULL,
    done INTEGER NOT NULL);
"""


class CampaignFileError(RuntimeError):
    """The campaign file is missing, not a campaign, or of another schema version."""


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + f".{int(time.time() * 1e6) % 10**6:06d}Z"


def connect(path: str | Path, *, create: bool = False, durable: bool = True) -> sqlite3.Connection:
    """Open (or create) a campaign file.  ``durable=False`` skips the fsync of each commit: still safe
    against a killed process (WAL), not against a power cut; for backtests, which write thousands of steps."""
    path = Path(path)
    if create:
        if path.exists():
            raise CampaignFileError(f"{path} already exists; choose another campaign file or delete it first")
    elif not path.is_file():
        raise CampaignFileError(f"campaign file {path} does not exist; create it with `screenbai campaign init`")
    else:
        # checked before SQLite opens it: SQLite would turn an empty file into a database
        with open(path, "rb") as fh:
            if fh.read(16) != b"SQLite format 3\x00":
                raise CampaignFileError(
                    f"{path} is not a screenbai campaign file (not an SQLite database); give the file made by "
                    "`screenbai campaign init`"
                )
    con = sqlite3.connect(str(path), isolation_level=None, timeout=30.0)
    con.execute("PRAGMA journal_mode=WAL")
    # FULL: a committed step survives a power cut, not only kill -9
    con.execute("PRAGMA synchronous=FULL" if durable else "PRAGMA synchronous=OFF")
    con.execute("PRAGMA foreign_keys=ON")
    if not create:
        try:
            row = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        except sqlite3.DatabaseError as exc:
            con.close()
            raise CampaignFileError(f"{path} is not a screenbai campaign file ({exc})") from None
        if row is None or json.loads(row[0]) != SCHEMA_VERSION:
            con.close()
            raise CampaignFileError(
                f"{path} has campaign schema {row and row[0]}, this screenbai reads schema {SCHEMA_VERSION}"
            )
    return con


def create_schema(con: sqlite3.Connection) -> None:
    with transaction(con):
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                con.execute(statement)
        put_meta(con, "schema_version", SCHEMA_VERSION)


@contextmanager
def transaction(con: sqlite3.Connection):
    """One write transaction: everything inside commits together or not at all."""
    con.execute("BEGIN IMMEDIATE")
    try:
        yield con
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


# ---------------------------------------------------------------------------------- meta, arrays
def put_meta(con, key: str, value) -> None:
    con.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, json.dumps(value)))


def get_meta(con) -> dict:
    return {k: json.loads(v) for k, v in con.execute("SELECT key, value FROM meta")}


def put_array(con, name: str, array: np.ndarray) -> None:
    a = np.ascontiguousarray(array)
    con.execute(
        "INSERT OR REPLACE INTO arrays (name, dtype, shape, data) VALUES (?, ?, ?, ?)",
        (name, a.dtype.str, json.dumps(list(a.shape)), a.tobytes()),
    )


def get_array(con, name: str) -> np.ndarray:
    row = con.execute("SELECT dtype, shape, data FROM arrays WHERE name = ?", (name,)).fetchone()
    if row is None:
        raise CampaignFileError(f"the campaign file has no array {name!r}")
    return np.frombuffer(row[2], dtype=np.dtype(row[0])).reshape(json.loads(row[1])).copy()


def add_event(con, kind: str, detail: dict) -> int:
    cur = con.execute("INSERT INTO events (at, kind, detail) VALUES (?, ?, ?)", (now(), kind, json.dumps(detail)))
    return int(cur.lastrowid)


# ---------------------------------------------------------------------------------- state codec
def encode_state(obj) -> str:
    """JSON text of a policy ``state_dict`` (numpy arrays as dtype, shape and hex bytes; no pickle;
    NaN and infinities as JSON's NaN / Infinity, which ``json`` reads back)."""

    def enc(o):
        if isinstance(o, np.ndarray):
            a = np.ascontiguousarray(o)
            if a.dtype == object:
                return {"__list__": [enc(x) for x in a.tolist()]}
            return {"__ndarray__": a.dtype.str, "shape": list(a.shape), "hex": a.tobytes().hex()}
        if isinstance(o, dict):
            return {"__dict__": [[enc(k), enc(v)] for k, v in o.items()]}
        if isinstance(o, (list, tuple)):
            return [enc(x) for x in o]
        if isinstance(o, np.generic):
            return o.item()
        return o

    return json.dumps(enc(obj))


def decode_state(text: str):
    def dec(o):
        if isinstance(o, dict):
            if "__ndarray__" in o:
                return (
                    np.frombuffer(bytes.fromhex(o["hex"]), dtype=np.dtype(o["__ndarray__"])).reshape(o["shape"]).copy()
                )
            if "__dict__" in o:
                return {dec(k): dec(v) for k, v in o["__dict__"]}
            if "__list__" in o:
                return [dec(x) for x in o["__list__"]]
        if isinstance(o, list):
            return [dec(x) for x in o]
        return o

    return dec(json.loads(text))
