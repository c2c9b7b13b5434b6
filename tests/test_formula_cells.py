"""CSV injection in the CSVs the lab opens in Excel besides the export: the plate files `next` writes and init's
rejected rows. A text cell starting like a formula goes out behind a single quote (textfiles.formula_safe, as the
export does); `record` takes it off again, also when Excel already took it off on saving; numbers are not quoted."""

from __future__ import annotations

import csv

from campaign_util import synthetic_library

from screenbai.campaign import Campaign
from screenbai.campaign.lab.assay import Readout
from screenbai.campaign.lab.layout import PlateLayout

EVIL = ['=HYPERLINK("http://x.example","y")', "+1", "-2", "@SUM(A1)"]


def _campaign(tmp_path):
    lib = synthetic_library(K=16, d=2)
    lib.compounds.loc[:3, "compound_id"] = EVIL
    lib.compounds.loc[4, "smiles"] = "=1+1"  # a text cell of another column
    readout = Readout.build("percent inhibition", unit="%", hit_above=50.0)
    return Campaign.create(tmp_path / "c.campaign", lib, "glgape", {"epsilon": 0.1}, seed=2,
                           layout=PlateLayout.build("24"), readout=readout)


def _rows(path):
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _write(path, rows, columns):
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=columns, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    return path


def _outcomes(rows):
    """The rows with a readout filled in: controls 100 / 0, compounds -5 (a negative number, never quoted)."""
    values = {"positive control": "100", "negative control": "0"}
    return [{**r, "outcome": values.get(r["role"], "-5")} for r in rows]


def test_the_plate_file_quotes_formula_cells_and_record_reads_them_back(tmp_path):
    camp = _campaign(tmp_path)
    plate = camp.next_plate(None, tmp_path / "P001.csv")
    text = (tmp_path / "P001.csv").read_text(encoding="utf-8")
    rows = _rows(plate.path)
    ids = {r["compound_id"] for r in rows}
    on_plate = set(plate.compound_ids) & set(EVIL)
    assert on_plate and {"'" + e for e in on_plate} <= ids and not on_plate & ids
    assert not any(line.startswith(("=", "+", "-", "@")) or ",=" in line or ",-" in line or ",+" in line
                   for line in text.splitlines())
    assert all(r["outcome"] == "" for r in rows)
    # the lab's results file is the plate file with its outcomes typed in, quotes kept: recorded by well and id
    filled = _write(tmp_path / "R001.csv", _outcomes(rows), list(rows[0]))
    summary = camp.record(filled)
    assert summary is not None and camp.open_wells() == {}
    camp.close()


def test_record_reads_ids_whose_quote_excel_took_off(tmp_path):
    """Excel saving the file again may drop the quote: '=x and =x are then the one id, also for rows giving the
    compound id alone (no well), which are matched by id."""
    camp = _campaign(tmp_path)
    plate = camp.next_plate(None, tmp_path / "P001.csv")
    rows = _outcomes(_rows(plate.path))
    assert set(plate.compound_ids) & set(EVIL)
    controls = [r for r in rows if r["role"] != "compound"]
    compounds = [{**r, "well": ""} for r in rows if r["role"] == "compound"]  # by compound id alone
    # half as written (quoted), half as Excel saved them (the quote gone)
    mixed = [r if k % 2 else {**r, "compound_id": r["compound_id"].removeprefix("'")} for k, r in enumerate(compounds)]
    assert {r["compound_id"] for r in mixed} & set(EVIL) and {r["compound_id"] for r in mixed} & {"'" + e for e in EVIL}
    results = _write(tmp_path / "R001.csv", controls + mixed, ["plate_id", "well", "compound_id", "outcome"])
    camp.record(results)
    assert camp.open_wells() == {}
    camp.close()


def test_the_rejected_rows_csv_quotes_formula_cells_not_row_numbers(tmp_path, capsys):
    from screenbai.cli import main

    lib = tmp_path / "lib.csv"
    lines = ["name,smiles"] + [f"L{k:02d},{'C' * (k + 1)}O" for k in range(10)]
    lines += ['"=HYPERLINK(""http://x.example"",""y"")",C1CC(', "-3,=1+1", "@x,"]
    lib.write_text("\n".join(lines) + "\n", encoding="utf-8")
    camp = tmp_path / "s.campaign"
    argv = ["campaign", "init", str(camp), "--library", str(lib), "--id-column", "name", "--smiles-column", "smiles",
            "--d", "3", "--rejected-out", str(tmp_path / "rej.csv")]
    assert main(argv) == 0
    capsys.readouterr()
    text = (tmp_path / "rej.csv").read_text(encoding="utf-8")
    rows = _rows(tmp_path / "rej.csv")
    assert [r["compound_id"] for r in rows] == ['\'=HYPERLINK("http://x.example","y")', "'-3", "'@x"]
    assert rows[1]["smiles"] == "'=1+1" and [r["source_row"] for r in rows] == ["12", "13", "14"]
    assert not any(cell.startswith(("=", "+", "-", "@")) for line in csv.reader(text.splitlines()) for cell in line)
