"""Two commands on one campaign file at the same time (two `record`, two `next`): each step starts
from the file's latest state, so the result is that of running them one after the other."""

from __future__ import annotations

import pytest
from campaign_util import new_campaign, write_results

from screenbai.campaign import Campaign, ResultsError
from screenbai.campaign.state import store

PARAMS = {"epsilon": 0.1, "delta": 0.05}


def _state(path, *, use_snapshot):
    with Campaign.open(path, use_snapshot=use_snapshot) as c:
        n, s, _, failed = c.observations()
        return store.encode_state(c.policy.state_dict()), n.tolist(), s.tolist(), failed, c.open_wells()


def _two_handles(path):
    """Two open campaigns on one file, both having read its state (two processes started together)."""
    a, b = Campaign.open(path), Campaign.open(path)
    a.policy, b.policy  # noqa: B018 - each loads the policy as `record` / `next` do
    return a, b


@pytest.mark.parametrize("algorithm, params", [("m-lingape", PARAMS), ("glgape", PARAMS)])
def test_two_records_at_once_equal_one_after_the_other(tmp_path, algorithm, params):
    ref = new_campaign(tmp_path / "ref.campaign", algorithm, params)
    p1, p2 = ref.next_plate(8), ref.next_plate(8)
    ref.record(write_results(tmp_path / "r1.csv", p1, [1] * len(p1)))
    ref.record(write_results(tmp_path / "r2.csv", p2, ([0, 1] * len(p2))[: len(p2)]))
    ref_policy = store.encode_state(ref.policy.state_dict())
    after_both = ref.next_plate(4).arms
    ref.close()

    path = tmp_path / "c.campaign"
    c = new_campaign(path, algorithm, params)
    c.next_plate(8), c.next_plate(8)
    c.close()
    a, b = _two_handles(path)
    a.record(tmp_path / "r1.csv")
    b.record(tmp_path / "r2.csv")  # b read the file before a's record was committed
    a.close(), b.close()
    snap = _state(path, use_snapshot=True)
    assert snap == _state(path, use_snapshot=False)  # the stored snapshot is the replay's state
    assert snap[0] == ref_policy  # both files' outcomes are in the policy, as when recorded in turn
    with Campaign.open(path) as c:
        assert c.next_plate(4).arms == after_both


def test_two_next_at_once_give_two_plates_in_sequence(tmp_path):
    ref = new_campaign(tmp_path / "ref.campaign", "m-lingape", PARAMS)
    expected = [ref.next_plate(8).arms, ref.next_plate(8).arms]
    ref.close()

    path = tmp_path / "c.campaign"
    new_campaign(path, "m-lingape", PARAMS).close()
    a, b = _two_handles(path)
    first, second = a.next_plate(8), b.next_plate(8)
    a.close(), b.close()
    assert (first.plate_id, second.plate_id) == ("P001", "P002")
    assert [first.arms, second.arms] == expected
    assert _state(path, use_snapshot=True) == _state(path, use_snapshot=False)  # replays without a mismatch


def test_same_file_recorded_twice_at_once_is_refused_the_second_time(tmp_path):
    path = tmp_path / "c.campaign"
    c = new_campaign(path)
    plate = c.next_plate(8)
    c.close()
    results = write_results(tmp_path / "r.csv", plate, [1] * 8)
    a, b = _two_handles(path)
    a.record(results)
    with pytest.raises(ResultsError, match="plate P001 was already recorded"):
        b.record(results)
    a.close(), b.close()
    assert _state(path, use_snapshot=True) == _state(path, use_snapshot=False)
