"""A plate reader's export as a grid (one line per plate row, one column per plate column), recorded with
``record --plate``: every grid was refused ("missing column(s) plate_id, outcome, well or compound_id"), so a
lab had to retype 96 to 1 536 readings into a long list by hand."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest
from campaign_util import percent_campaign

from screenbai.campaign import PlateLayout, ResultsError
from screenbai.campaign.lab.plates import row_name
from screenbai.cli import main


def _campaign(tmp_path, fmt, **layout):
    return percent_campaign(tmp_path / "g.campaign", PlateLayout.build(fmt, **layout))


def _reading(plate, layout, seed=0):
    """A reader's value for every well of the plate's format: controls near 95 and 5, compounds 80 (a hit) or 20
    by compound, unused and empty wells a background near 1."""
    rng = np.random.default_rng(seed)
    compound = dict(zip(plate.wells, plate.compound_ids))
    out = {}
    for w in layout.all_wells():
        if w in layout.positive:
            v = 95 + 2 * rng.normal()
        elif w in layout.negative:
            v = 5 + 2 * rng.normal()
        elif w in compound:
            v = (80.0 if int(compound[w][3:]) % 3 == 0 else 20.0) + rng.normal()
        else:
            v = 1 + 0.1 * rng.normal()
        out[w] = round(float(v), 3)
    return out


def _grid(values, layout, sep=",", decimal=".", above=(), blank_column=False, newline="\n"):
    lines = list(above) + [sep.join([""] + [str(c) for c in range(1, layout.cols + 1)] + [""] * blank_column)]
    for r in range(layout.rows):
        row = row_name(r)
        cells = [str(values[f"{row}{c:02d}"]).replace(".", decimal) for c in range(1, layout.cols + 1)]
        lines.append(sep.join([row, *cells] + [""] * blank_column))
    return newline.join(lines) + newline


def _raw(camp):
    con = sqlite3.connect(camp.path)
    out = dict(((p, w), (k, v)) for p, w, k, v in con.execute("SELECT plate_id, well, kind, raw FROM readouts"))
    con.close()
    return out


@pytest.mark.parametrize(
    "fmt, options",
    [
        ("96", {}),
        ("384", {"empty_edge": True}),
        ("1536", {}),
        ("24", {"positive": "A01,C03", "negative": "B05,D02"}),  # controls scattered
    ],
)
def test_a_readers_grid_is_recorded_well_by_well(tmp_path, fmt, options):
    camp = _campaign(tmp_path, fmt, **options)
    layout = camp.layout
    plate = camp.next_plate(min(12, layout.compounds_per_plate))
    values = _reading(plate, layout)
    path = tmp_path / "grid.csv"
    path.write_text(_grid(values, layout))
    rec = camp.record(path, plate="P001")
    assert rec.n_outcomes == len(plate) and rec.qc["P001"][1] == "pass"
    raw = _raw(camp)
    used = set(plate.wells) | set(layout.positive) | set(layout.negative)
    assert {w for (_, w) in raw} == used  # the background of unused and empty wells is left out
    for w in used:
        assert raw[("P001", w)][1] == values[w], w
    told = dict(camp._con.execute("SELECT well, value FROM outcomes"))
    assert all(told[w] == (values[w] >= 50) for w in plate.wells)
    camp.close()


def test_a_european_excel_grid_below_the_readers_metadata(tmp_path):
    """';' separators, decimal commas, a UTF-8 BOM, Windows line ends, the reader's lines above the grid and an
    extra blank column: read as the same values."""
    camp = _campaign(tmp_path, "96")
    plate = camp.next_plate(20)
    values = _reading(plate, camp.layout, seed=1)
    text = _grid(
        values,
        camp.layout,
        sep=";",
        decimal=",",
        blank_column=True,
        newline="\r\n",
        above=["Plate reader;Envision", "Barcode;XY123", ""],
    )
    path = tmp_path / "euro.csv"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert camp.record(path, plate="p001").n_outcomes == len(plate)  # the plate id in any case
    raw = _raw(camp)
    assert all(raw[("P001", w)][1] == values[w] for w in plate.wells)
    camp.close()


def test_outcome_column_on_a_grid_names_the_file_the_column_and_the_grid(tmp_path, capsys):
    """`record --outcome-column Signal` on a reader's grid said "'Signal' is not a column of the header ['plate_id',
    'well', 'outcome']", the reader's internal list, a header the user never wrote, on line 1 (a reader's line)."""
    camp = _campaign(tmp_path, "96")
    plate = camp.next_plate(20)
    path = tmp_path / "reader.csv"
    path.write_text(_grid(_reading(plate, camp.layout), camp.layout, above=["Reader,Envision", "Read,Signal", ""]))
    camp.close()
    argv = ["campaign", "record", str(tmp_path / "g.campaign"), str(path), "--plate", "P001"]
    assert main([*argv, "--outcome-column", "Signal"]) != 0
    err = capsys.readouterr().err
    assert "plate_id" not in err and "['" not in err
    assert (
        f"{path}: line 4: --outcome-column 'Signal' is not a column of this file: it is a 8x12 grid (lines 4-12), "
        "a plate reader's grid whose columns are the plate's columns 1 .. 12, one value per well; record it "
        "without --outcome-column (`record ... reader.csv --plate P001`)"
    ) in err
    assert main(argv) == 0  # as it says


def test_a_grid_that_is_not_the_plate_is_refused_naming_it(tmp_path):
    camp = _campaign(tmp_path, "96")
    plate = camp.next_plate(20)
    values = _reading(plate, camp.layout)
    path = tmp_path / "grid.csv"
    path.write_text(_grid(values, camp.layout))
    with pytest.raises(
        ResultsError,
        match=r"a 8x12 grid \(lines 1-9\), a plate reader's export, names no plate: "
        r"say which plate it is with --plate",
    ):
        camp.record(path)
    with pytest.raises(ResultsError, match="--plate 'P007' is not a plate of this campaign"):
        camp.record(path, plate="P007")
    small = tmp_path / "small.csv"
    small.write_text(_grid(values, PlateLayout.build("24")))  # a 24-well grid for a 96-well plate
    with pytest.raises(
        ResultsError,
        match=r"a 4x6 grid \(lines 1-5\) where plate P001 is a 96-well plate "
        r"\(8 rows x 12 columns\)",
    ):
        camp.record(small, plate="P001")
    two = tmp_path / "two.csv"
    two.write_text(_grid(values, camp.layout) + "\n" + _grid(values, camp.layout))  # a second read below
    with pytest.raises(ResultsError, match=r"line 11: more after the 8x12 grid of lines 1-9 .* one grid per file"):
        camp.record(two, plate="P001")
    bad = tmp_path / "bad.csv"
    bad.write_text(_grid(values, camp.layout).replace(str(values[plate.wells[0]]), "12,5", 1))  # one cell too many
    with pytest.raises(
        ResultsError, match=r"line 2: row A has 13 values where the grid's header \(line 1\) numbers 12"
    ):
        camp.record(bad, plate="P001")
    bad.write_text(_grid(values, camp.layout).replace(str(values[plate.wells[0]]), '"12,5"', 1))
    with pytest.raises(ResultsError, match=rf"line 2: outcome '12,5' for well P001/{plate.wells[0]}: .*decimal comma"):
        camp.record(bad, plate="P001")
    assert camp.open_wells() == {"P001": len(plate)}  # nothing recorded
    camp.close()


def test_a_list_of_wells_without_a_plate_column_and_the_cli(tmp_path, capsys):
    """A reader's long export (Well, Value; no plate id) takes its plate from --plate, as the command line gives it;
    a file naming another plate than --plate is refused."""
    camp = _campaign(tmp_path, "24")
    plate = camp.next_plate(None)
    values = _reading(plate, camp.layout)
    layout = camp.layout
    path = tmp_path / "wells.csv"
    wells = [*layout.positive, *layout.negative, *plate.wells]
    path.write_text("Well,Value\n" + "".join(f"{w[0].lower()}{int(w[1:])},{values[w]}\n" for w in wells))
    other = tmp_path / "other.csv"
    other.write_text("plate_id,well,outcome\n" + "".join(f"P002,{w},{values[w]}\n" for w in wells))
    with pytest.raises(ResultsError, match="line 2: plate 'P002' where --plate says P001"):
        camp.record(other, plate="P001")
    camp.close()
    assert main(["campaign", "record", str(tmp_path / "g.campaign"), str(path), "--plate", "P001"]) == 0
    assert f"recorded {len(plate)} outcome(s)" in capsys.readouterr().out


def _excel_workbook(path, rows):
    """A workbook as Excel saves one: text in sharedStrings.xml (t="s"), numbers as numbers, the sheet's part
    named by an absolute target, empty cells left out."""
    import zipfile
    from xml.sax.saxutils import escape

    shared: list[str] = []
    body = []
    for i, row in enumerate(rows, start=1):
        cells = []
        for j, v in enumerate(row):
            ref = f"{row_name(j)}{i}"
            if v is None or v == "":
                continue
            if isinstance(v, str):
                shared.append(v)
                cells.append(f'<c r="{ref}" t="s"><v>{len(shared) - 1}</v></c>')
            else:
                cells.append(f'<c r="{ref}"><v>{v!r}</v></c>')
        body.append(f'<row r="{i}">{"".join(cells)}</row>')
    main = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
    rel = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    pkg = "http://schemas.openxmlformats.org/package/2006/relationships"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr(
            "xl/workbook.xml",
            f'<workbook xmlns="{main}" xmlns:r="{rel}"><sheets><sheet name="Results" sheetId="1" r:id="rId7"/>'
            "</sheets></workbook>",
        )
        z.writestr(
            "xl/_rels/workbook.xml.rels",
            f'<Relationships xmlns="{pkg}"><Relationship Id="rId7" Type="{rel}/worksheet" '
            'Target="/xl/worksheets/data.xml"/></Relationships>',
        )
        z.writestr(
            "xl/sharedStrings.xml",
            f'<sst xmlns="{main}">' + "".join(f"<si><t>{escape(s)}</t></si>" for s in shared) + "</sst>",
        )
        z.writestr(
            "xl/worksheets/data.xml", f'<worksheet xmlns="{main}"><sheetData>{"".join(body)}</sheetData></worksheet>'
        )
    return path


def test_an_excel_workbook_is_read_as_a_long_list_or_a_grid(tmp_path):
    """A results file saved as .xlsx (a plate reader's default) was refused ("save it as 'CSV UTF-8'"): its first
    sheet is read now, its row numbers as the lines of the errors."""
    camp = _campaign(tmp_path, "96")
    layout = camp.layout
    plate = camp.next_plate(20)
    values = _reading(plate, layout, seed=2)
    wells = [*layout.positive, *layout.negative, *plate.wells]
    long = [["Plate ID", "Well", "Outcome"]] + [["P001", w, values[w]] for w in wells]
    bad = [row[:] for row in long]
    bad[5][2] = "n.d.x"
    with pytest.raises(ResultsError, match=rf"line 6: outcome 'n.d.x' for well P001/{wells[4]}"):
        camp.record(_excel_workbook(tmp_path / "bad.xlsx", bad))
    assert camp.record(_excel_workbook(tmp_path / "long.xlsx", long)).n_outcomes == len(plate)
    raw = _raw(camp)
    assert all(raw[("P001", w)][1] == values[w] for w in wells)
    # the next plate as the reader's grid below two lines of metadata, in a workbook
    plate2 = camp.next_plate(20)
    values2 = _reading(plate2, layout, seed=3)
    grid = [["Envision", "run 7"], [], ["", *range(1, 13)]] + [
        [row_name(r), *(values2[f"{row_name(r)}{c:02d}"] for c in range(1, 13))] for r in range(8)
    ]
    assert camp.record(_excel_workbook(tmp_path / "grid.xlsx", grid), plate="P002").n_outcomes == len(plate2)
    raw = _raw(camp)
    assert all(raw[("P002", w)][1] == values2[w] for w in plate2.wells)
    camp.close()
