"""Seeded results of every policy outside [SLM14]'s allocations equal the stored records
(tests/policy_records.py wrote them): pulls per arm, recommendation, n_samples and stopped, run by the
runner and in plates with failed wells."""

import json

import pytest
from policy_records import CASES, MODES, PATH, SEEDS, instances_used
from static_records import case_key, run_case

from screenbai.bandits.core.registry import available

RECORDS = json.loads(PATH.read_text())
INSTANCES = instances_used()


def _check(name, params, inst_name, seed):
    for mode in MODES:
        r = run_case(name, params, INSTANCES[inst_name], seed, mode)
        got = {"pulls": [int(v) for v in r.pulls], "recommendation": [int(a) for a in r.recommendation],
               "n_samples": int(r.n_samples), "stopped": bool(r.stopped)}
        assert got == RECORDS[case_key(name, params, inst_name, seed, mode)], (name, params, inst_name, seed, mode)


def test_records_cover_every_case_and_every_registered_policy():
    from static_records import CASES as STATIC_CASES

    assert len(RECORDS) == len(CASES) * len(SEEDS) * len(MODES)
    covered = {name for name, _, _ in CASES} | {name for name, _, _ in STATIC_CASES}
    assert covered == set(available()), sorted(set(available()) ^ covered)


@pytest.mark.slow
@pytest.mark.parametrize("name,params,inst_name", CASES)
def test_seed_0_equals_records(name, params, inst_name):
    _check(name, params, inst_name, 0)


@pytest.mark.slow
@pytest.mark.parametrize("name,params,inst_name", CASES)
def test_seed_1_equals_records(name, params, inst_name):
    _check(name, params, inst_name, 1)
