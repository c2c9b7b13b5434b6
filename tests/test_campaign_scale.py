"""What status, report and export cost per compound: at K = 10^6 every pass over the library (a model fit, its
K x d intervals, a forecast's T* over K arms) costs seconds to minutes, so each is made once per command. Counted
calls on a small campaign, not timings (docs/scale.md, "Campaign commands at K = 1.58 M")."""

from __future__ import annotations

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
