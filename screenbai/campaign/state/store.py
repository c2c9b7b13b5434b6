"""The campaign file: one SQLite database (WAL mode), every change one transaction.

Tables
------
meta       key -> JSON value: algorithm, parameters, seed, outcome kind, featurizer settings,
           library provenance, schema version.
compounds  arm (0..K-1), compound id, standardized SMILES, the input SMILES and source row.
arrays     named numpy arrays (the feature matrix, the PCA loadings) as raw bytes, with the SHA-256
           of their dtype, shape and bytes (checked on open: junk written into a page passes SQLite's
           own integrity check).
rejected   every input structure that was not used, with its reason.
plates     plate id, the log step that created it, the plate size asked for.
wells      plate id, well name, position on the plate, arm.
records    one row per results file recorded (file name, SHA-256, log step).
outcomes   one row per recorded well: value (NULL when the well failed).
events     the timestamped log; ``plate`` and ``record`` events are what replay follows.
snapshot   caches of the policy state (replay gives the same), each with its SHA-256: ``latest``
           after the last step, ``plate`` right after the last plate was proposed (each ``record``
           starts again from it, so that the order in which results files arrive does not matter);
           meta's ``snapshot_code`` names the code that wrote them (``code_fingerprint``).
history    after every record: tests, leader, finished, compounds still in contention and the certified
           epsilon (derived, written in the record's transaction; the last two are NULL in rows of files
           made before they were kept, see ``ensure_progress_columns``).

The policy is never stored as such: it is rebuilt by replaying the ``plate`` and ``record``
events in step order (see :mod:`screenbai.campaign.state.replay`).

Errors of the file itself (missing, not a campaign, damaged, read-only, disk full) raise
a :class:`CampaignFileError` whose message names the file, the cause and what to do; an action the
campaign's state does not allow raises a :class:`CampaignError`.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import json
import operator
import os
import sqlite3
import time
from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import numpy as np

SCHEMA_VERSION = 2  # 2: checksums of the arrays and snapshots, the 'plate' snapshot

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE compounds (
    arm INTEGER PRIMARY KEY, compound_id TEXT NOT NULL UNIQUE, smiles TEXT NOT NULL,
    input_smiles TEXT, source_row INTEGER);
CREATE TABLE arrays (name TEXT PRIMARY KEY, dtype TEXT NOT NULL, shape TEXT NOT NULL, data BLOB NOT NULL,
    sha256 TEXT NOT NULL);
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
CREATE INDEX outcomes_of_record ON outcomes (record_id);
CREATE TABLE snapshots (name TEXT PRIMARY KEY CHECK (name IN ('latest', 'plate')), step INTEGER NOT NULL,
    state TEXT NOT NULL, sha256 TEXT NOT NULL);
CREATE TABLE history (step INTEGER PRIMARY KEY, n_tests INTEGER NOT NULL, leader TEXT NOT NULL,
    done INTEGER NOT NULL, in_contention INTEGER, certified_epsilon REAL);
"""

#: columns of ``history`` added after schema 2 was fixed (nullable: files made before have no values)
PROGRESS_COLUMNS = ("in_contention INTEGER", "certified_epsilon REAL")


class CampaignError(RuntimeError):
    """An action that the campaign's state does not allow (nothing to propose, finished, ...)."""


class CampaignFileError(RuntimeError):
    """The campaign file is missing, not a campaign, of another schema version, damaged, read-only
    or on a full disk; the message names the file, the cause and what to do."""


class CampaignDamaged(CampaignFileError):
    """A stored part of the campaign does not match its checksum (``parts`` names them)."""

    def __init__(self, message: str, parts: list[str]):
        super().__init__(message)
        self.parts = list(parts)


MAGIC = b"SQLite format 3\x00"


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + f".{int(time.time() * 1e6) % 10**6:06d}Z"


def writable(path: Path) -> bool:
    """Whether this process may change the campaign file: the file and its folder (SQLite writes its
    journal beside the file) are writable."""
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)


def file_error(exc: BaseException, path: str | Path, doing: str = "") -> CampaignFileError:
    """An SQLite or OS error on the campaign file as a CampaignFileError naming the file, the cause
    and the remedy (read-only, disk full, damaged pages, locked)."""
    path = Path(path)
    text = str(exc)
    low = text.lower()
    what = f" while {doing}" if doing else ""
    if isinstance(exc, CampaignFileError):
        return exc
    if "readonly" in low or "read-only" in low or getattr(exc, "errno", None) in (errno.EROFS, errno.EACCES):
        return readonly_error(path, doing, text)
    if "disk is full" in low or "disk full" in low or getattr(exc, "errno", None) == errno.ENOSPC:
        return CampaignFileError(
            f"{path}: the disk is full ({text}{what}); the step was rolled back and nothing was changed. Free "
            f"space on the disk holding {path.parent} (`df -h {path.parent}`), then run the command again"
        )
    if "malformed" in low or "not a database" in low or "corrupt" in low:
        return CampaignFileError(
            f"{path}: the campaign file is damaged (SQLite{what}: {text}); its pages cannot be read. Restore it "
            "from a backup copy; `sqlite3 FILE .recover` may save what is readable, and `screenbai campaign repair` "
            "then rebuilds the policy from the log"
        )
    if "locked" in low or "busy" in low:
        return CampaignFileError(
            f"{path}: the campaign file is locked by another process ({text}{what}); wait for the other "
            "`screenbai campaign` command (or program holding the file) to finish, then run the command again"
        )
    if "unable to open" in low:
        return CampaignFileError(
            f"{path}: SQLite cannot open the campaign file ({text}{what}); check that the file and its folder "
            f"{path.parent} exist and are readable (and writable, to change the campaign)"
        )
    return CampaignFileError(f"{path}: {type(exc).__name__}{what}: {text}")


def readonly_error(path: str | Path, doing: str = "", detail: str = "") -> CampaignFileError:
    path = Path(path)
    cause = (
        f"the campaign file or its folder {path.parent} is read-only for this user"
        if not writable(path)
        else "the campaign file could not be written"
    )
    what = f" (while {doing}{': ' + detail if detail else ''})" if doing or detail else ""
    return CampaignFileError(
        f"{path}: {cause}{what}; nothing was changed. Make both writable (e.g. `chmod u+w {path} {path.parent}`), "
        "or copy the campaign file to a writable folder and use the copy; `screenbai campaign status` works on a "
        "read-only campaign"
    )


def _uri(path: Path, **query: str) -> str:
    if os.name == "posix":  # what urllib.request.pathname2url does there, without its 18 ms import
        url = quote(str(path.resolve()))
    else:
        from urllib.request import pathname2url

        url = pathname2url(str(path.resolve()))
    return "file:" + url + "?" + "&".join(f"{k}={v}" for k, v in query.items())


def connect(
    path: str | Path, *, create: bool = False, durable: bool = True, schema: bool = True
) -> sqlite3.Connection:
    """Open (or create) a campaign file.  ``durable=False`` skips the fsync of each commit: still safe
    against a killed process (WAL), not against a power cut; for backtests, which write thousands of steps.

    A file this user cannot write (or whose folder it cannot write) is opened read-only: reading
    works (``status``, ``report``), any change raises a CampaignFileError saying why.
    ``schema=False`` accepts an older schema version (``repair`` upgrades it)."""
    path = Path(path)
    if create:
        if path.exists():
            raise CampaignFileError(f"{path} already exists; choose another campaign file or delete it first")
    elif not path.is_file():
        raise CampaignFileError(f"campaign file {path} does not exist; create it with `screenbai campaign init`")
    else:
        # checked before SQLite opens it: SQLite would turn an empty file into a database
        try:
            with open(path, "rb") as fh:
                head = fh.read(16)
        except OSError as exc:
            raise CampaignFileError(
                f"{path}: the campaign file cannot be read ({exc.strerror}); check its permissions"
            ) from None
        if head != MAGIC:
            raise CampaignFileError(
                f"{path} is not a screenbai campaign file (not an SQLite database); give the file made by "
                "`screenbai campaign init`"
            )
    readonly = not create and not writable(path)
    wal = Path(str(path) + "-wal")
    try:
        if readonly:
            # every committed step is in the file itself unless a writer left a WAL: then SQLite must
            # read it (and needs to create the shared-memory file beside it)
            uri = _uri(path, mode="ro") if wal.exists() and wal.stat().st_size else _uri(path, immutable="1")
            con = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=30.0)
            con.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        else:
            con = sqlite3.connect(str(path), isolation_level=None, timeout=30.0)
            con.execute("PRAGMA journal_mode=WAL")
            # FULL: a committed step survives a power cut, not only kill -9
            con.execute("PRAGMA synchronous=FULL" if durable else "PRAGMA synchronous=OFF")
        con.execute("PRAGMA foreign_keys=ON")
    except sqlite3.Error as exc:
        if readonly and wal.exists():
            raise CampaignFileError(
                f"{path}: the campaign is read-only for this user and its last changes are still in {wal}, which "
                f"SQLite cannot read without writing beside it ({exc}); let a user who can write the file and its "
                "folder run `screenbai campaign status` on it once (that folds the changes into the file), or copy "
                "the campaign file with its -wal file to a writable folder"
            ) from None
        raise file_error(exc, path, "opening it") from None
    if not create:
        try:
            row = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        except sqlite3.DatabaseError as exc:
            con.close()
            if "no such table" in str(exc):
                raise CampaignFileError(f"{path} is not a screenbai campaign file ({exc})") from None
            raise file_error(exc, path, "opening it") from None
        version = None if row is None else json.loads(row[0])
        if version != SCHEMA_VERSION and not (version == 1 and not schema):
            con.close()
            if version == 1:
                raise CampaignFileError(
                    f"{path} was made by an earlier screenbai (campaign schema 1, without checksums); upgrade it "
                    f"with `screenbai campaign repair {path}` (it replays the log and adds the checksums)"
                )
            raise CampaignFileError(
                f"{path} has campaign schema {version}, this screenbai reads schema {SCHEMA_VERSION}"
            )
    return con


def create_schema(con: sqlite3.Connection) -> None:
    with transaction(con):
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                con.execute(statement)
        put_meta(con, "schema_version", SCHEMA_VERSION)


def upgrade_schema(con: sqlite3.Connection) -> bool:
    """Bring a schema-1 file (no checksums, one snapshot) to the current schema, inside the caller's
    transaction; the arrays' checksums are taken of their bytes as they are.  True if it upgraded."""
    version = json.loads(con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0])
    if version == SCHEMA_VERSION:
        return False
    assert version == 1, version
    con.execute("ALTER TABLE arrays ADD COLUMN sha256 TEXT NOT NULL DEFAULT ''")
    for name, dtype, shape, data in con.execute("SELECT name, dtype, shape, data FROM arrays").fetchall():
        con.execute("UPDATE arrays SET sha256 = ? WHERE name = ?", (_digest(dtype, shape, data), name))
    con.execute("DROP TABLE snapshot")  # a cache: rebuilt from the log by the caller
    for statement in _SCHEMA.split(";"):
        if "snapshots" in statement or "outcomes_of_record" in statement:
            con.execute(statement)
    put_meta(con, "schema_version", SCHEMA_VERSION)
    return True


def ensure_progress_columns(con: sqlite3.Connection, *, readonly: bool = False) -> bool:
    """Add the ``history`` columns of the progress plot to a file made before them (its earlier rows
    hold NULL there: the report plots no point for them; ``screenbai campaign repair`` fills them in
    from the log).  A file this user cannot change is left as it is: ``progress_columns`` tells the
    reader which columns it has.  True if columns were added."""
    if readonly or all(c.split()[0] in progress_columns(con) for c in PROGRESS_COLUMNS):
        return False
    with transaction(con):  # under the write lock: another process may have added them meanwhile
        missing = [c for c in PROGRESS_COLUMNS if c.split()[0] not in progress_columns(con)]
        for column in missing:
            con.execute(f"ALTER TABLE history ADD COLUMN {column}")
    return bool(missing)


def progress_columns(con: sqlite3.Connection) -> set[str]:
    """The columns of ``history`` (a file made before the progress columns lacks them)."""
    return {row[1] for row in con.execute("PRAGMA table_info(history)")}


@contextmanager
def transaction(con: sqlite3.Connection):
    """One write transaction: everything inside commits together or not at all."""
    con.execute("BEGIN IMMEDIATE")
    try:
        yield con
    except BaseException:
        if con.in_transaction:  # SQLite itself rolls back after some errors (disk full)
            con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


# ---------------------------------------------------------------------------------- meta, arrays
def put_meta(con, key: str, value) -> None:
    con.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, json.dumps(value)))


def get_meta(con) -> dict:
    return {k: json.loads(v) for k, v in con.execute("SELECT key, value FROM meta")}


def _digest(*parts: bytes | str) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode() if isinstance(part, str) else part)
        h.update(b"\x00")
    return h.hexdigest()


def put_array(con, name: str, array: np.ndarray) -> None:
    a = np.ascontiguousarray(array)
    dtype, shape, data = a.dtype.str, json.dumps(list(a.shape)), a.tobytes()
    con.execute(
        "INSERT OR REPLACE INTO arrays (name, dtype, shape, data, sha256) VALUES (?, ?, ?, ?, ?)",
        (name, dtype, shape, data, _digest(dtype, shape, data)),
    )


def get_array(con, name: str) -> np.ndarray:
    row = con.execute("SELECT dtype, shape, data FROM arrays WHERE name = ?", (name,)).fetchone()
    if row is None:
        raise CampaignFileError(f"the campaign file has no array {name!r}")
    return np.frombuffer(row[2], dtype=np.dtype(row[0])).reshape(json.loads(row[1])).copy()


#: the code that decides a campaign's plates and stops: the algorithms, and the campaign's replay of them
_POLICY_CODE = ("bandits", "campaign/state/armset.py", "campaign/state/replay.py")


@functools.cache
def code_fingerprint(root: Path | None = None) -> str:
    """SHA-256 of the source files in ``_POLICY_CODE`` (under ``root``, the installed package by default).

    A snapshot is a cache of replaying the log with the code that wrote it.  An upgrade can change what an
    algorithm proposes without changing the fields of its state (as the own wells' start did), and such a
    snapshot would carry the campaign on silently with other plates than a replay gives; stored with the
    snapshots, this fingerprint sends the next open through the replay from the start instead, where every
    plate is proposed again and must equal the stored one.  Any edit of that code (a comment included)
    costs one replay, never a wrong state."""
    root = Path(__file__).resolve().parents[2] if root is None else Path(root)
    h = hashlib.sha256()
    for part in _POLICY_CODE:
        where = root / part
        for f in sorted(where.rglob("*.py")) if where.is_dir() else [where]:
            h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes().replace(b"\r\n", b"\n"))
    return h.hexdigest()


def put_snapshot(con, name: str, step: int, state: str) -> None:
    con.execute(
        "INSERT OR REPLACE INTO snapshots (name, step, state, sha256) VALUES (?, ?, ?, ?)",
        (name, int(step), state, _digest(state)),
    )
    put_meta(con, "snapshot_code", code_fingerprint())


def snapshots_current(con) -> bool:
    """Whether the stored snapshots were written by this code (see ``code_fingerprint``); files made before
    the fingerprint was kept have none, so their snapshots count as another code's."""
    row = con.execute("SELECT value FROM meta WHERE key = 'snapshot_code'").fetchone()
    return row is not None and json.loads(row[0]) == code_fingerprint()


def get_snapshot(con, name: str) -> tuple[int, str] | None:
    """(step, state text) of snapshot ``name`` ('latest' or 'plate'), None when there is none."""
    row = con.execute("SELECT step, state FROM snapshots WHERE name = ?", (name,)).fetchone()
    return None if row is None else (int(row[0]), row[1])


_WHAT = {
    "array features": "the feature matrix, one row per compound",
    "array pca_components": "the PCA loadings of the fingerprints",
    "array pca_mean": "the mean fingerprint the PCA centres on",
    "snapshot latest": "the policy's state after the last step",
    "snapshot plate": "the policy's state after the last plate",
}


def damaged_parts(con) -> list[str]:
    """The stored arrays and policy snapshots whose bytes do not match their SHA-256."""
    bad = []
    for name, dtype, shape, data, sha in con.execute("SELECT name, dtype, shape, data, sha256 FROM arrays"):
        if _digest(dtype, shape, data) != sha:
            bad.append(f"array {name}")
            continue
        try:
            np.frombuffer(data, dtype=np.dtype(dtype)).reshape(json.loads(shape))
        except (TypeError, ValueError):
            bad.append(f"array {name}")
    # as bytes: junk in the text may not even be UTF-8
    for name, state, sha in con.execute("SELECT name, CAST(state AS BLOB), sha256 FROM snapshots"):
        if _digest(state) != sha:
            bad.append(f"snapshot {name}")
    return bad


def check_damage(con, path: str | Path) -> None:
    """Raise CampaignDamaged naming every damaged part, and how to recover, if there is one."""
    bad = damaged_parts(con)
    if not bad:
        return
    names = "; ".join(f"{p} ({_WHAT.get(p, 'an array stored with the library')})" for p in bad)
    arrays = [p for p in bad if p.startswith("array ")]
    if arrays:
        remedy = (
            "the library's arrays cannot be rebuilt from the campaign's log: restore the campaign file from a "
            "backup copy"
        )
    else:
        remedy = (
            "the snapshots are caches, rebuilt from the event log (the plates and results recorded) with "
            f"`screenbai campaign repair {path}`"
        )
    raise CampaignDamaged(
        f"{path}: damaged: {names}: {'does' if len(bad) == 1 else 'do'} not match the SHA-256 stored with "
        f"{'it' if len(bad) == 1 else 'them'} (junk written into the file, which SQLite's own integrity check does "
        f"not see). Nothing was changed. To recover: {remedy}",
        bad,
    )


def add_event(con, kind: str, detail: dict) -> int:
    cur = con.execute("INSERT INTO events (at, kind, detail) VALUES (?, ?, ?)", (now(), kind, json.dumps(detail)))
    return int(cur.lastrowid)


# ---------------------------------------------------------------------------------- state codec
#: a numeric array of at least this many entries, at most 1/SPARSE_SHARE of them not all-zero bits, is stored as
#: its nonzero entries (positions and values): log-tas keeps planned / got / sums per open block, one K-vector
#: each, with a few hundred entries set; after a first plate of 352 wells at K = 1.58 M (59 blocks) its snapshot
#: was 4.6 GB of hex, beyond SQLite's largest string (1e9 bytes), and `next` failed
SPARSE_MIN, SPARSE_SHARE = 4096, 8


def _sparse(a: np.ndarray) -> dict | None:
    """``a`` as positions and values of its entries whose bits are not all zero (-0.0 and NaN kept exactly),
    where that is much shorter; else None."""
    if a.size < SPARSE_MIN or a.dtype.kind not in "biuf" or a.dtype.itemsize not in (1, 2, 4, 8):
        return None
    bits = a.reshape(-1).view(np.dtype(f"u{a.dtype.itemsize}"))
    at = np.flatnonzero(bits)
    if at.size * SPARSE_SHARE > a.size:
        return None
    return {"__sparse__": a.dtype.str, "shape": list(a.shape), "at": at.astype("<i8").tobytes().hex(),
            "hex": a.reshape(-1)[at].tobytes().hex()}


def encode_state(obj) -> str:
    """JSON text of a policy ``state_dict`` (numpy arrays as dtype, shape and hex bytes, a mostly-zero array as
    its nonzero entries (``_sparse``); no pickle; NaN and infinities as JSON's NaN / Infinity, which ``json``
    reads back)."""

    def enc(o):
        if isinstance(o, np.ndarray):
            a = np.ascontiguousarray(o)
            if a.dtype == object:
                return {"__list__": [enc(x) for x in a.tolist()]}
            sparse = _sparse(a)
            if sparse is not None:
                return sparse
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
            if "__sparse__" in o:
                dtype = np.dtype(o["__sparse__"])
                a = np.zeros(int(np.prod(o["shape"], dtype=np.int64)), dtype=dtype)
                a[np.frombuffer(bytes.fromhex(o["at"]), dtype="<i8")] = np.frombuffer(bytes.fromhex(o["hex"]), dtype)
                return a.reshape(o["shape"])
            if "__dict__" in o:
                return {dec(k): dec(v) for k, v in o["__dict__"]}
            if "__list__" in o:
                return [dec(x) for x in o["__list__"]]
        if isinstance(o, list):
            return [dec(x) for x in o]
        return o

    return dec(json.loads(text))


class CompoundColumn(Sequence):
    """One column of the ``compounds`` table (``compound_id`` or ``smiles``) by arm, read from the file when it is
    used: a few arms (a plate, a recommendation) one by one through the table's key, the whole column at its first
    use as a whole (iteration, slices, ``in``, ``index``) or after :data:`FEW_ARMS` single arms. At 1.58 M
    compounds, reading both columns into lists took 3-5 s of every command, most of which need a few arms.

    After the campaign is closed it reads the whole column once through a new read-only connection."""

    #: single arms read one by one before the whole column is read
    FEW_ARMS = 4096

    def __init__(self, con: sqlite3.Connection, path: Path, column: str, n: int):
        if column not in ("compound_id", "smiles"):
            raise ValueError(f"no compounds column {column!r}")
        self._con, self._path, self._column, self._n = con, Path(path), column, int(n)
        self._all: list[str] | None = None
        self._some: dict[int, str] = {}

    def __len__(self) -> int:
        return self._n

    def _read(self, arm: int | None = None):
        """The whole column (``arm`` None) or one arm's value, from the campaign's connection."""
        try:
            if arm is None:
                return [r[0] for r in self._con.execute(f"SELECT {self._column} FROM compounds ORDER BY arm")]
            return self._con.execute(f"SELECT {self._column} FROM compounds WHERE arm = ?", (arm,)).fetchone()[0]
        except sqlite3.ProgrammingError:  # the campaign was closed: the whole column once, read-only
            con = sqlite3.connect(_uri(self._path, mode="ro"), uri=True)
            try:
                self._all = [r[0] for r in con.execute(f"SELECT {self._column} FROM compounds ORDER BY arm")]
            finally:
                con.close()
            return self._all if arm is None else self._all[arm]

    def as_list(self) -> list[str]:
        """The whole column, in arm order (read once)."""
        if self._all is None:
            self._all = self._read()
        return self._all

    def __getitem__(self, i):
        if self._all is not None or isinstance(i, slice):
            return self.as_list()[i]
        k = operator.index(i)  # numpy integers too
        k = k + self._n if k < 0 else k
        if not 0 <= k < self._n:
            raise IndexError(f"arm {i} out of range: the campaign has {self._n} compounds")
        if k not in self._some:
            if len(self._some) >= self.FEW_ARMS:
                return self.as_list()[k]
            self._some[k] = self._read(k)
        return self._some[k]

    def __iter__(self):
        return iter(self.as_list())

    def of(self, arms) -> Sequence:
        """The values of ``arms`` by their position in it (the names of a policy's local arms), read when used."""
        return _Subset(self, arms)

    def __contains__(self, value) -> bool:
        return value in self.as_list()

    def index(self, value, *args) -> int:
        return self.as_list().index(value, *args)

    def __eq__(self, other) -> bool:
        return self.as_list() == (other.as_list() if isinstance(other, CompoundColumn) else other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"CompoundColumn({self._column!r}, {self._n} compounds)"


class _Subset(Sequence):
    """``column[arms[j]]`` at ``j``: a view, nothing read until used."""

    def __init__(self, column: CompoundColumn, arms):
        self._column, self._arms = column, arms

    def __len__(self) -> int:
        return len(self._arms)

    def __getitem__(self, j):
        if isinstance(j, slice):
            return [self._column[a] for a in self._arms[j]]
        return self._column[self._arms[j]]


class ArmOf(Mapping):
    """compound_id -> arm, looked up in the file through the table's unique index on compound_id."""

    def __init__(self, con: sqlite3.Connection, ids: CompoundColumn):
        self._con, self._ids = con, ids

    def __getitem__(self, cid):
        row = self._con.execute("SELECT arm FROM compounds WHERE compound_id = ?", (str(cid),)).fetchone()
        if row is None:
            raise KeyError(cid)
        return int(row[0])

    def __contains__(self, cid) -> bool:
        return self._con.execute("SELECT 1 FROM compounds WHERE compound_id = ?", (str(cid),)).fetchone() is not None

    def __iter__(self):
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)


def n_compounds(con: sqlite3.Connection) -> int:
    """K: the arms are 0..K-1 (the key of ``compounds``), so the largest plus one, without a pass over the table."""
    row = con.execute("SELECT MAX(arm) FROM compounds").fetchone()
    return 0 if row is None or row[0] is None else int(row[0]) + 1
