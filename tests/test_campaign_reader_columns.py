"""Column names as plate readers' list exports write them (Envision, PHERAstar/BMG, Tecan): ``Well Position``,
``Signal``, ``RFU``, ``RLU``, ``Counts`` ... were refused ("missing column(s) well or compound_id, outcome"); the
unambiguous ones are read now. A header with two columns that could hold the outcomes is refused naming both and
``--outcome-column``; a ``Sample`` or ``Barcode`` column is not read as an id, and a missing column says why."""

from __future__ import annotations

import pytest
from campaign_util import new_campaign

from screenbai.campaign import ResultsError
from screenbai.cli import main


@pytest.fixture()
def camp(tmp_path):
    c = new_campaign(tmp_path / "c.campaign")
    c.next_plate(8)
    yield c
    c.close()


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
