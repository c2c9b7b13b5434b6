"""Column names as plate readers' list exports write them (Envision, PHERAstar/BMG, Tecan): ``Well Position``,
``Signal``, ``RFU``, ``RLU``, ``Counts`` ... were refused ("missing column(s) well or compound_id, outcome"); the
unambiguous ones are read now. A header with two columns that could hold the outcomes is refused naming both and
``--outcome-column``; a ``Sample`` or ``Barcode`` column is not read as an id, and a missing column says why."""

from __future__ import annotations

import pytest

from screenbai.campaign import ResultsError
from screenbai.cli import main


def _file(tmp_path, camp, header, row, name="r.csv"):
    """One line per well of P001 under ``header``; ``row(plate_id, well, compound_id, outcome)`` gives its fields."""
    plate = camp.plate("P001")
    lines = [",".join(header)]
    for k, (well, cid) in enumerate(zip(plate.wells, plate.compound_ids)):
        lines.append(",".join(row(plate.plate_id, well, cid, str(k % 2))))
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path, plate


@pytest.mark.parametrize("well, value", [
    ("Well Position", "Signal"), ("Well", "RFU"), ("Well ID", "RLU"), ("Well Name", "Counts"),
    ("well position", "Readout"),
])
def test_a_plate_reader_s_column_names_are_read(camp, tmp_path, well, value):
    path, plate = _file(tmp_path, camp, ["Plate", well, value], lambda p, w, c, v: [p, w, v])
    rec = camp.record(path)
    assert rec.n_outcomes == len(plate)
    told = dict(camp._con.execute("SELECT well, value FROM outcomes WHERE plate_id = 'P001'").fetchall())
    assert told == {w: float(k % 2) for k, w in enumerate(plate.wells)}


def test_two_candidate_value_columns_are_refused_naming_both_and_the_option(camp, tmp_path):
    """An Envision-style list with Signal and Result: which one holds the outcomes cannot be told; the error names
    both and --outcome-column, which then reads the one named (the other ignored)."""
    path, plate = _file(
        tmp_path, camp, ["Plate", "Well", "Signal", "Result"], lambda p, w, c, v: [p, w, "12345", v]
    )
    with pytest.raises(ResultsError) as info:
        camp.record(path)
    assert ("r.csv: line 1: 2 columns could hold the outcomes ('signal' and 'result'): say which with "
            "--outcome-column") in str(info.value)
    with pytest.raises(ResultsError, match=r"--outcome-column 'Ratio' is not a column of the header"):
        camp.record(path, outcome_column="Ratio")
    assert camp.record(path, outcome_column="Result").n_outcomes == len(plate)


def test_outcome_column_from_the_command_line(camp, tmp_path, capsys):
    path, plate = _file(tmp_path, camp, ["Plate", "Well", "RFU", "Value"], lambda p, w, c, v: [p, w, "9", v])
    camp.close()
    assert main(["campaign", "record", str(tmp_path / "c.campaign"), str(path)]) == 2
    assert "('rfu' and 'value')" in capsys.readouterr().err
    assert main(["campaign", "record", str(tmp_path / "c.campaign"), str(path), "--outcome-column", "Value"]) == 0


def test_two_well_columns_are_refused_naming_both(camp, tmp_path):
    path, _ = _file(tmp_path, camp, ["Plate", "Well", "Well Position", "Result"], lambda p, w, c, v: [p, w, w, v])
    with pytest.raises(ResultsError, match=r"column 'well' appears 2 times \('well' and 'well_position'\); keep one"):
        camp.record(path)


def test_a_sample_column_is_not_read_as_the_compound_and_the_error_says_so(camp, tmp_path):
    """A reader's Sample column holds its sample labels (X1, S1, Blank B): not read as compound_id, and the missing
    column's error says why."""
    path, _ = _file(tmp_path, camp, ["Plate", "Sample", "Signal"], lambda p, w, c, v: [p, c, v])
    with pytest.raises(ResultsError) as info:
        camp.record(path)
    message = str(info.value)
    assert "missing column(s) well or compound_id" in message
    assert "'sample' is not read: it usually holds sample labels (X1, S1, Blank B)" in message


@pytest.mark.parametrize("column, named, factor, way", [
    ("IC50 (uM)", "uM", "1000", "multiply"), ("ic50_um", "uM", "1000", "multiply"),
    ("IC50 [pM]", "pM", "1000", "divide"), ("IC50 (µmol/L)", "µmol/L", "1000", "multiply"),
])
def test_an_outcome_column_in_another_unit_than_the_campaign_s_is_refused(tmp_path, column, named, factor, way):
    """An IC50 campaign in nM, a lab file whose column says uM, read with --outcome-column: every value was recorded as
    nM, 1000 times too potent (all hits at 1 uM). The header's unit is checked against the campaign's; the same unit,
    or a header naming none, is read."""
    from campaign_util import synthetic_library

    from screenbai.campaign import Campaign
    from screenbai.campaign.lab.assay import Readout

    readout = Readout.build("IC50", unit="nM", hit_below=1000.0)
    c = Campaign.create(tmp_path / "ic.campaign", synthetic_library(K=30, d=3), "glgape", {"epsilon": 0.1}, seed=2,
                        readout=readout)
    c.next_plate(8)
    path, plate = _file(tmp_path, c, ["Plate", "Well", column], lambda p, w, cid, v: [p, w, "0.5"])
    with pytest.raises(ResultsError) as info:
        c.record(path, outcome_column=column)
    assert (f"r.csv: line 1: the column {column!r} names {named}, but this campaign's IC50 is in nM (declared at "
            f"init): read as nM, every value would be off by a factor of {factor}; convert the values to nM ({way} by "
            f"{factor})") in str(info.value)
    assert c._con.execute("SELECT COUNT(*) FROM outcomes").fetchone()[0] == 0
    same, _ = _file(tmp_path, c, ["Plate", "Well", "IC50 (nM)"], lambda p, w, cid, v: [p, w, "500"], name="n.csv")
    assert c.record(same, outcome_column="IC50 (nM)").n_outcomes == len(plate)
    c.close()


def test_a_reader_s_list_export_with_its_own_lines_above_the_header_is_read(camp, tmp_path):
    """A reader's list export begins with its own lines (its name, the date, a blank line) above 'Well Position,
    Sample,Signal': it was refused as "line 1: missing column(s) plate_id, outcome, well or compound_id; header is
    ['plate_reader_export', '', '']". Its header is found below them (line numbers kept in the errors), a missing
    plate column names --plate, and two value columns are one problem, not also a missing outcome column."""
    plate = camp.plate("P001")
    top = "Plate Reader Export,,\nDate,2026-11-28,\n\nWell Position,Sample,Signal\n"
    body = "".join(f"{w},S{k},{k % 2}\n" for k, w in enumerate(plate.wells))
    path = tmp_path / "reader.csv"
    path.write_text(top + body.replace(f"{plate.wells[1]},S1,1", f"{plate.wells[1]},S1,x1"))
    with pytest.raises(ResultsError) as info:
        camp.record(path)
    assert ("reader.csv: line 4: missing column(s) plate_id; header is ['well_position', 'sample', 'signal']"
            in str(info.value))
    assert "a list of wells without a plate column: name its plate, `record ... --plate P001`" in str(info.value)
    with pytest.raises(ResultsError, match=r"reader\.csv: line 6: outcome 'x1' for well P001/"):
        camp.record(path, plate="P001")
    path.write_text(top + body)
    assert camp.record(path, plate="P001").n_outcomes == len(plate)
    told = dict(camp._con.execute("SELECT well, value FROM outcomes WHERE plate_id = 'P001'").fetchall())
    assert told == {w: float(k % 2) for k, w in enumerate(plate.wells)}
    two, _ = _file(tmp_path, camp, ["Plate", "Well", "Signal", "RFU"], lambda p, w, c, v: [p, w, v, v], name="t.csv")
    with pytest.raises(ResultsError) as info:
        camp.record(two)
    assert "1 problem(s)" in str(info.value) and "missing column(s) outcome" not in str(info.value)
