"""Acquisition: the ChEMBL client against recorded HTTP responses on 127.0.0.1, and file readers."""

from __future__ import annotations

import gzip
import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qsl, urlparse

import pandas as pd
import pytest

from screenbai.chem.acquire import load_activities
from screenbai.chem.chembl_web import ChemblUnavailableError, fetch_chembl_activities
from screenbai.chem.tables import STANDARD_COLUMNS, read_activity_table, read_chembl_export, read_structure_table

HTTP_DIR = Path(__file__).parent / "data" / "chembl_http"
PREFIX = "/chembl/api/data"

pytest.importorskip("chembl_webresource_client")


# ------------------------------------------------------------------ recorded-response server
class _Handler(BaseHTTPRequestHandler):
    server: _RecordedServer

    def log_message(self, *args):  # keep test output clean
        pass

    def _send(self, status: int, payload: dict) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _trickle(self, body: bytes) -> None:
        """A 200 answer whose body arrives one byte every `delay` seconds (each read is quick)."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.server.body_length = len(body)
        for i in range(len(body)):
            if self.server.stopped:
                return
            self.wfile.write(body[i : i + 1])
            self.server.bytes_sent = i + 1
            self.wfile.flush()
            time.sleep(self.server.delay)

    def _answer(self, path: str, params: dict) -> None:
        srv = self.server
        srv.requests.append({"method": self.command, "path": path, "params": params})
        if path == f"{PREFIX}/activity.json":
            if srv.mode == "slow_activity":
                time.sleep(srv.delay)
            if srv.mode == "error500":
                self._send(500, {"error_message": "Internal server error", "traceback": "recorded"})
                return
            name = (f"activity_{params.get('target_chembl_id')}_{params.get('standard_type')}"
                    f"_offset{params.get('offset')}.json")
            file = HTTP_DIR / name
            if file.is_file() and srv.mode == "trickle":
                self._trickle(json.dumps(json.loads(file.read_text())).encode())
            elif file.is_file():
                self._send(200, json.loads(file.read_text()))
            else:
                self._send(404, {"error_message": f"no recording {name}"})
            return
        self._send(404, {"error_message": f"unknown path {path}"})

    def do_GET(self):
        url = urlparse(self.path)
        self._answer(url.path, dict(parse_qsl(url.query)))

    def do_POST(self):
        url = urlparse(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"[]")
        params = {str(k): str(v) for k, v in body} if isinstance(body, list) else dict(body)
        self._answer(url.path, params)


class _RecordedServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, mode: str = "ok", delay: float = 0.0):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.mode, self.delay, self.requests, self.stopped = mode, delay, [], False
        self.body_length = self.bytes_sent = 0  # of a trickled answer

    def handle_error(self, request, client_address):
        # a client that timed out closes the socket before a slow answer is written
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}{PREFIX}"


@pytest.fixture
def chembl_settings(monkeypatch):
    """The client's Settings singleton, restored after the test; the client module unloaded."""
    from chembl_webresource_client.settings import Settings

    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    settings = Settings.Instance()
    saved = dict(vars(settings))
    sys.modules.pop("chembl_webresource_client.new_client", None)
    yield settings
    vars(settings).clear()
    vars(settings).update(saved)
    sys.modules.pop("chembl_webresource_client.new_client", None)


@pytest.fixture
def serve(chembl_settings):
    servers = []

    def start(mode: str = "ok", delay: float = 0.0) -> _RecordedServer:
        srv = _RecordedServer(mode, delay)
        threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        servers.append(srv)
        chembl_settings.NEW_CLIENT_URL = srv.url
        return srv

    yield start
    for srv in servers:
        srv.stopped = True
        srv.shutdown()
        srv.server_close()


@pytest.fixture
def http_layer(monkeypatch):
    """What the client hands the HTTP layer, recorded at the boundary (no clock): each request's timeout and
    retry policy (requests' HTTPAdapter.send) and each connection attempt (urllib3's connect)."""
    import requests.adapters
    import urllib3.connection

    seen: dict[str, list] = {"timeouts": [], "retries": [], "backoff": [], "connects": []}
    send, connect = requests.adapters.HTTPAdapter.send, urllib3.connection.HTTPConnection.connect

    def recorded_send(self, request, *args, **kwargs):
        seen["timeouts"].append(kwargs.get("timeout"))
        seen["retries"].append(self.max_retries.total)
        seen["backoff"].append(self.max_retries.backoff_factor)
        return send(self, request, *args, **kwargs)

    def recorded_connect(self, *args, **kwargs):
        seen["connects"].append((self.host, self.port))
        return connect(self, *args, **kwargs)

    monkeypatch.setattr(requests.adapters.HTTPAdapter, "send", recorded_send)
    monkeypatch.setattr(urllib3.connection.HTTPConnection, "connect", recorded_connect)
    return seen


def _free_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}{PREFIX}"  # closed again: nothing listens there


# ------------------------------------------------------------------ fetch tests
def test_fetch_paginates_with_page_size_1000_and_caches(serve, tmp_path):
    srv = serve("ok")
    df = fetch_chembl_activities("CHEMBL301", cache_dir=tmp_path, timeout=5, retries=0)

    assert list(df.columns[: len(STANDARD_COLUMNS)]) == list(STANDARD_COLUMNS)
    # 3 rows from page 1 + 2 rows from page 2, in order
    assert df["molecule_chembl_id"].tolist() == [
        "CHEMBL100391", "CHEMBL100664", "CHEMBL104000", "CHEMBL14762", "CHEMBL3989887"
    ]
    pages = [r for r in srv.requests if r["path"].endswith("activity.json")]
    assert [p["params"]["offset"] for p in pages] == ["0", "1000"]
    assert all(p["params"]["limit"] == "1000" for p in pages)
    assert all(p["params"]["target_chembl_id"] == "CHEMBL301" and p["params"]["standard_type"] == "IC50" for p in pages)
    # configured through the client's Settings: no schema download, no module import or patching
    assert not any(r["path"].endswith("/spore") for r in srv.requests)
    assert "chembl_webresource_client.new_client" not in sys.modules
    # values as delivered, flags normalised
    row = df.set_index("molecule_chembl_id").loc["CHEMBL104000"]
    assert row["standard_value"] == "10000.0" and row["standard_relation"] == ">"
    assert row["data_validity_comment"] == "Outside typical range" and bool(row["potential_duplicate"]) is True
    assert df["standard_units"].tolist()[-1] == "uM"

    cache = tmp_path / "chembl_CHEMBL301_IC50.csv.gz"
    assert cache.is_file()
    srv.shutdown()
    srv.server_close()
    again = fetch_chembl_activities("CHEMBL301", cache_dir=tmp_path, timeout=1, retries=0)
    pd.testing.assert_frame_equal(again, df)


def test_cache_served_when_service_is_down(chembl_settings, tmp_path):
    chembl_settings.NEW_CLIENT_URL = _free_port_url()
    with pytest.raises(ChemblUnavailableError):
        fetch_chembl_activities("CHEMBL301", cache_dir=tmp_path, timeout=1, retries=0)
    cached = pd.DataFrame({"molecule_chembl_id": ["CHEMBL1"], "canonical_smiles": ["CCO"], "standard_value": ["5"]})
    cached.to_csv(tmp_path / "chembl_CHEMBL301_IC50.csv.gz", index=False)
    df = fetch_chembl_activities("CHEMBL301", cache_dir=tmp_path, timeout=1, retries=0)
    assert df["canonical_smiles"].tolist() == ["CCO"]
    with pytest.raises(ChemblUnavailableError):  # refresh forces the (unreachable) service
        fetch_chembl_activities("CHEMBL301", cache_dir=tmp_path, timeout=1, retries=0, refresh=True)


def test_a_damaged_cache_says_how_to_download_again(chembl_settings, tmp_path):
    """A truncated or emptied cache file was named, but nothing said it was a cache nor how to replace it."""
    chembl_settings.NEW_CLIENT_URL = _free_port_url()
    cache = tmp_path / "chembl_CHEMBL301_IC50.csv.gz"
    for content in (b"", gzip.compress(b"molecule_chembl_id,canonical_smiles,standard_value\nCHEMBL1,CCO,5\n")[:30]):
        cache.write_bytes(content)
        with pytest.raises(ValueError, match=r"chembl_CHEMBL301_IC50.csv.gz: .*cache of a download of ChEMBL target "
                                             r"CHEMBL301: delete the file, or set refresh: true"):
            fetch_chembl_activities("CHEMBL301", cache_dir=tmp_path, timeout=1, retries=0)


def test_connection_refused_says_how_to_use_a_local_file(chembl_settings, http_layer, tmp_path):
    chembl_settings.NEW_CLIENT_URL = _free_port_url()
    with pytest.raises(ChemblUnavailableError) as info:
        fetch_chembl_activities("CHEMBL2094128", cache_dir=tmp_path, timeout=2, retries=1)
    # fails fast: one request with the 2 s timeout and 1 retry (the client's own default is 3 retries with a
    # backoff of 2, 4, 8 s), so two connection attempts in all
    assert http_layer["timeouts"] == [2] and http_layer["retries"] == [1] and http_layer["backoff"] == [0.5]
    assert len(http_layer["connects"]) == 2
    msg = str(info.value)
    assert "could not be reached" in msg and "kind: export" in msg and "path" in msg
    assert isinstance(info.value, RuntimeError)
    assert not list(tmp_path.iterdir())  # nothing cached on failure


def test_http_500_gives_clear_error(serve, http_layer, tmp_path):
    srv = serve("error500")
    with pytest.raises(ChemblUnavailableError, match=r"answered with an error.*kind: export"):
        fetch_chembl_activities("CHEMBL301", cache_dir=tmp_path, timeout=5, retries=0)
    # fails fast: the server was asked once (no retry of the error), with the 5 s timeout
    assert len([r for r in srv.requests if r["path"].endswith("activity.json")]) == 1
    assert http_layer["timeouts"] == [5] and http_layer["retries"] == [0]


def test_timeout_fails_fast(serve, tmp_path):
    # the server answers after 3 s: without the 0.3 s timeout the fetch would succeed
    serve("slow_activity", delay=3.0)
    with pytest.raises(ChemblUnavailableError, match="could not be reached within 0.3 s"):
        fetch_chembl_activities("CHEMBL301", cache_dir=tmp_path, timeout=0.3, retries=0)


@pytest.mark.slow
def test_total_deadline_stops_a_trickling_server(serve, tmp_path):
    # one byte every 2 s: each read takes 2 s < timeout, so only a total deadline ends the fetch
    srv = serve("trickle", delay=2.0)
    with pytest.raises(ChemblUnavailableError, match="CHEMBL301 within the total deadline of 3 s.*kind: export"):
        fetch_chembl_activities("CHEMBL301", cache_dir=tmp_path, timeout=5, deadline=3, retries=0)
    # the fetch gave up mid-body (the body alone would take minutes at one byte every 2 s), not once it was read
    assert 0 < srv.bytes_sent < srv.body_length
    assert not [t for t in threading.enumerate() if t.name == "chembl-download"]  # the read was ended
    assert not list(tmp_path.iterdir())


def test_empty_answer_for_unknown_target_is_an_error_and_not_cached(serve, tmp_path):
    serve("ok")
    with pytest.raises(ValueError, match=r"no IC50 activities for target CHEMBL999999 .*0 records; nothing was cached"):
        fetch_chembl_activities("CHEMBL999999", cache_dir=tmp_path, timeout=5, retries=0)
    assert not list(tmp_path.iterdir())


def test_settings_are_restored(serve, tmp_path):
    from chembl_webresource_client.settings import Settings

    keys = ("NEW_CLIENT_TIMEOUT", "MAX_LIMIT", "CACHING", "TOTAL_RETRIES")
    before = {k: getattr(Settings.Instance(), k) for k in keys}
    serve("ok")
    fetch_chembl_activities("CHEMBL301", cache_dir=tmp_path, timeout=5, retries=0)
    after = {k: getattr(Settings.Instance(), k) for k in before}
    assert after == before


@pytest.mark.parametrize("bad", ["CHEMBL", "chembl301x", "301", "", "CHEMBL 301"])
def test_target_id_is_validated(bad, tmp_path):
    with pytest.raises(ValueError, match="invalid ChEMBL target id"):
        fetch_chembl_activities(bad, cache_dir=tmp_path)


# ------------------------------------------------------------------ file readers
EXPORT_HEADER = [
    "Molecule ChEMBL ID", "Molecule Name", "Smiles", "Standard Type", "Standard Relation", "Standard Value",
    "Standard Units", "Data Validity Comment", "Potential Duplicate", "Assay ChEMBL ID", "Assay Description",
    "Assay Type", "Target ChEMBL ID", "Document ChEMBL ID",
]
EXPORT_ROWS = [
    ["CHEMBL1", "", "CCO", "IC50", "'='", "12.5", "nM", "", "False", "CHEMBL9", "Inhibition of CDK2/cyclin A", "B",
     "CHEMBL301", "CHEMBL7"],
    ["CHEMBL2", "", "c1ccccc1O", "IC50", "'>'", "10000", "nM", "Outside typical range", "True", "CHEMBL9", "x; y", "B",
     "CHEMBL301", "CHEMBL7"],
    ["CHEMBL3", "", "", "Ki", "", "", "", "", "False", "CHEMBL8", "None", "B", "CHEMBL301", "CHEMBL7"],
]


def _write_export(path: Path, header=EXPORT_HEADER, rows=EXPORT_ROWS, gz=False) -> Path:
    text = "\n".join(";".join(f'"{v}"' for v in r) for r in [header, *rows]) + "\n"
    if gz:
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            fh.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("gz", [False, True])
def test_read_chembl_export_web_format(tmp_path, gz):
    df = read_chembl_export(_write_export(tmp_path / ("e.csv.gz" if gz else "e.csv"), gz=gz))
    assert list(df.columns[:13]) == list(STANDARD_COLUMNS)
    assert df["standard_relation"].tolist() == ["=", ">", None]
    assert df["potential_duplicate"].tolist() == [False, True, False]
    assert df["canonical_smiles"].tolist() == ["CCO", "c1ccccc1O", None]
    assert df["assay_description"].tolist()[1] == "x; y"  # ';' inside quotes
    assert df["data_validity_comment"].tolist() == [None, "Outside typical range", None]
    assert "molecule_name" in df.columns


def test_read_chembl_export_missing_column(tmp_path):
    header = [h for h in EXPORT_HEADER if h != "Standard Value"]
    rows = [r[:5] + r[6:] for r in EXPORT_ROWS]
    with pytest.raises(ValueError, match=r"'standard_value' not found.*Molecule ChEMBL ID"):
        read_chembl_export(_write_export(tmp_path / "bad.csv", header, rows))


def test_read_derived_snake_case_files(cdk2_export, tmp_path):
    """The snake_case tables derived from web exports (the CDK2 IC50 table of PROVENANCE.md, made here from
    the shipped export as it describes; the TeachOpenCADD EGFR table's columns) read back as the export."""
    raw = pd.read_csv(cdk2_export, sep=";", dtype=str, keep_default_na=False, na_values=[""])
    ic50 = raw[(raw["Standard Type"] == "IC50") & (raw["Standard Units"] == "nM")]
    ic50 = ic50[ic50["Smiles"].notna() & pd.to_numeric(ic50["Standard Value"], errors="coerce").notna()]
    derived = pd.DataFrame({
        "molecule_chembl_id": ic50["Molecule ChEMBL ID"], "canonical_smiles": ic50["Smiles"],
        "standard_type": ic50["Standard Type"], "standard_relation": ic50["Standard Relation"].str.strip("'"),
        "standard_value": ic50["Standard Value"], "standard_units": ic50["Standard Units"],
        "assay_chembl_id": ic50["Assay ChEMBL ID"], "target_chembl_id": ic50["Target ChEMBL ID"],
    })
    derived.to_csv(tmp_path / "cdk2_chembl301_ic50_nM.csv", index=False)
    cdk2 = read_chembl_export(tmp_path / "cdk2_chembl301_ic50_nM.csv")
    assert len(cdk2) == 2651 and cdk2["molecule_chembl_id"].nunique() == 2208
    assert cdk2["standard_relation"].value_counts(dropna=False).to_dict() == {"=": 1961, ">": 642, "<": 45, None: 3}
    egfr_columns = "target_chembl_id,molecule_chembl_id,standard_value,standard_type,standard_relation," \
        "standard_units,canonical_smiles,pIC50"
    (tmp_path / "egfr.csv").write_text(
        egfr_columns + "\nCHEMBL203,CHEMBL63786,0.003,IC50,=,nM,Brc1cccc(Nc2ncnc3cc4ccccc4cc23)c1,11.52\n"
    )
    egfr = read_chembl_export(tmp_path / "egfr.csv")
    assert len(egfr) == 1 and set(egfr["target_chembl_id"]) == {"CHEMBL203"}
    assert egfr["assay_chembl_id"].isna().all()  # absent in the file -> NA


def test_read_raw_export_matches_provenance(cdk2_export):
    raw = read_chembl_export(cdk2_export)
    assert raw.shape == (7107, 45)
    assert raw["molecule_chembl_id"].nunique() == 4889
    assert int(raw["canonical_smiles"].isna().sum()) == 11
    ic = raw[raw["standard_type"] == "IC50"]
    assert len(ic) == 2746
    assert ic["standard_units"].value_counts(dropna=False).to_dict() == {"nM": 2657, "ug.mL-1": 52, None: 36, "µM": 1}
    assert int((ic["data_validity_comment"] == "Outside typical range").sum()) == 88
    assert int(ic["potential_duplicate"].sum()) == 197


def test_read_activity_table_csv(tmp_path):
    path = tmp_path / "lab.tsv"
    path.write_text("name\tsmi\tIC50 (uM)\tnote\nA\tCCO\t1.5\tok\nB\tCCN\t>100\t\n")
    df = read_activity_table(path, smiles_column="smi", activity_column="IC50 (uM)", id_column="name", units="uM")
    assert df["molecule_chembl_id"].tolist() == ["A", "B"]
    assert df["standard_value"].tolist() == ["1.5", "100"]
    assert df["standard_relation"].tolist() == [None, ">"]
    assert set(df["standard_units"]) == {"uM"} and set(df["standard_type"]) == {"IC50"}
    assert df["note"].tolist() == ["ok", None]
    with pytest.raises(ValueError, match=r"activity_column='pIC50'.*\['name', 'smi', 'IC50 \(uM\)', 'note'\]"):
        read_activity_table(path, smiles_column="smi", activity_column="pIC50")


def test_read_activity_table_sdf(tmp_path):
    from rdkit import Chem

    path = tmp_path / "lab.sdf"
    with Chem.SDWriter(str(path)) as w:
        for name, smi, val in [("cpd1", "CCO", "3.5"), ("cpd2", "c1ccccc1N", "40")]:
            m = Chem.MolFromSmiles(smi)
            m.SetProp("_Name", name)
            m.SetProp("IC50_nM", val)
            w.write(m)
    df = read_activity_table(path, smiles_column=None, activity_column="IC50_nM", id_column="_Name")
    assert df["molecule_chembl_id"].tolist() == ["cpd1", "cpd2"]
    assert df["canonical_smiles"].tolist() == ["CCO", "Nc1ccccc1"]
    assert df["standard_value"].tolist() == ["3.5", "40"]
    with pytest.raises(ValueError, match="available columns"):
        read_activity_table(path, smiles_column=None, activity_column="Ki")


def test_read_structure_table_csv(tmp_path):
    path = tmp_path / "library.tsv.gz"
    path.write_bytes(gzip.compress(b"name\tsmi\tvendor\nA\tCCO\tX\n\t\tY\nC\tnot a smiles\tZ\nA\tCCN\t\n"))
    df = read_structure_table(path, id_column="name", smiles_column="smi")
    assert list(df.columns) == ["source_row", "compound_id", "smiles", "problem"]
    assert df["source_row"].tolist() == [2, 3, 4, 5]  # the header is line 1
    assert df["compound_id"].tolist() == ["A", "", "C", "A"]  # nothing dropped, blank or repeated
    assert df["smiles"].tolist() == ["CCO", "", "not a smiles", "CCN"]
    with pytest.raises(ValueError, match=r"library.tsv.gz: the SMILES column 'smiles'.*\['name', 'smi', 'vendor'\]"):
        read_structure_table(path, id_column="name", smiles_column="smiles")
    with pytest.raises(ValueError, match=r"library.tsv.gz: the id column 'id'"):
        read_structure_table(path, id_column="id", smiles_column="smi")
    message = r"library.tsv.gz: name the id and SMILES columns.*\['name', 'smi', 'vendor'\]"
    with pytest.raises(ValueError, match=message):
        read_structure_table(path, smiles_column="smi")
    bad = tmp_path / "bad.csv"
    bad.write_text("name,smi\nA,CCO\nB,CCN,extra\n")
    with pytest.raises(ValueError, match=r"bad.csv: cannot be read.*line 3, saw 3"):
        read_structure_table(bad, id_column="name", smiles_column="smi")
    with pytest.raises(FileNotFoundError, match="missing.csv"):
        read_structure_table(tmp_path / "missing.csv", id_column="name", smiles_column="smi")


def test_read_structure_table_sdf(tmp_path):
    from rdkit import Chem

    path = tmp_path / "library.sdf"
    with Chem.SDWriter(str(path)) as w:
        for name, smi in [("cpd1", "CCO"), ("cpd2", "c1ccccc1N")]:
            m = Chem.MolFromSmiles(smi)
            m.SetProp("_Name", name)
            m.SetProp("vendor_id", name.upper())
            w.write(m)
    good = path.read_text()
    broken = good.split("$$$$\n")[0].replace("V2000", "V9999") + "$$$$\n"  # a record RDKit cannot read
    path.write_text(good + broken)
    df = read_structure_table(path)  # the title line and each record's structure
    assert df["source_row"].tolist() == [1, 2, 3]  # record numbers
    assert df["compound_id"].tolist() == ["cpd1", "cpd2", "cpd1"]  # the unreadable record's title line
    assert df["smiles"].iloc[:2].tolist() == ["CCO", "Nc1ccccc1"] and pd.isna(df["smiles"].iloc[2])
    assert df["problem"].tolist() == [None, None, "unreadable SDF record"]
    assert read_structure_table(path, id_column="vendor_id")["compound_id"].iloc[:2].tolist() == ["CPD1", "CPD2"]
    with pytest.raises(ValueError, match=r"library.sdf: the id column 'catalog'.*'vendor_id'"):
        read_structure_table(path, id_column="catalog")


@pytest.mark.slow
def test_sdf_record_too_large_gets_no_smiles(tmp_path, caplog):
    # RDKit's SMILES writer crashes the interpreter on some 20,000 atoms; records over the
    # InChI limit are kept without SMILES (curation drops them as missing SMILES), named in the log
    from rdkit import Chem

    path = tmp_path / "big.sdf"
    with Chem.SDWriter(str(path)) as w:
        for name, smi in [("small", "CCO"), ("polymer", "C" * 1100)]:
            m = Chem.MolFromSmiles(smi)
            m.SetProp("_Name", name)
            m.SetProp("IC50_nM", "5")
            w.write(m)
    df = read_activity_table(path, smiles_column=None, activity_column="IC50_nM", id_column="_Name")
    assert df["canonical_smiles"].tolist() == ["CCO", None]
    assert "2 'polymer' (1,100 heavy atoms)" in caplog.text and str(path) in caplog.text


def test_load_activities_dispatch(tmp_path):
    export = _write_export(tmp_path / "e.csv")
    assert len(load_activities({"kind": "export", "path": str(export)}, tmp_path)) == 3
    table = tmp_path / "t.csv"
    table.write_text("smiles,val\nCCO,5\n")
    cfg = {"kind": "table", "path": str(table), "smiles_column": "smiles", "activity_column": "val"}
    df = load_activities(cfg, tmp_path)
    assert df["standard_value"].tolist() == ["5"] and df["molecule_chembl_id"].tolist() == ["t_1"]
    with pytest.raises(ValueError, match="needs 'kind'"):
        load_activities({"kind": "ftp"}, tmp_path)
    with pytest.raises(ValueError, match="needs key 'target_chembl_id'"):
        load_activities({"kind": "chembl"}, tmp_path)
    with pytest.raises(ValueError, match="unknown keys"):
        load_activities({"kind": "export", "path": str(export), "sep": ";"}, tmp_path)


def test_load_activities_chembl_kind_uses_client_and_cache(serve, tmp_path):
    srv = serve("ok")
    cfg = {"kind": "chembl", "target_chembl_id": "CHEMBL301", "activity_types": ["IC50"],
           "timeout": 5, "deadline": 60, "retries": 0}
    df = load_activities(cfg, cache_dir=tmp_path / "cache")
    assert len(df) == 5 and (tmp_path / "cache" / "chembl_CHEMBL301_IC50.csv.gz").is_file()
    n_requests = len(srv.requests)
    assert len(load_activities(cfg, cache_dir=tmp_path / "cache")) == 5
    assert len(srv.requests) == n_requests  # second call: cache only

    from screenbai.chem.curate import curate_activities

    lib, rep = curate_activities(df)
    assert rep.dropped == {"censored relation": 1}
    by_id = lib.set_index("compound_id")
    assert by_id.index.tolist() == ["CHEMBL100391", "CHEMBL100664", "CHEMBL14762"]
    # free base (1000 nM) and HCl salt (0.1 uM) merge: geometric median sqrt(1000 * 100)
    assert by_id.loc["CHEMBL14762", "activity_nM"] == pytest.approx(316.227766, rel=1e-6)
    assert by_id.loc["CHEMBL14762", "source_ids"] == "CHEMBL14762;CHEMBL3989887"


# ------------------------------------------------------------------ unreadable files name themselves
def _read_each(path: Path) -> list[str]:
    """The messages of every text reader for one file."""
    messages = []
    for read in (
        read_chembl_export,
        lambda p: read_activity_table(p, smiles_column="Smiles", activity_column="Value"),
        lambda p: read_structure_table(p, id_column="Value", smiles_column="Smiles"),
    ):
        with pytest.raises(ValueError) as info:
            read(path)
        messages.append(str(info.value))
    return messages


def test_empty_file_names_the_file(tmp_path):
    for name, content in (("empty.csv", b""), ("blank.csv", b"\n\n")):
        path = tmp_path / name
        path.write_bytes(content)
        for msg in _read_each(path):
            assert msg.startswith(f"{path}: the file is empty")
    header_only = tmp_path / "header.csv"
    header_only.write_text("Smiles,Value\n")
    for msg in _read_each(header_only):
        assert msg.startswith(f"{header_only}: holds no data rows")


@pytest.mark.parametrize("gz", [False, True])
def test_undecodable_bytes_say_encoding_and_how_to_convert(tmp_path, gz):
    data = b"Smiles,Value\nCCO,5\n" + "CCN,6 µM\n".encode("cp1252")
    path = tmp_path / ("latin.csv.gz" if gz else "latin.csv")
    path.write_bytes(gzip.compress(data) if gz else data)
    for msg in _read_each(path):
        assert msg.startswith(f"{path}: not UTF-8 text at line 3")
        assert "encodings tried are UTF-8" in msg and "iconv -f WINDOWS-1252 -t UTF-8" in msg


@pytest.mark.parametrize("gz", [False, True])
def test_utf16_with_byte_order_mark_is_read(tmp_path, gz):
    """Excel's 'Unicode text' (UTF-16, tab-separated) was refused as not UTF-8."""
    data = "name\tsmi\tIC50\r\nA\tCCO\t5\r\nB\tCCN\t7\r\n".encode("utf-16")
    path = tmp_path / ("excel.txt.gz" if gz else "excel.txt")
    path.write_bytes(gzip.compress(data) if gz else data)
    df = read_activity_table(path, smiles_column="smi", activity_column="IC50", id_column="name")
    assert df["molecule_chembl_id"].tolist() == ["A", "B"] and df["standard_value"].tolist() == ["5", "7"]
    assert read_structure_table(path, id_column="name", smiles_column="smi")["source_row"].tolist() == [2, 3]


def test_header_delimiter_differs_from_rows(tmp_path):
    path = tmp_path / "mixed.csv"
    path.write_text("Molecule ChEMBL ID;Smiles;Standard Type;Standard Value;Standard Units;Value\n"
                    'CHEMBL1,CCO,IC50,5,nM,5\nCHEMBL2,"C,N",IC50,6,nM,6\n')
    for msg in _read_each(path):
        assert msg.startswith(f"{path}: the header is separated by ';' (6 columns) but the rows are separated by ','")
    trailing = tmp_path / "trailing.csv"
    trailing.write_text("Smiles,Value\nCCO,5,\nCCN,6,\n")  # pandas would silently make Smiles the index
    for msg in _read_each(trailing):
        assert msg.startswith(f"{trailing}: none of the first 2 rows has the header's 2 columns")


@pytest.mark.parametrize(
    "column, activity_type, named",
    [("pIC50", "IC50", "activity_column 'pIC50'"), ("p", "pKi", "activity_type 'pKi'"),
     ("log_ic50", "IC50", "activity_column 'log_ic50'")],
)
def test_logarithmic_values_are_not_read_as_concentrations(tmp_path, column, activity_type, named):
    """A pIC50 of 8 read as 8 nM would make the most potent compound the weakest."""
    path = tmp_path / "lab.csv"
    path.write_text(f"name,smi,{column}\nA,CCO,8.0\nB,CCN,5.0\n")
    kwargs = dict(smiles_column="smi", activity_column=column, id_column="name", units="nM")
    with pytest.raises(ValueError, match=rf"lab.csv: {named} names logarithmic values.*activity_type: pChEMBL"):
        read_activity_table(path, activity_type=activity_type, **kwargs)
    df = read_activity_table(path, activity_type="pChEMBL", **kwargs)  # declared as what it is: read
    assert df["standard_value"].tolist() == ["8.0", "5.0"]


def test_a_named_column_repeated_in_the_header_is_refused(tmp_path):
    """pandas reads 'ic50,ic50' as ic50 and ic50.1: the first was used silently."""
    path = tmp_path / "lab.csv"
    path.write_text("name,smi,ic50,ic50\nA,CCO,5,6000\nB,CCN,10,1\n")
    with pytest.raises(ValueError, match=r"lab.csv: line 1: the activity_column 'ic50' appears more than once"):
        read_activity_table(path, smiles_column="smi", activity_column="ic50", id_column="name")
    path.write_text("name,smi,smi\nA,CCO,CCN\nB,CCN,CCO\n")
    with pytest.raises(ValueError, match=r"lab.csv: line 1: the SMILES column 'smi' appears more than once"):
        read_structure_table(path, id_column="name", smiles_column="smi")
    path.write_text("name,smi,note,note\nA,CCO,x,y\nB,CCN,z,w\n")  # a repeated column nobody uses is fine
    assert read_structure_table(path, id_column="name", smiles_column="smi")["smiles"].tolist() == ["CCO", "CCN"]


@pytest.mark.parametrize("gz", [False, True])
def test_no_sdf_record_is_lost_after_an_unreadable_one(tmp_path, gz):
    """RDKit's SDF iterator skipped the records after some unreadable ones (here 'X1' and 'junk')."""
    from rdkit import Chem

    def block(smi, name):
        m = Chem.MolFromSmiles(smi)
        m.SetProp("_Name", name)
        return Chem.MolToMolBlock(m) + "$$$$\n"

    broken = block("CCC", "BAD1").replace("  3  2  0", "  3  5  0")  # more bonds than it lists
    text = (
        block("CCO", "OK1") + broken + block("CCN", "OK2") + "V3000 junk\n$$$$\n"
        + block("CCCl", "X1") + "junk\n$$$$\n"
    )
    path = tmp_path / ("lib.SDF.GZ" if gz else "lib.sdf")
    path.write_bytes(gzip.compress(text.encode()) if gz else text.encode())
    df = read_structure_table(path)
    assert df["compound_id"].tolist() == ["OK1", "BAD1", "OK2", "V3000 junk", "X1", "junk"]
    assert df["smiles"].tolist()[::2] == ["CCO", "CCN", "CCCl"]
    assert df["problem"].tolist()[1::2] == ["unreadable SDF record"] * 3


def test_unicode_bounds_are_censored_values_not_text(tmp_path):
    """'≥100' typed in a spreadsheet was a 'non-numeric value': kept_as_value lost it."""
    from screenbai.chem.curate import curate_activities

    path = tmp_path / "lab.csv"
    path.write_text("name,smi,IC50\nA,CCO,≥100\nB,CCN,≤ 2\nC,CCC,7\n", encoding="utf-8")
    raw = read_activity_table(path, smiles_column="smi", activity_column="IC50", id_column="name")
    assert raw["standard_relation"].tolist() == ["≥", "≤", None] and raw["standard_value"].tolist() == ["100", "2", "7"]
    lib, rep = curate_activities(raw)
    assert rep.dropped == {"censored relation": 2}
    lib, rep = curate_activities(raw, censored="keep_as_value")
    assert lib.set_index("compound_id")["activity_nM"].to_dict() == {"A": 100.0, "B": 2.0, "C": 7.0}


_OWN_COLUMNS = (
    "molecule_chembl_id,canonical_smiles,standard_type,standard_relation,standard_value,standard_units,"
    "data_validity_comment,potential_duplicate,assay_description,target_chembl_id\n"
    "M1,CCO,IC50,=,500,nM,,False,CDK2/cyclin A,CHEMBL301\n"
    "M2,CCN,IC50,>,10000,nM,,False,CDK2/cyclin A,CHEMBL301\n"
    "M3,CCC,IC50,=,2,uM,,False,CDK2 alone,CHEMBL301\n"
    "M4,CCCl,IC50,=,7,nM,Outside typical range,False,CDK2/cyclin A,CHEMBL301\n"
    "M5,CCBr,IC50,=,9,nM,,True,CDK2/cyclin A,CHEMBL301\n"
    "M6,CCI,Ki,=,3,nM,,False,CDK2/cyclin A,CHEMBL301\n"
)
_OWN_KWARGS = {
    "smiles_column": "canonical_smiles", "activity_column": "standard_value", "id_column": "molecule_chembl_id"
}


def test_a_tables_own_relation_units_flag_and_assay_columns_are_used(tmp_path):
    """They were dropped or overwritten from the config: the '>' row read as an exact value, the flagged
    rows kept with drop_flagged, the uM row read as nM, and assay_description_regex matched nothing."""
    from screenbai.chem.curate import curate_activities

    path = tmp_path / "chembl_like.csv"
    path.write_text(_OWN_COLUMNS)
    raw = read_activity_table(path, activity_type="IC50", **_OWN_KWARGS)
    assert raw["standard_relation"].tolist() == ["=", ">", "=", "=", "=", "="]
    assert raw["standard_units"].tolist() == ["nM", "nM", "uM", "nM", "nM", "nM"]
    assert raw["standard_type"].tolist() == ["IC50"] * 5 + ["Ki"]  # the file's own type, not the declared one
    assert raw["data_validity_comment"].tolist()[3] == "Outside typical range"
    assert raw["potential_duplicate"].tolist() == [False] * 4 + [True, False]
    assert set(raw["target_chembl_id"]) == {"CHEMBL301"}
    lib, rep = curate_activities(raw, drop_flagged=True)
    assert rep.dropped == {"activity type not selected": 1, "censored relation": 1,
                           "flagged: data validity comment": 1, "flagged: potential duplicate": 1}
    assert lib.set_index("compound_id")["activity_nM"].to_dict() == {"M1": 500.0, "M3": 2000.0}
    lib, rep = curate_activities(raw, assay_description_regex="cyclin A", drop_flagged=False)
    assert rep.dropped["assay description not matched"] == 1 and "M3" not in set(lib["compound_id"])


def test_per_row_units_that_contradict_the_declared_unit_are_refused(tmp_path):
    path = tmp_path / "chembl_like.csv"
    path.write_text(_OWN_COLUMNS)
    with pytest.raises(ValueError, match=r"chembl_like.csv: its column 'standard_units' gives each row's unit, and "
                                         r"not all are nM \(source.units\): uM \(1 rows\)\. Remove source.units"):
        read_activity_table(path, units="nM", config_key="source", **_OWN_KWARGS)


def test_a_relation_column_and_the_tables_own_that_disagree_are_refused(tmp_path):
    path = tmp_path / "two_relations.csv"
    path.write_text("smi,ic50,rel,standard_relation\nCCO,5,=,=\nCCN,7,=,>\n")
    with pytest.raises(ValueError, match=r"source.relation_column names column 'rel' but the table's own column "
                                         r"'standard_relation' says otherwise on 1 rows \(first: line 3"):
        read_activity_table(path, smiles_column="smi", activity_column="ic50", relation_column="rel",
                            config_key="source")
    path.write_text("smi,ic50,rel\nCCO,>5,<\n")
    with pytest.raises(ValueError, match=r"line 2: the value '>5' of 'ic50' says '>' but its relation column 'rel'"):
        read_activity_table(path, smiles_column="smi", activity_column="ic50", relation_column="rel")


def test_a_standard_column_the_config_maps_elsewhere_is_kept_under_another_name(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("canonical_smiles,standard_type,standard_value,standard_units,pchembl_value\n"
                    "CCO,IC50,100,nM,7.0\n")
    raw = read_activity_table(path, smiles_column="canonical_smiles", activity_column="pchembl_value",
                              activity_type="pChEMBL")
    assert raw["standard_value"].tolist() == ["7.0"] and raw["standard_type"].tolist() == ["pChEMBL"]
    assert raw["source_standard_value"].tolist() == ["100"] and raw["source_standard_type"].tolist() == ["IC50"]
    assert raw["source_standard_units"].tolist() == ["nM"] and raw["standard_units"].tolist() == [None]


@pytest.mark.parametrize("header, unit", [("Ki (uM)", "uM"), ("ic50_nM", "nM"), ("IC50 [µmol/L]", "µM"),
                                          ("Kd (M)", "M"), ("ki_pm", "pM"), ("standard_value", None), ("Mass", None)])
def test_the_unit_a_header_names(header, unit):
    from screenbai.chem.units import unit_named_in

    assert unit_named_in(header) == unit


def test_a_unit_named_by_the_header_is_used_and_a_contradicting_one_refused(tmp_path, caplog):
    """A 'Ki (uM)' column with units absent or nM was read as nM (a 1000x error), with no word."""
    path = tmp_path / "lab.csv"
    path.write_text("smi,Ki (uM)\nCCO,0.11\n")
    kwargs = {"smiles_column": "smi", "activity_column": "Ki (uM)", "activity_type": "Ki"}
    assert read_activity_table(path, **kwargs)["standard_units"].tolist() == ["uM"]
    assert read_activity_table(path, units="µM", **kwargs)["standard_units"].tolist() == ["µM"]
    with pytest.raises(ValueError, match=r"lab.csv: source.units = 'nM' contradicts the activity column 'Ki \(uM\)', "
                                         r"whose header names uM: .* factor of 1000"):
        read_activity_table(path, units="nM", config_key="source", **kwargs)
    with pytest.raises(ValueError, match=r"units = 'nm' is not a unit curation converts; accepted: pM, nM, uM"):
        read_activity_table(path, units="nm", **kwargs)
    path.write_text("smi,ki\nCCO,0.11\n")
    with caplog.at_level("WARNING", logger="screenbai.chem"):
        raw = read_activity_table(path, smiles_column="smi", activity_column="ki", activity_type="Ki")
    assert raw["standard_units"].tolist() == ["nM"]
    assert "read in nM, the default: units is not given and the activity column 'ki' names no unit" in caplog.text


def test_a_relation_or_unit_column_no_key_reads_is_refused_not_ignored(tmp_path, caplog):
    """A column 'relation' (or 'qualifier') holding '>' was ignored: '>10000' counted as an exact 10000 nM; a column
    'unit' holding uM was ignored: the row read in nM, 1000 times too potent. Both are refused, naming the key."""
    path = tmp_path / "lab.csv"
    path.write_text("smiles,relation,ic50_nM\nCCO,>,10000\nCCN,=,6\n")
    with pytest.raises(ValueError, match=r"lab.csv: its column 'relation' holds relations \('>' on 1 rows\) that are "
                                         r"not read: .* Set source.relation_column: 'relation'"):
        read_activity_table(path, smiles_column="smiles", activity_column="ic50_nM", config_key="source")
    raw = read_activity_table(path, smiles_column="smiles", activity_column="ic50_nM", relation_column="relation")
    assert raw["standard_relation"].tolist() == [">", "="]
    path.write_text("smiles,qualifier,ic50_nM\nCCO,=,10000\n")  # '=' only: nothing is lost
    assert read_activity_table(path, smiles_column="smiles", activity_column="ic50_nM")["standard_value"].tolist() == [
        "10000"]
    path.write_text("smiles,Unit,ic50\nCCO,uM,5\nCCN,nM,6\n")
    with pytest.raises(ValueError, match=r"its column 'Unit' gives units \('uM' on 1 rows\) that are not read: every "
                                         r"value is read in nM\. Rename the column standard_units"):
        read_activity_table(path, smiles_column="smiles", activity_column="ic50")
    path.write_text("smiles,units,ic50\nCCO,nM,5\n")  # the unit the values are read in: nothing is lost
    with caplog.at_level("INFO", logger="screenbai.chem"):
        read_activity_table(path, smiles_column="smiles", activity_column="ic50", units="nM", config_key="source")
    assert "values of 'ic50' read in nM (source.units)" in caplog.text  # it said "read in source.units"


def test_sdf_properties_are_read_as_written_not_as_numbers(tmp_path):
    """RDKit converted SD properties that look like numbers: the ids '007' and '7' both became '7' (one
    compound id naming two structures) and '1e3' became '1000.0'."""
    from rdkit import Chem

    path = tmp_path / "vendor.sdf"
    with Chem.SDWriter(str(path)) as w:
        for cid, smi, val in [("007", "CCO", "1.50"), ("7", "CCCO", "10"), ("1e3", "CCCCO", "1E+03")]:
            m = Chem.MolFromSmiles(smi)
            m.SetProp("_Name", cid)
            m.SetProp("ID", cid)
            m.SetProp("IC50_nM", val)
            w.write(m)
    df = read_activity_table(path, smiles_column=None, activity_column="IC50_nM", id_column="ID")
    assert df["molecule_chembl_id"].tolist() == ["007", "7", "1e3"]
    assert df["standard_value"].tolist() == ["1.50", "10", "1E+03"]
    assert read_structure_table(path, id_column="ID")["compound_id"].tolist() == ["007", "7", "1e3"]
    assert read_structure_table(path)["compound_id"].tolist() == ["007", "7", "1e3"]


def test_every_relation_curation_knows_is_split_from_the_value(tmp_path):
    """'=> 10' was split as '=' and '> 10' (then dropped as the non-numeric value '> 10'); '>>', '=<' likewise."""
    path = tmp_path / "t.csv"
    path.write_text("id,smiles,ic50_nM\nA,CCO,=> 10\nB,CCCO,=<5\nC,CCCCO,>>1e4\nD,CCN,== 7\nE,CCCN,<= 3\n")
    df = read_activity_table(path, smiles_column="smiles", activity_column="ic50_nM", id_column="id")
    assert df["standard_relation"].tolist() == ["=>", "=<", ">>", "==", "<="]
    assert df["standard_value"].tolist() == ["10", "5", "1e4", "7", "3"]
