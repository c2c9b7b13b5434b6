"""Seeded results of the [SLM14] allocations equal the stored records (tests/static_records.py wrote them
before static.py was split): pulls per arm, recommendation, n_samples and stopped, in the fast, sequential,
plate and save/restore modes."""

import json

import pytest
from static_records import CASES, MODES, PATH, SEEDS, case_key, instances_used, run_case

RECORDS = json.loads(PATH.read_text())
INSTANCES = instances_used()


def _check(name, params, inst_name, seed, modes=MODES):
    for mode in modes:
        r = run_case(name, params, INSTANCES[inst_name], seed, mode)
        got = {"pulls": [int(v) for v in r.pulls], "recommendation": [int(a) for a in r.recommendation],
               "n_samples": int(r.n_samples), "stopped": bool(r.stopped)}
        assert got == RECORDS[case_key(name, params, inst_name, seed, mode)], (name, params, inst_name, seed, mode)


def test_records_cover_every_case():
    assert len(RECORDS) == len(CASES) * len(SEEDS) * len(MODES)


@pytest.mark.slow
@pytest.mark.parametrize("name,params,inst_name", CASES)
def test_seed_0_equals_records(name, params, inst_name):
    _check(name, params, inst_name, 0)


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS[1:])
@pytest.mark.parametrize("name,params,inst_name", CASES)
def test_other_seeds_equal_records(name, params, inst_name, seed):
    _check(name, params, inst_name, seed)
