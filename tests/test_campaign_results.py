"""Results files: every bad file is refused with file, line and value named, and nothing written."""

from __future__ import annotations

import hashlib
import sqlite3

import pytest
from campaign_util import new_campaign, synthetic_library, write_results

from screenbai.campaign import Campaign, ResultsError


def _content(path):
    """Every row of every table (the campaign's whole state), to prove nothing was written."""
    con = sqlite3.connect(path)
    tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    digest = hashlib.sha256(
        repr([(t, con.execute(f"SELECT * FROM {t} ORDER BY 1").fetchall()) for t in tables]).encode()
    )
    con.close()
    return digest.hexdigest()


def _refused(camp, path, *expected):
    before = _content(camp.path)
    with pytest.raises(ResultsError) as info:
        camp.record(path)
    assert _content(camp.path) == before
    message = str(info.value)
    assert "nothing was recorded" in message
    for text in expected:
        assert text in message, message
    return message


def _rows(tmp_path, text, name="r.csv"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_good_file_by_well_and_by_compound(camp, tmp_path):
    plate = camp.plate("P001")
    half = len(plate) // 2
    first = type(plate)(
        plate.plate_id, plate.wells[:half], plate.arms[:half], plate.compound_ids[:half], plate.smiles[:half]
    )
    rec = camp.record(write_results(tmp_path / "a.csv", first, [1] * half))
    assert (rec.n_outcomes, rec.n_failed) == (half, 0)
    rest = type(plate)(
        plate.plate_id, plate.wells[half:], plate.arms[half:], plate.compound_ids[half:], plate.smiles[half:]
    )
    camp.record(write_results(tmp_path / "b.csv", rest, [0] * (len(plate) - half), by_compound=True))
    n, s, _, failed = camp.observations()
    assert n.sum() == len(plate) and s.sum() == half and failed == 0
    assert camp.open_wells() == {}


@pytest.mark.parametrize(
    "text, expected",
    [
        ("plate_id,well,outcome\nP009,A01,1\n", ["line 2", "'P009'", "not a plate", "correct the plate_id"]),
        ("plate_id,well,outcome\nP001,Z77,1\n", ["line 2", "'Z77'", "not on plate P001"]),
        (
            "plate_id,well,outcome\nP001,A01,1\nP001,A02,0\nP001,A01,0\n",
            ["line 4", "P001/A01", "appears twice", "line 2, outcome '1'; here '0'", "delete the other"],
        ),
        ("plate_id,well,outcome\nP001,A01,2\n", ["line 2", "'2'", "binary"]),
        ("plate_id,well,outcome\nP001,A01,0.5\n", ["line 2", "'0.5'"]),
        ("plate_id,well,outcome\nP001,A01,yes\n", ["line 2", "'yes'"]),
        ("plate_id,well,outcome\nP001,A01,nan\n", ["line 2", "'nan'"]),
        ("plate_id,well,outcome\nP001,A01,1,7\n", ["line 2", "4 field(s)", "3"]),
        ("plate,result\nP001,1\n", ["line 1", "well or compound_id"]),
        ("well,outcome\nA01,1\n", ["line 1", "plate_id"]),
        ("", ["empty"]),
        ("plate_id,well,outcome\n", ["no data rows"]),
        ("plate_id,compound_id,outcome\nP001,CPD9999,1\n", ["line 2", "'CPD9999'", "not on plate P001"]),
    ],
)
def test_bad_files_are_refused_with_nothing_written(camp, tmp_path, text, expected):
    message = _refused(camp, _rows(tmp_path, text), "r.csv", *expected)
    assert message.startswith(str(tmp_path / "r.csv"))


def test_compound_not_in_that_well(camp, tmp_path):
    plate = camp.plate("P001")
    other = next(c for c in camp.compound_ids if c != plate.compound_ids[0])
    p = _rows(tmp_path, f"plate_id,well,compound_id,outcome\nP001,{plate.wells[0]},{other},1\n")
    _refused(camp, p, "line 2", repr(other), f"P001/{plate.wells[0]}", plate.compound_ids[0])


def test_binary_file_and_bad_encoding(camp, tmp_path):
    p = tmp_path / "x.csv"
    p.write_bytes(b"\x00garbage\x80\x81")
    _refused(camp, p, "not UTF-8 text at line 1", "encodings tried")
    p.write_bytes("plate_id,well,outcome\nP001,A01,1,caf\xe9\n".encode("cp1252"))
    _refused(camp, p, "line 2", "Latin-1/Windows-1252", "iconv")


def test_excel_unicode_text_is_read(camp, tmp_path):
    """Excel's 'Unicode text' is UTF-16 with a byte-order mark, tab-separated (refused before)."""
    p = tmp_path / "excel.txt"
    p.write_bytes("plate_id\twell\toutcome\r\nP001\tA01\t1\r\nP001\tA02\t0\r\n".encode("utf-16"))
    rec = camp.record(p)
    assert (rec.n_outcomes, rec.n_failed) == (2, 0)
    n, s, _, _ = camp.observations()
    assert (n.sum(), s.sum()) == (2, 1)


def test_plate_recorded_twice_and_one_well_again(camp, tmp_path):
    plate = camp.plate("P001")
    good = write_results(tmp_path / "first.csv", plate, [1] * len(plate))
    camp.record(good)
    again = write_results(tmp_path / "again.csv", plate, [0] * len(plate))
    _refused(camp, again, "plate P001 was already recorded", "first.csv")
    one = _rows(tmp_path, f"plate_id,well,outcome\nP001,{plate.wells[3]},1\n", "one.csv")
    _refused(camp, one, "line 2", f"P001/{plate.wells[3]}", "already recorded", "first.csv")


def test_a_whole_plate_after_part_of_it_and_rows_of_an_unknown_plate_are_one_problem_each(camp, tmp_path):
    """A plate reader's whole-plate export recorded after part of the plate gave one line per well, 'was already
    recorded', with no way on; a file of another campaign's plate one line per row: 96 lines of the same problem.
    Each is now one problem naming the lines, the wells and what to do."""
    plate = camp.plate("P001")
    part = type(plate)(plate.plate_id, plate.wells[:5], plate.arms[:5], plate.compound_ids[:5], plate.smiles[:5])
    camp.record(write_results(tmp_path / "part.csv", part, [1] * 5))
    whole = write_results(tmp_path / "whole.csv", plate, [1] * len(plate))
    message = _refused(camp, whole, "1 problem(s)", "lines 2-6: 5 wells of plate P001 were already recorded",
                       f"({plate.wells[0]}..{plate.wells[4]}; from part.csv", "delete those rows and record the file")
    assert message.count("\n  ") == 1
    other = _rows(tmp_path, whole.read_text().replace("P001,", "P009,"), "other.csv")
    message = _refused(camp, other, "1 problem(s)",
                       f"lines 2-{len(plate) + 1}: plate 'P009' ({len(plate)} rows) is not a plate of")
    assert message.count("\n  ") == 1


def test_a_plate_readers_export_of_every_well_is_one_problem_and_its_header_is_read(tmp_path):
    """A plate reader exports every well of the plate, with headers such as 'Plate ID': the header was refused
    ('missing column(s) plate_id'), and each row of a well the plate left empty or unused was one problem (78
    identical lines for GLGapE's first plate of 18 wells). 'Plate ID' is plate_id now, and those rows one problem."""
    from screenbai.campaign import PlateLayout

    layout = PlateLayout.build("96", controls="none", empty_edge=True)
    camp = Campaign.create(tmp_path / "e.campaign", synthetic_library(), "glgape", {"epsilon": 0.1}, seed=0,
                           layout=layout)
    plate = camp.next_plate(30)
    used = dict(zip(plate.wells, plate.compound_ids))
    rows = [f"P001,{w},{used.get(w, '')},{int(w in used)}" for w in layout.all_wells()]
    message = _refused(camp, _rows(tmp_path, "Plate ID,Well,Compound ID,Outcome\n" + "\n".join(rows) + "\n"),
                       "2 problem(s)", "36 rows name empty edge wells of plate P001 (A01..H12; its layout leaves",
                       f"{60 - len(plate)} rows name wells plate P001 left unused", f"its compound wells are "
                       f"{plate.wells[0]}..{plate.wells[-1]})", "delete those rows")
    assert message.count("\n  ") == 2
    kept = [r for r in rows if r.split(",")[2]]
    rec = camp.record(_rows(tmp_path, "Plate ID,Well,Compound ID,Outcome\n" + "\n".join(kept) + "\n", "ok.csv"))
    assert rec.n_outcomes == len(plate)
    camp.close()


def test_two_results_files_joined_with_their_headers(camp, tmp_path):
    """Two files joined one after the other (cat A.csv B.csv) repeat the header in the middle: it was refused as
    "plate 'plate_id' is not a plate of this campaign". The same header again holds no data and is passed over; a
    header of another layout is refused, its rows being read in line 1's columns."""
    plate = camp.plate("P001")
    first = write_results(tmp_path / "a.csv", plate, [1] * len(plate)).read_text().splitlines()
    half = len(plate) // 2
    joined = first[: half + 1] + [first[0]] + first[half + 1:]
    rec = camp.record(_rows(tmp_path, "\n".join(joined) + "\n", "joined.csv"))
    assert rec.n_outcomes == len(plate)
    other = new_campaign(tmp_path / "o.campaign")
    other.next_plate(8)
    rows = write_results(tmp_path / "b.csv", other.plate("P001"), [0] * 8).read_text().splitlines()
    _refused(other, _rows(tmp_path, "\n".join(rows[:3] + ["well,plate_id,outcome"] + rows[3:]) + "\n", "two.csv"),
             "1 problem(s)", "line 4: a header unlike line 1's", "record each file on its own")
    other.close()


def test_every_problem_is_listed_at_once(camp, tmp_path):
    p = _rows(tmp_path, "plate_id,well,outcome\nP001,A01,3\nP002,A01,1\nP001,Q1,1\n")
    message = _refused(camp, p, "3 problem(s)", "line 2", "line 3", "line 4")
    assert message.count("\n  ") == 3


def test_failed_wells_are_accepted_as_empty_or_failed(camp, tmp_path):
    plate = camp.plate("P001")
    values = ["failed", ""] + [1] * (len(plate) - 2)
    rec = camp.record(write_results(tmp_path / "f.csv", plate, values))
    assert (rec.n_outcomes, rec.n_failed) == (len(plate) - 2, 2)
    n, _, _, failed = camp.observations()
    assert n.sum() == len(plate) - 2 and failed == 2
    # the failed compounds come back first on the next plate
    nxt = camp.next_plate(2)
    assert sorted(nxt.arms) == sorted(plate.arms[:2])


def test_refused_file_changes_nothing_downstream(camp, tmp_path):
    """After a refused file, the campaign proposes what a campaign that never saw it proposes."""
    twin = new_campaign(tmp_path / "twin.campaign")
    twin.next_plate(8)
    with pytest.raises(ResultsError):
        camp.record(_rows(tmp_path, "plate_id,well,outcome\nP001,A01,5\n"))
    for c, name in ((camp, "a.csv"), (twin, "b.csv")):
        plate = c.plate("P001")
        c.record(write_results(tmp_path / name, plate, [1, 0] * (len(plate) // 2) + [1] * (len(plate) % 2)))
    assert camp.next_plate(4).arms == twin.next_plate(4).arms
    twin.close()


def test_wells_written_a1_or_lowercase_and_plate_ids_in_any_case_are_the_plate_map_s(camp, tmp_path):
    """A1, a01 and A01 name one well; p001 is P001: recorded under the plate map's names."""
    _refused(
        camp,
        _rows(tmp_path, "plate_id,well,outcome\nP001,A1,1\nP001,A01,0\n", "twice.csv"),
        "line 3: well P001/A01 appears twice (first on line 2, outcome '1'; here '0')",
    )
    rec = camp.record(_rows(tmp_path, "plate_id,well,outcome\np001,A1,1\nP001,a02,0\nP001,A003,failed\n"))
    assert (rec.n_outcomes, rec.n_failed) == (2, 1)
    con = sqlite3.connect(camp.path)
    assert con.execute("SELECT well, value FROM outcomes ORDER BY well").fetchall() == [
        ("A01", 1.0), ("A02", 0.0), ("A03", None)
    ]
    con.close()


def test_numbers_with_underscores_are_refused(tmp_path):
    """float() reads '1_5' as 15: a continuous outcome typed that way must not become 15."""
    cont = Campaign.create(
        tmp_path / "cont.campaign", synthetic_library(), "m-lingape", {"epsilon": 0.1}, seed=0, outcome="continuous"
    )
    cont.next_plate(4)
    _refused(cont, _rows(tmp_path, "plate_id,well,outcome\nP001,A01,1_5\n"), "line 2", "'1_5'", "not a number")
    cont.close()


@pytest.mark.parametrize("typed", ["TRUE", "no", "hit", "inactive"])
def test_a_binary_outcome_typed_as_a_word_says_what_to_write(camp, tmp_path, typed):
    """Excel's TRUE / FALSE or a 'hit' / 'inactive' in a 0/1 column was refused as "not 0 or 1" alone."""
    _refused(camp, _rows(tmp_path, f"plate_id,well,outcome\nP001,{camp.plate('P001').wells[0]},{typed}\n"), "line 2",
             repr(typed), "not 0 or 1 (a yes / no? write 1 for a hit, 0 for none)")


def test_the_unfilled_plate_file_is_refused_not_recorded_as_all_failed(camp, tmp_path):
    """Recording the plate file before the lab filled it in marked every well failed and closed the
    plate, so the real results were refused later as 'already recorded'."""
    plate = camp.plate("P001")
    blank = camp.write_plate("P001", tmp_path / "P001.csv").path
    _refused(camp, blank, "the outcome column is empty on all 8 rows", "write 'failed'")
    all_failed = write_results(tmp_path / "failed.csv", plate, ["failed"] * len(plate))
    rec = camp.record(all_failed)  # said explicitly: recorded
    assert (rec.n_outcomes, rec.n_failed) == (0, len(plate))


def test_a_file_missing_a_row_names_the_well_it_left_open(tmp_path, capsys):
    """A plate may be recorded in parts, so a results file without one of the plate's rows is recorded; but
    `record` named neither the well left open nor what to do about it (a lost row is the usual cause)."""
    import csv

    from screenbai.cli import main

    c = new_campaign(tmp_path / "c.campaign")
    plate = c.next_plate(8)
    lost = 3
    keep = [k for k in range(len(plate)) if k != lost]
    with open(tmp_path / "r.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["plate_id", "well", "outcome"])
        w.writerows([plate.plate_id, plate.wells[k], k % 2] for k in keep)
    c.close()
    assert main(["campaign", "record", str(tmp_path / "c.campaign"), str(tmp_path / "r.csv")]) == 0
    out = capsys.readouterr().out
    assert f"recorded {len(keep)} outcome(s)" in out
    assert f"plate P001: 1 well(s) not in r.csv, still open: {plate.wells[lost]} ({plate.compound_ids[lost]})" in out
    assert "If a row was lost, record a file with it" in out and "'failed'" in out
    with Campaign.open(tmp_path / "c.campaign") as again:
        assert again.open_wells() == {"P001": 1}


@pytest.mark.parametrize("typed, hint", [
    ("12,5", "a decimal comma? write 12.5"),
    # a comma grouping thousands is the likelier (it said "a decimal comma? write 1.000"); 1,000 may be either
    ("1,000", "a thousands separator? write 1000, or 1.000 if ',' is the decimal comma there"),
    ("12,500,000", "a thousands separator? write 12500000"),  # said "not a number" alone
    ("0,5", "a decimal comma? write 0.5"),
    ("45 %", "a unit after the number? write the number alone"),
    ("12nM", "a unit after the number? write the number alone"),
    ("n.d.", "not determined? that is a failed well"),
    ("5 000", "a space grouping thousands? write 5000"),  # said "not a number" alone
    ("#DIV/0!", "a spreadsheet's error value: the cell's formula failed"),  # so did Excel's error values
    ("#N/A", "a spreadsheet's error value"),
    ("OVRFLW", "a reading beyond the plate reader's range? write 'failed'"),  # and a reader's overflow
    ("1\u202f234,5", "a space grouping thousands? write 1234,5"),  # Excel's narrow no-break space (fr-FR)
])
def test_a_readout_typed_as_labs_do_says_what_it_likely_is(tmp_path, typed, hint):
    """A continuous readout the lab typed with a decimal comma, a unit, a censoring sign or 'n.d.' was refused
    as "not a number" alone; the error now names the likely cause and the fix, and nothing is recorded."""
    cont = Campaign.create(
        tmp_path / "cont.campaign", synthetic_library(), "m-lingape", {"epsilon": 0.1}, seed=0, outcome="continuous"
    )
    cont.next_plate(4)
    _refused(cont, _rows(tmp_path, f'plate_id,well,outcome\nP001,A01,"{typed}"\n'), "line 2", repr(typed),
             "not a number", hint, "'failed'")
    cont.close()


@pytest.mark.parametrize("typed", [">100", "> 10000", "<1", "45 %", "12nM"])
def test_a_readout_in_a_0_1_campaign_is_told_to_write_0_or_1_not_a_limit(tmp_path, typed):
    """A 0/1 campaign (no readout declared) has no limit or unit to write: '>100' was told "write the limit, 100"
    (recorded as an outcome of 100? refused as not 0 or 1 next time) and '45 %' "write the number alone". It is now
    told to write 0 or 1, or 'failed', or to declare the readout at init to record such values."""
    camp = new_campaign(tmp_path / "b.campaign")  # binary, outcomes written as 0/1
    camp.next_plate(4)
    message = _refused(camp, _rows(tmp_path, f'plate_id,well,outcome\nP001,A01,"{typed}"\n'), "line 2")
    what = "a readout with its unit?" if typed in ("45 %", "12nM") else "a value beyond the assay's range?"
    # the advice once: it was followed by "; write 0 or 1, or leave it empty / write 'failed' for a failed well"
    assert message.splitlines()[1].split(": ", 2)[2] == (
        f"outcome {typed!r} for well P001/A01: not 0 or 1 ({what}): this campaign records 0 or 1, with no readout "
        "or cutoff to compare it with: write 1 for a hit, 0 for none, or leave it empty / write 'failed' for a failed "
        "well; to record readouts such as '> 10000' as the hit or non-hit they settle, declare the readout at init "
        "(--readout IC50 --unit nM --hit-below 1000)"
    )
    camp.close()


@pytest.mark.parametrize("typed", [">100", "<= 0.5"])
def test_a_bound_in_a_continuous_campaign_is_not_told_to_write_the_limit(tmp_path, typed):
    """A continuous campaign (no readout declared) told '>100' "write the limit, 100, if it settles hit or not":
    nothing is settled there, and the limit is no value measured. It is now told a bound cannot be recorded."""
    cont = Campaign.create(
        tmp_path / "cont.campaign", synthetic_library(), "m-lingape", {"epsilon": 0.1}, seed=0, outcome="continuous"
    )
    plate = cont.next_plate(2)
    message = _refused(cont, _rows(tmp_path, f'plate_id,well,outcome\nP001,{plate.wells[0]},"{typed}"\n'), "line 2")
    assert message.splitlines()[1].split(": ", 2)[2] == (
        f"outcome {typed!r} for well P001/{plate.wells[0]}: not a number (a value beyond the assay's range?): a "
        "censored value cannot be recorded in a continuous campaign: its algorithm is told the value itself, and a "
        "bound is none; write the value measured, or leave it empty / write 'failed' for a failed well"
    )
    cont.close()


def test_a_semicolon_file_with_decimal_commas_is_read_as_excel_wrote_it(tmp_path):
    """Excel saves CSV with ';' and decimal commas where the comma is the decimal separator: every readout of
    such a file was refused as "not a number"; in a ';' file 12,5 is 12.5 (a ',' file still refuses it)."""
    cont = Campaign.create(
        tmp_path / "cont.campaign", synthetic_library(), "m-lingape", {"epsilon": 0.1}, seed=0, outcome="continuous"
    )
    plate = cont.next_plate(2)
    _refused(cont, _rows(tmp_path, f'plate_id,well,outcome\nP001,{plate.wells[0]},"12,5"\n'), "a decimal comma?")
    text = f"plate_id;well;outcome\nP001;{plate.wells[0]};12,5\nP001;{plate.wells[1]};-0,25\n"
    assert cont.record(_rows(tmp_path, text, "euro.csv")).n_outcomes == 2
    con = sqlite3.connect(cont.path)
    assert sorted(v for (v,) in con.execute("SELECT value FROM outcomes")) == [-0.25, 12.5]
    con.close()
    cont.close()


def _continuous(tmp_path, wells=4):
    camp = Campaign.create(
        tmp_path / "cont.campaign", synthetic_library(), "m-lingape", {"epsilon": 0.1}, seed=0, outcome="continuous"
    )
    return camp, camp.next_plate(wells)


def _semicolon(plate, values):
    return "plate_id;well;outcome\n" + "".join(f"P001;{w};{v}\n" for w, v in zip(plate.wells, values))


@pytest.mark.parametrize("values, bad, expected", [
    # beside decimal commas a '.' groups thousands: 1.234 is 1234 there, not 1.234
    (["12,5", "1.234", "3", "0,5"], "1.234", ["line 3", "line 2: '12,5'", "reads 1234 with '.' grouping thousands",
                                              "or 1.234 with '.' as the decimal point", "write 1234, or 1,234"]),
    (["12,5", "7", "12.5", "0,5"], "12.5", ["line 4", "decimal point in a file that writes decimal commas",
                                            "write 12,5 if it is 12.5"]),
    # no decimal comma and no decimal point elsewhere: nothing tells 1.234 from 1234
    (["1.234", "950", "5.678", "12"], "5.678", ["line 4", "reads 5678", "or 5.678", "no other outcome"]),
    (["1.234.567", "950", "0.5", "12"], "1.234.567", ["line 2", "'.' grouping thousands? write 1234567"]),
])
def test_a_semicolon_number_that_reads_two_ways_refuses_the_file(tmp_path, values, bad, expected):
    """In a ';' file (Excel's CSV where the decimal separator is the comma) 1.234 was read as 1.234 beside
    decimal commas, where it means 1234 (a hit or not turns on it); such a file is now refused whole, naming the
    line, the value and both readings."""
    cont, plate = _continuous(tmp_path)
    message = _refused(cont, _rows(tmp_path, _semicolon(plate, values)), f"outcome {bad!r}", *expected)
    assert "problem(s)" in message and str(tmp_path / "r.csv") in message
    cont.close()


@pytest.mark.parametrize("values, read", [
    (["12.5", "1.234", "0.125", "3"], [0.125, 1.234, 3.0, 12.5]),  # dots as decimal points throughout
    (["12,5", "1,234", "-0,25", "3"], [-0.25, 1.234, 3.0, 12.5]),  # decimal commas throughout
    (["1.2345", "5.678", "950", "12"], [1.2345, 5.678, 12.0, 950.0]),  # 1.2345 is no thousands: dots are decimal
])
def test_a_semicolon_file_writing_numbers_one_way_is_read_that_way(tmp_path, values, read):
    cont, plate = _continuous(tmp_path)
    assert cont.record(_rows(tmp_path, _semicolon(plate, values))).n_outcomes == 4
    assert sorted(v for (v,) in cont._con.execute("SELECT value FROM outcomes")) == read
    cont.close()


def test_a_semicolon_file_of_a_binary_assay_reads_1_000_as_1(tmp_path):
    """On a 0/1 assay only one reading of 1.000 is an outcome (1000 is none), so a ';' file of 1.000 and 0.000 (a
    spreadsheet's number format) is read, not refused as reading two ways (it was)."""
    camp = new_campaign(tmp_path / "c.campaign")
    plate = camp.next_plate(4)
    assert camp.record(_rows(tmp_path, _semicolon(plate, ["1.000", "0.000", "1,0", "0"]))).n_outcomes == 4
    assert [v for (v,) in camp._con.execute("SELECT value FROM outcomes ORDER BY rowid")] == [1.0, 0.0, 1.0, 0.0]
    camp.close()


def test_a_comma_file_reads_a_dot_as_the_decimal_point(tmp_path):
    cont, plate = _continuous(tmp_path, 2)
    cont.record(_rows(tmp_path, f"plate_id,well,outcome\nP001,{plate.wells[0]},1.234\nP001,{plate.wells[1]},7\n"))
    assert sorted(v for (v,) in cont._con.execute("SELECT value FROM outcomes")) == [1.234, 7.0]
    cont.close()


def test_a_mistyped_well_says_what_to_do_and_reads_a_letter_o_as_zero(tmp_path):
    """A well typed 'A1O' (the letter O) or 'Q05' was refused as "not on plate P001 (a 96-well plate, wells
    A01..H12)", with no word of what to do; the error now says to correct it, and names the well a letter O or I typed
    for a digit reads as."""
    from screenbai.campaign.lab.layout import PlateLayout

    layout = PlateLayout.build("96")
    with Campaign.create(tmp_path / "c.campaign", synthetic_library(K=100, d=3), "glgape", {"epsilon": 0.1}, seed=2,
                         layout=layout) as c:
        c.next_plate(None)
        (tmp_path / "r.csv").write_text("plate_id,well,outcome\nP001,A1O,1\nP001,Q05,0\nP001,CI2,1\n")
        with pytest.raises(ResultsError) as info:
            c.record(tmp_path / "r.csv")
        text = str(info.value)
        assert ("line 2: well 'A1O' is not on plate P001 (a 96-well plate, wells A01..H12); correct it (to A10? a "
                "letter O or I typed for a digit)") in text
        assert ("line 3: well 'Q05' is not on plate P001 (a 96-well plate, wells A01..H12); correct it to the well the "
                "plate file `next` wrote gives for this row's compound") in text
        assert "line 4: well 'CI2' is not on plate P001 (a 96-well plate, wells A01..H12); correct it (to C12?" in text
