"""The `screenbai campaign` command end to end, the report, and the backtest harness."""

from __future__ import annotations

import csv
import json
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from screenbai.campaign import Campaign
from screenbai.campaign.backtest import farthest_point_order, hit_recovery
from screenbai.campaign.views import page
from screenbai.cli import main

SMILES = [
    "CCO",
    "c1ccccc1O",
    "CC(=O)Nc1ccc(O)cc1",
    "CCN(CC)CC",
    "C1CCNCC1",
    "Oc1ccncc1",
    "CC(C)Cc1ccc(cc1)C(C)C(=O)O",
    "c1ccc2ccccc2c1",
    "CCOC(=O)C",
    "NC(=O)c1ccccc1",
    "Clc1ccccc1",
    "CC(C)O",
    "OC(=O)c1ccccc1O",
    "c1ccncc1",
]


def init(camp, library_csv, *extra) -> int:
    base = ["campaign", "init", str(camp), "--library", str(library_csv), "--id-column", "id"]
    return main([*base, "--smiles-column", "smiles", "--d", "3", *extra])


@pytest.fixture()
def library_csv(tmp_path):
    p = tmp_path / "lib.csv"
    with open(p, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "smiles", "ic50_nM"])
        for i, s in enumerate(SMILES):
            w.writerow([f"M{i:02d}", s, 10.0 ** (1 + (i % 5))])
        w.writerow(["BAD", "C1CC(", 5])
    return p


def test_init_next_record_status_report(tmp_path, library_csv, capsys):
    camp = tmp_path / "screen.campaign"
    params = ["--param", "epsilon=0.1", "--param", "sigma=0.5", "--param", "threshold=heuristic"]
    rejected = ["--rejected-out", str(tmp_path / "rej.csv")]
    assert init(camp, library_csv, "--algorithm", "m-lingape", *params, *rejected) == 0
    out = capsys.readouterr().out
    assert f"{len(SMILES)} compounds" in out and "unparseable SMILES" in out
    assert "BAD" in (tmp_path / "rej.csv").read_text()

    assert main(["campaign", "next", str(camp), "--plate-size", "4"]) == 0
    plate_file = tmp_path / "P001.csv"
    with open(plate_file, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["plate_id"] for r in rows] == ["P001"] * len(rows) and rows[0]["outcome"] == ""
    for k, r in enumerate(rows):
        r["outcome"] = str(k % 2)
    with open(plate_file, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=rows[0].keys())
        w.writeheader()
        w.writerows(rows)
    assert main(["campaign", "record", str(camp), str(plate_file)]) == 0
    assert f"recorded {len(rows)} outcome(s)" in capsys.readouterr().out
    assert main(["campaign", "record", str(camp), str(plate_file)]) == 2
    assert "already recorded" in capsys.readouterr().err

    assert main(["campaign", "status", str(camp), "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["tests"] == len(rows) and status["plates"] == 1 and status["open_wells"] == {}
    assert status["recommendation"][0]["compound_id"] in {f"M{i:02d}" for i in range(len(SMILES))}
    assert main(["campaign", "status", str(camp)]) == 0
    assert f"tests recorded: {len(rows)}" in capsys.readouterr().out

    assert main(["campaign", "report", str(camp), "--out", str(tmp_path / "rep")]) == 0
    page = (tmp_path / "rep" / "index.html").read_text()
    assert "recommended_structures.png" in page
    assert (tmp_path / "rep" / "recommended_structures.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for svg in ("leader_over_time.svg", "tests_per_compound.svg"):
        assert svg in page
        ET.parse(tmp_path / "rep" / svg)  # well-formed
    assert status["recommendation"][0]["compound_id"] in page and "unparseable SMILES" in page
    assert str(library_csv.resolve()) in page
    # the log and the settings read as text, not as JSON (a plate's event: its id, and its wells by their number)
    assert "plate_id: P001" in page and "&quot;plate_id&quot;" not in page
    assert "m-lingape (epsilon: 0.1; sigma: 0.5; threshold: heuristic), seed 0" in page


def test_errors_are_reported_not_raised(tmp_path, library_csv, capsys):
    camp = tmp_path / "c.campaign"
    assert main(["campaign", "status", str(camp)]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert init(camp, library_csv, "--algorithm", "glgape", "--param", "nonsense=1") == 2
    assert "nonsense" in capsys.readouterr().err and not camp.exists()
    assert init(camp, library_csv, "--algorithm", "glgape", "--outcome", "continuous") == 2
    assert "binary" in capsys.readouterr().err and not camp.exists()


@pytest.mark.parametrize("outcome, algorithm", [("binary", "log-tas"), ("continuous", "lin-tas")])
def test_init_without_algorithm_runs_the_cheapest_guaranteed_one(tmp_path, library_csv, capsys, outcome, algorithm):
    """issue 19, item 7: without --algorithm, init runs the delta-correct setting with the fewest tests measured
    (docs/lower_bound.md), log-tas for 0/1 outcomes and lin-tas for a continuous readout, and says so."""
    camp = tmp_path / "c.campaign"
    assert init(camp, library_csv, "--outcome", outcome, "--param", "epsilon=0.1") == 0
    out = capsys.readouterr().out
    assert f"{algorithm} with {{'epsilon': 0.1}}" in out
    # a continuous readout's guarantee rests on sigma: its default is said, not called "the declared sigma"
    assert ("noise scale: sigma = 1 in the readout's units, lin-tas's default, not declared" in out) == (
        outcome == "continuous")
    # and epsilon is in the readout's units there (0.1 % of inhibition is not 0.1 of a hit rate)
    assert ("epsilon = 0.1: on a continuous readout it is in the readout's units" in out) == (outcome == "continuous")
    if outcome == "continuous":
        declared = tmp_path / "s.campaign"
        assert init(declared, library_csv, "--outcome", outcome, "--param", "epsilon=0.1", "--param", "sigma=8") == 0
        assert "noise scale:" not in capsys.readouterr().out
    with Campaign.open(camp) as c:
        assert c.algorithm == algorithm and c.status().to_dict()["certified_epsilon"] is None
        # before any outcome: said so, not "this algorithm gives no certificate" (log-tas gives one)
        text = c.status().text()
        assert "certificate: none yet (no outcome recorded)" in text and "gives no certificate" not in text
        plate = c.next_plate(4)
        assert len(plate) == 4 and not c.policy.done


def test_hit_recovery_counts_first_tests_of_top_compounds():
    tested = np.array([3, 3, 0, 5, 0, 1])
    curve = hit_recovery(tested, top=np.array([0, 1, 2, 3]), K=8, one_shot=np.array([2, 7, 0]))
    assert curve["campaign"] == [0.25, 0.25, 0.5, 0.5, 0.5, 0.75]
    assert curve["one_shot"] == [0.25, 0.25, 0.5, 0.5, 0.5, 0.5]
    np.testing.assert_allclose(curve["random"], 1 - (7 / 8) ** np.arange(1, 7))


def test_farthest_point_order_spreads_out():
    X = np.array([[0.0, 0], [0.1, 0], [10, 0], [0, 10], [0.05, 0.05]])
    order = farthest_point_order(X, 3)
    assert set(order[1:]) == {2, 3} and len(set(order)) == 3


def test_backtest_finds_the_planted_best(tmp_path):
    """Rates with one clear best compound: the campaign recommends it, through the real record path."""
    from campaign_util import synthetic_library

    from screenbai.campaign.backtest import KnownOutcomes, run_backtest

    lib = synthetic_library(K=20, d=2, seed=5)
    rate = np.full(20, 0.05)
    rate[7] = 0.95
    rate[[2, 11]] = 0.4
    known = KnownOutcomes(lib, rate, None, "planted")
    res = run_backtest(
        known,
        "lucb",
        {"delta": 0.05},
        seed=2,
        plate_size=10,
        max_tests=20000,
        top_k=1,
        campaign_path=tmp_path / "bt.campaign",
    )
    assert res.finished and res.stopped
    assert res.recommendation[0]["compound_id"] == "CPD0007" and res.recommendation[0]["rate_rank"] == 1
    with Campaign.open(tmp_path / "bt.campaign") as camp:
        n, _, _, _ = camp.observations()
        assert n.sum() == res.tests and len(camp.history()) == res.plates
    assert res.curve["campaign"][-1] == 1.0


SVG = "{http://www.w3.org/2000/svg}"


def test_tests_chart_bars_follow_the_counts(tmp_path):
    n = np.array([0, 5, 12, 3, 0, 7], dtype=float)
    s = np.array([0, 1, 6, 3, 0, 0], dtype=float)
    ids = [f"C{i}" for i in range(len(n))]
    path = page.tests_figure(n, s, ids, {2}, True, tmp_path / "t.svg", top=3)
    root = ET.parse(path).getroot()
    bars = [r for r in root.iter(f"{SVG}rect") if r.get("class") == "tests"]
    dark = [r for r in root.iter(f"{SVG}rect") if r.get("class") == "positive"]
    widths = [float(r.get("width")) for r in bars]
    assert len(bars) == len(dark) == 3  # the three most tested: C2, C5, C1, top to bottom
    assert widths[0] / 12 == pytest.approx(widths[1] / 7, rel=1e-3) == pytest.approx(widths[2] / 5, rel=1e-3)
    assert [float(r.get("width")) for r in dark] == pytest.approx([widths[0] / 2, 0.0, widths[2] / 5], abs=0.11)
    assert [r.get("fill") for r in bars] == ["#d62728", "#7f7f7f", "#7f7f7f"]  # red: recommended
    labels = [t.text for t in root.iter(f"{SVG}text")]
    assert labels.index("C2") < labels.index("C5") < labels.index("C1") and "C3" not in labels
    assert page.tests_figure(np.zeros(3), np.zeros(3), ids[:3], set(), True, tmp_path / "none.svg") is None


def test_leader_chart_steps_through_the_history(tmp_path):
    history = [(1, 10, ["A"], False), (2, 20, ["B"], False), (3, 35, ["B"], False), (4, 50, ["A"], True)]
    root = ET.parse(page.leader_figure(history, tmp_path / "l.svg")).getroot()
    (line,) = root.iter(f"{SVG}polyline")
    pts = [tuple(map(float, p.split(","))) for p in line.get("points").split()]
    assert len(pts) == 1 + 2 * 3  # each later file: across at the old leader's row, then to the new one
    assert len({y for _, y in pts}) == 2 and pts[0][1] == pts[-1][1]  # rows A and B; A again at the end
    xs = [float(c.get("cx")) for c in root.iter(f"{SVG}circle")]
    assert (xs[1] - xs[0]) / 10 == pytest.approx((xs[3] - xs[2]) / 15, rel=1e-3)
    assert any("stopped after 50 tests" in (t.text or "") for t in root.iter(f"{SVG}text"))
    assert page.leader_figure([], tmp_path / "e.svg") is None


def test_a_file_that_is_not_a_campaign_is_refused_and_left_as_it_was(tmp_path, library_csv, capsys):
    empty = tmp_path / "empty.campaign"
    empty.write_bytes(b"")
    assert main(["campaign", "status", str(empty)]) == 2  # SQLite made it a database before
    assert "not a screenbai campaign file" in capsys.readouterr().err
    assert empty.read_bytes() == b""
    before = library_csv.read_bytes()
    assert main(["campaign", "status", str(library_csv)]) == 2  # a traceback before
    assert "lib.csv is not a screenbai campaign file" in capsys.readouterr().err
    assert library_csv.read_bytes() == before


def test_bad_settings_are_refused_before_the_library_is_read(tmp_path, library_csv, capsys, monkeypatch):
    """A typo in --param or --seed must not cost the featurization of a large library first."""
    import screenbai.campaign.library as library

    def never(*args, **kwargs):
        raise AssertionError("the library was read before the settings were checked")

    monkeypatch.setattr(library, "import_library", never)
    camp = tmp_path / "c.campaign"
    for extra, named in [
        (["--param", "delta=2"], "delta=2"),
        (["--algorithm", "lucb", "--param", "m=1.5"], "m=1.5"),
        (["--seed", "-1"], "seed"),
        (["--algorithm", "nope"], "unknown algorithm 'nope'"),
        (["--algorithm", "glgape", "--outcome", "continuous"], "binary"),
        (["--rejected-out", str(tmp_path / "no" / "rej.csv")], "does not exist"),
    ]:
        assert init(camp, library_csv, *extra) == 2
        assert named in capsys.readouterr().err and not camp.exists()


def test_next_checks_its_output_before_a_plate_is_committed(tmp_path, library_csv, capsys):
    camp = tmp_path / "c.campaign"
    assert init(camp, library_csv, "--algorithm", "m-lingape", "--param", "epsilon=0.2") == 0
    for out, named in [(tmp_path / "no" / "P.csv", "does not exist"), (tmp_path, "it is a folder")]:
        assert main(["campaign", "next", str(camp), "--out", str(out)]) == 2
        assert named in capsys.readouterr().err
    with Campaign.open(camp) as c:
        assert c.events()[-1][2] == "init"  # no plate in the lab without its file
        assert "not evaluated yet" in c.status().text()  # not "its index is nan"
    assert main(["campaign", "record", str(camp), str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err


def test_compounds_the_features_cannot_tell_apart_are_named(tmp_path, capsys):
    """Stereoisomers get one Morgan fingerprint: init counts them, status names the recommendation's twins."""
    lib_csv = tmp_path / "stereo.csv"
    smiles = SMILES[:8] + ["C[C@H](N)C(=O)O", "C[C@@H](N)C(=O)O"]
    lib_csv.write_text("id,smiles\n" + "".join(f"S{i},{s}\n" for i, s in enumerate(smiles)))
    camp = tmp_path / "c.campaign"
    assert init(camp, lib_csv, "--algorithm", "m-lingape") == 0
    assert "2 compounds share their features with another one" in capsys.readouterr().out
    with Campaign.open(camp) as c:
        assert c.same_features(8) == [9] and c.same_features(0) == []

    from campaign_util import synthetic_library

    lib = synthetic_library(K=10, d=2)
    lib.features[5:] = lib.features[:5]  # every compound has a twin: so has the recommendation
    c = Campaign.create(tmp_path / "twins.campaign", lib, "m-lingape", {"epsilon": 0.1}, seed=0)
    st = c.status()
    (rec,) = st.recommendation
    arm = c.compound_ids.index(rec.compound_id)
    assert rec.same_features == [c.compound_ids[(arm + 5) % 10]]
    assert f"same features as {rec.same_features[0]}: the model cannot tell them apart" in st.text()
    c.close()


def test_a_plate_file_is_never_written_over(tmp_path, library_csv, capsys):
    """Two campaigns in one folder both name their first plate P001.csv, and `plate` rewrote a file the
    lab had filled in: an existing file is refused, before a plate is committed."""
    a, b = tmp_path / "a.campaign", tmp_path / "b.campaign"
    for camp in (a, b):
        assert init(camp, library_csv, "--algorithm", "m-lingape") == 0
    assert main(["campaign", "next", str(a), "--plate-size", "4"]) == 0
    filled = tmp_path / "P001.csv"
    filled.write_text(filled.read_text().replace(",\n", ",1\n").replace(",\r\n", ",1\r\n"))
    lab = filled.read_bytes()
    assert b",1" in lab
    capsys.readouterr()
    assert main(["campaign", "next", str(b), "--plate-size", "4"]) == 2
    assert "P001.csv: the file exists" in capsys.readouterr().err
    with Campaign.open(b) as c:
        assert c.open_wells() == {}  # no plate committed without its file
    assert main(["campaign", "plate", str(a), "P001"]) == 2
    assert "the file exists" in capsys.readouterr().err
    assert filled.read_bytes() == lab
    assert main(["campaign", "next", str(b), "--plate-size", "4", "--out", str(tmp_path / "b_P001.csv")]) == 0


def test_backtest_refuses_bad_numbers_before_reading_the_truth(tmp_path, library_csv, capsys, monkeypatch):
    """--max-tests 0 failed in matplotlib after the whole curation ('x and y must have same first
    dimension'), --plate-size 0 after it, --top-k 0 gave NaN shares."""
    import screenbai.campaign.backtest as backtest

    def never(*args, **kwargs):
        raise AssertionError("the truth was read before the options were checked")

    monkeypatch.setattr(backtest, "outcomes_from_activities", never)
    base = ["campaign", "backtest", "--library", str(library_csv), "--id-column", "id", "--smiles-column", "smiles"]
    base += ["--activity-column", "ic50_nM", "--d", "3", "--out", str(tmp_path / "bt")]
    for extra, named in [
        (["--max-tests", "0"], "--max-tests must be at least 1"),
        (["--plate-size", "0"], "--plate-size must be at least 1"),
        (["--top-k", "0"], "--top-k must be at least 1"),
        (["--threshold", "-5"], "--threshold is an activity in nM and must be > 0"),
        (["--param", "delta=7"], "delta=7"),
    ]:
        assert main([*base, *extra]) == 2
        assert named in capsys.readouterr().err


def test_a_path_that_cannot_be_written_is_an_error_not_a_traceback(tmp_path, library_csv, capsys):
    camp = tmp_path / "c.campaign"
    assert init(camp, library_csv, "--algorithm", "m-lingape") == 0
    assert main(["campaign", "report", str(camp), "--out", str(library_csv)]) == 2  # a file, not a folder
    err = capsys.readouterr().err
    assert "File exists" in err and "lib.csv" in err
    assert library_csv.read_text().startswith("id,smiles")


def test_status_json_is_strict_json_before_the_first_tests(tmp_path, library_csv, capsys):
    """The stopping index is NaN until the first tests are in; `--json` printed NaN, which is not JSON."""
    camp = tmp_path / "c.campaign"
    assert init(camp, library_csv, "--algorithm", "m-lingape") == 0
    capsys.readouterr()
    assert main(["campaign", "status", str(camp), "--json"]) == 0

    def refuse(constant):
        raise ValueError(f"{constant} is not JSON")

    status = json.loads(capsys.readouterr().out, parse_constant=refuse)
    assert status["stop_index"] is None and status["tests"] == 0


def test_status_json_has_no_certified_epsilon_where_the_text_says_none_yet(tmp_path):
    """`status --json` gave certified_epsilon 1.0 before any outcome (and 0.9992 after a first plate of a KL-LUCB
    screen, untested rivals still anywhere in [0, 1]) where the text read "none yet": null now, the key of the
    own wells' certificate too; the certificate itself, with its sentences, stays; the export says the same."""
    from campaign_util import new_campaign, write_results

    from screenbai.campaign.views.export import compound_table

    path = tmp_path / "c.campaign"
    with new_campaign(path, "kl-lucb", {"epsilon": 0.1, "delta": 0.05}, K=30) as camp:
        for recorded in (False, True):
            st = camp.status()
            out = json.loads(json.dumps(st.to_dict()))  # as `status --json` prints it
            assert out["tests"] == 8 * recorded and out["certificate"]["sentences"]
            assert out["certified_epsilon"] is None and out["certified_epsilon_no_model"] is None
            assert "(certified epsilon, a gap in hit rate: none yet;" in st.text()
            assert all(row["certified_epsilon"] is None for row in compound_table(camp))
            if not recorded:
                plate = camp.next_plate(8)
                camp.record(write_results(tmp_path / "r.csv", plate, np.ones(8, dtype=int)))
        assert 0.999 <= out["certificate"]["worst"] < 1.0  # the bound the text calls "none yet"
        # and the certificate's sentences say so too (they read "within 1 of the best cure rate")
        assert all("not certified yet" in s for s in out["certificate"]["sentences"]), out["certificate"]["sentences"]
        assert "within 1 of" not in st.text()


@pytest.mark.slow
def test_the_prior_forecast_is_on_the_scale_of_the_model_it_forecasts(tmp_path, library_csv, capsys):
    """init's prior spreads x'theta on the model's own scale: hit-rate logits for log-tas, hit rates (sd 0.2) for
    an algorithm that models hits linearly (before: an sd of 1 in hit rate), the readout in its unit, as large as
    the noise scale sigma declared (before: sd 1 whatever the unit, so epsilon = 5 % certified nearly everything)."""
    import re

    assert init(tmp_path / "r.campaign", library_csv, "--algorithm", "rage", "--param", "epsilon=0.1") == 0
    out = capsys.readouterr().out
    assert "hit rates spread with sd 0.2 over the library" in out
    assert "note: this forecast of a phased elimination leaves out the phases' losses" in out  # issue 19
    argv = ["--outcome", "continuous", "--param", "epsilon=5", "--readout", "percent inhibition", "--unit", "%"]
    tests = {}
    for sigma in (8, 16):
        assert init(tmp_path / f"c{sigma}.campaign", library_csv, *argv, "--param", f"sigma={sigma}") == 0
        out = capsys.readouterr().out
        said = (f"mean outcomes spread with sd {sigma} % over the library, "
                f"as much as one test's noise, sigma = {sigma} %")
        assert said in out
        tests[sigma] = float(re.search(r"stops after about ([\d,]+) tests", out).group(1).replace(",", ""))
    # means and noise scaled alike, epsilon fixed: epsilon is half as large against the spread, never cheaper
    assert tests[16] >= tests[8]


def test_init_says_what_the_screen_will_cost_from_a_prior(tmp_path, library_csv, capsys):
    """Cost up front: init prints a forecast of tests and plates with its band, says it comes from a
    prior, and what other (epsilon, delta) would cost; the band holds the point and a smaller delta
    never costs less."""
    import re

    from screenbai.campaign.views.forecast import prior_cost

    assert init(tmp_path / "c.campaign", library_csv, "--param", "epsilon=0.1") == 0
    out = capsys.readouterr().out
    line = next(s for s in out.splitlines() if s.startswith("cost forecast from a prior"))
    tests, low, high = (float(v.replace(",", "")) for v in re.search(
        r"stops after about ([\d,]+) tests .* between ([\d,]+) and ([\d,]+) tests in 80 % of runs over 5 draws",
        line).groups())
    assert low <= tests <= high
    table = dict(((float(e), float(d)), float(t.replace(",", ""))) for e, d, t in re.findall(
        r"epsilon ([\d.]+) and delta ([\d.]+): ([\d,]+) tests", out))
    assert table[(0.1, 0.01)] >= table[(0.1, 0.05)] >= table[(0.1, 0.1)]
    assert table[(0.2, 0.05)] <= table[(0.1, 0.05)]  # a looser epsilon is cheaper
    assert table[(0.1, 0.05)] == tests  # the table's row of the campaign's own setting is the headline
    with Campaign.open(tmp_path / "c.campaign") as camp:  # same seed, same guess
        assert prior_cost(camp)[0] == line
    assert init(tmp_path / "g.campaign", library_csv, "--algorithm", "gse-log", "--param", "budget=40") == 0
    assert "states no stopping threshold" in capsys.readouterr().out


@pytest.mark.slow
def test_an_epsilon_of_a_whole_hit_rate_is_refused_for_a_binary_screen(tmp_path, library_csv, capsys):
    """On hit rates an epsilon of 1 or more makes every compound correct. The algorithms for 0/1 outcomes refuse it
    themselves (test_params_signatures.py); a linear algorithm on a binary screen, and a restart, refuse it too,
    before anything is written or changed."""
    path = tmp_path / "c.campaign"
    assert init(path, library_csv, "--algorithm", "lin-tas", "--param", "epsilon=1") == 2
    assert "lin-tas: epsilon=1 is a tolerance on hit rates here (binary outcomes)" in capsys.readouterr().err
    assert not path.exists()
    assert init(path, library_csv, "--param", "epsilon=0.1") == 0
    before = path.read_bytes()
    assert main(["campaign", "restart", str(path), "--algorithm", "kl-lucb", "--param", "epsilon=2"]) == 2
    assert "must be a number in [0, 1)" in capsys.readouterr().err
    assert path.read_bytes() == before
    # a continuous readout has its own units: no such limit
    assert init(tmp_path / "k.campaign", library_csv, "--algorithm", "lin-tas", "--outcome", "continuous",
                "--param", "epsilon=5", "--param", "sigma=10") == 0


@pytest.mark.slow
def test_format_changes_only_what_it_names(tmp_path, library_csv, capsys):
    """`format FILE --replicates 2` on a 384-well campaign switched it to 96 wells, `format --plate-format 384`
    dropped the replicates and empty edge set at init, and `format FILE` alone reset it to 96 wells. Each option now
    changes only itself; a new grid keeps the controls' scheme (edge); nothing named is refused, the layout kept."""
    from screenbai.campaign.lab.layout import PlateLayout

    path = tmp_path / "c.campaign"
    assert init(path, library_csv, "--plate-format", "384", "--empty-edge", "--replicates", "2") == 0

    def layout():
        with Campaign.open(path) as camp:
            return camp.layout

    start = layout()
    assert main(["campaign", "format", str(path)]) == 2
    err = capsys.readouterr().err
    assert "format: name what changes" in err and "the layout now: 384-well plates" in err
    assert layout() == start
    assert main(["campaign", "format", str(path), "--replicates", "1"]) == 0
    assert layout() == PlateLayout.build("384", empty_edge=True, replicates=1)
    assert main(["campaign", "format", str(path), "--plate-format", "96"]) == 0
    assert layout() == PlateLayout.build("96", empty_edge=True, replicates=1)  # edge controls on the new grid
    assert main(["campaign", "format", str(path), "--no-empty-edge", "--controls", "none"]) == 0
    assert layout() == PlateLayout.build("96", controls="none")
    # custom control wells stay on the same grid, and must be given again for another one
    assert main(["campaign", "format", str(path), "--positive-controls", "A01:A03",
                 "--negative-controls", "H10:H12"]) == 0
    custom = layout()
    assert custom.positive == ("A01", "A02", "A03") and custom.negative == ("H10", "H11", "H12")
    assert main(["campaign", "format", str(path), "--replicates", "3"]) == 0
    assert layout().positive == custom.positive and layout().replicates == 3
    # one kind named: the other kind's custom wells stay (they turned into the edge column)
    assert main(["campaign", "format", str(path), "--positive-controls", "B01:B02"]) == 0
    assert layout().positive == ("B01", "B02") and layout().negative == custom.negative
    assert main(["campaign", "format", str(path), "--plate-format", "384"]) == 2
    assert "give them for the new plate format with --positive-controls" in capsys.readouterr().err
    assert layout().rows == 8
    # a campaign without a plate format: a format is needed, then init's defaults for the rest
    bare = tmp_path / "b.campaign"
    assert init(bare, library_csv) == 0
    assert main(["campaign", "format", str(bare), "--replicates", "2"]) == 2
    assert "has no plate format yet; give one with --plate-format" in capsys.readouterr().err
    assert main(["campaign", "format", str(bare), "--plate-format", "96", "--replicates", "2"]) == 0
    with Campaign.open(bare) as camp:
        assert camp.layout == PlateLayout.build("96", replicates=2)


def test_init_says_a_screen_that_cannot_stop_would_not_stop(tmp_path):
    """At epsilon = 0 a compound whose features another shares (stereoisomers: the fingerprint ignores
    stereochemistry) has the same mean under any model of them, so no number of tests ranks the two: init crashed
    on the unbounded forecast ("cannot convert float infinity to integer", after writing the file). It says the
    screen would not stop, why, and that an epsilon above 0 bounds it; the table of other settings gives numbers
    for epsilon > 0 and "no end in sight" for 0."""
    from campaign_util import synthetic_library

    from screenbai.campaign.views.forecast import prior_cost

    lib = synthetic_library(K=12, d=3)
    lib.features[1::2] = lib.features[0::2]  # six pairs of twins: every answer has one
    camp = Campaign.create(tmp_path / "c.campaign", lib, "lin-tas", {"sigma": 1.0}, seed=1, outcome="continuous")
    head, title, *rows = prior_cost(camp)
    camp.close()
    table = "\n".join(rows)
    assert title == "other settings:" and len(rows) == 6 and all(r.startswith("  epsilon ") for r in rows)
    assert head.startswith("cost forecast from a prior: lin-tas (epsilon = 0, delta = 0.05) would not stop: 12 "
                           "compounds share their features with another")
    assert "an epsilon above 0 bounds it" in head
    assert table.count("no end in sight") == 3  # epsilon 0 at three deltas
    assert len(re.findall(r"epsilon 0.1 and delta [\d.]+: [\d,]+ tests \(\d+ plates?\)", table)) == 3


def test_status_says_a_screen_that_cannot_stop_would_not_stop(tmp_path):
    """After a plate, the same screen's forecast from the outcomes is unbounded too: status read "forecast of plates
    left: not available (this algorithm states no stopping threshold, or it has finished)", both untrue. It says
    there is no end in sight and why; the JSON has null plates with the form of T* set, and the reason."""
    from campaign_util import synthetic_library, write_results

    lib = synthetic_library(K=12, d=3)
    lib.features[1::2] = lib.features[0::2]
    with Campaign.create(tmp_path / "c.campaign", lib, "lin-tas", {"sigma": 1.0}, seed=1,
                         outcome="continuous") as camp:
        plate = camp.next_plate(12)
        camp.record(write_results(tmp_path / "r.csv", plate, lib.features[list(plate.arms)].sum(axis=1)))
        st = camp.status()
        text, out = st.text(), json.loads(json.dumps(st.to_dict()))
    assert ("forecast: no end in sight: at the model fitted to the outcomes so far the screen would not stop: 12 "
            "compounds share their features with another") in text
    assert "not available" not in text
    assert out["forecast_plates"] is None and out["forecast_bound"] is not None
    assert out["forecast_never"].startswith("would not stop: 12 compounds")


def test_whole_plates_rounds_up_but_not_a_rounding_error():
    """status read "about 3 more plate(s) (120 more tests)" with 60 compound wells a plate: the forecast of
    120.0000991821289 tests was rounded up to a third plate."""
    from screenbai.bandits.certainty.forecast import whole_plates

    assert whole_plates(120.0000991821289, 60) == 2.0
    assert whole_plates(120.5, 60) == 3.0 and whole_plates(61, 60) == 2.0
    assert whole_plates(0.0, 96) == 0.0 and whole_plates(1.0, 96) == 1.0
    assert whole_plates(float("inf"), 96) == float("inf")


@pytest.mark.slow
def test_init_forecasts_an_algorithm_without_a_threshold_or_a_model_by_simulating_it(tmp_path, library_csv, capsys):
    """KL-LUCB states no threshold to plug T* into: init said only that. It now runs copies of it from the start on
    hit rates drawn from the prior (each compound on its own), with the band of the runs; a smaller delta costs no
    fewer tests. An algorithm with a model of the features and no threshold (m-LinGapE) still says it has none."""
    import re

    from screenbai.campaign.views.forecast import prior_cost

    tests = {}
    for delta in (0.2, 0.01):
        path = tmp_path / f"k{delta}.campaign"
        assert init(path, library_csv, "--algorithm", "kl-lucb", "--param", "epsilon=0.2", "--param",
                    f"delta={delta}") == 0
        line = next(s for s in capsys.readouterr().out.splitlines() if s.startswith("cost forecast from a prior"))
        assert "over 9 runs of kl-lucb (epsilon = 0.2, " in line and "simulated from the start" in line
        point, low, high = (float(v.replace(",", "")) for v in re.search(
            r"stops after about ([\d,]+) tests .* between ([\d,]+) and ([\d,]+) tests in 80 % of runs", line).groups())
        with Campaign.open(path) as camp:
            assert low <= point <= high and point >= camp.K  # every compound is tested at least once
            assert prior_cost(camp)[0] == line  # same seed, same guess
        tests[delta] = point
    assert tests[0.01] >= tests[0.2]
    assert init(tmp_path / "m.campaign", library_csv, "--algorithm", "m-lingape", "--param", "sigma=0.5") == 0
    assert "states no stopping threshold" in capsys.readouterr().out


def test_the_cost_table_takes_log_tas_s_own_wells_as_the_forecast_does(tmp_path, monkeypatch):
    """With log-tas's own wells (a second stopping route) the headline forecast took the route and the table of
    other settings did not: on the CDK2 export init said "stops after about 317 tests" and, for the same
    epsilon and delta, "3,220 tests". Here the route is made to bind (a second route that stops after 7 tests,
    far below the likelihood-ratio route's forecast): each row takes it, as the headline does."""
    import re

    from campaign_util import synthetic_library

    from screenbai.bandits.core.policy import Policy
    from screenbai.campaign.views.forecast import prior_cost

    monkeypatch.setattr(Policy, "stopping_shortcut", lambda self, answer, means, done, plate=None, rng=None: 7.0)
    camp = Campaign.create(tmp_path / "c.campaign", synthetic_library(K=400, d=3), "log-tas",
                           {"epsilon": 0.1, "delta": 0.05}, seed=1)
    lines = prior_cost(camp)
    camp.close()
    head, title, table_line = lines[0], lines[-7], "\n".join(lines[-6:])  # one line a setting
    assert title.startswith("other settings (the first figure counts on a compound's own wells")
    tests = float(re.search(r"stops after about ([\d,]+) tests", head).group(1).replace(",", ""))
    table = {(float(e), float(d)): float(t.replace(",", "")) for e, d, t in re.findall(
        r"epsilon ([\d.]+) and delta ([\d.]+): ([\d,]+) tests", table_line)}
    assert tests == 7 and set(table.values()) == {7.0} and len(table) == 6
    # every draw the same: one number, not "between 7 and 7 tests"
    assert "7 tests in 80 % of runs" in head and not re.search(r"between [\d,]+ and [\d,]+ tests", head)
    assert table_line.count("7 tests (1 plate)") == 6
    # in whole plates the wells cost the same in every row: each row and the headline also say what the setting
    # costs on the model's route, if no compound's wells pass the bar (the init of the README's recipe read
    # "704 tests (2 plates)" for all six settings, and nothing a chemist could choose by)
    routes = re.findall(r": 7 tests \(1 plate\), or ([\d,]+) \(\d+ plates?\) if no compound's own wells reach "
                        r"([\d.]+)", table_line)
    assert len(routes) == 6 and {float(b) for _, b in routes} == {0.9, 0.8}
    assert all(float(t.replace(",", "")) > 7 for t, _ in routes)
    assert "counting on a compound's own wells showing a hit rate of at least 0.9 (without them about" in head


def test_init_says_the_hit_rule_once(tmp_path, library_csv, capsys):
    """init printed the hit rule twice on its readout line ("a hit when percent inhibition >= 50 %; log-tas
    models hits ... (a hit when percent inhibition >= 50 %; ...)"); a continuous readout's line still says it."""
    argv = ["--readout", "percent inhibition", "--unit", "%", "--hit-above", "50", "--param", "epsilon=0.1"]
    assert init(tmp_path / "b.campaign", library_csv, *argv) == 0
    line = next(s for s in capsys.readouterr().out.splitlines() if s.startswith("readout: "))
    assert line.count("a hit when percent inhibition >= 50 %") == 1, line
    assert line.startswith("readout: percent inhibition (%); log-tas models hits with a logistic model")
    assert init(tmp_path / "c.campaign", library_csv, *argv, "--outcome", "continuous") == 0
    line = next(s for s in capsys.readouterr().out.splitlines() if s.startswith("readout: "))
    assert line.startswith("readout: percent inhibition (%), a hit when percent inhibition >= 50 %; lin-tas")


@pytest.mark.parametrize("readout", [[], ["--readout", "IC50", "--unit", "nM", "--hit-below", "1000"]])
def test_a_bound_on_z_no_plate_can_pass_is_refused_with_or_without_a_readout(tmp_path, library_csv, capsys,
                                                                             readout):
    """--min-z 2 was refused with --readout ("Z' is at most 1") but taken without one, and every plate then
    passed against the default 0.5: one check refuses it in both cases, before the library is read."""
    camp = tmp_path / "c.campaign"
    layout = ["--plate-format", "24"]
    assert init(camp, library_csv, *layout, *readout, "--min-z", "2") == 2
    assert "--min-z must be a number below 1 (Z' is at most 1); got 2.0" in capsys.readouterr().err
    assert not camp.exists()


def test_a_bound_on_z_without_a_readout_is_refused_not_lost(tmp_path, library_csv, capsys):
    """Without --readout there is nowhere to keep --min-z, and plates were checked against 0.5 whatever it said."""
    camp = tmp_path / "c.campaign"
    assert init(camp, library_csv, "--plate-format", "24", "--min-z", "0.7") == 2
    err = capsys.readouterr().err
    assert "--min-z 0.7 needs --readout NAME" in err and "checked against Z' >= 0.5" in err and not camp.exists()
    assert init(camp, library_csv, "--plate-format", "24", "--readout", "IC50", "--hit-below", "10", "--min-z",
                "0.7") == 0
    with Campaign.open(camp) as c:
        assert c.readout.min_z == 0.7
    # with a readout but plates without control wells the bound would be kept and never used: refused too
    for layout in ([], ["--plate-format", "24", "--controls", "none"]):
        other = tmp_path / f"n{len(layout)}.campaign"
        assert init(other, library_csv, *layout, "--readout", "IC50", "--hit-below", "10", "--min-z", "0.7") == 2
        assert "--min-z 0.7 bounds the Z'-factor of a plate's control wells, and these plates have none" in \
            capsys.readouterr().err and not other.exists()


def test_one_of_a_thing_is_said_in_the_singular_and_format_s_help_does_not_point_to_itself(tmp_path, library_csv,
                                                                                            capsys):
    """'(1 compounds)', '1x1 plates (1 rows x 1 columns)', and `format --help` saying "see `screenbai campaign
    format --help`"."""
    from screenbai.campaign.lab.layout import PlateLayout

    camp = tmp_path / "c.campaign"
    assert init(camp, library_csv, "--plate-format", "1x1", "--controls", "none") == 0
    assert "plates: 1x1 plates (1 row x 1 column), no control wells, 1 compound per plate" in capsys.readouterr().out
    assert main(["campaign", "next", str(camp)]) == 0
    assert f"plate P001: 1 well (1 compound) written to {tmp_path / 'P001.csv'}" in capsys.readouterr().out
    assert main(["campaign", "plate", str(camp), "P001", "--out", str(tmp_path / "again.csv")]) == 0
    assert "plate P001: 1 well written to" in capsys.readouterr().out
    assert "8 positive control wells (A01..H01) and 8 negative (A12..H12)" in PlateLayout.build("96").describe()
    with pytest.raises(SystemExit):
        main(["campaign", "format", "--help"])
    text = capsys.readouterr().out
    assert "format --help" not in text and "plates:" in text
    with pytest.raises(SystemExit):
        main(["campaign", "init", "--help"])
    assert "(changed later with `screenbai campaign format`)" in capsys.readouterr().out  # init's points to it


def test_a_continuous_potency_readout_needs_its_direction(tmp_path, library_csv, capsys):
    """--readout IC50 --outcome continuous without --hit-below told the algorithm the raw IC50, and it looks for the
    largest mean: the weakest compound was recommended as the best. Refused now, naming the way; --hit-above with a
    potency is taken (a Kd to avoid ...) but init says that its hits are the weaker compounds."""
    camp = tmp_path / "c.campaign"
    argv = ["--readout", "IC50", "--unit", "nM", "--outcome", "continuous"]
    assert init(camp, library_csv, *argv) == 2
    err = capsys.readouterr().err
    assert "the algorithm would look for the largest IC50, the weakest compound; give --hit-below CUTOFF" in err
    assert not camp.exists()
    assert init(camp, library_csv, *argv, "--hit-below", "1000") == 0
    with Campaign.open(camp) as c:
        assert c.readout.told(10.0, False) > c.readout.told(1000.0, False)  # the potent one is the larger
    capsys.readouterr()
    assert init(tmp_path / "k.campaign", library_csv, "--readout", "Ki", "--unit", "nM", "--hit-above", "100") == 0
    assert "note: a hit when Ki >= 100 nM: the hits are the weaker compounds" in capsys.readouterr().out
    assert init(tmp_path / "p.campaign", library_csv, "--readout", "CC50", "--unit", "uM", "--hit-above", "10") == 0
    assert "the weaker compounds" not in capsys.readouterr().out  # a cytotoxic concentration is better higher



def test_next_says_when_the_plate_is_left_partly_empty(tmp_path, library_csv, capsys):
    """GLGapE's first plate is its initial design (18 wells on 300 compounds of a 96-well plate, 12 here): the file
    listed those wells alone and `next` said nothing of the others, which the lab was left to guess about."""
    from campaign_util import synthetic_library

    from screenbai.campaign import PlateLayout

    camp = tmp_path / "g.campaign"
    Campaign.create(camp, synthetic_library(K=60, d=3), "glgape", {"epsilon": 0.1}, seed=0,
                    layout=PlateLayout.build("96", controls="none")).close()
    assert main(["campaign", "next", str(camp), "--plate-size", "40"]) == 0
    out = capsys.readouterr().out
    assert "plate P001: 12 wells (12 compounds)" in out
    assert "note: 28 of the 40 compound wells asked for stay empty: glgape proposed 12 for now" in out
    a = tmp_path / "a.campaign"
    assert init(a, library_csv, "--plate-format", "96", "--controls", "none") == 0  # log-tas fills its plate
    assert main(["campaign", "next", str(a), "--plate-size", "12", "--out", str(tmp_path / "a1.csv")]) == 0
    assert "stay empty" not in capsys.readouterr().out


def test_plate_reads_a_plate_id_as_record_does_and_names_the_plates(tmp_path, library_csv, capsys):
    """`record` reads p001 as P001, `plate` refused it ("no plate 'p001' in c.campaign"), naming no plate."""
    camp = tmp_path / "c.campaign"
    assert init(camp, library_csv) == 0
    assert main(["campaign", "next", str(camp), "--plate-size", "4"]) == 0
    (tmp_path / "P001.csv").unlink()  # the plate file lost
    capsys.readouterr()
    assert main(["campaign", "plate", str(camp), "p001"]) == 0
    assert "plate P001: 4 wells written to" in capsys.readouterr().out and (tmp_path / "P001.csv").is_file()
    assert main(["campaign", "plate", str(camp), "P9", "--out", str(tmp_path / "x.csv")]) == 2
    assert "no plate 'P9' in" in (err := capsys.readouterr().err) and "(plates: P001)" in err


def test_format_to_the_layout_in_place_changes_nothing(tmp_path, library_csv, capsys):
    """`format --controls none` on plates without controls logged a change, and status listed 'plate format changed
    to ...' once more: now it says there is no change and writes nothing."""
    path = tmp_path / "c.campaign"
    assert init(path, library_csv, "--plate-format", "96", "--controls", "none") == 0
    with Campaign.open(path) as camp:
        steps = len(camp.events())
    capsys.readouterr()
    assert main(["campaign", "format", str(path), "--controls", "none"]) == 0
    assert "no change: the next plates of" in capsys.readouterr().out
    with Campaign.open(path) as camp:
        assert len(camp.events()) == steps and "plate format changed" not in camp.status().text()


def test_the_prior_forecast_counts_the_plates_next_can_propose_for_a_small_library(tmp_path):
    """A library of 8 compounds: `next` refuses a plate of 96 without --force, so the forecast at init counted plates
    no one could run ("1 plate of 96"); it counts plates of at most every compound once (times the replicates)."""
    from campaign_util import synthetic_library

    from screenbai.campaign.lab.layout import PlateLayout
    from screenbai.campaign.views.forecast import plate_tests, prior_cost

    camp = Campaign.create(tmp_path / "c.campaign", synthetic_library(K=8, d=3), "lin-tas", {"sigma": 1.0,
                           "epsilon": 0.1}, seed=1, outcome="continuous")
    try:
        head = prior_cost(camp)[0]
        assert plate_tests(camp, None) == 8 and re.search(r"\(\d+ plates? of 8\)", head), head
        layout = PlateLayout.build("96", controls="none", replicates=2)
        assert plate_tests(camp, layout) == 16  # 8 compounds, each in two wells
    finally:
        camp.close()


def test_init_says_a_continuous_ic50_is_modelled_as_log10(tmp_path, library_csv, capsys):
    """A continuous IC50 is told to the algorithm as -log10 of the value: init says so, with epsilon and sigma in
    log10 units (their nM reading was then wrong)."""
    argv = ["--readout", "IC50", "--unit", "nM", "--hit-below", "1000", "--outcome", "continuous",
            "--param", "epsilon=0.3"]
    assert init(tmp_path / "c.campaign", library_csv, *argv) == 0
    out = capsys.readouterr().out
    assert "models the log10 IC50 (nM) (negated: lower is better)" in out
    assert "sigma and epsilon are in log10 units (epsilon 0.3: a factor 2 in IC50)" in out
    assert "epsilon = 0.3: on a continuous readout it is in log10 units of IC50 (0.3: a factor 2)" in out
    assert "in log10 units of IC50 (0.3: a factor 2); declare it with --param sigma" in out


def test_a_table_without_named_columns_is_told_the_options_that_name_them(tmp_path, library_csv, capsys):
    camp = tmp_path / "screen.campaign"
    assert main(["campaign", "init", str(camp), "--library", str(library_csv), "--d", "3"]) != 0
    err = capsys.readouterr().err
    assert "lib.csv" in err and "['id', 'smiles', 'ic50_nM']" in err
    assert "--id-column COLUMN --smiles-column COLUMN" in err and not camp.exists()
    # one of the two given: the message still names the options
    assert main(["campaign", "init", str(camp), "--library", str(library_csv), "--smiles-column", "smiles"]) != 0
    assert "--id-column COLUMN" in capsys.readouterr().err


def test_a_plain_next_on_a_library_smaller_than_the_default_plate_proposes_the_library_size(tmp_path, library_csv,
                                                                                             capsys):
    """`init` forecast plates of the library's size for 14 compounds, but a plain `next` asked for the default 96 wells
    and was refused ("give a plate size of at most 14"); it now proposes 14 wells and says why. An explicit size
    above the library is still refused without --force."""
    camp = tmp_path / "screen.campaign"
    assert init(camp, library_csv) == 0
    capsys.readouterr()
    assert main(["campaign", "next", str(camp)]) == 0
    captured = capsys.readouterr()
    assert f"plates of {len(SMILES)} wells, as many as the library has compounds" in captured.err
    assert f"plate P001: {len(SMILES)} wells" in captured.out
    assert main(["campaign", "next", str(camp), "--plate-size", "96"]) != 0
    assert "a plate of 96 wells for a library of 14 compounds" in capsys.readouterr().err


def test_record_says_what_to_do_next_and_when_the_run_has_finished(tmp_path, library_csv, capsys):
    """A first-time user recording the README's recipe learnt that the run had stopped only from `next` failing
    with "error: ... has finished": `record` now says so on the file that finished it, and otherwise names the
    next commands; `next` on a finished run names the campaign in the commands it points to."""
    camp = tmp_path / "c.campaign"
    assert init(camp, library_csv, "--algorithm", "gse-log", "--param", "budget=16") == 0
    said = []
    for k in range(1, 10):
        plate_file = tmp_path / f"P{k:03d}.csv"
        capsys.readouterr()
        if main(["campaign", "next", str(camp), "--plate-size", "8"]) != 0:
            break
        with open(plate_file, newline="") as fh:
            rows = list(csv.DictReader(fh))
        for j, r in enumerate(rows):
            r["outcome"] = str(j % 2)
        with open(plate_file, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=rows[0].keys())
            w.writeheader()
            w.writerows(rows)
        assert main(["campaign", "record", str(camp), str(plate_file)]) == 0
        said.append(capsys.readouterr().out)
    err = capsys.readouterr().err
    assert len(said) >= 2 and "has finished" in err and f"`screenbai campaign export {camp}`" in err
    assert all(f"next: `screenbai campaign status {camp}`" in out and "has finished" not in out for out in said[:-1])
    assert f"`screenbai campaign next {camp}`" in said[0]
    assert "the run has finished" in said[-1] and f"`screenbai campaign export {camp}`" in said[-1]
    assert "next:" not in said[-1]


def test_readable_renders_a_log_detail_for_people():
    from screenbai.campaign.views.page import readable

    detail = {"plate_id": "P001", "arms": list(range(96)), "layout": {"format": "96", "controls": None},
              "forecast": 12.3456789, "wells": ["A01", "A02"], "rejected": {}, "changes": []}
    assert readable(detail) == ("plate_id: P001; arms: 96 values: 0, 1, 2, 3, 4, 5, ...; layout: (format: 96; "
                                "controls: none); forecast: 12.35; wells: [A01, A02]; rejected: none; changes: none")


@pytest.mark.parametrize("extra, said", [
    ((), "guarantee: guaranteed: error at most delta = 0.05 if the 0/1 outcomes follow a logistic model of the "
         "features"),
    (("--algorithm", "m-lingape", "--param", "threshold=heuristic"),
     "guarantee: NO ERROR GUARANTEE: threshold='heuristic' voids it, the error can exceed delta"),
    (("--algorithm", "glgape", "--param", "calibration=self-normalized"),
     "guarantee: NO ERROR GUARANTEE: calibration='self-normalized' with c_mu='estimate' and S='estimate'"),
    (("--algorithm", "gse-log", "--param", "budget=40"),
     "guarantee: fixed budget: no error bound at a chosen delta"),
])
def test_init_says_what_the_chosen_setting_guarantees(tmp_path, library_csv, capsys, extra, said):
    """init named the algorithm and its parameters only: a heuristic threshold, plug-in constants or a fixed
    budget were taken without a word on the guarantee they lose (status said it only for declared values)."""
    assert init(tmp_path / "c.campaign", library_csv, *extra) == 0
    assert said in capsys.readouterr().out


def test_a_backtest_says_the_guarantee_and_whether_the_known_rates_meet_its_model(tmp_path):
    """The backtest judged the answer against the known rates but never said what the setting promises, nor that
    rates unrelated to the features break the logistic model log-tas's guarantee rests on (a correct answer there
    proves nothing about delta); rates from a logistic model of the features are not flagged."""
    from campaign_util import synthetic_library

    from screenbai.campaign.backtest import KnownOutcomes, run_backtest

    lib = synthetic_library(K=20, d=2, seed=5)
    planted = np.where(np.random.default_rng(3).random(20) < 0.5, 0.9, 0.1)
    logistic = 1.0 / (1.0 + np.exp(-lib.features @ np.array([1.5, -1.0, 0.3])))
    said = "guarantee: guaranteed: error at most delta = 0.05 if the 0/1 outcomes follow a logistic model"
    for rate, flagged in ((planted, True), (logistic, False)):
        res = run_backtest(KnownOutcomes(lib, rate, None, "planted"), "log-tas", {"epsilon": 0.2}, seed=2,
                           plate_size=20, max_tests=40)
        assert said in res.text()
        assert bool(res.not_proven) == flagged, res.not_proven
        assert ("NOT PROVEN ON THESE RATES: the logit of the means is not a linear function of the features"
                in res.text()) == flagged
        # it said "a correct answer here is not an error bounded by delta"
        assert (
            "the chance of a wrong answer is not bounded by delta, and a correct one proves nothing of it" in res.text()
        ) == flagged
    res = run_backtest(KnownOutcomes(lib, planted, None, "planted"), "kl-lucb", {"epsilon": 0.2}, seed=2,
                       plate_size=20, max_tests=40)
    assert not res.not_proven  # no model of the features: nothing to break
