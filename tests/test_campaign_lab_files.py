"""Results files as labs write them by hand or export them (labM): a well written 'A 1' or A-01, the well in a
Row and a Column column, a thousands separator outside a ';' file, a typeset minus sign, an Excel 97-2003 .xls."""

from __future__ import annotations

import pytest
from campaign_util import synthetic_library

from screenbai.campaign import Campaign, ResultsError


def _told(camp, plate_id="P001") -> dict[str, float]:
    return dict(camp._con.execute("SELECT well, value FROM outcomes WHERE plate_id = ?", (plate_id,)).fetchall())


def _lines(path, header, rows):
    path.write_text("\n".join([",".join(header)] + [",".join(r) for r in rows]) + "\n")
    return path


@pytest.mark.parametrize("form", ["{r} {c}", "{r}-{c:02d}", "{r}_{c}", "{r}:{c}"])
def test_a_well_written_with_a_space_or_a_dash_is_the_plate_s_well(camp, tmp_path, form):
    """'A 1' and A-01 were refused on every row ("well 'A 1' is not on plate P001"), though they name one well."""
    plate = camp.plate("P001")
    rows = [[plate.plate_id, form.format(r=w[0], c=int(w[1:])), str(k % 2)] for k, w in enumerate(plate.wells)]
    assert camp.record(_lines(tmp_path / "r.csv", ["plate_id", "well", "outcome"], rows)).n_outcomes == len(plate)
    assert _told(camp) == {w: float(k % 2) for k, w in enumerate(plate.wells)}


def test_a_well_in_a_row_and_a_column_column_is_read_as_one_well(camp, tmp_path):
    """A reader's export with Row (A, or 1 for A) and Column columns was refused: "missing column(s) well or
    compound_id". The two are read as the well; a compound column beside them is checked against it, and a row or
    column not on the plate is named."""
    plate = camp.plate("P001")
    # rows numbered from 1, written in column-major order with the compound beside each
    rows = [
        [plate.plate_id, str(ord(w[0]) - 64), str(int(w[1:])), cid, str(k % 2)]
        for k, (w, cid) in enumerate(zip(plate.wells, plate.compound_ids))
    ][::-1]
    bad = [list(r) for r in rows]
    bad[0][1], bad[1][3] = "Q", rows[2][3]
    header = ["Plate", "Row", "Column", "Compound", "Value"]
    with pytest.raises(ResultsError) as info:
        camp.record(_lines(tmp_path / "bad.csv", header, bad))
    text = str(info.value)
    assert f"bad.csv: line 2: well 'Q{int(plate.wells[-1][1:])}' is not on plate P001" in text
    assert f"bad.csv: line 3: compound {rows[2][3]!r} was not in well P001/{plate.wells[-2]}" in text
    assert _told(camp) == {}  # nothing recorded
    assert camp.record(_lines(tmp_path / "r.csv", header, rows)).n_outcomes == len(plate)
    assert _told(camp) == {w: float(k % 2) for k, w in enumerate(plate.wells)}


def test_a_row_and_column_header_below_a_reader_s_own_lines_is_found(camp, tmp_path):
    """A reader's list export (its name, date and protocol above the header) with Row, Column and Value, recorded with
    --plate: the header was not looked for below line 1 without a Well column, and the file was refused naming the
    reader's first line as its header."""
    plate = camp.plate("P001")
    rows = [[w[0], str(int(w[1:])), str(k % 2)] for k, w in enumerate(plate.wells)]
    path = tmp_path / "reader.csv"
    _lines(path, ["Row", "Column", "Value"], rows)
    path.write_text("Reader: EnVision\nDate: 2026-11-28\n\n" + path.read_text())
    assert camp.record(path, plate="P001").n_outcomes == len(plate)
    assert _told(camp) == {w: float(k % 2) for k, w in enumerate(plate.wells)}


def _continuous(tmp_path):
    return Campaign.create(
        tmp_path / "x.campaign", synthetic_library(K=12, d=3), "lin-tas", {"sigma": 1.0}, seed=1, outcome="continuous"
    )


def test_a_comma_grouping_thousands_outside_a_semicolon_file_is_not_taken_for_a_decimal_comma(tmp_path):
    """'1,234' in a tab or comma file was refused with "(a decimal comma? write 1.234)": followed, the lab records
    a value 1 000 times too small where ',' grouped thousands. Both readings are named now; '1,234.5' is thousands."""
    with _continuous(tmp_path) as camp:
        plate = camp.next_plate(4)
        values = ["1,234", "1,234.5", "12,5", "7"]
        path = tmp_path / "r.tsv"
        path.write_text(
            "plate_id\twell\toutcome\n" + "".join(f"{plate.plate_id}\t{w}\t{v}\n" for w, v in zip(plate.wells, values))
        )
        with pytest.raises(ResultsError) as info:
            camp.record(path)
        text = str(info.value)
        assert (
            "outcome '1,234' for well P001/A01: not a number (a thousands separator? write 1234, or 1.234 if ',' "
            "is the decimal comma there)" in text
        )
        assert "write 1.234)" not in text
        assert "outcome '1,234.5' for well P001/A02: not a number (',' grouping thousands? write 1234.5)" in text
        assert "outcome '12,5' for well P001/A03: not a number (a decimal comma? write 12.5)" in text


def test_a_typeset_minus_sign_is_a_minus(tmp_path):
    """'\u22120.5' (a value copied from Word or a PDF report) was refused as not a number."""
    with _continuous(tmp_path) as camp:
        plate = camp.next_plate(2)
        path = _lines(
            tmp_path / "r.csv",
            ["plate_id", "well", "outcome"],
            [[plate.plate_id, plate.wells[0], "\u22120.5"], [plate.plate_id, plate.wells[1], "2"]],
        )
        assert camp.record(path).n_outcomes == 2
        assert _told(camp) == {plate.wells[0]: -0.5, plate.wells[1]: 2.0}


def test_an_excel_97_2003_workbook_is_named_with_the_way_on(camp, tmp_path):
    """A legacy .xls (OLE2) was called "probably UTF-16 without a byte-order mark" with an iconv command that cannot
    help; it is named now, with Excel's Save As."""
    path = tmp_path / "plate.xls"
    path.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(600))
    with pytest.raises(ResultsError) as info:
        camp.record(path)
    text = str(info.value)
    assert "plate.xls: this is an Excel 97-2003 workbook (.xls)" in text and "save it as 'CSV UTF-8'" in text
    assert "UTF-16" not in text
