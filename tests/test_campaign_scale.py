"""What status, report and export cost per compound: at K = 10^6 every pass over the library (a model fit, its
K x d intervals, a forecast's T* over K arms) costs seconds to minutes, so each is made once per command. Counted
calls on a small campaign, not timings (docs/scale.md, "Campaign commands at K = 1.58 M")."""

from __future__ import annotations

import xml.etree.ElementTree as ET
import zipfile

import numpy as np
import pytest
from campaign_util import Assay, new_campaign, write_results

import screenbai.campaign.views.estimates as estimates_module
import screenbai.campaign.views.export as export_module
import screenbai.campaign.views.status as status_module


@pytest.fixture
def camp(tmp_path):
    """A GLGapE campaign (a model of the features: status fits it) with two plates recorded, not stopped."""
    c = new_campaign(tmp_path / "s.campaign", K=40, d=3)
    assay = Assay(c.features, seed=2)
    for k in range(2):
        plate = c.next_plate(24)
        c.record(write_results(tmp_path / f"p{k}.csv", plate, assay(plate.arms)))
    assert not c.policy.done
    yield c
    c.close()


def _counting(monkeypatch, module, name):
    calls = []
    original = getattr(module, name)

    def counted(*args, **kwargs):
        calls.append(name)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_status_fits_the_model_once_and_counts_contention_from_that_fit(camp, monkeypatch):
    """status fitted the logistic model twice (its estimates, then again for the contention intervals): two
    fits and two O(K d^2) interval passes over the library."""
    free = camp.status()
    calls = _counting(monkeypatch, status_module, "model_estimates")
    monkeypatch.setattr(estimates_module, "model_estimates", status_module.model_estimates)  # contention's route
    st = camp.status()
    assert len(calls) == 1
    assert st.to_dict() == free.to_dict()  # the same status
    n, s, s2, _ = camp.observations()
    lo, hi = estimates_module.contention_intervals(camp, n, s, s2)  # computed on its own: the same intervals
    leader = [camp.compound_ids.index(c.compound_id) for c in st.recommendation]
    assert st.in_contention == int((hi >= min(lo[a] for a in leader)).sum())


def test_export_computes_the_status_once_and_fits_once_per_table(camp, monkeypatch, tmp_path):
    """export computed the status twice (its summary sheet, then its report page), each with a forecast: six
    T* solves over all K compounds each time; its table fitted the model twice."""
    out0 = tmp_path / "before"
    out0.mkdir()
    export_module.export(camp, out0)
    st_calls = _counting(monkeypatch, status_module, "campaign_status")
    fits = _counting(monkeypatch, estimates_module, "model_estimates")
    monkeypatch.setattr(status_module, "model_estimates", estimates_module.model_estimates)
    out = tmp_path / "after"
    out.mkdir()
    export_module.export(camp, out)
    assert st_calls == ["campaign_status"]
    assert len(fits) == 2  # one for the table, one for the status
    assert (out / "s.csv").read_bytes() == (out0 / "s.csv").read_bytes()
    assert (out / "s_report.html").read_text() == (out0 / "s_report.html").read_text()
    # the report the export passes the status to is the one `campaign report` writes from scratch
    alone = export_module.self_contained_report(camp, tmp_path / "alone.html")
    assert alone.read_text() == (out / "s_report.html").read_text()


def test_compound_table_counts_contention_as_status_does(camp):
    """The export's table takes "in contention" / "behind" from its one fit; its count is status's."""
    rows = export_module.compound_table(camp)
    kept = sum(r["status"] == "in contention" or r["status"].startswith("recommended") for r in rows)
    assert kept == camp.status().in_contention


#: ``_sheet``'s text before it was streamed (the writer of commit 2f96ae9), for a header and three rows
OLD_SHEET = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<worksheet xmlns="http://schemas.openxmlformats.org/'
    'spreadsheetml/2006/main"><sheetViews><sheetView workbookViewId="0"><pane ySplit="1" topLeftCell="A2" '
    'state="frozen"/></sheetView></sheetViews><sheetData><row r="1"><c r="A1" t="inlineStr"><is><t xml:space='
    '"preserve">a</t></is></c><c r="B1" t="inlineStr"><is><t xml:space="preserve">b</t></is></c></row><row r="2">'
    '<c r="A2"><v>1</v></c><c r="B2"><v>2.5</v></c></row><row r="3"><c r="B3" t="inlineStr"><is><t xml:space='
    '"preserve">=x&lt;</t></is></c></row><row r="4"><c r="A4" t="b"><v>1</v></c><c r="B4" t="inlineStr"><is><t '
    'xml:space="preserve">nan</t></is></c></row></sheetData></worksheet>'
)


def test_a_sheet_streamed_in_pieces_is_the_text_written_whole(monkeypatch, tmp_path):
    """The workbook's sheets go into the zip a few thousand rows at a time (the sheet of 1.58 M compounds was one
    string of about 1 GB); the text is the same, whatever the piece size."""
    rows = [["a", "b"], [1, 2.5], [None, "=x<"], [True, float("nan")]]
    assert export_module._sheet(rows) == OLD_SHEET
    monkeypatch.setattr(export_module, "XLSX_CHUNK_ROWS", 1)
    assert len(list(export_module._sheet_pieces(rows))) == 2 + len(rows)  # head, a piece per row, tail
    path = export_module.write_xlsx({"compounds": rows}, tmp_path / "w.xlsx")
    with zipfile.ZipFile(path) as z:
        assert z.read("xl/worksheets/sheet1.xml").decode() == OLD_SHEET


def test_a_table_longer_than_excel_takes_is_split_into_sheets_under_the_header(monkeypatch, tmp_path):
    """Excel loads at most 1 048 576 rows of a sheet: the export of the 1.58 M MOSES compounds wrote them all in one
    sheet, which Excel opens cut. Now "compounds", "compounds (2)", ..., each under the header, every row once, in
    order (shown here with a limit of 5 rows)."""
    monkeypatch.setattr(export_module, "XLSX_MAX_ROWS", 5, raising=False)
    header = ["compound_id", "tests"]
    rows = [header] + [[f"C{i}", i] for i in range(10)]
    path = export_module.write_xlsx(
        {"compounds": rows, "campaign": [["item", "value"], ["tests", 45]]}, tmp_path / "w.xlsx"
    )
    ns = {"m": "http://schemas.openxmlformats.org/spreadsheetml/2006/main"}
    with zipfile.ZipFile(path) as z:
        book = ET.fromstring(z.read("xl/workbook.xml"))
        names = [s.get("name") for s in book.find("m:sheets", ns)]
        assert names == ["compounds", "compounds (2)", "compounds (3)", "campaign"]
        got = []
        for k in range(1, 4):
            sheet = ET.fromstring(z.read(f"xl/worksheets/sheet{k}.xml"))
            xml_rows = sheet.find("m:sheetData", ns).findall("m:row", ns)
            assert len(xml_rows) <= 5
            texts = [
                [c.findtext(".//m:t", namespaces=ns) or c.findtext("m:v", namespaces=ns) for c in r] for r in xml_rows
            ]
            assert texts[0] == header
            got += texts[1:]
    assert got == [[f"C{i}", str(i)] for i in range(10)]
    assert export_module.split_sheets({"s": rows[:5]}) == {"s": rows[:5]}  # at the limit: one sheet, as before


def test_init_forecast_solves_the_median_draws_T_star_once(tmp_path, monkeypatch):
    """init's prior forecast solved the local T* of the median draw three times (its run, its exact point, the
    table's row for the campaign's epsilon): at K = 1.58 M each solve took minutes. The same lines, two solves fewer."""
    import importlib

    from screenbai.campaign.views.forecast import prior_cost

    fc = importlib.import_module("screenbai.bandits.certainty.forecast")  # the module (the package exports a function)

    camp = new_campaign(tmp_path / "p.campaign", algorithm="log-tas", params={"epsilon": 0.1}, K=60, d=3)
    solves = _counting(monkeypatch, fc, "characteristic_time")
    lines = prior_cost(camp)
    fewer = len(solves)
    solves.clear()
    forecast, table = fc.forecast, fc.cost_table  # as before: every T* solved where it is used
    monkeypatch.setattr(fc, "forecast", lambda *a, local_T=None, **k: forecast(*a, **k))
    monkeypatch.setattr(fc, "cost_table", lambda *a, known=None, **k: table(*a, **k))
    assert prior_cost(camp) == lines
    assert fewer == len(solves) - 2
    camp.close()


def test_top_is_the_sorts_first_k_as_a_set_and_partitions_without_a_tie_at_the_boundary(monkeypatch):
    """T*'s column generation took the largest entries of two K-vectors by a full sort each round
    (``np.argsort(-v)[:k]``); ``_top`` gives the same set by a partition, and calls the sort only when the k-th and
    (k+1)-th largest values tie (where which of them the sort takes is its own choice)."""
    from screenbai.bandits.certainty import local_form

    rng = np.random.default_rng(0)
    sorts = _counting(monkeypatch, local_form.np, "argsort")
    cases = 0
    for K, k in [(1000, 42), (50, 8), (8, 8), (5, 8)]:
        v = rng.normal(size=K)
        got = set(local_form._top(v, k).tolist())
        assert got == set(np.argsort(-v)[:k].tolist())
        cases += 1
    assert len(sorts) == cases + 2  # the two with k >= K sort (as the sort would), the others only partition
    sorts.clear()
    v = rng.integers(0, 5, size=300).astype(float)  # ties everywhere, at the boundary too
    v[7] = np.nan
    assert set(local_form._top(v, 42).tolist()) == set(np.argsort(-v)[:42].tolist())
    assert len(sorts) == 2  # the tied boundary: the sort itself, and the check's


def test_a_mostly_zero_state_array_is_stored_as_its_entries_and_read_back_bit_for_bit():
    """log-tas keeps three K-vectors per open block (planned, got, sums), a few hundred entries set: its snapshot
    after a first plate of 352 wells was 2.9 kB per compound of JSON, 4.6 GB at K = 1.58 M, beyond SQLite's
    largest string, and `next` failed ("string or blob too big"). Mostly-zero arrays are now stored as their
    nonzero entries; every array reads back with its dtype, shape and bits (-0.0 and NaN too)."""
    from screenbai.bandits import make_policy
    from screenbai.campaign.state.store import decode_state, encode_state

    K = 5000
    rng = np.random.default_rng(0)
    X = np.hstack([rng.normal(size=(K, 5)), np.ones((K, 1))])
    policy = make_policy("log-tas", X, epsilon=0.1, delta=0.05, rng=0)
    policy.propose(352)
    state = policy.state_dict()
    text = encode_state(state)
    assert len(text) / K < 150  # 2 904 bytes per compound before (59 open blocks of three dense K-vectors)

    def same(a, b):
        if isinstance(a, np.ndarray):
            assert isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape
            assert a.tobytes() == b.tobytes()
        elif isinstance(a, dict):
            assert a.keys() == b.keys()
            for k in a:
                same(a[k], b[k])
        elif isinstance(a, (list, tuple)):
            assert len(a) == len(b)
            for x, y in zip(a, b):
                same(x, y)
        else:
            assert a == b or (a != a and b != b)

    same(state, decode_state(text))
    odd = np.zeros((100, 60))
    odd[3, 4], odd[50, 1], odd[99, 59] = -0.0, np.nan, 2.5
    flags = np.zeros(6000, dtype=bool)
    flags[17] = True
    arrays = {"odd": odd, "flags": flags, "dense": rng.normal(size=5000), "ints": np.arange(5000) % 3 == 7}
    same(arrays, decode_state(encode_state(arrays)))
    assert '"__sparse__"' in encode_state({"a": odd}) and '"__sparse__"' not in encode_state({"a": arrays["dense"]})
    again = make_policy("log-tas", X, epsilon=0.1, delta=0.05, rng=0)
    again.load_state_dict(decode_state(text))
    assert np.array_equal(again.propose(352), policy.propose(352))  # the restored policy goes on the same way


class _CountedSums(np.ndarray):
    """An array that counts the calls of its ``sum`` (a pass over all K entries each)."""

    calls = 0

    def sum(self, *args, **kwargs):
        _CountedSums.calls += 1
        return super().sum(*args, **kwargs)


def test_the_export_table_sums_the_tests_once_not_once_per_compound(camp, monkeypatch):
    """compound_table summed every compound's tests (``n.sum()``) inside its loop over the compounds: O(K^2), the
    export of the 1.58 M MOSES compounds did not finish (hours). Now a handful of sums whatever K."""
    plain = export_module.compound_table(camp)
    observations = camp.observations

    def counted(*args, **kwargs):
        n, s, s2, failed = observations(*args, **kwargs)
        return n.view(_CountedSums), s, s2, failed

    monkeypatch.setattr(camp, "observations", counted)
    _CountedSums.calls = 0
    rows = export_module.compound_table(camp)
    assert len(rows) == camp.K == 40
    assert _CountedSums.calls <= 3  # was one per compound not recommended (39 here)
    assert rows == plain  # the same table


def test_the_forecasts_top_answer_is_the_stable_sorts_without_sorting_all_k(monkeypatch):
    """status's forecast took each route draw's top compounds by a stable sort of all K (209 sorts, 56 s of a
    2-minute status at K = 1.58 M); now a partition and a sort of m values: the same answer, ties in index order."""
    from screenbai.campaign.views import forecast as fc

    rng = np.random.default_rng(5)
    cases = [rng.standard_normal(500), np.round(rng.standard_normal(500), 1), np.zeros(50), np.r_[-0.0, 0.0, 0.0, -1.0]]
    cases.append(np.where(rng.random(300) < 0.5, np.nan, np.round(rng.standard_normal(300))))
    cases.append(np.full(20, np.nan))
    for v in cases:
        for m in (0, 1, 2, 3, 7, v.size - 1, v.size, v.size + 2):
            got = fc.first_of_stable_sort(v, m)
            assert np.array_equal(got, np.argsort(v, kind="stable")[: max(m, 0)]), (v[:5], m)
    X = rng.standard_normal((20_000, 4))
    theta = rng.standard_normal(4)
    want = tuple(int(a) for a in np.argsort(-(X @ theta), kind="stable")[:3])
    sizes: list = []
    argsort = np.argsort
    monkeypatch.setattr(np, "argsort", lambda a, *args, **kw: sizes.append(np.size(a)) or argsort(a, *args, **kw))
    assert fc.top_answer(X, theta, 3) == want
    assert max(sizes) <= 3
